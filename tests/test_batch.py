"""``dpcalc batch``: JSON lines in, JSON lines out (CONTRACT "Many questions at once")."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dpcalc.api import batch as api

DPCALC = shutil.which("dpcalc", path=str(Path(sys.executable).parent)) or "dpcalc"


def run(*args: str, stdin: str | bytes = b"") -> subprocess.CompletedProcess:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run([DPCALC, *args], input=data, capture_output=True, timeout=300)


def lines_of(proc) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.decode().splitlines()]


def structure(text: str):
    """A JSON document with its key order and every number's exact text kept."""
    return json.loads(text, parse_float=lambda s: ("num", s), parse_int=lambda s: ("num", s),
                      object_pairs_hook=list)


def without_id(pairs):
    return [(k, v) for k, v in pairs if k != "id"]


# (batch line, the same question on the command line)
SAMPLE = [
    ({"command": "dpsgd", "q": 0.01, "sigma": 4, "epochs": 100, "delta": 1e-5},
     "dpsgd --q 0.01 --sigma 4 --epochs 100 --delta 1e-5"),
    ({"command": "dpsgd", "batch_size": 256, "dataset_size": 60000, "sigma": 1.1,
      "epochs": 3, "epsilon": 8, "solve_for": "delta", "fpr": [0.01, 0.1]},
     "dpsgd --batch-size 256 --dataset-size 60000 --sigma 1.1 --epochs 3 --epsilon 8 "
     "--solve-for delta --fpr 0.01 --fpr 0.1"),
    ({"command": "dpsgd", "q": 0.02, "sigma": 2, "epochs": 5, "delta": 1e-5, "curve": True,
      "accountant": "rdp", "max_epsilon": 100},
     "dpsgd --q 0.02 --sigma 2 --epochs 5 --delta 1e-5 --curve --accountant rdp "
     "--max-epsilon 100"),
    ('{"command": "gaussian", "sigma": 2, "delta": 1e-400}',  # exact: not 0.0
     "gaussian --sigma 2 --delta 1e-400"),
    ({"command": "laplace", "scale": 2, "delta": 1e-6, "sensitivity": "0.5"},
     "laplace --scale 2 --delta 1e-6 --sensitivity 0.5"),
    ({"command": "compose", "epsilon": 0.1, "delta": 1e-6, "k": 50, "total_delta": 1e-4},
     "compose --epsilon 0.1 --delta 1e-6 --k 50 --total-delta 1e-4"),
    ({"command": "subsample", "epsilon": 1, "delta": 1e-5, "sample_rate": 0.01},
     "subsample --epsilon 1 --delta 1e-5 --sample-rate 0.01"),
    ({"command": "rdp", "noise_multiplier": 1, "q": 0.01, "steps": 1000, "delta": 1e-5,
      "alpha": [2, 4.5], "conversion": "classic"},
     "rdp --noise-multiplier 1 --q 0.01 --steps 1000 --delta 1e-5 --alpha 2 --alpha 4.5 "
     "--conversion classic"),
]


def test_each_line_is_the_single_commands_json_object(tmp_path):
    """Key order and every number's text equal to ``dpcalc <command> … --json``."""
    path = tmp_path / "q.jsonl"
    path.write_text("".join(f'{{"id": {i}, ' + (q if isinstance(q, str) else json.dumps(q))[1:]
                            + "\n" for i, (q, _) in enumerate(SAMPLE)))
    proc = run("batch", str(path))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode().splitlines()
    assert len(out) == len(SAMPLE)
    for i, (line, (_, argv)) in enumerate(zip(out, SAMPLE, strict=True)):
        single = run(*argv.split(), "--json")
        assert single.returncode == 0, single.stderr
        got = structure(line)
        assert got[0] == ("id", ("num", str(i)))
        assert without_id(got) == structure(single.stdout.decode()), argv


def test_compose_from_inline_records_equals_compose_from_a_file(tmp_path):
    records = [{"mechanism": "gaussian", "sigma": 2, "count": 10},
               {"mechanism": "laplace", "scale": 3, "count": 2}]
    (tmp_path / "plan.json").write_text(json.dumps(records))
    single = run("compose", "--from", str(tmp_path / "plan.json"), "--total-delta", "1e-5",
                 "--json")
    proc = run("batch", stdin=json.dumps({"command": "compose", "from": records,
                                          "total_delta": 1e-5}) + "\n")
    assert proc.returncode == 0 == single.returncode, proc.stderr
    assert structure(proc.stdout.decode()) == structure(single.stdout.decode())


def test_a_failed_gate_prints_the_object_with_its_gate_and_exits_1():
    line = {"command": "dpsgd", "q": 0.01, "sigma": 4, "epochs": 100, "delta": 1e-5,
            "max_epsilon": 0.5, "id": "g"}
    proc = run("batch", "-", stdin=json.dumps(line) + "\n")
    single = run("dpsgd", "--q", "0.01", "--sigma", "4", "--epochs", "100", "--delta", "1e-5",
                 "--max-epsilon", "0.5", "--json")
    assert proc.returncode == 1 == single.returncode
    assert without_id(structure(proc.stdout.decode())) == structure(single.stdout.decode())
    assert lines_of(proc)[0]["gates"][0]["passed"] is False
    assert proc.stderr.decode().startswith("dpcalc: error: ")


def test_an_infeasible_target_is_an_error_line_with_exit_status_1():
    lines = [{"command": "compose", "epsilon": 1, "delta": 0, "total_epsilon": 0.5,
              "total_delta": 1e-5, "id": 1},
             {"command": "gaussian", "sigma": 2, "delta": 1e-5, "id": 2}]
    proc = run("batch", stdin="".join(json.dumps(x) + "\n" for x in lines))
    single = run("compose", "--epsilon", "1", "--delta", "0", "--total-epsilon", "0.5",
                 "--total-delta", "1e-5")
    assert proc.returncode == 1 == single.returncode
    first, second = lines_of(proc)
    assert first == {"id": 1, "line": 1, "exit_status": 1,
                     "error": single.stderr.decode().removeprefix("dpcalc: error: ").strip()}
    assert second["id"] == 2 and second["command"] == "gaussian"


BAD = [
    ("{not json", "malformed JSON"),
    ('{"command": "gaussian", "sigma": 2} trailing', "malformed JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"sigma": 2, "delta": 1e-5}', 'missing "command"'),
    ('{"command": "dpsg", "sigma": 2}', "unknown command 'dpsg'"),
    ('{"command": 3}', "unknown command"),
    ('{"command": "gaussian", "sigm": 2, "delta": 1e-5}', "did you mean sigma"),
    ('{"command": "dpsgd", "batch-size": 2}', "did you mean batch_size"),
    ('{"command": "gaussian", "sigma": 2, "json": true}', "does not apply in a batch"),
    ('{"command": "gaussian", "sigma": "abc", "delta": 1e-5}', "--sigma must be"),
    ('{"command": "gaussian", "sigma": -2, "delta": 1e-5}', "--sigma must be"),
    ('{"command": "gaussian", "sigma": true, "delta": 1e-5}', "sigma must be a number"),
    ('{"command": "gaussian", "sigma": 2, "delta": 1e-5, "sigma": 3}', "more than once"),
    ('{"command": "dpsgd", "sigma": 2, "noise_multiplier": 3, "q": 0.1, "epochs": 1, '
     '"delta": 1e-5}', "more than once"),
    ('{"command": "dpsgd", "q": 0.1, "sigma": 2, "epochs": 1, "delta": 1e-5, "curve": 1}',
     "curve must be true or false"),
    ('{"command": "gaussian", "sigma": 2, "delta": 1e-5, "method": 1}', "must be a string"),
    ('{"command": "gaussian", "sigma": 2, "delta": 1e-5, "method": "nope"}', "--method"),
    ('{"command": "gaussian", "sigma": 2, "delta": NaN}', "malformed JSON"),
    ('{"command": "gaussian", "sigma": 2, "delta": 1e-5, "max_epsilon": "x"}',
     "--max-epsilon"),
    ('{"command": "gaussian", "sigma": 2}', "too few parameters"),
]


def test_bad_lines_are_answered_in_place_and_never_stop_the_others():
    good = '{"command": "gaussian", "sigma": 2, "delta": 1e-5, "id": "ok"}'
    text = "\n".join(x for bad, _ in BAD for x in (bad, good)) + "\n"
    proc = run("batch", stdin=text)
    assert proc.returncode == 2
    out = lines_of(proc)
    assert len(out) == 2 * len(BAD)
    for i, (bad, expected) in enumerate(BAD):
        err, ok = out[2 * i], out[2 * i + 1]
        assert set(err) == {"id", "line", "error", "exit_status"}, bad
        assert err["line"] == 2 * i + 1 and err["exit_status"] == 2, bad
        assert expected in err["error"], (bad, err["error"])
        assert ok["id"] == "ok" and ok["command"] == "gaussian"
    assert "Traceback" not in proc.stderr.decode()
    assert proc.stderr.decode().count("\n") == 1


def test_a_bad_line_keeps_its_id_when_it_has_one():
    proc = run("batch", stdin='{"command": "gaussian", "sigma": 0, "delta": 1e-5, '
                              '"id": {"run": [1, 2.50]}}\n')
    assert proc.returncode == 2
    assert proc.stdout.decode().startswith('{"id": {"run": [1, 2.50]}, "line": 1, ')


def test_a_line_that_is_not_utf8_is_a_bad_line():
    proc = run("batch", stdin=b'{"command": "gaussian", "id": "\xff"}\n'
                              b'{"command": "gaussian", "sigma": 2, "delta": 1e-5}\n')
    assert proc.returncode == 2
    first, second = lines_of(proc)
    assert first["exit_status"] == 2 and "UTF-8" in first["error"]
    assert second["command"] == "gaussian"


def test_order_ids_blank_lines_and_comments():
    text = ("# sweep\n"
            '{"command": "gaussian", "sigma": 3, "delta": 1e-5, "id": "c"}\n'
            "\n   \n"
            '  # indented comment\n'
            '{"command": "gaussian", "sigma": 1, "delta": 1e-5, "id": "a"}\r\n'
            '{"command": "laplace", "scale": 2}\n'
            '{"command": "gaussian", "sigma": 2, "delta": 1e-5, "id": null}\n'
            '{"command": "nope", "id": 7}')      # no final newline
    proc = run("batch", stdin=text)
    out = lines_of(proc)
    assert [o.get("id", "-") for o in out] == ["c", "a", "-", None, 7]
    assert [o["parameters"]["sigma"] for o in out[:2]] == [3.0, 1.0]
    assert "id" not in out[2] and out[2]["command"] == "laplace"
    assert out[4]["line"] == 9 and proc.returncode == 2


@pytest.mark.parametrize("args", [("batch",), ("batch", "-")])
def test_stdin_and_empty_input(args):
    for text in ("", "\n", "# nothing to ask\n\n"):
        proc = run(*args, stdin=text)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    proc = run(*args, stdin='{"command": "laplace", "scale": 2}\n')
    assert proc.returncode == 0 and lines_of(proc)[0]["value"] == 0.5


def test_a_missing_file_is_exit_2():
    proc = run("batch", "/nonexistent/q.jsonl")
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith("dpcalc: error: cannot read /nonexistent/q.jsonl")
    assert proc.stdout == b""


def test_compare_false_skips_the_comparison_rows_only():
    line = {"command": "dpsgd", "q": 0.01, "sigma": 4, "epochs": 100, "delta": 1e-5}
    full, fast = api.batch([json.dumps(line), json.dumps({**line, "compare": False})])
    assert fast.result.comparison == () and full.result.comparison
    assert fast.result.value == full.result.value
    assert fast.result.bounds == full.result.bounds


def test_identical_accountings_are_shared_and_answer_the_same(monkeypatch):
    """Two lines asking about the same mechanism compose it once; the answer is unchanged."""
    from dpcalc.relations import pld

    calls = []
    real = pld.epsilon_bounds

    def counting(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(pld, "epsilon_bounds", counting)
    line = {"command": "dpsgd", "q": 0.02, "sigma": 3, "epochs": 7, "delta": 1e-5}
    (alone,) = api.batch([json.dumps(line)])
    n_alone = len(calls)
    assert n_alone >= 1
    calls.clear()
    answers = api.batch([json.dumps({**line, "id": i}) for i in range(3)]
                        + [json.dumps({**line, "max_epsilon": 10})])
    assert len(calls) == n_alone
    for got in answers:
        assert got.result.value == alone.result.value
        assert got.result.comparison == alone.result.comparison
    assert answers[-1].result.gates[0].passed


def test_the_line_options_follow_the_cli():
    """Every CLI option of each command (but the output ones) is a key of a batch line."""
    import typer

    from dpcalc.cli import app

    commands = typer.main.get_command(app).commands
    for name, spec in api.COMMANDS.items():
        cli = {p.name for p in commands[name].params} - {"json", "value", "debug", "fmt"}
        cli = {"from" if n == "source" else n for n in cli}
        batch_only = {"compare"} if name == "dpsgd" else set()
        assert set(spec["options"]) - batch_only == cli, name


def test_exit_status_priority():
    assert api.exit_status([]) == 0
    assert api.exit_status([0, 0]) == 0
    assert api.exit_status([0, 1]) == 1
    assert api.exit_status([1, 3]) == 3
    assert api.exit_status([1, 3, 2, 0]) == 2


def test_batch_lines_match_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parent.parent / "schema"
                         / "dpcalc-output.schema.json").read_text())
    answer = jsonschema.Draft202012Validator(schema)
    error = jsonschema.Draft202012Validator({"$defs": schema["$defs"],
                                             "$ref": "#/$defs/batch_error"})
    text = ('{"command": "gaussian", "sigma": 2, "delta": 1e-5, "id": [1, "x"]}\n'
            '{"command": "laplace", "scale": 2}\n'
            '{"command": "gaussian", "sigma": -1, "delta": 1e-5, "id": 3}\n'
            "{oops\n")
    out = lines_of(run("batch", stdin=text))
    for obj in out[:2]:
        assert not list(answer.iter_errors(obj)), obj
    for obj in out[2:]:
        assert not list(error.iter_errors(obj)), obj
        assert list(answer.iter_errors(obj))


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_progress_bar_on_a_terminal_leaves_stdout_intact():
    """stderr a terminal: a progress bar there, and the answers still on stdout, one a line
    (rich's Progress would otherwise capture stdout and re-wrap it onto the terminal)."""
    import os
    import pty

    master, slave = pty.openpty()
    text = ('{"command": "laplace", "scale": 2, "id": 1}\n'
            '{"command": "gaussian", "sigma": 2, "delta": 1e-5, "id": 2}\n')
    try:
        proc = subprocess.run([DPCALC, "batch"], input=text.encode(), stdout=subprocess.PIPE,
                              stderr=slave, timeout=120, env={**os.environ, "COLUMNS": "60"})
        os.close(slave)
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(master)
    assert proc.returncode == 0
    assert [o["id"] for o in lines_of(proc)] == [1, 2]
    assert b"answering" in shown and b'"command"' not in shown
