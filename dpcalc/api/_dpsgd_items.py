"""The items (dominating pair, count) of a DP-SGD run: the one place that maps a run's
setting to what the PLD engine composes.

Every PLD question about a run (its ε/δ in plans, its attack risk, the TPR-target solves)
takes its pairs from ``run_items``, so a new setting (sampling scheme, neighbouring relation,
examples per user) changes them all at once.  A setting with no dominating pair here raises:
never a silent Poisson add/remove answer for another setting.
"""

from __future__ import annotations

from dpcalc.errors import DomainError

#: the setting the pairs below account for (option value as the CLI spells it)
SUPPORTED = {"sampling": "poisson", "relation": "add-remove", "examples_per_user": 1}


def run_items(q: float, sigma: float, steps: int, **setting) -> list:
    """[(pair, count)] of ``steps`` steps of DP-SGD at rate q and noise multiplier σ.

    Poisson sampling with add/remove neighbours and one example per user: ``steps`` copies of
    the Poisson-subsampled Gaussian pair [ZDW22, Sec 5] (remove and add directions).  Any
    other value in ``setting`` (keys of SUPPORTED; None means the default) raises.

    Raises:
        DomainError: a setting with no dominating pair yet.
    """
    from dpcalc.mechanisms import pair_class

    for name, value in setting.items():
        if name not in SUPPORTED:
            raise TypeError(f"unknown DP-SGD setting {name!r}")
        if value is not None and value != SUPPORTED[name]:
            raise DomainError(f"--{name.replace('_', '-')} {value}: the PLD accountant has no "
                              f"dominating pair for it yet (it accounts "
                              f"{name.replace('_', '-')} = {SUPPORTED[name]} only)")
    return [(pair_class("subsampled-gaussian")(float(q), float(sigma)), int(steps))]


def setting_of(values: dict) -> dict:
    """The run's setting among ``values`` (the keys of SUPPORTED that are present)."""
    return {k: values[k] for k in SUPPORTED if k in values}
