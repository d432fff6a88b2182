"""The PLD's cheap upper bound for solvers (first pass, pessimistic sides) and the kept
compositions that let a full bracket reuse it (issue 13)."""

from __future__ import annotations

import math

import pytest

import dpcalc
from dpcalc.api.dpsgd import Accountant
from dpcalc.relations import pld

CASES = [
    (0.01, 4.0, 10000, math.log(1e-5)),
    (256 / 60000, 1.1, 14063, math.log(1e-5)),
    (0.00226, 6.47, 6541, math.log(1e-20)),
    (0.5, 3.0, 40, math.log(1e-5)),
    (1.0, 10.0, 1, math.log(1e-8)),       # symmetric: one direction
    (1e-4, 0.6, 2000, math.log(1e-9)),
]


@pytest.mark.parametrize("q, sigma, steps, log_delta", CASES)
def test_quick_upper_is_an_upper_bound_no_tighter_than_the_full_bracket(q, sigma, steps,
                                                                         log_delta):
    lower, upper = pld.epsilon_bounds(q, sigma, steps, log_delta)
    quick = pld.epsilon_upper(q, sigma, steps, log_delta)
    assert quick >= upper >= lower
    # the full bracket refines only when its first pass is too wide: then the quick bound
    # is that first pass's upper end, still within a few tolerances of the truth
    assert quick <= upper * (1 + 5e-3)


@pytest.mark.parametrize("q, sigma, steps, log_delta", CASES[:3])
def test_kept_compositions_change_no_bit(q, sigma, steps, log_delta):
    fresh = pld.epsilon_bounds(q, sigma, steps, log_delta)
    fresh_quick = pld.epsilon_upper(q, sigma, steps, log_delta)
    with pld.keeping_compositions():
        quick = pld.epsilon_upper(q, sigma, steps, log_delta)
        kept = pld.epsilon_bounds(q, sigma, steps, log_delta)   # reuses the quick pass
        again = pld.epsilon_bounds(q, sigma, steps, log_delta)  # everything kept
    assert (quick, kept, again) == (fresh_quick, fresh, fresh)


def test_nothing_is_kept_outside_the_context():
    from dpcalc.pld import compose

    pld.epsilon_bounds(0.01, 4.0, 1000, math.log(1e-5))
    assert compose._KEPT is None
    with pld.keeping_compositions():
        pld.epsilon_bounds(0.01, 4.0, 1000, math.log(1e-5))
        assert compose._KEPT
        with pld.keeping_compositions():           # nested: one store
            assert compose._KEPT
        assert compose._KEPT
    assert compose._KEPT is None


@pytest.mark.parametrize("kwargs", [
    dict(q=0.01, epochs=100, epsilon=1.0, delta=1e-5),
    dict(batch_size=256, dataset_size=60000, epochs=60, epsilon=3.0, delta=1e-5),
    dict(q=0.00226, steps=6541, epsilon=2.1, delta=1e-20),
])
def test_solved_sigma_passes_on_the_full_bracket_or_its_quick_bound_and_is_near_minimal(
        kwargs):
    r = dpcalc.dpsgd(**kwargs)
    sigma = r.value
    q = kwargs.get("q", 256 / 60000)
    steps = r.parameters["steps"]
    log_delta = math.log(kwargs["delta"])
    quick = pld.epsilon_upper(q, sigma, steps, log_delta)
    full = pld.epsilon_bounds(q, sigma, steps, log_delta)[1]
    assert min(quick, full) <= kwargs["epsilon"]           # certified by a valid upper bound
    # a noise 1e-3 smaller is certainly not enough (its certified lower end fails)
    lower_below = pld.epsilon_bounds(q, sigma * (1 - 1e-3), steps, log_delta)[0]
    assert lower_below > kwargs["epsilon"] * (1 - 2e-3)


def test_accountant_holds_agrees_with_the_full_bracket_on_clear_cases():
    acc = Accountant("pld", 1e-3)
    log_delta = math.log(1e-5)
    lo, up = pld.epsilon_bounds(0.01, 4.0, 10000, log_delta)
    assert acc.holds(0.01, 4.0, 10000, up * 1.01, log_delta) is True
    assert acc.holds(0.01, 4.0, 10000, lo * 0.99, log_delta) is False
    # a passing point certified by the cheap bound has no fallback note
    assert acc.note_at(0.01, 4.0, 10000, log_delta) == ""


def test_curve_points_are_certified_upper_bounds_near_each_points_bracket():
    q, sigma, log_delta = 256 / 60000, 1.1, math.log(1e-5)
    steps = [math.ceil(e / q) for e in (1, 2, 5, 13, 30, 60)]
    rows = pld.epsilon_curve(q, sigma, steps, log_delta, upper_only=True)
    for (s, lo, up), t in zip(rows, steps, strict=True):
        low, high = pld.epsilon_bounds(q, sigma, t, log_delta)
        assert s == t and lo == 0.0
        assert up >= low                      # never below the certified truth
        assert up <= high * (1 + 5e-3)        # and within a few tolerances of the bracket
    assert [r[2] for r in rows] == sorted(r[2] for r in rows)


def test_dpsgd_curve_json_points_are_upper_bounds(capsys):
    r = dpcalc.dpsgd(q=0.02, sigma=1.5, epochs=5, delta=1e-5, curve=True)
    curve = r.extra["curve"]
    assert [p["epochs"] for p in curve] == [1, 2, 3, 4, 5]
    for p in curve:
        low = pld.epsilon_bounds(0.02, 1.5, p["steps"], math.log(1e-5))[0]
        assert p["epsilon"] >= low and "lower" not in p


def test_kept_compositions_never_lose_a_side_they_are_about_to_read():
    """Review repro: a cheap pass keeps the pessimistic side; four more points push the store
    to its cap; the full bracket of the first point then adds its optimistic side, and the
    trimming must not evict the pessimistic one before it is read (was a KeyError)."""
    from dpcalc.pld.compose import keeping_compositions

    ld = math.log(1e-5)
    with keeping_compositions():
        pld.epsilon_upper(0.01, 1.0, 1000, ld)
        for t in (1100, 1200, 1300):
            pld.epsilon_upper(0.01, 1.0, t, ld)
        kept = pld.epsilon_bounds(0.01, 1.0, 1000, ld)
    assert kept == pld.epsilon_bounds(0.01, 1.0, 1000, ld)


# -- for_solve: a solver's full evaluation skips the optimistic side of the last pass ------

# each refines to the finest grid (the first pass is too wide); the second has an add
# direction that its bound on the loss does not rule out, the third a tiny δ
FOR_SOLVE_CASES = [
    (1e-4, 0.8, 2000, math.log(1e-10)),
    (1e-3, 0.6, 3000, math.log(1e-8)),
    (3e-5, 1.2, 5000, math.log(1e-100)),
    (0.05, 0.7, 300, math.log(1e-30)),   # no refinement: the same passes
]


@pytest.mark.parametrize("q, sigma, steps, log_delta", FOR_SOLVE_CASES)
def test_for_solve_gives_the_full_brackets_upper_end_bit_for_bit(q, sigma, steps,
                                                                   log_delta):
    import dpcalc.pld.eps_search as search

    lower, upper = pld.epsilon_bounds(q, sigma, steps, log_delta)
    sides = []
    real = search._compose_points

    def spy(*args, **kwargs):
        sides.append(kwargs.get("sides", (True, False)))
        return real(*args, **kwargs)

    search._compose_points = spy
    try:
        lo_u, up_u = pld.epsilon_bounds(q, sigma, steps, log_delta, for_solve=True)
    finally:
        search._compose_points = real
    assert up_u == upper
    assert 0.0 <= lo_u <= up_u
    if len(sides) > 1:  # refined: its last pass composed the pessimistic side alone
        assert (True,) in sides


def test_a_solve_gives_the_same_answer_with_for_solve_full_evaluations(monkeypatch):
    import dpcalc.accountants.dpsgd as accountants
    from dpcalc.api import dpsgd as api

    asked = []
    real = accountants.evaluate

    def spy(name, question, *args):
        asked.append(question)
        return real(name, question, *args)

    monkeypatch.setattr(accountants, "evaluate", spy)
    args = dict(sigma=0.6, steps=3000, epsilon=3.87, delta=1e-8, compare=False)
    got = api.dpsgd(**args).value
    assert "epsilon_solve" in asked and "epsilon" not in asked
    asked.clear()
    real_solve = api._solve

    def plain(acc, unknown, values):  # the same solve with full brackets
        class Plain(Accountant):
            for_solve = property(lambda self: False, lambda self, value: None)

        acc.__class__ = Plain
        return real_solve(acc, unknown, values)

    monkeypatch.setattr(api, "_solve", plain)
    assert api.dpsgd(**args).value == got
    assert "epsilon" in asked and "epsilon_solve" not in asked


def test_for_solve_skips_a_direction_the_full_bracket_skips_even_if_its_pass_fails(
        monkeypatch):
    """Review: with the remove direction's last lower end still pending, the add direction's
    first pass is composed where the full bracket (reading that lower end) skips it. If that
    pass cannot be certified, the settled lower end decides, as in the full bracket."""
    import dpcalc.pld.eps_search as search

    # the review's case was T = 8248; since the optimistic side's clump merge its first-pass
    # lower end (9.359) already rules out the add direction (ε ≤ T·(−log(1 − q)) = 9.293),
    # so both skip it. At T = 8320 the add bound 9.374 lies between the first-pass lower end
    # (9.362) and the last one (9.382): the two differ again as in the review
    case = (0.0011261, 0.90477, 8320, -97.363)
    real = search._compose_points
    add_passes = []

    def no_add(*args, **kwargs):
        if kwargs.get("directions") == ["add"]:
            add_passes.append(kwargs.get("sides"))
            raise search.PLDUncertifiable("test: the add direction cannot be certified")
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "_compose_points", no_add)
    lower, upper = pld.epsilon_bounds(*case)
    assert not add_passes             # the full bracket skips the add direction
    lo_s, up_s = pld.epsilon_bounds(*case, for_solve=True)
    # the solver's composed its first pass, which failed, and the settled lower end decided;
    # now its bound T·(−log(1 − q)) = 9.374 at most the remove direction's final upper end
    # skips it too (helper-17): the combined upper end is that one, bit for bit
    assert not add_passes
    assert up_s == upper and lo_s <= up_s


@pytest.mark.parametrize("q, sigma, steps, log_delta", [
    # random case 291 of benchmarks/bench_dpsgd_random.py: the refined pass's upper end with
    # the first pass's lower end is already within the tolerance
    (3.202796833207492e-05, 1.169, 111803, math.log(2.506e-273)),
    # random case 97: the first pass's upper end is mostly the error term (no refinement)
    (2.097638631207643e-11, 1.03, 215, math.log(8.128e-213)),
    # random case 297: the add direction's upper end (0.59) is far below the remove
    # direction's (21.88), whose lower end (0) would not show it dominated
    (1.811e-07, 0.9449166679, 9670927, math.log(2.236e-262)),
])
def test_for_solve_skips_the_optimistic_side_of_a_pass_that_ends_the_loop(q, sigma, steps,
                                                                           log_delta):
    """The loop stops after such a pass whatever its lower ends, so a solver's evaluation
    composes its pessimistic sides alone: the same upper end, fewer compositions."""
    import dpcalc.pld.eps_search as search

    real = search._compose_points
    sides = {False: [], True: []}

    def run(for_solve):
        def spy(*args, **kwargs):
            sides[for_solve].append(kwargs.get("sides", (True, False)))
            return real(*args, **kwargs)

        search._compose_points = spy
        try:
            return pld.epsilon_bounds(q, sigma, steps, log_delta, for_solve=for_solve)
        finally:
            search._compose_points = real

    full, solve = run(False), run(True)
    assert solve[1] == full[1]
    assert 0.0 <= solve[0] <= full[0]
    optimistic = {k: sum(False in s for s in v) for k, v in sides.items()}
    assert optimistic[True] < optimistic[False], sides


@pytest.mark.parametrize("q, sigma, steps, log_delta", [
    (0.01, 1.0, 1000, math.log(1e-5)),
    (0.0456, 5.55, 1140, math.log(1e-5)),
])
def test_a_dominated_direction_composes_no_optimistic_side(q, sigma, steps, log_delta,
                                                           monkeypatch):
    """The add direction's pessimistic bound at most the remove direction's lower end: its
    lower ends (below that) change nothing, so they are not composed, and the bracket is
    exactly the remove direction's alone."""
    import dpcalc.pld.eps_search as search

    real = search._compose_points
    add_sides = []

    def spy(*args, **kwargs):
        if kwargs.get("directions") == ["add"]:
            add_sides.append(kwargs.get("sides"))
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "_compose_points", spy)
    both = pld.epsilon_bounds(q, sigma, steps, log_delta)
    assert add_sides == [(True,)]
    monkeypatch.setattr(search, "_directions", lambda pairs: ["remove"])
    assert pld.epsilon_bounds(q, sigma, steps, log_delta) == both


@pytest.mark.parametrize("q, sigma, steps, log_delta", [
    (0.01, 1.0, 1000, math.log(1e-5)),
    (0.0456, 5.55, 1140, math.log(1e-5)),
    (0.01, 4.0, 10_000, math.log(1e-5)),
])
def test_a_dominated_later_direction_is_composed_once_at_the_scouts_resolution(
        q, sigma, steps, log_delta, monkeypatch):
    """The add direction's pessimistic sides at _SCOUT times the first resolution are at
    most the remove direction's lower end: that proves it dominated, and it is not composed
    at the first resolution; the bracket is the one without the scout, bit for bit."""
    import dpcalc.pld.eps_search as search
    from dpcalc.pld.compose import _first_rho

    real = search._compose_points
    add_rhos = []

    def spy(*args, **kwargs):
        if kwargs.get("directions") == ["add"]:
            add_rhos.append((args[2], kwargs.get("sides")))
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "_compose_points", spy)
    scouted = pld.epsilon_bounds(q, sigma, steps, log_delta)
    assert add_rhos == [(_first_rho(1e-3) * search._SCOUT, (True,))]
    monkeypatch.setattr(search, "_SCOUT", 1.0)
    assert pld.epsilon_bounds(q, sigma, steps, log_delta) == scouted
    # a solver's evaluation keeps composing it at the first resolution (its upper ends are
    # the full bracket's bit for bit; a coarser bound could fall below a finer one)
    add_rhos.clear()
    pld.epsilon_bounds(q, sigma, steps, log_delta, for_solve=True)
    assert add_rhos == [(_first_rho(1e-3), (True,))]


def test_inputs_one_ulp_apart_give_the_same_bound():
    """A grid set by 1/λ (h = ρ/λ) puts λh at exactly half the coarsening cap: the count of
    allowed coarsenings was floor(log2 2) and came out 0 or 1 with the rounding of inputs
    one ulp apart (σ = 1.169 as a float, and as the CLI reads "1.169": its double below).
    The two bounds then differed by 6e-4 relative, and solvers chased the difference."""
    q, steps, log_delta = 3.2500580642739467e-05, 111803, -627.6870425309006
    a = pld.epsilon_bounds(q, 1.169, steps, log_delta)
    b = pld.epsilon_bounds(q, math.nextafter(1.169, 0.0), steps, log_delta)
    assert b[1] == pytest.approx(a[1], rel=1e-9)
    assert b[0] == pytest.approx(a[0], rel=1e-9)


def test_an_upper_only_pass_builds_no_optimistic_grid(monkeypatch):
    # the quick bound composes pessimistic sides only; its one-step build also merged the
    # optimistic buckets (a third of a two-step probe's time far in the tail), then dropped
    # them
    from dpcalc.pld import sides

    def refuse(*args, **kwargs):
        raise AssertionError("an optimistic grid was built")

    quick = pld.epsilon_upper(6.362e-5, 3.3, 2, math.log(4.292e-284))
    monkeypatch.setattr(sides, "_bucket_level0", refuse)
    assert pld.epsilon_upper(6.362e-5, 3.3, 2, math.log(4.292e-284)) == quick
    with pytest.raises(AssertionError, match="optimistic grid"):
        pld.epsilon_bounds(6.362e-5, 3.3, 2, math.log(4.292e-284))


def test_a_scouts_grid_offset_is_not_searched(monkeypatch):
    """The scout's pessimistic bound only has to be sound (it proves a direction dominated or
    leaves the pass): its grid offset next to the add direction's edge is the first
    candidate, not the search over 32 (1,248 tail evaluations and their bucket plans, ~9 %
    of a batch line's instructions); the first-resolution passes still search it."""
    import dpcalc.pld.sides as sides

    real = sides._edge_offset
    calls = []

    def spy(pair, direction, h, loss=None, search=True):
        calls.append((direction, search))
        return real(pair, direction, h, loss, search)

    monkeypatch.setattr(sides, "_edge_offset", spy)
    lower, upper = pld.epsilon_bounds(0.01, 4.0, 10_000, math.log(1e-5))
    assert ("add", False) in calls and ("add", True) not in calls
    assert ("remove", True) in calls
    assert 0.0 < lower <= upper
