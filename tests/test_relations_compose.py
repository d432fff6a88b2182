"""Tests for dpcalc.relations.compose: public cases, mpmath oracles, brute force, properties."""

from __future__ import annotations

import itertools
import math
import random

import mpmath as mp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcalc.relations import compose as c
from dpcalc.relations import compose_group as cg

LN = math.log


# ----------------------------------------------------------------------------------------------
# oracles (50 digits)
# ----------------------------------------------------------------------------------------------

def mp_optimal_delta(eps, log_delta, k, total_eps):
    """The KOV15 closed form δ_tot(E), evaluated at 50 digits from the exact float inputs."""
    with mp.workdps(50):
        e = mp.mpf(eps)
        p = mp.exp(e) / (1 + mp.exp(e))
        d = mp.exp(mp.mpf(log_delta)) if log_delta != -math.inf else mp.mpf(0)
        s = mp.mpf(0)
        for ell in range(k + 1):
            # p^(k−l)(1−p)^l − e^E p^l(1−p)^(k−l) = p^(k−l)(1−p)^l (1 − e^(E − (k−2l)ε)),
            # written so that an exact tie gives an exact 0
            gap = mp.mpf(total_eps) - (k - 2 * ell) * e
            if gap < 0:
                s += mp.binomial(k, ell) * p ** (k - ell) * (1 - p) ** ell * -mp.expm1(gap)
        return 1 - (1 - d) ** k + (1 - d) ** k * s


def mp_brute_force(eps_list, log_delta_list, total_eps):
    """Σ_x [P(x) − e^E Q(x)]_+ over the explicit product of the dominating pairs (50 digits)."""
    with mp.workdps(50):
        pairs = []
        for e, ld in zip(eps_list, log_delta_list, strict=True):
            e = mp.mpf(e)
            d = mp.exp(mp.mpf(ld)) if ld != -math.inf else mp.mpf(0)
            p = mp.exp(e) / (1 + mp.exp(e))
            # outcomes: top, A, B, bottom
            pairs.append(((d, (1 - d) * p, (1 - d) * (1 - p), mp.mpf(0)),
                          (mp.mpf(0), (1 - d) * (1 - p), (1 - d) * p, d)))
        big_e = mp.exp(mp.mpf(total_eps))
        total = mp.mpf(0)
        for word in itertools.product(range(4), repeat=len(pairs)):
            pp = mp.mpf(1)
            qq = mp.mpf(1)
            for (pm, qm), o in zip(pairs, word, strict=True):
                pp *= pm[o]
                qq *= qm[o]
            diff = pp - big_e * qq
            if diff > 0:
                total += diff
        return total


def mp_subsets(eps_list, log_delta_list, total_eps):
    """MV16's subset-sum form of the optimal heterogeneous composition (50 digits)."""
    with mp.workdps(50):
        big_e = mp.exp(mp.mpf(total_eps))
        prod_1md = mp.mpf(1)
        for ld in log_delta_list:
            prod_1md *= 1 - (mp.exp(mp.mpf(ld)) if ld != -math.inf else 0)
        norm = mp.mpf(1)
        for e in eps_list:
            norm *= 1 + mp.exp(mp.mpf(e))
        s = mp.mpf(0)
        for mask in itertools.product((0, 1), repeat=len(eps_list)):
            a = mp.fsum(mp.mpf(e) for e, m in zip(eps_list, mask, strict=True) if m)
            b = mp.fsum(mp.mpf(e) for e, m in zip(eps_list, mask, strict=True) if not m)
            s += max(mp.exp(a) - big_e * mp.exp(b), 0)
        return 1 - prod_1md + prod_1md * s / norm


def check_upper(ours_log, truth, rtol):
    """ours (a log) is >= truth and within rtol of it."""
    ours = mp.exp(mp.mpf(ours_log))
    assert ours >= truth, (ours, truth)
    assert ours <= truth * (1 + rtol) + mp.mpf(10) ** -320, (ours, truth)


# ----------------------------------------------------------------------------------------------
# public cases
# ----------------------------------------------------------------------------------------------

def test_public_basic():
    eps, log_d = c.basic(0.1, LN(1e-6), 10)
    assert 1.0 <= eps <= 1.0000010000000001
    assert 1e-5 <= math.exp(log_d) <= 1e-5 * (1 + 1e-12)


def test_public_advanced_budget():
    eps, log_slack = c.advanced_best(0.1, LN(1e-8), 100, LN(1e-5))
    assert 5.872141937393177 <= eps <= 5.872147809535116
    assert math.exp(log_slack) <= 1e-5 - 100 * 1e-8
    assert math.exp(log_slack) == pytest.approx(9e-6, rel=1e-12)


def test_public_advanced_slack():
    eps = c.advanced_epsilon(0.1, 100, LN(1e-6))
    assert 6.3082309505134075 <= eps <= 6.308237258744359
    total = math.exp(c.advanced_log_total_delta(LN(1e-8), 100, LN(1e-6)))
    assert 2e-06 <= total <= 2.0000020000000004e-06


def test_public_optimal_total_epsilon():
    eps = c.optimal_epsilon(0.1, LN(1e-6), 50, LN(1e-4))
    assert 2.5840935462197567 <= eps <= 2.5840961303133034


def test_public_optimal_largest_k():
    target = LN(1e-5)
    assert c.optimal_log_delta(0.1, -math.inf, 28, 2.0) <= target
    assert c.optimal_log_delta(0.1, -math.inf, 29, 2.0) > target


def test_public_optimal_per_step_epsilon():
    def passes(eps):
        return c.optimal_log_delta(eps, LN(1e-7), 100, 1.0) <= LN(1e-5)

    lo, hi = 0.0, 0.1
    assert passes(lo) and not passes(hi)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if passes(mid) else (lo, mid)
    assert 0.017279796190357025 <= lo <= 0.017279813470176576


# ----------------------------------------------------------------------------------------------
# optimal composition against oracles
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("eps,log_delta", [(0.1, LN(1e-3)), (0.7, LN(0.05)), (1.3, -math.inf),
                                           (0.05, LN(1e-9))])
def test_optimal_matches_brute_force_product(k, eps, log_delta):
    for total in sorted({0.0, 0.5 * eps, eps, (k - 1) * eps + 0.01, 0.9 * k * eps, k * eps}):
        truth = mp_brute_force([eps] * k, [log_delta] * k, total)
        formula = mp_optimal_delta(eps, log_delta, k, total)
        assert abs(truth - formula) <= mp.mpf(10) ** -40
        ours = c.optimal_log_delta(eps, log_delta, k, total)
        if truth == 0:
            assert ours == -math.inf
        else:
            check_upper(ours, truth, 1e-12)


@pytest.mark.parametrize("k,eps,log_delta,total", [
    (10, 0.3, LN(1e-6), 1.0), (50, 0.1, LN(1e-6), 2.5840935462197567),
    (300, 0.05, LN(1e-8), 1.5), (2000, 0.02, LN(1e-10), 2.0), (2000, 0.02, -math.inf, 0.0),
    (997, 1.5, LN(1e-12), 60.0), (40, 3.0, -math.inf, 100.0)])
def test_optimal_matches_mpmath_formula(k, eps, log_delta, total):
    truth = mp_optimal_delta(eps, log_delta, k, total)
    check_upper(c.optimal_log_delta(eps, log_delta, k, total), truth, 1e-9)


def test_optimal_tiny_delta_no_underflow():
    for log_delta in (LN(1e-300), -800.0, -1e4):
        for total in (0.5, 5.0, 9.99):
            v = c.optimal_log_delta(0.1, log_delta, 100, total)
            assert math.isfinite(v)
            check_upper(v, mp_optimal_delta(0.1, log_delta, 100, total), 1e-9)
        # at E >= kε only the δ part is left: 1 − (1−δ)^k ≈ kδ, far below the double range
        floor = c.optimal_log_delta(0.1, log_delta, 100, 10.0 * (1 + 1e-15))
        assert math.isfinite(floor)
        assert floor == pytest.approx(LN(100) + log_delta, rel=1e-12)
        eps = c.optimal_epsilon(0.1, log_delta, 100, floor + 1e-9)
        assert math.isfinite(eps) and eps <= 10.000000000000002


def test_optimal_accepts_infinite_probes():
    assert c.optimal_log_delta(0.1, LN(1e-6), 10, math.inf) == pytest.approx(LN(1e-5), rel=1e-5)
    assert c.optimal_log_delta(math.inf, LN(1e-6), 10, 5.0) == 0.0
    assert c.numerical_hetero_log_delta([0.1, 0.2], [-math.inf] * 2, math.inf) == -math.inf


def test_optimal_zero_only_when_exact():
    assert c.optimal_log_delta(0.1, -math.inf, 10, 1.0000000000000002) == -math.inf
    assert c.optimal_log_delta(0.1, -math.inf, 10, 0.99) > -math.inf
    assert c.optimal_log_delta(0.0, -math.inf, 10, 0.0) == -math.inf


def test_optimal_epsilon_infeasible_and_trivial():
    # floor 1 − (1−δ)^k ≈ 1e-5 > 1e-6
    assert c.optimal_epsilon(0.01, LN(1e-8), 1000, LN(1e-6)) == math.inf
    assert c.optimal_epsilon(0.01, LN(1e-8), 10, 0.0) == 0.0


def test_optimal_epsilon_returns_passing_side_and_is_tight():
    for eps, log_d, k, log_total in [(0.1, LN(1e-6), 50, LN(1e-4)), (0.01, LN(1e-10), 1000,
                                                                    LN(1e-6)), (1.0, -math.inf,
                                                                                7, LN(1e-3))]:
        e = c.optimal_epsilon(eps, log_d, k, log_total)
        assert c.optimal_log_delta(eps, log_d, k, e) <= log_total
        assert c.optimal_log_delta(eps, log_d, k, e * (1 - 1e-12)) > log_total


def test_large_k_runs():
    v = c.optimal_log_delta(0.001, LN(1e-12), 100_000, 1.0)
    assert math.isfinite(v) and v < 0
    e = c.optimal_epsilon(0.001, LN(1e-12), 100_000, LN(1e-6))
    assert c.optimal_log_delta(0.001, LN(1e-12), 100_000, e) <= LN(1e-6)
    # the √k regime: far below basic (100), below advanced
    assert e < c.advanced_best(0.001, LN(1e-12), 100_000, LN(1e-6))[0]


# ----------------------------------------------------------------------------------------------
# properties (hypothesis)
# ----------------------------------------------------------------------------------------------

eps_st = st.floats(0.001, 2.0)
log_delta_st = st.one_of(st.just(-math.inf), st.floats(-30.0, -5.0))
k_st = st.integers(1, 400)


@given(eps=eps_st, log_delta=log_delta_st, k=k_st, log_total=st.floats(-25.0, -2.0))
def test_optimal_never_above_advanced_or_basic(eps, log_delta, k, log_total):
    opt = c.optimal_epsilon(eps, log_delta, k, log_total)
    adv, _ = c.advanced_best(eps, log_delta, k, log_total)
    assert opt <= adv
    basic_eps, basic_log_delta = c.basic(eps, log_delta, k)
    if basic_log_delta <= log_total:
        assert opt <= basic_eps


@given(eps=eps_st, log_delta=log_delta_st, k=st.integers(1, 300), frac=st.floats(0.0, 1.0))
def test_optimal_monotone(eps, log_delta, k, frac):
    total = frac * k * eps
    here = c.optimal_log_delta(eps, log_delta, k, total)
    tol = 1e-7  # the certified pads differ by up to ~1e-9 relative between neighbours
    assert c.optimal_log_delta(eps, log_delta, k, total * 1.01 + 1e-9) <= here + tol
    assert c.optimal_log_delta(eps, log_delta, k + 1, total) >= here - tol
    assert c.optimal_log_delta(eps * 1.01, log_delta, k, total) >= here - tol


@given(eps=st.floats(0.01, 1.5), log_delta=log_delta_st, k=st.integers(1, 60),
       frac=st.floats(0.0, 1.0))
def test_optimal_upper_bounds_mpmath(eps, log_delta, k, frac):
    total = frac * k * eps
    truth = mp_optimal_delta(eps, log_delta, k, total)
    ours = c.optimal_log_delta(eps, log_delta, k, total)
    if truth == 0:
        assert ours == -math.inf
    else:
        check_upper(ours, truth, 1e-9)


# ----------------------------------------------------------------------------------------------
# seed variants, group privacy, heterogeneous lists
# ----------------------------------------------------------------------------------------------

def test_seed_variants():
    got = cg.seed_variants(0.1, LN(1e-8), 100, LN(1e-5))
    drv, _ = c.advanced_best(0.1, LN(1e-8), 100, LN(1e-5))
    assert got["che19_claim17_nonadaptive"] == pytest.approx(drv, rel=1e-14)  # ε ≤ ln 2
    assert got["che19_claim18_adaptive"] > got["che19_claim17_nonadaptive"]
    assert got["ubc_sqrt8k"] >= drv
    # large per-step ε: the √(8k) form drops kε(e^ε − 1) and is not valid there
    got = cg.seed_variants(1.0, LN(1e-8), 100, LN(1e-5))
    assert "ubc_sqrt8k" not in got
    assert got["che19_claim17_nonadaptive"] == pytest.approx(
        100 * 1.0 + math.sqrt(200 * -LN(1e-5 - 1e-6)), rel=1e-12)
    assert cg.seed_variants(0.1, LN(1e-6), 100, LN(1e-4)) == {}  # kδ = total δ: no slack


def test_group():
    eps_g, log_d = cg.group(1.0, LN(1e-6), 3)
    assert eps_g == 3.0
    textbook = 3 * math.e ** 2 * 1e-6
    assert textbook <= math.exp(log_d) <= textbook * (1 + 1e-12)
    eps_g, log_d = cg.group(1.0, LN(1e-6), 3, geometric=True)
    exact = 1e-6 * (1 + math.e + math.e ** 2)
    assert exact <= math.exp(log_d) <= exact * (1 + 1e-12)
    assert cg.group(0.0, LN(1e-6), 4)[1] == pytest.approx(LN(4e-6))
    assert cg.group(0.0, LN(1e-6), 4, geometric=True)[1] == pytest.approx(LN(4e-6))
    for geometric in (False, True):
        big_eps, big_log_d = cg.group(2.0, LN(1e-3), 500, geometric=geometric)
        assert big_eps == 1000.0 and big_log_d > 0  # δ_g >= 1 returned for the caller to reject
        assert cg.group(0.5, -math.inf, 10, geometric=geometric) == (5.0, -math.inf)


def test_basic_and_advanced_hetero():
    eps, log_d = c.basic_hetero([0.1, 0.2, 0.3], [LN(1e-6), -math.inf, LN(2e-6)])
    assert eps >= 0.6 and eps == pytest.approx(0.6)
    assert 3e-6 <= math.exp(log_d) <= 3e-6 * (1 + 1e-12)
    eps, log_d = c.advanced_hetero([0.1] * 100, [LN(1e-8)] * 100, LN(1e-6))
    assert eps == pytest.approx(c.advanced_epsilon(0.1, 100, LN(1e-6)), rel=1e-13)
    assert math.exp(log_d) == pytest.approx(2e-6, rel=1e-12)


def test_gaussian_mu():
    mu = c.gaussian_hetero_mu([1.0, 2.0, 2.0])
    assert mu >= math.sqrt(1.5) and mu == pytest.approx(math.sqrt(1.5), rel=1e-14)
    assert c.gaussian_hetero_mu([4.0] * 100) == pytest.approx(2.5, rel=1e-14)


def test_numerical_hetero_equals_optimal_when_homogeneous():
    for eps, log_d, k, total in [(0.1, LN(1e-6), 50, 2.0), (0.02, LN(1e-9), 3000, 1.5)]:
        a = c.numerical_hetero_log_delta([eps] * k, [log_d] * k, total)
        b = c.optimal_log_delta(eps, log_d, k, total)
        assert a == pytest.approx(b, rel=1e-12, abs=1e-12)
    e1 = c.numerical_hetero_epsilon([0.1] * 50, [LN(1e-6)] * 50, LN(1e-4))
    e2 = c.optimal_epsilon(0.1, LN(1e-6), 50, LN(1e-4))
    assert e1 == pytest.approx(e2, rel=1e-12)


def test_numerical_hetero_exact_and_grid_against_subset_oracle():
    rng = random.Random(7)
    for _ in range(4):
        k = rng.randint(2, 9)
        eps = [rng.choice([0.05, 0.1, 0.3, rng.uniform(0.01, 1.0)]) for _ in range(k)]
        lds = [rng.choice([-math.inf, LN(1e-6), LN(rng.uniform(1e-9, 1e-3))]) for _ in range(k)]
        for frac in (0.0, 0.2, 0.5, 0.8):
            total = frac * sum(eps)
            truth = mp_subsets(eps, lds, total)
            check_upper(c.numerical_hetero_log_delta(eps, lds, total), truth, 1e-9)
            grid = mp.exp(c.numerical_hetero_log_delta(eps, lds, total, _force_grid=True))
            assert grid >= truth


def test_subset_oracle_matches_brute_force():
    eps = [0.1, 0.4, 0.25]
    lds = [LN(1e-3), -math.inf, LN(0.02)]
    for total in (0.0, 0.3, 0.6):
        assert abs(mp_subsets(eps, lds, total) - mp_brute_force(eps, lds, total)) < 1e-40


def test_numerical_hetero_grid_is_sound_and_close():
    rng = random.Random(3)
    eps = [rng.uniform(0.02, 0.2) for _ in range(120)]
    lds = [LN(1e-9)] * 120
    grid_eps = c.numerical_hetero_epsilon(eps, lds, LN(1e-5))
    adv, _ = c.advanced_hetero(eps, lds, LN(1e-5 - 120e-9))
    assert grid_eps < adv
    # coarsen the list to 3 groups rounded UP: a valid upper bound computed exactly
    ups = [0.08 if e <= 0.08 else 0.14 if e <= 0.14 else 0.2 for e in eps]
    assert grid_eps <= c.numerical_hetero_epsilon(ups, lds, LN(1e-5))
    # and the exact value for the rounded-DOWN list lies below it
    downs = [0.02 if e < 0.08 else 0.08 if e < 0.14 else 0.14 for e in eps]
    assert grid_eps >= c.numerical_hetero_epsilon(downs, lds, LN(1e-5))


def test_validation_messages():
    with pytest.raises(ValueError, match="epsilon"):
        c.basic(-1.0, LN(1e-6), 3)
    with pytest.raises(ValueError, match="k must be an integer"):
        c.basic(1.0, LN(1e-6), 0)
    with pytest.raises(ValueError, match="log_delta"):
        c.optimal_log_delta(1.0, 0.5, 3, 1.0)
    with pytest.raises(ValueError, match="differ in length"):
        c.basic_hetero([0.1, 0.2], [LN(1e-6)])
    with pytest.raises(ValueError, match="sigma"):
        c.gaussian_hetero_mu([1.0, 0.0])
    assert c.advanced_best(0.1, LN(1e-6), 100, LN(1e-4)) == (math.inf, -math.inf)


def test_tail_truncation_is_sound_homogeneous():
    # k = 6000: the binomial core is a few hundred terms wide, so most terms are bounded, not
    # summed; the result must still upper-bound the full 50-digit sum and stay tight
    for total in (1.0, 4.0, 9.0):
        truth = mp_optimal_delta(0.01, LN(1e-9), 6000, total)
        check_upper(c.optimal_log_delta(0.01, LN(1e-9), 6000, total), truth, 1e-8)


def test_tail_truncation_is_sound_multinomial():
    # 31·21·26 = 16926 states (exact path); large ε makes the masses span > 120 nats, so the
    # bounded-not-summed tail is used at E = 10 and E = 100
    groups = [(4.0, 30), (5.0, 20), (6.0, 25)]
    eps = [e for e, n in groups for _ in range(n)]
    lds = [LN(1e-8)] * len(eps)
    for total in (10.0, 100.0, 300.0):
        with mp.workdps(50):
            big_e = mp.mpf(total)
            s = mp.mpf(0)
            terms = []
            for e, n in groups:
                e = mp.mpf(e)
                p = mp.exp(e) / (1 + mp.exp(e))
                terms.append([(mp.binomial(n, ell) * p ** (n - ell) * (1 - p) ** ell,
                               (n - 2 * ell) * e) for ell in range(n + 1)])
            for combo in itertools.product(*terms):
                loss = mp.fsum(t[1] for t in combo)
                if loss > big_e:
                    w = mp.fprod(t[0] for t in combo)
                    s += w * -mp.expm1(big_e - loss)
            one_minus = (1 - mp.exp(mp.mpf(LN(1e-8)))) ** len(eps)
            truth = 1 - one_minus + one_minus * s
        check_upper(c.numerical_hetero_log_delta(eps, lds, total), truth, 1e-9)
