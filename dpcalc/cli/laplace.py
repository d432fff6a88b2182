"""``dpcalc laplace``: the Laplace mechanism."""

from __future__ import annotations

from dpcalc.cli.options import (
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

# the names --solve-for accepts (dpcalc.api.laplace checks them; tests/test_cli_robust.py
# keeps the two in step)
SOLVE_FOR = ("scale", "epsilon", "delta")


def laplace(
    scale: param("Laplace scale b (> 0).", "--scale") = None,
    epsilon: param("Privacy loss ε (>= 0).", "--epsilon") = None,
    delta: param("δ in [0, 1) (default 0: pure DP).", "--delta") = None,
    sensitivity: param("L1 sensitivity Δ (> 0; default 1).", "--sensitivity") = None,
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
    """Laplace mechanism: scale b, ε, δ — leave one out (δ defaults to 0).

    Pure ε = Δ/b; for δ > 0 the exact profile δ(ε) = 1 − exp((ε − Δ/b)/2). Example:
    dpcalc laplace --scale 2
    """
    from dpcalc.api.laplace import laplace as solve

    result = solve(scale=scale, epsilon=epsilon, delta=delta,
                   sensitivity=1.0 if sensitivity is None else sensitivity, solve_for=solve_for,
                   fpr=fpr, tpr=tpr)
    emit(result, json=json, value=value, fmt=fmt, max_epsilon=max_epsilon, max_delta=max_delta,
         max_tpr=max_tpr)
