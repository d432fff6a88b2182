"""Human renderer: golden output on a fixed Console (no colour), at 80 columns and narrow.

Issue 9, item 18: no unit broken across lines (``δ = ⏎1e-05``), reference column dropped
rather than spilled when narrow, inputs shown as given, derived values as outputs, float
noise shown as such (never rounded away, never blown up to the 5th digit); item 19: a gate
that passed says so.
"""

from __future__ import annotations

import io

import pytest

from dpcalc.render.human import make_console, render
from dpcalc.result import Bounds, Comparison, Gate, Result

DPSGD = Result(
    command="dpsgd", solved_for="epsilon", value=0.30710812345,
    parameters={"q": 0.004266666666666667, "sigma": 1.1, "epochs": 1, "steps": 235,
                "epsilon": 0.30710812345, "delta": 1e-05},
    method="pld", direction="upper", reference="Gopi, Lee & Wutschitz 2021",
    bounds=Bounds(0.30697, 0.30710812345),
    comparison=(Comparison("rdp", 0.74056, "Mironov, Talwar & Zhang 2019"),
                Comparison("moments", 1.0344, "Abadi et al. 2016"),
                Comparison("strong", 25.659, "Dwork, Rothblum & Vadhan 2010",
                           "a long note that explains why strong composition is so loose "
                           "here: steps = ⌈epochs/q⌉ = 235")),
    symbols={"q": "q", "sigma": "σ", "epsilon": "ε", "delta": "δ"},
    derived=("steps",), given={"q": "256/60000"},
    gates=(Gate("max_epsilon", "epsilon", 1.0, 0.30710812345, True),))

COMPOSE = Result(
    command="compose", solved_for="total_epsilon", value=1.0000000000000002,
    parameters={"epsilon": 0.1, "delta": 1e-08, "k": 10, "total_epsilon": 1.0000000000000002,
                "total_delta": 2.0000000000000457e-07, "delta_slack": 1e-07},
    method="basic", direction="upper", reference="Dwork & Roth 2014",
    symbols={"epsilon": "ε", "delta": "δ", "total_epsilon": "total ε",
             "total_delta": "total δ", "delta_slack": "δ'"},
    derived=("total_delta",),
    gates=(Gate("max_delta", "total_delta", 1e-07, 2.0000000000000457e-07, False),))

VACUOUS = Result(
    command="laplace", solved_for="delta", value=float("inf"),
    parameters={"scale": 1e-16, "epsilon": 1.0, "delta": float("inf"), "sensitivity": 1.0},
    method="exact", direction="upper", reference="Dwork et al. 2006",
    symbols={"scale": "b", "epsilon": "ε", "delta": "δ", "sensitivity": "Δ"})

GOLDEN_DPSGD_80 = """\
╭─ dpcalc dpsgd · pld (Gopi, Lee & Wutschitz 2021) ───────╮
│ ε ≤ 0.30711                                             │
│ certified bracket on the true value: [0.30697, 0.30711] │
╰─────────────────────────────────────────────────────────╯
inputs  q = 256/60000 ≈ 0.0042667   σ = 1.1   epochs = 1   δ = 1e-05
derived steps = 235

method              ε      vs pld    reference
pld           0.30711                Gopi, Lee & Wutschitz 2021
rdp           0.74056     +141.1%    Mironov, Talwar & Zhang 2019
moments        1.0344     +236.8%    Abadi et al. 2016
strong [1]     25.659    +8255.0%    Dwork, Rothblum & Vadhan 2010
[1] a long note that explains why strong composition is so loose here:
    steps = ⌈epochs/q⌉ = 235
gate --max-epsilon 1: passed (ε ≤ 0.30711 ≤ 1)
"""

GOLDEN_DPSGD_40 = """\
╭─ dpcalc dpsgd · pld ─────────────────╮
│ ε ≤ 0.30711                          │
│ certified bracket on the true value: │
│ [0.30697, 0.30711]                   │
╰──────────────────────────────────────╯
inputs  q = 256/60000 ≈ 0.0042667
        σ = 1.1   epochs = 1   δ = 1e-05
derived steps = 235

method              ε      vs pld
pld           0.30711
rdp           0.74056     +141.1%
moments        1.0344     +236.8%
strong [1]     25.659    +8255.0%
[1] a long note that explains why strong
    composition is so loose here:
    steps = ⌈epochs/q⌉ = 235
gate --max-epsilon 1:
      passed (ε ≤ 0.30711 ≤ 1)
"""

GOLDEN_COMPOSE_80 = """\
╭─ dpcalc compose · basic (Dwork & Roth 2014) ─╮
│ total ε ≤ 1 (+2.3e-16)                       │
╰──────────────────────────────────────────────╯
inputs  ε = 0.1   δ = 1e-08   k = 10   δ' = 1e-07
derived total δ ≤ 2e-7 (+4.6e-21)
gate --max-delta 1e-07: FAILED (total δ ≤ 2e-7 (+4.6e-21), above 1e-07)
"""

GOLDEN_VACUOUS_80 = """\
╭─ dpcalc laplace · exact (Dwork et al. 2006) ─╮
│ δ ≤ 1                                        │
╰──────────────────────────────────────────────╯
inputs  b = 1e-16   ε = 1   Δ = 1
note: δ = 1: no guarantee (the bound is vacuous)
"""


def show(result: Result, width: int) -> str:
    buf = io.StringIO()
    console = make_console(file=buf, width=width)
    assert console.color_system is None  # not a terminal: no colour codes
    render(result, console)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"


@pytest.mark.parametrize("result,width,golden", [
    (DPSGD, 80, GOLDEN_DPSGD_80), (DPSGD, 40, GOLDEN_DPSGD_40),
    (DPSGD, 0, GOLDEN_DPSGD_40), (DPSGD, 1, GOLDEN_DPSGD_40),  # absurd widths: the minimum
    (COMPOSE, 80, GOLDEN_COMPOSE_80), (VACUOUS, 80, GOLDEN_VACUOUS_80),
], ids=["dpsgd-80", "dpsgd-40", "dpsgd-0", "dpsgd-1", "compose-80", "vacuous-80"])
def test_golden(result, width, golden):
    assert show(result, width) == golden


def test_units_keep_relations_whole():
    from dpcalc.render.human import units, wrap

    pieces = units("note: steps = ⌈epochs/q⌉ = 235 and δ ≤ 2e-7 (+4.6e-21) here")
    assert pieces == ["note:", "steps = ⌈epochs/q⌉ = 235", "and", "δ ≤ 2e-7 (+4.6e-21)", "here"]
    assert wrap(["a" * 50, "δ = 1e-05"], 40) == "a" * 50 + "\nδ = 1e-05"


def test_orders_without_a_finite_bound_say_so():
    result = Result(
        command="rdp", solved_for="delta", value=1.0,
        parameters={"sigma": 1e-300, "q": 0.5, "steps": 10, "epsilon": 0.2, "delta": 1.0},
        method="improved", direction="upper",
        extra={"alpha": 2.0, "orders": [{"alpha": 1.5, "rdp": None, "epsilon": None},
                                        {"alpha": 2.0, "rdp": None, "epsilon": None}]})
    text = show(result, 80)
    assert "no bound" in text
    assert "inf" not in text.lower()


def test_a_fallback_answer_lists_its_method_once():
    # the PLD could not certify: the answer is RDP's, and RDP's comparison row repeated it
    # ("rdp 0.5361 same") under the answer's own "rdp 0.5361" row
    import dataclasses

    fallback = dataclasses.replace(
        DPSGD, method="rdp", value=0.5361, bounds=None,
        comparison=(Comparison("rdp", 0.5361, "Mironov, Talwar & Zhang 2019"),
                    Comparison("moments", 9.3581, "Abadi et al. 2016")),
        notes=("the PLD grid cannot certify this δ; the answer is the RDP accountant's",))
    lines = show(fallback, 80).splitlines()
    assert sum(line.split()[:1] == ["rdp"] for line in lines) == 1
    assert sum(line.split()[:1] == ["moments"] for line in lines) == 1
    # a solve on the PLD's path stops at its own resolution: the fallback's own row can
    # differ below the digits shown, and is still the answer's row
    close = dataclasses.replace(fallback, value=0.536121, comparison=(
        Comparison("rdp", 0.536123, "Mironov, Talwar & Zhang 2019"),
        Comparison("moments", 9.3581, "Abadi et al. 2016")))
    lines = show(close, 80).splitlines()
    assert sum(line.split()[:1] == ["rdp"] for line in lines) == 1
    # a different value in the digits shown is a row of its own
    apart = dataclasses.replace(fallback, value=0.53612, comparison=(
        Comparison("rdp", 0.5371, "Mironov, Talwar & Zhang 2019"),))
    assert sum(line.split()[:1] == ["rdp"] for line in show(apart, 80).splitlines()) == 2
