"""ε(δ) of one composed, discretised PLD (pld.evaluate._Final.epsilon).

The search locates the root with a fast surrogate (suffix sums, not certified) and returns
a point that the certified evaluation passes.  Oracle: the exact δ(ε) of the same discrete
law, Σ_{ℓ_j > ε} m_j (1 − e^{ε − ℓ_j}) [KJH20], summed in mpmath at 50 digits from the
masses' exact logarithms; no error term (e1 = 0), so the certified bound differs from it
only by rounding.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpcalc.pld import evaluate
from dpcalc.pld.pmf import _Dist

H = 0.01


def _law(mu: float, lo: int, n: int, pess: bool = True):
    """The _Final of the grid masses of a Gaussian PLD N(μ, 2μ) [DRS19] at ℓ_j = j·H, j = lo
    … lo + n − 1 (pessimistic or optimistic side: the same masses, no error term)."""
    ell = (np.arange(lo, lo + n, dtype=float)) * H
    lm = -((ell - mu) ** 2) / (4.0 * mu)
    lm -= math.log(float(np.sum(np.exp(lm - lm.max())))) + lm.max()   # total mass 1
    top = float(lm.max())
    t = np.exp(lm - top)
    d = _Dist(lo=lo, s=0, t=t, logscale=top, e1=0.0, einf=0.0)
    fin = evaluate._Final(d, H, 0.0, 1, 0.0, -math.inf, pess)
    return fin


def _exact_log_delta(fin, eps: float) -> float:
    mp.mp.dps = 50
    total = mp.mpf(0)
    for ell, lm in zip(fin.ell_nz, fin.lm_nz, strict=True):
        if ell > eps:
            total += mp.e ** mp.mpf(float(lm)) * (1 - mp.e ** (mp.mpf(eps) - mp.mpf(float(ell))))
    return float(mp.log(total)) if total > 0 else -math.inf


# (μ, grid start, grid length, log δ): the bulk, a moderate tail, the far tail (where the
# surrogate's sums fall back to the log domain), a δ met at ε = 0
CASES = [
    (0.5, -300, 900, math.log(1e-5)),
    (2.0, -600, 2400, math.log(1e-30)),
    (8.0, -1500, 10000, -600.0),
    (0.02, -100, 300, math.log(0.9)),
]


@pytest.mark.parametrize(("mu", "lo", "n", "log_delta"), CASES)
def test_pessimistic_epsilon_is_the_certified_root(mu, lo, n, log_delta):
    fin = _law(mu, lo, n)
    eps = fin.epsilon(log_delta)
    assert fin.log_delta(eps) <= log_delta                  # certified at the answer
    assert _exact_log_delta(fin, eps) <= log_delta + 1e-12  # and by the exact sum
    if eps > 0.0:
        # tight: just below it the exact δ is above the target
        below = eps - 1e-9 * max(1.0, eps)
        assert _exact_log_delta(fin, below) > log_delta


@pytest.mark.parametrize(("mu", "lo", "n", "log_delta"), CASES[:3])
def test_optimistic_epsilon_is_the_certified_root_from_below(mu, lo, n, log_delta):
    fin = _law(mu, lo, n, pess=False)
    eps = fin.epsilon(log_delta)
    assert eps > 0.0
    assert fin.log_delta(eps) > log_delta                   # certified at the answer
    assert _exact_log_delta(fin, eps) > log_delta           # below the true root
    above = eps + 1e-9 * max(1.0, eps)                      # and tight
    assert _exact_log_delta(fin, above) <= log_delta


def test_a_delta_just_below_the_one_at_zero_is_met_above_zero():
    """The certified check at ε = 0 is skipped only where the surrogate puts δ(0) clearly
    above δ: 0.05 below it (in log) the answer is a positive ε that the bound certifies."""
    fin = _law(0.02, -100, 300)
    log_delta = fin.log_delta(0.0) - 0.05
    eps = fin.epsilon(log_delta)
    assert eps > 0.0
    assert fin.log_delta(eps) <= log_delta
    assert _exact_log_delta(fin, eps) <= log_delta + 1e-12


@pytest.mark.parametrize(("mu", "lo", "n", "log_delta"), CASES[:2])
def test_the_search_reads_the_scaled_sums_it_computed(mu, lo, n, log_delta):
    """The root search computes its suffix sums once, scaled where δ allows, and its
    point-wise surrogate reads those (a recomputation in the log domain cost more than the
    scaled sums saved: review, helper-44)."""
    fin = _law(mu, lo, n)
    fin.epsilon(log_delta)
    assert fin._floor > -math.inf
    assert fin._floor == log_delta - evaluate._SURROGATE_MARGIN


@pytest.mark.parametrize(("mu", "lo", "n", "log_delta"), CASES[:3])
def test_the_search_evaluates_the_certified_bound_twice(monkeypatch, mu, lo, n, log_delta):
    """A root found by the surrogate costs two certified evaluations: the first grid point
    below δ and the answer (before: four, with δ(0) and the grid point before, which only
    the surrogate needs)."""
    fin = _law(mu, lo, n)
    calls = []
    inner = evaluate._Final.log_delta

    def counted(self, eps):
        calls.append(eps)
        return inner(self, eps)

    monkeypatch.setattr(evaluate._Final, "log_delta", counted)
    eps = fin.epsilon(log_delta)
    assert eps > 0.0
    assert len(calls) == 2


@pytest.mark.parametrize(("mu", "lo", "n", "floor"), [
    (0.5, -300, 900, math.log(1e-5)),
    (2.0, -600, 2400, math.log(1e-30)),
])
def test_scaled_suffix_sums_agree_with_the_log_domain(mu, lo, n, floor):
    scaled = _law(mu, lo, n)
    logs = _law(mu, lo, n)
    sa, sb = scaled._suffix(floor)
    la, lb = logs._suffix()                      # no floor: the log domain
    keep = la > floor - 50.0
    assert keep.sum() > n // 4
    assert np.allclose(sa[keep], la[keep], rtol=0, atol=1e-10)
    keep = lb > floor - 50.0 - float(scaled.ell_nz[-1])
    assert np.allclose(sb[keep], lb[keep], rtol=0, atol=1e-10)


def test_suffix_sums_stay_in_the_log_domain_far_below_the_largest_term():
    ref, _ = _law(8.0, -1500, 10000)._suffix()
    fin = _law(8.0, -1500, 10000)
    sa, _ = fin._suffix(-900.0)
    assert np.array_equal(sa, ref)               # the same computation, not scaled sums
    again = _law(8.0, -1500, 10000)
    sa, _ = again._suffix(-20.0)                 # scaled sums, cached for that floor ...
    assert not np.array_equal(sa, ref)
    sa, _ = again._suffix(-900.0)                # ... and recomputed for a lower one
    assert np.array_equal(sa, ref)
