"""compose --tpr T --fpr A: the largest k, ε or δ whose exact optimal composition bounds the
TPR at FPR A by T [KOV15, Thm 2.1, Thm 3.3]."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from dpcalc.api.compose import _optimal_tpr, compose


def test_one_mechanism_gives_its_own_point_curve():
    eps, delta, alpha = 0.5, 1e-4, 0.02
    tpr = _optimal_tpr(eps, delta, 1, alpha)[0]
    exact = min(1.0, math.exp(eps) * alpha + delta, 1 - math.exp(-eps) * (1 - delta - alpha))
    assert exact <= tpr <= exact * (1 + 1e-9)


@pytest.mark.parametrize("left_out", ["k", "epsilon", "delta"])
def test_round_trip_is_the_largest_that_meets_the_target(left_out):
    given = {"epsilon": 0.05, "delta": 1e-6, "k": 50}
    given.pop(left_out)
    got = compose(**given, tpr=0.05, fpr=0.01)
    assert got.solved_for == left_out
    v = {**given, left_out: got.value}
    assert _optimal_tpr(v["epsilon"], v["delta"], v["k"], 0.01)[0] <= 0.05
    bigger = got.value + 1 if left_out == "k" else got.value * (1 + 1e-6)
    v[left_out] = bigger
    assert _optimal_tpr(v["epsilon"], v["delta"], v["k"], 0.01)[0] > 0.05


def test_the_bound_never_exceeds_the_total_point_bound():
    # any single total (ε, δ) point of the composition bounds the TPR: the profile's best
    # point is at least as tight as the point the composition reports at total δ = 1e-5
    point = compose(epsilon=0.1, delta=1e-7, k=100, total_delta=1e-5, fpr=0.01)
    best = _optimal_tpr(0.1, 1e-7, 100, 0.01)[0]
    assert best <= point.extra["risk"]["tpr"][0]["upper"]


def test_cli_json_and_refusals():
    run = [sys.executable, "-m", "dpcalc", "compose"]
    done = subprocess.run([*run, "--epsilon", "0.1", "--delta", "1e-6", "--tpr", "0.05",
                           "--fpr", "0.01", "--json"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    assert obj["solved_for"] == "k" and obj["value"] == obj["parameters"]["k"] == 47
    bad = subprocess.run([*run, "--epsilon", "0.1", "--delta", "1e-6", "--tpr", "0.05", "--fpr",
                          "0.01", "--method", "basic"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("dpcalc: error: ")


def test_compose_fpr_reads_the_optimal_profile():
    r = compose(epsilon=0.1, delta=1e-7, k=100, total_delta=1e-5, fpr=0.01)
    risk = r.extra["risk"]
    row = risk["tpr"][0]
    assert row["upper"] <= row["single_point"]  # never looser than the reported point
    assert row["upper"] == _optimal_tpr(0.1, 1e-7, 100, 0.01)[0] < 0.1
    # the advantage is δ(0) of the symmetric composed pair; a single mechanism gives its own
    one = compose(epsilon=0.5, delta=0.0, k=1, total_delta=1e-5, fpr=0.1).extra["risk"]
    assert one["advantage"]["upper"] == pytest.approx(math.tanh(0.25), rel=1e-9)
    assert risk["advantage"]["upper"] < 0.4


def _exact_np_tpr(eps: float, delta: float, k: int, alpha: float):
    """The exact largest TPR at FPR α of the k-fold composition of the (ε, δ) dominating pair
    [KOV15]: the Neyman–Pearson test, words ordered by likelihood ratio (mpmath, 40 digits)."""
    import mpmath as mp

    with mp.workdps(40):
        e, d, a = mp.mpf(eps), mp.mpf(delta), mp.mpf(alpha)
        p = mp.e ** e / (1 + mp.e ** e)
        tpr, fpr = 1 - (1 - d) ** k, mp.mpf(0)  # words with ⊤ have an infinite ratio
        for l_b in range(k + 1):  # l B's: ratio e^((k − 2l)ε), decreasing in l
            c = mp.binomial(k, l_b) * (1 - d) ** k
            qw, pw = c * (1 - p) ** (k - l_b) * p ** l_b, c * p ** (k - l_b) * (1 - p) ** l_b
            if fpr + qw <= a:
                fpr, tpr = fpr + qw, tpr + pw
            else:
                return tpr + (a - fpr) / qw * pw
        return tpr


@pytest.mark.parametrize("eps,delta,k,alpha", [(0.1, 1e-6, 50, 0.01), (0.1, 1e-7, 100, 0.01),
                                               (0.5, 1e-5, 20, 0.1), (0.05, 0.0, 200, 1e-3),
                                               (1.0, 1e-3, 5, 0.2)])
def test_profile_bound_is_never_below_the_exact_test_and_nearly_tight(eps, delta, k, alpha):
    exact = _exact_np_tpr(eps, delta, k, alpha)
    got = _optimal_tpr(eps, delta, k, alpha)[0]
    assert exact <= got <= exact * (1 + 1e-6)
