"""The core/tail split of self-convolutions (pmf._square_split): the same product, a smaller
certified round-off bound, and the bound holds against exact integer convolution.

Integer-valued vectors are exact in doubles, and so is their convolution in int64 (every sum
stays below 2^62 here): the reference is exact, not another floating-point computation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcalc.pld import pmf


def _vector(rng, n, core_at, width, spike=0, two_sided=True):
    """A dense bump of `width` cells (heights up to 2^22) at core_at, thin integer tails
    (0..7) over the whole vector; optionally a spike of `spike` at the bump's centre."""
    x = np.zeros(n, dtype=np.int64)
    j = np.arange(n)
    bump = np.exp(-0.5 * ((j - core_at) / (width / 6)) ** 2) * 2 ** 22
    x += np.floor(bump).astype(np.int64)
    tail = rng.integers(0, 8, n)
    if not two_sided:
        tail[:core_at] = 0
    x += tail
    if spike:
        x[core_at] += spike
    return x


def _errors(got, exact):
    hi = exact.astype(float)
    lo = (exact - hi.astype(np.int64)).astype(float)   # exact: |lo| < ulp(hi)
    d = (got - hi) - lo
    return float(np.abs(d).sum()), float(np.abs(d).max())


@pytest.mark.parametrize("n, core_at, width, two_sided, seed", [
    (6000, 300, 40, True, 1),
    (20_000, 19_000, 80, True, 2),
    (20_000, 10_000, 200, False, 3),
    (9000, 4500, 12, True, 4),
])
def test_square_split_is_exact_up_to_its_bounds_and_tighter_than_plain(
        n, core_at, width, two_sided, seed):
    rng = np.random.default_rng(seed)
    xi = _vector(rng, n, core_at, width, two_sided=two_sided)
    x = xi.astype(float)
    exact = np.convolve(xi, xi)
    res = pmf._square_split(x)
    assert res is not None                      # these vectors are what the split is for
    out, r1, rinf = res
    assert out.size == exact.size
    e1, einf = _errors(out, exact)
    assert e1 <= r1 and einf <= rinf
    _, p1, _ = pmf._conv_fft(x, x, True)
    assert r1 <= 0.5 * p1                       # at least halves the plain bound


def test_square_split_declines_a_spread_vector():
    rng = np.random.default_rng(5)
    x = rng.random(10_000) + 0.5                # no short window holds the mass
    assert pmf._square_split(x) is None


@pytest.mark.parametrize("spike", [0, 2 ** 31])
def test_conv_of_a_dist_with_itself_keeps_its_bounds(spike):
    """Through _conv (with the heavy-entry path when a spike carries half the mass): the
    normalised output times its scale is within e1 (ℓ1) and einf (ℓ∞) of the exact square."""
    rng = np.random.default_rng(7)
    xi = _vector(rng, 12_000, 6000, 60, spike=spike)
    d = pmf._Dist(0, 0, xi.astype(float), 0.0, 0.0, 0.0)
    calls = []
    real = pmf._square_split

    def spy(x):
        r = real(x)
        calls.append(r is not None)
        return r

    pmf._square_split = spy
    try:
        out = pmf._conv(d, d)                   # τ = 0: split wherever it halves the bound
    finally:
        pmf._square_split = real
    assert calls == [True]
    exact = np.convolve(xi, xi)[out.lo:out.lo + out.t.size]
    scale = math.exp(out.logscale)
    e1, einf = _errors(out.t * scale, exact)
    assert e1 <= out.e1 * scale and einf <= out.einf * scale


def test_split_is_skipped_when_the_plain_round_off_is_below_the_budget():
    rng = np.random.default_rng(8)
    x = _vector(rng, 6000, 3000, 40).astype(float)
    d = pmf._Dist(0, 0, x, 0.0, 0.0, 0.0)
    nout = 2 * x.size - 1
    _, p1, _ = pmf._conv_fft(x, x, True)
    assert pmf._noisy(d, nout, 0.0)
    assert pmf._noisy(d, nout, 0.5 * p1 * pmf._BUDGET)
    assert not pmf._noisy(d, nout, 2.0 * p1 * pmf._BUDGET)
