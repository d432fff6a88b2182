"""Tests for dpcalc.relations.subsample: public cases, exact brute force, tightness, inverses."""

from __future__ import annotations

import math
import random

import mpmath as mp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcalc.relations import subsample as s

LN = math.log
COMBOS = [(a, b) for a in s.SAMPLINGS for b in s.RELATIONS]


# ----------------------------------------------------------------------------------------------
# public cases
# ----------------------------------------------------------------------------------------------

def test_public_amplified_epsilon_and_delta():
    eps, log_d = s.amplify(1.0, LN(1e-5), 0.01)
    assert 0.017036863236176546 <= eps <= 0.01703688027303979
    assert 1e-07 <= math.exp(log_d) <= 1.0000010000000001e-07


def test_public_max_q():
    q = s.max_q(2.0, LN(1e-6), 0.1, LN(1e-6))
    assert 0.016461087721914385 <= q <= 0.01646110418301857


# ----------------------------------------------------------------------------------------------
# exact hockey-stick divergences of literal subsampled mechanisms (mpmath, 40 digits)
# ----------------------------------------------------------------------------------------------

def hockey(p, q, log_a):
    """sup_T P(T) − e^a Q(T) for finite distributions."""
    a = mp.exp(mp.mpf(log_a))
    return mp.fsum(max(pi - a * qi, 0) for pi, qi in zip(p, q, strict=True))


def mix(weights, dists):
    return [mp.fsum(w * d[j] for w, d in zip(weights, dists, strict=True))
            for j in range(len(dists[0]))]


def random_table(rng, n_states, n_out):
    """A mechanism given by an output distribution per state (random, with some sharp rows)."""
    table = []
    for _ in range(n_states):
        row = [mp.mpf(rng.random()) ** 3 + mp.mpf(10) ** -rng.randint(1, 8) for _ in range(n_out)]
        tot = mp.fsum(row)
        table.append([x / tot for x in row])
    return table


def base_delta(table, pairs, eps):
    """Exact δ of the mechanism at ε over the given neighbouring state pairs (both directions)."""
    return max(max(hockey(table[i], table[j], eps), hockey(table[j], table[i], eps))
               for i, j in pairs)


def binom_pmf(n, q, j):
    return mp.binomial(n, j) * q ** j * (1 - q) ** (n - j)


def hyper_pmf(n_ones, n_total, m, j):
    """P[j ones in a uniform m-subset of a dataset with n_ones ones out of n_total]."""
    return mp.binomial(n_ones, j) * mp.binomial(n_total - n_ones, m - j) / mp.binomial(n_total, m)


def scenario(rng, sampling, relation):
    """(P, Q, base_pairs, table, q) for a literal dataset, neighbour and count-based mechanism.

    Records are bits. Poisson: the mechanism sees s = #ones − #zeros of the sample (add-remove
    changes s by one). Without replacement: the sample has m records, the mechanism sees its
    number of ones (replacing one record changes it by one).
    """
    with mp.workdps(40):
        if sampling == "poisson":
            n1, n0 = rng.randint(0, 3), rng.randint(0, 3)
            q = mp.mpf(rng.choice([0.05, 0.3, 0.7, 1.0, rng.random()]))
            states = list(range(-(n0 + 1), n1 + 2))  # s range
            table = random_table(rng, len(states), 3)
            idx = {v: i for i, v in enumerate(states)}

            def law(ones, zeros):
                out = [mp.mpf(0)] * 3
                for a in range(ones + 1):
                    for b in range(zeros + 1):
                        w = binom_pmf(ones, q, a) * binom_pmf(zeros, q, b)
                        row = table[idx[a - b]]
                        out = [o + w * r for o, r in zip(out, row, strict=True)]
                return out

            if relation == "add-remove":
                p_law, q_law = law(n1 + 1, n0), law(n1, n0)   # x' = x ∪ {1}
            else:
                p_law, q_law = law(n1 + 1, n0), law(n1, n0 + 1)  # a 0 replaced by a 1
            pairs = [(i, i + 1) for i in range(len(states) - 1)]
            return p_law, q_law, pairs, table, q
        n_total = rng.randint(2, 6)
        m = rng.randint(1, n_total)
        n1 = rng.randint(0, n_total - 1)
        table = random_table(rng, m + 1, 3)

        def law(ones, total):
            out = [mp.mpf(0)] * 3
            for j in range(max(0, m - (total - ones)), min(ones, m) + 1):
                w = hyper_pmf(ones, total, m, j)
                out = [o + w * r for o, r in zip(out, table[j], strict=True)]
            return out

        if relation == "replace-one":
            q = mp.mpf(m) / n_total
            p_law, q_law = law(n1 + 1, n_total), law(n1, n_total)  # a 0 replaced by a 1
        else:
            q = mp.mpf(m) / n_total  # dataset x has n_total records; x' = x ∪ {1}
            p_law, q_law = law(n1 + 1, n_total + 1), law(n1, n_total)
        pairs = [(i, i + 1) for i in range(m)]
        return p_law, q_law, pairs, table, q


@pytest.mark.parametrize("sampling,relation", COMBOS)
def test_amplified_bound_holds_on_literal_mechanisms(sampling, relation):
    rng = random.Random(hash((sampling, relation)) % 1000)
    for _ in range(25):
        p_law, q_law, pairs, table, q = scenario(rng, sampling, relation)
        for eps in (0.1, 0.7, 2.0):
            with mp.workdps(40):
                delta = base_delta(table, pairs, eps)
                log_delta = float(mp.log(delta)) if delta > 0 else -math.inf
                # the float log δ must not understate the exact base δ
                if log_delta > -math.inf and mp.exp(mp.mpf(log_delta)) < delta:
                    log_delta = math.nextafter(log_delta, math.inf)
                qf = float(q)
                if mp.mpf(qf) < q:
                    qf = math.nextafter(qf, math.inf)
                eps_amp, log_amp = s.amplify(eps, log_delta, min(qf, 1.0), sampling, relation)
                bound = mp.exp(mp.mpf(log_amp)) if log_amp > -math.inf else 0
                assert hockey(p_law, q_law, eps_amp) <= bound
                assert hockey(q_law, p_law, eps_amp) <= bound


@pytest.mark.parametrize("sampling,relation", COMBOS)
def test_tight_for_randomized_response(sampling, relation):
    """Pure ε and a worst-case base mechanism: the amplified ε is attained (all four forms).

    BBG18 forms: randomized response on membership, P = (1−q)RR(0) + q RR(1), Q = RR(0).
    Poisson / replace-one: P = (1−q)M(0) + q M(+1), Q = (1−q)M(0) + q M(−1) with t = e^−ε and
    M(0) = [t/2, 1 − t/2], M(+1) = [1/2, 1/2], M(−1) = [t²/2, 1 − t²/2]; M is ε-DP for
    s ↦ s ± 1 and the first output has M(±1) = e^±ε M(0), which makes the derived bound exact.
    """
    for eps in (0.05, 1.0, 3.0):
        for q in (1e-3, 0.2, 0.9, 1.0):
            with mp.workdps(40):
                e, qq = mp.mpf(eps), mp.mpf(q)
                if sampling == "poisson" and relation == "replace-one":
                    t = mp.exp(-e)
                    m0, mp1, mm1 = [t / 2, 1 - t / 2], [0.5, 0.5], [t * t / 2, 1 - t * t / 2]
                    for u, v in ((mp1, m0), (mm1, m0)):  # the base is ε-DP (add-remove)
                        assert all(abs(mp.log(a / b)) <= e * (1 + mp.mpf(10) ** -30)
                                   for a, b in zip(u, v, strict=True))
                    p_law = mix([1 - qq, qq], [m0, mp1])
                    q_law = mix([1 - qq, qq], [m0, mm1])
                else:
                    a = mp.exp(e) / (1 + mp.exp(e))
                    rr0, rr1 = [1 - a, a], [a, 1 - a]
                    p_law = mix([1 - qq, qq], [rr0, rr1])
                    q_law = rr0
                true_eps = max(abs(mp.log(pi / qi)) for pi, qi in zip(p_law, q_law, strict=True))
            eps_amp, _ = s.amplify(eps, -math.inf, q, sampling, relation)
            assert true_eps <= eps_amp <= true_eps * (1 + 1e-12)


def test_poisson_replace_one_reduces_to_group_privacy_at_q_1():
    eps, log_d = s.amplify(2.0, LN(1e-5), 1.0, "poisson", "replace-one")
    assert eps == pytest.approx(4.0, rel=1e-14) and eps >= 4.0
    assert math.exp(log_d) == pytest.approx(1e-5 * (1 + math.e ** 2), rel=1e-13)


def test_tiny_q_and_epsilon_accuracy():
    for sampling, relation in COMBOS:
        eps, log_d = s.amplify(1e-8, LN(1e-5), 1e-9, sampling, relation)
        with mp.workdps(50):
            e, q = mp.mpf(1e-8), mp.mpf(1e-9)
            if sampling == "poisson" and relation == "replace-one":
                truth = mp.log1p(q * mp.expm1(e)) - mp.log1p(q * mp.expm1(-e))
            else:
                truth = mp.log1p(q * mp.expm1(e))
        assert eps >= truth and eps <= truth * (1 + 1e-13)
        assert math.isfinite(log_d)


def test_huge_epsilon_no_overflow():
    eps, log_d = s.amplify(800.0, LN(1e-5), 1e-3)
    assert eps == pytest.approx(800 + LN(1e-3), rel=1e-12) and eps >= 800 + LN(1e-3)
    eps2, _ = s.amplify(800.0, LN(1e-5), 1e-3, "poisson", "replace-one")
    assert eps2 >= eps


# ----------------------------------------------------------------------------------------------
# inverses: certified by the forward function and tight
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sampling,relation", COMBOS)
@given(eps=st.floats(0.01, 10.0), log_delta=st.one_of(st.just(-math.inf), st.floats(-40, -3)),
       q=st.floats(1e-6, 1.0))
def test_inverses_round_trip(sampling, relation, eps, log_delta, q):
    target_eps, target_ld = s.amplify(eps, log_delta, q, sampling, relation)
    got_q = s.max_q(eps, log_delta, target_eps, target_ld, sampling, relation)
    assert got_q is not None and 0 < got_q <= 1
    e2, ld2 = s.amplify(eps, log_delta, got_q, sampling, relation)
    assert e2 <= target_eps and ld2 <= target_ld
    assert got_q >= q * (1 - 1e-9)
    if got_q < 1:
        e3, ld3 = s.amplify(eps, log_delta, min(1.0, got_q * (1 + 1e-9)), sampling, relation)
        assert e3 > target_eps or ld3 > target_ld

    got_eps = s.max_base_epsilon(q, target_eps, sampling, relation, log_delta, target_ld)
    assert got_eps is not None
    e2, ld2 = s.amplify(got_eps, log_delta, q, sampling, relation)
    assert e2 <= target_eps and ld2 <= target_ld
    assert got_eps >= eps * (1 - 1e-9)


def test_inverse_edge_cases():
    assert s.max_q(1.0, LN(1e-5), 0.0, LN(1e-6)) is None       # ε' = 0 < ε: no q > 0
    assert s.max_q(1.0, LN(1e-5), 0.5, -math.inf) is None       # δ' = 0 < δ
    assert s.max_q(0.5, -math.inf, 10.0, LN(1e-9)) == 1.0       # everything fits at q = 1
    assert s.max_base_epsilon(0.1, 0.0) == 0.0
    assert s.max_base_epsilon(0.5, math.inf) == math.inf
    # Poisson / replace-one with q > 1/2: amplified δ grows with ε, so it can bind
    q, ld = 0.9, LN(1e-5)
    target_eps, target_ld = s.amplify(1.0, ld, q, "poisson", "replace-one")
    got = s.max_base_epsilon(q, 5.0, "poisson", "replace-one", ld, target_ld)
    assert got == pytest.approx(1.0, rel=1e-9) and got <= 1.0 + 1e-12


def test_validation_messages():
    with pytest.raises(ValueError, match="q must be in"):
        s.amplify(1.0, LN(1e-5), 0.0)
    with pytest.raises(ValueError, match="q must be in"):
        s.amplify(1.0, LN(1e-5), 1.5)
    with pytest.raises(ValueError, match="sampling must be one of"):
        s.amplify(1.0, LN(1e-5), 0.1, sampling="with-replacement")
    with pytest.raises(ValueError, match="relation must be one of"):
        s.amplify(1.0, LN(1e-5), 0.1, relation="bounded")
    with pytest.raises(ValueError, match="epsilon"):
        s.amplify(-1.0, LN(1e-5), 0.1)
