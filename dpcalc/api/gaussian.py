"""``gaussian``: σ, ε, δ of the Gaussian mechanism; leave one out."""

from __future__ import annotations

import math

from dpcalc.api import _risk
from dpcalc.api._common import check_choice, comparison_failures, failure_note, leave_one_out
from dpcalc.errors import DomainError, InfeasibleError, UsageError
from dpcalc.numeric.directed import Number, exp_up, log_of
from dpcalc.params import DELTA, EPSILON, SENSITIVITY, SIGMA
from dpcalc.references import REFS
from dpcalc.relations import gaussian as rel
from dpcalc.result import Comparison, Result
from dpcalc.solve import solve_unknown

_CLASSIC_LIMIT = 1.0
#: μ = Δ/σ above which the ε of a δ < 1 exceeds the double range (ε ≈ μ²/2 > 5e307)
_MU_MAX = 1e154


def gaussian(*, sigma: object = None, epsilon: object = None, delta: object = None,
             sensitivity: object = 1.0, method: str = "analytic",
             solve_for: str | None = None, fpr: object = None,
             tpr: object = None) -> Result:
    """Solve the Gaussian mechanism for whichever of σ, ε, δ is left out.

    Args:
        sigma: noise standard deviation σ (> 0).
        epsilon: ε (>= 0).
        delta: δ in [0, 1).
        sensitivity: L2 sensitivity Δ (default 1).
        method: analytic (exact, default), classic, chernoff, rdp or zcdp.
        fpr: FPR value(s) A in (0, 1): also report the largest TPR of any membership-inference
            test at A, exactly (``extra["risk"]``).
        tpr: a TPR target T (with one ``fpr``), in place of ε and δ: solve the smallest σ.

    Returns:
        A Result whose value is a guarantee (ε, δ) or noise (σ), rounded to the private side,
        with every other method in ``comparison``.

    Raises:
        UsageError, DomainError: bad input (exit 2). InfeasibleError: no σ meets δ = 0 (exit 1).
    """
    method = check_choice(method, rel.METHODS, "--method")
    fprs = _risk.parse_fprs(fpr)
    target = _risk.parse_target(tpr, fprs, {"epsilon": epsilon, "delta": delta})
    if target is not None:
        return _sigma_for_tpr(sigma, sensitivity, target, fprs[0], solve_for)
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
    result = Result(
        command="gaussian", solved_for=unknown.name, value=value, parameters=parameters,
        method=method, direction="upper", reference=REFS[rel.REFERENCE[method]].short,
        comparison=tuple(comparison), notes=tuple(notes),
        extra=_extra(method, unknown.name, values, value), symbols=_SYMBOLS)
    if not fprs:
        return result
    return _risk.attach(result, _risk.exact_block(
        "gaussian", parameters["sensitivity"], parameters["sigma"], fprs,
        (parameters["epsilon"], parameters["delta"])))


_SYMBOLS = {"sigma": "σ", "epsilon": "ε", "delta": "δ", "sensitivity": "Δ", "tpr": "TPR",
            "fpr": "FPR"}


def _sigma_for_tpr(sigma: object, sensitivity: object, target: float, alpha: float,
                   solve_for: str | None) -> Result:
    """Smallest σ with TPR(α) = Φ(Φ⁻¹(α) + Δ/σ) ≤ T (the exact curve, rounded up).

    The closed form σ = Δ/(Φ⁻¹(T) − Φ⁻¹(α)) [DRS19, Eq (6)] seeds the one solver, which
    keeps the answer on the passing side of the certified upper bound.
    """
    from dpcalc.relations import risk as rrel

    if sigma is not None:
        raise UsageError("too many parameters: with --tpr and --fpr leave --sigma out")
    if solve_for not in (None, "sigma"):
        raise UsageError(f"--solve-for {solve_for} does not apply with --tpr; σ is solved")
    sens = SENSITIVITY.parse(sensitivity)

    def holds(s: float) -> bool:
        return rrel.gaussian_tpr(_risk.mu_up(sens, s), alpha)[1] <= target

    guess = sens / rrel.gaussian_mu_for_tpr(target, alpha)
    value = solve_unknown(SIGMA, holds,
                          guess=guess if math.isfinite(guess) and guess > 0 else None)
    parameters = {"sigma": value, "sensitivity": sens, "tpr": target, "fpr": alpha}
    result = Result(
        command="gaussian", solved_for="sigma", value=value, parameters=parameters,
        method="tradeoff", direction="upper", reference=REFS["DRS19"].short,
        notes=("σ solved so that no membership-inference test exceeds TPR "
               f"{target:g} at FPR {alpha:g} (exact Gaussian trade-off curve)",),
        symbols=_SYMBOLS)
    return _risk.attach(result, _risk.exact_block("gaussian", sens, value,
                                                  (alpha,), None))


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
            return solve_unknown(EPSILON,
                                 lambda e: rel.log_delta(method, sigma, e, sens) <= log_target)
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
        return solve_unknown(SIGMA, lambda s: rel.log_delta(method, s, epsilon, sens) <= log_target,
                             guess=guess)
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
