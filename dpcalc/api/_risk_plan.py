"""Attack risk of a ``compose --from`` plan, and the TPR-target solve of its null.

A plan of Gaussians only is one Gaussian, μ² = Σ n·(Δ/σ)² [DRS19, Cor 3.3]: its trade-off
curve is exact.  Any other plan (DP-SGD runs, Laplace, (ε, δ) points as the pairs of
[KOV15, Thm 2.1]) is read from the certified PLD profile of its items (``_risk_pld``).
"""

from __future__ import annotations

import math

from dpcalc.api import _risk, _risk_pld
from dpcalc.errors import DomainError, DpcalcError, InfeasibleError
from dpcalc.numeric.directed import UNIT_ROUNDOFF


def plan_risk(plan, fill, fprs, point: tuple | None, certificate: tuple | None = None) -> dict:
    """The risk block of the plan (record values filled in by ``fill``)."""
    from dpcalc.api.plan import _certified

    items = plan.items(fill)
    if plan.gaussian:
        out = _gaussian_block(items, fprs, point)
        if certificate is not None:
            for row in out["tpr"]:
                if row["fpr"] == certificate[0]:
                    row["upper"] = min(row["upper"], certificate[1])
                    row["lower"] = min(row["lower"], row["upper"])
        return out
    return _certified(lambda: _risk_pld.risk_of(items, plan.tol, fprs, point, certificate,
                                                what="plan"))


def _mu_bracket(items) -> tuple[float, float]:
    """(μ rounded down, μ rounded up) of a plan of Gaussians, μ² = Σ n/(σ/Δ)² [DRS19, Cor
    3.3]: a sum of ≤ 2·len positive terms and one sqrt, each within an ulp, so a relative
    16u + len·4u either way encloses the exact value."""
    terms = [n / (p.sigma * p.sigma) for p, n in items]
    mu = math.sqrt(math.fsum(terms))
    r = (16.0 + 4.0 * len(terms)) * UNIT_ROUNDOFF
    return math.nextafter(mu * (1.0 - r), 0.0), math.nextafter(mu * (1.0 + r), math.inf)


def _gaussian_block(items, fprs, point) -> dict:
    """Exact risk of a plan of Gaussians: TPR = Φ(Φ⁻¹(α) + μ) [DRS19, Eq (6), Cor 3.3]."""
    from dpcalc.relations import risk as rel

    mu_lo, mu_hi = _mu_bracket(items)

    def tpr(a):
        return rel.gaussian_tpr(mu_lo, a)[0], rel.gaussian_tpr(mu_hi, a)[1]

    adv = rel.gaussian_advantage(mu_lo)[0], rel.gaussian_advantage(mu_hi)[1]
    return _risk._block("exact", fprs, tpr, adv, point)


def _gaussian_check(plan, alpha: float, tpr: float):
    """Exact predicate for a plan of Gaussians: TPR of G_μ at α ≤ T, μ rounded up [DRS19,
    Eq (6), Cor 3.3]."""
    from dpcalc.relations import risk as rel

    def check(fill) -> bool:
        try:
            items = plan.items(fill)
        except DomainError:
            return False
        return rel.gaussian_tpr(_mu_bracket(items)[1], alpha)[1] <= tpr

    return check


def _extreme(name: str, recs, i: int):
    """The most private end of the null's domain (a starting value of last resort)."""
    if name == "epochs":
        return recs[i].values["q"]          # one step
    return {"sigma": 1e3, "scale": 1e3, "q": 1e-9}.get(name, 1)


def _start(plan, recs, i: int, name: str, path: str, mu_target: float, solve_value):
    """A starting value of the null: where the plan's CLT estimate of μ meets the μ of G_μ
    with TPR T at α (a guess only: it places ε*; the extreme of the domain if none)."""
    def near(fill) -> bool:
        try:
            return _risk_pld.mu_estimate(plan.items(fill)) <= mu_target
        except (DpcalcError, ValueError, OverflowError, ZeroDivisionError):
            return False

    try:
        return solve_value(near, recs, i, name, path)[0]
    except DpcalcError:
        return _extreme(name, recs, i)


def solve_tpr(plan, recs, i: int, name: str, path: str, target: tuple, solve_value):
    """(value, direction, check): record i's ``name`` so that the certified TPR bound at α is
    at most T, with the certified predicate that passed it.

    Gaussians only: the exact predicate.  Otherwise the profile at a starting value locates
    ε* and the predicate certifies δ(ε*) below T's threshold (``_risk_pld.target``); once
    solved far (> 2 %) from the start, ε* is placed again at the answer and solved once
    more.  Every value returned passes a certified predicate (the better of the rounds is
    kept).
    """
    from dpcalc.api.plan import _certified
    from dpcalc.relations import risk as rel

    alpha, tpr = target
    if plan.gaussian:
        check = _gaussian_check(plan, alpha, tpr)
        value, direction = solve_value(check, recs, i, name, path)
        return value, direction, check
    x = _start(plan, recs, i, name, path, rel.gaussian_mu_for_tpr(tpr, alpha), solve_value)
    best = None
    for rnd in range(2):
        fill = (i, name, x)
        holds_items, _ = _certified(lambda fill=fill: _risk_pld.target(
            plan.items(fill), plan.tol, alpha, tpr))

        def check(fill, holds_items=holds_items) -> bool:
            try:
                items = plan.items(fill)
            except DomainError:
                return False
            return holds_items(items)

        try:
            # the bracket is ~1e-3 wide in δ: 1e-4 on the unknown is plenty
            value, direction = solve_value(check, recs, i, name, path, guess=x, rtol=1e-4)
        except InfeasibleError:
            if best is not None:
                break
            if rnd == 0:                # ε* placed from a poor start: place it at the extreme
                x = _extreme(name, recs, i)
                continue
            raise
        if best is None or (value < best[0] if direction == "upper" else value > best[0]):
            best = (value, direction, check)
        if abs(value - x) <= 2e-2 * abs(x):
            break           # ε* was placed near the answer already
        x = value
    if best is None:
        raise InfeasibleError(f"no {path} meets TPR {tpr:g} at FPR {alpha:g}")
    return best
