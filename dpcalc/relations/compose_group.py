"""Seed variants of composition (for comparison only) and group privacy.

* seed variants: the a(ε) form of Claims 14-18 [Che19] and the ε√(8k ln(1/δ')) form
               [UBC, Thm 8]; shown beside the theorems of ``relations.compose``.
* group        a (ε, δ)-DP mechanism on datasets differing in K rows
                   (Kε, K e^((K−1)ε) δ), or the tighter (Kε, δ Σ_{i<K} e^(iε))
                                                               [DR14, Thm 2.2; UBC, Thm 9]

Split from ``relations.compose`` (whose checks and directed-rounding helpers it shares); the
same conventions hold: δ's travel as natural logs, results are nudged to the safe side.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.numeric.directed import up as _up
from dpcalc.numeric.logspace import NEG_INF, log1mexp, log_expm1
from dpcalc.relations.compose import (
    _check_count,
    _check_epsilon,
    _check_log_delta,
    _float_up,
    _log_count,
    _pad_up,
    advanced_best,
)


def seed_variants(epsilon: float, log_delta: float, k: int,
                  log_total_delta: float) -> dict[str, float]:
    """Total ε (upper bounds) of the seed texts' advanced-composition forms, where valid.

    All use δ' = total δ − kδ (the largest slack the budget allows); empty when total δ ≤ kδ.

    * ``che19_claim17_nonadaptive``: k·a(ε) + √(2k ln(1/δ'))·ε with a(ε) = ε(e^ε − 1) for
      ε ≤ ln 2 and ε otherwise [Che19, Claims 12, 17]. Valid for independent (non-adaptive)
      composition only; equals the DRV10 form for ε ≤ ln 2.
    * ``che19_claim18_adaptive``: k·a(ε) + √(2k ln(1/δ'))·(ε + a(ε)) [Che19, Claim 18], via
      Azuma with increments bounded by ε + a(ε); valid for adaptive composition.
    * ``ubc_sqrt8k``: ε√(8k ln(1/δ')) [UBC, Thm 8]. Not valid in general (it drops the
      kε(e^ε − 1) term; DR14, Cor 3.21 uses it only for a total ε' < 1): reported only when it
      is certified to be at least the DRV10 value at the same δ', which proves it sound there.

    References: Che19 (Claims 12, 14-18); UBC (Thm 8); DRV10; DR14, Cor 3.21.
    """
    epsilon = _check_epsilon("epsilon", epsilon)
    log_delta = _check_log_delta("log_delta", log_delta)
    k = _check_count("k", k)
    drv, log_slack = advanced_best(epsilon, log_delta, k, log_total_delta)
    if log_slack == NEG_INF:
        return {}
    out: dict[str, float] = {}
    ln_inv = -log_slack
    root = math.sqrt(2.0 * k * ln_inv)
    if epsilon <= 700.0:
        # [Che19, Claim 12, (6.98)] a(ε) = ε(e^ε − 1) for ε ≤ log 2, else ε (≥ the KL divergence)
        a = epsilon * math.expm1(epsilon) if epsilon <= math.log(2.0) else epsilon
        # [Che19, Claim 17] (k a(ε) + √(2k log(1/β)) ε, kδ + β), independent composition
        v17 = k * a + root * epsilon
        out["che19_claim17_nonadaptive"] = _up(v17 * (1 + 16 * _U))
        # [Che19, Claim 18] (k a(ε) + √(2k log(1/β)) (ε + a(ε)), kδ + β), adaptive composition
        v18 = k * a + root * (epsilon + a)
        out["che19_claim18_adaptive"] = _up(v18 * (1 + 16 * _U))
    # [UBC, Thm 8] ε√(8k ln(1/δ')): sound where it is >= the DRV10 bound (a margin of 64u on the
    # comparison absorbs the roundings of both sides)
    ubc = epsilon * math.sqrt(8.0 * k * ln_inv)
    if ubc * (1 - 64 * _U) >= drv:
        out["ubc_sqrt8k"] = _up(ubc * (1 + 16 * _U))
    return out


# ----------------------------------------------------------------------------------------------
# group privacy
# ----------------------------------------------------------------------------------------------

def group(epsilon: float, log_delta: float, group_size: int,
          geometric: bool = False) -> tuple[float, float]:
    """(ε, δ)-DP for neighbours -> upper bound for datasets differing in K = group_size rows.

    Returns ``(Kε, log δ_g)`` with the textbook δ_g = K e^((K−1)ε) δ, or, with
    ``geometric=True``, the tighter δ_g = δ Σ_{i<K} e^(iε) that the chaining argument actually
    gives (P_0 ≤ e^ε P_1 + δ ≤ e^(2ε) P_2 + e^ε δ + δ ≤ ...); both are valid upper bounds.
    ``log_delta_g`` may be >= 0 (δ_g >= 1: no guarantee); the caller rejects it.

    References: DR14, Thm 2.2 (pure ε; the δ chaining is the same argument, as in Vadhan's
    2017 tutorial); UBC, Thm 9.
    """
    epsilon = _check_epsilon("epsilon", epsilon)
    log_delta = _check_log_delta("log_delta", log_delta)
    kk = _check_count("group_size", group_size)
    eps_g = _float_up(Fraction(kk) * Fraction(epsilon))  # [DR14, Thm 2.2] Kε
    if log_delta == NEG_INF:
        return eps_g, NEG_INF
    if not geometric:
        # [UBC, Thm 9] δ_g = K e^((K−1)ε) δ
        factor = _log_count(kk) + (kk - 1) * epsilon
    elif epsilon == 0.0:
        factor = _log_count(kk)
    elif kk * epsilon > 700.0:
        # Σ_{i<K} e^(iε) = e^((K−1)ε) (1 − e^(−Kε))/(1 − e^(−ε))
        factor = (kk - 1) * epsilon + log1mexp(-kk * epsilon) - log1mexp(-epsilon)
    else:
        # Σ_{i<K} e^(iε) = (e^(Kε) − 1)/(e^ε − 1)
        factor = log_expm1(kk * epsilon) - log_expm1(epsilon)
    value = log_delta + factor
    return eps_g, _pad_up(value, 16 * _U * (abs(log_delta) + abs(factor) + kk * epsilon + 1.0))


