"""Scalar log-space arithmetic on Python floats (no numpy, so it is cheap to import).

Values travel as natural logarithms; ``-inf`` stands for an exact zero.
"""

from __future__ import annotations

import math

from dpcalc.errors import DomainError

NEG_INF = -math.inf


def log_add(a: float, b: float) -> float:
    """log(e^a + e^b), without overflow."""
    if a < b:
        a, b = b, a
    if b == NEG_INF:
        return a
    return a + math.log1p(math.exp(b - a))


def log1mexp(x: float) -> float:
    """log(1 - e^x) for x <= 0, accurate near 0 and for very negative x.

    Uses log(-expm1(x)) for x > -ln 2 and log1p(-exp(x)) otherwise (Maechler 2012).
    """
    if x > 0:
        raise DomainError(f"log1mexp needs x <= 0, got {x}")
    if x == 0:
        return NEG_INF
    if x > -math.log(2.0):
        return math.log(-math.expm1(x))
    return math.log1p(-math.exp(x))


def log_sub(a: float, b: float) -> float:
    """log(e^a - e^b) for a >= b; ``-inf`` when they are equal."""
    if b > a:
        raise DomainError(f"log_sub needs a >= b, got a={a}, b={b}")
    if b == NEG_INF:
        return a
    return a + log1mexp(b - a)


def log_sum(values) -> float:
    """log(sum(e^v)) over an iterable of floats."""
    vals = [v for v in values if v != NEG_INF]
    if not vals:
        return NEG_INF
    m = max(vals)
    if m == math.inf:
        return math.inf
    return m + math.log(math.fsum(math.exp(v - m) for v in vals))


def log_expm1(x: float) -> float:
    """log(e^x - 1) for x > 0, stable for small and large x."""
    if x <= 0:
        raise DomainError(f"log_expm1 needs x > 0, got {x}")
    if x > 40:
        return x + math.log1p(-math.exp(-x))
    return math.log(math.expm1(x))
