"""Number formatting for output: exact JSON tokens, and shortened display rounded outward."""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal

from dpcalc.numeric.directed import Number


def json_token(x: Number | int) -> str:
    """The exact JSON number text of a value: shortest round-trip repr for floats, exponent
    form for Decimals below the double range (stdlib json cannot write those)."""
    if isinstance(x, bool):
        raise TypeError("booleans are not numbers here")
    if isinstance(x, int):
        return str(x)
    if isinstance(x, Decimal):
        sign, digits, exponent = x.as_tuple()
        text = "".join(str(d) for d in digits).rstrip("0") or "0"
        adjusted = exponent + len(digits) - 1
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return ("-" if sign else "") + f"{mantissa}e{adjusted}"
    if not math.isfinite(x):
        raise ValueError(f"non-finite number {x!r} cannot be written as JSON")
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
    if exact == 0:
        return "0"
    ctx = Context(prec=digits, rounding=ROUND_CEILING if direction == "upper" else ROUND_FLOOR,
                  Emin=-999999999, Emax=999999999)
    rounded = ctx.plus(exact)
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
