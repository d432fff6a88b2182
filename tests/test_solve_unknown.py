"""The one leave-one-out engine: ``solve_unknown`` reads the search from the ``Param``.

For every parameter dpcalc declares (dpcalc.params and every API module) the dispatcher must
search in the documented direction: ``safer="larger"`` gives the smallest passing value,
``"smaller"`` the largest, ``integer`` an exact integer — and never a failing value.
"""

from __future__ import annotations

import importlib
import math
import pkgutil

import pytest

import dpcalc.api
import dpcalc.params
from dpcalc.errors import InfeasibleError
from dpcalc.params import SIGMA, Param
from dpcalc.solve import bisect_to_adjacent, climb_to_adjacent, solve_unknown


def _declared_params() -> list[tuple[str, Param]]:
    modules = [dpcalc.params] + [importlib.import_module(f"dpcalc.api.{m.name}")
                                 for m in pkgutil.iter_modules(dpcalc.api.__path__)]
    seen, out = set(), []
    for module in modules:
        for attr, value in vars(module).items():
            if isinstance(value, Param) and id(value) not in seen:
                seen.add(id(value))
                out.append((f"{module.__name__.rsplit('.', 1)[-1]}.{attr}", value))
    return out


PARAMS = _declared_params()


def test_the_declarations_are_found():
    names = {name for name, _ in PARAMS}
    assert {"params.SIGMA", "params.Q", "compose.K", "dpsgd.STEPS", "plan.COUNT",
            "params.WHOLE_EPOCHS", "dpsgd_runs.BATCH"} <= names


def _first_last(p: Param) -> tuple[int, int | None]:
    first = math.floor(p.low) + 1 if p.low_open else math.ceil(p.low)
    last = None if math.isinf(p.high) else (math.ceil(p.high) - 1 if p.high_open
                                           else math.floor(p.high))
    return first, last


def _threshold(p: Param) -> float:
    top = p.high if math.isfinite(p.high) else p.low + 10.0
    return p.low + 0.37 * (top - p.low)


@pytest.mark.parametrize("name,p", [x for x in PARAMS if not x[1].integer], ids=lambda v: str(v))
def test_real_unknown_follows_its_safer_side(name, p):
    t = _threshold(p)
    if p.safer == "larger":
        def holds(x):
            return x >= t
        got = solve_unknown(p, holds)
        assert got >= t and got <= t * (1 + 1e-11)       # the smallest passing value
        assert not holds(got * (1 - 1e-9))               # just below: the failing side
    else:
        assert p.safer == "smaller", name

        def holds(x):
            return x <= t
        got = solve_unknown(p, holds)
        assert got <= t and got >= t * (1 - 1e-11)       # the largest passing value
        assert not holds(got * (1 + 1e-9))               # just above: the failing side


@pytest.mark.parametrize("name,p", [x for x in PARAMS if x[1].integer], ids=lambda v: str(v))
def test_integer_unknown_is_the_largest_passing_whole_number(name, p):
    assert p.safer == "smaller", f"{name}: an integer whose larger values are safer"
    first, last = _first_last(p)
    t = first + (5 if last is None else min(5, (last - first) // 2))
    got = solve_unknown(p, lambda n: n <= t)
    assert got == t and isinstance(got, int)
    with pytest.raises(InfeasibleError, match=f"{p.label} = {first} "):
        solve_unknown(p, lambda n: False)


@pytest.mark.parametrize("name,p", PARAMS, ids=lambda v: str(v))
def test_no_value_in_the_domain_passes(name, p):
    """A predicate that never passes is infeasible in either direction (never a failing
    value returned)."""
    with pytest.raises(InfeasibleError):
        solve_unknown(p, lambda x: False)


def test_the_wrong_direction_would_not_answer():
    """A "larger" parameter under an increasing predicate: the largest-value search would
    find no top; the dispatcher searches down from it instead."""
    got = solve_unknown(SIGMA, lambda s: s >= 2.0)
    assert 2.0 <= got <= 2.0 * (1 + 1e-11)
    smaller = Param("rate", 0.0, 1.0, True, False, "smaller")
    assert solve_unknown(smaller, lambda r: r <= 0.25) == pytest.approx(0.25, rel=1e-11)
    assert solve_unknown(smaller, lambda r: r <= 0.25) <= 0.25


def test_narrowed_domain_and_name():
    got = solve_unknown(SIGMA, lambda s: True, low=1e-3, low_open=True, high=10.0)
    assert 1e-3 < got <= 1e-3 * (1 + 1e-11)
    assert solve_unknown(SIGMA, lambda s: True, low=1e-3, high=10.0) == 1e-3
    with pytest.raises(InfeasibleError, match="no noise up to 10 meets"):
        solve_unknown(SIGMA, lambda s: False, high=10.0, name="noise")
    steps = Param("steps", 0, math.inf, True, True, "smaller", integer=True)
    assert solve_unknown(steps, lambda n: True, high=40) == 40    # a given end is included
    assert solve_unknown(steps, lambda n: True, high=40, high_open=True) == 39
    assert solve_unknown(steps, lambda n: n <= 7, low=3) == 7
    with pytest.raises(InfeasibleError, match="steps = 3 "):
        solve_unknown(steps, lambda n: n <= 2, low=3)


def test_declarations_without_a_search_are_refused():
    with pytest.raises(ValueError):
        solve_unknown(Param("n", 0, 10, True, False, "larger", integer=True), lambda n: True)
    with pytest.raises(ValueError):
        solve_unknown(Param("x", 0.0, 1.0, True, False, "sideways"), lambda x: True)


@pytest.mark.parametrize("t", [0.3, 1e-20, 7.5e12, 12345.678])
def test_bisect_to_adjacent_keeps_the_passing_end(t):
    hi = bisect_to_adjacent(lambda x: x >= t, 0.0, 1e13)
    assert hi >= t and math.nextafter(hi, 0.0) < t
    lo = bisect_to_adjacent(lambda x: x <= t, 1e13, 0.0)
    assert lo <= t and math.nextafter(lo, math.inf) > t


def test_bisect_to_adjacent_stops_at_the_relative_width():
    calls = []

    def passes(x):
        calls.append(x)
        return x >= 0.5

    got = bisect_to_adjacent(passes, 0.0, 1.0, rel_width=1e-3)
    assert got >= 0.5 and got - 0.5 <= 1e-3 and len(calls) <= 11


@pytest.mark.parametrize("t", [1.0, 0.1, 3e-310, 1e300])
def test_climb_to_adjacent_reaches_the_last_passing_double(t):
    start = t * 0.999999 if t > 1e-300 else 0.0
    got = climb_to_adjacent(lambda x: x <= t, start)
    assert got == t


def test_a_relation_domain_error_reaches_the_cli_as_exit_2_with_one_line(capsys, monkeypatch):
    """A relation called outside its domain raises DomainError (no longer a bare ValueError,
    which the CLI reports as an internal error, exit 3): exit 2, its message on one line."""
    from dpcalc.api import laplace as api
    from dpcalc.relations import subsample
    from tests.cli_helpers import run

    def out_of_domain(*args, **kwargs):
        return subsample.amplify(-1.0, -10.0, 0.5)

    monkeypatch.setattr(api.rel, "log_delta", out_of_domain)
    r = run(capsys, "laplace", "--scale", "2", "--epsilon", "1")
    assert r.code == 2 and r.out == ""
    assert r.err.count("\n") == 1 and r.err.startswith("dpcalc: error: epsilon must be")
