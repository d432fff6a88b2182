"""Regression tests for a soundness review of the merged plans and sampling code: a record's
"count" is never dropped, a record's (ε, δ) is read up, and a shuffled run is reported as
asked (its attack lower bound uses the complete epochs only)."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction

DPCALC = [sys.executable, "-m", "dpcalc"]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*DPCALC, *args], input=stdin, capture_output=True, text=True,
                          timeout=300)


def value(*args: str, stdin: str | None = None) -> float:
    done = run(*args, "--value", stdin=stdin)
    assert done.returncode == 0, done.stderr
    return float(done.stdout)


def test_count_of_an_epsilon_delta_point_repeats_it():
    # was: "count" ignored for lists of bare points (0.99999 for three mechanisms)
    counted = value("compose", "--from", "-", "--total-delta", "1e-5",
                    stdin='[{"epsilon": 1, "delta": 1e-6, "count": 3}]')
    listed = value("compose", "--from", "-", "--total-delta", "1e-5",
                   stdin='[' + ", ".join(['{"epsilon": 1, "delta": 1e-6}'] * 3) + ']')
    assert counted == listed and counted > 2.9


def test_count_of_a_json_output_record_repeats_it():
    # was: the output-record branch returned before reading "count" (4.3772, "k": 1)
    out = '{"command": "gaussian", "parameters": {"sigma": 1, "epsilon": 4.38, "delta": 1e-5}, ' \
          '"count": 4}'
    got = value("compose", "--from", "-", "--total-delta", "1e-5", stdin=f"[{out}]")
    same = value("compose", "--from", "-", "--total-delta", "1e-5",
                 stdin='[{"mechanism": "gaussian", "sigma": 1, "count": 4}]')
    assert got == same and got > 9.99  # four σ = 1 Gaussians: μ = 2


def test_bad_count_is_exit_2():
    done = run("compose", "--from", "-", "--total-delta", "1e-5",
               stdin='[{"epsilon": 1, "delta": 1e-6, "count": 0}]')
    assert done.returncode == 2 and "count" in done.stderr


def test_a_plan_record_guarantee_is_read_up():
    from dpcalc.api import plan

    for name in ("epsilon", "delta"):
        got = plan._PARAMS[name].parse(Decimal("0.1"))
        assert Fraction(float(got)) >= Fraction(1, 10)


def test_shuffle_run_is_reported_as_asked_and_its_lower_bound_uses_complete_epochs():
    base = ("dpsgd", "--batch-size", "64", "--dataset-size", "10000", "--sigma", "1",
            "--delta", "1e-6", "--sampling", "shuffle", "--json")
    partial = json.loads(run(*base[:7], "--steps", "800", *base[7:]).stdout)
    assert partial["parameters"]["steps"] == 800  # was 942 (six whole epochs)
    five = json.loads(run(*base[:7], "--epochs", "5", *base[7:]).stdout)
    six = json.loads(run(*base[:7], "--epochs", "6", *base[7:]).stdout)
    # upper: the partial sixth epoch counts as a whole one; lower: only the five complete ones
    assert partial["bounds"]["upper"] == six["bounds"]["upper"]
    assert partial["bounds"]["lower"] == five["bounds"]["lower"] < six["bounds"]["lower"]
