"""Seeds of the dpsgd rate (q) solve: a secant on log q ↦ log ε_upper(q) (split from
dpcalc.api.dpsgd).  Heuristics only: any seed is safe, ``holds`` decides [DRS19, MTZ19]."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dpcalc.errors import InfeasibleError
from dpcalc.solve import largest_passing

if TYPE_CHECKING:
    from dpcalc.api.dpsgd import Accountant


def q_guess(acc: Accountant, values: dict, epsilon: float, log_delta: float,
            low: float, stop: float) -> tuple[float | None, float]:
    """Secant iteration on log q ↦ log ε_upper(q) towards the target, seeded by the
    Gaussian-DP CLT [DRS19]: (guess, its accuracy), or (None, 1e-4) without a seed. Any guess
    is safe: ``holds`` decides, and the solver returns the passing side."""
    from dpcalc.api.dpsgd import steps_for
    from dpcalc.relations import dpsgd as rel

    sigma = acc._evaluated_sigma(values["sigma"])
    seed = rel.clt_q_guess(sigma, epsilon, log_delta, steps=values.get("steps"),
                           epochs=values.get("epochs"))
    if "steps" in values and log_delta < _CLT_LOG_DELTA_MIN:
        seed = _rdp_q_seed(acc, sigma, values["steps"], epsilon, log_delta, seed)
    if seed is None or not low < seed < 1.0:
        return None, 1e-4

    def f(x: float) -> float:
        r = math.exp(x)
        if not low < r <= 1.0:
            raise ValueError("outside the q range")
        n = values["steps"] if "steps" in values else steps_for(values["epochs"], r)
        return math.log(acc.epsilon(r, sigma, n, log_delta)[0]) - math.log(epsilon)

    try:
        x0 = math.log(seed)
        f0 = f(x0)
        x1 = x0 - 0.01 if f0 > 0 else min(x0 + 0.01, 0.0)
        slope = _clt_q_slope(epsilon, log_delta) if "steps" in values else None
        if slope is not None:  # a Newton step on the CLT's slope: one probe fewer
            x1 = min(x0 - max(-1.0, min(1.0, f0 / slope)), 0.0)
        for _ in range(12):
            f1 = f(x1)
            if f1 == f0 or not math.isfinite(f1):
                break
            step = f1 * (x1 - x0) / (f1 - f0)
            if abs(step) < stop:
                return math.exp(x1), max(2.0 * abs(step) + stop / 8, 2e-9)
            x0, f0, x1 = x1, f1, min(x1 - max(-1.0, min(1.0, step)), 0.0)
        return math.exp(x1), 1e-4
    except (ArithmeticError, ValueError):
        return None, 1e-4


_CLT_LOG_DELTA_MIN = -50.0   # below: the CLT seed of a q solve is checked against RDP's answer


def _rdp_q_seed(acc: Accountant, sigma: float, steps: int, epsilon: float, log_delta: float,
                seed: float | None) -> float | None:
    """Far in the tail the CLT seed can be off by many orders (the secant then moves one
    e-fold per probe): the RDP accountant's answer q_rdp [MTZ19] (cheap per probe) is a
    lower end for the PLD's, so a seed below it or far above it is replaced by 1.5·q_rdp
    (heuristic: any seed is safe, ``holds`` decides)."""
    if acc.name != "pld":
        return seed
    from dpcalc.api.dpsgd import Accountant

    rdp = Accountant("rdp", acc.tolerance)
    try:
        q_rdp = largest_passing(lambda r: rdp.holds(r, sigma, steps, epsilon, log_delta),
                                low=0.0, high=1.0, high_open=False, name="q", rtol=1e-3)
    except (InfeasibleError, ArithmeticError, ValueError):
        return seed
    if seed is None or not q_rdp <= seed <= 30.0 * q_rdp:
        return min(1.5 * q_rdp, 1.0)
    return seed


def _clt_q_slope(epsilon: float, log_delta: float) -> float | None:
    """d log ε / d log q at fixed steps of the Gaussian-DP CLT estimate [DRS19] (q ∝ μ)."""
    from dpcalc.relations import dpsgd as rel

    hi = rel.clt_mu_guess(epsilon * 1.01, log_delta)
    lo = rel.clt_mu_guess(epsilon / 1.01, log_delta)
    if hi is None or lo is None or not 0 < lo < hi:
        return None
    slope = 2.0 * math.log(1.01) / (math.log(hi) - math.log(lo))
    return slope if 0.05 < slope < 20 and math.isfinite(slope) else None
