"""Plans at their edges: (ε, δ) points asked for a total δ just above the P-mass they put at +∞,
and pure-DP (δ = 0) sums of the mechanisms' largest losses.

Each point is the worst-case pair of an (ε, δ) guarantee [KOV15, Thm 2.1]: loss +∞ with
P-mass δ, ±ε otherwise.  The composition puts 1 − Π(1 − δ_i) at +∞, and δ(ε) is that mass
plus what the finite losses spend beyond ε.  References here are exact: the Laplace
mechanism's δ(c) = 1 − e^{(c − 1/b)/2} on [−1/b, 1/b] (0 above, 1 − e^c below) and the
Gaussian's [Balle & Wang 2018, Thm 8], summed over the points' sign patterns (mpmath).
"""

from __future__ import annotations

import math
from math import comb

import mpmath as mp
import pytest

from dpcalc.api.compose import compose
from dpcalc.errors import InfeasibleError
from dpcalc.mechanisms.eps_delta import EpsDelta
from dpcalc.pld import BelowInfinityMass, accountant
from tests.cli_helpers import run


def _laplace_delta(c, b):
    e0 = 1 / mp.mpf(b)
    if c >= e0:
        return mp.mpf(0)
    if c <= -e0:
        return 1 - mp.e ** c
    return 1 - mp.e ** ((c - e0) / 2)


def _gauss_delta(c, sigma):
    mu = 1 / mp.mpf(sigma)
    return mp.ncdf(-c / mu + mu / 2) - mp.e ** c * mp.ncdf(-c / mu - mu / 2)


def _exact_delta(eps, n, e_pt, d_pt, one_step):
    """δ(ε) of n (e_pt, d_pt) points composed with one mechanism whose δ(c) is one_step."""
    with mp.workdps(40):
        eps, e_pt, d_pt = mp.mpf(eps), mp.mpf(e_pt), mp.mpf(d_pt)
        a = (1 - d_pt) * mp.e ** e_pt / (1 + mp.e ** e_pt)    # P(L = +ε)
        c = (1 - d_pt) / (1 + mp.e ** e_pt)                   # P(L = −ε)
        tot = 1 - (1 - d_pt) ** n                              # mass at +∞
        for k in range(n + 1):
            shift = (2 * k - n) * e_pt
            tot += comb(n, k) * a ** k * c ** (n - k) * one_step(eps - shift)
        return tot


def _exact_eps(td, n, e_pt, d_pt, one_step, hi):
    """The true ε(δ): the smallest ε with δ(ε) ≤ td (bisection on the exact δ)."""
    lo = 0.0
    if _exact_delta(lo, n, e_pt, d_pt, one_step) <= td:
        return 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _exact_delta(mid, n, e_pt, d_pt, one_step) <= td:
            hi = mid
        else:
            lo = mid
    return hi


def _plan(n, gaussian_sigma=None, laplace_b=None):
    recs = [{"epsilon": 1, "delta": 1e-6, "count": n}]
    if gaussian_sigma is not None:
        recs.append({"mechanism": "gaussian", "sigma": gaussian_sigma})
    if laplace_b is not None:
        recs.append({"mechanism": "laplace", "scale": laplace_b})
    return recs


@pytest.mark.parametrize("td", [3e-6, 3.0000001e-6, 3.00001e-6, 1e-5, 1e-4])
def test_points_beside_a_laplace_just_above_the_mass_at_infinity(td):
    # before: exit 3 at 3e-6 and 3.0000001e-6 (the error budgets were sized for δ, not for
    # the 3e-12 that δ leaves beside 2.999997e-6 at +∞), and 4.24 at 1e-5 where the finite
    # losses stop at 3.5 (an (ε, δ) point's loss bounds were +inf for its atom at +∞)
    r = compose(records=_plan(3, laplace_b=2), total_delta=td)
    one = lambda c: _laplace_delta(c, 2)   # noqa: E731
    assert _exact_delta(r.value, 3, 1, 1e-6, one) <= td
    truth = _exact_eps(td, 3, 1, 1e-6, one, 3.6)
    assert truth <= r.value <= truth * (1 + 2e-3) + 1e-9
    assert r.value <= 3.5 * (1 + 1e-11)


@pytest.mark.parametrize("td", [1.000001e-6, 1.0001e-6, 1.01e-6, 2e-6])
def test_a_point_beside_a_gaussian_just_above_its_delta(td):
    # before: exit 3 at 1.000001e-6 (the Gaussian's share of δ is 1e-12)
    r = compose(records=_plan(1, gaussian_sigma=5), total_delta=td)
    one = lambda c: _gauss_delta(c, 5)     # noqa: E731
    assert _exact_delta(r.value, 1, 1, 1e-6, one) <= td
    truth = _exact_eps(td, 1, 1, 1e-6, one, 20.0)
    assert truth <= r.value <= truth * (1 + 2e-3)


@pytest.mark.parametrize(("recs", "td"), [
    (_plan(1, gaussian_sigma=5), 1e-6),          # the Gaussian needs some δ of its own
    (_plan(3, laplace_b=2), 2.999997e-6),        # below 1 − (1 − 1e-6)^3 = 2.999997000001e-6
    (_plan(3, laplace_b=2), 2.9e-6),
])
def test_a_total_delta_at_or_below_the_mass_at_infinity_is_infeasible(recs, td):
    # before: exit 3 ("the PLD grid cannot certify") at the first two
    with pytest.raises(InfeasibleError, match="at or below the δ the records spend"):
        compose(records=recs, total_delta=td)


def test_the_cli_exits_1_at_the_mass_at_infinity(tmp_path, capsys):
    path = tmp_path / "plan.json"
    path.write_text('[{"epsilon": 1, "delta": 1e-6}, {"mechanism": "gaussian", "sigma": 5}]')
    got = run(capsys, "compose", "--from", str(path), "--total-delta", "1e-6", "--value")
    assert got.code == 1
    assert got.out == ""
    assert "at or below" in got.err and len(got.err.strip().splitlines()) == 1


def test_one_point_met_exactly_at_its_own_delta_answers_its_finite_top():
    # one point, once, at a total δ equal to its own: δ(ε) = δ beyond 0.7 + 0.5.  Decided
    # on the numbers given (the API); from logarithms alone the engine cannot tell δ from
    # its neighbours (helper-34), so it says BelowInfinityMass
    recs = [{"epsilon": 0.7, "delta": 1e-6}, {"mechanism": "laplace", "scale": 2}]
    assert compose(records=recs, total_delta=1e-6).value == 1.2
    with pytest.raises(BelowInfinityMass):
        accountant.epsilon_bounds([(EpsDelta(0.7, math.log(1e-6)), 1)], math.log(1e-6))
    with pytest.raises(InfeasibleError):
        compose(records=[{"epsilon": 0.7, "delta": 1e-6}, {"mechanism": "gaussian",
                                                            "sigma": 5}], total_delta=1e-6)


def test_the_composed_mass_at_infinity_is_the_product_form():
    # 1 − (1 − p)^n, not n·p: a total δ between them is met
    items = [(EpsDelta(1.0, math.log(1e-3)), 5)]
    m = -math.expm1(5 * math.log1p(-1e-3))
    assert accountant.log_mass_at_infinity(items) == pytest.approx(math.log(m), abs=1e-11)
    assert accountant.log_mass_at_infinity(items) <= math.log(m)
    up = accountant.epsilon_bounds(items, math.log(0.5 * (m + 5e-3)))[1]
    assert up <= 5.0 * (1 + 1e-11)


# ---- pure DP (δ = 0) and the finite tops: exact sums of the stated ε₀ ----

def _laplaces(scale, count, sensitivity=1.0):
    return [{"mechanism": "laplace", "scale": scale, "sensitivity": sensitivity,
             "count": count}]


def test_ten_laplace_releases_of_scale_2_spend_exactly_5_and_fit_in_5():
    # before: 5.000000000010002 (the edge 1/b padded by 1e-12), and a count of 9 in ε = 5
    assert compose(records=_laplaces(2.0, 10), total_delta=0.0).value == 5.0
    assert compose(records=_laplaces(2.0, None), total_epsilon=5.0, total_delta=0.0).value == 10
    assert compose(records=_laplaces(3.0, 3), total_delta=0.0).value == 1.0


@pytest.mark.parametrize(("scale", "sensitivity", "count"), [(0.3, 0.1, 7), (3.0, 1.0, 5),
                                                              (1.7, 2.3, 11)])
def test_a_pure_laplace_sum_is_the_smallest_double_above_the_rational(scale, sensitivity,
                                                                     count):
    from fractions import Fraction

    exact = count * Fraction(sensitivity) / Fraction(scale)
    got = compose(records=_laplaces(scale, count, sensitivity), total_delta=0.0).value
    assert Fraction(got) >= exact
    assert Fraction(math.nextafter(got, 0.0)) < exact


def test_points_beside_a_laplace_spend_exactly_their_mass_at_infinity_beyond_the_tops():
    # ε = 3.5 = 3·1 + 1/2: every finite loss is at most ε, δ(ε) is the mass at +∞ (the
    # bracket was [3.0e-6, 1.04e-4] before: the 1e-12 pads put ε just below the tops)
    r = compose(records=_plan(3, laplace_b=2), total_epsilon=3.5)
    m = -math.expm1(3 * math.log1p(-1e-6))
    assert m <= r.value <= m * (1 + 1e-9)


# ---- review (helper-34): the +∞ mass's logarithm is rounded; δ's equal to a point's own ----

POW2 = 2.0 ** -20      # a δ whose decimal form is exact: no rounding of the input


def test_a_total_delta_just_below_a_points_delta_is_infeasible():
    # log(δ − 2 ulps) == log(δ) in doubles: comparing logarithms answered 1.5 here
    below = math.nextafter(math.nextafter(POW2, 0.0), 0.0)
    recs = [{"epsilon": 1, "delta": POW2}, {"mechanism": "laplace", "scale": 2}]
    with pytest.raises(InfeasibleError):
        compose(records=recs, total_delta=below)
    assert compose(records=recs, total_delta=POW2).value == 1.5     # its own δ: met at 1.5


def test_delta_beyond_the_finite_losses_is_never_below_the_points_delta():
    # beyond ε = 1.5 δ(ε) is the point's δ; e^{log δ} can be below δ (595 of 2000 were)
    from fractions import Fraction

    for d in (2.206187609351731e-11, 3.3e-7, 1e-6, 0.0123, POW2):
        recs = [{"epsilon": 1, "delta": d}, {"mechanism": "laplace", "scale": 2}]
        got = compose(records=recs, total_epsilon=2.0).value
        assert Fraction(str(got)) >= Fraction(d)
        assert float(got) <= d * (1 + 1e-12)


def test_a_total_delta_just_above_the_mass_at_infinity_is_met():
    # m∞ = 2.999997000001e-6; the log's pad of 1e-12 relative declared 2.999997000004e-6
    # infeasible (a pad of a few ulps per rounding now)
    r = compose(records=_plan(3, laplace_b=2), total_delta=2.999997000004e-06)
    assert r.value <= 3.5


def test_points_with_delta_near_one_do_not_crash():
    # the padded one-step +∞ mass reached log p ≥ 0: log1p(−1) raised (exit 3)
    recs = [{"epsilon": 1, "delta": 0.99999999999999, "count": 2},
            {"mechanism": "laplace", "scale": 2}]
    r = compose(records=recs, total_epsilon=1.0)
    m = 1 - (1 - 0.99999999999999) ** 2
    assert m <= r.value <= 1.0
