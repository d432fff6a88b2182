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
def _floors(q: float, sigma: float, orders: tuple[float, ...]):
    """Lower bounds on the per-step RDP at each of ``orders`` (ascending; a read-only array),
    from f(α) = log A_α = (α − 1)·RDP(α) at n = min(⌊α⌋, ``HEAD_MAX``) ≥ 2, f(n) ≥ L(n) =
    ``_log_a_lower``:

    - RDP is non-decreasing in α [Mir17, Sec 3; van Erven & Harremoës 2014, Thm 3]:
      RDP(α) ≥ L(n)/(n − 1), and ≥ the value at every order below α (running maximum);
    - f is convex (A_α = E[X^α] with X = (1−q) + q·e^{(2z−1)/(2σ²)} > 0 is log-convex in α by
      Hölder's inequality [MTZ19, Sec 3]), so for α ≥ n it lies above the chord through n − 1
      and n: f(α) ≥ L(n) + (α − n)·(L(n) − U(n − 1)), with U(1) = 0 and U(m) = (m − 1)·the
      computed (upper) RDP at the integer order m (``rdp.rdp_subsampled_gaussian``), raised by
      1e-12 relative; the slope is lowered by 1e-12 of its pieces and taken ≥ 0.

    Each bound is shrunk by 1e-9 relative for its few roundings. Cached per (q, σ, orders)."""
    import numpy as np

    from dpcalc.relations import rdp

    a, n, ns, where = _floor_layout(orders)
    if not ns:
        return np.zeros(len(orders))
    low = np.array(_log_a_lower(q, sigma, ns))[where]  # L(n) at each order (n ≥ 2)
    up = np.zeros(len(ns))  # U(n − 1): 0 at n = 2, else (n − 2)·RDP(n − 1), raised
    head = groups()[0]  # the integer orders 2..HEAD_MAX, already evaluated (cached)
    rdp_head = rdp.rdp_subsampled_gaussian(head, q, sigma)
    m = np.array(ns) - 1
    up[m >= 2] = rdp_head[m[m >= 2] - 2] * (m[m >= 2] - 1) * (1.0 + 1e-12)
    up = up[where]
    slope = (low - up) - 1e-12 * (low + up)
    with np.errstate(invalid="ignore", over="ignore"):  # inf − inf where U(n − 1) is inf
        chord = np.where((a > n) & (slope > 0),
                         (low + (a - n) * slope) / (a - 1.0) * (1.0 - 1e-9), 0.0)
    floor = np.maximum(low / np.maximum(n - 1.0, 1.0) * (1.0 - 1e-9), chord)
    floor = np.maximum.accumulate(np.where(n >= 2, floor, 0.0))
    floor.setflags(write=False)
    return floor


@lru_cache(maxsize=16)
def _floor_layout(orders: tuple[float, ...]):
    """The orders, n = min(⌊α⌋, ``HEAD_MAX``) at each (as floats), the distinct n ≥ 2, and
    the index of each order's n among them (0 where n < 2)."""
    import numpy as np

    if any(b < a for a, b in zip(orders, orders[1:], strict=False)) or (orders and orders[0] < 1.0):
        raise DomainError("orders must be ascending")
    n = [min(math.floor(a), int(HEAD_MAX)) for a in orders]
    ns = tuple(sorted({m for m in n if m >= 2}))
    where = np.array([ns.index(m) if m >= 2 else 0 for m in n], dtype=np.intp)
    return np.array(orders, dtype=float), np.array(n, dtype=float), ns, where


def _later_floors(q: float, sigma: float, orders: tuple[float, ...]):
    """``_floors`` at a later group's orders, from one computation over all later groups
    (ascending one after the other, so the running maximum stays a valid floor)."""
    later = groups()[1:]
    if orders not in later:
        return _floors(q, sigma, orders)
    start = sum(len(g) for g in later[:later.index(orders)])
    return _floors(q, sigma, sum(later, ()))[start:start + len(orders)]


@lru_cache(maxsize=16)
def _conversion_pieces(orders: tuple[float, ...]):
    """α − 1, log((α−1)/α) and log α at each order, as in ``rdp.epsilon_from_rdp``."""
    import numpy as np

    pieces = np.array([(a - 1.0, math.log1p(-1.0 / a), math.log(a)) for a in orders]).T
    pieces.setflags(write=False)
    return pieces


def _above(orders: tuple[float, ...], lower, best: float, log_delta: float | None,
           epsilon: float | None):
    """Whether the conversion [CKS20, Prop 12 (v4)] at each order of a composed RDP of at
    least ``lower`` (per order) is certainly above ``best`` (ε for ``log_delta`` given, else
    log δ at ``epsilon``). The conversion only grows with the RDP, and the composed RDP the
    whole grid converts (rounded up; the conversion's allowance covers its own roundings) is
    at least ``lower``; the value here is lowered by 1e-12 of its pieces for rounding."""
    import numpy as np

    am1, t, la = _conversion_pieces(orders)
    if log_delta is not None:
        t2 = -(log_delta + la) / am1  # [CKS20, Prop 12 (v4)]
        value = lower + t + t2 - 1e-12 * (lower + np.abs(t) + np.abs(t2))
    else:
        value = am1 * (lower - epsilon + t) - la  # [CKS20, Prop 12 (v4)]
        value -= 1e-12 * (am1 * (lower + epsilon + np.abs(t)) + la)
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
    out = _above(orders, steps * _later_floors(q, sigma, orders), best, log_delta, epsilon)
    kept = []
    for a, ruled_out in zip(orders, out.tolist(), strict=True):
        if ruled_out or (a > HEAD_MAX and float(a).is_integer() and _above(
                (a,), steps * _rdp_lower(q, sigma, int(a)), best, log_delta, epsilon)[0]):
            continue
        kept.append(a)
    frac = [a for a in orders if not float(a).is_integer()]
    if frac and any(not float(a).is_integer() for a in kept) and frac[-1] not in kept:
        kept = sorted([*kept, frac[-1]])
    return tuple(kept)


def _convert(orders: tuple[float, ...], total, log_delta: float) -> tuple[float, float]:
    """``rdp.epsilon_from_rdp``'s (ε, order) [CKS20, Prop 12 (v4)] at the composed RDP
    ``total``, converting there only the orders that may give its first smallest value.

    Each order's value without its allowance (8 ulps of the pieces) is estimated on arrays
    (where log and log1p may differ from math's in the last bits); ± 1e-9 of the pieces (and
    1e-300) brackets the value ``rdp.epsilon_from_rdp`` computes there, also after the clamp at
    0. An order whose lower end is above the smallest upper end is not a minimum; the others
    keep their order, so the first of equal values is the whole group's (infinite RDP: no
    value, as there)."""
    import numpy as np

    from dpcalc.relations import rdp

    am1, t1, la = _conversion_pieces(orders)
    finite = np.isfinite(total)
    if not finite.any():
        return math.inf, math.nan
    r = np.where(finite, total, 0.0)
    est = r + t1 - (log_delta + la) / am1
    margin = 1e-9 * (r + np.abs(t1) + (abs(log_delta) + la) / am1) + 1e-300
    top = np.min(np.maximum(est + margin, 0.0)[finite])
    keep = finite & (np.maximum(est - margin, 0.0) <= top)
    kept = [a for a, k in zip(orders, keep.tolist(), strict=True) if k]
    eps, order, _ = rdp.epsilon_from_rdp(kept, total[keep], log_delta, "improved")
    return eps, order


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
        eps, order = _convert(orders, total, log_delta)
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
