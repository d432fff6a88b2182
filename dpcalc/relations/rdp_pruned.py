"""The RDP accountant of DP-SGD over the default orders, skipping the orders that cannot decide.

ε = min_α ε(α) over ``rdp.DEFAULT_ORDERS`` with the improved conversion [CKS20, Prop 12 (v4)]
of the Poisson-subsampled Gaussian's RDP [MTZ19] (and log δ likewise). The orders fall into
three groups that ``rdp.rdp_subsampled_gaussian`` evaluates independently of each other (each
order's value does not depend on which other orders are asked for, except that the fractional
orders are summed with a common series width, set by the largest of them):

- the integer orders up to 64 (cheap binomial sums): always evaluated;
- the fractional orders (the series of [MTZ19, Sec 3.3], the costly part for a new σ);
- the integer orders above 64 (binomial sums of up to 4096 terms).

The first group is always evaluated; of a later group only the orders whose certified lower
value is not above the best value found so far (``_candidates``): the lower value is the
conversion at a lower bound on the true RDP (``_floors``: the whole binomial sum at an integer
order at or below, lowered; ``_rdp_lower``), so no skipped order could have given a smaller
value, and the answer (value and order) is the one of the whole grid (tested). Each kept order
gets the whole grid's value bit for bit (where a fractional order is kept, so is the largest).
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


def _log_a_lower(q: float, sigma: float, ns: tuple[int, ...]) -> list[float]:
    """Lower bounds on log A_n at integers 2 ≤ n ≤ ``HEAD_MAX``, from the whole binomial sum.

    [MTZ19, Sec 3.2] A_n − 1 = Σ_{k=2}^{n} C(n,k) q^k (1−q)^{n−k} (e^{(k²−k)/(2σ²)} − 1), every
    term positive. The log of a term is formed in floats from four pieces (log C(n,k) of the
    exact integer, k·log q, (n−k)·log(1−q), log(e^c − 1)), each within a few ulps of its
    magnitude; it is lowered by 1e-9·(1 + the pieces' magnitudes), far beyond those errors, so
    it stays below the true term. The lowered terms are summed in log space: shifted by their
    maximum m, exponentiated (a term that underflows to 0 only lowers the sum) and added; those
    roundings, the log and the addition of m stay below 1e-12·(1 + |m|), and the log of the sum
    is lowered by 1e-9·(1 + |m|). log A = log(1 + (A − 1)) is shrunk by 1e-9 relative as in
    ``_rdp_lower`` (a lower value stays a valid lower bound).
    """
    import numpy as np

    from dpcalc.relations import rdp

    k, ki, nk, logc, cmag, starts, seg, _ = rdp._int_layout(ns)
    lq, l1q = math.log(q), math.log1p(-q)
    c = k * (k - 1.0) * (0.5 / sigma / sigma)  # (k²−k)/(2σ²) > 0 for k ≥ 2 (σ ≤ 1e100)
    log_w = rdp._log_expm1_vec(c)
    mags = cmag + k * abs(lq) + nk * abs(l1q) + np.abs(log_w) + c  # cmag = |log C| + 1
    low = logc + k * lq + nk * l1q + log_w - 1e-9 * mags
    m = np.maximum.reduceat(low, starts)
    with np.errstate(under="ignore"):
        s = np.add.reduceat(np.exp(low - m[seg]), starts)
    out = []
    for lm1 in (m + np.log(s) - 1e-9 * (1.0 + np.abs(m))).tolist():
        if lm1 < -700.0:
            out.append(0.0)
            continue
        log_a = lm1 + math.log1p(math.exp(-lm1)) if lm1 > 0 else math.log1p(math.exp(lm1))
        out.append(log_a * (1.0 - 1e-9))
    return out


@lru_cache(maxsize=512)
def _floors(q: float, sigma: float, orders: tuple[float, ...]) -> tuple[float, ...]:
    """Lower bounds on the per-step RDP at each of ``orders`` (ascending): RDP is
    non-decreasing in α [Mir17, Sec 3; van Erven & Harremoës 2014, Thm 3], so at α it is at
    least the RDP at n = ⌊α⌋, or at ``HEAD_MAX`` for orders above it, whose lower bound is
    ``_log_a_lower``(n)/(n − 1) (shrunk by 1e-9 relative for the division); the running
    maximum over the orders α' ≤ α (and 0). Cached per (q, σ, orders)."""
    ns = []
    for a in orders:
        n = min(math.floor(a), int(HEAD_MAX))
        if n >= 2 and n not in ns:
            ns.append(n)
    ns.sort()
    lower = dict(zip(ns, _log_a_lower(q, sigma, tuple(ns)) if ns else [], strict=True))
    out, prev, floor = [], 1.0, 0.0
    for a in orders:
        if a < prev:
            raise DomainError("orders must be ascending")
        n = min(math.floor(a), int(HEAD_MAX))
        if n >= 2:
            floor = max(floor, lower[n] / (n - 1) * (1.0 - 1e-9))
        out.append(floor)
        prev = a
    return tuple(out)


def _above(a: float, lower: float, best: float, log_delta: float | None,
           epsilon: float | None) -> bool:
    """Whether the conversion [CKS20, Prop 12 (v4)] at order a of a composed RDP of at least
    ``lower`` is certainly above ``best`` (ε for ``log_delta`` given, else log δ at
    ``epsilon``). The conversion only grows with the RDP, and the composed RDP the whole grid
    converts (rounded up; the conversion's allowance covers its own roundings) is at least
    ``lower``; the value here is lowered by 1e-12 of its pieces for rounding."""
    am1, t, la = a - 1.0, math.log1p(-1.0 / a), math.log(a)
    if log_delta is not None:
        t2 = -(log_delta + la) / am1  # [CKS20, Prop 12 (v4)]
        value = lower + t + t2 - 1e-12 * (lower + abs(t) + abs(t2))
    else:
        value = am1 * (lower - epsilon + t) - la  # [CKS20, Prop 12 (v4)]
        value -= 1e-12 * (am1 * (lower + epsilon + abs(t)) + la)
    return value > best


def _candidates(q: float, sigma: float, steps: int, orders: tuple[float, ...], best: float, *,
                log_delta: float | None = None, epsilon: float | None = None
                ) -> tuple[float, ...]:
    """The orders of ``orders`` that may give a value not above ``best`` (ε for ``log_delta``
    given, log δ for ``epsilon`` given); every other order is strictly above it, so cannot be
    the (first) minimum of the whole grid.

    An order is ruled out when the conversion at T·``_floors`` is above ``best`` (see
    ``_above``), or, above ``HEAD_MAX``, at T·``_rdp_lower`` at the order itself. A group's
    fractional orders are summed with a series width set by its largest one
    (``rdp.rdp_subsampled_gaussian``), so where any is kept the largest is kept too: each then
    gets the whole grid's value bit for bit (tested).
    """
    if not math.isfinite(best):
        return orders
    kept = []
    for a, floor in zip(orders, _floors(q, sigma, orders), strict=True):
        if _above(a, steps * floor, best, log_delta, epsilon):
            continue
        if a > HEAD_MAX and float(a).is_integer() and _above(
                a, steps * _rdp_lower(q, sigma, int(a)), best, log_delta, epsilon):
            continue
        kept.append(a)
    frac = [a for a in orders if not float(a).is_integer()]
    if frac and any(not float(a).is_integer() for a in kept) and frac[-1] not in kept:
        kept = sorted([*kept, frac[-1]])
    return tuple(kept)


def rdp_epsilon(q: float, sigma: float, steps: int, log_delta: float) -> tuple[float, float]:
    """(ε, best order) of the whole default grid, for 0 < δ < 1 and ``applies(q, σ)``."""
    from dpcalc.relations import rdp

    found = []  # (ε, index in DEFAULT_ORDERS, order)
    best = math.inf
    for i, group in enumerate(groups()):
        orders = _candidates(q, sigma, steps, group, best, log_delta=log_delta) if i else group
        if not orders:
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
    for i, group in enumerate(groups()):
        orders = _candidates(q, sigma, steps, group, best, epsilon=epsilon) if i else group
        if not orders:
            continue
        total = rdp.compose_steps(rdp.rdp_subsampled_gaussian(orders, q, sigma), steps)
        best = min(best, rdp.log_delta_from_rdp(orders, total, epsilon, "improved")[0])
    return best
