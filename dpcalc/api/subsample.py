"""``subsample``: amplification by subsampling; leave one of ε, δ, q, ε', δ' out."""

from __future__ import annotations

import math
from dataclasses import replace

from dpcalc.api._common import check_choice, leave_one_out
from dpcalc.errors import InfeasibleError, UsageError
from dpcalc.numeric.directed import Number, exp_up, log_of
from dpcalc.params import INF, Param, Q
from dpcalc.references import REFS
from dpcalc.result import Result
from dpcalc.solve import solve_unknown

SAMPLINGS = ("poisson", "without-replacement")
RELATIONS = ("add-remove", "replace-one")

AMPLIFIED_EPSILON = Param("amplified_epsilon", 0.0, INF, False, True, "larger", symbol="ε'")
AMPLIFIED_DELTA = Param("amplified_delta", 0.0, 1.0, False, True, "larger", tiny_ok=True,
                        symbol="δ'")
BASE_EPSILON = Param("epsilon", 0.0, INF, False, True, "smaller", symbol="ε")
BASE_DELTA = Param("delta", 0.0, 1.0, False, True, "smaller", tiny_ok=True, symbol="δ")
SAMPLE_SIZE = Param("sample_size", 0, INF, True, True, "smaller", integer=True, symbol="m")
POPULATION_SIZE = Param("population_size", 0, INF, True, True, "smaller", integer=True,
                        symbol="n")

_SYMBOLS = {"epsilon": "ε", "delta": "δ", "q": "q", "amplified_epsilon": "ε'",
            "amplified_delta": "δ'"}


def resolve_rate(q: object, size: object, total: object, size_option: str,
                 total_option: str) -> object:
    """q as given, or m/n from a sample size and a population size (nudged up when inexact:
    a larger q is the private side).

    Raises:
        UsageError: q given with the sizes, or only one of the sizes given.
    """
    if size is None and total is None:
        return q
    if q is not None:
        raise UsageError(f"--q conflicts with {size_option}/{total_option}; give one")
    if size is None or total is None:
        raise UsageError(f"{size_option} and {total_option} go together")
    m = replace(SAMPLE_SIZE, name=size_option[2:].replace("-", "_")).parse(size)
    n = replace(POPULATION_SIZE, name=total_option[2:].replace("-", "_")).parse(total)
    if m > n:
        raise UsageError(f"{size_option} ({m}) must not exceed {total_option} ({n})")
    return exact_rate(m, n)


def exact_rate(m: int, n: int) -> float:
    """m/n as a float, nudged up one ulp where the division rounded it down (a larger rate is
    the private side): the q that a sample of m in n is accounted at."""
    from fractions import Fraction

    rate = m / n
    return math.nextafter(rate, math.inf) if Fraction(rate) < Fraction(m, n) else rate


def rate_text(size: object, total: object) -> dict[str, str]:
    """How to show a q the user gave as m/n: as given, ``{"q": "256/60000"}``."""
    if size is None or total is None:
        return {}
    return {"q": f"{str(size).strip()}/{str(total).strip()}"}


def _subsample(*, epsilon: object = None, delta: object = None, q: object = None,
              amplified_epsilon: object = None, amplified_delta: object = None,
              sample_size: object = None, population_size: object = None,
              sampling: str = "poisson", relation: str = "add-remove",
              solve_for: str | None = None) -> Result:
    """Amplification by subsampling [BBG18]: the mechanism run on a q-sample.

    Given ε, δ, q both amplified values are determined: solves ``amplified_epsilon`` and
    reports ``amplified_delta``. Given a target (ε', δ') it solves the largest q, or the
    largest base ε (or δ) that meets it.

    Raises:
        UsageError, DomainError: bad input. InfeasibleError: no value meets the target.
    """
    from dpcalc.relations import subsample as rel

    check_choice(sampling, SAMPLINGS, "--sampling")
    check_choice(relation, RELATIONS, "--relation")
    q = resolve_rate(q, sample_size, population_size, "--sample-size", "--population-size")
    given = {"epsilon": epsilon, "delta": delta, "q": q, "amplified_epsilon": amplified_epsilon,
             "amplified_delta": amplified_delta}
    params = (BASE_EPSILON, BASE_DELTA, Q, AMPLIFIED_EPSILON, AMPLIFIED_DELTA)
    derived_delta = (amplified_epsilon is None and amplified_delta is None
                     and solve_for in (None, "amplified_epsilon", "amplified-epsilon"))
    if derived_delta:
        given["amplified_delta"] = None
        params_used = params[:4]
    else:
        params_used = params
    values, unknown = leave_one_out(given, params_used, solve_for=solve_for)

    def forward(eps: float, log_d: float, rate: float) -> tuple[float, float]:
        return rel.amplify(eps, log_d, rate, sampling=sampling, relation=relation)

    value: Number
    name = unknown.name
    if derived_delta:
        amp_eps, amp_log_delta = forward(values["epsilon"], log_of(values["delta"]), values["q"])
        value = amp_eps
        values["amplified_delta"] = exp_up(amp_log_delta)
    else:
        target_eps = values.get("amplified_epsilon")
        target_log_d = log_of(values["amplified_delta"]) if "amplified_delta" in values else None

        def holds(eps: float, log_d: float, rate: float) -> bool:
            amp_eps, amp_log_d = forward(eps, log_d, rate)
            return amp_eps <= target_eps and amp_log_d <= target_log_d

        if name == "amplified_epsilon":
            amp_eps, amp_log_d = forward(values["epsilon"], log_of(values["delta"]), values["q"])
            if amp_log_d > target_log_d:
                raise InfeasibleError(f"the amplified δ is {_show(exp_up(amp_log_d))}, above "
                                      "--amplified-delta; no ε' fixes that")
            value = amp_eps
        elif name == "amplified_delta":
            amp_eps, amp_log_d = forward(values["epsilon"], log_of(values["delta"]), values["q"])
            if amp_eps > target_eps:
                raise InfeasibleError(f"the amplified ε is {amp_eps:.6g}, above "
                                      "--amplified-epsilon; no δ' fixes that")
            value = exp_up(amp_log_d)
        elif name == "q":
            eps, log_d = values["epsilon"], log_of(values["delta"])
            guess = rel.max_q(eps, log_d, target_eps, target_log_d, sampling, relation)
            value = solve_unknown(Q, lambda r: holds(eps, log_d, r), guess=guess or None)
        elif name == "epsilon":
            rate, log_d = values["q"], log_of(values["delta"])
            if not holds(0.0, log_d, rate):
                raise InfeasibleError("even ε = 0 misses the target (the amplified δ is too "
                                      "large)")
            guess = rel.max_base_epsilon(rate, target_eps, sampling, relation)
            value = solve_unknown(BASE_EPSILON, lambda e: holds(e, log_d, rate), name="base ε",
                                  guess=guess if guess and math.isfinite(guess) else None)
        else:  # base delta
            rate, eps = values["q"], values["epsilon"]
            if not holds(eps, -math.inf, rate):
                raise InfeasibleError("even δ = 0 misses the target (the amplified ε is too "
                                      "large)")
            value = solve_unknown(BASE_DELTA, lambda d: holds(eps, log_of(d), rate),
                                  name="base δ")
    values[name] = value
    parameters = {k: values[k] for k in ("epsilon", "delta", "q", "amplified_epsilon",
                                         "amplified_delta")}
    direction = "upper" if name.startswith("amplified") else "lower"
    return Result(
        command="subsample", solved_for=name, value=value, parameters=parameters,
        method=sampling, direction=direction, reference=REFS["BBG18"].short,
        extra={"sampling": sampling, "relation": relation}, symbols=_SYMBOLS,
        derived=("amplified_delta",) if derived_delta else (),
        given=rate_text(sample_size, population_size))


def _show(x: Number) -> str:
    from dpcalc.numeric.display import shorten

    return shorten(x, 6, "upper")


def subsample(*, fpr: object = None, tpr: object = None, **kwargs) -> Result:
    """Amplification by subsampling [BBG18]: the mechanism run on a q-sample (see ``_subsample``).

    ``fpr`` (value or list, in (0, 1)) adds ``extra["risk"]``: the TPR bound at each FPR from
    the reported (ε, δ) point only (no profile of the mechanism is known here; the note says
    so) [KOV15, Thm 2.1]. A ``tpr`` target (with one ``fpr``) replaces the amplified target:
    the largest q, base ε or base δ whose amplified point bounds the TPR at the FPR by it.
    """
    from dpcalc.api import _risk

    fprs = _risk.parse_fprs(fpr)
    target = _risk.parse_target(tpr, fprs, {k: kwargs.get(k) for k in (
        "amplified_epsilon", "amplified_delta")})
    if target is not None:
        return _for_tpr(target, fprs[0], kwargs)
    result = _subsample(**kwargs)
    if not fprs:
        return result
    return _risk.attach(result, _risk.point_block(result.parameters, "amplified_epsilon",
                                                  "amplified_delta", fprs))


def _for_tpr(target: float, alpha: float, kwargs: dict) -> Result:
    """The largest q, base ε or base δ (the one left out) whose amplified (ε', δ') point
    bounds the TPR at FPR ``alpha`` by ``target`` [KOV15, Thm 2.1]: the point's TPR bound
    grows with ε' and δ', which grow with q, ε and δ, so the one solver's predicate is
    monotone; each probe is this command's own amplified point (rounded up)."""
    from dpcalc.api import _risk
    from dpcalc.relations import risk as rel

    names = ("epsilon", "delta", "q")
    missing = [n for n in names if kwargs.get(n) is None]
    if kwargs.get("sample_size") is not None and kwargs.get("population_size") is not None:
        missing = [n for n in missing if n != "q"]
    if len(missing) != 1:
        raise UsageError("with --tpr and --fpr leave exactly one of --epsilon, --delta and --q "
                         f"out; missing {', '.join('--' + n for n in missing) or 'none'}")
    name = missing[0]
    fixed = {k: v for k, v in kwargs.items() if k not in ("solve_for",)}
    if kwargs.get("solve_for") not in (None, name):
        raise UsageError(f"--solve-for {kwargs['solve_for']} conflicts with --tpr: {name} is "
                         "the one left out")

    def point(x: float) -> Result:
        return _subsample(**{**fixed, name: x})

    def holds(x: float) -> bool:
        r = point(x)
        return rel.point_tpr(r.parameters["amplified_epsilon"], r.parameters["amplified_delta"],
                             alpha)[1] <= target

    # the domains of the base ε, base δ and q: [0, inf), [0, 1) and (0, 1]
    value = solve_unknown({"epsilon": BASE_EPSILON, "delta": BASE_DELTA, "q": Q}[name], holds,
                          name=name)
    result = point(value)
    parameters = {**result.parameters, name: value, "tpr": target, "fpr": alpha}
    result = replace(result, solved_for=name, value=value, direction="lower",
                     parameters=parameters, derived=("amplified_epsilon", "amplified_delta"),
                     bounds=None, comparison=())
    return _risk.attach(result, _risk.point_block(result.parameters, "amplified_epsilon",
                                                  "amplified_delta", (alpha,)))
