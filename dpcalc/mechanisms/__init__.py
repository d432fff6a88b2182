"""Mechanisms as the PLD engine sees them: one small module per dominating pair.

PAIRS is the registry: mechanism name → (module, class).  Adding a mechanism is one module
implementing dpcalc.pld.pair.DominatingPair plus one entry here.  Loaded lazily (numpy).
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
