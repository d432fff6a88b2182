"""Fixed-size batches: each step draws B of the N examples uniformly without replacement.

Mechanism. Sum of B clipped gradients (norm ≤ 1) + N(0, σ²I); p = B/N.

It is NOT the Poisson replace-one pair at q = B/N. With a fixed batch size the example that
enters the batch displaces another one, so the batch sum moves by up to 2 against the SAME
sampled batch [DRS19, Thm 4.2 (v3: subsampling theorem, sampling without replacement)];
[LRKS24] report ε ≈ 1 under Poisson against ε > 10 without replacement for realistic runs.

Dominating pair (replace-one, K = 1). Let R = (M, N₀) with M = (1 − p)N(0, σ²) + pN(2, σ²),
N₀ = N(0, σ²) (loss L_R increasing, L_R(1) = 0), and A = (N₀, M) its reverse. The pair is
the symmetrisation S = (P*, Q*) on the line, reflected at x = 1:

    x > 1:  P* = M,  Q* = N₀                  (the part of R with L_R > 0)
    x < 1:  P* = N₀ ∘ r, Q* = M ∘ r, r(x) = 2 − x  (the same part, roles exchanged: loss < 0)
    x = 1:  an atom of mass a = 1 − M(x > 1) − N₀(x > 1) = (1 − p)(1 − 2Φc(1/σ)) ≥ 0, loss 0.

Why it dominates. (i) [DRS19, Thm 4.2]: if the mechanism on the batch is f-DP for replace-one
(here f = G_{2/σ}: the batch sum has sensitivity 2), the subsampled one is C_p(f)-DP with
C_p(f) = min{f_p, f_p⁻¹}**, f_p = p f + (1 − p) Id = T(N₀, M) (so f_p⁻¹ = T(M, N₀)).
(ii) The privacy profile of a convex hull of a minimum is the maximum of the profiles (the
profile is 1 + f*(−e^ε), f* the convex conjugate), so C_p(f) has δ(ε) = max(δ_R(ε), δ_A(ε))
for every real ε. (iii) For ε ≥ 0, δ_R(ε) ≥ δ_A(ε): with α = e^ε ≥ 1, G = N(2, σ²),
    H_α(M‖N₀) = p·H_{α'}(G‖N₀), α' = 1 + (α − 1)/p,
    H_α(N₀‖M) = c·H_β(N₀‖G) with c = 1 − α + αp ≤ p, β = αp/c (0 when c ≤ 0),
and β ≥ α' (αp² − (α − 1 + p)c = (α − 1)²(1 − p) ≥ 0), H_β(N₀‖G) = H_β(G‖N₀) (Gaussian
symmetry) is non-increasing in β: H_α(N₀‖M) ≤ H_α(M‖N₀). (iv) S has, for ε ≥ 0, only the part
x > 1 with loss > ε, so δ_S(ε) = δ_R(ε) = max(δ_R, δ_A)(ε); S is symmetric (swapping P*, Q* is
the reflection), and H_α(P‖Q) = 1 − α + α·H_{1/α}(Q‖P) carries the equality to ε < 0. So
T(S) = C_p(G_{2/σ}) exactly: S dominates every step (both orders of every neighbouring pair),
and its T-fold product dominates the T adaptive steps [DRS19, Thm 3.2; ZDW22, Thm 10].

Add/remove (fixed step count). With x' = x ∪ {z}, the example z is in the batch with
probability γ = B/|x'| ≤ B/N for both neighbours of a size-N dataset; otherwise the batch is
a uniform B-subset of x, and when it is there, z replaced a uniform member (coupling as in
[BBG18, Sec. 3]): per batch remainder, ((1 − γ)N(u) + γN(v), N(u)) with |u − v| ≤ 2, i.e.
R (or A) at rate γ, and both grow with γ (convexity in the first argument). So S at p = B/N
dominates add/remove too, PROVIDED the number of steps does not depend on the dataset size
(a loader that runs ⌊N/B⌋ steps per epoch reveals N ± 1 through its step count).

K ≥ 2 examples per user has no established dominating pair here (the hypergeometric
analogue needs the displaced-example coupling for several examples at once): refused.

References: DRS19 (Thm 4.2, Thm 3.2), LRKS24, ZDW22 (Def 7, Thm 10), BBG18, KJH20.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.errors import DomainError
from dpcalc.mechanisms._mixture import MixturePair, log_binomial_weights
from dpcalc.numeric.directed import UNIT_ROUNDOFF

DIRECTIONS = ("replace",)
_EXPM1_MAX = 709.0      # expm1(ℓ) is finite below ~709.78: the closed threshold's range
REFUSE_K = ("fixed-batch sampling with --examples-per-user > 1 has no established dominating "
            "pair (the hypergeometric analogue of the displaced-example argument is not "
            "proven); use --examples-per-user 1 or --sampling poisson")


def _check(p: float, sigma: float) -> None:
    if not (0.0 < p <= 1.0):
        raise DomainError(f"batch fraction B/N must be in (0, 1], got {p!r}")
    if not sigma > 0:
        raise DomainError(f"sigma must be > 0, got sigma={sigma!r}")


class SymmetrisedPair:
    """S = the symmetrisation of R = ((1 − p)N(0) + pN(2), N(0)) (see the module docstring)."""

    def __init__(self, p: float, sigma: float):
        _check(p, sigma)
        self.p = float(p)
        self.sigma = float(sigma)
        # log(1 − p), log p to a few ulps of themselves (relative: the excess form of the
        # loss needs w₀ − 1 = −p accurately at a small p; dpcalc.mechanisms._mixture)
        lw, err = log_binomial_weights(1, p)
        keep = np.isfinite(lw)
        means = np.array([0.0, 2.0])[keep]
        self.remove = MixturePair(sigma, lw[keep], means, [0.0], [0.0],
                                  log_a_err=err[keep], probability_weights=True)   # R

    def loss(self, x) -> np.ndarray:
        """L*(x) = sign(x − 1)·L_R(1 + |x − 1|), increasing and odd about x = 1."""
        x = np.atleast_1d(np.asarray(x, dtype=float))
        r = self.remove.loss(1.0 + np.abs(x - 1.0))
        return np.where(x >= 1.0, r, -r)

    def atom(self) -> float:
        """Mass a = (1 − p)(1 − 2Φc(1/σ)) of the loss-0 atom (the same under P* and Q*)."""
        from dpcalc.numeric.special import log_ndtr
        lc = float(log_ndtr(np.array([-1.0 / self.sigma]))[0])
        return (1.0 - self.p) * -math.expm1(math.log(2.0) + lc)

    def log_tails_at_loss(self, ell):
        """(log P*(L > ℓ), log P*(L ≤ ℓ), log Q*(L > ℓ), log Q*(L ≤ ℓ), err) per threshold.

        ℓ ≥ 0: the R tails; ℓ < 0: P*(L ≤ ℓ) = N₀(L_R ≥ −ℓ), Q*(L ≤ ℓ) = M(L_R ≥ −ℓ); each
        other tail is log(1 − e^t) of its complement, its error scaled by e^t/(1 − e^t).

        References: DRS19 (Thm 4.2), KJH20.
        """
        ell = np.atleast_1d(np.asarray(ell, dtype=float))
        pu, qu, err = self._remove_tails(np.abs(ell))
        pos = ell >= 0
        with np.errstate(divide="ignore", invalid="ignore"):
            def comp(t):
                return np.where(t < -0.6931, np.log1p(-np.exp(t)), np.log(-np.expm1(t)))

            def comp_err(t):
                return err * np.exp(t) / -np.expm1(np.minimum(t, -1e-300)) + 4 * UNIT_ROUNDOFF
            # ℓ ≥ 0: upper tails are R's; ℓ < 0: lower tails are R's upper tails, swapped
            p_up = np.where(pos, pu, comp(qu))
            p_lo = np.where(pos, comp(pu), qu)
            q_up = np.where(pos, qu, comp(pu))
            q_lo = np.where(pos, comp(qu), pu)
            e = np.maximum(err, np.maximum(comp_err(pu), comp_err(qu)))
        return p_up, p_lo, q_up, q_lo, e

    def _remove_tails(self, ell: np.ndarray):
        """(log M(L_R > ℓ), log N₀(L_R > ℓ), an absolute bound on the error of each log).

        R is the Poisson remove pair at rate p and noise σ/2, up to the bijection x = 2y:
        L_R(2y) = log(1 − p + p·e^{(2y − 1)/(2(σ/2)²)}), and X/2 has the laws (1 − p)N(0, σ²/4)
        + pN(1, σ²/4) and N(0, σ²/4).  The privacy loss is invariant under a bijection, so
        the tails are those of ``subsampled_gaussian`` at (p, σ/2) (σ/2 is exact): its closed
        threshold x(ℓ) and two normal tails per point, where the mixture's (bisection or
        Newton on L, then the normal tails of each component) cost 5 times as much: most of
        a batch-size solve (issue 13's fixed-batch rate row).  Its bounds are on the logs
        (``_normal._gauss_tails``), as this method's.  Thresholds where expm1(ℓ)/p overflows
        (ℓ ≳ 709.78 + log p: asked at σ ≲ 0.07, helper-10) are ill-conditioned there and take
        the mixture's own inversion, as does every point of a call the closed form refuses.
        References: DRS19 (Thm 4.2), KJH20 (tails of a monotone loss), ZDW22 (Sec 5)."""
        from dpcalc.mechanisms.subsampled_gaussian import _tails

        closed = ell <= _EXPM1_MAX + math.log(self.p)
        t = _tails(ell[closed], self.p, 0.5 * self.sigma, "remove") if closed.any() else None
        if t is None:
            closed[:] = False
        pu, qu, err = np.empty(ell.shape), np.empty(ell.shape), np.empty(ell.shape)
        if closed.any():
            pu[closed], qu[closed] = t.lPup, t.lQup
            err[closed] = np.maximum(t.ePup, t.eQup)
        if not closed.all():
            rest = ~closed
            pu[rest], _, qu[rest], _, err[rest] = self.remove.log_tails_at_loss(ell[rest])
        return pu, qu, err

    def log_delta(self, epsilon: float) -> float:
        """Upper bound on log δ_S(ε) of one step; for ε ≥ 0 it is R's [DRS19, Thm 4.2].

        References: DRS19, KJH20.
        """
        if epsilon >= 0:
            return self.remove.log_delta(epsilon)
        pu, _, qu, _, err = self.log_tails_at_loss([epsilon])
        a, b, e = float(pu[0]) + float(err[0]), float(qu[0]) + epsilon - float(err[0]), 0.0
        del e
        if b >= a:
            return min(a, 0.0)
        return min(a + math.log1p(-math.exp(b - a)), 0.0)

    def cgf(self, lam: float) -> tuple[float, float, float]:
        """(K(λ), K'(λ), K''(λ)) of L* under P* by quadrature (steers the tilt only).

        References: KJH20.
        """
        from dpcalc.mechanisms._mixture import _lse
        x = np.linspace(1.0, 3.0 + 14.0 * self.sigma * (1.0 + abs(lam)), 4001)
        lr = self.remove.loss(x)
        s2 = self.sigma * self.sigma
        lq = -x * x / (2 * s2)                          # N₀ part (up to a constant)
        lp = lq + lr                                    # M part
        # P* = M on x > 1 (loss lr), N₀ mirrored (loss −lr), atom (loss 0)
        loss = np.concatenate([lr, -lr, [0.0]])
        dx = x[1] - x[0]
        lz = -0.5 * math.log(2 * math.pi * s2) + math.log(dx)
        la = math.log(max(self.atom(), 1e-300))
        lw0 = np.concatenate([lp + lz, lq + lz, [la]])
        lw = lw0 + lam * loss
        k = float(_lse(lw) - _lse(lw0))
        w = np.exp(lw - lw.max())
        w /= w.sum()
        m1 = float((w * loss).sum())
        return k, m1, max(float((w * (loss - m1) ** 2).sum()), 0.0)

    def support(self, log_eta: float) -> tuple[float, float]:
        """Symmetric loss interval outside which each tail of P* carries ≤ η."""
        lo, hi = self.remove.support(log_eta)
        top = max(abs(lo), abs(hi))
        return -top, top

    def loss_range(self) -> tuple[float, float]:
        """The loss is unbounded on both sides (for p > 0)."""
        return -math.inf, math.inf

    def quadrature_nodes(self, density: float, nmin: int, log_eta_top, lam: float = 0.0):
        """Heuristic nodes: the M part (x > 1, loss L_R), the mirrored N₀ part (loss −L_R)
        and the atom (loss 0), with log P*-weights per node."""
        from dpcalc.mechanisms._mixture import _z_tail

        hi = 2.0 + 14.0 * self.sigma + 2.0 * max(lam, 0.0)
        if log_eta_top is not None:
            hi = min(hi, 2.0 + _z_tail(log_eta_top - math.log(2.0)) * self.sigma)
        hi = max(hi, 1.0 + 1e-9)
        n = int(min(100_000, max(nmin // 2 + 1, density * (hi - 1.0) / self.sigma)))
        x = np.linspace(1.0, hi, max(n, 2))
        s2 = self.sigma * self.sigma
        lr = self.remove.loss(x)
        lq = -x * x / (2 * s2) - 0.5 * math.log(2 * math.pi * s2) + math.log(x[1] - x[0])
        loss = np.concatenate([lr, -lr, [0.0]])
        lw0 = np.concatenate([lq + lr, lq, [math.log(max(self.atom(), 1e-300))]])
        return loss, lw0

def pair(batch_size: int, dataset_size: int, sigma: float, k: int = 1) -> SymmetrisedPair:
    """The dominating pair of one fixed-batch step (p = B/N), replace-one or add/remove.

    References: DRS19 (Thm 4.2), LRKS24.

    Raises:
        DomainError (a ValueError): for K ≥ 2 (``REFUSE_K``) or B > N.
    """
    if int(k) != 1:
        raise DomainError(REFUSE_K)
    if not (1 <= batch_size <= dataset_size):
        raise DomainError(f"batch size must be in [1, dataset size], got {batch_size!r}")
    return SymmetrisedPair(batch_size / dataset_size, sigma)


def engine_pair(batch_size: int, dataset_size: int, sigma: float, k: int = 1):
    """The fixed-batch pair in the engine's interface (symmetric: one direction).

    References: DRS19 (Thm 4.2), LRKS24.
    """
    from dpcalc.mechanisms._mixture import EnginePair

    s = pair(batch_size, dataset_size, sigma, k)
    return EnginePair(("fixed-batch", int(batch_size), int(dataset_size), float(sigma)),
                      {"remove": s}, symmetric=True)
