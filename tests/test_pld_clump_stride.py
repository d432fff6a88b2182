"""The narrow clump's stride (sides._drift_stride) and the refinement's edge gate
(sides._EDGE_GATE_FINE): the optimistic side's lower end at small q and σ.

On the final grid's stride the remove direction's clump at its hard edge log(1 − q) was one
atom ~17q wide at every step, and the first pass's lower end came out 2–22 % low at δ 1e-5;
the brackets the refinement left were up to 7.5 % wide at tolerance 1e-3.  Both choices only
decide which losses merge into which atom (discretise._clump_level0 and _bucket_level0
certify each), so the upper ends stay those of the pessimistic sides."""

from __future__ import annotations

import math

import pytest

import dpcalc.pld.eps_search as eps_search
from dpcalc.pld import sides
from dpcalc.relations import pld

LOG_DELTA = math.log(1e-5)


@pytest.mark.parametrize("ratio, final, want", [
    (0.54, 64, 2), (0.70, 128, 2), (1.13, 128, 2), (1.81, 128, 4),
    (8.6, 128, 128), (17.5, 256, 256), (20.0, 32, 32),
])
def test_the_stride_is_the_power_of_two_above_the_squared_ratio(ratio, final, want):
    # (h/median)² rounded up to a power of two, at least 2, at most the final grid's stride:
    # the measured best strides or next to them (see _drift_stride), never below the
    # final grid's where the best was that
    h = 1e-4
    assert sides._drift_stride(final, h, h / ratio) == want


def test_no_median_keeps_the_final_grid():
    assert sides._drift_stride(64, 1e-4, 0.0) == 64
    # (review, helper-28: a subnormal median overflowed 1 << k)
    assert sides._drift_stride(64, 1e-3, 1e-320) == 64
    assert sides._drift_stride(64, 1e-3, math.inf) == 64


def _first_remove_pass(monkeypatch, *args):
    seen = []
    real = eps_search._compose_points

    def spy(*a, **k):
        res = real(*a, **k)
        if k["directions"] == ["remove"] and False in k["sides"]:
            seen.append(res[0])
        return res

    monkeypatch.setattr(eps_search, "_compose_points", spy)
    bracket = pld.epsilon_bounds(*args)
    return seen[0], bracket


def test_the_first_pass_lower_end_is_tight_at_a_small_rate(monkeypatch):
    # q 4.23e-4, σ 0.57, 368,795 steps (a batch line): was 5.1894 beside an upper end 5.7110
    (lower, upper), (final_lo, final_up) = _first_remove_pass(
        monkeypatch, 4.23e-4, 0.57, 368_795, LOG_DELTA)
    assert lower >= 5.70 and upper <= 5.7110
    # the refinement's lower end is not below the first pass's (its smaller h makes the
    # clump wide, and the edge's buckets are cut at the lower gate): was 5.70504, the
    # refinement having stalled on plain buckets' 5.6827
    assert final_lo >= 5.706 and (final_up - final_lo) / final_up <= 1e-3


def test_a_bracket_left_wide_is_now_within_a_little_of_the_tolerance():
    # q 1e-4, σ 0.6, 10⁵ steps: [0.593663, 0.608657], 2.5 % wide; the same upper end
    lower, upper = pld.epsilon_bounds(1e-4, 0.6, 10**5, LOG_DELTA)
    assert upper <= 0.6086568 and (upper - lower) / upper <= 1.5e-3


def test_the_first_pass_keeps_the_higher_gate(monkeypatch):
    # a typical line's optimistic first pass builds no edge buckets (q 0.0043, σ 1.1:
    # 39 -> 56 ms for 8e-6 of lower end at the lower gate); its refinements may
    gates = []
    real = sides._make_sides

    def spy(pair, direction, plan, *a, **k):
        gates.append(plan.edge_gate)
        return real(pair, direction, plan, *a, **k)

    import dpcalc.pld.compose as compose
    monkeypatch.setattr(compose, "_make_sides", spy)
    pld.epsilon_bounds(4.23e-4, 0.57, 368_795, LOG_DELTA)
    assert gates[0] == sides._EDGE_GATE and sides._EDGE_GATE_FINE in gates


def test_a_refinement_cuts_the_edge_buckets_whatever_the_estimated_lowering():
    # q 5.93e-4, σ 0.657, 25,296 steps: 2.6e-3 wide at the gate 0.05 (its estimate of the
    # plain buckets' lowering was below it), 7.9e-4 at 0; the same upper end
    lower, upper = pld.epsilon_bounds(5.93e-4, 0.657, 25_296, LOG_DELTA)
    assert (upper - lower) / upper <= 1e-3 and upper <= 1.378167


def test_a_refined_delta_pass_cuts_the_edge_buckets_too():
    # the δ search's refinements take the same gate as the ε search's (q 5.93e-4, σ 0.657,
    # 25,296 steps at ε 1.3782: δ's bracket 1.08 % wide -> 0.36 %, the same upper end)
    lo, up = pld.log_delta_bounds(5.93e-4, 0.657, 25_296, 1.3782)
    assert -math.expm1(lo - up) <= 5e-3 and up <= -11.514018
