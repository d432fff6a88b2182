"""Generated files are current, and the completion they rely on answers.

``completions/`` and ``man/dpcalc.1`` are regenerated in memory and compared byte for byte with
the committed files. The completion scripts call ``dpcalc`` back with ``_DPCALC_COMPLETE`` set;
those answers are checked in-process, and once through the real bash script.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dpcalc import _generate
from dpcalc.cli import _completion, main

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("path", sorted(_generate.generated()))
def test_generated_file_is_current(path):
    expected = _generate.generated()[path].encode()
    target = ROOT / path
    actual = target.read_bytes() if target.is_file() else b""
    assert actual == expected, (
        f"{path} is stale; regenerate it with: {sys.executable} -m dpcalc._generate")


def test_generation_is_deterministic():
    assert _generate.generated() == _generate.generated()


def test_every_generated_file_is_stamped():
    for path, text in _generate.generated().items():
        assert _generate.STAMP in "\n".join(text.splitlines()[:2]), path


def test_check_mode_lists_stale_files(tmp_path, capsys):
    assert _generate.main(["--check", "--root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "stale: man/dpcalc.1" in out and "python -m dpcalc._generate" in out
    assert _generate.main(["--root", str(tmp_path)]) == 0
    assert _generate.main(["--check", "--root", str(tmp_path)]) == 0


def test_man_page_covers_every_command_and_option():
    import typer

    from dpcalc.cli import app

    page = _generate.man_page()
    group = typer.main.get_command(app)
    for name, command in group.commands.items():
        assert f'.SS "dpcalc {name} [OPTIONS]"' in page
        for param in command.params:
            if not param.hidden:
                assert "\\fB" + param.opts[0].replace("-", "\\-") + "\\fR" in page, param.opts


def test_man_page_renders_when_man_is_installed(tmp_path):
    man = shutil.which("man")
    if man is None:
        pytest.skip("man is not installed")
    page = tmp_path / "dpcalc.1"
    page.write_text(_generate.man_page())
    env = {**os.environ, "MANWIDTH": "80", "LC_ALL": "C.UTF-8", "MAN_KEEP_FORMATTING": ""}
    r = subprocess.run([man, "-l", str(page)], capture_output=True, text=True, env=env,
                       timeout=60)
    if r.returncode != 0:
        pytest.skip(f"man could not render here: {r.stderr.strip()[:200]}")
    assert "dpcalc gaussian [OPTIONS]" in r.stdout
    assert "EXIT STATUS" in r.stdout


# ----------------------------------------------------------------------- completion answers

def complete_bash(monkeypatch, capsys, line: str) -> list[str]:
    """What ``dpcalc`` answers the bash script for ``line`` (the cursor at its end)."""
    words = line.split(" ")
    monkeypatch.setenv(_completion.COMPLETE_VAR, "complete_bash")
    monkeypatch.setenv("COMP_WORDS", line)
    monkeypatch.setenv("COMP_CWORD", str(len(words) - 1))
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 0
    return capsys.readouterr().out.split()


@pytest.mark.parametrize("line,expected", [
    ("dpcalc ", ["gaussian", "laplace", "compose", "subsample", "rdp", "dpsgd",
                 "batch"]),
    ("dpcalc gau", ["gaussian"]),
    ("dpcalc dpsgd --acc", ["--accountant"]),
    ("dpcalc gaussian --method ", ["analytic", "classic", "chernoff", "rdp", "zcdp"]),
    ("dpcalc gaussian --method c", ["classic", "chernoff"]),
    ("dpcalc compose --method ", ["optimal", "advanced", "basic"]),
    ("dpcalc subsample --sampling ", ["poisson", "without-replacement"]),
    ("dpcalc subsample --relation r", ["replace-one"]),
    ("dpcalc rdp --conversion ", ["improved", "classic"]),
    ("dpcalc rdp --mechanism ", ["gaussian", "laplace"]),
    ("dpcalc dpsgd --accountant ", ["pld", "rdp", "moments", "strong"]),
    ("dpcalc gaussian --sigma ", []),
])
def test_completion_answers(monkeypatch, capsys, line, expected):
    assert complete_bash(monkeypatch, capsys, line) == expected


def test_completion_lists_options_but_not_hidden_ones(monkeypatch, capsys):
    import typer

    from dpcalc.cli import app

    options = complete_bash(monkeypatch, capsys, "dpcalc gaussian --")
    # --debug is a documented option (issue 9, item 11), so it is offered too
    assert {"--sigma", "--epsilon", "--delta", "--method", "--json", "--value",
            "--debug", "--solve-for"} <= set(options)
    command = typer.main.get_command(app).commands["gaussian"]
    hidden = {o for p in command.params if p.hidden for o in p.opts}
    assert not hidden & set(options)


@pytest.mark.parametrize("shell,env,expected", [
    ("zsh", {"_TYPER_COMPLETE_ARGS": "dpcalc dpsgd --accountant m"}, '"moments"'),
    ("fish", {"_TYPER_COMPLETE_ARGS": "dpcalc gau", "_TYPER_COMPLETE_FISH_ACTION": "get-args"},
     "gaussian\tGaussian mechanism"),
])
def test_completion_answers_zsh_and_fish(monkeypatch, capsys, shell, env, expected):
    monkeypatch.setenv(_completion.COMPLETE_VAR, f"complete_{shell}")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 0
    assert expected in capsys.readouterr().out


def test_choice_options_match_the_help_and_the_api():
    """Every option with a fixed set of values completes them: the tuples the API checks
    against (``check_choice``), named in its help, its default among them."""
    import typer

    from dpcalc.cli import app
    from dpcalc.relations.gaussian import METHODS

    group = typer.main.get_command(app)
    found = set()
    for name, command in group.commands.items():
        for param in command.params:
            if param.type.name == "str" and (param.default and not param.metavar
                                             or param.opts[0] in ("--solve-for", "--format")):
                found.add((name, param.opts[0]))
                values = _completion.choices(name, param.opts[0])
                assert param.default in values or param.default is None
                for value in values:
                    assert value in param.help, (name, param.opts[0], value)
    assert found == set(_completion.CHOICES)
    assert _completion.choices("gaussian", "--method") == METHODS


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_script_completes_through_the_real_program(tmp_path):
    bindir = Path(sys.executable).parent
    script = ROOT / "completions" / "dpcalc.bash"
    if not (bindir / "dpcalc").exists():
        pytest.skip("the dpcalc script is not installed next to this interpreter")
    probe = (f'source "{script}"; COMP_WORDS=(dpcalc dpsgd --accountant ""); COMP_CWORD=3; '
             '_dpcalc_completion dpcalc; printf "%s\\n" "${COMPREPLY[@]}"')
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", probe], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["pld", "rdp", "moments", "strong"]
