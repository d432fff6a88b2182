"""The largest count k of (ε, δ)-DP mechanisms whose optimal composition fits a budget.

An exact search on the certified predicate of :func:`dpcalc.relations.compose.optimal_log_delta`
[KOV15, Thm 3.3], which costs O(√k) per evaluation: a start near the answer (a CLT picture of
the privacy loss) and regula falsi keep the number of evaluations small for huge k.
"""

from __future__ import annotations

import math

from dpcalc.errors import DomainError
from dpcalc.relations.compose import (
    _check_count,
    _check_epsilon,
    _check_log_delta,
    optimal_log_delta,
)


def optimal_largest_k(epsilon: float, log_delta: float, total_epsilon: float,
                      log_total_delta: float, k_max: int) -> int:
    """Largest k in [1, k_max] whose certified optimal δ_tot fits (0: none does).

    Exact on the predicate ``optimal_log_delta(ε, log δ, k, E) <= log total δ`` (monotone in
    k [KOV15, Thm 3.3]): a doubling bracket, then regula falsi (Illinois) on the integers with
    the residual √(−log δ_tot(k)) − √(−log total δ), nearly linear in k for large k (a
    Gaussian-like tail), so the threshold is pinned in a few O(√k) evaluations rather than
    ~log2 k of them; bisection steps keep the bracket shrinking.
    """
    epsilon = _check_epsilon("epsilon", epsilon)
    log_delta = _check_log_delta("log_delta", log_delta)
    total_epsilon = _check_epsilon("total_epsilon", total_epsilon, allow_inf=True)
    k_max = _check_count("k_max", k_max)
    target = float(log_total_delta)
    if math.isnan(target):
        raise DomainError("log_total_delta must not be NaN")

    def log_d(k: int) -> float:
        return optimal_log_delta(epsilon, log_delta, k, total_epsilon)

    def residual(value: float) -> float:
        return math.sqrt(max(-value, 0.0)) - math.sqrt(max(-target, 0.0))

    if not log_d(1) <= target:
        return 0
    ok, ok_val, fail, fail_val = 1, log_d(1), None, 0.0
    guess = _clt_k_guess(epsilon, total_epsilon, target)
    step = 1.0  # doubling from k = 1 without a guess
    if guess is not None and 1 < guess < k_max:
        # widen from the guess by relative steps 1e-6, 4e-6, ... (then doubling): the probes
        # stay near the threshold, where the residual below is smooth
        value, step = log_d(guess), 1e-6
        if value <= target:
            ok, ok_val = guess, value
        else:
            fail, fail_val = guess, value
            while fail - ok > 1:
                probe = max(fail - max(1, int(fail * min(step, 0.5))), ok + 1)
                value = log_d(probe)
                if value <= target:
                    ok, ok_val = probe, value
                    break
                fail, fail_val, step = probe, value, step * 4.0
    while fail is None:
        probe = min(ok + max(1, int(ok * step)), k_max)
        if probe == ok:
            return ok
        value = log_d(probe)
        if value > target:
            fail, fail_val = probe, value
        else:
            ok, ok_val, step = probe, value, min(step * 4.0, 1.0)
    side = 0  # +1: the last step moved ``ok``; -1: ``fail`` (Illinois halving)
    slow = 0  # steps in a row that did not halve the bracket
    r_ok, r_fail = residual(ok_val), residual(fail_val)
    while fail - ok > 1:
        width = fail - ok
        if slow < 3 and math.isfinite(r_ok) and math.isfinite(r_fail) and r_ok > r_fail:
            mid = ok + math.floor(width * r_ok / (r_ok - r_fail))
        elif fail > 4 * ok:
            mid = math.isqrt(ok * fail)  # geometric bisection across decades
        else:
            mid = ok + width // 2
        mid = min(max(mid, ok + 1), fail - 1)
        value = log_d(mid)
        if value <= target:
            ok, r_ok = mid, residual(value)
            r_fail = r_fail / 2.0 if side == 1 else r_fail
            side = 1
        else:
            fail, r_fail = mid, residual(value)
            r_ok = r_ok / 2.0 if side == -1 else r_ok
            side = -1
        slow = slow + 1 if fail - ok > width // 2 else 0
    return ok


def _clt_k_guess(epsilon: float, total_epsilon: float, log_target: float) -> int | None:
    """A starting point only (every answer is verified): the k at which the privacy loss, as a
    normal with mean kμ (μ = ε tanh(ε/2)) and variance k(ε² − μ²), exceeds E with about the
    target probability (the CLT picture of [KOV15; DRS19]). ``None`` when it says nothing."""
    if not (math.isfinite(total_epsilon) and total_epsilon > 0 and log_target < 0):
        return None
    mu = epsilon * math.tanh(epsilon / 2.0)
    var = epsilon * epsilon - mu * mu
    if not (mu > 0.0 and math.isfinite(var)):
        return None
    sd = math.sqrt(max(var, 0.0))
    z = math.sqrt(-2.0 * log_target)
    for _ in range(4):  # −log δ ≈ z²/2 + log(z√(2π)) for a normal tail
        z = math.sqrt(max(-2.0 * log_target - 2.0 * math.log(max(z, 1.0) * 2.5066), 0.0))
    root = (-z * sd + math.sqrt(z * z * sd * sd + 4.0 * mu * total_epsilon)) / (2.0 * mu)
    guess = root * root
    return int(guess) if math.isfinite(guess) and guess < 2.0 ** 62 else None
