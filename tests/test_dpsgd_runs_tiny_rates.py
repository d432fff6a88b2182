"""The other sampling schemes at rates their grid cannot resolve (q ≲ 1e-9).

Before: K = 2 exited 1 ("the PLD grid cannot certify this run") from q = 1e-10; replace-one
answered ε 0.05-2 where the examples are sampled with probability below δ (ε = 0 exactly);
q = 1e-300 exited 2 (OverflowError) or 3 (IndexError in the fixed-batch comparison row); σ
solves at q = 1e-150 exited 2 on their own answer σ = 0 (K = 2) or ran past a minute.
"""

from __future__ import annotations

import math

import mpmath
import pytest

from dpcalc.api.dpsgd_runs import Scheme, _Pld
from tests.cli_helpers import run

SCHEMES = [["--examples-per-user", "2"], ["--relation", "replace-one"],
           ["--sampling", "fixed-batch"], ["--relation", "replace-one",
                                          "--examples-per-user", "3"]]


def _json(capsys, *args):
    r = run(capsys, "dpsgd", *args, "--json")
    assert r.code == 0, r.err
    return r.json


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
@pytest.mark.parametrize("q", ["1e-10", "1e-40", "1e-300"])
def test_examples_sampled_with_probability_below_delta_give_epsilon_zero(capsys, scheme, q):
    out = _json(capsys, *scheme, "--q", q, "--sigma", "1", "--steps", "1000",
                "--delta", "1e-5")
    assert out["value"] == 0 and out["bounds"]["upper"] == 0
    assert any("ε = 0 exactly" in n for n in out["notes"])


@pytest.mark.parametrize("k,q,steps", [(1, 1e-9, 10_000), (2, 3e-7, 17), (5, 1e-300, 10**10),
                                       (3, 0.2, 4), (1, 1.0, 3)])
def test_participation_is_rounded_up(k, q, steps):
    acc = _Pld(Scheme("poisson", "add-remove", k), 1e-3)
    got = acc.log_participation(q, steps)
    with mpmath.workdps(60):
        exact = mpmath.log(-mpmath.expm1(k * steps * mpmath.log1p(-mpmath.mpf(q))))
    assert got >= float(exact) and got - float(exact) <= 1e-9


def test_k_examples_past_the_grid_take_the_one_example_bound(capsys):
    # q = 1e-10, 1e8 steps: sampled with probability 0.02 > δ, the K = 2 grid cannot be
    # placed; the answer is the K = 1 run at p = 1 − (1 − q)², σ/2 (sound), said so
    out = _json(capsys, "--examples-per-user", "2", "--q", "1e-10", "--sigma", "1",
                "--steps", "100000000", "--delta", "1e-5")
    assert any("one-example pair" in n for n in out["notes"])
    one = _json(capsys, "--q", repr(-math.expm1(2 * math.log1p(-1e-10))), "--sigma", "0.5",
                "--steps", "100000000", "--delta", "1e-5")
    # (the same bound, up to the few ulps p and σ/K are rounded by and the grids they give)
    assert 0 < float(out["value"]) == pytest.approx(float(one["value"]), rel=1e-3)
    assert out["value"] >= one["bounds"]["lower"]


@pytest.mark.parametrize("scheme", SCHEMES[:3], ids=str)
def test_sigma_solves_at_an_absurd_rate_answer_the_floor(capsys, scheme):
    out = _json(capsys, *scheme, "--q", "1e-150", "--steps", "1000", "--epsilon", "1",
                "--delta", "1e-5")
    assert out["solved_for"] == "sigma"
    assert 1e-3 <= out["value"] <= 1.001e-3
    assert any("smallest noise" in n for n in out["notes"])


def test_fixed_batch_comparison_row_at_an_absurd_rate(capsys):
    out = _json(capsys, "--sampling", "fixed-batch", "--q", "1e-300", "--sigma", "1",
                "--steps", "1000", "--delta", "1e-5")
    row = [c for c in out["comparison"] if c["method"] == "poisson-accounting"]
    assert len(row) == 1 and 0 <= row[0]["epsilon"] < 1e-290


def test_q_solve_that_probes_q_one(capsys, monkeypatch):
    # (q = 1: log1p(−1) in the participation check raised; and the cheap bound lies 0.75 %
    # above the full one here: the guess moved by Newton + secant on the full bound, the
    # solve makes 6 full evaluations, not 16 (12.5 s on the parent of this change))
    from dpcalc.pld import accountant

    calls = []
    bounds = accountant.epsilon_bounds
    monkeypatch.setattr(accountant, "epsilon_bounds",
                        lambda *a, **k: calls.append(a[0][0][0]) or bounds(*a, **k))
    out = _json(capsys, "--examples-per-user", "2", "--sigma", "1", "--steps", "1000",
                "--epsilon", "0.5", "--delta", "1e-5")
    assert 0 < out["value"] < 0.01
    assert len([c for c in calls if c.key()[1] < 1.0]) <= 6
    forward = _json(capsys, "--examples-per-user", "2", "--sigma", "1", "--steps", "1000",
                    "--q", str(out["value"]), "--delta", "1e-5")
    assert forward["value"] <= 0.5


@pytest.mark.parametrize("steps", ["1000", "1000000"])
def test_default_run_sampled_below_delta_is_exactly_zero(capsys, steps):
    # q = 1e-12 (the PLD's lowest rate): the grid answered 5e-4 at 1000 steps and 0.71 at
    # 10⁶ (sound, far from the truth 0); the example is sampled with probability ≤ 1e-6 < δ
    for args in (["--value"], ["--json"]):
        r = run(capsys, "dpsgd", "--q", "1e-12", "--sigma", "1", "--steps", steps,
                "--delta", "1e-5", *args)
        assert r.code == 0, r.err
        value = r.json["value"] if args == ["--json"] else float(r.out)
        assert value == 0
    # sampled with probability above δ: the grid answers, above 0
    out = _json(capsys, "--q", "1e-3", "--sigma", "1", "--steps", "1000", "--delta", "1e-5")
    assert out["value"] > 0


@pytest.mark.parametrize("args", [
    ["--examples-per-user", "2", "--q", "1e-40", "--sigma", "1.5", "--delta", "1e-100"],
    ["--examples-per-user", "2", "--q", "1e-100", "--sigma", "0.5", "--epsilon", "1.2"],
    ["--sampling", "fixed-batch", "--q", "1e-40", "--sigma", "1", "--delta", "1e-100"],
], ids=str)
def test_rates_below_the_grid_with_a_far_tail_delta(capsys, args):
    # sampled with probability above δ = 1e-100: the grid was asked at q 1e-40 and failed
    # with an IndexError (exit 3; helper-51). The one-example pairs grow with the rate: the
    # pair at 1e-12 bounds them, said in a note
    out = _json(capsys, *args, "--steps", "1000")
    assert math.isfinite(float(out["value"])) and float(out["value"]) >= 0
    assert any("below a rate of 1e-12" in n for n in out["notes"])


def test_curve_and_bracket_past_the_k_grid(capsys):
    # helper-51: --curve asked the K = 2 grid the answer had avoided (exit 3), and the K → 1
    # bound's lower end was reported as the K pair's (it bounds the looser pair: exact ε
    # 3.8e-10 lay below the bracket [2.45e-9, 2.47e-9])
    out = _json(capsys, "--examples-per-user", "2", "--q", "1e-10", "--sigma", "1",
                "--steps", "1000", "--delta", "1e-5", "--curve")
    assert out["value"] == 0 and all(p["epsilon"] == 0 for p in out["curve"])
    out = _json(capsys, "--examples-per-user", "2", "--q", "1e-10", "--sigma", "2",
                "--steps", "1", "--delta", "1e-12")
    assert out["bounds"]["lower"] == 0 and float(out["bounds"]["upper"]) >= 3.8e-10
