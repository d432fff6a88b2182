"""A pair (P, Q) of one-dimensional Gaussian mixtures with a common noise σ, in closed form.

P = Σ_i a_i N(m_i, σ²), Q = Σ_k b_k N(n_k, σ²) (weights in log space, means in units of the
clipping norm, σ the noise multiplier). Every dominating pair of ``dpcalc.mechanisms`` is such
a pair or is built from one. The pairs used there have a privacy loss that is increasing in x
(monotone likelihood ratio), so {L > ℓ} = {X > x(ℓ)} and each tail is a sum of normal tails.

    L(x) = log Σ_i a_i e^{(m_i x − m_i²/2)/σ²} − log Σ_k b_k e^{(n_k x − n_k²/2)/σ²}
    (the common factor e^{−x²/(2σ²)} of both densities cancels exactly)
    P(X > x) = Σ_i a_i Φc((x − m_i)/σ),  Q(X > x) = Σ_k b_k Φc((x − n_k)/σ)

Error bounds (returned with every tail, as absolute errors of the logs): ``log_ndtr`` is
within 16 eps·max(1, |log Φ|) [numeric.special]; an error dz in the argument moves log Φ by at
most (|z| + 1)·dz (Mills-ratio bound, as in [GLW21] style certified tails); a sum of positive
terms keeps the largest relative error of its terms (+ a few eps of rounding).

References: KJH20 (PLD of a pair), ZDW22 (dominating pairs, Def 7 and Thm 10).
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.errors import DomainError
from dpcalc.numeric.blocks import blockwise
from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U  # noqa: E402
from dpcalc.numeric.special import LOG_NDTR_ERR, log_ndtr


def _lse(a: np.ndarray, axis: int = 0) -> np.ndarray:
    """log Σ e^a along ``axis`` (−inf where every term is −inf)."""
    m = np.max(a, axis=axis)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.sum(np.exp(a - np.expand_dims(safe, axis)), axis=axis))


class MixturePair:
    """P = Σ a_i N(m_i, σ²) against Q = Σ b_k N(n_k, σ²), loss increasing in x."""

    def __init__(self, sigma: float, log_a, means_p, log_b, means_q, log_a_err=None,
                 log_b_err=None, probability_weights: bool = False):
        self.sigma = float(sigma)
        self.log_a = np.asarray(log_a, dtype=float)
        self.mp = np.asarray(means_p, dtype=float)
        self.log_b = np.asarray(log_b, dtype=float)
        self.mq = np.asarray(means_q, dtype=float)
        # bounds on |log w_computed − log w_exact| (default: weights from one log or log1p)
        self.err_a = _weight_err(self.log_a, log_a_err)
        self.err_b = _weight_err(self.log_b, log_b_err)
        # the caller's word that both sides' exact weights sum to 1 (every pair built by the
        # mechanisms: binomial weights, or one component of weight 1): _near_numerator
        self.probability_weights = bool(probability_weights)
        if not self.sigma > 0:
            raise DomainError(f"sigma must be > 0, got {sigma!r}")
        self._excess = _excess_terms(self)
        self._rows = self.mp.size + self.mq.size   # (components × points) arrays: blockwise

    # ---- densities and loss ------------------------------------------------------------

    @blockwise(1)
    def _log_dens(self, x, log_w, means):
        """log of the density times √(2π)σ·e^{x²/(2σ²)}: log Σ w e^{(m x − m²/2)/σ²}."""
        s2 = self.sigma * self.sigma
        terms = log_w[:, None] + (means[:, None] * x[None, :] - 0.5 * means[:, None] ** 2) / s2
        return _lse(terms, axis=0)

    @blockwise(1)
    def loss(self, x) -> np.ndarray:
        """Privacy loss L(x) = log dP/dQ (x), increasing in x. References: KJH20."""
        ratio = None if self._excess is not None else self._ratio_loss(x)
        return self._pick(x, ratio, False)[0]

    @blockwise(1)
    def loss_error(self, x) -> np.ndarray:
        """Bound on |L_computed(x) − L(x)| from rounding (of ``loss``, point by point)."""
        return self._pick(x, self._ratio_loss(x), True)[1]

    def _ratio_loss(self, x: np.ndarray) -> np.ndarray:
        return self._log_dens(x, self.log_a, self.mp) - self._log_dens(x, self.log_b, self.mq)

    def _pick(self, x: np.ndarray, ratio, with_error: bool):
        """(L(x), error bound or None): the excess form where it is finite, else the ratio.

        Ratio form: log Σ a e^{t} − log Σ b e^{t}, within 16u of the exponents' scale
        (absolute).  Excess form (where P and Q share their bulk, the subsampled pairs at a
        small rate): L = log1p(Σ_μ c_μ e^{t_μ} / Σ_μ b_μ e^{t_μ}), c_μ = a_μ − b_μ from
        ``_excess_terms``; its error is relative to the excess, so near L = 0 it stays a
        few ulps of q where the ratio form's 16u·scale left x(ℓ) uncertain by 1e-6 at
        q = 1e-8 (and the bracket of a run 10-100× wide).  The excess value's error is the
        smaller of its own bound and the ratio's bound plus their difference."""
        s2 = self.sigma * self.sigma
        if with_error:
            big = np.max(np.abs(np.concatenate([self.mp, self.mq]))) + 1.0
            scale = (big * np.abs(x) + big * big) / s2 + np.max(np.abs(np.concatenate(
                [self.log_a[np.isfinite(self.log_a)],
                 self.log_b[np.isfinite(self.log_b)]]))) + 1.0
            err = 16.0 * _U * scale
        if self._excess is None:
            return ratio, (err if with_error else None)
        ex, ok, ex_err = _excess_loss(self._excess, x, s2, with_error)
        if ratio is None and not ok.all():
            ratio = self._ratio_loss(x)
        value = ex if ratio is None else np.where(ok, ex, ratio)
        if not with_error:
            return value, None
        with np.errstate(invalid="ignore"):
            ex_err = np.minimum(ex_err, err + np.abs(ex - ratio) * (1.0 + 2.0 * _U))
        return value, np.where(ok, ex_err, err)

    @blockwise(1)
    def slope(self, x) -> np.ndarray:
        """L'(x) = (E_P-posterior mean − E_Q-posterior mean)/σ² ≥ 0 (monotone likelihood)."""
        s2 = self.sigma * self.sigma

        def post_mean(log_w, means):
            t = log_w[:, None] + (means[:, None] * x[None, :] - 0.5 * means[:, None] ** 2) / s2
            w = np.exp(t - t.max(axis=0))
            return (w * means[:, None]).sum(axis=0) / w.sum(axis=0)

        return (post_mean(self.log_a, self.mp) - post_mean(self.log_b, self.mq)) / s2

    def loss_range(self) -> tuple[float, float]:
        """(inf L, sup L) over the real line: finite ends are hard edges of the loss."""
        # L(−∞): dominated by the smallest means; finite iff both smallest means coincide
        a_min, b_min = self.mp.min(), self.mq.min()
        a_max, b_max = self.mp.max(), self.mq.max()
        if a_min == b_min:
            lo = float(_lse(self.log_a[self.mp == a_min]) - _lse(self.log_b[self.mq == b_min]))
        else:
            lo = -math.inf if a_min > b_min else math.inf
        if a_max == b_max:
            hi = float(_lse(self.log_a[self.mp == a_max]) - _lse(self.log_b[self.mq == b_max]))
        else:
            hi = math.inf if a_max > b_max else -math.inf
        return lo, hi

    # ---- thresholds ----------------------------------------------------------------------

    def x_of_loss(self, ell) -> tuple[np.ndarray, np.ndarray]:
        """Threshold x(ℓ) with L(x) = ℓ, and a bound dx on its error (±inf outside the range).

        Bisection on the monotone L (60 halvings after a bracket), then
        dx = (bisection width) + (error of L)/L'(x) + a few ulps of x.
        """
        ell = np.atleast_1d(np.asarray(ell, dtype=float))
        lo_l, hi_l = self.loss_range()
        x = np.full(ell.shape, np.nan)
        dx = np.zeros(ell.shape)
        below = ell <= lo_l
        above = ell >= hi_l
        x[below] = -np.inf
        x[above] = np.inf
        todo = ~(below | above)
        if not todo.any():
            return x, dx
        e = ell[todo]
        span = 1.0 + float(np.max(np.abs(np.concatenate([self.mp, self.mq]))))
        s2 = self.sigma * self.sigma
        # L is within O(1) of a linear function of slope ≤ 2·span/σ² far out: bracket widely
        r = span + s2 * (np.abs(e) + 50.0) / max(1e-300, 1.0)
        a = -r.copy()
        b = r.copy()
        # a table of L on 257 points brackets most thresholds in one cell (Newton from the
        # midpoint of [−r, r] took ~50 mostly halving steps); the rest widen as before
        table = np.linspace(-float(r.max()), float(r.max()), 257)
        lt = self.loss(table)
        i = np.searchsorted(np.maximum.accumulate(lt), e, side="left")
        j = np.minimum(i, len(table) - 1)
        # (strict at both ends, as the widening below wants it: a cell ending at L = ℓ = 0,
        # x = 0, would be widened by doubling 0)
        cell = (i >= 1) & (i < len(table)) & (lt[j] > e) & (lt[np.maximum(i - 1, 0)] < e)
        a = np.where(cell, table[np.maximum(i - 1, 0)], a)
        b = np.where(cell, table[j], b)
        # Newton starts from the chord of its cell (the midpoint elsewhere)
        la_t, lb_t = lt[np.maximum(i - 1, 0)], lt[j]
        with np.errstate(divide="ignore", invalid="ignore"):
            chord = a + (e - la_t) * (b - a) / (lb_t - la_t)
        start = np.where(cell & (chord > a) & (chord <= b), chord, np.nan)
        # a table cell already has L(a) < ℓ < L(b), with the values the loss gives at a and
        # b (it is computed point by point: the same double in, the same double out)
        la, lb = np.where(cell, la_t, np.nan), np.where(cell, lb_t, np.nan)
        out = np.flatnonzero(~cell)
        for _ in range(200):  # widen until L(a) < ℓ < L(b)
            if not len(out):
                break
            la[out], lb[out] = self.loss(a[out]), self.loss(b[out])
            bad_a, bad_b = la[out] >= e[out], lb[out] <= e[out]
            if not (bad_a.any() or bad_b.any()):
                break
            # (from ±r at least: a table end may be 0 or of either sign, and its loss
            # recomputed here may land on the other side of ℓ by an ulp)
            a[out] = np.where(bad_a, np.minimum(2.0 * a[out], -r[out]), a[out])
            b[out] = np.where(bad_b, np.maximum(2.0 * b[out], r[out]), b[out])
        # safeguarded Newton inside the bracket [a, b] (kept: L(a) < ℓ ≤ L(b) as computed),
        # then the bracket is shrunk around the Newton point and checked
        x0 = np.where(np.isnan(start), 0.5 * (a + b), start)
        fa, fb = la - e, lb - e          # L − ℓ at the bracket's ends (fa < 0 ≤ fb)
        act = np.arange(len(e))          # the points still moving (the others are kept)
        for _ in range(60):
            xa, ea = x0[act], e[act]
            f = self.loss(xa) - ea
            left = f < 0
            aa = np.where(left, xa, a[act])
            bb = np.where(left, b[act], xa)
            fa_a = np.where(left, f, fa[act])
            fb_a = np.where(left, fb[act], f)
            a[act], b[act], fa[act], fb[act] = aa, bb, fa_a, fb_a
            nxt = xa - f / np.maximum(self.slope(xa), 1e-300)
            # a Newton point outside the bracket takes the chord of its ends, kept inside
            # them: where the root lies within rounding of the bracket's left end (an
            # earlier iterate's), Newton fell past that end by a hair at every step and
            # halving crept up on it (20-odd loss evaluations of 308 points of a K = 2 grid,
            # MNIST σ 1.5); the end itself is then the next point, and Newton stops there
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                chord = aa + (bb - aa) * (-fa_a / (fb_a - fa_a))
            chord = np.where(np.isfinite(chord), np.clip(chord, aa, bb), 0.5 * (aa + bb))
            # (b itself may be the root: a Newton point landing on it is kept, not halved)
            nxt = np.where((nxt > aa) & (nxt <= bb), nxt, chord)
            x0[act] = nxt
            act = act[np.abs(nxt - xa) > 1e-12 * (np.abs(xa) + 1.0)]
            if not len(act):
                break
        for rel in (32.0 * _U, 4e-13):   # the tightest certified bracket around x0
            t = rel * (np.abs(x0) + 1.0)
            # (only where the bracket is wider: a point the first round certified has
            # b − a ≤ 64u(|x0| + 1), and the second round would leave it as it is)
            k = np.flatnonzero(b - a > 2.0 * t)
            if not len(k):
                continue
            xk, tk = x0[k], t[k]
            ok = (self.loss(xk - tk) < e[k]) & (self.loss(xk + tk) >= e[k])
            a[k] = np.where(ok, np.maximum(a[k], xk - tk), a[k])
            b[k] = np.where(ok, np.minimum(b[k], xk + tk), b[k])
        act = np.flatnonzero(b - a > 1e-12 * (np.abs(a) + np.abs(b) + 1.0))
        for _ in range(200):  # bisection where the Newton point did not certify
            if not len(act):
                break
            mid = 0.5 * (a[act] + b[act])
            go = self.loss(mid) < e[act]
            a[act] = np.where(go, mid, a[act])
            b[act] = np.where(go, b[act], mid)
            act = act[b[act] - a[act] > 1e-12 * (np.abs(a[act]) + np.abs(b[act]) + 1.0)]
        xm = 0.5 * (a + b)
        # the error and slope over the bracket's ends and middle: the loss's error bound can
        # change abruptly with x (where loss switches between its two forms), and an ℓ
        # certified at ends whose error the middle did not show was 0.2 off (helper-50)
        err = np.maximum(np.maximum(self.loss_error(a), self.loss_error(b)),
                         self.loss_error(xm))
        slope = np.maximum(np.minimum(np.minimum(self.slope(a), self.slope(b)),
                                      self.slope(xm)), 1e-300)
        x[todo] = xm
        dx[todo] = (b - a) + 2.0 * err / slope + 4.0 * _U * (np.abs(xm) + 1)
        return x, dx

    # ---- tails -----------------------------------------------------------------------------

    @blockwise(2)
    def _log_tails(self, x, dx, log_w, means, w_err):
        """(log M(X > x), log M(X ≤ x), error bound) for one mixture M at thresholds x."""
        with np.errstate(invalid="ignore"):
            z = (x[None, :] - means[:, None]) / self.sigma  # shape (components, points)
        fin = np.isfinite(z)
        zf = np.where(fin, z, 0.0)
        lup = np.where(fin, log_ndtr(-zf), np.where(z > 0, -np.inf, 0.0))
        llo = np.where(fin, log_ndtr(zf), np.where(z > 0, 0.0, -np.inf))
        dz = (dx[None, :] + 4.0 * _U * (np.abs(x[None, :]) + np.abs(means[:, None]))) \
            / self.sigma + 2.0 * _U * np.abs(zf)
        arg = (np.abs(zf) + 1.0) * np.where(fin, dz, 0.0)
        e_up = LOG_NDTR_ERR * np.maximum(1.0, np.abs(np.where(fin, lup, 0.0))) + arg
        e_lo = LOG_NDTR_ERR * np.maximum(1.0, np.abs(np.where(fin, llo, 0.0))) + arg
        up = _lse(log_w[:, None] + lup, axis=0)
        lo = _lse(log_w[:, None] + llo, axis=0)
        # the computed log weights are within w_err of the exact ones: each term's log moves
        # by as much
        err = np.maximum(e_up.max(axis=0), e_lo.max(axis=0)) + float(np.max(w_err)) \
            + 8.0 * _U * (1.0 + np.log(len(means)))
        return up, lo, err

    def log_tails_at_loss(self, ell):
        """Tails of the PLD at loss thresholds ℓ: (log P(L > ℓ), log P(L ≤ ℓ), log Q(L > ℓ),
        log Q(L ≤ ℓ), err), err an absolute bound on the error of each log (per point).

        References: KJH20 (δ(ε) = P(L > ε) − e^ε Q(L > ε) for a continuous loss).
        """
        x, dx = self.x_of_loss(ell)
        pu, pl, ep = self._log_tails(x, dx, self.log_a, self.mp, self.err_a)
        qu, ql, eq = self._log_tails(x, dx, self.log_b, self.mq, self.err_b)
        return pu, pl, qu, ql, np.maximum(ep, eq)

    def log_delta(self, epsilon: float) -> float:
        """Upper bound on log H_{e^ε}(P‖Q) = log(P(L > ε) − e^ε Q(L > ε)) (one step).

        References: KJH20; ZDW22 (hockey-stick divergence of a pair).
        """
        pu, _, qu, _, err = self.log_tails_at_loss([epsilon])
        a, b, e = float(pu[0]), float(qu[0]) + epsilon, float(err[0])
        if a == -math.inf:
            return -math.inf
        # pessimistic: raise the P tail, lower the e^ε Q tail by their error bounds
        a_up, b_dn = a + e, b - e
        if b_dn >= a_up:
            return min(a_up, 0.0)  # δ ≤ P(L > ε): the cancellation is beyond the error bound
        return min(a_up + math.log1p(-math.exp(b_dn - a_up)), 0.0)

    # ---- moment generating function (for the tilt: a heuristic, any choice is sound) -----

    def cgf(self, lam: float) -> tuple[float, float, float]:
        """(K(λ), K'(λ), K''(λ)) of L under P by quadrature on an x grid.

        E_P[e^{λL}] = ∫ p(x)^{1+λ} q(x)^{−λ} dx. Only steers the tilt and the grid (any choice
        is sound), so plain quadrature suffices. References: KJH20.
        """
        span = float(np.max(np.abs(np.concatenate([self.mp, self.mq]))))
        lo = -span - 14.0 * self.sigma - abs(lam) * span
        hi = span + 14.0 * self.sigma + abs(lam) * span
        x = np.linspace(lo, hi, 4001)
        s2 = self.sigma * self.sigma
        lp = self._log_dens(x, self.log_a, self.mp) - x * x / (2 * s2)
        loss = self.loss(x)
        lw = lp + lam * loss
        k = float(_lse(lw) - _lse(lp))
        w = np.exp(lw - lw.max())
        w /= w.sum()
        m1 = float((w * loss).sum())
        m2 = float((w * (loss - m1) ** 2).sum())
        return k, m1, max(m2, 0.0)

    def support(self, log_eta: float) -> tuple[float, float]:
        """Loss interval outside which each of P's two tails carries P-mass ≤ η."""
        z = _z_tail(log_eta)
        x_lo = float(self.mp.min()) - z * self.sigma
        x_hi = float(self.mp.max()) + z * self.sigma
        return float(self.loss(x_lo)[0]), float(self.loss(x_hi)[0])


def _weight_err(log_w: np.ndarray, given) -> np.ndarray:
    if given is not None:
        return np.asarray(given, dtype=float)
    if log_w.shape == (1,) and log_w[0] == 0.0:
        return np.zeros(1)      # a one-component mixture: its weight is exactly 1
    return 8.0 * _U * (np.abs(np.where(np.isfinite(log_w), log_w, 0.0)) + 1.0)


def _excess_terms(pair: MixturePair):
    """(means μ, c_μ = a_μ − b_μ, absolute error of c_μ, b_μ, relative error of b_μ) over the
    union of the two sides' means; None where a side repeats a mean.

    A mean on both sides: c = b·expm1(log a − log b), whose error follows from the log
    weights' (a relative-error log1p weight keeps c = −q accurate at q = 1e-12; equal log
    weights give c = 0 exactly).  References: Hig02 (Sec. 1.14: expm1, log1p)."""
    mp, mq = pair.mp, pair.mq
    fa, fb = np.isfinite(pair.log_a), np.isfinite(pair.log_b)
    mp, mq = mp[fa], mq[fb]
    la, lb, ea, eb = pair.log_a[fa], pair.log_b[fb], pair.err_a[fa], pair.err_b[fb]
    if len(set(mp.tolist())) < len(mp) or len(set(mq.tolist())) < len(mq):
        return None
    means = sorted(set(mp.tolist()) | set(mq.tolist()))
    c, kappa, b, beta = [], [], [], []
    for mu in means:
        ia, ib = np.flatnonzero(mp == mu), np.flatnonzero(mq == mu)
        if len(ib):
            wb, web = math.exp(float(lb[ib[0]])), float(eb[ib[0]])
            b.append(wb)
            beta.append(math.expm1(web) + 4.0 * _U)
        else:
            b.append(0.0)
            beta.append(0.0)
        if len(ia) and len(ib):
            d = float(la[ia[0]] - lb[ib[0]])
            spread = float(ea[ia[0]] + eb[ib[0]]) + _U * abs(d)   # (+ the subtraction's)
            e = math.expm1(d)
            cv = wb * e
            # |ĉ − c| ≤ b·(e^{d+Δ}·expm1(Δ) + u|ê|) + β·b·|ê| + u|ĉ|, b ≤ b̂/(1 − β)
            err = (wb / (1.0 - beta[-1])) * (math.exp(d + spread) * math.expm1(spread)
                                             * (1.0 + 4.0 * _U) + (beta[-1] + 2.0 * _U)
                                             * abs(e)) + 2.0 * _U * abs(cv)
        elif len(ia):
            cv = math.exp(float(la[ia[0]]))
            err = abs(cv) * (math.expm1(float(ea[ia[0]])) + 4.0 * _U)
        else:
            cv = -wb
            err = abs(cv) * (beta[-1])
        c.append(cv)
        kappa.append(err)
    # both sides probability mixtures, so that Σ c_μ = 0 exactly (_near_numerator): the
    # constructor's word (probability_weights), checked loosely besides
    mixtures = pair.probability_weights and all(
        abs(math.fsum(np.exp(w).tolist()) - 1.0) <= 1e-9 for w in (la, lb))
    return (np.array(means), np.array(c), np.array(kappa), np.array(b), np.array(beta),
            mixtures)


def _excess_loss(terms, x: np.ndarray, s2: float, with_error: bool = True):
    """(L(x), where it is finite, error bound or None): L = log1p(N/D),
    N = Σ c_μ e^{t_μ − M}, D = Σ b_μ e^{t_μ − M}, t_μ = (μx − μ²/2)/σ², M the largest t
    (common to N and D: the ratio is exact in it).  The bound is +inf where D is not
    certainly positive or 1 + N/D not certainly above 0.

    Each t within τ = 4u(|μx| + μ²/2)/σ² + 4u|t| (a product, a square, a difference, a
    division), each e^{t − M} within ρ = expm1(τ + u|t − M|)(1 + 2u) + 2u (relative; an
    underflow within 1e-300 absolute), each sum within 2nu of its terms' magnitudes."""
    means, c, kappa, b, beta, mixtures = terms
    n = len(means)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        mx = means[:, None] * x[None, :]
        t = (mx - 0.5 * means[:, None] ** 2) / s2
        near = num_near = err_near = None
        if mixtures:
            near, num_near, err_near = _near_numerator(terms, mx, t, s2, with_error)
        m = np.max(t, axis=0)
        m = np.where(np.isfinite(m), m, 0.0)
        u = t - m[None, :]
        e = np.exp(u)
        # row by row (a BLAS product's rounding depends on a point's position in the array)
        cn = c[:, None] * e
        num, den = cn.sum(axis=0), (b[:, None] * e).sum(axis=0)
        if num_near is not None:
            num[near] = num_near
        r = num / den
        loss = np.log1p(r)
        # only where it is well conditioned: log1p at r > −1/2 (at r → −1, deep negative
        # losses or 1 + c₀ = (1 − q)^K cancelling near the lower edge, it lost every digit),
        # and D far from subnormal (helper-50)
        ok = (den > 1e-290) & (r > -0.5) & np.isfinite(loss)
        if not with_error:
            return loss, ok, None
        tau = 4.0 * _U * (np.abs(mx) + 0.5 * means[:, None] ** 2) / s2 + 4.0 * _U * np.abs(t)
        rho = np.expm1(tau + _U * np.abs(u)) * (1.0 + 2.0 * _U) + 2.0 * _U
        err_num = ((kappa[:, None] + np.abs(c[:, None]) * rho) * e / (1.0 - rho)).sum(axis=0) \
            + 2.0 * n * _U * np.abs(cn).sum(axis=0) + n * 1e-300
        if num_near is not None:
            err_num[near] = err_near
        err_den = ((b[:, None] * e) * (beta[:, None] + rho) / (1.0 - beta[:, None] - rho)
                   ).sum(axis=0) + 2.0 * n * _U * den + n * 1e-300
        low_den = den - err_den
        err_r = (err_num + np.abs(r) * err_den) / low_den + _U * np.abs(r)
        low = 1.0 + r - err_r
        err = err_r / low * (1.0 + 4.0 * _U) + 2.0 * _U * np.abs(loss)
        bad = ~(ok & (low_den > 0) & (low > 0) & np.isfinite(err))
    return loss, ok, np.where(bad, np.inf, err)


def _near_numerator(terms, mx: np.ndarray, t: np.ndarray, s2: float,
                    with_error: bool = True):
    """(columns, N, its error bound) of the excess numerator N = Σ_μ c_μ e^{t_μ − M} at the
    points where every |t_μ| ≤ _NEAR_T, as e^{−M}·Σ_μ c_μ·expm1(t_μ): both sides are
    probability mixtures (Σ a = Σ b = 1), so Σ_μ c_μ = 0 for the exact weights, and the
    errors κ_μ of the computed c_μ enter times |expm1(t_μ)| instead of e^{t_μ − M} ≈ 1.  At
    a large σ (t ~ x/σ²) the plain sum's bound was κ ~ u·q against N ~ q·x/σ²: 2.6e-15 for
    losses of 1e-6 at σ 1e6, and a run of 10⁴ steps answered ε 0.37 where σ 1e5 gave 0.006
    (helper-52).  Each expm1(t) within e^{|t|+τ}τ + 2u|expm1(t)| (τ as in _excess_loss),
    e^{−M} within 2u (relative), each sum within 2nu of its terms' magnitudes."""
    means, c, kappa = terms[:3]
    n = len(means)
    with np.errstate(over="ignore", invalid="ignore"):
        near = np.flatnonzero(np.all(np.abs(t) <= _NEAR_T, axis=0))
        if near.size == 0:
            return near, None, None
        t, mx = t[:, near], mx[:, near]
        m = np.max(t, axis=0)
        em = np.exp(-m)
        w = np.expm1(t)
        cw = c[:, None] * w
        num = cw.sum(axis=0) * em
        if not with_error:
            return near, num, None
        tau = 4.0 * _U * (np.abs(mx) + 0.5 * means[:, None] ** 2) / s2 + 4.0 * _U * np.abs(t)
        err_w = np.exp(np.abs(t) + tau) * tau * (1.0 + 4.0 * _U) + 2.0 * _U * np.abs(w)
        err = (em * (1.0 + 2.0 * _U) * ((kappa[:, None] * (np.abs(w) + err_w)
                                         + np.abs(c[:, None]) * err_w).sum(axis=0)
                                        + 2.0 * n * _U * np.abs(cw).sum(axis=0))
               + 2.0 * _U * np.abs(num) + n * 1e-300)
    return near, num, err


_NEAR_T = 0.5   # the expm1 form of the excess numerator where every |t_μ| is at most this


def _z_tail(log_eta: float) -> float:
    """z ≥ 0 with Φc(z) ≤ η (a slightly large z is fine: only sizes a grid)."""
    if log_eta >= math.log(0.5):
        return 0.0
    z = math.sqrt(-2.0 * log_eta)
    while float(log_ndtr(np.array([-z]))[0]) > log_eta:
        z *= 1.01
    return z


def log_binomial_weights(k: int, q: float) -> tuple[np.ndarray, np.ndarray]:
    """log Binomial(j; K, q) for j = 0..K and a bound on each value's absolute error.

    log C(K, j) from the exact integer (math.comb; math.log of an int is within an ulp or
    two; log 1 = 0 exactly), j·log q and (K − j)·log1p(−q) within a few ulps of their
    magnitudes; the sum of three terms adds 2 roundings: 8u·(sum of magnitudes) bounds it
    all.  Relative, not absolute: w_0 = (1 − q)^K keeps log w_0 = K·log1p(−q) to a few ulps
    of itself, which the excess form of the loss needs (c_0 = w_0 − 1 ≈ −Kq).

    References: Loa00 (binomial probabilities).
    """
    j = np.arange(k + 1, dtype=float)
    log_choose = np.array([math.log(math.comb(k, i)) for i in range(k + 1)])
    l1q = math.log1p(-q) if q < 1 else -math.inf
    with np.errstate(invalid="ignore"):
        t1 = j * math.log(q)
        t2 = np.where(k - j > 0, (k - j) * l1q, 0.0)
        lw = log_choose + t1 + t2
        err = 8.0 * _U * (np.abs(log_choose) + np.abs(t1) + np.abs(np.where(
            np.isfinite(t2), t2, 0.0)))
    return lw, err


# --------------------------------------------------------------------------------------
# the engine's DominatingPair interface (dpcalc.pld.pair) over one side per direction
# --------------------------------------------------------------------------------------

class EnginePair:
    """Adapts one-direction pairs (``MixturePair`` or alike) to ``dpcalc.pld.pair``.

    ``sides`` maps "remove" (and "add" unless ``symmetric``) to an object with
    ``log_tails_at_loss``, ``loss_range``, ``support`` and ``quadrature_nodes``.
    Relative tail errors are e = expm1(err)·(1 + 2⁻⁴⁰) from the absolute log errors err.
    Thresholds within 1e-12 (relative) of a finite hard edge are ill-conditioned (None).
    References: ZDW22 (Def 7), KJH20.
    """

    def __init__(self, key, sides: dict, symmetric: bool):
        self._key, self._sides, self.symmetric = key, sides, bool(symmetric)

    def __repr__(self) -> str:
        return f"EnginePair{self._key!r}"

    def _side(self, direction: str):
        if direction not in ("remove", "add"):
            raise DomainError(f"direction must be 'remove' or 'add', got {direction!r}")
        return self._sides["remove"] if self.symmetric else self._sides[direction]

    def key(self):
        return self._key

    def tails(self, ell, direction: str, estimate: bool = False):
        from dpcalc.pld.pair import Tails

        side = self._side(direction)
        ell = np.atleast_1d(np.asarray(ell, dtype=float))
        for edge in side.loss_range():
            if math.isfinite(edge) and np.any(np.abs(ell - edge) <= 1e-12 * (1.0 + abs(edge))):
                return None
        read = getattr(side, "log_tails_estimate", None) if estimate else None
        pu, pl, qu, ql, err = (read or side.log_tails_at_loss)(ell)
        with np.errstate(over="ignore"):
            e = np.expm1(err) * (1.0 + 2.0 ** -40)
        if not np.all(np.isfinite(e)):
            return None

        def rel(v):
            return np.where(np.isneginf(v), 0.0, e)

        return Tails(pu, pl, qu, ql, rel(pu), rel(pl), rel(qu), rel(ql))

    def tails_estimate(self, ell, direction: str):
        """``tails`` for a heuristic (dpcalc.pld.pair): the side's estimate if any (K2Side)."""
        return self.tails(ell, direction, estimate=True)

    def loss_bounds(self, direction: str) -> tuple[float, float]:
        lo, hi = self._side(direction).loss_range()
        # outward by a few ulps: the edges are computed from log weights in floats
        lo = lo - 8.0 * _U * (1.0 + abs(lo)) if math.isfinite(lo) else lo
        hi = hi + 8.0 * _U * (1.0 + abs(hi)) if math.isfinite(hi) else hi
        return lo, hi

    def support(self, direction: str, log_eta: float) -> tuple[float, float]:
        return self._side(direction).support(log_eta)

    def quadrature(self, direction: str, lam: float, density: float, nmin: int,
                   log_eta_top: float | None):
        loss, lw0 = self._side(direction).quadrature_nodes(density, nmin, log_eta_top, lam)
        return loss, lw0, lw0 + lam * loss


def _mixture_nodes(pair: MixturePair, density: float, nmin: int, log_eta_top, lam: float):
    """Nodes x on [min mean − 14σ, max mean + 14σ (+ tilt room)], cut where P's upper tail
    is below e^{log_eta_top}; loss L(x) and log P-density (heuristic weights)."""
    lo = float(pair.mp.min()) - 14.0 * pair.sigma
    hi = float(pair.mp.max()) + 14.0 * pair.sigma + max(lam, 0.0) * float(
        np.max(np.abs(pair.mp)))
    if log_eta_top is not None:
        hi = min(hi, float(pair.mp.max()) + _z_tail(log_eta_top - math.log(len(pair.mp)))
                 * pair.sigma)
    n = int(min(200_000, max(nmin, density * (hi - lo) / pair.sigma)))
    x = np.linspace(lo, hi, max(n, 2))
    s2 = pair.sigma * pair.sigma
    lp = pair._log_dens(x, pair.log_a, pair.mp) - x * x / (2.0 * s2)
    return pair.loss(x), lp


MixturePair.quadrature_nodes = lambda self, density, nmin, log_eta_top, lam=0.0: \
    _mixture_nodes(self, density, nmin, log_eta_top, lam)
