"""FFT lengths 2^a·m, m ∈ {1, 3, 5, 9, 15, 25} (pmf._fft_len) and their round-off bound
(pmf._fft_gamma): the lengths are the smallest of that form, and every convolution at a
mixed-radix length stays well within its certified bound against exact integer convolution
(int64 or Python ints: exact here), also for the spiky inputs that come closest to it."""

from __future__ import annotations

import numpy as np
import pytest

from dpcalc.pld import pmf
from dpcalc.pld._core import PLDUncertifiable

_ODD = (1, 3, 5, 9, 15, 25)


def _allowed(n: int) -> bool:
    while n % 2 == 0:
        n //= 2
    return n in _ODD


def test_fft_len_is_the_smallest_allowed_length():
    for n in range(1, 5000):
        m = pmf._fft_len(n)
        assert m >= n and _allowed(m)
        assert not any(_allowed(k) for k in range(n, m))
    for n in (349_000, 630_753, 2 ** 20 + 1, 10 ** 7 + 3):
        m = pmf._fft_len(n)
        assert m >= n and _allowed(m) and m <= 1.2 * n


def test_fft_gamma_counts_the_stages():
    u = pmf._U
    assert pmf._fft_gamma(2 ** 19) == 19 * 8.0 * u              # as the radix-2 bound
    assert pmf._fft_gamma(1) == 8.0 * u
    assert pmf._fft_gamma(2 * 27 * 5) == pytest.approx((8.0 + 3 * 18.0 + 29.0) * u)
    with pytest.raises(PLDUncertifiable):
        pmf._fft_gamma(7 * 64)


def _vector(rng, n, centre, width):
    j = np.arange(n)
    bump = np.floor(np.exp(-0.5 * ((j - centre) / width) ** 2) * 2 ** 22).astype(np.int64)
    return bump + rng.integers(0, 8, n)


def _spikes(rng, n, k):
    """k spikes of 2^26 on a flat integer tail (0..7): the review's worst inputs."""
    x = rng.integers(0, 8, n).astype(np.int64)
    x[rng.choice(n, size=min(k, n), replace=False)] += 2 ** 26
    return x


def _ratios(ai, bi, same):
    out, r1, rinf = pmf._conv_fft(ai.astype(float), bi.astype(float), same)
    exact = np.convolve(ai, bi)
    hi = exact.astype(float)
    lo = (exact - hi.astype(np.int64)).astype(float)   # exact: |lo| < ulp(hi)
    d = (out - hi) - lo
    return float(np.abs(d).sum()) / r1, float(np.abs(d).max()) / rinf


# output lengths whose FFT lengths have radix-3 and radix-5 stages
@pytest.mark.parametrize("la, lb", [(1215, 1215), (3376, 3375), (7291, 2000), (25_000, 25_000),
                                    (60_751, 60_750), (9, 50_000), (2, 2), (3, 3), (5, 8)])
@pytest.mark.parametrize("same", [False, True])
def test_mixed_radix_convolution_within_its_bound(la, lb, same):
    rng = np.random.default_rng(la + lb)
    ai = _vector(rng, la, la // 3, la / 20 + 1)
    bi = ai if same else _vector(rng, lb, lb // 2, lb / 7 + 1)
    assert pmf._fft_len(ai.size + bi.size - 1) & (pmf._fft_len(ai.size + bi.size - 1) - 1)
    r1, rinf = _ratios(ai, bi, same)
    assert r1 <= 0.05 and rinf <= 0.05


@pytest.mark.parametrize("n", [2, 3, 5, 7, 13, 41, 600, 1700, 9000, 40_000])
@pytest.mark.parametrize("k", [1, 2, 7])
def test_spiky_inputs_stay_far_inside_the_bound(n, k):
    """The review found spikes on a flat tail closest to the bound (at most 2.4 % of it):
    a margin of 20× below it still holds (a per-stage constant far too small fails)."""
    rng = np.random.default_rng(100 * n + k)
    x = _spikes(rng, n, k)
    for y, same in ((x, True), (_spikes(rng, max(1, n // 2), k), False)):
        r1, rinf = _ratios(x, y, same)
        assert r1 <= 0.05 and rinf <= 0.05, (n, k, same, r1, rinf)
