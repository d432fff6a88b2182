"""The largest batch size of the default run (Poisson, add/remove, K = 1): ``--dataset-size``
without ``--batch-size`` or ``--q`` solves B, as it does for the other runs (CONTRACT: "--q (or
--batch-size with --dataset-size)", one parameter left out).  It was refused ("--batch-size and
--dataset-size go together")."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

import dpcalc
from dpcalc.api.subsample import exact_rate
from dpcalc.cli import main

N = 60000
BASE = dict(dataset_size=N, sigma=1.1, epsilon=3, delta=1e-5)


def _run(capsys, *args) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _forward(accountant: str = "pld", **kw) -> float:
    return dpcalc.dpsgd(**kw, accountant=accountant, compare=False).value


@pytest.mark.parametrize("given", [{"steps": 320}, {"epochs": 10}])
def test_the_batch_size_is_the_largest_that_meets_the_target(given):
    r = dpcalc.dpsgd(**BASE, **given, compare=False)
    b = r.value
    assert r.solved_for == "batch_size" and isinstance(b, int) and 1 < b < N
    p = r.parameters
    assert (p["batch_size"], p["dataset_size"]) == (b, N)
    # the rate it was certified at is the one --batch-size B --dataset-size N gives
    assert p["q"] == exact_rate(b, N)
    forward = dict(BASE, **given, batch_size=b)
    del forward["epsilon"]
    assert _forward(**forward) <= 3
    if "steps" in given:   # (with the epochs given ε is a sawtooth in B: an edge, not the top)
        assert _forward(**dict(forward, batch_size=b + 1)) > 3
    # the rate solve of the same question: B is its rate in whole batches
    q = dpcalc.dpsgd(**{k: v for k, v in BASE.items() if k != "dataset_size"}, **given,
                     compare=False).value
    assert b <= q * N < b + 2


def test_every_output_mode_and_the_comparison_rows_solve_the_batch_size(capsys):
    args = ["dpsgd", "--dataset-size", str(N), "--sigma", "1.1", "--steps", "320",
            "--epsilon", "3", "--delta", "1e-5"]
    code, out, _ = _run(capsys, *args, "--json")
    assert code == 0
    obj = json.loads(out, parse_float=Decimal)
    b = obj["value"]
    assert obj["solved_for"] == "batch_size" and obj["parameters"]["batch_size"] == b
    assert _run(capsys, *args, "--value")[1].strip() == str(b)
    human = _run(capsys, *args)[1]
    assert f"B ≤ {b}" in human
    assert dpcalc.dpsgd(**BASE, steps=320).value == b
    rows = {row["method"]: row for row in obj["comparison"]}
    assert set(rows) == {"rdp", "moments", "strong"}
    for name in ("rdp", "moments"):   # exact bounds: B passes and B + 1 fails under each
        rb = rows[name]["batch_size"]
        assert isinstance(rb, int) and rb < b
        assert _forward(name, dataset_size=N, sigma=1.1, steps=320, delta=1e-5,
                        batch_size=rb) <= 3
        assert _forward(name, dataset_size=N, sigma=1.1, steps=320, delta=1e-5,
                        batch_size=rb + 1) > 3


def test_no_batch_size_meets_the_target():
    with pytest.raises(dpcalc.InfeasibleError, match="batch size = 1"):
        dpcalc.dpsgd(dataset_size=1000, sigma=0.5, steps=10**6, epsilon=0.1, delta=1e-10,
                     compare=False)


def test_a_batch_of_one_beyond_the_step_limit_says_so():
    """N 1e9, 100 epochs: B = 1 needs 1e11 steps, more than dpcalc accounts for; the answer
    said "even batch size = 1 does not meet the target"."""
    with pytest.raises(dpcalc.InfeasibleError, match="more than 1e\\+10 steps"):
        dpcalc.dpsgd(dataset_size=10**9, sigma=0.5, epochs=100, epsilon=0.001, delta=1e-9,
                     compare=False)


def test_the_whole_dataset_when_it_fits():
    r = dpcalc.dpsgd(dataset_size=100, sigma=50, steps=10, epsilon=1, delta=1e-5,
                     compare=False)
    assert r.value == 100 and r.parameters["q"] == 1.0


def test_the_dataset_size_with_another_unknown_is_a_usage_error(capsys):
    code, out, err = _run(capsys, "dpsgd", "--dataset-size", str(N), "--sigma", "1.1",
                          "--epochs", "10", "--delta", "1e-5", "--q", "0.01")
    assert code == 2 and "--q conflicts with --batch-size/--dataset-size" in err
    code, out, err = _run(capsys, "dpsgd", "--dataset-size", str(N), "--solve-for", "sigma",
                          "--epochs", "10", "--epsilon", "3", "--delta", "1e-5")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    # a TPR target does not solve the batch size, and says so (it said "--batch-size and
    # --dataset-size go together", which they were not asked to)
    for extra in ([], ["--examples-per-user", "2"]):
        code, out, err = _run(capsys, "dpsgd", "--dataset-size", str(N), "--sigma", "1.1",
                              "--epochs", "10", "--tpr", "0.1", "--fpr", "0.01", *extra)
        assert code == 2 and "not the batch size" in err and len(err.strip().splitlines()) == 1


def test_a_solved_batch_reports_the_rate_its_answer_was_certified_at():
    """The other runs' batch solve reported q = B/N as divided, one ulp below the rate its ε
    was certified at (and the forward question's) where the division rounds down."""
    kw = dict(sampling="fixed-batch", dataset_size=1000, sigma=2, steps=50, delta=1e-5,
              compare=False)
    r = dpcalc.dpsgd(**kw, epsilon=2.5)
    back = dpcalc.dpsgd(**kw, batch_size=r.value)
    assert r.parameters["q"] == back.parameters["q"] == exact_rate(r.value, 1000)
    assert back.value <= 2.5
