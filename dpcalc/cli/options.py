"""Shared option types. Numbers are taken as text and parsed exactly in ``dpcalc.params``
(never through ``float``), so ``1e-400`` is not silently 0 and NaN/inf are rejected there."""

from __future__ import annotations

from typing import Annotated

import typer

from dpcalc.cli.output import validate_format, validate_gate

PARAMS = "Parameters (leave one out)"
METHOD = "Method"
OUTPUT = "Output"
GATES = "Gates"


def param(help_text: str, *names: str, panel: str = PARAMS):
    """An optional numeric parameter taken as text."""
    return Annotated[str | None, typer.Option(*names, help=help_text, rich_help_panel=panel,
                                              show_default=False, metavar="NUM")]


Json = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object.",
                                    rich_help_panel=OUTPUT)]
Value = Annotated[bool, typer.Option("--value", help="Print only the solved number.",
                                     rich_help_panel=OUTPUT)]


def _format_help() -> str:
    from dpcalc.render import FORMATS

    return "Output format: " + "; ".join(f"{f.name}: {f.help}" for f in FORMATS.values()) + "."


Format = Annotated[str | None, typer.Option(
    "--format", help=_format_help(), rich_help_panel=OUTPUT, metavar="FORMAT",
    show_default=False, callback=validate_format)]
Debug = Annotated[bool, typer.Option(
    "--debug", help="On an error, also print the Python traceback (for bug reports); the exit "
                    "status is unchanged. Also accepted before the command.",
    rich_help_panel=OUTPUT)]
MaxEpsilon = Annotated[str | None, typer.Option(
    "--max-epsilon", help="Exit 1 when the solved ε exceeds this.", rich_help_panel=GATES,
    metavar="NUM", callback=validate_gate("max_epsilon"))]
MaxDelta = Annotated[str | None, typer.Option(
    "--max-delta", help="Exit 1 when the solved (or reported) δ exceeds this.",
    rich_help_panel=GATES, metavar="NUM", callback=validate_gate("max_delta"))]


def solve_for_option(names: tuple[str, ...]):
    """``--solve-for NAME`` listing the names the command accepts (also offered on TAB)."""
    return Annotated[str | None, typer.Option(
        "--solve-for", help="Name the parameter to solve for (optional: by default the one left "
                            f"out): {' | '.join(names)}.", rich_help_panel=PARAMS,
        metavar="NAME", show_default=False)]

RISK = "Attack risk"
Fpr = Annotated[list[str] | None, typer.Option(
    "--fpr", help="Also bound the TPR of any membership-inference test at this FPR, in (0, 1) "
    "(repeatable).", rich_help_panel=RISK, metavar="NUM", show_default=False)]
Tpr = Annotated[str | None, typer.Option(
    "--tpr", help="A TPR target at --fpr, in place of --epsilon/--delta: solve the noise (or "
    "count, rate) left out so that no test exceeds it.", rich_help_panel=RISK, metavar="NUM")]
MaxTpr = Annotated[str | None, typer.Option(
    "--max-tpr", help="Exit 1 when the TPR bound at --fpr exceeds this.",
    rich_help_panel=GATES, metavar="NUM", callback=validate_gate("max_tpr"))]
