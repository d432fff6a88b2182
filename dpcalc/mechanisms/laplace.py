"""The Laplace mechanism's dominating pair, for the PLD engine.

Releasing f(D) + Lap(b) with L1 sensitivity Δ is dominated (tightly, both directions) by
(P, Q) = (Lap(Δ, b), Lap(0, b)) [KJH20, Sec 6]: the loss is ε0 = Δ/b on x ≥ Δ, −ε0 on x ≤ 0
and linear between, so the PLD has atoms at ±ε0 and δ(ε) = 1 − e^{(ε−ε0)/2} for 0 ≤ ε < ε0
[ZDW22, Sec 3].  The pair is the q = 1 case of the subsampled Laplace (its tails:
dpcalc.mechanisms.subsampled_laplace).
"""

from __future__ import annotations

from fractions import Fraction

from dpcalc.mechanisms.gaussian import noise_per_sensitivity
from dpcalc.mechanisms.subsampled_laplace import SubsampledLaplace

__all__ = ["Laplace"]


class Laplace(SubsampledLaplace):
    """Dominating pair of the Laplace mechanism Lap(b), L1 sensitivity Δ [KJH20, Sec 6]."""

    def __init__(self, scale: float, sensitivity: float = 1.0):
        super().__init__(1.0, noise_per_sensitivity(scale, sensitivity))
        self._top = Fraction(float(sensitivity)) / Fraction(float(scale))

    def __repr__(self) -> str:
        return f"Laplace(scale/sensitivity={self.b!r})"

    def exact_loss_top(self, direction: str) -> Fraction:
        """sup L = Δ/b exactly, as a rational of the given doubles (the loss_bounds edge is
        rounded outward): a pure-DP budget of ten Laplace(2) releases is exactly 5."""
        return self._top

    @classmethod
    def from_record(cls, v: dict) -> Laplace:
        """The pair of a ``compose --from`` record (dpcalc.mechanisms.PAIRS)."""
        return cls(float(v["scale"]), float(v.get("sensitivity", 1.0)))

    def key(self):
        return ("laplace", self.b, self._top)
