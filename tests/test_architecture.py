"""Architecture checks: the CLI and renderers stay light; every relation cites the bibliography."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import dpcalc.relations
from dpcalc.references import REFS

ROOT = Path(dpcalc.relations.__file__).parent.parent
HEAVY = {"numpy", "scipy", "mpmath"}


def _top_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:  # module level only: lazy imports inside functions are the point
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", sorted((ROOT / "cli").glob("*.py")) + sorted(
    (ROOT / "render").glob("*.py")) + sorted((ROOT / "api").glob("*.py")), ids=str)
def test_front_end_does_not_import_heavy_modules_at_top_level(path):
    assert not (_top_level_imports(path) & HEAVY)


@pytest.mark.parametrize("path", sorted((ROOT / "cli").glob("*.py")) + sorted(
    (ROOT / "render").glob("*.py")), ids=str)
def test_front_end_does_not_import_relations(path):
    text = path.read_text()
    assert "dpcalc.relations" not in text


def _relation_functions():
    for info in pkgutil.iter_modules(dpcalc.relations.__path__):
        module = importlib.import_module(f"dpcalc.relations.{info.name}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ == module.__name__ and not name.startswith("_"):
                yield f"{info.name}.{name}", fn


@pytest.mark.parametrize("name,fn", list(_relation_functions()), ids=lambda v: str(v)[:60])
def test_every_public_relation_cites_a_known_reference(name, fn):
    doc = inspect.getdoc(fn) or ""
    module_doc = inspect.getdoc(inspect.getmodule(fn)) or ""
    keys = set(re.findall(r"\b([A-Z][A-Za-z]*\d{2})\b", doc + " " + module_doc)) | set(
        re.findall(r"\b(UBC)\b", doc + " " + module_doc))
    assert keys, f"{name} cites no reference"
    unknown = {k for k in keys if k not in REFS}
    assert not unknown, f"{name} cites unknown keys {unknown}"


COMMAND_MODULES = ("gaussian", "laplace", "compose", "subsample", "rdp", "dpsgd")


@pytest.mark.parametrize("name", COMMAND_MODULES)
def test_command_modules_register_nothing_by_import(name):
    """A command module defines its function and imports nothing from ``dpcalc.cli`` itself
    (no ``app``): ``dpcalc.cli.REGISTRY`` adds it explicitly."""
    tree = ast.parse((ROOT / "cli" / f"{name}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "dpcalc.cli":
            pytest.fail(f"dpcalc/cli/{name}.py imports {[a.name for a in node.names]} from "
                        "dpcalc.cli")
        if isinstance(node, ast.FunctionDef):
            assert not node.decorator_list, f"{node.name} is registered by a decorator"


def test_commands_are_registered_explicitly_in_contract_order():
    import typer

    import dpcalc.cli as cli

    names = [name for name, _ in cli.REGISTRY]
    assert names == list(COMMAND_MODULES) == list(cli.COMMANDS)
    group = typer.main.get_command(cli.app)
    assert list(group.commands) == names
    for name, function in cli.REGISTRY:
        assert function.__module__ == f"dpcalc.cli.{name}"
        assert group.commands[name].callback is function or (
            getattr(group.commands[name].callback, "__wrapped__", None) is function)


def _sources():
    return sorted(p for p in ROOT.rglob("*.py"))


def test_float_constants_are_defined_once_in_numeric():
    """The unit round-off, machine epsilon and smallest double are defined in
    dpcalc/numeric/directed.py only; every other module imports them."""
    literal = re.compile(r"2(\.0)?\s*\*\*\s*-5[23]\b|math\.ulp\(0(\.0)?\)")
    owner = ROOT / "numeric" / "directed.py"
    offenders = [str(p.relative_to(ROOT)) for p in _sources()
                 if p != owner and literal.search(p.read_text())]
    assert not offenders, f"define these through dpcalc.numeric.directed: {offenders}"


def test_directed_rounding_helpers_are_not_redefined():
    """``_up`` once meant one ulp up (compose, subsample) and a relative enlargement (rdp);
    they are now ``numeric.directed.up`` and ``numeric.directed.inflate``, defined once."""
    for path in _sources():
        tree = ast.parse(path.read_text())
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert not defined & {"_up", "_down"}, path
