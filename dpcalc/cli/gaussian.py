"""``dpcalc gaussian``: the Gaussian mechanism."""

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
from dpcalc.methods import GAUSSIAN

METHODS = GAUSSIAN.names


# the names --solve-for accepts (dpcalc.api.gaussian checks them; tests/test_cli_robust.py
# keeps the two in step)
SOLVE_FOR = ("sigma", "epsilon", "delta")


def gaussian(
    sigma: param("Noise standard deviation σ (> 0).", "--sigma") = None,
    epsilon: param("Privacy loss ε (>= 0).", "--epsilon") = None,
    delta: param("Failure probability δ in [0, 1).", "--delta") = None,
    sensitivity: param("L2 sensitivity Δ (> 0; default 1).", "--sensitivity") = None,
    method: Annotated[str, typer.Option(
        "--method", help=GAUSSIAN.help_text(),
        rich_help_panel=METHOD)] = "analytic",
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
    """Gaussian mechanism: σ, ε, δ — leave one out.

    δ(ε) = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) (exact). Example:
    dpcalc gaussian --sigma 2 --delta 1e-5
    """
    from dpcalc.api.gaussian import gaussian as solve

    result = solve(sigma=sigma, epsilon=epsilon, delta=delta,
                   sensitivity=1.0 if sensitivity is None else sensitivity, method=method,
                   solve_for=solve_for, fpr=fpr, tpr=tpr)
    emit(result, json=json, value=value, fmt=fmt, max_epsilon=max_epsilon, max_delta=max_delta,
         max_tpr=max_tpr)
