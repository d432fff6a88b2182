"""``compose --from`` with mechanisms (plans), through the installed entry point.

Checks: the plan's certified bracket and the (ε, δ)-point comparison; --json outputs of
gaussian/dpsgd as records; mixed plans say how they composed; every null solve round-trips
(the solved number passes, one step to the unsafe side fails); errors name record and field.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from dpcalc.api.compose import compose


def dpcalc(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpcalc", *args], input=stdin,
                          capture_output=True, text=True, check=False)


def plan_json(records, *args: str) -> dict:
    proc = dpcalc("compose", "--from", "-", *args, "--json", stdin=json.dumps(records))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def total_eps(records, delta=1e-5) -> float:
    return compose(records=records, total_delta=delta).value


def test_public_plan_of_two_gaussians_is_exact():
    out = plan_json([{"mechanism": "gaussian", "sigma": 1, "sensitivity": 1},
                     {"mechanism": "gaussian", "sigma": 2, "sensitivity": 1}],
                    "--total-delta", "1e-5")
    assert out["method"] == "pld" and out["solved_for"] == "total_epsilon"
    assert 4.983306405970709 <= out["value"] <= 4.993273018782651


def test_two_phase_training_run_is_one_bracket_far_below_the_sum_of_points():
    out = plan_json([{"mechanism": "dpsgd", "q": 256 / 60000, "sigma": 1.1, "epochs": 30},
                     {"mechanism": "dpsgd", "batch_size": 512, "dataset_size": 60000,
                      "sigma": 1.5, "epochs": 30}], "--total-delta", "1e-5")
    assert out["method"] == "pld"
    assert out["bounds"]["lower"] <= out["value"] == out["bounds"]["upper"]
    assert abs(out["value"] - 2.2887) <= 0.005          # dp_accounting: 2.28873
    basic = next(c for c in out["comparison"] if c["method"] == "basic")["total_epsilon"]
    assert basic >= 1.3 * out["value"]                  # the old way: a sum of (ε, δ) points


def test_json_outputs_of_gaussian_and_dpsgd_are_mechanism_records():
    g = dpcalc("gaussian", "--sigma", "10", "--delta", "1e-6", "--json")
    d = dpcalc("dpsgd", "--q", "0.01", "--sigma", "2", "--epochs", "3", "--delta", "1e-6",
               "--json")
    proc = dpcalc("compose", "--from", "-", "--total-delta", "1e-5", "--json",
                  stdin=g.stdout + d.stdout)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["method"] == "pld"
    direct = total_eps([{"mechanism": "gaussian", "sigma": 10},
                        {"mechanism": "subsampled-gaussian", "q": 0.01, "sigma": 2,
                         "steps": 300}])
    assert out["value"] == pytest.approx(direct, rel=1e-12)
    # the records' own (ε, δ) points give the comparison
    assert all(c["total_epsilon"] is None or c["total_epsilon"] >= out["bounds"]["lower"]
               for c in out["comparison"])


def test_mixed_plan_composes_points_as_worst_case_pairs_and_says_so():
    out = plan_json([{"mechanism": "gaussian", "sigma": 3},
                     {"epsilon": 0.5, "delta": 1e-6, "count": 2}], "--total-delta", "1e-5")
    assert any("(ε, δ) point" in n for n in out["notes"])
    optimal = next(c for c in out["comparison"] if c["method"] == "optimal")
    assert optimal["total_epsilon"] is not None and optimal["total_epsilon"] >= out["value"]


def test_explicit_method_on_points_keeps_the_old_path():
    recs = [{"epsilon": 0.1, "delta": 1e-6}] * 10
    old = compose(records=recs, total_delta=1e-4)
    assert old.method == "optimal"
    new = compose(records=recs, total_delta=1e-4, method="pld")
    assert new.method == "pld" and new.value <= old.value * (1 + 2e-3)


def test_total_delta_from_total_epsilon():
    out = plan_json([{"mechanism": "laplace", "scale": 2},
                     {"mechanism": "gaussian", "sigma": 4, "count": 3}], "--total-epsilon", "2")
    assert out["solved_for"] == "total_delta"
    assert 0 <= out["bounds"]["lower"] <= out["value"]


# ---------------------------------------------------------------- null round trips

BASE = [{"mechanism": "gaussian", "sigma": 6.0},
        {"mechanism": "subsampled-gaussian", "q": 0.05, "sigma": 1.5, "steps": 40},
        {"mechanism": "laplace", "scale": 8.0, "count": 2}]
TE, TD = 2.0, 1e-5


def with_value(i: int, field: str, value):
    recs = [dict(r) for r in BASE]
    recs[i][field] = value
    return recs


def solve(i: int, field: str):
    r = compose(records=with_value(i, field, None), total_epsilon=TE, total_delta=TD)
    assert r.solved_for == f"records[{i}].{field}"
    assert r.value == r.parameters[r.solved_for]
    return r.value


@pytest.mark.parametrize("i,field,unsafe", [(0, "sigma", 0.99), (2, "scale", 0.99),
                                            (1, "q", 1.01)])
def test_null_noise_and_rate_round_trip(i, field, unsafe):
    value = solve(i, field)
    assert total_eps(with_value(i, field, value)) <= TE
    assert total_eps(with_value(i, field, value * unsafe)) > TE


@pytest.mark.parametrize("i,field", [(1, "steps"), (2, "count")])
def test_null_count_round_trip(i, field):
    n = solve(i, field)
    assert isinstance(n, int) and n >= 1
    assert total_eps(with_value(i, field, n)) <= TE
    assert total_eps(with_value(i, field, n + 1)) > TE


def test_null_epochs_round_trip():
    recs = [{"mechanism": "gaussian", "sigma": 6.0},
            {"mechanism": "dpsgd", "q": 0.05, "sigma": 1.5, "epochs": None}]
    r = compose(records=recs, total_epsilon=TE, total_delta=TD)
    assert r.solved_for == "records[1].epochs"
    steps = math.ceil(r.value / 0.05 - 1e-9)
    recs[1]["epochs"] = r.value
    assert total_eps(recs) <= TE
    recs[1]["epochs"] = (steps + 1) * 0.05
    assert total_eps(recs) > TE


def test_null_solve_through_the_cli():
    out = plan_json(with_value(0, "sigma", None), "--total-epsilon", str(TE),
                    "--total-delta", str(TD))
    assert out["solved_for"] == "records[0].sigma"
    assert out["value"] == out["parameters"]["records[0].sigma"]


# ---------------------------------------------------------------------- errors

@pytest.mark.parametrize("records,args,message", [
    ([{"mechanism": "gaussian", "sigma": 5}, {"epsilon": 0.5, "delta": 1e-6},
      {"mechanism": "gaussian", "sigma": -1}], ("--total-delta", "1e-5"),
     '--from: record 3: "sigma" must be'),
    ([{"mechanism": "gaussian", "sigma": 5, "sigam": 2}], ("--total-delta", "1e-5"),
     'record 1: unknown field "sigam"'),
    ([{"mechanism": "gaussain", "sigma": 5}], ("--total-delta", "1e-5"),
     "record 1: unknown mechanism"),
    ([{"mechanism": "gaussian", "sigma": None}, {"mechanism": "laplace", "scale": None}],
     ("--total-epsilon", "1", "--total-delta", "1e-5"), "leave exactly one number out"),
    ([{"mechanism": "gaussian", "sigma": None}], ("--total-delta", "1e-5"),
     "give both --total-epsilon and --total-delta"),
    ([{"mechanism": "dpsgd", "q": 0.01, "sigma": 1, "epochs": 1, "sampling": "shuffle"}],
     ("--total-delta", "1e-5"), 'record 1: "sampling"'),
    ([{"mechanism": "laplace", "scale": 1, "count": 0}], ("--total-delta", "1e-5"),
     'record 1: "count" must be'),
])
def test_errors_name_the_record_and_the_field(records, args, message):
    proc = dpcalc("compose", "--from", "-", *args, stdin=json.dumps(records))
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.startswith("dpcalc: error: ") and message in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_explicit_point_method_on_a_mechanism_record_says_to_use_pld():
    proc = dpcalc("compose", "--from", "-", "--total-delta", "1e-5", "--method", "optimal",
                  stdin=json.dumps([{"mechanism": "gaussian", "sigma": 2}]))
    assert proc.returncode == 2
    assert "record 1 is a mechanism" in proc.stderr and "pld" in proc.stderr


def test_human_headline_of_a_solved_noise_says_at_least():
    proc = dpcalc("compose", "--from", "-", "--total-epsilon", "1", "--total-delta", "1e-5",
                  stdin=json.dumps([{"mechanism": "gaussian", "sigma": None},
                                    {"mechanism": "gaussian", "sigma": 10}]))
    assert proc.returncode == 0, proc.stderr
    assert "record 1 σ ≥ " in proc.stdout


def test_a_null_that_cannot_fit_is_infeasible_exit_1():
    proc = dpcalc("compose", "--from", "-", "--total-epsilon", "1", "--total-delta", "1e-5",
                  stdin=json.dumps([{"mechanism": "gaussian", "sigma": None},
                                    {"mechanism": "gaussian", "sigma": 3}]))
    assert proc.returncode == 1
    assert proc.stderr.startswith("dpcalc: error: ") and "records[0].sigma" in proc.stderr


def test_laplace_json_output_is_a_laplace_record():
    lap = json.loads(dpcalc("laplace", "--scale", "2", "--json").stdout)
    from_output = total_eps([lap, {"mechanism": "gaussian", "sigma": 5}])
    direct = total_eps([{"mechanism": "laplace", "scale": 2},
                        {"mechanism": "gaussian", "sigma": 5}])
    assert from_output == direct


# ---- a mechanism is one pair module plus one registry entry (issue 10) --------------------

def test_subsampled_laplace_plans_from_its_registry_entry():
    # q = 1: the plain Laplace mechanism, `steps` times
    whole = total_eps([{"mechanism": "subsampled-laplace", "q": 1, "scale": 2, "steps": 10}])
    plain = total_eps([{"mechanism": "laplace", "scale": 2, "count": 10}])
    assert whole == plain
    # each step is ε'-DP with ε' = log(1 + q(e^{1/b} − 1)) [BBG18, Thm 8], so the plan is
    # below the optimal composition of T such points [KOV15, Thm 3.3]; and well above 0
    q, b, steps = 0.05, 0.5, 200
    eps1 = math.log1p(q * math.expm1(1 / b))
    out = plan_json([{"mechanism": "subsampled-laplace", "q": q, "scale": b, "steps": steps}],
                    "--total-delta", "1e-5")
    kov = compose(epsilon=eps1, delta=0, k=steps, total_delta=1e-5, method="optimal").value
    assert 0 < out["bounds"]["lower"] <= out["value"] <= kov * (1 + 2e-3)
    assert out["value"] < steps * eps1


def test_subsampled_laplace_null_scale_round_trips():
    rec = {"mechanism": "subsampled-laplace", "q": 0.02, "scale": None, "steps": 500}
    out = plan_json([rec], "--total-delta", "1e-5", "--total-epsilon", "1")
    assert out["solved_for"] == "records[0].scale"
    b = out["value"]
    assert total_eps([dict(rec, scale=b)]) <= 1.0
    assert total_eps([dict(rec, scale=b * (1 - 1e-3))]) > 1.0


def test_a_new_registry_entry_is_all_a_plan_needs(monkeypatch):
    from dpcalc import mechanisms

    entry = mechanisms.Entry("dpcalc.mechanisms.gaussian", "Gaussian",
                             mechanisms.Record(("sigma",), ("sigma",)))
    monkeypatch.setitem(mechanisms.PAIRS, "my-gaussian", entry)
    mine = total_eps([{"mechanism": "my-gaussian", "sigma": 3, "count": 4}])
    # the registered "gaussian" plan is exact (one Gaussian, DRS19 Cor 3.3); the new name
    # goes through the PLD engine: a certified upper bound within its tolerance
    exact = total_eps([{"mechanism": "gaussian", "sigma": 3, "count": 4}])
    assert exact <= mine <= exact * (1 + 1e-3)


def test_unknown_fields_of_a_registered_mechanism_are_named():
    proc = dpcalc("compose", "--from", "-", "--total-delta", "1e-5",
                  stdin=json.dumps([{"mechanism": "subsampled-laplace", "q": 0.1, "scale": 1,
                                     "steps": 3, "sigma": 2}]))
    assert proc.returncode == 2
    assert proc.stderr.strip() == ('dpcalc: error: --from: record 1: unknown field "sigma" for '
                                   "subsampled-laplace (fields: q, scale, sensitivity, steps, "
                                   "count)")


@pytest.mark.parametrize("records, message", [
    ([{"mechanism": "gaussian", "sigma": -1.5}],
     'dpcalc: error: --from: record 1: "sigma" must be a number in (0, inf), got -1.5'),
    ([{"mechanism": "subsampled-laplace", "q": 0.1, "scale": 2, "steps": 1e12}],
     "dpcalc: error: --from: record 1: 1e+12 compositions; plans account for at most 1e+09"),
])
def test_record_errors_show_numbers_as_written_and_cap_compositions(records, message):
    proc = dpcalc("compose", "--from", "-", "--total-delta", "1e-5",
                  stdin=json.dumps(records))
    assert proc.returncode == 2 and proc.stderr.strip() == message


def _exit_and_error(records, *args):
    out = dpcalc("compose", "--from", "-", *args, stdin=json.dumps(records))
    return out.returncode, out.stderr.strip()


def test_total_delta_zero_is_the_sum_of_pure_losses():
    # δ = 0: ε is the sum of the losses' hard upper edges (it was exit 2, "log_delta must
    # be finite and < 0, got -inf"; helper-32); the comparison rows compose the same points
    lap = [{"mechanism": "laplace", "scale": 2, "count": 3}, {"epsilon": 0.5, "delta": 0}]
    got = plan_json(lap, "--total-delta", "0")
    assert 2.0 <= got["value"] <= 2.0 * (1 + 1e-11)
    rows = {row["method"]: row["total_epsilon"] for row in got["comparison"]}
    assert 2.0 <= rows["basic"] <= 2.0 * (1 + 1e-11)
    # an unbounded loss (a Gaussian; a point with δ > 0) meets δ = 0 at no ε: exit 1
    for records in ([{"mechanism": "gaussian", "sigma": 2}],
                    [{"mechanism": "gaussian", "sigma": 2}, {"epsilon": 1, "delta": 1e-6}]):
        code, err = _exit_and_error(records, "--total-delta", "0")
        assert code == 1 and "δ = 0 needs pure DP" in err and "\n" not in err


def test_total_delta_below_the_points_mass_at_infinity_is_infeasible():
    # 10 × (1, 1e-6) spend δ ≥ 1 − (1 − 1e-6)^10 at every ε: --total-delta 1e-9 is met by
    # no ε; with a Gaussian beside them it was exit 3 ("the error budget exceeds δ at
    # every ε"), with the points alone exit 1 (helper-32)
    points = {"epsilon": 1, "delta": 1e-6, "count": 10}
    for records in ([points], [points, {"mechanism": "gaussian", "sigma": 3}]):
        code, err = _exit_and_error(records, "--total-delta", "1e-9")
        assert code == 1 and "records spend at any ε" in err
    got = plan_json([points, {"mechanism": "gaussian", "sigma": 3}], "--total-delta", "1e-4")
    assert math.isfinite(got["value"])
