"""Mechanisms as the PLD engine sees them: one small module per dominating pair.

A pair (P, Q) dominates a mechanism M under a neighbouring relation when
H_α(M(x)‖M(x')) ≤ H_α(P‖Q) for every α ≥ 0 and every ordered pair of neighbours (x, x')
[ZDW22, Def 7]; then the T-fold product of the pair dominates T adaptive steps [ZDW22,
Thm 10], so the PLD of the pair, composed, gives a sound privacy profile.

- ``subsampled_gaussian``: Poisson sampling, add/remove, one example per unit.
- ``poisson_add_remove``: Poisson sampling, add/remove, K examples per user (mixture of
  Gaussians with Binomial(K, q) weights; K = 1 is the subsampled Gaussian).
- ``poisson_replace_one``: Poisson sampling, replace-one, K examples per user.
- ``fixed_batch``: B of N without replacement each step, replace-one (and add/remove).
- ``shuffle``: shuffled epochs: the no-amplification upper bound and the attack lower bound.

PAIRS is the registry: mechanism name → (module, class).  Adding a mechanism is one module
implementing dpcalc.pld.pair.DominatingPair plus one entry here.  Loaded lazily (numpy).

References: ZDW22, DRS19, LRKS24, Chua24, ChuaS24.
"""

from __future__ import annotations

import importlib

PAIRS: dict[str, tuple[str, str]] = {
    "gaussian": ("dpcalc.mechanisms.gaussian", "Gaussian"),
    "subsampled-gaussian": ("dpcalc.mechanisms.subsampled_gaussian", "SubsampledGaussian"),
    "laplace": ("dpcalc.mechanisms.laplace", "Laplace"),
    "subsampled-laplace": ("dpcalc.mechanisms.subsampled_laplace", "SubsampledLaplace"),
    "eps-delta": ("dpcalc.mechanisms.eps_delta", "EpsDelta"),
}


def pair_class(name: str):
    """The DominatingPair class registered under a mechanism name."""
    module, cls = PAIRS[name]
    return getattr(importlib.import_module(module), cls)
