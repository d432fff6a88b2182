"""subsample --tpr T --fpr A: the largest q, base ε or base δ whose amplified (ε', δ') point
bounds the TPR at FPR A by T [KOV15, Thm 2.1; BBG18]."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from dpcalc.api.subsample import subsample


def test_base_delta_matches_the_closed_form():
    # Poisson, add/remove: ε' = log(1 + q(e^ε − 1)), δ' = qδ; the binding side of the point
    # curve here is e^ε' α + δ' = T, so δ = (T − (1 + q(e^ε − 1)) α) / q
    q, eps, alpha, target = 0.1, 1.0, 0.01, 0.02
    got = subsample(q=q, epsilon=eps, tpr=target, fpr=alpha)
    closed = (target - (1 + q * math.expm1(eps)) * alpha) / q
    assert got.solved_for == "delta"
    assert closed * (1 - 1e-8) <= got.value <= closed


@pytest.mark.parametrize("left_out", ["q", "epsilon", "delta"])
def test_round_trip_never_above_the_target(left_out):
    given = {"q": 0.05, "epsilon": 2.0, "delta": 1e-4}
    given.pop(left_out)
    got = subsample(**given, tpr=0.03, fpr=0.01)
    assert got.solved_for == left_out
    back = subsample(**{**given, left_out: got.value}, fpr=0.01)
    assert back.extra["risk"]["tpr"][0]["upper"] <= 0.03
    more = subsample(**{**given, left_out: got.value * (1 + 1e-6)}, fpr=0.01)
    assert more.extra["risk"]["tpr"][0]["upper"] > 0.03  # the largest, not just a passing one


def test_cli_json_and_bad_input():
    run = [sys.executable, "-m", "dpcalc", "subsample"]
    done = subprocess.run([*run, "--epsilon", "1", "--delta", "1e-6", "--tpr", "0.02", "--fpr",
                           "0.01", "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    assert obj["solved_for"] == "q" and obj["value"] == obj["parameters"]["q"]
    assert obj["risk"]["tpr"][0]["upper"] <= 0.02
    bad = subprocess.run([*run, "--q", "0.1", "--epsilon", "1", "--delta", "1e-6", "--tpr",
                          "0.02", "--fpr", "0.01"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("dpcalc: error: ")
