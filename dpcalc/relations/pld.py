"""Certified privacy-loss-distribution (PLD) accountant for DP-SGD.

Relation. T steps of the Poisson-subsampled Gaussian mechanism (sampling rate q, noise
multiplier σ, L2 sensitivity 1) with add/remove neighbours. With Q0 = N(0, σ²),
P1 = N(1, σ²) and the mixture M = (1 − q)·Q0 + q·P1, one step is dominated by the pairs

    remove: (P, Q) = (M, Q0),   privacy loss  L(x) = log(1 − q + q·exp((2x − 1)/(2σ²)))
    add:    (P, Q) = (Q0, M),   privacy loss −L(x)      (bounded above by −log(1 − q))

The PLD of a pair is the law of its loss under P; the PLD of a T-fold composition is the
T-fold convolution of the one-step PLD, and the privacy profile is the hockey-stick
divergence [KJH20]

    δ(ε) = E_P[(1 − e^{ε−L})₊]  (+ the P-mass at L = +∞).

Both directions are composed; the mechanism's δ(ε) is the larger one and ε(δ) the larger of
the two inverses.  Every function returns a bracket: `upper` is never below the truth and
`lower` never above it (ε ≥ 0; log δ may be far below the double range).

Method.
  * One step, pessimistic: connect-the-dots [DGKKM22] on a grid (each loss interval's P- and
    Q-mass is split between its end points; the true pair is a post-processing of the
    result, so the result dominates it).  Mass above the top grid point goes to +∞.
  * One step, optimistic: loss buckets around the grid points are merged, also fractions of
    neighbouring buckets, until each merged atom's likelihood ratio is (just) at or above
    its grid value; merging is a post-processing, placing an atom below its ratio only
    lowers δ: the result is dominated by the true pair.
  * Both are second order in the grid spacing h.  The one-step grid is piecewise uniform
    (stride 4^k where the tilted tails carry < 1e-6, 1e-9, …), offset so that the clump of
    mass at the hard edge of the loss (log(1 − q), small q or σ) sits on a grid point.
  * Composition by repeated squaring with FFT convolution [KJH20], on grids that coarsen by
    2 every second squaring (ρ ≈ h/std stays constant, and λ·h ≤ 2ρ); coarsening re-applies
    connect-the-dots (pessimistic, a fixed linear filter) or bucket merging (optimistic, its
    decisions checked against the ℓ∞ error bound so they hold for the exact vector too).
  * Exponential tilting: vectors hold p_j·e^{λℓ_j − k·c} (k steps, c the one-step log-MGF on
    the grid), λ from a Chernoff-type bound so that the tilted law is centred where δ(ε)
    comes from.  Absolute errors in tilted units are relative errors near ε: δ is certified
    far below the FFT round-off level (1e-300, e^{−2000}: log space throughout).
  * ε(δ) inverts the certified δ(ε) (bisection with verified end points); passes refine
    ρ until (upper − lower)/upper ≤ tolerance or ρ reaches its floor (then a wider bracket).

Error analysis (each term and its side).  [GLW21, Thm 5.5] budgets the discretisation error
of a mean-preserving grid; here domination removes that term, and the budget only covers:
  1. Discretisation: none on either side (domination / post-processing, as above).
  2. One-step tails: mass above the grid → +∞ (pessimistic; T·p∞ ≤ 1% of tol·δ is added to
     δ) or lowered/dropped (optimistic).  Mass below the grid: raised (pessimistic) or,
     when cut at a tilted quantile, dropped with its tilted mass bounded by a Riemann upper
     sum and added to the error term; dropped (optimistic).
  3. Closed-form tails: erfc (assumed ≤ 1e-15 relative, checked against mpmath in the
     tests) and the threshold x(ℓ) carry per-point error bounds; the grid CDF is moved by
     twice those bounds towards the safe side, so the computed one-step PLD stochastically
     dominates (is dominated by) the exact discretisation.
  4. FFT round-off: per convolution the a-priori bound of floating-point FFTs (Higham 2002,
     Thm 24.2, 4× safety factor), as ℓ2 → ℓ1 (√n) and ℓ∞; heavy entries are convolved
     directly (error O(u)).  Errors propagate through every later convolution and
     coarsening (ℓ1 norms of the maps); clipping negatives never increases them.
     Pessimistic truncations of tilted tails are added to the same ℓ1 bound.  An ℓ1 error e
     (tilted units) moves δ(ε) by ≤ e·e^{T·c − λε}·C_λ, C_λ = sup_{y≥0} e^{−λy}(1 − e^{−y}):
     added to the pessimistic δ, subtracted from the optimistic one.
  5. exp/log at the untilting and the final sums: a relative margin (≥ 1e-12) on δ.
When no finite certified upper bound results, PLDUncertifiable is raised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "PLDUncertifiable",
    "certify_epsilon",
    "epsilon_bounds",
    "epsilon_curve",
    "log_delta_bounds",
]

_U = 2.0 ** -53                 # unit round-off of IEEE double
_SQRT2 = math.sqrt(2.0)
_LOG_HALF = math.log(0.5)
_LOG_U4 = math.log(4 * _U)
_ERFC_REL = 1e-15               # assumed relative error bound of libm erfc (≈ 9 ulp; glibc
                                # documents a few ulp, recent versions are correctly rounded;
                                # tests/test_relations_pld.py checks it against mpmath)
_RHO_MIN = 0.004                # finest grid spacing the refinement will try
_N0_MAX = 400_000               # cap on one-step grid points (memory and time)
_NWIN_MAX = 1 << 21             # cap on any composed vector length
_N0_LEN_MAX = 1 << 19           # cap on the one-step vector length (its square is 2×)
_TAU_FLOOR = 1e-45              # smallest truncation threshold (tilted mass)
_BUDGET = 0.01                  # share of tolerance·δ for each of: +∞ mass, truncation
_LAMH = 2.0                     # every grid keeps λ·h ≤ _LAMH·ρ
_TIER_LEVELS = (1e-6, 1e-9, 1e-12, 1e-15)   # tilted tail mass beyond stride 4, 16, 64, 256


def _n_truncations(steps: int) -> int:
    return 2 * (steps.bit_length() + bin(steps).count("1") + 2)


class PLDUncertifiable(Exception):
    """The PLD grid cannot certify the requested quantity; fall back to another accountant."""


# --------------------------------------------------------------------------------------
# log-space helpers (vectorised)
# --------------------------------------------------------------------------------------

def _log1mexp(d):
    """log(1 − e^d) for d ≤ 0 (Maechler 2012); −inf at d = 0."""
    d = np.asarray(d, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d > -math.log(2.0), np.log(-np.expm1(d)), np.log1p(-np.exp(d)))


def _log_sub(a, b):
    """log(e^a − e^b), −inf where a ≤ b (callers handle the sign)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        out = a + _log1mexp(np.minimum(b - a, 0.0))
    return np.where(a > b, out, -np.inf)


def _lse(*arrays):
    """Elementwise log(Σ e^{a_i}) of several arrays."""
    out = arrays[0]
    for a in arrays[1:]:
        out = np.logaddexp(out, a)
    return out


def _logsumexp(a) -> float:
    a = np.asarray(a, dtype=float)
    if a.size == 0:
        return -math.inf
    m = float(np.max(a))
    if m == -math.inf:
        return -math.inf
    return m + math.log(float(np.sum(np.exp(a - m))))


def _log_erfc(y):
    """log erfc(y) elementwise; relative accuracy also where erfc underflows (y ≥ 26).

    y < 26: libm erfc.  y ≥ 26: the asymptotic series
    erfc(y) = e^{−y²}/(y√π) · Σ_n (−1)^n (2n−1)!!/(2y²)^n, truncated after 14 terms
    (the first omitted term is < 1e-25 relative at y = 26).
    """
    y = np.asarray(y, dtype=float)
    out = np.empty_like(y)
    small = y < 26.0
    if small.any():
        ys = y[small]
        vals = np.fromiter(map(math.erfc, ys.tolist()), float, ys.size)
        with np.errstate(divide="ignore"):
            out[small] = np.log(vals)
    big = ~small
    if big.any():
        yb = y[big]
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            inv = 0.5 / (yb * yb)
            s = np.ones_like(yb)
            term = np.ones_like(yb)
            for n in range(1, 15):
                term = term * (-(2 * n - 1) * inv)
                s = s + term
            r = -yb * yb - np.log(yb) - 0.5 * math.log(math.pi) + np.log(s)
        out[big] = np.where(np.isposinf(yb), -np.inf, r)
    return out


def _slog(v) -> float:
    """log of a non-negative scalar, −inf at 0."""
    v = float(v)
    return math.log(v) if v > 0 else -math.inf


def _log_c_lambda(lam: float) -> float:
    """log C_λ, C_λ = sup_{y ≥ 0} e^{−λy}(1 − e^{−y}) = (1/(1+λ))·(λ/(1+λ))^λ (1 at λ = 0)."""
    if lam <= 0.0:
        return 0.0
    return -math.log1p(lam) - lam * math.log1p(1.0 / lam)


# --------------------------------------------------------------------------------------
# the one-step pair in x-space
# --------------------------------------------------------------------------------------

def _x_of_loss(ell, q: float, sigma: float):
    """Threshold x with L(x) = ℓ (remove-direction loss), its error bound and a flag.

    L is increasing in x, so {L > ℓ} = {x > x(ℓ)} with x(ℓ) = σ²·log((e^ℓ − 1 + q)/q) + 1/2
    (x = −∞ where e^ℓ ≤ 1 − q).  Returns (x, dx, ill): dx bounds |x_computed − x(ℓ)| including
    the rounding of the grid value ℓ itself; ill marks points where the sign of e^ℓ − 1 + q
    is not certain (the caller moves the grid).
    """
    ell = np.asarray(ell, dtype=float)
    s2 = sigma * sigma
    if q == 1.0:
        x = s2 * ell + 0.5
        dx = _U * (3.0 * s2 * np.abs(ell) + 2.0 * np.abs(x) + 1.0)
        return x, dx, np.zeros(ell.shape, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        em1 = np.expm1(ell)
        y = em1 / q                      # x = σ²·log1p(y) + 1/2, y = (e^ℓ − 1)/q > −1
        x = s2 * np.log1p(y) + 0.5
        # |Δy| ≤ 2u|y| (expm1, division) + u|ℓ|e^ℓ/q (rounding of the grid value ℓ)
        ey = 2.0 * _U * np.abs(y) + _U * np.abs(ell) * (em1 + 1.0) / q
        onep = 1.0 + y
        dx = s2 * (ey / np.abs(onep) + 2.0 * _U * np.abs(np.log1p(y))) \
            + 2.0 * _U * (np.abs(x) + 1.0)
    ill = np.abs(onep) <= 8.0 * (ey + _U)
    pos = onep > 0
    x = np.where(pos, x, -np.inf)
    dx = np.where(pos, dx, 0.0)
    return x, dx, ill


def _gauss_tails(z, dz):
    """(log Φc(z), log Φ(z), log-error of each) from one erfc of |z| per point.

    The minor tail comes from erfc(|z|/√2) (relative accuracy); the major one is
    log1p(−minor).  The error adds the erfc error, the y² rounding of the asymptotic branch
    and |dlogΦ/dz| ≤ |z| + 1 (Mills ratio) times the threshold error dz.
    """
    az = np.abs(z)
    lminor = _LOG_HALF + _log_erfc(az / _SQRT2)
    with np.errstate(invalid="ignore"):
        lmajor = np.log1p(-np.exp(lminor))
        err = _ERFC_REL + 2.0 * _U * az * az + (az + 1.0) * dz + 4.0 * _U
    err = np.where(np.isfinite(z), err, 0.0)
    upper = z >= 0  # Φc(z) is the minor tail
    lc = np.where(upper, lminor, lmajor)
    lphi = np.where(upper, lmajor, lminor)
    return lc, lphi, err


@dataclass
class _Tails:
    """Log tail probabilities of the one-step PLD at thresholds, with relative errors."""

    lPup: np.ndarray   # log P(L > ℓ)
    lPlo: np.ndarray   # log P(L ≤ ℓ)
    lQup: np.ndarray
    lQlo: np.ndarray
    ePup: np.ndarray   # relative error bounds
    ePlo: np.ndarray
    eQup: np.ndarray
    eQlo: np.ndarray


def _tails(ell, q: float, sigma: float, direction: str):
    """Tails of the one-step PLD of one direction at thresholds ℓ; None if ill-conditioned."""
    arg = np.asarray(ell, dtype=float)
    if direction == "add":
        arg = -arg            # L_add > ℓ ⟺ L_rem < −ℓ ⟺ x < x(−ℓ)
    x, dx, ill = _x_of_loss(arg, q, sigma)
    if ill.any():
        return None
    z0 = x / sigma
    with np.errstate(invalid="ignore"):
        z1 = (x - 1.0) / sigma
        dz0 = dx / sigma + 2.0 * _U * np.abs(z0)
        dz1 = (dx + _U * np.abs(x)) / sigma + 2.0 * _U * np.abs(z1)
    c0, p0, e0 = _gauss_tails(z0, np.where(np.isfinite(dz0), dz0, 0.0))
    c1, p1, e1 = _gauss_tails(z1, np.where(np.isfinite(dz1), dz1, 0.0))
    em = np.maximum(e0, e1) + 4.0 * _U
    if q == 1.0:
        mix_c, mix_p, e_mix = c1, p1, e1
    else:
        l1mq, lq = math.log1p(-q), math.log(q)
        mix_c = np.logaddexp(l1mq + c0, lq + c1)   # M(x > ·) = (1−q)Φc(z0) + qΦc(z1)
        mix_p = np.logaddexp(l1mq + p0, lq + p1)
        e_mix = em
    if direction == "remove":
        return _Tails(mix_c, mix_p, c0, p0, e_mix, e_mix, e0, e0)
    # add: P = Q0, Q = M; {L_add > ℓ} = {x < x(−ℓ)}
    return _Tails(p0, c0, mix_p, mix_c, e0, e0, e_mix, e_mix)


def _interval_mass(lup_l, lup_r, llo_l, llo_r, eup_l, eup_r, elo_l, elo_r):
    """log of the mass between two thresholds and the log of an absolute error bound.

    Uses the difference of upper tails where those are ≤ 1/2, else of lower tails.
    """
    with np.errstate(divide="ignore"):
        use_up = lup_l <= _LOG_HALF
        m_up = _log_sub(lup_l, lup_r)
        m_lo = _log_sub(llo_r, llo_l)
        err_up = np.logaddexp(np.log(eup_l) + lup_l, np.log(eup_r) + lup_r)
        err_lo = np.logaddexp(np.log(elo_r) + llo_r, np.log(elo_l) + llo_l)
    m = np.where(use_up, m_up, m_lo)
    err = np.where(use_up, err_up, err_lo)
    return m, np.logaddexp(err, _LOG_U4 + m)


# --------------------------------------------------------------------------------------
# level 0: the one-step PLD on the grid
# --------------------------------------------------------------------------------------

def _ctd_level0(ell, tl: _Tails, remove: bool, drop_below: bool = False):
    """Pessimistic one-step PLD on the points ℓ by connect-the-dots [DGKKM22, Alg. 1].

    With S_m = P-mass at points ≥ ℓ_m, connect-the-dots gives (Δ = ℓ_m − ℓ_{m−1})
        S_m = P(L > ℓ_m) + G_{m−1}/(1 − e^{−Δ}),
        G_{m−1} = E_P[(1 − e^{ℓ_{m−1}−L}); ℓ_{m−1} < L ≤ ℓ_m]
    (the intercept of the chord of the privacy profile between ℓ_{m−1} and ℓ_m; G by the
    two interval masses, G = ΔP − e^{ℓ_{m−1}}ΔQ).  All P-mass below ℓ_0 is put at ℓ_0; mass
    above the top point goes to +∞ (p∞ = P(L > ℓ_top), more than the chord needs).  The
    computed tail sums are moved up by twice their error bound (upper half, S) or the lower
    sums F = 1 − S down (lower half), so the result stochastically dominates the exact
    connect-the-dots PLD.  With drop_below the P-mass below ℓ_0 is dropped instead (its
    tilted mass must then be paid for by the caller); all sums then come from upper tails.
    Returns (log masses, log p∞, log relative error of the masses).
    """
    n = ell.size
    lw = np.log(-np.expm1(-np.diff(ell)))  # log(1 − e^{−(ℓ_m − ℓ_{m−1})}), any spacing
    with np.errstate(divide="ignore", invalid="ignore"):
        la, lea = _interval_mass(tl.lPup[:-1], tl.lPup[1:], tl.lPlo[:-1], tl.lPlo[1:],
                                 tl.ePup[:-1], tl.ePup[1:], tl.ePlo[:-1], tl.ePlo[1:])
        lb, leb = _interval_mass(tl.lQup[:-1], tl.lQup[1:], tl.lQlo[:-1], tl.lQlo[1:],
                                 tl.eQup[:-1], tl.eQup[1:], tl.eQlo[:-1], tl.eQlo[1:])
        lb = lb + ell[:-1]
        leb = leb + ell[:-1]
        lG = _log_sub(la, lb)
        leG = _lse(lea, leb, _LOG_U4 + np.logaddexp(la, lb))
        lGw, leGw = lG - lw, leG - lw
        lPup, lPlo = tl.lPup[1:], tl.lPlo[1:]
        elPup, elPlo = np.log(tl.ePup[1:]) + lPup, np.log(tl.ePlo[1:]) + lPlo
        # upper sums S_m (m = 1..n−1), lower sums F_m = 1 − S_m
        lS = np.logaddexp(lPup, lGw)
        leS = _lse(elPup, leGw, _LOG_U4 + lS)
        lF = _log_sub(lPlo, lGw)
        leF = _lse(elPlo, leGw, _LOG_U4 + np.logaddexp(lPlo, lGw))
        lS_t = np.logaddexp(lS, math.log(2.0) + leS)              # pessimistic: S up
        lF_t = _log_sub(lF, math.log(2.0) + leF)                 # pessimistic: F down
    # index arrays over m = 0..n (m = n is +∞)
    S = np.full(n + 1, -np.inf)
    F = np.full(n + 1, -np.inf)
    S[0], F[0] = 0.0, -np.inf
    S[1:n] = lS_t
    F[1:n] = lF_t
    # p∞ = P(L > ℓ_top), moved up by twice its error bound
    lpinf = float(tl.lPup[-1] + math.log1p(2.0 * float(tl.ePup[-1]) + 4 * _U))
    S[n] = lpinf
    med_candidates = np.nonzero(tl.lPup[:-1] <= _LOG_HALF)[0]
    m_med = int(med_candidates[0]) + 1 if med_candidates.size else n
    if drop_below:
        # only the part above ℓ_0 is kept: S_0 = P(L > ℓ_0), all sums from upper tails
        S[0] = float(tl.lPup[0] + math.log1p(2.0 * float(tl.ePup[0]) + 4 * _U))
        S = np.maximum.accumulate(S[::-1])[::-1]
        lp = _log_sub(S[:n], S[1:n + 1])
        with np.errstate(invalid="ignore", over="ignore"):
            lrel = np.log(2 * _U) + np.logaddexp(S[:n] - lp, 1.0)
        return lp, lpinf, np.where(np.isfinite(lp), lrel, -np.inf)
    # monotone in the safe direction: S non-increasing (raise), F non-decreasing (lower)
    S[m_med:] = np.maximum.accumulate(S[m_med:][::-1])[::-1]
    F[:m_med] = np.minimum.accumulate(F[:m_med][::-1])[::-1]
    lp = np.full(n, -np.inf)
    if m_med <= n - 1:
        lp[m_med:n] = _log_sub(S[m_med:n], S[m_med + 1:n + 1])
    if m_med >= 2:
        lp[:m_med - 1] = _log_sub(F[1:m_med], F[:m_med - 1])
    mid = 1.0 - math.exp(F[m_med - 1]) - math.exp(S[m_med])
    if mid < 0.0:
        # the margins overlap at the junction: lower F further (more mass up: still safe)
        F[m_med - 1] = float(_log1mexp(min(S[m_med], 0.0)))
        F[:m_med] = np.minimum.accumulate(F[:m_med][::-1])[::-1]
        if m_med >= 2:
            lp[:m_med - 1] = _log_sub(F[1:m_med], F[:m_med - 1])
        mid = 0.0
    if not mid >= 0.0:
        raise PLDUncertifiable("one-step grid inconsistent (connect-the-dots)")
    lp[m_med - 1] = math.log(mid) if mid > 0 else -math.inf
    # relative error of the log masses: u·(tail/mass + 2)
    with np.errstate(invalid="ignore", over="ignore"):
        tail = np.where(np.arange(n) >= m_med, S[:n], F[1:n + 1])
        lrel = np.log(2 * _U) + np.logaddexp(tail - lp, 1.0)
    lrel = np.where(np.isfinite(lp), lrel, -np.inf)
    return lp, lpinf, lrel


def _bucket_masses(tb: _Tails):
    """log P- and Q-masses (and log absolute error bounds) of the n = len(tb) + 1 buckets cut
    by the boundaries whose tails are tb (the first and last bucket are unbounded)."""
    n = tb.lPup.size + 1
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        la = np.empty(n)
        lb = np.empty(n)
        lea = np.empty(n)
        leb = np.empty(n)
        la[0], lb[0] = tb.lPlo[0], tb.lQlo[0]
        lea[0] = _slog(tb.ePlo[0]) + tb.lPlo[0]
        leb[0] = _slog(tb.eQlo[0]) + tb.lQlo[0]
        la[-1], lb[-1] = tb.lPup[-1], tb.lQup[-1]
        lea[-1] = _slog(tb.ePup[-1]) + tb.lPup[-1]
        leb[-1] = _slog(tb.eQup[-1]) + tb.lQup[-1]
        if n > 2:
            la[1:-1], lea[1:-1] = _interval_mass(
                tb.lPup[:-1], tb.lPup[1:], tb.lPlo[:-1], tb.lPlo[1:],
                tb.ePup[:-1], tb.ePup[1:], tb.ePlo[:-1], tb.ePlo[1:])
            lb[1:-1], leb[1:-1] = _interval_mass(
                tb.lQup[:-1], tb.lQup[1:], tb.lQlo[:-1], tb.lQlo[1:],
                tb.eQup[:-1], tb.eQup[1:], tb.eQlo[:-1], tb.eQlo[1:])
    return la, lb, lea, leb


def _bucket_plan(ell, la, lb, lea, leb) -> dict:
    """Merge decisions of the optimistic one-step PLD (see _bucket_level0)."""
    n = ell.size
    theta = 1.0 - 1e-6
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        nonempty = np.isfinite(la)
        ra = np.where(nonempty, np.exp(lea - la), 0.0)       # relative errors of a, b
        rb = np.where(np.isfinite(lb), np.exp(leb - lb), 0.0)
        rab = ra + rb + 4 * _U

        def excess(target, k):
            """Excess of bucket k over e^{target} per unit of a_k, and its error bound."""
            lr = np.where(nonempty[k], target + lb[k] - la[k], np.nan)
            # X = 1 − e^{lr}; relative errors ra, rb of a, b move lr by ≤ ra + rb (+ rounding)
            return -np.expm1(lr), np.exp(lr) * np.expm1(rab[k]) + 4 * _U

        idx = np.arange(n)
        X, eX = excess(ell, idx)
        up = np.minimum(idx + 1, n - 1)
        dn = np.maximum(idx - 1, 0)
        Y, eY = excess(ell, up)          # bucket m+1 w.r.t. ℓ_m (> 0)
        Z, eZ = excess(ell, dn)          # bucket m−1 w.r.t. ℓ_m (< 0)
        has_up = (idx < n - 1) & nonempty[up]
        has_dn = (idx > 0) & nonempty[dn]
        need = eX - X
        # deficit: f = need·a_m / ((Y − eY)·a_{m+1})
        logf = (np.log(np.maximum(need, 0.0)) + la - np.log(Y - eY) - la[up] + 16 * _U)
        deficit = nonempty & ~(need <= 0)           # NaN-safe: unknown counts as deficit
        borrow = deficit & has_up & (Y - eY > 0) & (logf <= 0.0)
        fb = deficit & ~borrow
        f = np.where(borrow, np.exp(np.where(borrow, logf, -np.inf)), 0.0)
        # excess: g = θ·own_frac·(X − eX)·a_m / ((|Z| + eZ)·a_{m−1})
        surplus = nonempty & (need < 0) & has_dn
        lgr = (np.log(np.where(surplus, -need, 1.0)) + la - np.log(np.abs(Z) + eZ) - la[dn]
               + math.log(theta))
        g_hat = np.where(surplus, np.exp(np.where(surplus, lgr, -np.inf)), 0.0)
        fprev = np.concatenate(([0.0], f[:-1]))
        g_next_hat = np.concatenate((g_hat[1:], [0.0]))
        own_frac = np.maximum(0.0, 1.0 - fprev - np.minimum(g_next_hat, 1.0 - fprev))
        fprev2 = np.concatenate(([0.0, 0.0], f[:-2]))[:n]
        g = np.minimum(g_hat * own_frac, np.maximum(0.0, 1.0 - fprev2))
        g = np.where(surplus & np.isfinite(g), g * (1.0 - 4 * _U), 0.0)
    return dict(la=la, lb=lb, ra=ra, n=n, f=f, g=g, fb=fb, fprev=fprev, dn=dn)


def _bucket_mean_loss(ell, d: dict, n_win: int) -> np.ndarray:
    """Per window of n_win buckets: how much the optimistic construction lowers the P-mean
    of the loss, Σ_buckets a·log(a/b) − Σ_atoms A·ℓ (merging and lowering both count); used
    to choose the grid offset."""
    with np.errstate(all="ignore"):
        a = np.exp(d["la"])
        lam = np.where(np.isfinite(d["la"]), d["la"] - d["lb"], 0.0)
    n, f, g, fb, dn = d["n"], d["f"], d["g"], d["fb"], d["dn"]
    up = np.minimum(np.arange(n) + 1, n - 1)
    own = np.maximum(0.0, 1.0 - d["fprev"] - np.concatenate((g[1:], [0.0])))
    placed = np.where(fb, 0.0, own * a) + f * a[up] + g * a[dn]
    below = np.concatenate((np.where(fb, own * a, 0.0)[1:], [0.0]))   # fall-backs land at m
    before = np.nan_to_num(a * lam)
    after = np.nan_to_num((placed + below) * ell)
    return (before - after).reshape(-1, n_win).sum(axis=1)


def _edge_offset(q: float, sigma: float, direction: str, h: float) -> float:
    """Grid offset for a one-step law with a hard edge (the remove-direction loss is
    ≥ log(1 − q), the add-direction loss ≤ −log(1 − q)).  Next to the edge the density can
    rise steeply within one cell (the "no-jump" clump of a small-q or small-σ step) and the
    bucket there has no mass beyond the edge to merge with, so the optimistic side would
    lower it by up to h on every step.  Keep, among 32 offsets, the one whose optimistic
    construction loses the least P-mean of the loss in the 38 cells next to the edge (a
    heuristic: every offset is sound).
    All offsets are evaluated in one batch: windows of 40 buckets whose end buckets are
    left empty, so the windows do not interact."""
    if q >= 1.0:
        return 0.0
    edge = math.log1p(-q) if direction == "remove" else -math.log1p(-q)
    n_off, n_at = 32, 40
    rel = np.arange(-3, n_at - 3) if direction == "remove" else np.arange(-(n_at - 4), 4)
    # (k + 1/64)/32 keeps every atom and boundary off the edge itself (ill-conditioned)
    offs = edge + h * (np.arange(n_off) + 1.0 / 64) / n_off
    ell = (offs[:, None] + rel[None, :] * h)                    # (W, 40) atoms
    mids = 0.5 * (ell[:, :-1] + ell[:, 1:])                     # (W, 39) boundaries
    tb = _tails(mids.ravel(), q, sigma, direction)
    if tb is None:
        return math.fmod(float(offs[0]), h)
    shape = (n_off, n_at - 1)
    lP, lPl, lQ, lQl = (v.reshape(shape) for v in (tb.lPup, tb.lPlo, tb.lQup, tb.lQlo))
    eP, ePl, eQ, eQl = (v.reshape(shape) for v in (tb.ePup, tb.ePlo, tb.eQup, tb.eQlo))
    with np.errstate(all="ignore"):
        ma, mea = _interval_mass(lP[:, :-1], lP[:, 1:], lPl[:, :-1], lPl[:, 1:],
                                 eP[:, :-1], eP[:, 1:], ePl[:, :-1], ePl[:, 1:])
        mb, meb = _interval_mass(lQ[:, :-1], lQ[:, 1:], lQl[:, :-1], lQl[:, 1:],
                                 eQ[:, :-1], eQ[:, 1:], eQl[:, :-1], eQl[:, 1:])
    empty = np.full((n_off, 1), -np.inf)
    la, lea, lb, leb = (np.hstack((empty, v, empty)).ravel() for v in (ma, mea, mb, meb))
    flat = ell.ravel()
    d = _bucket_plan(flat, la, lb, lea, leb)
    k = int(np.argmin(_bucket_mean_loss(flat, d, n_at)))
    return math.fmod(float(offs[k]), h)


def _bucket_level0(ell, tb: _Tails):
    """Optimistic one-step PLD on grid ℓ: merged loss buckets placed at their grid values.

    Bucket m collects L ∈ (β_{m−1}, β_m], β_m = (ℓ_m + ℓ_{m+1})/2 (the first and last are
    unbounded); merging
    (also of fractions of buckets) is a post-processing, so the merged pair is dominated by
    the true pair.  A merged atom may sit at ℓ_m only if its likelihood ratio is ≥ e^{ℓ_m}
    (then placing it at ℓ_m lowers its loss, which only lowers δ):
      * deficit (excess X = 1 − e^{ℓ_m}b/a not certainly ≥ 0): merge a fraction f of bucket
        m+1 (ratio > e^{ℓ_m}) until the merged excess is certainly ≥ 0; if impossible, place
        the bucket at ℓ_{m−1} (all its losses exceed β_{m−1} > ℓ_{m−1}) or drop it (bottom);
      * excess: merge a fraction g of bucket m−1 (ratio < e^{ℓ_m}) that keeps the merged
        excess certainly ≥ 0, so the atom sits (almost) exactly at its ratio.  Without this
        step a steep density would lose ~h²·|d log density/dℓ| per step.
    "Certainly" accounts for the error bounds of the tails.  The grid CDF is then moved by
    twice its error bound towards lower losses.  tb holds the tails at the n−1 bucket
    boundaries β_m.  Returns (log masses, log relative error of the masses).
    """
    d = _bucket_plan(ell, *_bucket_masses(tb))
    la, ra, n, f, g, fb, fprev, dn = (d[k] for k in ("la", "ra", "n", "f", "g", "fb",
                                                     "fprev", "dn"))
    g_next = np.concatenate((g[1:], [0.0]))
    # tail sums of the grid PLD: S_m = P-mass at grid points ≥ m (F_m = 1 − S_m)
    #   normal m:    S_m = P(L > β_{m−1}) − f_{m−1}a_m + g_m a_{m−1}
    #   fall-back m: S_m = P(L > β_m) + g_{m+1}a_m
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lfa = np.log(fprev) + la                        # f_{m−1}·a_m
        lga = np.log(g) + la[dn]                        # g_m·a_{m−1}
        lgn = np.log(g_next) + la                       # g_{m+1}·a_m
        r_fa = lfa + np.log(ra + 2 * _U)
        r_ga = lga + np.log(ra[dn] + 2 * _U)
        r_gn = lgn + np.log(ra + 2 * _U)
        lPu, lPl = tb.lPup, tb.lPlo
        ePu = np.log(tb.ePup) + lPu
        ePl = np.log(tb.ePlo) + lPl
        sl = slice(1, n)
        lS_norm = _log_sub(np.logaddexp(lPu, lga[sl]), lfa[sl])
        leS_norm = _lse(ePu, r_fa[sl], r_ga[sl], _LOG_U4 + np.logaddexp(lPu, lga[sl]))
        lF_norm = _log_sub(np.logaddexp(lPl, lfa[sl]), lga[sl])
        leF_norm = _lse(ePl, r_fa[sl], r_ga[sl], _LOG_U4 + np.logaddexp(lPl, lfa[sl]))
        lPu_a = np.concatenate((lPu[1:], [-np.inf]))
        ePu_a = np.concatenate((ePu[1:], [-np.inf]))
        lPl_a = np.concatenate((lPl[1:], [0.0]))
        ePl_a = np.concatenate((ePl[1:], [-np.inf]))
        lS_fb = np.logaddexp(lPu_a, lgn[sl])
        leS_fb = _lse(ePu_a, r_gn[sl], _LOG_U4 + lS_fb)
        lF_fb = _log_sub(lPl_a, lgn[sl])
        leF_fb = _lse(ePl_a, r_gn[sl], _LOG_U4 + lPl_a)
        fbm = fb[sl]
        lS = np.where(fbm, lS_fb, lS_norm)
        leS = np.where(fbm, leS_fb, leS_norm)
        lF = np.where(fbm, lF_fb, lF_norm)
        leF = np.where(fbm, leF_fb, leF_norm)
        lS_t = _log_sub(lS, math.log(2.0) + leS)              # optimistic: S down
        lF_t = np.logaddexp(lF, math.log(2.0) + leF)          # optimistic: F up
    S = np.full(n + 1, -np.inf)
    F = np.full(n + 1, 0.0)
    S[1:n] = lS_t
    F[1:n] = np.minimum(lF_t, 0.0)
    # bottom bucket: kept at ℓ_0, or its own part dropped (to −∞)
    if fb[0]:
        F[0] = float(la[0] + math.log1p(-min(g[1] if n > 1 else 0.0, 1.0))
                     + math.log1p(2.0 * ra[0] + 8 * _U))
        F[0] = min(F[0], 0.0)
        S[0] = float(_log1mexp(F[0]))
    else:
        F[0], S[0] = -np.inf, 0.0
    S[n], F[n] = -np.inf, 0.0
    med_candidates = np.nonzero(tb.lPup <= _LOG_HALF)[0]
    m_med = int(med_candidates[0]) + 1 if med_candidates.size else n
    m_med = max(m_med, 1)
    # monotone in the safe direction: S non-increasing (lower), F non-decreasing (raise)
    S[m_med:] = np.minimum.accumulate(S[m_med:])
    F[:m_med] = np.maximum.accumulate(F[:m_med])
    lp = np.full(n, -np.inf)
    if m_med <= n - 1:
        lp[m_med:n] = _log_sub(S[m_med:n], S[m_med + 1:n + 1])
    if m_med >= 2:
        lp[:m_med - 1] = _log_sub(F[1:m_med], F[:m_med - 1])
    mid = 1.0 - math.exp(F[m_med - 1]) - math.exp(S[m_med])
    if mid < 0.0:
        # the margins overlap at the junction: lower S further (more mass down: still safe)
        S[m_med] = float(_log1mexp(min(F[m_med - 1], 0.0)))
        S[m_med:] = np.minimum.accumulate(S[m_med:])
        if m_med <= n - 1:
            lp[m_med:n] = _log_sub(S[m_med:n], S[m_med + 1:n + 1])
        mid = 0.0
    if not mid >= 0.0:
        raise PLDUncertifiable("one-step grid inconsistent (buckets)")
    lp[m_med - 1] = math.log(mid) if mid > 0 else -math.inf
    with np.errstate(invalid="ignore", over="ignore"):
        tail = np.where(np.arange(n) >= m_med, S[:n], F[1:n + 1])
        lrel = np.log(2 * _U) + np.logaddexp(tail - lp, 1.0)
    lrel = np.where(np.isfinite(lp), lrel, -np.inf)
    return lp, lrel


# --------------------------------------------------------------------------------------
# tilted discrete PLDs with error bounds
# --------------------------------------------------------------------------------------

@dataclass
class _Dist:
    """A tilted discrete PLD: original mass at ℓ_j = j·h0·2^s is t_j·e^{logscale + k·c − λℓ_j}.

    e1 bounds ‖t − t_exact‖₁ and einf bounds max_j |t_j − t_exact,j| (same units as t),
    where t_exact is the same construction in exact arithmetic on exact inputs.
    """

    lo: int
    s: int
    t: np.ndarray
    logscale: float
    e1: float
    einf: float
    noise: float = 0.0   # ℓ1 round-off bound of the operation that produced t


def _normalise(d: _Dist) -> _Dist:
    m = float(d.t.max()) if d.t.size else 0.0
    if m <= 0.0 or not math.isfinite(m):
        return d
    t = d.t / m
    extra = _U * float(t.sum())  # rounding of the division
    return _Dist(d.lo, d.s, t, d.logscale + math.log(m), d.e1 / m + extra, d.einf / m + _U,
                 d.noise / m)


def _fft_roundoff_l2(n: int, n1a: float, n2a: float, n1b: float, n2b: float) -> float:
    """ℓ2 bound on the round-off of an FFT convolution of length n (power of two).

    Higham, Accuracy and Stability of Numerical Algorithms (2002), Thm 24.2: a computed FFT
    has ‖ŷ − y‖₂ ≤ (log2 n·η/(1 − log2 n·η))‖y‖₂, η ≈ 6u with accurate twiddle factors.  For
    irfft(rfft(a)·rfft(b)) this gives ≲ (2γ + 4u)(‖a‖₁‖b‖₂ + ‖a‖₂‖b‖₁), γ = log2 n·η (using
    |â_k| ≤ ‖a‖₁ and Parseval); a safety factor of 4 on top.
    """
    gamma = 8.0 * _U * max(1.0, math.log2(n))
    return 4.0 * (2.0 * gamma + 4.0 * _U) * (n1a * n2b + n2a * n1b)


def _heavy(t: np.ndarray, k: int = 16):
    """Indices of the k largest entries if they carry at least half of the mass."""
    if t.size <= 8 * k:
        return None
    idx = np.argpartition(t, t.size - k)[t.size - k:]
    return idx if float(t[idx].sum()) >= 0.5 * float(t.sum()) else None


def _conv_fft(x: np.ndarray, y: np.ndarray, same: bool):
    """x*y by FFT; returns (out, ℓ1 bound, ℓ∞ bound) on the round-off."""
    nout = x.size + y.size - 1
    n = 1 << (nout - 1).bit_length()
    fx = np.fft.rfft(x, n)
    fy = fx if same else np.fft.rfft(y, n)
    out = np.fft.irfft(fx * fy, n)[:nout]
    n1x, n1y = float(x.sum()), float(y.sum())
    n2x = math.sqrt(float((x * x).sum()))
    n2y = n2x if same else math.sqrt(float((y * y).sum()))
    r2 = _fft_roundoff_l2(n, n1x, n2x, n1y, n2y)
    return out, math.sqrt(nout) * r2, r2


def _conv(a: _Dist, b: _Dist) -> _Dist:
    """Convolution with propagated ℓ1 / ℓ∞ error bounds; negatives clipped (never worse).

    Direct for short vectors.  Otherwise by FFT; when a few entries carry most of the mass
    (early compositions of a small-q step: a spike plus a thin tail) those are convolved
    directly as shifted copies, exact up to O(u) per entry, and only the rest by FFT,
    whose round-off bound scales with the ℓ2 norms and would otherwise be dominated by the
    spike.
    """
    assert a.s == b.s
    la, lb = a.t.size, b.t.size
    nout = la + lb - 1
    n1a, n1b = float(np.abs(a.t).sum()), float(np.abs(b.t).sum())
    mxa, mxb = float(np.abs(a.t).max()), float(np.abs(b.t).max())
    same = b is a
    if min(la, lb) <= 48:
        out = np.convolve(a.t, b.t)
        m = min(la, lb)
        g = m * _U / (1 - m * _U) * 2
        r1 = g * n1a * n1b
        rinf = g * min(mxa * n1b, n1a * mxb)
    else:
        ha = _heavy(a.t) if nout > 16384 else None
        hb = (ha if same else _heavy(b.t)) if ha is not None else None
        if ha is None:
            out, r1, rinf = _conv_fft(a.t, b.t, same)
        else:
            # a*b = a_H*b + b_H*a_L + a_L*b_L   (H: heavy entries, L: the rest)
            aL = a.t.copy()
            aL[ha] = 0.0
            if hb is None:
                bL, hb_idx = b.t, np.zeros(0, dtype=int)
            else:
                bL = aL if same else b.t.copy()
                if not same:
                    bL[hb] = 0.0
                hb_idx = hb
            out, r1, rinf = _conv_fft(aL, bL, same and hb is not None)
            for j in ha:
                out[j:j + lb] += a.t[j] * b.t
            for i in hb_idx:
                out[i:i + la] += b.t[i] * aL
            m = ha.size + hb_idx.size + 2
            g = 2 * m * _U / (1 - m * _U)
            r1 += g * (n1a * n1b + r1)
            rinf += g * (mxa * n1b + mxb * n1a)
    # exact a = ã − e_a etc.: ã*b̃ − a*b = e_a*b̃ + ã*e_b − e_a*e_b
    e1 = a.e1 * n1b + n1a * b.e1 + a.e1 * b.e1 + r1
    einf = (min(a.einf * n1b, a.e1 * mxb) + min(n1a * b.einf, mxa * b.e1)
            + min(a.einf * b.e1, a.e1 * b.einf) + rinf)
    out = np.maximum(out, 0.0)  # exact values are ≥ 0: clipping moves towards them
    d = _Dist(a.lo + b.lo, a.s, out, a.logscale + b.logscale, e1 * (1 + 8 * _U),
              einf * (1 + 8 * _U), r1)
    return _normalise(d)


def _truncate(d: _Dist, tau: float, pess: bool) -> _Dist:
    """Drop both tails of tilted mass ≤ τ (τ in absolute tilted units).

    Optimistic: dropping mass only lowers δ (sound).  Pessimistic: the dropped mass is added
    to the ℓ1 error bound (the exact object keeps it), and is paid for at the end.  The
    threshold is at least the round-off bound of the step that produced t (FFT noise in the
    far tails is not worth keeping: dropping it at most doubles that error term).
    """
    t = d.t
    if t.size <= 2:
        return d
    tau_s = tau * math.exp(min(-d.logscale, 700.0))
    tau_s = max(tau_s, d.noise)
    if not tau_s > 0.0:
        return d
    cs = np.cumsum(t)
    i0 = int(np.searchsorted(cs, tau_s, side="right"))
    rcs = np.cumsum(t[::-1])
    i1 = int(np.searchsorted(rcs, tau_s, side="right"))
    if i0 + i1 >= t.size - 1:
        return d
    if i0 == 0 and i1 == 0:
        return d
    dropped = (float(cs[i0 - 1]) if i0 else 0.0) + (float(rcs[i1 - 1]) if i1 else 0.0)
    dropped *= 1.0 + t.size * _U * 2
    nt = t[i0:t.size - i1]
    e1 = d.e1 + dropped if pess else d.e1
    return _Dist(d.lo + i0, d.s, nt, d.logscale, e1, d.einf)


def _coarsen_pess(d: _Dist, h: float, lam: float) -> _Dist:
    """Connect-the-dots from grid h to 2h [DGKKM22]: an atom at an odd point (2i+1)h is split
    between 2ih (P-mass fraction 1/(1+e^h)) and (2i+2)h (fraction 1/(1+e^{−h})), which keeps
    its P- and Q-mass: a dominating pair.  In tilted units the two parts get the factors
    e^{∓λh}.  ℓ1 norm of the map: max(1, cd + cu)."""
    t = d.t
    lo = d.lo
    if lo % 2:
        t = np.concatenate(([0.0], t))
        lo -= 1
    if t.size % 2 == 0:
        t = np.concatenate((t, [0.0]))
    even = t[0::2]
    odd = t[1::2]
    w_up = 1.0 / (1.0 + math.exp(-h))
    cu = w_up * math.exp(lam * h)
    cd = (1.0 - w_up) * math.exp(-lam * h)
    out = even.copy()
    out[:odd.size] += cd * odd
    out[1:odd.size + 1] += cu * odd
    g = max(1.0, cu + cd)
    e1 = d.e1 * g + 6 * _U * float(out.sum())
    einf = d.einf * (1.0 + cu + cd) + 6 * _U * float(out.max())
    return _Dist(lo // 2, d.s + 1, out, d.logscale, e1, einf)


def _coarsen_opt(d: _Dist, h: float, lam: float) -> _Dist:
    """Bucket merging from grid h to 2h (optimistic, a dominated pair).

    Coarse point i collects the fine atoms 2i−1 (half), 2i, 2i+1 (half); merging (also of
    fractions) is a post-processing.  With X_i ∝ Σ m_j(1 − e^{2ih − ℓ_j}) its excess over the
    coarse grid value: a deficit bucket merges a fraction f of bucket i+1 (excess Y_i > 0
    w.r.t. 2ih); a surplus bucket merges a fraction g of bucket i−1 (excess Z_i < 0), so the
    merged atom sits (almost) exactly at its ratio.  All decisions are checked against the
    ℓ∞ error bound of the input, so they are valid for the exact vector as well (no error
    amplification).  A deficit bucket that cannot be fixed goes to 2(i−1)h (all its losses
    are ≥ (2i−1)h).  In tilted units a mass moved by Δ gets the factor e^{λΔ}.
    """
    t = d.t
    lo = d.lo
    if lo % 2 == 0:            # first entry odd, so that buckets are complete
        t = np.concatenate(([0.0], t))
        lo -= 1
    if (t.size % 2) == 0:
        t = np.concatenate((t, [0.0]))
    t = np.concatenate(([0.0, 0.0], t, [0.0, 0.0]))   # room for buckets i−1 and i+1
    lo -= 2
    i0 = (lo + 1) // 2        # t[1 + 2k] is fine index 2(i0 + k), t[2k] is 2(i0 + k) − 1
    even = t[1::2]
    odd = t[0::2]             # odd[k] = fine 2(i0+k) − 1
    nb = even.size
    o_prev = odd[:nb]                          # 2i − 1
    o_next = odd[1:nb + 1]                     # 2i + 1
    el, eml = math.exp(lam * h), math.exp(-lam * h)
    own = 0.5 * o_prev * el + even + 0.5 * o_next * eml      # tilted at 2i
    # excess coefficients (1 − e^{2ih − ℓ_j}) times tilt factors, fine offsets −3..+3
    cp1 = 0.5 * eml * -math.expm1(-h)
    cm1 = 0.5 * el * math.expm1(h)
    X = cp1 * o_next - cm1 * o_prev
    absX = cp1 * o_next + cm1 * o_prev
    z2 = np.concatenate(([0.0], even[:-1]))                   # 2i − 2
    z3 = np.concatenate(([0.0], o_prev[:-1]))                 # 2i − 3
    y2 = np.concatenate((even[1:], [0.0]))                    # 2i + 2
    y3 = np.concatenate((o_next[1:], [0.0]))                  # 2i + 3
    cy2, cy3 = eml ** 2 * -math.expm1(-2 * h), 0.5 * eml ** 3 * -math.expm1(-3 * h)
    cz2, cz3 = el ** 2 * math.expm1(2 * h), 0.5 * el ** 3 * math.expm1(3 * h)
    Y = cp1 * o_next + cy2 * y2 + cy3 * y3                      # bucket i+1 (> 0)
    Zabs = cm1 * o_prev + cz2 * z2 + cz3 * z3                   # −(bucket i−1) (> 0)
    own_up = np.concatenate((own[1:], [0.0])) * eml * eml      # bucket i+1 at 2i
    own_dn = np.concatenate(([0.0], own[:-1])) * el * el       # bucket i−1 at 2i
    B = d.einf
    mX = B * (cp1 + cm1) + 8 * _U * absX
    mY = B * (cp1 + cy2 + cy3) + 8 * _U * Y
    mZ = B * (cm1 + cz2 + cz3) + 8 * _U * Zabs
    need = mX - X
    den = Y - mY
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        f = np.where(den > 0, need / den, np.inf) * (1 + 8 * _U)
        ghat = np.where(need < 0, -need / (Zabs + mZ), 0.0) * (1 - 1e-6)
    live = own > 0
    deficit = live & (need > 0)
    borrow = deficit & (f <= 1.0)
    fb = deficit & ~borrow
    f = np.where(borrow, f, 0.0)
    surplus = live & (need < 0) & (own_dn > 0)
    fprev = np.concatenate(([0.0], f[:-1]))
    fprev2 = np.concatenate(([0.0], fprev[:-1]))
    ghat = np.where(surplus, ghat, 0.0)
    ghat_next = np.concatenate((ghat[1:], [0.0]))
    own_frac = np.maximum(0.0, 1.0 - fprev - np.minimum(ghat_next, 1.0 - fprev))
    g = np.minimum(ghat * own_frac, np.maximum(0.0, 1.0 - fprev2)) * (1 - 8 * _U)
    g_next = np.concatenate((g[1:], [0.0]))
    keep = np.maximum(0.0, 1.0 - fprev - g_next) * own
    out = np.where(fb, 0.0, keep) + f * own_up + g * own_dn
    # fall-back buckets go one coarse point down (tilted factor e^{−2λh})
    fbm = np.where(fb, keep, 0.0) * eml * eml
    out[:-1] += fbm[1:]
    lo_c = i0
    if fbm[0] > 0.0:
        out = np.concatenate(([float(fbm[0])], out))
        lo_c -= 1
    # ℓ1 map norm ≤ e^{3λh} (mass moves up by at most 3h); ℓ∞ row sums ≤ 6e^{3λh}
    e3 = math.exp(3 * lam * h)
    e1 = d.e1 * e3 + 12 * _U * float(out.sum())
    einf = B * 6.0 * e3 + 12 * _U * float(out.max())
    nz = np.nonzero(out)[0]
    if nz.size:
        out = out[nz[0]:nz[-1] + 1]
        lo_c += int(nz[0])
    return _Dist(lo_c, d.s + 1, out, d.logscale, e1, einf)


class _Engine:
    """Composes a tilted one-step PLD by repeated squaring with a coarsening grid."""

    def __init__(self, base: _Dist, h0: float, lam: float, pess: bool, t_max: int,
                 tau: float, s_max: int = 1 << 30):
        self.h0, self.lam, self.pess = h0, lam, pess
        self.s_max = s_max
        self.t_max = t_max
        self.tau = tau
        self.powers = [base]
        self.cache: dict[tuple[int, int], _Dist] = {}

    def _coarsen(self, d: _Dist) -> _Dist:
        h = self.h0 * 2.0 ** d.s
        if self.pess:
            return _coarsen_pess(d, h, self.lam)
        return _coarsen_opt(d, h, self.lam)

    def to_grid(self, d: _Dist, s: int) -> _Dist:
        while d.s < s:
            d = self._coarsen(d)
        return d

    def power(self, k: int) -> _Dist:
        """base^{*2^k} on grid 2^{⌊k/2⌋}·h0."""
        while len(self.powers) <= k:
            kk = len(self.powers)
            p = self.powers[-1]
            sq = _conv(p, p)
            mult = max(1, self.t_max >> kk)
            sq = _truncate(sq, self.tau / mult, self.pess)
            sq = self.to_grid(sq, min(kk // 2, max(self.s_max, sq.s)))
            while sq.t.size > _NWIN_MAX // 2:
                sq = self._coarsen(sq)       # too long: a coarser grid is still sound
            self.powers.append(sq)
        return self.powers[k]

    def compose(self, n: int, mult: int = 1) -> _Dist:
        """base^{*n} (n ≥ 1) as a product of cached powers."""
        acc = None
        k = 0
        while n:
            if n & 1:
                p = self.power(k)
                if acc is None:
                    acc = p
                else:
                    acc = self.to_grid(acc, p.s)
                    acc = _truncate(_conv(acc, p), self.tau / mult, self.pess)
            n >>= 1
            k += 1
        return acc

    def multiply(self, a: _Dist, b: _Dist) -> _Dist:
        s = max(a.s, b.s)
        a = self.to_grid(a, s)
        b = self.to_grid(b, s)
        return _truncate(_conv(a, b), self.tau, self.pess)


# --------------------------------------------------------------------------------------
# evaluation of δ(ε) on a composed PLD
# --------------------------------------------------------------------------------------

class _Final:
    """Certified δ(ε) of one composed PLD (one direction, one side)."""

    def __init__(self, d: _Dist, h0: float, lam: float, steps: int, c: float,
                 lpinf: float, pess: bool, off: float = 0.0):
        h = h0 * 2.0 ** d.s
        self.pess = pess
        self.lam = lam
        idx = np.arange(d.lo, d.lo + d.t.size, dtype=float)
        self.ell = idx * h + steps * off
        base = d.logscale + steps * c
        with np.errstate(divide="ignore"):
            self.lm = np.log(d.t) + base - lam * self.ell       # log original masses
        # ℓ1 error (tilted) → δ error ≤ e1·e^{logscale + Tc − λε}·C_λ
        if not (math.isfinite(d.e1) and math.isfinite(base)):
            self.lerr = math.inf            # no usable bound: δ_up = ∞, δ_low = 0
        else:
            self.lerr = (math.log(d.e1) if d.e1 > 0 else -math.inf) + base + _log_c_lambda(lam)
        # relative rounding of the untilting exponent and of the summation
        big = abs(base) + lam * float(np.max(np.abs(self.ell), initial=0.0)) + 50.0
        self.rel = 1e-12 + 8 * _U * (d.t.size + 8 * big)
        # P-mass at +∞ after T steps: 1 − (1 − p∞)^T ≤ T·p∞ (log space: never rounds to 0)
        if pess and lpinf > -math.inf:
            self.lpinf = min(0.0, math.log(steps) + lpinf + 1e-12)
        else:
            self.lpinf = -math.inf
        ok = np.isfinite(self.lm)
        self.ell_nz = self.ell[ok]
        self.lm_nz = self.lm[ok]
        self._sa = self._sb = None

    def log_delta(self, eps: float) -> float:
        """Certified upper (pessimistic) or lower (optimistic) bound on log δ(ε)."""
        sel = self.ell_nz > eps
        if sel.any():
            with np.errstate(divide="ignore"):
                lw = self.lm_nz[sel] + np.log(-np.expm1(eps - self.ell_nz[sel]))
            lfin = _logsumexp(lw)
        else:
            lfin = -math.inf
        lerr = self.lerr - self.lam * eps
        if self.pess:
            v = lfin + math.log1p(self.rel) if lfin > -math.inf else -math.inf
            with np.errstate(invalid="ignore"):
                out = float(_lse(np.array(v), np.array(lerr), np.array(self.lpinf)))
            return out if out == out else math.inf          # NaN: no bound
        if lfin == -math.inf or not lerr < math.inf:
            return -math.inf
        out = float(_log_sub(lfin + math.log1p(-self.rel), lerr))
        return out if out == out else -math.inf

    def _suffix(self):
        if self._sa is None:
            ell, lm = self.ell_nz, self.lm_nz
            self._sa = np.logaddexp.accumulate(lm[::-1])[::-1]           # log Σ_{i≥j} m_i
            self._sb = np.logaddexp.accumulate((lm - ell)[::-1])[::-1]   # log Σ_{i≥j} m_i e^{−ℓ_i}
        return self._sa, self._sb

    def approx_log_delta(self, eps: float) -> float:
        """Fast (not certified) value of the bound at ε, from suffix sums: Σ_{ℓ_j>ε} m_j −
        e^ε Σ_{ℓ_j>ε} m_j e^{−ℓ_j}.  Used to locate roots; results are then verified."""
        sa, sb = self._suffix()
        k = int(np.searchsorted(self.ell_nz, eps, side="right"))
        if k < sa.size:
            a, b = float(sa[k]), eps + float(sb[k])
            lfin = a + math.log(-math.expm1(b - a)) if a > b else -math.inf
        else:
            lfin = -math.inf
        lerr = self.lerr - self.lam * eps
        if self.pess:
            v = lfin + math.log1p(self.rel) if lfin > -math.inf else -math.inf
            m = max(v, lerr, self.lpinf)
            if m == -math.inf:
                return m
            return m + math.log(math.exp(v - m) + math.exp(lerr - m) + math.exp(self.lpinf - m))
        if lfin == -math.inf or lerr >= lfin:
            return -math.inf
        return lfin + math.log(-math.expm1(lerr - lfin))

    def grid_log_delta(self) -> tuple[np.ndarray, np.ndarray]:
        """Approximate log δ_fin at every grid point (to locate a root; not certified)."""
        ell = self.ell_nz
        if ell.size == 0:
            return ell, ell
        sa, sb = self._suffix()
        sa = np.concatenate((sa[1:], [-np.inf]))
        sb = np.concatenate((sb[1:], [-np.inf]))
        with np.errstate(invalid="ignore"):
            v = _log_sub(sa, ell + sb)
        return ell, v

    def epsilon(self, log_delta: float) -> float:
        """Pessimistic: an ε ≥ 0 with certified δ_up(ε) ≤ δ, as small as possible (so
        ε_true ≤ it; inf if none is found).  Optimistic: an ε with certified δ_low(ε) > δ,
        as large as possible (so ε_true > it; 0 if none).

        Neither bound needs to be monotone in ε: the search keeps f(a) > log δ ≥ f(b) with
        f the certified evaluation and returns the certified end, which is all the claim
        uses.  The root is located with the fast surrogate, then verified.
        """
        f = self.log_delta
        ell, approx = self.grid_log_delta()
        thr = log_delta
        if self.pess:
            if f(0.0) <= thr:
                return 0.0
            a, b = 0.0, None
            cand = (np.nonzero((approx < thr) & (ell > 0))[0] if ell.size
                    else np.zeros(0, dtype=int))
            for k in cand[:3]:
                if f(float(ell[k])) <= thr:
                    b = float(ell[k])
                    if k > 0 and ell[k - 1] > 0 and f(float(ell[k - 1])) > thr:
                        a = float(ell[k - 1])
                    break
            if b is None:
                top = float(ell[-1]) if ell.size else 0.0
                if top > 0 and f(top) <= thr:
                    b = top
            if b is None:
                # beyond the grid only the error term and the +∞ mass remain
                if self.lam <= 0 or self.lpinf >= thr:
                    return math.inf
                rest = float(_log_sub(np.array(thr), np.array(self.lpinf)))
                b = max(float(ell[-1]) if ell.size else 0.0,
                        (self.lerr - rest) / self.lam) + 1e-9
                for _ in range(60):
                    if f(b) <= thr:
                        break
                    b = b * 1.01 + 1e-6
                else:
                    return math.inf
        else:
            # a: the largest grid point with certified δ_low > δ; b: first one above it
            cand = np.nonzero(approx > thr)[0] if ell.size else np.zeros(0, dtype=int)
            a = None
            for k in cand[::-1][:6]:
                if ell[k] >= 0 and f(float(ell[k])) > thr:
                    a = float(ell[k])
                    break
            if a is None:
                return 0.0
            above = ell[ell > a]
            b = float(above[0]) if above.size else a + 1.0
            if f(b) > thr:
                return a
        # locate the root of the surrogate in [a, b] (first the grid cell, then the Illinois
        # variant of regula falsi on e^{g−log δ} − 1), then certify a point next to it
        lo_, hi_ = a, b
        if ell.size:
            inside = np.nonzero((ell > a) & (ell < b))[0]
            if inside.size:
                vals = [k for k in inside[:: max(1, inside.size // 64)]]
                for k in vals:
                    if self.approx_log_delta(float(ell[k])) <= thr:
                        hi_ = float(ell[k])
                        break
                    lo_ = float(ell[k])

        def hfun(e):
            v = self.approx_log_delta(e) - thr
            return math.expm1(min(v, 50.0)) if v > -math.inf else -1.0

        hl, hh = hfun(lo_), hfun(hi_)
        if hl > 0 >= hh:
            side = 0
            for _ in range(100):
                if hi_ - lo_ <= 2 * _U * max(1.0, abs(hi_)):
                    break
                mid = (lo_ * hh - hi_ * hl) / (hh - hl)
                if not lo_ < mid < hi_:
                    mid = 0.5 * (lo_ + hi_)
                hm = hfun(mid)
                if hm <= 0:
                    hi_, hh = mid, hm
                    if side == -1:
                        hl *= 0.5
                    side = -1
                else:
                    lo_, hl = mid, hm
                    if side == 1:
                        hh *= 0.5
                    side = 1
        gap = 1e-12 * max(1.0, abs(b))
        for _ in range(30):
            cand_eps = min(b, hi_ + gap) if self.pess else max(a, lo_ - gap)
            ok = f(cand_eps) <= thr if self.pess else f(cand_eps) > thr
            if ok:
                if self.pess:
                    b = cand_eps
                else:
                    a = cand_eps
                break
            gap *= 8.0
        else:  # the surrogate misled us: plain bisection on the certified evaluation
            for _ in range(200):
                if b - a <= 4 * _U * max(1.0, abs(b)):
                    break
                mid = 0.5 * (a + b)
                if f(mid) <= thr:
                    b = mid
                else:
                    a = mid
        return b if self.pess else a


# --------------------------------------------------------------------------------------
# choice of the tilt λ, the grid and the supports (heuristics: any choice is sound)
# --------------------------------------------------------------------------------------


def _loss_rem(x, q: float, sigma: float):
    """Remove-direction loss L(x) = log(1 − q + q·e^{(2x−1)/(2σ²)})."""
    a = (2.0 * np.asarray(x, dtype=float) - 1.0) / (2.0 * sigma * sigma)
    if q == 1.0:
        return a
    return np.logaddexp(math.log1p(-q), math.log(q) + a)


def _x_grid(q: float, sigma: float, direction: str, lam: float, per_sigma: float,
            nmin: int, x_hi: float = math.inf):
    top = max(1.0, lam + 1.0) if direction == "remove" else 1.0
    xlo, xhi = -14.0 * sigma, min(top + 14.0 * sigma, x_hi)
    n = int(min(200_000, max(nmin, per_sigma * (xhi - xlo) / sigma)))
    return np.linspace(xlo, xhi, n)


def _cgf(q: float, sigma: float, direction: str, lam: float,
         x_hi: float = math.inf) -> tuple[float, float, float]:
    """(K(λ), K'(λ), K''(λ)) of the one-step loss under P, by quadrature in x.

    remove: E_P[e^{λL}] = ∫ φ_σ(x)·e^{(λ+1)L(x)} dx;  add: E_P[e^{−λL}] = ∫ φ_σ(x)·e^{−λL(x)} dx.
    Only used to choose the tilt and the grid (heuristics: every choice is sound).  x ≤ x_hi:
    the part of the law above the grid (sent to +∞ with negligible P-mass) must not steer
    the tilt.
    """
    x = _x_grid(q, sigma, direction, lam, 10.0, 600, x_hi)
    lr = _loss_rem(x, q, sigma)
    lphi = -x * x / (2.0 * sigma * sigma)
    if direction == "remove":
        lw, lw0, loss = lphi + (lam + 1.0) * lr, lphi + lr, lr
    else:
        lw, lw0, loss = lphi - lam * lr, lphi, -lr
    k = _logsumexp(lw) - _logsumexp(lw0)
    w = np.exp(lw - lw.max())
    sw = w.sum()
    m1 = float((w * loss).sum() / sw)
    m2 = float((w * (loss - m1) ** 2).sum() / sw)
    return k, m1, max(m2, 0.0)


_LAMBDA_CACHE: dict = {}


def _best_lambda(q: float, sigma: float, direction: str, steps: int,
                 log_delta: float | None = None, eps: float | None = None,
                 x_hi: float = math.inf):
    key = (q, sigma, direction, steps, log_delta, eps, x_hi)
    hit = _LAMBDA_CACHE.get(key)
    if hit is None:
        if len(_LAMBDA_CACHE) > 4096:
            _LAMBDA_CACHE.clear()
        hit = _LAMBDA_CACHE[key] = _best_lambda_uncached(q, sigma, direction, steps,
                                                         log_delta, eps, x_hi)
    return hit


def _best_lambda_uncached(q: float, sigma: float, direction: str, steps: int,
                          log_delta: float | None, eps: float | None, x_hi: float):
    """Tilt λ > 0 minimising the Chernoff-type bound: for a target δ the ε-bound
    (T·K(λ) + log C_λ − log δ)/λ, for a target ε the δ-bound T·K(λ) − λε + log C_λ.  Both
    are convex in the sense that their stationarity function g below is increasing in λ:
    a bracket by doubling from a Gaussian guess, then safeguarded Newton.  The tilted
    composed law is then centred near the ε of interest.  Returns (λ, K, K', K'')."""
    def stationarity(lam):
        k, k1, k2 = _cgf(q, sigma, direction, lam, x_hi)
        dlc, d2lc = -math.log1p(1.0 / lam), 1.0 / (lam * (lam + 1.0))
        if eps is None:
            g = lam * (steps * k1 + dlc) - (steps * k + _log_c_lambda(lam) - log_delta)
            gp = lam * (steps * k2 + d2lc)
        else:
            g = steps * k1 - eps + dlc
            gp = steps * k2 + d2lc
        return g, gp, (k, k1, k2)

    _, m0, v0 = _cgf(q, sigma, direction, 0.0, x_hi)
    v0 = max(v0, 1e-300)
    if eps is None:
        guess = math.sqrt(max(-2.0 * log_delta, 1.0) / (steps * v0))
    else:
        guess = (eps / steps - m0) / v0
    lam = min(max(guess, 1e-3), 1e5)
    lo_l, hi_l = 0.0, math.inf
    g, gp, kk = stationarity(lam)
    for _ in range(200):
        if g < 0:
            lo_l = lam
        else:
            hi_l = lam
        if abs(g) <= 1e-10 * (1.0 + abs(gp) * lam) or hi_l - lo_l <= 1e-12 * hi_l:
            break
        if not math.isfinite(hi_l):
            nxt = lam * 2.0 if not (gp > 0 and math.isfinite(gp)) else \
                min(lam * 4.0, max(lam * 1.01, lam - g / gp))
            if nxt > 1e6:
                break
        elif lo_l == 0.0 and g > 0:
            nxt = lam / 2.0 if not gp > 0 else max(lam / 4.0, min(lam * 0.99, lam - g / gp))
            if nxt < 1e-8:
                break
        else:
            nxt = lam - g / gp if gp > 0 else 0.5 * (lo_l + hi_l)
            if not lo_l < nxt < hi_l:
                nxt = 0.5 * (lo_l + hi_l)
        lam = nxt
        g, gp, kk = stationarity(lam)
    return (lam,) + kk


def _tilted_quantiles(q: float, sigma: float, direction: str, lams, deep: float = 1e-30,
                      x_hi: float = math.inf):
    """Loss values beyond which the tilted one-step law carries 0.05/16^k of its mass
    (k = 1..4), below and above, for the most extreme of several tilts; the lower `deep`
    quantile of the smallest tilt; the untilted median."""
    levels = list(_TIER_LEVELS)
    lower = [math.inf] * 4
    upper = [-math.inf] * 4
    lo_deep = math.inf
    median = 0.0
    for lam in [0.0] + sorted(lams):
        x = _x_grid(q, sigma, direction, lam, 20.0, 2000, x_hi)
        lr = _loss_rem(x, q, sigma)
        lphi = -x * x / (2.0 * sigma * sigma)
        if direction == "remove":
            lw, loss = lphi + (lam + 1.0) * lr, lr
        else:
            lw, loss = (lphi - lam * lr)[::-1], (-lr)[::-1]
        cdf = np.cumsum(np.exp(lw - lw.max()))
        cdf /= cdf[-1]
        n = cdf.size
        if lam == 0.0:
            median = float(loss[min(np.searchsorted(cdf, 0.5), n - 1)])
            continue
        lo_deep = min(lo_deep, float(loss[min(np.searchsorted(cdf, deep), n - 1)]))
        for k, v in enumerate(levels):
            lower[k] = min(lower[k], float(loss[min(np.searchsorted(cdf, v), n - 1)]))
            upper[k] = max(upper[k], float(loss[min(np.searchsorted(cdf, 1 - v), n - 1)]))
    if not math.isfinite(lo_deep):      # λ = 0 only
        lo_deep = -math.inf
        lower = [median] * 4 if not math.isfinite(lower[0]) else lower
        upper = [median] * 4 if not math.isfinite(upper[0]) else upper
    return lower, upper, lo_deep, median


def _log_phic(z: float) -> float:
    """log Φc(z) for a scalar z (libm erfc, asymptotic series beyond its range)."""
    y = z / _SQRT2
    if y < 26.0:
        v = math.erfc(y)
        return _LOG_HALF + math.log(v) if v > 0 else -math.inf
    return _LOG_HALF + float(_log_erfc(np.array([y]))[0])


def _z_for_log_tail(log_target: float) -> float:
    """z ≥ 0 with log Φc(z) ≤ log_target, close to the smallest (Newton on the log tail,
    then a check; only sizes the grid)."""
    if log_target >= _LOG_HALF:
        return 0.0
    z = math.sqrt(-2.0 * log_target)
    for _ in range(50):
        lz = _log_phic(z)
        # d/dz log Φc(z) = −φ(z)/Φc(z)
        hz = math.exp(-0.5 * z * z - 0.5 * math.log(2 * math.pi) - lz)
        step = (lz - log_target) / hz
        z = max(z + step, 0.5 * z)
        if abs(step) < 1e-10 * z:
            break
    while _log_phic(z) > log_target:
        z *= 1.0 + 1e-9
    return z


def _x_top(sigma: float, direction: str, log_eta: float) -> float:
    """x above which the remove-direction one-step mass (≤ η) goes to +∞ (see _support)."""
    if direction != "remove":
        return math.inf
    return 1.0 + _z_for_log_tail(log_eta - math.log(2.0)) * sigma


def _support(q: float, sigma: float, direction: str, log_eta: float) -> tuple[float, float]:
    """Untilted loss range of the one-step grid: outside it the P-mass is ≤ η per side.

    Above the top the pessimistic side puts the mass at +∞ (paid T·η in δ) and the
    optimistic one lowers it; below the bottom it is raised (pessimistic) or dropped.
    """
    z = _z_for_log_tail(log_eta - math.log(2.0))
    # L is increasing in x and both P-components have ≤ η/2 mass beyond x = −zσ or 1 + zσ
    l_lo, l_hi = float(_loss_rem(-z * sigma, q, sigma)), float(_loss_rem(1.0 + z * sigma,
                                                                           q, sigma))
    if q < 1.0:
        l_lo = max(l_lo, math.log1p(-q))
    if direction == "remove":
        return l_lo, l_hi
    return -l_hi, -l_lo


def _tier_positions(j_lo: int, j_hi: int, h: float, lower, upper,
                    max_stride: float = math.inf) -> np.ndarray:
    """Grid indices of the one-step atoms: stride 1 in the bulk, stride 4^k where the tilted
    tail beyond carries < 0.05/16^k of the mass (second-order error ∝ mass × stride²)."""
    def clamp(j):
        return max(j_lo, min(j_hi, j))

    b_lo = [j_lo] + [clamp(math.floor(v / h)) for v in lower]
    b_hi = [j_hi] + [clamp(math.ceil(v / h)) for v in upper]
    for k in range(2, 5):             # nested regions
        b_lo[k] = min(b_lo[k], b_lo[k - 1])
        b_hi[k] = max(b_hi[k], b_hi[k - 1])
    inner_lo, inner_hi = b_lo[1], b_hi[1]
    if inner_lo > inner_hi:
        inner_lo = inner_hi = (inner_lo + inner_hi) // 2
    pieces = [np.arange(inner_lo, inner_hi + 1), np.array([j_lo, j_hi])]
    for k in range(1, 5):
        stride = int(min(4 ** k, max(1, 4 ** int(math.log(max_stride, 4))))) \
            if max_stride < 4 ** k else 4 ** k
        a = b_lo[k + 1] if k < 4 else j_lo
        b = b_lo[k]
        if b > a:
            pieces.append(np.arange(-((-a) // stride) * stride, b, stride))
        a = b_hi[k]
        b = b_hi[k + 1] if k < 4 else j_hi
        if b > a:
            pieces.append(np.arange(-((-a - 1) // stride) * stride, b + 1, stride))
    jpos = np.unique(np.concatenate(pieces))
    return jpos[(jpos >= j_lo) & (jpos <= j_hi)]


def _log_tilted_below(q: float, sigma: float, direction: str, ell0: float,
                      lam: float, floor: float) -> float:
    """Upper bound on log E_P[e^{λL}; L ≤ ℓ0] (λ ≥ 0): a Riemann upper sum
    Σ_k e^{λ p_k}·P(p_{k+1} < L ≤ p_k) over points p_k = ℓ0 − kΔ, Δ ≈ 1/λ (each term
    overestimates by at most e^{λΔ}), down to below `floor` (where P(L ≤ ·) is negligible),
    plus e^{λ p_K}·P(L ≤ p_K), with the tails moved up by their error bounds."""
    if lam <= 0:
        pts = np.array([ell0])
    else:
        span = max(ell0 - floor, 0.0) + 1.0
        step = max(1.0 / lam, span / 20000.0)
        pts = ell0 - step * np.arange(int(math.ceil(span / step)) + 1)
    tl = _tails(pts, q, sigma, direction)
    if tl is None:
        pts = pts * (1 + 1e-9) - 1e-12
        tl = _tails(pts, q, sigma, direction)
        if tl is None:
            raise PLDUncertifiable("cannot bound the dropped lower tail")
    with np.errstate(divide="ignore", invalid="ignore"):
        # interval masses (points decrease): mass in (p_{k+1}, p_k], plus twice its error
        m, em = _interval_mass(tl.lPup[1:], tl.lPup[:-1], tl.lPlo[1:], tl.lPlo[:-1],
                               tl.ePup[1:], tl.ePup[:-1], tl.ePlo[1:], tl.ePlo[:-1])
        inter = np.logaddexp(m, math.log(2.0) + em)
        last = tl.lPlo[-1] + math.log1p(2 * float(tl.ePlo[-1]) + 4 * _U)
        terms = np.concatenate((lam * pts[:-1] + inter, [lam * pts[-1] + last]))
    return _logsumexp(terms) + 1e-12


class _TooFine(Exception):
    """The requested resolution exceeds the grid caps."""


def _level0(q: float, sigma: float, direction: str, h: float, lo: float, hi: float,
            lams, max_stride=lambda h: math.inf, deep: float = 1e-30,
            x_hi: float = math.inf, offset: float = 0.0, full: bool = True):
    """Atom positions and tails at the atoms and at the bucket boundaries; nudges h off
    ill-conditioned thresholds.  Also returns whether the pessimistic side drops the mass
    below the grid (then the grid starts at the tilted `deep` quantile, above the untilted
    median: the untilted bulk far below the tilted one is not worth a grid).  The grid is
    ℓ_j = offset + j·h."""
    lower, upper, lo_deep, median = _tilted_quantiles(q, sigma, direction, lams, deep, x_hi)
    # the grid holds the tilted bulk (where δ comes from) as well as the untilted tails
    drop = lo_deep > lo
    lo = min(lo_deep if drop else lo, lower[-1])
    hi = max(hi, upper[-1])
    if q < 1.0:
        if direction == "remove":
            lo = max(lo, math.log1p(-q) - 1.0)
        else:
            hi = min(hi, -math.log1p(-q) + 1.0)
    nudges = 0
    for _ in range(40):
        j_lo = math.floor((lo - offset) / h) - 1
        j_hi = math.ceil((hi - offset) / h) + 1
        if j_hi - j_lo + 1 > _N0_LEN_MAX:
            h *= 1.05 * (j_hi - j_lo + 1) / _N0_LEN_MAX   # coarser than asked: still sound
            continue
        jpos = _tier_positions(j_lo, j_hi, h, [v - offset for v in lower],
                               [v - offset for v in upper], max_stride(h))
        if jpos.size > _N0_MAX:
            h *= 1.1 * math.sqrt(jpos.size / _N0_MAX)
            continue
        ell = offset + jpos.astype(float) * h
        t_full = _tails(ell, q, sigma, direction) if full else None
        t_half = _tails(0.5 * (ell[:-1] + ell[1:]), q, sigma, direction)
        if (t_full is not None or not full) and t_half is not None:
            drop_ok = drop and full
            return h, offset, j_lo, j_hi, jpos, ell, t_full, t_half, drop_ok
        nudges += 1
        if nudges > 8:
            break
        h *= 1.0 + 2.0 ** -18
        offset += h * 2.0 ** -12 * nudges
    raise PLDUncertifiable("cannot place the one-step grid")


@dataclass
class _Side:
    engine: _Engine
    c: float
    lpinf: float
    h0: float
    lam: float
    off: float = 0.0     # one-step grid offset: after k steps ℓ_j = k·off + j·h


@dataclass
class _Plan:
    """Tilt and budgets of one direction for one group of step counts."""

    lam: float
    var: float
    lam_range: tuple[float, float]
    tau: float
    x_hi: float = math.inf      # x above which the one-step mass goes to +∞ (remove)


def _make_sides(q: float, sigma: float, direction: str, plan: _Plan, rho: float,
                t_max: int, log_eta: float, sides=(True, False)) -> dict[bool, _Side]:
    """One-step PLDs (pessimistic / optimistic) of one direction, tilted, as engines."""
    lo, hi = _support(q, sigma, direction, log_eta)
    lam = plan.lam
    std = math.sqrt(plan.var) if plan.var > 0 else (hi - lo) / 100.0
    # the δ integrand varies on the scale 1/λ as well as on the scale of the law itself:
    # every grid keeps λ·h ≤ _LAMH·ρ (a coarser grid would move mass by more than 1/λ,
    # i.e. change its tilted weight by a factor e^{λh}; the errors are ∝ (λh)²)
    scale = min(std, 1.0 / lam) if lam > 0 else std
    h = max(rho * scale, (hi - lo) / (_NWIN_MAX - 8))
    lamh_max = _LAMH * rho
    deep = max(1e-300, 1e-3 * plan.tau / max(1, t_max))

    def stride(hh):
        return max(1.0, lamh_max / (lam * hh)) if lam > 0 else math.inf

    off = _edge_offset(q, sigma, direction, h)
    h, off, j_lo, j_hi, jpos, ell, t_full, t_half, drop = _level0(
        q, sigma, direction, h, lo, hi, plan.lam_range, max_stride=stride, deep=deep,
        x_hi=plan.x_hi, offset=off)
    s_max = (int(math.floor(math.log2(lamh_max / (lam * h)))) if lam > 0
             and lamh_max > lam * h else (0 if lam > 0 else 1 << 30))
    out = {}
    n = j_hi - j_lo + 1
    for pess in sides:
        if pess:
            lp, lpi, lr = _ctd_level0(ell, t_full, direction == "remove", drop)
        else:
            lp, lr = _bucket_level0(ell, t_half)
            lpi = -math.inf
        la = lp + lam * ell
        c = _logsumexp(la)
        if not math.isfinite(c):
            raise PLDUncertifiable("empty one-step PLD")
        with np.errstate(invalid="ignore", over="ignore"):
            ta = np.exp(la - c)
            # relative error of the tilted masses: exp/log rounding plus that of the masses
            rel = 4 * _U * (np.abs(la - c) + 2.0) + np.exp(lr)
        rel = np.where(np.isfinite(rel), rel, 0.0)
        t = np.zeros(n)
        t[jpos - j_lo] = ta
        e1 = float((ta * rel).sum())
        if pess and drop:
            # the dropped mass below ℓ_0 is paid for as tilted ℓ1 error
            lb = _log_tilted_below(q, sigma, direction, float(ell[0]), lam, lo) - c
            e1 += math.exp(min(lb, 700.0))
        base = _Dist(j_lo, 0, t, 0.0, e1, float((ta * rel).max()))
        base = _truncate(base, plan.tau / max(1, t_max), pess)
        nz = np.nonzero(base.t)[0]
        base = _Dist(base.lo + int(nz[0]), 0, base.t[nz[0]:nz[-1] + 1], base.logscale,
                     base.e1, base.einf)
        out[pess] = _Side(_Engine(base, h, lam, pess, t_max, plan.tau, s_max), c, lpi, h,
                          lam, off)
    return out


# --------------------------------------------------------------------------------------
# drivers
# --------------------------------------------------------------------------------------

def _validate(q, sigma, steps_list, tolerance):
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0.0 < float(q) <= 1.0:
        raise ValueError(f"q must be in (0, 1], got q={q!r}")
    if (isinstance(sigma, bool) or not isinstance(sigma, (int, float))
            or not math.isfinite(sigma) or not sigma > 0):
        raise ValueError(f"noise_multiplier must be finite and > 0, got {sigma!r}")
    for s in steps_list:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1:
            raise ValueError(f"steps must be integers ≥ 1, got {s!r}")
    if (isinstance(tolerance, bool) or not isinstance(tolerance, (int, float))
            or not 0.0 < tolerance < 1.0):
        raise ValueError(f"tolerance must be in (0, 1), got {tolerance!r}")


def _check_log_delta(log_delta):
    if (isinstance(log_delta, bool) or not isinstance(log_delta, (int, float))
            or not math.isfinite(log_delta) or not log_delta < 0):
        raise ValueError(f"log_delta must be finite and < 0, got {log_delta!r}")


def _check_epsilon(epsilon):
    if (isinstance(epsilon, bool) or not isinstance(epsilon, (int, float))
            or not math.isfinite(epsilon) or not epsilon >= 0):
        raise ValueError(f"epsilon must be finite and ≥ 0, got {epsilon!r}")


def _directions(q: float) -> list[str]:
    # q = 1: both directions are the Gaussian pair N(0,σ²) vs N(1,σ²), whose PLD is symmetric
    return ["remove"] if q == 1.0 else ["remove", "add"]


def _first_rho(tolerance: float) -> float:
    # the bracket width scales like ρ² (both discretisations are second order); the
    # constant is ~1–4 on DP-SGD cases
    return min(0.1, max(_RHO_MIN, 0.45 * math.sqrt(tolerance)))


def _next_rho(rho: float, tolerance: float, width: float) -> float:
    factor = math.sqrt(0.5 * tolerance / width) if width > 0 and math.isfinite(width) else 0.3
    return max(_RHO_MIN, rho * min(0.7, max(0.25, factor)))


def _log_eta(log_delta: float, tolerance: float, steps: int) -> float:
    """log of the one-step P-mass sent to +∞: T·η ≤ _BUDGET·tol·δ."""
    return log_delta + math.log(_BUDGET * tolerance) - math.log(steps)


def _tau(tolerance: float, lgam: float, t_max: int) -> float:
    """Truncation threshold (tilted mass) so that all drops cost ≤ _BUDGET·tol·δ.

    lgam = log(Γ/δ), Γ = e^{T·c − λε}·C_λ the factor turning tilted ℓ1 mass into δ."""
    lgam = max(0.0, min(lgam, 300.0))
    return max(_TAU_FLOOR, _BUDGET * tolerance * math.exp(-lgam) / _n_truncations(t_max))


def _compose_points(q, sigma, steps_list, rho, plans, log_eta, evaluate, sides=(True, False),
                    directions=None):
    """Compose every direction and side at resolution ρ, incrementally over steps_list;
    evaluate(index, finals) is called after each point."""
    t_max = steps_list[-1]
    dirs = directions or _directions(q)
    engines = {d: _make_sides(q, sigma, d, plans[d], rho, t_max, log_eta, sides)
               for d in dirs}
    accs: dict[tuple[str, bool], _Dist] = {}
    prev = 0
    n_points = len(steps_list)
    out = []
    for i, steps in enumerate(steps_list):
        inc = steps - prev
        finals = {}
        for d, by_side in engines.items():
            for pess, side in by_side.items():
                eng = side.engine
                dinc = eng.cache.get(inc)
                if dinc is None:
                    dinc = eng.compose(inc, mult=n_points)
                    if n_points > 1:
                        eng.cache[inc] = dinc
                acc = accs.get((d, pess))
                acc = dinc if acc is None else eng.multiply(acc, dinc)
                accs[(d, pess)] = acc
                finals[(d, pess)] = _Final(acc, side.h0, side.lam, steps, side.c,
                                           side.lpinf, pess, side.off)
        out.append(evaluate(i, finals))
        prev = steps
    return out


def _groups(q, sigma, steps_list, log_delta, tolerance):
    """Split an increasing list of step counts into groups whose best tilts are within a
    factor 2; each group is composed incrementally with one tilt per direction."""
    t_lo, t_hi = steps_list[0], steps_list[-1]
    ratio = 1.0
    for d in _directions(q):
        x_hi = _x_top(sigma, d, _log_eta(log_delta, tolerance, t_hi))
        l_hi = _best_lambda(q, sigma, d, t_lo, log_delta=log_delta, x_hi=x_hi)[0]
        l_lo = _best_lambda(q, sigma, d, t_hi, log_delta=log_delta, x_hi=x_hi)[0]
        ratio = max(ratio, l_hi / max(l_lo, 1e-300))
    n_groups = max(1, min(len(steps_list), math.ceil(math.log(ratio) / math.log(2.0))))
    if n_groups == 1:
        return [list(range(len(steps_list)))]
    edges = [t_lo * (t_hi / t_lo) ** (k / n_groups) for k in range(n_groups + 1)]
    groups: list[list[int]] = [[] for _ in range(n_groups)]
    for i, s in enumerate(steps_list):
        k = min(n_groups - 1, max(0, int(np.searchsorted(edges, s, side="right")) - 1))
        groups[k].append(i)
    return [g for g in groups if g]


def _plans_eps(q, sigma, steps_group, log_delta, tolerance, lower=None):
    """Tilt (best for the largest T: the smallest λ of the group) and budgets."""
    plans = {}
    t_first, t_last = steps_group[0], steps_group[-1]
    for d in _directions(q):
        x_hi = _x_top(sigma, d, _log_eta(log_delta, tolerance, t_last))
        lam, k, _, var = _best_lambda(q, sigma, d, t_last, log_delta=log_delta, x_hi=x_hi)
        lam_first = lam if t_first == t_last else _best_lambda(
            q, sigma, d, t_first, log_delta=log_delta, x_hi=x_hi)[0]
        lc = _log_c_lambda(lam)
        if lower is None:
            lgam = 10.0
        else:
            lgam = max(t * k - lam * e + lc - log_delta
                       for t, e in zip(steps_group, lower, strict=True))
        plans[d] = _Plan(lam, var, (lam, lam_first), _tau(tolerance, lgam, t_last), x_hi)
    return plans


def _eps_group(q, sigma, steps_group, log_delta, tolerance):
    """Brackets on ε(δ) for a group of step counts sharing the tilt; each direction is
    refined only while it matters for the combined bracket (max over directions)."""
    n = len(steps_group)
    t_max = steps_group[-1]
    log_eta = _log_eta(log_delta, tolerance, t_max)
    plans = _plans_eps(q, sigma, steps_group, log_delta, tolerance)
    per_dir: dict[str, list[list[float]]] = {}

    def evaluate(i, finals):
        up = lo = 0.0
        for (_, pess), fin in finals.items():
            e = fin.epsilon(log_delta)
            if pess:
                up = max(up, e)
            else:
                lo = max(lo, e)
        return lo, up

    def combined():
        return [[max(per_dir[d][i][0] for d in per_dir), max(per_dir[d][i][1] for d in per_dir)]
                for i in range(n)]

    for d in _directions(q):
        other = per_dir.get("remove")
        best = [[0.0, math.inf] for _ in range(n)]
        if d == "add":
            # the add-direction loss is ≤ −log(1 − q) per step, so δ_add(ε) = 0 beyond T times it
            for b, t in zip(best, steps_group, strict=True):
                b[1] = math.nextafter(t * -math.log1p(-q) * (1 + 1e-12), math.inf)
            if other is not None and all(b[1] <= o[0] for b, o in zip(best, other,
                                                                       strict=True)):
                per_dir[d] = best
                continue
        per_dir[d] = best
        rho = _first_rho(tolerance)
        for _ in range(6):
            try:
                res = _compose_points(q, sigma, steps_group, rho, plans, log_eta, evaluate,
                                      directions=[d])
            except _TooFine:
                break
            for b, (lo, up) in zip(best, res, strict=True):
                b[0] = max(b[0], lo)
                b[1] = min(b[1], up)
            if other is not None and all(b[1] <= o[0] for b, o in zip(best, other,
                                                                       strict=True)):
                break          # dominated by the other direction: its accuracy is moot
            comb = combined()
            width = max(((b[1] - b[0]) / b[1] if b[1] > 0 else 0.0) for b in comb)
            if width <= tolerance or rho <= _RHO_MIN:
                break
            rho = _next_rho(rho, tolerance, width)
            if all(b[0] > 0 for b in comb):
                plans = _plans_eps(q, sigma, steps_group, log_delta, tolerance,
                                   lower=[b[0] for b in comb])
    best = combined()
    for b in best:
        if not math.isfinite(b[1]):
            raise PLDUncertifiable("the error budget exceeds δ at every ε")
    return best


def _eps_core(q, sigma, steps_list, log_delta, tolerance):
    out = [None] * len(steps_list)
    for grp in _groups(q, sigma, steps_list, log_delta, tolerance):
        res = _eps_group(q, sigma, [steps_list[i] for i in grp], log_delta, tolerance)
        for i, r in zip(grp, res, strict=False):
            out[i] = (r[0], r[1])
    return out


def _delta_directions(q: float, steps: int, epsilon: float) -> list[str]:
    """Directions whose δ(ε) can be positive: the add-direction loss is ≤ −log(1 − q) per
    step, so its δ(ε) is exactly 0 for ε ≥ T·(−log(1 − q)) (rounded up)."""
    dirs = _directions(q)
    if "add" in dirs and epsilon >= math.nextafter(steps * -math.log1p(-q) * (1 + 1e-12),
                                                   math.inf):
        dirs = [d for d in dirs if d != "add"]
    return dirs


def _plans_delta(q, sigma, steps, epsilon, tolerance, log_delta_est):
    plans = {}
    for d in _delta_directions(q, steps, epsilon):
        x_hi = _x_top(sigma, d, _log_eta(log_delta_est, tolerance, steps))
        lam, k, _, var = _best_lambda(q, sigma, d, steps, eps=epsilon, x_hi=x_hi)
        lgam = steps * k - lam * epsilon + _log_c_lambda(lam) - log_delta_est
        plans[d] = _Plan(lam, var, (lam, lam), _tau(tolerance, lgam, steps), x_hi)
    return plans


def _chernoff_log_delta(q, sigma, steps, epsilon) -> float:
    """Heuristic (quadrature) Chernoff value, only to size the first budgets."""
    v = -math.inf
    for d in _delta_directions(q, steps, epsilon):
        lam, k, _, _ = _best_lambda(q, sigma, d, steps, eps=epsilon)
        v = max(v, min(0.0, steps * k - lam * epsilon + _log_c_lambda(lam)))
    return v


def _delta_passes(q, sigma, steps, epsilon, tolerance, rho, next_rho, decide=None):
    """Yields running (log lower, log upper) brackets on δ(ε), one per pass; the next
    resolution is next_rho(ρ, lower, upper) (None stops).

    With decide = log δ (a predicate), each pass composes the pessimistic sides first and
    the optimistic ones only when the upper bound does not already settle it."""
    # a guess of log δ, only to size the truncation budgets (the Chernoff value overshoots)
    ch = _chernoff_log_delta(q, sigma, steps, epsilon)
    est = ch - 8.0 - 0.05 * abs(ch)
    best = [-math.inf, 0.0]

    def evaluate(i, finals):
        up = lo = -math.inf
        for (_, pess), fin in finals.items():
            v = fin.log_delta(epsilon)
            if pess:
                up = max(up, v)
            else:
                lo = max(lo, v)
        return lo, up

    while rho is not None:
        plans = _plans_delta(q, sigma, steps, epsilon, tolerance, est)
        log_eta = _log_eta(est, tolerance, steps)
        dirs = list(plans)
        try:
            if decide is None:
                lo, up = _compose_points(q, sigma, [steps], rho, plans, log_eta, evaluate,
                                         directions=dirs)[0]
            else:
                # a predicate: stop as soon as one side settles it (pessimistic sides of
                # all directions for True, the optimistic side of any direction for False)
                up = lo = -math.inf
                for d in dirs:
                    up = max(up, _compose_points(q, sigma, [steps], rho, plans, log_eta,
                                                 evaluate, sides=(True,),
                                                 directions=[d])[0][1])
                    if up > decide:
                        break
                if up > decide:
                    for d in dirs:
                        lo = max(lo, _compose_points(q, sigma, [steps], rho, plans, log_eta,
                                                     evaluate, sides=(False,),
                                                     directions=[d])[0][0])
                        if lo > decide:
                            break
        except _TooFine:
            return
        best[0] = max(best[0], lo)
        best[1] = min(best[1], up)
        yield best[0], best[1]
        nxt = next_rho(rho, best[0], best[1])
        if best[0] > -math.inf and best[0] < est - 2.0 and nxt is not None:
            nxt = rho      # the budgets were sized for a larger δ: redo at this resolution
        if best[0] > -math.inf:
            est = best[0]
        rho = nxt


# --------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------

def epsilon_bounds(q: float, noise_multiplier: float, steps: int, log_delta: float,
                   tolerance: float = 1e-3) -> tuple[float, float]:
    """Certified bracket (lower, upper) on ε(δ) of DP-SGD (Poisson-subsampled Gaussian).

    ε(δ) is the smallest ε ≥ 0 with δ(ε) ≤ δ for both add and remove neighbours; upper is
    never below it, lower never above.  Refines the grid until (upper − lower)/upper ≤
    tolerance or the resolution cap is hit (then a wider, still certified, bracket).
    References: [KJH20], [DGKKM22, Alg. 1], [GLW21, Thm 5.5] (see the module docstring).

    Args:
        q: Poisson sampling rate in (0, 1].
        noise_multiplier: σ > 0 (noise std / L2 sensitivity).
        steps: number of steps T ≥ 1.
        log_delta: natural log of δ, < 0 (δ may be far below the double range).
        tolerance: target relative width of the bracket, in (0, 1).

    Raises:
        PLDUncertifiable: no finite certified upper bound could be obtained.
    """
    _validate(q, noise_multiplier, [steps], tolerance)
    _check_log_delta(log_delta)
    return _eps_core(float(q), float(noise_multiplier), [int(steps)], float(log_delta),
                     float(tolerance))[0]


def epsilon_curve(q: float, noise_multiplier: float, steps_list, log_delta: float,
                  tolerance: float = 1e-3) -> list[tuple[int, float, float]]:
    """Certified brackets on ε(δ) after each of a strictly increasing list of step counts.

    Composed incrementally: within a group of step counts that share a tilt, the PLD after
    T_{i+1} steps is the one after T_i convolved with the (cached) increment.
    References: [KJH20], [DGKKM22] (see epsilon_bounds).

    Returns:
        [(steps, lower, upper), ...] in the order given.
    """
    steps_list = list(steps_list)
    if not steps_list:
        return []
    _validate(q, noise_multiplier, steps_list, tolerance)
    if any(b <= a for a, b in zip(steps_list, steps_list[1:], strict=False)):
        raise ValueError("steps_list must be strictly increasing")
    _check_log_delta(log_delta)
    res = _eps_core(float(q), float(noise_multiplier), [int(s) for s in steps_list],
                    float(log_delta), float(tolerance))
    return [(int(s), lo, up) for s, (lo, up) in zip(steps_list, res, strict=False)]


def log_delta_bounds(q: float, noise_multiplier: float, steps: int, epsilon: float,
                     tolerance: float = 1e-3) -> tuple[float, float]:
    """Certified bracket (log lower, log upper) on δ(ε) of DP-SGD, add/remove neighbours.

    δ(ε) is the larger of the two directions' hockey-stick divergences of the T-fold
    composition [KJH20]; log lower may be −inf (no positive lower bound certified).
    Refines until (δ_up − δ_low)/δ_up ≤ tolerance or the resolution cap is hit.
    References: [KJH20], [DGKKM22, Alg. 1], [GLW21, Thm 5.5] (see the module docstring).

    Raises:
        PLDUncertifiable: no finite certified upper bound could be obtained.
    """
    _validate(q, noise_multiplier, [steps], tolerance)
    _check_epsilon(epsilon)
    q, sigma, epsilon, tol = float(q), float(noise_multiplier), float(epsilon), float(tolerance)
    steps = int(steps)
    n_pass = [0]

    def next_rho(rho, lo, up):
        n_pass[0] += 1
        w = 1.0 - math.exp(lo - up) if up > -math.inf else 0.0
        if w <= tol or rho <= _RHO_MIN or n_pass[0] >= 6:
            return None
        return _next_rho(rho, tol, w)

    last = None
    for lo, up in _delta_passes(q, sigma, steps, epsilon, tol, _first_rho(tol), next_rho):
        last = (lo, up)
    if last is None or not last[1] <= 0.0:
        raise PLDUncertifiable("no certified δ bracket at this resolution")
    return last


def certify_epsilon(q: float, noise_multiplier: float, steps: int, log_delta: float,
                    epsilon: float) -> bool | None:
    """Decide whether T steps are (ε, δ)-DP: True (certainly δ(ε) ≤ δ), False (certainly
    not) or None (undecided at the finest resolution).

    A fast predicate for solvers: starts on a coarse grid and refines only while the
    certified δ bracket straddles δ; True rests on the pessimistic (upper) bound and False
    on the optimistic (lower) one, so both answers are certified.
    References: [KJH20], [DGKKM22] (see the module docstring).
    """
    _validate(q, noise_multiplier, [steps], 1e-3)
    _check_log_delta(log_delta)
    _check_epsilon(epsilon)
    rhos = [0.08, 0.03, 0.012, 0.006, _RHO_MIN]
    ld = float(log_delta)

    def next_rho(rho, lo, up):
        i = rhos.index(rho) + 1
        if i >= len(rhos):
            return None
        if lo > -math.inf and up < math.inf:
            # the bracket shrinks like ρ²: if even the finest pass would still straddle
            # log δ, give up now (None is always an allowed answer)
            mid, half = 0.5 * (lo + up), 0.5 * (up - lo) * (_RHO_MIN / rho) ** 2
            if abs(ld - mid) < 0.5 * half:
                return None
        return rhos[i]

    for lo, up in _delta_passes(float(q), float(noise_multiplier), int(steps),
                                float(epsilon), 1e-3, rhos[0], next_rho,
                                decide=float(log_delta)):
        if up <= log_delta:
            return True
        if lo > log_delta:
            return False
    return None


def log_delta_profile(q: float, noise_multiplier: float, steps: int, epsilons,
                      tolerance: float = 1e-3, focus: float | None = None,
                      log_delta_floor: float = -30.0) -> tuple[np.ndarray, np.ndarray]:
    """Certified brackets (log lower, log upper) on δ(ε) at many ε ≥ 0 from one composition
    per pass (both directions, both sides; δ is the larger direction, as in log_delta_bounds).

    The tilt and budgets are sized for ``focus`` (default: the median ε); every point is
    certified whatever the tilt, only its width depends on it.  Passes refine ρ while the
    relative width (1 − δ_low/δ_up) exceeds ``tolerance`` at some ε with log δ_up above
    ``log_delta_floor`` (at most 4 passes).  Each pass reuses _compose_points and
    _Final.log_delta unchanged, so the error analysis of the module docstring applies.
    References: [KJH20], [DGKKM22, Alg. 1] (see the module docstring).

    Raises:
        PLDUncertifiable: no certified bracket at any resolution tried.
    """
    eps = [float(e) for e in epsilons]
    _validate(q, noise_multiplier, [steps], tolerance)
    for e in eps:
        _check_epsilon(e)
    q, sigma, tol, steps = float(q), float(noise_multiplier), float(tolerance), int(steps)
    ref = float(np.median(eps)) if focus is None else float(focus)
    ch = _chernoff_log_delta(q, sigma, steps, ref)
    est = ch - 8.0 - 0.05 * abs(ch)
    n = len(eps)
    best_lo = np.full(n, -np.inf)
    best_up = np.zeros(n)

    grid = np.asarray(eps, dtype=float)

    def many(fin) -> np.ndarray:
        # δ_fin(ε) = Σ_{ℓ_j>ε} m_j(1 − e^{ε−ℓ_j}) = S_a − e^ε S_b (suffix sums, O(n + m log n))
        # with a rigorous relative error γ on each suffix sum: the masses' own error
        # (fin.rel), recursive summation of ≤ n nonnegative terms ((n + 8)u), the rounding of
        # the exponents (8u·max|exponent|); terms lost to underflow below e^{M−700} are paid
        # as an absolute n·e^{M−700}.  The upper end uses S_a(1+γ) − e^ε S_b(1−γ), the lower
        # S_a(1−γ) − e^ε S_b(1+γ): each encloses the exact sum.
        ell, lm = fin.ell_nz, fin.lm_nz
        if ell.size == 0:
            lfin_up = lfin_lo = np.full(n, -np.inf)
        else:
            ma, mb = float(np.max(lm)), float(np.max(lm - ell))
            with np.errstate(under="ignore"):
                sa = np.concatenate((np.cumsum(np.exp(lm - ma)[::-1])[::-1], [0.0]))
                sb = np.concatenate((np.cumsum(np.exp(lm - ell - mb)[::-1])[::-1], [0.0]))
            big = float(np.max(np.abs(lm))) + float(np.max(np.abs(ell))) + abs(ma) + abs(mb)
            k = np.searchsorted(ell, grid, side="right")
            gam = 2.0 * fin.rel + (ell.size + 8) * 4 * _U + 8 * _U * (big + np.abs(grid) + 50.0)
            lost = math.log(ell.size) + max(ma, mb + float(np.max(grid))) - 700.0
            with np.errstate(divide="ignore", invalid="ignore"):
                la_up = ma + np.log(sa[k] * (1.0 + gam))
                la_lo = ma + np.log(sa[k] * (1.0 - gam))
                lb_up = grid + mb + np.log(sb[k] * (1.0 + gam))
                lb_lo = grid + mb + np.log(sb[k] * (1.0 - gam))
            lfin_up = _lse(_log_sub(la_up, lb_lo), np.full(n, lost))
            lfin_lo = _log_sub(_log_sub(la_lo, lb_up), np.full(n, lost))
        lerr = fin.lerr - fin.lam * grid
        with np.errstate(invalid="ignore"):
            if fin.pess:
                v = np.where(lfin_up > -np.inf, lfin_up + math.log1p(fin.rel), -np.inf)
                r = _lse(v, lerr, np.full(n, fin.lpinf))
                return np.where(np.isnan(r), np.inf, r)
            r = _log_sub(lfin_lo + math.log1p(-fin.rel), lerr)
            return np.where((lfin_lo == -np.inf) | ~(lerr < np.inf) | np.isnan(r), -np.inf, r)

    def evaluate(i, finals):
        lo = np.full(n, -np.inf)
        up = np.full(n, -np.inf)
        for (_, pess), fin in finals.items():
            v = many(fin)
            if pess:
                up = np.maximum(up, v)
            else:
                lo = np.maximum(lo, v)
        return lo, up

    rho = _first_rho(tol)
    done = False
    for _ in range(4):
        plans = _plans_delta(q, sigma, steps, ref, tol, est)
        plans.update({d: p for d, p in _plans_delta(q, sigma, steps, 0.0, tol, est).items()
                      if d not in plans})
        try:
            lo, up = _compose_points(q, sigma, [steps], rho, plans, _log_eta(est, tol, steps),
                                     evaluate, directions=list(plans))[0]
        except _TooFine:
            break
        best_lo = np.maximum(best_lo, lo)
        best_up = np.minimum(best_up, up)
        done = True
        with np.errstate(invalid="ignore"):
            w = np.where(best_up > -np.inf, -np.expm1(best_lo - best_up), 0.0)
        w = np.where(best_up > log_delta_floor, w, 0.0)
        width = float(np.max(w)) if n else 0.0
        if width <= tol or rho <= _RHO_MIN:
            break
        rho = _next_rho(rho, tol, width)
    if not done or not np.all(best_up <= 0.0):
        raise PLDUncertifiable("no certified δ bracket at this resolution")
    return best_lo, best_up
