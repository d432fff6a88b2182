"""The Laplace mechanism M(x) = f(x) + Lap(b) with L1 sensitivity Δ: its exact privacy profile.

- Pure DP: ε = Δ/b [DMNS06, Thm 1; DR14, Thm 3.6].
- Approximate DP, the exact profile (hockey-stick divergence between Lap(0, b) and Lap(Δ, b)):
  δ(ε) = max(0, 1 − exp((ε − Δ/b)/2))  [BBG18, Sec 6 (Laplace example); checked by quadrature in
  tests]. Inverses: ε(δ) = max(0, Δ/b + 2 ln(1 − δ)); b = Δ/(ε − 2 ln(1 − δ)).

The exponent (ε − Δ/b)/2 is formed in exact rational arithmetic, so there is no cancellation
when ε is close to Δ/b; the remaining float steps carry an explicit rounding allowance.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.numeric.logspace import NEG_INF, log1mexp

REFERENCE = "DMNS06"



def log_delta(scale: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Upper bound on log δ(ε) of the Laplace mechanism (exact profile); -inf when δ = 0.

    [BBG18, Sec 6] δ(ε) = 1 − exp((ε − Δ/b)/2) for ε < Δ/b, else 0.

    References: BBG18, DMNS06.
    """
    x = (Fraction(epsilon) - Fraction(sensitivity) / Fraction(scale)) / 2  # exact
    if x >= 0:
        return NEG_INF
    xf = float(x)  # correctly rounded, relative error <= u
    if xf == 0.0:  # |x| below the double range: δ ≈ −x, tiny but positive
        xf = -5e-324
    value = log1mexp(xf)
    # allowance: u in x (relative, maps to <= u·|x|/(1-e^x) <= 2u relative in δ for small |x|),
    # plus a few ulps for expm1/log1p/log.
    return min(value + 16.0 * _U * (1.0 + abs(value)), 0.0)


def epsilon_guess(scale: float, log_delta: float, sensitivity: float = 1.0) -> float:
    """Closed form ε = max(0, Δ/b + 2 ln(1 − δ)) (a solver fast path). References: BBG18."""
    log1m_delta = log1mexp(log_delta) if log_delta != NEG_INF else 0.0
    return max(0.0, sensitivity / scale + 2.0 * log1m_delta)


def scale_guess(epsilon: float, log_delta: float, sensitivity: float = 1.0) -> float:
    """Closed form b = Δ/(ε − 2 ln(1 − δ)) (a solver fast path). References: BBG18."""
    log1m_delta = log1mexp(log_delta) if log_delta != NEG_INF else 0.0
    denominator = epsilon - 2.0 * log1m_delta
    return sensitivity / denominator if denominator > 0 else math.inf
