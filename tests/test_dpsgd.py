"""dpsgd through the API and the CLI: the headline bracket, accountant ordering, inverses."""

from __future__ import annotations

import pytest

from dpcalc.api.dpsgd import dpsgd
from dpcalc.errors import DomainError
from tests.cli_helpers import run


def test_dpsgd_headline_bracket_and_comparison():
    r = dpsgd(q=0.01, sigma=4, epochs=100, delta=1e-5)
    assert r.bounds.lower <= 0.9468683746916999 and r.value >= 0.9463870374438275
    assert r.value == r.bounds.upper
    assert r.value <= r.bounds.lower * (1 + 1e-3) + 1e-12
    by = {c.method: c.value for c in r.comparison}
    assert r.value <= by["rdp"] <= by["moments"]
    assert r.value <= by["strong"]


def test_dpsgd_epochs_is_largest_fitting():
    r = dpsgd(q=0.01, sigma=4, epsilon=1, delta=1e-5)
    assert r.solved_for == "epochs"
    assert dpsgd(q=0.01, sigma=4, epochs=r.value, delta=1e-5).value <= 1


def test_dpsgd_q1_matches_exact_gaussian():
    r = dpsgd(q=1, sigma=10, steps=100, delta=1e-5)
    assert 4.3771780956812245 <= r.value <= 4.385932451872588


def test_dpsgd_curve_is_monotone(capsys):
    r = run(capsys, "dpsgd", "--q", "0.01", "--sigma", "4", "--epochs", "10", "--delta",
            "1e-5", "--curve", "--json")
    curve = r.json["curve"]
    assert [p["epochs"] for p in curve] == list(range(1, 11))
    values = [float(p["epsilon"]) for p in curve]
    assert values == sorted(values)
    assert values[-1] == pytest.approx(float(r.json["value"]), rel=2e-3)


def test_dpsgd_pure_dp_is_outside_the_delta_range():
    # issue 9, item 17: the help says δ in (0, 1); δ = 0 is bad input (exit 2), not infeasible
    with pytest.raises(DomainError, match=r"--delta must be a number in \(0, 1\)"):
        dpsgd(q=0.01, sigma=4, epochs=1, delta=0)


def test_dpsgd_curve_ends_at_the_run(capsys):
    r = run(capsys, "dpsgd", "--q", "0.01", "--sigma", "4", "--steps", "10", "--delta", "1e-5",
            "--curve", "--json")
    curve = r.json["curve"]
    assert curve[-1]["steps"] == 10 and all(p["steps"] <= 10 for p in curve)
    r = run(capsys, "dpsgd", "--q", "0.01", "--sigma", "4", "--epochs", "2.5", "--delta",
            "1e-5", "--curve", "--json")
    assert [p["steps"] for p in r.json["curve"]] == [100, 200, 250]


def test_the_curve_help_says_where_every_point_is(capsys, monkeypatch):
    # issue 13, item 4: every epoch is shown; the human table holds about ten of them, so the
    # help says where the rest are (the plot and --json), at 80 columns as a user reads it
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("NO_COLOR", "1")
    helped = run(capsys, "dpsgd", "--help")
    assert helped.code == 0
    text = " ".join(helped.out.replace("│", " ").split())
    assert "the plot and --json hold every point, the table about ten" in text
    args = ("dpsgd", "--q", "0.01", "--sigma", "4", "--epochs", "30", "--delta", "1e-5",
            "--curve")
    human = run(capsys, *args).out.splitlines()
    start = next(i for i, s in enumerate(human) if s.split()[:2] == ["epochs", "ε"])
    rows = [s for s in human[start + 1:start + 16] if s.split() and s.split()[0].isdigit()]
    assert 3 <= len(rows) <= 12 and rows[-1].split()[0] == "30"
    assert [p["epochs"] for p in run(capsys, *args, "--json").json["curve"]] == list(
        range(1, 31))
