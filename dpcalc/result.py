"""Plain result data: what a command solved, with what, and how the other methods compare."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from dpcalc.numeric.directed import Number


def _nonfinite(x: object) -> bool:
    if isinstance(x, float):
        return not math.isfinite(x)
    return isinstance(x, Decimal) and not x.is_finite()


def _isnan(x: object) -> bool:
    return x != x  # noqa: PLR0124 (NaN is the one value unequal to itself)


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

    def __post_init__(self) -> None:
        # a comparison row never shows NaN or inf: it is "n/a" with the reason
        if _nonfinite(self.value):
            reason = ("no finite bound from this method here" if not _isnan(self.value)
                      else "could not be evaluated for these inputs (NaN)")
            object.__setattr__(self, "value", None)
            object.__setattr__(self, "note", "; ".join(n for n in (self.note, reason) if n))


@dataclass(frozen=True)
class Result:
    """The answer of one command.

    ``value`` equals ``parameters[solved_for]``; ``direction`` is ``"upper"`` when the value
    is a guarantee or noise that must not be below the truth (displayed rounded up) and
    ``"lower"`` when it is an allowance, count or rate that must not be above the maximum.
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

    def __post_init__(self) -> None:
        # the last line of defence: a result is never NaN or inf (exit 0 with "Infinity")
        if _nonfinite(self.value):
            from dpcalc.errors import InfeasibleError, NumericalError

            if _isnan(self.value):
                raise NumericalError(f"{self.solved_for} could not be computed (NaN) by "
                                     f"{self.method}")
            raise InfeasibleError(f"the {self.method} bound gives no finite {self.solved_for} "
                                  "for these inputs: no guarantee follows from it")
        if self.solved_for.endswith("delta") and self.direction == "upper" and self.value == 1:
            # a vacuous bound is a statement, not a number to trust
            object.__setattr__(self, "notes", (*self.notes, "δ = 1: no guarantee"))
