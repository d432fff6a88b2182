"""Plans and attack risk: the engine's many-ε profile reader for any plan, and the certified
PLD-based TPR bracket of `compose --from` plans (issue 12)."""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pytest

from dpcalc.mechanisms.eps_delta import EpsDelta
from dpcalc.mechanisms.gaussian import Gaussian
from dpcalc.mechanisms.subsampled_gaussian import SubsampledGaussian
from dpcalc.pld import accountant
from tests.cli_helpers import run


def _gauss_log_delta(mu: float, eps: float) -> float:
    """Exact log δ(ε) of G_μ at any real ε [BW18, Thm 8], 50 digits."""
    with mpmath.workdps(50):
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        d = mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)
        return float(mpmath.log(d))


def test_profile_of_a_gaussian_plan_brackets_the_exact_curve():
    # μ² = Σ n/σ² = 3/4 + 2/9 [DRS19, Cor 3.3]; ε over the real line, negative included
    items = [(Gaussian(2.0), 3), (Gaussian(3.0), 2)]
    mu = math.sqrt(3 / 4 + 2 / 9)
    grid = np.array([-1.0, -0.3, 0.0, 0.25, 0.7, 1.5, 3.0])
    lo, up = accountant.log_delta_profile(items, grid, 1e-3, focus=0.5)
    for e, a, b in zip(grid, lo, up, strict=True):
        exact = _gauss_log_delta(mu, float(e))
        assert a <= exact <= b, (e, a, exact, b)
    # tight where δ matters
    assert np.all(-np.expm1(lo[:5] - up[:5]) < 2e-2)


def test_profile_reader_matches_single_point_reads():
    # the vectorised reader and the scalar one of one composition give the same claim
    items = [(SubsampledGaussian(0.02, 1.2), 200), (EpsDelta(0.1, math.log(1e-7)), 3)]
    prof = accountant.Profile(items, log_delta=math.log(1e-5))
    grid = [-0.5, 0.0, 0.4, 1.0, 2.0]
    lo, up = prof.log_delta_many(grid)
    for e, a, b in zip(grid, lo, up, strict=True):
        sa, sb = prof.log_delta_bounds(e)
        assert a <= sb and sa <= b
        assert b == pytest.approx(sb, rel=1e-9, abs=1e-12)
        assert a == pytest.approx(sa, rel=1e-9, abs=1e-12)


def test_mixed_plan_profile_brackets_pointwise_bounds():
    items = [(SubsampledGaussian(0.02, 1.2), 200), (EpsDelta(0.1, math.log(1e-7)), 3)]
    grid = np.array([0.0, 0.5, 1.0, 1.5])
    lo, up = accountant.log_delta_profile(items, grid, 1e-3)
    for e, a, b in zip(grid, lo, up, strict=True):
        sa, sb = accountant.log_delta_bounds(items, float(e), 1e-3)
        assert a <= sb and sa <= b          # both certified: the brackets overlap


# ---- compose --from plans: the risk of the plan's own profile --------------------------

def _plan_file(tmp_path, records, name="plan.json"):
    p = tmp_path / name
    p.write_text(json.dumps(records))
    return str(p)


def _rows(r):
    return {float(row["fpr"]): row for row in r.json["risk"]["tpr"]}


def _g_tpr(mu, a):
    with mpmath.workdps(40):
        return float(mpmath.ncdf(mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(a) - 1) + mu))


GAUSS_PLAN = [{"mechanism": "gaussian", "sigma": 2, "count": 3},
              {"mechanism": "gaussian", "sigma": 3, "sensitivity": 1, "count": 2}]
GAUSS_MU = math.sqrt(3 / 4 + 2 / 9)      # μ² = Σ n·(Δ/σ)² [DRS19, Cor 3.3]


def test_gaussian_plan_risk_is_the_exact_curve(capsys, tmp_path):
    src = _plan_file(tmp_path, GAUSS_PLAN)
    r = run(capsys, "compose", "--from", src, "--total-delta", "1e-5", "--fpr", "0.01",
            "--fpr", "0.1", "--json")
    assert r.code == 0, r.err
    assert r.json["risk"]["basis"] == "exact"
    for a, row in _rows(r).items():
        exact = _g_tpr(GAUSS_MU, a)
        assert float(row["lower"]) <= exact <= float(row["upper"])
        assert float(row["upper"]) - float(row["lower"]) < 1e-12


def test_pld_profile_of_a_gaussian_plan_brackets_the_exact_curve():
    # the certified PLD path itself, on the same plan: TPR = Φ(Φ⁻¹(α) + μ) inside its bracket
    from dpcalc.api import _risk_pld

    items = [(Gaussian(2.0), 3), (Gaussian(3.0), 2)]
    out = _risk_pld.block(items, 1e-3, (0.001, 0.01, 0.1, 0.5), None)
    assert out["basis"] == "pld"
    for row in out["tpr"]:
        exact = _g_tpr(GAUSS_MU, row["fpr"])
        assert row["lower"] <= exact <= row["upper"], row
        assert row["upper"] - row["lower"] < 2e-3 * row["upper"]
    adv = 2 * float(mpmath.ncdf(GAUSS_MU / 2)) - 1
    assert out["advantage"]["lower"] <= adv <= out["advantage"]["upper"]


FPRS = ("0.001", "0.01", "0.1")


def _fpr_args():
    return [x for a in FPRS for x in ("--fpr", a)]


def test_one_item_dpsgd_plan_equals_dpsgd_fpr(capsys, tmp_path):
    src = _plan_file(tmp_path, [{"mechanism": "dpsgd", "q": 0.01, "sigma": 4, "epochs": 100}])
    plan = run(capsys, "compose", "--from", src, "--total-delta", "1e-5", *_fpr_args(),
               "--json")
    one = run(capsys, "dpsgd", "--q", "0.01", "--sigma", "4", "--epochs", "100", "--delta",
              "1e-5", *_fpr_args(), "--json")
    assert plan.code == 0 and one.code == 0, plan.err + one.err
    assert plan.json["risk"]["basis"] == "pld"
    p, d = _rows(plan), _rows(one)
    for a in p:
        assert float(p[a]["upper"]) <= float(d[a]["upper"])
        assert float(p[a]["lower"]) >= float(d[a]["lower"])
    pa, da = plan.json["risk"]["advantage"], one.json["risk"]["advantage"]
    assert float(pa["upper"]) <= float(da["upper"]) and float(pa["lower"]) >= float(da["lower"])


TWO_PHASE = [{"mechanism": "dpsgd", "batch_size": 256, "dataset_size": 60000, "sigma": 1.1,
              "epochs": 30},
             {"mechanism": "dpsgd", "batch_size": 512, "dataset_size": 60000, "sigma": 1.5,
              "epochs": 30}]


def test_installed_entry_point_plan_reads_the_profile(tmp_path):
    # through the installed entry point: the plan's risk is its PLD profile, not the point
    import subprocess
    import sys

    src = _plan_file(tmp_path, TWO_PHASE)
    out = subprocess.run([sys.executable, "-m", "dpcalc", "compose", "--from", src,
                          "--total-delta", "1e-5", *_fpr_args(), "--json"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    risk = json.loads(out.stdout)["risk"]
    assert risk["basis"] == "pld" and "note" not in risk
    for row in risk["tpr"]:
        # the full profile never exceeds the single (ε, δ) point's bound, and here beats it
        assert row["lower"] <= row["upper"] <= row["single_point"]
        assert row["upper"] < 0.6 * row["single_point"]
        assert row["upper"] - row["lower"] <= 2e-3 * row["upper"]


def test_plan_risk_is_monotone_in_sigma(capsys, tmp_path):
    uppers, lowers = [], []
    for sigma in (0.9, 1.2, 1.6):
        recs = [dict(TWO_PHASE[0], epochs=3), dict(TWO_PHASE[1], sigma=sigma, epochs=3)]
        r = run(capsys, "compose", "--from", _plan_file(tmp_path, recs), "--total-delta",
                "1e-5", "--fpr", "0.01", "--json")
        assert r.code == 0, r.err
        row = r.json["risk"]["tpr"][0]
        uppers.append(float(row["upper"]))
        lowers.append(float(row["lower"]))
    assert uppers[0] > uppers[1] > uppers[2]
    assert lowers[0] > lowers[1] > lowers[2]
    # more noise: the whole bracket moves down (lower at σ_i above upper at σ_{i+1})
    assert lowers[0] > uppers[1] and lowers[1] > uppers[2]


def test_mixed_plan_with_a_point_reads_the_profile(capsys, tmp_path):
    recs = [dict(TWO_PHASE[0], epochs=3), {"epsilon": 0.5, "delta": 1e-7, "count": 2}]
    r = run(capsys, "compose", "--from", _plan_file(tmp_path, recs), "--total-delta", "1e-5",
            "--fpr", "0.01", "--fpr", "0.2", "--json")
    assert r.code == 0, r.err
    risk = r.json["risk"]
    assert risk["basis"] == "pld"
    for row in risk["tpr"]:
        a = float(row["fpr"])
        # composing more never helps: at least the two points' own composed curve at ε = 1
        # ... and never above the single (ε, δ) point of the plan
        assert float(row["lower"]) <= float(row["upper"]) <= float(row["single_point"])
        assert float(row["lower"]) >= min(1.0, math.exp(0.5) * a) - 1e-9 or a > 0.15


def test_plan_tpr_gate(capsys, tmp_path):
    src = _plan_file(tmp_path, [dict(TWO_PHASE[0], epochs=3)])
    r = run(capsys, "compose", "--from", src, "--total-delta", "1e-5", "--fpr", "0.01",
            "--json")
    upper = float(r.json["risk"]["tpr"][0]["upper"])
    ok = run(capsys, "compose", "--from", src, "--total-delta", "1e-5", "--fpr", "0.01",
             "--max-tpr", f"{upper * 1.01:.6g}")
    bad = run(capsys, "compose", "--from", src, "--total-delta", "1e-5", "--fpr", "0.01",
              "--max-tpr", f"{upper * 0.99:.6g}")
    assert ok.code == 0 and bad.code == 1


# ---- TPR-target solves in plans --------------------------------------------------------

def test_gaussian_plan_sigma_for_tpr_round_trips(capsys, tmp_path):
    recs = [{"mechanism": "gaussian", "sigma": 2, "count": 3},
            {"mechanism": "gaussian", "sigma": None, "count": 2}]
    r = run(capsys, "compose", "--from", _plan_file(tmp_path, recs), "--tpr", "0.3", "--fpr",
            "0.05", "--json")
    assert r.code == 0, r.err
    sigma = float(r.json["value"])
    # closed form: μ_target = Φ⁻¹(T) − Φ⁻¹(α), 2/σ² = μ_target² − 3/4
    from statistics import NormalDist

    nd = NormalDist()
    mu_t = nd.inv_cdf(0.3) - nd.inv_cdf(0.05)
    exact = math.sqrt(2 / (mu_t ** 2 - 3 / 4))
    assert exact <= sigma <= exact * (1 + 1e-4)
    assert _g_tpr(math.sqrt(3 / 4 + 2 / sigma ** 2), 0.05) <= 0.3
    # beyond reach: the fixed record alone already allows more than TPR 0.2 at 5 %
    r = run(capsys, "compose", "--from", _plan_file(tmp_path, recs), "--tpr", "0.2", "--fpr",
            "0.05")
    assert r.code == 1 and r.err.startswith("dpcalc: error: ")


def test_plan_sigma_for_tpr_round_trips(capsys, tmp_path, validator_schema):
    recs = [dict(TWO_PHASE[0], epochs=3), dict(TWO_PHASE[1], sigma=None, epochs=3)]
    r = run(capsys, "compose", "--from", _plan_file(tmp_path, recs, "null.json"), "--tpr",
            "0.05", "--fpr", "0.01", "--json")
    assert r.code == 0, r.err
    validator_schema.validate(json.loads(r.out))
    assert r.json["solved_for"] == "records[1].sigma"
    assert r.json["risk"]["basis"] == "pld"
    sigma = float(r.json["value"])
    assert float(r.json["risk"]["tpr"][0]["upper"]) <= 0.05

    def forward(s):
        recs2 = [recs[0], dict(recs[1], sigma=s)]
        f = run(capsys, "compose", "--from", _plan_file(tmp_path, recs2), "--total-delta",
                "1e-5", "--fpr", "0.01", "--json")
        assert f.code == 0, f.err
        return f.json["risk"]["tpr"][0]

    at = forward(sigma)
    assert float(at["lower"]) <= 0.05                  # the truth is at most the target
    assert float(forward(sigma * 0.99)["lower"]) > 0.05   # and 1 % less noise misses it


def test_plan_count_for_tpr_round_trips(capsys, tmp_path):
    recs = [{"mechanism": "laplace", "scale": 20, "count": None},
            {"mechanism": "gaussian", "sigma": 8}]
    r = run(capsys, "compose", "--from", _plan_file(tmp_path, recs, "null.json"), "--tpr",
            "0.1", "--fpr", "0.05", "--json")
    assert r.code == 0, r.err
    n = int(r.json["value"])
    assert r.json["solved_for"] == "records[0].count" and n >= 1

    def lower(count):
        recs2 = [dict(recs[0], count=count), recs[1]]
        f = run(capsys, "compose", "--from", _plan_file(tmp_path, recs2), "--total-delta",
                "1e-5", "--fpr", "0.05", "--json")
        assert f.code == 0, f.err
        return float(f.json["risk"]["tpr"][0]["lower"])

    assert lower(n) <= 0.1
    assert lower(math.ceil(n * 1.05) + 1) > 0.1


@pytest.mark.parametrize("args,needle", [
    (["--tpr", "0.2", "--fpr", "0.05"], "null"),                       # nothing to solve
    (["--tpr", "0.2", "--fpr", "0.05", "--total-delta", "1e-5"], "--tpr"),
    (["--tpr", "0.2"], "--fpr"),
])
def test_plan_tpr_bad_input_is_exit_2(capsys, tmp_path, args, needle):
    src = _plan_file(tmp_path, GAUSS_PLAN)
    r = run(capsys, "compose", "--from", src, *args)
    assert r.code == 2 and r.out == "", r.err
    assert r.err.startswith("dpcalc: error: ") and needle in r.err and r.err.count("\n") == 1


# ---- DP-SGD: one place builds the run's pairs --------------------------------------------

RUN = ["dpsgd", "--q", "0.01", "--sigma", "2", "--epochs", "5", "--delta", "1e-5"]


def _risk_rows(capsys, *extra):
    r = run(capsys, *RUN, *extra, "--fpr", "0.01", "--fpr", "0.1", "--json")
    assert r.code == 0, r.err
    assert r.json["risk"]["basis"] == "pld"
    return [(float(x["lower"]), float(x["upper"]), float(x["single_point"]))
            for x in r.json["risk"]["tpr"]]


def test_run_items_follow_the_scheme():
    from dpcalc.api._dpsgd_items import run_items
    from dpcalc.api.dpsgd_runs import pair_of, scheme_of
    from dpcalc.errors import UsageError

    (pair, n), = run_items(0.01, 4.0, 100)
    assert pair.key() == ("subsampled-gaussian", 0.01, 4.0) and n == 100
    for args in (("fixed-batch", None, None), ("poisson", "replace-one", None),
                 ("poisson", None, 3)):
        scheme = scheme_of(*args)
        (pair, n), = run_items(0.01, 4.0, 100, scheme)
        assert pair.key() == pair_of(scheme, 0.01, 4.0).key() != ("subsampled-gaussian",
                                                                    0.01, 4.0)
    with pytest.raises(UsageError):
        run_items(0.01, 4.0, 100, scheme_of("shuffle", None, None))


def test_dpsgd_risk_reads_the_runs_own_pair(capsys):
    # never a silent Poisson add/remove answer: replace-one and K = 2 leak more, and their
    # certified brackets lie entirely above the default run's
    base = _risk_rows(capsys)
    for extra in (["--relation", "replace-one"], ["--examples-per-user", "2"],
                  ["--sampling", "fixed-batch"]):
        rows = _risk_rows(capsys, *extra)
        for (lo, up, point), (_, base_up, _) in zip(rows, base, strict=True):
            assert lo <= up <= point
            assert lo > base_up, extra


def test_shuffle_has_no_profile_exit_2(capsys):
    r = run(capsys, *RUN, "--sampling", "shuffle", "--fpr", "0.01")
    assert r.code == 2 and r.out == "" and "--sampling shuffle" in r.err
    assert r.err.startswith("dpcalc: error: ") and r.err.count("\n") == 1


def test_scheme_sigma_for_tpr_round_trips(capsys):
    r = run(capsys, "dpsgd", "--q", "0.01", "--epochs", "5", "--relation", "replace-one",
            "--tpr", "0.05", "--fpr", "0.01", "--json")
    assert r.code == 0, r.err
    assert r.json["parameters"]["relation"] == "replace-one"
    sigma = float(r.json["value"])

    def lower(s):
        f = run(capsys, "dpsgd", "--q", "0.01", "--epochs", "5", "--sigma", repr(s),
                "--relation", "replace-one", "--delta", "1e-5", "--fpr", "0.01", "--json")
        assert f.code == 0, f.err
        return float(f.json["risk"]["tpr"][0]["lower"])

    assert lower(sigma) <= 0.05 < lower(sigma * 0.99)


@pytest.fixture(scope="module")
def validator_schema():
    jsonschema = pytest.importorskip("jsonschema")
    from pathlib import Path

    schema = json.loads((Path(__file__).resolve().parent.parent / "schema" /
                         "dpcalc-output.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def test_plan_risk_json_matches_schema(capsys, tmp_path, validator_schema):
    for recs, extra in ((TWO_PHASE, ["--total-delta", "1e-5", *_fpr_args()]),
                        (GAUSS_PLAN, ["--total-epsilon", "1", "--fpr", "0.01"]),
                        ([{"mechanism": "gaussian", "sigma": None}, {"epsilon": 0.1,
                                                                    "delta": 1e-8}],
                         ["--tpr", "0.1", "--fpr", "0.01"])):
        r = run(capsys, "compose", "--from", _plan_file(tmp_path, recs), *extra, "--json")
        assert r.code == 0, r.err
        validator_schema.validate(json.loads(r.out))
        assert "risk" in r.json
