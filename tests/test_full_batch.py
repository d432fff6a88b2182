"""Full-batch DP-SGD (q = 1): ε and δ from the exact Gaussian profile, not the PLD grid.

References are computed here in mpmath at 60 digits, independently of dpcalc: T steps are
the Gaussian mechanism with μ = √T/σ [DRS19, Cor 3.3], δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 −
ε/μ) [BW18, Thm 8], and ε(δ) its root.
"""

from __future__ import annotations

import json
import math

import mpmath as mp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.api.dpsgd import dpsgd
from dpcalc.relations import full_batch, pld
from tests.issue9_helpers import cli


def _mu(sigma, steps):
    return mp.sqrt(int(steps)) / mp.mpf(sigma)


def _log_delta(sigma, steps, eps):
    with mp.workdps(80):
        mu, e = _mu(sigma, steps), mp.mpf(eps)
        one_minus = mp.ncdf(e / mu - mu / 2) + mp.exp(e) * mp.ncdf(-mu / 2 - e / mu)
        if one_minus < 0.5:      # δ near 1: 1 − δ has no cancellation
            return mp.log1p(-one_minus)
        return mp.log(mp.ncdf(mu / 2 - e / mu) - mp.exp(e) * mp.ncdf(-mu / 2 - e / mu))


def _epsilon(sigma, steps, log_delta):
    with mp.workdps(60):
        target = mp.mpf(log_delta)
        if _log_delta(sigma, steps, 0) <= target:
            return mp.mpf(0)
        lo, hi = mp.mpf(0), mp.mpf(1)
        while _log_delta(sigma, steps, hi) > target:
            lo, hi = hi, 2 * hi
        for _ in range(200):
            mid = (lo + hi) / 2
            if _log_delta(sigma, steps, mid) > target:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2


CASES = [  # (σ, T, δ)
    (10.0, 100, 1e-5),        # the public case pub-dpsgd-q1-exact
    (1.0, 1, 1e-5),
    (0.7, 1000, 1e-10),
    (4.0, 37, 1e-100),
    (50.0, 10_000_000, 1e-300),
    (0.3, 7, 0.09),
]


@pytest.mark.parametrize("sigma,steps,delta", CASES)
def test_epsilon_bracket_holds_the_exact_value_and_is_narrow(sigma, steps, delta):
    lo, up = pld.epsilon_bounds(1.0, sigma, steps, math.log(delta))
    truth = _epsilon(sigma, steps, math.log(delta))
    assert lo <= truth <= up
    assert up - lo <= 1e-10 * up


@pytest.mark.parametrize("sigma,steps,delta", CASES)
def test_log_delta_bracket_holds_the_exact_value(sigma, steps, delta):
    eps = float(_epsilon(sigma, steps, math.log(delta))) * 1.01
    lo, up = pld.log_delta_bounds(1.0, sigma, steps, eps)
    truth = _log_delta(sigma, steps, eps)
    assert lo <= truth <= up
    assert up - lo <= 1e-12 * max(1.0, abs(up))


@settings(max_examples=30, deadline=None)
@given(st.floats(0.3, 1e3), st.integers(1, 10_000_000), st.floats(-700.0, -1e-3))
def test_brackets_hold_the_exact_values(sigma, steps, log_delta):
    lo, up = full_batch.epsilon_bounds(sigma, steps, log_delta)
    truth = _epsilon(sigma, steps, log_delta)
    assert lo <= truth <= up
    if truth > 0:
        assert up - lo <= 1e-10 * up
        dlo, dup = full_batch.log_delta_bounds(sigma, steps, up)
        assert dlo <= _log_delta(sigma, steps, up) <= dup <= log_delta


@pytest.mark.parametrize("sigma,steps,log_delta", [
    (1e-10, 1000, math.log(1e-10)),         # ε = 5e22: beyond the old 1e12 search cap
    (1e-30, 1, math.log(1e-5)),             # ε = 5e59
    (0.0032, 501_304_440, -553.0),
])
def test_epsilon_far_beyond_the_grid_is_exact(sigma, steps, log_delta):
    lo, up = full_batch.epsilon_bounds(sigma, steps, log_delta)
    truth = _epsilon(sigma, steps, log_delta)
    assert lo <= truth <= up and up - lo <= 1e-10 * up


@pytest.mark.parametrize("sigma,steps,eps", [
    (0.8813993627586025, 1470, 229.6156436676187),     # log δ ≈ −4.8e-61 (review)
    (0.009265859445667282, 1, 4537.011367574138),      # log δ ≈ −5.1e-33 (review)
    (0.0588, 1, 3.6),
])
def test_log_delta_near_zero_keeps_its_relative_accuracy(sigma, steps, eps):
    lo, up = pld.log_delta_bounds(1.0, sigma, steps, eps)
    truth = _log_delta(sigma, steps, eps)
    assert lo <= truth <= up < 0.0
    assert up - lo <= 1e-12 * abs(up)


@pytest.mark.parametrize("log_delta", [-5.142725560773095e-39, -1.1102230246251565e-16,
                                       -6.006306563222277e-14, -1e-10])
def test_epsilon_for_a_delta_near_one_is_tight(log_delta):
    sigma, steps = 0.0588, 1
    lo, up = full_batch.epsilon_bounds(sigma, steps, log_delta)
    truth = _epsilon(sigma, steps, log_delta)
    assert lo <= truth <= up and up - lo <= 1e-10 * up


def test_quick_upper_and_curve_are_the_exact_upper_end():
    log_d = math.log(1e-5)
    up = pld.epsilon_bounds(1.0, 3.0, 50, log_d)[1]
    assert pld.epsilon_upper(1.0, 3.0, 50, log_d) == up
    rows = pld.epsilon_curve(1.0, 3.0, [10, 50], log_d, upper_only=True)
    assert rows[1] == (50, *pld.epsilon_bounds(1.0, 3.0, 50, log_d))
    assert rows[0][1] <= _epsilon(3.0, 10, log_d) <= rows[0][2]


def test_cli_answers_the_public_case_exactly_and_says_why():
    done = cli("dpsgd", "--q", "1", "--sigma", "10", "--steps", "100", "--delta", "1e-5",
               "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    truth = 4.3771780956812246           # public case pub-dpsgd-q1-exact (mpmath)
    assert out["bounds"]["lower"] <= truth <= out["value"] <= truth * (1 + 1e-12)
    assert out["method"] == "pld" and any("its exact profile" in n for n in out["notes"])
    value = cli("dpsgd", "--q", "1", "--sigma", "10", "--steps", "100", "--delta", "1e-5",
                "--value")
    assert float(value.stdout) == out["value"]


def test_sigma_solve_is_the_exact_minimum_on_the_private_side():
    res = dpsgd(q=1, steps=100, epsilon=1.0, delta=1e-5, compare=False)
    # σ/√T is the single Gaussian's σ at sensitivity 1: its exact root, found in mpmath
    with mp.workdps(60):
        target = mp.log(mp.mpf(1e-5))
        lo, hi = mp.mpf(1), mp.mpf(100)
        for _ in range(200):
            mid = (lo + hi) / 2
            if _log_delta(mid, 100, 1.0) > target:
                lo = mid
            else:
                hi = mid
    assert float(hi) <= res.value <= float(hi) * (1 + 2e-9)
    forward = dpsgd(q=1, sigma=res.value, steps=100, delta=1e-5, compare=False)
    assert forward.value <= 1.0


def test_steps_solve_is_the_largest_count_that_fits():
    eps = pld.epsilon_bounds(1.0, 10.0, 100, math.log(1e-5))[1]
    res = dpsgd(q=1, sigma=10, epsilon=eps, delta=1e-5, solve_for="steps", compare=False)
    assert res.value == 100
    assert _log_delta(10.0, 101, eps) > math.log(1e-5)   # 101 steps do not fit


def test_below_one_the_pld_grid_still_answers():
    out = dpsgd(q=0.999, sigma=10, steps=100, delta=1e-5, compare=False)
    assert not any("its exact profile" in n for n in out.notes)
    # sampling at 0.999 is no less private than at 1
    assert out.value <= pld.epsilon_bounds(1.0, 10.0, 100, math.log(1e-5))[1] * (1 + 1e-3)


@settings(max_examples=120, deadline=None)
@given(sigma=st.floats(0.05, 50.0), steps=st.integers(1, 10**6),
       log_delta=st.floats(-700.0, -0.8))
def test_the_quick_upper_end_is_the_brackets_without_mpmath_decisions(sigma, steps, log_delta):
    # the bisection's probes where δ(ε) is certainly above 1/2 are decided in doubles (the
    # upper bound there came from mpmath): the same ε, bit for bit
    from dpcalc.relations import gaussian

    fast = full_batch.epsilon_upper(sigma, steps, log_delta)
    assert fast == pld.epsilon_upper(1.0, sigma, steps, log_delta)
    assert fast == full_batch.epsilon_bounds(sigma, steps, log_delta)[1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gaussian, "_LOG_HALF", -math.inf)          # no decision in doubles
        assert full_batch.epsilon_upper(sigma, steps, log_delta) == fast


def test_a_rate_solve_probes_the_full_batch_without_mpmath():
    # the solver's first probe, q = 1, fails on its closed form: the full bracket's lower
    # end (certified in mpmath, whose import cost 49 ms) is not asked for
    import subprocess
    import sys

    code = ("import importlib, sys; api = importlib.import_module('dpcalc.api.dpsgd'); "
            "r = api.dpsgd(sigma=1.1, epochs=60, epsilon=3, delta=1e-5, compare=False); "
            "print(r.value, 'mpmath' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert 0.006 < float(out[0]) < 0.007 and out[1] == "False"


def test_the_rate_solves_comparison_rows_probe_the_full_batch_without_mpmath():
    # the moments row probes q = 1 too: α(λ) there is the Gaussian's λ(λ + 1)/(2σ²), in
    # doubles and in Decimal at the chosen λ (mpmath's import, 0.03-0.05 s, answered before)
    import subprocess
    import sys

    code = ("import importlib, sys; api = importlib.import_module('dpcalc.api.dpsgd'); "
            "r = api.dpsgd(sigma=1.1, epochs=60, epsilon=3, delta=1e-5); "
            "print(r.value, dict((c.method, c.value) for c in r.comparison)['moments'], "
            "'mpmath' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert 0.006 < float(out[0]) < 0.007 and 0.004 < float(out[1]) < 0.0045
    assert out[2] == "False"


@pytest.mark.parametrize("sigma,steps,log_delta", [(10.0, 100, math.log(1e-5)),
                                                   (1.1, 9418, math.log(1e-5)),
                                                   (0.5, 3, -700.0), (1e3, 10**6, -20.0)])
def test_the_moments_accountant_at_the_full_batch_is_the_gaussians(sigma, steps, log_delta):
    # α(λ) = λ(λ + 1)/(2σ²) at q = 1 [ACGMMTZ16, Sec 3.2]: ε = min_λ (T·α(λ) − log δ)/λ,
    # against the same minimum in mpmath at 60 digits, rounded up
    from dpcalc.relations import moments

    got, lam = moments.moments_epsilon(1.0, sigma, steps, log_delta)
    with mp.workdps(60):
        s = mp.mpf(sigma)
        vals = [(steps * mp.mpf(k * (k + 1)) / (2 * s * s) - mp.mpf(log_delta)) / k
                for k in range(1, 33)]
        best = min(vals)
    assert lam == vals.index(best) + 1
    assert float(best) <= got <= float(best) * (1 + 1e-14)
