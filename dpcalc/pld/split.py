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
_GAIN = 4             # split only when the level-0 vectors get 4 times shorter
_U_MIN_LEVELS = 2     # and the rest can be at least 2^2 times coarser
_BULK_MIN = 256       # and the bulk keeps at least this many points: a bulk of a few dozen
#                       (q·T ≲ 2, a one-step spike) is convolved directly (bound 2mu per
#                       product) and truncated at its edges, and its ℓ1 error term came out
#                       above the single grid's where that term sets the upper end (review,
#                       helper-38: q 1.9e-6, σ 0.67, 833,448 steps, 62 points: +1.24 %)


_DIRECT_MAX = 128       # shorter operands of at most this length: direct convolution


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
    The upper ends move by less than 1e-6 (the refinement decides on the width)."""
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
    cost, i0, i1, su = _plan(np.cumsum(t), s_top, eng.pess, max(1, eng.t_max))
    if _GAIN * cost > n:
        return base
    bulk = _Dist(base.lo + i0, base.s, t[i0:i1].copy(), base.logscale, base.e1, base.einf)
    rest = t.copy()
    rest[i0:i1] = 0.0
    u = _strip(_Dist(base.lo, base.s, rest, base.logscale, base.e1, base.einf))
    if u is not None:
        u = eng.to_grid(u, base.s + su)
    return _Split(bulk, u, base.s + su)


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
        bc = eng.to_grid(x.b, x.su)
        cross = _conv(bc, x.u, budget)
        cross = _Dist(cross.lo, cross.s, cross.t * 2.0, cross.logscale, 2.0 * cross.e1,
                      2.0 * cross.einf, 2.0 * cross.noise)      # ×2: exact
        u = _add(cross, _conv(x.u, x.u, budget))
        u = _truncate(u, tau, eng.pess)
        while u.t.size > eng.nwin // 2:
            u = eng._coarsen(u)
    bb = eng.to_grid(bb, min(kk // 2, x.su))
    return _rejoin(eng, bb, u, x.su)


def _rejoin(eng, b: _Dist, u: _Dist | None, su: int) -> _Dist | _Split:
    if u is not None and u.s > su:
        su = u.s                      # (the rest was coarsened further by the length cap)
    if b.s >= su or (u is not None and b.t.size > eng.nwin // 2):
        b = eng.to_grid(b, su)
        if u is None:
            return b
        return _add(b, eng.to_grid(u, b.s))
    return _Split(b, u, su)


def unify(eng, x: _Dist | _Split) -> _Dist:
    """The parts added on the coarse grid (the bulk coarsened to it)."""
    if not isinstance(x, _Split):
        return x
    b = eng.to_grid(x.b, x.su)
    return b if x.u is None else _add(b, eng.to_grid(x.u, b.s))


def multiply(eng, x: _Dist | _Split, y: _Dist | _Split, mult: int) -> _Dist | _Split:
    """x*y for the engine's compose: bulk times bulk on the finer common level, the three
    other products on the coarse grid; a single vector meets the other unified."""
    tau = eng.tau / (2 * mult)
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
        parts.append(_conv(eng.to_grid(x.b, su), eng.to_grid(y.u, su)))
    if x.u is not None:
        parts.append(_conv(eng.to_grid(x.u, su), eng.to_grid(y.b, su)))
    if x.u is not None and y.u is not None:
        parts.append(_conv(eng.to_grid(x.u, su), eng.to_grid(y.u, su)))
    u = None
    for p in parts:
        u = p if u is None else _add(u, p)
    if u is not None:
        u = _truncate(u, tau, eng.pess)
    return _rejoin(eng, bb, u, su)
