"""``dpcalc batch`` on all cores (issue 13): worker processes answer the lines, and the output
is the in-process output byte for byte (CONTRACT "Many questions at once")."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dpcalc.api import _batch_workers as workers
from dpcalc.api import batch as api
from dpcalc.errors import DpcalcError, UsageError

DPCALC = shutil.which("dpcalc", path=str(Path(sys.executable).parent)) or "dpcalc"
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"),
                           reason="worker processes are forked on Linux only (and /proc)")

MIXED = b"\n".join([
    b"# a comment",
    b'{"command": "dpsgd", "q": 0.01, "sigma": 1.1, "epochs": 2, "delta": 1e-5, "id": 1}',
    b"",
    b'{"command": "dpsgd", "q": 0.01, "sigma": 1.1, "epochs": 3, "delta": 1e-6, "id": "b"}',
    b'{"command": "gaussian", "sigma": 2, "delta": 1e-400}',
    b'{"command": "dpsgd", "q": 0.02, "sigma": 2, "epochs": 1, "epsilon": 3, '
    b'"solve_for": "delta", "compare": false}',
    b'{"bad',
    b'{"command": "dpsgd", "q": 0.01, "epochs": 2, "epsilon": 2, "delta": 1e-5, '
    b'"compare": false, "id": [1, 2.50]}',
    b'{"command": "nope", "id": 9}',
    b'{"command": "dpsgd", "q": 0.01, "sigma": 1.1, "epochs": 2, "delta": 1e-5, '
    b'"accountant": "rdp", "max_epsilon": 0.1}',
    b"   # an indented comment",
    b'{"command": "laplace", "scale": 2, "delta": 1e-6}',
    b'\xff\xfe{"command": "gaussian"}',
]) + b"\n"


def run(stdin: bytes, workers_env: str | None, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != workers.WORKERS_ENV}
    if workers_env is not None:
        env[workers.WORKERS_ENV] = workers_env
    return subprocess.run([DPCALC, "batch", *args], input=stdin, capture_output=True, env=env,
                          timeout=300)


@pytest.mark.parametrize("count", ["2", "3"])
def test_workers_answer_byte_for_byte_as_in_process(count):
    """A mixed batch (dpsgd ε, δ and σ lines, several of one mechanism; a gate that fails; bad
    JSON, an unknown command, a line that is not UTF-8; comments, blank lines, ids): the same
    stdout, stderr and exit status with workers as in one process."""
    alone = run(MIXED, "1")
    assert alone.returncode == 2, alone.stderr
    assert len(alone.stdout.splitlines()) == 10
    forked = run(MIXED, count)
    assert forked.stdout == alone.stdout
    assert forked.stderr == alone.stderr
    assert forked.returncode == alone.returncode


def test_debug_traces_come_back_from_the_workers(monkeypatch):
    """An unexpected error in a worker keeps its traceback (``--debug`` prints it)."""
    def broken(obj):
        if obj.get("id") == "b":
            raise RuntimeError("boom")
        return real(obj)

    real = api.answer
    monkeypatch.setattr(api, "answer", broken)  # the workers are forked: they inherit it
    lines = MIXED.split(b"\n")
    alone = api.batch(lines)
    forked = api.batch(lines, workers=2)
    assert forked == alone
    failed = [a for a in forked if a.trace]
    assert [a.id_json for a in failed] == ['"b"']
    assert "RuntimeError: boom" in failed[0].trace and failed[0].exit_status == 3


@LINUX
def test_lines_are_answered_in_other_processes(monkeypatch):
    def where(obj):
        raise DpcalcError(f"pid {os.getpid()}")

    monkeypatch.setattr(api, "answer", where)
    lines = [json.dumps({"command": "gaussian", "sigma": 2, "id": i}) for i in range(12)]
    pool = workers.start(lines, 2)
    assert pool is not None
    with pool:
        got = list(pool)
    assert [a.line for a in got] == list(range(1, 13))
    pids = {a.error for a in got}
    assert f"pid {os.getpid()}" not in pids and 1 <= len(pids) <= 2


def test_lines_of_one_mechanism_are_one_task():
    def dpsgd(**kw):
        return json.dumps({"command": "dpsgd", **kw})

    lines = [dpsgd(q=0.01, sigma=1.1, epochs=2, delta=1e-5),             # 1: mechanism A
             '{"command": "gaussian", "sigma": 2}',                       # 2
             dpsgd(q=0.02, sigma=1.1, epochs=2, delta=1e-5),              # 3: B
             dpsgd(q=0.01, sigma=1.1, epochs=9, epsilon=1, solve_for="delta",
                   accountant="rdp"),                                     # 4: A
             dpsgd(q=0.01, epochs=2, epsilon=1, delta=1e-5),              # 5: σ solve, alone
             dpsgd(q=0.01, epochs=3, epsilon=1, delta=1e-5),              # 6: σ solve, alone
             '{"bad',                                                     # 7
             dpsgd(sample_rate=0.01, noise_multiplier=1.1, epochs=1, delta=1e-5)]  # 8: C
    got = workers.tasks(list(enumerate(lines, 1)))
    assert [[n for n, _ in task] for task in got] == [[1, 4], [2], [3], [5], [6], [7], [8]]


def test_worker_count():
    assert workers.worker_count(workers.MIN_QUESTIONS - 1) == 1
    assert workers.worker_count(1000) == workers.cores()
    assert workers.worker_count(3, "2") == 2
    assert workers.worker_count(2, "8") == 2
    assert workers.worker_count(1000, " 1 ") == 1
    assert workers.worker_count(1000, "") == workers.cores()
    for bad in ("0", "-1", "x", "1.5"):
        with pytest.raises(UsageError, match=workers.WORKERS_ENV):
            workers.worker_count(1000, bad)


def test_a_bad_worker_setting_is_bad_input():
    proc = run(MIXED, "two")
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode().startswith(f"dpcalc: error: {workers.WORKERS_ENV} must be")


# --- stopping early leaves no process behind -------------------------------------------------

def _long_batch() -> bytes:
    """Questions enough to keep two workers busy well after the first answer is out."""
    return "".join(json.dumps({"command": "dpsgd", "q": 0.001, "sigma": 1 + i / 1000,
                               "epochs": 20, "delta": 1e-5, "compare": False}) + "\n"
                   for i in range(300)).encode()


def _default_sigint() -> None:
    """In the child, before exec: SIGINT back to its default action."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def long_batch(tmp_path):
    """A ``dpcalc batch`` with two workers on a long input, in a process group of its own
    (whatever is left of it is killed at the end of the test)."""
    path = tmp_path / "long.jsonl"
    path.write_bytes(_long_batch())
    env = {**os.environ, workers.WORKERS_ENV: "2"}
    # Ctrl-C as in an interactive shell: a runner started as a background job (``cmd &``
    # in a script) ignores SIGINT, its children inherit that, and Python (dpcalc with it)
    # then leaves SIGINT ignored: the test ran the batch to its end and saw exit 0 (every
    # full run started with nohup ... & here; alone, in the foreground, it passed)
    proc = subprocess.Popen([DPCALC, "batch", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, start_new_session=True,
                            preexec_fn=_default_sigint)
    try:
        yield proc
    finally:
        for pid in _alive_in_group(proc.pid):
            os.kill(pid, signal.SIGKILL)
        proc.communicate()


def _alive_in_group(group: int) -> list[int]:
    """The processes of a process group that have not ended (zombies left out: their
    reaping is up to whoever adopted them)."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == group and state not in ("Z", "X"):
            alive.append(int(entry))
    return alive


@LINUX
def test_a_closed_pipe_ends_the_workers_quietly(long_batch):
    """``dpcalc batch big.jsonl | head -1``: exit 141, no traceback, no worker left."""
    proc = long_batch
    first = proc.stdout.readline()
    assert json.loads(first)["command"] == "dpsgd"
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)  # stderr ends when no worker holds it either
    assert proc.returncode == 141
    assert b"Traceback" not in err
    assert _alive_in_group(proc.pid) == []


@LINUX
def test_ctrl_c_ends_the_workers_quietly(long_batch):
    """Ctrl-C (SIGINT to the whole foreground group): exit 130, no traceback, none left."""
    proc = long_batch
    first = proc.stdout.readline()
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (first[:80], len(out), err[-300:])
    assert b"Traceback" not in err
    assert _alive_in_group(proc.pid) == []


@LINUX
def test_workers_end_with_a_killed_parent(long_batch):
    proc = long_batch
    proc.stdout.readline()
    assert len(_alive_in_group(proc.pid)) == 3  # the parent and two workers
    proc.kill()
    proc.wait(timeout=60)
    for _ in range(300):  # they get SIGTERM at once; wait for them to be gone (≤ 30 s)
        if not _alive_in_group(proc.pid):
            break
        time.sleep(0.1)
    assert _alive_in_group(proc.pid) == []
