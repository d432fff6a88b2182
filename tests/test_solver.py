"""The generic solver on synthetic predicates: always the passing side, tight, exact integers."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcalc.errors import InfeasibleError
from dpcalc.solve import largest_passing, largest_passing_int, smallest_passing

positive = st.floats(1e-200, 1e200, allow_nan=False, allow_infinity=False)


@given(threshold=positive)
def test_smallest_passing_returns_passing_side(threshold):
    x = smallest_passing(lambda v: v >= threshold, low=0.0, high=math.inf, low_open=True,
                         name="x")
    assert x >= threshold and x <= threshold * (1 + 1e-11)


@given(threshold=positive, guess=positive)
def test_smallest_passing_with_any_guess(threshold, guess):
    x = smallest_passing(lambda v: v >= threshold, low=0.0, high=math.inf, low_open=True,
                         name="x", guess=guess)
    assert threshold <= x <= threshold * (1 + 1e-11)


@given(threshold=st.floats(1e-12, 1.0))
def test_largest_passing_in_unit_interval(threshold):
    x = largest_passing(lambda v: v <= threshold, low=0.0, high=1.0, high_open=False, name="q")
    assert threshold * (1 - 1e-11) <= x <= threshold


@given(threshold=st.integers(1, 10**15), guess=st.integers(1, 10**6))
def test_largest_passing_int_exact(threshold, guess):
    n = largest_passing_int(lambda k: k <= threshold, low=1, name="k", guess=guess)
    assert n == threshold


def test_step_predicate_with_undecided_region_is_never_optimistic():
    """None ("cannot certify") counts as failing, so the answer is on the certified side."""
    def holds(v):
        if v >= 2.0:
            return True
        if v >= 1.5:
            return None
        return False

    x = smallest_passing(holds, low=0.0, high=math.inf, low_open=True, name="x")
    assert 2.0 <= x <= 2.0 * (1 + 1e-11)


def test_closed_low_end_returned_when_it_passes():
    assert smallest_passing(lambda v: True, low=0.0, high=math.inf, low_open=False,
                            name="ε") == 0.0
    assert largest_passing(lambda v: True, low=0.0, high=1.0, high_open=False, name="q") == 1.0


def test_infeasible_raises():
    with pytest.raises(InfeasibleError):
        smallest_passing(lambda v: False, low=0.0, high=math.inf, low_open=True, name="σ")
    with pytest.raises(InfeasibleError):
        largest_passing_int(lambda k: False, low=1, name="k")
    with pytest.raises(InfeasibleError):
        largest_passing(lambda v: False, low=0.0, high=1.0, high_open=False, name="q")
