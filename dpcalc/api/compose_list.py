"""``compose --from``: heterogeneous composition of a list of mechanisms read as JSON.

Records are ``{"epsilon": …, "delta": …}`` or the ``--json`` output of another dpcalc command
(its ``parameters`` are used). A JSON array, one object, JSON lines, or several concatenated
JSON documents are all accepted. When every record is a Gaussian mechanism (it carries σ and Δ)
they compose exactly: a Gaussian with μ² = Σ(Δᵢ/σᵢ)² [DRS19, Cor 3.3].
"""

from __future__ import annotations

import json
import math
from decimal import Decimal

from dpcalc.api._common import comparison_failures, failure_note
from dpcalc.errors import InfeasibleError, UsageError
from dpcalc.numeric.directed import exp_up, log_of
from dpcalc.numeric.logspace import log_sub, log_sum
from dpcalc.params import INF, SENSITIVITY, SIGMA, Param, exact_value, shown
from dpcalc.references import REFS
from dpcalc.result import Comparison, Result
from dpcalc.solve import solve_unknown

TOTAL_EPSILON = Param("total_epsilon", 0.0, INF, False, True, "larger", symbol="total ε")
MECH_EPSILON = Param("epsilon", 0.0, INF, False, True, "smaller", symbol="ε")
MECH_DELTA = Param("delta", 0.0, 1.0, False, True, "smaller", tiny_ok=True, symbol="δ")
TOTAL_DELTA = Param("total_delta", 0.0, 1.0, False, True, "larger", tiny_ok=True,
                    symbol="total δ")


def parse_records(text: str) -> list[dict]:
    """Parse the JSON documents in ``text`` into a flat list of record objects.

    Raises:
        UsageError: malformed JSON, a non-object record, or an empty list (with the position).
    """
    decoder = json.JSONDecoder(parse_float=Decimal, parse_constant=_reject_constant)
    records: list = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos].isspace():
            pos += 1
        if pos >= n:
            break
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError) as exc:
            raise UsageError(f"--from: malformed JSON ({type(exc).__name__}: "
                             f"{str(exc)[:80]})") from None
        if isinstance(doc, list):
            records.extend(doc)
        else:
            records.append(doc)
    if not records:
        raise UsageError("--from: the list of mechanisms is empty")
    for i, rec in enumerate(records, 1):
        if not isinstance(rec, dict):
            raise UsageError(f"--from: record {i} is not a JSON object")
        for key in ("command", "mechanism", "sampling", "relation", "method"):
            if key in rec and not isinstance(rec[key], str):
                raise UsageError(f"--from: record {i}: {key!r} must be a string, got "
                                 f"{type(rec[key]).__name__}")
    return records


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a number")


# Which fields of a dpcalc --json output state the guarantee of the whole run it describes.
_GUARANTEE_KEYS = {
    None: ("epsilon", "delta"),
    "gaussian": ("epsilon", "delta"),
    "laplace": ("epsilon", "delta"),
    "rdp": ("epsilon", "delta"),
    "dpsgd": ("epsilon", "delta"),
    "compose": ("total_epsilon", "total_delta"),
    "subsample": ("amplified_epsilon", "amplified_delta"),
}
_GAUSSIAN_FIELDS = {"sigma", "sensitivity", "epsilon", "delta"}
#: the fields of a record that is not a dpcalc output (σ and Δ: a Gaussian's, see _mechanism)
_POINT_FIELDS = ("epsilon", "delta", "count", "sigma", "sensitivity")


def _mechanism(rec: dict, position: int) -> dict:
    """(ε, δ) of one record, plus σ/Δ when it is a single Gaussian mechanism.

    A dpcalc --json output contributes the guarantee of the whole run it describes: the
    totals of a ``compose``, the amplified pair of a ``subsample``, the (ε, δ) of the others.
    """
    command = rec.get("command")
    if not (command is None or isinstance(command, str)) or command not in _GUARANTEE_KEYS:
        raise UsageError(f"--from: record {position} comes from an unknown command {command!r}")
    fields = rec.get("parameters") if isinstance(rec.get("parameters"), dict) else rec
    if command is None and fields is rec:
        # a misspelt number must not drop out silently ("cuont": 3 composed the point once);
        # a text field is a note on the record ("note": "…"), read by no one (a record that
        # carries its numbers in "parameters", as an output does, is read as before)
        for name, raw in rec.items():
            if name not in _POINT_FIELDS and not isinstance(raw, str):
                raise UsageError(f'--from: record {position}: unknown field "{name}" for an '
                                 f"(epsilon, delta) point (fields: {', '.join(_POINT_FIELDS)})")
    out: dict = {}
    # a record's (ε, δ) is a mechanism's guarantee: read up when not a double (MECH_*)
    for name, param in zip(("epsilon", "delta"), (MECH_EPSILON, MECH_DELTA), strict=True):
        key = _GUARANTEE_KEYS[command][0 if name == "epsilon" else 1]
        raw = fields.get(key)
        if raw is None or isinstance(raw, bool | str | list | dict):
            raise UsageError(f"--from: record {position} needs a numeric {key!r}")
        try:
            out[name] = param.parse(raw)
        except UsageError as exc:
            raise UsageError(f"--from: record {position}: {exc}") from None
    # exact Gaussian composition only for a single Gaussian mechanism: a gaussian output, or a
    # raw record with nothing but σ, Δ, ε, δ
    is_gaussian = command == "gaussian" or (command is None and "sigma" in fields
                                            and set(fields) <= _GAUSSIAN_FIELDS)
    if is_gaussian and fields.get("sigma") is not None:
        try:
            out["sigma"] = SIGMA.parse(fields["sigma"])
            out["sensitivity"] = SENSITIVITY.parse(fields.get("sensitivity", 1))
        except UsageError as exc:
            raise UsageError(f"--from: record {position}: {exc}") from None
    return out


#: The most mechanisms a list of (ε, δ) points expands to (counts included); a longer plan
#: composes as one PLD (--method pld), whose cost does not grow with the count.
MAX_LISTED = 100_000


def _count(rec: dict, position: int) -> int:
    """How many times a record repeats (its "count", default 1).

    Raises:
        UsageError: a count that is not a whole number >= 1, or too large to list.
    """
    raw = rec.get("count", 1)
    if raw is None:
        raise UsageError(f'--from: record {position}: "count" is null: a record\'s number is '
                         "solved in a plan (leave --method out, or --method pld)")
    if isinstance(raw, bool) or not isinstance(raw, int | Decimal) or raw != int(raw) \
            or raw < 1:
        raise UsageError(f'--from: record {position}: "count" must be an integer >= 1, '
                         f"got {shown(raw)}")
    if raw > MAX_LISTED:
        raise UsageError(f'--from: record {position}: "count" {int(raw)} is more than '
                         f"{MAX_LISTED} mechanisms for --method optimal|advanced|basic; "
                         "use --method pld")
    return int(raw)


def compose_records(records: list[dict], *, total_epsilon: object, total_delta: object,
                    method: str, log_slack: float | None, group: int | None) -> Result:
    """Heterogeneous composition; solve total ε (or total δ) for the list."""
    from dpcalc.relations import compose as rel

    if group is not None:
        raise UsageError("--group with --from is not supported; apply group privacy per record")
    mechs = []
    for i, r in enumerate(records, 1):
        mechs.extend([_mechanism(r, i)] * _count(r, i))  # a record with "count": n, n times
    eps = [m["epsilon"] for m in mechs]
    deltas = [m["delta"] for m in mechs]
    log_ds = [log_of(d) for d in deltas]
    all_gaussian = all("sigma" in m for m in mechs)
    if total_epsilon is not None and total_delta is not None:
        raise UsageError("too many parameters: with --from leave --total-epsilon or "
                         "--total-delta out")
    te = TOTAL_EPSILON.parse(total_epsilon) if total_epsilon is not None else None
    td = TOTAL_DELTA.parse(total_delta) if total_delta is not None else None
    log_td = log_of(td) if td is not None else None

    def basic():
        e, ld = rel.basic_hetero(eps, log_ds)
        return e, ld

    def solve(which: str):
        """(value of the unknown, note) under one method."""
        if which == "basic":
            e, ld = basic()
            if te is None and td is None:
                return e, exp_up(ld)
            if te is None:
                if not rel.basic_hetero_fits(*_exact(eps, deltas, td)):
                    raise InfeasibleError("basic: Σδ exceeds --total-delta")
                return e, None
            if e > te:
                raise InfeasibleError("basic: Σε exceeds --total-epsilon")
            return exp_up(ld), None
        if which == "advanced":
            # Σδ padded up by 1e-12 relative (log_sum is accurate to a few ulps), so the slack
            # left under the budget, padded down again, is certified
            log_sum_d = log_sum(log_ds) + 1e-12
            if te is None and td is None:
                if log_slack is None:
                    raise UsageError("give --total-delta, --total-epsilon or --delta-slack")
                e = rel.advanced_hetero(eps, log_ds, log_slack)[0]
                return e, exp_up(rel.advanced_hetero(eps, log_ds, log_slack)[1])
            if te is None:
                if log_slack is not None:
                    e, ld = rel.advanced_hetero(eps, log_ds, log_slack)
                    if ld > log_td:
                        raise InfeasibleError("advanced: Σδ + δ' exceeds --total-delta")
                    return e, None
                if log_sum_d >= log_td:
                    raise InfeasibleError("advanced: Σδ leaves no slack under --total-delta")
                slack = log_sub(log_td, log_sum_d) - 1e-12
                return rel.advanced_hetero(eps, log_ds, slack)[0], None

            if log_slack is not None:  # δ' given: total δ = Σδ + δ' is determined
                e, ld = rel.advanced_hetero(eps, log_ds, log_slack)
                if e > te:
                    raise InfeasibleError("advanced: the total ε with this --delta-slack "
                                          "exceeds --total-epsilon")
                return exp_up(ld), None

            def holds_d(d: float) -> bool:
                if log_sum_d >= math.log(d):
                    return False
                slack = log_sub(math.log(d), log_sum_d) - 1e-12
                return rel.advanced_hetero(eps, log_ds, slack)[0] <= te

            return solve_unknown(TOTAL_DELTA, holds_d, low_open=True), None
        # optimal: exact for Gaussians, otherwise the numerical dominating-pair bound
        if all_gaussian:
            from dpcalc.relations import gaussian as grel

            mu = rel.gaussian_hetero_mu([m["sigma"] / m["sensitivity"] for m in mechs])
            sigma_eff = 1.0 / mu
            if te is None and td is None:
                raise UsageError("give --total-delta or --total-epsilon")
            if te is None:
                return solve_unknown(
                    TOTAL_EPSILON, lambda e: grel.analytic_log_delta(sigma_eff, e) <= log_td), None
            return exp_up(grel.analytic_log_delta(sigma_eff, te)), None
        if te is None and td is None:
            raise UsageError("give --total-delta or --total-epsilon")
        if te is None:
            e = rel.numerical_hetero_epsilon(eps, log_ds, log_td)
            if rel.basic_hetero_fits(*_exact(eps, deltas, td)):  # optimal is never above basic
                e = min(e, rel.basic_hetero_epsilon(eps))
            if not math.isfinite(e):
                raise InfeasibleError("no total ε meets --total-delta: it is below the δ the "
                                      "records spend at any ε (1 − Π(1 − δ_i))")
            return e, None
        return exp_up(rel.numerical_hetero_log_delta(eps, log_ds, te)), None

    value, derived_delta = solve(method)
    if te is None and td is None:
        solved_for, td_value = "total_epsilon", derived_delta
    else:
        solved_for = "total_epsilon" if te is None else "total_delta"
        td_value = td if te is not None or td is not None else None
    parameters = {"k": len(mechs),
                  "total_epsilon": value if solved_for == "total_epsilon" else te,
                  "total_delta": value if solved_for == "total_delta" else td_value}
    comparison = []
    for other in ("optimal", "advanced", "basic"):
        if other == method:
            continue
        try:
            comparison.append(Comparison(other, solve(other)[0], _ref(other, all_gaussian)))
        except (UsageError, *comparison_failures()) as exc:
            comparison.append(Comparison(other, None, _ref(other, all_gaussian),
                                         failure_note(exc)))
    notes = []
    if method == "optimal":
        notes.append("every record is a Gaussian mechanism: composed exactly as one Gaussian "
                     "with μ² = Σ(Δ/σ)² (Dong, Roth & Su 2019)" if all_gaussian else
                     "heterogeneous (ε, δ) list: exact optimal composition is #P-hard (Murtagh & "
                     "Vadhan 2016); this is a sound numerical upper bound from the composed "
                     "worst-case privacy-loss distributions")
    return Result(
        command="compose", solved_for=solved_for, value=value, parameters=parameters,
        method=method, direction="upper", reference=_ref(method, all_gaussian),
        comparison=tuple(comparison), notes=tuple(notes),
        extra={"mechanisms": len(mechs), "exact_gaussian": all_gaussian},
        symbols={"k": "mechanisms", "total_epsilon": "total ε", "total_delta": "total δ"})


def _exact(eps: list, deltas: list, td: object) -> tuple:
    """The inputs as written, for the exact Σδ <= total δ check (a tie is a tie)."""
    return ([exact_value(e) for e in eps], [exact_value(d) for d in deltas], math.inf,
            exact_value(td))


def _ref(method: str, all_gaussian: bool) -> str:
    key = {"basic": "DR14", "advanced": "DRV10",
           "optimal": "DRS19" if all_gaussian else "MV16"}[method]
    return REFS[key].short
