"""The mixture pairs (K ≥ 2, replace-one, fixed batches) at small sampling rates.

Their loss was computed as log Σ a e^t − log Σ b e^t, within 16 ulps of the exponents' scale.
Near L = 0, where the loss of a small-rate step lives (its width is ~q), that left the
threshold x(ℓ) uncertain by ~u/q (1.5e-5 at q = 1e-8), the certified tails as loose, and a
run's bracket 10-1000× wide: at q = 1e-6 a K = 1 mixture gave [0, 1e-3] where the
subsampled Gaussian's own pair certifies 1.57e-5, and a fixed-batch run at q = 1e-6, σ = 2
answered ε = 1.47. The excess form L = log1p(Σ (a − b) e^t / Σ b e^t) keeps the error
relative to the excess (dpcalc.mechanisms._mixture).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpcalc.mechanisms import fixed_batch, poisson_add_remove, poisson_replace_one
from dpcalc.mechanisms._mixture import EnginePair
from dpcalc.mechanisms.subsampled_gaussian import SubsampledGaussian
from dpcalc.pld import accountant
from tests.cli_helpers import run


def _binomial(k, q):
    return [mpmath.binomial(k, j) * q ** j * (1 - q) ** (k - j) for j in range(k + 1)]


def _exact_pairs(q, sigma, k):
    """(name, float pair, exact P components, exact Q components), components (w, mean)."""
    qq = mpmath.mpf(q)
    w = _binomial(k, qq)
    plus = [(w[j], j) for j in range(k + 1)]
    minus = [(w[j], -j) for j in range(k + 1)]
    out = [
        (f"remove K={k}", poisson_add_remove.pair(q, sigma, "remove", k), plus, [(1, 0)]),
        (f"add K={k}", poisson_add_remove.pair(q, sigma, "add", k), [(1, 0)], minus),
        (f"replace K={k}", poisson_replace_one.pair(q, sigma, k), plus, minus),
    ]
    if k == 1:
        out.append(("fixed R", fixed_batch.SymmetrisedPair(q, sigma).remove,
                    [(1 - qq, 0), (qq, 2)], [(1, 0)]))
    return out


def _exact_loss(p_comp, q_comp, sigma, x):
    s2 = mpmath.mpf(sigma) ** 2
    x = mpmath.mpf(x)

    def dens(comp):
        return mpmath.fsum(w * mpmath.exp((m * x - mpmath.mpf(m) ** 2 / 2) / s2)
                           for w, m in comp)

    return mpmath.log(dens(p_comp)) - mpmath.log(dens(q_comp))


CASES = [(q, sigma, k) for q in (1e-3, 1e-6, 1e-9, 1e-12) for sigma, k in ((1.0, 1),
                                                                           (0.7, 3))]


@pytest.mark.parametrize("q,sigma,k", CASES)
def test_loss_within_its_bound_and_relative_near_zero(q, sigma, k):
    xs = np.concatenate([np.linspace(-12 * sigma, 12 * sigma + k, 25), [0.5, 0.4999, 1e-3]])
    with mpmath.workdps(60):
        for name, pair, pc, qc in _exact_pairs(q, sigma, k):
            got, err = pair.loss(xs), pair.loss_error(xs)
            for x, g, e in zip(xs, got, err, strict=True):
                want = _exact_loss(pc, qc, sigma, float(x))
                assert abs(g - float(want)) <= e, (name, x, g, want, e)
                if abs(x) <= 3 * sigma + k:
                    # a few ulps of the loss's own scale (~q), not of the exponents' (~1):
                    # 16u·scale ≈ 1e-14 before, against |L| ~ 1e-12 at q = 1e-12
                    assert e <= 1e-12 * max(abs(float(want)), q), (name, x, e, want)


@pytest.mark.parametrize("q", [1e-4, 1e-8, 1e-12])
def test_thresholds_near_zero_loss_are_sharp(q):
    # x(ℓ) to ~1e-13 at losses of the size of q (it was ~u/q: 1.5e-5 at q = 1e-8)
    for name, pair, _, _ in _exact_pairs(q, 1.0, 2):
        lo, hi = pair.loss_range()
        ell = np.array([v for v in (-q, -0.3 * q, 0.1 * q, q, 4 * q) if lo < v < hi])
        _, dx = pair.x_of_loss(ell)
        assert np.all(dx <= 1e-12), (name, dx)


def _k1_mixture(q, sigma):
    sides = {d: poisson_add_remove.pair(q, sigma, d, 1) for d in ("remove", "add")}
    return EnginePair(("k1-mixture", q, sigma), sides, symmetric=False)


@pytest.mark.parametrize("q,sigma,steps", [(1e-4, 1.0, 100_000), (1e-5, 1.0, 10_000),
                                           (1e-6, 1.0, 1000)])
def test_k1_mixture_run_as_tight_as_the_subsampled_gaussian(q, sigma, steps):
    # the same pair twice: as the K = 1 mixture and as SubsampledGaussian (its own closed
    # form). Both brackets are certified, so they overlap, and the mixture's is now as
    # narrow (it was [0.1267, 0.1736] against [0.1318, 0.1319] at q = 1e-4, [0, 1e-3]
    # against 1.57e-5 at q = 1e-6)
    ld = math.log(1e-5)
    lo_m, up_m = accountant.epsilon_bounds([(_k1_mixture(q, sigma), steps)], ld, 1e-3)
    lo_s, up_s = accountant.epsilon_bounds([(SubsampledGaussian(q, sigma), steps)], ld, 1e-3)
    assert lo_m <= up_s and lo_s <= up_m
    assert up_m <= up_s * 1.01   # (its bracket reaches the grid's resolution cap at 1e-6)


def _bracket(capsys, *args):
    r = run(capsys, "dpsgd", *args, "--steps", "10000", "--delta", "1e-5", "--json")
    assert r.code == 0, r.err
    b = r.json["bounds"]
    return float(b["lower"]), float(b["upper"])


@pytest.mark.parametrize("args", [
    ["--examples-per-user", "2", "--q", "1e-6", "--sigma", "1"],      # was [5.6e-6, 0.02]
    ["--relation", "replace-one", "--q", "1e-6", "--sigma", "1"],     # was [0, 1.75]
    ["--sampling", "fixed-batch", "--q", "1e-6", "--sigma", "2"],     # was [0, 1.47]
    ["--examples-per-user", "3", "--q", "1e-5", "--sigma", "2"],      # was [0.0011, 0.13]
], ids=str)
def test_small_rate_runs_answer_a_narrow_bracket(capsys, args):
    lo, up = _bracket(capsys, *args)
    assert 0 < lo <= up <= lo * 1.01


@pytest.mark.parametrize("q,sigma,k", [(1e-6, 1.0, 2), (1e-5, 2.0, 3), (3e-3, 1.5, 2)])
def test_k_examples_between_one_example_and_the_group_reduction(capsys, q, sigma, k):
    # K examples per user: at least the K = 1 run; at most the K = 1 run at rate
    # p = 1 − (1 − q)^K with noise σ/K (P = (1 − p)Q + p·R, R a mixture of shifts j ≤ K, each
    # a post-processing of the shift K: x ↦ (j/K)x + N(0, σ²(1 − j²/K²)); ZDW22 Thm 10).
    # Every bracket is certified, so the orders hold between their ends.
    lo_k, up_k = _bracket(capsys, "--examples-per-user", str(k), "--q", repr(q),
                          "--sigma", repr(sigma))
    lo_1, _ = _bracket(capsys, "--q", repr(q), "--sigma", repr(sigma))
    p = -math.expm1(k * math.log1p(-q))
    _, up_g = _bracket(capsys, "--q", repr(math.nextafter(p, 1.0)),
                       "--sigma", repr(math.nextafter(sigma / k, 0.0)))
    assert lo_1 <= up_k and lo_k <= up_g


def test_threshold_at_a_table_point_is_not_widened_forever(monkeypatch):
    # replace-one's loss is odd: L(0) = 0 on the 257-point table's middle node. A threshold
    # ℓ = 0 took the cell ending at x = 0, the widening doubled 0 two hundred times, and
    # every threshold of the call paid 400 loss evaluations (MNIST σ, replace-one: 0.09 s
    # per PLD evaluation instead of 0.045)
    from dpcalc.mechanisms import _mixture

    pair = poisson_replace_one.pair(256 / 60000, 1.433, 1)
    calls = []
    loss = _mixture.MixturePair.loss
    monkeypatch.setattr(_mixture.MixturePair, "loss",
                        lambda self, x: calls.append(1) or loss(self, x))
    ell = np.concatenate([np.linspace(-0.66, 0.93, 2000), [0.0]])
    x, dx = pair.x_of_loss(ell)
    assert len(calls) <= 80
    assert x[-1] == 0.0 or abs(x[-1]) <= dx[-1]
    assert np.all(dx <= 1e-11 * (np.abs(x) + 1.0))


def _exact_x(pc, qc, sigma, ell, x0):
    with mpmath.workdps(60):
        return mpmath.findroot(lambda t: _exact_loss(pc, qc, sigma, t) - ell, mpmath.mpf(x0))


@pytest.mark.parametrize("name,make,comps,ells", [
    # deep negative losses: log1p(r) at r → −1 is a staircase of steps u·e^{|L|}; the
    # bracket's ends sat there while its middle did not, and x(−36.11) came out 0.2 off
    # with dx 1e-11 (helper-50)
    ("replace q=0.3 σ=0.5", lambda: poisson_replace_one.pair(0.3, 0.5, 1),
     lambda: ([(mpmath.mpf("0.7"), 0), (mpmath.mpf("0.3"), 1)],
              [(mpmath.mpf("0.7"), 0), (mpmath.mpf("0.3"), -1)]),
     [-36.11, -20.0, -12.347457627118644, -8.5, -3.0]),
    # next to the lower edge at a large rate: 1 + c₀ = (1 − q)^K cancels
    ("remove q=0.843 K=8", lambda: poisson_add_remove.pair(0.843, 1.0, "remove", 8),
     lambda: ([(w, j) for j, w in enumerate(_binomial(8, mpmath.mpf(0.843)))], [(1, 0)]),
     [8 * math.log1p(-0.843) + d for d in (1e-11, 1e-8, 1e-5, 1e-3)]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_thresholds_where_the_excess_form_is_ill_conditioned(name, make, comps, ells):
    pair = make()
    pc, qc = comps()
    xs, dxs = pair.x_of_loss(np.array(ells))
    for ell, x, dx in zip(ells, xs, dxs, strict=True):
        want = _exact_x(pc, qc, pair.sigma, ell, x)
        assert abs(x - float(want)) <= dx, (name, ell, x, float(want), dx)


@pytest.mark.parametrize("q,sigma,k", [(0.01, 1.0, 2), (3e-4, 0.8, 3), (0.2, 2.5, 2),
                                       (1e-6, 1.3, 4)])
def test_zero_threshold_of_several_examples_is_not_widened_forever(monkeypatch, q, sigma, k):
    # K ≥ 2: the summed loss at x = 0 is a few ulps off 0, so the table's middle node could
    # pass as ℓ = 0's upper end and then fail when recomputed; the widening doubled 0 two
    # hundred times (about 410 loss evaluations; helper-50)
    from dpcalc.mechanisms import _mixture

    pair = poisson_replace_one.pair(q, sigma, k)
    calls = []
    loss = _mixture.MixturePair.loss
    monkeypatch.setattr(_mixture.MixturePair, "loss",
                        lambda self, x: calls.append(1) or loss(self, x))
    x, dx = pair.x_of_loss(np.array([0.0, 0.1 * q, -0.1 * q]))
    assert len(calls) <= 80
    assert abs(x[0]) <= dx[0] and x[1] > 0 > x[2]
