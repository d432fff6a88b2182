"""``dpsgd --sampling/--relation/--examples-per-user`` through the CLI (issue 11)."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal

import pytest

from tests.cli_helpers import run

HEADLINE = ["dpsgd", "--batch-size", "256", "--dataset-size", "60000", "--sigma", "1.1",
            "--epochs", "2", "--delta", "1e-5"]
TF = ["--batch-size", "64", "--dataset-size", "10000", "--sigma", "1.0", "--epochs", "5",
      "--delta", "1e-6"]


def _json(capsys, *args):
    r = run(capsys, *args, "--json")
    assert r.code == 0, r.err
    obj = r.json
    assert obj["value"] == obj["parameters"][obj["solved_for"]]
    return obj


def test_pub_shuffle_noamp_through_the_installed_entry_point():
    out = subprocess.run([sys.executable, "-m", "dpcalc", *HEADLINE[:1], "--sampling",
                          "shuffle", *HEADLINE[1:], "--json"], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout, parse_float=Decimal)
    assert Decimal("5.87100458204628") <= obj["bounds"]["upper"] <= Decimal("5.871010453050861")
    assert 0 < obj["bounds"]["lower"] <= obj["bounds"]["upper"]
    p = obj["parameters"]
    assert (p["sampling"], p["relation"], p["examples_per_user"]) == ("shuffle", "add-remove", 1)
    assert (p["batch_size"], p["dataset_size"]) == (256, 60000)
    poisson = next(c for c in obj["comparison"] if c["method"] == "poisson-accounting")
    assert poisson["epsilon"] < obj["bounds"]["upper"]


def test_shuffle_human_output_says_poisson_does_not_apply(capsys):
    r = run(capsys, *HEADLINE[:1], "--sampling", "shuffle", *HEADLINE[1:])
    assert r.code == 0, r.err
    text = " ".join(r.out.split())
    assert "Poisson accounting does not apply" in text and "below what can be guaranteed" in text
    assert "sampling = shuffle" in text and "relation = add-remove" in text and "K = 1" in text
    assert "partial last batch" in text


def test_tf_privacy_statement_examples(capsys):
    once = _json(capsys, "dpsgd", "--sampling", "shuffle", *TF)
    assert round(float(once["bounds"]["upper"]), 3) == 12.595
    once2 = _json(capsys, "dpsgd", "--sampling", "shuffle", "--examples-per-user", "2", *TF)
    assert round(float(once2["bounds"]["upper"]), 3) == 30.579
    poisson = _json(capsys, "dpsgd", *TF)
    assert poisson["bounds"]["lower"] <= Decimal("1.199") + Decimal("5e-4")
    assert poisson["bounds"]["upper"] >= Decimal("1.199") - Decimal("5e-4")
    two = _json(capsys, "dpsgd", "--examples-per-user", "2", *TF)
    assert two["bounds"]["lower"] - Decimal("1e-3") <= Decimal("2.532") <= \
        two["bounds"]["upper"] + Decimal("1e-3")


def test_k1_and_explicit_defaults_equal_today(capsys):
    base = _json(capsys, "dpsgd", "--q", "0.01", "--sigma", "1.1", "--steps", "300",
                 "--delta", "1e-5")
    explicit = _json(capsys, "dpsgd", "--q", "0.01", "--sigma", "1.1", "--steps", "300",
                     "--delta", "1e-5", "--sampling", "poisson", "--relation", "add-remove",
                     "--examples-per-user", "1")
    assert base["value"] == explicit["value"] and base["bounds"] == explicit["bounds"]
    assert base["parameters"]["sampling"] == "poisson"


def test_relations_and_samplings_order(capsys):
    args = ["dpsgd", "--batch-size", "20", "--dataset-size", "1000", "--sigma", "1.0",
            "--steps", "200", "--delta", "1e-5"]
    ar = _json(capsys, *args)["bounds"]
    ro = _json(capsys, *args, "--relation", "replace-one")["bounds"]
    fb = _json(capsys, *args, "--sampling", "fixed-batch")["bounds"]
    sh = _json(capsys, *args, "--sampling", "shuffle")["bounds"]
    sh_ro = _json(capsys, *args, "--sampling", "shuffle", "--relation", "replace-one")["bounds"]
    assert ro["lower"] >= ar["upper"] and fb["lower"] >= ro["upper"]
    assert sh_ro["upper"] > sh["upper"] and sh["lower"] <= sh["upper"]


@pytest.mark.parametrize("extra", [["--relation", "replace-one"],
                                   ["--examples-per-user", "2"],
                                   ["--sampling", "fixed-batch"]], ids=str)
def test_every_direction_round_trips(capsys, extra):
    base = ["dpsgd", "--q", "0.02", *extra]
    target = ["--epsilon", "2", "--delta", "1e-5"]
    sig = _json(capsys, *base, "--steps", "100", *target)
    s = sig["value"]
    eps = _json(capsys, *base, "--steps", "100", "--sigma", str(s), "--delta", "1e-5")
    assert eps["value"] <= Decimal("2")          # the solved σ meets the target
    steps = _json(capsys, *base, "--sigma", "1.5", *target, "--solve-for", "steps")
    n = int(steps["value"])
    at = _json(capsys, *base, "--sigma", "1.5", "--steps", str(n), "--delta", "1e-5")
    assert at["value"] <= Decimal("2")
    over = _json(capsys, *base, "--sigma", "1.5", "--steps", str(n + max(1, n // 50)),
                 "--delta", "1e-5")
    assert over["bounds"]["lower"] > Decimal("2") * Decimal("0.99")
    d = _json(capsys, *base, "--steps", "100", "--sigma", "1.5", "--epsilon", "2")
    assert d["bounds"]["lower"] <= d["value"]
    q = _json(capsys, "dpsgd", *extra, "--sigma", "1.5", "--steps", "100", *target)
    assert 0 < q["value"] <= 1


def test_batch_size_solved_as_an_integer_on_the_private_side(capsys):
    obj = _json(capsys, "dpsgd", "--sampling", "fixed-batch", "--dataset-size", "1000",
                "--sigma", "2", "--steps", "50", "--epsilon", "2", "--delta", "1e-5")
    b = obj["value"]
    assert obj["solved_for"] == "batch_size" and isinstance(b, int)
    ok = _json(capsys, "dpsgd", "--sampling", "fixed-batch", "--batch-size", str(b),
               "--dataset-size", "1000", "--sigma", "2", "--steps", "50", "--delta", "1e-5")
    assert ok["value"] <= 2
    more = _json(capsys, "dpsgd", "--sampling", "fixed-batch", "--batch-size", str(b + 1),
                 "--dataset-size", "1000", "--sigma", "2", "--steps", "50", "--delta", "1e-5")
    assert more["bounds"]["lower"] > Decimal("1.98")


@pytest.mark.parametrize("args,needle", [
    (["--sampling", "fixed-batch", "--examples-per-user", "2"], "no established dominating"),
    (["--sampling", "bogus"], "--sampling must be one of"),
    (["--relation", "swap"], "--relation must be one of"),
    (["--examples-per-user", "0"], "--examples-per-user must be"),
    (["--relation", "replace-one", "--accountant", "rdp"], "is not available"),
], ids=str)
def test_refusals_exit_2_with_one_line(capsys, args, needle):
    r = run(capsys, *HEADLINE, *args)
    assert r.code == 2
    assert r.err.startswith("dpcalc: error: ") and r.err.count("\n") == 1 and needle in r.err


def test_shuffle_sigma_and_epochs(capsys):
    base = ["dpsgd", "--sampling", "shuffle", "--batch-size", "256", "--dataset-size", "60000"]
    sig = _json(capsys, *base, "--epochs", "2", "--epsilon", "5.871005", "--delta", "1e-5")
    assert Decimal("1.0999") <= sig["value"] <= Decimal("1.1")
    ep = _json(capsys, *base, "--sigma", "1.1", "--epsilon", "5.871005", "--delta", "1e-5")
    assert ep["value"] == 2 and ep["parameters"]["steps"] == 2 * 235


def test_curve_for_the_new_combinations(capsys):
    fb = _json(capsys, "dpsgd", "--sampling", "fixed-batch", "--batch-size", "256",
               "--dataset-size", "60000", "--sigma", "1.1", "--epochs", "3", "--delta", "1e-5",
               "--curve")
    eps = [p["epsilon"] for p in fb["curve"]]
    assert eps == sorted(eps) and eps[-1] <= fb["value"] and len(eps) == 3
    assert all(p["lower"] <= p["epsilon"] for p in fb["curve"])
    sh = _json(capsys, "dpsgd", "--sampling", "shuffle", "--batch-size", "256",
               "--dataset-size", "60000", "--sigma", "1.1", "--epochs", "3", "--delta", "1e-5",
               "--curve")
    assert [p["epochs"] for p in sh["curve"]] == [1, 2, 3]
    assert float(sh["curve"][1]["epsilon"]) == pytest.approx(5.871004582, rel=1e-8)
    assert sh["curve"][-1]["epsilon"] == sh["value"]
