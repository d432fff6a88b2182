"""A curve ends on the answer's ε whichever unknown was solved.

Before: only an ε question clamped the curve's last point; a δ solve at ε 2 (--curve) ended
on 2.0012 (default run) and 2.00028 (K = 3; helper-52): the ε read back at the solved δ,
a looser bound of the same run, shown above the target the answer certifies.
"""

from __future__ import annotations

import pytest

from tests.cli_helpers import run

RUN = ["--q", "0.01", "--epochs", "5"]


@pytest.mark.parametrize("scheme", [[], ["--examples-per-user", "3"],
                                    ["--relation", "replace-one"]], ids=str)
@pytest.mark.parametrize("given", [["--sigma", "1", "--epsilon", "2"],
                                   ["--epsilon", "2", "--delta", "1e-5"]], ids=str)
def test_the_curve_ends_on_the_target_the_answer_certifies(capsys, scheme, given):
    r = run(capsys, "dpsgd", *scheme, *RUN, *given, "--curve", "--json")
    assert r.code == 0, r.err
    last = r.json["curve"][-1]
    assert last["steps"] == r.json["parameters"]["steps"]
    assert last["epsilon"] == 2.0
    assert all(p["epsilon"] <= 2.0 for p in r.json["curve"])
    if "lower" in last:
        assert last["lower"] <= 2.0
