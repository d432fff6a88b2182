"""The dominating pair of an arbitrary (ε, δ)-DP mechanism, for the PLD engine.

Every (ε, δ)-DP mechanism is a post-processing of the four-outcome pair [KOV15, Thm 2.1;
MV16, Sec 3]

    P = (δ, (1 − δ)·e^ε/(1 + e^ε), (1 − δ)/(1 + e^ε), 0)
    Q = (0, (1 − δ)/(1 + e^ε), (1 − δ)·e^ε/(1 + e^ε), δ)

whose privacy loss takes the values +∞, ε, −ε, −∞.  Composing these pairs is the optimal
composition of (ε, δ) guarantees [KOV15, Thm 3.3], so a plan that mixes mechanisms with bare
(ε, δ) points stays as tight as the points allow.  Symmetric (swapping P and Q mirrors it).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.pld.pair import Tails

__all__ = ["EpsDelta"]


class EpsDelta:
    """Dominating pair of an (ε, δ)-DP mechanism [KOV15, Thm 2.1].

    Args:
        epsilon: ε ≥ 0 (finite).
        log_delta: log δ (−inf for δ = 0; may lie far below the double range).
    """

    symmetric = True

    def __init__(self, epsilon: float, log_delta: float):
        self.eps = float(epsilon)
        self.ld = float(log_delta)
        l1md = math.log1p(-math.exp(self.ld)) if self.ld > -math.inf else 0.0
        sp = math.log1p(math.exp(-self.eps))          # log(1 + e^{−ε})
        self._la = l1md - sp                           # log P(L = ε)  = log((1−δ)e^ε/(1+e^ε))
        self._lc = l1md - self.eps - sp                # log P(L = −ε) = log((1−δ)/(1+e^ε))
        self._l1md = l1md
        self._err = 16.0 * _U * (4.0 + self.eps)

    def __repr__(self) -> str:
        return f"EpsDelta(epsilon={self.eps!r}, log_delta={self.ld!r})"

    def key(self):
        return ("eps-delta", self.eps, self.ld)

    def tails(self, ell, direction: str) -> Tails | None:
        ell = np.asarray(ell, dtype=float)
        eps = self.eps
        tol = 8.0 * _U * (abs(eps) + 1.0) + 8.0 * _U * np.abs(ell)
        if (np.abs(ell - eps) <= tol).any() or (np.abs(ell + eps) <= tol).any():
            return None                  # a threshold on an atom
        below, mid = ell < -eps, (ell >= -eps) & (ell < eps)
        lad = float(np.logaddexp(self._la, self.ld))        # P(L > ℓ), −ε ≤ ℓ < ε: a + δ
        lqd = float(np.logaddexp(self._la, self.ld))        # Q(L ≤ ℓ) there: δ + a (mirror)
        lPup = np.where(below, 0.0, np.where(mid, lad, self.ld))
        lPlo = np.where(below, -np.inf, np.where(mid, self._lc, self._l1md))
        lQup = np.where(below, self._l1md, np.where(mid, self._lc, -np.inf))
        lQlo = np.where(below, self.ld, np.where(mid, lqd, 0.0))
        e = np.full(ell.shape, self._err)
        return Tails(lPup, lPlo, lQup, lQlo, e, e, e, e)

    def loss_bounds(self, direction: str) -> tuple[float, float]:
        lo = -self.eps * (1 + 1e-12) - 1e-300
        hi = self.eps * (1 + 1e-12) + 1e-300 if self.ld == -math.inf else math.inf
        return lo, hi

    def exact_loss_top(self, direction: str) -> Fraction:
        """The largest finite loss, ε, exactly (loss_bounds rounds it outward)."""
        return Fraction(self.eps)

    def finite_loss_bounds(self, direction: str) -> tuple[float, float]:
        """loss_bounds of the finite atoms ±ε alone (the δ at +∞ aside)."""
        return self.loss_bounds(direction)[0], self.eps * (1 + 1e-12) + 1e-300

    def log_mass_at_infinity(self, direction: str) -> float:
        """log P(L = +∞) = log δ (the atom of P that Q does not have) [KOV15], the double
        nearest it: callers pad it by its rounding (pld._core._log_mass_any)."""
        return self.ld

    def support(self, direction: str, log_eta: float) -> tuple[float, float]:
        pad = min(0.5, max(0.25 * self.eps, 1e-3))    # sizes the grid only (atoms inside)
        return -self.eps - pad, self.eps + pad

    def quadrature(self, direction: str, lam: float, density: float, nmin: int,
                   log_eta_top: float | None):
        """The two finite atoms ±ε (the δ at +∞ is the engine's +∞ mass, never a node)."""
        loss = np.array([-self.eps, self.eps])
        lw0 = np.array([self._lc, self._la])
        return loss, lw0, lw0 + lam * loss
