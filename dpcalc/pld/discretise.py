"""Discretisation of one step's PLD on a grid, pessimistic and optimistic, from a pair's tails.

Pessimistic: connect-the-dots [DGKKM22, Alg. 1] (the result dominates the pair).
Optimistic: merged loss buckets placed at their grid values (dominated by the pair); next to a
hard lower edge a clump narrower than the grid is merged into a few buckets whose ratios lie on
the final coarse grid (_clump_level0), a clump a few cells wide (where the plain buckets would
lower it much: sides._clump_plan) into buckets on the first coarsening's grid.
Both move the computed CDF by twice its error bound towards the safe side, so each holds for
the exact tails too.  References: [DGKKM22], [KJH20].
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.pld._core import (
    _LOG_HALF,
    _LOG_U4,
    _U,
    PLDUncertifiable,
    _by_form,
    _log1mexp,
    _log_sub,
    _logsumexp,
    _lse,
    _slog,
)
from dpcalc.pld.pair import DominatingPair, Tails


def _interval_mass(lup_l, lup_r, llo_l, llo_r, eup_l, eup_r, elo_l, elo_r, log_err=False):
    """log of the mass between two thresholds and the log of an absolute error bound.

    Uses the difference of upper tails where those are ≤ 1/2, else of lower tails.  With
    log_err the e* are the log absolute errors log(e) + l of their tails already (callers
    that need those anyway).
    """
    # each point's pair of tails only (both over every point were half the work), picked
    # pointwise and taken in one pass: a pass per half, on copies of its selection, cost
    # ~30 µs more per call (113 -> 81 µs at 700 points; ~10 calls per batch line)
    up = np.asarray(lup_l) <= _LOG_HALF
    l0, l1 = np.where(up, lup_l, llo_r), np.where(up, lup_r, llo_l)
    e0, e1 = np.where(up, eup_l, elo_r), np.where(up, eup_r, elo_l)
    with np.errstate(divide="ignore"):
        m = _log_sub(l0, l1)
        err = (np.logaddexp(e0, e1) if log_err else
               np.logaddexp(np.log(e0) + l0, np.log(e1) + l1))
    return m, np.logaddexp(err, _LOG_U4 + m)


def _log_abs_errors(lup, llo, eup, elo):
    """log e + l of a side's upper and lower tails, the log absolute errors that
    _interval_mass(log_err=True) reads: each boundary's log once (its two intervals each
    took it), and a bound array the two tails share (the subsampled Gaussian's) once."""
    with np.errstate(divide="ignore", invalid="ignore"):
        le = np.log(eup)
        return le + lup, (le if elo is eup else np.log(elo)) + llo


# --------------------------------------------------------------------------------------
# level 0: the one-step PLD on the grid
# --------------------------------------------------------------------------------------

def _ctd_level0(ell, tl: Tails, remove: bool, drop_below: bool = False):
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
    med_candidates = np.nonzero(tl.lPup[:-1] <= _LOG_HALF)[0]
    m_med = int(med_candidates[0]) + 1 if med_candidates.size else n
    # S_m is read from the median up only, F_m up to it only (all S_m where dropping):
    # each is computed there alone (both over every point doubled the sums' work)
    s_lo = 0 if drop_below else m_med - 1           # S_m for m > s_lo
    f_hi = 0 if drop_below else min(m_med, n - 1)   # F_m for 0 < m ≤ f_hi
    with np.errstate(divide="ignore", invalid="ignore"):
        # log absolute errors of the tails, once for the interval masses and the sums
        el_up, el_lo = _log_abs_errors(tl.lPup, tl.lPlo, tl.ePup, tl.ePlo)
        eq_up, eq_lo = _log_abs_errors(tl.lQup, tl.lQlo, tl.eQup, tl.eQlo)
        la, lea = _interval_mass(tl.lPup[:-1], tl.lPup[1:], tl.lPlo[:-1], tl.lPlo[1:],
                                 el_up[:-1], el_up[1:], el_lo[:-1], el_lo[1:], log_err=True)
        lb, leb = _interval_mass(tl.lQup[:-1], tl.lQup[1:], tl.lQlo[:-1], tl.lQlo[1:],
                                 eq_up[:-1], eq_up[1:], eq_lo[:-1], eq_lo[1:], log_err=True)
        lb = lb + ell[:-1]
        leb = leb + ell[:-1]
        lG = _log_sub(la, lb)
        leG = _lse(lea, leb, _LOG_U4 + np.logaddexp(la, lb))
        lGw, leGw = lG - lw, leG - lw
        # upper sums S_m (m = 1..n−1), lower sums F_m = 1 − S_m
        up, lo = slice(s_lo + 1, n), slice(1, f_hi + 1)         # (of the arrays over m)
        lPup, lGw_u, leGw_u = tl.lPup[up], lGw[up.start - 1:], leGw[up.start - 1:]
        lS = np.logaddexp(lPup, lGw_u)
        leS = _lse(el_up[up], leGw_u, _LOG_U4 + lS)
        lPlo, lGw_l, leGw_l = tl.lPlo[lo], lGw[:f_hi], leGw[:f_hi]
        lF = _log_sub(lPlo, lGw_l)
        leF = _lse(el_lo[lo], leGw_l, _LOG_U4 + np.logaddexp(lPlo, lGw_l))
        lS_t = np.logaddexp(lS, math.log(2.0) + leS)              # pessimistic: S up
        lF_t = _log_sub(lF, math.log(2.0) + leF)                 # pessimistic: F down
    # index arrays over m = 0..n (m = n is +∞)
    S = np.full(n + 1, -np.inf)
    F = np.full(n + 1, -np.inf)
    S[0], F[0] = 0.0, -np.inf
    S[up] = lS_t
    F[lo] = lF_t
    # p∞ = P(L > ℓ_top), moved up by twice its error bound
    lpinf = float(tl.lPup[-1] + math.log1p(2.0 * float(tl.ePup[-1]) + 4 * _U))
    S[n] = lpinf
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


def _bucket_masses(tb: Tails, el_p=None):
    """log P- and Q-masses (and log absolute error bounds) of the n = len(tb) + 1 buckets cut
    by the boundaries whose tails are tb (the first and last bucket are unbounded).  el_p:
    the log absolute errors (log e + l) of P's upper and lower tails, if the caller has
    them."""
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
            eu, el = el_p if el_p is not None else (tb.ePup, tb.ePlo)
            la[1:-1], lea[1:-1] = _interval_mass(
                tb.lPup[:-1], tb.lPup[1:], tb.lPlo[:-1], tb.lPlo[1:],
                eu[:-1], eu[1:], el[:-1], el[1:], log_err=el_p is not None)
            qu, ql = _log_abs_errors(tb.lQup, tb.lQlo, tb.eQup, tb.eQlo)
            lb[1:-1], leb[1:-1] = _interval_mass(
                tb.lQup[:-1], tb.lQup[1:], tb.lQlo[:-1], tb.lQlo[1:],
                qu[:-1], qu[1:], ql[:-1], ql[1:], log_err=True)
    return la, lb, lea, leb


def _bucket_plan(ell, la, lb, lea, leb) -> dict:
    """Merge decisions of the optimistic one-step PLD (see _bucket_level0)."""
    n = ell.size
    theta = 1.0 - 1e-6
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        nonempty = np.isfinite(la)
        ra = np.where(nonempty, np.exp(lea - la), 0.0)       # relative errors of a, b
        rb = np.where(np.isfinite(lb), np.exp(leb - lb), 0.0)
        erab = np.expm1(ra + rb + 4 * _U)     # (once: each bucket enters three times)

        def excess(target, k):
            """Excess of bucket k over e^{target} per unit of a_k, and its error bound
            (k: (nonempty, lb, la) at the buckets, and erab there)."""
            lr = np.where(k[0], target + k[1] - k[2], np.nan)
            # X = 1 − e^{lr}; relative errors ra, rb of a, b move lr by ≤ ra + rb (+ rounding)
            return -np.expm1(lr), np.exp(lr) * k[3] + 4 * _U

        idx = np.arange(n)
        X, eX = excess(ell, (nonempty, lb, la, erab))
        up = np.minimum(idx + 1, n - 1)
        dn = np.maximum(idx - 1, 0)
        # each neighbour's fields gathered once (excess and the fractions read them)
        k_up = tuple(v[up] for v in (nonempty, lb, la, erab))
        k_dn = tuple(v[dn] for v in (nonempty, lb, la, erab))
        Y, eY = excess(ell, k_up)          # bucket m+1 w.r.t. ℓ_m (> 0)
        Z, eZ = excess(ell, k_dn)          # bucket m−1 w.r.t. ℓ_m (< 0)
        has_up = (idx < n - 1) & k_up[0]
        has_dn = (idx > 0) & k_dn[0]
        need = eX - X
        # deficit: f = need·a_m / ((Y − eY)·a_{m+1})
        logf = (np.log(np.maximum(need, 0.0)) + la - np.log(Y - eY) - k_up[2] + 16 * _U)
        deficit = nonempty & ~(need <= 0)           # NaN-safe: unknown counts as deficit
        borrow = deficit & has_up & (Y - eY > 0) & (logf <= 0.0)
        fb = deficit & ~borrow
        f = np.where(borrow, np.exp(np.where(borrow, logf, -np.inf)), 0.0)
        # excess: g = θ·own_frac·(X − eX)·a_m / ((|Z| + eZ)·a_{m−1})
        surplus = nonempty & (need < 0) & has_dn
        lgr = (np.log(np.where(surplus, -need, 1.0)) + la - np.log(np.abs(Z) + eZ) - k_dn[2]
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
    n, f, g, fb = d["n"], d["f"], d["g"], d["fb"]
    # the neighbours' masses a[min(m + 1, n − 1)], a[max(m − 1, 0)] and g's next as shifted
    # copies, own·a once (the same doubles as the gathers; ~14 of ~100 µs, two calls a line)
    a_up, a_dn, g_next = np.empty(n), np.empty(n), np.empty(n)
    a_up[:-1], a_up[-1] = a[1:], a[-1]
    a_dn[1:], a_dn[0] = a[:-1], a[0]
    g_next[:-1], g_next[-1] = g[1:], 0.0
    own_a = np.maximum(0.0, 1.0 - d["fprev"] - g_next) * a
    placed = np.where(fb, 0.0, own_a) + f * a_up + g * a_dn
    below = np.empty(n)                                  # fall-backs land at m
    below[:-1], below[-1] = np.where(fb, own_a, 0.0)[1:], 0.0
    before = np.nan_to_num(a * lam)
    after = np.nan_to_num((placed + below) * ell)
    return (before - after).reshape(-1, n_win).sum(axis=1)


def _edge_offset(pair: DominatingPair, direction: str, h: float,
                 loss: list | None = None, search: bool = True) -> float:
    """Grid offset for a one-step law with a hard edge (pair.loss_bounds: for the subsampled
    Gaussian the remove-direction loss is ≥ log(1 − q), the add-direction loss ≤
    −log(1 − q)).  Next to the edge the density can
    rise steeply within one cell (the "no-jump" clump of a small-q or small-σ step) and the
    bucket there has no mass beyond the edge to merge with, so the optimistic side would
    lower it by up to h on every step.  Keep, among 32 offsets, the one whose optimistic
    construction loses the least P-mean of the loss in the 38 cells next to the edge (a
    heuristic: every offset is sound).
    All offsets are evaluated in one batch: windows of 40 buckets whose end buckets are
    left empty, so the windows do not interact.  ``loss``, if given, receives the chosen
    offset's P-mean lowering per step (0 where there is no edge).  ``search`` False: the
    first candidate, unsearched (its lowering unknown, given as 0), for a pessimistic side
    whose bound only needs to be sound (a scout's, see eps_search._scout)."""
    lo_edge, hi_edge = pair.loss_bounds(direction)
    if math.isfinite(lo_edge):
        edge, bottom = lo_edge, True
    elif math.isfinite(hi_edge):
        edge, bottom = hi_edge, False
    else:
        if loss is not None:
            loss.append(0.0)
        return 0.0
    n_off, n_at = 32, 40
    rel = np.arange(-3, n_at - 3) if bottom else np.arange(-(n_at - 4), 4)
    # (k + 1/64)/32 keeps every atom and boundary off the edge itself (ill-conditioned)
    offs = edge + h * (np.arange(n_off) + 1.0 / 64) / n_off
    if not search:
        if loss is not None:
            loss.append(0.0)
        return math.fmod(float(offs[0]), h)
    ell = (offs[:, None] + rel[None, :] * h)                    # (W, 40) atoms
    mids = 0.5 * (ell[:, :-1] + ell[:, 1:])                     # (W, 39) boundaries
    tb = getattr(pair, "tails_estimate", pair.tails)(mids.ravel(), direction)
    if tb is None:
        if loss is not None:
            loss.append(0.0)          # (unknown: no gate opens on it)
        return math.fmod(float(offs[0]), h)
    shape = (n_off, n_at - 1)
    lP, lPl, lQ, lQl = (v.reshape(shape) for v in (tb.lPup, tb.lPlo, tb.lQup, tb.lQlo))
    eP, ePl, eQ, eQl = (v.reshape(shape) for v in (      # (log absolute errors)
        *_log_abs_errors(tb.lPup, tb.lPlo, tb.ePup, tb.ePlo),
        *_log_abs_errors(tb.lQup, tb.lQlo, tb.eQup, tb.eQlo)))
    with np.errstate(all="ignore"):
        ma, mea = _interval_mass(lP[:, :-1], lP[:, 1:], lPl[:, :-1], lPl[:, 1:],
                                 eP[:, :-1], eP[:, 1:], ePl[:, :-1], ePl[:, 1:], log_err=True)
        mb, meb = _interval_mass(lQ[:, :-1], lQ[:, 1:], lQl[:, :-1], lQl[:, 1:],
                                 eQ[:, :-1], eQ[:, 1:], eQl[:, :-1], eQl[:, 1:], log_err=True)
    empty = np.full((n_off, 1), -np.inf)
    la, lea, lb, leb = (np.hstack((empty, v, empty)).ravel() for v in (ma, mea, mb, meb))
    flat = ell.ravel()
    d = _bucket_plan(flat, la, lb, lea, leb)
    lowering = _bucket_mean_loss(flat, d, n_at)
    k = int(np.argmin(lowering))
    if loss is not None:
        loss.append(float(lowering[k]))
    return math.fmod(float(offs[k]), h)


def _bucket_level0(ell, tb: Tails):
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
    with np.errstate(divide="ignore", invalid="ignore"):
        # log absolute errors of P's tails, once for the bucket masses and the sums
        ePu, ePl = _log_abs_errors(tb.lPup, tb.lPlo, tb.ePup, tb.ePlo)
    d = _bucket_plan(ell, *_bucket_masses(tb, (ePu, ePl)))
    la, ra, n, f, g, fb, fprev, dn = (d[k] for k in ("la", "ra", "n", "f", "g", "fb",
                                                     "fprev", "dn"))
    med_candidates = np.nonzero(tb.lPup <= _LOG_HALF)[0]
    m_med = int(med_candidates[0]) + 1 if med_candidates.size else n
    m_med = max(m_med, 1)
    # tail sums of the grid PLD: S_m = P-mass at grid points ≥ m (F_m = 1 − S_m)
    #   normal m:    S_m = P(L > β_{m−1}) − f_{m−1}a_m + g_m a_{m−1}
    #   fall-back m: S_m = P(L > β_m) + g_{m+1}a_m
    # S_m is read from the median up only, F_m up to it only: each is computed there alone,
    # and each of the two forms at its own points (all four over every point: 4x the work)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lg = np.log(g)
        lfa = np.log(fprev) + la                        # f_{m−1}·a_m
        lga = lg + la[dn]                               # g_m·a_{m−1}
        lgn = np.concatenate((lg[1:], [-np.inf])) + la  # g_{m+1}·a_m
        lra = np.log(ra + 2 * _U)
        r_fa = lfa + lra
        r_ga = lga + lra[dn]
        r_gn = lgn + lra
        lPu, lPl = tb.lPup, tb.lPlo
        lPu_a = np.concatenate((lPu[1:], [-np.inf]))
        ePu_a = np.concatenate((ePu[1:], [-np.inf]))
        lPl_a = np.concatenate((lPl[1:], [0.0]))
        ePl_a = np.concatenate((ePl[1:], [-np.inf]))

        def s_norm(i):          # (arrays over m = 1..n−1: index i is m − 1)
            x = np.logaddexp(lPu[i], lga[1:][i])
            return (_log_sub(x, lfa[1:][i]),
                    _lse(ePu[i], r_fa[1:][i], r_ga[1:][i], _LOG_U4 + x))

        def s_fb(i):
            v = np.logaddexp(lPu_a[i], lgn[1:][i])
            return v, _lse(ePu_a[i], r_gn[1:][i], _LOG_U4 + v)

        def f_norm(i):
            y = np.logaddexp(lPl[i], lfa[1:][i])
            return (_log_sub(y, lga[1:][i]),
                    _lse(ePl[i], r_fa[1:][i], r_ga[1:][i], _LOG_U4 + y))

        def f_fb(i):
            return (_log_sub(lPl_a[i], lgn[1:][i]),
                    _lse(ePl_a[i], r_gn[1:][i], _LOG_U4 + lPl_a[i]))

        fbm = fb[1:]
        lS, leS = _by_form(s_norm, s_fb, fbm, m_med - 1, n - 1)
        lF, leF = _by_form(f_norm, f_fb, fbm, 0, min(m_med, n - 1))
        lS_t = _log_sub(lS, math.log(2.0) + leS)              # optimistic: S down
        lF_t = np.logaddexp(lF, math.log(2.0) + leF)          # optimistic: F up
    S = np.full(n + 1, -np.inf)
    F = np.full(n + 1, 0.0)
    S[m_med:n] = lS_t
    F[1:min(m_med, n - 1) + 1] = np.minimum(lF_t, 0.0)
    # bottom bucket: kept at ℓ_0, or its own part dropped (to −∞)
    if fb[0]:
        F[0] = float(la[0] + math.log1p(-min(g[1] if n > 1 else 0.0, 1.0))
                     + math.log1p(2.0 * ra[0] + 8 * _U))
        F[0] = min(F[0], 0.0)
        S[0] = float(_log1mexp(F[0]))
    else:
        F[0], S[0] = -np.inf, 0.0
    S[n], F[n] = -np.inf, 0.0
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
# the optimistic side's clump next to a hard lower edge
# --------------------------------------------------------------------------------------

def _clump_ratio(pair: DominatingPair, direction: str, beta: float):
    """log P(L ≤ β) − log Q(L ≤ β) (the log likelihood ratio of the event {L ≤ β}) and a
    margin covering its error bound; None if the tails are not available there."""
    tb = pair.tails(np.array([beta]), direction)
    if tb is None or not (np.isfinite(tb.lPlo[0]) and np.isfinite(tb.lQlo[0])):
        return None
    lr = float(tb.lPlo[0] - tb.lQlo[0])
    # |Δ log a| ≤ 2e (e ≤ 1/2), so the ratio is known to within 2(e_P + e_Q); padded
    margin = 4.0 * float(tb.ePlo[0] + tb.eQlo[0]) + 64 * _U * (1.0 + abs(lr))
    return lr, margin


def _clump_cuts(pair: DominatingPair, direction: str, h: float, stride: int, edge: float,
                n_max: int):
    """_clump_cuts_at for β_0 = edge + f·stride·h, f the first of 1/2, 5/8, 3/4, 7/8, 1 for
    which bucket 1 exists (the mass above β_0 can have a ratio ≥ e^{off + stride·h}: a steep
    tail's ratio is not much above β_0); the last try otherwise.  Heuristic."""
    got = None
    for f in (0.5, 0.625, 0.75, 0.875, 1.0):
        got = _clump_cuts_at(pair, direction, h, stride, edge + f * stride * h, n_max)
        if got is not None and len(got[1]) > 1:
            return got
    return got


def _clump_cuts_at(pair: DominatingPair, direction: str, h: float, stride: int,
                   beta0: float, n_max: int):
    """Buckets next to a hard lower edge whose likelihood ratios sit (just above) on the
    grid points off + i·stride·h: bucket 0 = {L ≤ β_0}, off its log ratio less a margin, and
    bucket i = {β_{i−1} < L ≤ β_i} with β_i the smallest cut (to 2^-40 of the search
    interval) whose bucket's log ratio is at least off + i·stride·h plus a margin covering
    the error bounds of its masses (a bucket's ratio grows with its upper cut, since the
    mass added has a larger ratio).  Heuristic (any cuts are sound; the bucket plan
    certifies every placement).  Returns (off, cuts) or None."""
    got = _clump_ratio(pair, direction, beta0)
    if got is None:
        return None
    off = got[0] - got[1]
    cuts = [beta0]
    width = stride * h
    for i in range(1, n_max + 1):
        target = off + float(i * stride) * h        # as the grid computes its points
        lo_b = cuts[-1]
        if not lo_b < target:
            break
        t0 = pair.tails(np.array([lo_b]), direction)
        hi_b = target + width
        ok = False
        for _ in range(8):                           # a cut with a large enough ratio
            lr, mg = _bucket_ratio(pair, direction, t0, np.array([hi_b]), target)
            if lr is not None and lr[0] - mg[0] >= target:
                ok = True
                break
            hi_b = lo_b + 2.0 * (hi_b - lo_b)
        if not ok:
            break
        a, b = lo_b, hi_b
        for _ in range(8):                           # 32-point search, 8 rounds
            pts = a + (b - a) * np.arange(1, 33) / 32.0
            lr, mg = _bucket_ratio(pair, direction, t0, pts, target)
            if lr is None:
                break
            good = np.nonzero(lr - mg >= target)[0]
            if good.size == 0:
                break
            k = int(good[0])
            b = float(pts[k])
            a = float(pts[k - 1]) if k > 0 else a
        lr, _ = _bucket_ratio(pair, direction, t0, np.array([b]), target)
        if lr is None or not lr[0] - target <= 0.25 * width:
            break              # an atom (a jump of the ratio): it stays on the grid
        cuts.append(b)
    return off, cuts


def _bucket_ratio(pair, direction, t0: Tails, pts, target: float):
    """log ratio of the buckets (cut, p] for the cut whose tails are t0 and each p in pts, and
    a margin covering its error bound (None if the tails are not available)."""
    t1 = pair.tails(pts, direction)
    if t1 is None or t0 is None:
        return None, None
    with np.errstate(all="ignore"):
        la, lea = _interval_mass(t0.lPup, t1.lPup, t0.lPlo, t1.lPlo,
                                 t0.ePup, t1.ePup, t0.ePlo, t1.ePlo)
        lb, leb = _interval_mass(t0.lQup, t1.lQup, t0.lQlo, t1.lQlo,
                                 t0.eQup, t1.eQup, t0.eQlo, t1.eQlo)
        lr = la - lb
        mg = 4.0 * (np.exp(lea - la) + np.exp(leb - lb)) + 64 * _U * (1.0 + abs(target))
    lr = np.where(np.isfinite(lr) & np.isfinite(mg), lr, -np.inf)
    return lr, mg


def _clump_level0(pair: DominatingPair, direction: str, ell, jpos, tb: Tails, off: float,
                  h: float, stride: int, cuts):
    """Optimistic one-step PLD with the clump next to a hard lower edge in a few buckets
    whose likelihood ratios lie on the coarse grid off + i·stride·h (see _clump_cuts).

    Merging all losses of a bucket is a post-processing, so the result is still dominated
    by the pair [DGKKM22] (cf. _bucket_level0); the buckets {L ≤ β_0}, {β_{i−1} < L ≤ β_i}
    replace the grid's buckets below β_m, the grid's buckets above β_m stay, and
    _bucket_level0 then certifies every placement as usual (its atoms and cuts may be
    anywhere as long as each atom lies below its bucket's upper cut).  Why: a clump
    narrower than the cells of the composed grid is lowered by up to a cell at every
    coarsening (the losses add up over the T steps), whereas atoms on the coarse grid
    (stride·h = its final cell) stay where they are.  Returns (positions, points, log
    masses, log relative errors), or None if the grid does not fit."""
    m = len(cuts) - 1
    jc = np.arange(m + 1, dtype=jpos.dtype) * stride
    ellc = off + jc.astype(float) * h
    mids = 0.5 * (ell[:-1] + ell[1:])
    cand = np.nonzero((mids > cuts[-1]) & (ell[:-1] > ellc[-1]))[0]
    if cand.size == 0 or jc[-1] > jpos[-1] or jpos[0] > 0:
        return None
    js = int(cand[0])
    tc = pair.tails(np.array(cuts, dtype=float), direction)
    if tc is None:
        return None
    fields = ("lPup", "lPlo", "lQup", "lQlo", "ePup", "ePlo", "eQup", "eQlo")
    sub = Tails(*(np.concatenate((getattr(tc, f), np.asarray(getattr(tb, f))[js:]))
                  for f in fields))
    ell2 = np.concatenate((ellc, ell[js:]))
    lp, lrel = _bucket_level0(ell2, sub)
    return np.concatenate((jc, jpos[js:])), ell2, lp, lrel


def _log_tilted_below(pair: DominatingPair, direction: str, ell0: float,
                      lam: float, floor: float) -> float:
    """Upper bound on log E_P[e^{λL}; L ≤ ℓ0] (λ ≥ 0): a Riemann upper sum
    Σ_k e^{λ p_k}·P(p_{k+1} < L ≤ p_k) over decreasing points p_k from ℓ0, plus
    e^{λ p_K}·P(L ≤ p_K), with the tails moved up by their error bounds.  Any points give an
    upper bound (each term overestimates by e^{λ(p_k − p_{k+1})}), so the smaller of two
    sums is one too:
      * steps of max(1/λ, span/20000) down to below `floor` (where P(L ≤ ·) is negligible);
        at large tilts (λ·span ≫ 20000) each term is e^{λ·span/20000} loose (e^385 to
        e^4333 at λ = 1e8 to 1e11: review);
      * then steps of 1/λ for at most 20000 steps, the rest in the last term (weight
        e^{λℓ0 − 20000}); loose where P(L ≤ ℓ0) is below e^-20000 (q = 1, σ 41 at ε 7,
        λ 11870: e^58878 for a sum near e^-107 of the grid's mass)."""
    if lam <= 0:
        return _riemann_upper(pair, direction, lam, np.array([ell0]))
    span = max(ell0 - floor, 0.0) + 1.0
    step = max(1.0 / lam, span / 20000.0)
    pts = ell0 - step * np.arange(int(math.ceil(span / step)) + 1)
    got = _riemann_upper(pair, direction, lam, pts)
    if lam * step > 1.0:
        fine = min(1.0 / lam, span)
        pts = ell0 - fine * np.arange(min(int(math.ceil(span / fine)), 20000) + 1)
        got = min(got, _riemann_upper(pair, direction, lam, pts))
    return got


def _riemann_upper(pair: DominatingPair, direction: str, lam: float, pts) -> float:
    """The Riemann upper sum of _log_tilted_below over the decreasing points pts."""
    tl = pair.tails(pts, direction)
    if tl is None:
        pts = pts * (1 + 1e-9) - 1e-12
        tl = pair.tails(pts, direction)
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
