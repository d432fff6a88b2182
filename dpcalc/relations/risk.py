"""Attack risk: certified bounds on the true-positive rate (TPR) of membership-inference tests.

Relation. A membership-inference test sees one output of the mechanism and decides between
H0 "ran on D" and H1 "ran on the neighbour D'". At false-positive rate (FPR) α its TPR is at
most the Neyman–Pearson power; over all neighbouring pairs, in both orders, the largest power
is the mechanism's trade-off curve [DRS19, Def 2.1-2.3]. With the privacy profile
δ(ε) = sup over neighbours and both orders of the hockey-stick divergence
H_{e^ε}(P‖Q) = sup_S P(S) − e^ε Q(S), the primal-dual relation [DRS19, Prop 2.12] gives

    TPR*(α) = inf_{ε ≥ 0} min(1, e^ε α + δ(ε), 1 − e^{−ε}(1 − δ(ε) − α))
            = inf_{γ > 0} (αγ + H(γ)),                                              (1)

where H(γ) = δ(log γ) for γ ≥ 1 and H(γ) = 1 − γ + γ δ(−log γ) for γ < 1 (the profile of the
reversed order, H_γ(Q‖P) = 1 − γ + γ H_{1/γ}(P‖Q)). One (ε, δ) point alone gives the
(ε, δ)-DP curve TPR ≤ min(1, e^ε α + δ, 1 − e^{−ε}(1 − δ − α)) [KOV15, Thm 2.1;
DRS19, Eq (5)]. The largest advantage sup_α (TPR − α) is δ(0), the total-variation distance
[KOV15; DRS19, Prop 2.12 at ε = 0]; for one point it is (e^ε − 1 + 2δ)/(e^ε + 1) [KOV15].

Closed forms (both pairs are symmetric, so either order gives the same curve):

- Gaussian, μ = Δ/σ: TPR(α) = Φ(Φ⁻¹(α) + μ), advantage 2Φ(μ/2) − 1 [DRS19, Eq (6), Prop 2.12].
- Laplace, μ = Δ/b: the likelihood ratio of Lap(Δ, b) to Lap(0, b) is nondecreasing in x,
  so the threshold tests are optimal (Neyman–Pearson) and
  TPR(α) = e^μ α for α ≤ e^{−μ}/2; 1 − e^{−μ}/(4α) for α ≤ 1/2; 1 − e^{−μ}(1 − α) above,
  with advantage 1 − e^{−μ/2} [DRS19, Sec 2 (Laplace trade-off); KOV15].

A profile known only as certified brackets on a finite grid of ε is handled by
``profile_tpr`` (proofs there). Every returned pair is (lower, upper): upper is never below
the truth, lower never above it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dpcalc.errors import DomainError
from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U

_DPS = 40


def _mp():
    import mpmath

    return mpmath


def _out(mp, x) -> tuple[float, float]:
    """(lower, upper) floats around an mpf computed at 40 digits.

    The mpf is within 1e-35 relative of the exact value (a handful of operations at 40
    digits), far inside half an ulp, so the nearest float moved one ulp each way encloses it.
    """
    f = float(x)
    lo, hi = math.nextafter(f, -math.inf), math.nextafter(f, math.inf)
    return max(0.0, lo), min(1.0, hi)


def _ndtri(mp, alpha: float):
    """Φ⁻¹(α) to ~40 digits: the stdlib's float inverse, refined by Newton steps in mpmath."""
    from statistics import NormalDist

    x = mp.mpf(NormalDist().inv_cdf(alpha))
    a = mp.mpf(alpha)
    for _ in range(4):
        x -= (mp.ncdf(x) - a) / mp.npdf(x)
    return x


def gaussian_tpr(mu: float, alpha: float) -> tuple[float, float]:
    """Bracket (lower, upper) on the largest TPR at FPR α of the Gaussian mechanism.

    Exact: TPR(α) = Φ(Φ⁻¹(α) + μ), μ = Δ/σ, evaluated at 40 digits and rounded outward.
    References: DRS19, Eq (6) (G_μ trade-off).
    """
    mp = _mp()
    with mp.workdps(_DPS):
        return _out(mp, mp.ncdf(_ndtri(mp, alpha) + mp.mpf(mu)))  # [DRS19, Eq (6)]


def gaussian_advantage(mu: float) -> tuple[float, float]:
    """Bracket on sup_α TPR − α of the Gaussian mechanism: 2Φ(μ/2) − 1 = erf(μ/(2√2)).

    References: DRS19, Prop 2.12 (δ(0) of G_μ); BW18, Thm 8 at ε = 0.
    """
    mp = _mp()
    with mp.workdps(_DPS):
        return _out(mp, mp.erf(mp.mpf(mu) / (2 * mp.sqrt(2))))  # 2Φ(μ/2) − 1 [DRS19]


def gaussian_mu_for_tpr(tpr: float, alpha: float) -> float:
    """μ with Φ(Φ⁻¹(α) + μ) = T: μ = Φ⁻¹(T) − Φ⁻¹(α) (a float guess; the solver verifies).

    References: DRS19, Eq (6).
    """
    mp = _mp()
    with mp.workdps(_DPS):
        return float(_ndtri(mp, tpr) - _ndtri(mp, alpha))


def laplace_tpr(mu: float, alpha: float) -> tuple[float, float]:
    """Bracket on the largest TPR at FPR α of the Laplace mechanism, μ = Δ/b (its own
    Neyman–Pearson curve, below the generic (μ, 0)-DP curve except at its corners).

    References: DRS19, Sec 2 (Laplace trade-off T(Lap(0,1), Lap(μ,1))); KOV15.
    """
    mp = _mp()
    with mp.workdps(_DPS):
        m, a = mp.mpf(mu), mp.mpf(alpha)
        if a <= mp.exp(-m) / 2:
            v = mp.exp(m) * a                       # threshold t ≥ Δ: TPR = e^μ α
        elif a <= mp.mpf(1) / 2:
            v = 1 - mp.exp(-m) / (4 * a)            # 0 ≤ t < Δ
        else:
            v = 1 - mp.exp(-m) * (1 - a)            # t < 0
        return _out(mp, v)


def laplace_advantage(mu: float) -> tuple[float, float]:
    """Bracket on sup_α TPR − α of the Laplace mechanism: TV = 1 − e^{−μ/2}.

    References: DRS19, Prop 2.12 (δ(0)); KOV15.
    """
    mp = _mp()
    with mp.workdps(_DPS):
        return _out(mp, -mp.expm1(-mp.mpf(mu) / 2))


def point_tpr(epsilon: float, delta, alpha: float) -> tuple[float, float]:
    """Bracket on the largest TPR at FPR α allowed by (ε, δ)-DP alone:
    min(1, e^ε α + δ, 1 − e^{−ε}(1 − δ − α)) (tight: some (ε, δ)-DP mechanism reaches it).

    References: KOV15, Thm 2.1; DRS19, Eq (5).
    """
    mp = _mp()
    with mp.workdps(_DPS):
        e, d, a = mp.mpf(epsilon), mp.mpf(delta), mp.mpf(alpha)
        v = min(mp.mpf(1), mp.exp(e) * a + d, 1 - mp.exp(-e) * (1 - d - a))  # [KOV15, Thm 2.1]
        return _out(mp, v)


def point_advantage(epsilon: float, delta) -> tuple[float, float]:
    """Bracket on sup_α TPR − α under (ε, δ)-DP alone: (e^ε − 1 + 2δ)/(e^ε + 1).

    The two sides of the (ε, δ) curve meet at α = (1 − δ)/(e^ε + 1). References: KOV15.
    """
    mp = _mp()
    with mp.workdps(_DPS):
        e, d = mp.mpf(epsilon), mp.mpf(delta)
        return _out(mp, (mp.expm1(e) + 2 * d) / (mp.exp(e) + 1))  # [KOV15]


def best_points(alpha: float, epsilons, delta_upper, count: int = 3):
    """Indices of the grid points whose (ε, δ) bound on the TPR at FPR α [KOV15, Thm 2.1]
    is the smallest, best first: located in floats, so it only chooses (point_tpr then
    evaluates a chosen point's bound, rounded up).

    References: KOV15, Thm 2.1.
    """
    import numpy as np

    eps = np.asarray(epsilons, dtype=float)
    du = np.asarray(delta_upper, dtype=float)
    with np.errstate(over="ignore"):
        both = np.minimum(alpha * np.exp(np.minimum(eps, 700.0)) + du,
                          1.0 - np.exp(-eps) * (1.0 - du - alpha))
    return np.argsort(both)[:count]


def profile_tpr(alpha: float, epsilons: Sequence[float], delta_lower: Sequence[float],
                delta_upper: Sequence[float]) -> tuple[float, float]:
    """Bracket on TPR*(α) of (1) from certified δ brackets on a grid 0 ≤ ε_0 < … < ε_n.

    ``delta_lower[i] ≤ δ(ε_i) ≤ delta_upper[i]`` (δ = max over both orders). Each grid point
    gives two points of H on γ > 0 (γ = e^{±ε_i}); write them γ_0 < … < γ_N with brackets
    [L_k, U_k] (for γ = e^{−ε}: L = 1 − γ + γ δ_lower, U = 1 − γ + γ δ_upper, increasing in δ).

    Upper bound. Each γ_k is a feasible point of the infimum in (1): TPR* ≤ αγ_k + H(γ_k)
    ≤ αγ_k + U_k (the (ε, δ) bound of one valid point [KOV15, Thm 2.1]); the two γ of one
    ε_i give point_tpr(ε_i, δ_upper[i], α). We return that of the best grid point (located
    in floats, evaluated by point_tpr, rounded up), so it never exceeds any single point's.

    Lower bound. H is convex in γ (a supremum of the affine maps γ ↦ P(S) − γQ(S), and a
    maximum of such suprema over the two orders), nonincreasing, with slopes in [−1, 0]
    [DRS19, Prop 2.12]. On a cell [γ_k, γ_{k+1}]:
      * a convex function lies above the extension of each neighbouring chord, so
        H(γ) ≥ H(γ_{k+1}) + s_R(γ − γ_{k+1}) with s_R any upper bound on the slope of the
        chord [γ_{k+1}, γ_{k+2}] (that slope is ≥ every subgradient at γ_{k+1}, and
        γ − γ_{k+1} ≤ 0); we take s_R = min(0, (U_{k+2} − L_{k+1})/(γ_{k+2} − γ_{k+1}));
      * likewise H(γ) ≥ H(γ_k) + s_L(γ − γ_k) with s_L ≤ the slope of the chord
        [γ_{k−1}, γ_k]: s_L = max(−1, min(0, (L_k − U_{k−1})/(γ_k − γ_{k−1})));
      * H(γ_{k+1}) ≥ L_{k+1}, H(γ_k) ≥ L_k (s_R = 0 gives the plain monotone bound
        αγ_k + L_{k+1}).
    So αγ + H(γ) ≥ max(ℓ_L(γ), ℓ_R(γ)) ≥ λℓ_L(γ) + (1 − λ)ℓ_R(γ) for every λ ∈ [0, 1]; a
    line's minimum on the cell is at an end. We take the best of λ ∈ {0, 1, the λ making the
    combination flat}; any λ is valid, so it needs no rounding care. Below γ_0 (γ_0 < 1):
    αγ + H(γ) ≥ max(H(γ_0), 1 − γ(1 − α)) ≥ max(L_0, 1 − γ_0(1 − α)) (H nonincreasing and
    H(γ) ≥ 1 − γ). Above γ_N: αγ + H(γ) ≥ αγ_N. The infimum over γ > 0 is at least the
    smallest of these cell bounds; TPR* ≥ α always. Returned rounded down.

    Rounding. Floats throughout; each candidate is at most ~12 operations on terms whose
    absolute values sum to M, each operation relatively off by ≤ 2^-53 (exp by ≤ 4 ulp), so a
    margin of 64·2^-53·M per candidate (up for the upper, down for the lower bound) covers
    them, the γ = e^{±ε} (each within 4 ulp) entering through the lines included; chord slopes
    are moved by a relative 1e-9 to their safe side (cells narrower than 1e-4 relative use
    the plain bound, so Δγ is known to 1e-11 relative or better).

    References: DRS19, Prop 2.12; KOV15, Thm 2.1 (each grid point's bound).
    """
    import numpy as np

    a = float(alpha)
    eps = np.asarray(epsilons, dtype=float)
    dl = np.clip(np.asarray(delta_lower, dtype=float), 0.0, 1.0)
    du = np.clip(np.asarray(delta_upper, dtype=float), 0.0, 1.0)
    if eps.size == 0 or np.any(np.diff(eps) <= 0) or eps[0] < 0:
        raise DomainError("epsilons must be a nonempty increasing grid of ε ≥ 0")
    margin = 64.0 * _U
    # γ > 1 side (ε ≥ 0), then the mirrored γ < 1 side (ε > 0 only)
    g_pos = np.exp(eps)
    pos = eps > 0
    g_neg = np.exp(-eps[pos])[::-1]
    lo_neg = (1.0 - g_neg) + g_neg * dl[pos][::-1]   # H_γ(Q‖P) = 1 − γ + γ H_{1/γ}(P‖Q)
    up_neg = (1.0 - g_neg) + g_neg * du[pos][::-1]
    gam = np.concatenate((g_neg, g_pos))
    low = np.concatenate((lo_neg - 2 * margin, dl))
    upp = np.concatenate((up_neg + 2 * margin, du))
    low = np.clip(low, 0.0, 1.0)
    upp = np.clip(upp, 0.0, 1.0)
    # upper: the best single grid point [KOV15, Thm 2.1], located in floats, then its bound
    # evaluated at 40 digits (so it equals point_tpr of that point, never above any point's)
    upper = min(point_tpr(float(eps[i]), float(du[i]), a)[1] for i in best_points(a, eps, du))
    # lower: cells [γ_k, γ_{k+1}]
    n = gam.size
    cands = [max(float(low[0]), 1.0 - float(gam[0]) * (1.0 - a)) - margin * 2.0,
             a * float(gam[-1]) * (1.0 - margin)]
    if n >= 2:
        g0, g1 = gam[:-1], gam[1:]
        dg = g1 - g0
        ok = dg > 1e-4 * g1
        # s_R for cell k uses chord (k+1, k+2); s_L uses chord (k−1, k)
        chord_up = np.zeros(n - 1)      # upper bound on slope of chord (j, j+1)
        chord_lo = np.full(n - 1, -1.0)  # lower bound on slope of chord (j, j+1)
        with np.errstate(divide="ignore", invalid="ignore"):
            su = (upp[1:] - low[:-1]) / dg
            sl = (low[1:] - upp[:-1]) / dg
        chord_up = np.where(ok, np.minimum(0.0, su * np.where(su < 0, 1 - 1e-9, 1 + 1e-9)),
                            0.0)
        chord_lo = np.where(ok, np.maximum(-1.0, np.minimum(
            0.0, sl * np.where(sl < 0, 1 + 1e-9, 1 - 1e-9))), -1.0)
        s_r = np.concatenate((chord_up[1:], [0.0]))
        s_l = np.concatenate(([-1.0], chord_lo[:-1]))
        lam_flat = np.clip(np.where(s_r - s_l > 0, (a + s_r) / np.where(s_r - s_l > 0,
                                                                          s_r - s_l, 1.0), 1.0),
                           0.0, 1.0)
        best = np.full(n - 1, -np.inf)
        for lam in (np.zeros(n - 1), np.ones(n - 1), lam_flat):
            # combined line λ ℓ_L + (1 − λ) ℓ_R at both cell ends
            def line(gx, lam=lam):
                left = low[:-1] + s_l * (gx - g0)
                right = low[1:] + s_r * (gx - g1)
                return a * gx + lam * left + (1.0 - lam) * right

            v0, v1 = line(g0), line(g1)
            # |terms|, plus the effect of each γ's own rounding (≤ 4 ulp) through the lines
            mag = a * g1 + 2.0 + (np.abs(s_l) + np.abs(s_r)) * (dg + g1)
            cell = np.minimum(v0, v1) - margin * mag
            best = np.maximum(best, cell)
        cands.append(float(np.min(best)))
    lower = max(a, min(cands))
    lower = min(lower, upper)
    return (math.nextafter(max(0.0, lower), -math.inf) if lower > a else a), upper


def profile_advantage(epsilons: Sequence[float], delta_lower: Sequence[float],
                      delta_upper: Sequence[float]) -> tuple[float, float]:
    """Bracket on sup_α TPR − α = δ(0) (total variation) from a profile grid starting at ε = 0.

    References: DRS19, Prop 2.12; KOV15.
    """
    if not epsilons or epsilons[0] != 0.0:
        raise DomainError("the grid must start at ε = 0")
    return float(delta_lower[0]), float(delta_upper[0])
