"""Attack risk: certified TPR bounds (relations.risk), --fpr / --tpr / --max-tpr on the CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from decimal import Decimal

import mpmath
import numpy as np
import pytest

from dpcalc.relations import gaussian as grel
from dpcalc.relations import risk
from tests.cli_helpers import run

ALPHAS = (1e-6, 1e-3, 0.01, 0.05, 0.1, 0.3, 0.5, 0.8)


def _phi_inv(a):
    return mpmath.findroot(lambda x: mpmath.ncdf(x) - a, mpmath.sqrt(2) * mpmath.erfinv(2 * a - 1))


@pytest.mark.parametrize("mu", [0.05, 0.5, 1.0, 3.0, 8.0])
@pytest.mark.parametrize("alpha", ALPHAS)
def test_gaussian_tpr_closed_form_to_1e9(mu, alpha):
    with mpmath.workdps(50):
        exact = mpmath.ncdf(_phi_inv(mpmath.mpf(alpha)) + mu)
        lo, hi = risk.gaussian_tpr(mu, alpha)
        assert lo <= exact <= hi
        assert hi - lo <= 1e-9 * exact


@pytest.mark.parametrize("mu", [0.05, 1.0, 3.0, 8.0])
def test_gaussian_advantage_is_2phi_half_mu_minus_1(mu):
    with mpmath.workdps(50):
        exact = 2 * mpmath.ncdf(mpmath.mpf(mu) / 2) - 1
        lo, hi = risk.gaussian_advantage(mu)
        assert lo <= exact <= hi and hi - lo <= 1e-9 * exact


def _laplace_np(mu, alpha):
    """Neyman–Pearson power of Lap(0,1) vs Lap(μ,1) at level α by quadrature: the threshold
    t with P0(X > t) = α (found numerically), then P1(X > t) = ∫_t^∞ density."""
    def dens(x, m):
        return mpmath.exp(-abs(x - m)) / 2

    def surv(t, m):
        return mpmath.quad(lambda x: dens(x, m), [t, m, mpmath.inf] if t < m else [t, mpmath.inf])

    t = mpmath.findroot(lambda t: surv(t, 0) - alpha, (-40, 40), solver="bisect", tol=1e-30)
    return surv(t, mu)


@pytest.mark.parametrize("mu", [0.1, 1.0, 2.5])
@pytest.mark.parametrize("alpha", [1e-3, 0.05, 0.2, 0.5, 0.7])
def test_laplace_curve_is_its_neyman_pearson_power(mu, alpha):
    with mpmath.workdps(30):
        exact = _laplace_np(mpmath.mpf(mu), mpmath.mpf(alpha))
        lo, hi = risk.laplace_tpr(mu, alpha)
        assert lo - 1e-12 <= exact <= hi + 1e-12
        assert abs(hi - exact) <= 1e-9 * exact
    # strictly below the generic ε-DP curve inside (Laplace is not the worst ε-DP mechanism)
    if 0.5 * math.exp(-mu) < alpha < 0.5:
        assert hi < risk.point_tpr(mu, 0.0, alpha)[0]


def _gauss_profile(mu, grid):
    return np.array([math.exp(grel.analytic_log_delta(1.0 / mu, e)) for e in grid])


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.0])
@pytest.mark.parametrize("alpha", [1e-3, 0.01, 0.1, 0.4])
def test_profile_bracket_contains_the_exact_gaussian_curve(mu, alpha):
    grid = np.arange(0.0, 10.0, 0.01)
    d = _gauss_profile(mu, grid)
    lo, hi = risk.profile_tpr(alpha, grid, d * (1 - 1e-12), d * (1 + 1e-12))
    exact = risk.gaussian_tpr(mu, alpha)
    assert lo <= exact[0] and exact[1] <= hi
    assert hi - lo <= 2e-3 * exact[1]
    # never above the bound of any single grid point
    for e, dd in zip(grid, d * (1 + 1e-12), strict=True):
        assert hi <= risk.point_tpr(e, dd, alpha)[1] + 1e-15


def test_profile_advantage_is_delta_at_zero():
    grid = [0.0, 0.5]
    assert risk.profile_advantage(grid, [0.1, 0.05], [0.2, 0.06]) == (0.1, 0.2)
    with pytest.raises(ValueError):
        risk.profile_advantage([0.5], [0.1], [0.2])


def test_public_gaussian_cases(capsys):
    r = run(capsys, "gaussian", "--sigma", "1", "--delta", "1e-5", "--fpr", "0.05", "--json")
    assert r.code == 0
    risk_ = r.json["risk"]
    row = risk_["tpr"][0]
    assert Decimal("0.25951102284144406") <= row["upper"] <= Decimal("0.25951102310095514")
    assert row["lower"] <= row["upper"]
    assert (Decimal("0.3829249225480262") <= risk_["advantage"]["upper"]
            <= Decimal("0.38292492293095115"))


@pytest.mark.parametrize("tpr,fpr,sens", [("0.1", "0.01", "1"), ("0.5", "0.05", "2"),
                                          ("0.02", "1e-3", "1")])
def test_sigma_for_tpr_target_matches_closed_form_and_round_trips(capsys, tpr, fpr, sens):
    r = run(capsys, "gaussian", "--tpr", tpr, "--fpr", fpr, "--sensitivity", sens, "--json")
    assert r.code == 0, r.err
    sigma = float(r.json["value"])
    with mpmath.workdps(50):
        closed = float(sens) / float(_phi_inv(mpmath.mpf(tpr)) - _phi_inv(mpmath.mpf(fpr)))
    assert closed <= sigma <= closed * (1 + 1e-9)
    back = run(capsys, "gaussian", "--sigma", repr(sigma), "--delta", "1e-5", "--sensitivity",
               sens, "--fpr", fpr, "--json")
    assert back.json["risk"]["tpr"][0]["upper"] <= Decimal(tpr)


def test_laplace_scale_for_tpr_target_round_trips(capsys):
    r = run(capsys, "laplace", "--tpr", "0.1", "--fpr", "0.01", "--json")
    assert r.code == 0, r.err
    b = float(r.json["value"])
    assert risk.laplace_tpr(1.0 / b, 0.01)[1] <= 0.1
    assert risk.laplace_tpr(1.0 / (b * (1 - 1e-9)), 0.01)[1] > 0.1  # the smallest b
    back = run(capsys, "laplace", "--scale", repr(b), "--fpr", "0.01", "--json")
    assert back.json["risk"]["tpr"][0]["upper"] <= Decimal("0.1")


# dp_accounting 0.6.0 (benchmark venv, never a runtime dependency): PLD of the Poisson-
# subsampled Gaussian, pessimistic connect-the-dots, value_discretization_interval 2e-5,
# 10000-fold self-composition, TPR = min over ε ∈ [0, 7] (step 1e-4) of both branches.
ABADI_REF = {0.001: 0.00228818781745831, 0.01: 0.019142179259196708, 0.1: 0.15212978764302287}


def _dpsgd_risk(capsys, sigma="4", *extra):
    args = ["dpsgd", "--q", "0.01", "--sigma", sigma, "--epochs", "100", "--delta", "1e-5",
            "--json", *extra]
    for a in ABADI_REF:
        args += ["--fpr", repr(a)]
    r = run(capsys, *args)
    assert r.code == 0, r.err
    return r.json["risk"]


def test_dpsgd_bracket_contains_dp_accounting_and_beats_the_point(capsys):
    out = _dpsgd_risk(capsys)
    assert out["basis"] == "pld"
    for row in out["tpr"]:
        ref = ABADI_REF[float(row["fpr"])]
        assert float(row["lower"]) <= ref <= float(row["upper"])
        assert row["upper"] <= row["single_point"]
        assert float(row["upper"]) - float(row["lower"]) <= 3e-3 * ref
    adv = out["advantage"]
    assert 0.0 < adv["lower"] <= adv["upper"] < 1
    # labelled estimate only: the CLT value q√(T(e^{1/σ²} − 1)) ≈ 0.2533 is nearby
    assert 0.24 < out["gdp_mu_estimate"] < 0.27


def test_human_output_labels_the_gdp_estimate(capsys):
    r = run(capsys, "dpsgd", "--q", "0.01", "--sigma", "4", "--epochs", "100", "--delta", "1e-5",
            "--fpr", "0.01")
    assert r.code == 0
    assert "neither an upper nor a lower bound" in " ".join(r.out.split())
    assert "No membership-inference attack can exceed TPR 1.92 % at FPR 1 %." in r.out


def test_dpsgd_risk_is_monotone_in_sigma(capsys):
    prev = None
    for sigma in ("3", "4", "6"):
        rows = _dpsgd_risk(capsys, sigma)["tpr"]
        if prev is not None:
            for a, b in zip(prev, rows, strict=True):
                assert b["upper"] <= a["upper"] and b["lower"] <= a["lower"]
        prev = rows


def test_dpsgd_sigma_for_tpr_target_round_trips(capsys):
    r = run(capsys, "dpsgd", "--q", "0.01", "--epochs", "100", "--tpr", "0.02", "--fpr", "0.01",
            "--json")
    assert r.code == 0, r.err
    sigma = r.json["value"]
    assert r.json["solved_for"] == "sigma"
    assert r.json["risk"]["tpr"][0]["upper"] <= Decimal("0.02")
    # a smaller σ (by more than the solver's tolerance) has a certified lower bound above T
    lower = run(capsys, "dpsgd", "--q", "0.01", "--epochs", "100", "--sigma",
                repr(float(sigma) * 0.97), "--delta", "1e-5", "--fpr", "0.01", "--json")
    assert lower.json["risk"]["tpr"][0]["lower"] > Decimal("0.02")


def test_dpsgd_epochs_for_tpr_target(capsys):
    r = run(capsys, "dpsgd", "--q", "0.01", "--sigma", "4", "--tpr", "0.02", "--fpr", "0.01",
            "--json")
    assert r.code == 0, r.err
    epochs = r.json["value"]
    assert r.json["risk"]["tpr"][0]["upper"] <= Decimal("0.02")
    more = run(capsys, "dpsgd", "--q", "0.01", "--sigma", "4", "--epochs", str(epochs * 2),
               "--delta", "1e-5", "--fpr", "0.01", "--json")
    assert more.json["risk"]["tpr"][0]["lower"] > Decimal("0.02")


def test_point_only_commands_say_so(capsys):
    r = run(capsys, "compose", "--epsilon", "0.1", "--delta", "1e-6", "--k", "50",
            "--total-delta", "1e-4", "--fpr", "0.01", "--json")
    assert r.code == 0
    out = r.json["risk"]
    assert out["basis"] == "point" and "single (ε, δ) point" in out["note"]
    eps, delta = float(out["point"]["epsilon"]), float(out["point"]["delta"])
    # compose reads the best point of the optimal composition's profile: never looser than
    # the reported point (its soundness against the exact Neyman–Pearson test is checked in
    # tests/test_risk_compose.py)
    assert float(out["tpr"][0]["upper"]) <= min(1.0, math.exp(eps) * 0.01 + delta) + 1e-15
    r = run(capsys, "subsample", "--epsilon", "1", "--delta", "1e-6", "--q", "0.1", "--fpr",
            "0.01", "--json")
    assert r.code == 0 and r.json["risk"]["basis"] == "point"
    # a TPR target on subsample solves the largest q from the point (tests/test_risk_subsample.py)
    r = run(capsys, "subsample", "--epsilon", "1", "--delta", "1e-6", "--tpr", "0.1", "--fpr",
            "0.01", "--json")
    assert r.code == 0 and r.json["solved_for"] == "q" and r.json["risk"]["basis"] == "point"


@pytest.mark.parametrize("args,code", [
    (["--max-tpr", "0.3"], 0),
    (["--max-tpr", "0.2"], 1),
])
def test_max_tpr_gate_exit_codes(capsys, args, code):
    r = run(capsys, "gaussian", "--sigma", "1", "--delta", "1e-5", "--fpr", "0.05", *args)
    assert r.code == code
    if code == 1:
        assert r.err.startswith("dpcalc: error: --max-tpr 0.2 failed")


@pytest.mark.parametrize("args,needle", [
    (["--sigma", "1", "--delta", "1e-5", "--max-tpr", "0.2"], "--fpr"),
    (["--sigma", "1", "--delta", "1e-5", "--fpr", "1.5"], "--fpr"),
    (["--sigma", "1", "--delta", "1e-5", "--fpr", "nan"], "--fpr"),
    (["--tpr", "0.1"], "--fpr"),
    (["--tpr", "0.1", "--fpr", "0.01", "--fpr", "0.02"], "--fpr"),
    (["--tpr", "0.1", "--fpr", "0.01", "--delta", "1e-5"], "--tpr"),
    (["--tpr", "0.1", "--fpr", "0.01", "--sigma", "2"], "--sigma"),
])
def test_bad_risk_input_is_exit_2(capsys, args, needle):
    r = run(capsys, "gaussian", *args)
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("dpcalc: error: ") and needle in r.err and r.err.count("\n") == 1


def test_tpr_target_not_above_fpr_is_infeasible(capsys):
    r = run(capsys, "gaussian", "--tpr", "0.01", "--fpr", "0.01")
    assert r.code == 1 and "--tpr" in r.err


def test_installed_entry_point_prints_the_plain_sentence():
    out = subprocess.run([sys.executable, "-m", "dpcalc", "gaussian", "--sigma", "2", "--delta",
                          "1e-5", "--fpr", "0.01"], capture_output=True, text=True, check=True)
    assert "No membership-inference attack can exceed TPR" in out.stdout
    assert "at FPR 1 %" in out.stdout
    js = subprocess.run([sys.executable, "-m", "dpcalc", "gaussian", "--sigma", "2", "--delta",
                         "1e-5", "--fpr", "0.01", "--fpr", "0.1", "--json"],
                        capture_output=True, text=True, check=True)
    assert [r["fpr"] for r in json.loads(js.stdout)["risk"]["tpr"]] == [0.01, 0.1]


@pytest.mark.parametrize("args", [
    ["gaussian", "--sigma", "1", "--delta", "1e-5", "--fpr", "0.05", "--fpr", "0.5"],
    ["gaussian", "--tpr", "0.1", "--fpr", "0.01"],
    ["laplace", "--tpr", "0.1", "--fpr", "0.01"],
    ["dpsgd", "--q", "0.01", "--epochs", "100", "--tpr", "0.05", "--fpr", "0.01"],
    ["dpsgd", "--q", "0.01", "--epochs", "10", "--sigma", "1", "--delta", "1e-5", "--fpr",
     "1e-4"],
    ["laplace", "--scale", "0.5", "--fpr", "0.9"],
    ["compose", "--epsilon", "1", "--delta", "1e-6", "--k", "10", "--total-delta", "1e-4",
     "--fpr", "0.01"],
    ["subsample", "--epsilon", "1", "--delta", "1e-6", "--q", "0.1", "--fpr", "0.01"],
])
def test_risk_json_matches_schema(capsys, args):
    jsonschema = pytest.importorskip("jsonschema")
    from pathlib import Path

    schema = json.loads((Path(__file__).resolve().parent.parent / "schema" /
                         "dpcalc-output.schema.json").read_text())
    r = run(capsys, *args, "--json")
    assert r.code == 0, r.err
    jsonschema.Draft202012Validator(schema).validate(json.loads(r.out))
    assert "risk" in json.loads(r.out)


@pytest.mark.parametrize("tpr, fpr, steps", [(0.997, 0.0691, 1), (0.5, 0.01, 4)])
def test_tpr_target_sigma_at_q_one_is_the_gaussian_minimum(capsys, tpr, fpr, steps):
    # q = 1, T steps is one Gaussian with μ = √T/σ: the smallest σ meeting TPR ≤ T at FPR α
    # is √T/(Φ⁻¹(T) − Φ⁻¹(α)) [DRS19, Eq 6].  ε* was placed once, at the CLT start: σ 0.324
    # where the minimum is 0.2364 (helper-32); placed again at each answer it converges
    with mpmath.workdps(40):
        exact = float(mpmath.sqrt(steps) / (mpmath.sqrt(2) * (mpmath.erfinv(2 * tpr - 1)
                                                              - mpmath.erfinv(2 * fpr - 1))))
    out = run(capsys, "dpsgd", "--q", "1", "--steps", str(steps), "--tpr", str(tpr),
              "--fpr", str(fpr), "--value")
    assert out.code == 0
    sigma = float(out.out)
    assert exact <= sigma <= exact * (1 + 2e-3)


@pytest.mark.parametrize("sigma, steps, tpr, fpr",
                         [(2.0, 1000, 0.5, 1e-3), (5.0, 10000, 0.2, 1e-4)])
def test_a_tpr_solved_rate_round_trips_through_the_forward_question(sigma, steps, tpr, fpr):
    # the solve certifies TPR ≤ T at one ε*; the forward question at its answer reads the
    # profile's grid and said 0.50006 (a --max-tpr 0.5 gate there failed; helper-33)
    import dpcalc

    q = dpcalc.dpsgd(sigma=sigma, steps=steps, tpr=tpr, fpr=fpr).value
    forward = dpcalc.dpsgd(q=q, sigma=sigma, steps=steps, delta=1e-5, fpr=fpr)
    assert forward.extra["risk"]["tpr"][0]["upper"] <= tpr


def _gauss_mu_exact(tpr, fpr):
    with mpmath.workdps(40):
        return mpmath.sqrt(2) * (mpmath.erfinv(2 * mpmath.mpf(tpr) - 1)
                                 - mpmath.erfinv(2 * mpmath.mpf(fpr) - 1))


@pytest.mark.parametrize("tpr, fpr, steps", [(0.5, 0.01, 1), (0.997, 0.0691, 1),
                                             (0.5, 0.01, 100), (0.2, 1e-4, 30000)])
def test_q_one_sigma_for_a_tpr_target_is_the_closed_form(tpr, fpr, steps):
    # T Gaussian steps at q = 1 are one Gaussian with μ = √T/σ [DRS19, Cor 3.3]: the
    # smallest σ is √T/(Φ⁻¹(T) − Φ⁻¹(α)) exactly; the PLD profile's solve was up to 1.7 %
    # above it (σ 0.4372 for 0.42986 at one step, TPR 0.5 at FPR 0.01)
    import dpcalc

    exact = float(mpmath.sqrt(steps) / _gauss_mu_exact(tpr, fpr))
    r = dpcalc.dpsgd(q=1, steps=steps, tpr=tpr, fpr=fpr)
    assert exact <= r.value <= exact * (1 + 1e-12)
    assert r.extra["risk"]["basis"] == "exact"
    assert r.extra["risk"]["tpr"][0]["upper"] <= tpr


@pytest.mark.parametrize("sigma, tpr, fpr", [(2.0, 0.5, 0.01), (30.0, 0.1, 0.05)])
def test_q_one_steps_for_a_tpr_target_is_the_closed_form(sigma, tpr, fpr):
    import dpcalc

    with mpmath.workdps(40):
        most = int(mpmath.floor((_gauss_mu_exact(tpr, fpr) * sigma) ** 2))
    r = dpcalc.dpsgd(q=1, sigma=sigma, tpr=tpr, fpr=fpr, solve_for="steps")
    assert r.value == most


def test_q_one_forward_risk_is_the_exact_trade_off():
    import dpcalc

    r = dpcalc.dpsgd(q=1, sigma=2.0, steps=10, delta=1e-5, fpr=[0.01, 0.2])
    mu = mpmath.sqrt(10) / 2
    for row in r.extra["risk"]["tpr"]:
        with mpmath.workdps(40):
            exact = float(mpmath.ncdf(mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(
                row["fpr"]) - 1) + mu))
        assert row["lower"] <= exact <= row["upper"] <= exact * (1 + 1e-12)


@pytest.mark.parametrize("tpr, fpr, steps", [(0.9999999, 0.01, 1), (0.99999999, 0.01, 3),
                                             (0.011, 0.01, 1), (0.5, 0.499, 10**6)])
def test_q_one_sigma_at_extreme_targets_is_the_closed_form(tpr, fpr, steps):
    # targets within 1e-7 of 1 or 1e-5 of the FPR: the ulp-by-ulp step back ran 1e4-1e15
    # exact evaluations (a hang, helper-35); the solver bisects from the closed form
    import dpcalc

    exact = float(mpmath.sqrt(steps) / _gauss_mu_exact(tpr, fpr))
    r = dpcalc.dpsgd(q=1, steps=steps, tpr=tpr, fpr=fpr)
    assert exact <= r.value <= exact * (1 + 1e-9)
    assert r.extra["risk"]["tpr"][0]["upper"] <= tpr


@pytest.mark.parametrize("tpr, fpr, steps", [(0.776, 0.000417, 100), (0.5, 0.499, 10**6)])
def test_q_one_sigma_as_printed_passes_the_gate(capsys, tpr, fpr, steps):
    # the printed σ is read back rounded down (the private side for an input): the smallest
    # passing double printed as its shortest repr read back one ulp lower and failed the gate
    out = run(capsys, "dpsgd", "--q", "1", "--steps", str(steps), "--tpr", str(tpr),
              "--fpr", str(fpr), "--value")
    assert out.code == 0
    gate = run(capsys, "dpsgd", "--q", "1", "--steps", str(steps), "--sigma", out.out.strip(),
               "--delta", "1e-5", "--fpr", str(fpr), "--max-tpr", str(tpr), "--value")
    assert gate.code == 0, gate.err


def test_a_trivial_profile_is_capped_by_the_answers_own_point():
    """Below the PLD's rates the answer is strong composition's (ε ≤ 0.36037 at δ 6.9e-139)
    while the run's PLD profile certifies nothing (TPR ≤ 100 %): the reported bounds are the
    point's [KOV15, Thm 2.1], which a (ε, δ)-DP guarantee of the same run gives; with a
    tight profile (q 0.01) the profile's stay."""
    import dpcalc
    from dpcalc.relations import risk as rrel

    r = dpcalc.dpsgd(q=1e-16, sigma=0.9082, steps=84576, delta=6.939e-139, fpr=0.05,
                     compare=False)
    assert r.method == "strong"
    block = r.extra["risk"]
    row = block["tpr"][0]
    eps, delta = r.value, r.parameters["delta"]
    assert row["upper"] == row["single_point"] == rrel.point_tpr(eps, delta, 0.05)[1] < 0.08
    assert row["lower"] <= row["upper"]
    assert block["advantage"]["upper"] == rrel.point_advantage(eps, delta)[1]
    r = dpcalc.dpsgd(q=0.01, sigma=4, epochs=100, delta=1e-5, fpr=0.05, compare=False)
    row = r.extra["risk"]["tpr"][0]
    assert row["upper"] < row["single_point"]
    assert row["upper"] - row["lower"] < 1e-3
