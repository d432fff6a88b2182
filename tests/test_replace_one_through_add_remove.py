"""Poisson replace-one where its own grid is loose: bounded through the add/remove run.

δ_replace(ε) ≤ (1 + e^{ε/2})·δ_add/remove(ε/2): for every event S, P(S) ≤ e^{ε₁}R(S) + δ₁ and
R(S) ≤ e^{ε₂}Q(S) + δ₂ with R the run without the example [DR14, Thm 2.2; Vadhan 2017,
Lemma 2.2], and P^T vs R^T, R^T vs Q^T are the remove and add runs.  Before, the
replace-one grid answered ε 0.64 at q 1e-8 and 387191 at q 1e-14 over 10¹⁰ steps, where
the add/remove run certifies 0.010 and 1.2e-8.
"""

from __future__ import annotations

import math

import pytest

import dpcalc
from dpcalc.api._runs_pld import _Pld
from dpcalc.api.dpsgd_runs import Scheme
from tests.cli_helpers import run

STEPS = 10**10


@pytest.mark.parametrize("q,most", [(1e-8, 0.03), (1e-14, 1e-7)])
def test_tiny_rates_over_many_steps_are_bounded_through_add_remove(capsys, q, most):
    r = run(capsys, "dpsgd", "--relation", "replace-one", "--q", repr(q), "--sigma", "1",
            "--steps", str(STEPS), "--delta", "1e-5", "--json")
    assert r.code == 0, r.err
    eps = r.json["value"]
    assert 0 < eps <= most
    assert r.json["bounds"]["lower"] <= eps
    assert any("through the add/remove run" in n for n in r.json["notes"])
    # the certificate read back through the default run: ε_ar(δ') ≤ ε/2 at δ' = δ/(1 +
    # e^{ε/2}), i.e. (1 + e^{ε/2})·δ_ar(ε/2) ≤ δ
    inner = 1e-5 / (1 + math.exp(eps / 2)) * (1 + 1e-12)
    half = dpcalc.dpsgd(q=q, sigma=1, steps=STEPS, delta=inner, compare=False)
    assert half.value <= eps / 2


def test_a_delta_question_takes_the_smaller_bound(capsys):
    r = run(capsys, "dpsgd", "--relation", "replace-one", "--q", "1e-8", "--sigma", "1",
            "--steps", str(STEPS), "--epsilon", "0.05", "--json")
    assert r.code == 0, r.err
    half = dpcalc.dpsgd(q=1e-8, sigma=1, steps=STEPS, epsilon=0.025, compare=False).value
    assert r.json["value"] <= (1 + math.exp(0.025)) * half * (1 + 1e-9)
    assert r.json["value"] < 0.1                   # (the grid alone: δ near 1)


def test_a_tight_replace_one_bracket_asks_no_add_remove_run(monkeypatch):
    # MNIST-like: the grid's bracket is within 1e-3; the bound through add/remove, about
    # twice as large, is not computed (it would cost two or three default evaluations)
    import dpcalc.api._runs_pld as runs_pld

    def fail(*args, **kwargs):
        raise AssertionError("the triangle bound was asked")

    monkeypatch.setattr(runs_pld._Pld, "_triangle", fail)
    acc = _Pld(Scheme("poisson", "replace-one", 1), 1e-3)
    lo, up = acc.epsilon(0.004, 1.1, 10_000, math.log(1e-5))[1]
    assert 0 < lo <= up <= lo * 1.01


def test_a_wide_bracket_skips_a_triangle_that_cannot_beat_it(monkeypatch):
    # q 1e-5, σ 0.43, 10⁶ steps: the grid's bracket is wide ([1.10, 2.00]) but the bound
    # through add/remove is about 6.8 (twice ε_ar ≈ 3.4): the cheap bound at its first δ'
    # already says so, and no full evaluation of the default run is asked (there were seven,
    # 5 s per σ probe)
    import dpcalc.accountants.dpsgd as dpsgd_acc

    full = []
    evaluate = dpsgd_acc.evaluate

    def counted(*args, **kwargs):
        full.append(args)
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(dpsgd_acc, "evaluate", counted)
    # the grid's bracket as it was before its finest pass raised the one-step lattice's
    # length cap (session 39: [1.86, 1.95] now, no longer wide): the rule under test reads
    # the bracket, however it came to be wide
    import dpcalc.pld.eps_search as search

    monkeypatch.setattr(search, "_raise_len", lambda *args: False)
    acc = _Pld(Scheme("poisson", "replace-one", 1), 1e-3)
    lo, up = acc.epsilon(1e-5, 0.43, 10**6, math.log(1e-5))[1]
    assert up - lo > 0.1 * up                      # wide: the triangle was considered
    assert 1.5 < up < 2.5 and not full
    assert not any(k[0] == "triangle" for k in acc.reduced)


def test_the_triangle_iteration_stops_once_it_reaches_the_grid(monkeypatch):
    # the iteration's ε_ar only rise: stopped at the first one whose double reaches
    # ``above`` (+inf: the grid's bound stands), and the finished iteration lies above it
    acc = _Pld(Scheme("poisson", "replace-one", 1), 1e-3)
    ld = math.log(1e-5)
    done = acc._triangle("epsilon_bounds", 0.01, 1.0, 100, ld)
    first = acc._tri_acc.epsilon(0.01, 1.0, 100, ld - math.log1p(math.exp(0.01))
                                 - 4.0 * 2.0**-53 * (abs(ld) + math.log1p(math.exp(0.01))))[0]
    assert done >= 2.0 * first
    fresh = _Pld(Scheme("poisson", "replace-one", 1), 1e-3)
    seen = []
    tri_epsilon = None

    def spy(*args):
        seen.append(args)
        return tri_epsilon(*args)

    fresh._triangle("epsilon_bounds", 0.01, 1.0, 100, ld, above=0.5)  # builds _tri_acc
    tri_epsilon = fresh._tri_acc.epsilon
    monkeypatch.setattr(fresh._tri_acc, "epsilon", spy)
    assert fresh._triangle("epsilon_bounds", 0.01, 1.0, 100, ld,
                           above=1.9 * first) == math.inf
    assert len(seen) == 1
