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
  [CKS20, Prop 12 (v4)], optimised over every real α > 1 (the window follows the optimum
  α* ≈ ε/(2ρ), so no order cap ever binds).
- ``zcdp``: ρ = μ²/2 [BS16, Prop 1.6], converted by the optimal-order conversion of
  ρ-zCDP [CKS20, Cor 13 (v4)]: δ = inf_α e^{(α−1)(αρ−ε)}/α · (1 − 1/α)^{α−1}, which is
  never looser than Bun–Steinke's ε = ρ + 2√(ρ ln(1/δ)) [BS16, Prop 1.3] (0.688 against
  0.960 at σ = 4, δ = 1e-3). For the Gaussian it coincides with ``rdp``, since the
  Gaussian's RDP curve is exactly ρ-zCDP.

The analytic profile is computed in floats with an explicit rounding-error allowance when
that allowance is below 1e-10 of the result, and otherwise with mpmath at a precision chosen
from the cancellation between the two Φ terms, so δ is exact down to 1e-300 and far below.
"""

from __future__ import annotations

import math

from dpcalc.errors import DomainError, NumericalError
from dpcalc.methods import GAUSSIAN
from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.numeric.optimize import minimize_on_grid

METHODS = GAUSSIAN.names  # the registry (dpcalc.methods): names, references, help
REFERENCE = GAUSSIAN.references

#: The most negative finite double: an upper bound on a log δ that is below the double range.
LOG_FLOOR = -1.7976931348623157e308
#: t beyond which t²/2 exceeds the double range (√(2 · 1.7977e308) = 1.8962e154).
_T_FLOOR = 1.9e154
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
    mu = sensitivity / sigma
    if epsilon / mu - mu / 2.0 > _T_FLOOR:
        # [Che19, eq 6.5] δ(ε) <= P(ξ > t) <= e^{−t²/2}, t = ε/μ − μ/2, and every method's own
        # bound is as small here: log δ is below the double range, and its floor is an upper
        # bound (never −inf, which would claim δ = 0)
        return LOG_FLOOR
    if method == "analytic":
        return analytic_log_delta(sigma, epsilon, sensitivity)
    if method == "classic":
        return classic_log_delta(mu, epsilon)
    if method == "chernoff":
        return chernoff_log_delta(mu, epsilon)
    if method == "rdp":
        return rdp_log_delta(mu, epsilon)
    if method == "zcdp":
        return zcdp_log_delta(mu, epsilon)
    raise DomainError(f"unknown Gaussian method {method!r}")


_LOG_HALF = math.log(0.5)


def _ndtr(x: float) -> float:
    """Φ(x) in floats via erfc (accurate in relative terms deep into the lower tail)."""
    return 0.5 * math.erfc(-x / _SQRT2)


def analytic_log_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Upper bound on log δ(ε) of the exact Gaussian privacy profile.

    [BW18, Thm 8] δ(ε) = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ).

    References: BW18.
    """
    got = _float_profile(sigma, epsilon, sensitivity)
    if got is not None:
        diff, err = got
        # (δ above 1/2: log δ is near 0, where a double δ cannot resolve it; mpmath does)
        if 0.0 < diff <= 0.5 and err <= 1e-10 * diff:
            return min(math.log(diff + err) + 4.0 * _U, 0.0)
    return _analytic_log_delta_mp(sigma, epsilon, sensitivity)


def _float_profile(sigma: float, epsilon: float,
                   sensitivity: float) -> tuple[float, float] | None:
    """(δ(ε) of [BW18, Thm 8] in doubles, a bound on its rounding error), or None where a
    term would leave the normal doubles."""
    mu = sensitivity / sigma
    a = mu / 2.0 - epsilon / mu
    b = -mu / 2.0 - epsilon / mu
    if not (epsilon < 700.0 and b > -37.0):  # b < a: both Φ terms stay normal (> 1e-300)
        return None
    t1 = _ndtr(a)
    t2 = math.exp(epsilon) * _ndtr(b)
    # Rounding allowance: μ, a, b carry relative errors of a few ulps of (μ + ε/μ); Φ's
    # relative sensitivity to its argument is at most |x| + 1 in the tail; erfc and exp are
    # faithful to a few ulps (64 ulps allowed per term to be safe).
    spread = (mu + epsilon / mu) * 4.0 * _U
    err1 = t1 * (64.0 * _U + (abs(a) + 2.0) * spread)
    err2 = t2 * (64.0 * _U + (abs(b) + 2.0) * spread + epsilon * 2.0 * _U)
    return t1 - t2, err1 + err2


def analytic_log_delta_lower(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """A lower bound on log δ(ε) of the exact Gaussian privacy profile [BW18, Thm 8], in
    mpmath (−inf where none is certified: past mpmath's ncdf, or a cancellation beyond 5000
    digits).  With ``analytic_log_delta`` it brackets log δ(ε) to a few ulps.

    References: BW18.
    """
    try:
        return _analytic_log_delta_mp(sigma, epsilon, sensitivity, lower=True)
    except NumericalError:
        return -math.inf


def analytic_epsilon(sigma: float, log_target: float,
                     sensitivity: float = 1.0) -> tuple[float, float]:
    """(ε, below): ε is the smallest ε (to ~1e-13 relative, on the passing side) with the
    analytic upper bound on log δ(ε) [BW18, Thm 8] at most ``log_target``, so an upper bound
    on the exact ε(δ); ``below`` < ε is the bisection's last failing point (0 when ε is 0;
    (+inf, 0) when no double ε passes).  δ(ε) falls as ε grows, so the bisection keeps ε
    passing.  The bracket starts at the Chernoff bound's ε (the loss is N(μ²/2, μ²) [BW18]:
    δ(ε) ≤ e^{−t²/2}, t = ε/μ − μ/2, so ε = μ²/2 + μ√(−2 log δ) passes), found at once for
    any μ (at σ = 1e-30, ε is 5e59).

    References: BW18.
    """
    def ok(e: float) -> bool:
        # δ(e) certainly above 1/2 (and the target below it): the upper bound, which
        # mpmath computes there, fails too; the same decision without importing mpmath (a
        # q solve's probe of the full batch: 49 ms)
        got = _float_profile(sigma, e, sensitivity) if log_target < _LOG_HALF else None
        if got is not None and got[0] - 2.0 * got[1] > 0.5:
            return False
        return log_delta("analytic", sigma, e, sensitivity) <= log_target

    if ok(0.0):
        return 0.0, 0.0
    mu = sensitivity / sigma
    try:
        hi = max(1.0, (0.5 * mu * mu + mu * math.sqrt(-2.0 * log_target)) * (1.0 + 1e-9))
    except (OverflowError, ValueError):
        hi = 1.0
    if not math.isfinite(hi):
        hi = 1.0
    while not ok(hi):
        hi *= 2.0
        if hi > 1.7e308:
            return math.inf, 0.0
    lo = 0.0
    while hi - lo > 1e-13 * hi:
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi, lo


def _analytic_log_delta_mp(sigma: float, epsilon: float, sensitivity: float,
                           lower: bool = False) -> float:
    """[BW18, Thm 8] in mpmath; precision grows until 25 digits survive the cancellation.
    The double is moved two ulps up (``lower``: down) from the rounded value."""
    import mpmath

    mu_f = sensitivity / sigma
    # b = −μ/2 − ε/μ beyond −1e150 (σ near the bottom of the double range) is past mpmath's
    # ncdf; the term e^ε Φ(b) is then dropped, which only enlarges δ (an upper bound; no
    # lower bound is certified then)
    drop_t2 = -mu_f / 2.0 - epsilon / mu_f < -1e150
    if drop_t2 and lower:
        return -math.inf
    dps = 40
    while dps <= 5000:
        with mpmath.workdps(dps):
            s, e, d = mpmath.mpf(sigma), mpmath.mpf(epsilon), mpmath.mpf(sensitivity)
            mu = d / s
            t1 = mpmath.ncdf(mu / 2 - e / mu)
            t2 = 0 if drop_t2 else mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu)
            diff = t1 - t2
            way = -math.inf if lower else math.inf
            # 1 − δ = Φ(ε/μ − μ/2) + e^ε Φ(b), two positive terms: near δ = 1, log δ =
            # log1p(−(1 − δ)) keeps its relative accuracy, where log(diff) would leave an
            # absolute error of 10^(25−dps), far more than an ulp of a log δ near 0 (review)
            x = e / mu - mu / 2
            if x < 0:   # (else 1 − δ ≥ 1/2)
                # past mpmath's ncdf (x < −1e150) Φ(x) is below 2^-1100: 0 for the upper
                # end (a smaller 1 − δ), 2^-1100 for the lower one
                tail = (mpmath.ncdf(x) if x > -1e150
                        else (mpmath.mpf(2) ** -1100 if lower else mpmath.mpf(0)))
                one_minus = tail + t2
            else:
                one_minus = mpmath.mpf(1)
            if one_minus < 0.5:
                value = float(mpmath.log1p(-one_minus))
                return min(math.nextafter(math.nextafter(value, way), way), 0.0)
            if diff > 0 and diff > t1 * mpmath.mpf(10) ** (25 - dps):
                # about 25 correct digits, and |log δ| ≥ log 2: the float log is within an
                # ulp or two
                value = float(mpmath.log(diff))
                return min(math.nextafter(math.nextafter(value, way), way), 0.0)
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
    value += (4.0 * _U * z) * z + 8.0 * _U  # rounding allowance, towards larger δ
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
    value += (16.0 * _U * t) * t + 16.0 * _U * (abs(math.log(t)) + 2.0)  # rounding allowance
    return min(value, 0.0)


def _rdp_log_delta_at(alpha: float, mu: float, epsilon: float) -> float:
    """[CKS20, Prop 12 (v4)] log δ = (α−1)(αρ − ε + log(1 − 1/α)) − log α, RDP αρ, ρ = μ²/2.

    Rewritten from δ = e^{(α−1)(αρ−ε)}/(α−1)·(1 − 1/α)^α: (α−1)log(1−1/α) + log(1−1/α)
    − log(α−1) = (α−1)log(1−1/α) − log α. αρ is formed as ½(αμ)μ so that it does not
    underflow for tiny μ (huge σ).
    """
    alpha_rho = 0.5 * (alpha * mu) * mu
    return (alpha - 1.0) * (alpha_rho - epsilon + math.log1p(-1.0 / alpha)) - math.log(alpha)


def rdp_log_delta(mu: float, epsilon: float) -> float:
    """Upper bound on log δ from Gaussian RDP α·μ²/2 and the improved conversion, best real α.

    Any α > 1 gives a valid bound, so the search for α needs no rounding care; the bound at
    the chosen α gets a rounding allowance towards larger δ.

    References: Mir17 (Prop 7), CKS20 (Prop 12, v4).
    """
    alpha = rdp_order(mu, epsilon)
    value = _rdp_log_delta_at(alpha, mu, epsilon)
    if value == -math.inf:  # the product left the double range below: its floor bounds it
        return LOG_FLOOR
    # each of the few roundings is <= u relative to the terms it combines (αρ: 3, the sum: 2,
    # log1p: 1, the products: 2), so 16u times the sum of the magnitudes covers them all
    magnitude = ((alpha - 1.0) * (0.5 * (alpha * mu) * mu + epsilon - math.log1p(-1.0 / alpha))
                 + math.log(alpha) + abs(value))
    return min(value + 16.0 * _U * magnitude, 0.0)


def rdp_order(mu: float, epsilon: float) -> float:
    """The order α > 1 at which ``rdp_log_delta`` evaluates its bound (approximately optimal).

    Searched over log(α − 1) in a window around the unconstrained optimum α* ≈ ε/(2ρ) + 1/2
    (computed in logs, so huge σ does not overflow it), never capped at a fixed order.
    """
    # log(ε/(2ρ)) = log ε − 2 log μ (ρ = μ²/2)
    centre = (math.log(epsilon) - 2.0 * math.log(mu)) if epsilon > 0 else -15.0
    lo = max(min(-15.0, centre - 20.0), -36.0)  # α − 1 >= e^−36 > ulp(1): α > 1 as a double
    hi = min(max(35.0, centre + 20.0), 700.0)  # α − 1 < e^700 stays a double
    lo = min(lo, hi - 1.0)

    def objective(x: float) -> float:
        alpha = 1.0 + math.exp(x)
        if alpha <= 1.0:
            return math.inf
        return _rdp_log_delta_at(alpha, mu, epsilon)

    x, _ = minimize_on_grid(objective, lo, hi, 401)
    return 1.0 + math.exp(x)


def zcdp_log_delta(mu: float, epsilon: float) -> float:
    """Upper bound on log δ for ρ-zCDP, ρ = μ²/2, by the optimal-order conversion.

    [CKS20, Cor 13 (v4)] ρ-zCDP is (α, αρ)-RDP for every α > 1, so
    δ = inf_α e^{(α−1)(αρ−ε)}/α · (1 − 1/α)^{α−1}; evaluated as ``rdp_log_delta`` (the same
    bound, any α valid, rounding allowance towards larger δ). Never above [BS16, Prop 1.3].

    References: BS16 (Prop 1.6), CKS20 (Cor 13, v4).
    """
    return rdp_log_delta(mu, epsilon)


def classic_sigma(epsilon: float, log_delta: float, sensitivity: float = 1.0) -> float:
    """Closed form of the classic calibration σ = Δ√(2 ln(1.25/δ))/ε [DR14, Thm A.1].

    A fast-path guess for the solver, which verifies it. References: DR14.
    """
    return sensitivity * math.sqrt(2.0 * (math.log(1.25) - log_delta)) / epsilon
