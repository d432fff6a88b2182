"""FFT convolutions of non-negative vectors with their a-priori round-off bounds [Hig02,
Thm 24.2], [GS66] (pld.roundoff): the plain product, and a square split into its core and
tail where that bound is much smaller (pmf._conv decides which; moved here from pmf, which is
at its size limit).
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.pld.roundoff import _fft_len, _fft_roundoff_l2

_SPLIT_THETAS = tuple(10.0 ** -k for k in range(2, 13))   # core windows: tail mass shares


def _conv_fft(x: np.ndarray, y: np.ndarray, same: bool, n1x: float | None = None,
              n1y: float | None = None, n2x: float | None = None):
    """x*y by FFT; returns (out, ℓ1 bound, ℓ∞ bound) on the round-off.  ``n1x``, ``n1y``,
    ``n2x``: float(x.sum()), float(y.sum()), ‖x‖₂ as computed below, where the caller has
    them (the same doubles)."""
    nout = x.size + y.size - 1
    n = _fft_len(nout)
    fx = np.fft.rfft(x, n)
    fy = fx if same else np.fft.rfft(y, n)
    out = np.fft.irfft(fx * fy, n)[:nout]
    n1x = float(x.sum()) if n1x is None else n1x
    n1y = float(y.sum()) if n1y is None else n1y
    n2x = math.sqrt(float((x * x).sum())) if n2x is None else n2x
    n2y = n2x if same else math.sqrt(float((y * y).sum()))
    r2 = _fft_roundoff_l2(n, n1x, n2x, n1y, n2y)
    return out, math.sqrt(nout) * r2, r2


def _square_split(x: np.ndarray):
    """x*x with a smaller round-off bound when a short window (the core c) holds nearly all
    of x's mass: x*x = c*c + t*(x + c), t = x − c (the tail).  c*c is an FFT of the core's
    length, and the full-length FFT's bound scales with the tail's norms instead of x's
    ([Hig02, Thm 24.2] as in _fft_roundoff_l2, per product; x + c doubles the core's entries,
    exactly).  Returns (out, ℓ1 bound, ℓ∞ bound), or None when no window lowers the bound of
    the plain FFT by half.  Preconditions (as for _conv_fft): x ≥ 0, not empty, and its
    maximum far above 2^-511 (the engine's vectors are normalised to a maximum of 1): then
    products rounded in the subnormal range, ≤ 2^-1074 each, lie far inside the add term."""
    nout = 2 * x.size - 1
    n = _fft_len(nout)
    cs = np.cumsum(x)
    cq = np.cumsum(x * x)
    tot, tot2 = float(cs[-1]), float(cq[-1])
    if not tot > 0.0:
        return None
    plain = _fft_roundoff_l2(n, tot, math.sqrt(tot2), tot, math.sqrt(tot2)) * math.sqrt(nout)
    best = None
    for th in _SPLIT_THETAS:
        i0 = int(np.searchsorted(cs, 0.5 * th * tot, side="right"))
        i1 = int(np.searchsorted(cs, tot * (1.0 - 0.5 * th), side="left")) + 1
        i1 = min(max(i1, i0 + 1), x.size)
        m = i1 - i0
        if 4 * m > x.size:
            break
        c1 = float(cs[i1 - 1] - (cs[i0 - 1] if i0 else 0.0))
        c2 = float(cq[i1 - 1] - (cq[i0 - 1] if i0 else 0.0))
        t1 = max(tot - c1, 0.0) * (1 + 1e-6) + 1e-300
        t2 = max(tot2 - c2, 0.0) * (1 + 1e-6) + 1e-300
        mo = 2 * m - 1
        nc = _fft_len(mo)
        bc = _fft_roundoff_l2(nc, c1, math.sqrt(c2), c1, math.sqrt(c2)) * math.sqrt(mo)
        bt = _fft_roundoff_l2(n, t1, math.sqrt(t2), 2 * tot, 2 * math.sqrt(tot2)) \
            * math.sqrt(nout)
        if best is None or bc + bt < best[0]:
            best = (bc + bt, i0, i1)
    if best is None or best[0] > 0.5 * plain:
        return None
    _, i0, i1 = best
    core = x[i0:i1]
    tail = x.copy()
    tail[i0:i1] = 0.0
    both = x.copy()
    both[i0:i1] *= 2.0                                   # x + c, exact
    ft = np.fft.rfft(tail, n)
    fb = np.fft.rfft(both, n)
    out = np.fft.irfft(ft * fb, n)[:nout]
    n1t, n2t = float(tail.sum()), math.sqrt(float((tail * tail).sum()))
    n1b, n2b = float(both.sum()), math.sqrt(float((both * both).sum()))
    r2 = _fft_roundoff_l2(n, n1t, n2t, n1b, n2b)
    if core.size <= 48:
        cc = np.convolve(core, core)
        g = core.size * _U / (1 - core.size * _U) * 2
        n1c = float(core.sum())
        r1c, rinfc = g * n1c * n1c, g * n1c * float(core.max())
    else:
        cc, r1c, rinfc = _conv_fft(core, core, True)
    out[2 * i0:2 * i0 + cc.size] += cc
    # the addition: one rounding per entry of the sum
    add = 2 * _U * tot * tot
    return out, math.sqrt(nout) * r2 + r1c + add, r2 + rinfc + add
