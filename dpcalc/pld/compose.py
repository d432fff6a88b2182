"""Drivers of the PLD engine: compose a plan's items and bracket δ(ε) (ε(δ): see
dpcalc.pld.eps_search).

A plan is a list of items (pair, n): n compositions of each pair [KJH20].  One item may vary
over an increasing list of counts (a curve: ε after each epoch), composed incrementally; the
others ("fixed") are composed once per pass and multiplied in.  Every item is discretised on
a grid h_base·2^k sharing one tilt λ, so the products are exact convolutions on one lattice;
the error terms of every item add up through the convolutions (dpcalc.pld.pmf).  Both
directions are composed when any item is asymmetric (every mechanism sees the same
neighbouring datasets, so "remove" composes the remove pairs of all items [ZDW22, Def 7]).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import astuple, replace
from fractions import Fraction

import numpy as np

from dpcalc.pld._core import (
    _BUDGET,
    _N0_LEN_FAR,
    _RHO_MIN,
    _TAU_FLOOR,
    PLDUncertifiable,
    _log_c_lambda,
    _log_mass_any,
    _n_truncations,
)
from dpcalc.pld.evaluate import _Final
from dpcalc.pld.plan import _best_lambda, _cgf, _grid_h, _pd, _Plan
from dpcalc.pld.pmf import _SPLIT_NOISE_FITTED, _Dist, _Engine
from dpcalc.pld.sides import _EDGE_GATE_FINE, _make_sides


def _directions(pairs) -> list[str]:
    # symmetric pairs (q = 1: N(0,σ²) vs N(1,σ²)) have the same PLD in both directions
    return ["remove"] if all(p.symmetric for p in pairs) else ["remove", "add"]


def _pairs(pair, fixed):
    return [pair] + [p for p, _ in fixed]


def _n_fixed(fixed) -> int:
    return sum(n for _, n in fixed)


def _sum_tops(items, direction: str, finite: bool = False) -> float:
    """Σ n·sup L over items [(pair, n)], rounded up; inf if a loss is unbounded above.
    ``finite``: the finite losses' tops (``finite_loss_bounds``, for pairs with an atom at
    +∞).  Exact (the smallest double at or above the rational sum) when every pair states
    its top exactly (``exact_loss_top``), else the float sum padded by 1e-12 relative."""
    hi, exact, total = 0.0, True, Fraction(0)
    for p, n in items:
        d = _pd(p, direction)
        bounds = getattr(p, "finite_loss_bounds", p.loss_bounds) if finite else p.loss_bounds
        top = bounds(d)[1]
        if not math.isfinite(top):
            return math.inf
        hi = hi + n * top
        get = getattr(p, "exact_loss_top", None)
        fr = get(d) if get is not None else None
        if fr is None:
            exact = False
        elif exact:
            total += n * fr
    if exact:
        f = float(total)
        return f if Fraction(f) >= total else math.nextafter(f, math.inf)
    return math.nextafter(hi * (1 + 1e-12), math.inf)


def _eps_zero_beyond(pair, fixed, direction: str, steps: int) -> float:
    """An ε beyond which δ(ε) of this direction is exactly 0 (the loss is bounded by the
    sum of the hard edges), rounded up; inf if the loss is unbounded."""
    return _sum_tops(tuple(fixed) + ((pair, steps),), direction)


def _inf_mass(items, direction: str) -> tuple[float, float]:
    """(lower, upper) on log of the P-mass at +∞ of the composition of items [(pair, n)] in
    one direction: the pairs' own atoms there (``log_mass_at_infinity``, e.g. an (ε, δ)
    point's δ [KOV15]), 1 − Π(1 − p_i)^{n_i}; −inf when no pair states one."""
    parts = []
    for p, n in items:
        get = getattr(p, "log_mass_at_infinity", None)
        if get is not None:
            parts.append((get(_pd(p, direction)), n))
    return _log_mass_any(parts)


def _eps_finite_beyond(pair, fixed, direction: str, steps: int) -> float:
    """_eps_zero_beyond of the finite losses alone (``finite_loss_bounds``, for pairs with an
    atom at +∞): beyond it δ(ε) of this direction is exactly the P-mass at +∞."""
    return _sum_tops(tuple(fixed) + ((pair, steps),), direction, finite=True)


_SCOUT_LOG_DELTA = -300.0     # Chernoff guesses of log δ below this: a coarse pass first
_SCOUT_RHO = 0.06
_FAR_LOG_DELTA = -700.0       # upper bounds below this (δ < 1e-304): no refinement
# a bracket wider than this many tolerances at the finest grid, its one-step lattice
# coarsened by the length cap, is refined once more with a longer one (eps_search._raise_len)
_RAISE_WIDTH = 10.0
_RAISE_ROOM = 4.0           # and its ℓ1 error term at least e^4 below δ (the longer vectors'
#                             round-off bound is larger)
_NWIN_FAR = 1 << 17           # and (Chernoff guess below it) shorter vectors: coarser grids


# a refined pass whose bracket is still wider than this share of the last one ends the
# refinement: the width no longer falls like ρ² (a grid cap, an error term or the
# discretisation of a one-step bulk far narrower than the grid binds), and each finer pass
# costs more; so does an upper end that is mostly the ℓ1 error term (round-off and
# truncation: a finer grid lowers only the grid term, and solvers read only the upper end)
_STALL = 0.75


def _first_rho(tolerance: float) -> float:
    # the bracket width scales like ρ² (both discretisations are second order); the
    # constant is ~1–4 on DP-SGD cases
    return min(0.1, max(_RHO_MIN, 0.45 * math.sqrt(tolerance)))


def _next_rho(rho: float, tolerance: float, width: float) -> float:
    factor = math.sqrt(0.5 * tolerance / width) if width > 0 and math.isfinite(width) else 0.3
    nxt = rho * min(0.7, max(0.25, factor))
    # within 25 % of the finest grid: the finest (about the same cost, tighter, and known
    # to be the last pass, which a solver's evaluation composes upper-only)
    return _RHO_MIN if nxt < 1.25 * _RHO_MIN else nxt


def _log_eta(log_delta: float, tolerance: float, steps: int) -> float:
    """log of the one-step P-mass sent to +∞: T·η ≤ _BUDGET·tol·δ (T: all steps of a plan)."""
    return log_delta + math.log(_BUDGET * tolerance) - math.log(steps)


def _tau(tolerance: float, lgam: float, t_max: int, fixed=()) -> float:
    """Truncation threshold (tilted mass) so that all drops cost ≤ _BUDGET·tol·δ.

    lgam = log(Γ/δ), Γ = e^{T·c − λε}·C_λ the factor turning tilted ℓ1 mass into δ."""
    lgam = max(0.0, min(lgam, 300.0))
    n_tr = _n_truncations(t_max) + sum(_n_truncations(n) + 2 for _, n in fixed)
    return max(_TAU_FLOOR, _BUDGET * tolerance * math.exp(-lgam) / n_tr)


def _shift(d: _Dist, k: int) -> _Dist:
    """The same vector on the shared lattice: an item grid h_base·2^k at level s is the shared
    grid at level s + k."""
    return d if k == 0 else replace(d, s=d.s + k)


def _product(eng: _Engine, a: _Dist, b: _Dist) -> _Dist:
    out = eng.multiply(a, b)
    while out.t.size > eng.nwin // 2:
        out = eng._coarsen(out)          # too long: a coarser grid is still sound
    return out


def _fixed_part(pair, t_max, fixed, rho, plan, log_eta, sides, d):
    """Sides of the varying item and the composed fixed items of direction d on one lattice.

    Returns (varying sides, its level shift k by side, combiner engines by side, fixed product
    by side, fixed totals (Σ n·off, Σ n·c, log Σ n·p∞) by side).  The level of each item is
    read per side: the sides' one-step grids may differ (the optimistic side's own grid next
    to a hard edge keeps h where the pessimistic one hits a size cap and doubles it; read at
    the other side's level, a vector would be placed at twice its spacing — review)."""
    items = list(fixed) + [(pair, t_max)]
    hs = [_grid_h(p, _pd(p, d), plan.var[i], plan.lam, rho, log_eta, plan.nwin,
                  plan.bulk_h if i == len(items) - 1 else math.inf)
          for i, (p, _) in enumerate(items)]
    h_base = min(hs)
    made = []
    for i, (p, n) in enumerate(items):
        k = int(math.floor(math.log2(hs[i] / h_base)))
        by_side = _make_sides(p, d, plan, rho, n, log_eta, sides, item=i,
                              h_fixed=math.ldexp(h_base, k))
        ks = {}
        for pess, side in by_side.items():
            ks[pess] = round(math.log2(side.h0 / h_base))
            if math.ldexp(h_base, ks[pess]) != side.h0:
                raise PLDUncertifiable("item grids are not on one lattice")
        made.append((by_side, ks))
    # a side that some item could not build (an empty optimistic one-step PLD) is left out
    built = [pess for pess in sides if all(pess in by_side for by_side, _ in made)]
    var_sides, k_var = made[-1]
    var_sides = {pess: var_sides[pess] for pess in built}
    combiners, prods, totals = {}, {}, {}
    for pess in built:
        side0 = var_sides[pess]
        eng = _Engine(None, h_base, plan.lam, pess, t_max, plan.tau, nwin=plan.nwin)
        prod = None
        off = c = 0.0
        lpi = []       # (log p∞, count) of each item's one-step +∞ mass
        for (by_side, k), (_, n) in zip(made[:-1], fixed, strict=True):
            s = by_side[pess]
            dist = _shift(s.engine.compose(n), k[pess])
            prod = dist if prod is None else _product(eng, prod, dist)
            off, c = off + n * s.off, c + n * s.c
            lpi.append((s.lpinf, n))
        combiners[pess], prods[pess] = eng, prod
        totals[pess] = (off, c, tuple(lpi))
        assert side0.lam == plan.lam
    return var_sides, k_var, combiners, prods, totals


# Inside ``keeping_compositions()`` one-point compositions are kept (a few, oldest out
# first): a solver's quick upper bound (the pessimistic side of the first pass) and the full
# bracket it may ask for next at the same point share that pass instead of composing it
# twice. A composition is a deterministic function of its key, so a kept one is the one that
# would be recomputed; outside the context nothing is kept (a test that patches the engine
# never sees an earlier result).
_KEPT: dict | None = None
_KEPT_MAX = 8


@contextmanager
def keeping_compositions():
    """Keep one-point compositions for the duration (nested uses share one store)."""
    global _KEPT
    if _KEPT is not None:
        yield
        return
    _KEPT = {}
    try:
        yield
    finally:
        _KEPT = None


def _kept_key(pair, steps, rho, plan, log_eta, d, pess, fixed):
    # every field of the plan (astuple: a field added later is keyed too)
    return (pair.key(), steps, rho, astuple(plan), log_eta, d, pess,
            tuple((p.key(), n) for p, n in fixed))


# an optimistic side predicted to fall short of its pessimistic side by this many times the
# bracket width already held is not composed (_OptGate; the prediction was found up to 1.9x
# above the composed shortfall on ordinary refinements (review), and 100-250x below it
# where the side sinks)
_OPT_SKIP = 4.0


class _OptGate:
    """Whether a refinement pass's optimistic side can raise a lower end (a skip_opt for
    _compose_points): each step of the optimistic one-step PLD carries a tilted mass e^{c_O}
    below the pessimistic side's e^{c_P}, so after T steps its δ(ε) is lower by about
    e^{T(c_P − c_O)}, and its ε(δ) by about T(c_P − c_O)/λ (δ's log-slope in ε is λ at the
    tilt).  ``scale``: λ for brackets on ε, 1 for brackets on log δ.  Where that shortfall
    is at least _OPT_SKIP times the width upper − lower already held at every point, the new
    lower end (at most the new upper end, itself at most the old one) would lie below the
    old lower end: the side is not composed, and the lower end stands.  Only work is saved:
    a wrong guess costs the tightness of a lower end, never soundness.  (At small q and a
    fine grid the optimistic side's clump alignment fails (sides._clump_plan) and its
    one-step mass sinks: q = 1.2e-5, σ = 0.97, 8.4e6 steps at ρ = 0.004: T·Δc/λ = 31.5
    against a held width of 0.22, and the composed lower end was 0 after 2 s of work.)"""

    def __init__(self, steps, held, scale):
        self.steps, self.scale = steps, scale
        self.gaps = [b[1] - b[0] for b in held]
        self.c_pess: dict[str, float] = {}
        self.skipped = False

    def __call__(self, d, cs) -> bool:
        if True in cs:
            self.c_pess[d] = cs[True]   # (a pass of pessimistic sides first: remembered)
        if d not in self.c_pess or False not in cs or not self.scale > 0:
            return False
        short = self.c_pess[d] - cs[False]
        skip = all(t * short / self.scale >= _OPT_SKIP * g
                   for t, g in zip(self.steps, self.gaps, strict=True))
        self.skipped = self.skipped or skip
        return skip


def _compose_points(pair, steps_list, rho, plans, log_eta, evaluate, sides=(True, False),
                    directions=None, fixed=(), skip_opt=None):
    """Compose every direction and side at resolution ρ, incrementally over steps_list (the
    varying item's counts), times the fixed items; evaluate(index, finals) after each point.

    ``skip_opt(d, cs)``, if given, sees the one-step log-MGFs {pess: c} of the sides built
    for direction d (a single-item plan) before any composition; when it returns True the
    optimistic side is not composed and finals have no entry for it (only a lower end is
    lost: see _OptGate).

    A single point reuses the compositions kept from earlier calls (see _KEPT)."""
    dirs = _directions(_pairs(pair, fixed)) if directions is None else directions
    if len(steps_list) != 1 or _KEPT is None:
        return _compose_points_fresh(pair, steps_list, rho, plans, log_eta, evaluate, sides,
                                     dirs, fixed, skip_opt)
    finals = {}
    for d in dirs:
        keys = {pess: _kept_key(pair, steps_list[0], rho, plans[d], log_eta, d, pess, fixed)
                for pess in sides}
        missing = tuple(pess for pess in sides if keys[pess] not in _KEPT)
        if missing:
            fresh = _compose_points_fresh(pair, steps_list, rho, plans, log_eta,
                                          lambda i, f: f, missing, [d], fixed, skip_opt)[0]
            for pess in missing:
                if (d, pess) in fresh:          # (not a skipped optimistic side)
                    _KEPT[keys[pess]] = fresh[(d, pess)]
        for pess in sides:
            if pess or keys[pess] in _KEPT:     # (only an optimistic side is skipped)
                finals[(d, pess)] = _KEPT[keys[pess]]
        # trimmed only once this call holds what it reads (trimming while adding a missing
        # side could evict the other side, kept earlier, before it was read)
        while len(_KEPT) > _KEPT_MAX:
            del _KEPT[next(iter(_KEPT))]
    return [evaluate(0, finals)]


def _compose_points_fresh(pair, steps_list, rho, plans, log_eta, evaluate, sides, dirs,
                          fixed, skip_opt=None):
    t_max = steps_list[-1]
    engines, extra = {}, {}
    for d in dirs:
        if fixed:
            var_sides, k_var, comb, prods, totals = _fixed_part(
                pair, t_max, fixed, rho, plans[d], log_eta, sides, d)
            engines[d] = var_sides
            extra[d] = (k_var, comb, prods, totals)
        else:
            engines[d] = _make_sides(pair, d, plans[d], rho, t_max, log_eta, sides)
            # (asked for every build: a pass of pessimistic sides first leaves the gate
            # its c_P for the optimistic side's own build)
            if skip_opt is not None and skip_opt(
                    d, {pess: side.c for pess, side in engines[d].items()}):
                del engines[d][False]
    accs: dict[tuple[str, bool], _Dist] = {}
    prev = 0
    n_points = len(steps_list)
    out = []
    for i, steps in enumerate(steps_list):
        inc = steps - prev
        finals = {}
        for d, by_side in engines.items():
            for pess, side in by_side.items():
                eng = side.engine
                dinc = eng.cache.get(inc)
                if dinc is None:
                    dinc = eng.compose(inc, mult=n_points)
                    if n_points > 1:
                        eng.cache[inc] = dinc
                acc = accs.get((d, pess))
                acc = dinc if acc is None else eng.multiply(acc, dinc)
                accs[(d, pess)] = acc
                if d not in extra:
                    finals[(d, pess)] = _Final(acc, side.h0, side.lam, steps, side.c,
                                               side.lpinf, pess, side.off,
                                               capped=side.capped)
                    continue
                k_var, comb, prods, totals = extra[d]
                full = _product(comb[pess], _shift(acc, k_var[pess]), prods[pess])
                off_f, c_f, lpi_f = totals[pess]
                # the composition's +∞ mass 1 − Π(1 − p∞)^n, rounded up
                lpi = _log_mass_any(lpi_f + ((side.lpinf, steps),))[1]
                tot = (off_f + steps * side.off, c_f + steps * side.c, lpi)
                finals[(d, pess)] = _Final(full, comb[pess].h0, side.lam, steps, side.c,
                                           side.lpinf, pess, side.off, totals=tot)
        out.append(evaluate(i, finals))
        prev = steps
    return out


def _bulk_h(pair, direction: str, steps: int, eps: float,
            log_delta: float, tolerance: float) -> float:
    """A cap on the spacing where the untilted bulk of the composition decides δ(ε).

    A discretisation spreads each step's loss over a cell (connect-the-dots adds up to h²/4
    of variance, the buckets likewise), so after T steps the bulk's variance T·v, v =
    Var_P(L), is off by T·O(h²): a relative O(h²/v) whatever T.  Where δ(ε) is made by the
    bulk's Gaussian-like tail, at z = ε/√(T·v) of its standard deviations, that moves ε by
    about h²/(8v) relative, so h = √(2·tol·v) keeps it within tol/4.  The tilted law that
    sets the grid otherwise (_grid_h) misses it when a heavy tail inflates its spread: the
    remove direction at small q (L ≈ q(e^Z − 1), Z Gaussian: at q 1e-4, σ 0.7 a tilted
    standard deviation of 0.0155 against √v = 2.6e-4) left both ends 0.6-0.8 % off at
    ρ_min (tests/test_relations_pld.py).  Only where z² ≤ 8·min(|log δ|, 50) (the bulk's
    tail, ~e^{−z²/2}, is at least δ⁴); else inf.  Further out the bracket's width comes
    from the far-tail budgets (issue 14's command C, δ ~ 1e-546, z = 74: a log δ bracket
    184 wide, whose upper end the cap lowered by 1.4 at twice the time).  A heuristic:
    every spacing is sound.  (The varying item's own variance: fixed items of a plan are
    left out of z, so a heterogeneous plan is capped less often.)"""
    v = _var0(pair, direction)
    if not (v > 0.0 and eps > 0.0 and steps >= 1) or eps * eps > 8.0 * steps * v * min(
            abs(log_delta), _BULK_LOG_DELTA_MAX):
        return math.inf
    return math.sqrt(2.0 * tolerance * v)


_BULK_LOG_DELTA_MAX = 50.0


_VAR0_CACHE: dict = {}


def _var0(pair, direction: str) -> float:
    """Var_P(L) of the untilted one-step loss by the pair's quadrature (cached)."""
    key = (pair.key(), _pd(pair, direction))
    if key not in _VAR0_CACHE:
        if len(_VAR0_CACHE) > 4096:
            _VAR0_CACHE.clear()
        _VAR0_CACHE[key] = _cgf(pair, direction, 0.0)[2]
    return _VAR0_CACHE[key]


def _delta_directions(pair, steps: int, epsilon: float, fixed=()) -> list[str]:
    """Directions whose δ(ε) can be positive: a bounded loss (the add direction: ≤
    −log(1 − q) per step) has δ(ε) exactly 0 beyond the sum of its bounds (rounded up)."""
    return [d for d in _directions(_pairs(pair, fixed))
            if epsilon < _eps_zero_beyond(pair, fixed, d, steps)]


def _plans_delta(pair, steps, epsilon, tolerance, log_delta_est, fixed=()):
    plans = {}
    items = tuple(fixed) + ((pair, steps),)
    for d in _delta_directions(pair, steps, epsilon, fixed):
        let = _log_eta(log_delta_est, tolerance, steps + _n_fixed(fixed))
        lam, per = _best_lambda(items, d, eps=epsilon, log_eta_top=let)
        tk = steps * per[-1][0]
        for (_, n), v in zip(fixed, per[:-1], strict=True):
            tk = tk + n * v[0]
        lgam = tk - lam * epsilon + _log_c_lambda(lam) - log_delta_est
        plans[d] = _Plan(lam, tuple(v[2] for v in per), (lam, lam),
                         _tau(tolerance, lgam, steps, fixed), let,
                         bulk_h=_bulk_h(pair, d, steps, epsilon, log_delta_est, tolerance))
    return plans


def _chernoff_log_delta(pair, steps, epsilon, fixed=()) -> float:
    """Heuristic (quadrature) Chernoff value, only to size the first budgets."""
    v = -math.inf
    items = tuple(fixed) + ((pair, steps),)
    for d in _delta_directions(pair, steps, epsilon, fixed):
        lam, per = _best_lambda(items, d, eps=epsilon)
        tk = steps * per[-1][0]
        for (_, n), kk in zip(fixed, per[:-1], strict=True):
            tk = tk + n * kk[0]
        v = max(v, min(0.0, tk - lam * epsilon + _log_c_lambda(lam)))
    return v


_MAX_CUTS = 2     # passes redone because the +∞ mass dominated (each lowers the cut)


def _next_cut(cuts) -> float:
    """The next guess of log δ (it sets the cut above which one-step mass goes to +∞) after
    passes whose upper bound was mostly the +∞ mass (heuristic: any cut is sound).

    Lowering the cut by Δ lowers the +∞ term by Δ but raises the rest (mass that now stays
    on the grid and can reach ε: with a heavy one-step tail, much of δ).  The two balance
    where the +∞ term (slope 1) meets the rest, extrapolated linearly through the last two
    passes (slope −1, a bisection in log space, after one); never below the last rest."""
    est, inf, rest = cuts[-1]
    slope = -1.0
    if len(cuts) >= 2:
        e0, _, r0 = cuts[-2]
        if e0 != est:
            slope = min(0.0, max(-4.0, (rest - r0) / (est - e0)))
    return max(rest, est + (rest - inf) / (1.0 - slope))


def _delta_passes(pair, steps, epsilon, tolerance, rho, next_rho, decide=None, fixed=()):
    """Yields running (log lower, log upper) brackets on δ(ε), one per pass; the next
    resolution is next_rho(ρ, lower, upper) (None stops).

    With decide = log δ (a predicate), each pass composes the pessimistic sides first and
    the optimistic ones only when the upper bound does not already settle it.

    The budgets (+∞ mass, truncation) are sized from a guess of δ.  Far below the Chernoff
    value's reliable range (δ < e^{_SCOUT_LOG_DELTA}: few steps, a heavy one-step tail) the
    first pass is a coarse scout (ρ ≥ _SCOUT_RHO) that only sizes them; a pass whose upper
    bound is mostly the +∞ mass is redone at its resolution with a lower cut for that mass
    (_next_cut: at most _MAX_CUTS times); with no lower bound, an upper bound that is
    mostly the ℓ1 error term (round-off and truncation, which a finer grid does not lower)
    ends the refinement; and so does an upper bound below e^{_FAR_LOG_DELTA} (δ outside the
    double range: a finer grid there costs seconds for digits of a logarithm), where a
    Chernoff guess below it also caps the vectors at _NWIN_FAR entries (coarser grids, as
    sound, a looser bound: a heavy one-step tail can need millions of points at λh ≤ 2ρ)."""
    if not _delta_directions(pair, steps, epsilon, fixed):
        yield -math.inf, -math.inf        # every loss is bounded below ε: δ(ε) = 0 exactly
        return
    # a guess of log δ, only to size the truncation budgets (the Chernoff value overshoots)
    ch = _chernoff_log_delta(pair, steps, epsilon, fixed)
    est = ch - 8.0 - 0.05 * abs(ch)
    best = [-math.inf, 0.0]
    parts = [-math.inf] * 3      # largest grid / error / +∞ terms of the pessimistic sides
    cuts: list[tuple[float, float, float]] = []   # (guess, +∞ term, rest) of such passes
    redo_cut = False

    capped: set = set()  # directions whose pessimistic one-step h the length cap set

    def evaluate(i, finals):
        up = lo = -math.inf
        for (d, pess), fin in finals.items():
            v = fin.log_delta(epsilon)
            if pess:
                if fin.capped:
                    capped.add(d)
                up = max(up, v)
                parts[:] = map(max, parts, fin.log_delta_parts(epsilon))
            else:
                lo = max(lo, v)
        return lo, up

    def run(d, sides, gate):
        return _compose_points(pair, [steps], rho, plans, log_eta, evaluate, sides=sides,
                               directions=[d], fixed=fixed, skip_opt=gate)[0]

    rho_plan = rho
    scout = ch < _SCOUT_LOG_DELTA and rho < _SCOUT_RHO
    if scout:
        rho = _SCOUT_RHO
    later = False        # a pass after the first: it refines or resizes a missed bracket
    raised = ()          # directions whose one-step length cap is raised (_raise_len)
    while rho is not None:
        parts[:] = [-math.inf] * 3
        plans = _plans_delta(pair, steps, epsilon, tolerance, est, fixed)
        plans = {d: replace(p, len_max=_N0_LEN_FAR) if d in raised else p
                 for d, p in plans.items()}
        capped.clear()
        if later:
            # the first pass missed the tolerance: the squarings' split gate takes its fitted
            # factor (pmf._noisy), as a refined ε pass does (q 1e-4, σ 0.8, 10^5 steps at
            # ε(1e-10): δ's upper end +2.7 % -> +0.6 % above the reference), and so does the
            # edge buckets' gate (sides._EDGE_GATE_FINE: its lower ends, as a refined ε pass)
            plans = {d: replace(p, split_noise=_SPLIT_NOISE_FITTED, edge_gate=_EDGE_GATE_FINE)
                     for d, p in plans.items()}
        if ch < _FAR_LOG_DELTA:
            plans = {d: replace(p, nwin=_NWIN_FAR) for d, p in plans.items()}
        log_eta = _log_eta(est, tolerance, steps + _n_fixed(fixed))
        dirs = list(plans)
        # a refinement's optimistic sides, skipped when they cannot raise the lower end
        gate = _OptGate([steps], [best], 1.0) if later else None
        if decide is None:
            # a pass redone with a lower cut, not the last one, only sizes that cut: its
            # pessimistic sides suffice (the lower bound of the earlier passes stands)
            sides = (True,) if redo_cut and len(cuts) < _MAX_CUTS else (True, False)
            lo, up = _compose_points(pair, [steps], rho, plans, log_eta, evaluate,
                                     sides=sides, directions=dirs, fixed=fixed,
                                     skip_opt=gate)[0]
        else:
            # a predicate: stop as soon as one side settles it (pessimistic sides of
            # all directions for True, the optimistic side of any direction for False)
            up = lo = -math.inf
            for d in dirs:
                up = max(up, run(d, (True,), gate)[1])
                if up > decide:
                    break
            if up > decide:
                for d in dirs:
                    lo = max(lo, run(d, (False,), gate)[0])
                    if lo > decide:
                        break
        if gate is not None and gate.skipped:
            # a skipped optimistic side stands for a lower end at most the held one (the
            # prediction): this pass's lower end is the held one, finite, as the composed
            # one would have been (the decisions below read it: review)
            lo = max(lo, best[0])
        best[0] = max(best[0], lo)
        best[1] = min(best[1], up)
        yield best[0], best[1]
        later = True
        nxt = next_rho(rho, best[0], best[1])
        grid, err, inf = parts
        rest = float(np.logaddexp(grid, err))
        cut_high = inf > rest + 1.0 and rest < est - 2.0
        if cut_high:
            cuts.append((est, inf, rest))
        redo_cut = False
        if cut_high and (nxt is not None or lo == -math.inf) and len(cuts) <= _MAX_CUTS:
            nxt = rho      # mostly the +∞ mass: redo at this resolution with a lower cut
            est = _next_cut(cuts)
            redo_cut = True
        elif cut_high:
            nxt = None     # still mostly the +∞ mass: a finer grid cannot lower it
        elif (best[0] > -math.inf and best[0] < est - 2.0 and nxt is not None
              and max(err, inf) > grid - 2.0):
            nxt = rho      # the budgets were sized for a larger δ: redo at this resolution
            est = best[0]
        elif lo == -math.inf and up > -math.inf and err >= grid:
            nxt = None     # a finer grid lowers only the grid term: it cannot help
        elif scout and nxt is not None:
            nxt = min(nxt, rho_plan)     # budgets sized: resume the planned resolution
        if nxt is not None and nxt < rho and best[1] < _FAR_LOG_DELTA:
            nxt = None     # δ beyond the double range: no finer grid (see the docstring)
        if nxt is not None and nxt < rho:
            scout = False
        raise_now = (nxt is None and not raised and capped and rho <= _RHO_MIN
                     and err < grid and err <= best[1] - _RAISE_ROOM
                     and best[1] >= _FAR_LOG_DELTA
                     and not best[0] >= best[1] + math.log1p(-_RAISE_WIDTH * tolerance))
        if raise_now:
            # the finest grid, its spacing set by the one-step length cap, and the bracket
            # wider than _RAISE_WIDTH tolerances: once more with the cap raised for those
            # directions (as eps_search._raise_len), the budgets' guess kept (a guess from
            # a loose lower end moved the tilt and undid the gain: review, helper-20)
            nxt, raised = rho, tuple(capped)
        elif best[0] > -math.inf and not cut_high:
            est = max(est, best[0]) if cuts else best[0]
        rho = nxt
