"""Attack risk of the ``rdp`` command: TPR bounds read off its converted privacy profile.

The RDP curve, converted at every ε [Mir17, Prop 3; CKS20, Prop 12], is a family of valid
(ε, δ(ε)) guarantees: each bounds the TPR at FPR α by min(1, e^ε α + δ, 1 − e^{−ε}(1 − δ −
α)) [KOV15, Thm 2.1].  The reported upper end is that bound (``relations.risk.point_tpr``,
rounded up) at the certified δ of the grid point of ε where it is the smallest.  RDP gives
no lower bound on δ(ε): the lower ends are those every mechanism allows (TPR = FPR, the
coin-flip test).
"""

from __future__ import annotations

import math

from dpcalc.api import _risk

#: ε grid: 0, then this many points up to the ε at δ = e^_LOG_DELTA_TOP (geometric from
#: _SPAN of it): the best point of the grid, not of the continuum (a valid bound either way)
_POINTS = 256
_SPAN = 1e-4
_LOG_DELTA_TOP = -690.0

NOTE = ("attack risk from the RDP profile (every (ε, δ) its conversion gives), an upper "
        "bound; RDP gives no lower one (Kairouz, Oh & Viswanath 2015)")


def _grid(curve, sigma: float, q: float, steps: int, conversion: str):
    """(the RDP totals, the ε grid from 0, the profile's δ there in floats): the δ values
    only choose a grid point (computed for every order and ε at once, not rounded up); the
    chosen point's δ is then the certified conversion's (_delta)."""
    import numpy as np

    rel, orders = curve.rel, curve.orders
    totals = curve.total(sigma, q, steps)
    top = rel.epsilon_from_rdp(orders, totals, _LOG_DELTA_TOP, conversion)[0]
    if not (math.isfinite(top) and top > 0.0):
        top = 1.0
    eps = np.concatenate(([0.0], np.geomspace(top * _SPAN, top, _POINTS)))
    a = np.asarray(orders, dtype=float)
    r = np.asarray(totals, dtype=float)
    use = np.isfinite(a) & np.isfinite(r) & (a > 1.0)
    a, r = a[use], r[use]
    with np.errstate(all="ignore"):
        diff = r[None, :] - eps[:, None]
        if conversion == "classic":
            ld = (a - 1.0) * diff                                    # [Mir17, Prop 3]
        else:
            ld = (a - 1.0) * (diff + np.log1p(-1.0 / a)) - np.log(a)   # [CKS20, Prop 12]
        delta = np.exp(np.minimum(ld.min(axis=1), 0.0)) if a.size else np.ones(eps.size)
    return totals, eps.tolist(), delta.tolist()


def _delta(curve, totals, epsilon: float, conversion: str) -> float:
    """The certified δ(ε) of the conversion, a float upper bound."""
    from dpcalc.numeric.directed import MIN_NORMAL, exp_up

    d = exp_up(curve.rel.log_delta_from_rdp(curve.orders, totals, epsilon, conversion)[0])
    # below the double range the Decimal is replaced by a larger float (rounding it to
    # nearest could give 0)
    return min(1.0, d) if isinstance(d, float) else MIN_NORMAL


def best_point(curve, values: dict, conversion: str, alpha: float) -> tuple[float, float]:
    """(ε, certified δ) of the grid point with the smallest bound at FPR ``alpha``."""
    from dpcalc.relations import risk as rel

    totals, eps, delta = _grid(curve, values["sigma"], values["q"], values["steps"],
                               conversion)
    e = eps[int(rel.best_points(alpha, eps, delta, 1)[0])]
    return e, _delta(curve, totals, e, conversion)


def tpr_upper(curve, sigma: float, q: float, steps: int, conversion: str,
              alpha: float) -> float:
    """An upper bound on the largest TPR at FPR ``alpha`` of the profile (see the module)."""
    from dpcalc.relations import risk as rel

    e, d = best_point(curve, {"sigma": sigma, "q": q, "steps": steps}, conversion, alpha)
    return rel.point_tpr(e, d, alpha)[1]


def block(curve, values: dict, conversion: str, fprs) -> dict:
    """The ``risk`` block of an rdp result (its own (ε, δ) point caps each bound): the
    upper ends from the profile, the lower ends those of the coin-flip test (TPR = FPR,
    advantage 0), which every mechanism allows."""
    from dpcalc.relations import risk as rel

    totals, eps, delta = _grid(curve, values["sigma"], values["q"], values["steps"],
                               conversion)

    def tpr(a):
        e = eps[int(rel.best_points(a, eps, delta, 1)[0])]
        return a, rel.point_tpr(e, _delta(curve, totals, e, conversion), a)[1]

    # the largest TPR − FPR: at most (e^ε − 1 + 2δ)/(e^ε + 1) at every (ε, δ) of the profile
    # [KOV15] (δ(0) at ε = 0); the grid point where that is smallest, chosen in floats
    k = min(range(len(eps)), key=lambda i: (math.expm1(min(eps[i], 700.0)) + 2.0 * delta[i])
            / (math.exp(min(eps[i], 700.0)) + 1.0))
    adv = rel.point_advantage(eps[k], _delta(curve, totals, eps[k], conversion))[1]
    return _risk._block("rdp", fprs, tpr, (0.0, adv), (values["epsilon"], values["delta"]),
                        NOTE)
