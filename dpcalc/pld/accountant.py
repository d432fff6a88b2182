"""Entry points of the PLD engine: certified brackets for a plan of (pair, count) items.

A plan is a list of (DominatingPair, count) items; its PLD is the convolution of count copies
of each pair's PLD [KJH20], in each direction; δ(ε) is the larger of the two directions and
ε(δ) the larger of their inverses.  Every function returns a bracket: `upper` never below the
truth, `lower` never above it.  The order of the items does not matter (they are put in a
canonical order, equal pairs merged).  References: [KJH20], [DGKKM22, Alg. 1], [GLW21, Thm 5.5].
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dpcalc.pld._core import _RHO_MIN, PLDUncertifiable
from dpcalc.pld.compose import (
    _delta_passes,
    _directions,
    _eps_core,
    _first_rho,
    _log_eta,
    _next_rho,
    _plans_eps,
)
from dpcalc.pld.pair import DominatingPair

__all__ = ["Profile", "certify_epsilon", "epsilon_bounds", "epsilon_curve",
           "log_delta_bounds"]


def _canonical(items) -> list[tuple[DominatingPair, int]]:
    """Items in a canonical order (by the pairs' keys), equal pairs merged; validated."""
    merged: dict = {}
    for entry in items:
        pair, n = entry
        if not isinstance(pair, DominatingPair):
            raise TypeError(f"not a DominatingPair: {pair!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"counts must be integers ≥ 1, got {n!r}")
        k = repr(pair.key())
        p0, n0 = merged.get(k, (pair, 0))
        merged[k] = (p0, n0 + int(n))
    if not merged:
        raise ValueError("a plan needs at least one item")
    return [merged[k] for k in sorted(merged)]


def _split(items):
    """(varying pair, its count, fixed items): the largest count varies (heuristic only)."""
    items = _canonical(items)
    i = max(range(len(items)), key=lambda j: (items[j][1], -j))
    pair, n = items[i]
    return pair, n, tuple(items[:i] + items[i + 1:])


def _check_tol(tolerance):
    if (isinstance(tolerance, bool) or not isinstance(tolerance, (int, float))
            or not 0.0 < tolerance < 1.0):
        raise ValueError(f"tolerance must be in (0, 1), got {tolerance!r}")


def _check_log_delta(log_delta):
    if (isinstance(log_delta, bool) or not isinstance(log_delta, (int, float))
            or not math.isfinite(log_delta) or not log_delta < 0):
        raise ValueError(f"log_delta must be finite and < 0, got {log_delta!r}")


def epsilon_bounds(items: Sequence[tuple[DominatingPair, int]], log_delta: float,
                   tolerance: float = 1e-3) -> tuple[float, float]:
    """Certified bracket (lower, upper) on ε(δ) of the composition of a plan's items.

    ε(δ) is the smallest ε ≥ 0 with δ(ε) ≤ δ in both directions [KJH20]; the grid is refined
    until (upper − lower)/upper ≤ tolerance or the resolution cap is hit (then a wider,
    still certified, bracket).  References: [KJH20], [DGKKM22, Alg. 1].

    Raises:
        PLDUncertifiable: no finite certified upper bound could be obtained.
    """
    _check_tol(tolerance)
    _check_log_delta(log_delta)
    pair, n, fixed = _split(items)
    return _eps_core(pair, [n], float(log_delta), float(tolerance), fixed)[0]


def epsilon_curve(pair: DominatingPair, steps_list, log_delta: float, tolerance: float = 1e-3,
                  fixed: Sequence[tuple[DominatingPair, int]] = ()):
    """Certified brackets on ε(δ) after each of an increasing list of counts of one pair
    (composed with the fixed items), incrementally [KJH20].  Returns [(lower, upper), ...]."""
    _check_tol(tolerance)
    _check_log_delta(log_delta)
    fixed = tuple(_canonical(fixed)) if fixed else ()
    return _eps_core(pair, list(steps_list), float(log_delta), float(tolerance), fixed)


def log_delta_bounds(items: Sequence[tuple[DominatingPair, int]], epsilon: float,
                     tolerance: float = 1e-3) -> tuple[float, float]:
    """Certified bracket (log lower, log upper) on δ(ε) of a plan (any real ε).

    The larger of the two directions' hockey-stick divergences of the composition [KJH20];
    log lower may be −inf (no positive lower bound certified), both are −inf where every
    loss is bounded below ε.  References: [KJH20], [DGKKM22, Alg. 1].

    Raises:
        PLDUncertifiable: no finite certified upper bound could be obtained.
    """
    _check_tol(tolerance)
    if isinstance(epsilon, bool) or not math.isfinite(epsilon):
        raise ValueError(f"epsilon must be finite, got {epsilon!r}")
    pair, n, fixed = _split(items)
    tol = float(tolerance)
    n_pass = [0]

    def next_rho(rho, lo, up):
        n_pass[0] += 1
        w = 1.0 - math.exp(lo - up) if up > -math.inf else 0.0
        if w <= tol or rho <= _RHO_MIN or n_pass[0] >= 6:
            return None
        return _next_rho(rho, tol, w)

    last = None
    for lo, up in _delta_passes(pair, n, float(epsilon), tol, _first_rho(tol), next_rho,
                                fixed=fixed):
        last = (lo, up)
    if last is None or not last[1] <= 0.0:
        raise PLDUncertifiable("no certified δ bracket at this resolution")
    return last


def certify_epsilon(items: Sequence[tuple[DominatingPair, int]], log_delta: float,
                    epsilon: float) -> bool | None:
    """Decide whether a plan is (ε, δ)-DP: True (certainly δ(ε) ≤ δ), False (certainly not)
    or None (undecided at the finest resolution).

    True rests on the pessimistic (upper) bound and False on the optimistic (lower) one, so
    both answers are certified [KJH20], [DGKKM22].  Starts coarse, refines while the bracket
    straddles δ.
    """
    pair, n, fixed = _split(items)
    rhos = [0.08, 0.03, 0.012, 0.006, _RHO_MIN]
    ld = float(log_delta)

    def next_rho(rho, lo, up):
        i = rhos.index(rho) + 1
        if i >= len(rhos):
            return None
        if lo > -math.inf and up < math.inf:
            # the bracket shrinks like ρ²: if even the finest pass would still straddle
            # log δ, give up now (None is always an allowed answer)
            mid, half = 0.5 * (lo + up), 0.5 * (up - lo) * (_RHO_MIN / rho) ** 2
            if abs(ld - mid) < 0.5 * half:
                return None
        return rhos[i]

    for lo, up in _delta_passes(pair, n, float(epsilon), 1e-3, rhos[0], next_rho,
                                decide=ld, fixed=fixed):
        if up <= log_delta:
            return True
        if lo > log_delta:
            return False
    return None


class Profile:
    """One composed PLD of a plan, read at many ε: certified (log δ_low, log δ_up) brackets.

    The plan is composed once per direction and side (tilt chosen for the anchor δ, the
    resolution from tolerance), and every read reuses the composition [KJH20].  Any ε is
    allowed, negative ones included (δ(ε) of a direction then counts the mass below 0 too);
    a read far from the anchor is still certified, only wider.  Trade-off curves and batch
    questions read one composition many times.
    """

    def __init__(self, items: Sequence[tuple[DominatingPair, int]], log_delta: float = -11.5,
                 tolerance: float = 1e-3):
        from dpcalc.pld.compose import _compose_points

        _check_tol(tolerance)
        _check_log_delta(log_delta)
        self.items = _canonical(items)
        pair, n, fixed = _split(self.items)
        plans = _plans_eps(pair, [n], float(log_delta), float(tolerance), fixed=fixed)
        log_eta = _log_eta(float(log_delta), float(tolerance),
                           n + sum(k for _, k in fixed))
        self._finals: dict = {}

        def keep(i, finals):
            self._finals.update(finals)

        _compose_points(pair, [n], _first_rho(float(tolerance)) / 2, plans, log_eta, keep,
                        directions=_directions([p for p, _ in self.items]), fixed=fixed)

    def log_delta_bounds(self, epsilon: float) -> tuple[float, float]:
        """(log lower, log upper) on δ(ε): the larger over the directions, each certified."""
        up = lo = -math.inf
        for (_, pess), fin in self._finals.items():
            v = fin.log_delta(float(epsilon))
            if pess:
                up = max(up, v)
            else:
                lo = max(lo, v)
        return lo, up

    def delta_bounds(self, epsilons) -> list[tuple[float, float]]:
        """log_delta_bounds at each ε of a list."""
        return [self.log_delta_bounds(e) for e in epsilons]

    def epsilon_bounds(self, log_delta: float) -> tuple[float, float]:
        """(lower, upper) on ε(δ) from this composition."""
        up = lo = 0.0
        for (_, pess), fin in self._finals.items():
            e = fin.epsilon(float(log_delta))
            if pess:
                up = max(up, e)
            else:
                lo = max(lo, e)
        return lo, up
