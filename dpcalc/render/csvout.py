"""``--format csv``: the answer as a small table for spreadsheets and csvkit.

Layout (RFC 4180, comma-separated, ``\\r\\n`` line ends as the ``csv`` module writes them,
UTF-8; fields quoted only when they need it):

- a header row: ``row,command,solved_for,method,value,lower,upper``, then one column per
  parameter of the relation (the JSON ``parameters`` keys, in their order), then
  ``reference,note``;
- the answer's row (``row`` = ``answer``): the solved value, the certified bracket
  (``lower``/``upper``, empty when the method does not bracket) and every parameter;
- one row per compared method (``row`` = ``comparison``): its value of the same unknown, in
  ``value`` and in the solved parameter's column; the inputs repeated, so each row stands alone
  (``csvgrep -c row -m answer`` keeps the answer); a derived output the method does not report
  is empty.

Numbers are written exactly as in ``--json`` (never shortened, so ``value`` is the number
``--value`` prints); a value below the double range keeps its exponent form (``1e-400``).
Gates, the risk table and ``--curve`` are not part of the CSV; use ``--format json`` for them.
"""

from __future__ import annotations

from dpcalc.numeric.display import json_token
from dpcalc.result import Result

FIXED = ("row", "command", "solved_for", "method", "value", "lower", "upper")
TRAILING = ("reference", "note")


def _cell(x) -> str:
    if x is None:
        return ""
    if isinstance(x, bool | str):
        return str(x).lower() if isinstance(x, bool) else x
    return json_token(x)


def rows(result: Result) -> list[list[str]]:
    """The table as lists of cells, header first."""
    keys = list(result.parameters)
    header = [*FIXED, *keys, *TRAILING]
    bounds = result.bounds
    answer = ["answer", result.command, result.solved_for, result.method, _cell(result.value),
              _cell(bounds.lower if bounds else None), _cell(bounds.upper if bounds else None),
              *(_cell(result.parameters[k]) for k in keys),
              result.reference, "; ".join(result.notes)]
    out = [header, answer]
    outputs = set(result.derived)
    for c in result.comparison:
        params = []
        for k in keys:
            if k == result.solved_for:
                params.append(_cell(c.value))
            elif k in c.extra:
                params.append(_cell(c.extra[k]))
            else:
                params.append("" if k in outputs else _cell(result.parameters[k]))
        out.append(["comparison", result.command, result.solved_for, c.method, _cell(c.value),
                    "", "", *params, c.reference, c.note])
    return out


def render(result: Result) -> str:
    """The whole CSV output."""
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf).writerows(rows(result))
    return buf.getvalue()


def write(result: Result) -> None:
    """``--format csv``: the table on stdout."""
    import sys

    sys.stdout.write(render(result))
