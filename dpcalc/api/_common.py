"""What every command shares: leave-one-out, method names, gates, the resolution of count
solves."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from decimal import Decimal

from dpcalc.errors import GateError, UsageError
from dpcalc.numeric.directed import Number
from dpcalc.numeric.display import as_input, shorten
from dpcalc.params import MAX_DELTA, MAX_EPSILON, Param
from dpcalc.result import Gate, Result


def _options(params: Iterable[Param]) -> str:
    names = [p.option for p in params]
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def leave_one_out(given: dict[str, object], params: Sequence[Param],
                  defaults: Sequence[tuple[str, object]] = (),
                  solve_for: str | None = None) -> tuple[dict[str, Number | int], Param]:
    """Parse the given parameters and find the one left out.

    Defaults apply only while more than one parameter is missing, in the order given
    (CONTRACT: "A default is applied only while more than one parameter is missing").

    Returns:
        (parsed values by name, the unknown Param).

    Raises:
        UsageError: none or more than one parameter missing, or ``solve_for`` conflicting.
        DomainError: a value out of range.
    """
    by_name = {p.name: p for p in params}
    values: dict[str, Number | int] = {}
    for p in params:
        raw = given.get(p.name)
        if raw is not None:
            values[p.name] = p.parse(raw)
    if solve_for is not None:
        key = solve_for.replace("-", "_")
        if key not in by_name:
            raise UsageError(f"--solve-for must be one of {', '.join(by_name)}, got {solve_for!r}")
        if key in values:
            raise UsageError(f"--solve-for {key} conflicts with {by_name[key].option}, "
                             "which was given")
        solve_for = key
    missing = [p for p in params if p.name not in values]
    for name, default in defaults:
        if len(missing) <= 1:
            break
        if name in values or name == solve_for:
            continue
        values[name] = by_name[name].parse(default)
        missing = [p for p in missing if p.name != name]
    if solve_for is not None:
        others = [p for p in missing if p.name != solve_for]
        if others:
            raise UsageError(f"missing {_options(others)}: give every parameter except the "
                             f"one solved for ({by_name[solve_for].option})")
        return values, by_name[solve_for]
    if not missing:
        raise UsageError(f"too many parameters: leave exactly one of {_options(params)} out; "
                         "all were given")
    if len(missing) > 1:
        raise UsageError(f"too few parameters: leave exactly one of {_options(params)} out; "
                         f"missing {_options(missing)}")
    return values, missing[0]


def check_choice(value: str, choices: Sequence[str], option: str) -> str:
    """Validate a method-like option value."""
    if value not in choices:
        raise UsageError(f"{option} must be one of {', '.join(choices)}, got {value!r}")
    return value


def failure_note(exc: Exception) -> str:
    """The note of a comparison row whose method could not answer."""
    from dpcalc.errors import DpcalcError

    if isinstance(exc, DpcalcError):
        return str(exc)
    return f"not evaluated for these inputs ({type(exc).__name__})"


#: What a comparison row may raise without failing the command: anything. The main answer is
#: computed first and a comparison row only shows "n/a" with the reason (issue 9).
def comparison_failures() -> tuple[type[Exception], ...]:
    return (Exception,)


EPSILON_KEYS = ("epsilon", "total_epsilon", "amplified_epsilon")
DELTA_KEYS = ("delta", "total_delta", "amplified_delta")


def parse_gate(name: str, raw: object) -> Number:
    """Validate a gate's limit (``max_epsilon``, ``max_delta``) on its own, before any
    computation: a bad gate is exit 2 at once, not after the accounting.

    Raises:
        DomainError: the limit is not a number in the gate's range.
    """
    if name == "max_tpr":
        from dpcalc.api._risk import MAX_TPR

        return MAX_TPR.parse(raw)
    return {"max_epsilon": MAX_EPSILON, "max_delta": MAX_DELTA}[name].parse(raw)


def evaluate_gates(result: Result, max_epsilon: object = None, max_delta: object = None,
                   max_tpr: object = None) -> tuple[Gate, ...]:
    """Every requested gate with its verdict (none raises for failing).

    ``--max-epsilon`` applies to a solved ε-like value (ε, total ε, amplified ε);
    ``--max-delta`` to a solved δ-like value, or to the δ that goes with a solved ε
    (δ beside ε, total δ beside total ε, amplified δ beside amplified ε);
    ``--max-tpr`` to the TPR upper bound at each ``--fpr`` (one gate per FPR).

    Raises:
        DomainError: a limit out of range. UsageError: the gate does not apply to what was
        solved.
    """
    solved = result.solved_for
    gates: list[Gate] = []
    if max_epsilon is not None:
        limit = parse_gate("max_epsilon", max_epsilon)
        if solved not in EPSILON_KEYS:
            raise UsageError(f"--max-epsilon applies only when an ε is solved; this run solved "
                             f"{solved}")
        gates.append(_gate(result, "max_epsilon", solved, limit))
    if max_delta is not None:
        limit = parse_gate("max_delta", max_delta)
        if solved in DELTA_KEYS:
            key = solved
        elif solved in EPSILON_KEYS and solved.replace("epsilon", "delta") in result.parameters:
            key = solved.replace("epsilon", "delta")
        else:
            raise UsageError(f"--max-delta applies only when a δ is solved or goes with a solved "
                             f"ε; this run solved {solved}")
        gates.append(_gate(result, "max_delta", key, limit))
    if max_tpr is not None:
        limit = parse_gate("max_tpr", max_tpr)
        rows = result.extra.get("risk", {}).get("tpr", [])
        if not rows:
            raise UsageError("--max-tpr needs --fpr A (the FPR at which the TPR bound is gated)")
        for row in rows:
            got = row["upper"]
            gates.append(Gate(name="max_tpr", key=f"tpr[fpr={row['fpr']}]", limit=limit,
                              value=got, passed=Decimal(got) <= Decimal(limit)))
    return tuple(gates)


def check_gates(result: Result, max_epsilon: object = None, max_delta: object = None) -> None:
    """Raise GateError when a solved ε (or δ) exceeds its gate (see ``evaluate_gates``).

    Raises:
        UsageError: the gate does not apply to what was solved.
        GateError: the gate failed (exit 1).
    """
    raise_failed(result, evaluate_gates(result, max_epsilon, max_delta))


def raise_failed(result: Result, gates: Sequence[Gate]) -> None:
    """Raise GateError for the first failed gate, naming the limit and the value."""
    for gate in gates:
        if gate.passed:
            continue
        option = "--" + gate.name.replace("_", "-")
        # a computed value is shown rounded up; a value the user gave is shown as given
        computed = (gate.key == result.solved_for or gate.key in result.derived
                    or gate.name == "max_tpr")
        shown = shorten(gate.value, 6, "upper") if computed else as_input(gate.value)
        raise GateError(f"{option} {as_input(gate.limit)} failed: {gate.key} = {shown} "
                        "exceeds it")


def _gate(result: Result, name: str, key: str, limit: Number) -> Gate:
    got = result.parameters[key]
    passed = Decimal(got) <= Decimal(limit)  # exact comparison (Decimal(float) is exact)
    return Gate(name=name, key=key, limit=limit, value=got, passed=passed)


#: The resolution of a PLD count solve (dpsgd steps or epochs): the answer passes and lies
#: within max(1, ⌊1e-6·n⌋) of a failing count (exact below a million). The bound itself varies
#: by about 1e-6 between neighbouring counts near 4e9 steps (its grid changes), where an exact
#: bisection took 25 full evaluations (random case 103 of benchmarks/bench_dpsgd_random.py); ε
#: grows like √T or slower, so 1e-6 in T is at most 1e-6 in ε, below the σ solve's 2e-5.
COUNT_RTOL = 1e-6

#: A PLD σ or q solve ends at a passing point whose full bound lies within this (relative)
#: below the target ε (dpcalc.solve's ``settled``: Accountant.settles, _Pld.settles), where
#: a failing neighbour would otherwise be evaluated in full; the default run's secants aim
#: half of it below the target.
SETTLE_RTOL = 1e-5


def count_resolution_note(count: int, unit: str) -> str | None:
    """The note of a count solved at COUNT_RTOL where that is coarser than one ``unit``."""
    width = math.floor(COUNT_RTOL * count)
    if width < 2:
        return None
    return (f"searched to within {width} {unit} ({COUNT_RTOL:g} of the count): the PLD bound "
            "varies by about that much between neighbouring counts here; the answer meets "
            "the target")


#: a bracket wider than this many tolerances gets a note (wide_bracket_note); the
#: refinement's own stopping rules leave some a little wider than the tolerance
WIDE_BRACKET = 10.0


def wide_bracket_note(bounds, tolerance: float, unknown: str) -> str | None:
    """A note for a certified bracket much wider than the tolerance asked (relative to its
    upper end, more than WIDE_BRACKET times): the PLD's refinement could not narrow it, so
    the value (the upper end) may lie above the truth by up to that width, though never
    below it.  None otherwise."""
    if bounds is None:
        return None
    lower, upper = (Decimal(str(b)) for b in bounds)   # (a δ may lie below the doubles)
    limit = Decimal(WIDE_BRACKET * tolerance) * upper
    if not (upper > 0 and upper.is_finite()) or (upper - lower) <= limit:
        return None
    width = float((upper - lower) / upper)
    return (f"the certified bracket on {unknown} is {100 * width:.2g}% wide, more than the "
            f"tolerance {tolerance:g}: the PLD's refinement could not narrow it here (its "
            "finest grid, or its error terms); the true value lies in it, so the value (its "
            "upper end) may exceed the truth by up to that width")
