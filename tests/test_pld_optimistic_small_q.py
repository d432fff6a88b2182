"""The optimistic (lower) side of the PLD engine at small sampling rates.

At small q the remove-direction loss L = log(1 − q + q·e^{(2x−1)/(2σ²)}) has most of its mass
in a clump within ~q of its hard lower edge log(1 − q), narrower than the grid.  The
optimistic side merges that clump into a few buckets whose likelihood ratios sit on the
final coarse grid (dpcalc.pld.discretise._clump_level0); before, every coarsening lowered
the composed clump by up to a cell and the lower end collapsed (q = 1e-5: 0.16 against
0.734).  Soundness: the lower end stays below independent references and exact values
(q = 1: the Gaussian mechanism; T = 1, 2 by quadrature), and the one-step law with the
merged clump is dominated by the pair (its privacy curve below the exact one at every ε).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpcalc.mechanisms.subsampled_gaussian import SubsampledGaussian
from dpcalc.pld import discretise, eps_search
from dpcalc.pld import plan as plan_mod
from dpcalc.pld import sides as sides_mod
from dpcalc.pld.compose import _first_rho, _log_eta
from dpcalc.relations import pld


@pytest.fixture(autouse=True)
def _mp_digits():
    """40 digits for the exact curves, restored afterwards (mpmath's precision is global)."""
    with mp.workdps(40):
        yield


# --- exact privacy curves of the subsampled Gaussian (mpmath) -------------------------

def _x_of(ell, q, s):
    """x with L_remove(x) = ℓ, −inf below the edge."""
    v = (mp.exp(ell) - 1 + q) / q
    return s * s * mp.log(v) + mp.mpf(1) / 2 if v > 0 else -mp.inf


def _delta1(eps, q, s, direction):
    """Exact one-step δ(ε) = P(L > ε) − e^ε·Q(L > ε) for any real ε."""
    eps = mp.mpf(eps)
    if direction == "remove":
        x = _x_of(eps, q, s)
        pq = mp.ncdf(-x / s)
        pp = (1 - q) * pq + q * mp.ncdf(-(x - 1) / s)
        return pp - mp.exp(eps) * pq
    x = _x_of(-eps, q, s)           # L_add > ε ⟺ x < x(−ε)
    if x == -mp.inf:
        return mp.mpf(0)
    pp = mp.ncdf(x / s)
    pq = (1 - q) * pp + q * mp.ncdf((x - 1) / s)
    return pp - mp.exp(eps) * pq


def _loss(x, q, s):
    return mp.log(1 - q + q * mp.exp((2 * x - 1) / (2 * s * s)))


def _delta2(eps, q, s, direction):
    """Exact two-step δ(ε) = E_{x1∼P}[δ_1(ε − L(x1))] (one-dimensional quadrature)."""
    if direction == "remove":
        def f(x):
            dens = (1 - q) * mp.npdf(x, 0, s) + q * mp.npdf(x, 1, s)
            return dens * _delta1(eps - _loss(x, q, s), q, s, "remove")
    else:
        def f(x):
            return mp.npdf(x, 0, s) * _delta1(eps + _loss(x, q, s), q, s, "add")
    pts = [-mp.inf] + [mp.mpf(k) / 2 for k in range(-12, 25)] + [mp.inf]
    return mp.quad(f, pts)


def _exact_log_delta(eps, q, s, steps):
    fn = _delta1 if steps == 1 else _delta2
    return float(mp.log(max(fn(eps, q, s, "remove"), fn(eps, q, s, "add"))))


# --- end to end (the seven references: tests/test_small_q_reference.py) ---

@pytest.mark.parametrize("q, sigma, steps, delta, reference, within", [
    (1e-5, 0.6, 1_000_000, 1e-9, 0.7343517728041924, 0.01),    # was 0.16 (−78 %)
    (1e-4, 0.8, 100_000, 1e-10, 0.5468894107661019, 0.02),    # was −2.8 %
])
def test_small_q_lower_end_is_tight(q, sigma, steps, delta, reference, within):
    lower, _ = pld.epsilon_bounds(q, sigma, steps, math.log(delta))
    assert reference * (1 - within) <= lower <= reference * (1 + 1e-6)


def test_small_q_and_tiny_delta_bracket_is_narrow():
    # q = 3e-5, δ = 1e-12: the bracket was [1.034, 1.316]
    lower, upper = pld.epsilon_bounds(3e-5, 0.7, 1_000_000, math.log(1e-12))
    assert lower <= upper
    assert lower >= 0.98 * upper


@pytest.mark.parametrize("q, sigma, steps, eps", [
    (1e-5, 0.6, 1, 1e-5), (1e-3, 0.5, 1, 0.002), (1e-3, 0.5, 2, 0.004),
    (1e-4, 0.8, 2, 2e-4), (0.05, 1.0, 2, 0.05),
])
def test_lower_end_below_exact_one_and_two_steps(q, sigma, steps, eps):
    lo, up = pld.log_delta_bounds(q, sigma, steps, eps)
    exact = _exact_log_delta(eps, q, sigma, steps)
    assert lo <= exact + 1e-9
    assert up >= exact - 1e-9


@pytest.mark.parametrize("sigma, steps, delta", [(1.0, 1, 1e-5), (2.0, 100, 1e-6)])
def test_q_one_lower_end_below_exact_gaussian(sigma, steps, delta):
    mu = math.sqrt(steps) / sigma

    def dlt(e):
        return (0.5 * math.erfc((e / mu - mu / 2) / math.sqrt(2))
                - math.exp(e) * 0.5 * math.erfc((e / mu + mu / 2) / math.sqrt(2)))
    lower, upper = pld.epsilon_bounds(1.0, sigma, steps, math.log(delta))
    assert dlt(lower) >= delta      # ε_true ≥ lower: δ(lower) ≥ δ
    assert dlt(upper) <= delta


def test_composed_lower_below_a_finer_upper():
    # q = 1e-4, T = 64: the lower end at a coarse tolerance below a finer certified upper
    lo, _ = pld.log_delta_bounds(1e-4, 0.8, 64, 0.004, tolerance=0.05)
    _, up = pld.log_delta_bounds(1e-4, 0.8, 64, 0.004, tolerance=1e-4)
    assert lo <= up


# --- the one-step law with the merged clump --------------------------------------------

def _opt_side(q, sigma, steps, delta, rho=None):
    pair = SubsampledGaussian(q, sigma)
    ld = math.log(delta)
    pl = eps_search._plans_eps(pair, [steps], ld, 1e-3)["remove"]
    rho = _first_rho(1e-3) if rho is None else rho
    sides = sides_mod._make_sides(pair, "remove", pl, rho, steps, _log_eta(ld, 1e-3, steps))
    return pair, sides


def _one_step_atoms(side):
    b = side.engine.base
    ell = side.off + (b.lo + np.arange(b.t.size)) * side.h0
    with np.errstate(divide="ignore"):
        lm = np.log(b.t) + b.logscale + side.c - side.lam * ell
    keep = np.isfinite(lm)
    return ell[keep], lm[keep]


def test_clump_is_merged_and_on_the_coarse_grid():
    pair, sides = _opt_side(1e-5, 0.6, 1_000_000, 1e-9)
    opt, pess = sides[False], sides[True]
    assert opt.off != pess.off                  # the optimistic side's own offset
    ell, lm = _one_step_atoms(opt)
    # the clump's first atom carries almost all of the mass, at the bottom of the grid
    assert ell[0] < 0 and math.exp(lm[0]) > 0.99
    # its ratio P(L ≤ β)/Q(L ≤ β) for the cut found is at or just above the grid point
    edge = math.log1p(-1e-5)
    h = opt.h0
    stride = 64
    got = None
    for f in (0.5, 0.625, 0.75, 0.875, 1.0):
        got = discretise._clump_cuts_at(pair, "remove", h, stride, edge + f * stride * h, 4)
        if got is not None and len(got[1]) > 1:
            break
    off, cuts = got
    assert off == opt.off
    q, s = mp.mpf(1e-5), mp.mpf(0.6)
    x0 = _x_of(mp.mpf(cuts[0]), q, s)
    pq = mp.ncdf(x0 / s)
    pp = (1 - q) * pq + q * mp.ncdf((x0 - 1) / s)
    lr = mp.log(pp) - mp.log(pq)
    # (a gap g costs the composition about T·λ·g nats: 1e-5 here)
    assert off <= lr <= off + 1e-12


@pytest.mark.parametrize("q, sigma, steps, delta", [
    (1e-5, 0.6, 1_000_000, 1e-9), (1e-4, 0.8, 100_000, 1e-10), (1e-3, 0.5, 20_000, 1e-5),
])
def test_one_step_optimistic_law_is_dominated(q, sigma, steps, delta):
    """δ'(ε) = Σ_{ℓ>ε} p(1 − e^{ε−ℓ}) of the one-step optimistic law is at most the exact
    δ(ε) at every ε (dominance ⟺ the hockey-stick curves at every α = e^ε > 0), checked
    just below and above each of its first atoms and over the bulk."""
    _, sides = _opt_side(q, sigma, steps, delta)
    ell, lm = _one_step_atoms(sides[False])
    p = np.exp(lm)
    h = sides[False].h0
    eps = np.concatenate((ell[:12] - 1e-3 * h, ell[:12] + 1e-3 * h,
                          np.linspace(ell[0] - 3 * h, ell[0] + 200 * h, 60),
                          np.linspace(0.0, 2.0, 21)))
    qq, ss = mp.mpf(q), mp.mpf(sigma)
    for e in eps:
        sel = ell > e
        approx = float(np.sum(p[sel] * -np.expm1(e - ell[sel])))
        exact = _delta1(mp.mpf(float(e)), qq, ss, "remove")
        assert approx <= float(exact) * (1 + 1e-9) + 1e-300, (e, approx, float(exact))


def test_plan_items_whose_sides_have_different_grids_are_read_at_their_own_levels(
        monkeypatch):
    """Review: in a plan of several items, the optimistic side's own grid next to the edge
    can keep h where the pessimistic one hits the size cap and doubles it.  Each side must
    sit on the shared lattice at its own level; read at the other side's level the lower end
    was 0.691 above the upper end 0.441.  The cap is set to the size at which the two sides
    differ here (if a later change moves that size, the first assertion says so)."""
    from dpcalc.pld import compose
    from dpcalc.pld.accountant import epsilon_bounds

    monkeypatch.setattr(plan_mod, "_N0_MAX", 52457)
    seen: dict = {}       # (ρ, direction) -> {pessimistic?: h0} (a pass may compose its
    real = compose._fixed_part  # sides in one call or in two)

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        pair, t_max, fixed, rho, plan, log_eta, sides, d = args
        seen.setdefault((rho, d), {}).update({pess: side.h0 for pess, side in out[0].items()})
        return out

    monkeypatch.setattr(compose, "_fixed_part", spy)
    items = [(SubsampledGaussian(1e-5, 0.6), 300_000), (SubsampledGaussian(3e-4, 0.9), 50_000)]
    lower, upper = epsilon_bounds(items, math.log(1e-6))
    assert any(len(set(h.values())) > 1 for h in seen.values()), \
        "the sides' grids no longer differ"
    assert 0 < lower <= upper
    assert upper <= 0.4411 and lower >= 0.41     # parent: (0.4126, 0.4410)
