"""``gaussian``: σ, ε, δ of the Gaussian mechanism; leave one out."""

from __future__ import annotations

import math

from dpcalc.api._common import check_choice, comparison_failures, failure_note, leave_one_out
from dpcalc.errors import DomainError, InfeasibleError
from dpcalc.numeric.directed import Number, exp_up, log_of
from dpcalc.params import DELTA, EPSILON, SENSITIVITY, SIGMA
from dpcalc.references import REFS
from dpcalc.relations import gaussian as rel
from dpcalc.result import Comparison, Result
from dpcalc.solve import smallest_passing

_CLASSIC_LIMIT = 1.0
#: μ = Δ/σ above which the ε of a δ < 1 exceeds the double range (ε ≈ μ²/2 > 5e307)
_MU_MAX = 1e154


def gaussian(*, sigma: object = None, epsilon: object = None, delta: object = None,
             sensitivity: object = 1.0, method: str = "analytic",
             solve_for: str | None = None) -> Result:
    """Solve the Gaussian mechanism for whichever of σ, ε, δ is left out.

    Args:
        sigma: noise standard deviation σ (> 0).
        epsilon: ε (>= 0).
        delta: δ in [0, 1).
        sensitivity: L2 sensitivity Δ (default 1).
        method: analytic (exact, default), classic, chernoff, rdp or zcdp.

    Returns:
        A Result whose value is a guarantee (ε, δ) or noise (σ), rounded to the private side,
        with every other method in ``comparison``.

    Raises:
        UsageError, DomainError: bad input (exit 2). InfeasibleError: no σ meets δ = 0 (exit 1).
    """
    method = check_choice(method, rel.METHODS, "--method")
    values, unknown = leave_one_out({"sigma": sigma, "epsilon": epsilon, "delta": delta},
                                    (SIGMA, EPSILON, DELTA), solve_for=solve_for)
    values["sensitivity"] = SENSITIVITY.parse(sensitivity)
    value = _solve(method, unknown.name, values)
    parameters = {k: values.get(k, value) for k in ("sigma", "epsilon", "delta", "sensitivity")}
    parameters[unknown.name] = value
    notes = _notes(method, parameters)
    comparison = []
    for other in rel.METHODS:
        if other == method:
            continue
        try:
            other_value = _solve(other, unknown.name, values)
            other_params = dict(parameters, **{unknown.name: other_value})
            note = " ".join(_notes(other, other_params))
        except comparison_failures() as exc:
            other_value, note = None, failure_note(exc)
        comparison.append(Comparison(other, other_value, REFS[rel.REFERENCE[other]].short, note,
                                     _extra(other, unknown.name, values, other_value)))
    return Result(
        command="gaussian", solved_for=unknown.name, value=value, parameters=parameters,
        method=method, direction="upper", reference=REFS[rel.REFERENCE[method]].short,
        comparison=tuple(comparison), notes=tuple(notes),
        extra=_extra(method, unknown.name, values, value),
        symbols={"sigma": "σ", "epsilon": "ε", "delta": "δ", "sensitivity": "Δ"})


def _solve(method: str, unknown: str, values: dict) -> Number:
    """The private-side value of ``unknown`` under ``method``."""
    sens = values["sensitivity"]
    if unknown == "delta":
        return exp_up(rel.log_delta(method, values["sigma"], values["epsilon"], sens))
    log_target = log_of(values["delta"])
    if log_target == -math.inf:
        raise InfeasibleError(_pure_dp_impossible())
    if unknown == "epsilon":
        sigma = values["sigma"]
        try:
            return smallest_passing(
                lambda e: rel.log_delta(method, sigma, e, sens) <= log_target,
                low=0.0, high=math.inf, low_open=False, name="ε")
        except InfeasibleError:
            # ε grows like μ²/2 (μ = Δ/σ): past μ = 1e154 it leaves the double range
            if sens / sigma > _MU_MAX:
                raise DomainError(f"--sigma must be at least {sens / _MU_MAX:.3g} (= "
                                  f"--sensitivity/{_MU_MAX:.0e}) to solve ε: a smaller σ needs "
                                  "an ε beyond the double range") from None
            raise
    epsilon = values["epsilon"]
    guess = None
    if epsilon > 0 and method == "classic":
        guess = rel.classic_sigma(epsilon, log_target, sens)
    try:
        return smallest_passing(
            lambda s: rel.log_delta(method, s, epsilon, sens) <= log_target,
            low=0.0, high=math.inf, low_open=True, name="σ", guess=guess)
    except InfeasibleError:
        raise InfeasibleError(f"no σ meets ε = {epsilon:g} with the {method} bound"
                              + (" (it needs ε > 0)" if epsilon == 0 else "")) from None


def _pure_dp_impossible() -> str:
    return ("the Gaussian mechanism is not (ε, 0)-DP for any σ: its privacy loss is unbounded; "
            "give --delta > 0")


def _notes(method: str, parameters: dict) -> list[str]:
    notes = []
    if method == "classic" and parameters["epsilon"] >= _CLASSIC_LIMIT:
        notes.append("not a guarantee: classic is proven only for ε < 1 (Dwork & Roth 2014, "
                     "Thm A.1)")
    return notes


def _extra(method: str, unknown: str, values: dict, value: Number | None) -> dict:
    """The RDP order used, for display."""
    if method != "rdp" or value is None:
        return {}
    sigma = value if unknown == "sigma" else values["sigma"]
    epsilon = value if unknown == "epsilon" else values["epsilon"]
    return {"alpha": rel.rdp_order(values["sensitivity"] / sigma, epsilon)}
