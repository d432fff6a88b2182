"""The other sampling schemes at noise beyond σ = 1e6 (SIGMA_EVAL_MAX), as the default run.

Before: their accounting took any σ as given. Past 1e6 the grid loses its resolution (ε
6.2e-8 at σ 1e7 for replace-one, where σ 1e5 certifies 0), and a σ solve whose secant met
an upper bound of 0 galloped up to σ 9e18, where the grid step is 0: `--relation
replace-one --q 0.5 --steps 1 --delta 1e-5 --epsilon 1e-9` exited 2 (ZeroDivisionError),
the same with `--examples-per-user 3` exited 3 (ValueError), and an infeasible target
said "the PLD grid cannot certify this run".  Now σ above 1e6 is evaluated at 1e6 (more
noise is post-processing: every component of both sides gets the same independent extra
N(0, σ² − 10¹²)), said in a note, and a σ solve searches up to 1e6.
"""

from __future__ import annotations

import math

import pytest

from dpcalc.api.dpsgd_runs import Scheme, _Pld
from tests.cli_helpers import run

SCHEMES = [["--relation", "replace-one"], ["--examples-per-user", "3"],
           ["--sampling", "fixed-batch"]]


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
def test_noise_above_the_evaluated_maximum_is_evaluated_there(capsys, scheme):
    r = run(capsys, "dpsgd", *scheme, "--q", "0.5", "--steps", "1", "--delta", "1e-5",
            "--sigma", "1e7", "--json")
    assert r.code == 0, r.err
    at_max = run(capsys, "dpsgd", *scheme, "--q", "0.5", "--steps", "1", "--delta", "1e-5",
                 "--sigma", "1e6", "--json")
    assert r.json["value"] == at_max.json["value"] == 0.0
    assert any("evaluated at 1e+06" in n for n in r.json["notes"])
    assert not any("evaluated at 1e+06" in n for n in at_max.json.get("notes", []))


@pytest.mark.parametrize("relation,k", [("replace-one", 1), ("add-remove", 3)])
def test_epsilon_never_grows_with_the_noise(relation, k):
    acc = _Pld(Scheme("poisson", relation, k), 1e-3)
    got = [acc.epsilon(0.5, s, 1, math.log(1e-5))[0] for s in (3e4, 1e5, 1e6, 1e7, 1e12)]
    assert all(b <= a for a, b in zip(got, got[1:], strict=False)), got


@pytest.mark.parametrize("scheme", SCHEMES[::2], ids=str)
def test_an_infeasible_noise_target_says_how_far_it_looked(capsys, scheme):
    # ε 1e-9 at δ 1e-12 needs σ ~ 1e9 (δ(0) ≈ q/(σ√(2π)) for a small shift 1/σ)
    r = run(capsys, "dpsgd", *scheme, "--q", "0.5", "--steps", "1", "--delta", "1e-12",
            "--epsilon", "1e-9", "--value")
    assert r.code == 1
    assert "no σ up to 1e+06 meets the target" in r.err


def test_a_noise_solve_whose_bound_reaches_zero_answers(capsys):
    r = run(capsys, "dpsgd", "--relation", "replace-one", "--q", "0.5", "--steps", "1",
            "--delta", "1e-5", "--epsilon", "1e-9", "--value")
    assert r.code == 0, r.err
    sigma = float(r.out)
    # δ(0) of replace-one at q 0.5 and a shift 2/σ: about q·2/(σ√(2π)) ≤ 1e-5 near 4e4
    assert 3e4 < sigma < 6e4
    acc = _Pld(Scheme("poisson", "replace-one", 1), 1e-3)
    assert acc.epsilon(0.5, sigma, 1, math.log(1e-5))[0] <= 1e-9
    assert acc.epsilon(0.5, sigma * (1 - 1e-4), 1, math.log(1e-5))[0] > 1e-9


@pytest.mark.parametrize("args", [
    ["--examples-per-user", "50", "--q", "0.5", "--sigma", "0.8", "--steps", "1000000",
     "--delta", "1e-10"],
    ["--relation", "replace-one", "--examples-per-user", "20", "--q", "0.5", "--sigma", "0.5",
     "--steps", "10000000", "--delta", "1e-10"],
    ["--sampling", "fixed-batch", "--q", "0.9", "--sigma", "0.3", "--steps", "10000000000",
     "--delta", "1e-300"],
], ids=["K50", "replace-one-K20", "fixed-batch"])
def test_a_lower_end_past_the_double_range_leaves_the_certified_upper_end(capsys, args):
    # helper-52: the optimistic sides' coarsening overflowed (grid step ~240: expm1(3h)),
    # exit 2 on a valid question; the pessimistic first pass alone certifies the upper end
    r = run(capsys, "dpsgd", *args, "--json")
    assert r.code == 0, r.err
    assert r.json["bounds"]["lower"] == 0.0
    assert 0 < r.json["value"] == r.json["bounds"]["upper"] < math.inf
    assert any("lower end left the double range" in n for n in r.json["notes"])
    # ε grows with q: at most the bound at a smaller rate is not a check; at least it is
    smaller = list(args)
    smaller[smaller.index("--q") + 1] = "0.3"
    less = run(capsys, "dpsgd", *smaller, "--json")
    assert less.code == 0, less.err
    assert r.json["value"] >= less.json["bounds"]["lower"]


def test_a_grid_past_the_double_range_is_not_needed_where_its_direction_is_capped(capsys):
    # its add direction's grid left the double range: the run was uncertified (exit 1; exit
    # 2 "out of range" before that).  That direction's ε is at most T·K·(−log(1 − q)) =
    # 13.9, below the remove direction's certified upper end, so it is not composed
    # (helper-17) and the remove direction answers, its lower end 0 as for the other schemes
    r = run(capsys, "dpsgd", "--examples-per-user", "2", "--q", "0.5", "--sigma", "0.003",
            "--steps", "10", "--delta", "1e-5", "--json")
    assert r.code == 0, r.err
    assert r.json["bounds"]["lower"] == 0.0
    assert 10 * 2 * math.log(2.0) < r.json["value"] == r.json["bounds"]["upper"] < math.inf
    assert any("double range" in n for n in r.json["notes"])


def test_the_curve_evaluates_noise_as_the_answer_does(capsys):
    # helper-54: the curve took the raw σ 1e7 while the answer was evaluated at 1e6
    curves = []
    for sigma in ("1e7", "1e6"):
        r = run(capsys, "dpsgd", "--relation", "replace-one", "--q", "0.5", "--sigma", sigma,
                "--steps", "2000", "--delta", "1e-5", "--curve", "--json")
        assert r.code == 0, r.err
        curves.append([(p["steps"], p["epsilon"]) for p in r.json["curve"]])
    assert curves[0] == curves[1]


def test_only_pairs_built_from_probability_weights_take_the_expm1_numerator():
    # (helper-54: the flag was inferred from |Σ w − 1| ≤ 1e-9 alone)
    from dpcalc.mechanisms._mixture import MixturePair

    w = [math.log(0.5), math.log(0.5)]
    assert MixturePair(1e6, w, [0.0, 1.0], [0.0], [0.0])._excess[-1] is False
    assert MixturePair(1e6, w, [0.0, 1.0], [0.0], [0.0],
                       probability_weights=True)._excess[-1] is True
