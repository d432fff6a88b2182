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
from dataclasses import replace

import numpy as np

from dpcalc.errors import DomainError
from dpcalc.pld._core import _RHO_MIN, PLDUncertifiable
from dpcalc.pld.compose import (
    _chernoff_log_delta,
    _compose_points,
    _delta_passes,
    _directions,
    _eps_finite_beyond,
    _first_rho,
    _inf_mass,
    _log_eta,
    _next_rho,
    _plans_delta,
    _sum_tops,
)
from dpcalc.pld.eps_search import _eps_core, _plans_eps
from dpcalc.pld.pair import DominatingPair
from dpcalc.pld.plan import tilt_retry
from dpcalc.pld.pmf import _SPLIT_NOISE_FITTED

__all__ = ["Profile", "certify_epsilon", "epsilon_at_delta_zero",
           "epsilon_beyond_finite_losses", "epsilon_bounds", "epsilon_curve", "epsilon_upper",
           "log_delta_bounds", "log_delta_profile", "log_mass_at_infinity", "loss_variance"]


def _canonical(items) -> list[tuple[DominatingPair, int]]:
    """Items in a canonical order (by the pairs' keys), equal pairs merged; validated."""
    merged: dict = {}
    for entry in items:
        pair, n = entry
        if not isinstance(pair, DominatingPair):
            raise TypeError(f"not a DominatingPair: {pair!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise DomainError(f"counts must be integers ≥ 1, got {n!r}")
        k = repr(pair.key())
        p0, n0 = merged.get(k, (pair, 0))
        merged[k] = (p0, n0 + int(n))
    if not merged:
        raise DomainError("a plan needs at least one item")
    return [merged[k] for k in sorted(merged)]


def _split(items):
    """(varying pair, its count, fixed items): the largest count varies (heuristic only)."""
    items = _canonical(items)
    i = max(range(len(items)), key=lambda j: (items[j][1], -j))
    pair, n = items[i]
    return pair, n, tuple(items[:i] + items[i + 1:])


def epsilon_at_delta_zero(items: Sequence[tuple[DominatingPair, int]]) -> float:
    """ε(0) of a plan: the larger direction's Σ n·sup L (the pairs' hard upper edges, exact
    or outward, rounded up: compose._sum_tops), inf when a loss is unbounded (δ = 0 is met
    by no ε then)."""
    return _tops(items, finite=False)


def epsilon_beyond_finite_losses(items: Sequence[tuple[DominatingPair, int]]) -> float:
    """The larger direction's Σ n·(largest finite loss), inf when a finite loss is
    unbounded: beyond it δ(ε) is exactly the P-mass at +∞."""
    return _tops(items, finite=True)


def _tops(items, finite: bool) -> float:
    items = _canonical(items)
    return max(_sum_tops(items, d, finite) for d in _directions([p for p, _ in items]))


def log_mass_at_infinity(items: Sequence[tuple[DominatingPair, int]]) -> float:
    """_log_inf_mass of a plan (its items validated and merged)."""
    return _log_inf_mass(_canonical(items))


def _log_inf_mass(items) -> float:
    """A lower bound on log δ(ε) at every ε: the composition's P-mass at +∞, the larger over
    the directions (compose._inf_mass: 1 − Π(1 − p_i)^n_i, each unit of which adds 1 to
    δ(ε) = E_P[(1 − e^{ε−L})_+]); −inf when no pair states one."""
    return max(_inf_mass(items, d)[0] for d in _directions([p for p, _ in items]))


def _check_tol(tolerance):
    if (isinstance(tolerance, bool) or not isinstance(tolerance, (int, float))
            or not 0.0 < tolerance < 1.0):
        raise DomainError(f"tolerance must be in (0, 1), got {tolerance!r}")


def _check_log_delta(log_delta):
    if (isinstance(log_delta, bool) or not isinstance(log_delta, (int, float))
            or not math.isfinite(log_delta) or not log_delta < 0):
        raise DomainError(f"log_delta must be finite and < 0, got {log_delta!r}")


def epsilon_bounds(items: Sequence[tuple[DominatingPair, int]], log_delta: float,
                   tolerance: float = 1e-3, for_solve: bool = False) -> tuple[float, float]:
    """Certified bracket (lower, upper) on ε(δ) of the composition of a plan's items.

    ε(δ) is the smallest ε ≥ 0 with δ(ε) ≤ δ in both directions [KJH20]; the grid is refined
    until (upper − lower)/upper ≤ tolerance or the resolution cap is hit (then a wider,
    still certified, bracket).  ``for_solve``: the same upper end, bit for bit, and a lower
    end that may be looser (the last pass composes no optimistic side, see _eps_group): for
    solvers, whose predicates read the upper end alone.  References: [KJH20], [DGKKM22,
    Alg. 1].

    Raises:
        PLDUncertifiable: no finite certified upper bound could be obtained.
    """
    _check_tol(tolerance)
    _check_log_delta(log_delta)
    pair, n, fixed = _split(items)
    return _eps_core(pair, [n], float(log_delta), float(tolerance), fixed,
                     for_solve=bool(for_solve))[0]


def epsilon_upper(items: Sequence[tuple[DominatingPair, int]], log_delta: float,
                  tolerance: float = 1e-3, stop_above: float = math.inf) -> float:
    """A certified upper bound on ε(δ) from the first pass of :func:`epsilon_bounds` alone
    (its pessimistic sides): about half the work, and the same upper bound whenever that
    bracket is narrow enough at its first resolution (the usual case). For solvers: a probe
    that passes on it needs nothing more; the compositions are kept for epsilon_bounds at
    the same point.  As soon as one direction's bound exceeds ``stop_above`` the answer is
    +inf (the other directions are not composed: a predicate needs no more).
    References: [KJH20], [DGKKM22, Alg. 1].

    Raises:
        PLDUncertifiable: no finite certified upper bound could be obtained.
    """
    _check_tol(tolerance)
    _check_log_delta(log_delta)
    pair, n, fixed = _split(items)
    return _eps_core(pair, [n], float(log_delta), float(tolerance), fixed, quick=True,
                     stop_above=float(stop_above))[0][1]


def epsilon_curve(pair: DominatingPair, steps_list, log_delta: float, tolerance: float = 1e-3,
                  fixed: Sequence[tuple[DominatingPair, int]] = ()):
    """Certified brackets on ε(δ) after each of an increasing list of counts of one pair
    (composed with the fixed items), incrementally [KJH20].  Returns [(lower, upper), ...]."""
    _check_tol(tolerance)
    _check_log_delta(log_delta)
    fixed = tuple(_canonical(fixed)) if fixed else ()
    return _eps_core(pair, list(steps_list), float(log_delta), float(tolerance), fixed)


@tilt_retry
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
        raise DomainError(f"epsilon must be finite, got {epsilon!r}")
    pair, n, fixed = _split(items)
    tol = float(tolerance)
    n_pass = [0]
    linf = _log_inf_mass(_canonical(items))
    dirs = _directions([p for p, _ in _canonical(items)])
    if linf > -math.inf and all(epsilon >= _eps_finite_beyond(pair, fixed, d, n)
                                for d in dirs):
        # beyond the finite losses δ(ε) is exactly the mass at +∞ (finite_loss_bounds)
        m = [_inf_mass(_canonical(items), d) for d in dirs]
        return max(b[0] for b in m), max(b[1] for b in m)

    def next_rho(rho, lo, up):
        n_pass[0] += 1
        lo = max(lo, linf)
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
    return max(last[0], min(linf, last[1])), last[1]


@tilt_retry
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


def _sides_log_delta_many(finals, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log lower, log upper) on δ at each ε of grid: the larger over the directions of the
    optimistic and of the pessimistic sides' certified values."""
    lo = np.full(grid.size, -np.inf)
    up = np.full(grid.size, -np.inf)
    for (_, pess), fin in finals.items():
        v = fin.log_delta_many(grid)
        if pess:
            up = np.maximum(up, v)
        else:
            lo = np.maximum(lo, v)
    return lo, up


@tilt_retry
def log_delta_profile(items: Sequence[tuple[DominatingPair, int]], epsilons,
                      tolerance: float = 1e-3, focus: float | None = None,
                      log_delta_floor: float = -30.0) -> tuple[np.ndarray, np.ndarray]:
    """Certified brackets (log lower, log upper) on δ(ε) of a plan at many ε (any real ε),
    from one composition per pass (both directions, both sides; δ is the larger direction,
    as in log_delta_bounds) [KJH20], [DGKKM22, Alg. 1].

    The tilt and budgets are sized for ``focus`` (default: the median ε); every point is
    certified whatever the tilt, only its width depends on it.  Directions whose δ is exactly
    0 at the focus but not at the smallest ε are composed with the tilt of that ε.  Passes
    refine ρ while the relative width (1 − δ_low/δ_up) exceeds ``tolerance`` at some ε with
    log δ_up above ``log_delta_floor`` (at most 4 passes).  Each pass reuses the engine's
    composition and _Final (read by _Final.log_delta_many), so the error analysis of
    dpcalc.pld applies unchanged; the best bracket over the passes is kept (each is
    certified).  log lower may be −inf (no positive lower bound certified).

    Raises:
        PLDUncertifiable: no certified bracket at any resolution tried.
    """
    _check_tol(tolerance)
    grid = np.asarray([float(e) for e in epsilons], dtype=float)
    if not np.all(np.isfinite(grid)):
        raise DomainError("epsilons must be finite")
    n = grid.size
    if n == 0:
        return np.zeros(0), np.zeros(0)
    pair, steps, fixed = _split(items)
    tol = float(tolerance)
    ref = float(np.median(grid)) if focus is None else float(focus)
    low_eps = min(ref, float(np.min(grid)))
    ch = _chernoff_log_delta(pair, steps, ref, fixed)
    if ch == -math.inf:
        ch = _chernoff_log_delta(pair, steps, low_eps, fixed)
    # a guess of log δ, only to size the truncation budgets (the Chernoff value overshoots)
    est = ch - 8.0 - 0.05 * abs(ch) if ch > -math.inf else -30.0
    best_lo = np.full(n, -np.inf)
    best_up = np.zeros(n)

    def evaluate(i, finals):
        return _sides_log_delta_many(finals, grid)

    rho = _first_rho(tol)
    done = False
    for _ in range(4):
        plans = _plans_delta(pair, steps, ref, tol, est, fixed)
        plans.update({d: p for d, p in _plans_delta(pair, steps, low_eps, tol, est,
                                                     fixed).items() if d not in plans})
        if not plans:                 # every loss is bounded below every ε: δ = 0 exactly
            return np.full(n, -np.inf), np.full(n, -np.inf)
        if rho < _first_rho(tol):
            # a refinement: the first pass missed the tolerance, so the squarings' split
            # gate takes its fitted factor (pmf._noisy), as in compose._delta_passes
            plans = {d: replace(p, split_noise=_SPLIT_NOISE_FITTED) for d, p in plans.items()}
        lo, up = _compose_points(pair, [steps], rho, plans,
                                 _log_eta(est, tol, steps + sum(k for _, k in fixed)),
                                 evaluate, directions=list(plans), fixed=fixed)[0]
        best_lo = np.maximum(best_lo, lo)
        best_up = np.minimum(best_up, up)
        done = True
        with np.errstate(invalid="ignore"):
            w = np.where(best_up > -np.inf, -np.expm1(best_lo - best_up), 0.0)
        w = np.where(best_up > log_delta_floor, w, 0.0)
        width = float(np.max(w))
        if width <= tol or rho <= _RHO_MIN:
            break
        rho = _next_rho(rho, tol, width)
    if not done or not np.all(best_up <= 0.0):
        raise PLDUncertifiable("no certified δ bracket at this resolution")
    return np.maximum(best_lo, np.minimum(_log_inf_mass(_canonical(items)), best_up)), best_up


def loss_variance(items: Sequence[tuple[DominatingPair, int]]) -> float:
    """Σ n·Var_P(L) of a plan's "remove" losses, by the pairs' quadratures: a heuristic (to
    place grids and seed solvers; never part of a bound)."""
    from dpcalc.pld.plan import _cgf

    return math.fsum(n * _cgf(p, "remove", 0.0)[2] for p, n in _canonical(items))


class Profile:
    """One composed PLD of a plan, read at many ε: certified (log δ_low, log δ_up) brackets.

    The plan is composed once per direction and side (tilt chosen for the anchor δ, the
    resolution from tolerance), and every read reuses the composition [KJH20].  Any ε is
    allowed, negative ones included (δ(ε) of a direction then counts the mass below 0 too);
    a read far from the anchor is still certified, only wider.  Trade-off curves and batch
    questions read one composition many times.
    """

    @tilt_retry
    def __init__(self, items: Sequence[tuple[DominatingPair, int]], log_delta: float = -11.5,
                 tolerance: float = 1e-3):
        _check_tol(tolerance)
        _check_log_delta(log_delta)
        self.items = _canonical(items)
        pair, n, fixed = _split(self.items)
        plans = _plans_eps(pair, [n], float(log_delta), float(tolerance), fixed=fixed)
        log_eta = _log_eta(float(log_delta), float(tolerance),
                           n + sum(k for _, k in fixed))
        self._finals: dict = {}

        self._linf = _log_inf_mass(self.items)

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
        return max(lo, min(self._linf, up)), up

    def log_delta_many(self, epsilons) -> tuple[np.ndarray, np.ndarray]:
        """(log lower, log upper) arrays on δ at many ε, vectorised (_Final.log_delta_many)."""
        grid = np.asarray([float(e) for e in epsilons], dtype=float)
        lo, up = _sides_log_delta_many(self._finals, grid)
        return np.maximum(lo, np.minimum(self._linf, up)), up

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
