"""Issue 9 through the real entry points (the ``dpcalc`` script and ``python -m dpcalc``):
repeated options, streams (closed, full, broken), encodings, Ctrl-C, --debug, float warnings,
bare ``dpcalc``, option names, installed data files, no wall-clock asserts in tests."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).with_name("dpcalc")
ERROR = re.compile(r"^dpcalc: error: .+\n$")
GAUSS = ["gaussian", "--sigma", "2", "--delta", "1e-5"]


def dpcalc(*args: str, env: dict | None = None, module: bool = False, **kw):
    """Run the installed executable (or ``python -m dpcalc``); text mode, both streams kept."""
    if not module and not SCRIPT.exists():
        pytest.skip("the dpcalc script is not installed next to this interpreter")
    cmd = [sys.executable, "-m", "dpcalc"] if module else [str(SCRIPT)]
    full_env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", **(env or {})}
    return subprocess.run(cmd + list(args), capture_output=True, env=full_env, timeout=120,
                          **kw)


def shell(line: str, env: dict | None = None):
    """Run ``line`` in sh with $DPCALC the installed executable (for <&-, >&-, 2>&-)."""
    if not SCRIPT.exists():
        pytest.skip("the dpcalc script is not installed next to this interpreter")
    full_env = {**os.environ, "DPCALC": str(SCRIPT), "NO_COLOR": "1", **(env or {})}
    return subprocess.run(["sh", "-c", line], capture_output=True, env=full_env, timeout=120)


def one_error_line(proc) -> str:
    err = proc.stderr.decode()
    assert ERROR.match(err), err
    return err


# --------------------------------------------------------------------------- 1: repeats

@pytest.mark.parametrize("args,name", [
    (["gaussian", "--sigma", "4", "--sigma", "0.5", "--delta", "1e-5"], "--sigma"),
    ([*GAUSS, "--max-epsilon", "0.5", "--max-epsilon", "100"], "--max-epsilon"),
    ([*GAUSS, "--method", "classic", "--method", "analytic"], "--method"),
    ([*GAUSS, "--json", "--json"], "--json"),
    (["dpsgd", "--q", "0.01", "--noise-multiplier", "4", "--sigma", "0.5", "--epochs", "1",
      "--delta", "1e-5"], "--sigma"),
    ([*GAUSS, "--delta", "1e-5"], "--delta"),  # even the same value twice
])
def test_an_option_given_twice_is_exit_2_naming_it(args, name):
    proc = dpcalc(*args, "--value")
    assert proc.returncode == 2 and proc.stdout == b""
    err = one_error_line(proc)
    assert name in err and "more than once" in err


def test_every_single_value_option_of_every_command_refuses_a_repeat():
    import typer

    from dpcalc.cli import app, main

    group = typer.main.get_command(app)
    for name, command in group.commands.items():
        for param in command.params:
            if param.multiple or param.name == "help":
                continue
            opt = param.opts[0]
            flag = getattr(param, "is_flag", False)  # batch has an argument too
            args = [name, opt, opt] if flag else [name, opt, "1", opt, "1"]
            code = main(args)
            assert code == 2, (name, opt)


def test_repeatable_alpha_still_repeats():
    proc = dpcalc("rdp", "--sigma", "4", "--delta", "1e-5", "--alpha", "2", "--alpha", "8",
                  "--value")
    assert proc.returncode == 0 and proc.stderr == b""
    assert float(proc.stdout) > 0


# --------------------------------------------------------------------------- 8: streams

@pytest.mark.parametrize("command", [[], {}, 3, True])
def test_from_record_with_a_non_string_command_is_exit_2(command):
    record = json.dumps([{"command": command, "epsilon": 1, "delta": 0}])
    proc = dpcalc("compose", "--from", "-", "--total-delta", "1e-5", input=record.encode())
    assert proc.returncode == 2 and proc.stdout == b""
    assert "record 1" in one_error_line(proc)


def test_from_stdin_closed_is_exit_2():
    proc = shell('"$DPCALC" compose --from - --total-delta 1e-5 <&-')
    assert proc.returncode == 2 and proc.stdout == b""
    assert "--from" in one_error_line(proc)


def test_from_stdin_is_read_as_utf8_whatever_the_locale():
    records = '[{"epsilon": 1, "delta": 0, "note": "ε δ"}, {"epsilon": 1, "delta": 0}]'
    proc = dpcalc("compose", "--from", "-", "--total-delta", "1e-5", "--value",
                  input=records.encode(), env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0 and proc.stderr == b""
    assert 0 < float(proc.stdout) <= 2


@pytest.mark.parametrize("redirect", [">&-", ">/dev/full"])
@pytest.mark.parametrize("mode", ["", "--json", "--value"])
def test_stdout_closed_or_full_is_one_line_and_exit_74(redirect, mode):
    if redirect == ">/dev/full" and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    proc = shell(f'"$DPCALC" gaussian --sigma 2 --delta 1e-5 {mode} {redirect}')
    assert proc.returncode == 74
    err = one_error_line(proc)
    assert "standard output" in err and "Exception ignored" not in err


def _closed_pipe_run(args: list[str]):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before dpcalc writes a byte
    try:
        return subprocess.run([str(SCRIPT), *args], stdout=write_end, stderr=subprocess.PIPE,
                              timeout=120, env={**os.environ, "NO_COLOR": "1"})
    finally:
        os.close(write_end)


@pytest.mark.parametrize("extra", [[], ["--json"], ["--value"], ["--max-epsilon", "0.1"]])
def test_broken_pipe_is_quiet_and_141_never_the_gate_status(extra):
    if not SCRIPT.exists():
        pytest.skip("the dpcalc script is not installed next to this interpreter")
    proc = _closed_pipe_run([*GAUSS, *extra])
    assert proc.returncode == 141
    assert proc.stderr == b""


def test_bad_input_with_stderr_closed_is_still_exit_2():
    proc = shell('"$DPCALC" gaussian --sigma -2 --delta 1e-5 2>&-')
    assert proc.returncode == 2 and proc.stdout == b""


# --------------------------------------------------------------------------- 9: encodings

ASCII_CASES = [
    GAUSS,
    ["gaussian", "--epsilon", "1", "--delta", "1e-5"],
    ["laplace", "--scale", "2"],
    ["compose", "--epsilon", "0.1", "--delta", "1e-6", "--k", "10", "--total-delta", "1e-4"],
    ["subsample", "--epsilon", "1", "--delta", "1e-5", "--q", "0.01"],
    ["rdp", "--sigma", "1", "--q", "0.01", "--steps", "100", "--delta", "1e-5"],
    ["dpsgd", "--q", "0.01", "--sigma", "1", "--epochs", "2", "--delta", "1e-5", "--curve"],
    ["gaussian", "--help"],
    ["--help"],
    [*GAUSS, "--json"],
]


@pytest.mark.parametrize("encoding,args",
                         [("ascii", a) for a in ASCII_CASES]
                         + [("latin-1", a) for a in (GAUSS, ["gaussian", "--help"])],
                         ids=lambda v: v if isinstance(v, str) else " ".join(v[:2]))
def test_a_stream_that_cannot_encode_greek_gets_ascii_symbols(encoding, args):
    proc = dpcalc(*args, env={"PYTHONIOENCODING": encoding})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    text = proc.stdout.decode(encoding)
    if "--json" in args:
        assert json.loads(text)["solved_for"] == "epsilon"
    elif "--help" not in args:
        assert re.search(r"\b(eps|delta|sigma|scale|b|k|q|steps|epochs)'? (<=|>=) ", text), text


def test_ascii_error_line_spells_the_symbols():
    proc = dpcalc("dpsgd", "--q", "0.01", "--sigma", "1", "--epochs", "1", "--steps", "3",
                  "--delta", "1e-5", env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 2
    err = proc.stderr.decode("ascii")
    assert ERROR.match(err) and "ceil(" in err


def test_ascii_fallback_names():
    from dpcalc.cli._streams import ascii_for

    assert [ascii_for(c) for c in "εδσ≤≥α"] == ["eps", "delta", "sigma", "<=", ">=", "alpha"]


# --------------------------------------------------------------------------- 10: Ctrl-C

# a sitecustomize (imported by Python before any dpcalc code) that makes importing typer or rich
# raise KeyboardInterrupt: exactly what a Ctrl-C during dpcalc's imports does, but on cue
INTERRUPT_AT_IMPORT = """
import builtins
real_import = builtins.__import__
def interrupting_import(name, *args, **kwargs):
    if name.split(".")[0] in {"typer", "rich"}:
        raise KeyboardInterrupt
    return real_import(name, *args, **kwargs)
builtins.__import__ = interrupting_import
"""


@pytest.mark.parametrize("module", [False, True])
def test_ctrl_c_while_importing_is_one_line_and_130(tmp_path, module):
    (tmp_path / "sitecustomize.py").write_text(INTERRUPT_AT_IMPORT)
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    proc = dpcalc(*GAUSS, module=module, env={"PYTHONPATH": path})
    assert proc.returncode == 130
    assert b"Traceback" not in proc.stderr
    assert proc.stderr.decode() == "dpcalc: error: interrupted\n"


# --------------------------------------------------------------------------- 11: --debug

@pytest.mark.parametrize("where", ["root", "command"])
def test_debug_keeps_the_exit_status_and_adds_the_traceback(where):
    bad = ["gaussian", "--sigma", "-1", "--delta", "1e-5"]
    args = ["--debug", *bad] if where == "root" else [*bad, "--debug"]
    proc = dpcalc(*args)
    assert proc.returncode == 2 and proc.stdout == b""
    err = proc.stderr.decode()
    assert "Traceback" in err and "DomainError" in err
    assert ERROR.match(err.splitlines(keepends=True)[-1])


def test_debug_on_success_changes_nothing():
    plain = dpcalc(*GAUSS, "--value")
    debug = dpcalc("--debug", *GAUSS, "--value")
    assert debug.returncode == plain.returncode == 0
    assert debug.stdout == plain.stdout and debug.stderr == b""


@pytest.mark.parametrize("args", [["--help"], ["gaussian", "--help"], ["dpsgd", "--help"]])
def test_debug_is_listed_in_help(args):
    proc = dpcalc(*args, env={"COLUMNS": "200"})
    assert proc.returncode == 0 and b"--debug" in proc.stdout


# --------------------------------------------------------------------------- 12: warnings

def test_the_issue_example_has_no_warning_and_a_sound_total():
    proc = dpcalc("compose", "--epsilon", "1000", "--delta", "0", "--k", "10", "--total-delta",
                  "1e-5", "--group", "2", "--value")
    assert proc.returncode == 0
    assert proc.stderr == b""
    # pure 2000-DP (group of 2) ten times: δ(ε) = 1 − e^(ε − 20000) to within e^(−2000), so
    # the smallest total ε at δ = 1e-5 is 20000 − (−log(1 − 1e-5)) = 20000 − 1.000005e-5
    value = Decimal(proc.stdout.decode().strip())
    assert Decimal("19999.99998999995") - Decimal("1e-9") <= value <= 20000


@pytest.mark.parametrize("args", [
    ["compose", "--epsilon", "1000", "--delta", "0", "--k", "10", "--total-delta", "1e-5",
     "--group", "2"],
    ["compose", "--epsilon", "700", "--delta", "0", "--k", "3", "--total-delta", "1e-9"],
    ["compose", "--epsilon", "1e5", "--delta", "0", "--k", "2", "--total-delta", "0.5"],
    ["compose", "--epsilon", "40", "--delta", "1e-300", "--k", "1000", "--total-delta", "1e-5"],
    ["gaussian", "--sigma", "1e-3", "--delta", "1e-300"],
    ["subsample", "--epsilon", "1000", "--delta", "0", "--q", "1e-300"],
    ["rdp", "--sigma", "1e-3", "--q", "0.5", "--steps", "1000", "--delta", "1e-300"],
])
@pytest.mark.parametrize("mode", ["--value", ""])
def test_exit_0_never_comes_with_noise_on_stderr(args, mode):
    proc = dpcalc(*args, *([mode] if mode else []))
    if proc.returncode == 0:
        assert proc.stderr == b""
    else:
        one_error_line(proc)


def test_unhandled_float_trouble_is_loud_not_a_warning(capsys, monkeypatch):
    import importlib

    import numpy as np

    from dpcalc.cli import main

    api_gaussian = importlib.import_module("dpcalc.api.gaussian")
    real = api_gaussian._solve

    def nan_making(*a, **k):
        np.log(np.array([-1.0]))  # invalid: a NaN the core did not ask for
        return real(*a, **k)

    monkeypatch.setattr(api_gaussian, "_solve", nan_making)
    code = main([*GAUSS, "--value"])
    captured = capsys.readouterr()
    assert code == 3 and captured.out == "" and ERROR.match(captured.err)
    assert "float trouble" in captured.err


# --------------------------------------------------------------------------- 14: bare

@pytest.mark.parametrize("module", [False, True])
def test_bare_dpcalc_is_exit_2_with_one_line(module):
    proc = dpcalc(module=module)
    assert proc.returncode == 2 and proc.stdout == b""
    err = one_error_line(proc)
    assert "--help" in err and "gaussian" in err


# --------------------------------------------------------------------------- 17: names

def test_eps_suggests_epsilon_and_epochs():
    proc = dpcalc("dpsgd", "--eps", "1")
    assert proc.returncode == 2
    err = one_error_line(proc)
    assert "--epsilon" in err and "--epochs" in err


@pytest.mark.parametrize("alias,canonical", [
    (["dpsgd", "--noise-multiplier", "4", "--sample-rate", "0.01"],
     ["dpsgd", "--sigma", "4", "--q", "0.01"]),
    (["rdp", "--noise-multiplier", "1.1", "--sample-rate", "0.01"],
     ["rdp", "--sigma", "1.1", "--q", "0.01"]),
    (["subsample", "--epsilon", "1", "--sample-rate", "0.01"],
     ["subsample", "--epsilon", "1", "--q", "0.01"]),
])
def test_library_names_are_aliases(alias, canonical):
    rest = (["--epochs", "3", "--delta", "1e-5"] if alias[0] == "dpsgd" else
            ["--steps", "100", "--delta", "1e-5"] if alias[0] == "rdp" else ["--delta", "1e-5"])
    a = dpcalc(*alias, *rest, "--json")
    c = dpcalc(*canonical, *rest, "--json")
    assert a.returncode == c.returncode == 0
    assert json.loads(a.stdout) == json.loads(c.stdout)


COMMANDS = ["gaussian", "laplace", "compose", "subsample", "rdp", "dpsgd"]


def _api_solve_for_names(command: str) -> list[str]:
    import io
    from contextlib import redirect_stderr

    from dpcalc.cli import main

    err = io.StringIO()
    with redirect_stderr(err):
        assert main([command, "--solve-for", "bogus"]) == 2
    listed = re.search(r"one of (.+?), got", err.getvalue())
    return [n.strip().replace("_", "-") for n in listed.group(1).split(",")]


@pytest.mark.parametrize("command", COMMANDS)
def test_solve_for_names_are_in_help_and_completion(command, monkeypatch, capsys):
    from dpcalc.cli import _completion

    names = set(_api_solve_for_names(command))
    if command == "dpsgd":
        names.add("steps")  # accepted in place of epochs (dpcalc.api.dpsgd)
    assert set(_completion.choices(command, "--solve-for")) == names
    proc = dpcalc(command, "--help", env={"COLUMNS": "300"})
    line = next(s for s in proc.stdout.decode().splitlines() if "--solve-for" in s)
    for name in names:
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", line), (name, line)


def test_solve_for_completes_on_tab(monkeypatch, capsys):
    from tests.test_generated import complete_bash

    assert complete_bash(monkeypatch, capsys, "dpcalc gaussian --solve-for ") == [
        "sigma", "epsilon", "delta"]
    assert "total-epsilon" in complete_bash(monkeypatch, capsys,
                                            "dpcalc compose --solve-for t")


# --------------------------------------------------------------------------- 20: install

DATA = {
    "share/man/man1": "man/dpcalc.1",
    "share/bash-completion/completions": "completions/dpcalc.bash",
    "share/zsh/site-functions": "completions/_dpcalc",
    "share/fish/vendor_completions.d": "completions/dpcalc.fish",
}


def test_the_wheel_installs_the_man_page_and_completions():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data_files = config["tool"]["setuptools"]["data-files"]
    for target, source in DATA.items():
        assert source in data_files.get(target, []), (target, source)
        assert (ROOT / source).is_file()


@pytest.mark.slow
def test_pip_install_puts_the_man_page_where_man_finds_it(tmp_path):
    """Build the wheel, install it into a fresh venv, ask ``man -w`` (needs the network for
    the build backend: run with --run-slow)."""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w",
                    str(wheels)], check=True, timeout=600)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                    "install", "--no-deps", "-q", *map(str, wheels.glob("*.whl"))], check=True,
                   timeout=600)
    for target, source in DATA.items():
        installed = venv / target / Path(source).name
        assert installed.read_bytes() == (ROOT / source).read_bytes()
    if subprocess.run(["sh", "-c", "command -v man"], capture_output=True).returncode == 0:
        found = subprocess.run(["man", "-w", "dpcalc"], capture_output=True, text=True,
                               env={"PATH": f"{venv / 'bin'}:/usr/bin:/bin",
                                    "HOME": str(tmp_path)})
        assert found.stdout.strip() == str(venv / "share/man/man1/dpcalc.1")


# --------------------------------------------------------------------------- 21: no clocks

def test_no_wall_clock_asserts_in_tests():
    """Speed is measured in benchmarks/, never asserted in tests (they fail under load)."""
    clock = re.compile(r"\btime\.(perf_counter|monotonic|time|process_time)\s*\(")
    offenders = [p.name for p in (ROOT / "tests").glob("test_*.py")
                 if p.name != Path(__file__).name and clock.search(p.read_text())]
    assert offenders == []


def test_binomial_log_pmf_where_k_pi_underflows_matches_mpmath():
    """The site behind the issue's example: π = e^(−2000) makes kπ underflow to 0; the log pmf
    must stay finite and within its stated error of the exact value (it was NaN/−inf)."""
    import math

    import mpmath
    import numpy as np

    from dpcalc.relations.compose import _log_binom_pmf

    k, log_pi = 10, -2000.0
    log_q = math.log1p(-math.exp(log_pi))
    ell = np.arange(0.0, k + 1.0)
    with np.errstate(all="raise"):
        out, err = _log_binom_pmf(k, ell, log_pi, log_q)
    with mpmath.workdps(50):
        for i, x in enumerate(ell):
            exact = (mpmath.log(mpmath.binomial(k, int(x))) + int(x) * mpmath.mpf(log_pi)
                     + (k - int(x)) * mpmath.log1p(-mpmath.exp(log_pi)))
            assert math.isfinite(out[i])
            assert abs(out[i] - exact) <= err[i], (x, out[i], exact, err[i])


def test_the_executable_runs_numpy_single_threaded_unless_told_otherwise(monkeypatch):
    # OpenBLAS spins a thread per core at import (~0.1 s CPU per process); dpcalc needs none
    import dpcalc._entry as entry

    seen = {}

    def fake_main():
        import os

        seen["threads"] = os.environ.get("OPENBLAS_NUM_THREADS")
        return 0

    import dpcalc.cli

    monkeypatch.setattr(dpcalc.cli, "main", fake_main)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    with pytest.raises(SystemExit) as ex:
        entry.run()
    assert ex.value.code == 0 and seen["threads"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    with pytest.raises(SystemExit):
        entry.run()
    assert seen["threads"] == "2"


def test_keep_heap_never_fails_the_executable(monkeypatch):
    """_entry._keep_heap tunes glibc's malloc on Linux only; elsewhere, or when ctypes cannot
    load the C library (Windows' CDLL(None) raises TypeError), it does nothing."""
    import ctypes

    from dpcalc import _entry

    calls = []

    class FakeLibc:
        def mallopt(self, param, value):
            calls.append((param, value))
            return 0 if not calls[1:] else 1      # refuses the mmap threshold

    monkeypatch.setattr(ctypes, "CDLL", lambda name: FakeLibc())
    for key in [k for k in os.environ if k.startswith("MALLOC_")]:
        monkeypatch.delenv(key)
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    monkeypatch.setattr(_entry.sys, "platform", "linux")
    _entry._keep_heap()
    assert calls == [(-3, 32 << 20)]           # refused: the other settings are left alone
    monkeypatch.setattr(_entry.sys, "platform", "win32")
    _entry._keep_heap()
    assert len(calls) == 1                     # not Linux: untouched

    def broken(name):
        raise TypeError("argument of type 'NoneType' is not iterable")

    monkeypatch.setattr(_entry.sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", broken)
    _entry._keep_heap()                        # no exception
    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")
    monkeypatch.setattr(ctypes, "CDLL", lambda name: FakeLibc())
    _entry._keep_heap()
    assert len(calls) == 1                     # the user's own malloc settings win


def test_heap_keeping_waits_for_numpy(monkeypatch):
    """The executable tunes malloc when numpy is first looked up, once, and never for a
    command that does not load it (the finder finds nothing itself)."""
    from dpcalc import _entry

    calls = []
    monkeypatch.setattr(_entry, "_keep_heap", lambda: calls.append(1))
    finder = _entry._KeepHeapWithNumpy()
    assert finder.find_spec("typer") is None and calls == []
    assert finder.find_spec("numpy") is None and calls == [1]
    assert finder.find_spec("numpy") is None and calls == [1]
