"""``compose``: k-fold and heterogeneous composition, and group privacy; leave one out.

The relation: k mechanisms, each (ε, δ)-DP (for K-row neighbours, after group privacy when
``--group K`` is given), compose to (total ε, total δ)-DP under the chosen theorem.
"""

from __future__ import annotations

import math
import sys

from dpcalc.api._common import check_choice, comparison_failures, failure_note, leave_one_out
from dpcalc.errors import InfeasibleError, UsageError
from dpcalc.methods import COMPOSE
from dpcalc.numeric.directed import Number, exp_up, log_of
from dpcalc.params import INF, Param, exact_value
from dpcalc.references import REFS
from dpcalc.result import Comparison, Result
from dpcalc.solve import solve_unknown

METHODS = COMPOSE.names   # the registry (dpcalc.methods); pld, for plans (--from) only, too
_REF = COMPOSE.references

EPSILON = Param("epsilon", 0.0, INF, False, True, "smaller", symbol="ε")
DELTA = Param("delta", 0.0, 1.0, False, True, "smaller", tiny_ok=True, symbol="δ")
#: The most mechanisms compose counts (the optimal bound costs about √k per evaluation).
MAX_K = 10**12
K = Param("k", 0, MAX_K, True, False, "smaller", integer=True, symbol="k")
TOTAL_EPSILON = Param("total_epsilon", 0.0, INF, False, True, "larger", symbol="total ε")
TOTAL_DELTA = Param("total_delta", 0.0, 1.0, False, True, "larger", tiny_ok=True,
                    symbol="total δ")
DELTA_SLACK = Param("delta_slack", 0.0, 1.0, True, True, "larger", tiny_ok=True, symbol="δ'")
GROUP = Param("group", 0, INF, True, True, "smaller", integer=True, symbol="K")

_SYMBOLS = {"epsilon": "ε", "delta": "δ", "k": "k", "total_epsilon": "total ε",
            "total_delta": "total δ", "delta_slack": "δ'", "group": "K"}


class _Composition:
    """Forward evaluation of one theorem: does (ε, δ)×k give (E, D)?"""

    def __init__(self, method: str, log_slack: float | None, group: int | None):
        from dpcalc.relations import compose as rel

        self.rel = rel
        self.method = method
        self.log_slack = log_slack
        self.group = group

    def per_mechanism(self, eps: float, log_d: float) -> tuple[float, float]:
        """(ε, log δ) of one mechanism for the neighbouring relation in use (group privacy)."""
        if self.group is None or self.group == 1:
            return eps, log_d
        from dpcalc.relations import compose_group

        return compose_group.group(eps, log_d, self.group)

    def checked_per_mechanism(self, eps: float, log_d: float) -> tuple[float, float]:
        """``per_mechanism``, refusing a group δ >= 1 (no guarantee left to compose)."""
        eps_g, log_dg = self.per_mechanism(eps, log_d)
        if log_dg >= 0:
            raise InfeasibleError(f"group privacy for {self.group} rows gives δ >= 1 per "
                                  "mechanism: no guarantee remains")
        return eps_g, log_dg

    def holds(self, eps: float, log_d: float, k: int, total_eps: float, log_total: float) -> bool:
        """Certified: the composition is (total_eps, e^log_total)-DP."""
        eps, log_d = self.per_mechanism(eps, log_d)
        if log_d >= 0:
            return False
        rel = self.rel
        if self.method == "basic":
            e, ld = rel.basic(eps, log_d, k)
            return e <= total_eps and ld <= log_total
        if self.method == "advanced":
            if self.log_slack is None:  # the largest slack the budget allows (rounded down)
                return rel.advanced_best(eps, log_d, k, log_total)[0] <= total_eps
            if rel.advanced_log_total_delta(log_d, k, self.log_slack) > log_total:
                return False
            return rel.advanced_epsilon(eps, k, self.log_slack) <= total_eps
        return rel.optimal_log_delta(eps, log_d, k, total_eps) <= log_total

    def holds_exact(self, eps: Number, delta: Number, k: int, total_eps: Number,
                    total_delta: Number) -> bool:
        """``holds`` on the exact inputs: a budget equal to the basic totals (kε, kδ) passes.

        Basic and optimal composition meet (kε, kδ) exactly [DR14, Thm 3.16; KOV15, Thm 3.3],
        which the log-space bounds (padded up) cannot certify when the budget is exactly kδ.
        """
        exact = exact_value  # a tie between exact inputs (δ and total δ as written) is a tie
        if self.method != "advanced" and self.group in (None, 1) and self.rel.basic_fits(
                exact(eps), exact(delta), k, exact(total_eps), exact(total_delta)):
            return True
        return self.holds(eps, log_of(delta), k, total_eps, log_of(total_delta))

    def total_epsilon_guess(self, eps: float, log_d: float, k: int,
                            log_total: float) -> float | None:
        """A closed-form (or exactly bisected) total ε for the solver to verify."""
        eps_g, log_dg = self.per_mechanism(eps, log_d)
        if log_dg >= 0:
            return None
        if self.method == "optimal":
            guess = self.rel.optimal_epsilon(eps_g, log_dg, k, log_total)
        elif self.method == "advanced" and self.log_slack is None:
            guess = self.rel.advanced_best(eps_g, log_dg, k, log_total)[0]
        else:
            guess = self.total_epsilon(eps, log_d, k)  # applies group privacy itself
        return guess if math.isfinite(guess) and guess > 0 else None

    def k_guess(self, eps: float, log_d: float, total_eps: float, total_d: Number) -> int | None:
        """The optimal theorem's own exact search for the largest k (verified by the caller)."""
        eps_g, log_dg = self.per_mechanism(eps, log_d)
        if self.method != "optimal" or log_dg >= 0 or not 0 < eps_g < math.inf:
            return None
        from dpcalc.relations.compose_count import optimal_largest_k

        return optimal_largest_k(eps_g, log_dg, total_eps, log_of(total_d), MAX_K) or None

    def total_epsilon(self, eps: float, log_d: float, k: int) -> float:
        """The total ε when total δ is determined (basic, advanced with a slack, or k = 1)."""
        eps, log_d = self.checked_per_mechanism(eps, log_d)
        if self.method == "advanced" and self.log_slack is not None:
            return self.rel.advanced_epsilon(eps, k, self.log_slack)
        return self.rel.basic(eps, log_d, k)[0]

    def log_total_delta(self, eps: float, log_d: float, k: int) -> float:
        eps, log_d = self.checked_per_mechanism(eps, log_d)
        if self.method == "advanced" and self.log_slack is not None:
            return self.rel.advanced_log_total_delta(log_d, k, self.log_slack)
        return self.rel.basic(eps, log_d, k)[1]


def _compose(*, epsilon: object = None, delta: object = None, k: object = None,
             total_epsilon: object = None, total_delta: object = None, method: str | None = None,
             delta_slack: object = None, group: object = None, records: list | None = None,
             solve_for: str | None = None, fprs=(), tpr: object = None) -> Result:
    """Compose k (ε, δ)-DP mechanisms (or a heterogeneous list) and solve the one left out.

    Given totals are budgets: with ``total_delta`` given, the solved total ε is the smallest
    for which the composition is (total ε, total δ)-DP. With ``delta_slack`` (advanced) the
    total δ = kδ + δ' is determined. ``group`` applies group privacy to each mechanism first.
    ``records`` (from ``--from``) switches to heterogeneous composition; records that
    describe mechanisms (or ``method="pld"``) make it a plan composed as one privacy loss
    distribution (dpcalc.api.plan; ``pld`` is then the default method).

    Raises:
        UsageError, DomainError: bad input. InfeasibleError: no value meets the budget.
    """
    if records is not None:
        from dpcalc.api.plan import is_plan

        if method == "pld" or (method is None and is_plan(records)):
            return _plan(records, epsilon, delta, k, total_epsilon, total_delta, method,
                         delta_slack, group, solve_for, fprs, tpr)
        for i, rec in enumerate(records, 1):
            if isinstance(rec, dict) and "mechanism" in rec:
                raise UsageError(f"--from: record {i} is a mechanism without an (ε, δ): "
                                 f"--method {method} composes (ε, δ) points; leave --method "
                                 "out (pld, one privacy loss distribution for the plan)")
    method = "optimal" if method is None else method
    if method == "pld":
        raise UsageError("--method pld composes a plan: give --from FILE|- (a list of "
                         "mechanisms)")
    check_choice(method, METHODS, "--method")
    log_slack = None
    if delta_slack is not None:
        if method != "advanced":
            raise UsageError("--delta-slack applies only to --method advanced")
        log_slack = log_of(DELTA_SLACK.parse(delta_slack))
    group_size = GROUP.parse(group) if group is not None else None
    if records is not None:
        from dpcalc.api.compose_list import compose_records

        _check_from(solve_for, (epsilon, delta, k), "")
        return compose_records(records, total_epsilon=total_epsilon, total_delta=total_delta,
                               method=method, log_slack=log_slack, group=group_size)

    given = {"epsilon": epsilon, "delta": delta, "k": k, "total_epsilon": total_epsilon,
             "total_delta": total_delta}
    params = (EPSILON, DELTA, K, TOTAL_EPSILON, TOTAL_DELTA)
    defaults = (("k", 1),) if group_size is not None else ()
    both_totals_missing = total_epsilon is None and total_delta is None
    if both_totals_missing and solve_for in (None, "total_epsilon", "total-epsilon"):
        values, unknown = leave_one_out({n: given[n] for n in ("epsilon", "delta", "k")} | {
            "total_epsilon": None}, params[:4], defaults=defaults, solve_for=solve_for)
        comp = _Composition(method, log_slack, group_size)
        if not (method == "basic" or log_slack is not None or values["k"] == 1):
            raise UsageError(f"give --total-delta (or --total-epsilon): {method} composition "
                             "trades total ε against total δ")
        log_d = log_of(values["delta"])
        total = comp.total_epsilon(values["epsilon"], log_d, values["k"])
        if not math.isfinite(total):
            term = "kε" if method == "basic" else "kε(e^ε − 1) term"
            raise InfeasibleError(f"{method} composition gives no finite total ε for ε = "
                                  f"{values['epsilon']:g} (its {term} overflows); "
                                  "no guarantee follows from it")
        values["total_epsilon"] = total
        values["total_delta"] = exp_up(comp.log_total_delta(values["epsilon"], log_d,
                                                            values["k"]))
        unknown = TOTAL_EPSILON
        value: Number | int = total
        comparison: tuple[Comparison, ...] = ()
        derived: tuple[str, ...] = ("total_delta",)
    else:
        values, unknown = leave_one_out(given, params, defaults=defaults, solve_for=solve_for)
        value = _solve(method, unknown.name, values, log_slack, group_size)
        comparison = tuple(_compare(method, unknown.name, values, group_size))
        values[unknown.name] = value
        derived = ()
    parameters = {n: values[n] for n in ("epsilon", "delta", "k", "total_epsilon",
                                          "total_delta")}
    extra: dict = {}
    if delta_slack is not None:
        parameters["delta_slack"] = DELTA_SLACK.parse(delta_slack)
    if group_size is not None:
        parameters["group"] = group_size
    notes = []
    if group_size is not None and group_size > 1:
        notes.append(f"group privacy for {group_size}-row neighbours applied to each mechanism: "
                     "(Kε, K·e^((K−1)ε)·δ) (Dwork & Roth 2014)")
    direction = "upper" if unknown.name.startswith("total") else "lower"
    return Result(
        command="compose", solved_for=unknown.name, value=value, parameters=parameters,
        method=method, direction=direction, reference=REFS[_REF[method]].short,
        comparison=comparison, notes=tuple(notes), extra=extra, symbols=_SYMBOLS,
        derived=derived)


def _check_from(solve_for: str | None, per_mechanism: tuple, alternative: str) -> None:
    """--from gives each mechanism: --solve-for and --epsilon/--delta/--k conflict with it."""
    if solve_for is not None:
        raise UsageError("--solve-for does not apply with --from: leave --total-epsilon or "
                         f"--total-delta out{alternative}")
    if any(v is not None for v in per_mechanism):
        raise UsageError("--from conflicts with --epsilon, --delta and --k: the list gives "
                         "each mechanism")


def _plan(records, epsilon, delta, k, total_epsilon, total_delta, method, delta_slack,
          group, solve_for, fprs=(), tpr=None) -> Result:
    """``--from`` with mechanism records: one PLD for the whole plan (dpcalc.api.plan)."""
    from dpcalc.api.plan import compose_plan

    _check_from(solve_for, (epsilon, delta, k), ", or give a record's number as null")
    if delta_slack is not None:
        raise UsageError("--delta-slack applies only to --method advanced")
    if group is not None:
        raise UsageError("--group with --from is not supported; apply group privacy per record")
    return compose_plan(records, total_epsilon=total_epsilon, total_delta=total_delta,
                        method=method, fprs=fprs, tpr=tpr)


def _solve(method: str, unknown: str, values: dict, log_slack: float | None,
           group: int | None) -> Number | int:
    """The private-side value of ``unknown`` for one theorem."""
    comp = _Composition(method, log_slack, group)
    eps, k = values.get("epsilon"), values.get("k")
    delta = values.get("delta")
    log_d = log_of(delta) if delta is not None else None
    total_eps = values.get("total_epsilon")
    total_d = values.get("total_delta")
    holds = comp.holds_exact
    if unknown == "total_epsilon":
        if not holds(eps, delta, k, math.inf, total_d):
            raise InfeasibleError("the total δ budget is too small for any total ε "
                                  f"({method} composition)")
        guess = comp.total_epsilon_guess(eps, log_d, k, log_of(total_d))
        if guess is None and holds(eps, delta, k, _kfold(eps, k), total_d):
            guess = _kfold(eps, k)  # the budget is exactly Σδ: kε (rounded up) is the answer
        if guess is None and method == "advanced" and log_slack is None:
            raise InfeasibleError("advanced composition needs a total δ above kδ (its slack δ' "
                                  "must be > 0)")
        value = solve_unknown(TOTAL_EPSILON, lambda e: holds(eps, delta, k, e, total_d),
                              guess=guess)
        if not math.isfinite(value):
            raise InfeasibleError(f"{method} composition gives no finite total ε here")
        return value
    if unknown == "total_delta":
        if method == "optimal" or (method == "basic" and holds(eps, delta, k, total_eps, 1.0)):
            eps_g, log_dg = comp.checked_per_mechanism(eps, log_d)
            log_delta_tot = (comp.rel.optimal_log_delta(eps_g, log_dg, k, total_eps)
                             if method == "optimal" else comp.log_total_delta(eps, log_d, k))
            if math.isnan(log_delta_tot):
                raise InfeasibleError("the total δ could not be evaluated at this total ε")
            if log_delta_tot >= 0:  # δ_tot >= 1: the true, vacuous statement δ = 1
                return 1.0
            return exp_up(log_delta_tot)
        if method == "basic":
            raise InfeasibleError(f"basic composition needs total ε >= kε = {k * eps:g}")
        # δ = 0 is not probed first: the search approaches it from above
        return solve_unknown(TOTAL_DELTA, lambda d: holds(eps, delta, k, total_eps, d),
                             low_open=True)
    if unknown == "k":
        return solve_unknown(K, lambda n: holds(eps, delta, n, total_eps, total_d),
                             guess=comp.k_guess(eps, log_d, total_eps, total_d))
    if unknown == "epsilon":
        return solve_unknown(EPSILON, lambda e: holds(e, delta, k, total_eps, total_d),
                             guess=total_eps / k if total_eps > 0 else None) \
            if holds(0.0, delta, k, total_eps, total_d) else _infeasible("ε", 0.0)
    if not holds(eps, 0.0, k, total_eps, total_d):
        return _infeasible("δ", 0)
    return solve_unknown(DELTA, lambda d: holds(eps, d, k, total_eps, total_d))


def _kfold(eps: float, k: int) -> float:
    """kε rounded up [DR14, Thm 3.16]."""
    from fractions import Fraction

    from dpcalc.numeric.directed import up

    exact = Fraction(k) * Fraction(eps)
    if exact > Fraction(sys.float_info.max):
        return math.inf        # beyond the double range: no finite total
    value = float(exact)
    return up(value) if Fraction(value) < exact else value


def _infeasible(name: str, at: float):
    raise InfeasibleError(f"even {name} = {at:g} per mechanism misses the total budget")


_SEED_NOTES = {
    "che19_claim17_nonadaptive": ("Che19", "a(ε) form, Claim 17: non-adaptive composition only"),
    "che19_claim18_adaptive": ("Che19", "a(ε) form, Claim 18 (adaptive)"),
    "ubc_sqrt8k": ("UBC", "ε√(8k ln(1/δ')), Thm 8: shown only where it is >= advanced"),
}


def _compare(method: str, unknown: str, values: dict, group: int | None):
    """The same unknown by the other theorems (advanced with its slack optimised), and the
    seed texts' advanced-composition variants for a total ε."""

    for other in METHODS:
        if other == method:
            continue
        try:
            v = _solve(other, unknown, values, None, group)
            yield Comparison(other, v, REFS[_REF[other]].short)
        except comparison_failures() as exc:
            yield Comparison(other, None, REFS[_REF[other]].short, failure_note(exc))
    if unknown == "total_epsilon" and group in (None, 1):
        from dpcalc.relations.compose_group import seed_variants

        variants = seed_variants(values["epsilon"], log_of(values["delta"]), values["k"],
                                     log_of(values["total_delta"]))
        for name, v in variants.items():
            key, note = _SEED_NOTES[name]
            yield Comparison(name, v, REFS[key].short, note)


def compose(*, fpr: object = None, tpr: object = None, **kwargs) -> Result:
    """Compose k (ε, δ)-DP mechanisms (or a heterogeneous list); see ``_compose``.

    ``fpr`` (value or list, in (0, 1)) adds ``extra["risk"]``: the TPR bound at each FPR from
    the reported (ε, δ) point only (no profile of the mechanism is known here; the note says
    so) [KOV15, Thm 2.1] — except for a ``--from`` plan (composed as one PLD), whose risk is
    read from its own profile (exact for Gaussians, else the certified PLD) [DRS19, Prop
    2.12], and where a ``tpr`` target (with one ``fpr``) solves the record's null number.
    """
    from dpcalc.api import _risk

    fprs = _risk.parse_fprs(fpr)
    records, method = kwargs.get("records"), kwargs.get("method")
    if records is not None:
        from dpcalc.api.plan import is_plan

        if method == "pld" or (method is None and is_plan(records)):
            return _compose(**kwargs, fprs=fprs, tpr=tpr)     # the plan reads its profile
    target = _risk.parse_target(tpr, fprs, {k: kwargs.get(k) for k in (
        "total_epsilon", "total_delta")})
    if target is not None:
        if records is not None:
            raise UsageError("--tpr with --from needs a plan of mechanisms (with one null "
                             "number); a list of (ε, δ) points has none to solve")
        return _for_tpr(target, fprs[0], kwargs)
    result = _compose(**kwargs)
    if not fprs:
        return result
    profile = advantage = None
    v = result.parameters
    if result.method == "optimal" and records is None and kwargs.get("group") is None:
        from dpcalc.relations import compose as rel

        # every point of the optimal composition's profile bounds the TPR: the best one; its
        # δ(0) bounds the advantage (the pair is symmetric) [KOV15, Thm 3.3]
        def profile(a: float) -> float:
            return _optimal_tpr(v["epsilon"], v["delta"], v["k"], a)[0]

        advantage = min(1.0, exp_up(rel.optimal_log_delta(v["epsilon"], log_of(v["delta"]),
                                                           v["k"], 0.0)))
    return _risk.attach(result, _risk.point_block(v, "total_epsilon", "total_delta", fprs,
                                                  profile, advantage))


def _optimal_tpr(eps: float, delta: float, k: int, alpha: float) -> tuple[float, float, float]:
    """(TPR bound at FPR α, E, δ_tot(E)) from the exact optimal composition's profile.

    Every E >= 0 gives a valid point (E, δ_tot(E)) of the k-fold composition, whose curve
    bounds the TPR [KOV15, Thm 2.1 and Thm 3.3]; the search over E only chooses the tightest
    (any choice is sound, so it needs no rounding care), and δ_tot(E) is an upper bound.
    """
    from dpcalc.numeric.optimize import minimize_on_grid
    from dpcalc.relations import compose as rel
    from dpcalc.relations import risk

    log_d = log_of(delta)

    def bound(e: float) -> float:
        d = min(1.0, exp_up(rel.optimal_log_delta(eps, log_d, k, e)))
        return float(risk.point_tpr(e, d, alpha)[1])

    e_best, tpr = minimize_on_grid(bound, 0.0, max(k * eps, 1e-12), 24, iterations=30)
    return tpr, e_best, min(1.0, exp_up(rel.optimal_log_delta(eps, log_d, k, e_best)))


def _for_tpr(target: float, alpha: float, kwargs: dict) -> Result:
    """The largest k, per-mechanism ε or δ (the one left out) whose optimal k-fold composition
    bounds the TPR at FPR ``alpha`` by ``target``, through the one solver (the bound grows with
    each, so the predicate is monotone)."""
    from dpcalc.api import _risk

    method = kwargs.get("method") or "optimal"
    if method != "optimal" or kwargs.get("group") is not None or \
            kwargs.get("delta_slack") is not None:
        raise UsageError("--tpr on compose uses the exact optimal composition's profile: give "
                         "no --method (or optimal), --group or --delta-slack")
    given = {"epsilon": kwargs.get("epsilon"), "delta": kwargs.get("delta"), "k": kwargs.get("k")}
    values, unknown = leave_one_out(given, (EPSILON, DELTA, K), solve_for=kwargs.get(
        "solve_for"))
    name = unknown.name

    def tpr_at(x) -> float:
        v = {**values, name: x}
        return _optimal_tpr(v["epsilon"], v["delta"], v["k"], alpha)[0]

    value = solve_unknown(unknown, lambda x: tpr_at(x) <= target,
                          name=None if name == "k" else name)
    values[name] = value
    bound, e_best, d_best = _optimal_tpr(values["epsilon"], values["delta"], values["k"], alpha)
    parameters = {"epsilon": values["epsilon"], "delta": values["delta"], "k": values["k"],
                  "total_epsilon": e_best, "total_delta": d_best, "tpr": target, "fpr": alpha}
    result = Result(
        command="compose", solved_for=name, value=value, parameters=parameters,
        method="optimal", direction="lower", reference=REFS[_REF["optimal"]].short,
        notes=("the total (ε, δ) shown is the point of the optimal composition's profile that "
               "bounds the TPR at the FPR most tightly",), symbols=_SYMBOLS,
        derived=("total_epsilon", "total_delta"))
    return _risk.attach(result, _risk.point_block(parameters, "total_epsilon", "total_delta",
                                                  (alpha,)))
