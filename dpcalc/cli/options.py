"""Shared option types. Numbers are taken as text and parsed exactly in ``dpcalc.params``
(never through ``float``), so ``1e-400`` is not silently 0 and NaN/inf are rejected there."""

from __future__ import annotations

from typing import Annotated

import typer

from dpcalc.cli.output import validate_gate

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
Debug = Annotated[bool, typer.Option("--debug", help="Show tracebacks (for bug reports).",
                                     rich_help_panel=OUTPUT, hidden=True)]
MaxEpsilon = Annotated[str | None, typer.Option(
    "--max-epsilon", help="Exit 1 when the solved ε exceeds this.", rich_help_panel=GATES,
    metavar="NUM", callback=validate_gate("max_epsilon"))]
MaxDelta = Annotated[str | None, typer.Option(
    "--max-delta", help="Exit 1 when the solved (or reported) δ exceeds this.",
    rich_help_panel=GATES, metavar="NUM", callback=validate_gate("max_delta"))]
SolveFor = Annotated[str | None, typer.Option(
    "--solve-for", help="Name the parameter to solve for (optional; the one left out).",
    rich_help_panel=PARAMS, metavar="NAME")]
