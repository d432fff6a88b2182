"""``dpcalc batch`` on all cores: the question lines are answered in worker processes and the
answers come back in input order (CONTRACT "Many questions at once"; issue 13).

Each worker answers its share of the lines with ``dpcalc.api.batch.answer_line`` inside one
``shared_accounting`` block, exactly as the in-process path does, and sends each Answer back
(pickled: floats and Decimals round-trip exactly) as soon as it has it. The parent keeps a
reorder buffer and yields the answers strictly in input order, so the output is the
in-process output byte for byte; only the wall time changes.

Assignment: lines that would share work are one task, by ``share_key``: every dpsgd line about
one mechanism (the same q or batch and dataset sizes, σ, sampling, relation, examples per user)
at any epochs, δ, ε or accountant; any other line is a task of its own. The tasks are fixed
before the workers start, in the order of their first line, and each worker takes the next
one not yet taken when it is free: the workers walk through the input side by side (the
output streams), and a slow line does not hold up a fixed share of the others (a fixed split
by count left the two workers 28 s and 35 s of CPU on ``bench_batch.py --lines 400``). Which
worker answers a task does not change its answer: a worker's shared accountings are keyed by
everything an evaluation depends on (``shared_accounting``), as in-process.

Workers need the ``fork`` start method (Linux; not macOS, where forking is unsafe): they
inherit the lines and the loaded modules, nothing is re-imported. Where it is missing ``start``
returns None and the caller answers in-process. Workers ignore Ctrl-C: the parent alone
reports it, and it ends and reaps them whenever it stops early (a closed pipe, an error,
Ctrl-C); a worker whose parent is killed ends too (``_end_with``), so none is left behind.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from dpcalc.errors import DpcalcError, ExitStatus, UsageError

#: The environment variable that sets the number of worker processes (1: answer in-process).
WORKERS_ENV = "DPCALC_BATCH_WORKERS"
#: Fewer questions than this are answered in-process unless a worker count is set: starting
#: workers costs more than it saves.
MIN_QUESTIONS = 8
#: The dpsgd options that name the mechanism (the work shared between lines depends on these).
_MECHANISM = ("q", "sample_rate", "batch_size", "dataset_size", "sigma", "noise_multiplier",
              "sampling", "relation", "examples_per_user")


def cores() -> int:
    """The number of CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def worker_count(questions: int, setting: str | None = None) -> int:
    """How many workers answer ``questions`` lines (1: in-process).

    ``setting`` is the text of ``DPCALC_BATCH_WORKERS`` (None or blank: one per core, and
    in-process below ``MIN_QUESTIONS`` questions); never more workers than questions.

    Raises:
        UsageError: a setting that is not a whole number ≥ 1.
    """
    if setting is not None and setting.strip():
        try:
            wanted = int(setting.strip())
        except ValueError:
            wanted = 0
        if wanted < 1:
            raise UsageError(f"{WORKERS_ENV} must be a whole number of worker processes, at "
                             f"least 1 (1: answer in-process), got {setting!r}")
    elif questions < MIN_QUESTIONS:
        return 1
    else:
        wanted = cores()
    return max(1, min(wanted, questions))


def share_key(text: str | bytes) -> tuple | None:
    """The key of a line whose answer shares work with the other lines of the same key (a dpsgd
    line with its mechanism given), else None."""
    from dpcalc.api.batch import _records_text, parse_line

    try:
        obj = parse_line(text.decode("utf-8") if isinstance(text, bytes) else text)
    except (UsageError, UnicodeDecodeError):
        return None
    if obj.get("command") != "dpsgd":
        return None
    values = tuple(_records_text(obj.get(name)) for name in _MECHANISM)
    given = dict(zip(_MECHANISM, values, strict=True))
    has_rate = given["q"] != "null" or given["sample_rate"] != "null" or (
        given["batch_size"] != "null" and given["dataset_size"] != "null")
    has_sigma = given["sigma"] != "null" or given["noise_multiplier"] != "null"
    # a line solving for q or σ probes points of its own: spread those like other lines
    return ("dpsgd", *values) if has_rate and has_sigma else None


def tasks(questions: Sequence[tuple[int, Any]]) -> list[list[tuple[int, Any]]]:
    """The units of work, in the order of their first line: the (line number, text) pairs of
    one ``share_key`` together, in input order; a line without a key alone."""
    out: list[list[tuple[int, Any]]] = []
    group: dict[tuple, list[tuple[int, Any]]] = {}
    for number, text in questions:
        key = share_key(text)
        if key is None:
            out.append([(number, text)])
        elif key in group:
            group[key].append((number, text))
        else:
            group[key] = [(number, text)]
            out.append(group[key])
    return out


def _work(todo: list[list[tuple[int, Any]]], counter, conn, parent: int, readers) -> None:
    """A worker: take the next task not yet taken (``counter``) until none is left; answer its
    lines in order, sending each (line number, Answer) at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends us
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _end_with(parent)
    for reader in readers:  # the parent's ends, inherited: a worker holding another's reader
        reader.close()      # would keep it from seeing that the parent has gone
    from dpcalc.api._dpsgd_accountant import shared_accounting
    from dpcalc.api.batch import answer_line

    try:
        with shared_accounting():
            while True:
                with counter.get_lock():
                    index = counter.value
                    counter.value = index + 1
                if index >= len(todo):
                    break
                for number, text in todo[index]:
                    conn.send_bytes(_packed(number, answer_line(text, number)))
    except OSError:
        pass  # the parent has gone (its reader closed): nothing left to answer for
    finally:
        conn.close()


def _end_with(parent: int) -> None:
    """End this worker (SIGTERM) when the parent process ends, however it ends (a kill too):
    Linux ``prctl(PR_SET_PDEATHSIG)``. Elsewhere a worker ends at its next answer, when the
    pipe to the parent is found closed."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # it ended before the line above
        os._exit(0)


def _packed(number: int, got) -> bytes:
    """(line number, Answer) pickled; an Answer that does not pickle becomes an internal error
    (a bug), not a lost line."""
    try:
        return pickle.dumps((number, got), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - an answer that cannot travel is a bug
        import traceback

        from dpcalc.api.batch import Answer

        failed = Answer(number, got.id_json if got else None,
                        error=f"internal error ({type(got).__name__} does not pickle); please "
                              "report it with the line",
                        exit_status=int(ExitStatus.INTERNAL), trace=traceback.format_exc())
        return pickle.dumps((number, failed), protocol=pickle.HIGHEST_PROTOCOL)


class Pool:
    """Worker processes answering a batch; iterate for the Answers in input order. Use as a
    context manager: leaving it ends and reaps the workers."""

    def __init__(self, questions: list[tuple[int, Any]], workers: int, context):
        self._order = [number for number, _ in questions]
        self._procs: list = []
        self._conns: list = []
        todo = tasks(questions)
        counter = context.Value("q", 0)  # the next task to take (with its lock)
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            try:   # a Ctrl-C now waits until every worker ignores it (no worker traceback)
                for _ in range(min(workers, len(todo))):
                    self._start(context, todo, counter)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        except BaseException:
            self.close()
            raise

    def _start(self, context, todo, counter) -> None:
        reader, writer = context.Pipe(duplex=False)
        proc = context.Process(target=_work, daemon=True, name="dpcalc-batch-worker",
                               args=(todo, counter, writer, os.getpid(), [*self._conns, reader]))
        self._procs.append(proc)
        self._conns.append(reader)
        try:
            proc.start()
        finally:
            writer.close()  # the worker's end: only the worker holds it now (EOF = done)

    def __iter__(self) -> Iterator:
        from multiprocessing.connection import wait

        pending: dict[int, Any] = {}
        live = list(self._conns)
        for number in self._order:
            while number not in pending:
                if not live:
                    raise DpcalcError("internal error (the batch workers ended without an "
                                      f"answer for line {number}); please report it")
                for conn in wait(live):
                    try:
                        got_number, got = pickle.loads(conn.recv_bytes())
                    except EOFError:
                        live.remove(conn)
                        self._ended(conn)
                        continue
                    pending[got_number] = got
            got = pending.pop(number)
            if got is not None:
                yield got
        for proc in self._procs:  # all answered: they are leaving; let them end on their own
            proc.join()

    def _ended(self, conn) -> None:
        """A worker closed its pipe: done, or lost (then the batch cannot be completed)."""
        proc = self._procs[self._conns.index(conn)]
        proc.join()
        if proc.exitcode:
            raise DpcalcError(f"internal error (a batch worker ended with exit code "
                              f"{proc.exitcode}); please report it, or set {WORKERS_ENV}=1 to "
                              "answer in-process")

    def close(self) -> None:
        """End the workers that still run and reap them all (their CPU time then counts as
        this process's children's)."""
        started = [proc for proc in self._procs if proc.pid is not None]
        for proc in started:
            if proc.is_alive():
                proc.terminate()
        for proc in started:
            proc.join()
        for conn in self._conns:
            conn.close()
        self._procs, self._conns = [], []

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def start(lines: Sequence[str | bytes], workers: int) -> Pool | None:
    """Start ``workers`` processes answering the question lines of ``lines`` (line numbers
    count every line, from 1); None when worker processes are not available here."""
    import sys

    from dpcalc.api.batch import is_question

    if sys.platform == "darwin":  # fork is unsafe there (system frameworks); spawn re-imports
        return None
    try:
        import multiprocessing

        context = multiprocessing.get_context("fork")
    except (ImportError, ValueError):
        return None
    questions = [(n, text) for n, text in enumerate(lines, 1) if is_question(text)]
    for stream in (sys.stdout, sys.stderr):  # a fork must not inherit unwritten output
        if stream is not None:
            stream.flush()
    try:
        return Pool(questions, workers, context)
    except OSError:
        return None  # no processes to be had (a limit): the caller answers in-process
