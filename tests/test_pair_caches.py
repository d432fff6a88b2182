"""Caches of the Gaussian pairs: the subsampled Gaussian's kept quadrature nodes
(SubsampledGaussian._nodes: the same doubles as a fresh pair's, a bounded number of grids,
never handed out to be written) and the memoised normal quantile _z_for_log_tail."""

from __future__ import annotations

import numpy as np

from dpcalc.mechanisms import _normal
from dpcalc.mechanisms import subsampled_gaussian as sg
from dpcalc.mechanisms.subsampled_gaussian import SubsampledGaussian


def _bits(a):
    return np.asarray(a, dtype=float).view(np.int64)


def test_kept_nodes_are_a_fresh_pairs_and_stay_bounded():
    rng = np.random.default_rng(7)
    for q, sigma in ((0.01, 1.1), (0.3, 0.7), (1e-5, 20.0), (1.0, 2.0)):
        kept = SubsampledGaussian(q, sigma)
        for _ in range(40):
            direction = ("remove", "add")[int(rng.integers(2))]
            lam = float(rng.choice([0.0, 1.5, rng.uniform(0.0, 60.0)]))
            density, nmin = ((10.0, 600), (20.0, 2000))[int(rng.integers(2))]
            top = (None, -20.0, float(rng.uniform(-90.0, -5.0)))[int(rng.integers(3))]
            got = kept.quadrature(direction, lam, density, nmin, top)
            fresh = SubsampledGaussian(q, sigma).quadrature(direction, lam, density, nmin, top)
            for a, b in zip(got, fresh, strict=True):
                assert np.array_equal(_bits(a), _bits(b))
            for a in got:          # a caller's writes stay in its own arrays
                a[...] = np.nan
            assert len(kept._nodes) <= sg._NODES_KEPT


def test_memoised_normal_quantile_is_the_functions_and_bounded():
    z_of = _normal._z_for_log_tail
    targets = [-0.1, -0.7, -5.0, -23.7, -200.0, -1e4, 0.0, -1e-300]
    first = [z_of(t) for t in targets]
    assert [z_of(t) for t in targets] == first
    assert first == [z_of.__wrapped__(t) for t in targets]
    for k in range(1000):
        z_of(-1.0 - k / 7.0)
    assert z_of.cache_info().currsize <= z_of.cache_info().maxsize == 256


def test_cgf_nodes_are_quadratures_and_cgf_unchanged():
    """cgf_nodes: quadrature's loss and log_w, and the log_w0 sum kept per node set, the
    same doubles; plan._cgf through it equals the long way (through quadrature)."""
    from dpcalc.pld import plan
    from dpcalc.pld._core import _logsumexp

    class QuadratureOnly:          # the same pair without the hook: _cgf's long way
        def __init__(self, pair):
            self.pair, self.symmetric = pair, pair.symmetric

        def quadrature(self, *args):
            return self.pair.quadrature(*args)

    rng = np.random.default_rng(11)
    for q, sigma in ((0.01, 1.1), (0.3, 0.7), (1e-5, 20.0), (1.0, 2.0), (0.07, 4.2)):
        kept = SubsampledGaussian(q, sigma)
        for _ in range(40):
            direction = ("remove", "add")[int(rng.integers(2))]
            lam = float(rng.choice([0.0, 1.5, rng.uniform(0.0, 60.0)]))
            top = (None, -20.0, float(rng.uniform(-90.0, -5.0)))[int(rng.integers(3))]
            loss, lw, lse0 = kept.cgf_nodes(direction, lam, 10.0, 600, top)
            f_loss, f_lw0, f_lw = SubsampledGaussian(q, sigma).quadrature(
                direction, lam, 10.0, 600, top)
            assert np.array_equal(_bits(loss), _bits(f_loss))
            assert np.array_equal(_bits(lw), _bits(f_lw))
            assert _bits(lse0) == _bits(_logsumexp(f_lw0))
            assert not loss.flags.writeable or loss is not kept._nodes
            got = plan._cgf(kept, direction, lam, top)
            long = plan._cgf(QuadratureOnly(SubsampledGaussian(q, sigma)), direction, lam, top)
            assert np.array_equal(_bits(got), _bits(long))
            assert len(kept._nodes) <= sg._NODES_KEPT
