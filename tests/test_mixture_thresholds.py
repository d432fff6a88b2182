"""The thresholds x(ℓ) of a mixture pair's loss (dpcalc.mechanisms._mixture.x_of_loss): a
certified bracket on every threshold, found with few loss evaluations.

A K-example pair's grid at MNIST's rate (q = 256/60000, σ 1.5, K = 2) has hundreds of
thresholds whose root lies within rounding of an earlier Newton iterate: Newton then fell
past that end of the bracket by a hair at every step and the safeguard halved towards the
root, 20-odd more loss evaluations over the whole grid (47 in all for 2000 thresholds; the
thresholds are half of each PLD evaluation of such a run).  The chord of the bracket's ends
takes such a step now; a table cell needs no second look at its ends, and the
second certification round looks only at the points the first left wide (9 evaluations).
"""

from __future__ import annotations

import numpy as np

from dpcalc.mechanisms import poisson_add_remove as par


def _counted(pair):
    calls = [0]
    loss = pair.loss

    def counting(x):
        calls[0] += 1
        return loss(x)

    pair.loss = counting
    return calls


def test_k2_thresholds_are_certified_with_few_loss_evaluations():
    pair = par.pair(256 / 60000, 1.5, "add", k=2)
    lo, hi = pair.loss_range()
    assert lo == -np.inf and 0 < hi < 0.01
    ell = np.linspace(-1.03, hi - 2e-4, 2000)
    calls = _counted(pair)
    x, dx = pair.x_of_loss(ell)
    assert calls[0] <= 12                      # 47 before, 9 now
    assert np.all(np.isfinite(x)) and np.all(dx <= 1e-12 * (np.abs(x) + 1.0))
    # each threshold's bracket holds the root of the loss as computed
    assert np.all(pair.loss(x - dx) < ell) and np.all(pair.loss(x + dx) >= ell)


def test_thresholds_agree_with_a_bisection():
    """An independent root: 200 halvings of [−60, 60] on the same loss."""
    pair = par.pair(0.3, 0.8, "remove", k=3)
    lo, hi = pair.loss_range()
    ell = np.linspace(lo + 1e-3, 6.0, 97)
    x, dx = pair.x_of_loss(ell)
    a, b = np.full(ell.shape, -60.0), np.full(ell.shape, 60.0)
    for _ in range(200):
        mid = 0.5 * (a + b)
        below = pair.loss(mid) < ell
        a, b = np.where(below, mid, a), np.where(below, b, mid)
    assert np.all(np.abs(x - 0.5 * (a + b)) <= dx + 1e-13 * (np.abs(x) + 1.0))
