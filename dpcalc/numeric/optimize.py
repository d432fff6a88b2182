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
        i = _first_exact_minimum(objective, grid, values, exact)
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


def _first_exact_minimum(objective, grid, values, exact) -> int:
    """Replace the first smallest of ``values`` by its objective value until the first
    smallest is exact; its index. A heap of (value, index) pairs, one per point, finds the
    first smallest as ``min`` over the list does (ties go to the lower index); a NaN (which
    does not order) hands over to that scan from the same state."""
    import heapq

    if all(v == v for v in values):
        heap = [(v, j) for j, v in enumerate(values)]
        heapq.heapify(heap)
        while not exact[heap[0][1]]:
            i = heapq.heappop(heap)[1]
            values[i], exact[i] = objective(grid[i]), True
            if values[i] != values[i]:
                break
            heapq.heappush(heap, (values[i], i))
        else:
            return heap[0][1]
    while True:
        i = min(range(len(values)), key=values.__getitem__)
        if exact[i]:
            return i
        values[i], exact[i] = objective(grid[i]), True
