"""Parameters: the one place where ranges, NaN/inf checks and exact parsing live.

Inputs are read exactly as written: text goes through ``Decimal`` (never through ``float``
first), so ``1e-400`` stays 1e-400 instead of silently becoming 0, and ``nan``, ``inf`` and
``1e400`` are rejected with a message naming the option and its range.

A decimal that is not a double is rounded to the neighbouring double on the private side, here
and nowhere else. The side follows from the declaration: a parameter whose *larger* values are
the private side when solved (noise, a target ε or δ) is one for which larger values make the
relation easier to meet, so a given value is read *down*; a parameter whose *smaller* values are
the private side (a rate, a count, a mechanism's own ε or δ, a sensitivity) is read *up*. Either
way every answer computed from the double is at least as conservative as the exact one. The
double must still lie in the domain (0.999…9 as δ may not become 1), else exit 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from dpcalc.errors import DomainError
from dpcalc.numeric.directed import MIN_NORMAL, Number

_MAX_DOUBLE = Decimal("1.7976931348623157e308")
_MIN_NORMAL = Decimal(MIN_NORMAL)


class Given(float):
    """A given input rounded to the private-side double, remembering the exact decimal.

    Arithmetic on it gives plain floats; ``exact_value`` recovers the decimal for the few
    exact comparisons that must see a tie as a tie (a total δ equal to Σδ).
    """

    __slots__ = ("exact",)

    def __new__(cls, value: float, exact: Decimal) -> Given:
        self = super().__new__(cls, value)
        self.exact = exact
        return self

    def __reduce__(self):
        return (Given, (float(self), self.exact))


def shown(raw: object) -> str:
    """An input as an error message shows it: a number read from JSON (a Decimal) as
    written, anything else as its repr (a string in quotes)."""
    return str(raw) if isinstance(raw, Decimal) else repr(raw)


def exact_value(x: object) -> object:
    """The exact decimal a given input was written as (the number itself otherwise)."""
    return x.exact if isinstance(x, Given) else x


@dataclass(frozen=True)
class Param:
    """One parameter of a relation.

    Attributes:
        name: Python name (``total_epsilon``); the option is ``--total-epsilon``.
        low, high: the domain's ends; ``low_open``/``high_open`` say whether they are excluded.
        safer: which direction is private when this parameter is solved: ``"larger"`` for
            guarantees and noise (ε, δ, σ), ``"smaller"`` for counts, rates and allowances.
            Equivalently, the relation's predicate is monotone in it: ``"larger"`` values pass
            more easily, ``"smaller"`` values less easily. A given input is therefore read
            down (``"larger"``) or up (``"smaller"``) when it is not a double, and a solved
            one is searched from this side (``dpcalc.solve.solve_unknown``).
        integer: the value must be a whole number.
        tiny_ok: values below the double range are kept exactly (δ-like parameters).
        symbol: short name for human output.
    """

    name: str
    low: float
    high: float
    low_open: bool
    high_open: bool
    safer: str
    integer: bool = False
    tiny_ok: bool = False
    symbol: str = ""

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def label(self) -> str:
        return self.symbol or self.name

    @property
    def input_rounding(self) -> str:
        """``"down"`` or ``"up"``: the private side for a given (not solved) value."""
        return "down" if self.safer == "larger" else "up"

    def range_text(self) -> str:
        if self.integer:
            lo = int(self.low) + (1 if self.low_open else 0)
            return f"an integer >= {lo}" if math.isinf(self.high) else \
                f"an integer in [{lo}, {int(self.high)}]"
        left = "(" if self.low_open else "["
        right = ")" if self.high_open else "]"
        return f"a number in {left}{_fmt(self.low)}, {_fmt(self.high)}{right}"

    def parse(self, raw: object) -> Number | int:
        """Parse and range-check one input value (text, int, float or Decimal).

        Raises:
            DomainError: non-numeric, NaN, inf, outside the double range, or outside the domain.
        """
        text = raw.strip() if isinstance(raw, str) else raw
        try:
            if isinstance(text, bool):
                raise InvalidOperation
            exact = Decimal(text)  # exact for floats too (no repr round trip)
        except (InvalidOperation, TypeError, ValueError):
            raise DomainError(f"{self.option} must be {self.range_text()}, "
                              f"got {shown(raw)}") from None
        if not exact.is_finite():
            raise DomainError(f"{self.option} must be {self.range_text()}, got {shown(raw)}")
        if exact.copy_abs() > _MAX_DOUBLE:
            raise DomainError(f"{self.option} must be {self.range_text()}, got {shown(raw)} "
                              "(beyond the double range)")
        self._check_range(exact, raw)
        if self.integer:
            if exact != exact.to_integral_value():
                raise DomainError(f"{self.option} must be {self.range_text()}, got {shown(raw)}")
            return int(exact)
        if exact != 0 and exact.copy_abs() < _MIN_NORMAL:
            if not self.tiny_ok:
                raise DomainError(f"{self.option} must be {self.range_text()} and not below "
                                  f"{MIN_NORMAL:.4g} in magnitude, got {shown(raw)}")
            return exact
        return self._to_double(exact, raw)

    def _to_double(self, exact: Decimal, raw: object) -> float:
        """The double next to ``exact`` on the private side, still inside the domain."""
        value = float(exact) + 0.0  # + 0.0 turns -0 into 0
        if Decimal(value) != exact:
            if self.input_rounding == "down" and Decimal(value) > exact:
                value = math.nextafter(value, -math.inf)
            elif self.input_rounding == "up" and Decimal(value) < exact:
                value = math.nextafter(value, math.inf)
            try:
                self._check_range(Decimal(value), raw)
            except DomainError:
                raise DomainError(f"{self.option} must be {self.range_text()}, got {shown(raw)}, "
                                  f"which rounds to {value!r} in double precision (read "
                                  f"{self.input_rounding}wards, the private side)") from None
            return Given(value, exact)
        return value

    def _check_range(self, exact: Decimal, raw: object) -> None:
        low, high = Decimal(repr(self.low)), self.high
        too_low = exact < low or (self.low_open and exact == low) if not math.isinf(self.low) \
            else False
        too_high = False
        if not math.isinf(high):
            high_d = Decimal(repr(high))
            too_high = exact > high_d or (self.high_open and exact == high_d)
        if too_low or too_high:
            raise DomainError(f"{self.option} must be {self.range_text()}, got {shown(raw)}")


def _fmt(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:g}"


INF = math.inf

# The shared parameters. ``safer`` is the private direction when the parameter is solved.
EPSILON = Param("epsilon", 0.0, INF, False, True, "larger", symbol="ε")
DELTA = Param("delta", 0.0, 1.0, False, True, "larger", tiny_ok=True, symbol="δ")
SIGMA = Param("sigma", 0.0, INF, True, True, "larger", symbol="σ")
SCALE = Param("scale", 0.0, INF, True, True, "larger", symbol="b")
# a larger sensitivity is the less private side: a given Δ is read up
SENSITIVITY = Param("sensitivity", 0.0, INF, True, True, "smaller", symbol="Δ")
Q = Param("q", 0.0, 1.0, True, False, "smaller", symbol="q")
MAX_EPSILON = Param("max_epsilon", 0.0, INF, False, True, "larger", symbol="ε gate")
MAX_DELTA = Param("max_delta", 0.0, 1.0, False, False, "larger", tiny_ok=True, symbol="δ gate")
# whole epochs, when a run's epochs are solved as an integer (more epochs: less private)
WHOLE_EPOCHS = Param("epochs", 0, INF, True, True, "smaller", integer=True, symbol="epochs")
# u = −log δ, where a δ is solved for far below the double range (a larger u, a smaller δ:
# less easily met; the strong-composition accountant's δ solve)
NEG_LOG_DELTA = Param("neg_log_delta", 0.0, INF, True, True, "smaller", symbol="−log δ")
