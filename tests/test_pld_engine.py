"""The PLD engine (dpcalc.pld) on dominating pairs, against exact answers.

Oracles: composed Gaussians are one Gaussian with μ² = Σ μ_i² [DRS19, Cor 3.3], exact in
mpmath [BW18, Thm 8]; the Laplace PLD (atoms at ±ε0, density e^{(ℓ−ε0)/2}/4 between) composed
twice in mpmath; q = 1 subsampled pairs are the plain ones; a plan's order does not matter.
Independent reference for the plans: Google's dp_accounting (run in a separate benchmark
venv, never a dependency; numbers recorded below with their provenance).
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import mpmath as mp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.mechanisms import PAIRS, pair_class
from dpcalc.mechanisms.eps_delta import EpsDelta
from dpcalc.mechanisms.gaussian import Gaussian
from dpcalc.mechanisms.laplace import Laplace
from dpcalc.mechanisms.subsampled_gaussian import SubsampledGaussian
from dpcalc.mechanisms.subsampled_laplace import SubsampledLaplace
from dpcalc.pld import DominatingPair, accountant

LOG_1E5 = math.log(1e-5)


def gauss_log_delta(mu: float, eps: float) -> float:
    """Exact log δ(ε) of the Gaussian mechanism with μ [BW18, Thm 8], any real ε."""
    with mp.workdps(60):
        m, e = mp.mpf(mu), mp.mpf(eps)
        return float(mp.log(mp.ncdf(m / 2 - e / m) - mp.e ** e * mp.ncdf(-m / 2 - e / m)))


def gauss_eps(mu: float, log_delta: float) -> float:
    lo, hi = 0.0, 1.0
    while gauss_log_delta(mu, hi) > log_delta:
        lo, hi = hi, 2 * hi
    for _ in range(70):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if gauss_log_delta(mu, mid) > log_delta else (lo, mid)
    return hi


def laplace2_log_delta(eps0: float, eps: float) -> float:
    """Exact log δ(ε) of two Laplace mechanisms with ε0 = Δ/b each (mpmath).

    One PLD: atom ε0 (mass 1/2), atom −ε0 (mass e^{−ε0}/2), density f(ℓ) = e^{(ℓ−ε0)/2}/4 on
    (−ε0, ε0); f*f(s) = e^{(s−2ε0)/2}·(2ε0 − |s|)/16.  δ(ε) = E[(1 − e^{ε−S})₊].
    """
    with mp.workdps(40):
        e0, e = mp.mpf(eps0), mp.mpf(eps)

        def g(s):
            return max(mp.mpf(0), 1 - mp.e ** (e - s))

        atoms = [(e0, mp.mpf(1) / 2), (-e0, mp.e ** (-e0) / 2)]
        tot = sum(pa * pb * g(a + b) for a, pa in atoms for b, pb in atoms)

        def f(x):
            return mp.e ** ((x - e0) / 2) / 4

        for a, pa in atoms:
            lo = max(-e0, e - a)
            if lo < e0:
                tot += 2 * pa * mp.quad(lambda x, a=a: f(x) * g(a + x), [lo, e0])
        lo = max(-2 * e0, e)
        if lo < 2 * e0:
            pts = sorted({lo, mp.mpf(0), 2 * e0}) if lo < 0 else [lo, 2 * e0]
            tot += mp.quad(lambda s: mp.e ** ((s - 2 * e0) / 2) * (2 * e0 - abs(s)) / 16 * g(s),
                           pts)
        return float(mp.log(tot))


# ------------------------------------------------------------------------ exact answers

@pytest.mark.parametrize("sigmas,counts", [((2.0, 3.0, 5.0), (3, 2, 1)), ((1.0,), (4,)),
                                           ((0.7, 20.0), (1, 50))])
def test_composed_gaussians_are_one_gaussian(sigmas, counts):
    items = [(Gaussian(s), n) for s, n in zip(sigmas, counts, strict=True)]
    mu = math.sqrt(sum(n / s**2 for s, n in zip(sigmas, counts, strict=True)))
    for eps in (0.0, 0.5, 2.0):
        lo, up = accountant.log_delta_bounds(items, eps)
        exact = gauss_log_delta(mu, eps)
        assert lo <= exact <= up
        assert up - exact <= 2e-3
    lo, up = accountant.epsilon_bounds(items, LOG_1E5)
    assert lo <= gauss_eps(mu, LOG_1E5) <= up
    assert (up - lo) / up <= 1e-3


def test_laplace_single_is_the_closed_form():
    # one Laplace mechanism, ε0 = 1/2: δ(ε) = 1 − e^{(ε−ε0)/2} for 0 ≤ ε < ε0
    for eps in (0.0, 0.2, 0.45):
        lo, up = accountant.log_delta_bounds([(Laplace(2.0), 1)], eps)
        exact = math.log(-math.expm1((eps - 0.5) / 2))
        assert lo <= exact <= up
        assert up - exact <= 1e-3
    # beyond ε0 the loss is bounded: δ is exactly 0
    assert accountant.log_delta_bounds([(Laplace(2.0), 1)], 0.6) == (-math.inf, -math.inf)
    lo, up = accountant.epsilon_bounds([(Laplace(2.0), 1)], math.log(0.05))
    assert lo <= 0.5 + 2 * math.log(0.95) <= up


@pytest.mark.parametrize("scale,eps", [(2.0, 0.3), (2.0, 0.9), (1.0, 0.5), (0.5, 2.5)])
def test_laplace_composed_twice_against_mpmath(scale, eps):
    lo, up = accountant.log_delta_bounds([(Laplace(scale), 2)], eps)
    exact = laplace2_log_delta(1.0 / scale, eps)
    assert lo <= exact <= up
    assert up - exact <= 0.05


def test_laplace_sensitivity_and_subsampled_q1_are_the_plain_pair():
    a = accountant.log_delta_bounds([(Laplace(2.0), 3)], 0.3)
    b = accountant.log_delta_bounds([(SubsampledLaplace(1.0, 2.0), 3)], 0.3)
    assert a == b
    # b/Δ is rounded down (less noise: a dominating pair), never up
    assert Laplace(4.0, sensitivity=2.0).b <= 2.0
    assert Gaussian(3.0, sensitivity=3.0).sigma <= 1.0
    c = accountant.log_delta_bounds([(Laplace(4.0, sensitivity=2.0), 3)], 0.3)
    assert c[0] <= a[1] and a[0] <= c[1]
    g = accountant.epsilon_bounds([(Gaussian(3.0), 5)], LOG_1E5)
    s = accountant.epsilon_bounds([(SubsampledGaussian(1.0, 3.0), 5)], LOG_1E5)
    assert g == s


def test_subsampled_laplace_lies_between_no_amplification_and_zero():
    lo, up = accountant.epsilon_bounds([(SubsampledLaplace(0.01, 1.0), 100)], LOG_1E5)
    assert 0 < lo <= up < 100 * 1.0
    # amplification: far below the unsampled 100·ε0, and monotone in q
    lo2, _ = accountant.epsilon_bounds([(SubsampledLaplace(0.02, 1.0), 100)], LOG_1E5)
    assert up <= lo2


def test_order_of_a_plan_does_not_matter():
    a = [(SubsampledGaussian(0.01, 1.2), 300), (Gaussian(8.0), 2), (Laplace(10.0), 1)]
    assert accountant.epsilon_bounds(a, LOG_1E5) == accountant.epsilon_bounds(a[::-1], LOG_1E5)
    # equal pairs merge: two items of the same pair are one item of the summed count
    b = [(Gaussian(4.0), 3), (Gaussian(4.0), 2)]
    assert accountant.epsilon_bounds(b, LOG_1E5) == accountant.epsilon_bounds(
        [(Gaussian(4.0), 5)], LOG_1E5)


def test_eps_delta_points_compose_as_the_optimal_composition():
    # two (ε, δ) points: the worst case is the KOV15 pair; δ_total(ε1 + ε2) = 1 − (1−δ)²
    # (the reference at 40 digits: 1 − (1 − δ)² in doubles cancels to 1e-11 relative, which
    # put it above the bracket once ε = ε1 + ε2 read the +∞ mass itself)
    import mpmath

    items = [(EpsDelta(0.5, math.log(1e-6)), 2)]
    lo, up = accountant.log_delta_bounds(items, 1.0)
    with mpmath.workdps(40):
        exact = mpmath.log(1 - (1 - mpmath.mpf(1e-6)) ** 2)
    assert lo <= exact <= up
    assert up - lo <= 1e-10


def test_profile_reads_one_composition_at_many_eps_negative_included():
    items = [(Gaussian(2.0), 2), (Gaussian(4.0), 1)]
    mu = math.sqrt(2 / 4 + 1 / 16)
    prof = accountant.Profile(items, log_delta=LOG_1E5)
    rows = prof.delta_bounds([-1.0, -0.2, 0.0, 0.5, 2.0, 4.0])
    for eps, (lo, up) in zip([-1.0, -0.2, 0.0, 0.5, 2.0, 4.0], rows, strict=True):
        exact = gauss_log_delta(mu, eps)
        assert lo <= exact <= up, eps
    lo, up = prof.epsilon_bounds(LOG_1E5)
    assert lo <= gauss_eps(mu, LOG_1E5) <= up


# ------------------------------------------------------------- the two plans

# dp_accounting 0.6.0, PLDAccountant(value_discretization_interval=2e-5), pessimistic
# estimate, get_epsilon(1e-5); run in /tmp/bench-venv (not a dependency) on 2026-11-22:
#   two-phase: PoissonSampled(256/60000, Gaussian(1.1)) × 7032 then
#              PoissonSampled(512/60000, Gaussian(1.5)) × 3516          → 2.288725541751548
#   Gaussian(10) + PoissonSampled(256/60000, Gaussian(1.1)) × 14063     → 2.4194969430900177
REF_TWO_PHASE = 2.288725541751548
REF_GAUSS_PLUS_RUN = 2.4194969430900177


def test_two_phase_plan_within_0_2_percent_of_reference():
    items = [(SubsampledGaussian(256 / 60000, 1.1), math.ceil(30 * 60000 / 256)),
             (SubsampledGaussian(512 / 60000, 1.5), math.ceil(30 * 60000 / 512))]
    lo, up = accountant.epsilon_bounds(items, LOG_1E5)
    assert lo <= REF_TWO_PHASE * (1 + 1e-4)        # the reference is itself pessimistic
    assert abs(up - REF_TWO_PHASE) <= 2e-3 * REF_TWO_PHASE


def test_gaussian_release_plus_run_within_0_2_percent_of_reference():
    items = [(Gaussian(10.0), 1), (SubsampledGaussian(256 / 60000, 1.1), 14063)]
    lo, up = accountant.epsilon_bounds(items, LOG_1E5)
    assert lo <= REF_GAUSS_PLUS_RUN * (1 + 1e-4)
    assert abs(up - REF_GAUSS_PLUS_RUN) <= 2e-3 * REF_GAUSS_PLUS_RUN


# ----------------------------------------------------------------- the seam itself

def test_every_registered_pair_implements_the_interface():
    for name in PAIRS:
        cls = pair_class(name)
        pair = cls(1.0) if name in ("gaussian", "laplace") else (
            cls(0.5, math.log(1e-6)) if name == "eps-delta" else cls(0.1, 1.0))
        assert isinstance(pair, DominatingPair), name


def test_engine_knows_no_mechanism_and_no_front_end():
    root = Path(__file__).resolve().parent.parent / "dpcalc" / "pld"
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for n in names:
                assert not n.startswith(("dpcalc.mechanisms", "dpcalc.api", "dpcalc.cli",
                                         "dpcalc.render", "typer", "rich")), (path.name, n)


# dp_accounting 0.6.0, PLDAccountant(value_discretization_interval=2e-5) (pessimistic), same
# venv and date as above:
#   PoissonSampled(0.01, Laplace(0.5)) × 1000, get_epsilon(1e-5)      → 2.6829245863292424
#   Laplace(10) × 10, get_delta(0.5)                                  → 0.008938294604221589
def test_subsampled_laplace_and_laplace_composition_against_reference():
    lo, up = accountant.epsilon_bounds([(SubsampledLaplace(0.01, 0.5), 1000)], LOG_1E5)
    assert lo <= 2.6829245863292424 * (1 + 1e-4)
    assert abs(up - 2.6829245863292424) <= 2e-3 * 2.6829245863292424
    lo, up = accountant.log_delta_bounds([(Laplace(10.0), 10)], 0.5)
    ref = math.log(0.008938294604221589)
    assert lo <= ref + 1e-4 and abs(up - ref) <= 2e-3


def test_a_plan_of_one_item_is_the_dp_sgd_path_bit_for_bit():
    from dpcalc.relations import pld

    item = [(SubsampledGaussian(0.01, 4.0), 10_000)]
    assert accountant.epsilon_bounds(item, LOG_1E5) == pld.epsilon_bounds(0.01, 4.0, 10_000,
                                                                          LOG_1E5)
    assert accountant.log_delta_bounds(item, 1.0) == pld.log_delta_bounds(0.01, 4.0, 10_000,
                                                                           1.0)


@settings(max_examples=12, deadline=None)
@given(sigmas=st.lists(st.floats(0.5, 20.0), min_size=2, max_size=3),
       counts=st.lists(st.integers(1, 200), min_size=3, max_size=3),
       eps=st.floats(0.0, 5.0))
def test_heterogeneous_gaussian_plans_bracket_the_truth(sigmas, counts, eps):
    items = [(Gaussian(s) if i % 2 else SubsampledGaussian(1.0, s), n)
             for i, (s, n) in enumerate(zip(sigmas, counts, strict=False))]
    mu = math.sqrt(sum(n / s**2 for s, n in zip(sigmas, counts, strict=False)))
    lo, up = accountant.log_delta_bounds(items, eps)
    exact = gauss_log_delta(mu, eps)
    assert lo <= exact <= up


def test_heavy_selection_is_the_k_largest_when_they_carry_half():
    """pmf._heavy partitions only the entries ≥ total/(16k) when there are k of them: the
    same k largest as a partition of the whole vector."""
    import numpy as np

    from dpcalc.pld.pmf import _heavy

    rng = np.random.default_rng(7)
    for trial in range(300):
        n = int(rng.integers(200, 5000))
        t = rng.exponential(size=n) * 1e-6
        spikes = rng.choice(n, size=int(rng.integers(1, 40)), replace=False)
        t[spikes] += rng.exponential(size=spikes.size) * (1.0 if trial % 3 else 1e-4)
        got = _heavy(t)
        top = np.sort(t)[-16:]
        if top.sum() >= 0.5 * t.sum() and t.size > 128:
            assert got is not None and np.array_equal(np.sort(t[got]), top)
        else:
            assert got is None


def test_a_spike_in_a_short_vector_is_convolved_as_shifted_copies():
    """A spike plus a thin tail, 6,000 points out: its FFT bound (2e-11 in ℓ1, set by the
    spike's ℓ2 norm) was paid when outputs below 16384 points skipped the heavy-entry
    split; now the spike's copies are exact up to O(u) and the bound is 2,000 times smaller.
    The result is the same convolution (to the FFT's round-off)."""
    import numpy as np

    from dpcalc.pld.pmf import _conv, _Dist

    t = np.full(3000, 1e-7)
    t[1500] = 1.0
    a = _Dist(0, 0, t, 0.0, 0.0, 0.0)
    got = _conv(a, a)                    # no budget: every round-off matters
    assert got.e1 < 1e-14 and got.einf < 1e-13
    exact = np.convolve(t, t)            # direct sums: within 3000·u·max = 3.4e-13 a term
    scale = math.exp(got.logscale)
    diff = np.abs(got.t * scale - exact[got.lo:got.lo + got.t.size])
    assert np.max(diff) <= got.einf * scale + 4e-13


def test_small_q_few_steps_upper_end_is_not_the_error_term():
    """Random case 45 of benchmarks/bench_dpsgd_random.py (σ solve at q 7.7e-5, 383 steps,
    ε 0.0442, δ 6.3e-14): at the σ it answered, 1.1536, the bracket was [0.0081, 0.0442],
    its upper end the ℓ1 error term of the FFTs' bounds on the one-step spike (see the
    test above); the grid part alone gives 0.0347."""
    from dpcalc.relations import pld

    lo, up = pld.epsilon_bounds(7.747e-05, 1.1536383868153128, 383, math.log(6.292e-14))
    assert up <= 0.0350 and (up - lo) / up <= 0.02


def test_tier_positions_are_sorted_distinct_in_range_with_the_whole_bulk():
    import numpy as np

    from dpcalc.pld.plan import _tier_positions

    rng = np.random.default_rng(3)
    for _ in range(500):
        j_lo = int(rng.integers(-5000, 1))
        j_hi = j_lo + int(rng.integers(0, 20000))
        h = float(rng.uniform(1e-4, 1e-2))
        span = (j_hi - j_lo + 1) * h
        lower = sorted(rng.uniform(j_lo * h - 0.2 * span, j_hi * h, 4), reverse=True)
        upper = sorted(rng.uniform(j_lo * h, j_hi * h + 0.2 * span, 4))
        got = _tier_positions(j_lo, j_hi, h, lower, upper, float(rng.choice([np.inf, 3, 17])))
        assert got[0] == j_lo and got[-1] == j_hi and np.all(np.diff(got) > 0)
        bulk_lo = max(j_lo, min(j_hi, int(np.floor(lower[0] / h))))
        bulk_hi = max(j_lo, min(j_hi, int(np.ceil(upper[0] / h))))
        if bulk_lo <= bulk_hi:   # stride 1 over the bulk
            assert np.isin(np.arange(bulk_lo, bulk_hi + 1), got).all()


def test_optimistic_coarsening_keeps_an_isolated_spike_in_place():
    """A fall-back bucket's centre atom stays at its coarse point (its ratio is exactly the
    grid value); only its neighbours' halves go one point down. Before, the whole bucket
    went down and a spike lost e^{-2λh} of its tilted mass at every coarsening."""
    import numpy as np

    from dpcalc.pld.pmf import _coarsen_opt, _Dist

    lam, h = 40.0, 3e-4
    t = np.zeros(41)
    t[20] = 1.0                       # fine index 20 (even): a coarse grid point
    t[19] = 1e-9                      # a whisper below it: bucket 10 is in deficit, and
                                      # bucket 11 (empty) has nothing to lend
    d = _Dist(0, 0, t, 0.0, 1e-15, 1e-15)
    out = _coarsen_opt(d, h, lam)
    at = out.t[10 - out.lo]           # coarse index 10 = fine index 20
    assert at == 1.0                  # the spike is where it was, whole
    # the half of the whisper that could not be placed went one coarse point down, tilted
    # both halves of the whisper end at coarse 9, tilted by e^{-λh} (h below fine 19)
    assert out.t[9 - out.lo] == pytest.approx(t[19] * math.exp(-lam * h), rel=1e-12)
    assert out.e1 >= d.e1


def test_small_q_tiny_delta_first_pass_is_tight():
    """Issue 14 random sample: q = 1.3e-6, 3755 steps, δ = 4.4e-234. The optimistic side's
    first pass was 5% low (the spike lost e^{-2λh} of its mass at a coarsening, compounded
    over the squarings), which forced a 3-4 s refinement; now the first pass meets the
    tolerance."""
    from dpcalc.relations import pld

    lo, up = pld.epsilon_bounds(1.302e-06, 1.2185264778525722, 3755, -537.3260382181937)
    assert (up - lo) / up <= 1e-3


def _tilted_delta(lo: int, t, h: float, lam: float, eps, ref: float):
    """δ(ε) of a tilted vector (mass t_j·e^{−λℓ_j − ref} at ℓ_j = j·h), summed exactly."""
    import numpy as np

    ell = (lo + np.arange(t.size)) * h
    with np.errstate(divide="ignore"):
        lm = np.log(t) - lam * ell - ref
    out = []
    for e in eps:
        sel = ell > e
        out.append(math.fsum(np.exp(lm[sel]) * -np.expm1(e - ell[sel])) if sel.any() else 0.0)
    return np.array(out)


def test_optimistic_coarsening_is_a_lower_bound_for_the_exact_vector():
    """_coarsen_opt: the coarse vector, less its ℓ1 error term, gives δ(ε) at most that of
    any exact vector within the input's ℓ∞ error bound (adversarial perturbations), on
    spikes with tails spanning many decades (the case where buckets fall back)."""
    import numpy as np

    from dpcalc.pld.evaluate import _log_c_lambda_exp
    from dpcalc.pld.pmf import _coarsen_opt, _Dist

    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(20, 300))
        h = 10 ** rng.uniform(-4, -0.5)
        lam = 10 ** rng.uniform(-2, 2.5)
        idx = np.arange(n)
        t = np.exp(-rng.uniform(0, 1) * np.abs(idx - rng.integers(0, n)) * rng.uniform(0.01, 3))
        t[int(rng.integers(0, n))] += 10 ** rng.uniform(0, 6)
        t *= np.exp(rng.normal(0, 0.3, n))
        t[rng.random(n) < 0.2] = 0.0
        t /= t.max()
        lo = int(rng.integers(-200, 200))
        einf = 10 ** rng.uniform(-16, -4)
        pert = [-einf * np.sign(idx - n / 2), einf * rng.uniform(-1, 1, n),
                -einf * ((idx + lo) % 2 * 2 - 1)][int(rng.integers(0, 3))]
        exact = np.maximum(t + pert, 0.0)
        d = _Dist(lo, 0, t.copy(), 0.0, float(np.abs(exact - t).sum()) * (1 + 1e-9), einf)
        with np.errstate(divide="ignore"):
            ref = float(np.max(np.log(t) - lam * (lo + idx) * h))
        out = _coarsen_opt(d, h, lam)
        grid = (out.lo + np.arange(out.t.size)) * 2 * h
        eps = np.concatenate((grid - 1e-12 * h, grid + h))
        low = _tilted_delta(out.lo, out.t, 2 * h, lam, eps, ref) \
            - out.e1 * np.exp(-lam * eps - ref) * _log_c_lambda_exp(lam)
        truth = _tilted_delta(lo, exact, h, lam, eps, ref)
        assert np.all(low <= truth * (1 + 1e-12) + 1e-300)


def test_a_square_with_heavy_entries_takes_one_set_of_copies():
    """a*a = a_H*(a + a_L) + a_L*a_L: one shifted copy per heavy entry (of a with its light
    entries doubled, exactly) instead of two, so each output entry sums half as many rounded
    products: its bound is smaller than a general product's of the same vectors, and it
    still holds against the exact convolution (rationals)."""
    from fractions import Fraction

    import numpy as np

    from dpcalc.pld.pmf import _conv, _Dist

    rng = np.random.default_rng(11)
    t = rng.exponential(size=300) * 1e-5
    heavy = rng.choice(300, size=16, replace=False)      # spread out, not one block
    t[heavy] = rng.uniform(0.2, 1.0, size=16)
    a = _Dist(0, 0, t, 0.0, 0.0, 0.0)
    square = _conv(a, a)
    general = _conv(a, _Dist(0, 0, t.copy(), 0.0, 0.0, 0.0))
    assert square.e1 < 0.75 * general.e1
    exact = [Fraction(0)] * (2 * t.size - 1)
    ft = [Fraction(x) for x in t]
    for i, x in enumerate(ft):
        for j, y in enumerate(ft):
            exact[i + j] += x * y
    scale = Fraction(math.exp(square.logscale))
    got = [Fraction(x) * scale for x in square.t]
    errs = [abs(got[k] - exact[square.lo + k]) for k in range(len(got))]
    outside = sum(exact[:square.lo]) + sum(exact[square.lo + len(got):])
    assert max(errs) <= Fraction(square.einf) * scale
    assert sum(errs) + outside <= Fraction(square.e1) * scale
