"""K = 2 examples per user (Poisson, add/remove): the thresholds in closed form
(dpcalc.mechanisms._poisson_k2) against mpmath, and the engine's use of them."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpcalc.mechanisms import poisson_add_remove as par
from dpcalc.mechanisms._mixture import MixturePair
from dpcalc.mechanisms._poisson_k2 import K2Side


def _exact(q: float, sigma: float, ell: float, direction: str) -> list[float]:
    """log P(L > ℓ), log P(L ≤ ℓ), log Q(L > ℓ), log Q(L ≤ ℓ) at 50 digits: the quadratic's
    root in s = e^{x/σ²} (w = Binomial(·; 2, q)), then the normal tails of each component."""
    with mpmath.workdps(50):
        q_, s, e = mpmath.mpf(q), mpmath.mpf(sigma), mpmath.mpf(ell)
        w = [(1 - q_) ** 2, 2 * q_ * (1 - q_), q_ ** 2]
        d = mpmath.expm1(-e if direction == "add" else e) + q_ * (2 - q_)   # e^ℓ − w₀
        if d <= 0:     # below the edge: every loss is larger (remove), smaller (add)
            return ([0.0, -math.inf, 0.0, -math.inf] if direction == "remove"
                    else [-math.inf, 0.0, -math.inf, 0.0])
        a = w[2] * mpmath.exp(-2 / s ** 2)
        b = w[1] * mpmath.exp(-1 / (2 * s ** 2))
        x = s ** 2 * mpmath.log(2 * d / (b + mpmath.sqrt(b * b + 4 * a * d)))
        up = [mpmath.ncdf((j - x) / s) for j in range(3)]
        lo = [mpmath.ncdf((x - j) / s) for j in range(3)]
        mix_up = sum(wj * v for wj, v in zip(w, up, strict=True))
        mix_lo = sum(wj * v for wj, v in zip(w, lo, strict=True))
        vals = ((mix_up, mix_lo, up[0], lo[0]) if direction == "remove"
                else (lo[0], up[0], mix_lo, mix_up))
        return [float(mpmath.log(v)) for v in vals]


GRID = [-50.0, -3.0, -0.5, -1e-3, -1e-9, 0.0, 1e-9, 1e-3, 0.5, 3.0, 50.0, 600.0]


@pytest.mark.parametrize("q", [1e-8, 1e-4, 0.004, 0.3, 0.9])
@pytest.mark.parametrize("sigma", [0.05, 0.3, 1.1, 8.0, 3e3])
@pytest.mark.parametrize("direction", ["remove", "add"])
def test_tails_within_their_bounds_of_mpmath(q, sigma, direction):
    side = K2Side(par.pair(q, sigma, direction, 2), q, sigma, direction)
    pu, pl, qu, ql, err = side.log_tails_at_loss(GRID)
    for i, ell in enumerate(GRID):
        for got, want in zip((pu[i], pl[i], qu[i], ql[i]), _exact(q, sigma, ell, direction),
                             strict=True):
            if want == -math.inf:
                assert got == -math.inf or got < -700, (ell, got)
            else:
                assert abs(got - want) <= err[i], (ell, got, want, err[i])


def test_the_engine_reads_the_closed_form_for_most_thresholds(monkeypatch):
    # a K = 2 run asks the mixture's Newton inversion only where the closed form certifies
    # x(ℓ) less well (next to the edge, where e^ℓ − w₀ cancels; near the centre at σ ≳ 3):
    # 15 % of the thresholds of this run (all of them before, 2-6 times the cost per point:
    # most of issue 13's K = 2 solves); the bracket is the mixture path's within 1e-7
    from dpcalc.api.dpsgd import dpsgd

    mixture, asked = [], []
    real_x, real_tails = MixturePair.x_of_loss, K2Side.log_tails_at_loss

    def spy_x(self, ell):
        mixture.append(np.size(ell))
        return real_x(self, ell)

    def spy_tails(self, ell):
        asked.append(np.size(ell))
        return real_tails(self, ell)

    monkeypatch.setattr(MixturePair, "x_of_loss", spy_x)
    monkeypatch.setattr(K2Side, "log_tails_at_loss", spy_tails)
    question = dict(batch_size=256, dataset_size=60000, sigma=1.1, epochs=60, delta=1e-5,
                    examples_per_user=2, compare=False)
    r = dpsgd(**question)
    assert sum(asked) > 10_000 and sum(mixture) <= 0.2 * sum(asked), (mixture, asked)
    # the mixture path's bracket (every threshold by the Newton inversion, as before the
    # closed form; [5.264344950, 5.265456498] with the optimistic side on one grid)
    monkeypatch.setattr(K2Side, "log_tails_at_loss",
                        lambda self, ell: self.mixture.log_tails_at_loss(
                            np.atleast_1d(np.asarray(ell, dtype=float))))
    m = dpsgd(**question)
    assert r.bounds.lower == pytest.approx(m.bounds.lower, rel=1e-7)
    assert r.bounds.upper == pytest.approx(m.bounds.upper, rel=1e-7)
    assert m.bounds.upper == pytest.approx(5.265456498, rel=1e-7)


@pytest.mark.parametrize("q,sigma", [(1e-4, 1.0), (0.004, 3.0), (0.3, 10.0), (0.004, 0.3)])
def test_no_threshold_is_certified_much_worse_than_by_the_mixture(q, sigma):
    # the closed form's log errors are u times logs of size ~10, times σ² in x: near the
    # centre at σ ≥ 3 they were up to σ times the mixture's bound; there the mixture answers
    for direction in ("remove", "add"):
        mix = par.pair(q, sigma, direction, 2)
        grid = np.array([-0.5, -1e-3, -1e-6, 0.0, 1e-6, 1e-3, 0.5, 3.0, 20.0])
        mine = K2Side(mix, q, sigma, direction).log_tails_at_loss(grid)[4]
        theirs = mix.log_tails_at_loss(grid)[4]
        assert np.all(mine <= 1.25 * theirs + 1e-15), (direction, mine / theirs)


def test_a_rate_whose_square_is_subnormal_takes_the_mixture():
    # q = 1e-170: w₂ = q² underflows, the linear-space weights lose their relative bounds,
    # and the closed form answered log P(L > 360) = −774.19189 (±6e-12) where the exact tail
    # is −774.13400 (helper-11); below 1e-100 the mixture's inversion answers every point
    q, sigma, ell = 1e-170, 0.05, 360.0
    for direction in ("remove", "add"):
        mix = par.pair(q, sigma, direction, 2)
        got = K2Side(mix, q, sigma, direction).log_tails_at_loss([ell])
        want = mix.log_tails_at_loss([ell])
        for g, w in zip(got, want, strict=True):
            assert g[0] == w[0]
    pu, _, _, _, err = K2Side(par.pair(q, sigma, "remove", 2), q, sigma,
                              "remove").log_tails_at_loss([ell])
    assert abs(pu[0] - (-774.13400)) <= err[0] + 1e-5


@pytest.mark.parametrize("q,sigma", [(256 / 60000, 1.5), (1e-4, 0.7), (0.05, 3.0)])
@pytest.mark.parametrize("direction", ["remove", "add"])
def test_the_estimate_for_the_grid_offset_is_the_closed_form_near_the_edge(
        q, sigma, direction, monkeypatch):
    # the edge offset's 32 × 39 thresholds next to the edge (pld.discretise._edge_offset):
    # closed-form tails, within 1e-9 of the exact ones, and no inversion of the mixture
    # (10,384 points of the MNIST K = 2 σ solve took it, a tenth of its time)
    side = par.engine_pair(q, sigma, 2)._side(direction)
    edge = side.loss_range()[0 if direction == "remove" else 1]
    h = 0.01
    ell = edge + np.sign(0.5 - (direction == "add")) * h * np.concatenate(
        ((np.arange(32) + 1 / 64) / 32, np.arange(1, 38) + 0.5))
    asked = []
    real_x = MixturePair.x_of_loss
    monkeypatch.setattr(MixturePair, "x_of_loss",
                        lambda self, e: asked.append(np.size(e)) or real_x(self, e))
    got = side.log_tails_estimate(ell)
    assert not asked
    for i in range(0, ell.size, 7):
        exact = _exact(q, sigma, float(ell[i]), direction)
        for v, ex in zip((float(g[i]) for g in got[:4]), exact, strict=True):
            assert (v == ex == -math.inf) or abs(v - ex) <= 1e-9 * max(1.0, abs(ex)), (i, v, ex)
