"""The one-step PLDs of one direction, tilted, as composition engines (_make_sides): the
pessimistic side by connect-the-dots [DGKKM22, Alg. 1], the optimistic one by buckets, with
the edge's buckets cut for a clump of loss next to a hard lower edge (log(1 − q) of the
subsampled Gaussian's remove direction).

Heuristics throughout, as in dpcalc.pld.plan: the cuts, strides and offsets only choose which
losses merge into which atom; discretise._bucket_level0 / _clump_level0 certify every atom.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from dpcalc.pld._core import _LAMH, _U, PLDUncertifiable, _logsumexp
from dpcalc.pld.discretise import (
    _bucket_level0,
    _clump_cuts,
    _clump_level0,
    _ctd_level0,
    _edge_offset,
    _log_tilted_below,
)
from dpcalc.pld.pair import DominatingPair
from dpcalc.pld.plan import _EDGE_GATE, _grid_h, _level0, _pd, _Plan, _Side, _sorted_nodes
from dpcalc.pld.pmf import _Dist, _Engine, _truncate

_MIN_NORMAL = 2.0 ** -1022      # below it a double is subnormal (or 0)
_SUBNORMAL_ERR = 2.0 ** -1073   # ≥ the rounding error of a result in the subnormal range

_CLUMP_MASS = 0.5       # merge where this much P-mass lies within 2 cells of the edge
_CLUMP_CELLS = 4        # buckets on the clump's stride next to the edge
# A clump next to the edge a few cells wide (less than _CLUMP_MASS within 2 cells, e.g. the
# remove direction at q 1.23e-4, σ 0.73: a log-normal in L − log(1 − q) peaking within the
# first cell) is no narrow clump, but the plain buckets lower its lowest bucket on every
# step: that bucket's ratio lies above its grid point and no bucket below can take its
# excess (_bucket_plan), ~0.0035h of P-mean per step there, and the first coarsenings do
# the same to the composed edge.  At 1,430,895 steps, δ 1e-5 that is T·λ·0.0035h ≈ 0.7 in
# log δ: the lower end 1.3075 for an upper end 1.3394 (the PRV accountant: 1.3389).  There
# the edge's buckets are cut as the narrow clump's, on stride _EDGE_STRIDE (the first
# coarsening's grid; strides 1 and 4 were looser there): lower end 1.3380.  Only where the
# plain buckets' lowering T·λ·(P-mean lowering per step, _edge_offset) is at least
# _EDGE_GATE in log δ (plan.py: 0.25; elsewhere the extra build is not worth its time; but
# see _EDGE_GATE_FINE) and at least
# T·(λh)², the order of what the stride's wider buckets and every coarsening cost in log δ
# (far in the tail, λh large: q 4.9e-4, σ 1.43, 1.5e6 steps at δ 1.4e-160, λh 0.0027, the
# stride-2 buckets cost 2.9 in the one-step tilted mass for 1.9 saved at the first
# coarsening).  A heuristic: either choice is sound (cuts and strides only choose which
# losses are merged into which atom, and _bucket_level0 certifies every placement).
_EDGE_STRIDE = 2
# On a refinement's passes (eps_search: ρ below the first), whose optimistic sides exist
# to narrow a bracket the first pass left wide, the gate is _EDGE_GATE_FINE: at q 4.23e-4,
# σ 0.57, 368,795 steps the finer pass's smaller h makes the clump wide, with a lowering of
# 0.094, and its plain buckets gave a lower end of 5.6827 for the first pass's 5.7014 (on
# the narrow clump's stride, _drift_stride): the refinement stalled above the tolerance;
# on the edge's buckets 5.7060, final.  0, as the lowering's estimate can be far below the
# loss (helper-28: q 2.4e-5, σ 0.637, 11,144 steps, where the clump's near mass is 0.499:
# 8.9e-4 estimated, and the bracket stayed 11.8 % wide; 0.48 % with the edge's buckets;
# q 5.93e-4, σ 0.657, 25,296 steps: 2.6e-3 -> 7.9e-4 wide, 0.40 -> 0.30 s), and the edge's
# buckets cost little beside a refinement's compositions (the edge_cost term stays).  At
# the first pass it stays _EDGE_GATE: at q 0.0043, σ 1.1, 14,000 steps the build took the
# time from 39 to 56 ms for a lower end 8e-6 higher.
_EDGE_GATE_FINE = 0.0
_DRIFT = 2.0            # the narrow clump's stride: (h/median)^_DRIFT (_drift_stride)


def _clump_plan(pair: DominatingPair, direction: str, lam: float, h: float, stride: int,
                log_eta_top: float | None, edge_loss=None, edge_cost: float = math.inf,
                gate: float = _EDGE_GATE):
    """(edge, number of further buckets, stride, narrow) of the optimistic side's clump next
    to a hard lower edge (discretise._clump_cuts), or None.  Heuristic (any choice is
    sound): a clump narrower than the grid (at least _CLUMP_MASS of the P-mass within 2h of
    the edge, by the pair's quadrature; narrow = True) gets buckets on a coarser grid, at
    most the final one (stride; see _drift_stride), so that the composed clump is not
    lowered at every coarsening.  A wider one gets buckets on stride min(stride,
    _EDGE_STRIDE) where edge_loss() (the plain buckets' lowering in log δ, called only then)
    is at least max(gate, edge_cost)."""
    edge, top = pair.loss_bounds(direction)
    if not math.isfinite(edge) or math.isfinite(top) or stride < 2:
        return None            # (two edges: the grid is aligned with both, see _make_sides)
    loss, lw0, _ = _sorted_nodes(pair, direction, lam, 10.0, 600, log_eta_top)
    if loss.size == 0:
        return None
    w0 = np.exp(lw0 - lw0.max())
    near = float(w0[loss <= edge + 2.0 * h].sum()) / float(w0.sum())
    if not near >= _CLUMP_MASS:
        # a clump a few cells wide: buckets on the first coarsening's grid, where the
        # plain buckets would lower the edge's mass enough to matter (see _EDGE_GATE)
        if _EDGE_STRIDE > 1 and edge_loss is not None and _edge_pays(edge_loss(), edge_cost, gate):
            return edge, _CLUMP_CELLS, min(stride, _EDGE_STRIDE), False
        return None
    cw = np.cumsum(w0)
    median = float(loss[min(loss.size - 1, int(np.searchsorted(cw, 0.5 * cw[-1])))]) - edge
    return edge, _CLUMP_CELLS, _drift_stride(stride, h, median), True


def _drift_stride(stride: int, h: float, median: float) -> int:
    """The narrow clump's stride, in cells of h: the power of two at least (h/median)^_DRIFT
    (median: the clump's P-median distance from the edge), at least 2 and at most the
    final grid's (``stride``).

    On the final grid's stride, bucket 0 can be far wider than the clump (q 4.23e-4, σ 0.57:
    128 cells, ~17q, holding ~99 % of the tilted mass as one atom at every step), and the
    first pass's lower end came out 2–22 % low at δ 1e-5 (5.189 for an upper end 5.711
    there; brackets up to 7.5 % wide after refining, at q 1.14e-4, σ 0.583, 789,474 steps).
    A narrower stride lowers the composed clump at the coarsenings beyond it instead; that
    costs little once the clump has drifted off the edge (its distance from the composed
    edge grows like n·median, its cells like √n·h: after about (h/median)² steps).  The
    best strides measured (first-pass lower ends, h/median: best) grow about so:
    0.54: 2, 0.70: 2, 1.13: 4, 1.81: 4, 8.6: 16, 10.9: ≥ 64, 12.5: ≥ 32 (δ e^-215),
    17.5: 256 (q 1e-6, σ 0.6, 10⁷ steps: 0 below it), 20: ≥ 32.  (h/median)² picks the
    best or the next power of two below it where that is small (5.701 at q 4.23e-4), and
    the final grid's stride where the best is large; at 8.6 (q 5e-5, σ 0.5) it keeps the
    final grid's 128, as before (2.084 for the best 2.176).  Heuristic: any stride is
    sound (it only chooses which losses merge into which atom; _clump_level0 certifies
    each)."""
    if not (median > 0.0 and 0.0 < h / median < 2.0 ** 30):
        return stride         # (no median, or a ratio whose square is not a usable power)
    return min(stride, max(_EDGE_STRIDE, 1 << max(0, math.ceil(_DRIFT * math.log2(h / median)))))


def _edge_pays(loss: float, cost: float, gate: float) -> bool:
    """Whether the plain buckets' lowering at the edge (log δ) calls for the edge buckets."""
    return loss >= max(gate, cost)


def _make_sides(pair: DominatingPair, direction: str, plan: _Plan, rho: float,
                t_max: int, log_eta: float, sides=(True, False), item: int = -1,
                h_fixed: float | None = None) -> dict[bool, _Side]:
    """One-step PLDs (pessimistic / optimistic) of one direction, tilted, as engines.

    item indexes plan.var; h_fixed (a plan of several items) fixes the spacing up to powers
    of two, so that every item's grid is h_base·2^k."""
    # (an unsearched edge offset, a scout's, would also turn the optimistic edge gate off)
    assert plan.edge_search or False not in sides, "an optimistic side searches its offset"
    direction = _pd(pair, direction)
    lo, hi = pair.support(direction, log_eta)
    lam = plan.lam
    bulk = plan.bulk_h if item in (-1, len(plan.var) - 1) else math.inf
    h = h_fixed if h_fixed is not None else _grid_h(pair, direction, plan.var[item], lam,
                                                     rho, log_eta, plan.nwin, bulk)
    edge_lo, edge_hi = pair.loss_bounds(direction)
    if h_fixed is None and math.isfinite(edge_lo) and math.isfinite(edge_hi) \
            and edge_hi > edge_lo:
        # both edges finite (atoms at both ends, e.g. Laplace): a whole number of cells
        # between them, so that the offset that aligns one edge aligns the other too
        h = (edge_hi - edge_lo) / math.ceil((edge_hi - edge_lo) / h)
    lamh_max = _LAMH * rho
    deep = max(1e-300, 1e-3 * plan.tau / max(1, t_max))

    def stride(hh):
        return max(1.0, lamh_max / (lam * hh)) if lam > 0 else math.inf

    def levels(hh):      # coarsenings allowed while λ·h ≤ _LAMH·ρ
        # (the slack: a grid set by 1/λ, h = ρ/λ, has the ratio _LAMH = 2 exactly, whose
        # rounding gave log2 = 0.9999999999999999 or 1.0 for inputs one ulp apart, so 0 or
        # 1 coarsenings: the bound jumped by 6e-4 between σ = 1.169 and its neighbour, and
        # solvers chased the jumps; any count is sound)
        return (int(math.floor(math.log2(lamh_max / (lam * hh)) + 1e-9)) if lam > 0
                and lamh_max > lam * hh * (1 - 1e-9) else (0 if lam > 0 else 1 << 30))

    grids = {}
    edge_off: list = []

    def edge_offset():
        """(_edge_offset's grid offset for h, its P-mean lowering per step), computed once."""
        if not edge_off:
            low: list = []
            edge_off.append((_edge_offset(pair, direction, h, low, plan.edge_search),
                             low[0] if low else 0.0))
        return edge_off[0]

    def clump_stride(hh):      # the final grid's cells, in cells of hh
        return 1 << min((max(1, t_max).bit_length() - 1) // 2, levels(hh), 30)

    def edge_loss(hh):         # the plain buckets' lowering at the edge, in log δ (∝ hh)
        return lam * t_max * edge_offset()[1] * (hh / h)

    def edge_cost(hh):         # what wider buckets and every coarsening cost, in log δ
        return t_max * (lam * hh) ** 2

    if False in sides:
        cp = _clump_plan(pair, direction, lam, h, clump_stride(h), plan.log_eta_top,
                         lambda: edge_loss(h), edge_cost(h), plan.edge_gate)
        hh = h
        for _ in range(2):
            cc = _clump_cuts(pair, direction, hh, cp[2], *cp[:2]) if cp is not None else None
            if cc is None:
                break
            g = _level0(pair, direction, hh, lo, hi, plan.lam_range, max_stride=stride,
                        deep=deep, log_eta_top=plan.log_eta_top, offset=cc[0], full=False,
                        fixed_h=h_fixed is not None, len_max=plan.len_max)
            if g[0] != hh and not cp[3]:
                # the edge's buckets: _level0's size cap chose a coarser spacing, for
                # which the cuts are made again, once, and the gate asked again (q 1.2e-5,
                # σ 0.97, 8,351,372 steps: lower end 0.15189 -> 0.15228, one pass instead
                # of two).  A narrow clump keeps its old rule, no retry (q 3e-6, σ 0.9, 1e7
                # steps, δ 1e-60: a retried clump composed an optimistic side _OptGate
                # skips otherwise, 2.9 s for 1.8 s).  Sound either way: spacing, stride and
                # cuts only choose which losses merge into which atom; _bucket_level0
                # certifies every atom as for any grid
                hh = g[0]
                cs = clump_stride(hh)
                keep = cs >= 2 and _edge_pays(edge_loss(hh), edge_cost(hh), plan.edge_gate)
                cp = (cp[0], cp[1], min(cs, _EDGE_STRIDE), False) if keep else None
                continue
            got = (_clump_level0(pair, direction, g[5], g[4], g[7], cc[0], hh, cp[2], cc[1])
                   if g[0] == hh and g[1] == cc[0] else None)
            if got is not None:
                grids[False] = g[:4] + got[:2] + (got[2:],)
            break
    capped: list = []
    if True in sides or False not in grids:
        off = edge_offset()[0]
        h_s, off, j_lo, j_hi, jpos, ell, t_full, t_half, drop = _level0(
            pair, direction, h, lo, hi, plan.lam_range, max_stride=stride, deep=deep,
            log_eta_top=plan.log_eta_top, offset=off, fixed_h=h_fixed is not None,
            len_max=plan.len_max, capped=capped, half=False in sides and False not in grids)
        if True in sides:
            grids[True] = (h_s, off, j_lo, j_hi, jpos, ell,
                           _ctd_level0(ell, t_full, direction == "remove", drop), drop)
        if False in sides and False not in grids:     # (an upper-only pass builds none)
            grids[False] = (h_s, off, j_lo, j_hi, jpos, ell, _bucket_level0(ell, t_half))
    out = {}
    for pess in sides:
        h, off, j_lo, j_hi, jpos, ell, got = grids[pess][:7]
        s_max = levels(h)
        n = j_hi - j_lo + 1
        if pess:
            (lp, lpi, lr), drop = got, grids[pess][7]
        else:
            (lp, lr), lpi = got, -math.inf
        la = lp + lam * ell
        c = _logsumexp(la)
        if not math.isfinite(c) and not pess:
            # no bucket certainly at or above its grid value (q 0.3, σ 20, one step far in
            # the tail): the optimistic side is left out, as the gate leaves it out, and
            # the lower end stays at its trivial value; the upper end needs only the other
            continue
        if not math.isfinite(c):
            raise PLDUncertifiable("empty one-step PLD")
        with np.errstate(invalid="ignore", over="ignore"):
            ta = np.exp(la - c)
            # relative error of the tilted masses: exp/log rounding plus that of the masses
            rel = 4 * _U * (np.abs(la - c) + 2.0) + np.exp(lr)
        rel = np.where(np.isfinite(rel), rel, 0.0)
        t = np.zeros(n)
        t[jpos - j_lo] = ta
        # a mass that underflowed to 0 or to a subnormal (exact value below 2^-1022) carries
        # an absolute error of at most 2^-1074 (IEEE 754 rounding in the subnormal range),
        # not a relative one: charged per such entry, in ℓ1 and ℓ∞
        tiny = int(np.count_nonzero(ta < _MIN_NORMAL))
        tr = ta * rel
        e1 = float(tr.sum()) + tiny * _SUBNORMAL_ERR
        if pess and drop:
            # the dropped mass below ℓ_0 is paid for as tilted ℓ1 error
            lb = _log_tilted_below(pair, direction, float(ell[0]), lam, lo) - c
            if lb > 700.0:
                # (e^lb as an ℓ1 error is no bound at all; min(lb, 700) was not one)
                raise PLDUncertifiable("cannot bound the dropped lower tail")
            e1 += math.exp(lb)
        base = _Dist(j_lo, 0, t, 0.0, e1, float(tr.max()) + _SUBNORMAL_ERR)
        base = _truncate(base, plan.tau / max(1, t_max), pess)
        nz = np.nonzero(base.t)[0]
        base = replace(base, lo=base.lo + int(nz[0]), t=base.t[nz[0]:nz[-1] + 1], noise=0.0)
        out[pess] = _Side(_Engine(base, h, lam, pess, t_max, plan.tau, s_max, plan.nwin,
                                  plan.split_noise),
                          c, lpi, h, lam, off, capped=pess and bool(capped))
    return out
