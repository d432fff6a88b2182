"""The light part of a spiky square on a coarser grid (pessimistic side only).

At tiny sampling rates the one-step vector of a long run is a spike (the steps that do not
sample the example) and a long, light tail, and its first squarings dominate a pass: the
engine (pmf._conv) convolves the heaviest entries H exactly as shifted copies and the rest L
by FFT, a² = H*(a + L) + L*L, and the FFT of L*L runs on the whole vector (q 1.8e-7,
9,670,927 steps at δ 2e-262: 263,482 and 372,691 points, 184 of a pass's 503 ms of
convolutions).  The split of pld.split (bulk and rest on two grids) does not apply: its bulk
would be the spike, a few points (its _BULK_MIN).

Here L*L is computed as C(L)*C(L), C the connect-the-dots coarsening [DGKKM22] by 2^su, and
its atoms are placed back on the fine output grid (every coarse point is a fine one).
Sound on the pessimistic side: C is a mean-preserving spread in e^{−ℓ} of L's atoms, which
only raises δ(ε) = E[(1 − e^{ε−L})₊] of that part of the measure and of everything it is
later convolved with (the argument of pld.split, there for the rest of a split vector).
Only used where it pays and costs little accuracy (plan_su): the part's second-order error
is its tilted mass share times 4^su times the fine grid's per-copy error, over the copies
of the power in the composition.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from dpcalc.pld.fftconv import _conv_fft, _square_split
from dpcalc.pld.pmf import _LIGHT_MIN  # (the engine asks only for vectors this long)

#: the part's share of the one-step grid's error (as pld.split's _SHARE)
_LIGHT_SHARE = 0.01
#: and only a light part: at most this share of the vector's tilted mass (a spike and a
#: thin tail: about 0 at q 1.8e-7, 1.2e-5 and 1.7e-8 above; at q 4.9e-4, σ 1.43 it was
#: 0.03 to 0.06, and moving those squares changed the path of a fixed-batch q solve of
#: tests/test_dpsgd_runs_solves.py, 6 -> 8 full evaluations, for nothing measurable)
_LIGHT_MASS_MAX = 1e-3
_SU_MAX = 3


def plan_su(n: int, light_share: float, mult_share: float, levels_left: int) -> int:
    """The coarsening levels su for the light part of a square (0: none).  ``light_share``:
    the light part's share of the vector's tilted mass; ``mult_share``: the copies of the
    squared power in the composition over the run's steps; ``levels_left``: the coarsenings
    the engine's own λh rule still allows at this level."""
    if n < _LIGHT_MIN or levels_left < 1 or not light_share <= _LIGHT_MASS_MAX:
        return 0
    su = 0
    while (su < min(_SU_MAX, levels_left)
           and light_share ** 2 * 4.0 ** (su + 1) * mult_share <= _LIGHT_SHARE):
        su += 1
    return su


def light_square(light, su: int, coarsen, out_lo: int, norm: float):
    """C(L)*C(L) placed on the fine output grid: (values by fine output index, the index of
    its first entry relative to ``out_lo``, the ℓ1 bound of its own round-off, ``norm``).
    ``light``: L as a _Dist (the vector's light entries); ``coarsen(d)``: the engine's
    pessimistic coarsening by one level; ``norm``: the ℓ1 norm of C's map (the product of
    the levels' max(1, cu + cd)), returned for the caller's input-error term.  The bound
    covers the product's FFT round-off and the coarsening's roundings (C run on L with a
    zero input error: the caller charges L's input error through ``norm``), for the
    construction C(L)*C(L) on the computed L."""
    c = replace(light, e1=0.0, einf=0.0)
    for _ in range(su):
        c = coarsen(c)
    n1c = float(c.t.sum())
    # (the core/tail split's bound where a window lowers it, as pmf._conv's squares)
    sp = _square_split(c.t) if c.t.size > 1 else None
    prod, r1, _ = sp if sp is not None else _conv_fft(c.t, c.t, True, n1c, n1c)
    step = 1 << su
    first = 2 * c.lo * step - out_lo          # fine index of the product's first entry
    vals = np.zeros((prod.size - 1) * step + 1)
    vals[::step] = np.maximum(prod, 0.0)      # exact values are ≥ 0: clipping only helps
    e1 = r1 + 2.0 * n1c * c.e1 + c.e1 * c.e1
    assert math.isfinite(e1)
    return vals, first, e1, norm
