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


def log_participation(q: float, steps: int, k: int = 1) -> float:
    """log(1 − (1 − q)^{k·T}), rounded up: the probability that one of the user's k examples
    is sampled at some step. The outputs are equal in law otherwise (couple every other coin),
    so δ(ε) ≤ TV ≤ it at every ε ≥ 0, for add/remove and (with the replaced user's coins
    coupled to the new one's, as in [SMG24]'s pair) replace-one neighbours; where it is at
    most δ, ε = 0 exactly.  Rounding: log1p, the product by kT, expm1 and log each within
    a few ulps; the result is raised by 1e-14 relative and 1e-12 absolute."""
    if q >= 1.0:
        return 0.0
    part = -math.expm1(k * steps * math.log1p(-q))
    if not part > 0.0:
        return 0.0
    return min(0.0, math.log(part) * (1.0 - 1e-14) + 1e-12)


def rdp_epsilon(q: float, sigma: float, steps: int, log_delta: float) -> tuple[float, float]:
    """Upper bound on ε by the RDP accountant; returns (ε, best order). References: MTZ19.

    Over every default order; ``rdp_pruned`` skips the orders that cannot decide (the same
    ε and order)."""
    from dpcalc.relations import rdp, rdp_pruned

    if rdp_pruned.applies(q, sigma) and -math.inf < log_delta < 0.0:
        return rdp_pruned.rdp_epsilon(q, sigma, steps, log_delta)
    orders = _orders()
    total = rdp.compose_steps(rdp.rdp_subsampled_gaussian(orders, q, sigma), steps)
    eps, best, _ = rdp.epsilon_from_rdp(orders, total, log_delta, "improved")
    return eps, best


def rdp_log_delta(q: float, sigma: float, steps: int, epsilon: float) -> float:
    """Upper bound on log δ by the RDP accountant (orders skipped as in ``rdp_epsilon``).
    References: MTZ19, CKS20."""
    from dpcalc.relations import rdp, rdp_pruned

    if rdp_pruned.applies(q, sigma) and math.isfinite(epsilon):
        return rdp_pruned.rdp_log_delta(q, sigma, steps, epsilon)
    orders = _orders()
    total = rdp.compose_steps(rdp.rdp_subsampled_gaussian(orders, q, sigma), steps)
    return rdp.log_delta_from_rdp(orders, total, epsilon, "improved")[0]


def _orders():
    import numpy as np

    from dpcalc.relations import rdp

    return np.asarray(rdp.DEFAULT_ORDERS, dtype=float)


@lru_cache(maxsize=1)
def _strong_modules():
    """What the strong-composition bound calls, imported once (it is evaluated ~140 times per
    ε: an import statement in it cost ~20 % of its time)."""
    from dpcalc.numeric.logspace import log_sub
    from dpcalc.relations import compose, gaussian, subsample

    return log_sub, compose, gaussian, subsample


def _strong_epsilon_at(q: float, sigma: float, steps: int, log_delta: float,
                       eps0: float) -> float:
    """[BW18; BBG18; DRV10] total ε when each step is (ε₀, δ₀(ε₀))-DP before amplification.

    δ₀ = δ(ε₀) of the Gaussian [BW18, Thm 8] (an upper bound), amplified δ per step qδ₀,
    and the slack δ' = δ − T·q·δ₀ must stay positive.
    """
    log_sub, compose, gaussian, subsample = _strong_modules()
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
    _, compose, _, subsample = _strong_modules()
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


def clt_steps_guess(q: float, sigma: float, epsilon: float, log_delta: float) -> float | None:
    """An estimate (not a bound) of the step count that meets (ε, δ) at (q, σ), from the CLT
    μ = q√(T(e^{1/σ²} − 1)) [DRS19, Sec 5], μ from ``clt_mu_guess`` [DRS19, Cor 2.13]; None
    outside the double range.  Seeds solvers only."""
    mu = clt_mu_guess(epsilon, log_delta)
    if mu is None or not (0 < q <= 1 and 0 < sigma < math.inf):
        return None
    # in logs: σ² and (μ/q)² leave the double range long before the guess does
    log_inv_var = -2.0 * math.log(sigma)                      # log(1/σ²)
    if log_inv_var < -30.0:
        log_growth = log_inv_var                              # e^x − 1 = x(1 + O(x))
    else:
        log_growth = math.log(math.expm1(min(math.exp(log_inv_var), 700.0)))
    log_steps = 2.0 * (math.log(mu) - math.log(q)) - log_growth
    return math.exp(log_steps) if -700.0 < log_steps < 700.0 else None


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


def tail_sigma_guess(q: float, epsilon: float, log_delta: float) -> float | None:
    """An estimate (not a bound) of the σ at which one Poisson-sampled Gaussian step meets
    (ε, δ): amplification by sampling, (log(1 + q(e^ε₀ − 1)), qδ₀) [BBG18, Thm 8], of the
    Gaussian's ε₀ at δ₀ = δ/q, with δ₀ from its dominant term Φc(ε₀σ − 1/(2σ)) [BW18, Thm 8]
    (the other term only lowers δ₀).  Where one sampled step with a large loss is what δ
    measures (few sampled steps, far in the tail) it is close: on the 22 of the 50 σ solves
    of benchmarks/bench_dpsgd_random.py where it exceeds the Gaussian-DP CLT's estimate
    (clt_sigma_guess), 0.79–1.02 times the PLD's σ for T steps, where the CLT's was 0.09–0.75
    times it.  T steps only need more noise, so it mostly estimates from below.  Seeds
    solvers only; None where undefined."""
    inside = 0.0 < q <= 1.0 and epsilon > 0.0 and -1e4 < log_delta < 0.0
    return _or_none(_tail_sigma, q, epsilon, log_delta) if inside else None


def _or_none(estimate, *args) -> float | None:
    """An estimate, or None where its arithmetic fails (it only seeds a solver)."""
    try:
        return estimate(*args)
    except (ArithmeticError, ValueError):
        return None


def _tail_sigma(q: float, epsilon: float, log_delta: float) -> float | None:
    from dpcalc.mechanisms._normal import _z_for_log_tail
    from dpcalc.numeric.logspace import log_expm1

    # ε₀ = log(1 + (e^ε − 1)/q), in logs (e^ε overflows long before ε₀ does)
    log_ratio = log_expm1(epsilon) - math.log(q)
    eps0 = log_ratio + math.log1p(math.exp(-log_ratio)) if log_ratio > 0.0 \
        else math.log1p(math.exp(log_ratio))
    w = _z_for_log_tail(min(log_delta - math.log(q), -1e-300))   # ε₀σ − 1/(2σ) = w
    if not (eps0 > 0.0 and w > 0.0):
        return None
    sigma = (w + math.sqrt(w * w + 2.0 * eps0)) / (2.0 * eps0)
    return sigma if math.isfinite(sigma) and sigma > 0.0 else None


def tail_q_guess(sigma: float, epsilon: float, log_delta: float) -> float | None:
    """An estimate (not a bound) of the rate q at which one Poisson-sampled Gaussian step
    with noise σ meets (ε, δ): ``tail_sigma_guess`` solved for q instead [BBG18, Thm 8; BW18,
    Thm 8].  With δ₀ = δ/q, ε₀ grows with q, so g(log q) = log q − log(e^ε − 1) +
    log(e^ε₀ − 1) is increasing and its root is found by secant steps inside a bracket on
    [−745, 0] (a bisection where a step would leave it); 1 when even q = 1 meets the target
    (an estimate capped there, not a root).  T steps only allow a smaller rate, so it
    mostly estimates from above.  Seeds solvers only; None where undefined."""
    inside = 0.0 < sigma < 1e100 and epsilon > 0.0 and -1e4 < log_delta < 0.0
    return _or_none(_tail_q, sigma, epsilon, log_delta) if inside else None


def _tail_q(sigma: float, epsilon: float, log_delta: float) -> float | None:
    from dpcalc.mechanisms._normal import _z_for_log_tail
    from dpcalc.numeric.logspace import log_expm1

    target = log_expm1(epsilon)

    def g(log_q: float) -> float:
        w = _z_for_log_tail(log_delta - log_q)
        return log_q - target + log_expm1((w + 0.5 / sigma) / sigma)   # ε₀σ − 1/(2σ) = w

    a, b = -745.0, 0.0          # g(a) < 0 < g(b): a bracket, kept by every step
    ga, gb = g(a), g(b)
    if gb <= 0.0:
        return 1.0
    if ga >= 0.0:
        return None
    # secant steps from q = 1 (g is nearly linear: ε₀ moves with log q only through w),
    # a bisection where a step would leave the bracket
    x0, g0, c = b, gb, min(0.0, target - log_expm1(0.5 / (sigma * sigma)))
    for _ in range(60):
        c = min(max(c, a), b)
        gc = g(c)
        if gc < 0.0:
            a = c
        else:
            b = c
        if gc == 0.0 or b - a < 1e-10:
            break
        nxt = c - gc * (c - x0) / (gc - g0) if gc != g0 else 0.5 * (a + b)
        x0, g0 = c, gc
        c = nxt if a < nxt < b and abs(nxt - c) < 1e-10 * max(1.0, abs(c)) + (b - a) \
            else 0.5 * (a + b)
        if abs(x0 - c) < 1e-10 * max(1.0, abs(c)):
            break
    return math.exp(c) if c > -745.0 else None


def log_slope(estimate, epsilon: float, rate: bool) -> float | None:
    """d log ε / d log x of an estimate ε ↦ x of the unknown (a seed's model), by a central
    difference over ε ± 1 %: for a rate (``rate``) in (0.05, 20), else (σ) negative; None
    when undefined or outside."""
    hi, lo = estimate(epsilon * 1.01), estimate(epsilon / 1.01)
    if hi is None or lo is None or not (hi > 0 and lo > 0) or hi == lo:
        return None
    slope = 2.0 * math.log(1.01) / (math.log(hi) - math.log(lo))
    if not math.isfinite(slope):
        return None
    return slope if (0.05 < slope < 20 if rate else slope < 0) else None
