"""Renderers behind one registry: ``--format human|json|value|csv`` (``--json`` and ``--value``
are the contract's aliases for two of them).

Each renderer is a module of this package with ``write(result)`` (to stdout); ``FORMATS`` maps
the format's name to that module and its one-line help. The modules are imported only when
their format is chosen, so a ``--value`` run never loads rich.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Format:
    """One output format: its ``--format`` name, the module that writes it, and its help."""

    name: str
    module: str
    help: str


#: name -> renderer, in the order ``--help`` lists them (the first is the default)
FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("human", "dpcalc.render.human", "a readable report for a terminal (the default)"),
    Format("json", "dpcalc.render.jsonout", "exactly one JSON object (alias --json)"),
    Format("value", "dpcalc.render.value", "only the solved number (alias --value)"),
    Format("csv", "dpcalc.render.csvout",
           "a header row, the answer's row (value, bracket, every parameter), then one row "
           "per compared method, for spreadsheets"),
)}
DEFAULT = "human"


def renderer(name: str):
    """The module that writes format ``name`` (a key of ``FORMATS``)."""
    return importlib.import_module(FORMATS[name].module)
