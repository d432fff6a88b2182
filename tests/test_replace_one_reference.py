"""Poisson replace-one at a small rate over many steps, against an independent computation.

q 1e-5, 10⁶ steps, δ 1e-5.  The references come from the characteristic function of the
pair's one-step loss (E_P[e^{tL}] by the trapezoid rule in x, checked against 35-digit mpmath
quadrature to 2e-12), raised to the power T and inverted two ways (a periodic FFT window,
and the contour formula δ(ε) = (1/2π)∫ M(c+it)^T e^{−(c+it)ε} / ((c+it)(c+it+1)) dt at three
c), and from Microsoft's prv_accountant fed the same loss in closed form: they agree to
5e-5 or better (helper-15, session 38).  Here δ is driven by rare large losses (one of the
~10 sampled steps landing far out), so the grid's lower end is loose (1.10 for 1.997); the
upper end must hold the reference and lie near it.
"""

from __future__ import annotations

import pytest

from tests.cli_helpers import run

BASE = ["dpsgd", "--relation", "replace-one", "--q", "1e-5", "--steps", "1000000"]


@pytest.mark.parametrize("sigma,eps,near", [("0.4285", 1.9973, 1e-3), ("0.6", 0.18549, 0.012),
                                            ("1.0", 0.06408, 1e-3)])
def test_epsilon_brackets_hold_the_reference(capsys, sigma, eps, near):
    r = run(capsys, *BASE, "--sigma", sigma, "--delta", "1e-5", "--json")
    assert r.code == 0, r.err
    lo, up = r.json["bounds"]["lower"], r.json["bounds"]["upper"]
    # the references' own accuracy: ±2e-4 at σ 0.4285, ±1e-4 elsewhere
    slack = 2e-4 if sigma == "0.4285" else 1e-4
    assert lo <= eps + slack and up >= eps - slack
    # (σ 0.6: 0.18877, 1.8 % above, until the finest pass raised its one-step lattice's
    # length cap, session 39: 0.18753, 1.1 % above; left open)
    assert up <= eps * (1 + near)


def test_a_delta_bracket_holds_the_reference(capsys):
    # δ(1.6) = 2.718e-5 (both inversions and prv_accountant agree to 5e-5 relative)
    r = run(capsys, *BASE, "--sigma", "0.4285", "--epsilon", "1.6", "--json")
    assert r.code == 0, r.err
    lo, up = r.json["bounds"]["lower"], r.json["bounds"]["upper"]
    assert lo <= 2.718e-5 * (1 + 1e-4) and 2.718e-5 * (1 - 1e-4) <= up <= 2.718e-5 * 1.01
