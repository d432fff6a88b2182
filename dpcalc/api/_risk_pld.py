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
        if mu < 0.04:
            # and at μ/8 where that is finer (G_μ's δ(ε) moves on the scale of μ: δ(ε) =
            # Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) [DRS19, Cor 2.13]): at μ 0.0037 the optimum ε
            # 0.0087 lay between 0.005 and 0.01, where TPR 0.0101 at FPR 0.01 is out of reach
            # (α e^ε > T), and the TPR solves answered σ 109 for 84.7 (TPR 0.0100001: 1.28e6
            # for 8.43e4)
            fine = c + (mu / 8.0) * np.arange(-40, 41)
            points |= {float(e) for e in fine if 0.0 <= e <= eps_max}
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
    """A monotone certified predicate ``holds(items)`` for "TPR at α ≤ T", and the TPR
    bracket (lower, upper) of the given (starting) items (to correct a starting guess).

    The profile of the starting items locates the ε* where the bound α e^ε + δ(ε) (or its
    mirrored form 1 − e^{−ε}(1 − α − δ(ε))) is smallest.  T must be reachable there: α e^ε
    < T (mirrored: e^ε(1 − T) < 1 − α), else the threshold on δ(ε*) is ≤ 0 and no noise
    passes (TPR 0.0101 at FPR 0.01: an under-noised start's best grid point ε 0.01 has
    α e^ε = 0.0101005, and every σ failed).  When it is not, ε* is the reachable ε whose δ
    must shrink by the smallest factor (room/δ largest; ε = 0 is reachable whenever T > α,
    δ(0) being the total variation, which more noise drives to 0), and ``holds.at_best``
    is False (a caller with a better start may place ε* again).  The predicate then certifies
    δ(ε*) ≤ threshold with the PLD engine's fast decision (accountant.certify_epsilon).
    Each True is a certified TPR bound ≤ T [DRS19, Prop 2.12 at one ε]; a fixed ε* only
    makes the answer a little conservative, never optimistic.  Monotone in every parameter
    whose growth adds privacy loss (δ(ε*) grows with it).  A point the PLD grid cannot
    certify (or evaluate) fails: never an answer, never an abort; a start whose profile it
    cannot certify places ε* where G_μ with TPR T at α touches its tangent (as ``focus``;
    reachable, as α e^{ε*} + δ_μ(ε*) = T with δ_μ(ε*) > 0), with the bracket [α, 1].
    """
    import numpy as np

    from dpcalc.pld import PLDUncertifiable, accountant
    from dpcalc.relations import risk as rel

    reachable, at_best = alpha < tpr, False
    try:
        grid, dlo, dup = profile(items, tolerance, [alpha])
    except (PLDUncertifiable, ArithmeticError, ValueError, RuntimeWarning):
        mu = rel.gaussian_mu_for_tpr(tpr, alpha) if alpha < tpr < 1.0 else 0.0
        z = rel.gaussian_mu_for_tpr(1.0 - alpha, 0.5)         # Φ⁻¹(1 − α)
        eps = min(max(0.0, mu * (z - mu / 2.0)), math.log(tpr / alpha) / 2.0) if mu > 0 else 0.0
        mirrored, bracket = False, (alpha, 1.0)
    else:
        with np.errstate(over="ignore"):
            growth = np.exp(grid)
        pos = alpha * growth + dup
        neg = 1.0 - (1.0 - alpha - dup) / growth
        i_pos, i_neg = int(np.argmin(pos)), int(np.argmin(neg))
        mirrored = neg[i_neg] < pos[i_pos]
        # the room T leaves δ at each ε (with a margin over the threshold's rounding, below)
        room = np.where(mirrored, (1.0 - alpha) - growth * (1.0 - tpr) * (1.0 + 1e-9),
                        tpr - alpha * growth * (1.0 + 1e-9))
        i = i_neg if mirrored else i_pos
        at_best = bool(room[i] > 0.0)
        if not at_best:
            # an under-noised start's best ε is out of T's reach: the reachable ε (either
            # form) whose δ must shrink by the smallest factor, log room − log δ largest
            rooms = ((1.0 - alpha) - growth * (1.0 - tpr) * (1.0 + 1e-9),
                     tpr - alpha * growth * (1.0 + 1e-9))
            with np.errstate(divide="ignore", invalid="ignore"):
                gains = [np.where(r > 0.0, np.log(np.where(r > 0.0, r, 1.0)) - np.log(dup),
                                  -np.inf) for r in rooms]
            i_neg, i_pos = (int(np.argmax(g)) for g in gains)
            mirrored = gains[0][i_neg] > gains[1][i_pos]
            i = i_neg if mirrored else i_pos
            reachable = reachable and max(gains[0][i_neg], gains[1][i_pos]) > -math.inf
        eps = float(grid[i])
        bracket = rel.profile_tpr(alpha, grid, dlo, dup)
    slack = 1.0 - 1e-12  # the threshold is rounded down generously (a few float operations)
    if not reachable:
        thr = 0.0                   # T ≤ α: the coin-flip test reaches TPR = FPR
    elif mirrored:
        # 1 − e^{−ε}(1 − α − δ) ≤ T  ⟺  δ ≤ 1 − α − e^{ε}(1 − T)
        thr = (1.0 - alpha - math.exp(eps) * (1.0 - tpr) * (1.0 + 1e-12)) * slack
    else:
        thr = (tpr - alpha * math.exp(eps) * (1.0 + 1e-12)) * slack

    def holds(items_) -> bool:
        if thr <= 0.0:
            return False
        try:
            return accountant.certify_epsilon(items_, math.log(thr), eps) is True
        except (PLDUncertifiable, ArithmeticError, ValueError, RuntimeWarning):
            # not certified: fails, as an undecided point does (past its range the engine
            # cannot place a grid at all: σ 1e20 raised a math domain error, replace-one a
            # division by zero, fixed batches an overflow warning (an error in the CLI),
            # where a σ solve with no upper end gallops)
            return False

    holds.at_best = at_best        # ε* is the start's own best ε (not a reachable stand-in)
    return holds, bracket
