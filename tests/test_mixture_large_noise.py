"""The mixture pairs' loss at a large σ: the excess numerator in its expm1 form.

Before: N = Σ_μ c_μ e^{t_μ − M} was certified to the weights' error κ ~ u·q, while N itself
is ~q·x/σ²: at σ 1e6 the bound was 2.6e-15 against losses of 1e-6, and the runs it enters
lost all meaning (helper-52: replace-one at q 0.5, 10⁷ steps answered ε 6880.8 at σ 1e6 and
1.58 at σ 1e4; fixed batches 4987 at 1e6 against 3.02 at 1e5).  Both sides are probability
mixtures, so Σ c_μ = 0 and N = e^{−M}·Σ_μ c_μ·expm1(t_μ), whose error is relative to N.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpcalc.mechanisms import poisson_add_remove, poisson_replace_one
from tests.cli_helpers import run


def _exact_loss(x, sigma, side_a, side_b):
    """log dP/dQ(x) at 60 digits with the exact binomial weights: sides [(weight, mean)]."""
    with mpmath.workdps(60):
        xx, s = mpmath.mpf(x), mpmath.mpf(sigma)

        def dens(side):
            return mpmath.fsum(w * mpmath.exp((m * xx - mpmath.mpf(m) ** 2 / 2) / (s * s))
                               for w, m in side)

        return mpmath.log(dens(side_a) / dens(side_b))


def _binomial(k, q):
    with mpmath.workdps(60):
        qq = mpmath.mpf(q)
        return [mpmath.binomial(k, j) * qq ** j * (1 - qq) ** (k - j) for j in range(k + 1)]


@pytest.mark.parametrize("sigma", [1e3, 1e5, 1e6, 1e7])
@pytest.mark.parametrize("kind,k,q", [("replace-one", 1, 0.5), ("remove", 3, 0.5),
                                      ("add", 2, 0.01), ("replace-one", 3, 1e-4)])
def test_large_noise_losses_are_certified_to_a_tiny_fraction_of_themselves(sigma, kind, k, q):
    w = _binomial(k, q)
    up = list(zip(w, range(k + 1), strict=True))
    down = list(zip(w, range(0, -k - 1, -1), strict=True))
    if kind == "replace-one":
        pair, sides = poisson_replace_one.pair(q, sigma, k), (up, down)
    elif kind == "remove":
        pair, sides = poisson_add_remove.pair(q, sigma, "remove", k), (up, [(1, 0)])
    else:
        pair, sides = poisson_add_remove.pair(q, sigma, "add", k), ([(1, 0)], down)
    xs = np.array([-4.0, -1.0, 0.37, 1.5, 3.0]) * sigma
    got, err = pair.loss(xs), pair.loss_error(xs)
    for x, g, e in zip(xs, got, err, strict=True):
        exact = _exact_loss(x, sigma, *sides)
        assert abs(mpmath.mpf(g) - exact) <= e
        assert e <= 1e-12 * abs(float(exact))    # the parent's: 2.6e-9 of |L| at σ 1e6


@pytest.mark.parametrize("scheme", [["--relation", "replace-one"], ["--sampling", "fixed-batch"],
                                    ["--examples-per-user", "3"]], ids=str)
def test_epsilon_falls_with_the_noise_up_to_the_largest_evaluated(capsys, scheme):
    got = []
    for sigma in ("1e4", "1e5", "1e6"):
        r = run(capsys, "dpsgd", *scheme, "--q", "0.5", "--steps", "10000000", "--sigma",
                sigma, "--delta", "1e-5", "--json")
        assert r.code == 0, r.err
        got.append(r.json["value"])
    assert got[0] > got[1] > got[2] > 0
    # a μ-GDP estimate of the run at σ 1e6 [DRS19]: μ ≈ √T·χ-scale ≈ 3e-3 (replace-one) to
    # 5e-3 (K = 3): ε a few 1e-3 to 1e-2, where the parent answered 5e3-7e3
    assert got[2] < 0.02
    assert math.isfinite(got[0])
