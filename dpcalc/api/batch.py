"""``dpcalc batch``: many questions at once, one JSON object per line (CONTRACT "Many questions
at once").

Each line names a command and its options (names with ``_``, as in the Python API); it is
answered by the same API function as ``dpcalc <command> … --json``, with the same defaults, so
the Result (and therefore the JSON object) is the same. A bad line is answered with its error
and never stops the others. Identical accountings are shared between lines (see
``dpcalc.api.dpsgd.shared_accounting``). With ``workers`` > 1 (``dpcalc batch``: one per core)
the lines are answered in worker processes (``dpcalc.api._batch_workers``): the same answers,
in the same order.

Input rules (README "Many questions at once"):
- numbers are read as their exact text (as on the command line: ``1e-400`` stays exact);
  a number may also be given as a string; ``null`` means "not given" (the unknown);
- flags (``curve``) take ``true``/``false``; ``fpr`` and ``alpha`` take a number or a list;
- ``compose``'s ``from`` takes the list of records inline;
- ``"compare": false`` (dpsgd only, a batch option) skips the comparison rows, as ``--value``
  does: faster, and the object then differs from ``--json`` in ``comparison`` only;
- a key given twice in one line (or an option and its alias) is an error for that line;
- blank lines and lines whose first non-blank character is ``#`` are not questions: they get
  no output line (``line`` in an error still counts every physical line).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from dpcalc.errors import DpcalcError, ExitStatus, UsageError
from dpcalc.result import Result

NUM, CHOICE, FLAG, NUMS, RECORDS = "number", "choice", "flag", "numbers", "records"
_RISK = {"fpr": NUMS, "tpr": NUM, "max_tpr": NUM}
_GATES = {"max_epsilon": NUM, "max_delta": NUM}

#: Per command: its options (name -> kind), aliases, and the CLI's defaults (dpcalc/cli/*.py;
#: tests/test_batch.py keeps the option names in step with the CLI).
COMMANDS: dict[str, dict[str, Any]] = {
    "gaussian": {
        "options": {"sigma": NUM, "epsilon": NUM, "delta": NUM, "sensitivity": NUM,
                    "method": CHOICE, "solve_for": CHOICE, **_RISK, **_GATES},
        "defaults": {"sensitivity": 1.0, "method": "analytic"},
    },
    "laplace": {
        "options": {"scale": NUM, "epsilon": NUM, "delta": NUM, "sensitivity": NUM,
                    "solve_for": CHOICE, **_RISK, **_GATES},
        "defaults": {"sensitivity": 1.0},
    },
    "compose": {
        "options": {"epsilon": NUM, "delta": NUM, "k": NUM, "total_epsilon": NUM,
                    "total_delta": NUM, "method": CHOICE, "delta_slack": NUM, "group": NUM,
                    "from": RECORDS, "solve_for": CHOICE, **_RISK, **_GATES},
        "defaults": {"method": None},  # the API picks (optimal, or pld for a plan)
    },
    "subsample": {
        "options": {"epsilon": NUM, "delta": NUM, "q": NUM, "amplified_epsilon": NUM,
                    "amplified_delta": NUM, "sample_size": NUM, "population_size": NUM,
                    "sampling": CHOICE, "relation": CHOICE, "solve_for": CHOICE, **_RISK,
                    **_GATES},
        "aliases": {"sample_rate": "q"},
        "defaults": {"sampling": "poisson", "relation": "add-remove"},
    },
    "rdp": {
        "options": {"sigma": NUM, "q": NUM, "steps": NUM, "epsilon": NUM, "delta": NUM,
                    "alpha": NUMS, "conversion": CHOICE, "mechanism": CHOICE,
                    "solve_for": CHOICE, **_RISK, **_GATES},
        "aliases": {"noise_multiplier": "sigma", "sample_rate": "q"},
        "defaults": {"conversion": "improved", "mechanism": "gaussian"},
    },
    "dpsgd": {
        "options": {"q": NUM, "batch_size": NUM, "dataset_size": NUM, "sigma": NUM,
                    "epochs": NUM, "steps": NUM, "epsilon": NUM, "delta": NUM,
                    "accountant": CHOICE, "tolerance": NUM, "sampling": CHOICE,
                    "relation": CHOICE, "examples_per_user": NUM, "curve": FLAG,
                    "curve_accountants": CHOICE,
                    "solve_for": CHOICE, "compare": FLAG, **_RISK, **_GATES},
        "aliases": {"noise_multiplier": "sigma", "sample_rate": "q"},
        "defaults": {"accountant": "pld", "tolerance": 1e-3, "curve": False, "compare": True},
    },
}

#: Keys of a line that are not options of its command.
RESERVED = ("command", "id")
#: Output options of the single commands that have no meaning in a batch line.
_OUTPUT_ONLY = ("json", "value", "debug")


class _Number(str):
    """The exact text of a JSON number (kept apart from a JSON string)."""


@dataclass(frozen=True)
class Answer:
    """The answer to one question line: a Result (gates recorded) or an error."""

    line: int                  # 1-based physical line number
    id_json: str | None = None  # the line's "id", as JSON text exactly as given (None: none)
    result: Result | None = None
    error: str | None = None
    exit_status: int = 0
    trace: str = ""            # the traceback of an unexpected error (for --debug)


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise UsageError(f"key {key!r} was given more than once; give it once")
        seen[key] = value
    return seen


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a number")


_DECODER = json.JSONDecoder(object_pairs_hook=_no_repeats, parse_float=_Number,
                            parse_int=_Number, parse_constant=_reject_constant)


def parse_line(text: str) -> dict[str, Any]:
    """One question line as a dict (numbers as their exact text, in ``_Number``).

    Raises:
        UsageError: malformed JSON, not an object, or a repeated key.
    """
    try:
        obj, end = _DECODER.raw_decode(text.strip())
    except UsageError:
        raise
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"malformed JSON ({type(exc).__name__}: {str(exc)[:80]})") from None
    if end != len(text.strip()):
        raise UsageError("malformed JSON (extra data after the object)")
    if not isinstance(obj, dict):
        raise UsageError(f"a question must be a JSON object, got {_kind(obj)}")
    return obj


def _kind(value: Any) -> str:
    if isinstance(value, _Number):
        return "a number"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), type(value).__name__)


def _records_text(value: Any) -> str:
    """Compact JSON text of parsed data, numbers written exactly as given."""
    if isinstance(value, _Number):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {_records_text(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_records_text(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _id_json(obj: dict[str, Any]) -> str | None:
    return _records_text(obj["id"]) if "id" in obj else None


def _option_value(name: str, kind: str, value: Any) -> Any:
    """The value handed to the API for one option (as the CLI would hand it)."""
    if value is None:
        return None
    if kind == NUM:
        if isinstance(value, str) and not isinstance(value, bool):
            return str(value)
        raise UsageError(f"{name} must be a number, got {_kind(value)}")
    if kind == NUMS:
        items = value if isinstance(value, list) else [value]
        if not items:
            raise UsageError(f"{name} must be a number or a non-empty list of numbers")
        for item in items:
            if not isinstance(item, str):
                raise UsageError(f"{name} must be a number or a list of numbers, got a list "
                                 f"holding {_kind(item)}")
        return [str(item) for item in items]
    if kind == FLAG:
        if not isinstance(value, bool):
            raise UsageError(f"{name} must be true or false, got {_kind(value)}")
        return value
    if kind == CHOICE:
        if isinstance(value, _Number) or not isinstance(value, str):
            raise UsageError(f"{name} must be a string, got {_kind(value)}")
        return str(value)
    # RECORDS: compose's list of mechanisms, inline
    if not isinstance(value, list | dict):
        raise UsageError(f"from must be a list of records (inline JSON), got {_kind(value)}")
    from dpcalc.api.compose_list import parse_records

    return parse_records(_records_text(value))


def _unknown(key: str, command: str, names: list[str]) -> str:
    import difflib

    if key in _OUTPUT_ONLY:
        return (f"{key!r} does not apply in a batch (every answer is the --json object); "
                "leave it out")
    wanted = key.replace("-", "_")
    matches = [n for n in names if n.startswith(wanted)] if wanted else []
    matches += [n for n in difflib.get_close_matches(wanted, names, n=3) if n not in matches]
    hint = f" (did you mean {' or '.join(matches[:3])}?)" if matches else ""
    return f"no such option for {command}: {key!r}{hint}"


def answer(obj: dict[str, Any]) -> tuple[Result, int]:
    """Answer one parsed question: (Result with its gates recorded, exit status 0 or 1).

    Raises:
        DpcalcError: bad input (exit 2) or an infeasible target (exit 1).
    """
    command = obj.get("command")
    if command is None:
        raise UsageError(f"missing \"command\": give one of {', '.join(COMMANDS)}")
    if not isinstance(command, str) or isinstance(command, _Number) or command not in COMMANDS:
        shown = command if isinstance(command, str) else _kind(command)
        raise UsageError(f"unknown command {shown!r}: give one of {', '.join(COMMANDS)}")
    spec = COMMANDS[command]
    options, aliases = spec["options"], spec.get("aliases", {})
    given: dict[str, Any] = {}
    for key, value in obj.items():
        if key in RESERVED:
            continue
        name = aliases.get(key, key)
        if name not in options:
            raise UsageError(_unknown(key, command, [*options, *aliases]))
        if name in given:
            raise UsageError(f"{name!r} was given more than once (as {key!r} too); give it once")
        given[name] = _option_value(key, options[name], value)
    from dpcalc.api._common import evaluate_gates, parse_gate

    gates = {g: given.pop(g) for g in ("max_epsilon", "max_delta", "max_tpr") if g in given}
    for gate, raw in gates.items():   # a bad gate is bad input before any computation
        if raw is not None:
            parse_gate(gate, raw)
    kwargs = {**spec["defaults"], **{k: v for k, v in given.items() if v is not None}}
    if command == "compose" and "from" in kwargs:
        kwargs["records"] = kwargs.pop("from")
    function = _function(command)
    with warnings.catch_warnings():   # float trouble is loud, as in the CLI (_Command.invoke)
        warnings.simplefilter("error", RuntimeWarning)
        result = function(**kwargs)
    checked = evaluate_gates(result, gates.get("max_epsilon"), gates.get("max_delta"),
                             gates.get("max_tpr"))
    result = result.with_gates(checked)
    failed = any(not g.passed for g in checked)
    return result, int(ExitStatus.GATE_OR_INFEASIBLE) if failed else 0


def _function(command: str):
    import importlib

    return getattr(importlib.import_module(f"dpcalc.api.{command}"), command)


def _error(exc: BaseException) -> tuple[str, int]:
    """(message, exit status) of a failed line, as the CLI's error funnel would report it."""
    if isinstance(exc, DpcalcError):
        return str(exc), int(exc.exit_status)
    if isinstance(exc, OverflowError | ZeroDivisionError) or (
            isinstance(exc, RuntimeWarning)
            and ("overflow" in str(exc) or "divide by zero" in str(exc))):
        return ("the inputs are outside the range dpcalc can evaluate "
                f"({type(exc).__name__}); use less extreme values", int(ExitStatus.BAD_INPUT))
    return (f"internal error ({type(exc).__name__}); please report it with the line",
            int(ExitStatus.INTERNAL))


def is_question(text: str | bytes) -> bool:
    """False for a blank line or a ``#`` comment (no output line); True for any other line,
    one that is not UTF-8 included (it is answered with an error)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            return True
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith("#")


def answer_line(text: str | bytes, line: int) -> Answer | None:
    """Answer one input line, text or UTF-8 bytes (None for a blank line or a ``#`` comment)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            return Answer(line, error="the line is not UTF-8 text",
                          exit_status=int(ExitStatus.BAD_INPUT))
    if not is_question(text):
        return None
    obj: dict[str, Any] = {}
    try:
        obj = parse_line(text)
        result, status = answer(obj)
        return Answer(line, _id_json(obj), result=result, exit_status=status)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - a bad line never stops the others
        import traceback

        message, status = _error(exc)
        trace = "" if isinstance(exc, DpcalcError) else traceback.format_exc()
        return Answer(line, _id_json(obj), error=message, exit_status=status, trace=trace)


def run(lines: Iterable[str | bytes], workers: int = 1) -> Iterator[Answer]:
    """Answer each question line in order, sharing identical accountings between lines;
    ``workers`` > 1: in that many worker processes, with the same answers in the same order."""
    with answering(lines, workers) as answers:
        yield from answers


@contextmanager
def answering(lines: Iterable[str | bytes], workers: int = 1) -> Iterator[Iterator[Answer]]:
    """The answers of ``run``, as a block: with ``workers`` > 1 the worker processes start on
    entering it (``dpcalc.api._batch_workers``; in-process where they cannot) and are ended
    and reaped on leaving it, however it is left."""
    if workers > 1:
        from dpcalc.api import _batch_workers

        lines = list(lines)
        pool = _batch_workers.start(lines, workers)
        if pool is not None:
            with pool:
                yield iter(pool)
            return
    answers = _in_process(lines)
    try:
        yield answers
    finally:
        answers.close()


def _in_process(lines: Iterable[str | bytes]) -> Iterator[Answer]:
    from dpcalc.api._dpsgd_accountant import shared_accounting

    with shared_accounting():
        for number, text in enumerate(lines, 1):
            got = answer_line(text, number)
            if got is not None:
                yield got


def exit_status(statuses: Iterable[int]) -> int:
    """The batch's exit status: 2 if any line was bad, else 3 if any hit an internal error,
    else 1 if a gate failed or a target was infeasible, else 0."""
    seen = set(statuses)
    for status in (ExitStatus.BAD_INPUT, ExitStatus.INTERNAL, ExitStatus.GATE_OR_INFEASIBLE):
        if int(status) in seen:
            return int(status)
    return 0


def batch(lines: Iterable[str] | str, workers: int = 1) -> list[Answer]:
    """The Python API: answer every question of ``lines`` (a string is split into lines), in
    ``workers`` processes (1: in this one; see ``run``)."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    return list(run(lines, workers))
