"""Directed rounding: nudge floats to the private side, and exact decimals below the double range.

A number dpcalc reports is a ``Number``: a float, or a ``Decimal`` when its magnitude is
below the normal double range (δ = 1e-343 is a real answer and must not print as 0).
"""

from __future__ import annotations

import math
from decimal import (
    MAX_EMAX,
    MIN_EMIN,
    ROUND_CEILING,
    ROUND_FLOOR,
    Context,
    Decimal,
)

Number = float | Decimal

#: Smallest positive normal double; below it floats lose precision (subnormals) or vanish.
MIN_NORMAL = 2.2250738585072014e-308

#: Unit round-off u of IEEE doubles: a correctly rounded operation errs by at most u relative.
#: The one definition in dpcalc (error allowances everywhere are multiples of it).
UNIT_ROUNDOFF = 2.0 ** -53

#: Machine epsilon (2u): the gap between 1.0 and the next double.
MACHINE_EPSILON = 2.0 ** -52

#: Smallest positive double: an upper bound on any value that underflowed to 0.
TINY = math.ulp(0.0)

_CTX = Context(prec=40, Emin=MIN_EMIN, Emax=MAX_EMAX)


def up(x: float, n: int = 1) -> float:
    """x moved n ulps towards +inf."""
    for _ in range(n):
        x = math.nextafter(x, math.inf)
    return x


def down(x: float, n: int = 1) -> float:
    """x moved n ulps towards -inf."""
    for _ in range(n):
        x = math.nextafter(x, -math.inf)
    return x


def inflate(x: float, rel: float = 4 * MACHINE_EPSILON) -> float:
    """An upper bound on a non-negative x known to relative error ``rel``: x·(1 + rel), one
    ulp up; never 0 for a positive truth (an underflowed product gives ``TINY``)."""
    if x == math.inf:
        return x
    y = x * (1.0 + rel)
    return math.nextafter(y, math.inf) if y > 0 else TINY


def exp_up(log_x: float) -> Number:
    """An upper bound on a probability e^log_x (capped at 1): a float, or a Decimal when below
    the normal double range.

    ``log_x`` is itself an upper bound on the true log; ``math.exp`` is faithful to about one
    ulp, so two ulps up make the float an upper bound.
    """
    if log_x == -math.inf:
        return 0.0
    if log_x >= -1e-15:  # a probability: 1 is always an upper bound, never report above it
        return 1.0
    if log_x > math.log(MIN_NORMAL) + 1.0:
        return min(up(math.exp(log_x), 2), 1.0)
    # Decimal.exp is correctly rounded (half-even) at 40 digits; next_plus makes it an upper bound.
    value = _CTX.exp(Decimal(log_x)).next_plus(_CTX)
    return shorten_decimal(value, 17, up_direction=True)


def exp_down(log_x: float) -> Number:
    """A lower bound on e^log_x (float, or Decimal below the double range)."""
    if log_x == -math.inf:
        return 0.0
    if log_x > math.log(MIN_NORMAL) + 1.0:
        return down(math.exp(log_x), 2)
    value = _CTX.exp(Decimal(log_x)).next_minus(_CTX)
    return shorten_decimal(value, 17, up_direction=False)


def shorten_decimal(value: Decimal, digits: int, up_direction: bool) -> Decimal:
    """Round a Decimal to ``digits`` significant digits, towards +inf or -inf."""
    ctx = Context(prec=digits, rounding=ROUND_CEILING if up_direction else ROUND_FLOOR,
                  Emin=MIN_EMIN, Emax=MAX_EMAX)
    return ctx.plus(value)


def log_of(x: Number) -> float:
    """Natural log of a positive Number (exact input, float result); -inf for 0."""
    if isinstance(x, Decimal):
        if x == 0:
            return -math.inf
        return float(_CTX.ln(x))
    if x == 0:
        return -math.inf
    return math.log(x)
