"""Exhaustive checks on tiny cases: each pair dominates the mechanism it stands for.

The real mechanism is run on tiny datasets of clipped gradients (|g| ≤ 1, in one and two
dimensions): every batch is enumerated exactly (Poisson: all 2^N subsets with their
probabilities; fixed batch: all C(N, B) subsets), the output is the Gaussian mixture over the
batch sums, and its hockey-stick divergence H_α(M(x)‖M(x')) is integrated on a fine grid for
both orders of every neighbouring pair built from a small set of gradient values. The pair's
one-step δ(ε) (closed form, exact) must be at least that, for every ε on a grid (negative ε
included: that covers the other order). As in relations/subsample.py, which checks its
forms against exact small mechanisms. Negative controls show the check has teeth: the
Poisson replace-one pair at q = B/N does NOT dominate fixed batches (the displaced example),
and the sensitivity-1 pair does NOT dominate replace-one (dp_accounting #378).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpcalc.mechanisms import fixed_batch, poisson_add_remove, poisson_replace_one

SIGMA = 0.7
EPS = (-2.0, -0.7, -0.2, 0.0, 0.2, 0.7, 1.5, 3.0)
VALUES_1D = (-1.0, -0.5, 0.0, 0.5, 1.0)
H1 = 0.002
GRID_1D = np.arange(-10.0, 10.0 + H1, H1)


def _mixture_1d(weights_means):
    """Density on GRID_1D of Σ w N(m, σ²)."""
    out = np.zeros_like(GRID_1D)
    for w, m in weights_means:
        out += w * np.exp(-(GRID_1D - m) ** 2 / (2 * SIGMA * SIGMA))
    return out / (math.sqrt(2 * math.pi) * SIGMA)


def _poisson_out(data, q):
    """Exact output law of the Poisson-sampled sum: [(probability, sum)] over all subsets."""
    out = []
    for bits in itertools.product((0, 1), repeat=len(data)):
        w = math.prod(q if b else 1 - q for b in bits)
        out.append((w, sum(g for g, b in zip(data, bits, strict=True) if b)))
    return out


def _fixed_out(data, b):
    """Exact output law of the sum over a uniform b-subset (without replacement)."""
    subsets = list(itertools.combinations(range(len(data)), b))
    return [(1 / len(subsets), sum(data[i] for i in s)) for s in subsets]


def _hockey(p, q, eps):
    """H_{e^ε}(p‖q) by the trapezoid rule (error ≲ 1e-7 at this grid)."""
    return float(np.trapezoid(np.maximum(p - math.exp(eps) * q, 0.0), dx=H1))


def _check(p, q, pair_delta, tol=1e-6):
    worst = -math.inf
    for eps in EPS:
        real = max(_hockey(p, q, eps), 0.0)
        bound = pair_delta(eps)
        worst = max(worst, real - bound)
    return worst <= tol, worst


def test_poisson_replace_one_dominates_every_tiny_case():
    q = 0.35
    pair = poisson_replace_one.pair(q, SIGMA)
    deltas = {e: math.exp(pair.log_delta(e)) for e in EPS}
    worst = -math.inf
    for rest in itertools.combinations_with_replacement(VALUES_1D, 2):
        for z, z2 in itertools.product(VALUES_1D, repeat=2):
            p = _mixture_1d(_poisson_out(list(rest) + [z], q))
            qq = _mixture_1d(_poisson_out(list(rest) + [z2], q))
            ok, w = _check(p, qq, deltas.get)
            worst = max(worst, w)
            assert ok, (rest, z, z2, w)
    assert worst > -1e-6  # the worst case (z = 1, z' = −1) is attained: the pair is tight


def test_poisson_add_remove_k_examples_dominates_every_tiny_case():
    q = 0.35
    for k in (1, 2):
        rem = poisson_add_remove.pair(q, SIGMA, "remove", k)
        add = poisson_add_remove.pair(q, SIGMA, "add", k)
        d = {e: math.exp(max(rem.log_delta(e), add.log_delta(e))) for e in EPS}
        for rest in itertools.combinations_with_replacement(VALUES_1D, 2):
            for user in itertools.combinations_with_replacement(VALUES_1D, k):
                big = _mixture_1d(_poisson_out(list(rest) + list(user), q))
                small = _mixture_1d(_poisson_out(list(rest), q))
                for p, qq in ((big, small), (small, big)):
                    ok, w = _check(p, qq, d.get)
                    assert ok, (k, rest, user, w)


def test_poisson_replace_one_k2_dominates_every_tiny_case():
    q = 0.35
    pair = poisson_replace_one.pair(q, SIGMA, 2)
    d = {e: math.exp(pair.log_delta(e)) for e in EPS}
    users = list(itertools.combinations_with_replacement(VALUES_1D, 2)) + [(v,) for v in
                                                                           VALUES_1D]
    for rest in VALUES_1D:
        for u, u2 in itertools.product(users, repeat=2):
            p = _mixture_1d(_poisson_out([rest, *u], q))
            qq = _mixture_1d(_poisson_out([rest, *u2], q))
            ok, w = _check(p, qq, d.get)
            assert ok, (rest, u, u2, w)


@pytest.mark.parametrize("n,b", [(3, 1), (4, 2), (5, 2)])
def test_fixed_batch_replace_one_dominates_every_tiny_case(n, b):
    s = fixed_batch.SymmetrisedPair(b / n, SIGMA)
    d = {e: math.exp(s.log_delta(e)) for e in EPS}
    worst = -math.inf
    for rest in itertools.combinations_with_replacement(VALUES_1D, n - 1):
        for z, z2 in itertools.product(VALUES_1D, repeat=2):
            if z == z2:
                continue
            p = _mixture_1d(_fixed_out(list(rest) + [z], b))
            qq = _mixture_1d(_fixed_out(list(rest) + [z2], b))
            ok, w = _check(p, qq, d.get)
            worst = max(worst, w)
            assert ok, (rest, z, z2, w)
    assert worst > -2e-3  # close to tight on these tiny cases


@pytest.mark.parametrize("n,b", [(3, 1), (4, 2)])
def test_fixed_batch_add_remove_dominated_at_rate_b_over_n(n, b):
    # x (size n) and x' = x ∪ {z} (size n + 1): γ = b/(n + 1) ≤ b/n
    s = fixed_batch.SymmetrisedPair(b / n, SIGMA)
    d = {e: math.exp(s.log_delta(e)) for e in EPS}
    for rest in itertools.combinations_with_replacement(VALUES_1D, n):
        for z in VALUES_1D:
            big = _mixture_1d(_fixed_out(list(rest) + [z], b))
            small = _mixture_1d(_fixed_out(list(rest), b))
            for p, qq in ((big, small), (small, big)):
                ok, w = _check(p, qq, d.get)
                assert ok, (rest, z, w)


def test_negative_control_poisson_pair_does_not_cover_fixed_batches():
    # the displaced example: with a fixed batch size, the Poisson replace-one pair at
    # q = B/N is beaten by a real tiny dataset
    n, b = 3, 1
    pair = poisson_replace_one.pair(b / n, SIGMA)
    d = {e: math.exp(pair.log_delta(e)) for e in EPS}
    p = _mixture_1d(_fixed_out([-1.0, -1.0, 1.0], b))
    qq = _mixture_1d(_fixed_out([-1.0, -1.0, -1.0], b))
    ok, w = _check(p, qq, d.get)
    assert not ok and w > 1e-3


def test_negative_control_sensitivity_one_does_not_cover_replace_one():
    # dp_accounting #378: the add/remove (sensitivity-1) pair under replace-one is optimistic
    q = 0.35
    rem = poisson_add_remove.pair(q, SIGMA, "remove")
    add = poisson_add_remove.pair(q, SIGMA, "add")
    d = {e: math.exp(max(rem.log_delta(e), add.log_delta(e))) for e in EPS}
    p = _mixture_1d(_poisson_out([0.0, 1.0], q))
    qq = _mixture_1d(_poisson_out([0.0, -1.0], q))
    ok, w = _check(p, qq, d.get)
    assert not ok and w > 1e-3


# ---- two dimensions: gradients that are not collinear ------------------------------------

H2 = 0.02
_G2 = np.arange(-5.5, 5.5 + H2, H2)
_X, _Y = np.meshgrid(_G2, _G2, indexing="ij")


def _mixture_2d(weights_means):
    out = np.zeros_like(_X)
    for w, (mx, my) in weights_means:
        out += w * np.exp(-((_X - mx) ** 2 + (_Y - my) ** 2) / (2 * SIGMA * SIGMA))
    return out / (2 * math.pi * SIGMA * SIGMA)


def _poisson_out_2d(data, q):
    out = []
    for bits in itertools.product((0, 1), repeat=len(data)):
        w = math.prod(q if b else 1 - q for b in bits)
        sx = sum(g[0] for g, bb in zip(data, bits, strict=True) if bb)
        sy = sum(g[1] for g, bb in zip(data, bits, strict=True) if bb)
        out.append((w, (sx, sy)))
    return out


ANGLES = [(math.cos(t), math.sin(t)) for t in np.linspace(0, 2 * math.pi, 9)[:-1]]
TOL_2D = 2e-5  # the 2D trapezoid rule at h = 0.02 (measured error ≲ 5e-6)


def _hockey_2d(p, q, eps):
    return float(np.maximum(p - math.exp(eps) * q, 0.0).sum() * H2 * H2)


def test_two_dimensional_gradients_replace_one():
    # by joint convexity the rest of the batch only mixes; the single replaced example with
    # gradients v, w anywhere on the unit circle (and 0) against the antipodal pair
    q = 0.35
    pair = poisson_replace_one.pair(q, SIGMA)
    pts = ANGLES + [(0.0, 0.0), (0.3, 0.4)]
    v = ANGLES[0]
    for w in pts:
        p = _mixture_2d(_poisson_out_2d([v], q))
        qq = _mixture_2d(_poisson_out_2d([w], q))
        for eps in (-0.7, 0.0, 0.7, 2.0):
            assert _hockey_2d(p, qq, eps) <= math.exp(pair.log_delta(eps)) + TOL_2D, (w, eps)


def test_two_dimensional_gradients_two_examples_per_user():
    q = 0.35
    rem = poisson_add_remove.pair(q, SIGMA, "remove", 2)
    add = poisson_add_remove.pair(q, SIGMA, "add", 2)
    small = _mixture_2d(_poisson_out_2d([], q))
    for u2 in ANGLES[:5]:
        big = _mixture_2d(_poisson_out_2d([ANGLES[0], u2], q))
        for eps in (-0.7, 0.0, 0.7, 2.0):
            bound = math.exp(max(rem.log_delta(eps), add.log_delta(eps))) + TOL_2D
            assert _hockey_2d(big, small, eps) <= bound, (u2, eps)
            assert _hockey_2d(small, big, eps) <= bound, (u2, eps)
