"""Closed-form tails of the Poisson-sampled Gaussian's pair for K = 2 examples per user.

remove: P = w₀N(0, σ²) + w₁N(1, σ²) + w₂N(2, σ²), Q = N(0, σ²), w = Binomial(·; 2, q)
(``poisson_add_remove``); add: P = N(0, σ²), Q = Σ_j w_j N(−j, σ²).  The remove loss
L(x) = log(w₀ + w₁e^{(2x − 1)/(2σ²)} + w₂e^{(2x − 2)/σ²}) is a quadratic in s = e^{x/σ²}:

    A s² + B s = D,  A = w₂e^{−2/σ²},  B = w₁e^{−1/(2σ²)},  D = e^ℓ − w₀ = expm1(ℓ) + q(2 − q),

so for D > 0 (ℓ above the edge log w₀) the threshold is x(ℓ) = σ²·log s with the stable root
s = 2d/(1 + √(1 + 4ad)), d = D/B, a = A/B = q/(2(1 − q))·e^{−3/(2σ²)}, all in logs (no
overflow at small σ).  The tails are then normal tails at x(ℓ) [KJH20, Sec 6], where
``MixturePair`` finds x(ℓ) by Newton steps on L and certifies it with further evaluations of L
and of its error (2-6 times the cost: most of the K = 2 solves of issue 13).  Thresholds
where the sign of D is uncertain (next to the edge) or e^ℓ overflows take the mixture's own
inversion, point by point; below the edge x(ℓ) = −∞.

Error bounds (absolute, on the logs, first order with a 1e-6 relative margin for the rest):
each elementary operation rounds within u of its result; a log of a quantity with relative
error r is off by at most r/(1 − r); an argument error dz moves log Φ by at most (|z| + 1)dz
(``_normal._gauss_tails``).  The weights enter the tails' sum in linear space, as the doubles
(1 − q)², 2q(1 − q), q² (within 3u), around the largest tail, so no log q is rounded into
every point.  References: SMG24 (the pair), KJH20, Hig02 (Sec 2.2, rounding of each
operation).
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.errors import DomainError
from dpcalc.mechanisms._normal import _gauss_tails
from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U

_LOG2, _LOG4 = math.log(2.0), math.log(4.0)
_MARGIN = 1.0 + 1e-6     # relative margin on every first-order bound (second-order terms)
_G_SERIES = 600.0         # log r above which log(1 + √(1 + r)) is taken as (log r)/2
_DX_MAX = 64.0 * _U       # closed-form thresholds certified within this times σ + |x| only
_Q_MIN = 1e-100           # below, q² = w₂ nears the subnormal range: the mixture answers


class K2Side:
    """One direction's side for ``_mixture.EnginePair``: the ``MixturePair``'s loss range,
    support and quadrature nodes, with closed-form tails (module docstring)."""

    def __init__(self, mixture, q: float, sigma: float, direction: str):
        if not (0.0 < q < 1.0 and sigma > 0.0) or direction not in ("remove", "add"):
            raise DomainError("K2Side needs 0 < q < 1, σ > 0 and a direction")
        self.mixture = mixture
        self.q, self.sigma, self.add = float(q), float(sigma), direction == "add"
        s2 = self.sigma * self.sigma
        self.s2 = s2
        h1 = 0.5 / s2                                   # 1/(2σ²), within 2u
        lq, l1mq = math.log(self.q), math.log1p(-self.q)
        lw1 = _LOG2 + lq + l1mq                         # log B·e^{h1} = log 2q(1 − q)
        la = lq - _LOG2 - l1mq - 3.0 * h1               # log a
        # their errors (L = log 2 + |log q| + |log(1 − q)|): the logs within 2u of themselves
        # (faithful rounding), each sum within u of its terms' magnitudes; 3h1 one more product
        big = _LOG2 + abs(lq) + abs(l1mq)
        self.h1, self.lw1, self.la = h1, lw1, la
        self.e_h1 = 2.0 * _U * h1
        self.e_lw1 = 4.0 * _U * big
        self.e_la = 5.0 * _U * big + 18.0 * _U * h1
        self.c = self.q * (2.0 - self.q)                # 1 − w₀, within 2u
        v = 1.0 - self.q
        self.w = (v * v, 2.0 * self.q * v, self.q * self.q)   # within 3u, 2u, u

    def loss_range(self) -> tuple[float, float]:
        return self.mixture.loss_range()

    def support(self, log_eta: float) -> tuple[float, float]:
        return self.mixture.support(log_eta)

    def quadrature_nodes(self, density: float, nmin: int, log_eta_top, lam: float = 0.0):
        return self.mixture.quadrature_nodes(density, nmin, log_eta_top, lam)

    def log_tails_at_loss(self, ell):
        """(log P(L > ℓ), log P(L ≤ ℓ), log Q(L > ℓ), log Q(L ≤ ℓ), err) per threshold, err
        an absolute bound on the error of each log (as ``MixturePair.log_tails_at_loss``)."""
        ell = np.atleast_1d(np.asarray(ell, dtype=float))
        arg = -ell if self.add else ell          # L_add > ℓ ⟺ L_rem(−x) < −ℓ ⟺ x > −x(−ℓ)
        x, dx, ok = self._threshold(arg)
        if self.q < _Q_MIN:
            ok[:] = False   # q² (and D) subnormal: the weights' relative bounds fail (helper-11)
        out = [np.empty(ell.shape) for _ in range(5)]
        if ok.any():
            got = self._tails(x[ok], dx[ok])
            for o, g in zip(out, got, strict=True):
                o[ok] = g
        if not ok.all():
            rest = ~ok
            for o, g in zip(out, self.mixture.log_tails_at_loss(ell[rest]), strict=True):
                o[rest] = g
        return tuple(out)

    def log_tails_estimate(self, ell):
        """log_tails_at_loss for a heuristic (the grid offset's choice next to the edge, where
        most thresholds lie within the cancellation of e^ℓ − w₀ and the certified tails ask
        the mixture's inversion: 9 of its 27 calls in the MNIST K = 2 σ solve, 10,384
        points): the closed form wherever it gives a threshold, with the errors of its
        roundings alone (the threshold's own bound, large there, left out)."""
        ell = np.atleast_1d(np.asarray(ell, dtype=float))
        x, _, ok = self._threshold(-ell if self.add else ell, strict=False)
        if self.q < _Q_MIN or not ok.all():
            return self.log_tails_at_loss(ell)
        return self._tails(x, np.zeros(x.shape))

    def _threshold(self, arg: np.ndarray, strict: bool = True):
        """(x, dx, ok): the remove loss's threshold x(ℓ) within dx where ok (−∞ below the
        edge log w₀); without ``strict`` ok wherever x is a number (heuristics)."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            em1 = np.expm1(arg)
            d = em1 + self.c
            # expm1, the rounding of the given ℓ itself (as subsampled_gaussian), c, the sum
            e_d = _U * (2.0 * np.abs(em1) + np.abs(arg) * (em1 + 1.0) + 2.0 * self.c
                        + np.abs(d))
            ok = np.isfinite(d) & (d > 8.0 * e_d)
            ds = np.where(ok, d, 1.0)
            ld = np.log(ds)
            e_ld = np.where(ok, e_d / ds, 0.0) * (8.0 / 7.0) + 2.0 * _U * np.abs(ld)
            l_d = ld + self.h1 - self.lw1                         # log(D/B)
            e_l_d = e_ld + self.e_h1 + self.e_lw1 + 2.0 * _U * (
                np.abs(ld) + self.h1 + abs(self.lw1))
            lr = _LOG4 + self.la + l_d                            # log(4ad)
            e_lr = self.e_la + e_l_d + 2.0 * _U * (_LOG4 + abs(self.la) + np.abs(l_d))
            small = lr < _G_SERIES
            g = np.where(small, np.log1p(np.sqrt(1.0 + np.exp(np.minimum(lr, _G_SERIES)))),
                         0.5 * lr)
            # dg/d log r ≤ 1/2; the exp, 1 + r, √ and log1p round within 4u + 2u|g|; beyond
            # _G_SERIES, g − (log r)/2 ∈ [0, r^{−1/2} + 1/(2r)] ⊂ [0, 2e^{−300}]
            e_g = 0.5 * e_lr + 4.0 * _U + 2.0 * _U * np.abs(g) + np.where(small, 0.0, 1e-129)
            ls = _LOG2 + l_d - g                                  # log s
            e_ls = e_l_d + e_g + 2.0 * _U * (_LOG2 + np.abs(l_d) + np.abs(g))
            x = self.s2 * ls
            dx = (self.s2 * e_ls + 2.0 * _U * np.abs(x)) * _MARGIN
            # where x(ℓ) is certified no worse than the mixture's inversion does it (within
            # ~u of σ + |x|: the log form's errors, u times logs of size ~10, grow like σ²
            # near the centre and were up to σ times the mixture's bound at σ ≥ 3)
            if strict:
                ok &= np.isfinite(x) & (dx <= _DX_MAX * (self.sigma + np.abs(x)))
            else:
                ok = np.isfinite(x) | (d <= 0.0)
            # certainly below the edge (e^ℓ < w₀): every x has a larger loss, x(ℓ) = −∞
            below = d < -8.0 * e_d if strict else d <= 0.0
        x = np.where(below, -np.inf, x)
        dx = np.where(below, 0.0, dx)
        return x, dx, ok | below

    def _tails(self, x: np.ndarray, dx: np.ndarray):
        sigma = self.sigma
        cs, ps, es = [], [], []
        for j in range(3):
            with np.errstate(invalid="ignore"):
                z = (x - j) / sigma
                dz = (dx + _U * (np.abs(x) + j)) / sigma + 2.0 * _U * np.abs(z)
            c, p, e = _gauss_tails(z, np.where(np.isfinite(dz), dz, 0.0))
            cs.append(c)
            ps.append(p)
            es.append(e)
        mix_c, e_c = _mixture3(self.w, cs, es)
        mix_p, e_p = _mixture3(self.w, ps, es)
        err = np.maximum(np.maximum(e_c, e_p), es[0])
        if self.add:   # P = N(0): x > −x(−ℓ) is N(0)'s lower tail at x(−ℓ); Q the mixture's
            return ps[0], cs[0], mix_p, mix_c, err
        return mix_c, mix_p, cs[0], ps[0], err


def _mixture3(w, logs, errs):
    """(log Σ_j w_j e^{v_j}, a bound on its error) from logs v_j within errs e_j: summed in
    linear space around m = max v_j: per term the difference v_j − m (u·|v_j − m|), exp (2u),
    the weight (3u) and the product (u); two sums (2u); then the log (2u·|log s|) and the sum
    with m (u·|result|)."""
    m = np.maximum(np.maximum(logs[0], logs[1]), logs[2])
    fin = np.isfinite(m)
    ms = np.where(fin, m, 0.0)
    s = np.zeros(m.shape)
    worst = np.zeros(m.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        for wj, v, e in zip(w, logs, errs, strict=True):
            live = np.isfinite(v)
            dv = np.where(live, v - ms, -np.inf)
            s = s + wj * np.exp(dv)
            worst = np.maximum(worst, np.where(live, e + _U * np.abs(dv), 0.0))
        ls = np.log(np.where(fin, s, 1.0))
        out = np.where(fin, ms + ls, m)
        rel = worst + 8.0 * _U
        err = (rel / (1.0 - rel) + 2.0 * _U * np.abs(ls)
               + _U * np.abs(np.where(fin, out, 0.0))) * _MARGIN
    return out, np.where(fin, err, 0.0)
