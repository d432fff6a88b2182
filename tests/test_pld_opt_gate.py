"""A refinement pass skips an optimistic composition that cannot raise a lower end
(compose._OptGate): the rule itself, and a small-q case where it saves the work and
changes neither end of the bracket."""

from __future__ import annotations

import math

import pytest

from dpcalc.pld import compose, eps_search
from dpcalc.relations import pld


def _recording(monkeypatch, module) -> list[bool]:
    """The gate's answers, in order, with the gate as ``module`` names it replaced by one
    that records them."""
    said: list[bool] = []

    class Recording(compose._OptGate):
        def __call__(self, d, cs):
            said.append(super().__call__(d, cs))
            return said[-1]

    monkeypatch.setattr(module, "_OptGate", Recording)
    return said


def test_the_gate_skips_only_a_shortfall_of_four_times_the_held_width_at_every_point():
    assert compose._OPT_SKIP == 4.0
    held = [[1.0, 1.2], [2.0, 2.1]]                    # widths 0.2 and 0.1
    gate = compose._OptGate([100, 200], held, scale=10.0)
    assert gate("remove", {False: 0.0}) is False        # no pessimistic c seen yet
    assert gate("remove", {True: 0.02}) is False        # pessimistic only: nothing to skip
    # shortfalls T·(c_P − c_O)/λ: 100·0.02/10 = 0.2 (below 4·0.2) and 0.4 (at 4·0.1)
    assert gate("remove", {False: 0.0}) is False
    assert gate("remove", {False: -0.05}) is False      # 0.7 and 1.4: the first below 0.8
    assert not gate.skipped
    assert gate("remove", {False: -0.06}) is True       # 0.8 and 1.6: at every point
    assert gate.skipped
    assert gate("add", {False: -1.0}) is False          # per direction: no c_P for "add"
    both = compose._OptGate([100], [[1.0, 1.2]], scale=10.0)
    assert both("add", {True: 0.02, False: -0.06}) is True
    assert both("add", {True: 0.02, False: 0.019}) is False
    # an unbounded held bracket (no finite upper end yet) is never skipped
    assert compose._OptGate([100], [[0.0, math.inf]], 10.0)("d", {True: 1.0,
                                                                   False: -1.0}) is False


def test_a_sinking_optimistic_side_is_not_composed_and_the_bracket_is_unchanged(monkeypatch):
    # q = 3e-6, σ = 0.9, 1e7 steps, δ = 1e-60: at the finest grid the optimistic side's clump
    # alignment fails and its one-step mass sinks (the composed lower end would be far below
    # the first pass's)
    args = (3e-6, 0.9, 10_000_000, math.log(1e-60))
    said = _recording(monkeypatch, eps_search)
    gated = pld.epsilon_bounds(*args)
    assert True in said                                  # a composition was skipped
    monkeypatch.setattr(compose, "_OPT_SKIP", math.inf)  # the gate never skips
    said.clear()
    assert pld.epsilon_bounds(*args) == gated            # both ends, bit for bit
    assert True not in said


@pytest.mark.parametrize("args", [
    # (2,000 steps here met the tolerance at the first pass once short spikes were convolved
    # as shifted copies, pmf._conv: no refinement to ask the gate; 3,000 still refines)
    (1e-4, 0.6, 3000, math.log(1e-9)),
    (0.000279, 0.585, 340502, math.log(1e-5)),
])
@pytest.mark.parametrize("for_solve", [False, True])
def test_refinements_that_need_their_optimistic_sides_compose_them(monkeypatch, args,
                                                                    for_solve):
    # refined brackets whose optimistic sides do raise the lower end: the gate is asked
    # and lets them through, so the brackets equal those with no gate at all
    said = _recording(monkeypatch, eps_search)
    gated = pld.epsilon_bounds(*args, for_solve=for_solve)
    assert said and True not in said
    monkeypatch.setattr(compose, "_OPT_SKIP", math.inf)
    assert pld.epsilon_bounds(*args, for_solve=for_solve) == gated


def test_a_delta_refinement_skips_a_sinking_optimistic_side(monkeypatch):
    # random case 169 of benchmarks/bench_dpsgd_random.py (q 1.045e-7, σ 0.8713, 4.8e6
    # steps, δ at ε = 5.721): the finest pass's optimistic side falls 12.4 nats of log δ
    # short against a held width of 0.05; the bracket is that of the ungated passes
    args = (1.045e-07, 0.8713, 4790324, 5.721)
    said = _recording(monkeypatch, compose)
    gated = pld.log_delta_bounds(*args)
    assert said == [True]
    monkeypatch.setattr(compose, "_OPT_SKIP", math.inf)
    assert pld.log_delta_bounds(*args) == gated


def test_a_pass_of_pessimistic_sides_first_leaves_the_gate_its_c_p(monkeypatch):
    # a solver's refinement that is not its last (ρ 0.0142 -> 0.0072) composes the
    # pessimistic side, then the optimistic one in a build of its own: the gate must have
    # seen c_P at the first build to judge the second (it did not: never asked with both)
    args = (0.00134, 0.631, 91791, math.log(1e-5))
    normal = pld.epsilon_bounds(*args, for_solve=True)
    answers = []

    class Recording(compose._OptGate):
        def __call__(self, d, cs):
            answers.append((d, tuple(sorted(cs)), super().__call__(d, cs)))
            return answers[-1][2]

    monkeypatch.setattr(eps_search, "_OptGate", Recording)
    monkeypatch.setattr(compose, "_OPT_SKIP", -math.inf)   # skip whenever c_P is known
    forced = pld.epsilon_bounds(*args, for_solve=True)
    assert answers == [("remove", (True,), False), ("remove", (False,), True)]
    assert forced[1] == normal[1]         # the upper end is the pessimistic side's alone
    assert forced[0] < normal[0]          # the first pass's lower end stands
