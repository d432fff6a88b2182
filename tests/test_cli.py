"""The CLI through its real entry point: exit codes, one-line errors, JSON shape, --value, gates."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from tests.cli_helpers import run

ERROR = re.compile(r"^dpcalc: error: .+\n$")
CONTRACT_KEYS = {"command", "solved_for", "value", "parameters", "method", "comparison", "version"}

SOLVES = [
    (["gaussian", "--sigma", "2", "--delta", "1e-5"], "epsilon"),
    (["gaussian", "--sigma", "2", "--epsilon", "1"], "delta"),
    (["gaussian", "--epsilon", "1", "--delta", "1e-5"], "sigma"),
    (["gaussian", "--epsilon", "1", "--delta", "1e-5", "--method", "zcdp"], "sigma"),
    (["gaussian", "--sigma", "1", "--epsilon", "40"], "delta"),
    (["laplace", "--scale", "2"], "epsilon"),
    (["laplace", "--epsilon", "1"], "scale"),
    (["laplace", "--scale", "1", "--epsilon", "0.5"], "delta"),
    (["laplace", "--epsilon", "1", "--delta", "1e-3"], "scale"),
]


@pytest.mark.parametrize("args,solved", SOLVES)
def test_json_shape(capsys, args, solved):
    r = run(capsys, *args, "--json")
    assert r.code == 0 and r.err == ""
    obj = r.json
    assert CONTRACT_KEYS <= set(obj)
    assert obj["command"] == args[0] and obj["solved_for"] == solved
    assert obj["value"] == obj["parameters"][solved]
    for row in obj["comparison"]:
        assert "method" in row and solved in row


@pytest.mark.parametrize("args,solved", SOLVES)
def test_value_prints_one_number_equal_to_json(capsys, args, solved):
    value = run(capsys, *args, "--value")
    assert value.code == 0
    assert Decimal(value.out.strip()) == run(capsys, *args, "--json").json["value"]
    assert value.out.count("\n") == 1


@pytest.mark.parametrize("args,solved", SOLVES)
def test_human_output_leads_with_solved_value(capsys, args, solved):
    r = run(capsys, *args)
    assert r.code == 0
    first = r.out.splitlines()[1]
    assert {"epsilon": "ε", "delta": "δ", "sigma": "σ", "scale": "b"}[solved] in first


BAD = [
    (["gaussian", "--sigma", "nan", "--delta", "1e-5"], "--sigma"),
    (["gaussian", "--sigma", "inf", "--delta", "1e-5"], "--sigma"),
    (["gaussian", "--sigma", "-1", "--delta", "1e-5"], "--sigma"),
    (["gaussian", "--sigma", "0", "--delta", "1e-5"], "--sigma"),
    (["gaussian", "--sigma", "abc", "--delta", "1e-5"], "--sigma"),
    (["gaussian", "--sigma", "", "--delta", "1e-5"], "--sigma"),
    (["gaussian", "--sigma", "1e400", "--delta", "1e-5"], "--sigma"),
    (["gaussian", "--sigma", "2", "--delta", "1"], "--delta"),
    (["gaussian", "--sigma", "2", "--delta", "-1e-5"], "--delta"),
    (["gaussian", "--sigma", "2", "--epsilon", "-1"], "--epsilon"),
    (["gaussian", "--sigma", "2"], "--epsilon"),
    (["gaussian", "--sigma", "2", "--epsilon", "1", "--delta", "1e-5"], "all were given"),
    (["gaussian", "--sigma", "2", "--delta", "1e-5", "--method", "magic"], "--method"),
    (["gaussian", "--sigma", "2", "--delta", "1e-5", "--sensitivity", "0"], "--sensitivity"),
    (["gaussian", "--bogus", "1"], "--bogus"),
    (["laplace", "--scale", "-2"], "--scale"),
    (["laplace"], "--scale"),
    (["nosuchcommand"], "nosuchcommand"),
    # the test adds --json: with --value that is the conflict (--json twice would be a repeat)
    (["gaussian", "--sigma", "2", "--delta", "1e-5", "--value"], "--value"),
    (["gaussian", "--sigma", "2", "--delta", "1e-5", "--max-epsilon", "x"], "--max-epsilon"),
    (["gaussian", "--epsilon", "1", "--delta", "1e-5", "--max-epsilon", "3"], "--max-epsilon"),
]


@pytest.mark.parametrize("args,names", BAD)
def test_bad_input_exit_2_one_line(capsys, args, names):
    r = run(capsys, *args, "--json")
    assert r.code == 2
    assert r.out == ""
    assert ERROR.match(r.err), r.err
    assert names in r.err


def test_infeasible_exit_1(capsys):
    r = run(capsys, "gaussian", "--epsilon", "1", "--delta", "0", "--json")
    assert r.code == 1 and r.out == "" and ERROR.match(r.err)


def test_gate_passes_and_fails(capsys):
    ok = run(capsys, "gaussian", "--sigma", "2", "--delta", "1e-5", "--max-epsilon", "2",
             "--value")
    assert ok.code == 0
    bad = run(capsys, "gaussian", "--sigma", "2", "--delta", "1e-5", "--max-epsilon", "1.9",
              "--value")
    assert bad.code == 1 and bad.out.strip() != "" and ERROR.match(bad.err)
    assert "--max-epsilon" in bad.err
    delta_gate = run(capsys, "gaussian", "--sigma", "2", "--epsilon", "1", "--max-delta",
                     "1e-3", "--json")
    assert delta_gate.code == 1 and json.loads(delta_gate.out)["solved_for"] == "delta"


def test_solve_for_explicit(capsys):
    r = run(capsys, "gaussian", "--sigma", "2", "--delta", "1e-5", "--solve-for", "epsilon",
            "--json")
    assert r.code == 0 and r.json["solved_for"] == "epsilon"
    r = run(capsys, "gaussian", "--sigma", "2", "--delta", "1e-5", "--solve-for", "sigma")
    assert r.code == 2 and "--solve-for" in r.err


def test_version_and_help(capsys):
    r = run(capsys, "--version")
    assert r.code == 0 and r.out.startswith("dpcalc 0.1.0")
    r = run(capsys, "gaussian", "--help")
    assert r.code == 0 and "--sigma" in r.out


def test_internal_error_is_one_line_exit_3(capsys, monkeypatch):
    import importlib

    api_gaussian = importlib.import_module("dpcalc.api.gaussian")

    def boom(*a, **k):
        raise KeyError("boom")  # a bug; overflow errors are a range problem (exit 2)

    monkeypatch.setattr(api_gaussian, "_solve", boom)
    r = run(capsys, "gaussian", "--sigma", "2", "--delta", "1e-5")
    assert r.code == 3 and ERROR.match(r.err) and "Traceback" not in r.err
    # --debug shows the traceback and keeps the exit status (issue 9, item 11)
    r = run(capsys, "gaussian", "--sigma", "2", "--delta", "1e-5", "--debug")
    assert r.code == 3 and "Traceback" in r.err and "KeyError: 'boom'" in r.err
    assert ERROR.match(r.err.splitlines(keepends=True)[-1])


def test_tiny_delta_json_is_exact_exponent(capsys):
    r = run(capsys, "gaussian", "--sigma", "1", "--epsilon", "40", "--json")
    value = r.json["value"]
    assert Decimal("3.90897082393934e-343") <= value <= Decimal("3.90897473291018e-343")
    r = run(capsys, "gaussian", "--sigma", "1", "--delta", "1e-400", "--json")
    assert r.json["parameters"]["delta"] == Decimal("1e-400")


def _console_script() -> str:
    return str(Path(sys.executable).with_name("dpcalc"))


@pytest.mark.parametrize("launcher", ["module", "script"])
def test_subprocess_entry_points(launcher):
    cmd = [sys.executable, "-m", "dpcalc"] if launcher == "module" else [_console_script()]
    if launcher == "script" and not Path(cmd[0]).exists():
        pytest.skip("console script not installed in this environment")
    ok = subprocess.run(cmd + ["gaussian", "--sigma", "2", "--delta", "1e-5", "--value"],
                        capture_output=True, text=True, check=False)
    assert ok.returncode == 0 and 1.993 < float(ok.stdout) < 1.994
    bad = subprocess.run(cmd + ["gaussian", "--sigma", "nan", "--delta", "1e-5", "--json"],
                         capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and bad.stdout == "" and ERROR.match(bad.stderr)


def test_python_api_exports_functions_even_after_cli_imports():
    import importlib

    import dpcalc

    importlib.import_module("dpcalc.api.gaussian")  # what a CLI run does first
    for name in ("gaussian", "laplace", "compose", "subsample", "rdp", "dpsgd", "check_gates"):
        assert callable(getattr(dpcalc, name)), name
    assert dpcalc.gaussian(sigma=2, delta=1e-5).solved_for == "epsilon"


# Found in review: extreme but valid inputs, odd spellings and comparison rows that cannot
# answer must never end in an internal error, and a probability is never reported above 1.
@pytest.mark.parametrize("args,code", [
    (["gaussian", "--sigma", "1e300", "--delta", "1e-5"], 0),
    (["gaussian", "--epsilon", "1e-300", "--delta", "1e-5"], 0),
    (["rdp", "--sigma", "1e300", "--delta", "1e-5"], 0),
    (["rdp", "--sigma", "1e-200", "--steps", "1e300", "--epsilon", "1"], 0),
    (["dpsgd", "--q", "0.01", "--epochs", "100", "--epsilon", "0", "--delta", "1e-5"], 0),
    (["gaussian", "--sigma", "1e-300", "--delta", "1e-5"], 2),
    (["laplace", "--scale", "1e-300", "--sensitivity", "1e300"], 2),
    (["dpsgd", "--q", "0.01", "--sigma", "1", "--steps", "1e18", "--delta", "1e-5"], 2),
    (["dpsgd", "--q", "1e-300", "--sigma", "1", "--epochs", "1", "--delta", "1e-5"], 2),
    (["gaussian", "--sigma", "2", "--delta", "1e-5", "--solve-for=-epsilon"], 2),
    (["compose", "--epsilon", "1", "--delta", "0.1", "--group", "5"], 1),
    (["compose", "--epsilon", "1", "--delta", "1e-3", "--k", "10", "--group", "3",
      "--total-delta", "0.5"], 0),
    (["dpsgd", "--q", "0.01", "--sigma", "4", "--epochs", "100", "--epsilon", "1",
      "--delta", "1e-5", "--solve-for", "steps"], 2),
])
def test_review_findings_exit_codes(capsys, args, code):
    r = run(capsys, *args, "--json")
    assert r.code == code, r.err
    if code:
        assert r.out == "" and ERROR.match(r.err)
    else:
        assert "NaN" not in r.out and "Infinity" not in r.out


@pytest.mark.parametrize("args", [["gaussian", "--sigma", "0.001", "--epsilon", "0"],
                                  ["laplace", "--scale", "0.001", "--epsilon", "0"],
                                  ["rdp", "--sigma", "0.1", "--epsilon", "0.1"]])
def test_solved_delta_never_above_one(capsys, args):
    r = run(capsys, *args, "--value")
    assert r.code == 0 and 0 < float(r.out) <= 1.0


def test_negative_zero_reads_as_zero(capsys):
    r = run(capsys, "gaussian", "--epsilon", "-0", "--delta", "1e-5", "--json")
    assert '"epsilon": 0.0' in r.out


def test_gaussian_delta_exact_where_second_term_is_subnormal():
    import mpmath

    import dpcalc

    got = dpcalc.gaussian(sigma=0.24, epsilon=149.7).value
    with mpmath.workdps(60):
        mu = 1 / mpmath.mpf(0.24)
        e = mpmath.mpf(149.7)
        truth = mpmath.ncdf(mu / 2 - e / mu) - mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu)
        assert mpmath.mpf(got) >= truth


@pytest.mark.parametrize("args", [
    ["dpsgd", "--help"], ["--debug", "gaussian", "--help"], ["batch", "--help"],
    ["compose", "--epsilon", "1", "--delta", "0", "--k", "3", "--json"],
    ["laplace", "--scale", "1", "--eps", "1"], ["rdp", "--sigma", "1", "--sigma", "2"],
    ["subsample"], ["gaussian", "--sigma", "1", "--delta", "1e-5", "extra"],
])
def test_a_command_parses_the_same_from_the_one_command_app(capsys, monkeypatch, args):
    """main() builds only the named command's options (``_app_for``): same output, same
    status as the full app, for help, answers and usage errors."""
    import dpcalc.cli as cli

    assert cli._app_for(args) is not cli.app
    slim = run(capsys, *args)
    monkeypatch.setattr(cli, "_app_for", lambda a: cli.app)
    full = run(capsys, *args)
    assert (slim.out, slim.err, slim.code) == (full.out, full.err, full.code)
