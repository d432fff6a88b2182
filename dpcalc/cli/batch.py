"""``dpcalc batch``: many questions at once, JSON lines in, JSON lines out (CONTRACT "Many
questions at once"; the rules of a line are in ``dpcalc.api.batch``)."""

from __future__ import annotations

import json as _json
import sys
from typing import Annotated

import typer

from dpcalc.cli.options import Debug


def _read(source: str) -> list[bytes]:
    """The input's lines, undecoded (``api.batch`` decodes each: one that is not UTF-8 is a
    bad line, not a failed batch)."""
    from dpcalc.errors import UsageError

    try:
        if source == "-":
            stdin = getattr(sys.stdin, "buffer", sys.stdin)
            if stdin is None:
                raise UsageError("batch -: standard input is closed; give a file or pipe the "
                                 "questions in")
            data = stdin.read()
            data = data.encode("utf-8") if isinstance(data, str) else data
        else:
            with open(source, "rb") as handle:
                data = handle.read()
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror or exc}") from None
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _compact(value) -> str:
    """One JSON object on one line: the ``--json`` object of ``dpcalc.render.jsonout``, with
    numbers written the same way (exactly) and no indentation."""
    from decimal import Decimal

    from dpcalc.numeric.display import json_token
    from dpcalc.result import is_finite

    if isinstance(value, dict):
        return "{" + ", ".join(f"{_json.dumps(str(k), ensure_ascii=False)}: {_compact(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_compact(v) for v in value) + "]"
    if value is None or isinstance(value, bool | str):
        return _json.dumps(value, ensure_ascii=False)
    if isinstance(value, int | float | Decimal):
        return json_token(value) if is_finite(value) else "null"
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def render_answer(answer) -> str:
    """The output line of one answer (newline-terminated)."""
    head = f'{{"id": {answer.id_json}, ' if answer.id_json is not None else "{"
    if answer.result is not None:
        from dpcalc.render import jsonout

        body = _compact(jsonout.result_object(answer.result))
        return head + body[1:] + "\n"
    if answer.id_json is None:
        head = '{"id": null, '
    error = _json.dumps(answer.error, ensure_ascii=False)
    return (head + f'"line": {answer.line}, "error": {error}, '
            f'"exit_status": {answer.exit_status}}}\n')


def batch(
    input: Annotated[str, typer.Argument(  # noqa: A002 - the name the man page shows
        metavar="[FILE|-]", help="JSON lines, one question per line (- or nothing: stdin).",
        show_default=False, rich_help_panel="Input")] = "-",
    debug: Debug = False,
) -> None:
    """Many questions at once: JSON lines in, one JSON object per line out, in order.

    A line is a question, e.g. {"command": "dpsgd", "q": 0.01, "sigma": 4,
    "epochs": 100, "delta": 1e-5, "id": 7}, answered with the object that
    dpcalc dpsgd … --json prints (with the "id"). A bad line is answered with
    {"id", "line", "error", "exit_status"}; the others still run. Blank lines
    and # comments are skipped.

    Exit status: 2 if any line was bad, else 1 if a gate failed or a target
    was infeasible, else 0.

    The lines are answered on all CPU cores, output in order
    (DPCALC_BATCH_WORKERS=N: N processes; 1: one).

    Example: dpcalc batch questions.jsonl > answers.jsonl
    """
    import os

    from dpcalc.api import _batch_workers as workers
    from dpcalc.api import batch as api

    lines = _read(input)
    count = workers.worker_count(sum(map(api.is_question, lines)),
                                 os.environ.get(workers.WORKERS_ENV))
    statuses: list[int] = []
    # the workers start first: no fork once the progress bar's thread runs
    with api.answering(lines, count) as answers, _Progress(len(lines)) as progress:
        for answer in answers:
            sys.stdout.write(render_answer(answer))
            sys.stdout.flush()
            if debug and answer.trace:
                import dpcalc.cli._streams as _streams

                _streams.write_err(f"line {answer.line}:\n{answer.trace}")
            statuses.append(answer.exit_status)
            progress.advance(answer.line)
    _summary(statuses, api.exit_status(statuses))


def _summary(statuses: list[int], status: int) -> None:
    """Exit with the batch's status; when not 0, one line on stderr says how many failed."""
    from dpcalc.errors import DpcalcError, ExitStatus

    if not status:
        return
    failed = sum(1 for s in statuses if s)
    kinds = {ExitStatus.BAD_INPUT: "bad", ExitStatus.INTERNAL: "hit an internal error",
             ExitStatus.GATE_OR_INFEASIBLE: "failed a gate or had an infeasible target"}
    counts = "; ".join(f"{statuses.count(int(k))} {text}" for k, text in kinds.items()
                       if int(k) in statuses)
    error = DpcalcError(f"{failed} of {len(statuses)} questions were not answered cleanly "
                        f"({counts}); see their output lines")
    error.exit_status = ExitStatus(status)
    raise error


class _Progress:
    """A progress bar on stderr when stderr is a terminal (rich); nothing otherwise."""

    def __init__(self, total: int):
        self.total, self._bar, self._task = total, None, None

    def __enter__(self):
        if sys.stderr.isatty() and self.total:
            from rich.console import Console
            from rich.progress import Progress

            self._bar = Progress(console=Console(stderr=True), transient=True,
                                 redirect_stdout=False, redirect_stderr=False)
            self._bar.start()
            self._task = self._bar.add_task("dpcalc: answering", total=self.total)
        return self

    def advance(self, line: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=line)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()
