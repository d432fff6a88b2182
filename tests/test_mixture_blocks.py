"""Mixture losses and tails over blocks of points (dpcalc.numeric.blocks): the same values as
one block, and no (components × points) temporary beyond the block size.

A K = 400 question (``dpsgd --examples-per-user 400``, MNIST, σ 1.1) used 4.7 GB and spent
121 of its 281 s in the kernel, paging; K = 200 went 2.6 GB -> 175 MB and 67 -> 46 s.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import dpcalc.numeric.blocks as blocks
from dpcalc.mechanisms import poisson_add_remove, poisson_replace_one


def _pairs():
    return [poisson_add_remove.pair(0.02, 1.3, "remove", 40),
            poisson_add_remove.pair(0.02, 1.3, "add", 40),
            poisson_replace_one.pair(0.01, 0.9, 30)]


@pytest.mark.parametrize("i", range(3))
def test_blocks_give_the_values_of_one_block(monkeypatch, i):
    pair = _pairs()[i]
    ell = np.linspace(-3.0, 12.0, 777)
    x = np.linspace(-8.0, 40.0, 555)
    whole = (pair.log_tails_at_loss(ell), pair.loss(x), pair.loss_error(x), pair.slope(x),
             pair._log_dens(x, pair.log_a, pair.mp))
    monkeypatch.setattr(blocks, "BLOCK_ELEMENTS", 3 * pair._rows)   # blocks of 3 points
    small = (pair.log_tails_at_loss(ell), pair.loss(x), pair.loss_error(x), pair.slope(x),
             pair._log_dens(x, pair.log_a, pair.mp))
    for a, b in zip(whole[0], small[0], strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(whole[1:], small[1:], strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_thousand_components_build_no_large_temporary():
    pair = poisson_add_remove.pair(256 / 60000, 1.1, "remove", 1000)
    assert pair._rows > 500
    x = np.linspace(-5.0, 60.0, 2_000)
    tracemalloc.start()
    try:
        err = pair.loss_error(x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.shape == x.shape and np.all(err >= 0)
    # one (components × points) temporary of all the points is 8·pair._rows·2,000 bytes
    # (16 MB), and the loss's error bound builds about ten at once (160 MB in one block);
    # blocks of 2^18 elements keep the peak near 25 MB
    assert peak < 4 * 8 * pair._rows * x.size
