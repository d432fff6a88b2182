"""Poisson-sampled Gaussian, add/remove neighbours, up to K examples per protected user.

Mechanism. Each step includes every example independently with probability q, sums the
clipped gradients (norm ≤ 1) and adds N(0, σ²I). A user holds up to K examples.

Dominating pairs (two directions; the neighbouring relation is asymmetric, so the remove and
the add direction are composed separately and the larger profile is the answer, as in the
PLD accountant [KJH20; ZDW22, Sec. 5]), with w_j = Binomial(j; K, q):

    remove: P = Σ_j w_j N(j, σ²),  Q = N(0, σ²)       loss log Σ_j w_j e^{(jx − j²/2)/σ²}
    add:    P = N(0, σ²),          Q = Σ_j w_j N(−j, σ²)  (reflected so the loss increases)

Why they dominate. K = 1 is the subsampled Gaussian pair of [ZDW22, Thm 11 / Sec. 5] (the
pair of the existing accountant). For K ≥ 2 the user's j included examples add a vector of
norm ≤ j; collinear unit gradients realise Σ_j w_j N(j·e₁, σ²I) against N(0, σ²I), and the
statement that this collinear configuration is the worst case is the group-privacy
amplification result for the subsampled Gaussian [SMG24] (the MixtureOfGaussians event of
dp_accounting encodes the same pair). It is checked exhaustively here on tiny datasets with
two-dimensional gradients (tests/test_mechanisms_dominance.py). The add direction is the
remove pair with the roles of P and Q exchanged and x ↦ −x.

References: ZDW22 (Def 7, Thm 10), KJH20, SMG24, DRS19.
"""

from __future__ import annotations

import numpy as np

from dpcalc.errors import DomainError
from dpcalc.mechanisms._mixture import MixturePair, log_binomial_weights

DIRECTIONS = ("remove", "add")


def _check(q: float, sigma: float, k: int) -> None:
    if not (0.0 < q <= 1.0):
        raise DomainError(f"q must be in (0, 1], got q={q!r}")
    if not sigma > 0:
        raise DomainError(f"sigma must be > 0, got sigma={sigma!r}")
    if int(k) != k or k < 1:
        raise DomainError(f"examples per user must be an integer >= 1, got {k!r}")


def pair(q: float, sigma: float, direction: str, k: int = 1) -> MixturePair:
    """The dominating pair of one step in ``direction`` ("remove" or "add").

    [ZDW22, Sec. 5] remove: (Σ_j w_j N(j, σ²), N(0, σ²)); add: (N(0, σ²), Σ_j w_j N(−j, σ²)),
    w_j = Binomial(j; K, q) [SMG24].

    References: ZDW22, SMG24.
    """
    _check(q, sigma, k)
    lw, err = log_binomial_weights(int(k), q)
    keep = np.isfinite(lw)
    j = np.arange(int(k) + 1, dtype=float)[keep]
    lw, err = lw[keep], err[keep]
    if direction == "remove":
        return MixturePair(sigma, lw, j, [0.0], [0.0], log_a_err=err,
                           probability_weights=True)
    if direction == "add":
        return MixturePair(sigma, [0.0], [0.0], lw, -j, log_b_err=err,
                           probability_weights=True)
    raise DomainError(f"direction must be one of {DIRECTIONS}, got {direction!r}")


def log_delta(q: float, sigma: float, epsilon: float, k: int = 1) -> float:
    """Upper bound on log δ(ε) of ONE step: the larger of the two directions.

    References: ZDW22 (Thm 10: each direction's pair), KJH20.
    """
    return max(pair(q, sigma, d, k).log_delta(epsilon) for d in DIRECTIONS)


def engine_pair(q: float, sigma: float, k: int = 1):
    """The pair in the engine's interface; K = 1 is the existing ``SubsampledGaussian``.

    References: ZDW22 (Sec. 5), SMG24.
    """
    if int(k) == 1:
        from dpcalc.mechanisms.subsampled_gaussian import SubsampledGaussian

        return SubsampledGaussian(q, sigma)
    from dpcalc.mechanisms._mixture import EnginePair

    sides = {d: pair(q, sigma, d, k) for d in DIRECTIONS}
    if int(k) == 2 and q < 1.0:
        # K = 2: the thresholds in closed form (a quadratic in e^{x/σ²}; _poisson_k2)
        from dpcalc.mechanisms._poisson_k2 import K2Side

        sides = {d: K2Side(side, q, sigma, d) for d, side in sides.items()}
    return EnginePair(("poisson-add-remove", float(q), float(sigma), int(k)), sides,
                      symmetric=q == 1.0)
