"""The original moments accountant of Abadi et al. for DP-SGD (Poisson sampling rate q, noise
multiplier σ, T steps).

Relations [ACGMMTZ16, Thm 2 & Sec 3.2]: the log-moment of the privacy loss at integer λ,
α(λ) = max over both neighbour directions of log E[(μ/μ0)^λ] under the output distribution,
composes additively (T·α(λ)) and gives the tail bound

    δ = min_λ exp(T·α(λ) − λε),        ε = min_λ (T·α(λ) + log(1/δ)) / λ,   λ = 1..32.

For the sampled Gaussian, μ0 = N(0, σ²) and μ = (1−q)μ0 + q·N(1, σ²). The direction
E_{z∼μ}[(μ/μ0)^λ] = E_{z∼μ0}[(μ/μ0)^{λ+1}] = A_{λ+1} is the binomial sum
A_{λ+1} = Σ_k C(λ+1,k) (1−q)^{λ+1−k} q^k e^{(k²−k)/(2σ²)} [ACGMMTZ16, Sec 3.2; MTZ19, Sec 3.2],
and it dominates the other direction E_{μ0}[(μ0/μ)^λ] [MTZ19, Sec 3], so
α(λ) = log A_{λ+1} (a test checks the other direction by quadrature). This is the RDP of the
sampled Gaussian at order λ+1 times λ [Mir17], i.e. the classic RDP conversion restricted to
integer orders 2..33, which is why this accountant never beats ``rdp`` with the improved
conversion.

The moments are summed exactly in mpmath (50 digits, positive terms only:
A − 1 = Σ_{k≥2} C(λ+1,k)(1−q)^{λ+1−k} q^k (e^{(k²−k)/(2σ²)} − 1)), and the final value is
rounded up to a double.
"""

from __future__ import annotations

import math
from functools import lru_cache

from dpcalc.errors import DomainError

__all__ = ["moments_epsilon", "moments_log_delta", "log_moments"]

_DPS = 50
_REL_PAD = "1e-40"  # far above the 50-digit working error, far below a double's resolution


def _check(q: float, noise_multiplier: float, steps, max_lambda: int) -> tuple[float, float,
                                                                                float, int]:
    qq, sigma, t = float(q), float(noise_multiplier), float(steps)
    if not 0.0 <= qq <= 1.0:
        raise DomainError(f"sampling rate q must be in [0, 1], got q={q}")
    if not sigma > 0:
        raise DomainError(f"noise_multiplier must be > 0, got noise_multiplier={noise_multiplier}")
    if not (t >= 0 and math.isfinite(t)):
        raise DomainError(f"steps must be a finite number >= 0, got steps={steps}")
    lam = int(max_lambda)
    if lam < 1 or lam != max_lambda:
        raise DomainError(f"max_lambda must be an integer >= 1, got max_lambda={max_lambda}")
    return qq, sigma, t, lam


@lru_cache(maxsize=256)
def _log_moments_mp(q: float, sigma: float, max_lambda: int):
    """α(λ) = log A_{λ+1} for λ = 1..max_lambda, as mpmath numbers (exact to ~50 digits)."""
    import mpmath as mp

    if q == 0 or sigma == math.inf:
        return tuple(mp.mpf(0) for _ in range(max_lambda))
    out = []
    nmax = max_lambda + 1
    with mp.workdps(_DPS):
        mq, ms = mp.mpf(q), mp.mpf(sigma)
        inv = 1 / (2 * ms * ms)
        pq = [mq**k for k in range(nmax + 1)]
        p1q = [(1 - mq) ** k for k in range(nmax + 1)]
        w = [mp.expm1((k * k - k) * inv) for k in range(nmax + 1)]  # e^{(k²−k)/(2σ²)} − 1
        for lam in range(1, max_lambda + 1):
            n = lam + 1
            # [ACGMMTZ16, Sec 3.2] binomial form of E_{μ0}[(μ/μ0)^{λ+1}], with the binomial
            # identity Σ_k C(n,k)(1−q)^{n−k}q^k = 1 removing the constant: all terms ≥ 0
            am1 = mp.fsum(math.comb(n, k) * p1q[n - k] * pq[k] * w[k] for k in range(2, n + 1))
            out.append(mp.log1p(am1))
    return tuple(out)


def _to_float_up(x) -> float:
    """The smallest double >= x (x an mpmath number, possibly ±inf)."""
    import mpmath as mp

    if mp.isinf(x):
        return math.inf if x > 0 else -math.inf
    f = float(x)
    if mp.mpf(f) < x:
        f = math.nextafter(f, math.inf)
    return f


def log_moments(q: float, noise_multiplier: float, max_lambda: int = 32) -> list[float]:
    """Upper bounds on the per-step log-moments α(λ), λ = 1..max_lambda, of the sampled
    Gaussian [ACGMMTZ16, Thm 2 & Sec 3.2], each rounded up to a double."""
    qq, sigma, _, lam = _check(q, noise_multiplier, 0, max_lambda)
    return [_to_float_up(v) for v in _log_moments_mp(qq, sigma, lam)]


def moments_epsilon(q: float, noise_multiplier: float, steps, log_delta: float,
                    max_lambda: int = 32) -> tuple[float, int]:
    """Upper bound on ε of T steps of DP-SGD by the moments accountant, and the best λ.

    References: [ACGMMTZ16, Thm 2]: ε = min_{λ ≤ max_lambda} (T·α(λ) + log(1/δ)) / λ. Any λ
    gives a valid bound, so the minimum needs no rounding care; the value at the chosen λ is
    computed in mpmath and rounded up. ε is clamped at 0.

    Args:
        q: Poisson sampling rate in [0, 1]. noise_multiplier: σ/Δ > 0. steps: T ≥ 0.
        log_delta: natural log of δ (−inf for δ = 0 gives ε = inf).
        max_lambda: largest moment order (32 in the paper).

    Returns:
        (epsilon, best_lambda).
    """
    import mpmath as mp

    qq, sigma, t, lam_max = _check(q, noise_multiplier, steps, max_lambda)
    ld = float(log_delta)
    if math.isnan(ld):
        raise DomainError("log_delta must not be NaN")
    if ld >= 0:
        return 0.0, 1  # δ ≥ 1: trivially (0, δ)-DP
    if ld == -math.inf:
        return math.inf, 1
    moments = _log_moments_mp(qq, sigma, lam_max)
    with mp.workdps(_DPS):
        best, best_lam = None, 1
        for lam, a in enumerate(moments, start=1):
            e = (mp.mpf(t) * a - mp.mpf(ld)) / lam  # [ACGMMTZ16, Thm 2]
            if best is None or e < best:
                best, best_lam = e, lam
        best = best * (1 + mp.mpf(_REL_PAD)) + mp.mpf(_REL_PAD)
        eps = _to_float_up(best)
    return max(eps, 0.0), best_lam


def moments_log_delta(q: float, noise_multiplier: float, steps, epsilon: float,
                      max_lambda: int = 32) -> tuple[float, int]:
    """Upper bound on log δ of T steps of DP-SGD at a given ε by the moments accountant.

    References: [ACGMMTZ16, Thm 2]: log δ = min_{λ ≤ max_lambda} (T·α(λ) − λε), clamped at
    log δ ≤ 0; computed in mpmath and rounded up.

    Returns:
        (log_delta, best_lambda).
    """
    import mpmath as mp

    qq, sigma, t, lam_max = _check(q, noise_multiplier, steps, max_lambda)
    eps = float(epsilon)
    if math.isnan(eps) or eps < 0:
        raise DomainError(f"epsilon must be >= 0, got epsilon={epsilon}")
    if eps == math.inf:
        return -math.inf, lam_max
    moments = _log_moments_mp(qq, sigma, lam_max)
    with mp.workdps(_DPS):
        best, best_lam = None, 1
        for lam, a in enumerate(moments, start=1):
            v = mp.mpf(t) * a - lam * mp.mpf(eps)  # [ACGMMTZ16, Thm 2]
            if best is None or v < best:
                best, best_lam = v, lam
        best = best + abs(best) * mp.mpf(_REL_PAD) + mp.mpf(_REL_PAD)
        ld = _to_float_up(best)
    return min(ld, 0.0), best_lam
