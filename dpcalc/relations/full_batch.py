"""Full-batch DP-SGD (q = 1, add/remove neighbours): the exact privacy profile.

Every step releases the clipped gradient sum of the whole dataset with N(0, σ²) noise: the
Gaussian mechanism with sensitivity 1.  T such steps are exactly one Gaussian mechanism with
μ = √T/σ [DRS19, Cor 3.3], whose profile is closed form [BW18, Thm 8]

    δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ).

So the PLD accountant needs no grid here (``dpcalc.relations.pld`` answers q = 1 from this
module): brackets are a few ulps wide in log δ, and ~1e-13 relative in ε.  √T enters as a
double rounded outwards (up for the upper ends, down for the lower ends); δ grows with μ.
"""

from __future__ import annotations

import math

from dpcalc.relations import gaussian

#: What a q = 1 answer (and its attack-risk block) says about itself.
NOTE = ("q = 1: the steps are one Gaussian mechanism with μ = √steps/σ (Dong, Roth & Su 2019, "
        "Cor 3.3); its exact profile (Balle & Wang 2018, Thm 8) and trade-off curve answer")


def _root_steps(steps: int, up: bool) -> float:
    """√T rounded up (``up``) or down: math.sqrt is correctly rounded, one ulp covers it."""
    return math.nextafter(math.sqrt(int(steps)), math.inf if up else -math.inf)


def log_delta_bounds(sigma: float, steps: int, epsilon: float) -> tuple[float, float]:
    """Bracket (lower, upper) on log δ(ε) of T full-batch steps [BW18, Thm 8; DRS19, Cor 3.3].

    References: BW18, DRS19.
    """
    upper = gaussian.log_delta("analytic", sigma, epsilon, _root_steps(steps, True))
    lower = gaussian.analytic_log_delta_lower(sigma, epsilon, _root_steps(steps, False))
    return min(lower, upper), upper


def epsilon_upper(sigma: float, steps: int, log_delta: float) -> float:
    """The upper end of ``epsilon_bounds`` alone, the same number (its lower end is
    certified in mpmath: a solver's probe of the full batch does not need it).

    References: BW18, DRS19.
    """
    return gaussian.analytic_epsilon(sigma, log_delta, _root_steps(steps, True))[0]


def epsilon_bounds(sigma: float, steps: int, log_delta: float) -> tuple[float, float]:
    """Bracket (lower, upper) on ε(δ) of T full-batch steps: the upper end passes the exact
    profile's upper bound on δ; the lower end is a point where its lower bound on δ still
    exceeds δ (δ(ε) falls as ε grows, so ε(δ) lies above it), else 0.  A +inf upper end (no
    double ε passes) is left to the caller.

    References: BW18, DRS19.
    """
    upper, below = gaussian.analytic_epsilon(sigma, log_delta, _root_steps(steps, True))
    if not 0.0 < upper < math.inf:
        return min(upper, 0.0), upper
    root_lo = _root_steps(steps, False)
    gap = upper - below
    # the bisection's failing end, then further down: its upper bound on δ may be 1e-10
    # relative above the exact value (relations.gaussian), so a failing point need not
    # certify; a point whose lower bound on δ fails does
    for _ in range(8):
        x = upper - gap
        if x <= 0.0:
            break
        if gaussian.analytic_log_delta_lower(sigma, x, root_lo) > log_delta:
            return x, upper
        gap *= 10.0
    return 0.0, upper
