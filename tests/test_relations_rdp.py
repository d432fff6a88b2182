"""Tests for dpcalc.relations.rdp: reference values, mpmath oracles, dominance, extremes."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.errors import NumericalError
from dpcalc.relations import rdp

LOG_1E5 = math.log(1e-5)


# ------------------------------------------------------------------------------------------
# oracles
# ------------------------------------------------------------------------------------------

def oracle_sgm(q: float, sigma: float, alpha: float, dps: int = 40):
    """RDP of the sampled Gaussian by quadrature: log E_{N(0,σ²)}[((1−q) + q e^{(2z−1)/2σ²})^α]
    /(α−1). The integrand has 1 + αq(r − 1) (mean 1) subtracted so tiny values keep their
    relative accuracy."""
    with mp.workdps(dps):
        q_, s, a = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)

        def f(z):
            r = mp.exp((2 * z - 1) / (2 * s * s))
            return mp.npdf(z, 0, s) * (((1 - q_) + q_ * r) ** a - 1 - a * q_ * (r - 1))

        z0 = s * s * mp.log(1 / q_ - 1) + mp.mpf(1) / 2
        pts = sorted({mp.mpf(0), z0, z0 - s, z0 + s, a})
        am1 = mp.quad(f, [-mp.inf, *pts, mp.inf])
        return mp.log1p(am1) / (a - 1)


def exact_int_sgm(q: float, sigma: float, n: int, dps: int = 50):
    """RDP of the sampled Gaussian at integer order n by the exact binomial sum in mpmath."""
    with mp.workdps(dps):
        q_, s = mp.mpf(q), mp.mpf(sigma)
        am1 = mp.fsum(mp.binomial(n, k) * (1 - q_) ** (n - k) * q_**k
                      * mp.expm1(mp.mpf(k * k - k) / (2 * s * s)) for k in range(2, n + 1))
        return mp.log1p(am1) / (n - 1)


def analytic_gaussian_eps(sigma: float, delta: float):
    """Exact ε of the Gaussian mechanism [BW18, Thm 8] by bisection in mpmath."""
    with mp.workdps(60):
        s, d = mp.mpf(sigma), mp.mpf(delta)

        def dlt(e):
            return mp.ncdf(1 / (2 * s) - e * s) - mp.exp(e) * mp.ncdf(-1 / (2 * s) - e * s)

        lo, hi = mp.mpf(0), mp.mpf(1)
        while dlt(hi) > d:
            hi *= 2
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if dlt(mid) > d else (lo, mid)
        return hi


# ------------------------------------------------------------------------------------------
# the default grid
# ------------------------------------------------------------------------------------------

def test_default_orders_grid():
    o = np.array(rdp.DEFAULT_ORDERS)
    assert np.all(np.diff(o) > 0) and o[0] <= 1.01 and o[-1] >= 4096
    frac = o[(o >= 1.1) & (o <= 10.9)]
    assert np.max(np.diff(frac)) <= 0.1 + 1e-12
    assert np.sum(o < 1.1) >= 5  # denser near 1
    assert set(range(12, 65)) <= {int(a) for a in o if a.is_integer()}
    assert {128, 256, 512, 1024, 2048} <= {int(a) for a in o if a.is_integer()}


# ------------------------------------------------------------------------------------------
# reference values
# ------------------------------------------------------------------------------------------

# google/differential-privacy rdp_privacy_accountant_test.py::
# test_compute_rdp_poisson_sampled_gaussian: q = 0.01, σ = 2.5, 50 steps.
DPA_ORDERS = [1.5, 2.5, 5, 50, 100]
DPA_VALUES = [6.70579741e-04, 1.08548710e-03, 2.18075656e-03, 2.38460375e-02, 1.67416308e+02]


def test_reference_dp_accounting_poisson_sampled_gaussian():
    ours = rdp.rdp_subsampled_gaussian(DPA_ORDERS, 0.01, 2.5) * 50
    for a, v, ref in zip(DPA_ORDERS, ours, DPA_VALUES, strict=True):
        if float(a).is_integer():
            assert v == pytest.approx(ref, rel=1e-4)
        else:
            # dp_accounting sums |C(α,k)| over the alternating tail at fractional α, which
            # overestimates (a Σ|C| recomputation in mpmath gives exactly 6.70579741e-04 at
            # α = 1.5). Ours is the tight value: never above the reference, never below the
            # quadrature oracle.
            assert v <= ref * (1 + 1e-4)
            assert v >= float(oracle_sgm(0.01, 2.5, a)) * 50 * (1 - 1e-12)
    assert ours[0] == pytest.approx(6.50070897188e-04, rel=1e-9)  # quadrature value


def test_reference_gaussian_eps_one_at_delta_1e6():
    # dp_accounting test_compute_epsilon_delta_gaussian: q = 1, σ = 4.530877117, improved
    # conversion, α from 1 to 100 in steps of 0.001 -> ε = 1 at δ = 1e-6.
    orders = np.arange(1001, 100001) / 1000.0
    sigma = 4.530877117
    eps, best, _ = rdp.epsilon_from_rdp(orders, rdp.rdp_gaussian(orders, sigma),
                                        math.log(1e-6), "improved")
    assert 1 - 1e-8 <= eps <= 1 + 1e-6
    assert 15 < best < 30
    # the default grid gives (almost) the same
    e2, _, _ = rdp.epsilon_from_rdp(rdp.DEFAULT_ORDERS,
                                    rdp.rdp_gaussian(rdp.DEFAULT_ORDERS, sigma),
                                    math.log(1e-6), "improved")
    assert eps <= e2 <= 1.0001
    # dominance: never below the exact (analytic) Gaussian ε, about 0.927 here
    exact = analytic_gaussian_eps(sigma, 1e-6)
    assert 0.92 < float(exact) < 0.93
    assert eps >= exact


# public cases (run through the functions directly)
def test_public_case_subsampled_classic_alpha8():
    r = rdp.rdp_subsampled_gaussian([8], 0.01, 1.0) * 1000
    eps, best, _ = rdp.epsilon_from_rdp([8], r, LOG_1E5, "classic")
    assert 2.5383475454589215 <= eps <= 2.5383500838064674
    assert best == 8


def test_public_case_subsampled_improved_alpha8_5():
    r = rdp.rdp_subsampled_gaussian([8.5], 0.01, 1.0) * 1000
    eps, _, _ = rdp.epsilon_from_rdp([8.5], r, LOG_1E5, "improved")
    assert 2.213940280468763 <= eps <= 2.213962419871568


def test_public_case_gaussian_classic():
    orders = [2, 4, 8, 16, 32]
    r = rdp.rdp_subsampled_gaussian(orders, 1.0, 2.0) * 10
    eps, _, _ = rdp.epsilon_from_rdp(orders, r, LOG_1E5, "classic")
    assert 8.837641821656742 <= eps <= 8.837650659298566


def test_public_case_sigma_by_bisection():
    orders = [2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64]

    def eps(sigma):
        total = np.nextafter(rdp.rdp_subsampled_gaussian(orders, 0.01, sigma) * 1000, np.inf)
        return rdp.epsilon_from_rdp(orders, total, LOG_1E5, "improved")[0]

    lo, hi = 1.0, 3.0  # eps(lo) > 1 >= eps(hi)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (lo, mid) if eps(mid) <= 1 else (mid, hi)
    assert 1.5152578887859862 <= hi <= 1.5152594040438754


# ------------------------------------------------------------------------------------------
# mpmath oracles
# ------------------------------------------------------------------------------------------

ORACLE_CASES = [(1e-6, 1.0), (1e-3, 0.5), (0.01, 2.5), (0.05, 5.0), (0.3, 0.5), (0.3, 50.0),
                (0.49, 1e4), (0.8, 1.0), (0.8, 50.0), (0.999, 3.0)]
ORACLE_CASES_SLOW = [(q, s) for q in (1e-6, 1e-3, 0.05, 0.2, 0.3, 0.6, 0.8, 0.95)
                     for s in (0.3, 0.5, 1.0, 5.0, 50.0, 1e3)]


def _check_against_quadrature(q, sigma, orders, dps):
    ours = rdp.rdp_subsampled_gaussian(orders, q, sigma)
    for a, v in zip(orders, ours, strict=True):
        o = oracle_sgm(q, sigma, a, dps=dps)
        assert v >= o * (1 - 1e-10), (q, sigma, a)
        assert v <= o * (1 + 1e-8), (q, sigma, a, float((v - o) / o))


@pytest.mark.parametrize("q,sigma", ORACLE_CASES)
def test_subsampled_gaussian_against_quadrature(q, sigma):
    _check_against_quadrature(q, sigma, [1.01, 2.5, 7.3], dps=30)


@pytest.mark.slow
@pytest.mark.parametrize("q,sigma", ORACLE_CASES_SLOW)
def test_subsampled_gaussian_against_quadrature_wide(q, sigma):
    _check_against_quadrature(q, sigma, [1.01, 1.5, 2, 3.7, 5 + 1e-6, 10.9, 33.3], dps=40)


def test_near_half_with_huge_sigma_is_sound_if_loose():
    # q = 1/2, σ = 1e4: the MTZ19 split puts z0/σ ≈ 0 and the O(1) series terms cancel to
    # ~1e-11, so the certified bound is loose at α near 1 (documented), but never below.
    orders = [1.01, 1.5, 10.9]
    for a, v in zip(orders, rdp.rdp_subsampled_gaussian(orders, 0.5, 1e4), strict=True):
        o = oracle_sgm(0.5, 1e4, a, dps=30)
        assert o <= v <= o * 1.05


@pytest.mark.parametrize("q", [1e-7, 1e-4, 0.1, 0.7, 0.999])
@pytest.mark.parametrize("sigma", [0.3, 1.0, 1e4])
def test_integer_orders_against_exact_binomial(q, sigma):
    orders = [2, 3, 10, 64, 256]
    ours = rdp.rdp_subsampled_gaussian(orders, q, sigma)
    for n, v in zip(orders, ours, strict=True):
        ex = exact_int_sgm(q, sigma, n)
        assert ex <= v <= ex * (1 + 1e-10), (q, sigma, n, float((v - ex) / ex))


def test_tiny_q_keeps_relative_accuracy_over_many_steps():
    # q = 1e-7: per-step RDP ~ 1e-14 (σ = 1) or 1e-22 (σ = 1e4); composed over 1e7 steps the
    # relative error must stay tiny, so the constant 1 must not be subtracted in floating point.
    for sigma in (1.0, 1e4):
        for a in (2, 8, 2.5, 1.3):
            v = rdp.rdp_subsampled_gaussian([a], 1e-7, sigma)[0]
            o = exact_int_sgm(1e-7, sigma, a) if float(a).is_integer() else \
                oracle_sgm(1e-7, sigma, a)
            assert o <= v <= o * (1 + 1e-9)
            total = np.nextafter(v * 1e7, np.inf)  # composed over 1e7 steps [Mir17, Prop 1]
            assert 1e7 * o <= total == pytest.approx(float(1e7 * o), rel=1e-9)


# ------------------------------------------------------------------------------------------
# structure: continuity, monotonicity, special cases, extremes
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("q,sigma", [(0.01, 1.0), (0.2, 0.5), (1e-5, 3.0), (0.7, 2.0)])
def test_continuity_between_integer_and_fractional(q, sigma):
    lo, mid, hi = rdp.rdp_subsampled_gaussian([5 - 1e-6, 5.0, 5 + 1e-6], q, sigma)
    assert lo <= mid * (1 + 1e-12) and mid <= hi * (1 + 1e-12)
    assert abs(hi - mid) <= 1e-5 * mid and abs(mid - lo) <= 1e-5 * mid


_q = st.floats(1e-7, 1.0).map(lambda x: x)
_sigma = st.floats(0.3, 100.0)
_alpha = st.floats(1.01, 300.0)
_gap = st.floats(1e-3, 1.0)  # relative gap between the two points compared


@settings(max_examples=25, deadline=None)
@given(q=_q, sigma=_sigma, alpha=_alpha, gap=_gap)
def test_monotone_in_alpha(q, sigma, alpha, gap):
    a2 = alpha * (1 + gap)
    r1, r2 = rdp.rdp_subsampled_gaussian([alpha, a2], q, sigma)
    assert r1 <= r2


@settings(max_examples=25, deadline=None)
@given(q=st.floats(1e-7, 0.99), sigma=_sigma, alpha=_alpha, gap=_gap)
def test_monotone_in_q(q, sigma, alpha, gap):
    q2 = min(1.0, q * (1 + gap))
    r1 = rdp.rdp_subsampled_gaussian([alpha], q, sigma)[0]
    r2 = rdp.rdp_subsampled_gaussian([alpha], q2, sigma)[0]
    assert r1 <= r2


@settings(max_examples=25, deadline=None)
@given(q=_q, sigma=_sigma, alpha=_alpha, gap=_gap)
def test_monotone_in_inverse_sigma(q, sigma, alpha, gap):
    r_small_noise = rdp.rdp_subsampled_gaussian([alpha], q, sigma)[0]
    r_big_noise = rdp.rdp_subsampled_gaussian([alpha], q, sigma * (1 + gap))[0]
    assert r_big_noise <= r_small_noise


def test_q_one_is_gaussian_and_q_zero_is_zero():
    o = rdp.DEFAULT_ORDERS
    for sigma in (0.3, 1.0, 4.0, 1e4):
        assert np.array_equal(rdp.rdp_subsampled_gaussian(o, 1.0, sigma),
                              rdp.rdp_gaussian(o, sigma))
        assert np.all(rdp.rdp_subsampled_gaussian(o, 0.0, sigma) == 0)
    g = rdp.rdp_gaussian([2.0, 10.0], 2.0)
    assert g[0] >= 0.25 and g[0] == pytest.approx(0.25, rel=1e-15)
    assert g[1] >= 1.25


@pytest.mark.parametrize("q,sigma", [(1e-7, 0.3), (1e-7, 1e4), (1.0, 1e4), (1.0, 0.3),
                                     (0.5, 0.3), (0.5, 1e4), (0.999999, 0.3), (1e-3, 1e4)])
def test_extremes_no_nan_no_negative(q, sigma):
    orders = list(rdp.DEFAULT_ORDERS) + [4096.0, 1.0, 4095.5, 100.25]
    r = rdp.rdp_subsampled_gaussian(orders, q, sigma)
    assert np.all(np.isfinite(r)) and np.all(r > 0)
    # subsampling never increases RDP
    assert np.all(r <= rdp.rdp_gaussian(orders, sigma))


def test_extreme_value_large_alpha_small_sigma():
    # q = 1e-7, σ = 0.3, α = 4096: log A ≈ 4096·4095/(2·0.09) + 4096·log q, dominated by k = α
    v = rdp.rdp_subsampled_gaussian([4096], 1e-7, 0.3)[0]
    ex = exact_int_sgm(1e-7, 0.3, 4096, dps=30)
    assert ex <= v <= ex * (1 + 1e-10)


def test_alpha_infinity_and_one():
    r = rdp.rdp_subsampled_gaussian([1.0, 1.0 + 2**-10, math.inf], 0.01, 1.0)
    assert r[0] == r[1] and r[2] == math.inf
    assert rdp.rdp_gaussian([math.inf], 1.0)[0] == math.inf


@pytest.mark.parametrize("bad", [dict(q=-0.1), dict(q=1.5), dict(q=float("nan")),
                                 dict(noise_multiplier=0.0), dict(noise_multiplier=-1.0),
                                 dict(noise_multiplier=float("nan")), dict(orders=[0.5]),
                                 dict(orders=[float("nan")])])
def test_validation(bad):
    kw = dict(orders=[2.0], q=0.1, noise_multiplier=1.0) | bad
    with pytest.raises(ValueError):
        rdp.rdp_subsampled_gaussian(**kw)


# ------------------------------------------------------------------------------------------
# Laplace
# ------------------------------------------------------------------------------------------

def laplace_oracle(alpha, lam):
    with mp.workdps(40):
        a, lm = mp.mpf(alpha), mp.mpf(lam)
        if alpha == math.inf:
            return 1 / lm
        if alpha == 1:
            return 1 / lm + mp.exp(-1 / lm) - 1
        return mp.log(a / (2 * a - 1) * mp.exp((a - 1) / lm)
                      + (a - 1) / (2 * a - 1) * mp.exp(-a / lm)) / (a - 1)


@pytest.mark.parametrize("lam", [1e-3, 0.1, 0.5, 1.0, 3.0, 10.0, 1e3, 1e6])
def test_laplace_against_mpmath(lam):
    orders = [1.0, 1.0001, 1.01, 1.5, 2.0, 3.3, 10.0, 100.0, 1000.0, 4096.0, math.inf]
    for a, v in zip(orders, rdp.rdp_laplace(orders, lam), strict=True):
        o = laplace_oracle(a, lam)
        assert o <= v <= o * (1 + 2e-12), (lam, a)


def subsampled_laplace_exact(q, lam, alpha):
    """max of both directions' Rényi divergence of Poisson-subsampled Laplace, by quadrature."""
    with mp.workdps(30):
        q_, lm, a = mp.mpf(q), mp.mpf(lam), mp.mpf(alpha)

        def p0(z):
            return mp.exp(-abs(z) / lm) / (2 * lm)

        def mu(z):
            return (1 - q_) * p0(z) + q_ * mp.exp(-abs(z - 1) / lm) / (2 * lm)

        pts = [-mp.inf, 0, 1, mp.inf]
        d1 = mp.quad(lambda z: p0(z) * (mu(z) / p0(z)) ** a, pts)
        d2 = mp.quad(lambda z: mu(z) * (p0(z) / mu(z)) ** a, pts)
        return max(mp.log(d1), mp.log(d2)) / (a - 1)


@pytest.mark.parametrize("q,lam", [(0.01, 0.3), (0.01, 3.0), (0.1, 1.0), (0.5, 1.0), (0.9, 3.0)])
def test_subsampled_laplace_is_an_upper_bound(q, lam):
    orders = [2, 3, 5, 2.5]
    ours = rdp.rdp_subsampled_laplace(orders, q, lam)
    plain = rdp.rdp_laplace(orders, lam)
    for a, v, p in zip(orders, ours, plain, strict=True):
        ex = subsampled_laplace_exact(q, lam, a)
        assert v >= ex, (q, lam, a)
        assert v <= p
    # [ZW19, Thm 6] is tight at α = 2
    assert ours[0] == pytest.approx(float(subsampled_laplace_exact(q, lam, 2)), rel=1e-10)


def test_subsampled_laplace_special_cases():
    o = [1.0, 2.0, 7.5, 64.0, math.inf]
    assert np.array_equal(rdp.rdp_subsampled_laplace(o, 1.0, 2.0), rdp.rdp_laplace(o, 2.0))
    assert np.all(rdp.rdp_subsampled_laplace(o, 0.0, 2.0) == 0)
    r = rdp.rdp_subsampled_laplace(o, 0.05, 2.0)
    assert np.all(np.isfinite(r)) and np.all(r > 0) and np.all(np.diff(r) >= 0)
    assert r[-1] >= math.log1p(0.05 * math.expm1(0.5))


# ------------------------------------------------------------------------------------------
# conversions
# ------------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(alpha=st.floats(1.001, 5000), r=st.floats(0, 1e4), log10_delta=st.floats(-900, -1))
def test_improved_never_above_classic(alpha, r, log10_delta):
    ld = log10_delta * math.log(10)
    _, _, imp = rdp.epsilon_from_rdp([alpha], [r], ld, "improved")
    _, _, cla = rdp.epsilon_from_rdp([alpha], [r], ld, "classic")
    assert imp[0] <= cla[0]


@pytest.mark.parametrize("conversion", ["classic", "improved"])
@pytest.mark.parametrize("alpha,r,log_delta", [(2.0, 0.1, LOG_1E5), (32.0, 0.05, -700.0),
                                               (1.5, 3.0, -2.0), (4096.0, 1e-3, -2000.0)])
def test_conversions_match_mpmath_and_invert(conversion, alpha, r, log_delta):
    eps, best, per = rdp.epsilon_from_rdp([alpha], [r], log_delta, conversion)
    with mp.workdps(50):
        a, rr, ld = mp.mpf(alpha), mp.mpf(r), mp.mpf(log_delta)
        if conversion == "classic":
            exact = rr - ld / (a - 1)  # [Mir17, Prop 3]
        else:
            exact = rr + mp.log((a - 1) / a) - (ld + mp.log(a)) / (a - 1)  # [CKS20, Prop 12]
    assert best == alpha and per[0] == eps
    assert max(exact, 0) <= eps <= max(exact, 0) * (1 + 1e-12) + 1e-300
    if exact > 0:
        ld2, best2 = rdp.log_delta_from_rdp([alpha], [r], eps, conversion)
        assert best2 == alpha
        assert ld2 == pytest.approx(log_delta, rel=1e-9, abs=1e-9)
        # and the exact inverse at the exact ε is reproduced from above
        ld3, _ = rdp.log_delta_from_rdp([alpha], [r], float(exact), conversion)
        assert ld3 >= log_delta - 1e-9 * abs(log_delta)


def test_epsilon_tiny_delta_and_edge_cases():
    o = rdp.DEFAULT_ORDERS
    r = rdp.rdp_subsampled_gaussian(o, 0.01, 1.0) * 1000
    e300, b300, _ = rdp.epsilon_from_rdp(o, r, math.log(1e-300))
    e900, b900, _ = rdp.epsilon_from_rdp(o, r, -900 * math.log(10))
    e5, b5, _ = rdp.epsilon_from_rdp(o, r, LOG_1E5)
    assert e5 < e300 < e900 < math.inf and b5 <= b300 <= b900
    # δ = 0 without α = ∞: no guarantee
    eps, best, per = rdp.epsilon_from_rdp(o, r, -math.inf)
    assert eps == math.inf and math.isnan(best) and np.all(per == math.inf)
    # α = ∞ gives pure DP
    assert rdp.epsilon_from_rdp([math.inf], [0.5], -math.inf)[0] == pytest.approx(0.5)
    # δ ≥ 1: ε = 0; orders ≤ 1 and infinite RDP skipped
    assert rdp.epsilon_from_rdp([2.0], [0.5], 0.0)[0] == 0.0
    assert rdp.epsilon_from_rdp([1.0, 2.0], [0.0, math.inf], LOG_1E5)[0] == math.inf
    # ε never negative
    assert rdp.epsilon_from_rdp([2.0], [0.0], -1e-3, "improved")[0] == 0.0
    ld, _ = rdp.log_delta_from_rdp([2.0], [0.0], 5.0)
    assert ld <= 0
    assert rdp.log_delta_from_rdp([2.0, 3.0], [1e9, 1e9], 1.0)[0] == 0.0  # clamped at δ ≤ 1


@pytest.mark.parametrize("kwargs", [dict(rdp=[-1e-3]), dict(rdp=[float("nan")]),
                                    dict(conversion="fancy"), dict(rdp=[0.1, 0.2])])
def test_conversion_validation(kwargs):
    kw = dict(orders=[2.0], rdp=[0.1], log_delta=LOG_1E5, conversion="improved") | kwargs
    with pytest.raises(ValueError):
        rdp.epsilon_from_rdp(**kw)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 4.530877117, 20.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-10, 1e-50])
@pytest.mark.parametrize("conversion", ["classic", "improved"])
def test_dominates_exact_gaussian(sigma, delta, conversion):
    o = rdp.DEFAULT_ORDERS
    eps, _, _ = rdp.epsilon_from_rdp(o, rdp.rdp_gaussian(o, sigma), math.log(delta), conversion)
    assert eps >= analytic_gaussian_eps(sigma, delta)


def test_numerical_error_is_a_dpcalc_error():
    from dpcalc.errors import DpcalcError

    assert issubclass(NumericalError, DpcalcError)
