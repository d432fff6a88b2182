"""The methods and accountants of each command: one registry per choice option.

Each registry lists, in the order ``--help`` shows them (the default first), the names an
option accepts, with the bibliography key of each (``dpcalc.references.REFS``), a one-line
help, and where the implementation lives (``module:attribute``, imported only when used, so
this module stays light enough for the CLI's start-up). The CLI help, shell completion, the
JSON schema's ``method`` enums and README.md's method table are all checked against these
lists (tests/test_methods.py); the relations and the API take their name tuples from here.

Adding a method is one entry here plus its implementation.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Method:
    """One method (or accountant) of a command.

    ``selectable`` is False for a method a result may report but the option does not take
    (gaussian ``tradeoff``, the exact curve of a ``--tpr`` target; compose ``pld``, which
    only a plan given with ``--from`` uses).
    """

    name: str
    reference: str  # a key of dpcalc.references.REFS
    help: str
    implementation: str = ""  # "module:attribute"
    selectable: bool = True

    def load(self):
        """The implementation object (imported now)."""
        module, _, attribute = self.implementation.partition(":")
        return getattr(importlib.import_module(module), attribute)


class Registry(dict):
    """name -> Method, in declaration order."""

    def __init__(self, option: str, *methods: Method):
        super().__init__((m.name, m) for m in methods)
        self.option = option

    @property
    def names(self) -> tuple[str, ...]:
        """The names the option accepts (``check_choice``, completion), default first."""
        return tuple(m.name for m in self.values() if m.selectable)

    @property
    def reported(self) -> tuple[str, ...]:
        """Every name a result's ``method`` may hold (the JSON schema's enum)."""
        return tuple(self)

    @property
    def references(self) -> dict[str, str]:
        """name -> bibliography key."""
        return {m.name: m.reference for m in self.values()}

    def help_text(self, tail: str = "") -> str:
        """``a (what, Authors Year) | b | ...`` for the option's help, then ``tail``."""
        from dpcalc.references import REFS

        first, *rest = [m for m in self.values() if m.selectable]
        head = f"{first.name} ({first.help}, {REFS[first.reference].short})"
        return " | ".join([head, *(m.name for m in rest)]) + (tail or ".")


_G = "dpcalc.relations.gaussian"
GAUSSIAN = Registry(
    "--method",
    Method("analytic", "BW18", "exact", f"{_G}:analytic_log_delta"),
    Method("classic", "DR14", "σ = Δ√(2 ln(1.25/δ))/ε, valid only for ε < 1",
           f"{_G}:classic_log_delta"),
    Method("chernoff", "Che19", "tail-bound family", f"{_G}:chernoff_log_delta"),
    Method("rdp", "CKS20", "Gaussian RDP, improved conversion", f"{_G}:rdp_log_delta"),
    Method("zcdp", "CKS20", "zCDP (Bun & Steinke 2016), optimal-order conversion",
           f"{_G}:zcdp_log_delta"),
    Method("tradeoff", "DRS19", "exact trade-off curve of a --tpr target", selectable=False),
)

_C = "dpcalc.api.compose"
COMPOSE = Registry(
    "--method",
    Method("optimal", "KOV15", "exact", f"{_C}:_Composition"),
    Method("advanced", "DRV10", "advanced composition", f"{_C}:_Composition"),
    Method("basic", "DR14", "Σε, Σδ", f"{_C}:_Composition"),
    Method("pld", "KJH20", "one certified PLD of a --from plan", "dpcalc.api.plan:compose_plan",
           selectable=False),
)

_A = "dpcalc.accountants.dpsgd"
DPSGD = Registry(
    "--accountant",
    Method("pld", "GLW21", "certified bracket", f"{_A}:PLD"),
    Method("rdp", "MTZ19", "RDP, improved conversion", f"{_A}:RDP"),
    Method("moments", "ACGMMTZ16", "moments accountant, integer λ ≤ 32", f"{_A}:MOMENTS"),
    Method("strong", "DRV10", "per-step Gaussian, amplified, advanced composition",
           f"{_A}:STRONG"),
    Method("shuffle", "DRS19", "--sampling shuffle: no-amplification upper bound beside the "
           "attack's lower bound", "dpcalc.api.dpsgd_shuffle:solve_shuffle", selectable=False),
)

#: The one fallback policy. When an accountant cannot certify its answer (it raises
#: ``dpcalc.accountants.dpsgd.uncertifiable()``: the PLD grid cannot reach the asked δ or
#: rate), the answer at each point is the tightest of the accountants named here (each one's
#: ε or δ is an upper bound, so the smallest is one too), and the output says so (a note,
#: and ``method`` names the accountant that answered). No other accountant or method falls
#: back.  (RDP alone was 220 orders of magnitude looser than strong composition at q ~ 1e-16,
#: δ ~ 1e-138: its conversion needs orders beyond its grid there.)
FALLBACK = {"pld": ("rdp", "strong")}

#: (command, option) -> registry: what the CLI help, completion, schema and README check.
REGISTRIES: dict[tuple[str, str], Registry] = {
    ("gaussian", "--method"): GAUSSIAN,
    ("compose", "--method"): COMPOSE,
    ("dpsgd", "--accountant"): DPSGD,
}
