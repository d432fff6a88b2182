"""The RDP accountant of DP-SGD over the default orders, skipping the orders that cannot decide.

ε = min_α ε(α) over ``rdp.DEFAULT_ORDERS`` with the improved conversion [CKS20, Prop 12 (v4)]
of the Poisson-subsampled Gaussian's RDP [MTZ19] (and log δ likewise). The orders fall into
three groups that ``rdp.rdp_subsampled_gaussian`` evaluates independently of each other (each
order's value does not depend on which other orders are asked for; the fractional orders are
summed together, so they are asked for together):

- the integer orders up to 64 (cheap binomial sums): always evaluated;
- the fractional orders (the series of [MTZ19, Sec 3.3], the costly part for a new σ);
- the integer orders above 64 (binomial sums of up to 4096 terms).

A later group is evaluated only when a certified lower value of some of its orders is not
above the best value found so far (``_skippable``): the lower value is the conversion at a
lower bound on the true RDP (``_rdp_lower``), so no skipped order could have given a smaller
value, and the answer (value and order) is the one of the whole grid (tested).
"""

from __future__ import annotations

import math
from functools import lru_cache

from dpcalc.errors import DomainError

#: the integer orders up to this one are always evaluated
HEAD_MAX = 64.0


@lru_cache(maxsize=1)
def groups() -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    """(integer orders ≤ ``HEAD_MAX``, fractional orders, integer orders above it), each in
    the order of ``rdp.DEFAULT_ORDERS``."""
    from dpcalc.relations import rdp

    ints = tuple(a for a in rdp.DEFAULT_ORDERS if float(a).is_integer() and a <= HEAD_MAX)
    frac = tuple(a for a in rdp.DEFAULT_ORDERS if not float(a).is_integer())
    tail = tuple(a for a in rdp.DEFAULT_ORDERS if float(a).is_integer() and a > HEAD_MAX)
    return ints, frac, tail


def applies(q: float, sigma: float) -> bool:
    """Whether the groups are evaluated apart (0 < q < 1 and σ in the series range; elsewhere
    ``rdp_subsampled_gaussian`` takes other paths and the whole grid is evaluated)."""
    from dpcalc.relations.rdp import _SIGMA_RANGE

    return 0.0 < q < 1.0 and _SIGMA_RANGE[0] <= sigma <= _SIGMA_RANGE[1]


def _rdp_lower(q: float, sigma: float, n: int) -> float:
    """A lower bound on the per-step RDP of the Poisson-subsampled Gaussian at integer n ≥ 2.

    [MTZ19, Sec 3.2] A_n − 1 = Σ_{k≥2} C(n,k) q^k (1−q)^{n−k} (e^{(k²−k)/(2σ²)} − 1), every
    term ≥ 0, so A_n − 1 ≥ the largest of the k = 2, 3 terms, and RDP(n) = log(A_n)/(n−1).
    The log of a term is formed in floats from a few pieces, each within a few ulps; it is
    lowered by 1e-9·(1 + the pieces' magnitudes), far beyond those errors, and the result
    shrunk by 1e-9 relative (a lower value stays a valid lower bound).
    """
    from dpcalc.numeric.logspace import log_expm1

    l1, lq, inv = math.log1p(-q), math.log(q), 0.5 / sigma / sigma
    best = -math.inf
    for k in range(2, min(n, 3) + 1):
        x = (k * k - k) * inv
        if not x > 1e-300:
            return 0.0
        pieces = (math.log(math.comb(n, k)), k * lq, (n - k) * l1, log_expm1(x))
        lt = sum(pieces) - 1e-9 * (1.0 + sum(abs(p) for p in pieces))
        best = max(best, lt)
    if best < -700.0:
        return 0.0
    log_a = best + math.log1p(math.exp(-best)) if best > 0 else math.log1p(math.exp(best))
    return log_a / (n - 1) * (1.0 - 1e-9)


@lru_cache(maxsize=512)
def _floors(q: float, sigma: float, orders: tuple[float, ...]) -> tuple[float, ...]:
    """Lower bounds on the per-step RDP at each of ``orders`` (ascending): RDP is
    non-decreasing in α [Mir17, Sec 3; van Erven & Harremoës 2014, Thm 3], so at α it is at
    least ``_rdp_lower`` at every integer n ≤ α (and ≥ 0): the running maximum over
    ⌊α'⌋ for the orders α' ≤ α, and ``HEAD_MAX`` for orders above it. Cached per (q, σ)."""
    floor = _rdp_lower(q, sigma, int(HEAD_MAX)) if orders and orders[0] > HEAD_MAX else 0.0
    out, prev = [], 1.0
    for a in orders:
        if a < prev:
            raise DomainError("orders must be ascending")
        n = math.floor(a)
        if n >= 2:
            floor = max(floor, _rdp_lower(q, sigma, n))
        out.append(floor)
        prev = a
    return tuple(out)


def _skippable(q: float, sigma: float, steps: int, orders: tuple[float, ...], best: float, *,
               log_delta: float | None = None, epsilon: float | None = None) -> bool:
    """Whether no order of ``orders`` can give a value below ``best`` (ε for ``log_delta``
    given, log δ for ``epsilon`` given).

    At each order the conversion [CKS20, Prop 12 (v4)] only grows with the RDP, and the
    composed RDP it is given (rounded up; the conversion's allowance covers its own roundings)
    is at least T·``_floors``; the conversion at that floor, lowered by 1e-12 of its pieces
    for rounding, is no larger than the value the whole grid computes there. Strictly above
    ``best``, such an order cannot be the (first) minimum.
    """
    if not math.isfinite(best):
        return False
    for a, floor in zip(orders, _floors(q, sigma, orders), strict=True):
        lower = steps * floor
        am1, t, la = a - 1.0, math.log1p(-1.0 / a), math.log(a)
        if log_delta is not None:
            t2 = -(log_delta + la) / am1  # [CKS20, Prop 12 (v4)]
            value = lower + t + t2 - 1e-12 * (lower + abs(t) + abs(t2))
        else:
            value = am1 * (lower - epsilon + t) - la  # [CKS20, Prop 12 (v4)]
            value -= 1e-12 * (am1 * (lower + epsilon + abs(t)) + la)
        if not value > best:
            return False
    return True


def rdp_epsilon(q: float, sigma: float, steps: int, log_delta: float) -> tuple[float, float]:
    """(ε, best order) of the whole default grid, for 0 < δ < 1 and ``applies(q, σ)``."""
    from dpcalc.relations import rdp

    found = []  # (ε, index in DEFAULT_ORDERS, order)
    best = math.inf
    for i, orders in enumerate(groups()):
        if i and _skippable(q, sigma, steps, orders, best, log_delta=log_delta):
            continue
        total = rdp.compose_steps(rdp.rdp_subsampled_gaussian(orders, q, sigma), steps)
        eps, order, _ = rdp.epsilon_from_rdp(orders, total, log_delta, "improved")
        if math.isfinite(eps):
            found.append((eps, rdp.DEFAULT_ORDERS.index(order), order))
            best = min(best, eps)
    if not found:
        return math.inf, math.nan
    eps, _, order = min(found)  # the first of equal values, as over the whole grid
    return eps, order


def rdp_log_delta(q: float, sigma: float, steps: int, epsilon: float) -> float:
    """log δ of the whole default grid (the smallest per-order value, each clamped at 0), for
    a finite ε and ``applies(q, σ)``."""
    from dpcalc.relations import rdp

    best = 0.0
    for i, orders in enumerate(groups()):
        if i and _skippable(q, sigma, steps, orders, best, epsilon=epsilon):
            continue
        total = rdp.compose_steps(rdp.rdp_subsampled_gaussian(orders, q, sigma), steps)
        best = min(best, rdp.log_delta_from_rdp(orders, total, epsilon, "improved")[0])
    return best
