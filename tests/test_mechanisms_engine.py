"""The new pairs through the certified PLD engine: references, orderings, K = 1 equals today."""

from __future__ import annotations

import math

import pytest

from dpcalc.mechanisms import fixed_batch, poisson_add_remove, poisson_replace_one
from dpcalc.pld import accountant
from dpcalc.pld.pair import DominatingPair

# TF Privacy's privacy statement examples: N = 10000, B = 64, σ = 1.0, 5 epochs, δ = 1e-6
Q_TF = 64 / 10000
T_TF = math.ceil(5 / Q_TF)
LOG_D_TF = math.log(1e-6)


def _eps(pair, steps, log_delta=LOG_D_TF):
    assert isinstance(pair, DominatingPair)
    return accountant.epsilon_bounds([(pair, steps)], log_delta)


def test_tf_privacy_statement_poisson_one_example_per_user():
    lo, up = _eps(poisson_add_remove.engine_pair(Q_TF, 1.0, 1), T_TF)
    assert lo <= 1.199 + 5e-4 and up >= 1.199 - 5e-4 and up - lo < 2e-3


def test_tf_privacy_statement_poisson_two_examples_per_user():
    # "≤ 2 examples per user, Poisson, PLD ≈ 2.532"
    lo, up = _eps(poisson_add_remove.engine_pair(Q_TF, 1.0, 2), T_TF)
    assert lo <= 2.532 + 1e-3 and up >= 2.532 - 1e-3 and up - lo < 3e-3


def test_k_equal_one_is_todays_accountant():
    from dpcalc.relations import pld

    assert poisson_add_remove.engine_pair(0.01, 1.1, 1).key() == \
        pld_key(0.01, 1.1)
    ours = _eps(poisson_add_remove.engine_pair(0.01, 1.1, 1), 300, math.log(1e-5))
    today = pld.epsilon_bounds(0.01, 1.1, 300, math.log(1e-5))
    assert ours == pytest.approx(today, rel=1e-12)


def pld_key(q, sigma):
    from dpcalc.mechanisms.subsampled_gaussian import SubsampledGaussian

    return SubsampledGaussian(q, sigma).key()


def test_k_mixture_at_k1_matches_the_subsampled_gaussian_pair():
    # the generic mixture (forced through EnginePair) reproduces the K = 1 pair's bracket
    from dpcalc.mechanisms._mixture import EnginePair

    sides = {d: poisson_add_remove.pair(0.02, 1.0, d, 1) for d in ("remove", "add")}
    mix = EnginePair(("test-mixture", 0.02, 1.0, 1), sides, symmetric=False)
    a = _eps(mix, 200, math.log(1e-5))
    b = _eps(poisson_add_remove.engine_pair(0.02, 1.0, 1), 200, math.log(1e-5))
    assert max(a[0], b[0]) <= min(a[1], b[1])  # the two certified brackets overlap


def test_orderings_after_composition():
    q, sigma, steps, ld = 0.02, 1.0, 200, math.log(1e-5)
    ar = _eps(poisson_add_remove.engine_pair(q, sigma), steps, ld)
    ro = _eps(poisson_replace_one.engine_pair(q, sigma), steps, ld)
    k2 = _eps(poisson_add_remove.engine_pair(q, sigma, 2), steps, ld)
    fb = _eps(fixed_batch.engine_pair(20, 1000, sigma), steps, ld)
    assert ro[0] >= ar[1]       # replace-one ≥ add-remove (strictly, here)
    assert k2[0] >= ar[1]
    assert fb[0] >= ro[1]       # the displaced example: fixed batch ≥ Poisson replace-one


def test_fixed_batch_gap_on_the_tf_example():
    # Lebeda et al. 2024: ε ≈ 1 under Poisson, ε > 10 without replacement (same B/N, σ)
    lo, _ = _eps(fixed_batch.engine_pair(64, 10000, 1.0), T_TF)
    assert lo > 10.0


def test_monotone_in_sigma_steps_and_q():
    ld = math.log(1e-5)
    for make in (lambda q, s: poisson_replace_one.engine_pair(q, s),
                 lambda q, s: poisson_add_remove.engine_pair(q, s, 3),
                 lambda q, s: fixed_batch.engine_pair(round(q * 1000), 1000, s)):
        base = _eps(make(0.01, 1.0), 100, ld)
        assert _eps(make(0.01, 1.3), 100, ld)[1] <= base[0]
        assert _eps(make(0.01, 1.0), 150, ld)[0] >= base[1]
        assert _eps(make(0.02, 1.0), 100, ld)[0] >= base[1]


def test_one_step_bracket_contains_the_closed_form():
    for pair, side in ((poisson_replace_one.engine_pair(0.1, 0.8, 2),
                        poisson_replace_one.pair(0.1, 0.8, 2)),
                       (fixed_batch.engine_pair(10, 100, 1.0),
                        fixed_batch.SymmetrisedPair(0.1, 1.0))):
        for eps in (0.1, 1.0, 3.0):
            lo, up = accountant.log_delta_bounds([(pair, 1)], eps)
            exact = side.log_delta(eps)
            assert lo - 1e-9 <= exact <= up + 1e-9


def test_independent_reference_values_from_dp_accounting():
    # dp_accounting 0.4.x PLDAccountant (value_discretization_interval 1e-4), computed in a
    # separate venv (never a dependency) on the TF Privacy example (782 steps, δ = 1e-6):
    #   REPLACE_ONE, PoissonSampledDpEvent(q, GaussianDpEvent(1.0))     -> 1.741696604152888
    #   MixtureOfGaussiansDpEvent(1.0, [0, 1, 2], Binomial(2, q) probs) -> 2.5319856301667083
    ro = _eps(poisson_replace_one.engine_pair(Q_TF, 1.0), T_TF)
    assert ro[0] - 1e-3 <= 1.741696604152888 <= ro[1] + 1e-3
    k2 = _eps(poisson_add_remove.engine_pair(Q_TF, 1.0, 2), T_TF)
    assert k2[0] - 1e-3 <= 2.5319856301667083 <= k2[1] + 1e-3
