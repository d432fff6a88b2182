"""Tests of the certified PLD accountant (dpcalc.relations.pld).

Oracles: the T-fold composition of the Gaussian mechanism is the Gaussian mechanism with
μ = √T/σ (q = 1), whose privacy profile is exact in mpmath [BW18]; the published windows of
shared/reference/public-cases.json; internal consistency (δ ↔ ε, monotonicity, curve vs
single points); the numerical building blocks against exact arithmetic.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.relations import pld

LOG_1E5 = math.log(1e-5)


# --------------------------------------------------------------------------------------
# exact Gaussian oracle (q = 1)
# --------------------------------------------------------------------------------------

def exact_log_delta(mu: float, eps: float) -> float:
    """log δ(ε) of the Gaussian mechanism with μ = Δ/σ [BW18, Thm 8], 80 digits."""
    with mp.workdps(80):
        mu_, eps_ = mp.mpf(mu), mp.mpf(eps)
        v = mp.ncdf(mu_ / 2 - eps_ / mu_) - mp.e ** eps_ * mp.ncdf(-mu_ / 2 - eps_ / mu_)
        return float(mp.log(v))


def exact_eps(mu: float, log_delta: float) -> float:
    """Smallest ε ≥ 0 with δ(ε) ≤ δ (bisection in mpmath)."""
    if exact_log_delta(mu, 0.0) <= log_delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while exact_log_delta(mu, hi) > log_delta:
        lo, hi = hi, 2 * hi
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if exact_log_delta(mu, mid) > log_delta:
            lo = mid
        else:
            hi = mid
    return hi


GAUSS_CASES = [
    # σ, T, log δ
    (10.0, 100, LOG_1E5),
    (1.0, 1, LOG_1E5),
    (5.0, 10, math.log(1e-10)),
    (2.0, 50, math.log(1e-30)),
    (0.5, 3, math.log(1e-6)),
    (20.0, 10_000, LOG_1E5),
    (3.0, 1000, -300 * math.log(10)),      # δ = 1e-300
    (1.0, 1, -2000.0),                      # δ = e^-2000, far below the double range
]


@pytest.mark.parametrize("sigma,steps,log_delta", GAUSS_CASES)
def test_q1_bracket_contains_exact_gaussian_epsilon(sigma, steps, log_delta):
    lo, up = pld.epsilon_bounds(1.0, sigma, steps, log_delta)
    exact = exact_eps(math.sqrt(steps) / sigma, log_delta)
    assert lo <= exact <= up
    assert (up - lo) / up <= 1e-3


@pytest.mark.parametrize("sigma,steps,eps", [
    (10.0, 100, 1.0), (2.0, 50, 10.0), (1.0, 1, 0.0), (5.0, 10, 3.0), (1.0, 1, 60.0),
    (0.5, 3, 0.1), (3.0, 1000, 400.0)])
def test_q1_delta_bracket_contains_exact_gaussian_delta(sigma, steps, eps):
    lo, up = pld.log_delta_bounds(1.0, sigma, steps, eps)
    exact = exact_log_delta(math.sqrt(steps) / sigma, eps)
    assert lo <= exact <= up


def test_q1_zero_epsilon_when_delta_exceeds_total_variation():
    # σ = 50, one step: δ(0) = TV ≈ 0.008 < 0.5, so ε(0.5) = 0 exactly
    assert pld.epsilon_bounds(1.0, 50.0, 1, math.log(0.5)) == (0.0, 0.0)


# --------------------------------------------------------------------------------------
# published windows (shared/reference/public-cases.json)
# --------------------------------------------------------------------------------------

Q_MNIST = math.nextafter(256 / 60000, 1.0)
PUBLIC = [
    # q, σ, steps, δ, window for the upper end, certified truth bracket (dp_accounting / prv)
    (0.01, 4.0, 10_000, 1e-5, (0.9463870374438275, 0.9487621114410834)),
    (1e-3, 1.0, 1_000_000, 1e-6, (6.6848462412904235, 6.707702903135215)),
    (Q_MNIST, 1.1, 14_063, 1e-5, (2.3804844884219984, 2.386453976566726)),
    (1.0, 10.0, 100, 1e-5, (4.3771780956812245, 4.385932451872588)),
]
TRUTH_LOWER = {0.01: 0.9463870374438275, 1e-3: 6.6848462412904235, Q_MNIST: 2.3804844884219984,
               1.0: 4.3771780956812245}
TRUTH_UPPER = {0.01: 0.9468683746916999, 1e-3: 6.6943142745860422, Q_MNIST: 2.3816905953759737,
               1.0: 4.3771780956812246}


@pytest.mark.parametrize("q,sigma,steps,delta,window", PUBLIC)
def test_public_windows(q, sigma, steps, delta, window):
    lo, up = pld.epsilon_bounds(q, sigma, steps, math.log(delta))
    assert window[0] <= up <= window[1]
    # soundness against the independent certified brackets: our upper end is not below
    # their lower end and our lower end is not above their upper end
    assert up >= TRUTH_LOWER[q]
    assert lo <= TRUTH_UPPER[q]
    assert (up - lo) / up <= 1e-3


# few sampled steps at a small q: dp_accounting's pessimistic connect-the-dots ε at
# discretisation 1e-5 (an independent implementation; benchmark venv, dp-accounting 0.6.0), the
# public cases' window (upper end within 0.2 % above it).  The grid set by the tilted law alone
# gave 0.08487, 0.10035 and 0.40308 (compose._bulk_h)
SMALL_Q = [
    (1.23e-4, 0.653, 1_195, 0.08434654497488742),
    (1e-4, 0.7, 10_000, 0.09957990687587713),
    (1e-4, 0.6, 30_000, 0.40253969710370713),
]


@pytest.mark.parametrize("q,sigma,steps,reference", SMALL_Q)
def test_small_q_few_sampled_steps_within_0_2_percent(q, sigma, steps, reference):
    lo, up = pld.epsilon_bounds(q, sigma, steps, LOG_1E5)
    assert lo <= reference and up <= reference * 1.002


# Brackets on the true ε from an independent computation (a helper session, numpy/scipy, not
# dpcalc's engine): the remove direction's one-step loss discretised with exact per-bin
# Gaussian masses (log_ndtr), every loss rounded down (a lower bound on δ by coupling) or up
# (an upper bound), h = 1e-8 (5e-9 for the 1e4 steps); at δ = 6.3e-14 the T-fold law split
# into steps with L < 0.01 and the rest, expanded binomially (one and two large steps by FFT,
# none by a Chernoff bound, three or more bounded by C(T,3)π³); the add direction's δ is 0
# there (383·(−log(1 − q)) < ε).  Every truncation is paid for; the FFTs' round-off is not
# interval-checked (about 1e-10 relative, by nesting across grids).
INDEPENDENT = [
    # q, σ, steps, δ, (lower, upper) on the true ε, our upper end at most this share above
    (7.747e-05, 1.1140660655005359, 383, 6.292e-14, (0.0432752, 0.0432790), 0.01),
    (7.747e-05, 1.1536383868153128, 383, 6.292e-14, (0.0344692, 0.0344730), 0.01),
    (1.23e-4, 0.653, 1_195, 1e-5, (0.0843383, 0.0843526), 1e-3),
    (1e-4, 0.7, 10_000, 1e-5, (0.0995468, 0.0996007), 1e-3),
]


@pytest.mark.parametrize("q,sigma,steps,delta,truth,share", INDEPENDENT)
def test_small_q_brackets_hold_the_independent_truth(q, sigma, steps, delta, truth, share):
    # (before: [0.0085, 0.0597] and [0.0081, 0.0442] at 383 steps, the ℓ1 error term of
    # short spikes' FFTs; 0.08487 and 0.10035 for the other two, pmf._conv, compose._bulk_h;
    # the first two are still 0.7 % above the truth: their error term is 6 % of δ)
    lo, up = pld.epsilon_bounds(q, sigma, steps, math.log(delta))
    assert up >= truth[0] and lo <= truth[1]
    assert up <= truth[1] * (1.0 + share)


def test_headline_lower_bound_window():
    lo, _ = pld.epsilon_bounds(0.01, 4.0, 10_000, LOG_1E5)
    assert 0.47319351872191373 <= lo <= 0.9468683746916999


# --------------------------------------------------------------------------------------
# consistency
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("q,sigma,steps,log_delta", [
    (0.01, 4.0, 10_000, LOG_1E5), (1e-3, 1.0, 10_000, math.log(1e-8)),
    (0.05, 2.0, 500, math.log(1e-12)), (1.0, 3.0, 20, math.log(1e-6))])
def test_delta_epsilon_round_trip(q, sigma, steps, log_delta):
    lo, up = pld.epsilon_bounds(q, sigma, steps, log_delta)
    # δ(upper) ≤ δ, so any certified lower bound of δ there is ≤ δ
    d_lo, d_up = pld.log_delta_bounds(q, sigma, steps, up)
    assert d_lo <= log_delta + 1e-12
    # δ(lower) ≥ δ, so any certified upper bound of δ there is ≥ δ
    if lo > 0:
        d_lo2, d_up2 = pld.log_delta_bounds(q, sigma, steps, lo)
        assert d_up2 >= log_delta - 1e-12
    assert d_lo <= d_up


def test_add_direction_has_bounded_loss():
    # both directions are accounted for; beyond T·(−log(1−q)) only the remove direction
    # contributes, and δ stays positive and finite
    lo, up = pld.log_delta_bounds(0.5, 1.0, 3, 3.0)
    assert -math.inf < up <= 0.0 and lo <= up


@settings(deadline=None, max_examples=6)
@given(sigma=st.floats(0.8, 8.0), factor=st.floats(1.05, 2.0),
       q=st.sampled_from([1e-3, 0.01, 0.1, 1.0]), steps=st.integers(1, 3000))
def test_monotone_in_sigma(sigma, factor, q, steps):
    # more noise never costs more privacy: certified brackets must be consistent with that
    lo1, up1 = pld.epsilon_bounds(q, sigma, steps, LOG_1E5)
    lo2, up2 = pld.epsilon_bounds(q, sigma * factor, steps, LOG_1E5)
    assert lo2 <= up1
    assert up2 <= up1 * (1 + 2e-3) + 1e-12


@settings(deadline=None, max_examples=6)
@given(q=st.floats(1e-3, 0.5), factor=st.floats(1.1, 2.0), steps=st.integers(10, 5000))
def test_monotone_in_q(q, factor, steps):
    lo1, up1 = pld.epsilon_bounds(q, 1.5, steps, LOG_1E5)
    lo2, up2 = pld.epsilon_bounds(min(1.0, q * factor), 1.5, steps, LOG_1E5)
    assert lo1 <= up2
    assert up1 <= up2 * (1 + 2e-3) + 1e-12


@settings(deadline=None, max_examples=6)
@given(steps=st.integers(1, 20_000), extra=st.integers(1, 20_000))
def test_monotone_in_steps(steps, extra):
    lo1, up1 = pld.epsilon_bounds(0.01, 2.0, steps, LOG_1E5)
    lo2, up2 = pld.epsilon_bounds(0.01, 2.0, steps + extra, LOG_1E5)
    assert lo1 <= up2
    assert up1 <= up2 * (1 + 2e-3) + 1e-12


def test_curve_matches_single_points_and_is_incremental():
    steps = [100 * e for e in range(1, 41)]
    calls = []
    orig = pld._Engine.compose

    def counting(self, n, mult=1):
        calls.append(n)
        return orig(self, n, mult)

    pld._Engine.compose = counting
    try:
        curve = pld.epsilon_curve(0.01, 4.0, steps, LOG_1E5)
    finally:
        pld._Engine.compose = orig
    assert [s for s, _, _ in curve] == steps
    # incremental: composes a few increments, not every prefix from scratch
    assert max(calls) <= max(steps) and sum(calls) <= 4 * max(steps)
    for s, lo, up in curve[::13]:
        lo1, up1 = pld.epsilon_bounds(0.01, 4.0, s, LOG_1E5)
        assert lo <= up1 and lo1 <= up          # brackets of the same truth overlap
    ups = [u for _, _, u in curve]
    assert all(b >= a * (1 - 2e-3) for a, b in zip(ups, ups[1:], strict=False))


def test_certify_epsilon_agrees_with_brackets():
    lo, up = pld.epsilon_bounds(0.01, 4.0, 10_000, LOG_1E5)
    assert pld.certify_epsilon(0.01, 4.0, 10_000, LOG_1E5, up * 1.002) is True
    assert pld.certify_epsilon(0.01, 4.0, 10_000, LOG_1E5, lo * 0.998) is False
    assert pld.certify_epsilon(0.01, 4.0, 10_000, LOG_1E5, 0.9468684) in (True, False, None)


def test_sigma_solve_with_certify_is_in_public_window():
    # (its speed is measured in benchmarks/bench_pld.py, not asserted here)
    lo, hi = 3.0, 5.0
    assert pld.certify_epsilon(0.01, hi, 10_000, LOG_1E5, 1.0) is True
    while hi - lo > 1e-3 * hi:
        mid = 0.5 * (lo + hi)
        if pld.certify_epsilon(0.01, mid, 10_000, LOG_1E5, 1.0):
            hi = mid
        else:
            lo = mid
    assert 3.811118636598816 <= hi <= 3.820447813549263


# --------------------------------------------------------------------------------------
# extremes, tiny δ, refusal
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("q,sigma,steps,log_delta", [
    (1e-6, 0.5, 10_000_000, LOG_1E5),
    (1e-6, 1.0, 10_000_000, LOG_1E5),
    (1e-6, 0.5, 1, LOG_1E5),
    (0.5, 0.5, 10_000_000, LOG_1E5),
    (0.01, 1e4, 1_000_000, LOG_1E5),
    (1.0, 1e-3, 1, LOG_1E5),
    (0.01, 4.0, 10_000, -300 * math.log(10)),
])
def test_extremes_answer_or_refuse(q, sigma, steps, log_delta):
    # how quickly is measured in benchmarks/bench_pld.py (EXTREMES), not asserted here
    try:
        lo, up = pld.epsilon_bounds(q, sigma, steps, log_delta)
    except pld.PLDUncertifiable:
        pass
    else:
        assert math.isfinite(lo) and math.isfinite(up) and 0.0 <= lo <= up


def test_large_sigma_matches_gaussian_dp_limit():
    # σ = 1e4, q = 0.01, T = 1e6: the composition is μ-GDP with μ = q√(T(e^{1/σ²}−1)) ≈ 1e-3
    # to high accuracy (CLT), ε(1e-5) ≈ 1.94e-3; the certified bracket must be that tight
    lo, up = pld.epsilon_bounds(0.01, 1e4, 1_000_000, LOG_1E5)
    mu = 0.01 * math.sqrt(1e6 * math.expm1(1e-8))
    assert lo <= exact_eps(mu, LOG_1E5) * 1.01 and up >= exact_eps(mu, LOG_1E5) * 0.99
    assert (up - lo) / up < 5e-3


def _rdp_epsilon_upper(q, sigma, steps, log_delta, orders=range(2, 130)):
    """A sound RDP upper bound (integer orders, binomial expansion [MTZ19], classic
    conversion [Mir17]); only used as a sanity ceiling."""
    best = math.inf
    with mp.workdps(30):
        for a in orders:
            terms = [mp.binomial(a, k) * (1 - q) ** (a - k) * mp.mpf(q) ** k
                     * mp.e ** ((k * k - k) / (2 * sigma ** 2)) for k in range(a + 1)]
            rdp = float(mp.log(mp.fsum(terms))) / (a - 1)
            best = min(best, steps * rdp - log_delta / (a - 1))
    return best


@pytest.mark.parametrize("log_delta", [-30 * math.log(10), -300 * math.log(10)])
def test_tiny_delta_is_certified_below_rdp(log_delta):
    lo, up = pld.epsilon_bounds(0.01, 4.0, 10_000, log_delta)
    assert 0 < lo <= up <= _rdp_epsilon_upper(0.01, 4.0, 10_000, log_delta)
    assert (up - lo) / up <= 1e-3


def test_refuses_rather_than_guessing(monkeypatch):
    # make the round-off budget astronomically large: no certified bound can exist, and
    # the accountant must refuse instead of returning something uncertified
    monkeypatch.setattr(pld, "_fft_roundoff_l2", lambda *a: 1e300)
    with pytest.raises(pld.PLDUncertifiable):
        pld.epsilon_bounds(0.01, 4.0, 10_000, LOG_1E5)


@pytest.mark.parametrize("kwargs", [
    dict(q=0.0), dict(q=1.5), dict(q=float("nan")), dict(noise_multiplier=0.0),
    dict(noise_multiplier=-1.0), dict(noise_multiplier=float("inf")), dict(steps=0),
    dict(steps=1.5), dict(log_delta=0.0), dict(log_delta=float("-inf")),
    dict(tolerance=0.0)])
def test_validation(kwargs):
    args = dict(q=0.01, noise_multiplier=4.0, steps=100, log_delta=LOG_1E5, tolerance=1e-3)
    args.update(kwargs)
    with pytest.raises(ValueError):
        pld.epsilon_bounds(**args)


# --------------------------------------------------------------------------------------
# building blocks
# --------------------------------------------------------------------------------------

def test_log_erfc_relative_accuracy_matches_assumption():
    ys = np.concatenate((np.linspace(-5, 5, 201), np.geomspace(5, 26, 100),
                         np.geomspace(26.0001, 300, 100)))
    got = pld._log_erfc(ys)
    with mp.workdps(50):
        for y, g in zip(ys, got, strict=True):
            exact = mp.log(mp.erfc(mp.mpf(float(y))))
            # relative error of erfc = |Δ log erfc|; y² rounding is budgeted separately
            assert abs(g - float(exact)) <= pld._ERFC_REL + 4 * pld._U * (1 + y * y)


def test_fft_convolution_error_within_bound():
    rng = np.random.default_rng(1)
    for n, spiky in [(3000, False), (40_000, False), (40_000, True)]:
        a = rng.random(n) ** 8
        b = rng.random(n + 17) ** 8
        if spiky:
            a[n // 3] = 1e3
        da = pld._Dist(0, 0, a, 0.0, 0.0, 0.0)
        db = pld._Dist(0, 0, b, 0.0, 0.0, 0.0)
        out = pld._conv(da, db)
        got = out.t * math.exp(out.logscale)
        # exact convolution of the doubles (integers after scaling by 2^60)
        ia = [int(Fraction(x) * 2 ** 1074) for x in a[:400]]
        ib = [int(Fraction(x) * 2 ** 1074) for x in b[:400]]
        exact_head = [Fraction(sum(ia[i] * ib[k - i] for i in range(k + 1)), 2 ** 2148)
                      for k in range(400)]
        err = max(abs(float(Fraction(float(g)) - e)) for g, e in zip(got[:400], exact_head,
                                                                      strict=True))
        assert err <= out.einf * math.exp(out.logscale) + 1e-300


def test_connect_the_dots_dominates_and_buckets_are_dominated_one_step():
    # one step (q = 1): the discretised δ(ε) must bracket the exact Gaussian profile
    for eps in (0.0, 0.5, 2.0):
        lo, up = pld.log_delta_bounds(1.0, 2.0, 1, eps)
        exact = exact_log_delta(0.5, eps)
        assert lo <= exact <= up
