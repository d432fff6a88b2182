"""The PLD engine's in-place shortcuts against the long way: _core._log_sub/_log1mexp on
their own buffers, and the norms a _Dist carries from where its vector was made
(pmf._dist_norms) against pmf._core._norms of the vector itself.  Bit for bit."""

from __future__ import annotations

import math
import warnings

import numpy as np

from dpcalc.pld import _core

_EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1e-300, 1e-300, -math.log(2.0),
                   np.nextafter(-math.log(2.0), 0.0), np.nextafter(-math.log(2.0), -1.0),
                   -745.2, -800.0, 700.0, 1e308, -1e308, 5e-324, -5e-324])


def _log1mexp_long(d):
    d = np.asarray(d, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d > -math.log(2.0), np.log(-np.expm1(d)), np.log1p(-np.exp(d)))


def _log_sub_long(a, b):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        out = a + _log1mexp_long(np.minimum(b - a, 0.0))
    return np.where(a > b, out, -np.inf)


def _same(x, y):
    x, y = np.asarray(x), np.asarray(y)
    assert x.shape == y.shape and x.dtype == y.dtype
    assert x.tobytes() == y.tobytes()


def test_log_sub_and_log1mexp_in_place_are_the_long_way():
    rng = np.random.default_rng(11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for trial in range(600):
            n = int(rng.integers(0, 30))
            kind = trial % 4

            def gen(kind=kind, n=n):
                if kind == 0:
                    return rng.choice(_EDGES, n)
                if kind == 1:
                    return -rng.exponential(0.5, n)          # one branch, or both
                if kind == 2:
                    return rng.normal(-1.0, 3.0, n)
                return np.where(rng.random(n) < 0.3, rng.choice(_EDGES, n),
                                rng.normal(-1.0, 2.0, n))

            a, b = gen(), gen()
            a0 = float(a[0]) if n else 1.0
            b0 = float(b[0]) if n else 0.0
            for x, y in ((a, b), (a, b0), (a0, b), (a0, b0)):
                _same(_core._log_sub(x, y), _log_sub_long(x, y))
            d = np.minimum(a, 0.0)
            for x in (d, d[::2], float(d[0]) if n else -0.5):
                _same(_core._log1mexp(x), _log1mexp_long(x))
    # inputs are not written to
    a, b = np.array([-1.0, -2.0, 0.5]), np.array([-3.0, -2.0, -1.0])
    a1, b1 = a.copy(), b.copy()
    _core._log_sub(a, b)
    assert np.array_equal(a, a1) and np.array_equal(b, b1)
