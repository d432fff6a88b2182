"""The secant's aim in dpsgd's solves (issue 14): seeds from RDP far in the tail, cheap bounds
moved by the refinement seen, σ chords on log(e^ε − 1).  Only aiming: every answer is still
decided by the certified predicate (tests/test_dpsgd_speed.py, tests/test_issue14_values.py)."""

from __future__ import annotations

import math

import pytest

import dpcalc.accountants.dpsgd as accountants
from dpcalc.api import _dpsgd_guess as guess
from dpcalc.api.dpsgd import Accountant


def _fake_pld(monkeypatch, cheap, full):
    """An Accountant("pld") whose cheap bound is cheap(q) and full bound full(q); counts."""
    calls = {"cheap": 0, "full": 0}

    def upper(name, q, sigma, steps, log_delta, tolerance, stop_above=math.inf):
        calls["cheap"] += 1
        return cheap(q)

    def evaluate(name, question, q, sigma, steps, x, tolerance):
        calls["full"] += 1
        return full(q), (0.0, full(q)), ""

    monkeypatch.setattr(accountants, "evaluate_upper", upper)
    monkeypatch.setattr(accountants, "evaluate", evaluate)
    return Accountant("pld", 1e-3), calls


def _pld_probes(monkeypatch) -> list:
    """The σ of every cheap PLD evaluation from now on, in order (the real evaluations)."""
    points = []
    real = accountants.evaluate_upper

    def upper(name, q, sigma, *args, **kwargs):
        if name == "pld":
            points.append(sigma)
        return real(name, q, sigma, *args, **kwargs)

    monkeypatch.setattr(accountants, "evaluate_upper", upper)
    return points


def test_a_cheap_bound_is_aimed_with_the_refinement_seen_at_the_last_full_point(monkeypatch):
    acc, calls = _fake_pld(monkeypatch, lambda q: 1000.0 * q * 1.01, lambda q: 1000.0 * q)
    # nothing refined yet: a cheap bound is aimed as it is
    b = acc.bound_for(0.0005, 1.0, 100, -10.0, 1.0)
    assert b == pytest.approx(0.505) and acc.aimed(0.0005, 1.0, 100, -10.0, b) == b
    # just above the target (within 2 %): the full evaluation decides, and its refinement
    # (1/1.01) is remembered
    full = acc.bound_for(0.000995, 1.0, 100, -10.0, 1.0)
    assert full == pytest.approx(0.995) and calls["full"] == 1
    assert acc.aimed(0.000995, 1.0, 100, -10.0, full) == full      # a full point: as it is
    # a cheap point is now aimed at the full bound's level; the bound decided on is unchanged
    b2 = acc.bound_for(0.0009, 1.0, 100, -10.0, 1.0)
    assert b2 == pytest.approx(0.909)
    assert acc.aimed(0.0009, 1.0, 100, -10.0, b2) == pytest.approx(0.9, rel=1e-12)


def test_just_below_the_target_the_first_cheap_bound_asks_the_full_evaluation(monkeypatch):
    """Random case 291: a search seeded below the root settled on the cheap bound's root,
    0.7 % below the predicate's threshold, and the solver climbed with 10 full evaluations.
    Far in the tail the first cheap bound within 2 % below the target now learns the
    refinement; later ones (refinement known) do not."""
    far = math.log(1e-200)
    acc, calls = _fake_pld(monkeypatch, lambda q: 1000.0 * q * 1.01, lambda q: 1000.0 * q)
    assert acc.bound_for(0.000975, 1.0, 100, far, 1.0) == pytest.approx(0.975)
    assert calls["full"] == 1
    assert acc.bound_for(0.00096, 1.0, 100, far, 1.0) == pytest.approx(0.9696)
    assert calls["full"] == 1
    # far below the target a cheap bound is enough, as before; and at δ ≥ e^-50 (the first
    # pass mostly final) just below it too
    for point in ((0.0005, far), (0.000975, -10.0)):
        acc2, calls2 = _fake_pld(monkeypatch, lambda q: 1000.0 * q * 1.01,
                                 lambda q: 1000.0 * q)
        acc2.bound_for(point[0], 1.0, 100, point[1], 1.0)
        assert calls2["full"] == 0


def test_far_tail_sigma_seed_comes_from_rdp_when_the_clt_is_far_below_it():
    """Random case 297 (q 1.811e-7, 9.67e6 steps, ε 21.88, δ 2.2e-262): the CLT seed 0.267
    for a root at 0.945; RDP's σ (an upper end for the PLD's) is 0.964."""
    from dpcalc.relations import dpsgd as rel

    q, steps, eps, log_d = 1.811e-07, 9670927, 21.88, math.log(2.236e-262)
    clt = rel.clt_sigma_guess(q, steps, eps, log_d)
    assert clt < 0.3
    acc = Accountant("pld", 1e-3)
    seed = guess._rdp_sigma_seed(acc, q, steps, eps, log_d, clt)
    assert 0.9 < seed < 0.93          # 0.95 of RDP's 0.964; the PLD's root is 0.945
    # a seed within reach of RDP's answer is kept
    assert guess._rdp_sigma_seed(acc, q, steps, eps, log_d, 0.8) == 0.8


def test_far_tail_sigma_newton_step_takes_rdps_slope(monkeypatch):
    """Random case 297 again: from the seed 0.916 (ε 23.42 against the target 21.88) the
    CLT's d log ε / d log σ, −14, stepped 0.5 % where 3 % was needed (6 PLD evaluations of
    0.6 s).  RDP's slope there is the PLD's within 20 % (the PLD's, −2.1, measured from
    its bound at σ 0.9425 and 0.9448), and the secant now needs one evaluation fewer.  (The
    root moved from 0.94492 to 0.94454 when a square's heavy entries came to need half the
    rounded sums: the error term is part of this bound.)"""
    q, steps, eps, log_d = 1.811e-07, 9670927, 21.88, math.log(2.236e-262)
    acc = Accountant("pld", 1e-3)
    slope = guess._rdp_sigma_slope(acc, q, 0.9161, steps, log_d)
    assert -2.1 * 1.2 < slope < -2.1 / 1.2
    assert guess._clt_slope(q, steps, eps, log_d) < -10       # the CLT's, far off
    assert guess._rdp_sigma_slope(Accountant("rdp", 1e-3), q, 0.9161, steps, log_d) is None
    points = _pld_probes(monkeypatch)
    found, _ = guess.sigma_guess(acc, q, steps, eps, log_d, 8e-6)
    assert len(points) <= 4 and found == pytest.approx(0.94454, rel=2e-5)


def test_far_tail_q_seed_comes_down_to_rdp_unless_rdp_fails_itself():
    """Random case 144: the CLT seed 9.6e-4 for a root at 7.91e-5, RDP's answer 7.06e-5.
    Random case 24: RDP's answer 3e-26 for a root at 2e-10 (its conversion fails at small
    ε): the CLT seed, 3e-4, is kept."""
    from dpcalc.relations import dpsgd as rel

    acc = Accountant("pld", 1e-3)
    log_d = math.log(1.339e-204)
    clt = rel.clt_q_guess(0.8295, 39.73, log_d, steps=546725)
    seed, anchored = guess._rdp_q_seed(acc, 0.8295, 546725, 39.73, log_d, clt)
    assert clt > 9e-4 and 7.5e-5 < seed < 8.0e-5 and anchored
    log_d = math.log(6.628e-257)
    clt = rel.clt_q_guess(1.379, 2.959, log_d, steps=119614)
    assert guess._rdp_q_seed(acc, 1.379, 119614, 2.959, log_d, clt) == (clt, False)


def test_sigma_chord_on_log_expm1_aims_closer_than_on_log_epsilon():
    """Random case 34's first two probes (σ 0.9236 → ε 1.4898, σ 0.8727 → ε 2.2700; root
    0.77969 at ε = 4.089): the chord on log(e^ε − 1) lands within 0.5 % of the root, the
    chord on log ε 3.4 % above it."""
    class Plain:
        def aimed(self, q, sigma, steps, log_delta, bound):
            return bound

    target = 4.089
    x0, x1 = math.log(0.9235595703124999), math.log(0.8726629891198113)
    b0, b1 = 1.489774208662729, 2.2699686900066585
    probes = {x0: ((1.714e-8, math.exp(x0), 4953013, -135.5), b0),
              x1: ((1.714e-8, math.exp(x1), 4953013, -135.5), b1)}
    f0, f1 = math.log(b0 / target), math.log(b1 / target)
    amp = math.exp(x1 - guess._chord_step(Plain(), x0, x1, f0, f1, probes, target))
    flat = math.exp(x1 - guess._chord_step(Plain(), x0, x1, f0, f1, probes, target,
                                           amplify=False))
    root = 0.7796871334714712
    assert abs(amp / root - 1) < 0.005
    assert flat / root - 1 > 0.03


def test_a_steps_guess_beyond_the_cap_aims_at_the_cap(monkeypatch):
    """Random case 71: RDP meets the target at no step count, and the CLT's estimate (3e11)
    lies beyond the cap of 1e10 steps; it was dropped, and the solver doubled from one step
    to the cap (35 PLD evaluations).  Aimed at the cap, the answer (the cap: the PLD
    certifies that many steps) takes two."""
    from dpcalc.api.dpsgd import MAX_STEPS, dpsgd

    calls = _pld_probes(monkeypatch)
    r = dpsgd(q=3.591e-08, sigma=276.8, epsilon=0.03946, delta=9.877e-282, solve_for="steps",
              compare=False)
    assert r.value == MAX_STEPS
    assert len(calls) <= 3
    from dpcalc.relations import pld

    assert pld.epsilon_bounds(3.591e-08, 276.8, MAX_STEPS, math.log(9.877e-282))[1] <= 0.03946


def test_a_sigma_chord_between_two_large_epsilons_is_on_log_epsilon(monkeypatch):
    """Random case 218 (q 8.563e-8, 1232 steps, ε 0.01902, δ 2.1e-281): RDP meets the
    target at no σ, the CLT seeds σ 0.31, where ε is 223.  Chords on y = log(e^ε − 1) ≈ ε
    (ε falls like c/σ²) undershot by e-folds: 11 PLD probes to climb to 2.94.  Between two
    ε above _AMPLIFY_EPS_MAX the chord is on log ε: 7.  (Case 34's ε 1.49 and 2.27 stay on
    y: test_sigma_chord_on_log_expm1_aims_closer_than_on_log_epsilon.)"""
    q, steps, eps, log_d = 8.563e-08, 1232, 0.01902, math.log(2.131e-281)
    points = _pld_probes(monkeypatch)
    found, _ = guess.sigma_guess(Accountant("pld", 1e-3), q, steps, eps, log_d, 8e-6)
    assert found == pytest.approx(2.9436, rel=1e-4)
    assert len(points) <= 7


def test_a_root_met_on_a_cheap_bound_is_not_rechecked_where_the_first_pass_is_final(
        monkeypatch):
    """Random case 116 (q 1.302e-6, 3755 steps, ε 13.35, δ 4.4e-234): the full evaluation
    that learned the refinement found none (the first pass met the tolerance), so the cheap
    bound is the full one nearby and the secant aims with it alone (as bound_for does).  The
    root it met on a cheap bound was checked with a second full evaluation all the same,
    which again equalled the cheap bound.  Over the benchmark's 50 σ solves: 364 -> 342 PLD
    evaluations, none more, answers within 6e-9."""
    q, steps, eps, log_d = 1.302e-06, 3755, 13.35, math.log(4.388e-234)
    full = []
    real = accountants.evaluate

    def evaluate(name, question, q_, sigma, *args, **kwargs):
        got = real(name, question, q_, sigma, *args, **kwargs)
        if name == "pld":
            full.append(got[0])
        return got

    monkeypatch.setattr(accountants, "evaluate", evaluate)
    acc = Accountant("pld", 1e-3)
    found, _ = guess.sigma_guess(acc, q, steps, eps, log_d, 8e-6)
    assert acc._first_pass_final
    assert found == pytest.approx(1.21853, rel=2e-5)
    assert len(full) == 1


def _tolerances(monkeypatch) -> list:
    """The tolerance of every PLD first-pass (cheap or coarse) evaluation from now on."""
    seen = []
    real = accountants.evaluate_upper

    def upper(name, q, sigma, steps, log_delta, tolerance, *args, **kwargs):
        if name == "pld":
            seen.append(tolerance)
        return real(name, q, sigma, steps, log_delta, tolerance, *args, **kwargs)

    monkeypatch.setattr(accountants, "evaluate_upper", upper)
    return seen


def test_far_tail_q_seed_is_brought_near_the_root_on_the_coarse_bound(monkeypatch):
    """Random case 24 (root 1.97e-10, the CLT seed 3e-4): the coarse secant (16 tolerances)
    ends within _COARSE_NEAR of the target in log ε, and the cheap secant then needs few
    probes (11 before); the answer passes its own certified bound and is near-maximal."""
    from dpcalc.api.dpsgd import dpsgd
    from dpcalc.relations import pld

    sigma, steps, eps, delta = 1.379, 119614, 2.959, 6.628e-257
    log_d = math.log(delta)
    tols = _tolerances(monkeypatch)
    seed, slope = guess._coarse_seed(
        Accountant("pld", 1e-3), lambda x: (math.exp(x), sigma, steps, log_d), eps, 3.0175e-4,
        -745.0, 0.0, None, 1.0)
    assert all(t == 1.6e-2 for t in tols) and len(tols) <= 8
    assert slope is not None and 1e-10 < seed < 4e-10
    coarse = accountants.evaluate_upper("pld", seed, sigma, steps, log_d, 1.6e-2)
    assert abs(math.log(coarse / eps)) < 0.2
    tols.clear()
    q = dpsgd(sigma=sigma, steps=steps, epsilon=eps, delta=delta, compare=False).value
    assert sum(t == 1e-3 for t in tols) <= 6, tols
    assert accountants.evaluate_upper("pld", q, sigma, steps, log_d, 1e-3) <= eps \
        or pld.epsilon_bounds(q, sigma, steps, log_d)[1] <= eps
    assert pld.epsilon_bounds(q * (1 + 1e-4), sigma, steps, log_d)[1] > eps


def test_no_coarse_bound_outside_the_far_tail_or_for_another_accountant(monkeypatch):
    from dpcalc.api.dpsgd import dpsgd

    tols = _tolerances(monkeypatch)
    dpsgd(sigma=0.9268, steps=30706, epsilon=4.336, delta=5.197e-9, compare=False)
    assert tols and set(tols) == {1e-3}
    acc = Accountant("rdp", 1e-3)
    point = lambda x: (math.exp(x), 1.379, 119614, -600.0)  # noqa: E731
    assert guess._coarse_seed(acc, point, 2.959, 3e-4, -745.0, 0.0, None, 1.0) == (3e-4, None)


def test_no_coarse_secant_where_the_tolerance_leaves_nothing_coarser(monkeypatch):
    """helper-48: at --tolerance 0.5 the "coarse" pass (capped at 5 %) was finer than the
    cheap one; from 0.05/16 up no coarse secant runs."""
    tols = _tolerances(monkeypatch)
    point = lambda x: (math.exp(x), 1.379, 119614, math.log(6.628e-257))  # noqa: E731
    acc = Accountant("pld", 0.5)
    assert guess._coarse_seed(acc, point, 2.959, 3e-4, -745.0, 0.0, None, 1.0) == (3e-4, None)
    assert tols == []


def test_a_q_solve_anchored_on_rdp_skips_the_coarse_stage_and_the_probe_at_q_1(monkeypatch):
    """helper-17, random case 144 (σ 0.8295, 546,725 steps, ε 39.73, δ 1.339e-204): the seed
    anchored on RDP's answer went through the coarse stage (a pass whose secant was thrown
    away) and the settled guess was preceded by the solver's probe of q = 1."""
    import dpcalc

    coarse, probed = [], []
    real_coarse, real_holds = guess._coarse_seed, Accountant.holds

    def no_coarse(*args, **kwargs):
        coarse.append(args)
        return real_coarse(*args, **kwargs)

    def holds(self, q, *args, **kwargs):
        if self.name == "pld":
            probed.append(q)
        return real_holds(self, q, *args, **kwargs)

    monkeypatch.setattr(guess, "_coarse_seed", no_coarse)
    monkeypatch.setattr(Accountant, "holds", holds)
    r = dpcalc.dpsgd(sigma=0.8295, steps=546725, epsilon=39.73, delta=1.339e-204, compare=False)
    assert not coarse and 1.0 not in probed
    from dpcalc.accountants.dpsgd import evaluate

    log_d = math.log(1.339e-204)
    assert evaluate("pld", "epsilon", r.value, 0.8295, 546725, log_d, 1e-3)[0] <= 39.73
    assert evaluate("pld", "epsilon", r.value * (1 + 1e-4), 0.8295, 546725, log_d,
                    1e-3)[0] > 39.73
