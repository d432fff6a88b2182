"""The Poisson-subsampled Laplace mechanism's dominating pairs (add/remove), for the PLD engine.

Each record joins with probability q; f (L1 sensitivity Δ) gets Lap(b) noise.  With
b' = b/Δ, Q0 = Lap(0, b'), P1 = Lap(1, b'), M = (1 − q)·Q0 + q·P1, one step is dominated by
[ZDW22, Sec 5] (the Laplace pair (P1, Q0) dominates the Laplace mechanism [KJH20, Sec 6])

    remove: (P, Q) = (M, Q0),   L(x) = log(1 − q + q·e^{λ(x)}),  λ(x) = (|x| − |x − 1|)/b'
    add:    (P, Q) = (Q0, M),   loss −L(x)

λ is −ε0 for x ≤ 0, (2x − 1)/b' on (0, 1) and ε0 = 1/b' for x ≥ 1: the PLD has an atom at
each end of [log(1 − q + q·e^{−ε0}), log(1 − q + q·e^{ε0})].  Inside, L(x) > ℓ ⟺ x > x(ℓ) with
the threshold of the subsampled Gaussian at σ² = b'/2, so the tails are Laplace tails at x(ℓ)
(P1(X > t) = 1 − e^{(t−1)/b'}/2, Q0(X > t) = e^{−t/b'}/2 on [0, 1]).  q = 1 is the Laplace
mechanism itself (dpcalc.mechanisms.laplace), whose δ(ε) = 1 − e^{(ε−ε0)/2} for 0 ≤ ε < ε0.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.mechanisms.subsampled_gaussian import _x_of_loss
from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.pld._core import _LOG_HALF
from dpcalc.pld.pair import Tails

__all__ = ["SubsampledLaplace"]


def _lap_tails(t, dt, b: float):
    """(log P(X > t), log P(X ≤ t), relative error) for X ~ Lap(0, b): the minor tail is
    e^{−|t|/b}/2 [Lap(0,b) CDF], the major one log1p of minus it; the error adds the
    rounding of |t|/b and |d log tail/dt| ≤ 1/b times the threshold error dt."""
    at = np.abs(t)
    with np.errstate(invalid="ignore", over="ignore"):
        lminor = _LOG_HALF - at / b
        lmajor = np.log1p(-np.exp(lminor))
        err = (dt / b + 4.0 * _U * (at / b + 1.0)) * (1.0 + 1e-6) + 4.0 * _U
    err = np.where(np.isfinite(t), err, 0.0)
    upper = t >= 0
    return np.where(upper, lminor, lmajor), np.where(upper, lmajor, lminor), err


def _tails(ell, q: float, b: float, direction: str) -> Tails | None:
    """Tails of one direction's loss at thresholds ℓ; None next to an atom (x(ℓ) ≈ 0, 1)."""
    arg = np.asarray(ell, dtype=float)
    if direction == "add":
        arg = -arg            # L_add > ℓ ⟺ L_rem < −ℓ ⟺ x < x(−ℓ)
    x, dx, ill = _x_of_loss(arg, q, None, s2=0.5 * b)
    if ill.any():
        return None
    near = 4.0 * dx + 8.0 * _U
    if (np.abs(x) <= near).any() or (np.abs(x - 1.0) <= near + 8.0 * _U).any():
        return None           # a threshold at an atom: the tail jumps there
    # outside (0, 1) the loss is constant: every x < 0 acts as −∞, every x > 1 as +∞
    x = np.where(x < 0.0, -np.inf, np.where(x > 1.0, np.inf, x))
    dx = np.where(np.isfinite(x), dx, 0.0)
    c0, p0, e0 = _lap_tails(x, dx, b)                          # Q0 = Lap(0, b)
    c1, p1, e1 = _lap_tails(x - 1.0, dx + _U * np.abs(x), b)   # P1 = Lap(1, b)
    if q == 1.0:
        mix_c, mix_p, e_mix = c1, p1, e1
    else:
        l1mq, lq = math.log1p(-q), math.log(q)
        mix_c = np.logaddexp(l1mq + c0, lq + c1)   # M(X > x) = (1−q)Q0(X > x) + qP1(X > x)
        mix_p = np.logaddexp(l1mq + p0, lq + p1)
        # + the rounding of log(1 − q) and log q (absolute in log space, relative here)
        e_mix = np.maximum(e0, e1) + 4.0 * _U + 2.0 * _U * (abs(l1mq) + abs(lq))
    if direction == "remove":
        return Tails(mix_c, mix_p, c0, p0, e_mix, e_mix, e0, e0)
    return Tails(p0, c0, mix_p, mix_c, e0, e0, e_mix, e_mix)


class SubsampledLaplace:
    """Dominating pairs of one Poisson-subsampled Laplace step [ZDW22, Sec 5].

    Args:
        q: sampling rate in (0, 1] (q = 1: the Laplace mechanism, symmetric).
        scale: b/Δ > 0, the Laplace scale per unit of L1 sensitivity.
    """

    def __init__(self, q: float, scale: float):
        self.q = float(q)
        self.b = float(scale)
        self.symmetric = self.q == 1.0

    def __repr__(self) -> str:
        return f"SubsampledLaplace(q={self.q!r}, scale={self.b!r})"

    @classmethod
    def from_record(cls, v: dict) -> SubsampledLaplace:
        """One step of a ``compose --from`` record (its "steps" repeat it; see
        dpcalc.mechanisms.PAIRS); the scale is per unit of L1 sensitivity."""
        from dpcalc.mechanisms.gaussian import noise_per_sensitivity

        return cls(float(v["q"]), noise_per_sensitivity(float(v["scale"]),
                                                        float(v.get("sensitivity", 1.0))))

    def key(self):
        return ("subsampled-laplace", self.q, self.b)

    def tails(self, ell, direction: str) -> Tails | None:
        return _tails(ell, self.q, self.b, direction)

    def _edges_remove(self) -> tuple[float, float]:
        eps0 = 1.0 / self.b
        if self.q == 1.0:
            # ε0 is rounded: widen by a relative 1e-12 (outward: a sound edge)
            return -eps0 * (1 + 1e-12), eps0 * (1 + 1e-12)
        l1mq, lq = math.log1p(-self.q), math.log(self.q)
        lo = float(np.logaddexp(l1mq, lq - eps0))
        hi = float(np.logaddexp(l1mq, lq + eps0))
        pad = 1e-12 * (abs(lo) + abs(hi)) + 1e-300
        return lo - pad, hi + pad

    def loss_bounds(self, direction: str) -> tuple[float, float]:
        lo, hi = self._edges_remove()
        return (lo, hi) if direction == "remove" else (-hi, -lo)

    def support(self, direction: str, log_eta: float) -> tuple[float, float]:
        return self.loss_bounds(direction)

    def quadrature(self, direction: str, lam: float, density: float, nmin: int,
                   log_eta_top: float | None):
        """The two atoms (x ≤ 0, x ≥ 1) and midpoints of (0, 1) with their P-masses."""
        q, b = self.q, self.b
        n = int(max(nmin, density * 40))
        x = (np.arange(n) + 0.5) / n
        lam_x = (2.0 * x - 1.0) / b
        lq0 = -np.log(2.0 * b) - np.abs(x) / b - math.log(n)          # Q0 density · dx
        lq0 = np.concatenate(([math.log(0.5)], lq0, [math.log(0.5) - 1.0 / b]))
        lam_x = np.concatenate(([-1.0 / b], lam_x, [1.0 / b]))
        lr = lam_x if q == 1.0 else np.logaddexp(math.log1p(-q), math.log(q) + lam_x)
        if direction == "remove":
            return lr, lq0 + lr, lq0 + (lam + 1.0) * lr      # dM = e^{L} dQ0
        return -lr, lq0, lq0 - lam * lr
