"""Choice of the tilt λ, the grid and the supports, and the one-step PLDs built on them.

Heuristics throughout: any λ, spacing, offset or support is sound (the error terms are
certified whatever they are), so these only decide speed and tightness.  The tilt minimises
the Chernoff-type bound Σ_i n_i·K_i(λ) + log C_λ − λε [KJH20, Sec 5; GLW21, Sec 5] over the
items (pair, n) of a plan; the grid is piecewise uniform, stride 4^(k+1) where the tilted
tails carry < _TIER_LEVELS[k].  One-step PLDs: connect-the-dots [DGKKM22, Alg. 1] and buckets.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

from dpcalc.pld._core import (
    _EXTENT_LEVEL,
    _N0_LEN_MAX,
    _N0_MAX,
    _NWIN_MAX,
    _TIER_LEVELS,
    PLDUncertifiable,
    _log_c_lambda,
    _logsumexp,
)
from dpcalc.pld.pair import DominatingPair, Tails
from dpcalc.pld.pmf import _SPLIT_NOISE_GUESSED, _Engine


def _pd(pair: DominatingPair, direction: str) -> str:
    """The direction to ask a pair for: a symmetric pair only ever answers for "remove"."""
    return "remove" if pair.symmetric else direction


def _sorted_nodes(pair: DominatingPair, direction: str, lam: float, density: float,
                  nmin: int, log_eta_top: float | None):
    """The pair's quadrature nodes (loss, log w0, log w) in increasing loss order."""
    loss, lw0, lw = pair.quadrature(_pd(pair, direction), lam, density, nmin, log_eta_top)
    if loss.size > 1 and not np.all(np.diff(loss) >= 0):
        if np.all(np.diff(loss) <= 0):
            loss, lw0, lw = loss[::-1], lw0[::-1], lw[::-1]
        else:
            order = np.argsort(loss, kind="stable")
            loss, lw0, lw = loss[order], lw0[order], lw[order]
    return loss, lw0, lw


def _cgf(pair: DominatingPair, direction: str, lam: float,
         log_eta_top: float | None = None) -> tuple[float, float, float, float]:
    """(K(λ), K'(λ), K''(λ), top node) of the one-step loss under P, by the pair's
    quadrature: K(λ) = log E_P[e^{λL}], and the largest loss its nodes reach.  Only used to
    choose the tilt and the grid (heuristics: every choice is sound).  log_eta_top: the part
    of the law that goes to +∞ must not steer it."""
    nodes = getattr(pair, "cgf_nodes", None)
    if nodes is not None:
        # (log_w0's sum from the pair, kept per node set: the same double as from
        # quadrature's log_w0, ~10 µs of each of ~13 calls per batch line)
        loss, lw, lse0 = nodes(_pd(pair, direction), lam, 10.0, 600, log_eta_top)
    else:
        loss, lw0, lw = pair.quadrature(_pd(pair, direction), lam, 10.0, 600, log_eta_top)
        lse0 = _logsumexp(lw0)
    top = float(np.max(lw)) if lw.size else -math.inf
    if top == -math.inf:
        k = _logsumexp(lw) - lse0
        w = np.exp(lw - lw.max())
        sw = w.sum()
    else:
        # the weights are _logsumexp(lw)'s own terms: one exp for both (the same doubles;
        # ~13 calls per batch line)
        w = np.exp(lw - top)
        sw = w.sum()
        k = (top + math.log(float(sw))) - lse0
    m1 = float((w * loss).sum() / sw)
    m2 = float((w * (loss - m1) ** 2).sum() / sw)
    return k, m1, max(m2, 0.0), float(loss.max())


_LAMBDA_CACHE: dict = {}
# λ stops growing towards a root still ahead (_best_lambda_uncached) when an item's tilted
# mean is within _HEADROOM tilted standard deviations of its top quadrature node or its
# tilted variance has fallen below _VAR_COLLAPSE of the guess's (that node below its hard
# edge: _saturated), or (a target ε) the Chernoff bound on δ is below e^_GROW_LOG_DELTA_MIN
_HEADROOM = 3.0
_VAR_COLLAPSE = 1e-2
_GROW_LOG_DELTA_MIN = -700.0
# the largest tilt (a guess is clamped to it, growth stops at 10×): for a target δ (ε
# questions) the optimum can lie far out (one step of q 1e-6, σ 2000 at δ 1e-60: λ 1.1e8,
# ε within 0.8 % of the exact 7.46e-9 where λ ≤ 1e6 gave 2.5e-4); for a target ε, tilts
# beyond 1e5 made δ brackets vacuous (random cases 35, 50, 79, 86 of the issue-14 sample)
_LAM_MAX_DELTA = 1e12
_LAM_MAX_EPS = 1e5
# whether a tilt may grow past its Gaussian guess towards the Chernoff optimum, and the flag
# raised when one did (read by tilt_retry)
_GROW: ContextVar[bool] = ContextVar("dpcalc_pld_tilt_grow", default=True)
_GREW: ContextVar[list | None] = ContextVar("dpcalc_pld_tilt_grew", default=None)


def tilt_retry(fn):
    """An engine entry point that, when it raises PLDUncertifiable after some tilt grew past
    its Gaussian guess, runs again with every tilt kept at its guess (heuristics only: any λ
    is sound).  A grown tilt is the Chernoff optimum, far tighter where the guess is poor
    (random case 2 of the issue-14 sample: ε's upper end 1.0e-3 -> 9.3e-8), but it reaches
    tilts the guesses never asked of the grids; should one fail, the answer is never worse
    than the guess's (a safety net: q 1e-3, σ 50, one step at δ 1e-100 needed it until an
    empty optimistic one-step PLD was left out instead of failing).  A retried full bracket
    is the guess's, while a solver's upper-only pass at the same point may have succeeded
    at the grown tilt: the two upper ends then differ (both certified), like the fallback
    gap of _eps_group's for_solve."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        if not _GROW.get():
            return fn(*args, **kwargs)
        outer, flag = _GREW.get(), [False]
        token = _GREW.set(flag)
        try:
            return fn(*args, **kwargs)
        except PLDUncertifiable:
            if not flag[0]:
                raise
        finally:
            _GREW.reset(token)
            if outer is not None and flag[0]:
                outer[0] = True
        token = _GROW.set(False)
        try:
            return fn(*args, **kwargs)
        finally:
            _GROW.reset(token)
    return run


def _best_lambda(items, direction: str, log_delta: float | None = None,
                 eps: float | None = None, log_eta_top: float | None = None):
    """Cached _best_lambda_uncached; items = ((pair, n), ...)."""
    grow = _GROW.get()
    key = (tuple((p.key(), n) for p, n in items), direction, log_delta, eps, log_eta_top, grow)
    hit = _LAMBDA_CACHE.get(key)
    if hit is None:
        if len(_LAMBDA_CACHE) > 4096:
            _LAMBDA_CACHE.clear()
        hit = _LAMBDA_CACHE[key] = _best_lambda_uncached(tuple(items), direction, log_delta,
                                                         eps, log_eta_top, grow)
    lam, per, grew = hit
    flag = _GREW.get()
    if grew and flag is not None:
        flag[0] = True
    return lam, per


def _saturated(items, direction: str, per, eps: float | None = None, per0=None) -> bool:
    """Whether the quadrature's nodes at a tilt (per: _cgf of each item there) cannot carry
    it towards the root: for a target ε, the top nodes sum (Σ n·top) to at most ε, so T·K'
    never reaches it; or some item, whose top node lies well below the loss's hard upper
    edge, has its tilted law (mean K', variance K'') within _HEADROOM tilted standard
    deviations of that node, or its tilted variance below _VAR_COLLAPSE of its variance at
    the guess (per0).  At the edge itself (a bounded loss, atoms) the law is resolved, and
    its variance does collapse."""
    reach = 0.0
    hit = False
    per0 = per if per0 is None else per0
    for (pair, n), (_, m1, m2, top), (_, _, v0, _) in zip(items, per, per0, strict=True):
        d = _pd(pair, direction)
        reach += n * top
        room = _HEADROOM * math.sqrt(m2)
        edge = pair.loss_bounds(d)[1]
        cut = top < edge - room - 1e-9 * (1.0 + abs(edge))      # (edges are padded outward)
        hit = hit or (cut and (top - m1 < room or m2 < _VAR_COLLAPSE * v0))
    return hit or (eps is not None and reach <= eps)


def _best_lambda_uncached(items, direction: str, log_delta: float | None,
                          eps: float | None, log_eta_top: float | None, grow: bool = True):
    """Tilt λ > 0 minimising the Chernoff-type bound: for a target δ the ε-bound
    (T·K(λ) + log C_λ − log δ)/λ, for a target ε the δ-bound T·K(λ) − λε + log C_λ.  Both
    are convex in the sense that their stationarity function g below is increasing in λ:
    a bracket by doubling from a Gaussian guess, then safeguarded Newton.  The tilted
    composed law is then centred near the ε of interest.  T·K is Σ_i n_i·K_i over the items
    (pair, n) of a plan.  Returns (λ, [(K_i, K_i', K_i'') per item], whether λ grew past
    the guess); with grow False a guess below the root is kept (see tilt_retry)."""
    def total(per, j):
        acc = items[0][1] * per[0][j]
        for (_, n), v in zip(items[1:], per[1:], strict=True):
            acc = acc + n * v[j]
        return acc

    def stationarity(lam):
        per = [_cgf(p, direction, lam, log_eta_top) for p, _ in items]
        tk, tk1, tk2 = total(per, 0), total(per, 1), total(per, 2)
        dlc, d2lc = -math.log1p(1.0 / lam), 1.0 / (lam * (lam + 1.0))
        if eps is None:
            g = lam * (tk1 + dlc) - (tk + _log_c_lambda(lam) - log_delta)
            gp = lam * (tk2 + d2lc)
        else:
            g = tk1 - eps + dlc
            gp = tk2 + d2lc
        return g, gp, per

    per0 = [_cgf(p, direction, 0.0, log_eta_top) for p, _ in items]
    per0 = [(k, m, max(v, 1e-300), top) for k, m, v, top in per0]
    steps, m0, v0 = items[0][1], per0[0][1], per0[0][2]
    if eps is None:
        guess = math.sqrt(max(-2.0 * log_delta, 1.0) / total(per0, 2))
    elif len(items) == 1:
        guess = (eps / steps - m0) / v0
    else:
        guess = (eps - total(per0, 1)) / total(per0, 2)
    lam_max = _LAM_MAX_DELTA if eps is None else _LAM_MAX_EPS
    lam = lam0 = min(max(guess, 1e-3), lam_max)
    lo_l, hi_l = 0.0, math.inf
    g, gp, kk = stationarity(lam)
    kk0 = kk
    for _ in range(200):
        if g < 0:
            lo_l = lam
        else:
            hi_l = lam
        # (an unbounded bracket is not a converged one: inf − lo ≤ 1e-12·inf held, and
        # every guess below the root was kept as it was)
        if abs(g) <= 1e-10 * (1.0 + abs(gp) * lam) or hi_l - lo_l <= 1e-12 * hi_l < math.inf:
            break
        if not math.isfinite(hi_l):
            if not grow or (eps is not None and total(kk, 0) - lam * eps
                            + _log_c_lambda(lam) < _GROW_LOG_DELTA_MIN):
                # (a δ whose Chernoff bound is already far below the double range needs
                # no tighter tilt: q 7e-6, σ 15, 26537 steps at ε 0.027 took 7 s at 4e5,
                # for e^-5336 in place of e^-2721)
                break
            nxt = lam * 2.0 if not (gp > 0 and math.isfinite(gp)) else \
                min(lam * 4.0, max(lam * 1.01, lam - g / gp))
            if nxt > 10.0 * lam_max:
                break
            g1, gp1, kk1 = stationarity(nxt)
            if g1 < 0 and _saturated(items, direction, kk1, eps, kk0):
                # the tilted law sits on the top of the quadrature's nodes with the root
                # still ahead: the nodes no longer see the tail that would carry it (q 0.77,
                # σ 67, add direction: T·K' levels off below ε), and the grid built for a
                # larger λ is empty.  Keep the last λ that the nodes still resolve.  So do
                # nodes that end below the root: the +∞ cut drops the tail that would carry
                # it (q 2.8e-7, σ 5.5, 6 steps at ε 0.046: the nodes sum to 1.3e-5, λ ran
                # from 1e5 to 4e5 and δ's upper end rose from e^-1569 to e^-82).  A
                # variance that collapses on a hard edge's atoms is no sign: 2 × (2.97, 0)
                # beside a Gaussian at δ 1e-30 kept λ = 6.5 and gave ε ≤ 12.5 (exact 6.04)
                break
            lam, g, gp, kk = nxt, g1, gp1, kk1
            continue
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
    return lam, kk, lam > lam0


def _tilted_cdf(pair: DominatingPair, direction: str, lam: float,
                log_eta_top: float | None):
    """(loss, normalised CDF) of the λ-tilted one-step law on the quantiles' nodes."""
    loss, _, lw = _sorted_nodes(pair, direction, lam, 20.0, 2000, log_eta_top)
    cdf = np.cumsum(np.exp(lw - lw.max()))
    cdf /= cdf[-1]
    return loss, cdf


def _tilted_quantiles(pair: DominatingPair, direction: str, lams, deep: float = 1e-30,
                      log_eta_top: float | None = None):
    """Loss values beyond which the tilted one-step law carries _TIER_LEVELS[k] of its mass
    (k = 0..3), then _EXTENT_LEVEL (the grid's least extent), below and above, for the most
    extreme of several tilts; the lower `deep` quantile of the smallest tilt.  Where no
    tilt gives them (λ = 0 only), the untilted median stands for the missing ones (its
    nodes are asked for then only: it was returned as well, which _level0 never read, at
    ~50 µs of each one-step grid)."""
    levels = [*_TIER_LEVELS, _EXTENT_LEVEL]
    lower = [math.inf] * len(levels)
    upper = [-math.inf] * len(levels)
    lo_deep = math.inf
    probes = np.array([deep, *levels, *(1 - v for v in levels)])
    # (each tilt once: a group of one step count has lams (λ, λ), and a second pass over
    # the same nodes leaves every min and max as it was)
    for lam in sorted(set(lams)):
        if lam == 0.0:
            continue
        loss, cdf = _tilted_cdf(pair, direction, lam, log_eta_top)
        # every quantile in one searchsorted (the same indices as one call each)
        at = loss[np.minimum(np.searchsorted(cdf, probes), cdf.size - 1)].tolist()
        lo_deep = min(lo_deep, at[0])
        for k in range(len(levels)):
            lower[k] = min(lower[k], at[1 + k])
            upper[k] = max(upper[k], at[1 + len(levels) + k])
    if not math.isfinite(lo_deep):      # λ = 0 only
        loss, cdf = _tilted_cdf(pair, direction, 0.0, log_eta_top)
        median = float(loss[min(np.searchsorted(cdf, 0.5), cdf.size - 1)])
        lo_deep = -math.inf
        lower = [median] * len(levels) if not math.isfinite(lower[0]) else lower
        upper = [median] * len(levels) if not math.isfinite(upper[0]) else upper
    return lower, upper, lo_deep


def _tier_positions(j_lo: int, j_hi: int, h: float, lower, upper,
                    max_stride: float = math.inf) -> np.ndarray:
    """Grid indices of the one-step atoms: stride 1 in the bulk, stride 4^k where the tilted
    tail beyond carries < _TIER_LEVELS[k − 1] of the mass (second-order error ∝ mass ×
    stride²)."""
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
    # the sorted distinct indices in [j_lo, j_hi] (a mask: np.unique hashes and sorts)
    keep = np.zeros(j_hi - j_lo + 1, dtype=bool)
    for piece in pieces:
        piece = piece[(piece >= j_lo) & (piece <= j_hi)]
        keep[piece - j_lo] = True
    return np.flatnonzero(keep) + j_lo


_INDEX_MAX = 2 ** 62   # the largest grid index _level0 places (int64 arrays, with room)


def _level0(pair: DominatingPair, direction: str, h: float, lo: float, hi: float,
            lams, max_stride=lambda h: math.inf, deep: float = 1e-30,
            log_eta_top: float | None = None, offset: float = 0.0, full: bool = True,
            fixed_h: bool = False, len_max: int = _N0_LEN_MAX, capped: list | None = None,
            half: bool = True):
    """Atom positions and tails at the atoms and at the bucket boundaries; nudges h off
    ill-conditioned thresholds.  Also returns whether the pessimistic side drops the mass
    below the grid (then the grid starts at the tilted `deep` quantile, above the untilted
    median: the untilted bulk far below the tilted one is not worth a grid).  The grid is
    ℓ_j = offset + j·h.  With fixed_h (a grid shared by several items of a plan) h only ever
    doubles and a nudge moves the offset alone, so h stays h_base·2^k.  ``len_max`` caps the
    lattice's length (a longer one takes a coarser h, still sound); ``capped``, a list, gets
    True appended when that cap set a coarser h than asked.  Without ``half`` (a caller that
    builds no buckets) the tails at the bucket boundaries are only checked to exist
    (t_half None): the grid is placed and nudged as with them."""
    lower, upper, lo_deep = _tilted_quantiles(pair, direction, lams, deep, log_eta_top)
    # the grid holds the tilted bulk (where δ comes from) as well as the untilted tails
    drop = lo_deep > lo
    lo = min(lo_deep if drop else lo, lower[-1])
    hi = max(hi, upper[-1])
    edge_lo, edge_hi = pair.loss_bounds(direction)
    if math.isfinite(edge_lo):
        lo = max(lo, edge_lo - 1.0)
    if math.isfinite(edge_hi):
        hi = min(hi, edge_hi + 1.0)
    nudges = 0
    for _ in range(40):
        j_lo = math.floor((lo - offset) / h) - 1
        j_hi = math.ceil((hi - offset) / h) + 1
        if max(abs(j_lo), abs(j_hi)) > _INDEX_MAX:
            # losses ~1e-13 on a grid of 5.5e-100 (q 1e-100: indices ~2e86, beyond the
            # int64 arrays the lattice is built in); the callers fall back below q 1e-12
            raise PLDUncertifiable("the one-step grid's indices leave the integer range")
        if j_hi - j_lo + 1 > len_max:
            h *= 2.0 if fixed_h else 1.05 * (j_hi - j_lo + 1) / len_max   # still sound
            if capped is not None and not capped:
                capped.append(True)
            continue
        jpos = _tier_positions(j_lo, j_hi, h, [v - offset for v in lower[:4]],
                               [v - offset for v in upper[:4]], max_stride(h))
        if jpos.size > _N0_MAX:
            h *= 2.0 if fixed_h else 1.1 * math.sqrt(jpos.size / _N0_MAX)
            continue
        ell = offset + jpos.astype(float) * h
        mids = 0.5 * (ell[:-1] + ell[1:])
        defined = getattr(pair, "tails_defined", None)
        if full and half and defined is not None:
            # both sets of thresholds in one call, split after (a pair with tails_defined
            # answers point by point: the same doubles, ~80 µs of per-call work saved)
            t_full, t_half = _tails_parts(pair.tails(np.concatenate((ell, mids)), direction),
                                          ell.size)
            has_half = t_half is not None
        else:
            t_full = pair.tails(ell, direction) if full else None
            if half:
                t_half = pair.tails(mids, direction)
                has_half = t_half is not None
            else:
                # a pessimistic side alone reads no boundary tails, but the nudges below
                # must be the same: whether the pair answers there, asked of its cheap test
                # where it has one (the subsampled Gaussian: 1 of its ~6.5 tails calls per
                # batch line, the add direction's boundaries, was computed for nothing)
                t_half = None
                has_half = (defined(mids, direction) if defined is not None
                            else pair.tails(mids, direction) is not None)
        if (t_full is not None or not full) and has_half:
            drop_ok = drop and full
            return h, offset, j_lo, j_hi, jpos, ell, t_full, t_half, drop_ok
        nudges += 1
        if nudges > 8:
            break
        if not fixed_h:
            h *= 1.0 + 2.0 ** -18
        offset += h * 2.0 ** -12 * nudges
    raise PLDUncertifiable("cannot place the one-step grid")


def _tails_parts(both: Tails | None, n: int) -> tuple[Tails | None, Tails | None]:
    """The tails of the first n thresholds and of the rest, from one call's (None, None if
    it did not answer); an array two fields share stays shared (its readers test that)."""
    if both is None:
        return None, None
    fields = [getattr(both, f.name) for f in dataclasses.fields(Tails)]
    parts = {id(v): (v[:n], v[n:]) for v in fields}
    return (Tails(*(parts[id(v)][0] for v in fields)),
            Tails(*(parts[id(v)][1] for v in fields)))




@dataclass
class _Side:
    engine: _Engine
    c: float
    lpinf: float
    h0: float
    lam: float
    off: float = 0.0     # one-step grid offset: after k steps ℓ_j = k·off + j·h
    capped: bool = False  # its one-step lattice's length cap set a coarser h than asked


_EDGE_GATE = 0.25        # (see dpcalc.pld.sides)


@dataclass
class _Plan:
    """Tilt and budgets of one direction for one group of step counts."""

    lam: float
    var: tuple[float, ...]       # per item of the plan (the varying item last): K''(λ)
    lam_range: tuple[float, float]
    tau: float
    log_eta_top: float | None = None   # one-step P-mass above this goes to +∞ (heuristics)
    nwin: int = _NWIN_MAX              # cap on the composed vectors' length (coarser: sound)
    split_noise: float = _SPLIT_NOISE_GUESSED   # the squarings' split gate (pmf._noisy)
    bulk_h: float = math.inf           # the varying item's spacing cap from _bulk_h
    len_max: int = _N0_LEN_MAX         # cap on the one-step lattice's length (_level0)
    # the grid offset next to a hard edge: searched (discretise._edge_offset) or, for a
    # scout's pessimistic bound (eps_search._scout), its first candidate
    edge_search: bool = True
    # the optimistic side's gate for the edge's buckets (see sides; lower on a refinement's
    # passes, sides._EDGE_GATE_FINE)
    edge_gate: float = _EDGE_GATE


def _grid_h(pair: DominatingPair, direction: str, var: float, lam: float, rho: float,
            log_eta: float, nwin: int = _NWIN_MAX, bulk_h: float = math.inf) -> float:
    """The one-step grid spacing asked for at resolution ρ (before the caps of _level0)."""
    lo, hi = pair.support(direction, log_eta)
    std = math.sqrt(var) if var > 0 else (hi - lo) / 100.0
    # the δ integrand varies on the scale 1/λ as well as on the scale of the law itself:
    # every grid keeps λ·h ≤ _LAMH·ρ (a coarser grid would move mass by more than 1/λ,
    # i.e. change its tilted weight by a factor e^{λh}; the errors are ∝ (λh)²)
    scale = min(std, 1.0 / lam) if lam > 0 else std
    return max(min(rho * scale, bulk_h), (hi - lo) / (nwin - 8))
