"""``laplace``: scale b, ε, δ of the Laplace mechanism; leave one out (δ defaults to 0)."""

from __future__ import annotations

import math

from dpcalc.api import _risk
from dpcalc.api._common import leave_one_out
from dpcalc.errors import InfeasibleError, UsageError
from dpcalc.numeric.directed import Number, exp_up, log_of
from dpcalc.params import DELTA, EPSILON, SCALE, SENSITIVITY
from dpcalc.references import REFS
from dpcalc.relations import laplace as rel
from dpcalc.result import Result
from dpcalc.solve import solve_unknown


def laplace(*, scale: object = None, epsilon: object = None, delta: object = None,
            sensitivity: object = 1.0, solve_for: str | None = None, fpr: object = None,
            tpr: object = None) -> Result:
    """Solve the Laplace mechanism for whichever of b, ε, δ is left out (δ defaults to 0).

    Args:
        scale: Laplace scale b (> 0).
        epsilon: ε (>= 0).
        delta: δ in [0, 1); 0 (pure DP) when two parameters are missing.
        sensitivity: L1 sensitivity Δ (default 1).
        fpr: FPR value(s) in (0, 1): also report the largest TPR of any membership-inference
            test there, from the Laplace mechanism's own trade-off curve (exact).
        tpr: a TPR target T (with one ``fpr``), in place of ε and δ: solve the smallest b.

    Raises:
        UsageError, DomainError: bad input (exit 2). InfeasibleError: ε = δ = 0 (exit 1).
    """
    fprs = _risk.parse_fprs(fpr)
    target = _risk.parse_target(tpr, fprs, {"epsilon": epsilon, "delta": delta})
    if target is not None:
        return _scale_for_tpr(scale, sensitivity, target, fprs[0], solve_for)
    values, unknown = leave_one_out({"scale": scale, "epsilon": epsilon, "delta": delta},
                                    (SCALE, EPSILON, DELTA), defaults=(("delta", 0),),
                                    solve_for=solve_for)
    values["sensitivity"] = sens = SENSITIVITY.parse(sensitivity)
    value: Number
    if unknown.name == "delta":
        value = exp_up(rel.log_delta(values["scale"], values["epsilon"], sens))
    else:
        log_target = log_of(values["delta"])
        if unknown.name == "epsilon":
            b = values["scale"]
            value = solve_unknown(EPSILON, lambda e: rel.log_delta(b, e, sens) <= log_target,
                                  guess=rel.epsilon_guess(b, log_target, sens) or None)
        else:
            eps = values["epsilon"]
            if eps == 0 and log_target == -math.inf:
                raise InfeasibleError("no Laplace scale gives ε = 0 with δ = 0 (that would be "
                                      "no information at all); give --epsilon > 0 or --delta > 0")
            guess = rel.scale_guess(eps, log_target, sens)
            value = solve_unknown(SCALE, lambda b: rel.log_delta(b, eps, sens) <= log_target,
                                  name="scale b", guess=guess if math.isfinite(guess) else None)
    parameters = {k: values.get(k, value) for k in ("scale", "epsilon", "delta", "sensitivity")}
    parameters[unknown.name] = value
    kind = "pure ε-DP" if parameters["delta"] == 0 else "exact (ε, δ) profile"
    result = Result(
        command="laplace", solved_for=unknown.name, value=value, parameters=parameters,
        method="exact", direction="upper", reference=REFS[rel.REFERENCE].short,
        notes=(f"{kind} of the Laplace mechanism",), symbols=_SYMBOLS)
    if not fprs:
        return result
    return _risk.attach(result, _risk.exact_block(
        "laplace", parameters["sensitivity"], parameters["scale"], fprs,
        (parameters["epsilon"], parameters["delta"])))


_SYMBOLS = {"scale": "b", "epsilon": "ε", "delta": "δ", "sensitivity": "Δ", "tpr": "TPR",
            "fpr": "FPR"}


def _scale_for_tpr(scale: object, sensitivity: object, target: float, alpha: float,
                   solve_for: str | None) -> Result:
    """Smallest scale b with the Laplace trade-off TPR(α) at μ = Δ/b at most T.

    TPR grows with μ, so the predicate (the exact curve, rounded up) is monotone in b;
    the one solver keeps the answer on its passing side [DRS19; KOV15].
    """
    from dpcalc.relations import risk as rrel

    if scale is not None:
        raise UsageError("too many parameters: with --tpr and --fpr leave --scale out")
    if solve_for not in (None, "scale"):
        raise UsageError(f"--solve-for {solve_for} does not apply with --tpr; b is solved")
    sens = SENSITIVITY.parse(sensitivity)

    def holds(b: float) -> bool:
        return rrel.laplace_tpr(_risk.mu_up(sens, b), alpha)[1] <= target

    value = solve_unknown(SCALE, holds, name="scale b")
    parameters = {"scale": value, "sensitivity": sens, "tpr": target, "fpr": alpha}
    result = Result(
        command="laplace", solved_for="scale", value=value, parameters=parameters,
        method="tradeoff", direction="upper", reference=REFS["DRS19"].short,
        notes=("b solved so that no membership-inference test exceeds TPR "
               f"{target:g} at FPR {alpha:g} (the Laplace mechanism's own trade-off curve)",),
        symbols=_SYMBOLS)
    return _risk.attach(result, _risk.exact_block("laplace", sens, value, (alpha,), None))
