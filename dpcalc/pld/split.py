"""Two-resolution compositions of a one-step PLD whose tail is long and light.

At small sampling rates the one-step privacy loss has a narrow bulk (its grid spacing, a
fraction of its width, is what the accuracy needs) and a tail that reaches far beyond it
with a tiny share of the mass: q = 1.2e-4, σ = 0.73 at δ = 1e-5 keeps 1 − 1e-6 of the
tilted mass within 2,400 of its 217,000 grid points, and the FFTs of those long vectors
are most of the work of such a run.  Here the one-step vector is split into its bulk B, on
the engine's fine grid, and the rest U, coarsened to a grid 2^su times coarser: by
connect-the-dots [DGKKM22] on the pessimistic side, by bucket merging on the optimistic
one, where the rest's share is capped otherwise (see _plan).  A composition is kept as the pair
(B^{*m}, the rest), the rest on the coarse grid:

    (B + U)^{*2} = B*B + (2·B'*U + U*U),   B' = B coarsened to the coarse grid,

until the bulk's own grid reaches the coarse one; then the two parts are added.  This is
exact algebra on measures: the composed measure is the sum of the parts, each part the
measure of a set of outcome sequences (which steps fell in the tail), and δ(ε) is linear in
the measure.  Coarsening B inside B'*U alone, or U once, is a post-processing of that part:
it moves no bound to the wrong side, since the pessimistic coarsening is a mean-preserving
spread in e^{−ℓ} of the atoms of one factor (δ(ε) = E[(1 − e^{ε−L})_+] is convex there),
and the optimistic one merges atoms into buckets placed no higher (a post-processing that
only lowers the losses).
Error terms add through _conv and _add; each part is truncated at half the engine's
threshold, so the truncation budget is unchanged.

The optimistic side's coarsenings lose where they cannot balance a merge: at the rest's
cut edges (hence _soft_split's ramp) and on a spiky bulk (the clump next to the remove
direction's edge, a few atoms two cells apart).  Below _OPT_WIDE_MIN points it keeps the
caps that bound that loss (_plan); from there on it takes the pessimistic side's caps, and
a spiky bulk's cross terms add its heaviest atoms as shifted copies of the rest, merged onto
the rest's grid by pld.regrid (_cross): log-uniform batch lines of q ~1e-4, whose optimistic
refinements on 469,465-point vectors were most of a second, split there too (a third less
time), their lower ends within 1.1e-4 of the unsplit side's (most within 2e-5: the points
of benchmarks/bench_brackets.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.pld.pmf import _conv as _conv_any
from dpcalc.pld.pmf import _Dist, _normalise, _truncate

_THETAS = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3)   # shares of tilted mass left to the rest
_SHARE = 0.01         # the rest's extra error: at most this share of the bulk's (see _plan)
_OPT_SHARE = 1e-4     # the optimistic side's bounds on θ·2^su
_OPT_MASS = 8.0       # and on T·θ·2^su (see _plan)
_OPT_WIDE_MIN = 65536  # from this length, the pessimistic side's caps (see the module)
_OPT_TOP = 0.1         # ... unless a run meets its top cells more often (see _wide)
_GAIN = 4             # split only when the level-0 vectors get 4 times shorter
_U_MIN_LEVELS = 2     # and the rest can be at least 2^2 times coarser
_BULK_MIN = 256       # and the bulk keeps at least this many points: a bulk of a few dozen
#                       (q·T ≲ 2, a one-step spike) is convolved directly (bound 2mu per
#                       product) and truncated at its edges, and its ℓ1 error term came out
#                       above the single grid's where that term sets the upper end (review,
#                       helper-38: q 1.9e-6, σ 0.67, 833,448 steps, 62 points: +1.24 %)


_DIRECT_MAX = 128       # shorter operands of at most this length: direct convolution
_RAMP = 8               # an optimistic split's ramp, in cells of the rest's grid (_soft_split)
_CROSS_HEAVY = 64       # a spiky bulk's atoms added as shifted copies (split._cross), at most
_CROSS_LIGHT = 1e-3     # and until this share of its mass is left to the coarsened rest
_LOSSY_CELLS = 0.05     # a bulk whose coarsening lowers its P-mean more takes that path


def _conv(a: _Dist, b: _Dist, budget: float = 0.0) -> _Dist:
    """pmf._conv for the short bulk vectors: a spike of a hundred points has an FFT
    round-off bound ~1e-12 of its mass (a-priori, ∝ ‖a‖₁‖b‖₂√n), where the single-grid
    engine, on long vectors, convolves the largest entries exactly (pmf._heavy).  Here the
    shortest are convolved directly (bound 2mu, m ≤ _DIRECT_MAX) and the others look for
    their largest entries at any length (q = 1e-4, σ = 0.8: the ℓ1 error term grew 15× and
    ε +1.5 % without)."""
    return _conv_any(a, b, budget, direct_max=_DIRECT_MAX, heavy_min=0)


@dataclass
class _Split:
    b: _Dist           # the bulk's composition, on the fine grid (level b.s < su)
    u: _Dist | None    # everything else, on grid level su
    su: int
    phased: bool = False   # an optimistic split on the wide caps: its bulk's cross terms by
    #                        phases where its coarsening would lower it (_cross)


def _cross(eng, b: _Dist, u: _Dist, budget: float = 0.0, phased: bool = False,
           u_first: bool = False) -> _Dist:
    """b*u on u's level (b: a bulk on a finer or the same level).  The pessimistic side, and
    an optimistic one whose bulk merges onto u's grid with little loss, coarsen b first
    (pmf._coarsen_*).  A spiky bulk (a clump on a few atoms next to the remove direction's
    edge) would lose up to a coarse cell of loss there on every squaring the split lasts
    (q 5.93e-4, σ 0.657: its P-mean fell by 0.7 to 2.2 fine cells a time); its heaviest
    atoms are instead added as shifted copies of u, one sum per phase (the atoms' offset
    within a coarse cell), each then merged onto u's grid by regrid.regrid_opt, whose
    merges of a smooth vector cost no loss of first order; the light rest is coarsened.
    (``u_first``: the plain product as u*b, the operands' order of before.)"""
    bc = eng.to_grid(b, u.s)
    if eng.pess or not phased or b.s >= u.s or not _lossy(eng, b, bc):
        return _conv(u, bc, budget) if u_first else _conv(bc, u, budget)
    from dpcalc.pld.regrid import regrid_opt

    stride = 1 << (u.s - b.s)
    t = b.t
    order = np.argsort(t)[::-1][:_CROSS_HEAVY]
    total = float(t.sum())
    keep = np.cumsum(t[order]) <= (1.0 - _CROSS_LIGHT) * total
    keep[0] = True
    heavy = order[keep]
    light = t.copy()
    light[heavy] = 0.0
    parts = []
    if float(light.sum()) > 0.0:
        rest = _strip(_Dist(b.lo, b.s, light, b.logscale, b.e1, b.einf))
        if rest is not None:
            parts.append(_conv(eng.to_grid(rest, u.s), u, budget))
    glob = b.lo + heavy
    cell, phase = glob // stride, glob % stride
    n1u, mxu = float(u.t.sum()), float(u.t.max())
    h_b = eng.h0 * 2.0 ** b.s
    for r in np.unique(phase):
        sel = phase == r
        idx, cs = heavy[sel], cell[sel]
        base = int(cs.min())
        out = np.zeros(u.t.size + int(cs.max()) - base)
        tmp = np.empty(u.t.size)
        for k, c in zip(idx, cs, strict=True):
            out[c - base:c - base + u.t.size] += np.multiply(t[k], u.t, out=tmp)
        n1a, mxa = float(t[idx].sum()), float(t[idx].max())
        ea1 = min(b.e1, idx.size * b.einf)         # these atoms' ℓ1 input error
        m = idx.size + 2
        g = 2 * m * _U / (1 - m * _U)              # the copies' sums, as pmf._conv's
        e1 = ea1 * n1u + n1a * u.e1 + ea1 * u.e1 + g * n1a * n1u
        einf = (min(b.einf * n1u, ea1 * mxu) + min(n1a * u.einf, mxa * u.e1)
                + min(b.einf * u.e1, ea1 * u.einf) + g * (mxa * n1u + mxu * n1a))
        v = _Dist(u.lo + base, u.s, out, b.logscale + u.logscale, e1 * (1 + 8 * _U),
                  einf * (1 + 8 * _U))
        if r:
            v = regrid_opt(v, int(r) * h_b, int(stride - r) * h_b, eng.lam)
        parts.append(_normalise(v, own=True))
    acc = parts[0]
    for p in parts[1:]:
        acc = _add(acc, p)
    return acc


def _lossy(eng, b: _Dist, bc: _Dist) -> bool:
    """Whether the optimistic coarsening bc of b lowered b's P-mean loss by more than
    _LOSSY_CELLS cells of b's grid (a heuristic: either path is sound)."""
    h = eng.h0 * 2.0 ** b.s
    x = np.arange(b.t.size) * h
    p = b.t * np.exp(-eng.lam * x)
    xc = (bc.lo - b.lo * 2.0 ** (b.s - bc.s)) * (eng.h0 * 2.0 ** bc.s) \
        + np.arange(bc.t.size) * (eng.h0 * 2.0 ** bc.s)
    with np.errstate(over="ignore", invalid="ignore"):
        pc = bc.t * np.exp(-eng.lam * xc + (bc.logscale - b.logscale))
        shift = float((pc * xc).sum()) / float(pc.sum()) - float((p * x).sum()) / float(p.sum())
    return not shift >= -_LOSSY_CELLS * h


def _add(x: _Dist, y: _Dist) -> _Dist:
    """x + y on one grid level, with their error terms.  Each entry is scaled to the common
    logscale and added: the scale factor e^r, r = logscale − top ≤ 0, carries the rounding
    of r (≤ u·|r|, which e^r turns into a relative error u·|r|) and of exp (≤ 2u); the
    product and the sum add 2u: (|r| + 7)u relative per part covers it (a bare 7u, as
    first written, ignored |r|)."""
    assert x.s == y.s
    top = max(x.logscale, y.logscale)
    rx, ry = x.logscale - top, y.logscale - top
    fx, fy = math.exp(rx), math.exp(ry)
    lo = min(x.lo, y.lo)
    hi = max(x.lo + x.t.size, y.lo + y.t.size)
    t = np.zeros(hi - lo)
    t[x.lo - lo:x.lo - lo + x.t.size] += x.t * fx
    t[y.lo - lo:y.lo - lo + y.t.size] += y.t * fy
    gx, gy = (abs(rx) + 7.0) * _U, (abs(ry) + 7.0) * _U
    n1 = gx * fx * float(x.t.sum()) + gy * fy * float(y.t.sum())
    mx = gx * fx * float(x.t.max(initial=0.0)) + gy * fy * float(y.t.max(initial=0.0))
    # the carried bounds are scaled by the same rounded e^r (review, helper-38: (1 + 8u)
    # alone under-counted them by up to |r|u)
    e1 = (fx * x.e1 * (1 + gx) + fy * y.e1 * (1 + gy) + n1) * (1 + 8 * _U)
    einf = (fx * x.einf * (1 + gx) + fy * y.einf * (1 + gy) + mx) * (1 + 8 * _U)
    return _normalise(_Dist(lo, x.s, t, top, e1, einf, fx * x.noise + fy * y.noise), own=True)


def _quiet(d: _Dist) -> _Dist:
    """d without its round-off figure, so that _truncate drops at τ only (sound at any
    threshold: a dropped mass is paid in e1 on the pessimistic side)."""
    return _Dist(d.lo, d.s, d.t, d.logscale, d.e1, d.einf, 0.0)


def _strip(d: _Dist) -> _Dist | None:
    nz = np.nonzero(d.t)[0]
    if nz.size == 0:
        return None
    return _Dist(d.lo + int(nz[0]), d.s, d.t[nz[0]:nz[-1] + 1], d.logscale, d.e1, d.einf,
                 d.noise)


def _plan(cs: np.ndarray, s_top: int, pess: bool = True, steps: int = 1):
    """(cost, i0, i1, su): the bulk window [i0, i1) and the rest's level su that make the
    level-0 vectors shortest (bulk + rest/2^su).  The rest's share θ of the tilted mass
    is coarsened to a grid 2^su times the bulk's: at λh ≤ _LAMH·ρ its error per step is
    about θ·4^su times the bulk's (λh)²/8 (the CTD error is second order in λh), so θ·4^su
    ≤ _SHARE keeps it that share of the engine's own.  (At 0.1 the upper ends of the
    small-q references rose by up to 2.5e-3 relative; at 0.01 they move by < 1e-5, most
    of them down: the short vectors' round-off bounds are smaller.)

    Bucket merging, the optimistic coarsening, moves each atom down by up to its cell: an
    error of first order in λh_su, paid by the part of the composition holding a tail step
    (about T·θ of its mass, ``steps`` = T, with the bulk coarsened to su in each of its
    products), so the optimistic side keeps θ·2^su ≤ _OPT_SHARE and T·θ·2^su ≤ _OPT_MASS,
    both set by measurement.  At θ·4^su ≤ 0.01 the lower ends of 83 DP-SGD questions at δ
    = 1e-5 (benchmarks/bench_batch.py's law) fell by up to 5.1e-4 relative, where δ(ε)
    is flat (a δ 1.7e-5 lower); at θ·2^su ≤ 1e-4 by up to 8.7e-5, but by 3.1e-3 at q 1e-5,
    σ 0.5, 10⁶ steps, where T·θ·2^su = 32 (helper-12); of 21 questions split that way the
    ones at T·θ·2^su ≤ 8 fell by at most 2.5e-5, those at 14 to 96 by 3.4e-5 to 3.1e-3.
    The upper ends move by less than 1e-6 (the refinement decides on the width).
    ``pess``: the pessimistic side's caps (an optimistic side of _OPT_WIDE_MIN points or
    more takes them too, its losses bounded otherwise: see the module)."""
    n, tot = cs.size, float(cs[-1])
    best = (n, 0, n, 0)
    for theta in _THETAS:
        i0 = int(np.searchsorted(cs, 0.5 * theta * tot))
        i1 = min(n, int(np.searchsorted(cs, (1 - 0.5 * theta) * tot)) + 1)
        cap = (int(math.floor(math.log(_SHARE / theta, 4))) if pess
               else int(math.floor(math.log2(min(_OPT_SHARE, _OPT_MASS / steps) / theta))))
        su = min(s_top, cap,
                 max(0, math.ceil(math.log2(n / max(1, i1 - i0)))))
        if su < _U_MIN_LEVELS or i1 - i0 < _BULK_MIN:
            continue
        cost = (i1 - i0) + n / 2 ** su
        if cost < best[0]:
            best = (cost, i0, i1, su)
    return best


def _soft_split(base: _Dist, i0: int, i1: int, ramp: int) -> tuple[_Dist, _Dist | None]:
    """(bulk, rest) of an optimistic one-step vector: the bulk takes the window [i0, i1)
    whole and a share w of the ramp cells each side, w falling from 1 to 0 as a raised
    cosine; the rest takes 1 − w.  A hard cut left the rest a hole whose edges its
    bucket merging (pmf._coarsen_opt) could not balance: the rest's P-mean fell by 1.6
    cells of the fine grid on coarsening (q 1.94e-4, σ 1.99, 659,794 steps), 0.012 with
    _RAMP coarse cells of ramp.  A split of every atom's mass into two measures is exact
    algebra as the window's: bulk = w·t rounds each entry by ≤ u, and rest = t − bulk (≥ 0,
    w ≤ 1) by ≤ u once more; the exact parts are w·t_exact and t_exact − w·t_exact."""
    t = base.t
    n = t.size
    j0, j1 = max(0, i0 - ramp), min(n, i1 + ramp)
    k = np.arange(1, ramp + 1) / (ramp + 1.0)
    k = 0.5 - 0.5 * np.cos(np.pi * k)                   # 0 < k < 1, rising
    w = np.ones(j1 - j0)
    w[:i0 - j0] = k[ramp - (i0 - j0):]
    w[w.size - (j1 - i1):] = k[::-1][:j1 - i1]
    bt = t[j0:j1] * w
    rest = t.copy()
    rest[j0:j1] = t[j0:j1] - bt
    n1, mx = float(t.sum()), float(t.max())
    bulk = _Dist(base.lo + j0, base.s, bt, base.logscale, base.e1 + _U * n1,
                 base.einf + _U * mx)
    u = _strip(_Dist(base.lo, base.s, rest, base.logscale, 2.0 * base.e1 + 2.0 * _U * n1,
                     2.0 * base.einf + 2.0 * _U * mx))
    return bulk, u


def _wide(eng, cs: np.ndarray, s_top: int) -> bool:
    """Whether an optimistic one-step vector (cs: its cumulative sums) takes the pessimistic
    side's caps: at least _OPT_WIDE_MIN points, and at most _OPT_TOP tilted atoms per run,
    T times the share of the top 2^s_top cells (the lumped tail the side places at its last
    point: the rest's coarsening lowers it by up to a cell, with no neighbour to merge with;
    at T·share 0.3 and 0.18, q 1e-4 and 1e-5 at δ 1e-10 and 1e-9, the lower ends fell by
    6.8e-4 and 3.0e-4; at most 0.09 on the log-uniform batch lines, by at most 2e-5).  A
    heuristic: either caps are sound."""
    n = cs.size
    if n < _OPT_WIDE_MIN:
        return False
    k = min(n - 1, 1 << s_top)
    top = float(cs[-1] - cs[n - 1 - k])
    return max(1, eng.t_max) * top <= _OPT_TOP * float(cs[-1])


def split_base(eng, base: _Dist) -> _Dist | _Split:
    """The one-step vector as (bulk, coarse rest) when that pays (see the module and
    _plan), else as it is.  Each part keeps the whole vector's error bounds (the parts'
    exact counterparts are the restrictions of the exact vector)."""
    t = base.t
    n = t.size
    # no coarser than the grid rule (λh ≤ _LAMH·ρ: eng.s_max) or the level the whole
    # composition reaches (⌊log2 T / 2⌋: the rest is never coarser than the single-grid
    # engine's result for T = t_max; a shorter composition of the same engine, a curve's
    # earlier point, can end at su, coarser than its own ⌊log2 n / 2⌋: looser, still sound)
    s_top = min(eng.s_max, (max(1, eng.t_max).bit_length() - 1) // 2, 30)
    if n < 4096 or s_top < _U_MIN_LEVELS:
        return base
    cs = np.cumsum(t)
    wide = not eng.pess and _wide(eng, cs, s_top)
    cost, i0, i1, su = _plan(cs, s_top, eng.pess or wide, max(1, eng.t_max))
    if _GAIN * cost > n:
        return base
    if eng.pess:
        bulk = _Dist(base.lo + i0, base.s, t[i0:i1].copy(), base.logscale, base.e1,
                     base.einf)
        rest = t.copy()
        rest[i0:i1] = 0.0
        u = _strip(_Dist(base.lo, base.s, rest, base.logscale, base.e1, base.einf))
    else:
        bulk, u = _soft_split(base, i0, i1, _RAMP << su)
    if u is not None:
        u = eng.to_grid(u, base.s + su)
    return _Split(bulk, u, base.s + su, wide)


def square(eng, x: _Split, kk: int, mult: int) -> _Dist | _Split:
    """x*x for power kk of the engine (kk squarings): the bulk on its schedule (level
    ⌊kk/2⌋, as the single-grid engine), the rest on level su; one vector again once the
    bulk's level reaches su."""
    tau = eng.tau / (2 * mult)
    budget = eng.tau * eng.split_noise / (2 * mult)
    # the bulk is truncated at τ alone, not at the FFT's noise floor (pmf._truncate's
    # default): its edges, cut at θ of the one-step mass, hold about that much noise-level
    # mass, and dropping it doubled the ℓ1 error term (q 1e-4, σ 1, 1e6 steps at δ 1e-15:
    # +0.22 % over the reference; the single-grid engine's tails are real mass, kept)
    bb = _conv(x.b, x.b, budget)
    bb = _truncate(_quiet(bb), tau, eng.pess)
    u = None
    if x.u is not None:
        cross = _cross(eng, x.b, x.u, budget, x.phased)
        cross = _Dist(cross.lo, cross.s, cross.t * 2.0, cross.logscale, 2.0 * cross.e1,
                      2.0 * cross.einf, 2.0 * cross.noise)      # ×2: exact
        u = _add(cross, _conv(x.u, x.u, budget))
        u = _truncate(u, tau, eng.pess)
        while u.t.size > eng.nwin // 2:
            u = eng._coarsen(u)
    bb = eng.to_grid(bb, min(kk // 2, x.su))
    return _rejoin(eng, bb, u, x.su, x.phased)


def _rejoin(eng, b: _Dist, u: _Dist | None, su: int, phased: bool = False) -> _Dist | _Split:
    if u is not None and u.s > su:
        su = u.s                      # (the rest was coarsened further by the length cap)
    if b.s >= su or (u is not None and b.t.size > eng.nwin // 2):
        b = eng.to_grid(b, su)
        if u is None:
            return b
        return _add(b, eng.to_grid(u, b.s))
    return _Split(b, u, su, phased)


def unify(eng, x: _Dist | _Split) -> _Dist:
    """The parts added on the coarse grid (the bulk coarsened to it); a phased optimistic
    split's on the bulk's grid instead, the rest's atoms placed there exactly (its points
    are the fine grid's too): a spiky bulk's coarsening would lower most of the mass."""
    if not isinstance(x, _Split):
        return x
    if x.phased and not eng.pess and x.u is not None and x.u.s > x.b.s:
        return _add(x.b, _refine(x.u, x.b.s))
    b = eng.to_grid(x.b, x.su)
    return b if x.u is None else _add(b, eng.to_grid(x.u, b.s))


def _refine(d: _Dist, s: int) -> _Dist:
    """d on the finer level s: the same atoms at the same losses, zeros between (exact)."""
    k = 1 << (d.s - s)
    t = np.zeros((d.t.size - 1) * k + 1)
    t[::k] = d.t
    return _Dist(d.lo * k, s, t, d.logscale, d.e1, d.einf, d.noise)


def multiply(eng, x: _Dist | _Split, y: _Dist | _Split, mult: int) -> _Dist | _Split:
    """x*y for the engine's compose: bulk times bulk on the finer common level, the three
    other products on the coarse grid; a single vector meets the other unified."""
    tau = eng.tau / (2 * mult)
    if isinstance(x, _Split) != isinstance(y, _Split) and not eng.pess \
            and (x.phased if isinstance(x, _Split) else y.phased):
        # a phased optimistic split times a single vector: its bulk's product as _cross's
        # (not the bulk coarsened, as unify would), its rest's plainly, on the vector's grid
        sp, d = (x, y) if isinstance(x, _Split) else (y, x)
        d = eng.to_grid(d, sp.su)
        got = _cross(eng, sp.b, d, phased=True)
        if sp.u is not None:
            got = _add(got, _conv(eng.to_grid(sp.u, d.s), d))
        return _truncate(got, eng.tau / mult, eng.pess)
    if not (isinstance(x, _Split) and isinstance(y, _Split)):
        a, b = unify(eng, x), unify(eng, y)
        s = max(a.s, b.s)
        return _truncate(_conv(eng.to_grid(a, s), eng.to_grid(b, s)), eng.tau / mult,
                         eng.pess)
    su = max(x.su, y.su)
    s = max(x.b.s, y.b.s)
    bb = _truncate(_quiet(_conv(eng.to_grid(x.b, s), eng.to_grid(y.b, s))), tau, eng.pess)
    parts = []
    if y.u is not None:
        parts.append(_cross(eng, x.b, eng.to_grid(y.u, su), phased=x.phased or y.phased))
    if x.u is not None:
        parts.append(_cross(eng, y.b, eng.to_grid(x.u, su), phased=x.phased or y.phased,
                            u_first=True))
    if x.u is not None and y.u is not None:
        parts.append(_conv(eng.to_grid(x.u, su), eng.to_grid(y.u, su)))
    u = None
    for p in parts:
        u = p if u is None else _add(u, p)
    if u is not None:
        u = _truncate(u, tau, eng.pess)
    return _rejoin(eng, bb, u, su, x.phased or y.phased)
