"""Closed forms of the dominating pairs in dpcalc.mechanisms against mpmath oracles."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpcalc.mechanisms import fixed_batch, poisson_add_remove, poisson_replace_one
from dpcalc.mechanisms._mixture import MixturePair
from dpcalc.relations import gaussian

DPS = 40


def _mp_mixture(pair: MixturePair):
    """(P density, Q density, P tail, Q tail) of a MixturePair in mpmath."""
    s = mpmath.mpf(pair.sigma)
    mpf = mpmath.mpf
    a = [(mpmath.exp(mpf(w)), mpf(m)) for w, m in zip(pair.log_a, pair.mp, strict=True)]
    b = [(mpmath.exp(mpf(w)), mpf(m)) for w, m in zip(pair.log_b, pair.mq, strict=True)]

    def dens(comp, x):
        return sum(w * mpmath.npdf(x, m, s) for w, m in comp)

    def tail(comp, x, sign=-1):
        return sum(w * mpmath.ncdf(sign * (x - m) / s) for w, m in comp)

    return (lambda x: dens(a, x), lambda x: dens(b, x), lambda x, sg=-1: tail(a, x, sg),
            lambda x, sg=-1: tail(b, x, sg))


def _mp_log_delta(pair: MixturePair, eps: float):
    """Exact log δ(ε) of a monotone-loss mixture pair: threshold by findroot, then tails."""
    with mpmath.workdps(DPS):
        p, q, pt, qt = _mp_mixture(pair)
        e = mpmath.mpf(eps)
        x0 = mpmath.mpf(float(pair.x_of_loss([eps])[0][0]))
        x = mpmath.findroot(lambda t: mpmath.log(p(t)) - mpmath.log(q(t)) - e, x0)
        return mpmath.log(pt(x) - mpmath.exp(e) * qt(x))


PAIRS = [
    ("remove q=0.01", lambda: poisson_add_remove.pair(0.01, 1.0, "remove")),
    ("add q=0.01", lambda: poisson_add_remove.pair(0.01, 1.0, "add")),
    ("remove q=0.2 K=3", lambda: poisson_add_remove.pair(0.2, 2.0, "remove", k=3)),
    ("add q=0.2 K=3", lambda: poisson_add_remove.pair(0.2, 2.0, "add", k=3)),
    ("replace q=0.01", lambda: poisson_replace_one.pair(0.01, 1.0)),
    ("replace q=0.3 K=2", lambda: poisson_replace_one.pair(0.3, 0.8, k=2)),
    ("fixed R p=0.05", lambda: fixed_batch.SymmetrisedPair(0.05, 1.1).remove),
]


@pytest.mark.parametrize("name,make", PAIRS, ids=[p[0] for p in PAIRS])
def test_loss_and_tails_within_their_error_bounds(name, make):
    pair = make()
    lo, hi = pair.loss_range()
    grid = [v for v in (-3.0, -0.5, 0.0, 0.2, 1.0, 4.0, 15.0) if lo < v < hi]
    pu, pl, qu, ql, err = pair.log_tails_at_loss(grid)
    with mpmath.workdps(DPS):
        p, q, pt, qt = _mp_mixture(pair)
        for i, ell in enumerate(grid):
            x = mpmath.findroot(lambda t, e=ell: mpmath.log(p(t) / q(t)) - e,
                                mpmath.mpf(float(pair.x_of_loss([ell])[0][0])))
            # lower tails as sums of lower tails (the float weights sum to 1 ± 1e-16 only)
            exact = [mpmath.log(pt(x)), mpmath.log(pt(x, 1)), mpmath.log(qt(x)),
                     mpmath.log(qt(x, 1))]
            for got, want in zip((pu[i], pl[i], qu[i], ql[i]), exact, strict=True):
                assert abs(got - float(want)) <= err[i] + 1e-15 * abs(float(want)), (ell, got,
                                                                                     want)
                assert err[i] < 1e-9


@pytest.mark.parametrize("name,make", PAIRS, ids=[p[0] for p in PAIRS])
@pytest.mark.parametrize("eps", [0.0, 0.3, 2.0, 8.0])
def test_one_step_delta_is_an_upper_bound_and_tight(name, make, eps):
    pair = make()
    got = pair.log_delta(eps)
    if eps >= pair.loss_range()[1]:  # the loss never exceeds ε: δ = 0 exactly
        assert got == -math.inf
        return
    want = float(_mp_log_delta(pair, eps))
    assert got >= want
    assert got - want < 1e-8


def test_poisson_k1_matches_the_existing_accountant_one_step():
    # K = 1 equals today: the existing certified PLD bracket of one step contains the pair
    from dpcalc.relations import pld

    for eps in (0.1, 1.0, 3.0):
        lo, up = pld.log_delta_bounds(0.01, 1.0, 1, eps)
        ours = poisson_add_remove.log_delta(0.01, 1.0, eps)
        assert lo - 1e-9 <= ours <= up + 1e-9


def test_q_one_is_the_gaussian_with_the_right_sensitivity():
    for eps in (0.0, 0.5, 3.0):
        g1 = gaussian.analytic_log_delta(1.3, eps, 1.0)
        g2 = gaussian.analytic_log_delta(1.3, eps, 2.0)
        assert poisson_add_remove.log_delta(1.0, 1.3, eps) == pytest.approx(g1, abs=1e-9)
        # replace-one moves the sum by 2: not dp_accounting's #378
        assert poisson_replace_one.log_delta(1.0, 1.3, eps) == pytest.approx(g2, abs=1e-9)
        assert fixed_batch.SymmetrisedPair(1.0, 1.3).log_delta(eps) == pytest.approx(
            g2, abs=1e-9)
        # K examples, all sampled: sensitivity K
        g3 = gaussian.analytic_log_delta(1.3, eps, 3.0)
        assert poisson_add_remove.log_delta(1.0, 1.3, eps, k=3) == pytest.approx(g3, abs=1e-9)


@pytest.mark.parametrize("q,sigma", [(0.01, 1.0), (0.1, 0.7), (0.5, 2.0)])
def test_orderings_between_relations_and_samplings(q, sigma):
    for eps in (0.0, 0.2, 1.0, 4.0):
        ar = poisson_add_remove.log_delta(q, sigma, eps)
        ro = poisson_replace_one.log_delta(q, sigma, eps)
        fb = fixed_batch.SymmetrisedPair(q, sigma).log_delta(eps)
        assert ro >= ar - 1e-12          # replace-one ≥ add-remove
        assert fb >= ro - 1e-8           # the displaced example (equal at ε = 0: both TV)
        k2 = poisson_add_remove.log_delta(q, sigma, eps, k=2)
        assert k2 >= ar - 1e-12          # more examples per user, more loss


@pytest.mark.parametrize("p,sigma", [(0.01, 0.5), (0.2, 1.0), (0.7, 3.0), (0.99, 0.4)])
def test_remove_dominates_add_for_positive_eps(p, sigma):
    # step (iii) of fixed_batch's proof, numerically: δ_R(ε) ≥ δ_A(ε) for ε ≥ 0
    s = fixed_batch.SymmetrisedPair(p, sigma)
    add = MixturePair(sigma, [0.0], [0.0], s.remove.log_a, -s.remove.mp)
    for eps in (0.0, 0.05, 0.5, 2.0, 6.0):
        assert s.remove.log_delta(eps) >= add.log_delta(eps) - 1e-8  # equal at ε = 0


def test_symmetrised_pair_profile_for_negative_eps():
    # H_α(P*‖Q*) = 1 − α + α H_{1/α}(P*‖Q*) (symmetry) and it dominates the add direction
    s = fixed_batch.SymmetrisedPair(0.1, 1.0)
    add = MixturePair(1.0, [0.0], [0.0], s.remove.log_a, -s.remove.mp)
    for eps in (0.3, 1.0, 3.0):
        alpha = math.exp(-eps)
        want = 1 - alpha + alpha * math.exp(s.log_delta(eps))
        assert math.exp(s.log_delta(-eps)) == pytest.approx(want, rel=1e-9)
        assert s.log_delta(-eps) >= add.log_delta(-eps) - 1e-12
        assert s.log_delta(-eps) >= s.remove.log_delta(-eps) - 1e-12
    # masses: the tails at ℓ = 0 and the atom add up to one
    pu, pl, qu, ql, _ = s.log_tails_at_loss([0.0])
    assert math.exp(pu[0]) + math.exp(ql[0]) + s.atom() == pytest.approx(1.0, abs=1e-12) or \
        math.exp(pu[0]) + math.exp(pl[0]) == pytest.approx(1.0, abs=1e-12)


def test_cgf_matches_mpmath_quadrature():
    pair = poisson_replace_one.pair(0.1, 1.0)
    k, _, _ = pair.cgf(2.0)
    with mpmath.workdps(25):
        p, q, _, _ = _mp_mixture(pair)
        val = mpmath.quad(lambda t: p(t) ** 3 / q(t) ** 2, [-mpmath.inf, 0, mpmath.inf])
    assert k == pytest.approx(float(mpmath.log(val)), rel=1e-6, abs=1e-9)
    s = fixed_batch.SymmetrisedPair(0.1, 1.0)
    assert s.cgf(0.0)[0] == pytest.approx(0.0, abs=1e-6)
    # E_P*[e^{−L*}] = 1 (a likelihood ratio integrates to one): K(−1) = 0
    assert s.cgf(-1.0)[0] == pytest.approx(0.0, abs=1e-5)


def test_fixed_batch_refuses_several_examples_per_user():
    with pytest.raises(ValueError, match="no established dominating pair"):
        fixed_batch.pair(64, 10000, 1.0, k=2)
    with pytest.raises(ValueError, match="batch size"):
        fixed_batch.pair(20000, 10000, 1.0)


def test_support_covers_the_bulk():
    pair = poisson_replace_one.pair(0.05, 1.0)
    lo, hi = pair.support(math.log(1e-12))
    pu, pl, _, _, _ = pair.log_tails_at_loss([lo, hi])
    assert math.exp(pl[0]) <= 1e-12 and math.exp(pu[1]) <= 1e-12
    assert np.all(np.diff(pair.loss(np.linspace(-5, 5, 101))) > 0)


@pytest.mark.parametrize("k,q", [(1, 0.01), (2, 0.0064), (7, 0.3), (60, 1e-3), (400, 0.9)])
def test_binomial_weights_within_their_error_bound(k, q):
    from dpcalc.mechanisms._mixture import log_binomial_weights

    lw, err = log_binomial_weights(k, q)
    with mpmath.workdps(50):
        qq = mpmath.mpf(q)
        for j in range(k + 1):
            exact = mpmath.log(mpmath.binomial(k, j)) + j * mpmath.log(qq) + (k - j) * \
                mpmath.log1p(-qq)
            assert abs(lw[j] - float(exact)) <= err[j]


def _mp_fixed_batch_tails(p: float, sigma: float, ell: float):
    """log P*(L > ℓ), log P*(L ≤ ℓ), log Q*(L > ℓ), log Q*(L ≤ ℓ) of the symmetrised pair in
    mpmath, from R's closed threshold x(|ℓ|) = 1 + (σ²/2)·log1p(expm1(|ℓ|)/p)."""
    with mpmath.workdps(DPS):
        s, pp, a = mpmath.mpf(sigma), mpmath.mpf(p), abs(mpmath.mpf(ell))
        x = 1 + s * s / 2 * mpmath.log1p(mpmath.expm1(a) / pp)
        m_up = (1 - pp) * mpmath.ncdf(-x / s) + pp * mpmath.ncdf(-(x - 2) / s)
        n_up = mpmath.ncdf(-x / s)
        if ell >= 0:
            out = (m_up, 1 - m_up, n_up, 1 - n_up)
        else:   # reflected: P*(L ≤ ℓ) = N₀(L_R ≥ −ℓ), Q*(L ≤ ℓ) = M(L_R ≥ −ℓ)
            out = (1 - n_up, n_up, 1 - m_up, m_up)
        return [float(mpmath.log(v)) for v in out]


@pytest.mark.parametrize("p,sigma", [(1e-6, 0.6), (0.05, 1.1), (0.5, 3.0), (1.0, 1.3),
                                     (0.003, 25.0)])
def test_fixed_batch_tails_from_the_subsampled_gaussian_closed_form(monkeypatch, p, sigma):
    # R = ((1 − p)N(0, σ²) + pN(2, σ²), N(0, σ²)) is the Poisson remove pair at (p, σ/2) read
    # at x = 2y: its tails come from that closed threshold, never from the mixture's Newton
    # inversion (5 times the cost: most of issue 13's fixed-batch rate solve), and stay
    # within their error bounds of mpmath's on both sides of the reflection
    def no_inversion(*args, **kwargs):
        raise AssertionError("the mixture's threshold inversion was asked")

    monkeypatch.setattr(MixturePair, "x_of_loss", no_inversion)
    s = fixed_batch.SymmetrisedPair(p, sigma)
    grid = [-9.0, -1.0, -0.05, 0.0, 1e-9, 0.05, 1.0, 9.0, 40.0]
    pu, pl, qu, ql, err = s.log_tails_at_loss(grid)
    for i, ell in enumerate(grid):
        want = _mp_fixed_batch_tails(p, sigma, ell)
        for got, w in zip((pu[i], pl[i], qu[i], ql[i]), want, strict=True):
            assert abs(got - w) <= err[i], (ell, got, w, err[i])
        assert err[i] < 1e-9


def test_fixed_batch_tails_past_the_closed_forms_range(monkeypatch):
    # expm1(ℓ)/p overflows past ℓ ≈ 709.78 + log p (losses asked at σ ≲ 0.07): those
    # thresholds alone take the mixture's inversion, the rest the closed form (the whole
    # call fell back before, helper-10), and every tail stays within its bound of mpmath's
    asked = []
    real = MixturePair.x_of_loss

    def spy(self, ell):
        asked.extend(np.atleast_1d(ell).tolist())
        return real(self, ell)

    monkeypatch.setattr(MixturePair, "x_of_loss", spy)
    p, sigma = 256 / 60000, 0.05          # 709 + log p = 703.5
    s = fixed_batch.SymmetrisedPair(p, sigma)
    grid = [-800.0, -5.0, 0.0, 1.0, 700.0, 705.0, 800.0]
    pu, pl, qu, ql, err = s.log_tails_at_loss(grid)
    assert sorted(asked) == [705.0, 800.0, 800.0]
    for i, ell in enumerate(grid):
        want = _mp_fixed_batch_tails(p, sigma, ell)
        for got, w in zip((pu[i], pl[i], qu[i], ql[i]), want, strict=True):
            assert abs(got - w) <= err[i] + 1e-15 * abs(w), (ell, got, w, err[i])


def test_subsampled_gaussian_relative_bounds_cover_large_log_errors():
    # the tails' bounds are on their logs; the engine reads relative ones and moves each tail
    # by twice its bound: 1 + 2e covers e^e only up to e = 1.25.  Near the edge at a huge σ
    # the logs' bounds reach 120 (and 1e199): passed as they were, a tail up to e^120 times
    # too small was claimed within a factor 241; beyond 1.25 the engine now reads expm1(e)
    from dpcalc.mechanisms.subsampled_gaussian import SubsampledGaussian, _tails

    q, sigma = 0.01, 84305.2
    edge = math.log1p(-q)
    for direction, ell in (("remove", edge + np.array([1e-9, 1e-7, 1e-5, 1e-3, 0.5])),
                           ("add", -edge - np.array([1e-9, 1e-7, 1e-5, 1e-3, 0.5]))):
        logs = _tails(ell, q, sigma, direction)
        rel = SubsampledGaussian(q, sigma).tails(ell, direction)
        for f in ("ePup", "ePlo", "eQup", "eQlo"):
            e, r = getattr(logs, f), getattr(rel, f)
            assert np.all(np.isfinite(r))
            assert np.all(1.0 + 2.0 * r >= np.exp(np.minimum(e, 700.0)) * (1 - 1e-12))
            assert np.all(r[e <= 1.25] == e[e <= 1.25])
        assert np.any(logs.ePup > 1.25) or np.any(logs.eQup > 1.25)
