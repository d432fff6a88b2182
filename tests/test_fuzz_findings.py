"""Defects a black-box fuzz of the CLI found (helper-13, session 37), through the real entry
point: a misspelt field of an (ε, δ) record, a null count on a bare record, batch with its
standard input closed, the δ floor shown differently by --value and the human box, plans of
Gaussians at extreme σ, and basic composition past the double range."""

from __future__ import annotations

import json
import re
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, localcontext

import pytest

from tests.test_cli_robust import dpcalc, one_error_line, shell


def test_a_misspelt_field_of_an_epsilon_delta_record_is_exit_2():
    # "cuont": 3 was dropped: total ε 0.99999 for one point instead of 3 points' 2.99998
    proc = dpcalc("compose", "--from", "-", "--total-delta", "1e-5", "--value",
                  input=b'[{"epsilon": 1, "delta": 1e-6, "cuont": 3}]')
    assert proc.returncode == 2 and proc.stdout == b""
    assert '"cuont"' in one_error_line(proc)
    # (a text field is a note on the record, not a misspelt number)
    ok = dpcalc("compose", "--from", "-", "--total-delta", "1e-5", "--value",
                input=b'[{"epsilon": 1, "delta": 1e-6, "count": 3, "note": "phase 1"}]')
    assert ok.returncode == 0 and float(ok.stdout) > 2.9


def test_a_record_with_its_numbers_in_parameters_is_still_read():
    # (the misspelt-field check read "parameters" itself as an unknown field of the point)
    proc = dpcalc("compose", "--from", "-", "--total-delta", "1e-5", "--value",
                  input=b'[{"parameters": {"epsilon": 1, "delta": 1e-6}}]')
    assert proc.returncode == 0, proc.stderr
    assert 0.99 < float(proc.stdout) <= 1.0


def test_a_misspelt_field_in_a_batch_line_is_that_line_s_error():
    lines = (b'{"command": "compose", "from": [{"epsilon": 1, "delta": 1e-6, "bogus": 2}], '
             b'"total_delta": 1e-5}\n{"command": "gaussian", "sigma": 2, "delta": 1e-5}\n')
    proc = dpcalc("batch", "-", input=lines)
    out = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert proc.returncode == 2 and len(out) == 2
    assert out[0]["exit_status"] == 2 and '"bogus"' in out[0]["error"]
    assert out[1]["command"] == "gaussian"


def test_a_null_count_on_a_bare_record_is_solved_as_in_a_plan():
    proc = dpcalc("compose", "--from", "-", "--total-epsilon", "5", "--total-delta", "1e-4",
                  "--json", input=b'[{"epsilon": 1, "delta": 1e-6, "count": null}]')
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    # 5 points of ε = 1 meet ε 5 by plain addition; 6 cost more than 5 at δ 1e-4 (their
    # optimal composition, Kairouz-Oh-Viswanath, needs ε ≈ 5.5 there)
    assert got["solved_for"] == "records[0].count" and got["value"] == 5
    # a method that composes (ε, δ) points solves nothing: one line naming the plan path
    proc = dpcalc("compose", "--from", "-", "--total-epsilon", "5", "--total-delta", "1e-4",
                  "--method", "optimal", input=b'[{"epsilon": 1, "delta": 1e-6, "count": null}]')
    assert proc.returncode == 2 and "null" in one_error_line(proc)
    assert "None" not in proc.stderr.decode()


@pytest.mark.parametrize("args", [["batch"], ["batch", "-"]])
def test_batch_with_stdin_closed_is_exit_2(args):
    proc = shell(f'"$DPCALC" {" ".join(args)} <&-')
    assert proc.returncode == 2 and proc.stdout == b""
    assert "standard input is closed" in one_error_line(proc)


def test_value_and_human_output_show_the_same_delta_below_the_decimal_floor():
    # δ ≈ 10^(-1.064e9) lies below 1e-999999999: both read the same bound (the human box
    # showed 1e-1000000003, --value 1e-1000000015)
    value = Decimal(dpcalc("gaussian", "--sigma", "1", "--epsilon", "7e4", "--value")
                    .stdout.decode())
    human = dpcalc("gaussian", "--sigma", "1", "--epsilon", "7e4").stdout.decode()
    shown = Decimal(re.search(r"δ ≤ (\S+)", human).group(1))
    with localcontext(Context(prec=30, Emin=MIN_EMIN, Emax=MAX_EMAX)):
        assert Decimal("3e-1064006291") < value <= shown <= value * Decimal("1.0001")


@pytest.mark.parametrize("sigma", ["1e155", "2"])
def test_a_plan_of_one_gaussian_answers_as_the_gaussian_command(sigma):
    plan = dpcalc("compose", "--from", "-", "--total-delta", "1e-5", "--value",
                  input=f'[{{"mechanism": "gaussian", "sigma": {sigma}}}]'.encode())
    alone = dpcalc("gaussian", "--sigma", sigma, "--delta", "1e-5", "--value")
    assert plan.returncode == alone.returncode == 0, plan.stderr
    assert float(plan.stdout) == pytest.approx(float(alone.stdout), rel=1e-12, abs=1e-300)


def test_a_plan_of_gaussians_past_the_double_range_names_it():
    proc = dpcalc("compose", "--from", "-", "--total-delta", "1e-5",
                  input=b'[{"mechanism": "gaussian", "sigma": 1e-155}]')
    assert proc.returncode == 2 and "1e-154" in one_error_line(proc)


@pytest.mark.parametrize("extra", [[], ["--total-delta", "1e-3"]])
def test_basic_composition_past_the_double_range_is_infeasible_and_says_k_epsilon(extra):
    proc = dpcalc("compose", "--epsilon", "1e307", "--delta", "1e-6", "--k", "100", "--method",
                  "basic", *extra)
    assert proc.returncode == 1 and proc.stdout == b""
    err = one_error_line(proc)
    assert "outside the range" not in err and "e^ε" not in err


@pytest.mark.parametrize("args", [["gaussian", "--sigma", "2", "--delta", "1e-5"],
                                  ["dpsgd", "--q", "0.01", "--sigma", "4", "--epochs", "100",
                                   "--delta", "1e-5"]])
def test_an_ascii_stream_gets_a_box_as_wide_as_its_text(args):
    # the box was sized for "ε ≤" and the stream wrote "eps <=": the right edge 3 columns out
    proc = dpcalc(*args, env={"PYTHONIOENCODING": "ascii", "COLUMNS": "80"})
    assert proc.returncode == 0
    lines = proc.stdout.decode("ascii").splitlines()
    end = next(i for i, line in enumerate(lines[1:], 1) if line.startswith("+"))
    box = lines[:end + 1]
    assert "eps <=" in box[1] and len({len(line) for line in box}) == 1, box


@pytest.mark.parametrize("records", [
    '[{"mechanism": "laplace", "scale": 1e-300}]',
    '[{"mechanism": "laplace", "scale": 1e-100}, {"mechanism": "gaussian", "sigma": 1}]',
    '[{"epsilon": 1e120, "delta": 1e-6}, {"mechanism": "gaussian", "sigma": 1}]'])
def test_a_plan_with_a_huge_loss_names_it(records):
    # (exit 2 before as well, but as "the inputs are outside the range dpcalc can evaluate
    # (RuntimeWarning)", naming nothing)
    proc = dpcalc("compose", "--from", "-", "--total-delta", "1e-5", input=records.encode())
    assert proc.returncode == 2
    err = one_error_line(proc)
    assert "privacy loss reaches 1e+" in err and "outside the range" not in err
