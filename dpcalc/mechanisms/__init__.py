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

PAIRS is the registry: mechanism name → (module, class, record).  Adding a mechanism is one
module implementing dpcalc.pld.pair.DominatingPair plus one entry here; with a ``Record``
(the fields of its ``compose --from`` record) and a ``from_record`` class method, plans
compose it too, with no other change.  Loaded lazily (numpy).

References: ZDW22, DRS19, LRKS24, Chua24, ChuaS24.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple


class Record(NamedTuple):
    """A mechanism's ``compose --from`` record: its fields, the ones it needs, and the field
    (a count of steps) that repeats the pair, if any. The class builds the pair from the
    record's values with ``from_record(values)``."""

    fields: tuple[str, ...]
    required: tuple[str, ...]
    repeats: str | None = None


class Entry(NamedTuple):
    module: str
    cls: str
    record: Record | None = None


PAIRS: dict[str, Entry] = {
    "gaussian": Entry("dpcalc.mechanisms.gaussian", "Gaussian",
                      Record(("sigma", "sensitivity"), ("sigma",))),
    "subsampled-gaussian": Entry("dpcalc.mechanisms.subsampled_gaussian", "SubsampledGaussian"),
    "laplace": Entry("dpcalc.mechanisms.laplace", "Laplace",
                     Record(("scale", "sensitivity"), ("scale",))),
    "subsampled-laplace": Entry("dpcalc.mechanisms.subsampled_laplace", "SubsampledLaplace",
                                Record(("q", "scale", "sensitivity", "steps"),
                                       ("q", "scale", "steps"), repeats="steps")),
    "eps-delta": Entry("dpcalc.mechanisms.eps_delta", "EpsDelta"),
}

def records() -> dict[str, Record]:
    """The mechanisms a plan record may name, by their registry entries."""
    return {name: e.record for name, e in PAIRS.items() if e.record is not None}


def pair_class(name: str):
    """The DominatingPair class registered under a mechanism name."""
    entry = PAIRS[name]
    return getattr(importlib.import_module(entry.module), entry.cls)
