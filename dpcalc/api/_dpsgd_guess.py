"""Starting points for dpsgd's solves: secant iterations on the bound the accountant's predicate
decides on, seeded by the Gaussian-DP CLT [DRS19] or the RDP accountant's answer [MTZ19]
(far in the tail, a q solve's seed is first moved by a secant on a coarser bound).

Any guess is safe: the solver (dpcalc.solve) checks it with the accountant's certified
predicate and returns the passing side; a good guess only saves evaluations.
"""

from __future__ import annotations

import math

from dpcalc.api._dpsgd_accountant import Accountant
from dpcalc.api.dpsgd import MAX_STEPS, steps_for
from dpcalc.errors import InfeasibleError, NumericalError
from dpcalc.solve import solve_unknown


def steps_guess(acc: Accountant, q: float, sigma: float, epsilon: float,
                 log_delta: float) -> int | None:
    """An estimate of the largest passing step count for the PLD (None for the others).

    The RDP accountant's exact answer (its per-step RDP is computed once per (q, σ), so each
    of its probes is cheap) seeds a secant on log T ↦ log ε_upper(T) of the PLD (the bound
    ``holds`` decides on: ``Accountant.bound_for``); where RDP meets the target at no step
    count (far in the tail, where it is loose), the Gaussian-DP CLT's estimate [DRS19] seeds
    it (at most the cap, MAX_STEPS).  Any guess is safe: the integer solver checks the guess
    and its neighbour with ``holds``.
    """
    if acc.name != "pld" or epsilon <= 0:
        return None
    from dpcalc.api.dpsgd import STEPS  # (a local name: the declaration stays dpsgd's)
    from dpcalc.relations import dpsgd as rel

    rdp = Accountant("rdp", acc.tolerance)
    try:
        t0 = solve_unknown(STEPS, lambda n: rdp.holds(q, sigma, n, epsilon, log_delta))
    except InfeasibleError:
        if not acc.holds(q, sigma, 1, epsilon, log_delta):
            return None  # not even one step: the solver's first probe (memoised) says so
        try:
            t0 = rel.clt_steps_guess(q, acc._evaluated_sigma(sigma), epsilon, log_delta)
        except (ArithmeticError, ValueError):
            t0 = None
        if t0 is None or not t0 >= 1:
            return None
        # beyond the cap: the secant starts at the cap itself (random case 71 of
        # benchmarks/bench_dpsgd_random.py, q 3.6e-8, σ 277, δ 1e-281: the CLT's 3e11 was
        # dropped, and the solver doubled from one step to the cap: 35 evaluations, 2.5 s;
        # a guess equal to the cap makes the integer search probe one step, then the cap)
        t0 = min(t0, MAX_STEPS)

    def f(x: float) -> float:
        n = min(max(1, round(math.exp(x))), MAX_STEPS)
        return math.log(acc.bound_for(q, sigma, n, log_delta, epsilon)) - math.log(epsilon)

    try:
        x0 = math.log(t0)
        f0 = f(x0)
        # first step: Newton on the CLT's d log ε / d log T, half its d log ε / d log q (μ
        # grows like √T) [DRS19]; else 2 % towards the root.  (The fixed 2 % left the MNIST
        # epochs secant, seeded 12 % short by RDP, one probe more.)
        q_slope = _clt_q_slope(epsilon, log_delta)
        if q_slope is not None and f0 != 0.0:
            x1 = x0 - max(-0.5, min(0.5, f0 / (0.5 * q_slope)))
        else:
            x1 = x0 + 0.02 if f0 < 0 else x0 - 0.02
        chord = None
        for _ in range(6):
            f1 = f(x1)
            if f1 == f0 or not math.isfinite(f1):
                break
            chord = (f1 - f0) / (x1 - x0)
            step = f1 / chord
            x0, f0, x1 = x1, f1, x1 - max(-1.0, min(1.0, step))
            if abs(step) < 2e-4:
                break
        # the secant met the root of the bound it aims with; where that is the cheap one at
        # its last probe (bound_for takes a passing cheap bound as it is above δ = e^-50),
        # the full bound there moves the guess by a Newton step on the chord: the full
        # root lay 3e-4 beyond at random case 54 of benchmarks/bench_dpsgd_random.py (q
        # 6.5e-5, σ 1.035, δ 3.6e-16), and the integer search galloped out to it by
        # 1e-6·2^k, one full evaluation each (10 in all)
        last = (q, sigma, min(max(1, round(math.exp(x0))), MAX_STEPS), log_delta)
        if chord is not None and chord > 0.0 and _on_cheap_root(acc, last):
            full = acc.full_bound(*last)
            if 0.0 < full < math.inf:
                move = (math.log(full) - math.log(epsilon)) / chord
                x1 = x0 - max(-0.05, min(0.05, move))
        return min(max(1, math.floor(math.exp(x1))), MAX_STEPS)
    except (ArithmeticError, ValueError):
        return None


def q_guess(acc: Accountant, values: dict, epsilon: float, log_delta: float,
            low: float, rtol: float, by_slope: bool = True,
            aim_rtol: float = 0.0) -> tuple[float | None, float, float]:
    """Secant iteration on log q ↦ log ε_upper(q) towards the target, seeded by the
    Gaussian-DP CLT [DRS19]: (guess, its accuracy, the solve's accuracy on q), or (None,
    1e-4, rtol) without a seed. Any guess is safe: ``holds`` decides, and the solver returns
    the passing side.

    ``rtol`` is an accuracy on ε (the bound's own resolution, as on σ).  With ``by_slope``
    (a bound that varies at that scale: the PLD's) the accuracy on q is rtol / s, s = d log ε
    / d log q from the secant's last two probes (within _SLOPE_SPAN), when s < _SLOPE_FLAT
    (up to 1 / _SLOPE_MIN times rtol).  Where ε is flat in q (s ≈ 0.1 far in the tail) the
    bound's variation between neighbouring rates, 1e-6 to 1e-5 relative, is 1e-5 to 1e-4 on
    q: a finer search chased it with full evaluations (random case 291: 8, case 97: 7).  The
    answer still passes ``holds``; it is within rtol of the target in ε.

    When the secant has met the root and its probes already hold a passing rate and a
    failing one within the accuracy of each other, the guess is the passing rate and its accuracy
    reaches just past the failing one: the solver's first probe there is implied to fail
    (Accountant._implied_fail), and the bracket is already within the accuracy: no further
    evaluation (random case 291: 5 full evaluations -> 4).  Such a bracket also ends the
    secant, which near the root can wander on the bound's own variation (random case 24:
    1e-5 steps between rates whose grids differ).

    The secant aims ``aim_rtol`` below the target (a passing point whose bound lies just
    below it ends the solve, Accountant.settles), and a probe that settles ends it too."""
    from dpcalc.relations import dpsgd as rel

    eff = [rtol]         # the accuracy on q (see above), from the last secant slope
    sigma = acc._evaluated_sigma(values["sigma"])
    seed = rel.clt_q_guess(sigma, epsilon, log_delta, steps=values.get("steps"),
                           epochs=values.get("epochs"))
    # the smaller of the CLT's and the one-step tail's estimates (both mostly lie above the
    # root, see rel.tail_q_guess); where the tail's is smaller, RDP's answer is not asked
    # (on the 59 q solves of benchmarks/bench_dpsgd_random.py the seeds of random cases
    # 239, 183, 97 went from 4.4e4, 0.17 and 4.9e8 times the root to 1.7, 1.0 and 1.7)
    tail = rel.tail_q_guess(sigma, epsilon, log_delta) if acc.name == "pld" else None
    # (a tail's estimate capped at q = 1 says nothing: RDP's answer seeds then, below δ =
    # e^-700 where the CLT gives none: σ 40, 10,000 steps, ε 1, δ 1e-305 took 20 cheap and
    # 15 full evaluations from no seed; helper-8)
    by_tail = tail is not None and tail < 1.0 and (seed is None or tail < seed)
    if by_tail:
        seed = tail
    seed, anchored = (_rdp_q_seed(acc, sigma, values["steps"], epsilon, log_delta, seed)
                      if not by_tail and "steps" in values and log_delta < _CLT_LOG_DELTA_MIN
                      else (seed, False))
    if seed is None or not low < seed < 1.0:
        return None, 1e-4, rtol
    seed_slope = (rel.log_slope(lambda e: rel.tail_q_guess(sigma, e, log_delta), epsilon, True)
                  if by_tail else _clt_q_slope(epsilon, log_delta))
    coarse_slope = None
    if by_slope and not anchored and "steps" in values and log_delta < _COARSE_LOG_DELTA:
        steps = values["steps"]
        seed, coarse_slope = _coarse_seed(
            acc, lambda x: (math.exp(x), sigma, steps, log_delta), epsilon, seed,
            math.log(low) + 1e-9 if low > 0 else -745.0, 0.0, seed_slope, 1.0)
    seen = {"ok": -math.inf, "fail": math.inf}   # log q of the best probes on either side
    probes = {}   # log q -> (point, bound_for's bound) of the secant's probes (_chord_step)
    aim = epsilon * (1.0 - aim_rtol)

    def f(x: float, full: bool = False) -> float:
        r = math.exp(x)
        if not low < r <= 1.0:
            raise ValueError("outside the q range")
        n = values["steps"] if "steps" in values else steps_for(values["epochs"], r)
        bound = (acc.full_bound(r, sigma, n, log_delta) if full
                 else acc.bound_for(r, sigma, n, log_delta, epsilon))
        probes[x] = ((r, sigma, n, log_delta), bound)
        if bound <= epsilon:
            seen["ok"] = max(seen["ok"], x)
        else:
            seen["fail"] = min(seen["fail"], x)
        return math.log(bound) - math.log(aim)

    def settles(x: float) -> bool:
        point, bound = probes[x]
        return bound <= epsilon and acc.settles(*point[:3], epsilon, log_delta, 2 * aim_rtol)

    def bracketed() -> bool:
        # a failing probe above the passing one, within the accuracy (the bound's own
        # variation can put a failing rate just below a passing one: no bracket then)
        return seen["ok"] < seen["fail"] <= seen["ok"] + 0.9 * eff[0]

    def converged(x1: float, step: float) -> tuple[float, float, float]:
        ok, fail = seen["ok"], seen["fail"]
        if bracketed():
            # a ratio reaching just past the failing probe (rounding margin)
            return math.exp(ok), -math.expm1(ok - fail) * (1.0 + 1e-9) + 1e-15, eff[0]
        # flat: the solver's first probe beyond the root by most of the accuracy (with the
        # root within |step| it fails there, and the bracket is already within the accuracy;
        # closer, the bound's variation can pass it and the widening costs more probes)
        floor = 0.9 * eff[0] if eff[0] > rtol else 0.0
        return math.exp(x1), max(2.0 * abs(step) + eff[0] / 32, floor, 2e-9), eff[0]

    try:
        x0 = math.log(seed)
        f0 = f(x0)
        x1 = x0 - 0.01 if f0 > 0 else min(x0 + 0.01, 0.0)
        slope = seed_slope if "steps" in values or by_tail else None
        slope = coarse_slope or slope     # (the coarse secant's own, where it ran)
        if slope is not None:  # a Newton step on the seed's slope: one probe fewer
            x1 = min(x0 - max(-8.0, min(8.0, f0 / slope)), 0.0)
        for _ in range(12):
            f1 = f(x1)
            if by_slope and "steps" in values and 0 < abs(x1 - x0) <= _SLOPE_SPAN \
                    and math.isfinite(f1) and math.isfinite(f0):
                s_here = (f1 - f0) / (x1 - x0)
                eff[0] = rtol / max(s_here, _SLOPE_MIN) if 0 < s_here < _SLOPE_FLAT else rtol
            if bracketed():
                return converged(x1, 0.0)      # bracketed within the accuracy: no more probes
            if aim_rtol > 0 and settles(x1):
                return math.exp(x1), 1e-9, eff[0]   # the solver's first probe: an answer
            if f1 == f0 or not math.isfinite(f1):
                break
            step = _chord_step(acc, x0, x1, f0, f1, probes, aim, amplify=False)
            if by_slope and abs(f1 - f0) < _CHORD_MIN * rtol and abs(step) > abs(x1 - x0):
                # a chord whose ends differ by less than the bound's own variation (1e-5 to
                # 1e-4 in log ε) has no meaningful slope: random case 291's last two rates,
                # 0.8 % apart, differed by 1.2e-4 (a slope of 0.015 where ε ~ q^0.09) and
                # the secant jumped 4 % past the root; such a step goes no further than
                # the chord is long
                step = math.copysign(abs(x1 - x0), step)
            if abs(step) < eff[0] / 4 and _on_cheap_root(acc, probes[x1][0]):
                got = _full_chord(acc, f, probes, x0, f0, x1, aim, amplify=False)
                if got is None:
                    break          # no chord (the solver brackets from x1)
                x0, f0, f1, step = got
            if abs(step) < eff[0] / 4:
                return converged(x1, step)
            below = _aimed_below(acc, probes.get(x1), aim, f1)
            if below == (step > 0):
                # ε grows with q: below the target the root lies above, and vice versa (an
                # upper bound at its numerical floor can make the secant point away).  The
                # side is the aimed bound's, as the chord's: a cheap bound far above a full
                # one (16 % at q 6.3e-5, σ 0.82, 1255 steps) was above the target where the
                # aimed one was below, and the step went to e^-8 of the root (20 bisection
                # probes from q = 1 after it)
                step = -8.0 if below else 8.0
            x0, f0, x1 = x1, f1, min(x1 - max(-8.0, min(8.0, step)), 0.0)
        return math.exp(x1), 1e-4, eff[0]
    except (ArithmeticError, ValueError):
        return None, 1e-4, eff[0]


def _on_cheap_root(acc: Accountant, point: tuple) -> bool:
    """Whether a secant that met its root at ``point`` met it on a cheap bound aimed with the
    refinement ratio of another point, so that the full bound there should be asked first.
    The ratio drifts (log full/cheap -0.170 at q 5.4e-5, -0.151 at 6.3e-5, σ 0.82, 1255
    steps, δ 1.6e-6), and the solver widened from such a guess by 1e-9, 4e-9, ... (9 full
    evaluations to go 3 % down).  Not where the last full evaluation found the first pass
    final: the cheap bound is then the full one nearby, as bound_for assumes (random cases
    116 and 183: the check found the cheap bound again)."""
    return not _has_full(acc, point) and not acc._first_pass_final


def _full_chord(acc: Accountant, f, probes: dict, x0: float, f0: float, x1: float,
                target: float, amplify: bool = True):
    """The full bound at x1 (``f(x1, full=True)``) and the chord from there to the nearest
    fully evaluated probe: (x0, f0, f1, step), or None where there is no chord."""
    f1 = f(x1, full=True)
    x0, f0 = _full_partner(acc, probes, x1, x0, f0, target)
    if f1 == f0 or not math.isfinite(f1):
        return None
    return x0, f0, f1, _chord_step(acc, x0, x1, f0, f1, probes, target, amplify=amplify)


def _full_partner(acc: Accountant, probes: dict, x1: float, x0: float, f0: float,
                  target: float) -> tuple[float, float]:
    """The chord's other end after a full evaluation at x1: the nearest other probe with a
    full evaluation (both ends on the full bound: a cheap end aimed with a drifting ratio
    gave chords 1e-4 long and steps as short), else (x0, f0)."""
    best = None
    for x, (point, bound) in probes.items():
        if x != x1 and _has_full(acc, point) and 0.0 < bound < math.inf \
                and (best is None or abs(x - x1) < abs(best - x1)):
            best = x
    if best is None:
        return x0, f0
    return best, math.log(probes[best][1]) - math.log(target)


def _has_full(acc: Accountant, point: tuple) -> bool:
    """Whether the PLD accountant has the full evaluation of the point (q, σ, steps, log δ)
    (True for any other accountant: one bound, no cheap pass)."""
    if acc.name != "pld":
        return True
    q, sigma, steps, log_delta = point
    return (q, acc._evaluated_sigma(sigma), steps, log_delta) in acc._seen


def _aimed_below(acc: Accountant, probe, target: float, f: float) -> bool:
    """Whether the bound a secant aims with at ``probe`` ((point, bound) or None) lies below
    ``target``; f = log(bound/target) where no aimed bound is available."""
    if probe is not None:
        aim = acc.aimed(*probe[0], probe[1])
        if 0.0 < aim < math.inf:
            return aim < target
    return f < 0


def _log_expm1(e: float) -> float:
    """log(e^ε − 1) (ε > 0), without overflow: the coordinate of σ solves' chords far from
    the root (_chord_step); amplification by sampling is linear in log q on it (one
    Poisson-sampled step: e^ε' − 1 = q(e^ε − 1) [BBG18, Thm 8])."""
    return e + math.log(-math.expm1(-e)) if e > 1.0 else math.log(math.expm1(e))


def _chord_step(acc: Accountant, x0: float, x1: float, f0: float, f1: float, probes: dict,
                target: float, amplify: bool = True) -> float:
    """The secant's distance from x1 (log q or log σ) to the root, through the bounds the
    accountant aims with (``Accountant.aimed``: a cheap bound moved by the refinement seen
    since, so that a chord through a cheap and a full point does not mix the two bounds).

    With ``amplify`` (σ solves), on y = log(e^ε − 1) (see _log_expm1) while the last probe
    is more than _NEAR_ROOT from the target and not both ends above _AMPLIFY_EPS_MAX: ε of
    a sampled Gaussian grows like log q + c/σ², so log ε is concave in log σ for large ε
    and a chord on it undershoots (random case 34 of benchmarks/bench_dpsgd_random.py, q =
    1.7e-8: ε 1.49 and 2.27 at σ 0.924 and 0.873, root 0.7797: 0.776 next, where log ε
    aimed at 0.806 and took three more probes to come down).  q solves stay on log ε: y
    helped random case 24 (ε from 19.9 at q = 3e-4 to 2.96 at 2e-10) but cost probes where
    ε ∝ q^s, a line on log ε.  Falls back to the chord of f = log(bound/target) when an
    aimed bound is not finite.  Only aims the next probe."""
    aims = []
    for x in (x0, x1):
        point, bound = probes.get(x, (None, math.nan))
        aims.append(acc.aimed(*point, bound) if point is not None else math.nan)
    if not all(0.0 < a < math.inf for a in aims):
        return f1 * (x1 - x0) / (f1 - f0)
    if not amplify or abs(math.log(aims[1] / target)) < _NEAR_ROOT \
            or min(aims) > _AMPLIFY_EPS_MAX:
        ys = [math.log(a / target) for a in aims]   # (near the root, or both ε large)
    else:
        ys = [_log_expm1(a) - _log_expm1(target) for a in aims]
    y0, y1 = ys
    if y1 == y0:
        return f1 * (x1 - x0) / (f1 - f0)
    return y1 * (x1 - x0) / (y1 - y0)


_NEAR_ROOT = 0.01     # from a probe within this of the target in log ε: the chord on log ε
# both ends above this ε: the chord on log ε too.  There y = log(e^ε − 1) ≈ ε, and ε falls
# like c/σ² (a convex exponential in log σ), so a chord on y undershot by e-folds: random
# case 218 (q 8.6e-8, 1232 steps, ε 0.019, δ 2e-281, seeded at σ 0.31 where ε is 223) took
# 11 probes to climb to 2.94, 7 on log ε.  Over the 300's 50 σ solves: 375 -> 364 PLD
# evaluations, none more on any question (the threshold 10 changed as many, 3 more)
_AMPLIFY_EPS_MAX = 30.0


_SLOPE_FLAT = 0.5     # below this d log ε / d log q, q's accuracy is rtol / slope (q_guess)
_SLOPE_MIN = 0.05     # and at most 20 times rtol
_CHORD_MIN = 10.0     # a secant chord spanning fewer rtol in log ε is noise (q_guess)
_SLOPE_SPAN = 0.1     # from probes at most this far apart in log q (a chord over a longer
#                       span can understate the local slope where ε is concave: review)
_CLT_LOG_DELTA_MIN = -50.0   # below: the CLT seed of a q solve is checked against RDP's answer


def _rdp_q_seed(acc: Accountant, sigma: float, steps: int, epsilon: float, log_delta: float,
                seed: float | None) -> tuple[float | None, bool]:
    """Far in the tail the CLT seed can be off by many orders (the secant then moves one
    e-fold per probe): the RDP accountant's answer q_rdp [MTZ19] (cheap per probe) is a
    lower end for the PLD's, so a seed below it is replaced by 1.5·q_rdp, and one above
    _RDP_Q_NEAR·q_rdp by that, unless q_rdp lies more than _RDP_Q_FAR below the seed
    (heuristic: any seed is safe, ``holds`` decides).  On the q solves at δ < e^-50 of
    benchmarks/bench_dpsgd_random.py the PLD's answer was 1.003-1.12 times q_rdp, and the
    CLT seed 1.2-1583 times the answer where q_rdp lay within a factor 1e4 below it (random
    cases 30, 144, 291, 183: 5 to 8 probes to come down); q_rdp more than 1e13 below it was
    RDP's own failure at small ε (its conversion to δ < 1e-30), the CLT seed then the
    better one.  Returns (seed, anchored on q_rdp): q_guess then skips its coarse stage,
    whose bound (~10 % above the cheap one) sent case 30's seed 23 % low (helper-17)."""
    if acc.name != "pld":
        return seed, False
    from dpcalc.params import Q

    rdp = Accountant("rdp", acc.tolerance)
    try:
        q_rdp = solve_unknown(Q, lambda r: rdp.holds(r, sigma, steps, epsilon, log_delta),
                              low=0.0, low_open=True, rtol=1e-3)
    except (InfeasibleError, ArithmeticError, ValueError):
        return seed, False
    if seed is None or seed < q_rdp:
        return min(1.5 * q_rdp, 1.0), True
    if seed <= _RDP_Q_FAR * q_rdp:
        return min(seed, _RDP_Q_NEAR * q_rdp), True
    return seed, False   # far above RDP's answer: the secant comes down in steps of up to e^8


_RDP_Q_NEAR = 1.1    # a q seed above this multiple of RDP's answer is lowered to it
_RDP_Q_FAR = 1e5     # unless RDP's answer lies further below it than this (see _rdp_q_seed)


_COARSE_LOG_DELTA = -50.0  # below: a q solve's seed is first moved by a coarse secant
_COARSE_TOLERANCE = 16.0  # its bound: the PLD's first pass at this many tolerances
_COARSE_TOLERANCE_MAX = 0.05  # and at most this (a larger --tolerance: no coarse secant)
_COARSE_FAR = 0.05        # only from a seed further than this from the target in log ε
#   (0.25 before the one-step tail's seeds: those lie 0.05-0.25 from it, and 7 coarse probes
#   cost less than 2 cheap ones at random case 24)
_COARSE_NEAR = 0.1        # until a probe lies within this of it


def _coarse_seed(acc: Accountant, point, epsilon: float, seed: float, lo: float, hi: float,
                 slope0: float | None, sign: float) -> tuple[float, float | None]:
    """Far in the tail a solve's seed can lie orders of magnitude from the root (RDP's
    conversion fails at δ < 1e-200, and the CLT is far off there), and each probe of the
    PLD's cheap bound costs 0.25-0.8 s: a secant on a coarser certified bound (the first
    pass at _COARSE_TOLERANCE tolerances, 3-5 times cheaper, within a few per cent) brings
    the seed near the root first.  ``point(x)``: (q, σ, steps, log δ) at x = log of the
    unknown (in [lo, hi]); ``sign``: that of d log ε / dx (q: +1, σ: −1); ``slope0``: a first
    guess of that slope.  Returns (seed, the slope of its last chord, or None).  Random case
    24 of benchmarks/bench_dpsgd_random.py (q: root 2e-10, seed 3e-4) had 5 of its 11 cheap
    probes that far.  Aims only: ``holds`` never reads the coarse bound.  (Used for q: the
    seeds of σ solves lie nearer, and the coarse bound's offset, up to 8 % of ε, cost as
    many cheap probes as it saved on random case 34.)"""
    tol = acc.tolerance * _COARSE_TOLERANCE
    if acc.name != "pld" or tol > _COARSE_TOLERANCE_MAX:
        return seed, None      # (a coarse pass no coarser than the cheap one: helper-48)
    from dpcalc.accountants.dpsgd import evaluate_upper

    def g(x: float) -> float:
        bound = evaluate_upper(acc.name, *point(x), tol)
        if bound is None or not 0.0 < bound < math.inf:
            raise ValueError("no coarse bound")
        return math.log(bound) - math.log(epsilon)

    def inside(x: float) -> float:
        return min(max(x, lo), hi)

    slope, x0 = None, math.log(seed)
    try:
        g0 = g(x0)
    except (ArithmeticError, ValueError):
        return seed, None
    if abs(g0) <= _COARSE_FAR:
        return seed, None      # near enough: the cheap secant's first steps are as good
    try:
        x1 = inside(x0 - max(-8.0, min(8.0, g0 / (slope0 or 0.5 * sign))))
        for _ in range(10):
            g1 = g(x1)
            if g1 == g0 or x1 == x0:
                break
            s = (g1 - g0) / (x1 - x0)
            if not s * sign > 0.0:
                break                      # no usable chord: the cheap secant takes over
            slope = s
            x0, g0 = x1, g1
            x1 = inside(x1 - max(-8.0, min(8.0, g1 / s)))
            if abs(g1) <= _COARSE_NEAR:
                break                      # x1: the coarse root, near the cheap one
        return math.exp(x1), slope
    except (ArithmeticError, ValueError):
        return math.exp(x0), slope


def _rdp_sigma_seed(acc: Accountant, q: float, steps: int, epsilon: float, log_delta: float,
                    seed: float | None) -> float | None:
    """Far in the tail the CLT seed of a σ solve can be off by a factor of several (random
    case 297 of benchmarks/bench_dpsgd_random.py: 0.27 for a root at 0.945, 3 probes of
    0.4-0.8 s to get there, each capped at e^0.2): the RDP accountant's answer σ_rdp
    [MTZ19] (cheap per probe) is an upper end for the PLD's, so a seed above it, or below
    _RDP_SIGMA_FAR·σ_rdp, is replaced by _RDP_SIGMA_SEED·σ_rdp (heuristic: any seed is
    safe, ``holds`` decides)."""
    from dpcalc.api.dpsgd import NOISE, SIGMA_EVAL_MAX, SIGMA_SOLVE_MIN

    rdp = Accountant("rdp", acc.tolerance)
    try:
        s_rdp = solve_unknown(NOISE, lambda s: rdp.holds(q, s, steps, epsilon, log_delta),
                              low=SIGMA_SOLVE_MIN, low_open=True, high=SIGMA_EVAL_MAX,
                              rtol=1e-3)
    except (InfeasibleError, ArithmeticError, ValueError):
        return seed
    if seed is None or not _RDP_SIGMA_FAR * s_rdp <= seed <= s_rdp:
        return _RDP_SIGMA_SEED * s_rdp
    return seed


_RDP_SIGMA_FAR = 0.5    # a σ seed below this share of RDP's answer is taken to be far off
_RDP_SIGMA_SEED = 0.95  # and replaced by this share of it (calibrated: see _rdp_sigma_seed)


def _rdp_sigma_slope(acc: Accountant, q: float, sigma: float, steps: int,
                     log_delta: float) -> float | None:
    """d log ε / d log σ of the RDP accountant's bound [MTZ19] at σ: the first Newton step
    of a σ secant far in the tail (δ < e^-50), where the Gaussian-DP CLT's slope is far off
    (random case 297 of benchmarks/bench_dpsgd_random.py: −14 for the PLD's −2.1, so the
    step went 0.5 % where 3 % was needed).  The PLD's ε is RDP's times a slowly varying
    factor, so their slopes are close.  None where it is undefined (an aim only: ``holds``
    decides).  (q solves keep the CLT's slope: RDP's cost them 3 % more time over the 57
    far-tail q solves of that benchmark, against 2 % less over its 45 σ solves.)"""
    if acc.name != "pld":
        return None
    rdp = Accountant("rdp", acc.tolerance)
    try:
        hi = rdp.epsilon(q, sigma * 1.01, steps, log_delta)[0]
        lo = rdp.epsilon(q, sigma / 1.01, steps, log_delta)[0]
        slope = (math.log(hi) - math.log(lo)) / (2.0 * math.log(1.01))
    except (ArithmeticError, ValueError, NumericalError):
        return None
    return slope if math.isfinite(slope) and -20 < slope < -0.05 else None


def _clt_q_slope(epsilon: float, log_delta: float) -> float | None:
    """d log ε / d log q at fixed steps of the Gaussian-DP CLT estimate [DRS19] (q ∝ μ)."""
    from dpcalc.relations import dpsgd as rel

    return rel.log_slope(lambda e: rel.clt_mu_guess(e, log_delta), epsilon, True)


def _clt_slope(q: float, steps: int, epsilon: float, log_delta: float) -> float | None:
    """d log ε / d log σ of the Gaussian-DP CLT estimate [DRS19] (None when undefined)."""
    from dpcalc.relations import dpsgd as rel

    return rel.log_slope(lambda e: rel.clt_sigma_guess(q, steps, e, log_delta), epsilon, False)


def sigma_guess(acc: Accountant, q: float, steps: int, epsilon: float,
                 log_delta: float, stop: float,
                 aim_rtol: float = 0.0) -> tuple[float | None, float]:
    """Secant iteration on log σ ↦ log ε_upper(σ) towards the target ε: (guess, its accuracy).

    The secant runs until its own estimate of the distance to the root is below ``stop`` in
    log σ; the solver then needs only the neighbouring point to certify the answer (any guess
    is safe: ``holds`` decides). Every evaluation is memoised in ``acc``, so the solver reuses
    the secant's points. It aims ``aim_rtol`` below the target (a passing point whose bound
    lies just below it ends the solve, Accountant.settles).
    """
    if epsilon <= 0:
        return None, 1e-4
    from dpcalc.relations import dpsgd as rel

    # seed: the Gaussian-DP CLT for the PLD (close to it when q is small) [DRS19] and for
    # RDP, whose answer lies a few per cent above the PLD's (its evaluations, each a fresh
    # RDP curve: 148 -> 123 on 16 random σ solves at δ 1e-12 to 1e-3, 1670 -> 1404 on the
    # 50 of benchmarks/bench_dpsgd_random.py), else the moments-accountant scaling σ ≈
    # q√(2T ln(1/δ))/ε [ACGMMTZ16] (the CLT seeded the moments accountant no better, and
    # strong composition, often several times above the PLD, worse)
    clt = (rel.clt_sigma_guess(q, steps, epsilon, log_delta)
           if acc.name in ("pld", "rdp") else None)
    # the larger of the CLT's and the one-step tail's estimates (both mostly lie below the
    # root, see rel.tail_sigma_guess); where the tail's is larger, RDP's answer (up to twice
    # the root there) is not asked: random case 259 of benchmarks/bench_dpsgd_random.py was
    # seeded at 1.9 times the root and took 10 probes; the tail's seed lies 5 % below it
    tail = rel.tail_sigma_guess(q, epsilon, log_delta) if acc.name == "pld" else None
    by_tail = tail is not None and (clt is None or tail > clt)
    if by_tail:
        clt = tail
    elif acc.name == "pld" and log_delta < _CLT_LOG_DELTA_MIN:
        clt = _rdp_sigma_seed(acc, q, steps, epsilon, log_delta, clt)
    first = 0.01 if clt is not None else 0.05
    x0 = math.log(clt if clt is not None else
                  max(0.5, q * math.sqrt(2.0 * steps * -log_delta) / epsilon))

    probes = {}   # log σ -> (point, bound_for's bound) of the secant's probes (_chord_step)
    aim = epsilon * (1.0 - aim_rtol)

    def f(x: float, full: bool = False) -> float:
        if not -7.0 < x < 13.8:  # σ outside [1e-3, 1e6]: the solver's own bracket decides
            raise ValueError("outside the σ range")
        bound = (acc.full_bound(q, math.exp(x), steps, log_delta) if full
                 else acc.bound_for(q, math.exp(x), steps, log_delta, epsilon))
        probes[x] = ((q, math.exp(x), steps, log_delta), bound)
        return math.log(bound) - math.log(aim)

    try:
        f0 = f(x0)
        for _ in range(12):  # no finite bound yet (e.g. strong composition): more noise
            if math.isfinite(f0):
                break
            x0 += 1.0
            f0 = f(x0)
        # first step: Newton with the seed's own slope d log ε / d log σ when there is one
        # (the CLT's error is a slowly varying factor), far in the tail RDP's (see
        # _rdp_sigma_slope), else a fixed step towards the root
        slope = _clt_slope(q, steps, epsilon, log_delta) if clt is not None else None
        if by_tail:
            slope = rel.log_slope(lambda e: rel.tail_sigma_guess(q, e, log_delta), epsilon,
                               False)
        elif acc.name == "pld" and log_delta < _CLT_LOG_DELTA_MIN:
            slope = _rdp_sigma_slope(acc, q, math.exp(x0), steps, log_delta) or slope
        if slope is not None and abs(f0) > 1e-6:
            x1 = x0 - max(-0.2, min(0.2, f0 / slope))
        else:
            x1 = x0 + first if f0 > 0 else x0 - first
        for _ in range(12):
            f1 = f(x1)
            if f1 == f0 or not math.isfinite(f1):
                break
            # the secant's distance from x1 to the root (on log(e^ε − 1): random case 34,
            # q = 1.7e-8, ε 1.49 and 2.27 at σ 0.924 and 0.873, root 0.7797: 0.776 next,
            # where log ε aimed at 0.806 and took three more probes to come down)
            if aim_rtol > 0 and probes[x1][1] <= epsilon \
                    and acc.settles(q, math.exp(x1), steps, epsilon, log_delta, 2 * aim_rtol):
                return math.exp(x1), 1e-9      # the solver's first probe: an answer
            step = _chord_step(acc, x0, x1, f0, f1, probes, aim)
            if abs(step) < stop and _on_cheap_root(acc, probes[x1][0]):
                got = _full_chord(acc, f, probes, x0, f0, x1, aim)
                if got is None:
                    break          # no chord (the solver brackets from x1)
                x0, f0, f1, step = got
            if abs(step) < stop:
                # the root lies about ``step`` from x1 (the secant converges superlinearly):
                # the solver's first probe, 2·|step| beyond it, is then on the other side
                return math.exp(x1), max(2.0 * abs(step) + stop / 8,
                                         2e-9 if stop < 1e-9 else 1e-8)
            x0, f0, x1 = x1, f1, x1 - max(-2.0, min(2.0, step))
        return math.exp(x1), 1e-4
    except (ArithmeticError, ValueError):
        return None, 1e-4
