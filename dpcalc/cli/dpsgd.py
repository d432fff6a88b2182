"""``dpcalc dpsgd``: DP-SGD accounting."""

from __future__ import annotations

from typing import Annotated

import typer

from dpcalc.cli.options import (
    METHOD,
    OUTPUT,
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
from dpcalc.cli.output import busy, emit
from dpcalc.methods import DPSGD

# the names --solve-for accepts (dpcalc.api.dpsgd checks them; tests/test_cli_robust.py
# keeps the two in step)
SOLVE_FOR = ("q", "sigma", "epochs", "steps", "epsilon", "delta")


def dpsgd(
    q: param("Poisson sampling rate q in (0, 1].", "--q", "--sample-rate") = None,
    batch_size: param("Expected batch size B (with --dataset-size: q = B/N).",
                      "--batch-size") = None,
    dataset_size: param("Dataset size N (without --batch-size and --q: solves the largest "
                        "B).", "--dataset-size") = None,
    sigma: param("Noise multiplier σ (noise std / clipping norm).", "--sigma",
                 "--noise-multiplier") = None,
    epochs: param("Epochs (steps = ⌈epochs/q⌉).", "--epochs") = None,
    steps: param("Steps (instead of --epochs).", "--steps") = None,
    epsilon: param("ε (>= 0).", "--epsilon") = None,
    delta: param("δ in (0, 1).", "--delta") = None,
    accountant: Annotated[str, typer.Option(
        "--accountant", help=DPSGD.help_text(),
        rich_help_panel=METHOD)] = "pld",
    tolerance: param("Relative width of the PLD bracket (default 1e-3).", "--tolerance",
                     panel=METHOD) = None,
    sampling: Annotated[str | None, typer.Option(
        "--sampling", help="How batches are drawn: poisson (default) | fixed-batch (B of N "
        "without replacement) | shuffle (each epoch a permutation cut into batches).",
        rich_help_panel=METHOD, show_default=False)] = None,
    relation: Annotated[str | None, typer.Option(
        "--relation", help="Neighbouring datasets: add-remove (default; replace-one for "
        "fixed-batch) | replace-one.", rich_help_panel=METHOD, show_default=False)] = None,
    examples_per_user: param("User-level privacy: a user holds up to K examples (default 1).",
                             "--examples-per-user", panel=METHOD) = None,
    curve: Annotated[bool, typer.Option(
        "--curve", help="Also show ε after each epoch (every epoch up to 100 epochs, then "
        "100 evenly spaced epochs; the plot and --json hold every point, the table about "
        "ten): certified upper bounds, from the PLD's first pass.",
        rich_help_panel=OUTPUT)] = False,
    curve_accountants: Annotated[str | None, typer.Option(
        "--curve-accountants", help="Also plot these accountants' ε curves as separate "
        "series (implies --curve): a comma-separated list of pld, rdp, moments, strong, or "
        "all; e.g. --accountant moments --curve-accountants strong redraws Figure 2 of Abadi "
        "et al.", rich_help_panel=OUTPUT, show_default=False)] = None,
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
    """DP-SGD: q, σ, epochs (or steps), ε, δ — leave one out.

    Example: dpcalc dpsgd --q 0.01 --sigma 4 --epochs 100 --delta 1e-5

    A run in phases (different σ, q or sampling): dpcalc compose --from FILE.
    """
    from dpcalc.api.dpsgd import dpsgd as solve

    with busy("dpcalc: accounting DP-SGD (pld, rdp, moments, strong)…"):
        result = solve(q=q, batch_size=batch_size, dataset_size=dataset_size, sigma=sigma,
                       epochs=epochs, steps=steps, epsilon=epsilon, delta=delta,
                       accountant=accountant, tolerance=1e-3 if tolerance is None else tolerance,
                       curve=curve, solve_for=solve_for, fpr=fpr, tpr=tpr,
                       compare=not value and fmt != "value", sampling=sampling,
                       relation=relation, examples_per_user=examples_per_user,
                       curve_accountants=curve_accountants)
    emit(result, json=json, value=value, fmt=fmt, max_epsilon=max_epsilon, max_delta=max_delta,
         max_tpr=max_tpr)
