"""The Poisson-subsampled Gaussian's dominating pairs (add/remove neighbours), for the PLD engine.

One step of DP-SGD: each record joins the batch with probability q, the L2-clipped sum gets
N(0, σ²) noise (sensitivity 1).  With Q0 = N(0, σ²), P1 = N(1, σ²), M = (1 − q)·Q0 + q·P1,
the step is dominated by [ZDW22, Sec 5; MTZ19, Sec 3] (the one-dimensional reduction of
[ACGMMTZ16, Sec 3.1] is exact for this worst case)

    remove: (P, Q) = (M, Q0),   privacy loss  L(x) = log(1 − q + q·exp((2x − 1)/(2σ²)))
    add:    (P, Q) = (Q0, M),   privacy loss −L(x)      (bounded above by −log(1 − q))

L is increasing in x, so the tails of L are normal tails at the threshold x(ℓ) = L⁻¹(ℓ)
[KJH20, Sec 6].  q = 1 is the Gaussian mechanism N(0, σ²) vs N(1, σ²) [BW18], symmetric.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpcalc.mechanisms._normal import _gauss_tails, _z_for_log_tail
from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.pld._core import _logsumexp
from dpcalc.pld.pair import Tails

__all__ = ["SubsampledGaussian"]


def _x_of_loss(ell, q: float, sigma: float | None, s2: float | None = None):
    """Threshold x with L(x) = ℓ (remove-direction loss), its error bound and a flag.

    s2 = σ² (computed from sigma unless given; the subsampled Laplace passes b/2, its loss
    in the interior being the same function with σ² = b/2).

    L is increasing in x, so {L > ℓ} = {x > x(ℓ)} with x(ℓ) = σ²·log((e^ℓ − 1 + q)/q) + 1/2
    (x = −∞ where e^ℓ ≤ 1 − q).  Returns (x, dx, ill): dx bounds |x_computed − x(ℓ)| including
    the rounding of the grid value ℓ itself; ill marks points where the sign of e^ℓ − 1 + q
    is not certain (the caller moves the grid).
    """
    ell = np.asarray(ell, dtype=float)
    if s2 is None:
        s2 = sigma * sigma
    if q == 1.0:
        x = s2 * ell + 0.5
        dx = _U * (3.0 * s2 * np.abs(ell) + 2.0 * np.abs(x) + 1.0)
        return x, dx, np.zeros(ell.shape, dtype=bool)
    y, ey, onep, aonep = _y_of_loss(ell, q)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ly = np.log1p(y)
        x = s2 * ly + 0.5
        dx = s2 * (ey / aonep + 2.0 * _U * np.abs(ly)) + 2.0 * _U * (np.abs(x) + 1.0)
    ill = aonep <= 8.0 * (ey + _U)
    pos = onep > 0
    x = np.where(pos, x, -np.inf)
    dx = np.where(pos, dx, 0.0)
    return x, dx, ill


def _y_of_loss(ell, q: float):
    """(y, its error bound ey, 1 + y, |1 + y|) of _x_of_loss (q < 1): y = (e^ℓ − 1)/q > −1,
    x = σ²·log1p(y) + 1/2.  ill is |1 + y| ≤ 8·(ey + u), whatever σ: tails_defined reads it
    alone, without log1p(y), x, dx and their wheres (94 -> 45 µs a call at the ~2,300
    points of the batch lines' calls, about one a line); |1 + y| once for dx and ill."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        em1 = np.expm1(ell)
        y = em1 / q
        # |Δy| ≤ 2u|y| (expm1, division) + u|ℓ|e^ℓ/q (rounding of the grid value ℓ)
        ey = 2.0 * _U * np.abs(y) + _U * np.abs(ell) * (em1 + 1.0) / q
        onep = 1.0 + y
        return y, ey, onep, np.abs(onep)


def _tails(ell, q: float, sigma: float, direction: str) -> Tails | None:
    """Tails of the one-step PLD of one direction at thresholds ℓ; None if ill-conditioned.

    The error bounds e are those of the logs (``_normal._gauss_tails``), passed where the
    engine reads relative ones: the relative error expm1(e) is at most 2e for e ≤ 1.25, and
    the engine moves every tail and mass by twice its bound (pld.discretise), which covers
    it; beyond, ``SubsampledGaussian.tails`` passes expm1(e) (``_relative``; fixed_batch
    reads these bounds as the logs' they are). The mixture's log sums log(1 − q) + log
    Φc(z0) and log q + log Φc(z1), each with the rounding of the weight's log (≤ u·|log q|):
    the q-term carries a share s of the sum only where Φc(z0) ≲ q·Φc(z1)/s, i.e. z0² ≳ 2|log
    q| − 2 log(1/s) (z0 = z1 + 1/σ), and then the first component's own 2u·z0² exceeds
    s·2u·|log q|; elsewhere s ≤ 2q/(1 − q), and q·|log q| ≤ 0.37. (An explicit 2u·(|log q| +
    |log(1 − q)|) on every point, as the subsampled Laplace's, moved answers by up to 1.2e-5
    and certified less near the FPR: tests/test_risk_tpr_reach.py.)"""
    arg = np.asarray(ell, dtype=float)
    if direction == "add":
        arg = -arg            # L_add > ℓ ⟺ L_rem < −ℓ ⟺ x < x(−ℓ)
    x, dx, ill = _x_of_loss(arg, q, sigma)
    if ill.any():
        return None
    z0 = x / sigma
    with np.errstate(invalid="ignore"):
        z1 = (x - 1.0) / sigma
        dz0 = dx / sigma + 2.0 * _U * np.abs(z0)
        dz1 = (dx + _U * np.abs(x)) / sigma + 2.0 * _U * np.abs(z1)
    # both components' tails in one call (elementwise: the same doubles, one pass of the
    # ~25 small numpy calls instead of two, ~15 µs of a 1248-point call's ~450)
    n = z0.size
    dz = np.concatenate((dz0.ravel(), dz1.ravel()))
    lc, lp, le = _gauss_tails(np.concatenate((z0.ravel(), z1.ravel())),
                              np.where(np.isfinite(dz), dz, 0.0))
    shape = z0.shape
    c0, p0, e0 = (v[:n].reshape(shape) for v in (lc, lp, le))
    c1, p1, e1 = (v[n:].reshape(shape) for v in (lc, lp, le))
    em = np.maximum(e0, e1) + 4.0 * _U
    if q == 1.0:
        mix_c, mix_p, e_mix = c1, p1, e1
    else:
        l1mq, lq = math.log1p(-q), math.log(q)
        mix_c = np.logaddexp(l1mq + c0, lq + c1)   # M(x > ·) = (1−q)Φc(z0) + qΦc(z1)
        mix_p = np.logaddexp(l1mq + p0, lq + p1)
        e_mix = em
    if direction == "remove":
        return Tails(mix_c, mix_p, c0, p0, e_mix, e_mix, e0, e0)
    # add: P = Q0, Q = M; {L_add > ℓ} = {x < x(−ℓ)}
    return Tails(p0, c0, mix_p, mix_c, e0, e0, e_mix, e_mix)


def _relative(log_err: np.ndarray) -> np.ndarray:
    """Relative error bounds from bounds e on the logs: e itself up to 1.25, where the
    engine's moving each tail by twice its bound covers expm1(e) ≤ 2e (_tails), expm1(e)
    beyond (capped at e^700 − 1: a bound that large is vacuous on any tail above e^-700)."""
    big = log_err > 1.25
    if not big.any():
        return log_err
    with np.errstate(over="ignore"):
        return np.where(big, np.expm1(np.minimum(log_err, 700.0)), log_err)


def _loss_rem(x, q: float, sigma: float):
    """Remove-direction loss L(x) = log(1 − q + q·e^{(2x−1)/(2σ²)})."""
    a = (2.0 * np.asarray(x, dtype=float) - 1.0) / (2.0 * sigma * sigma)
    if q == 1.0:
        return a
    return np.logaddexp(math.log1p(-q), math.log(q) + a)


def _x_span(sigma: float, direction: str, lam: float, per_sigma: float, nmin: int,
            x_hi: float = math.inf) -> tuple[float, float, int]:
    """(first node, last node, number of nodes) of the quadrature's x grid."""
    top = max(1.0, lam + 1.0) if direction == "remove" else 1.0
    xlo, xhi = -14.0 * sigma, min(top + 14.0 * sigma, x_hi)
    return xlo, xhi, int(min(200_000, max(nmin, per_sigma * (xhi - xlo) / sigma)))


# nodes (loss, log φ) of a pair's quadrature kept per pair: the tilt's search, the grid's
# quantiles and the clump test ask again for the same x grid at other tilts (the add
# direction's grid, and one cut at x_top, do not move with λ), each time for the same
# losses; a few grids per pair at most
_NODES_KEPT = 4


@functools.lru_cache(maxsize=256)
def _x_top(sigma: float, direction: str, log_eta: float) -> float:
    """x above which the remove-direction one-step mass (≤ η) goes to +∞ (see _support)."""
    if direction != "remove":
        return math.inf
    return 1.0 + _z_for_log_tail(log_eta - math.log(2.0)) * sigma


@functools.lru_cache(maxsize=256)
def _support(q: float, sigma: float, direction: str, log_eta: float) -> tuple[float, float]:
    """Untilted loss range of the one-step grid: outside it the P-mass is ≤ η per side.

    Above the top the pessimistic side puts the mass at +∞ (paid T·η in δ) and the
    optimistic one lowers it; below the bottom it is raised (pessimistic) or dropped.
    Memoised (a pure function of its floats): ~8 calls per batch line, a few distinct.
    """
    z = _z_for_log_tail(log_eta - math.log(2.0))
    # L is increasing in x and both P-components have ≤ η/2 mass beyond x = −zσ or 1 + zσ
    l_lo, l_hi = float(_loss_rem(-z * sigma, q, sigma)), float(_loss_rem(1.0 + z * sigma,
                                                                           q, sigma))
    if q < 1.0:
        l_lo = max(l_lo, math.log1p(-q))
    if direction == "remove":
        return l_lo, l_hi
    return -l_hi, -l_lo


class SubsampledGaussian:
    """Dominating pairs of one Poisson-subsampled Gaussian step [ZDW22, Sec 5].

    Args:
        q: sampling rate in (0, 1] (q = 1: the Gaussian mechanism, symmetric).
        sigma: noise multiplier σ > 0 (noise std / L2 sensitivity).
    """

    def __init__(self, q: float, sigma: float):
        self.q = float(q)
        self.sigma = float(sigma)
        self.symmetric = self.q == 1.0
        self._nodes: dict = {}      # quadrature nodes kept (see _NODES_KEPT)

    def __repr__(self) -> str:
        return f"SubsampledGaussian(q={self.q!r}, sigma={self.sigma!r})"

    def key(self):
        return ("subsampled-gaussian", self.q, self.sigma)

    def tails(self, ell, direction: str) -> Tails | None:
        t = _tails(ell, self.q, self.sigma, direction)
        if t is None:
            return None
        # (each side's two tails share one bound array: converted once)
        ep, eq = _relative(t.ePup), _relative(t.eQup)
        return Tails(t.lPup, t.lPlo, t.lQup, t.lQlo, ep,
                     ep if t.ePlo is t.ePup else _relative(t.ePlo), eq,
                     eq if t.eQlo is t.eQup else _relative(t.eQlo))

    def tails_defined(self, ell, direction: str) -> bool:
        """Whether tails(ell, direction) answers (is not None), without the tails: the
        thresholds' conditioning alone (_tails returns None exactly where _x_of_loss flags
        one; plan._level0 asks this where it needs no boundary tails).  A pair that has this
        method answers tails point by point (each threshold's values whatever the others:
        plan._level0 asks for two sets of thresholds in one call)."""
        arg = np.asarray(ell, dtype=float)
        if direction == "add":
            arg = -arg
        if self.q == 1.0:
            return True               # (_x_of_loss flags no point at q = 1)
        _, ey, _, aonep = _y_of_loss(arg, self.q)
        return not (aonep <= 8.0 * (ey + _U)).any()

    def loss_bounds(self, direction: str) -> tuple[float, float]:
        if self.q >= 1.0:
            return -math.inf, math.inf
        edge = math.log1p(-self.q)          # L ≥ log(1 − q): the "no-jump" clump
        return (edge, math.inf) if direction == "remove" else (-math.inf, -edge)

    def support(self, direction: str, log_eta: float) -> tuple[float, float]:
        return _support(self.q, self.sigma, direction, log_eta)

    def _kept(self, direction: str, lam: float, density: float, nmin: int,
              log_eta_top: float | None):
        """The kept (loss, log φ, [_logsumexp of log_w0 per direction]) of the x grid that
        quadrature uses at these arguments (see _NODES_KEPT); its arrays are read-only."""
        q, sigma = self.q, self.sigma
        x_hi = math.inf if log_eta_top is None else _x_top(sigma, direction, log_eta_top)
        span = _x_span(sigma, direction, lam, density, nmin, x_hi)
        kept = self._nodes
        key = (q, sigma, span)
        hit = kept.get(key)
        if hit is None:
            if len(kept) >= _NODES_KEPT:
                kept.clear()
            x = np.linspace(*span)
            lr, lphi = _loss_rem(x, q, sigma), -x * x / (2.0 * sigma * sigma)
            lr.flags.writeable = lphi.flags.writeable = False
            hit = kept[key] = (lr, lphi, [None, None])
        return hit

    def quadrature(self, direction: str, lam: float, density: float, nmin: int,
                   log_eta_top: float | None):
        """Nodes x on [−14σ, top + 14σ] (cut at x_top), weights φ_σ(x)·dP/dQ0 and the tilt:
        remove: dP = e^{L}dQ0, log w = log φ + (λ + 1)L; add: dP = dQ0, log w = log φ − λL."""
        hit = self._kept(direction, lam, density, nmin, log_eta_top)
        lr, lphi = hit[:2]
        # (the kept arrays themselves are never handed out: a caller may write to its own)
        if direction == "remove":
            return lr.copy(), lphi + lr, lphi + (lam + 1.0) * lr
        return -lr, lphi.copy(), lphi - lam * lr

    def cgf_nodes(self, direction: str, lam: float, density: float, nmin: int,
                  log_eta_top: float | None):
        """(loss, log_w, _logsumexp(log_w0)) of quadrature at the same arguments, the same
        doubles (DominatingPair.cgf_nodes: plan._cgf's ~13 calls per batch line, whose
        log_w0 only entered its sum, the same at every tilt of a node set): the loss array
        may be the kept one, read-only."""
        hit = self._kept(direction, lam, density, nmin, log_eta_top)
        lr, lphi, lse0 = hit
        if direction == "remove":
            if lse0[0] is None:
                lse0[0] = _logsumexp(lphi + lr)
            return lr, lphi + (lam + 1.0) * lr, lse0[0]
        if lse0[1] is None:
            lse0[1] = _logsumexp(lphi)
        return -lr, lphi - lam * lr, lse0[1]
