"""Number formatting for output: exact JSON tokens, and shortened display rounded outward."""

from __future__ import annotations

import math
from decimal import MAX_EMAX, MIN_EMIN, ROUND_CEILING, ROUND_FLOOR, Context, Decimal

from dpcalc.errors import DomainError
from dpcalc.numeric.directed import Number


def json_token(x: Number | int) -> str:
    """The exact JSON number text of a value: shortest round-trip repr for floats, exponent
    form for Decimals below the double range (stdlib json cannot write those)."""
    if isinstance(x, bool):
        raise TypeError("booleans are not numbers here")
    exact = getattr(x, "exact", None)  # params.Given: an input is written as the user gave it
    if isinstance(exact, Decimal):
        nearest = float(exact)
        return repr(nearest) if Decimal(repr(nearest)) == exact else json_token(exact)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, Decimal):
        sign, digits, exponent = x.as_tuple()
        text = "".join(str(d) for d in digits).rstrip("0") or "0"
        adjusted = exponent + len(digits) - 1
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return ("-" if sign else "") + f"{mantissa}e{adjusted}"
    if not math.isfinite(x):
        raise DomainError(f"non-finite number {x!r} cannot be written as JSON")
    text = repr(x)
    return text


def shorten(x: Number | int, digits: int, direction: str) -> str:
    """``x`` with ``digits`` significant digits, rounded up (``"upper"``) or down (``"lower"``).

    A number shortened anywhere is shortened outward: ε = 0.94612 shows as 0.9462 when it is a
    guarantee, a solved rate q = 0.0123456 as 0.01234.
    """
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x)
    exact = x if isinstance(x, Decimal) else Decimal(x)
    ctx = Context(prec=digits, rounding=ROUND_CEILING if direction == "upper" else ROUND_FLOOR,
                  Emin=MIN_EMIN, Emax=MAX_EMAX)
    return _text(ctx.plus(exact))


def _text(rounded: Decimal) -> str:
    """Plain notation for moderate magnitudes, exponent form otherwise."""
    if rounded == 0:
        return "0"
    adjusted = rounded.adjusted()
    if -5 <= adjusted < 7:
        text = format(rounded, "f")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text
    sign, ds, _ = rounded.as_tuple()
    body = "".join(str(d) for d in ds).rstrip("0") or "0"
    mantissa = body[0] + ("." + body[1:] if len(body) > 1 else "")
    return ("-" if sign else "") + f"{mantissa}e{adjusted}"


#: How close (relative) a value must be to a short decimal to be shown as that decimal plus
#: its excess, instead of rounded outward at the last shown digit: 2^-40, far below any digit
#: shown (5 significant digits) and above the error of log-space arithmetic (exp of a log
#: of magnitude 700 is off by about 700 ulps, 2^-43 relative).
NOISE_RELATIVE = Decimal(2) ** -40


def outward(x: Number | int, digits: int, direction: str) -> str:
    """The human display of an output: ``digits`` significant digits, rounded outward.

    Float noise is shown as what it is, never hidden: a double that is a short decimal by its
    own name (``repr``, the token --json writes) shows as that decimal, and a double within
    ``NOISE_RELATIVE`` outside a short decimal shows as the decimal plus the excess, itself
    rounded outward: the 10-fold sum of ε = 0.1, computed rounding up, is 1.0000000000000002,
    shown as ``1 (+2.3e-16)`` rather than as ``1.0001``, which would suggest a real excess, or
    as ``1``, which would be below the bound computed. The exact double stays in --json.
    """
    if isinstance(x, bool) or not isinstance(x, float) or x == 0:
        return shorten(x, digits, direction)
    name = Decimal(repr(x))
    if len(name.as_tuple().digits) <= digits:
        return _text(name)
    inward = "lower" if direction == "upper" else "upper"
    near = Decimal(shorten(x, digits, inward))
    excess = abs(Decimal(x) - near)
    if near != 0 and excess <= NOISE_RELATIVE * abs(Decimal(x)):
        sign = "+" if direction == "upper" else "-"
        return f"{_text(near)} ({sign}{shorten(excess, 2, 'upper')})"
    return shorten(x, digits, direction)


def displayed(text: str) -> Decimal:
    """The number an ``outward`` text stands for: ``1 (+2.3e-16)`` is 1 + 2.3e-16."""
    head, _, tail = text.partition(" (")
    value = Decimal(head)
    if tail:
        value += Decimal(tail.rstrip(")").replace("+", ""))
    return value


def outward_at_most(x: Number | int, limit: Number | int, digits: int) -> str:
    """``outward(x, ..., "upper")`` with as many more digits as it takes to show a value that
    is at most ``limit`` (for x <= limit: a passed gate never looks failed)."""
    text = outward(x, digits, "upper")
    for more in range(digits + 1, 40):
        if displayed(text) <= Decimal(limit):
            break
        text = outward(x, more, "upper")
    return text


def as_input(x: Number | int) -> str:
    """An input value shown as given (shortest exact text, no rounding)."""
    exact = getattr(x, "exact", None)  # params.Given: read to the private side, shown as written
    if isinstance(exact, Decimal):
        if Decimal(repr(float(exact))) != exact:  # more digits than a double holds
            return str(exact).lower()
        x = float(exact)  # the decimal as written, in its shortest round-trip form
    if isinstance(x, Decimal):
        return json_token(x)
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    if isinstance(x, float):
        text = repr(x)
        return text
    return str(x)
