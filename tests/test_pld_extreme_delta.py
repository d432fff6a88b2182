"""δ(ε) far below the Chernoff guess (issue 14): few steps of a small-q subsampled Gaussian,
δ ≪ 1e-300.  The budgets (+∞ mass, truncation) are sized from a guess of δ; when a pass's
upper bound is mostly the +∞ mass the guess was too large and the pass is redone, and a
finer grid is not tried when it cannot lower the upper bound (the ℓ1 error term dominates).
No wall clock: the tests count passes and resolutions."""

from __future__ import annotations

import math

import pytest

import dpcalc.pld.compose as compose
from dpcalc.mechanisms.subsampled_gaussian import SubsampledGaussian
from dpcalc.pld import accountant
from dpcalc.relations import dpsgd as rel

CASE1 = (9.955e-05, 3.46, 443, 4.162, 1e-3)
CASE2 = (0.00226, 6.47, 6541, 2.1, 1e-4)


def _passes(q, sigma, steps, eps, tol):
    pair = SubsampledGaussian(q, sigma)
    n_pass = [0]

    def next_rho(rho, lo, up):   # the schedule of accountant.log_delta_bounds
        n_pass[0] += 1
        w = 1.0 - math.exp(lo - up) if up > -math.inf else 0.0
        if w <= tol or rho <= compose._RHO_MIN or n_pass[0] >= 6:
            return None
        return compose._next_rho(rho, tol, w)

    return list(compose._delta_passes(pair, steps, eps, tol, compose._first_rho(tol),
                                      next_rho))


def test_plus_infinity_budget_is_resized():
    """The first pass's upper bound is the +∞ mass (its budget sized from the Chernoff guess);
    the final one is far below it (before: the refinement kept that budget)."""
    passes = _passes(*CASE1)
    first_up, final_up = passes[0][1], passes[-1][1]
    assert final_up < first_up - 10.0
    q, sigma, steps, eps, tol = CASE1
    # still an upper bound no tighter than anything sound allows: below RDP's, and the
    # bracket is ordered
    assert final_up <= rel.rdp_log_delta(q, sigma, steps, eps)
    assert passes[-1][0] <= final_up


@pytest.mark.parametrize("case", [CASE1, CASE2])
def test_no_refinement_when_the_error_term_dominates(case, monkeypatch):
    """A finer grid lowers only the grid term: when the ℓ1 error term dominates the upper
    bound (and there is no lower bound), no finer pass is run."""
    rhos = []
    orig = compose._compose_points

    def spy(pair, steps_list, rho, *a, **k):
        rhos.append(rho)
        return orig(pair, steps_list, rho, *a, **k)

    monkeypatch.setattr(compose, "_compose_points", spy)
    q, sigma, steps, eps, tol = case
    lo, up = accountant.log_delta_bounds([(SubsampledGaussian(q, sigma), steps)], eps, tol)
    assert up < -1000.0 and lo <= up
    assert min(rhos) >= compose._SCOUT_RHO
