"""``dpcalc rdp``: Rényi DP accounting."""

from __future__ import annotations

from typing import Annotated

import typer

from dpcalc.cli.options import (
    METHOD,
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

# the names --solve-for accepts (dpcalc.api.rdp checks them; tests/test_cli_robust.py
# keeps the two in step)
SOLVE_FOR = ("sigma", "q", "steps", "epsilon", "delta")


def rdp(
    sigma: param("Noise multiplier (σ/Δ; b/Δ for Laplace).", "--sigma",
                 "--noise-multiplier") = None,
    q: param("Poisson sampling rate in (0, 1] (default 1).", "--q", "--sample-rate") = None,
    steps: param("Number of steps composed (default 1).", "--steps") = None,
    epsilon: param("ε (>= 0).", "--epsilon") = None,
    delta: param("δ in (0, 1).", "--delta") = None,
    alpha: Annotated[list[str] | None, typer.Option(
        "--alpha", help="RDP order α > 1 (repeatable; default a built-in grid).",
        rich_help_panel=METHOD, metavar="A")] = None,
    conversion: Annotated[str, typer.Option(
        "--conversion", help="improved (Canonne-Kamath-Steinke 2020) | classic (Mironov 2017).",
        rich_help_panel=METHOD)] = "improved",
    mechanism: Annotated[str, typer.Option(
        "--mechanism", help="gaussian | laplace.", rich_help_panel=METHOD)] = "gaussian",
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
    """Rényi DP: σ, q, steps, ε, δ — leave one out (q defaults to 1, then steps to 1).

    Example: dpcalc rdp --sigma 1 --q 0.01 --steps 1000 --delta 1e-5
    """
    from dpcalc.api.rdp import rdp as solve

    result = solve(sigma=sigma, q=q, steps=steps, epsilon=epsilon, delta=delta, alpha=alpha,
                   conversion=conversion, mechanism=mechanism, solve_for=solve_for, fpr=fpr,
                   tpr=tpr)
    emit(result, json=json, value=value, fmt=fmt, max_epsilon=max_epsilon, max_delta=max_delta,
         max_tpr=max_tpr)
