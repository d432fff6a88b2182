"""The moments accountant's exact weights e^{(k²−k)/(2σ²)} − 1 are cached by σ and extended
for a larger λ: each is the value computed from scratch (the long way)."""

from __future__ import annotations

from decimal import Decimal

from dpcalc.params import Given
from dpcalc.relations import moments


def _long_way(sigma, nmax):
    ds = Decimal(sigma)
    inv = moments._CTX.divide(1, moments._CTX.multiply(2, moments._CTX.multiply(ds, ds)))
    return [str(moments._expm1_exact(moments._CTX.multiply(k * k - k, inv)))
            for k in range(nmax + 1)]


def _cached(sigma, nmax):
    return [str(w) for w in moments._sigma_weights(sigma, nmax)]


def test_sigma_weights_cached_extended_and_sliced_are_the_long_way(monkeypatch):
    monkeypatch.setattr(moments, "_SIGMA_WEIGHTS", {})
    for sigma in (0.3, 0.637, 4.0, 9.99, 1e3):
        for nmax in (5, 2, 17, 33, 9):      # first fill, slice, extend twice, slice
            assert _cached(sigma, nmax) == _long_way(sigma, nmax)
    given = Given(0.637, Decimal("0.637"))
    assert _cached(given, 20) == _long_way(0.637, 20)


def test_sigma_weights_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(moments, "_SIGMA_WEIGHTS", {})
    monkeypatch.setattr(moments, "_SIGMA_WEIGHTS_MAX", 3)
    for sigma in (1.0, 2.0, 3.0, 4.0):
        moments._sigma_weights(sigma, 4)
    assert list(moments._SIGMA_WEIGHTS) == [2.0, 3.0, 4.0]
    assert _cached(1.0, 4) == _long_way(1.0, 4)
