"""Hand a Result to the chosen renderer, then apply the gates (after the output, so a failed
gate still shows what was solved)."""

from __future__ import annotations

import sys

from dpcalc.errors import UsageError
from dpcalc.result import Result


def output_format(*, json: bool = False, value: bool = False, fmt: str | None = None) -> str:
    """The one format the options ask for: ``--format NAME``, or its alias ``--json`` or
    ``--value``; human by default. Two different choices are a usage error (exit 2)."""
    from dpcalc.render import DEFAULT

    asked = {name: option for name, option in (("json", "--json"), ("value", "--value"))
             if {"json": json, "value": value}[name]}
    if fmt is not None:
        validate_format(fmt)
        asked.setdefault(fmt, f"--format {fmt}")
    if len(asked) > 1:
        raise UsageError(f"{' and '.join(asked.values())} conflict; give one output format "
                         "(--format human|json|value|csv)")
    return next(iter(asked), DEFAULT)


def validate_format(raw: str | None) -> str | None:
    """A typer option callback: ``--format`` must name a registered renderer (exit 2)."""
    from dpcalc.render import FORMATS

    if raw is not None and raw not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, got {raw!r}")
    return raw


def emit(result: Result, *, json: bool, value: bool, fmt: str | None = None,
         max_epsilon: str | None = None, max_delta: str | None = None,
         max_tpr: str | None = None) -> None:
    """Write ``result`` to stdout in the requested format (through the renderer registry,
    ``dpcalc.render.FORMATS``), with its gates recorded; then exit 1 (GateError) if a gate
    failed, so a failed gate still shows what was solved."""
    from dpcalc.api._common import evaluate_gates, raise_failed
    from dpcalc.render import renderer

    name = output_format(json=json, value=value, fmt=fmt)
    # a gate that does not apply is bad input: found before anything is printed
    gates = evaluate_gates(result, max_epsilon, max_delta, max_tpr)
    result = result.with_gates(gates)
    renderer(name).write(result)
    sys.stdout.flush()
    raise_failed(result, gates)


def validate_gate(name: str):
    """A typer option callback: check a gate's limit while the options are parsed, before
    any computation (a bad ``--max-epsilon abc`` is exit 2 at once)."""

    def callback(raw: str | None) -> str | None:
        if raw is not None:
            from dpcalc.api._common import parse_gate

            parse_gate(name, raw)
        return raw

    return callback


class busy:  # noqa: N801 - used as a context manager, reads like a function
    """A transient spinner on stderr for work that takes longer than ``delay`` seconds.

    Shown only when stderr is a terminal, never on stdout, so ``--json`` and ``--value``
    output stay clean; it starts late, so quick runs never flicker.
    """

    def __init__(self, message: str, delay: float = 0.8):
        self.message, self.delay = message, delay
        self._timer = None
        self._status = None

    def _start(self) -> None:
        from rich.console import Console

        self._status = Console(stderr=True).status(self.message)
        self._status.start()

    def __enter__(self):
        if sys.stderr.isatty():
            import threading

            self._timer = threading.Timer(self.delay, self._start)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._status is not None:
            self._status.stop()
