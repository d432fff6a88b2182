"""The PLD engine's in-place shortcuts against the long way: _core._log_sub/_log1mexp on
their own buffers, and the norms a _Dist carries from where its vector was made
(pmf._dist_norms) against pmf._core._norms of the vector itself.  Bit for bit."""

from __future__ import annotations

import dataclasses
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


def test_marked_norms_are_those_of_the_vector(monkeypatch):
    """Every _conv operand's carried norms (nonneg, mx, n1) are _norms of its vector, the
    same doubles, over both sides of a few DP-SGD brackets; and most operands carry some."""
    from dpcalc.pld import pmf
    from dpcalc.relations.pld import epsilon_bounds, log_delta_bounds

    seen = {"marked": 0, "all": 0}
    known = pmf._dist_norms

    def checked(d):
        got = known(d)
        want = _core._norms(d.t)
        assert got == want and [type(x) for x in got] == [type(x) for x in want]
        seen["all"] += 1
        seen["marked"] += bool(d.nonneg)
        return got

    monkeypatch.setattr(pmf, "_dist_norms", checked)
    epsilon_bounds(0.01, 1.1, 1000, math.log(1e-5))
    epsilon_bounds(2e-4, 0.8, 30_000, math.log(1e-9))
    log_delta_bounds(0.3, 4.0, 77, 1.5)
    assert seen["all"] > 50 and seen["marked"] > seen["all"] // 3


def test_replace_does_not_carry_marks_to_another_vector():
    from dpcalc.pld.pmf import _Dist, _normalise

    d = _normalise(_Dist(0, 0, np.array([0.0, 2.0, 1.0]), 0.0, 0.0, 0.0), own=True,
                   clipped=True)
    assert d.nonneg and d.mx == 1.0 and d.n1 == 1.5
    r = dataclasses.replace(d, t=np.array([-1.0, 3.0]))
    assert not r.nonneg and r.mx is None and r.n1 is None
