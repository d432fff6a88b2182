"""Plans and attack risk: the engine's many-ε profile reader for any plan, and the certified
PLD-based TPR bracket of `compose --from` plans (issue 12)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpcalc.mechanisms.eps_delta import EpsDelta
from dpcalc.mechanisms.gaussian import Gaussian
from dpcalc.mechanisms.subsampled_gaussian import SubsampledGaussian
from dpcalc.pld import accountant


def _gauss_log_delta(mu: float, eps: float) -> float:
    """Exact log δ(ε) of G_μ at any real ε [BW18, Thm 8], 50 digits."""
    with mpmath.workdps(50):
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        d = mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)
        return float(mpmath.log(d))


def test_profile_of_a_gaussian_plan_brackets_the_exact_curve():
    # μ² = Σ n/σ² = 3/4 + 2/9 [DRS19, Cor 3.3]; ε over the real line, negative included
    items = [(Gaussian(2.0), 3), (Gaussian(3.0), 2)]
    mu = math.sqrt(3 / 4 + 2 / 9)
    grid = np.array([-1.0, -0.3, 0.0, 0.25, 0.7, 1.5, 3.0])
    lo, up = accountant.log_delta_profile(items, grid, 1e-3, focus=0.5)
    for e, a, b in zip(grid, lo, up, strict=True):
        exact = _gauss_log_delta(mu, float(e))
        assert a <= exact <= b, (e, a, exact, b)
    # tight where δ matters
    assert np.all(-np.expm1(lo[:5] - up[:5]) < 2e-2)


def test_profile_reader_matches_single_point_reads():
    # the vectorised reader and the scalar one of one composition give the same claim
    items = [(SubsampledGaussian(0.02, 1.2), 200), (EpsDelta(0.1, math.log(1e-7)), 3)]
    prof = accountant.Profile(items, log_delta=math.log(1e-5))
    grid = [-0.5, 0.0, 0.4, 1.0, 2.0]
    lo, up = prof.log_delta_many(grid)
    for e, a, b in zip(grid, lo, up, strict=True):
        sa, sb = prof.log_delta_bounds(e)
        assert a <= sb and sa <= b
        assert b == pytest.approx(sb, rel=1e-9, abs=1e-12)
        assert a == pytest.approx(sa, rel=1e-9, abs=1e-12)


def test_mixed_plan_profile_brackets_pointwise_bounds():
    items = [(SubsampledGaussian(0.02, 1.2), 200), (EpsDelta(0.1, math.log(1e-7)), 3)]
    grid = np.array([0.0, 0.5, 1.0, 1.5])
    lo, up = accountant.log_delta_profile(items, grid, 1e-3)
    for e, a, b in zip(grid, lo, up, strict=True):
        sa, sb = accountant.log_delta_bounds(items, float(e), 1e-3)
        assert a <= sb and sa <= b          # both certified: the brackets overlap
