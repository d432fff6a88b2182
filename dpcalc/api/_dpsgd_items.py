"""The items (dominating pair, count) of a DP-SGD run: the one place that maps a run's
setting to what the PLD engine composes.

Every PLD question about a run's profile (its attack risk, the TPR-target solves, a dpsgd
record of a plan) takes its pairs from ``run_items``, which reads the run's scheme (sampling,
neighbouring relation, examples per user: dpcalc.api.dpsgd_runs) and its pair
(``dpsgd_runs.pair_of``, which the run's ε/δ accounting uses too).  A setting with no
dominating pair (shuffled batches) raises: never a silent Poisson add/remove answer for
another setting.
"""

from __future__ import annotations

from dpcalc.errors import UsageError


def run_items(q: float, sigma: float, steps: int, scheme=None) -> list:
    """[(pair, count)] of ``steps`` steps of DP-SGD at rate q and noise multiplier σ, for the
    run's ``scheme`` (a dpsgd_runs.Scheme; None is the default: Poisson sampling, add/remove
    neighbours, one example per user, i.e. the Poisson-subsampled Gaussian [ZDW22, Sec 5]).

    Raises:
        UsageError: the scheme has no dominating pair (shuffle), so no certified profile.
    """
    from dpcalc.api.dpsgd_runs import pair_of, scheme_of

    scheme = scheme_of(None, None, None) if scheme is None else scheme
    if scheme.sampling == "shuffle":
        raise UsageError("--fpr/--tpr need the run's privacy profile, and --sampling shuffle "
                         "has no dominating pair (its ε is only bracketed); use --sampling "
                         "poisson or fixed-batch")
    return [(pair_of(scheme, float(q), float(sigma)), int(steps))]


def record_scheme(values: dict):
    """The scheme of a dpsgd record of a plan (its sampling, relation, examples_per_user)."""
    from dpcalc.api.dpsgd_runs import scheme_of

    return scheme_of(values.get("sampling"), values.get("relation"),
                     values.get("examples_per_user"))
