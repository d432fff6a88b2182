"""``--json``: exactly one JSON object, numbers written exactly (exponent form below the double
range, which the standard ``json`` module cannot write)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from dpcalc import __version__
from dpcalc.numeric.display import json_token
from dpcalc.result import Result, is_finite


def result_object(result: Result) -> dict[str, Any]:
    """The contract's JSON object for a Result (as Python data; numbers left exact)."""
    obj: dict[str, Any] = {
        "command": result.command,
        "solved_for": result.solved_for,
        "value": result.value,
        "parameters": dict(result.parameters),
        "method": result.method,
    }
    if result.bounds is not None:
        obj["bounds"] = {"lower": result.bounds.lower, "upper": result.bounds.upper}
    obj["comparison"] = [
        {"method": c.method, result.solved_for: c.value, **c.extra,
         **({"reference": c.reference} if c.reference else {}),
         **({"note": c.note} if c.note else {})}
        for c in result.comparison
    ]
    if result.reference:
        obj["reference"] = result.reference
    if result.notes:
        obj["notes"] = list(result.notes)
    obj.update(result.extra)
    if result.gates:
        obj["gates"] = [{"name": g.name, "limit": g.limit, "value": g.value, "passed": g.passed}
                        for g in result.gates]
    obj["version"] = __version__
    return obj


def dumps(value: Any, indent: int = 2, _level: int = 0) -> str:
    """Serialise plain data; floats and Decimals through ``json_token`` (exact)."""
    pad = " " * (indent * (_level + 1))
    end = " " * (indent * _level)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{pad}{json.dumps(str(k))}: {dumps(v, indent, _level + 1)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + end + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        items = [f"{pad}{dumps(v, indent, _level + 1)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + end + "]"
    if value is None or isinstance(value, bool | str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int | float | Decimal):
        # a Result holds no NaN or inf (dpcalc.result); anything else non-finite in the
        # extras is "no value", never a crash and never a non-JSON token
        return json_token(value) if is_finite(value) else "null"
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def render(result: Result) -> str:
    """The whole ``--json`` output, newline-terminated."""
    return dumps(result_object(result)) + "\n"


def write(result: Result) -> None:
    """``--format json`` (``--json``): the object on stdout, never through rich."""
    import sys

    sys.stdout.write(render(result))
