"""The Gaussian mechanism's dominating pair, for the PLD engine.

Releasing f(D) + N(0, σ²) with L2 sensitivity Δ is dominated (tightly, both directions) by
(P, Q) = (N(Δ, σ²), N(0, σ²)) ≅ (N(1, (σ/Δ)²), N(0, (σ/Δ)²)); its PLD is N(μ²/2, μ²), μ = Δ/σ,
and δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) [BW18, Thm 8].  The pair is the q = 1 case of the
Poisson-subsampled Gaussian (its tails: dpcalc.mechanisms.subsampled_gaussian).
"""

from __future__ import annotations

import math

from dpcalc.mechanisms.subsampled_gaussian import SubsampledGaussian

__all__ = ["Gaussian"]


def noise_per_sensitivity(noise: float, sensitivity: float) -> float:
    """noise/Δ rounded down (less noise per unit of sensitivity: a dominating pair)."""
    if sensitivity == 1.0:
        return float(noise)
    return math.nextafter(float(noise) / float(sensitivity), 0.0)


class Gaussian(SubsampledGaussian):
    """Dominating pair of the Gaussian mechanism N(0, σ²), L2 sensitivity Δ [BW18, Thm 8]."""

    def __init__(self, sigma: float, sensitivity: float = 1.0):
        super().__init__(1.0, noise_per_sensitivity(sigma, sensitivity))

    def __repr__(self) -> str:
        return f"Gaussian(sigma/sensitivity={self.sigma!r})"

    @classmethod
    def from_record(cls, v: dict) -> Gaussian:
        """The pair of a ``compose --from`` record (dpcalc.mechanisms.PAIRS)."""
        return cls(float(v["sigma"]), float(v.get("sensitivity", 1.0)))

    def key(self):
        return ("gaussian", self.sigma)
