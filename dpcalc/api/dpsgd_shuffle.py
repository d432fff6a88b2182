"""``dpsgd --sampling shuffle``: the sound upper bound and the attack's lower bound.

The upper bound (no amplification: each epoch at most one Gaussian release per example,
E epochs = one Gaussian with μ = K·Δ·√E/σ) answers every direction; the attack's lower bound
(Chua et al. 2024) sits beside it in ``bounds`` for ε and δ. Epochs count whole epochs
started (⌈epochs⌉, or ⌈steps/T⌉ with T = ⌈N/B⌉ batches per epoch, the last one partial).
"""

from __future__ import annotations

import math

from dpcalc.errors import InfeasibleError
from dpcalc.numeric.directed import exp_down, exp_up, log_of
from dpcalc.params import WHOLE_EPOCHS
from dpcalc.references import REFS
from dpcalc.result import Bounds, Comparison, Result
from dpcalc.solve import solve_unknown


def solve_shuffle(scheme, values: dict, unknown: str, count: str, bsize, size,
                  solve_batch: bool, compare: bool) -> Result:
    """Solve ``unknown`` for shuffled epochs (see the module docstring)."""
    from dpcalc.api.dpsgd_runs import NOISE, SYMBOLS, _batches
    from dpcalc.mechanisms import shuffle

    rel, k = scheme.relation, scheme.k
    log_d = log_of(values["delta"]) if "delta" in values else None
    eps = values.get("epsilon")
    q = values.get("q")
    notes: list[str] = []

    def epochs_of(v: dict, batches: int) -> int:
        if "steps" in v:
            return max(1, -(-int(v["steps"]) // batches))
        return max(1, math.ceil(v["epochs"]))

    def full_epochs_of(v: dict, batches: int) -> int:
        # the attack's lower bound holds for the complete epochs of the run only (a partial
        # epoch may leave the target example out): ⌊steps/T⌋ or ⌊epochs⌋
        if "steps" in v:
            return int(v["steps"]) // batches
        return math.floor(v["epochs"])

    def attack(sigma: float, batches: int):
        e_full = full_epochs_of(values, batches)
        return shuffle.AttackLowerBound(sigma, batches, e_full, rel) if e_full >= 1 else None

    def holds(sigma: float, e: int) -> bool:
        return shuffle.upper_log_delta(sigma, e, eps, rel, k) <= log_d

    bounds = None
    if unknown in ("q",):
        # no amplification: the bound does not depend on the batch size
        batches = 1
        e = epochs_of(values, batches) if count == "epochs" else None
        if e is None:
            raise InfeasibleError("with --steps the epoch count depends on the batch size; "
                                  "give --epochs to solve the batch size of a shuffled run")
        if not holds(values["sigma"], e):
            raise InfeasibleError("no batch size meets the target: shuffled epochs get no "
                                  "amplification, the bound is the same for every batch size")
        value = size if solve_batch else 1.0
        values["q"] = 1.0
        notes.append("shuffled epochs get no amplification: the guarantee does not depend on "
                     "the batch size, so the largest one is reported")
    else:
        batches = _batches(q, bsize, size)
        if unknown == "epsilon":
            e = epochs_of(values, batches)
            value = shuffle.upper_epsilon(values["sigma"], e, log_d, rel, k)
            lower = attack(values["sigma"], batches)
            low = lower.epsilon_lower(log_d) if lower is not None else 0.0
            bounds = Bounds(min(low, value), value)
        elif unknown == "delta":
            e = epochs_of(values, batches)
            value = min(exp_up(shuffle.upper_log_delta(values["sigma"], e, eps, rel, k)), 1.0)
            lower = attack(values["sigma"], batches)
            low = lower.delta_lower(eps) if lower is not None else 0.0
            bounds = Bounds(min(exp_down(math.log(low)) if low > 0 else 0.0, value), value)
        elif unknown == "sigma":
            e = epochs_of(values, batches)
            value = solve_unknown(NOISE, lambda s: holds(s, e), rtol=1e-9)
        else:  # epochs or steps: whole epochs
            e = solve_unknown(WHOLE_EPOCHS, lambda n: holds(values["sigma"], n), high=10**9)
            value = e if unknown == "epochs" else e * batches
        values[unknown] = value
    # the run as asked: a given count is reported as given (a partial last epoch counts as a
    # whole one in the upper bound, and not at all in the attack's lower bound)
    e = epochs_of(values, batches)
    if unknown in ("epochs", "steps") or count not in values:
        values["epochs"], values["steps"] = e, e * batches
    elif count == "steps":
        values["epochs"] = values["steps"] / batches
    else:
        values["steps"] = max(1, math.ceil(values["epochs"] * batches))
    parameters = {key: values[key] for key in ("q", "sigma", "epochs", "steps", "epsilon",
                                               "delta") if key in values}
    if bsize is not None or solve_batch:
        parameters["batch_size"] = value if solve_batch else bsize
        parameters["dataset_size"] = size
    parameters.update(scheme.parameters())
    solved = "batch_size" if solve_batch else unknown
    comparison = []
    if unknown == "epsilon":
        notes.append(_poisson_note(values, value, batches, bsize, size, compare, comparison))
        notes.append("bounds: upper = sound (no amplification: each epoch is at most one "
                     "Gaussian release per example); lower = what the attack on shuffled "
                     "batches reaches (Chua et al. 2024); the truth lies between")
    if bsize is not None and size % bsize:
        notes.append(f"partial last batch: each epoch has {size // bsize} batches of {bsize} "
                     f"and one of {size % bsize} (drop_last=False; with drop_last the upper "
                     "bound still holds, the attack's lower bound assumes every example used)")
    return Result(
        command="dpsgd", solved_for=solved, value=parameters[solved], parameters=parameters,
        method="shuffle", direction="upper" if unknown in ("epsilon", "delta", "sigma")
        else "lower", reference=REFS["DRS19"].short, bounds=bounds,
        comparison=tuple(comparison), notes=tuple(notes), symbols=SYMBOLS,
        derived=("epochs",) if unknown == "steps" else ("steps",),
        given={"q": f"{bsize}/{size}"} if bsize is not None and not solve_batch else {})


def _poisson_note(values, upper, batches, bsize, size, compare, comparison) -> str:
    """What Poisson accounting would claim for this run (it does not apply)."""
    if not compare:
        return "Poisson accounting does not apply to shuffled batches"
    from dpcalc.api.dpsgd import steps_for
    from dpcalc.relations import pld

    q = values["q"]
    steps = steps_for(values["epochs"], q)
    try:
        claim = pld.epsilon_bounds(q, values["sigma"], steps, log_of(values["delta"]))[1]
    except pld.PLDUncertifiable:
        return "Poisson accounting does not apply to shuffled batches"
    comparison.append(Comparison("poisson-accounting", claim, REFS["ZDW22"].short,
                                 "what Poisson accounting (add-remove, q = B/N) would claim; "
                                 "it does not apply to shuffled batches"))
    from dpcalc.numeric.display import shorten

    factor = upper / claim if claim > 0 else math.inf
    return (f"Poisson accounting does not apply to shuffled batches: it would claim ε ≤ "
            f"{claim:.4g}, {factor:.3g}× below what can be guaranteed here "
            f"(ε ≤ {shorten(upper, 5, 'upper')})")
