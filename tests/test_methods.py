"""The method/accountant registries (dpcalc.methods) are the one list: the API's accepted
names, the CLI help, shell completion, the JSON schema's enums and README.md's method table
all agree with them; "pld falls back to rdp" is the one fallback, and it says so."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dpcalc.methods import COMPOSE, DPSGD, FALLBACK, GAUSSIAN, REGISTRIES
from dpcalc.references import REFS

ROOT = Path(__file__).resolve().parent.parent
ITEMS = sorted(REGISTRIES.items())


@pytest.mark.parametrize("key,registry", ITEMS, ids=lambda v: str(v))
def test_every_entry_cites_a_known_reference_and_loads(key, registry):
    for method in registry.values():
        assert method.reference in REFS, method
        if method.implementation:
            assert method.load() is not None


def _schema_method_enum(command: str) -> list[str]:
    schema = json.loads((ROOT / "schema" / "dpcalc-output.schema.json").read_text())
    for branch in schema["allOf"]:
        cond = branch.get("if", {}).get("properties", {}).get("command", {})
        if cond.get("const") == command and "method" in branch["then"]["properties"]:
            return branch["then"]["properties"]["method"]["enum"]
    raise AssertionError(f"the schema has no method enum for {command}")


@pytest.mark.parametrize("key,registry", ITEMS, ids=lambda v: str(v))
def test_schema_method_enum_is_the_registry(key, registry):
    assert sorted(_schema_method_enum(key[0])) == sorted(registry.reported)


@pytest.mark.parametrize("key,registry", ITEMS, ids=lambda v: str(v))
def test_completion_and_help_offer_the_registry(key, registry):
    import typer

    from dpcalc.cli import app
    from dpcalc.cli._completion import choices

    command, option = key
    assert choices(command, option) == registry.names
    param = next(p for p in typer.main.get_command(app).commands[command].params
                 if option in p.opts)
    assert param.default == registry.names[0]
    listed = re.findall(r"(?:^|\| )([a-z-]+)", param.help)
    assert tuple(listed) == registry.names, param.help
    assert REFS[registry[registry.names[0]].reference].short in param.help


def test_the_api_accepts_exactly_the_registry_names():
    import importlib

    compose = importlib.import_module("dpcalc.api.compose")
    dpsgd = importlib.import_module("dpcalc.api.dpsgd")
    from dpcalc.relations import dpsgd as rel_dpsgd
    from dpcalc.relations import gaussian as rel_gaussian

    assert rel_gaussian.METHODS == GAUSSIAN.names
    assert compose.METHODS == COMPOSE.names
    assert dpsgd.ACCOUNTANTS == rel_dpsgd.ACCOUNTANTS == DPSGD.names
    for name in GAUSSIAN.names:
        assert rel_gaussian.log_delta(name, 2.0, 1.0) <= 0
    with pytest.raises(ValueError):
        rel_gaussian.log_delta("tradeoff", 2.0, 1.0)


def _readme_table() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## How exact is each method", 1)[1]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3 and not set(cells[0]) <= {"-"}:
            rows.append((cells[0], cells[2]))
    return rows[1:]  # the header row


@pytest.mark.parametrize("key,registry", ITEMS, ids=lambda v: str(v))
def test_readme_method_table_lists_every_entry_with_its_reference(key, registry):
    command = key[0]
    for method in registry.values():
        if not method.selectable and method.name == "tradeoff":
            continue  # a --tpr target's curve, documented with --tpr, not a --method
        rows = [ref for first, ref in _readme_table()
                if first.split()[0] == command
                and method.name in re.split(r"[ /]+", first.split(" ", 1)[1])]
        assert rows, f"README.md's method table has no row for {command} {method.name}"
        assert str(REFS[method.reference].year) in rows[0], (command, method.name, rows[0])


def test_pld_falls_back_to_rdp_and_says_so(monkeypatch):
    """The one fallback policy: an uncertifiable PLD answer is the RDP accountant's, named as
    such (method and note), never silently."""
    import importlib

    from dpcalc.relations import pld

    dpsgd = importlib.import_module("dpcalc.api.dpsgd").dpsgd

    assert FALLBACK == {"pld": "rdp"}
    rdp = dpsgd(q=0.01, sigma=4, epochs=10, delta=1e-5, accountant="rdp", compare=False)

    def refuse(*args, **kwargs):
        raise pld.PLDUncertifiable("test")

    monkeypatch.setattr(pld, "epsilon_bounds", refuse)
    result = dpsgd(q=0.01, sigma=4, epochs=10, delta=1e-5, compare=False)
    assert result.method == "rdp" and result.bounds is None
    assert result.value == rdp.value
    assert any("cannot certify" in n and "RDP" in n for n in result.notes)
