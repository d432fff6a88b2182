"""Attack risk of any plan of (pair, count) items from its certified PLD profile.

The profile is read at a grid of ε from one composition (``pld.accountant.log_delta_profile``,
any plan: DP-SGD runs, ``compose --from`` plans, (ε, δ) points as pairs); the bounds on the
TPR follow from it by ``relations.risk.profile_tpr`` [DRS19, Prop 2.12].  The grid and the
tilt are placed by a Gaussian-DP (CLT) estimate of the plan; every grid is certified, the
estimate only moves the width of the bracket.
"""

from __future__ import annotations

import math

from dpcalc.api import _risk
from dpcalc.errors import InfeasibleError


def mu_estimate(items) -> float:
    """CLT estimate of the plan's Gaussian-DP μ, μ² = Σ n·μ_i² (only to place grids and seed
    solvers): Gaussian μ_i = Δ/σ; subsampled Gaussian μ_i² = q²(e^{1/σ²} − 1) (the CLT of
    [DRS19]); any other pair: the variance of its loss (μ² for a Gaussian)."""
    from dpcalc.pld import accountant

    tot = 0.0
    for pair, n in items:
        kind = pair.key()[0]
        if kind == "gaussian":
            tot += n / (pair.sigma * pair.sigma)
        elif kind == "subsampled-gaussian":
            tot += n * pair.q * pair.q * math.expm1(min(1.0 / (pair.sigma * pair.sigma), 700.0))
        else:
            tot += accountant.loss_variance([(pair, n)])
    return math.sqrt(tot)


def focus(mu: float, alpha: float) -> float:
    """|ε*| of G_μ at FPR α: where the tangent of slope e^{ε*} touches the curve (the mirrored
    branch when negative); a placement only."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1.0 - alpha)
    return abs(mu * z - mu * mu / 2.0)


_PROFILES: dict = {}     # the last few profiles: a TPR solve's check at its answer is the
#                         answer's own risk block (read-only arrays)


def profile(items, tolerance: float, fprs, mu: float | None = None):
    """(ε grid, δ lower, δ upper) of the plan, ε from 0 to past log(1/min FPR)."""
    mu = mu_estimate(items) if mu is None else mu
    key = (tuple((p.key(), n) for p, n in items), tolerance, tuple(fprs), mu)
    got = _PROFILES.get(key)
    if got is None:
        if len(_PROFILES) >= 4:
            _PROFILES.pop(next(iter(_PROFILES)))
        got = _PROFILES[key] = _profile(items, tolerance, fprs, mu)
        for arr in got:
            arr.setflags(write=False)
    return got


def _profile(items, tolerance: float, fprs, mu: float):
    import numpy as np

    from dpcalc.pld import accountant

    eps_max = max(1.0, math.log(1.0 / min(fprs)) + 0.05)
    # coarse everywhere, fine (second-order bounds: error ∝ spacing²) around each FPR's
    # optimum as the CLT estimate places it; any grid is certified, only the width changes
    points = set(np.round(np.arange(0.0, eps_max + 0.05, 0.05), 12))
    for a in fprs:
        c = min(eps_max, focus(mu, a))
        points |= set(np.round(np.arange(max(0.0, c - 0.4), min(eps_max, c + 0.4), 0.005), 12))
    grid = np.array(sorted(points))
    mid = sorted(fprs)[len(fprs) // 2]
    # refine while δ's bracket is too wide where δ matters: δ below min FPR/20 moves a TPR
    # bound by a negligible fraction of its own width
    lo, up = accountant.log_delta_profile(items, grid, tolerance,
                                          focus=min(eps_max, focus(mu, mid)),
                                          log_delta_floor=math.log(min(fprs)) - 3.0)
    with np.errstate(under="ignore"):
        dlo = np.exp(lo) * (1.0 - 1e-14)  # numpy's exp is within a few ulp: 1e-14 ≈ 45 ulp
        dup = np.minimum(1.0, np.exp(up) * (1.0 + 1e-14))
    return grid, dlo, dup


def block(items, tolerance: float, fprs, point: tuple | None,
          certificate: tuple | None = None) -> dict:
    """Risk block of a plan from its certified PLD profile (both directions, ε over ℝ).

    ``certificate`` = (α, T): T is a certified TPR bound at α found by a TPR-target solve (a
    point of the profile certified on its own); the reported upper takes it into account.
    """
    from dpcalc.relations import risk as rel

    # one composition per group of FPRs whose optimal ε lie within 1.5 of each other: the
    # engine's tilt is sized for one ε, and far from it the certified bracket widens
    mu = mu_estimate(items)
    groups: list[list[float]] = []
    for a in sorted(set(fprs), key=lambda a: focus(mu, a)):
        if groups and focus(mu, a) - focus(mu, groups[-1][0]) <= 1.5:
            groups[-1].append(a)
        else:
            groups.append([a])
    found: dict[float, tuple[float, float]] = {}
    adv_lo, adv_hi = 0.0, 1.0
    for group in groups:
        grid, dlo, dup = profile(items, tolerance, group, mu)
        for a in group:
            lo, hi = rel.profile_tpr(a, grid, dlo, dup)
            if certificate is not None and a == certificate[0]:
                hi = min(hi, certificate[1])
            found[a] = (min(lo, hi), hi)
        lo, hi = rel.profile_advantage(list(grid[:1]), dlo[:1], dup[:1])
        adv_lo, adv_hi = max(adv_lo, lo), min(adv_hi, hi)  # each bracket is certified
    out = _risk._block("pld", fprs, found.__getitem__, (adv_lo, adv_hi), point)
    adv = out["advantage"]      # (capped by the point's, where that is the tighter)
    out["gdp_mu_estimate"] = gdp_estimate(0.5 * (adv["lower"] + adv["upper"]))
    return out


def gdp_estimate(advantage: float) -> float:
    """μ of the Gaussian-DP curve G_μ with the same largest advantage, 2Φ(μ/2) − 1 [DRS19,
    Eq (6)]: for readers used to GDP. An estimate, neither an upper nor a lower bound (the
    profile is not exactly Gaussian)."""
    from statistics import NormalDist

    return 2.0 * NormalDist().inv_cdf(min(0.5 * (1.0 + advantage), 1.0 - 1e-16))


def risk_of(items, tolerance: float, fprs, point: tuple | None,
            certificate: tuple | None = None, what: str = "profile") -> dict:
    """The risk block from the PLD profile, or (said so) from the (ε, δ) point when the PLD
    grid cannot certify this plan."""
    from dpcalc.pld import PLDUncertifiable

    try:
        return block(items, tolerance, fprs, point, certificate)
    except PLDUncertifiable as exc:
        if point is None:
            raise InfeasibleError(f"the PLD grid cannot certify the attack risk of this {what} "
                                  f"({exc})") from None
        out = _risk.point_block({"epsilon": point[0], "delta": point[1]}, "epsilon", "delta",
                                fprs)
        out["note"] = (f"the PLD grid cannot certify this profile ({exc}); " +
                       _risk.POINT_NOTE)
        return out


def target(items, tolerance: float, alpha: float, tpr: float):
    """A monotone certified predicate ``holds(items)`` for "TPR at α ≤ T", and the TPR upper
    bound of the given (starting) items (to correct a starting guess).

    The profile of the starting items locates the ε* where the bound α e^ε + δ(ε) (or its
    mirrored form 1 − e^{−ε}(1 − α − δ(ε))) is smallest; the predicate then certifies
    δ(ε*) ≤ threshold with the PLD engine's fast decision (accountant.certify_epsilon).
    Each True is a certified TPR bound ≤ T [DRS19, Prop 2.12 at one ε]; a fixed ε* only
    makes the answer a little conservative, never optimistic.  Monotone in every parameter
    whose growth adds privacy loss (δ(ε*) grows with it).
    """
    import numpy as np

    from dpcalc.pld import accountant

    grid, _, dup = profile(items, tolerance, [alpha])
    pos = alpha * np.exp(grid) + dup
    neg = 1.0 - np.exp(-grid) * (1.0 - alpha - dup)
    i_pos, i_neg = int(np.argmin(pos)), int(np.argmin(neg))
    mirrored = neg[i_neg] < pos[i_pos]
    eps = float(grid[i_neg] if mirrored else grid[i_pos])
    slack = 1.0 - 1e-12  # the threshold is rounded down generously (a few float operations)
    if mirrored:
        # 1 − e^{−ε}(1 − α − δ) ≤ T  ⟺  δ ≤ 1 − α − e^{ε}(1 − T)
        thr = (1.0 - alpha - math.exp(eps) * (1.0 - tpr) * (1.0 + 1e-12)) * slack
    else:
        thr = (tpr - alpha * math.exp(eps) * (1.0 + 1e-12)) * slack

    def holds(items_) -> bool:
        if thr <= 0.0:
            return False
        return accountant.certify_epsilon(items_, math.log(thr), eps) is True

    return holds, float(min(1.0, pos[i_pos], neg[i_neg]))
