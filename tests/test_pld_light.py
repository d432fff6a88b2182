"""pld.light: a spiky square's light part on a coarser grid, on the pessimistic side.

a*a = H*(a + L) + L*L (H: the heaviest entries, L the rest) with L*L replaced by C(L)*C(L),
C the connect-the-dots coarsening: a mean-preserving spread in e^{−ℓ} of L's atoms, so the
hockey-stick divergence of the result is at least the exact square's at every ε (sound), and
the engine's upper ends move by little where the light part is light."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpcalc.pld.pmf as pmf
from dpcalc.pld.light import light_square, plan_su
from dpcalc.pld.pmf import _coarsen_pess, _ctd_factors, _Dist
from dpcalc.relations import pld


def _hockey(masses: np.ndarray, losses: np.ndarray, eps: float) -> float:
    return float(np.sum(masses * np.clip(1.0 - np.exp(eps - losses), 0.0, None)))


@pytest.mark.parametrize("su", [1, 2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_coarse_light_square_dominates_the_exact_one(su, seed):
    # an untilted (λ = 0) spike and a long light tail on grid h: the square built as the
    # engine builds it (heavy part exact, light part coarse) has δ(ε) at least the exact
    # square's at every ε, and the same mass (connect-the-dots keeps P-mass at λ = 0)
    rng = np.random.default_rng(seed)
    h, n, lo = 0.01, 4000, -37
    t = rng.random(n) * np.exp(-np.linspace(0.0, 30.0, n)) * 1e-3
    t[37:40] = [0.3, 1.0, 0.2]                       # the spike
    heavy = np.argsort(t)[-16:]
    light = t.copy()
    light[heavy] = 0.0
    part = _Dist(lo, 0, light, 0.0, 0.0, 0.0)
    out_lo = 2 * lo
    vals, first, err, norm = light_square(
        part, su, lambda d: _coarsen_pess(d, h * 2.0 ** d.s, 0.0), out_lo, 1.0)
    assert norm == 1.0 and err >= 0.0
    exact = np.convolve(t, t)
    built = np.convolve(t - light, t + light)        # H*(a + L)
    off = max(0, -first)
    got = np.zeros(max(exact.size, first + vals.size) + off)
    got[off:off + built.size] += built
    got[first + off:first + off + vals.size] += vals
    ell_exact = (out_lo + np.arange(exact.size)) * h
    ell_got = (out_lo - off + np.arange(got.size)) * h
    assert got.sum() == pytest.approx(exact.sum(), rel=1e-12)
    raised = 0
    for eps in (-0.5, -0.2, 0.0, 0.05, 0.3, 1.0, 3.0, 10.0):
        d_exact, d_got = _hockey(exact, ell_exact, eps), _hockey(got, ell_got, eps)
        assert d_got >= d_exact * (1 - 1e-12) - 1e-15
        raised += d_got > d_exact * (1 + 1e-9)
    assert raised          # (the spread did something: not a vacuous comparison)


def test_plan_su_pays_only_for_long_light_parts_within_the_share():
    assert plan_su(10_000, 1e-3, 0.5, 3) == 0          # short: the FFT costs little
    assert plan_su(100_000, 1e-3, 0.5, 0) == 0         # the λh rule allows no level
    assert plan_su(100_000, 1e-3, 0.5, 3) == 3         # a light tail: three levels
    assert plan_su(100_000, 1e-3, 0.5, 2) == 2         # (as many as the λh rule allows)
    assert plan_su(100_000, 0.03, 0.5, 3) == 0         # no spike: a share of 3 %


def test_ctd_factors_norm_is_one_untilted_and_grows_with_the_tilt():
    cu, cd = _ctd_factors(0.01, 0.0)
    assert cu + cd == pytest.approx(1.0, abs=1e-15)
    cu, cd = _ctd_factors(0.01, 30.0)
    assert cu + cd > 1.0


def _fft_work(monkeypatch):
    work = [0.0]
    real = np.fft.rfft

    def counted(x, n=None, *args, **kwargs):
        m = n or len(x)
        work[0] += m * math.log2(max(m, 2))
        return real(x, n, *args, **kwargs)

    monkeypatch.setattr(np.fft, "rfft", counted)
    return work


@pytest.mark.parametrize("point", [
    (1.811e-07, 0.9445, 9670927, math.log(2.236e-262)),     # random case 297's root
    (1.224e-05, 0.9712, 8351372, math.log(3.269e-120)),     # random case 51
    (1.714e-08, 0.7788874, 4953013, math.log(1.353e-59)),   # random case 34's root
])
def test_far_tail_first_passes_do_less_fft_work_for_nearly_the_same_upper_end(
        monkeypatch, point):
    # the first squarings of a spike and a 263,482-point tail were most of a pass
    work = _fft_work(monkeypatch)
    with_light = pld.epsilon_upper(*point, 1e-3)
    light_work = work[0]
    monkeypatch.setattr(pmf, "_LIGHT", False)
    work[0] = 0.0
    without = pld.epsilon_upper(*point, 1e-3)
    assert light_work < 0.75 * work[0]
    assert with_light == pytest.approx(without, rel=1e-5)


def test_the_light_squares_core_tail_split_keeps_the_error_term_down(monkeypatch):
    # q 1.27e-4, σ 1.10, 577,545 steps, log δ −46.5, where the error term sets the upper
    # end: with the plain FFT for C(L)*C(L) its round-off bound had raised the upper end
    # 3.6 % (1.0794 for 1.0416 without the light squares); the core/tail split's bound, as
    # pmf._conv's squares use, keeps it at most the fine one (here with the light part's
    # mass cap lifted: a share of 0.03–0.09, which the engine leaves to the fine grid)
    import dpcalc.pld.light as light

    point = (0.00012673305216812195, 1.0987896740804137, 577545, -46.53468123549666)
    fine = pld.epsilon_upper(*point, 1e-3)
    monkeypatch.setattr(light, "_LIGHT_MASS_MAX", 1.0)
    assert pld.epsilon_upper(*point, 1e-3) <= fine * (1 + 1e-6)
