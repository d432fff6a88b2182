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


def test_pld_falls_back_to_the_tighter_of_rdp_and_strong_and_says_so(monkeypatch):
    """The one fallback policy: an uncertifiable PLD answer is the tightest of the RDP and
    strong-composition accountants' at that point, named as such (method and note), never
    silently.  Here RDP's is the tighter."""
    import importlib

    from dpcalc.relations import pld

    dpsgd = importlib.import_module("dpcalc.api.dpsgd").dpsgd

    assert FALLBACK == {"pld": ("rdp", "strong")}
    rdp = dpsgd(q=0.01, sigma=4, epochs=10, delta=1e-5, accountant="rdp", compare=False)
    strong = dpsgd(q=0.01, sigma=4, epochs=10, delta=1e-5, accountant="strong",
                   compare=False)

    def refuse(*args, **kwargs):
        raise pld.PLDUncertifiable("test")

    monkeypatch.setattr(pld, "epsilon_bounds", refuse)
    result = dpsgd(q=0.01, sigma=4, epochs=10, delta=1e-5, compare=False)
    assert rdp.value < strong.value
    assert result.method == "rdp" and result.bounds is None
    assert result.value == rdp.value
    assert any("cannot certify" in n and "RDP accountant's" in n for n in result.notes)


# below the PLD's smallest rate (q < 1e-12) at δ ~ 1e-138: RDP's conversion needs orders
# beyond its grid, and strong composition [DRV10] answers 220 orders of magnitude tighter
TINY = {"sigma": 0.9082, "steps": 84576}


@pytest.mark.parametrize("question", [{"epsilon": 0.3538, "delta": 6.939e-139},
                                      {"q": 1e-16, "delta": 6.939e-139},
                                      {"q": 1e-16, "epsilon": 0.36}])
def test_strong_composition_answers_where_it_is_the_tighter_fallback(question):
    """q, ε and δ asked below the PLD's range: the answer is strong composition's, which is
    tighter than RDP's there, and the note and method say so."""
    import importlib

    dpsgd = importlib.import_module("dpcalc.api.dpsgd").dpsgd
    args = {**TINY, **question}
    result = dpsgd(**args, compare=False)
    strong = dpsgd(**args, accountant="strong", compare=False)
    rdp = dpsgd(**args, accountant="rdp", compare=False)
    assert result.method == "strong" and result.bounds is None
    if result.solved_for == "q":
        # the PLD's q search stops at its own resolution (2e-5, _solve_one), on the safe side
        assert strong.value * (1.0 - 3e-5) <= result.value <= strong.value
    else:
        assert result.value == strong.value
    tighter = rdp.value > strong.value if result.solved_for == "q" else rdp.value < \
        strong.value
    assert not tighter               # strong's answer is the better one here ...
    assert rdp.value != strong.value
    assert any("cannot certify" in n and "strong composition's" in n for n in result.notes)
    assert result.reference == strong.reference


def test_the_fallback_answer_is_the_same_in_every_output_mode():
    """One solve, then render: --value, --json and the human output carry strong
    composition's answer (and name it), through the real entry point."""
    import json
    import subprocess
    import sys

    args = [sys.executable, "-m", "dpcalc", "dpsgd", "--sigma", "0.9082", "--steps", "84576",
            "--epsilon", "0.3538", "--delta", "6.939e-139"]
    value = subprocess.run([*args, "--value"], capture_output=True, text=True, check=True)
    doc = json.loads(subprocess.run([*args, "--json"], capture_output=True, text=True,
                                    check=True).stdout)
    human = subprocess.run(args, capture_output=True, text=True, check=True,
                           env={**__import__("os").environ, "COLUMNS": "80"}).stdout
    assert float(value.stdout) == doc["value"] == doc["parameters"]["q"]
    assert doc["method"] == "strong"
    assert "dpcalc dpsgd · strong" in human and "q ≤ 9.8257e-17" in human


def test_a_curve_the_pld_cannot_certify_follows_the_fallback_policy_at_each_point(
        monkeypatch):
    """--curve under the fallback policy: each epoch's ε is the smaller of RDP's and strong
    composition's there (RDP's at these δ, as in every epoch-sized run: strong composition
    is only the tighter at rates far below 1e-8)."""
    import importlib
    import math

    from dpcalc.relations import dpsgd as rel
    from dpcalc.relations import pld

    dpsgd = importlib.import_module("dpcalc.api.dpsgd").dpsgd

    def refuse(*args, **kwargs):
        raise pld.PLDUncertifiable("test")

    for name in ("epsilon_curve", "epsilon_bounds", "epsilon_upper"):
        monkeypatch.setattr(pld, name, refuse)
    result = dpsgd(q=0.01, sigma=1.0, epochs=5, delta=1e-5, curve=True, compare=False)
    assert result.method == "rdp"
    log_d = math.log(1e-5)
    for point in result.extra["curve"]:
        rdp = rel.rdp_epsilon(0.01, 1.0, point["steps"], log_d)[0]
        strong = rel.strong_epsilon(0.01, 1.0, point["steps"], log_d)[0]
        assert point["epsilon"] == min(rdp, strong)


def test_a_delta_far_below_the_double_range_is_strong_compositions_answer():
    """δ asked at q 2e-57: strong composition certifies δ ≤ 2.3e-540, far below RDP's 1e-27;
    its δ search runs on −log δ (on δ itself it underflowed to log(0), and the fallback
    then answered with RDP's, calling it the tighter: review, helper-45)."""
    import importlib
    import math

    from dpcalc.relations import dpsgd as rel

    api = importlib.import_module("dpcalc.api.dpsgd")
    acc = api.Accountant("pld", 1e-3)
    log_delta, _ = acc.log_delta(2e-57, 0.4, 100000, 1.4)
    assert acc.fallback_note.method == "strong"
    assert "the tighter of the RDP and strong-composition bounds" in acc.fallback_note
    assert -1250.0 < log_delta < math.log(1e-300)
    assert rel.strong_epsilon(2e-57, 0.4, 100000, log_delta)[0] <= 1.4
    assert log_delta < rel.rdp_log_delta(2e-57, 0.4, 100000, 1.4)


def test_a_fallback_that_gives_no_bound_is_named_not_called_looser(monkeypatch):
    import importlib
    import math

    from dpcalc.errors import NumericalError
    from dpcalc.relations import dpsgd as rel

    api = importlib.import_module("dpcalc.api.dpsgd")

    def broken(*args):
        raise ValueError("test")

    monkeypatch.setattr(rel, "rdp_epsilon", broken)
    acc = api.Accountant("pld", 1e-3)
    eps, _ = acc.epsilon(1e-16, 0.9082, 84576, math.log(6.939e-139))
    assert acc.fallback_note.method == "strong"
    assert "the RDP accountant gave no bound here" in acc.fallback_note
    assert "tighter" not in acc.fallback_note
    assert eps == rel.strong_epsilon(1e-16, 0.9082, 84576, math.log(6.939e-139))[0]
    monkeypatch.setattr(rel, "strong_epsilon", lambda *args: (math.nan, math.nan))
    with pytest.raises(ValueError, match="test"):      # the first fallback's own error
        api.Accountant("pld", 1e-3).epsilon(1e-16, 0.9082, 84576, math.log(1e-100))
    monkeypatch.setattr(rel, "rdp_epsilon", lambda *args: (math.nan, math.nan))
    with pytest.raises(NumericalError, match="no fallback"):
        api.Accountant("pld", 1e-3).epsilon(1e-16, 0.9082, 84576, math.log(1e-100))


def test_a_curve_below_the_pld_rates_ends_on_the_fallback_answer():
    """--curve at q 1e-16: the curve follows the same policy as the answer (the PLD's own
    curve there ignored its rate limit and ended 1000 times below the answer: review)."""
    import importlib

    dpsgd = importlib.import_module("dpcalc.api.dpsgd").dpsgd
    r = dpsgd(q=1e-16, sigma=0.9082, steps=84576, delta=6.939e-139, curve=True,
              compare=False)
    assert r.method == "strong"
    assert r.extra["curve"][-1]["epsilon"] == r.value


@pytest.mark.parametrize("q,sigma,steps,eps", [
    (0.01, 5.0, 10000, 1.0), (0.1, 10.0, 100, 1.0), (0.0008672, 76.75, 1525, 3.813),
    (1e-5, 50.0, 10, 0.01),
])
def test_strong_delta_solve_is_tight_with_few_evaluations(monkeypatch, q, sigma, steps, eps):
    """The strong-composition δ solve (a δ question's comparison row, and the fallback far
    below the double range: random case 163 of benchmarks/bench_dpsgd_random.py) is seeded
    by a secant on log(−log δ): 10-14 evaluations of the optimised ε where the bisection
    from scratch took 43-51 (each a minimisation over the δ split)."""

    from dpcalc.accountants import dpsgd as acc_mod
    from dpcalc.relations import dpsgd as rel

    real = rel.strong_epsilon
    calls = []

    def counted(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(rel, "strong_epsilon", counted)
    log_delta, _ = acc_mod.STRONG.log_delta(q, sigma, steps, eps, 1e-3)
    assert len(calls) <= 16, len(calls)
    u = -log_delta
    assert real(q, sigma, steps, -u)[0] <= eps                      # the answer passes
    assert real(q, sigma, steps, -u * (1 + 1e-11))[0] > eps         # and is tight
