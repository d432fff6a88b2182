"""``--format human|json|value|csv``: one renderer registry, the same solved value in every
format, ``--json``/``--value`` as aliases, and conflicting choices refused (exit 2)."""

from __future__ import annotations

import csv
import io
import re
import subprocess
import sys
from decimal import Decimal

import pytest

from dpcalc.render import FORMATS
from tests.cli_helpers import run

CASES = [
    ("gaussian", "--sigma", "2", "--delta", "1e-5"),
    ("gaussian", "--epsilon", "1", "--delta", "1e-400"),
    ("laplace", "--scale", "2"),
    ("compose", "--epsilon", "0.1", "--delta", "1e-6", "--k", "10", "--total-delta", "1e-5"),
    ("subsample", "--epsilon", "1", "--delta", "1e-6", "--q", "0.01"),
    ("rdp", "--sigma", "1", "--q", "0.01", "--steps", "1000", "--delta", "1e-5"),
    ("dpsgd", "--q", "0.01", "--sigma", "4", "--epochs", "10", "--delta", "1e-5",
     "--accountant", "rdp"),
    ("dpsgd", "--q", "0.01", "--sigma", "4", "--epochs", "10", "--delta", "1e-5"),
]


def table(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a))
def test_every_format_gives_the_same_solved_value(capsys, args):
    as_json = run(capsys, *args, "--json")
    assert as_json.code == 0, as_json.err
    obj = as_json.json
    assert run(capsys, *args, "--format", "json").out == as_json.out
    value = run(capsys, *args, "--format", "value")
    assert value.out == run(capsys, *args, "--value").out
    assert Decimal(value.out.strip()) == obj["value"]
    rendered = run(capsys, *args, "--format", "csv")
    assert rendered.code == 0 and rendered.err == ""
    rows = table(rendered.out)
    header = rendered.out.splitlines()[0].split(",")
    assert header[:7] == ["row", "command", "solved_for", "method", "value", "lower", "upper"]
    assert header[7:-2] == list(obj["parameters"]) and header[-2:] == ["reference", "note"]
    answer = rows[0]
    assert answer["row"] == "answer" and answer["command"] == obj["command"]
    assert answer["solved_for"] == obj["solved_for"] and answer["method"] == obj["method"]
    assert Decimal(answer["value"]) == obj["value"] == Decimal(answer[obj["solved_for"]])
    for key, x in obj["parameters"].items():
        if isinstance(x, str):  # dpsgd's sampling and relation
            assert answer[key] == x
            continue
        assert Decimal(answer[key]) == Decimal(str(x))
    if "bounds" in obj:
        assert Decimal(answer["lower"]) == obj["bounds"]["lower"]
        assert Decimal(answer["upper"]) == obj["bounds"]["upper"]
    else:
        assert answer["lower"] == answer["upper"] == ""
    compared = [r for r in rows[1:]]
    assert [r["row"] for r in compared] == ["comparison"] * len(obj["comparison"])
    for r, c in zip(compared, obj["comparison"], strict=True):
        assert r["method"] == c["method"]
        shown = c[obj["solved_for"]]
        assert (r["value"] == "") if shown is None else Decimal(r["value"]) == shown
    human = run(capsys, *args, "--format", "human")
    assert human.out == run(capsys, *args).out


def test_csv_keeps_a_value_below_the_double_range(capsys):
    rows = table(run(capsys, "gaussian", "--sigma", "60", "--epsilon", "1", "--format",
                     "csv").out)
    assert rows[0]["solved_for"] == "delta"
    assert re.fullmatch(r"\d(\.\d+)?e-\d{3,}", rows[0]["value"])
    assert Decimal(rows[0]["value"]) < Decimal("1e-308")


@pytest.mark.parametrize("flags", [("--json", "--value"), ("--json", "--format", "csv"),
                                   ("--value", "--format", "human"),
                                   ("--format", "value", "--json")])
def test_conflicting_formats_are_exit_2(capsys, flags):
    r = run(capsys, "gaussian", "--sigma", "2", "--delta", "1e-5", *flags)
    assert r.code == 2 and r.out == ""
    assert re.fullmatch(r"dpcalc: error: .*conflict.*\n", r.err)


def test_an_alias_agreeing_with_format_is_accepted(capsys):
    r = run(capsys, "gaussian", "--sigma", "2", "--delta", "1e-5", "--json", "--format", "json")
    assert r.code == 0 and r.json["solved_for"] == "epsilon"


def test_unknown_format_is_exit_2_naming_the_choices(capsys):
    r = run(capsys, "laplace", "--scale", "2", "--format", "xml")
    assert r.code == 2 and r.out == ""
    assert r.err == ("dpcalc: error: --format must be one of human, json, value, csv, "
                     "got 'xml'\n")


@pytest.mark.parametrize("command", ["gaussian", "laplace", "compose", "subsample", "rdp",
                                     "dpsgd"])
def test_every_command_offers_every_format(capsys, command):
    from dpcalc.cli._completion import choices

    assert choices(command, "--format") == tuple(FORMATS)
    r = run(capsys, command, "--help")
    assert "--format" in r.out and "csv" in r.out


def test_csv_through_the_entry_point_is_a_gate_too():
    """Through the installed entry point: the CSV is written, then a failed gate exits 1."""
    r = subprocess.run([sys.executable, "-m", "dpcalc", "gaussian", "--sigma", "2", "--delta",
                        "1e-5", "--format", "csv", "--max-epsilon", "1"],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 1
    assert table(r.stdout)[0]["row"] == "answer"
    assert r.stderr.startswith("dpcalc: error: ") and r.stderr.count("\n") == 1


def test_readme_csv_example_is_the_real_output(capsys):
    """README.md's ```csv block is the first lines of the command in the ```sh block above it."""
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    m = re.search(r"```sh\n(dpcalc [^\n]*--format csv)\n```\n```csv\n(.*?)```", text, re.S)
    assert m, "README.md shows no --format csv example"
    real = run(capsys, *m.group(1).split()[1:]).out.splitlines()
    shown = m.group(2).splitlines()
    assert real[:len(shown)] == shown


def test_conflicting_formats_are_refused_before_any_computation(capsys, monkeypatch):
    import importlib

    api = importlib.import_module("dpcalc.api.dpsgd")

    def never(**_):
        raise AssertionError("computed before the format conflict was reported")

    monkeypatch.setattr(api, "dpsgd", never)
    r = run(capsys, "dpsgd", "--q", "0.01", "--sigma", "4", "--epochs", "100", "--delta",
            "1e-5", "--value", "--format", "csv")
    assert r.code == 2 and r.out == ""
    assert r.err == ("dpcalc: error: --value and --format csv conflict; give one output format "
                     "(--format human|json|value|csv)\n")
