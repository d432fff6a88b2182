"""The optimistic side's buckets next to the hard lower edge when the clump there is a few
cells wide (dpcalc.pld.sides._clump_plan, _EDGE_STRIDE).

At q 1.23e-4, σ 0.73 (remove direction) the density of L − log(1 − q) peaks within the first
cell: no narrow clump (less than _CLUMP_MASS within 2 cells), but the lowest plain bucket's
ratio lies above its grid point and no bucket below can take the excess, so ~0.0035h of
P-mean was lost per step, T·λ·0.0035h ≈ 0.7 in log δ at 1,430,895 steps: the lower end was
1.3075 for an upper end 1.3394 (the PRV accountant: 1.3389).  Those buckets are now cut as
the narrow clump's, on stride 2, where the plain buckets' predicted loss is large.  Merging
is a post-processing and every atom is still certified by _bucket_level0, so the lower ends
stay below independent values and the one-step law stays dominated by the pair.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpcalc.mechanisms.subsampled_gaussian import SubsampledGaussian
from dpcalc.pld import discretise, eps_search
from dpcalc.pld import sides as sides_mod
from dpcalc.pld.compose import _first_rho, _log_eta
from dpcalc.relations import pld

# q 1.23e-4, σ 0.73, 1,430,895 steps, δ 1e-5: the PRV accountant (Gopi, Lee & Wutschitz
# 2021; prv_accountant 0.2.0, eps_error 0.005, in a benchmark venv) brackets ε in
# [1.33393, 1.34395], estimate 1.33894
_PRV_LOW, _PRV_HIGH = 1.33393, 1.34395


def _recording_plans(monkeypatch) -> list:
    """_clump_plan's answers, in order."""
    said: list = []
    real = sides_mod._clump_plan

    def spy(*args, **kwargs):
        said.append(real(*args, **kwargs))
        return said[-1]

    monkeypatch.setattr(sides_mod, "_clump_plan", spy)
    return said


def _opt_side(q, sigma, steps, delta):
    """The first pass's one-step sides of the remove direction."""
    pair = SubsampledGaussian(q, sigma)
    ld = math.log(delta)
    pl = eps_search._plans_eps(pair, [steps], ld, 1e-3)["remove"]
    return pair, pl, sides_mod._make_sides(pair, "remove", pl, _first_rho(1e-3), steps,
                                          _log_eta(ld, 1e-3, steps))


def test_the_lower_end_at_q_1_23e_4_is_tight_and_the_upper_end_unchanged():
    # was [1.30754, 1.33936]: the lower end 2.4 % below the upper one
    lower, upper = pld.epsilon_bounds(1.23e-4, 0.73, 1_430_895, math.log(1e-5))
    assert lower >= 1.335 and upper <= 1.3394
    # two certified brackets on one value meet
    assert lower <= _PRV_HIGH and upper >= _PRV_LOW


def test_the_bracket_at_q_1_2e_5_meets_the_tolerance_at_the_first_pass():
    # was [0.151894, 0.152369] (3.1e-3 wide after a second pass, 0.60 s): the first pass's
    # grid hit _level0's size cap, whose coarser spacing the edge's cuts are now made for
    lower, upper = pld.epsilon_bounds(1.2e-5, 0.97, 8_351_372, math.log(1e-5))
    assert (upper - lower) / upper <= 1e-3
    assert lower >= 0.1522
    # and below the upper end that the old code's finer second pass certified
    assert lower <= 0.1523691


def test_the_edge_buckets_are_cut_only_where_the_plain_buckets_lose_much(monkeypatch):
    said = _recording_plans(monkeypatch)
    _opt_side(1.23e-4, 0.73, 1_430_895, 1e-5)
    assert said and said[0] is not None
    edge, cells, stride, narrow = said[0]
    assert edge == math.log1p(-1.23e-4) and stride == sides_mod._EDGE_STRIDE and not narrow
    # typical cases: the plain buckets lose little at the edge (no new build, same results)
    for args in [(0.01, 4.0, 10_000, 1e-5), (0.0043, 1.1, 14_000, 1e-5),
                 (4.9e-4, 0.777, 117_887, 1e-5)]:
        said.clear()
        _opt_side(*args)
        assert all(p is None or p[3] for p in said), (args, said)


def test_the_edge_offset_reports_its_lowering():
    pair, pl, sides = _opt_side(1.23e-4, 0.73, 1_430_895, 1e-5)
    h = sides[True].h0
    low: list = []
    off = discretise._edge_offset(pair, "remove", h, low)
    assert off == discretise._edge_offset(pair, "remove", h)
    # the loss the diagnosis found: T·λ·lowering ≈ 0.7 in log δ (0.0035h per step)
    assert 0.3 <= 1_430_895 * pl.lam * low[0] <= 1.5
    assert 0.001 * h <= low[0] <= 0.01 * h


def test_after_a_size_cap_the_edge_buckets_are_cut_for_the_capped_spacing(monkeypatch):
    seen = []
    real = sides_mod._clump_level0

    def spy(pair, direction, ell, jpos, tb, off, h, stride, cuts):
        seen.append((h, stride))
        return real(pair, direction, ell, jpos, tb, off, h, stride, cuts)

    monkeypatch.setattr(sides_mod, "_clump_level0", spy)
    _, _, sides = _opt_side(1.2e-5, 0.97, 8_351_372, 1e-5)
    assert seen == [(sides[False].h0, sides_mod._EDGE_STRIDE)]


# --- the one-step law with the edge buckets is dominated by the pair -------------------

def _delta1(eps, q, s):
    """Exact one-step remove-direction δ(ε) = P(L > ε) − e^ε·Q(L > ε) (mpmath)."""
    v = (mp.exp(eps) - 1 + q) / q
    x = s * s * mp.log(v) + mp.mpf(1) / 2 if v > 0 else -mp.inf
    pq = mp.ncdf(-x / s)
    pp = (1 - q) * pq + q * mp.ncdf(-(x - 1) / s)
    return pp - mp.exp(eps) * pq


@pytest.mark.parametrize("q, sigma, steps", [(1.23e-4, 0.73, 1_430_895),
                                             (1.2e-5, 0.97, 8_351_372)])
def test_the_one_step_law_with_edge_buckets_is_dominated(monkeypatch, q, sigma, steps):
    """δ'(ε) = Σ_{ℓ>ε} p(1 − e^{ε−ℓ}) of the one-step optimistic law is at most the exact
    δ(ε) just below and above each of its first atoms and over the bulk (dominance ⟺ the
    hockey-stick curves at every ε)."""
    said = _recording_plans(monkeypatch)
    _, _, sides = _opt_side(q, sigma, steps, 1e-5)
    assert said[0] is not None and not said[0][3]          # the edge buckets were cut
    side = sides[False]
    b = side.engine.base
    ell = side.off + (b.lo + np.arange(b.t.size)) * side.h0
    with np.errstate(divide="ignore"):
        lm = np.log(b.t) + b.logscale + side.c - side.lam * ell
    keep = np.isfinite(lm)
    ell, p = ell[keep], np.exp(lm[keep])
    h = side.h0
    eps = np.concatenate((ell[:12] - 1e-3 * h, ell[:12] + 1e-3 * h,
                          np.linspace(ell[0] - 3 * h, ell[0] + 200 * h, 40),
                          np.linspace(0.0, 1.0, 11)))
    with mp.workdps(40):
        qq, ss = mp.mpf(q), mp.mpf(sigma)
        for e in eps:
            sel = ell > e
            approx = float(np.sum(p[sel] * -np.expm1(e - ell[sel])))
            exact = float(_delta1(mp.mpf(float(e)), qq, ss))
            assert approx <= exact * (1 + 1e-9) + 1e-300, (e, approx, exact)
