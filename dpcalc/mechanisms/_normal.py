"""Normal-distribution tails in log space with relative error bounds (for Gaussian pairs).

Φc(z) = erfc(z/√2)/2; libm erfc is assumed accurate to _ERFC_REL (checked against mpmath in
tests/test_relations_pld.py); beyond its range the asymptotic series [DLMF 7.12.1] is used.
References: [BW18] (the Gaussian mechanism's tails), [KJH20].
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.pld._core import _LOG_HALF, _SQRT2

_ERFC_REL = 1e-15               # assumed relative error bound of libm erfc (≈ 9 ulp; glibc
                                # documents a few ulp, recent versions are correctly rounded;
                                # tests/test_relations_pld.py checks it against mpmath)


def _log_erfc(y):
    """log erfc(y) elementwise; relative accuracy also where erfc underflows (y ≥ 26).

    y < 26: libm erfc.  y ≥ 26: the asymptotic series
    erfc(y) = e^{−y²}/(y√π) · Σ_n (−1)^n (2n−1)!!/(2y²)^n, truncated after 14 terms
    (the first omitted term is < 1e-25 relative at y = 26).
    """
    y = np.asarray(y, dtype=float)
    out = np.empty_like(y)
    small = y < 26.0
    n_small = int(np.count_nonzero(small))
    # (libm erfc point by point, the floats read through a memoryview: a list of them first
    # (tolist) cost ~15 % more)
    if n_small == y.size:           # (no selection's copies where every point is small)
        vals = np.fromiter(map(math.erfc, memoryview(y.ravel())), float, y.size)
        with np.errstate(divide="ignore"):
            np.log(vals.reshape(y.shape), out=out)
        return out
    if n_small:
        ys = y[small]
        vals = np.fromiter(map(math.erfc, memoryview(ys)), float, ys.size)
        with np.errstate(divide="ignore"):
            out[small] = np.log(vals)
    big = ~small
    if big.any():
        yb = y[big]
        if np.isposinf(yb).all():
            # (the series' value there: thresholds beyond a hard edge, x = −∞, which most
            # one-step grids and edge windows hold; its 14 rounds were ~50 µs per call)
            out[big] = -np.inf
            return out
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


def _gauss_tails(z, dz):
    """(log Φc(z), log Φ(z), log-error of each) from one erfc of |z| per point.

    The minor tail comes from erfc(|z|/√2) (relative accuracy); the major one is
    log1p(−minor).  The error adds the erfc error, |dlogΦ/dz| ≤ |z| + 1 (Mills ratio) times
    the threshold error dz, and 4u·z² for the roundings here, each relative to a log of
    size ~z²/2: y = |z|/√2 (u·z² through the Mills ratio), log erfc or the asymptotic
    branch's y² and series (~1.5u·z²), the sum with log ½ (~0.5u·z²).  It read 2u·z², which
    measured errors at dz = 0 exceeded by up to 1.49 times (z = 45.35: 6.8e-13 against
    4.6e-13; 200 of 14,000 random z in [5, 3000], helper-11); the callers' dz, which
    carries the rounding of z itself, had covered the gap by a margin of about u·z².
    """
    az = np.abs(z)
    lminor = _LOG_HALF + _log_erfc(az / _SQRT2)
    with np.errstate(invalid="ignore"):
        lmajor = np.log1p(-np.exp(lminor))
        err = _ERFC_REL + 4.0 * _U * az * az + (az + 1.0) * dz + 4.0 * _U
    err = np.where(np.isfinite(z), err, 0.0)
    upper = z >= 0  # Φc(z) is the minor tail
    lc = np.where(upper, lminor, lmajor)
    lphi = np.where(upper, lmajor, lminor)
    return lc, lphi, err


def _log_phic(z: float) -> float:
    """log Φc(z) for a scalar z (libm erfc, asymptotic series beyond its range)."""
    y = z / _SQRT2
    if y < 26.0:
        v = math.erfc(y)
        return _LOG_HALF + math.log(v) if v > 0 else -math.inf
    return _LOG_HALF + float(_log_erfc(np.array([y]))[0])


@functools.lru_cache(maxsize=256)
def _z_for_log_tail(log_target: float) -> float:
    """z ≥ 0 with log Φc(z) ≤ log_target, close to the smallest (Newton on the log tail,
    then a check; only sizes the grid).  Memoised: both directions' supports and the grid's
    spacing ask for the same target (a pure function of it; a bounded cache)."""
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
