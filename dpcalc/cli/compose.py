"""``dpcalc compose``: composition of mechanisms and group privacy."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from dpcalc.cli.options import (
    METHOD,
    PARAMS,
    Debug,
    Format,
    Fpr,
    Json,
    MaxDelta,
    MaxEpsilon,
    MaxTpr,
    Tpr,
    Value,
    param,
    solve_for_option,
)
from dpcalc.cli.output import emit
from dpcalc.errors import UsageError
from dpcalc.mechanisms import records
from dpcalc.methods import COMPOSE


def _read(source: str) -> str:
    """The text of ``--from``: a file, or stdin for ``-``; JSON is read as UTF-8 (RFC 8259),
    whatever the locale."""
    try:
        if source == "-":
            stdin = getattr(sys.stdin, "buffer", sys.stdin)
            if stdin is None:
                raise UsageError("--from -: standard input is closed; give a file or pipe "
                                 "the records in")
            data = stdin.read()
        else:
            with open(source, "rb") as fh:
                data = fh.read()
        return data.decode("utf-8") if isinstance(data, bytes) else data
    except OSError as exc:
        raise UsageError(f"--from: cannot read {source!r}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--from: {source!r} is not UTF-8 text") from None


# the names --solve-for accepts (dpcalc.api.compose checks them; tests/test_cli_robust.py
# keeps the two in step)
SOLVE_FOR = ("epsilon", "delta", "k", "total-epsilon", "total-delta")
#: the record kinds of a plan: the registered mechanisms (dpcalc.mechanisms.PAIRS), then DP-SGD
_KINDS = " | ".join([*records(), "dpsgd", "subsampled-gaussian"])


def compose(
    ctx: typer.Context,
    epsilon: param("ε of each mechanism (>= 0).", "--epsilon") = None,
    delta: param("δ of each mechanism, in [0, 1).", "--delta") = None,
    k: param("Number of mechanisms (integer >= 1).", "--k") = None,
    total_epsilon: param("Total ε budget (>= 0).", "--total-epsilon") = None,
    total_delta: param("Total δ budget, in [0, 1).", "--total-delta") = None,
    method: Annotated[str, typer.Option(
        "--method", help=COMPOSE.help_text(
            "; a --from list of mechanisms is composed as one privacy loss distribution (pld)."),
        rich_help_panel=METHOD)] = "optimal",
    delta_slack: param("δ' of advanced composition (optimised when omitted).",
                       "--delta-slack", panel=METHOD) = None,
    group: param("Group privacy: neighbours differ in K rows (integer >= 1).", "--group",
                 panel=METHOD) = None,
    source: Annotated[str | None, typer.Option(
        "--from", help="JSON list of mechanisms (file, or - for stdin): {mechanism: "
                       f"{_KINDS}, ...}} records, {{epsilon, "
                       "delta} points, or dpcalc --json outputs; each may carry count, one "
                       "number may be null (solved).", rich_help_panel=PARAMS,
        metavar="FILE|-")] = None,
    solve_for: solve_for_option(SOLVE_FOR) = None,
    json: Json = False,
    value: Value = False,
    fmt: Format = None,
    max_epsilon: MaxEpsilon = None,
    max_delta: MaxDelta = None,
    fpr: Fpr = None,
    tpr: Tpr = None,
    max_tpr: MaxTpr = None,
    debug: Debug = False,
) -> None:
    """Composition: per-mechanism ε, δ, count k, total ε, total δ — leave one out.

    Example: dpcalc compose --epsilon 0.1 --delta 1e-6 --k 50 --total-delta 1e-4
    """
    from typer._click.core import ParameterSource

    from dpcalc.api.compose import compose as solve

    if ctx.get_parameter_source("method") is ParameterSource.DEFAULT:
        method = None          # the API picks: optimal, or pld for a plan of mechanisms

    records = None
    if source is not None:
        from dpcalc.api.compose_list import parse_records

        records = parse_records(_read(source))
    result = solve(epsilon=epsilon, delta=delta, k=k, total_epsilon=total_epsilon,
                   total_delta=total_delta, method=method, delta_slack=delta_slack, group=group,
                   records=records, solve_for=solve_for, fpr=fpr, tpr=tpr)
    emit(result, json=json, value=value, fmt=fmt, max_epsilon=max_epsilon, max_delta=max_delta,
         max_tpr=max_tpr)
