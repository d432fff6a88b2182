"""``--json`` output against ``schema/dpcalc-output.schema.json`` (JSON Schema, draft 2020-12).

One run per command and per kind of unknown it can solve for, through the real entry point.
The schema cannot say that ``value == parameters[solved_for]`` or that every comparison row
carries the solved key, so those are checked here too.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from tests.cli_helpers import run

jsonschema = pytest.importorskip("jsonschema")

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "dpcalc-output.schema.json"

# (command line, the unknown it solves for)
CASES = [
    ("gaussian --sigma 2 --delta 1e-5", "epsilon"),
    ("gaussian --sigma 2 --epsilon 1", "delta"),
    ("gaussian --epsilon 1 --delta 1e-5", "sigma"),
    ("gaussian --sigma 1 --epsilon 1000", "delta"),  # δ far below the double range
    ("gaussian --sigma 1 --delta 1e-400", "epsilon"),  # an input below the double range
    ("gaussian --sigma 2 --delta 1e-5 --method rdp", "epsilon"),
    ("gaussian --sigma 2 --delta 1e-5 --method classic", "epsilon"),
    ("laplace --scale 2", "epsilon"),
    ("laplace --scale 2 --epsilon 0.4", "delta"),
    ("laplace --epsilon 1 --delta 1e-3", "scale"),
    ("compose --epsilon 0.1 --delta 1e-6 --k 50 --total-delta 1e-4", "total_epsilon"),
    ("compose --epsilon 0.1 --delta 1e-6 --k 50 --total-epsilon 2", "total_delta"),
    ("compose --epsilon 0.1 --delta 0 --total-epsilon 2 --total-delta 1e-5", "k"),
    ("compose --delta 1e-6 --k 50 --total-epsilon 2 --total-delta 1e-4", "epsilon"),
    ("compose --epsilon 0.1 --k 50 --total-epsilon 3 --total-delta 1e-4", "delta"),
    ("compose --epsilon 0.1 --delta 1e-6 --k 50 --method advanced --delta-slack 1e-5",
     "total_epsilon"),
    ("compose --epsilon 0.1 --delta 1e-6 --k 10 --group 2 --total-delta 1e-4 --method basic",
     "total_epsilon"),
    ("subsample --epsilon 1 --delta 1e-5 --q 0.01", "amplified_epsilon"),
    ("subsample --epsilon 1 --delta 1e-5 --q 0.01 --amplified-epsilon 0.05 "
     "--solve-for amplified-delta", "amplified_delta"),
    ("subsample --delta 1e-5 --q 0.01 --amplified-epsilon 0.05 --amplified-delta 1e-6",
     "epsilon"),
    ("subsample --epsilon 1 --q 0.01 --amplified-epsilon 0.05 --amplified-delta 1e-6", "delta"),
    ("subsample --epsilon 1 --delta 1e-5 --amplified-epsilon 0.05 --amplified-delta 1e-6", "q"),
    ("subsample --epsilon 1 --delta 1e-5 --q 0.01 --sampling without-replacement "
     "--relation replace-one", "amplified_epsilon"),
    ("rdp --sigma 1 --q 0.01 --steps 1000 --delta 1e-5", "epsilon"),
    ("rdp --sigma 1 --q 0.01 --steps 1000 --delta 1e-5 --fpr 0.05 --fpr 0.001", "epsilon"),
    ("rdp --q 0.01 --steps 1000 --tpr 0.1 --fpr 0.05", "sigma"),
    ("rdp --sigma 1 --q 0.01 --steps 1000 --epsilon 2 --conversion classic", "delta"),
    ("rdp --q 0.1 --steps 10 --epsilon 2 --delta 1e-5 --alpha 2 --alpha 8 --alpha 32", "sigma"),
    ("rdp --sigma 1 --steps 10 --epsilon 2 --delta 1e-5 --alpha 2 --alpha 8 --alpha 32", "q"),
    ("rdp --sigma 20 --epsilon 2 --delta 1e-5", "steps"),
    ("rdp --sigma 2 --steps 10 --delta 1e-5 --mechanism laplace", "epsilon"),
    ("dpsgd --q 0.1 --sigma 2 --epochs 2 --delta 1e-5 --curve", "epsilon"),
    ("dpsgd --q 0.1 --sigma 2 --epochs 3 --delta 1e-5 --curve-accountants all", "epsilon"),
    ("dpsgd --q 0.1 --sigma 2 --epochs 1 --epsilon 2", "delta"),
    ("dpsgd --q 0.1 --epochs 1 --epsilon 2 --delta 1e-5 --accountant rdp", "sigma"),
    ("dpsgd --sigma 2 --epochs 1 --epsilon 1 --delta 1e-5 --accountant rdp", "q"),
    ("dpsgd --q 0.1 --sigma 2 --epsilon 2 --delta 1e-5", "epochs"),
    ("dpsgd --q 0.1 --sigma 2 --epsilon 2 --delta 1e-5 --solve-for steps", "steps"),
    ("dpsgd --batch-size 6000 --dataset-size 60000 --sigma 2 --epochs 1 --delta 1e-5 "
     "--accountant moments", "epsilon"),
    ("dpsgd --sampling shuffle --batch-size 256 --dataset-size 60000 --sigma 1.1 --epochs 2 "
     "--delta 1e-5", "epsilon"),
    ("dpsgd --sampling fixed-batch --dataset-size 1000 --sigma 2 --epochs 1 --epsilon 2 "
     "--delta 1e-5", "batch_size"),
    ("dpsgd --relation replace-one --examples-per-user 2 --q 0.1 --sigma 2 --epochs 1 "
     "--epsilon 3", "delta"),
]


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA_PATH.read_text())
    cls = jsonschema.Draft202012Validator
    cls.check_schema(schema)
    return cls(schema)


def check(validator, obj: dict, solved_for: str) -> None:
    errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)
    assert obj["solved_for"] == solved_for
    assert obj["value"] == obj["parameters"][solved_for]
    if "bounds" in obj:
        assert obj["bounds"]["lower"] <= obj["bounds"]["upper"] == obj["value"]
    for row in obj["comparison"]:
        assert solved_for in row, row


def test_schema_is_valid_draft_2020_12(validator):
    assert validator.schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("line,solved_for", CASES, ids=[c[0] for c in CASES])
def test_json_output_matches_schema(capsys, validator, line, solved_for):
    r = run(capsys, *line.split(), "--json")
    assert r.code == 0, r.err
    check(validator, r.json, solved_for)


def test_every_command_and_unknown_is_covered():
    from dpcalc.cli import app

    commands = {line.split()[0] for line, _ in CASES}
    # batch has no --json of its own: it writes these objects, one a line (tests/test_batch.py)
    assert commands == {c.name or c.callback.__name__ for c in app.registered_commands} - {
        "batch"}
    schema = json.loads(SCHEMA_PATH.read_text())
    for branch in schema["allOf"]:
        command = branch["if"]["properties"]["command"]["const"]
        kinds = set(branch["then"]["properties"]["solved_for"]["enum"])
        covered = {s for line, s in CASES if line.split()[0] == command}
        assert covered == kinds, command


def test_compose_from_file(capsys, validator, tmp_path):
    first = run(capsys, "gaussian", "--sigma", "2", "--delta", "1e-5", "--json")
    src = tmp_path / "mechanisms.json"
    src.write_text(json.dumps([json.loads(first.out), {"epsilon": 0.5, "delta": 1e-6}]))
    r = run(capsys, "compose", "--from", str(src), "--total-delta", "1e-4", "--json")
    assert r.code == 0, r.err
    check(validator, r.json, "total_epsilon")


def test_numbers_below_the_double_range_stay_exact(capsys):
    r = run(capsys, "gaussian", "--sigma", "1", "--epsilon", "1000", "--json")
    assert Decimal(0) < r.json["value"] < Decimal("1e-308")


def test_schema_rejects_drift(capsys, validator):
    obj = run(capsys, "laplace", "--scale", "2", "--json").json
    assert validator.is_valid(obj)
    for broken in ({k: v for k, v in obj.items() if k != "value"},  # a required key missing
                   {**obj, "surprise": 1},  # an undocumented key
                   {**obj, "solved_for": "sigma"},  # not an unknown of laplace
                   {**obj, "parameters": {**obj["parameters"], "delta": 1}}):  # out of range
        assert not validator.is_valid(broken), broken
