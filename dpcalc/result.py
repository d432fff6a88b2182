"""Plain result data: what a command solved, with what, and how the other methods compare.

A ``Result`` never holds NaN or an infinity (CONTRACT: "never a traceback, NaN or inf"); the
check lives here, once, so that no renderer and no caller can meet one:

- a δ-like guarantee (δ, total δ, amplified δ) that is 1 or more, infinite or NaN is stated as
  δ = 1, which is always true and says plainly that there is no guarantee;
- any other infinite guarantee (ε, σ, ...) means that no finite value meets the target:
  ``InfeasibleError`` (exit 1);
- a NaN elsewhere is a numerical failure: ``NumericalError`` (refuse rather than guess);
- a comparison row that is not finite shows no value, with the reason in its note.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from dpcalc.numeric.directed import Number

#: Probabilities that a result may state as a guarantee: 1 is their vacuous (always true) value.
PROBABILITY_KEYS = ("delta", "total_delta", "amplified_delta", "delta_slack")
NO_GUARANTEE = "no guarantee"



@dataclass(frozen=True)
class Bounds:
    """A certified bracket [lower, upper] on the true value of the solved quantity."""

    lower: Number
    upper: Number


@dataclass(frozen=True)
class Comparison:
    """The same unknown solved by another method (``value`` None when it does not apply)."""

    method: str
    value: Number | int | None
    reference: str = ""
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Gate:
    """One requested gate: ``value`` (of parameter ``key``) must not exceed ``limit``."""

    name: str  # the option's name with - written _, e.g. "max_epsilon"
    key: str  # the parameter it applies to, e.g. "total_epsilon"
    limit: Number
    value: Number | int
    passed: bool


@dataclass(frozen=True)
class Result:
    """The answer of one command.

    ``value`` equals ``parameters[solved_for]``; ``direction`` is ``"upper"`` when the value
    is a guarantee or noise that must not be below the truth (displayed rounded up) and
    ``"lower"`` when it is an allowance, count or rate that must not be above the maximum.
    ``derived`` names the parameters computed beside the solved one (outputs, not inputs:
    total δ = kδ + δ', the amplified δ beside the amplified ε); they are guarantees, shown
    rounded up. ``given`` holds the text to show for an input the user gave in another form
    (q from --batch-size/--dataset-size). ``gates`` records every requested gate.
    """

    command: str
    solved_for: str
    value: Number | int
    parameters: dict[str, Number | int]
    method: str
    direction: str
    reference: str = ""
    bounds: Bounds | None = None
    comparison: tuple[Comparison, ...] = ()
    notes: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    symbols: dict[str, str] = field(default_factory=dict)
    derived: tuple[str, ...] = ()
    given: dict[str, str] = field(default_factory=dict)
    gates: tuple[Gate, ...] = ()

    def __post_init__(self) -> None:
        _make_finite(self)

    def with_gates(self, gates: tuple[Gate, ...]) -> Result:
        """This result with its gates recorded."""
        return replace(self, gates=gates)


def is_finite(x: object) -> bool:
    """True for an int, or a float/Decimal that is neither NaN nor infinite."""
    if isinstance(x, bool):
        return True
    if isinstance(x, int):
        return True
    if isinstance(x, Decimal):
        return x.is_finite()
    if isinstance(x, float):
        return math.isfinite(x)
    return True


def _vacuous(x: object) -> bool:
    """A probability bound that says nothing: NaN, infinite, or at least 1."""
    return not is_finite(x) or x >= 1  # type: ignore[operator]


def _make_finite(result: Result) -> None:
    """Enforce the module's rule on a new Result (see the module docstring)."""
    set_ = object.__setattr__
    solved = result.solved_for
    outputs = {solved, *result.derived} if result.direction == "upper" else set(result.derived)
    params = dict(result.parameters)
    notes = list(result.notes)
    value = result.value
    for key in outputs:
        if key not in PROBABILITY_KEYS or (key not in params and key != solved):
            continue
        if _vacuous(params.get(key, value) if key != solved else value):
            # δ ≤ 1 holds for every mechanism: the true, vacuous statement
            params[key] = 1.0
            value = 1.0 if key == solved else value
            note = f"{result.symbols.get(key, key)} = 1: {NO_GUARANTEE} (the bound is vacuous)"
            if note not in notes:
                notes.append(note)
    for key, x in [(solved, value), *params.items()]:
        if is_finite(x):
            continue
        if result.direction == "upper" and key in outputs and x == math.inf:
            raise _infeasible(result, key)
        from dpcalc.errors import NumericalError

        raise NumericalError(f"{result.command}: {key} could not be evaluated to a finite number "
                             "for these inputs; dpcalc refuses rather than guess")
    bounds = result.bounds
    if bounds is not None and (value is not result.value or not is_finite(bounds.upper)
                               or not is_finite(bounds.lower)):
        lower = min(bounds.lower, value) if is_finite(bounds.lower) else 0.0
        bounds = Bounds(lower, value)
    comparison = tuple(_finite_row(result, row) for row in result.comparison)
    set_(result, "parameters", params)
    set_(result, "value", value)
    set_(result, "bounds", bounds)
    set_(result, "comparison", comparison)
    set_(result, "notes", tuple(notes))


def _infeasible(result: Result, key: str):
    from dpcalc.errors import InfeasibleError

    label = result.symbols.get(key, key)
    partner = key.replace("epsilon", "delta")
    context = ""
    if partner != key and partner in result.parameters:
        shown = result.symbols.get(partner, partner)
        from dpcalc.numeric.display import as_input, outward

        x = result.parameters[partner]
        context = f" at {shown} ≤ {outward(x, 6, 'upper')}" if partner in result.derived \
            else f" at {shown} = {as_input(x)}"
    return InfeasibleError(f"no finite {label} meets the target{context}: the target is "
                           "impossible for these inputs")


def _finite_row(result: Result, row: Comparison) -> Comparison:
    if row.value is None or is_finite(row.value):
        return row
    if result.solved_for in PROBABILITY_KEYS and result.direction == "upper":
        note = "; ".join(filter(None, (row.note, f"1: {NO_GUARANTEE} (the bound is vacuous)")))
        return replace(row, value=1.0, note=note)
    reason = "no finite value" if row.value == math.inf else "not evaluated (NaN)"
    return replace(row, value=None, note="; ".join(filter(None, (row.note, reason))))
