"""The one-step grid thins where the tilted tail is light (plan._tier_positions).

A small-q, small-σ step tilted at the ε question's λ has a heavy right tail (1e-6 of the
tilted mass beyond a loss of 9 at q 4.9e-4, σ 0.777): with the tiers at 1e-6 … 1e-15 of the
tilted mass the whole support stayed at stride 1, and the one-step law cost more than its
118k-step composition.  Oracle for tightness: the same question on the dense grid (every
tier level 0: stride 1 everywhere); any grid is sound, so only the tightness is asked.
"""

from __future__ import annotations

import math

import pytest

import dpcalc.pld.plan as plan
import dpcalc.pld.sides as sides
from dpcalc.relations import pld

CASES = [
    # q, σ, steps, δ: a small-q, small-σ step (heavy tilted tail); issue 14's command B at
    # its solved rate; a step with light tails
    (0.000492, 0.777, 117887, 1e-5),
    (0.00280926, 0.9268, 30706, 5.197e-9),
    (0.03, 4.65, 1200, 1e-5),
]


def _levels(monkeypatch):
    """Record (grid length, atoms) of every one-step grid the engine places."""
    seen = []
    inner = plan._level0

    def level0(*args, **kwargs):
        got = inner(*args, **kwargs)
        seen.append((got[3] - got[2] + 1, got[4].size))
        return got

    monkeypatch.setattr(sides, "_level0", level0)   # (its caller, _make_sides)
    return seen


def test_a_heavy_tilted_tail_is_thinned(monkeypatch):
    seen = _levels(monkeypatch)
    q, sigma, steps, delta = CASES[0]
    pld.epsilon_bounds(q, sigma, steps, math.log(delta), 1e-3)
    assert seen
    # every grid of this question (first pass and refinement, both directions) evaluates
    # the tails at under a third of its positions (the dense tiers: 90 % of them)
    for n, atoms in seen:
        assert atoms < n / 3, (n, atoms)


@pytest.mark.parametrize("q,sigma,steps,delta", CASES)
def test_the_thinned_grid_is_as_tight_as_the_dense_one(monkeypatch, q, sigma, steps, delta):
    tiered = pld.epsilon_bounds(q, sigma, steps, math.log(delta), 1e-3)
    monkeypatch.setattr(plan, "_TIER_LEVELS", (0.0, 0.0, 0.0, 0.0))
    seen = _levels(monkeypatch)
    dense = pld.epsilon_bounds(q, sigma, steps, math.log(delta), 1e-3)
    assert all(atoms >= n - 2 for n, atoms in seen)     # (the oracle is dense)
    assert tiered[1] <= dense[1] * (1 + 1e-6)
    assert tiered[0] <= dense[1] and dense[0] <= tiered[1]
