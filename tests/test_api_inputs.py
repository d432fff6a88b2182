"""The Python API and the command line answer one question when given the same text.

A float argument is the exact double it is; the command line reads text as a decimal and
rounds it to the private side (README, "Python API"): σ = 1.169 is read down to the double
below, the float 1.169 is the double above. A string argument is read as the command line
reads it, so the two answers agree bit for bit.
"""

from __future__ import annotations

import json

import dpcalc
from tests.cli_helpers import run


def test_a_string_asks_the_command_lines_question(capsys):
    out = run(capsys, "dpsgd", "--q", "0.01", "--sigma", "1.169", "--steps", "1000",
              "--delta", "1e-5", "--json")
    assert out.code == 0
    cli = json.loads(out.out)
    text = dpcalc.dpsgd(q="0.01", sigma="1.169", steps=1000, delta="1e-5")
    assert text.value == cli["value"]
    assert float(text.parameters["sigma"]) == 1.1689999999999998      # (JSON shows 1.169)
    # the float is the double above: another question, another last digit
    double = dpcalc.dpsgd(q=0.01, sigma=1.169, steps=1000, delta=1e-5)
    assert double.parameters["sigma"] == 1.169
    assert double.value != cli["value"]
    assert abs(double.value / cli["value"] - 1) < 1e-12
