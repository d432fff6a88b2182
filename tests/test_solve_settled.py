"""A solve that ends where its caller says a passing point is good enough (``settled``):
dpcalc.solve's float searches, and dpsgd's σ and q solves, which end at a passing point whose
full PLD bound lies within 1e-5 of the target (Accountant.settles) instead of evaluating a
failing neighbour in full (issue 14).  Every answer still passes the certified predicate."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpcalc.accountants.dpsgd as accountants
from dpcalc.api.dpsgd import NOISE, STEPS, Accountant, dpsgd
from dpcalc.params import Q
from dpcalc.relations import pld
from dpcalc.solve import solve_unknown
from tests.test_dpsgd_aim import _fake_pld


@given(root=st.floats(0.01, 100.0), guess=st.floats(0.001, 1000.0),
       window=st.floats(1e-6, 0.5))
def test_a_settled_search_returns_a_passing_point_and_stops_there(root, guess, window):
    seen = []

    def holds(x):
        seen.append(x)
        return x >= root

    def settled(x):
        assert x >= root          # asked of passing points only
        return x <= root * (1 + window)

    got = solve_unknown(NOISE, holds, guess=guess, guess_rtol=1e-4, settled=settled)
    assert root <= got <= root * (1 + window)
    assert seen[-1] == got        # nothing evaluated after the point that settled


def test_settled_saves_the_failing_neighbour():
    def holds(x):
        return x <= 0.3

    plain, early = [], []
    solve_unknown(Q, lambda x: plain.append(x) or holds(x), guess=0.2999999, guess_rtol=1e-6)
    got = solve_unknown(Q, lambda x: early.append(x) or holds(x), guess=0.2999999,
                        guess_rtol=1e-6, settled=lambda x: x > 0.29999)
    assert got == 0.2999999 and len(early) < len(plain)


def test_integer_searches_ignore_settled():
    got = solve_unknown(STEPS, lambda n: n <= 1234, guess=1000, settled=lambda n: True)
    assert got == 1234


def test_settles_reads_the_full_bound_and_asks_it_only_inside_the_window(monkeypatch):
    acc, calls = _fake_pld(monkeypatch, lambda q: 1000.0 * q * 1.001, lambda q: 1000.0 * q)
    # the cheap bound passes far below the target: no full evaluation, not settled
    assert acc.holds(0.0009, 1.0, 100, 1.0, -10.0)
    assert not acc.settles(0.0009, 1.0, 100, 1.0, -10.0, 1e-5) and calls["full"] == 0
    # the cheap bound inside the window: the full one decides (here 1e-3 lower: outside)
    assert acc.holds(0.000999, 1.0, 100, 1.0, -10.0)      # cheap 0.999999
    assert not acc.settles(0.000999, 1.0, 100, 1.0, -10.0, 1e-5) and calls["full"] == 1
    assert acc.settles(0.000999, 1.0, 100, 1.0, -10.0, 2e-3)   # (0.999 within 2e-3)
    assert calls["full"] == 1                                  # (read once)


def test_where_the_first_pass_was_final_nearby_the_cheap_bound_settles(monkeypatch):
    # random case 183: the full evaluation next to the root found the first pass final,
    # and the one asked only to confirm the settling point cost 0.52 s of 3.4
    acc, calls = _fake_pld(monkeypatch, lambda q: 1000.0 * q, lambda q: 1000.0 * q)
    acc.full_bound(0.00099, 1.0, 100, -10.0)          # cheap = full: first pass final
    assert acc._first_pass_final and calls["full"] == 1
    assert acc.holds(0.000999995, 1.0, 100, 1.0, -10.0)
    assert acc.settles(0.000999995, 1.0, 100, 1.0, -10.0, 1e-5)
    assert calls["full"] == 1                         # no full evaluation to confirm it
    assert not acc.settles(0.00099, 1.0, 100, 1.0, -10.0, 1e-5)   # (outside the window)


def _fake_bracket(monkeypatch, width: float):
    """An Accountant("pld") whose cheap and full bounds are 1000 q, the full bracket
    ``width`` (relative) wide; counts the full evaluations."""
    calls = {"full": 0}

    def evaluate(name, question, q, sigma, steps, x, tolerance):
        calls["full"] += 1
        return 1000.0 * q, (1000.0 * q * (1 - width), 1000.0 * q), ""

    monkeypatch.setattr(accountants, "evaluate_upper", lambda n, q, *a, **k: 1000.0 * q)
    monkeypatch.setattr(accountants, "evaluate", evaluate)
    return Accountant("pld", 1e-3), calls


def test_a_neighbour_of_a_surely_final_first_pass_fails_on_its_cheap_bound(monkeypatch):
    # random case 116 of benchmarks/bench_dpsgd_random.py: a σ probe just above the target
    # (cheap 13.350088 for 13.35) was evaluated in full, only to confirm the fail (0.33 s)
    acc, calls = _fake_bracket(monkeypatch, 1e-5)
    acc.full_bound(0.00099, 1.0, 100, -10.0)      # first pass final, bracket 1e-5 wide
    assert acc._first_pass_sure and calls["full"] == 1
    assert not acc.holds(0.00100001, 1.0, 100, 1.0, -10.0)
    assert calls["full"] == 1                     # decided on the cheap bound
    assert acc.holds(0.000999, 1.0, 100, 1.0, -10.0) and calls["full"] == 1


def test_a_first_pass_final_near_the_tolerance_is_not_sure(monkeypatch):
    # a first pass final with a bracket 0.9 tolerances wide: a neighbour may refine (and
    # pass), so its full evaluation decides
    acc, calls = _fake_bracket(monkeypatch, 9e-4)
    acc.full_bound(0.00099, 1.0, 100, -10.0)
    assert acc._first_pass_final and not acc._first_pass_sure
    assert not acc.holds(0.00100001, 1.0, 100, 1.0, -10.0) and calls["full"] == 2


def test_random_case_116_sigma_solve_is_unchanged_by_the_cheap_fail(monkeypatch):
    fulls = []
    real = accountants.evaluate

    def counted(name, question, *args):
        if name == "pld":
            fulls.append(args[1])
        return real(name, question, *args)

    monkeypatch.setattr(accountants, "evaluate", counted)
    r = dpsgd(q=1.302e-06, steps=3755, epsilon=13.35, delta=4.388e-234, compare=False)
    log_delta = math.log(4.388e-234)
    assert len(fulls) == 1                        # was 2: the second only confirmed a fail
    _, up = pld.epsilon_bounds(1.302e-06, r.value, 3755, log_delta, 1e-3)
    assert up <= 13.35
    # the bound's root lies within the solve's accuracy below (σ: 2e-5 in ε, |d log ε / d
    # log σ| ≥ 1): a σ 2e-5 lower fails
    assert pld.epsilon_bounds(1.302e-06, r.value * (1 - 2e-5), 3755, log_delta, 1e-3)[1] > 13.35


def test_a_full_bound_read_again_learns_nothing_without_its_cheap_one(monkeypatch):
    acc, calls = _fake_pld(monkeypatch, lambda q: 1000.0 * q * 1.01, lambda q: 1000.0 * q)
    acc.epsilon(0.002, 1.0, 100, -10.0)           # a full evaluation, no cheap bound
    acc.full_bound(0.001, 1.0, 100, -10.0)        # cheap and full: refinement 1/1.01
    assert not acc._first_pass_final
    acc.full_bound(0.002, 1.0, 100, -10.0)        # read again: upper() is the full value
    assert not acc._first_pass_final              # (was set: a first pass taken as final)
    assert acc._refined == pytest.approx(-math.log(1.01))


def test_far_tail_q_solve_settles_with_three_full_evaluations(monkeypatch):
    # random case 144 of benchmarks/bench_dpsgd_random.py: the search evaluated a failing
    # neighbour of its passing answer in full (4 full evaluations, 0.5 s each)
    fulls = []
    real = accountants.evaluate

    def counted(name, question, *args):
        if name == "pld" and args[0] < 1.0:   # (q = 1: one Gaussian, exact and instant)
            fulls.append(args[0])
        return real(name, question, *args)

    monkeypatch.setattr(accountants, "evaluate", counted)
    log_delta = math.log(1.339e-204)
    r = dpsgd(sigma=0.8295, steps=546725, epsilon=39.73, delta=1.339e-204, compare=False)
    assert len(fulls) <= 3
    _, up = pld.epsilon_bounds(r.value, 0.8295, 546725, log_delta, 1e-3)
    assert 39.73 * (1 - 1e-5) <= up <= 39.73


def test_an_exact_sigma_solve_keeps_its_own_accuracy():
    # q = 1: T Gaussian steps are one Gaussian (exact, no grid): the solve's accuracy is
    # 1e-9 on σ, and a passing point within 1e-5 of the target in ε does not end it
    # (review: 26 of 48 such answers had moved up by 1.0-1.5e-9)
    r = dpsgd(q=1, steps=100, epsilon=0.5, delta=1e-30, compare=False)
    acc = Accountant("pld", 1e-3)
    log_delta = math.log(1e-30)
    assert acc.holds(1.0, r.value, 100, 0.5, log_delta)
    assert not acc.holds(1.0, r.value * (1 - 1e-9), 100, 0.5, log_delta)
