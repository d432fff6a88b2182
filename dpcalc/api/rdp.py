"""``rdp``: Rényi DP of the (subsampled) Gaussian or Laplace mechanism, composed over steps and
converted to (ε, δ); leave one of σ, q, steps, ε, δ out (q defaults to 1, then steps to 1)."""

from __future__ import annotations

import dataclasses
import math

from dpcalc.api._common import check_choice, comparison_failures, failure_note, leave_one_out
from dpcalc.errors import InfeasibleError, UsageError
from dpcalc.numeric.directed import Number, exp_up, log_of
from dpcalc.params import DELTA, EPSILON, INF, SIGMA, Param, Q
from dpcalc.references import REFS
from dpcalc.result import Comparison, Result
from dpcalc.solve import solve_unknown

CONVERSIONS = ("improved", "classic")
MECHANISMS = ("gaussian", "laplace")
_CONVERSION_REF = {"improved": "CKS20", "classic": "Mir17"}

STEPS = Param("steps", 0, INF, True, True, "smaller", integer=True, symbol="steps")
ALPHA = Param("alpha", 1.0, INF, True, True, "larger", symbol="α")

_SYMBOLS = {"sigma": "σ", "q": "q", "steps": "steps", "epsilon": "ε", "delta": "δ"}


class RdpCurve:
    """Per-step RDP of one mechanism at fixed orders, composed over steps (RDP adds)."""

    def __init__(self, orders, mechanism: str):
        import numpy as np

        from dpcalc.relations import rdp as rel

        self.rel = rel
        self.orders = np.asarray(orders, dtype=float)
        self.mechanism = mechanism

    def total(self, sigma: float, q: float, steps: int):
        """Upper bound on the total RDP at each order ([Mir17, Prop 1]: RDP adds)."""
        rel = self.rel
        if self.mechanism == "gaussian":
            per_step = rel.rdp_subsampled_gaussian(self.orders, q, sigma) if q < 1 else \
                rel.rdp_gaussian(self.orders, sigma)
        else:
            per_step = rel.rdp_subsampled_laplace(self.orders, q, sigma) if q < 1 else \
                rel.rdp_laplace(self.orders, sigma)
        return rel.compose_steps(per_step, steps)

    def epsilon(self, sigma: float, q: float, steps: int, log_delta: float,
                conversion: str) -> tuple[float, float, object]:
        return self.rel.epsilon_from_rdp(self.orders, self.total(sigma, q, steps), log_delta,
                                         conversion)

    def log_delta(self, sigma: float, q: float, steps: int, epsilon: float,
                  conversion: str) -> tuple[float, float]:
        return self.rel.log_delta_from_rdp(self.orders, self.total(sigma, q, steps), epsilon,
                                           conversion)


def rdp(*, sigma: object = None, q: object = None, steps: object = None,
        epsilon: object = None, delta: object = None, alpha: list | None = None,
        conversion: str = "improved", mechanism: str = "gaussian",
        solve_for: str | None = None, fpr: object = None, tpr: object = None) -> Result:
    """RDP accounting [Mir17; MTZ19], converted to (ε, δ) [Mir17, Prop 3; CKS20, Prop 12].

    Args:
        sigma: noise multiplier (σ/Δ for Gaussian, b/Δ for Laplace).
        q: Poisson sampling rate (default 1). steps: number of compositions (default 1).
        epsilon, delta: the (ε, δ) guarantee.
        alpha: orders to use (default: the built-in grid).
        conversion: improved (default) or classic.
        fpr: FPR(s) in (0, 1): adds the TPR bounds of the converted profile (``risk``).
        tpr: with one ``fpr``, in place of ε and δ: solve σ, q or steps so that the TPR
            bound at that FPR is at most ``tpr`` (dpcalc.api._risk_rdp).
    """
    from dpcalc.api import _risk
    from dpcalc.relations import rdp as rel

    check_choice(conversion, CONVERSIONS, "--conversion")
    check_choice(mechanism, MECHANISMS, "--mechanism")
    orders = sorted({ALPHA.parse(a) for a in alpha}) if alpha else list(rel.DEFAULT_ORDERS)
    fprs = _risk.parse_fprs(fpr)
    target = _risk.parse_target(tpr, fprs, {"epsilon": epsilon, "delta": delta})
    curve = RdpCurve(orders, mechanism)
    if target is not None:
        return _for_tpr(curve, target, fprs[0], {"sigma": sigma, "q": q, "steps": steps},
                        conversion, solve_for)
    values, unknown = leave_one_out(
        {"sigma": sigma, "q": q, "steps": steps, "epsilon": epsilon, "delta": delta},
        (SIGMA, Q, STEPS, EPSILON, DELTA), defaults=(("q", 1), ("steps", 1)),
        solve_for=solve_for)
    value = _solve(curve, unknown.name, values, conversion)
    values[unknown.name] = value
    result = _result(curve, values, unknown.name, value, conversion)
    if not fprs:
        return result
    from dpcalc.api import _risk_rdp

    return _risk.attach(result, _risk_rdp.block(curve, values, conversion, fprs))


def _for_tpr(curve: RdpCurve, target: float, alpha: float, given: dict, conversion: str,
             solve_for: str | None) -> Result:
    """The smallest σ, or the largest q or steps (the one left out), whose converted
    profile bounds the TPR at FPR ``alpha`` by ``target`` (each probe's own bound decides);
    the result states the (ε, δ) of the profile's grid point that gives the answer's bound."""
    from dpcalc.api import _risk, _risk_rdp

    values, unknown = leave_one_out(given, (SIGMA, Q, STEPS),
                                    defaults=(("q", 1), ("steps", 1)), solve_for=solve_for)
    name = unknown.name

    def holds(x) -> bool:
        v = {**values, name: x}
        return _risk_rdp.tpr_upper(curve, v["sigma"], v["q"], v["steps"], conversion,
                                   alpha) <= target

    value = solve_unknown({"sigma": SIGMA, "q": Q, "steps": STEPS}[name], holds)
    values[name] = value
    eps, delta = _risk_rdp.best_point(curve, values, conversion, alpha)
    values.update(epsilon=eps, delta=delta)
    result = _result(curve, values, name, value, conversion, compare=False)
    parameters = {**result.parameters, "tpr": target, "fpr": alpha}
    result = dataclasses.replace(result, parameters=parameters, derived=("epsilon", "delta"))
    return _risk.attach(result, _risk_rdp.block(curve, values, conversion, (alpha,)))


def _result(curve: RdpCurve, values: dict, unknown: str, value, conversion: str,
            compare: bool = True) -> Result:
    from dpcalc.relations import rdp as rel

    mechanism = curve.mechanism
    log_d = log_of(values["delta"])
    if log_d == -math.inf:
        raise InfeasibleError("RDP gives no pure-DP guarantee (δ = 0); give --delta > 0")
    totals = curve.total(values["sigma"], values["q"], values["steps"])
    _, best, per_order = rel.epsilon_from_rdp(curve.orders, totals, log_d, conversion)
    table = [{"alpha": float(a), "rdp": _finite(r), "epsilon": _finite(e)}
             for a, r, e in zip(curve.orders, totals, per_order, strict=True)]
    comparison = []
    other = "classic" if conversion == "improved" else "improved"
    if compare:
        comparison.append(_other(curve, unknown, values, other))
    if compare and mechanism == "gaussian" and values["q"] == 1:
        comparison.append(_exact_gaussian(unknown, values))
    parameters = {k: values[k] for k in ("sigma", "q", "steps", "epsilon", "delta")}
    direction = "lower" if unknown in ("q", "steps") else "upper"
    return Result(
        command="rdp", solved_for=unknown, value=value, parameters=parameters,
        method=conversion, direction=direction, reference=REFS[_CONVERSION_REF[conversion]].short,
        comparison=tuple(comparison),
        notes=(f"{mechanism} mechanism{', Poisson-subsampled' if values['q'] < 1 else ''}; "
               + (f"best order α = {best:g}" if math.isfinite(best)
                  else "no order gives a guarantee here (δ = 1)"),),
        extra={"mechanism": mechanism, "alpha": _finite(best), "orders": table},
        symbols=_SYMBOLS)


def _finite(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _solve(curve: RdpCurve, unknown: str, values: dict, conversion: str) -> Number | int:
    """The private-side value of ``unknown``."""
    if unknown == "delta":
        log_d, _ = curve.log_delta(values["sigma"], values["q"], values["steps"],
                                   values["epsilon"], conversion)
        return exp_up(log_d)
    log_d = log_of(values["delta"])
    if log_d == -math.inf:
        raise InfeasibleError("RDP gives no pure-DP guarantee (δ = 0); give --delta > 0")
    if unknown == "epsilon":
        eps, _, _ = curve.epsilon(values["sigma"], values["q"], values["steps"], log_d,
                                  conversion)
        if not math.isfinite(eps):
            raise InfeasibleError("no order gives a finite ε for these inputs")
        return eps
    target = values["epsilon"]

    def holds(sigma: float, q: float, steps: int) -> bool:
        return curve.epsilon(sigma, q, steps, log_d, conversion)[0] <= target

    if unknown == "sigma":
        return solve_unknown(SIGMA, lambda s: holds(s, values["q"], values["steps"]))
    if unknown == "steps":
        return solve_unknown(STEPS, lambda n: holds(values["sigma"], values["q"], n))
    if unknown == "q":
        return solve_unknown(Q, lambda r: holds(values["sigma"], r, values["steps"]))
    raise UsageError(f"cannot solve for {unknown}")


def _other(curve: RdpCurve, unknown: str, values: dict, conversion: str) -> Comparison:
    given = {k: v for k, v in values.items() if k != unknown}
    try:
        v = _solve(curve, unknown, given, conversion)
        return Comparison(conversion, v, REFS[_CONVERSION_REF[conversion]].short,
                          f"{conversion} conversion")
    except comparison_failures() as exc:
        return Comparison(conversion, None, REFS[_CONVERSION_REF[conversion]].short,
                          failure_note(exc))


def _exact_gaussian(unknown: str, values: dict) -> Comparison:
    """q = 1: T Gaussian steps compose exactly to one Gaussian of σ/√T [DRS19, Cor 3.3]."""
    from dpcalc.api.gaussian import gaussian

    ref = REFS["BW18"].short
    if unknown not in ("epsilon", "delta"):
        return Comparison("analytic", None, ref, f"exact T-fold Gaussian; not solved for {unknown}")
    sigma_eff = values["sigma"] / math.sqrt(values["steps"])
    if not sigma_eff > 0:
        return Comparison("analytic", None, ref, "σ/√T underflows: not evaluated")
    kwargs = {"sigma": sigma_eff}
    if unknown == "epsilon":
        kwargs["delta"] = values["delta"]
    else:
        kwargs["epsilon"] = values["epsilon"]
    try:
        r = gaussian(**kwargs)
        return Comparison("analytic", r.value, ref, "exact: T steps = one Gaussian of σ/√T")
    except comparison_failures() as exc:
        return Comparison("analytic", None, ref, failure_note(exc))
