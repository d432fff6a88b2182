"""``compose --from`` with mechanisms: a plan composed as one privacy loss distribution.

A record describes a mechanism (``{"mechanism": "gaussian", "sigma": 2}``; ``laplace``,
``subsampled-laplace`` — every mechanism with a record in dpcalc.mechanisms.PAIRS — and
``dpsgd``, ``subsampled-gaussian``), the ``--json`` output of ``gaussian``, ``laplace`` or
``dpsgd`` (its ``parameters`` describe the mechanism), or a bare ``{"epsilon", "delta"}``
point; each may carry ``"count": n``.  Every record becomes a dominating pair
(dpcalc.mechanisms; an (ε, δ) point becomes the pair of [KOV15, Thm 2.1]) and the PLD engine
composes the whole plan with one certified bracket [KJH20].  Plans of Gaussians only are
composed exactly: one Gaussian with μ² = Σ n·(Δ/σ)² [DRS19, Cor 3.3].

Leave one out: one record may give ``null`` for one of sigma, scale, q, steps, epochs, count;
with --total-epsilon and --total-delta it is solved through the one solver on the private
side (smallest noise; largest q, steps, epochs, count).  ``solved_for`` is
``records[i].field`` with i counted from 0 (messages count records from 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from dpcalc.api.compose_list import MECH_DELTA, MECH_EPSILON, TOTAL_EPSILON  # noqa: E402, I001
from dpcalc.errors import DomainError, InfeasibleError, UsageError
from dpcalc.mechanisms import records
from dpcalc.numeric.directed import UNIT_ROUNDOFF, exp_up, log_of
from dpcalc.params import INF, SCALE, SENSITIVITY, SIGMA, Param, shown
from dpcalc.references import REFS
from dpcalc.result import Bounds, Comparison, Result
from dpcalc.solve import solve_unknown

Q = Param("q", 0.0, 1.0, True, False, "smaller", symbol="q")
STEPS = Param("steps", 0, INF, True, True, "smaller", integer=True, symbol="steps")
EPOCHS = Param("epochs", 0.0, INF, True, True, "smaller", symbol="epochs")
COUNT = Param("count", 0, INF, True, True, "smaller", integer=True, symbol="count")
SIZE = Param("size", 0, INF, True, True, "smaller", integer=True, symbol="size")
# a record's (ε, δ) is a mechanism's guarantee: read up (compose_list.MECH_*), never down
_PARAMS = {"sigma": SIGMA, "scale": SCALE, "sensitivity": SENSITIVITY, "q": Q, "steps": STEPS,
           "epochs": EPOCHS, "count": COUNT, "epsilon": MECH_EPSILON, "delta": MECH_DELTA,
           "batch_size": SIZE, "dataset_size": SIZE}
NULLABLE = ("sigma", "scale", "q", "steps", "epochs", "count")
#: fields of the record kinds that are not a registered mechanism's (beyond "mechanism"
#: and "count"); the registered ones declare theirs in dpcalc.mechanisms.PAIRS
_OWN_FIELDS = {
    "dpsgd": ("q", "batch_size", "dataset_size", "sigma", "epochs", "steps", "sampling",
              "relation", "examples_per_user"),
    "subsampled-gaussian": ("q", "sigma", "steps"),
    "point": ("epsilon", "delta"),
}


def record_fields() -> dict[str, tuple[str, ...]]:
    """Every record kind and its fields: the registry's mechanisms first."""
    return {**{name: record.fields for name, record in records().items()}, **_OWN_FIELDS}


_OUTPUT_KINDS = {"gaussian": "gaussian", "laplace": "laplace", "dpsgd": "dpsgd"}
MAX_STEPS = 10**9


def is_plan(records: list[dict]) -> bool:
    """True when some record describes a mechanism, or a bare record leaves a number out
    (null, to be solved: only a plan solves one), then the plan path applies."""
    return any("mechanism" in r or r.get("command") in _OUTPUT_KINDS
               or (r.get("command") is None and None in r.values()) for r in records)


@dataclass
class _Rec:
    position: int                      # 1-based
    kind: str
    values: dict = field(default_factory=dict)
    count: int | None = 1
    point: tuple | None = None          # (ε, δ) stated by a --json output, for comparisons


def _fail(pos: int, name: str, param: Param, raw: object):
    return DomainError(f'--from: record {pos}: "{name}" must be {param.range_text()}, '
                       f"got {shown(raw)}")


def _number(pos: int, name: str, raw: object, nulls: list):
    if raw is None:
        if name not in NULLABLE:
            raise UsageError(f'--from: record {pos}: "{name}" cannot be null (only one of '
                             f"{', '.join(NULLABLE)} may be left out)")
        nulls.append((pos, name))
        return None
    param = _PARAMS[name]
    if isinstance(raw, bool | str | list | dict):
        raise _fail(pos, name, param, raw)
    try:
        return param.parse(raw)
    except DomainError:
        raise _fail(pos, name, param, raw) from None


def _parse(rec: dict, pos: int, nulls: list) -> _Rec:
    command = rec.get("command")
    if command in _OUTPUT_KINDS and "mechanism" not in rec:
        fields = rec.get("parameters")
        if not isinstance(fields, dict):
            raise UsageError(f'--from: record {pos}: a {command} output needs its "parameters"')
        kind = _OUTPUT_KINDS[command]
        out = _Rec(pos, kind)
        names = ("q", "sigma", "steps") if kind == "dpsgd" else record_fields()[kind]
        for name in names:
            if name in fields:
                out.values[name] = _number(pos, name, fields[name], nulls)
        for name in ("sampling", "relation", "examples_per_user"):
            if name in fields:
                out.values[name] = fields[name]
        if "epsilon" in fields and "delta" in fields:
            out.point = (_number(pos, "epsilon", fields["epsilon"], []),
                         _number(pos, "delta", fields["delta"], []))
        if "count" in rec:  # an output record repeated, like any other record
            out.count = _number(pos, "count", rec["count"], nulls)
        _check_dpsgd(out)
        return out
    if command is not None and "mechanism" not in rec:
        raise UsageError(f"--from: record {pos}: not a mechanism record (command {command!r})")
    kind = rec.get("mechanism", "point")
    kinds = record_fields()
    if kind not in kinds or kind == "point" and "mechanism" in rec:
        raise UsageError(f"--from: record {pos}: unknown mechanism {kind!r} (expected one of "
                         f"{', '.join(k for k in kinds if k != 'point')})")
    out = _Rec(pos, kind)
    for name, raw in rec.items():
        if name in ("mechanism", "count"):
            continue
        if name not in kinds[kind]:
            raise UsageError(f'--from: record {pos}: unknown field "{name}" for '
                             f"{'an (epsilon, delta) point' if kind == 'point' else kind} "
                             f"(fields: {', '.join(kinds[kind] + ('count',))})")
        if name in ("sampling", "relation", "examples_per_user"):
            out.values[name] = raw
        else:
            out.values[name] = _number(pos, name, raw, nulls)
    if "count" in rec:
        out.count = _number(pos, "count", rec["count"], nulls)
    _check_dpsgd(out)
    return out


def _check_dpsgd(r: _Rec) -> None:
    pos, v = r.position, r.values
    if r.kind == "dpsgd":
        for name, allowed in (("sampling", "poisson"), ("relation", "add-remove"),
                              ("examples_per_user", 1)):
            if name in v and v[name] != allowed:
                raise UsageError(f'--from: record {pos}: "{name}" {v[name]!r} has no dominating '
                                 f"pair yet (plans account {name} = {allowed!r} only)")
        if "batch_size" in v or "dataset_size" in v:
            if "q" in v:
                raise UsageError(f'--from: record {pos}: give "q" or "batch_size" with '
                                 '"dataset_size", not both')
            b, n = v.pop("batch_size", None), v.pop("dataset_size", None)
            if b is None or n is None or b > n:
                raise UsageError(f'--from: record {pos}: "batch_size" and "dataset_size" go '
                                 "together, with batch_size <= dataset_size")
            # q rounded up (more sampling is the private side)
            q = b / n
            v["q"] = min(1.0, q if Fraction(q) >= Fraction(b, n) else math.nextafter(q, 2.0))
        if "epochs" in v and "steps" in v:
            raise UsageError(f'--from: record {pos}: give "epochs" or "steps", not both')
    registered = records()
    required = registered[r.kind].required if r.kind in registered else {
        "point": ("epsilon", "delta"), "subsampled-gaussian": ("q", "sigma", "steps"),
        "dpsgd": ("q", "sigma")}[r.kind]
    for name in required:
        if name not in v:
            raise UsageError(f'--from: record {pos}: a {r.kind} record needs "{name}"')
    if r.kind == "dpsgd" and "epochs" not in v and "steps" not in v:
        raise UsageError(f'--from: record {pos}: a dpsgd record needs "epochs" or "steps"')


def _steps(r: _Rec, v: dict) -> int:
    if "steps" in v:
        return int(v["steps"])
    steps = max(1, math.ceil(Fraction(v["epochs"]) / Fraction(v["q"])))   # ⌈epochs/q⌉
    if steps > MAX_STEPS:
        raise DomainError(f"--from: record {r.position}: {steps:.3g} steps; plans account for "
                          f"at most {MAX_STEPS:.0e}")
    return steps


def _items_of(r: _Rec, v: dict, count: int) -> list:
    """[(pair, count)] of one record, with the values v (the unknown filled in); a DP-SGD
    record's pairs come from run_items (the pairs of its setting, or an error)."""
    from dpcalc.api._dpsgd_items import record_scheme, run_items
    from dpcalc.mechanisms import pair_class

    registered = records()
    if r.kind in registered:   # a registered mechanism builds its own pair
        record = registered[r.kind]
        repeats = int(v[record.repeats]) if record.repeats else 1
        if count * repeats > MAX_STEPS:
            raise DomainError(f"--from: record {r.position}: {count * repeats:.3g} "
                              f"compositions; plans account for at most {MAX_STEPS:.0e}")
        return [(pair_class(r.kind).from_record(v), count * repeats)]
    if r.kind == "point":
        return [(pair_class("eps-delta")(float(v["epsilon"]), log_of(v["delta"])), count)]
    return run_items(float(v["q"]), float(v["sigma"]), count * _steps(r, v), record_scheme(v))


def _gaussian_sigma_eff(items) -> float:
    """1/μ of a plan of Gaussians, μ = √(Σ n/σ_i²) rounded up [DRS19, Cor 3.3], formed
    relative to the smallest σ (1/σ² overflowed at σ = 1e-155 and vanished at 1e155, where
    the gaussian command answers): σ₀/√(Σ n(σ₀/σ_i)²), each ratio at most 1."""
    s0 = min(p.sigma for p, _ in items)
    r = math.sqrt(math.fsum(n * (s0 / p.sigma) ** 2 for p, n in items))
    return math.nextafter(s0 / (r * (1.0 + 16.0 * UNIT_ROUNDOFF)), 0.0)


class _Plan:
    """The parsed records and the forward evaluations the solver needs."""

    def __init__(self, recs: list[_Rec], tolerance: float):
        self.recs = recs
        self.tol = tolerance
        self.td_given = None        # the --total-delta as given (see _at_own_delta)
        self.gaussian = all(r.kind == "gaussian" for r in recs)

    def items(self, fill=None):
        out = []
        for i, r in enumerate(self.recs):
            v, count = dict(r.values), r.count
            if fill is not None and fill[0] == i:
                if fill[1] == "count":
                    count = fill[2]
                else:
                    v[fill[1]] = fill[2]
            out.extend(_items_of(r, v, count))
        return out

    def epsilon(self, log_td: float, fill=None):
        """(upper bound on total ε, bracket or None when exact)."""
        items = self.items(fill)
        from dpcalc.pld import accountant

        if log_td == -math.inf:
            # δ = 0: the sum of the losses' hard upper edges, or no ε at all (exit 1)
            top = accountant.epsilon_at_delta_zero(items)
            if top == math.inf:
                raise InfeasibleError("no total ε meets --total-delta 0: a record's privacy "
                                      "loss is unbounded (δ = 0 needs pure DP)")
            return top, None
        if self.gaussian:
            from dpcalc.relations import gaussian as grel

            s = _gaussian_sigma_eff(items)
            try:
                return solve_unknown(TOTAL_EPSILON,
                                     lambda e: grel.analytic_log_delta(s, e) <= log_td), None
            except InfeasibleError:
                if fill is None and s < 1e-154:   # as the gaussian command says (μ > 1e154)
                    raise DomainError(f"--from: the Gaussians compose to one of σ/Δ = {s:.3g}; "
                                      "below 1e-154 the total ε leaves the double range"
                                      ) from None
                raise
        from dpcalc.pld import BelowInfinityMass

        try:
            lo, up = _certified(lambda: accountant.epsilon_bounds(items, log_td, self.tol), items)
        except BelowInfinityMass:
            top = self._at_own_delta(fill, log_td)
            if top is not None:
                return top, None
            raise InfeasibleError("no total ε meets --total-delta: it is at or below the δ "
                                  "the records spend at any ε (1 − Π(1 − δ_i))") from None
        return up, (lo, up)

    def _at_own_delta(self, fill, log_td: float):
        """The sum of the largest finite losses when the only δ the records spend is one
        point's, once, and the total δ (the one given: its log is log_td) is at least that δ,
        compared as the numbers given: δ(ε) is then exactly that δ beyond the sum.  None
        otherwise (the engine's verdict, from logarithms rounded outward, stands)."""
        from dpcalc.pld import accountant

        td = self.td_given
        if td is None or log_of(td) != log_td:
            return None
        spent = []
        for i, r in enumerate(self.recs):
            count = fill[2] if fill is not None and fill[0] == i and fill[1] == "count" \
                else r.count
            d = r.values.get("delta") if r.kind == "point" else None
            if fill is not None and fill[0] == i and fill[1] == "delta":
                d = fill[2]
            if d:
                spent.append((d, count))
        if len(spent) != 1 or spent[0][1] != 1 or not td >= spent[0][0]:
            return None
        top = accountant.epsilon_beyond_finite_losses(self.items(fill))
        return top if math.isfinite(top) else None

    def log_delta(self, te: float, fill=None):
        """(upper bound on log total δ, log bracket or None when exact)."""
        items = self.items(fill)
        if self.gaussian:
            from dpcalc.relations import gaussian as grel

            return grel.analytic_log_delta(_gaussian_sigma_eff(items), te), None
        from dpcalc.pld import accountant

        lo, up = _certified(lambda: accountant.log_delta_bounds(items, te, self.tol), items)
        return up, (lo, up)

    def holds(self, te: float, log_td: float, fill) -> bool:
        """Is the plan (te, td)-DP with the unknown filled in?  Decided on the same certified
        upper bound that the forward question reports (so a solved number round-trips)."""
        try:
            self.items(fill)
            return self.epsilon(log_td, fill)[0] <= te
        except (DomainError, InfeasibleError):
            return False


def _certified(fn, items=()):
    from dpcalc.errors import NumericalError
    from dpcalc.pld import BelowInfinityMass, PLDUncertifiable

    try:
        return fn()
    except BelowInfinityMass:
        raise                  # (not a grid's limit: the caller says no ε meets it)
    except PLDUncertifiable as exc:
        raise NumericalError(f"--from: the PLD grid cannot certify this plan ({exc})") from None
    except (ArithmeticError, RuntimeWarning):
        # a loss of 1e100 and more (Laplace at scale 1e-150: the CLI said only "outside the
        # range dpcalc can evaluate"): name it
        top = max((abs(x) for pair, _ in items for d in ("remove", "add")
                   for x in pair.loss_bounds(d) if math.isfinite(x)), default=0.0)
        if top > _LOSS_NAMED:
            raise DomainError(f"--from: a record's privacy loss reaches {top:.3g}; the plan's "
                              "PLD composes losses of moderate size: give that record more "
                              "noise (or a smaller epsilon)") from None
        raise


#: a plan whose evaluation overflows names its largest loss edge when it is above this
_LOSS_NAMED = 1e6


def compose_plan(records: list[dict], *, total_epsilon: object, total_delta: object,
                 method: str | None, tolerance: float = 1e-3, fprs=(),
                 tpr: object = None) -> Result:
    """Compose a plan of mechanisms (and (ε, δ) points) as one PLD; solve what is left out.

    ``fprs`` adds the attack risk (TPR bound at each FPR) from the plan's own profile: exact
    for a plan of Gaussians, else the certified PLD profile of its items [DRS19, Prop 2.12].
    ``tpr`` (a target T with exactly one FPR α, in place of the totals) solves the record's
    null so that the certified TPR bound at α is at most T.

    Raises:
        UsageError, DomainError: bad records or options. InfeasibleError: nothing fits.
    """
    from dpcalc.api.compose_list import TOTAL_DELTA, TOTAL_EPSILON

    nulls: list = []
    recs = [_parse(r, i, nulls) for i, r in enumerate(records, 1)]
    if len(nulls) > 1:
        listed = ", ".join(f'record {p} "{n}"' for p, n in nulls)
        raise UsageError(f"--from: leave exactly one number out (null); got {listed}")
    if method not in (None, "pld"):
        raise UsageError(f"--method {method} composes (ε, δ) points; a plan of mechanisms is "
                         "composed with --method pld (its default), which lists "
                         f"{method} beside it where every record states (ε, δ)")
    te = TOTAL_EPSILON.parse(total_epsilon) if total_epsilon is not None else None
    td = TOTAL_DELTA.parse(total_delta) if total_delta is not None else None
    plan = _Plan(recs, tolerance)
    plan.td_given = td
    n_mech = None if any(r.count is None for r in recs) else sum(r.count for r in recs)
    notes = [_how(recs, plan.gaussian, pure=td == 0.0)]
    from dpcalc.api import _risk

    target = _risk.parse_target(tpr, fprs, {"total_epsilon": total_epsilon,
                                            "total_delta": total_delta})
    if target is not None:
        if not nulls:
            raise UsageError("--tpr with --from solves a record's number: give it as null "
                             "(or leave --tpr out and read --fpr)")
        return _solve_null(plan, recs, nulls[0], None, None, notes, target=(fprs[0], target))
    if nulls:
        if te is None or td is None:
            raise UsageError("--from: a record leaves a number out (null): give both "
                             "--total-epsilon and --total-delta")
        return _solve_null(plan, recs, nulls[0], te, td, notes, fprs)
    if te is not None and td is not None:
        raise UsageError("too many parameters: with --from leave --total-epsilon or "
                         "--total-delta out")
    if te is None and td is None:
        raise UsageError("give --total-delta (or --total-epsilon) with --from")
    bounds = None
    if te is None:
        value, br = plan.epsilon(log_of(td))
        solved_for, te_v, td_v = "total_epsilon", value, td
        if br is not None:
            bounds = Bounds(br[0], br[1])
    else:
        lup, br = plan.log_delta(te)
        value = exp_up(lup)
        solved_for, te_v, td_v = "total_delta", te, value
        if br is not None:
            from dpcalc.numeric.directed import exp_down

            bounds = Bounds(exp_down(br[0]) if br[0] > -math.inf else 0.0, value)
    parameters = {"k": n_mech, "total_epsilon": te_v, "total_delta": td_v}
    result = Result(
        command="compose", solved_for=solved_for, value=value, parameters=parameters,
        method="pld", direction="upper", reference=_reference(plan.gaussian), bounds=bounds,
        comparison=tuple(_comparison(plan, recs, te, td)), notes=tuple(notes),
        extra={"mechanisms": len(recs), "exact_gaussian": plan.gaussian},
        symbols={"k": "mechanisms", "total_epsilon": "total ε", "total_delta": "total δ"})
    if not fprs:
        return result
    from dpcalc.api._risk_plan import plan_risk

    return _risk.attach(result, plan_risk(plan, None, fprs, (te_v, td_v)))


def _reference(gaussian: bool) -> str:
    return REFS["DRS19" if gaussian else "KJH20"].short


def _how(recs: list[_Rec], gaussian: bool, pure: bool = False) -> str:
    if pure and not gaussian:
        return ("total δ = 0 (pure DP): the sum of every mechanism's largest privacy loss, "
                "n·ε₀ per record, which is what they compose to (rounded up; exact where a "
                "record states ε₀ exactly: Laplace Δ/b, an (ε, 0) point)")
    if gaussian:
        return ("every record is a Gaussian mechanism: composed exactly as one Gaussian with "
                "μ² = Σ n·(Δ/σ)² (Dong, Roth & Su 2019)")
    points = [str(r.position) for r in recs if r.kind == "point"]
    text = ("composed as one privacy loss distribution (certified bracket, both neighbour "
            "directions; Koskela, Jälkö & Honkela 2020)")
    if points:
        text += (f"; record{'s' if len(points) > 1 else ''} {', '.join(points)} "
                 f"{'are' if len(points) > 1 else 'is an'} (ε, δ) point"
                 f"{'s' if len(points) > 1 else ''}, each composed as the worst-case pair of "
                 "an (ε, δ) guarantee (Kairouz, Oh & Viswanath 2015): tight for what a point "
                 "states")
    return text


def _comparison(plan: _Plan, recs: list[_Rec], te, td) -> list[Comparison]:
    """optimal / advanced / basic on each record's (ε, δ): the one it states (a point, a
    --json output), or else, for a total ε, its own certified ε at an equal share of the
    total δ (δ/n each for basic; δ/(2n) for the others, which need slack)."""
    from dpcalc.api._common import comparison_failures, failure_note
    from dpcalc.api.compose_list import compose_records

    stated = all((r.kind == "point" or r.point is not None) and r.count is not None
                 and r.count <= 10_000 for r in recs)
    derive = not stated and te is None and len(recs) <= 50
    out = []
    for other in ("optimal", "advanced", "basic"):
        ref = REFS[{"optimal": "KOV15", "advanced": "DRV10", "basic": "DR14"}[other]].short
        if not (stated or derive):
            out.append(Comparison(other, None, ref, "needs an (ε, δ) for every record"))
            continue
        try:
            points = _points(plan, recs, td, 1 if other == "basic" else 2, stated)
            res = compose_records(points, total_epsilon=te, total_delta=td, method=other,
                                  log_slack=None, group=None)
            note = ("on the records' (ε, δ) points" if stated else
                    f"each record's ε at δ/{len(recs) * (1 if other == 'basic' else 2)}")
            if not math.isfinite(float(res.value)):
                out.append(Comparison(other, None, ref, f"{other}: the records' δ leave no "
                                      "room under the total δ"))
                continue
            out.append(Comparison(other, res.value, ref, note))
        except (UsageError, *comparison_failures()) as exc:
            out.append(Comparison(other, None, ref, failure_note(exc)))
    return out


def _points(plan: _Plan, recs: list[_Rec], td, share: int, stated: bool) -> list[dict]:
    out = []
    for r in recs:
        if stated:
            p = (r.values["epsilon"], r.values["delta"]) if r.kind == "point" else r.point
            out.extend([{"epsilon": p[0], "delta": p[1]}] * r.count)
            continue
        # an equal share, rounded down so that the shares sum to at most the total
        d_i = float(td) / (share * len(recs)) * (1.0 - 1e-12)
        one = _Plan([r], plan.tol)
        out.append({"epsilon": one.epsilon(math.log(d_i) if d_i > 0 else -math.inf)[0],
                    "delta": d_i})
    return out


def _solve_value(check, recs: list[_Rec], i: int, name: str, path: str, guess=None,
                 rtol: float = 2e-5):
    """The private-side value of record i's ``name`` under the monotone certified predicate
    check(fill) (fill = (i, field, value)), and the direction of the claim (``rtol``: the
    relative resolution of a real-valued unknown; the passing side is returned)."""
    def holds(x):
        return check((i, name, x))

    if name in ("sigma", "scale"):
        # the PLD bound is 1e-3 tight: 2e-5 on the noise is plenty (holds decides the side)
        return solve_unknown(_PARAMS[name], holds, name=path, rtol=rtol, guess=guess,
                             guess_rtol=1e-2), "upper"
    if name == "q":
        return solve_unknown(Q, holds, name=path, rtol=rtol, guess=guess if guess is not None
                             and 0 < guess < 1 else None, guess_rtol=1e-2), "lower"
    if name == "epochs":
        # the largest steps that fit, then the largest epochs with ⌈epochs/q⌉ ≤ those steps
        q = recs[i].values["q"]
        del recs[i].values["epochs"]
        try:
            n = solve_unknown(STEPS, lambda s: check((i, "steps", s)), name=path,
                              high=MAX_STEPS,
                              guess=None if guess is None else max(1, int(guess / q)))
        finally:
            recs[i].values["epochs"] = None
        value = float(Fraction(n) * Fraction(q))
        while math.ceil(Fraction(value) / Fraction(q)) > n:
            value = math.nextafter(value, 0.0)
        return value, "lower"
    # steps, count
    return solve_unknown(_PARAMS[name], holds, name=path, high=MAX_STEPS,
                         guess=None if guess is None else max(1, int(guess))), "lower"


def _solve_null(plan: _Plan, recs: list[_Rec], null, te, td, notes, fprs=(),
                target=None) -> Result:
    """Solve record ``null``'s number: for (te, td), or (target = (α, T)) so that the
    certified TPR bound at FPR α is at most T [DRS19, Prop 2.12]."""
    from dpcalc.api import _risk, _risk_plan

    pos, name = null
    i = pos - 1
    path = f"records[{i}].{name}"
    if target is None:
        log_td = log_of(td)

        def check(fill):
            return plan.holds(te, log_td, fill)

        value, direction = _solve_value(check, recs, i, name, path)
        goal = "--total-epsilon and --total-delta"
    else:
        value, direction, check = _risk_plan.solve_tpr(plan, recs, i, name, path, target,
                                                       _solve_value)
        goal = f"TPR {target[1]:g} at FPR {target[0]:g}"
    # the solver returns the passing side; checked once more
    if check((i, name, value)) is not True:
        raise InfeasibleError(f"no {path} meets {goal}")
    n_mech = sum((value if (j == i and name == "count") else r.count)
                 for j, r in enumerate(recs))
    notes = [*notes, f"{path} is record {pos}'s {name} (records counted from 0 in the path)"]
    if target is None:
        parameters = {path: value, "k": n_mech, "total_epsilon": te, "total_delta": td}
        symbols = {"total_epsilon": "total ε", "total_delta": "total δ"}
    else:
        parameters = {path: value, "k": n_mech, "tpr": target[1], "fpr": target[0]}
        symbols = {"tpr": "TPR", "fpr": "FPR"}
        how = "exact Gaussian trade-off" if plan.gaussian else "certified PLD profile"
        notes.append(f"{path} solved so that no membership-inference test exceeds TPR "
                     f"{target[1]:g} at FPR {target[0]:g} ({how})")
    result = Result(
        command="compose", solved_for=path, value=value, parameters=parameters,
        method="pld", direction=direction, reference=_reference(plan.gaussian),
        notes=tuple(notes), extra={"mechanisms": len(recs), "exact_gaussian": plan.gaussian},
        symbols={path: f"record {pos} {_PARAMS[name].symbol or name}", "k": "mechanisms",
                 **symbols})
    if target is not None:
        fprs = tuple(dict.fromkeys((target[0], *fprs)))
    if not fprs:
        return result
    point = None if target is not None else (te, td)
    certificate = None if target is None else target
    return _risk.attach(result, _risk_plan.plan_risk(plan, (i, name, value), fprs, point,
                                                     certificate))
