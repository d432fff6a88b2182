"""Shuffled epochs: the no-amplification upper bound and the attack's certified lower bound."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpcalc.mechanisms import shuffle
from dpcalc.relations import gaussian


def test_public_case_pub_shuffle_noamp():
    # dpsgd --sampling shuffle --batch-size 256 --dataset-size 60000 --sigma 1.1 --epochs 2
    # --delta 1e-5: bounds.upper = 5.871004...
    eps = shuffle.upper_epsilon(1.1, 2, math.log(1e-5))
    assert f"{eps:.7f}".startswith("5.871004") or 5.871004 <= eps < 5.871005
    assert shuffle.upper_log_delta(1.1, 2, eps) <= math.log(1e-5)


def test_tf_privacy_statement_once_per_epoch():
    # TF Privacy: N = 10000, B = 64, σ = 1.0, 5 epochs, δ = 1e-6: "once per epoch" 12.595;
    # with up to 2 examples per user 30.579
    assert round(shuffle.upper_epsilon(1.0, 5, math.log(1e-6)), 3) == 12.595
    assert round(shuffle.upper_epsilon(1.0, 5, math.log(1e-6), k=2), 3) == 30.579


def test_upper_is_the_gaussian_with_sensitivity_k_delta_sqrt_e():
    for relation, d in (("add-remove", 1.0), ("replace-one", 2.0)):
        for k, e in ((1, 1), (2, 3), (3, 7)):
            mu_sens = k * d * math.sqrt(e)
            want = gaussian.analytic_log_delta(0.9, 1.5, mu_sens)
            got = shuffle.upper_log_delta(0.9, e, 1.5, relation, k)
            assert got >= want - 1e-12 and got == pytest.approx(want, abs=1e-9)
    # replace-one ≥ add-remove; monotone in epochs, K and σ
    ld = math.log(1e-5)
    base = shuffle.upper_epsilon(1.1, 2, ld)
    assert shuffle.upper_epsilon(1.1, 2, ld, "replace-one") > base
    assert shuffle.upper_epsilon(1.1, 3, ld) > base
    assert shuffle.upper_epsilon(1.1, 2, ld, k=2) > base
    assert shuffle.upper_epsilon(1.3, 2, ld) < base


@pytest.mark.parametrize("relation", shuffle.RELATIONS)
def test_one_batch_per_epoch_the_two_bounds_meet(relation):
    # T = 1: the attack sees the Gaussian itself; lower and upper must sandwich it tightly
    ld = math.log(1e-5)
    up = shuffle.upper_epsilon(1.1, 2, ld, relation)
    lo = shuffle.AttackLowerBound(1.1, 1, 2, relation).epsilon_lower(ld)
    assert lo <= up and up - lo < 1e-3 * up


def _float_dens(t, sigma, batches, s):
    from math import erf

    cdf = np.vectorize(lambda v: 0.5 * (1 + erf(v / math.sqrt(2))))
    pdf = lambda v: np.exp(-v * v / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    a, b = cdf(t / sigma), cdf((t - s) / sigma)
    return ((batches - 1) * pdf(t / sigma) / sigma * a ** (batches - 2) * b
            + a ** (batches - 1) * pdf((t - s) / sigma) / sigma)


def _mp_delta_max_pair(sigma, batches, s_p, s_q, eps):
    """Exact H_{e^ε} of the one-epoch max-statistic pair by mpmath quadrature."""
    with mpmath.workdps(20):
        sg = mpmath.mpf(sigma)

        def dens(t, s):
            a, b = mpmath.ncdf(t / sg), mpmath.ncdf((t - s) / sg)
            da, db = mpmath.npdf(t / sg) / sg, mpmath.npdf((t - s) / sg) / sg
            return (batches - 1) * da * a ** (batches - 2) * b + a ** (batches - 1) * db

        alpha = mpmath.exp(eps)

        def f(t):
            return max(dens(t, s_p) - alpha * dens(t, s_q), 0)

        # split at the sign changes of the integrand (found on a fine grid)
        ts = np.linspace(-8, 10, 721)
        vals = _float_dens(ts, sigma, batches, s_p) - math.exp(eps) * _float_dens(
            ts, sigma, batches, s_q)
        cuts = [-mpmath.inf] + [mpmath.mpf(ts[i]) for i in range(1, len(ts))
                                if (vals[i] > 0) != (vals[i - 1] > 0)] + [mpmath.inf]
        return float(mpmath.quad(f, cuts))


@pytest.mark.parametrize("relation", shuffle.RELATIONS)
def test_attack_delta_is_certified_from_below(relation):
    s_p, s_q = (1.0, 0.0) if relation == "add-remove" else (1.0, -1.0)
    low = shuffle.AttackLowerBound(0.8, 5, 1, relation)
    for eps in (0.0, 2.0):
        # delta_lower takes the larger of the instance's two orders
        exact = max(_mp_delta_max_pair(0.8, 5, s_p, s_q, eps),
                    _mp_delta_max_pair(0.8, 5, s_q, s_p, eps))
        got = low.delta_lower(eps)
        assert got <= exact
        assert got >= exact * (1 - 2e-3) - 1e-12  # and close: the binning is fine enough


def test_attack_lower_bound_below_upper_and_growing_with_epochs():
    ld = math.log(1e-5)
    prev = 0.0
    for e in (1, 2, 4, 8):
        lo = shuffle.AttackLowerBound(0.6, 50, e).epsilon_lower(ld)
        assert prev <= lo <= shuffle.upper_epsilon(0.6, e, ld)
        prev = lo
    assert prev > 1.0


def test_attack_lower_bound_over_many_epochs_grows_and_merging_only_lowers_it():
    # binary powers of the epoch pair (helper-52: one product per epoch took 19 s at 10⁴
    # epochs; and merging the running product at every step scrambled its labels: ε_lower
    # fell from 0.83 at 100 epochs to 0.79 at 1000, σ 1, 235 batches)
    ld = math.log(1e-5)
    got = [shuffle.AttackLowerBound(1.0, 235, e).epsilon_lower(ld) for e in (10, 100, 1000)]
    assert got[0] < got[1] < got[2] <= shuffle.upper_epsilon(1.0, 1000, ld)
    assert got[2] > 5.0                       # (0.79 before)
    # a grouping of outcomes is a post-processing: merging (a short max_len) never raises δ
    for eps in (0.5, 2.0):
        exact = shuffle.AttackLowerBound(0.8, 5, 6, max_len=10**6).delta_lower(eps)
        merged = shuffle.AttackLowerBound(0.8, 5, 6, max_len=500).delta_lower(eps)
        assert 0 < merged <= exact


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="relation"):
        shuffle.upper_epsilon(1.0, 2, -10.0, "swap")
    with pytest.raises(ValueError, match="epochs"):
        shuffle.upper_sensitivity(0, "add-remove")
    with pytest.raises(ValueError, match="batches"):
        shuffle.AttackLowerBound(1.0, 0, 2)
