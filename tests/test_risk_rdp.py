"""``rdp --fpr/--tpr/--max-tpr`` (CONTRACT "Attack risk": every command with a privacy
profile): TPR bounds read off the RDP curve's converted profile, against exact values."""

from __future__ import annotations

import json

import pytest

from dpcalc.api.rdp import rdp
from dpcalc.relations import risk as rel
from tests.test_cli_robust import dpcalc, one_error_line


@pytest.mark.parametrize("sigma,steps", [(1.0, 1), (2.0, 10), (0.7, 3)])
@pytest.mark.parametrize("alpha", [0.001, 0.05, 0.3])
def test_the_tpr_bound_holds_for_t_gaussian_steps_and_beats_the_single_point(
        sigma, steps, alpha):
    # T Gaussian steps are one Gaussian of μ = √T/σ: TPR* = Φ(Φ⁻¹(α) + μ) [DRS19] (exact)
    r = rdp(sigma=sigma, steps=steps, delta=1e-5, fpr=[alpha])
    row = r.extra["risk"]["tpr"][0]
    exact = rel.gaussian_tpr(steps ** 0.5 / sigma, alpha)[1]
    assert row["lower"] == alpha <= exact <= row["upper"] <= row["single_point"]
    # the profile's best point is far better than the one reported (ε, δ) point at small α
    if alpha <= 0.05:
        assert row["upper"] < row["single_point"]
    # and not loose: within a few times the Gaussian's own excess over the coin flip
    assert row["upper"] - alpha <= 3.0 * (exact - alpha) + 0.02
    adv = r.extra["risk"]["advantage"]
    assert adv["lower"] == 0.0 and rel.gaussian_advantage(steps ** 0.5 / sigma)[1] <= adv["upper"]


def test_a_tpr_target_solves_the_smallest_sigma_that_meets_it():
    r = rdp(q=0.01, steps=1000, tpr=0.1, fpr=[0.05])
    sigma = r.value
    assert r.solved_for == "sigma" and r.extra["risk"]["tpr"][0]["upper"] <= 0.1
    below = rdp(sigma=sigma * (1 - 1e-6), q=0.01, steps=1000, delta=1e-5, fpr=[0.05])
    above = rdp(sigma=sigma, q=0.01, steps=1000, delta=1e-5, fpr=[0.05])
    assert above.extra["risk"]["tpr"][0]["upper"] <= 0.1
    assert below.extra["risk"]["tpr"][0]["upper"] > 0.1 * (1 - 1e-9)
    # the stated (ε, δ) is a guarantee of the answer that gives its bound
    p = r.parameters
    assert rel.point_tpr(p["epsilon"], p["delta"], 0.05)[1] <= 0.1 * (1 + 1e-12)
    assert rdp(sigma=sigma, q=0.01, steps=1000, epsilon=p["epsilon"]).value <= p["delta"]


def test_the_cli_reports_gates_and_refuses_a_clash():
    out = json.loads(dpcalc("rdp", "--sigma", "1", "--delta", "1e-5", "--fpr", "0.05",
                            "--json").stdout)
    assert out["risk"]["basis"] == "rdp" and out["risk"]["tpr"][0]["fpr"] == 0.05
    gate = dpcalc("rdp", "--sigma", "1", "--delta", "1e-5", "--fpr", "0.05", "--max-tpr", "0.3")
    assert gate.returncode == 1 and "--max-tpr" in gate.stderr.decode()
    ok = dpcalc("rdp", "--sigma", "1", "--delta", "1e-5", "--fpr", "0.05", "--max-tpr", "0.4",
                "--value")
    assert ok.returncode == 0
    clash = dpcalc("rdp", "--q", "0.01", "--steps", "1000", "--tpr", "0.1", "--fpr", "0.05",
                   "--delta", "1e-5")
    assert clash.returncode == 2 and "--tpr" in one_error_line(clash)
    value = dpcalc("rdp", "--q", "0.01", "--steps", "1000", "--tpr", "0.1", "--fpr", "0.05",
                   "--value")
    assert float(value.stdout) == pytest.approx(rdp(q=0.01, steps=1000, tpr=0.1,
                                                    fpr=[0.05]).value, rel=0, abs=0)


@pytest.mark.parametrize("kw", [{"sigma": 1.0}, {"sigma": 1.1, "q": 0.004, "steps": 14000}])
def test_the_advantage_bound_is_the_best_point_of_the_profile_not_only_delta_at_zero(kw):
    # every (ε, δ) of the profile bounds TPR − FPR by (e^ε − 1 + 2δ)/(e^ε + 1) [KOV15]; ε = 0
    # alone gave δ(0): 0.560 for 0.544 at σ = 1 (exact Gaussian: 0.383)
    adv = rdp(**kw, delta=1e-5, fpr=[0.1]).extra["risk"]["advantage"]["upper"]
    at_zero = float(rdp(**kw, epsilon=0.0).value)
    assert adv < at_zero * (1 - 1e-3)
    if kw == {"sigma": 1.0}:
        assert rel.gaussian_advantage(1.0)[1] <= adv
