"""Issue 9, items 6, 15, 18 and 19, through the installed entry point (subprocess).

6: a result is never NaN or inf: a vacuous δ is stated as δ = 1 ("no guarantee"), an
   impossible target is exit 1 with one line, and --json never crashes, even for 10,000-record
   and 10 MB ``--from`` inputs.
15: a probability that is exactly 1 (the truth) validates against the schema.
18: human output at 80 columns and in pipes: no mid-token wrap, no float noise, derived
    values shown as outputs; absurd COLUMNS still print the answer.
19: gates are recorded (--json "gates", a "passed" line) and validated before computing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from tests.cli_helpers import run

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "dpcalc-output.schema.json"
DPCALC = str(Path(sys.executable).with_name("dpcalc"))
ERROR_LINE = re.compile(r"dpcalc: error: [^\n]+\n")


def dpcalc(*args: str, stdin: str | None = None, columns: str | None = "80",
           ) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update({"NO_COLOR": "1", "TERM": "dumb"})
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run([DPCALC, *args], input=stdin, capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.fixture(scope="module")
def validator():
    jsonschema = pytest.importorskip("jsonschema")
    return jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))


def valid_json(validator, text: str) -> dict:
    obj = json.loads(text, parse_float=Decimal)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(obj)]
    assert not errors, errors
    assert "NaN" not in text and "Infinity" not in text
    return obj


def refused(r: subprocess.CompletedProcess, status: int) -> None:
    assert r.returncode == status, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == ""
    assert ERROR_LINE.fullmatch(r.stderr), r.stderr


# -- item 6: no NaN, no inf, no crash ------------------------------------------------------

def test_vacuous_total_delta_is_one_with_no_guarantee(validator):
    # was: total δ ≤ NaN (human), exit 3 (--json)
    args = ("compose", "--epsilon", "1e11", "--delta", "1e-6", "--k", "50",
            "--total-epsilon", "3")
    obj = valid_json(validator, dpcalc(*args, "--json").stdout)
    assert obj["value"] == obj["parameters"]["total_delta"] == 1
    assert any("no guarantee" in n for n in obj["notes"])
    human = dpcalc(*args)
    assert human.returncode == 0, human.stderr
    assert "total δ ≤ 1" in human.stdout and "no guarantee" in human.stdout
    assert "nan" not in human.stdout.lower()
    assert dpcalc(*args, "--value").stdout == "1.0\n"


def test_infinite_epsilon_is_an_impossible_target_exit_1():
    # was: total ε ≤ Infinity (human, exit 0), exit 3 (--json)
    args = ("compose", "--method", "advanced", "--epsilon", "1e10", "--delta", "1e-6",
            "--k", "50", "--delta-slack", "1e-5")
    for mode in ((), ("--json",), ("--value",)):
        r = dpcalc(*args, *mode)
        refused(r, 1)
        assert "no finite total ε" in r.stderr


@pytest.mark.parametrize("mode", [(), ("--json",), ("--value",)])
def test_from_with_total_delta_zero_is_exit_1(mode):
    r = dpcalc("compose", "--from", "-", "--total-delta", "0", *mode,
               stdin=json.dumps([{"epsilon": 1, "delta": 1e-6}]))
    refused(r, 1)


@pytest.fixture(scope="module")
def big_inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("from")
    many = root / "many.json"  # 10,000 records
    many.write_text(json.dumps([{"epsilon": 5, "delta": 1e-9}] * 10_000))
    large = root / "large.json"  # 10 MB
    large.write_text(json.dumps([{"epsilon": 0.001, "delta": 1e-12, "comment": "x" * 1000}]
                                * 10_000))
    assert large.stat().st_size > 10_000_000
    return many, large


def test_10000_records_vacuous_delta_as_json(validator, big_inputs):
    many, _ = big_inputs
    obj = valid_json(validator, dpcalc("compose", "--from", str(many), "--total-epsilon",
                                       "0.5", "--json").stdout)
    assert obj["value"] == 1 and obj["parameters"]["k"] == 10_000


def test_10000_records_impossible_target_as_json(big_inputs):
    many, _ = big_inputs
    refused(dpcalc("compose", "--from", str(many), "--total-delta", "1e-6", "--json"), 1)


def test_10_megabyte_from_as_json(validator, big_inputs):
    _, large = big_inputs
    r = dpcalc("compose", "--from", str(large), "--total-delta", "1e-4", "--json")
    assert r.returncode == 0, r.stderr
    assert valid_json(validator, r.stdout)["solved_for"] == "total_epsilon"
    refused(dpcalc("compose", "--from", str(large), "--total-delta", "0", "--json"), 1)


def test_result_refuses_nan_and_states_vacuous_delta():
    from dpcalc.errors import InfeasibleError, NumericalError
    from dpcalc.result import Comparison, Result

    def make(value, solved="delta", **kw):
        return Result(command="gaussian", solved_for=solved, value=value,
                      parameters={"epsilon": 1.0, "delta": value} if solved == "delta" else
                      {"epsilon": value, "delta": 1e-5}, method="analytic",
                      direction="upper", **kw)

    for bad in (float("nan"), float("inf"), 1.5, 1.0):
        r = make(bad)
        assert r.value == r.parameters["delta"] == 1.0
        assert any("no guarantee" in n for n in r.notes)
    with pytest.raises(InfeasibleError):
        make(float("inf"), solved="epsilon")
    with pytest.raises(NumericalError):
        make(float("nan"), solved="epsilon")
    r = make(2.0, solved="epsilon", comparison=(Comparison("rdp", float("inf")),
                                                Comparison("zcdp", float("nan"))))
    assert [c.value for c in r.comparison] == [None, None]
    assert all(c.note for c in r.comparison)


def test_json_writer_never_writes_nan_or_inf():
    from dpcalc.render.jsonout import dumps

    text = dumps({"a": float("inf"), "b": [float("nan"), Decimal("NaN")], "c": 1.5})
    assert json.loads(text) == {"a": None, "b": [None, None], "c": 1.5}


# -- item 15: a probability of exactly 1 is schema-valid -------------------------------------

def test_probability_exactly_one_validates(validator):
    r = dpcalc("laplace", "--epsilon", "1", "--scale", "1e-16", "--json")
    assert r.returncode == 0, r.stderr
    obj = valid_json(validator, r.stdout)
    assert obj["value"] == obj["parameters"]["delta"] == 1
    assert any("no guarantee" in n for n in obj["notes"])


def test_schema_still_rejects_an_input_delta_of_one(validator, capsys):
    obj = run(capsys, "gaussian", "--sigma", "2", "--epsilon", "1", "--json").json
    assert validator.is_valid(obj)
    assert validator.is_valid({**obj, "parameters": {**obj["parameters"], "delta": 1}})
    solved_eps = run(capsys, "gaussian", "--sigma", "2", "--delta", "1e-5", "--json").json
    assert not validator.is_valid({**solved_eps,
                                   "parameters": {**solved_eps["parameters"], "delta": 1}})


# -- item 18: human output in narrow terminals, pipes and CI logs ----------------------------

WIDE_CASES = [
    ("dpsgd", "--batch-size", "256", "--dataset-size", "60000", "--sigma", "1.1",
     "--epochs", "1", "--delta", "1e-5"),
    ("compose", "--epsilon", "0.1", "--delta", "1e-8", "--k", "10", "--method", "advanced",
     "--delta-slack", "1e-7"),
    ("gaussian", "--sigma", "2", "--delta", "1e-5"),
    ("compose", "--epsilon", "0.1", "--delta", "1e-6", "--k", "50", "--total-delta", "1e-4"),
]


@pytest.mark.parametrize("columns", ["80", "40", "0", "1", None])
@pytest.mark.parametrize("args", WIDE_CASES, ids=[" ".join(a[:3]) for a in WIDE_CASES])
def test_human_output_never_breaks_a_unit(args, columns):
    r = dpcalc(*args, columns=columns)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert re.search(r"[εδσ] [≤≥] \S", r.stdout), r.stdout  # the answer is printed
    limit = 80 if columns in ("80", None) else 40
    for line in lines:
        assert len(line.rstrip()) <= limit, line
        assert not re.search(r"[=≤≥≈]$", line.rstrip()), f"broken after a relation: {line!r}"
        assert not re.match(r"\s*[=≤≥≈] ", line), f"broken before a relation: {line!r}"
        assert not re.fullmatch(r"\s*[-+]?\d[\d.e+-]*\)?\s*", line), f"a lone number: {line!r}"
    # every comparison row on one line (no reference spilling over lines)
    if limit == 80 and "\n\n" in r.stdout:
        rows = len(json.loads(dpcalc(*args, "--json").stdout)["comparison"])
        table = r.stdout.split("\n\n", 1)[1].splitlines()
        table = [t for t in table if not t.startswith(("[", "note:", "    "))]
        assert len(table) == rows + 2, r.stdout


def test_q_from_sizes_is_shown_as_given():
    r = dpcalc(*WIDE_CASES[0])
    assert "q = 256/60000 ≈ 0.0042667" in r.stdout
    assert "0.004266666666666667" not in r.stdout


def test_derived_values_are_outputs_not_inputs():
    r = dpcalc(*WIDE_CASES[1])
    inputs = next(line for line in r.stdout.splitlines() if line.startswith("inputs"))
    assert "total δ" not in inputs
    derived = next(line for line in r.stdout.splitlines() if line.startswith("derived"))
    assert re.search(r"total δ ≤ 2e-7 \(\+\d\.\de-21\)", derived), derived
    assert "2.0000000000000" not in r.stdout
    obj = json.loads(dpcalc(*WIDE_CASES[1], "--json").stdout)
    assert obj["parameters"]["total_delta"] > 2e-7  # the exact double stays in --json


def test_float_noise_is_shown_as_such_never_rounded_away():
    r = dpcalc("compose", "--epsilon", "0.1", "--delta", "0", "--k", "10", "--method", "basic")
    value = Decimal(json.loads(dpcalc("compose", "--epsilon", "0.1", "--delta", "0", "--k",
                                      "10", "--method", "basic", "--json").stdout)["value"])
    m = re.search(r"total ε ≤ (\S+)(?: \(\+(\S+)\))?", r.stdout)
    assert m, r.stdout
    assert m.group(1) != "1.0001"
    shown = Decimal(m.group(1)) + Decimal(m.group(2) or 0)
    assert shown >= value  # outward: never below the double computed


def test_display_outward():
    from dpcalc.numeric.display import outward

    assert outward(1.0000000000000002, 5, "upper") == "1 (+2.3e-16)"
    assert outward(0.009999999999999998, 5, "lower") == "0.01 (-1.6e-18)"
    assert Decimal("0.01") - Decimal("1.6e-18") <= Decimal(0.009999999999999998)
    assert outward(0.1, 5, "upper") == "0.1"
    assert outward(0.946121, 5, "upper") == "0.94613"
    assert outward(0.0123456, 5, "lower") == "0.012345"
    assert outward(28, 5, "lower") == "28"
    for x in (1.0000000000000002, 2.0000000000000457e-07, 0.30000000000000004, 0.946121):
        text = outward(x, 5, "upper")
        parts = re.fullmatch(r"(\S+)(?: \(\+(\S+)\))?", text)
        assert Decimal(parts.group(1)) + Decimal(parts.group(2) or 0) >= Decimal(x)


# -- item 19: gates recorded, validated first ------------------------------------------------

def test_gates_are_recorded_in_json(validator):
    r = dpcalc("gaussian", "--sigma", "2", "--delta", "1e-5", "--max-epsilon", "3",
               "--max-delta", "1e-4", "--json")
    assert r.returncode == 0, r.stderr
    obj = valid_json(validator, r.stdout)
    assert obj["gates"] == [
        {"name": "max_epsilon", "limit": 3, "value": obj["value"], "passed": True},
        {"name": "max_delta", "limit": Decimal("0.0001"), "value": Decimal("0.00001"),
         "passed": True}]
    failed = dpcalc("gaussian", "--sigma", "2", "--delta", "1e-5", "--max-epsilon", "1",
                    "--json")
    assert failed.returncode == 1
    assert ERROR_LINE.fullmatch(failed.stderr)
    assert valid_json(validator, failed.stdout)["gates"][0]["passed"] is False
    assert "gates" not in json.loads(dpcalc("gaussian", "--sigma", "2", "--delta", "1e-5",
                                            "--json").stdout)


def test_human_output_says_a_gate_passed():
    r = dpcalc("gaussian", "--sigma", "2", "--delta", "1e-5", "--max-epsilon", "3")
    assert r.returncode == 0
    assert "gate --max-epsilon 3: passed (ε ≤ 1.9931 ≤ 3)" in r.stdout
    r = dpcalc("gaussian", "--sigma", "2", "--delta", "1e-5", "--max-epsilon", "1")
    assert r.returncode == 1
    assert "gate --max-epsilon 1: FAILED" in r.stdout
    assert ERROR_LINE.fullmatch(r.stderr)


@pytest.mark.parametrize("gate", [("--max-epsilon", "abc"), ("--max-epsilon", "-1"),
                                  ("--max-delta", "nan"), ("--max-delta", "2")])
def test_bad_gate_is_exit_2(gate):
    r = dpcalc("dpsgd", "--q", "0.01", "--sigma", "1", "--epochs", "10", "--delta", "1e-5",
               *gate)
    refused(r, 2)
    assert gate[0] in r.stderr


def test_bad_gate_is_refused_before_any_computation(capsys, monkeypatch):
    import dpcalc.api.dpsgd

    def never(**_):
        raise AssertionError("the accounting ran before the gate was checked")

    monkeypatch.setattr(dpcalc.api.dpsgd, "dpsgd", never)
    r = run(capsys, "dpsgd", "--q", "0.01", "--sigma", "1", "--epochs", "10", "--delta",
            "1e-5", "--max-epsilon", "abc")
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("dpcalc: error: --max-epsilon must be"), r.err
