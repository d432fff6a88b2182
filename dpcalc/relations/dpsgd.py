"""DP-SGD accountants: T steps of the Poisson-subsampled Gaussian (rate q, noise multiplier σ).

- ``pld``: numerical privacy-loss-distribution accountant with a certified bracket
  [KJH20; GLW21; DGKKM22] (``dpcalc.relations.pld``).
- ``rdp``: RDP of the subsampled Gaussian [MTZ19] over the default orders, improved
  conversion [CKS20, Prop 12 (v4)].
- ``moments``: the original moments accountant [ACGMMTZ16, Thm 2], integer λ <= 32.
- ``strong``: the theorems applied in sequence, each an upper bound:
  per-step Gaussian (ε₀, δ₀) exactly [BW18, Thm 8]; amplified by Poisson subsampling to
  (log(1 + q(e^ε₀ − 1)), qδ₀) [BBG18, Thm 8]; T-fold advanced composition
  ε = ε₁√(2T ln(1/δ')) + Tε₁(e^ε₁ − 1), δ = Tqδ₀ + δ' [DRV10; DR14, Thm 3.20].
  The split of δ between Tqδ₀ and δ' is optimised numerically; every split is a valid
  bound, so the search needs no rounding care.

All functions return upper bounds on ε (or log δ) unless they say otherwise.
"""

from __future__ import annotations

import math
from functools import lru_cache

from dpcalc.methods import DPSGD  # noqa: E402 - the registry: names, references, help

ACCOUNTANTS = DPSGD.names
REFERENCE = DPSGD.references


def rdp_epsilon(q: float, sigma: float, steps: int, log_delta: float) -> tuple[float, float]:
    """Upper bound on ε by the RDP accountant; returns (ε, best order). References: MTZ19.

    The orders above ``_HEAD_MAX`` are summed only when ``_tail_needed`` cannot rule them out,
    and then apart (each order's value does not depend on the others; the first of equal
    values wins, as over the whole grid): the same ε and order as over every default order,
    without the costly long binomial sums where they cannot matter.
    """
    from dpcalc.relations import rdp

    if not _prunable(q, sigma, log_delta):
        orders = _orders()
        total = rdp.compose_steps(rdp.rdp_subsampled_gaussian(orders, q, sigma), steps)
        eps, best, _ = rdp.epsilon_from_rdp(orders, total, log_delta, "improved")
        return eps, best
    head, tail = _split_orders()
    total = rdp.compose_steps(rdp.rdp_subsampled_gaussian(head, q, sigma), steps)
    eps, best, _ = rdp.epsilon_from_rdp(head, total, log_delta, "improved")
    if math.isfinite(eps) and not _tail_needed(q, sigma, steps, tail, eps_head=eps,
                                               log_delta=log_delta):
        return eps, best
    total = rdp.compose_steps(rdp.rdp_subsampled_gaussian(tail, q, sigma), steps)
    eps_tail, best_tail, _ = rdp.epsilon_from_rdp(tail, total, log_delta, "improved")
    return (eps_tail, best_tail) if eps_tail < eps else (eps, best)


def rdp_log_delta(q: float, sigma: float, steps: int, epsilon: float) -> float:
    """Upper bound on log δ by the RDP accountant (orders pruned as in ``rdp_epsilon``; the
    value is the smallest over the orders, each clamped at 0). References: MTZ19, CKS20."""
    from dpcalc.relations import rdp

    if not (_prunable(q, sigma, -1.0) and math.isfinite(epsilon)):
        orders = _orders()
        total = rdp.compose_steps(rdp.rdp_subsampled_gaussian(orders, q, sigma), steps)
        return rdp.log_delta_from_rdp(orders, total, epsilon, "improved")[0]
    head, tail = _split_orders()
    total = rdp.compose_steps(rdp.rdp_subsampled_gaussian(head, q, sigma), steps)
    ld = rdp.log_delta_from_rdp(head, total, epsilon, "improved")[0]
    if not _tail_needed(q, sigma, steps, tail, ld_head=ld, epsilon=epsilon):
        return ld
    total = rdp.compose_steps(rdp.rdp_subsampled_gaussian(tail, q, sigma), steps)
    return min(ld, rdp.log_delta_from_rdp(tail, total, epsilon, "improved")[0])


def _orders():
    import numpy as np

    from dpcalc.relations import rdp

    return np.asarray(rdp.DEFAULT_ORDERS, dtype=float)


#: the default orders up to this one are always evaluated (the rest only when needed)
_HEAD_MAX = 64.0


@lru_cache(maxsize=1)
def _split_orders() -> tuple[tuple[float, ...], tuple[float, ...]]:
    from dpcalc.relations import rdp

    return (tuple(a for a in rdp.DEFAULT_ORDERS if a <= _HEAD_MAX),
            tuple(a for a in rdp.DEFAULT_ORDERS if a > _HEAD_MAX))


def _prunable(q: float, sigma: float, log_delta: float) -> bool:
    """Whether the tail test applies (0 < q < 1, σ in the series range, 0 < δ < 1)."""
    return 0.0 < q < 1.0 and 1e-100 <= sigma <= 1e100 and -math.inf < log_delta < 0.0


def _rdp_lower(q: float, sigma: float, alpha: float) -> float:
    """A lower bound on the per-step RDP of the Poisson-subsampled Gaussian at integer α ≥ 3.

    [MTZ19, Sec 3.2] A_α − 1 = Σ_{k≥2} C(α,k) q^k (1−q)^{α−k} (e^{(k²−k)/(2σ²)} − 1), every
    term ≥ 0, so A_α − 1 ≥ the largest of the k = 2, 3 terms, and RDP(α) = log(A_α)/(α−1).
    The log of a term is formed in floats from a few pieces, each within a few ulps; it is
    lowered by 1e-9·(1 + the pieces' magnitudes), far beyond those errors, and the result
    shrunk by 1e-9 relative (a lower value stays a valid lower bound).
    """
    from dpcalc.numeric.logspace import log_expm1

    n = int(alpha)
    l1, lq, inv = math.log1p(-q), math.log(q), 0.5 / sigma / sigma
    best = -math.inf
    for k in (2, 3):
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


@lru_cache(maxsize=256)
def _rdp_floors(q: float, sigma: float, tail: tuple[float, ...]) -> tuple[float, ...] | None:
    """Lower bounds on the per-step RDP at each order of ``tail`` (integers above
    ``_HEAD_MAX``, ascending): the largest ``_rdp_lower`` at orders up to it, since RDP is
    non-decreasing in α [Mir17, Sec 3; van Erven & Harremoës 2014, Thm 3]. None when an order
    is not such an integer. Cached per (q, σ)."""
    floor = _rdp_lower(q, sigma, _HEAD_MAX)
    out = []
    prev = _HEAD_MAX
    for a in tail:
        if not float(a).is_integer() or a <= prev:
            return None
        floor = max(floor, _rdp_lower(q, sigma, a))
        out.append(floor)
        prev = a
    return tuple(out)


def _tail_needed(q: float, sigma: float, steps: int, tail: tuple[float, ...], *,
                 eps_head: float | None = None, log_delta: float = 0.0,
                 ld_head: float | None = None, epsilon: float = 0.0) -> bool:
    """Whether some order of ``tail`` could give a smaller value than the head's best.

    At each order the conversion [CKS20, Prop 12 (v4)] only grows with the RDP, and the
    composed RDP used there (rounded up, its conversion's allowance covering its own
    roundings) is at least T·``_rdp_floors``; the conversion at that floor, lowered by 1e-12
    of its pieces for rounding, is then no larger than the value the full order grid computes
    there. An order whose lower value is at least the head's best cannot change the minimum
    (ties go to the earlier, head order, in both), so the answer is the full grid's.
    """
    floors = _rdp_floors(q, sigma, tail)
    if floors is None:
        return True
    for a, rdp_floor in zip(tail, floors, strict=True):
        lower = steps * rdp_floor
        am1, t = a - 1.0, math.log1p(-1.0 / a)
        if eps_head is not None:
            t2 = -(log_delta + math.log(a)) / am1  # [CKS20, Prop 12 (v4)]
            value = lower + t + t2 - 1e-12 * (lower + abs(t) + abs(t2))
            if value < eps_head:
                return True
        else:
            la = math.log(a)
            value = am1 * (lower - epsilon + t) - la  # [CKS20, Prop 12 (v4)]
            value -= 1e-12 * (am1 * (lower + epsilon + abs(t)) + la)
            if value < min(ld_head, 0.0):
                return True
    return False


def _strong_epsilon_at(q: float, sigma: float, steps: int, log_delta: float,
                       eps0: float) -> float:
    """[BW18; BBG18; DRV10] total ε when each step is (ε₀, δ₀(ε₀))-DP before amplification.

    δ₀ = δ(ε₀) of the Gaussian [BW18, Thm 8] (an upper bound), amplified δ per step qδ₀,
    and the slack δ' = δ − T·q·δ₀ must stay positive.
    """
    from dpcalc.numeric.logspace import log_sub
    from dpcalc.relations import compose, gaussian, subsample

    log_delta0 = gaussian.analytic_log_delta(sigma, eps0)
    eps1, log_delta1 = subsample.amplify(eps0, log_delta0, q, sampling="poisson",
                                         relation="add-remove")
    log_spent = math.log(steps) + log_delta1
    if log_spent >= log_delta:
        return math.inf
    log_slack = log_sub(log_delta, log_spent) - 1e-12  # a hair less slack: still valid
    return compose.advanced_epsilon(eps1, steps, log_slack)


def _strong_epsilon_floor(q: float, steps: int, log_delta: float, eps0: float) -> float:
    """A value never above ``_strong_epsilon_at`` at the same ε₀, without the Gaussian δ₀.

    δ₀ ≥ 0 leaves at most the whole δ as slack: there, log_slack = log δ + log(1 − Tqδ₀/δ)
    − 1e-12 ≤ log δ − 1e-12 (log1mexp ≤ 0, and rounding to nearest is monotone), the
    amplified ε₁ [BBG18, Thm 8] does not depend on δ₀, and the advanced-composition ε
    [DR14, Thm 3.20] only grows as the slack shrinks (and is inf without slack).
    """
    from dpcalc.relations import compose, subsample

    eps1, _ = subsample.amplify(eps0, -math.inf, q, sampling="poisson", relation="add-remove")
    return compose.advanced_epsilon(eps1, steps, log_delta - 1e-12)


def strong_epsilon(q: float, sigma: float, steps: int, log_delta: float) -> tuple[float, float]:
    """Upper bound on ε by amplification + advanced composition, the δ split optimised.

    The split is parametrised by the per-step ε₀ (δ₀ follows from it exactly); any ε₀ gives
    a valid bound, so the search needs no rounding care. Returns (ε, ε₀).
    The grid evaluates the exact objective only where ``_strong_epsilon_floor`` (a lower
    value) cannot rule a point out: the same point and value as a full grid, without the
    costly δ₀ of large ε₀ deep in the Gaussian tail.
    References: BW18, BBG18, DRV10.
    """
    def objective(x: float) -> float:
        return _strong_epsilon_at(q, sigma, steps, log_delta, math.exp(x))

    def lower(x: float) -> float:
        return _strong_epsilon_floor(q, steps, log_delta, math.exp(x))

    from dpcalc.numeric.optimize import minimize_on_grid

    best_x, best_v = minimize_on_grid(objective, math.log(1e-4), math.log(500.0), 61,
                                      lower=lower)
    if not math.isfinite(best_v):
        return math.inf, math.nan
    return best_v, math.exp(best_x)


def moments_epsilon(q: float, sigma: float, steps: int, log_delta: float) -> tuple[float, int]:
    """Upper bound on ε by the moments accountant (λ <= 32). References: ACGMMTZ16."""
    from dpcalc.relations import moments

    return moments.moments_epsilon(q, sigma, steps, log_delta)


def moments_log_delta(q: float, sigma: float, steps: int, epsilon: float) -> float:
    """Upper bound on log δ by the moments accountant. References: ACGMMTZ16."""
    from dpcalc.relations import moments

    return moments.moments_log_delta(q, sigma, steps, epsilon)[0]


def clt_mu_guess(epsilon: float, log_delta: float) -> float | None:
    """The μ whose μ-GDP meets (ε, δ) exactly: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)
    [DRS19, Cor 2.13]; an estimate for seeding solvers (None outside the double range)."""
    if not (epsilon > 0 and math.isfinite(log_delta) and -700 < log_delta < 0):
        return None

    def log_delta_of(mu: float) -> float:
        phi_a = 0.5 * math.erfc((epsilon / mu - mu / 2) / math.sqrt(2.0))  # [DRS19, Cor 2.13]
        phi_b = 0.5 * math.erfc((epsilon / mu + mu / 2) / math.sqrt(2.0))
        d = phi_a - math.exp(epsilon) * phi_b if epsilon < 700 else 0.0
        return math.log(d) if d > 0 else -math.inf

    lo, hi = 1e-8, 1e3
    if log_delta_of(hi) <= log_delta:
        return None
    for _ in range(80):  # bisection in log μ: δ(ε) increases with μ
        mid = math.sqrt(lo * hi)
        if log_delta_of(mid) > log_delta:
            hi = mid
        else:
            lo = mid
    return lo


def clt_sigma_guess(q: float, steps: int, epsilon: float, log_delta: float) -> float | None:
    """An estimate (not a bound) of the σ that meets (ε, δ), from the Gaussian-DP CLT.

    T steps at rate q are approximately μ-GDP with μ = q√(T(e^{1/σ²} − 1)) [DRS19, Sec 5,
    CLT for subsampled composition], μ from ``clt_mu_guess`` [DRS19, Cor 2.13]. Used only to
    seed a solver whose answer is certified on its own; None outside the double range.
    """
    mu = clt_mu_guess(epsilon, log_delta)
    if mu is None or not 0 < q <= 1:
        return None
    ratio = mu * mu / (q * q * steps)  # μ² = q²T(e^{1/σ²} − 1)  [DRS19, Sec 5]
    if not 0 < ratio < math.inf:
        return None
    sigma = 1.0 / math.sqrt(math.log1p(ratio))
    return sigma if math.isfinite(sigma) and sigma > 0 else None


def clt_q_guess(sigma: float, epsilon: float, log_delta: float, steps: int | None = None,
                epochs: float | None = None) -> float | None:
    """An estimate (not a bound) of the rate q that meets (ε, δ) at σ, from the CLT
    μ = q√(T(e^{1/σ²} − 1)) [DRS19, Sec 5] (T = epochs/q when epochs are given)."""
    mu = clt_mu_guess(epsilon, log_delta)
    if mu is None or not sigma > 0:
        return None
    g = math.expm1(1.0 / (sigma * sigma)) if sigma > 0.03 else math.inf
    if not 0 < g < math.inf:
        return None
    if steps is not None:
        q = mu / math.sqrt(steps * g)  # [DRS19, Sec 5]
    else:
        q = mu * mu / (epochs * g)  # μ² = q·epochs·(e^{1/σ²} − 1)  [DRS19, Sec 5]
    return q if math.isfinite(q) and 0 < q < 1 else None
