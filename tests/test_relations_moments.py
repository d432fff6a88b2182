"""Tests for dpcalc.relations.moments: the Abadi et al. moments accountant."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpcalc.relations import moments, rdp

LOG_1E5 = math.log(1e-5)


def test_public_case_headline_example():
    # q = 0.01, σ = 4, 10000 steps, δ = 1e-5 -> ε ≈ 1.2586 (Abadi et al.'s headline example)
    eps, lam = moments.moments_epsilon(0.01, 4.0, 10000, LOG_1E5)
    assert 1.2585747412527875 <= eps <= 1.258575999827529
    assert 1 <= lam <= 32


def test_epsilon_is_exact_minimum_rounded_up():
    q, sigma, steps = 0.01, 4.0, 10000
    eps, lam = moments.moments_epsilon(q, sigma, steps, LOG_1E5)
    with mp.workdps(60):
        best = min((steps * _log_moment_mp(q, sigma, la) - mp.log(mp.mpf("1e-5"))) / la
                   for la in range(1, 33))
        # log δ is passed as a double; the exact value at that double is the reference
        best_at_double = min((steps * _log_moment_mp(q, sigma, la) - mp.mpf(LOG_1E5)) / la
                             for la in range(1, 33))
    assert eps >= best_at_double
    assert eps == pytest.approx(float(best), rel=1e-14)


def _log_moment_mp(q, sigma, lam):
    """α(λ) = log E_{z∼μ0}[(μ(z)/μ0(z))^{λ+1}] by the plain binomial sum (no rewriting)."""
    q_, s = mp.mpf(q), mp.mpf(sigma)
    n = lam + 1
    return mp.log(mp.fsum(mp.binomial(n, k) * (1 - q_) ** (n - k) * q_**k
                          * mp.exp(mp.mpf(k * k - k) / (2 * s * s)) for k in range(n + 1)))


@pytest.mark.parametrize("lam", [1, 4, 16, 32])
def test_other_direction_is_dominated(lam):
    # [ACGMMTZ16, Thm 2] needs both E_{μ0}[(μ0/μ)^λ] and E_μ[(μ/μ0)^λ]; the binomial one
    # dominates [MTZ19, Sec 3]. Check by quadrature at the headline parameters.
    q, s = 0.01, 4.0
    ours = moments.log_moments(q, s)[lam - 1]
    with mp.workdps(30):
        def g(z):
            r = mp.exp((2 * z - 1) / (2 * s * s))
            return mp.npdf(z, 0, s) * ((1 / ((1 - q) + q * r)) ** lam - 1)

        other = mp.log1p(mp.quad(g, [-mp.inf, -20, 0, 20, mp.inf]))
    assert other <= ours
    assert ours == pytest.approx(float(_log_moment_mp(q, s, lam)), rel=1e-13)


@pytest.mark.parametrize("q,sigma,steps", [(0.01, 4.0, 10000), (0.001, 1.0, 1e5),
                                           (0.1, 2.0, 100), (1.0, 5.0, 10), (1e-5, 0.8, 1e7)])
@pytest.mark.parametrize("log_delta", [LOG_1E5, math.log(1e-10), -700.0])
def test_never_below_rdp_improved(q, sigma, steps, log_delta):
    eps_m, _ = moments.moments_epsilon(q, sigma, steps, log_delta)
    o = rdp.DEFAULT_ORDERS
    total = np.nextafter(rdp.rdp_subsampled_gaussian(o, q, sigma) * steps, np.inf)
    eps_r, _, _ = rdp.epsilon_from_rdp(o, total, log_delta, "improved")
    assert eps_m >= eps_r
    # and it equals the classic RDP conversion at integer orders 2..33
    orders = np.arange(2, 34, dtype=float)
    total = rdp.rdp_subsampled_gaussian(orders, q, sigma) * steps
    eps_c, _, _ = rdp.epsilon_from_rdp(orders, total, log_delta, "classic")
    assert eps_m == pytest.approx(eps_c, rel=1e-10)


def test_log_moments_match_rdp_times_lambda():
    lm = moments.log_moments(0.02, 1.5)
    orders = np.arange(2, 34, dtype=float)
    r = rdp.rdp_subsampled_gaussian(orders, 0.02, 1.5)
    assert np.allclose(lm, r * np.arange(1, 33), rtol=1e-12)
    assert np.all(np.array(lm) <= r * np.arange(1, 33) * (1 + 1e-15))


@pytest.mark.parametrize("q,sigma,steps", [(0.01, 4.0, 10000), (0.05, 1.1, 3000)])
def test_delta_epsilon_round_trip(q, sigma, steps):
    eps, lam = moments.moments_epsilon(q, sigma, steps, LOG_1E5)
    ld, lam2 = moments.moments_log_delta(q, sigma, steps, eps)
    assert ld <= LOG_1E5 + 1e-12 and ld == pytest.approx(LOG_1E5, rel=1e-9)
    assert lam2 == lam
    # a slightly smaller ε gives a larger δ
    assert moments.moments_log_delta(q, sigma, steps, eps * 0.99)[0] > LOG_1E5


def test_edge_cases():
    # q = 0: all moments vanish, ε = log(1/δ)/32
    eps, lam = moments.moments_epsilon(0.0, 1.0, 100, LOG_1E5)
    assert lam == 32 and eps == pytest.approx(-LOG_1E5 / 32) and eps >= -LOG_1E5 / 32
    assert moments.moments_epsilon(0.01, 1.0, 100, 0.0) == (0.0, 1)
    assert moments.moments_epsilon(0.01, 1.0, 100, -math.inf)[0] == math.inf
    assert moments.moments_log_delta(0.01, 1.0, 100, math.inf)[0] == -math.inf
    assert moments.moments_log_delta(0.5, 0.5, 1e6, 1.0)[0] == 0.0  # clamped at δ ≤ 1
    for q, s, t in [(1e-7, 0.3, 1e7), (1.0, 1e4, 1), (0.5, 0.3, 1e6), (1e-3, 1e4, 1e7)]:
        for ld in (LOG_1E5, -2000.0):
            e, _ = moments.moments_epsilon(q, s, t, ld)
            assert math.isfinite(e) and e >= 0
        d, _ = moments.moments_log_delta(q, s, t, 1.0)
        assert not math.isnan(d) and d <= 0


@pytest.mark.parametrize("kwargs", [dict(q=1.5), dict(q=-0.1), dict(noise_multiplier=0.0),
                                    dict(steps=-1), dict(max_lambda=0), dict(max_lambda=2.5),
                                    dict(log_delta=float("nan"))])
def test_validation(kwargs):
    kw = dict(q=0.01, noise_multiplier=1.0, steps=10, log_delta=LOG_1E5) | kwargs
    with pytest.raises(ValueError):
        moments.moments_epsilon(**kw)


_GRID_Q = [1e-12, 1e-6, 1e-3, 0.0427, 0.3, 0.999, 1 - 1e-9]
_GRID_SIGMA = [1e-3, 0.1, 0.5, 0.8, 1.1, 4.0, 1e2, 1e6, 1e9]


@pytest.mark.parametrize("q", _GRID_Q)
def test_float_moments_bound_the_exact_sum_tightly(q):
    # the float path (a proven relative error bound, padded up) against the 50-digit sum:
    # never below it, and within 1e-12 relative; where it cannot certify, mpmath answers
    taken = 0
    for sigma in _GRID_SIGMA:
        ref = moments._log_moments_mp(q, sigma, 32)
        got = moments._log_moments_float(q, sigma, 32)
        used = moments.log_moments(q, sigma)
        if got is None:
            assert used == [moments._to_float_up(v) for v in ref]
            continue
        taken += 1
        assert list(got) == used
        for value, exact in zip(got, ref, strict=True):
            assert mp.mpf(value) >= exact
            assert mp.mpf(value) <= exact * (1 + mp.mpf("1e-12"))
    assert taken >= len(_GRID_SIGMA) - 2  # the float path is the rule, not the exception


def test_float_moments_refuse_what_they_cannot_certify():
    # q = 1 (log(1 − q) = −inf in the sum): the Gaussian's λ(λ + 1)/(2σ²), rounded up
    full = moments._log_moments_float(1.0, 5.0, 32)
    assert all(la * (la + 1) / 50 <= a <= la * (la + 1) / 50 * (1 + 1e-15)
               for la, a in enumerate(full, start=1))
    assert moments._log_moments_float(1.0, 1e-160, 32) is None  # x overflows
    assert moments._log_moments_float(0.01, 1e-160, 32) is None  # (k²−k)/(2σ²) overflows
    assert moments._log_moments_float(1e-300, 4.0, 32) is None  # A − 1 below the double range
    assert moments._log_moments_float(0.01, 4.0, 32) is not None


@pytest.mark.parametrize("q,sigma,steps", [(0.01, 4.0, 10000), (256 / 60000, 1.1, 14000),
                                           (0.1, 0.7, 50), (1e-4, 10.0, 1e6), (1.0, 5.0, 10)])
@pytest.mark.parametrize("log_delta", [LOG_1E5, -700.0])
def test_epsilon_and_delta_bound_the_exact_minimum(q, sigma, steps, log_delta):
    eps, _ = moments.moments_epsilon(q, sigma, steps, log_delta)
    with mp.workdps(60):
        exact = min((steps * a - mp.mpf(log_delta)) / la
                    for la, a in enumerate(moments._log_moments_mp(q, sigma, 32), start=1))
    assert mp.mpf(eps) >= exact
    assert mp.mpf(eps) <= exact * (1 + mp.mpf("1e-12"))
    ld, _ = moments.moments_log_delta(q, sigma, steps, eps)
    with mp.workdps(60):
        exact_ld = min(steps * a - la * mp.mpf(eps)
                       for la, a in enumerate(moments._log_moments_mp(q, sigma, 32), start=1))
    assert mp.mpf(ld) >= min(exact_ld, 0)
    assert ld <= log_delta + 1e-9 * abs(log_delta)


@pytest.mark.parametrize("q", [1e-6, 256 / 60000, 0.01, 0.3])
def test_epsilon_and_delta_equal_the_all_mpmath_path(q, monkeypatch):
    # the float moments only choose λ; the value there is the exact minimum rounded up, so
    # it is the double the all-mpmath path gives
    cases = [(s, t, ld) for s in (1e-5, 1e-3, 0.5, 1.1, 3.8131298179115616, 24.68)
             for t in (1, 10000, 1e7)
             for ld in (LOG_1E5, -700.0)]
    fast = [(moments.moments_epsilon(q, s, t, ld), moments.moments_log_delta(q, s, t, 1.0))
            for s, t, ld in cases]
    monkeypatch.setattr(moments, "_float_moments", lambda *args: None)
    slow = [(moments.moments_epsilon(q, s, t, ld), moments.moments_log_delta(q, s, t, 1.0))
            for s, t, ld in cases]
    assert fast == slow
