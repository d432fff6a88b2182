"""`--solve-for steps|epochs` with a count given is a usage error for every scheme and target.

Before: only the default scheme's ε/δ path refused it; with `--relation replace-one`,
`--sampling shuffle` or a `--tpr` target the given `--epochs 2` was dropped silently and the
steps solved (replace-one answered 2 steps, epochs 0.6; the TPR target answered 49 steps).
"""

from __future__ import annotations

import pytest

from tests.cli_helpers import run

SCHEMES = [[], ["--relation", "replace-one"], ["--examples-per-user", "2"],
           ["--sampling", "fixed-batch"],
           ["--sampling", "shuffle", "--batch-size", "256", "--dataset-size", "60000"]]


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
@pytest.mark.parametrize("target", [["--delta", "1e-5", "--epsilon", "5"],
                                    ["--fpr", "0.01", "--tpr", "0.5"]], ids=str)
@pytest.mark.parametrize("count", [["--epochs", "2"], ["--steps", "7"]], ids=str)
@pytest.mark.parametrize("unknown", ["steps", "epochs"])
def test_a_given_count_conflicts_with_solving_for_one(capsys, scheme, target, count, unknown):
    if "shuffle" in scheme and "--fpr" in target:
        pytest.skip("shuffled batches have no profile for --fpr/--tpr (refused, exit 2)")
    rate = [] if "shuffle" in scheme else ["--q", "0.3"]
    r = run(capsys, "dpsgd", *scheme, *rate, "--sigma", "1", *count, *target,
            "--solve-for", unknown, "--value")
    assert r.code == 2
    assert f"--solve-for {unknown} conflicts with --epochs/--steps" in r.err
    assert r.out == ""
