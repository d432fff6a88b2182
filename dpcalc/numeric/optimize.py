"""Minimising a free internal knob (an RDP order α, a per-step ε₀).

Every value of such a knob gives a valid bound, so the search needs no rounding care: the
caller evaluates its bound at the returned point conservatively.
"""

from __future__ import annotations

import math
from collections.abc import Callable

_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def minimize_on_grid(objective: Callable[[float], float], lo: float, hi: float,
                     points: int, iterations: int = 40,
                     lower: Callable[[float], float] | None = None) -> tuple[float, float]:
    """(x, objective(x)) near the minimum over [lo, hi]: the best of an even grid, refined by
    golden-section search between that point's neighbours (unimodal there in practice).

    ``lower(x)``, when given, is a cheap value never above ``objective(x)``. The grid then
    starts from these values and evaluates ``objective`` only at the current best point until
    that point's value is exact: its value is then below every other point's lower value, hence
    below its exact one, so the chosen point (the first of the smallest, as without ``lower``)
    and the result are the same as evaluating the whole grid.
    """
    grid = [lo + i * (hi - lo) / (points - 1) for i in range(points)]
    if lower is None:
        values = [objective(x) for x in grid]
        i = min(range(points), key=values.__getitem__)
    else:
        values = [lower(x) for x in grid]
        exact = [False] * points
        while True:
            i = min(range(points), key=values.__getitem__)
            if exact[i]:
                break
            values[i], exact[i] = objective(grid[i]), True
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, points - 1)]
    c, d = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
    fc, fd = objective(c), objective(d)
    for _ in range(iterations):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - _GOLDEN * (b - a)
            fc = objective(c)
        else:
            a, c, fc = c, d, fd
            d = a + _GOLDEN * (b - a)
            fd = objective(d)
    return min(((c, fc), (d, fd), (grid[i], values[i])), key=lambda t: t[1])
