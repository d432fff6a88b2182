"""Issue 13: the comparison rows of ``dpsgd`` (rdp, strong) skip work that cannot change their
answer. Each shortcut is checked to give exactly the answer of the full computation."""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest

from dpcalc.numeric import optimize
from dpcalc.relations import dpsgd as rel
from dpcalc.relations import rdp, rdp_pruned

LOG_1E5 = math.log(1e-5)


def _full_rdp_epsilon(q, sigma, steps, log_delta):
    orders = rel._orders()
    total = rdp.compose_steps(rdp.rdp_subsampled_gaussian(orders, q, sigma), steps)
    eps, best, _ = rdp.epsilon_from_rdp(orders, total, log_delta, "improved")
    return eps, best


def _full_rdp_log_delta(q, sigma, steps, epsilon):
    orders = rel._orders()
    total = rdp.compose_steps(rdp.rdp_subsampled_gaussian(orders, q, sigma), steps)
    return rdp.log_delta_from_rdp(orders, total, epsilon, "improved")[0]


@pytest.mark.parametrize("q", [1e-5, 256 / 60000, 0.01, 0.1, 0.5, 1.0])
def test_rdp_with_pruned_orders_is_the_full_grid_answer(q):
    for sigma, steps in itertools.product([0.5, 1.1, 4.0, 24.7, 1e4], [1, 100, 14063, 10**6]):
        for log_delta in (LOG_1E5, -700.0):
            got = rel.rdp_epsilon(q, sigma, steps, log_delta)
            want = _full_rdp_epsilon(q, sigma, steps, log_delta)
            assert got[0] == want[0] and (got[1] == want[1] or math.isnan(want[1]))
        for epsilon in (0.1, 1.0, 8.0):
            assert rel.rdp_log_delta(q, sigma, steps, epsilon) == \
                _full_rdp_log_delta(q, sigma, steps, epsilon)


def test_rdp_groups_are_evaluated_as_on_the_whole_grid():
    # each group's values are the whole grid's at those orders (they are evaluated apart)
    index = {a: i for i, a in enumerate(rdp.DEFAULT_ORDERS)}
    ints, frac, tail = rdp_pruned.groups()
    assert sorted(ints + frac + tail) == sorted(rdp.DEFAULT_ORDERS)
    for q, sigma in [(0.01, 4.0), (256 / 60000, 1.1), (0.3, 0.7), (1e-4, 20.0)]:
        whole = rdp.rdp_subsampled_gaussian(rel._orders(), q, sigma)
        for group in (ints, frac, tail):
            part = rdp.rdp_subsampled_gaussian(group, q, sigma)
            assert np.array_equal(part, whole[[index[a] for a in group]])


def test_rdp_long_orders_are_skipped_in_the_headline_cases(monkeypatch):
    # the shortcut is taken where it matters (the σ solves of the headline examples)
    asked = []
    real = rdp.rdp_subsampled_gaussian

    def spy(orders, q, sigma):
        asked.append(tuple(orders))
        return real(orders, q, sigma)

    monkeypatch.setattr(rdp, "rdp_subsampled_gaussian", spy)
    ints, frac, tail = rdp_pruned.groups()
    rel.rdp_epsilon(0.01, 4.1258, 10000, LOG_1E5)
    assert set(asked) == {ints}  # (the lower bounds read the first group's values again)
    asked.clear()
    rel.rdp_epsilon(256 / 60000, 1.014, 14063, LOG_1E5)
    assert tail not in asked


def _exact_rdp(alpha, q, sigma):
    """log(A_α)/(α − 1) [MTZ19]: the binomial sum at integer α (Sec 3.2), else the integral
    A_α = E_{z∼N(0,σ²)}[((1−q) + q·e^{(2z−1)/(2σ²)})^α] by quadrature (Sec 3.3)."""
    with mp.workdps(25):
        mq, ms, ma = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)
        if float(alpha).is_integer():
            n = int(alpha)
            am1 = mp.fsum(mp.binomial(n, k) * mq**k * (1 - mq) ** (n - k)
                          * mp.expm1(mp.mpf(k * k - k) / (2 * ms * ms))
                          for k in range(2, n + 1))
            return mp.log1p(am1) / (n - 1)
        points = sorted({-10 * sigma, 0.0, 0.5, alpha, alpha + 10 * sigma})
        a = mp.quad(lambda z: ((1 - mq) + mq * mp.exp((2 * z - 1) / (2 * ms * ms))) ** ma
                    * mp.npdf(z, 0, ms), [-mp.inf, *points, mp.inf])
        return mp.log(a) / (ma - 1)


@pytest.mark.parametrize("q,sigma", [(0.01, 4.0), (256 / 60000, 1.1), (0.3, 0.7), (1e-4, 20.0)])
def test_rdp_floors_are_below_the_exact_rdp(q, sigma):
    ints, frac, tail = rdp_pruned.groups()
    for group, step in ((frac, 7), (tail, 12)):
        floors = rdp_pruned._floors(q, sigma, group)
        upper = rdp.rdp_subsampled_gaussian(group, q, sigma)
        for alpha, floor, up in list(zip(group, floors, upper, strict=True))[::step]:
            assert 0 <= floor <= _exact_rdp(alpha, q, sigma) <= up


@pytest.mark.parametrize("q,sigma", [(1e-8, 1e4), (1e-4, 0.5), (0.01, 1.0), (0.3, 0.7),
                                     (0.99, 0.3), (0.5, 30.0)])
def test_rdp_whole_sum_lower_bound_is_below_the_exact_log_a(q, sigma):
    ns = (2, 3, 7, 10, 64)
    lower = rdp_pruned._log_a_lower(q, sigma, ns)
    for n, low in zip(ns, lower, strict=True):
        with mp.workdps(40):
            mq, ms = mp.mpf(q), mp.mpf(sigma)
            am1 = mp.fsum(mp.binomial(n, k) * mq**k * (1 - mq) ** (n - k)
                          * mp.expm1(mp.mpf(k * k - k) / (2 * ms * ms))
                          for k in range(2, n + 1))
            exact = mp.log1p(am1)  # log A_n [MTZ19, Sec 3.2]
        assert 0 <= low <= exact and (exact < 1e-290 or low >= exact * (1 - 1e-6))


def test_rdp_kept_orders_get_the_whole_grid_values():
    # a group's orders are evaluated in part; the fractional ones share a series width set by
    # the largest, which is kept with them: every kept order has the whole grid's value
    index = {a: i for i, a in enumerate(rdp.DEFAULT_ORDERS)}
    ints, frac, tail = rdp_pruned.groups()
    kept = rdp_pruned._candidates(0.01, 1.0, 5000, frac, 4.6, log_delta=LOG_1E5)
    assert 1 < len(kept) < len(frac) and kept[-1] == frac[-1]
    rng = np.random.default_rng(5)
    for q, sigma in [(0.01, 1.0), (256 / 60000, 1.1), (0.3, 0.7), (1e-4, 20.0), (0.9, 3.0)]:
        whole = rdp.rdp_subsampled_gaussian(rel._orders(), q, sigma)
        for group in (frac, tail):
            for size in (1, 5, 20):
                part = tuple(sorted(rng.choice(group[:-1], size, replace=False).tolist()))
                part += (group[-1],)
                got = rdp.rdp_subsampled_gaussian(part, q, sigma)
                assert np.array_equal(got, whole[[index[a] for a in part]])


def test_rdp_conversion_of_the_candidate_orders_is_the_whole_group_s():
    # _convert converts only the orders that may be the first minimum: the same (ε, order)
    # with ties, infinite RDP and values clamped at 0
    rng = np.random.default_rng(9)
    for group in rdp_pruned.groups():
        for trial in range(200):
            total = np.exp(rng.uniform(-40, 8, len(group)))
            if trial % 4 == 1:
                total[rng.integers(0, len(group), 5)] = math.inf
            if trial % 4 == 2:
                total = np.round(total, 1)  # many ties, and zeros
            if trial % 10 == 3:
                total[:] = math.inf
            log_delta = -math.exp(rng.uniform(-12, 7))
            got = rdp_pruned._convert(group, total, log_delta)
            want = rdp.epsilon_from_rdp(group, total, log_delta, "improved")[:2]
            assert got[0] == want[0] and (got[1] == want[1] or math.isnan(want[1]))


def _full_grid(objective, lo, hi, points, iterations=40, lower=None):
    return _real_minimize(objective, lo, hi, points, iterations)


_real_minimize = optimize.minimize_on_grid


@pytest.mark.parametrize("q", [1e-4, 256 / 60000, 0.01, 0.1, 1.0])
def test_strong_with_lower_values_is_the_full_grid_answer(q, monkeypatch):
    cases = list(itertools.product([0.5, 1.1, 4.0, 24.68, 100.0], [1, 100, 10000, 10**7],
                                   [LOG_1E5, -700.0]))
    got = [rel.strong_epsilon(q, s, t, ld) for s, t, ld in cases]
    monkeypatch.setattr(optimize, "minimize_on_grid", _full_grid)
    want = [rel.strong_epsilon(q, s, t, ld) for s, t, ld in cases]
    for g, w in zip(got, want, strict=True):
        assert g[0] == w[0] and (g[1] == w[1] or (math.isnan(g[1]) and math.isnan(w[1])))


def test_strong_floor_is_below_the_objective():
    for q, s, t, e0 in itertools.product([1e-3, 0.01, 1.0], [0.8, 4.0, 30.0], [1, 10**4],
                                         [1e-4, 0.01, 1.0, 30.0, 500.0]):
        assert rel._strong_epsilon_floor(q, t, LOG_1E5, e0) <= \
            rel._strong_epsilon_at(q, s, t, LOG_1E5, e0)


def test_first_exact_minimum_is_the_scan_s_choice_with_ties_and_nans():
    # the heap picks what the scan (min over the list, first of equal values) picks, and a
    # NaN (lower or objective) hands over to that scan
    rng = np.random.default_rng(11)
    for trial in range(300):
        exact = rng.integers(0, 6, size=15).astype(float)
        lows = exact - rng.integers(0, 3, size=15)
        if trial % 3 == 1:
            exact[rng.integers(0, 15)] = math.nan
        if trial % 3 == 2:
            lows[rng.integers(0, 15)] = math.nan
        grid = list(range(15))
        values, done = lows.tolist(), [False] * 15
        got = optimize._first_exact_minimum(exact.__getitem__, grid, values, done)
        values2, done2 = lows.tolist(), [False] * 15
        while True:
            i = min(range(15), key=values2.__getitem__)
            if done2[i]:
                break
            values2[i], done2[i] = float(exact[i]), True
        assert got == i and done == done2
        assert all(a == b or (a != a and b != b) for a, b in zip(values, values2, strict=True))


def test_minimize_on_grid_with_lower_values_picks_the_same_point():
    rng = np.random.default_rng(7)
    for _ in range(200):
        exact = rng.integers(0, 6, size=21).astype(float)  # many ties
        slack = rng.integers(0, 3, size=21).astype(float)

        def objective(x, exact=exact):
            return float(exact[min(int(round(x)), 20)])

        def lower(x, exact=exact, slack=slack):
            i = min(int(round(x)), 20)
            return float(exact[i] - slack[i])

        assert optimize.minimize_on_grid(objective, 0.0, 20.0, 21, 5, lower=lower) == \
            optimize.minimize_on_grid(objective, 0.0, 20.0, 21, 5)
