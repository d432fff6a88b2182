"""``--value``: only the solved number, for ``$(...)`` in shell scripts."""

from __future__ import annotations

from dpcalc.numeric.display import json_token
from dpcalc.result import Result


def render(result: Result) -> str:
    """The solved value exactly as in the JSON output, newline-terminated."""
    return json_token(result.value) + "\n"


def write(result: Result) -> None:
    """``--format value`` (``--value``): the number on stdout."""
    import sys

    sys.stdout.write(render(result))
