"""A narrow one-step bulk beside a far tail (small q and σ): the finest pass whose one-step
lattice the length cap coarsened is followed by one with the cap raised (eps_search._raise_len,
compose._delta_passes).

Reference: dp_accounting's connect-the-dots PLD (pessimistic, a certified upper bound) of the
Poisson-subsampled Gaussian, q 1e-5, σ 0.6, 10⁶ steps, at value_discretization_interval 5e-6:
ε(1e-5) ≤ 0.1302410900213756 (1e-5: 0.130615, 3e-5: 0.136043; benchmark venv, session 39).
The true ε is at most that; dpcalc's upper end was 0.13203 (1.4 % above), its grid asking for
h = 1.7e-6 where the cap of 2^19 points over the one-step range of ~3.7 gave 7.5e-6.
"""

from __future__ import annotations

import math

import pytest

import dpcalc.pld.sides as sides_mod
from dpcalc.pld._core import _N0_LEN_FAR, _N0_LEN_MAX
from dpcalc.relations import pld

CASE = (1e-5, 0.6, 10**6)
REF_EPS = 0.1302410900213756   # ≥ the true ε(1e-5) (dp_accounting, CTD at 5e-6)
LOG_DELTA = math.log(1e-5)


@pytest.fixture
def caps(monkeypatch):
    """The length caps of the one-step lattices built (per pass and side)."""
    seen = []
    real = sides_mod._level0

    def spy(*args, **kwargs):
        seen.append(kwargs.get("len_max", _N0_LEN_MAX))
        return real(*args, **kwargs)

    monkeypatch.setattr(sides_mod, "_level0", spy)
    return seen


def test_the_upper_end_reaches_the_fine_reference(caps):
    lower, upper = pld.epsilon_bounds(*CASE, LOG_DELTA)
    assert upper <= REF_EPS * (1 + 2e-4)
    assert 0.0 < lower <= upper
    assert _N0_LEN_FAR in caps          # the raised pass ran


def test_a_solvers_evaluation_gives_the_same_upper_end():
    full = pld.epsilon_bounds(*CASE, LOG_DELTA)[1]
    lo_s, up_s = pld.epsilon_bounds(*CASE, LOG_DELTA, for_solve=True)
    assert up_s == full
    assert 0.0 <= lo_s <= up_s


def test_delta_at_the_reference_epsilon_is_near_its_delta():
    """dp_accounting certifies δ(0.130241) ≤ 1e-5; dpcalc said 1.175e-5 before."""
    lo, up = pld.log_delta_bounds(*CASE, REF_EPS)
    assert math.exp(up) <= 1e-5 * 1.005
    assert lo <= up


def test_an_uncapped_grid_is_not_raised(caps):
    pld.epsilon_bounds(1e-3, 0.8, 3000, math.log(1e-8))
    pld.log_delta_bounds(1e-3, 0.8, 3000, 2.0)
    assert caps and _N0_LEN_FAR not in caps


def test_delta_agrees_with_the_epsilon_question_at_a_smaller_rate():
    """q 1e-6, σ 0.6, 10⁷ steps: ε(1e-5) ≤ 0.035936; δ at ε 0.036 must then be at most about
    1e-5.  The δ side's raised pass had re-sized its budgets from a loose lower end (1.9e-52)
    and moved the tilt: 9.8e-5, the raise wasted (review, helper-20)."""
    eps = pld.epsilon_bounds(1e-6, 0.6, 10**7, LOG_DELTA)[1]
    assert eps <= 0.036
    lo, up = pld.log_delta_bounds(1e-6, 0.6, 10**7, 0.036)
    assert math.exp(up) <= 1e-5 * 1.001 and lo <= up


def test_a_failing_raised_pass_leaves_the_earlier_bracket_in_both_modes(monkeypatch):
    """A raised pass that cannot be composed (its grid out of range, say) leaves the bracket
    of the passes before it, and a solver's evaluation reads the same upper end."""
    import dpcalc.pld.eps_search as search
    from dpcalc.pld._core import PLDUncertifiable

    real = search._compose_points

    def failing(pair, steps, rho, plans, *args, directions=None, **kwargs):
        if any(plans[d].len_max == _N0_LEN_FAR for d in directions or ()):
            raise PLDUncertifiable("injected")
        return real(pair, steps, rho, plans, *args, directions=directions, **kwargs)

    monkeypatch.setattr(search, "_compose_points", failing)
    lower, upper = pld.epsilon_bounds(*CASE, LOG_DELTA)
    assert upper == pytest.approx(0.13203, rel=1e-4)     # the capped pass's bound
    assert pld.epsilon_bounds(*CASE, LOG_DELTA, for_solve=True)[1] == upper


def test_no_raise_where_the_error_term_is_near_delta(caps):
    """q 1e-5, σ 0.7, 10⁶ steps, δ 1e-10: the ℓ1 error term at the capped pass's upper end is
    within e^2 of δ, and the longer vectors' round-off bound grows: the raised pass gave 0.278
    against the capped pass's 0.261 (the answer kept), at 4.6 s instead of 1.7 s, 688 MB
    (review, helper-20).  It is not composed.  (0.2597 since a square's shifted copies of its
    heavy entries are one set, with half the rounded sums to bound.  The error term sets
    this upper end, and its discrete steps follow the CPU's summation order in numpy: with
    AVX-512 0.25967, without 0.25968; the code before gave 0.26135 and 0.26142.)"""
    lower, upper = pld.epsilon_bounds(1e-5, 0.7, 10**6, math.log(1e-10))
    assert _N0_LEN_FAR not in caps
    assert upper == pytest.approx(0.259677, rel=1e-4) and lower <= upper


def test_a_capped_finest_pass_followed_by_a_raised_one_composes_no_optimistic_side(
        monkeypatch):
    """The raised pass's optimistic sides, on the finer lattice, take the place of the
    capped pass's: those are not composed (their lower ends were below the earlier passes'
    anyway, e.g. 5.4235 beside 5.5136 at q 2.69e-4, σ 0.537, 628,253 steps)."""
    import dpcalc.pld.eps_search as es
    from dpcalc.pld._core import _RHO_MIN

    passes = []
    real = es._compose_points

    def spy(*args, **kwargs):
        plans, d = args[3], kwargs["directions"][0]
        passes.append((args[2], kwargs["sides"], plans[d].len_max, d))
        return real(*args, **kwargs)

    monkeypatch.setattr(es, "_compose_points", spy)
    lower, upper = pld.epsilon_bounds(*CASE, LOG_DELTA)
    raised = [p for p in passes if p[2] == _N0_LEN_FAR]
    assert raised and any(False in p[1] for p in raised)   # the raised pass's lower end
    capped_finest = [p for p in passes if p[0] <= _RHO_MIN and p[2] < _N0_LEN_FAR
                     and p[3] == raised[0][3]]
    assert capped_finest and not any(False in p[1] for p in capped_finest)
    # the raised pass's lower end (the capped pass's optimistic sides give 0 here; 0.109703
    # before the narrow clump's stride, sides._drift_stride, and the refinement's edge gate)
    assert lower == pytest.approx(0.129613, rel=1e-4) and REF_EPS <= upper * (1 + 2e-4)


def test_where_the_raised_pass_fails_the_capped_pass_gives_its_lower_end(monkeypatch):
    """Review (helper-26): the capped finest pass leaves its optimistic sides to the raised
    pass; where that pass fails (here injected), they are composed after all, as before the
    raised pass existed, and the bracket stands on them."""
    import dpcalc.pld.eps_search as es
    from dpcalc.pld._core import _RHO_MIN, PLDUncertifiable

    passes = []
    real = es._compose_points

    def failing_raise(*args, **kwargs):
        plans, d = args[3], kwargs["directions"][0]
        passes.append((args[2], kwargs["sides"], plans[d].len_max, d))
        if plans[d].len_max == _N0_LEN_FAR:
            raise PLDUncertifiable("injected")
        return real(*args, **kwargs)

    monkeypatch.setattr(es, "_compose_points", failing_raise)
    lower, upper = pld.epsilon_bounds(*CASE, LOG_DELTA)
    failed = next(i for i, p in enumerate(passes) if p[2] == _N0_LEN_FAR)
    d = passes[failed][3]
    assert (_RHO_MIN, (False,), passes[failed - 1][2], d) in passes[failed + 1:]
    assert 0.0 < lower <= upper < math.inf


@pytest.mark.parametrize("q", [1e-100, 1e-200])
def test_a_grid_whose_indices_leave_the_integer_range_is_uncertifiable(q):
    # q 1e-100: losses ~1e-13 on a one-step grid of ~5e-100, indices ~2e86 (the lattice's
    # arrays are int64): the engine says it cannot certify (its callers fall back), where
    # it raised IndexError from numpy
    from dpcalc.api.dpsgd import dpsgd
    from dpcalc.pld import PLDUncertifiable

    with pytest.raises(PLDUncertifiable):
        pld.epsilon_bounds(q, 0.5, 100, math.log(1e-5), 1e-3)
    with pytest.raises(PLDUncertifiable):
        pld.epsilon_bounds(q, 0.5, 10**6, math.log(1e-200), 1e-3)
    # the dpsgd command answers there (below the PLD's rate floor, by its fallback)
    r = dpsgd(q=q, sigma=0.5, steps=10**6, delta=1e-200, compare=False)
    assert 0.0 <= r.value < math.inf
