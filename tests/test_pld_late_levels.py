"""Late squarings coarsen past the λh rule (dpcalc.pld.pmf._Engine._late_level).

The engine keeps λ·h ≤ _LAMH·ρ on every grid, which made the last squarings of a long run far
in the tail compose vectors of 10⁵–10⁶ points.  A squaring that enters the product only a
few times may take a coarser grid: each coarsening is sound whatever its level (the bracket
stays certified), and its cost in tightness is (λh)² per copy.  These tests check the
schedule, that it takes effect, and that the answers stay where the fine grid put them.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

import dpcalc.pld.pmf as pmf
from dpcalc.relations import pld


def _largest_level(t_max: int, kk: int, lamh: float) -> int:
    """The schedule by brute force: the largest s with (T >> kk)·4^s ≤ share·T and λh0·2^s
    ≤ _LATE_LAMH, or −1."""
    mult = max(1, t_max >> kk)
    best = -1
    for s in range(64):
        if mult * 4 ** s <= pmf._LATE_SHARE * t_max and lamh * 2 ** s <= pmf._LATE_LAMH:
            best = s
    return best


@pytest.mark.parametrize("t_max", [1, 255, 256, 1000, 65536, 2 ** 20 + 7, 10 ** 7])
@pytest.mark.parametrize("lamh", [0.0, 1e-5, 3e-3, 0.05, 0.2])
def test_late_level_schedule(t_max, lamh):
    engine = SimpleNamespace(t_max=t_max, lam=10.0, h0=lamh / 10.0)
    for kk in range(t_max.bit_length()):
        assert pmf._Engine._late_level(engine, kk) == _largest_level(t_max, kk, lamh)


def test_late_level_values():
    engine = SimpleNamespace(t_max=2 ** 20, lam=10.0, h0=1e-5)
    # the last squaring (one copy): 4^s ≤ 2^20/256, s = 6; the copies halve per squaring
    assert [pmf._Engine._late_level(engine, kk) for kk in (7, 8, 10, 12, 20)] == [-1, 0, 1,
                                                                                  2, 6]
    # λh0 = 0.02: 2^s ≤ 5
    engine.h0 = 2e-3
    assert pmf._Engine._late_level(engine, 20) == 2
    # a short run has no late level
    assert pmf._Engine._late_level(SimpleNamespace(t_max=255, lam=1.0, h0=1e-6), 7) == -1


def _run(monkeypatch, share, fn, *args):
    """fn(*args) with _LATE_SHARE = share, and the longest composed power's length."""
    monkeypatch.setattr(pmf, "_LATE_SHARE", share)
    longest = [0]
    power = pmf._Engine.power

    def recording(self, k):
        got = power(self, k)
        if isinstance(got, pmf._Dist):
            longest[0] = max(longest[0], got.t.size)
        return got

    monkeypatch.setattr(pmf._Engine, "power", recording)
    try:
        return fn(*args), longest[0]
    finally:
        monkeypatch.setattr(pmf._Engine, "power", power)


def test_far_tail_long_run_composes_shorter_vectors_with_the_same_bracket(monkeypatch):
    """q 0.002, σ 1.5, 65,536 steps at δ 1e-150: the longest power was 371,981 points, now
    46,507 (1.10 s -> 0.74 s); the upper end moves by 1.4e-6 relative."""
    args = (0.002, 1.5, 65536, math.log(1e-150))
    (lo0, up0), n0 = _run(monkeypatch, 0.0, pld.epsilon_bounds, *args)
    (lo1, up1), n1 = _run(monkeypatch, 1.0 / 256, pld.epsilon_bounds, *args)
    assert 4 * n1 <= n0
    assert lo1 <= up0 and lo0 <= up1            # two certified brackets on one value
    assert up1 == pytest.approx(up0, rel=1e-5)
    assert (up1 - lo1) / up1 <= 1e-3            # still within the default tolerance


def test_late_coarsening_keeps_a_far_tail_delta_bound(monkeypatch):
    """δ at ε 4.222 of q 7.79e-5, σ 2.1, 1,609,013 steps, whose upper end is mostly the ℓ1
    error term: late coarsenings at λh up to 0.25 multiplied that term and moved log δ up by
    0.134 (review); with λh ≤ _LATE_LAMH it stays within 1e-3."""
    args = (7.79e-5, 2.1, 1609013, 4.222)
    (lo0, up0), _ = _run(monkeypatch, 0.0, pld.log_delta_bounds, *args)
    (lo1, up1), _ = _run(monkeypatch, 1.0 / 256, pld.log_delta_bounds, *args)
    assert lo1 <= up0 and lo0 <= up1
    assert abs(up1 - up0) <= 1e-3
