"""5-smooth FFT lengths (pmf._fft_len) and their round-off bound (pmf._fft_gamma): the
lengths are the smallest 5-smooth ones, and every convolution at a mixed-radix length stays
within its certified bound against exact integer convolution (int64: exact here)."""

from __future__ import annotations

import numpy as np
import pytest

from dpcalc.pld import pmf
from dpcalc.pld._core import PLDUncertifiable


def _smooth(n: int) -> bool:
    for p in (2, 3, 5):
        while n % p == 0:
            n //= p
    return n == 1


def test_fft_len_is_the_smallest_five_smooth_length():
    for n in range(1, 5000):
        m = pmf._fft_len(n)
        assert m >= n and _smooth(m)
        assert not any(_smooth(k) for k in range(n, m))
    for n in (349_000, 630_753, 2 ** 20 + 1, 10 ** 7 + 3):
        m = pmf._fft_len(n)
        assert m >= n and _smooth(m) and m <= 1.1 * n


def test_fft_gamma_counts_the_stages():
    u = pmf._U
    assert pmf._fft_gamma(2 ** 19) == 19 * 8.0 * u              # as the radix-2 bound
    assert pmf._fft_gamma(1) == 8.0 * u
    assert pmf._fft_gamma(2 * 27 * 5) == pytest.approx((8.0 + 3 * 15.6 + 33.6) * u)
    with pytest.raises(PLDUncertifiable):
        pmf._fft_gamma(7 * 64)


def _vector(rng, n, centre, width):
    j = np.arange(n)
    bump = np.floor(np.exp(-0.5 * ((j - centre) / width) ** 2) * 2 ** 22).astype(np.int64)
    return bump + rng.integers(0, 8, n)


def _errors(got, exact):
    hi = exact.astype(float)
    lo = (exact - hi.astype(np.int64)).astype(float)   # exact: |lo| < ulp(hi)
    d = (got - hi) - lo
    return float(np.abs(d).sum()), float(np.abs(d).max())


# output lengths whose FFT lengths have many radix-3 and radix-5 stages
@pytest.mark.parametrize("la, lb", [(1215, 1215), (3376, 3375), (7291, 2000), (25_000, 25_000),
                                    (60_751, 60_750), (9, 50_000),
                                    (3 ** 9, 3 ** 9), (39_062, 39_062)])
@pytest.mark.parametrize("same", [False, True])
def test_mixed_radix_convolution_within_its_bound(la, lb, same):
    rng = np.random.default_rng(la + lb)
    ai = _vector(rng, la, la // 3, la / 20 + 1)
    bi = ai if same else _vector(rng, lb, lb // 2, lb / 7 + 1)
    n = pmf._fft_len(ai.size + bi.size - 1)
    assert n & (n - 1)                  # not a power of two: a mixed-radix FFT
    out, r1, rinf = pmf._conv_fft(ai.astype(float), bi.astype(float), same)
    e1, einf = _errors(out, np.convolve(ai, bi))
    assert e1 <= r1 and einf <= rinf
