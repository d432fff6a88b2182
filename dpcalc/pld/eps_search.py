"""Brackets on ε(δ) for one or several step counts: the refinement passes of the PLD engine.

Step counts whose best tilts are close share one incremental composition (a group); each
pass composes the plan at one resolution ρ (dpcalc.pld.compose._compose_points) and reads
ε(δ) off the pessimistic and optimistic sides [KJH20], [DGKKM22, Alg. 1]; a direction is
refined only while it matters for the combined bracket (the larger over directions).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from dpcalc.pld._core import (
    _N0_LEN_FAR,
    _RHO_MIN,
    BelowInfinityMass,
    PLDUncertifiable,
    _log_c_lambda,
    _log_sub,
)
from dpcalc.pld.compose import (
    _RAISE_ROOM,
    _RAISE_WIDTH,
    _STALL,
    _bulk_h,
    _compose_points,
    _directions,
    _eps_finite_beyond,
    _eps_zero_beyond,
    _first_rho,
    _inf_mass,
    _log_eta,
    _n_fixed,
    _next_rho,
    _OptGate,
    _pairs,
    _tau,
)
from dpcalc.pld.plan import _best_lambda, _Plan, tilt_retry
from dpcalc.pld.pmf import _SPLIT_NOISE_FITTED, _SPLIT_NOISE_GUESSED
from dpcalc.pld.sides import _EDGE_GATE_FINE

# first-pass curves are read for their shape: tilts within this factor share a group
_QUICK_SPREAD = 4.0
# a curve's later direction is not searched where an earlier one's ε is certified for it
# (_eps_group_quick; off only to compare)
_CURVE_SKIP = True


def _width(brackets) -> float:
    """The largest relative width (upper − lower)/upper of brackets [[lower, upper], ...]."""
    return max(((b[1] - b[0]) / b[1] if b[1] > 0 else 0.0) for b in brackets)


def _groups(pair, steps_list, log_delta, tolerance, fixed=(), spread=2.0):
    """Split an increasing list of step counts into groups whose best tilts are within a
    factor ``spread``; each group is composed incrementally with one tilt per direction.
    (Any tilt is sound; a wider group is fewer compositions, at some tightness for its
    shortest runs.)"""
    t_lo, t_hi = steps_list[0], steps_list[-1]
    ratio = 1.0
    for d in _directions(_pairs(pair, fixed)):
        let = _log_eta(log_delta, tolerance, t_hi + _n_fixed(fixed))
        l_hi = _best_lambda(tuple(fixed) + ((pair, t_lo),), d, log_delta=log_delta,
                            log_eta_top=let)[0]
        l_lo = _best_lambda(tuple(fixed) + ((pair, t_hi),), d, log_delta=log_delta,
                            log_eta_top=let)[0]
        ratio = max(ratio, l_hi / max(l_lo, 1e-300))
    n_groups = max(1, min(len(steps_list), math.ceil(math.log(ratio) / math.log(spread))))
    if n_groups == 1:
        return [list(range(len(steps_list)))]
    edges = [t_lo * (t_hi / t_lo) ** (k / n_groups) for k in range(n_groups + 1)]
    groups: list[list[int]] = [[] for _ in range(n_groups)]
    for i, s in enumerate(steps_list):
        k = min(n_groups - 1, max(0, int(np.searchsorted(edges, s, side="right")) - 1))
        groups[k].append(i)
    return [g for g in groups if g]


def _plans_eps(pair, steps_group, log_delta, tolerance, lower=None, fixed=()):
    """Tilt (best for the largest T: the smallest λ of the group) and budgets."""
    plans = {}
    t_first, t_last = steps_group[0], steps_group[-1]
    for d in _directions(_pairs(pair, fixed)):
        let = _log_eta(log_delta, tolerance, t_last + _n_fixed(fixed))
        lam, per = _best_lambda(tuple(fixed) + ((pair, t_last),), d, log_delta=log_delta,
                                log_eta_top=let)
        lam_first = lam if t_first == t_last else _best_lambda(
            tuple(fixed) + ((pair, t_first),), d, log_delta=log_delta, log_eta_top=let)[0]
        k = per[-1][0]
        kf = 0.0
        for (_, n), v in zip(fixed, per[:-1], strict=True):
            kf = kf + n * v[0]
        lc = _log_c_lambda(lam)
        if lower is None:
            lgam = 10.0
        else:
            lgam = max(t * k + kf - lam * e + lc - log_delta
                       for t, e in zip(steps_group, lower, strict=True))
        # with lower ends (a refinement): the bulk's spacing cap, the finest of the group
        # (a lower end of 0, nothing certified yet, asks for none)
        bulk = math.inf if lower is None else min(
            _bulk_h(pair, d, t, e, log_delta, tolerance)
            for t, e in zip(steps_group, lower, strict=True))
        plans[d] = _Plan(lam, tuple(v[2] for v in per), (lam, lam_first),
                         _tau(tolerance, lgam, t_last, fixed), let,
                         split_noise=(_SPLIT_NOISE_GUESSED if lower is None
                                      else _SPLIT_NOISE_FITTED), bulk_h=bulk)
    return plans


def _eps_group(pair, steps_group, log_delta, tolerance, fixed=(), quick=False,
               stop_above=math.inf, for_solve=False, log_budget=None, caps=None):
    """Brackets on ε(δ) for a group of step counts sharing the tilt; each direction is
    refined only while it matters for the combined bracket (max over directions).

    ``quick``: only the upper bounds of the first pass (pessimistic sides, first resolution,
    the same tilt and budgets), with 0 as the lower end: a certified upper bound at about
    half the cost, equal to the full one whenever the full bracket needs no refinement
    (``stop_above``: see _eps_group_quick).

    ``log_budget``: the δ the tilt and the error budgets are sized for (default log δ; less
    beside a mass at +∞, see _budget_beside_infinity); ``caps``: further upper ends per
    count (sound where given).

    ``for_solve``: the same passes, but a pass known to be a direction's last (at the
    finest resolution, or the sixth; or, once its pessimistic sides are composed, every
    upper end mostly the error term or the width with the earlier lower ends within the
    tolerance) composes only the pessimistic sides, and a direction whose upper ends are at
    most the first direction's (final) ones is not refined: the combined upper end is the
    larger.  The upper ends are those of the full brackets, bit for bit (the passes, tilts
    and compositions that decide them are the same; the full bracket's one exception is a
    later direction proved dominated by its scout, below, where the solver's evaluation
    composes it at the first resolution and may read a larger upper end: the safe side for
    a solver, not seen); the lower ends may be looser (still certified).  For a solver's
    predicate, which reads the upper end alone: at the finest grid the optimistic
    composition is half the work.  (One difference: a pass that only
    the full bracket composes cannot fail here; where it would, the full bracket raises
    PLDUncertifiable and its caller falls back, so a forward question at a solver's answer
    would show the fallback's bound.  Seen only with an injected failure (review); the
    first pass's cheap upper bound has the same gap.)"""
    n = len(steps_group)
    t_max = steps_group[-1]
    budget = log_delta if log_budget is None else log_budget
    caps = [math.inf] * n if caps is None else caps
    log_eta = _log_eta(budget, tolerance, t_max + _n_fixed(fixed))
    plans = _plans_eps(pair, steps_group, budget, tolerance, fixed=fixed)
    per_dir: dict[str, list[list[float]]] = {}
    dirs = _directions(_pairs(pair, fixed))
    if quick:
        return _eps_group_quick(pair, steps_group, log_delta, tolerance, fixed, plans,
                                log_eta, dirs, stop_above, caps)

    stuck = [False] * n      # the upper end is mostly the ℓ1 error term (see _STALL)
    room = [math.inf] * n    # log δ less the log of that term at the upper end
    capped = [False]         # a pessimistic side of this pass had its one-step h capped

    def evaluate(i, finals):
        up = lo = 0.0
        for (_, pess), fin in finals.items():
            e = fin.epsilon(log_delta)
            if pess:
                capped[0] = capped[0] or fin.capped
                if e >= up and 0.0 < e < math.inf:
                    grid, err, _ = fin.log_delta_parts(e)
                    stuck[i] = err >= grid
                    room[i] = log_delta - err
                up = max(up, e)
            else:
                lo = max(lo, e)
        return lo, up

    def combined():
        return [[max(per_dir[d][i][0] for d in per_dir), max(per_dir[d][i][1] for d in per_dir)]
                for i in range(n)]

    pending = {}   # direction -> (ρ, plans) of its last pass, composed for_solve

    def complete():
        """The optimistic sides of the upper-only last passes, once a later direction's
        decision reads their lower ends: every decision is then the full bracket's."""
        for dd, (r, pl) in list(pending.items()):
            del pending[dd]
            try:
                res = _compose_points(pair, steps_group, r, pl, log_eta, evaluate,
                                      sides=(False,), directions=[dd], fixed=fixed)
            except (PLDUncertifiable, ArithmeticError, ValueError):
                if pl[dd].len_max != _N0_LEN_FAR:
                    raise
                continue     # (a raised pass's failing side: the earlier lower ends stand)
            for b, (lo, _) in zip(per_dir[dd], res, strict=True):
                b[0] = max(b[0], lo)

    def dominated(best, other, settle=True) -> bool:
        """Every point of this direction at most the other's lower end (with ``settle``,
        that lower end completed first if that decides it; without, a pending lower end
        may say no where the full one says yes: the caller then composes a pass that the
        full bracket skips, which changes no upper end, as this direction's stays below
        the other's)."""
        if other is None:
            return False
        if not all(b[1] <= o[0] for b, o in zip(best, other, strict=True)) and pending \
                and settle:
            complete()
        return all(b[1] <= o[0] for b, o in zip(best, other, strict=True))

    def compose_pass(d, rho, plans, sides, may_skip, before, other, gate=None):
        try:
            return _compose_points(pair, steps_group, rho, plans, log_eta, evaluate,
                                   sides=sides, directions=[d], fixed=fixed, skip_opt=gate)
        except (PLDUncertifiable, ArithmeticError, ValueError):
            # a pass the full bracket may not compose: where the settled lower end skips
            # this direction, skip it as the full bracket does (review; read with the bounds
            # before the pass, as the full bracket composes both sides at once): None
            if may_skip and dominated(before, other):
                return None
            if plans[d].len_max == _N0_LEN_FAR:
                return None   # a raised pass that fails: the earlier passes' bracket stands
            raise

    # a later direction (the add direction of DP-SGD) is first composed at _SCOUT times the
    # first resolution, pessimistic sides only (about 40 % of the cost on short vectors):
    # upper ends at most the first direction's lower ends prove it dominated (it changes
    # neither end of the bracket), as its first pass would, in every one of 199 uniform
    # batch lines (181 of 198 log-uniform ones; the others need that pass still).  The
    # bracket is the same, bit for bit: 17.8 -> 16.1 ms a uniform batch line's PLD, 77.8
    # -> 73 log-uniform.  Not in a solver's evaluation (see the docstring)
    for d in dirs:
        other = per_dir.get(dirs[0]) if d != dirs[0] else None
        best = [[0.0, math.inf] for _ in range(n)]
        # a bounded loss (the add direction: ≤ −log(1 − q) per step) has δ(ε) = 0 beyond
        # the sum of its bounds
        for b, t, cap in zip(best, steps_group, caps, strict=True):
            b[1] = min(b[1], _eps_zero_beyond(pair, fixed, d, t), cap)
        if dominated(best, other, settle=False) or (
                for_solve and other is not None
                and all(b[1] <= o[1] for b, o in zip(best, other, strict=True))):
            # (for_solve: capped at most at the other direction's final upper ends, as the
            # loop below stops after a first pass: the combined upper end is settled)
            per_dir[d] = best
            continue
        per_dir[d] = best
        unsettled = bool(pending)   # the full bracket may have skipped this direction
        rho = _first_rho(tolerance)
        if other is not None and not for_solve and not pending and _SCOUT > 1.0:
            scout = _scout(pair, steps_group, rho * _SCOUT, plans, log_eta, log_delta, d,
                           fixed, other)
            if scout is not None:
                for b, up in zip(best, scout, strict=True):
                    b[1] = min(b[1], up)
                continue
        prev = math.inf
        deferred = None      # a capped pass's optimistic sides, left to the raised pass
        for k in range(6):
            last = for_solve and (rho <= _RHO_MIN or k == 5)
            capped[0] = False
            before = [b[:] for b in best]
            may_skip = k == 0 and unsettled
            # a refinement's optimistic sides, skipped when they cannot raise a lower end
            gate = _OptGate(steps_group, before, plans[d].lam) if k > 0 else None

            # the pessimistic sides first (a solver's evaluation, a direction that the other
            # may dominate, or a raised pass: a failing optimistic side then leaves its
            # upper ends, as a solver's evaluation has them); the optimistic ones only when
            # a decision needs them
            # (and a pass at the finest resolution whose one-step lattice the length cap may
            # have coarsened: where its pessimistic sides call for a raised pass, which
            # _raise_len reads off them and the earlier passes alone, its optimistic sides
            # are not composed, as the raised pass's, on the finer lattice, take their
            # place: q 2.69e-4, σ 0.537, 628,253 steps, 1.87 -> 1.3 s)
            may_raise = rho <= _RHO_MIN and plans[d].len_max < _N0_LEN_FAR and k < 5
            pess_first = (for_solve or other is not None or plans[d].len_max == _N0_LEN_FAR
                          or may_raise)
            res = compose_pass(d, rho, plans, (True,) if pess_first else (True, False),
                               may_skip, before, other, gate)
            if res is None:
                _recover(deferred, compose_pass, d, best)
                break
            for b, (lo, up) in zip(best, res, strict=True):
                b[0] = max(b[0], lo)
                b[1] = min(b[1], up)
            if pess_first and not last:
                if for_solve and other is not None and all(
                        b[1] <= o[1] for b, o in zip(best, other, strict=True)):
                    # at most the other direction's final upper ends: the combined upper
                    # end (the larger) is settled, and a solver reads no lower end
                    break
                if dominated(best, other):
                    # at most the other direction's lower ends: this direction's lower ends
                    # (below them) change neither end of the bracket, and the loop ends
                    break
                # for_solve: the loop stops after this pass whatever its lower ends: every
                # upper end mostly the error term, or the width with the lower ends so far
                # (no larger than with the new ones) within the tolerance: the last pass
                if for_solve:
                    comb = combined()
                    width = _width(comb)
                    last = all(stuck) or width <= tolerance
                if not last and may_raise and _raise_len(
                        plans[d], rho, k, capped[0], stuck, before, best, tolerance, room):
                    deferred = (rho, plans, may_skip, before, other, gate)
                elif not last:
                    res = compose_pass(d, rho, plans, (False,), may_skip, before, other, gate)
                    if res is None:
                        _recover(deferred, compose_pass, d, best)
                        break
                    for b, (lo, _) in zip(best, res, strict=True):
                        b[0] = max(b[0], lo)
            if _raise_len(plans[d], rho, k, capped[0], stuck, before, best, tolerance, room):
                # the finest grid, coarsened by the one-step lattice's length cap: once more
                # with the cap raised (read off the pessimistic sides alone, so that a
                # solver's evaluation decides it as the full bracket does)
                # (this direction's plan alone: another's passes keep their own caps, as
                # in the raised pass's absence; at q 1e-8, σ 1, 10¹⁰ steps the add
                # direction's first pass at the raised cap was looser, 0.0169 for 0.0106)
                plans = {**plans, d: replace(plans[d], len_max=_N0_LEN_FAR)}
                continue
            if last:
                pending[d] = (rho, plans)
                break          # (the full loop stops after this pass too)
            if dominated(best, other):
                break          # dominated by the other direction: its accuracy is moot
            if pending:
                complete()     # the combined width below reads every lower end
            comb = combined()
            width = _width(comb)
            if (width <= tolerance or rho <= _RHO_MIN or width > _STALL * prev
                    or all(stuck)):
                break          # (the last two: refining cannot narrow it, see _STALL)
            prev = width
            rho = _next_rho(rho, tolerance, width)
            if all(b[0] > 0 for b in comb):
                plans = _plans_eps(pair, steps_group, budget, tolerance,
                                   lower=[b[0] for b in comb], fixed=fixed)
            # (a refinement's optimistic sides cut the edge's buckets at the lower gate)
            plans = {**plans, d: replace(plans[d], edge_gate=_EDGE_GATE_FINE)}
    best = combined()
    for b in best:
        if not math.isfinite(b[1]):
            raise PLDUncertifiable("the error budget exceeds δ at every ε")
    return best


_SCOUT = 3.0


def _recover(deferred, compose_pass, d, best) -> None:
    """Where the raised pass fails, the capped pass's optimistic sides that it was to
    replace are composed after all: their lower ends, as before the raised pass existed."""
    if deferred is not None:
        rho, plans, may_skip, before, other, gate = deferred
        res = compose_pass(d, rho, plans, (False,), may_skip, before, other, gate)
        for b, (lo, _) in zip(best, res or (), strict=False):
            b[0] = max(b[0], lo)


def _scout(pair, steps_group, rho, plans, log_eta, log_delta, d, fixed, other):
    """A later direction's pessimistic sides at the coarser resolution ρ: their upper ends
    when every one is at most the other direction's lower end (the direction is then
    dominated and changes neither end of the bracket), else None.  Its upper ends are read
    as _eps_group's evaluate reads them, without its records of the pass (stuck, room,
    capped: a scout that proves nothing leaves the direction's passes as without it)."""
    def evaluate(i, finals):
        up = 0.0
        for (_, pess), fin in finals.items():
            if pess:
                up = max(up, fin.epsilon(log_delta))
        return 0.0, up

    # (its grid offset next to a hard edge unsearched: that search serves the optimistic
    # side's tightness, and a pessimistic bound that proves nothing leaves the pass)
    plans = {**plans, d: replace(plans[d], edge_search=False)}
    try:
        res = _compose_points(pair, steps_group, rho, plans, log_eta, evaluate,
                              sides=(True,), directions=[d], fixed=fixed)
    except (PLDUncertifiable, ArithmeticError, ValueError):
        return None
    ups = [up for _, up in res]
    if all(up <= o[0] for up, o in zip(ups, other, strict=True)):
        return ups
    return None


def _raise_len(plan, rho: float, k: int, capped: bool, stuck, before, best,
               tolerance: float, room) -> bool:
    """Whether a pass at the finest resolution ρ_min is followed by one whose one-step
    lattice may be _N0_LEN_FAR long: its pessimistic sides' spacing was coarsened by the
    shorter cap, some upper end is not mostly the ℓ1 error term (a finer grid lowers only
    the grid term), and some point's bracket, its new upper end over the lower end held
    before the pass, is wider than _RAISE_WIDTH tolerances.  All of it is read off the
    pessimistic sides and the earlier passes, so that a solver's evaluation (for_solve)
    decides it as the full bracket does.

    A narrow one-step bulk beside a far tail (small q and σ: q 1e-5, σ 0.6, 10⁶ steps,
    where the bulk asked for h = 1.7e-6 and the cap gave 7.5e-6) left the upper end 1.4 %
    above dp_accounting's connect-the-dots bound at spacing 5e-6 (0.13203 against
    0.130241); with the raised cap it is 0.130240, at 2.4 s instead of 0.8 s.  Narrower
    brackets gain less than their cost: random case 51 of benchmarks/bench_dpsgd_random.py
    (0.6 % wide) moved by 0.15 % at twice the time, case 80 (0.18 %) by 0.04 %.  Nor where
    the ℓ1 error term is within _RAISE_ROOM of δ at some upper end (``room``: log δ less its
    log): the longer vectors' round-off bound is larger (q 1e-5, σ 0.7, 10⁶ steps, δ 1e-10:
    the term rose from e^-24.9 to e^-23.9 beside δ = e^-23.0, and the raised pass gave 0.278
    against 0.261, at 4.6 s instead of 1.7 s and 688 MB)."""
    if not (rho <= _RHO_MIN and capped and plan.len_max < _N0_LEN_FAR and k < 5
            and not all(stuck) and all(r >= _RAISE_ROOM for r in room)):
        return False
    return any(up > 0 and up - b[0] > _RAISE_WIDTH * tolerance * up
               for b, (_, up) in zip(before, best, strict=True))


def _eps_group_quick(pair, steps_group, log_delta, tolerance, fixed, plans, log_eta, dirs,
                     stop_above=math.inf, caps=None):
    """The first pass of _eps_group, pessimistic sides only: [[0, upper], ...].  A direction
    whose bound exceeds ``stop_above`` at every point ends it: the rest are not composed and
    the upper ends are +inf (trivially valid).

    On a curve (several counts) a later direction whose certified δ at an earlier
    direction's ε is already at most δ is not searched: that ε is certified for it too, so
    the larger of the two is unchanged (at most the searched one's; the 60-epoch MNIST
    curve: 60 root searches of the add direction become one evaluation each)."""
    def evaluate(i, finals):
        known = best[i][1]
        if _CURVE_SKIP and len(steps_group) > 1 and 0.0 < known < math.inf and all(
                fin.log_delta(known) <= log_delta for fin in finals.values()):
            return known
        return max(fin.epsilon(log_delta) for fin in finals.values())

    best = [[0.0, 0.0] for _ in steps_group]
    for d in dirs:
        bound = [min(_eps_zero_beyond(pair, fixed, d, t), cap)
                 for t, cap in zip(steps_group, caps or [math.inf] * len(steps_group),
                                   strict=True)]
        if all(z <= b[1] for b, z in zip(best, bound, strict=True)):
            # this direction's δ(ε) is 0 beyond ε's an earlier direction already reached
            # at every point: max(b, min(up, z)) is b whatever it composes (the add
            # direction where T·q is below the remove direction's ε: random case 297)
            continue
        ups = _compose_points(pair, steps_group, _first_rho(tolerance), plans, log_eta,
                              evaluate, sides=(True,), directions=[d], fixed=fixed)
        for b, up, z in zip(best, ups, bound, strict=True):
            b[1] = max(b[1], min(up, z))
        if all(b[1] > stop_above for b in best):
            return [[0.0, math.inf] for _ in steps_group]
    for b in best:
        if not math.isfinite(b[1]):
            raise PLDUncertifiable("the error budget exceeds δ at every ε")
    return best


def _budget_beside_infinity(pair, steps_list, log_delta, fixed):
    """(log δ_b, finite caps or None): δ_b = δ − m∞, m∞ the P-mass at +∞ at the largest
    count (compose._inf_mass, rounded up), is the δ left for the finite losses: the tilt and
    the error budgets are sized for it (sized for δ, they exceeded it where δ lies just above
    m∞: three (1, 1e-6) points beside a Gaussian at a total δ of 3.000001e-6).  With m∞ > 0
    the caps are _eps_finite_beyond per count (δ(ε) = m∞ ≤ δ beyond them).  A δ at most m∞
    (rounded up) is met by no ε that this can certify (BelowInfinityMass; a δ equal to one
    point's own is decided by the caller, which knows the δ it was given)."""
    dirs = _directions(_pairs(pair, fixed))
    items = tuple(fixed) + ((pair, steps_list[-1]),)
    m_hi = max(_inf_mass(items, d)[1] for d in dirs)
    if m_hi == -math.inf:
        return log_delta, None
    caps = [max(_eps_finite_beyond(pair, fixed, d, t) for d in dirs) for t in steps_list]
    if log_delta > m_hi:
        return float(_log_sub(log_delta, m_hi)), caps
    raise BelowInfinityMass("δ is at or below the P-mass at +∞ of the plan")


def _eps_core(pair, steps_list, log_delta, tolerance, fixed=(), quick=False,
              stop_above=math.inf, for_solve=False):
    budget, caps = _budget_beside_infinity(pair, steps_list, log_delta, fixed)
    try:
        return _eps_groups(pair, steps_list, log_delta, tolerance, fixed, quick, stop_above,
                           for_solve, budget, caps)
    except BelowInfinityMass:
        raise
    except (PLDUncertifiable, ArithmeticError):
        # a δ just above the mass at +∞ asks the finite losses for a δ_b far in their tail
        # (three (1, 1e-6) points beside a Laplace at 3e-6: δ_b = 3e-12, and the tilt
        # overflowed the grid); beyond the caps δ(ε) is the mass at +∞, at most δ
        if caps is not None and all(math.isfinite(c) for c in caps):
            return [(0.0, c) for c in caps]
        raise


@tilt_retry
def _eps_groups(pair, steps_list, log_delta, tolerance, fixed, quick, stop_above, for_solve,
                budget, caps):
    out = [None] * len(steps_list)
    # first-pass curves are read for their shape: tilts within a factor 4 share a group
    # (the 60-epoch MNIST curve: 2 groups instead of 4, each point within 3e-5 above or
    # 1.1e-3 below the factor-2 grouping's certified bound)
    spread = _QUICK_SPREAD if quick else 2.0
    for grp in _groups(pair, steps_list, budget, tolerance, fixed, spread):
        res = _eps_group(pair, [steps_list[i] for i in grp], log_delta, tolerance, fixed,
                         quick=quick, stop_above=stop_above, for_solve=for_solve,
                         log_budget=budget,
                         caps=None if caps is None else [caps[i] for i in grp])
        for i, r in zip(grp, res, strict=False):
            out[i] = (r[0], r[1])
    return out
