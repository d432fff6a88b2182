"""Poisson-sampled Gaussian, replace-one neighbours, up to K examples per protected user.

Mechanism. As in ``poisson_add_remove``; the neighbour replaces one user's examples (up to
K) by another user's (up to K). Clipped gradients have norm ≤ 1, so one replaced example
moves the batch sum by up to 2 (not 1: dp_accounting's RDP path reuses the add/remove noise
multiplier here, its issue #378; this module does not).

Dominating pair (symmetric, one direction suffices), w_j = Binomial(j; K, q):

    P = Σ_j w_j N(+j, σ²),  Q = Σ_j w_j N(−j, σ²)
    K = 1: P = (1 − q)N(0, σ²) + qN(1, σ²), Q = (1 − q)N(0, σ²) + qN(−1, σ²)
    loss L(x) = log Σ_j w_j e^{(jx − j²/2)/σ²} − log Σ_j w_j e^{(−jx − j²/2)/σ²}, odd in x.

Why it dominates (K = 1). With x = C ∪ {z}, x' = C ∪ {z'} and the same coins for C and for
the replaced slot, the output is S + b·g(z) + N(0, σ²I) against S + b·g(z') + N(0, σ²I),
b ~ Bernoulli(q), S the sum over the sampled part of C. By joint convexity of the
hockey-stick divergence the mixture over S is at most the worst S, and shifting by S
changes nothing; the remaining pair (1 − q)N(0) + qN(v) against (1 − q)N(0) + qN(w) with
|v|, |w| ≤ 1 is worst at v = −w = e₁: the replace-one pair of the Poisson-subsampled
Gaussian [ZDW22, Sec. 5; SMG24]. At q = 1 it is the Gaussian with sensitivity 2. For K ≥ 2
the coins of the i-th example of both users are coupled the same way and the collinear
antipodal configuration is the worst [SMG24]. Both are also checked exhaustively on tiny
datasets with two-dimensional gradients (tests/test_mechanisms_dominance.py).

Symmetry: (Q, P) is (P, Q) reflected (x ↦ −x), so H_α(P‖Q) for α < 1 is covered too and
the pair dominates both orders of every neighbouring pair [ZDW22, Def 7].

References: ZDW22, SMG24, KJH20.
"""

from __future__ import annotations

import numpy as np

from dpcalc.mechanisms._mixture import MixturePair, log_binomial_weights
from dpcalc.mechanisms.poisson_add_remove import _check

DIRECTIONS = ("replace",)


def pair(q: float, sigma: float, k: int = 1) -> MixturePair:
    """The dominating pair (Σ_j w_j N(j, σ²), Σ_j w_j N(−j, σ²)) of one step.

    References: ZDW22 (Sec. 5), SMG24.
    """
    _check(q, sigma, k)
    lw, err = log_binomial_weights(int(k), q)
    keep = np.isfinite(lw)
    j = np.arange(int(k) + 1, dtype=float)[keep]
    lw, err = lw[keep], err[keep]
    return MixturePair(sigma, lw, j, lw, -j, log_a_err=err, log_b_err=err,
                       probability_weights=True)


def log_delta(q: float, sigma: float, epsilon: float, k: int = 1) -> float:
    """Upper bound on log δ(ε) of one step of the replace-one pair.

    References: ZDW22, KJH20.
    """
    return pair(q, sigma, k).log_delta(epsilon)


def engine_pair(q: float, sigma: float, k: int = 1):
    """The pair in the engine's interface (symmetric: one direction).

    References: ZDW22 (Sec. 5), SMG24.
    """
    from dpcalc.mechanisms._mixture import EnginePair

    return EnginePair(("poisson-replace-one", float(q), float(sigma), int(k)),
                      {"remove": pair(q, sigma, k)}, symmetric=True)
