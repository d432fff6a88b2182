"""``dpcalc subsample``: privacy amplification by subsampling."""

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

# the names --solve-for accepts (dpcalc.api.subsample checks them; tests/test_cli_robust.py
# keeps the two in step)
SOLVE_FOR = ("epsilon", "delta", "q", "amplified-epsilon", "amplified-delta")


def subsample(
    epsilon: param("ε of the mechanism run on the sample (>= 0).", "--epsilon") = None,
    delta: param("δ of the mechanism run on the sample, in [0, 1).", "--delta") = None,
    q: param("Sampling rate q in (0, 1].", "--q", "--sample-rate") = None,
    amplified_epsilon: param("Target/amplified ε.", "--amplified-epsilon") = None,
    amplified_delta: param("Target/amplified δ.", "--amplified-delta") = None,
    sample_size: param("Sample size m (with --population-size; q = m/n).",
                       "--sample-size") = None,
    population_size: param("Population size n.", "--population-size") = None,
    sampling: Annotated[str, typer.Option(
        "--sampling", help="poisson | without-replacement.",
        rich_help_panel=METHOD)] = "poisson",
    relation: Annotated[str, typer.Option(
        "--relation", help="Neighbouring relation: add-remove | replace-one.",
        rich_help_panel=METHOD)] = "add-remove",
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
    """Amplification by subsampling: ε, δ, q, amplified ε, amplified δ — leave one out.

    ε' = log(1 + q(e^ε − 1)), δ' = qδ (Poisson, add/remove). Example:
    dpcalc subsample --epsilon 1 --delta 1e-5 --q 0.01
    """
    from dpcalc.api.subsample import subsample as solve

    result = solve(epsilon=epsilon, delta=delta, q=q, amplified_epsilon=amplified_epsilon,
                   amplified_delta=amplified_delta, sample_size=sample_size,
                   population_size=population_size, sampling=sampling, relation=relation,
                   solve_for=solve_for, fpr=fpr, tpr=tpr)
    emit(result, json=json, value=value, fmt=fmt, max_epsilon=max_epsilon, max_delta=max_delta,
         max_tpr=max_tpr)
