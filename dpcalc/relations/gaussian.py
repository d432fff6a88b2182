"""The Gaussian mechanism M(x) = f(x) + N(0, σ²I) with L2 sensitivity Δ: upper bounds on δ(ε).

Every method returns an upper bound on log δ(ε) for a given σ, ε, Δ (in terms of μ = Δ/σ):

- ``analytic``: the exact privacy profile [BW18, Thm 8]
  δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ).
- ``classic``: δ = 1.25·exp(−(ε/μ)²/2), i.e. σ = Δ√(2 ln(1.25/δ))/ε [DR14, Thm A.1];
  proven only for ε < 1.
- ``chernoff``: the tail-bound family of [Che19, Claim 9]: by [Che19, Claim 6] δ may be any
  bound on P(L > ε) with L ~ N(μ²/2, μ²), i.e. on P(ξ > t), t = ε/μ − μ/2. The tightest
  member of the family takes the smaller of the Chernoff bound e^{−t²/2} [Che19, eq. 6.5]
  and the Mills-ratio bound e^{−t²/2}/(t√(2π)) [Che19, eq. 6.3]; its σ is therefore never
  above the closed forms (6.81)–(6.84).
- ``rdp``: Gaussian RDP α·μ²/2 [Mir17, Prop 7] converted with the improved conversion
  [CKS20, Prop 12 (v4)], optimised over real α > 1.
- ``zcdp``: ρ = μ²/2 [BS16, Prop 1.6], converted by ε = ρ + 2√(ρ ln(1/δ)) [BS16, Prop 1.3].

The analytic profile is computed in floats with an explicit rounding-error allowance when
that allowance is below 1e-10 of the result, and otherwise with mpmath at a precision chosen
from the cancellation between the two Φ terms, so δ is exact down to 1e-300 and far below.
"""

from __future__ import annotations

import math

from dpcalc.errors import NumericalError
from dpcalc.methods import GAUSSIAN
from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.numeric.optimize import minimize_on_grid

METHODS = GAUSSIAN.names  # the registry (dpcalc.methods): names, references, help
REFERENCE = GAUSSIAN.references

_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def log_delta(method: str, sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Upper bound on log δ(ε) of the Gaussian mechanism by ``method`` (see module docstring).

    Args:
        method: one of ``METHODS``.
        sigma: noise standard deviation (> 0).
        epsilon: ε >= 0.
        sensitivity: L2 sensitivity Δ > 0.

    Returns:
        A float log δ upper bound in [-inf, 0]; 0 means no guarantee at this ε.

    References: BW18, DR14, Che19, Mir17, CKS20, BS16.
    """
    if method == "analytic":
        return analytic_log_delta(sigma, epsilon, sensitivity)
    mu = sensitivity / sigma
    if method == "classic":
        return classic_log_delta(mu, epsilon)
    if method == "chernoff":
        return chernoff_log_delta(mu, epsilon)
    if method == "rdp":
        return rdp_log_delta(mu, epsilon)
    if method == "zcdp":
        return zcdp_log_delta(mu, epsilon)
    raise ValueError(f"unknown Gaussian method {method!r}")


def _ndtr(x: float) -> float:
    """Φ(x) in floats via erfc (accurate in relative terms deep into the lower tail)."""
    return 0.5 * math.erfc(-x / _SQRT2)


def analytic_log_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Upper bound on log δ(ε) of the exact Gaussian privacy profile.

    [BW18, Thm 8] δ(ε) = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ).

    References: BW18.
    """
    mu = sensitivity / sigma
    a = mu / 2.0 - epsilon / mu
    b = -mu / 2.0 - epsilon / mu
    if epsilon < 700.0 and b > -37.0:  # b < a: both Φ terms stay normal doubles (> 1e-300)
        t1 = _ndtr(a)
        t2 = math.exp(epsilon) * _ndtr(b)
        # Rounding allowance: μ, a, b carry relative errors of a few ulps of (μ + ε/μ); Φ's
        # relative sensitivity to its argument is at most |x| + 1 in the tail; erfc and exp are
        # faithful to a few ulps (64 ulps allowed per term to be safe).
        spread = (mu + epsilon / mu) * 4.0 * _U
        err1 = t1 * (64.0 * _U + (abs(a) + 2.0) * spread)
        err2 = t2 * (64.0 * _U + (abs(b) + 2.0) * spread + epsilon * 2.0 * _U)
        diff = t1 - t2
        err = err1 + err2
        if diff > 0.0 and err <= 1e-10 * diff:
            return min(math.log(diff + err) + 4.0 * _U, 0.0)
    return _analytic_log_delta_mp(sigma, epsilon, sensitivity)


def _analytic_log_delta_mp(sigma: float, epsilon: float, sensitivity: float) -> float:
    """[BW18, Thm 8] in mpmath; precision grows until 25 digits survive the cancellation."""
    import mpmath

    dps = 40
    while dps <= 5000:
        with mpmath.workdps(dps):
            s, e, d = mpmath.mpf(sigma), mpmath.mpf(epsilon), mpmath.mpf(sensitivity)
            mu = d / s
            t1 = mpmath.ncdf(mu / 2 - e / mu)
            t2 = mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu)
            diff = t1 - t2
            if diff > 0 and diff > t1 * mpmath.mpf(10) ** (25 - dps):
                # about 25 correct digits: the float log is within an ulp or two
                value = float(mpmath.log(diff))
                return min(math.nextafter(math.nextafter(value, math.inf), math.inf), 0.0)
        dps *= 2
    raise NumericalError(
        f"could not certify the Gaussian δ at σ={sigma!r}, ε={epsilon!r} (cancellation)")


def classic_log_delta(mu: float, epsilon: float) -> float:
    """Upper bound on log δ of the classic calibration, valid for ε < 1 only.

    [DR14, Thm A.1] σ >= Δ√(2 ln(1.25/δ))/ε  ⇔  δ = 1.25·exp(−(ε/μ)²/2).

    References: DR14.
    """
    z = epsilon / mu
    value = math.log(1.25) - 0.5 * z * z
    value += 8.0 * _U * (0.5 * z * z + 1.0)  # rounding allowance, towards larger δ
    return min(value, 0.0)


def chernoff_log_delta(mu: float, epsilon: float) -> float:
    """Upper bound on log P(L > ε) for the Gaussian loss, the tightest of [Che19, eqs 6.3, 6.5].

    [Che19, Claim 6] (ε, P(L > ε))-DP; L ~ N(μ²/2, μ²) so P(L > ε) = P(ξ > t), t = ε/μ − μ/2.
    [Che19, eq 6.5] P(ξ > t) < e^{−t²/2};  [Che19, eq 6.3] P(ξ > t) < e^{−t²/2}/(t√(2π)).

    References: Che19.
    """
    t = epsilon / mu - mu / 2.0
    if t <= 0.0:
        return 0.0
    value = -0.5 * t * t + min(0.0, -math.log(t) - _LOG_SQRT_2PI)
    value += 16.0 * _U * (t * t + abs(math.log(t)) + 2.0)  # rounding allowance
    return min(value, 0.0)


def _rdp_log_delta_at(alpha: float, rho: float, epsilon: float) -> float:
    """[CKS20, Prop 12 (v4)] log δ = (α−1)(αρ − ε + log(1 − 1/α)) − log α, for RDP αρ.

    Rewritten from δ = e^{(α−1)(αρ−ε)}/(α−1)·(1 − 1/α)^α: (α−1)log(1−1/α) + log(1−1/α)
    − log(α−1) = (α−1)log(1−1/α) − log α.
    """
    return (alpha - 1.0) * (alpha * rho - epsilon + math.log1p(-1.0 / alpha)) - math.log(alpha)


def rdp_log_delta(mu: float, epsilon: float) -> float:
    """Upper bound on log δ from Gaussian RDP α·μ²/2 and the improved conversion, best real α.

    Any α > 1 gives a valid bound, so the search for α needs no rounding care; the bound at
    the chosen α gets a rounding allowance towards larger δ.

    References: Mir17 (Prop 7), CKS20 (Prop 12, v4).
    """
    rho = 0.5 * mu * mu
    alpha = _best_order(lambda a: _rdp_log_delta_at(a, rho, epsilon))
    value = _rdp_log_delta_at(alpha, rho, epsilon)
    magnitude = (alpha - 1.0) * (alpha * rho + epsilon + 1.0) + math.log(alpha)
    return min(value + 16.0 * _U * magnitude, 0.0)


def _best_order(objective) -> float:
    """α > 1 approximately minimising ``objective``, searched over log(α − 1) in [−15, 35]."""
    x, _ = minimize_on_grid(lambda x: objective(1.0 + math.exp(x)), -15.0, 35.0, 201)
    return 1.0 + math.exp(x)


def rdp_order(mu: float, epsilon: float) -> float:
    """The order α at which ``rdp_log_delta`` evaluates its bound (for display)."""
    rho = 0.5 * mu * mu
    return _best_order(lambda a: _rdp_log_delta_at(a, rho, epsilon))


def zcdp_log_delta(mu: float, epsilon: float) -> float:
    """Upper bound on log δ for ρ-zCDP, ρ = μ²/2, by ε = ρ + 2√(ρ ln(1/δ)).

    [BS16, Prop 1.3] inverted: log δ = −(ε − ρ)²/(4ρ) for ε > ρ, else no guarantee (0).

    References: BS16.
    """
    rho = 0.5 * mu * mu
    if epsilon <= rho:
        return 0.0
    value = -((epsilon - rho) ** 2) / (4.0 * rho)
    return min(value + 16.0 * _U * (abs(value) + 1.0), 0.0)


def classic_sigma(epsilon: float, log_delta: float, sensitivity: float = 1.0) -> float:
    """Closed form of the classic calibration σ = Δ√(2 ln(1.25/δ))/ε [DR14, Thm A.1].

    A fast-path guess for the solver, which verifies it. References: DR14.
    """
    return sensitivity * math.sqrt(2.0 * (math.log(1.25) - log_delta)) / epsilon


def zcdp_sigma(epsilon: float, log_delta: float, sensitivity: float = 1.0) -> float:
    """Closed form σ for ρ + 2√(ρL) = ε, L = ln(1/δ): √ρ = √(L + ε) − √L [BS16, Prop 1.3].

    A fast-path guess for the solver, which verifies it. References: BS16.
    """
    big_l = -log_delta
    root_rho = epsilon / (math.sqrt(big_l + epsilon) + math.sqrt(big_l))  # = √(L+ε) − √L
    return sensitivity / (_SQRT2 * root_rho)


def pure_dp_impossible() -> str:
    """The reason no Gaussian noise meets δ = 0 (its privacy loss is unbounded)."""
    return ("the Gaussian mechanism is not (ε, 0)-DP for any σ: its privacy loss is unbounded, "
            "so δ(ε) > 0 for every ε; give --delta > 0")
