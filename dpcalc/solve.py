"""The one generic solver: bracket, then bisect on a monotone predicate, return the passing side.

Every inversion in dpcalc goes through here. ``holds(x)`` answers "do these values give the
promised guarantee?" using certified upper bounds only (``None`` means "cannot certify" and is
treated as failing). For an unknown whose private direction is *larger* (ε, δ, σ, scale) the
solver returns the smallest passing value; for *smaller* (counts, rates, allowances) the largest.
Bisection keeps one passing endpoint at all times and returns it, so every answer passes
``holds`` by construction (OpenDP's ``binary_search``; dp_accounting's explicit bracket search).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from dpcalc.errors import InfeasibleError

if TYPE_CHECKING:
    from dpcalc.params import Param

Predicate = Callable[[float], "bool | None"]

#: Relative width at which float bisection stops (far below every reported digit).
RTOL = 1e-12
#: The accuracy assumed of a closed-form guess (the default ``guess_rtol``).
CLOSED_FORM_RTOL = 1e-9
_MAX_STEPS = 400
_MAX_DOUBLE = 1.7976931348623157e308


def _passes(holds: Predicate, x: float) -> bool:
    return holds(x) is True


def _memo(holds: Predicate) -> Predicate:
    """Evaluate each point once (numerical predicates can cost tens of milliseconds)."""
    seen: dict[float, bool | None] = {}

    def cached(x: float) -> bool | None:
        if x not in seen:
            seen[x] = holds(x)
        return seen[x]

    return cached


def _midpoint(lo: float, hi: float) -> float:
    if lo > 0 and hi / lo > 4.0:
        return math.sqrt(lo) * math.sqrt(hi)  # geometric: brackets spanning decades shrink fast
    return lo + (hi - lo) / 2.0


def _bisect(holds: Predicate, fail: float, ok: float, rtol: float) -> float:
    """Shrink [fail, ok] (either order) keeping ``ok`` passing; return ``ok``."""
    for _ in range(_MAX_STEPS):
        lo, hi = min(fail, ok), max(fail, ok)
        if hi - lo <= rtol * max(abs(lo), abs(hi)):
            break
        mid = _midpoint(lo, hi)
        if not lo < mid < hi:  # adjacent floats
            break
        if _passes(holds, mid):
            ok = mid
        else:
            fail = mid
    return ok


def solve_unknown(param: Param, holds: Callable, *, guess: float | None = None,
                  rtol: float = RTOL, guess_rtol: float = CLOSED_FORM_RTOL,
                  low: float | None = None, high: float | None = None,
                  low_open: bool | None = None, high_open: bool | None = None,
                  name: str | None = None, int_rtol: float = 0.0,
                  settled: Callable[[float], bool] | None = None) -> float | int:
    """The private-side value of the unknown ``param`` under the monotone predicate ``holds``.

    The one leave-one-out engine: the declaration decides the search. ``param.safer ==
    "larger"`` (noise, a target ε or δ: larger values pass more easily) gives the smallest
    passing value; ``"smaller"`` (counts, rates, a mechanism's own ε or δ) the largest; an
    ``integer`` parameter is searched over the whole numbers of its domain, exactly unless
    ``int_rtol`` is given (see :func:`largest_passing_int`). The domain
    ends, their openness and the name in messages come from the declaration unless the caller
    narrows them (``low``, ``high``, ``low_open``, ``high_open``, ``name``); an end the caller
    gives is closed (included) unless its ``*_open`` is given too. ``guess``,
    ``rtol`` and ``guess_rtol`` are passed on (the integer search takes ``guess`` and
    ``int_rtol``). The smallest-value search probes ``high`` itself when nothing below
    passes (see
    :func:`smallest_passing`), so ``high_open`` matters to the other two only.
    ``settled(x)``, asked of each passing point of a float search, ends the search there
    when true: the caller's test that x is as good an answer as the bracket would give (a
    numerical predicate whose bound at x lies within its accuracy of the target, see
    dpcalc.api.dpsgd); any passing point is a sound answer.

    Raises:
        InfeasibleError: no value in the domain passes (or, upwards unbounded, every one does).
        ValueError: a declaration with no search (an integer whose larger values are safer, or
            an unknown ``safer``).
    """
    if not guess_rtol > 0:
        guess_rtol = 0.5   # no usable accuracy (a non-positive ratio would never widen)
    if low_open is None:
        low_open = param.low_open if low is None else False
    if high_open is None:
        high_open = param.high_open if high is None else False
    low = param.low if low is None else low
    high = param.high if high is None else high
    name = param.label if name is None else name
    if param.safer not in ("larger", "smaller"):
        raise ValueError(f"{param.name}: safer must be 'larger' or 'smaller', got "
                         f"{param.safer!r}")
    if param.integer:
        if param.safer != "smaller":
            raise ValueError(f"{param.name}: no search for the smallest passing integer")
        first = math.floor(low) + 1 if low_open else math.ceil(low)
        last = None if math.isinf(high) else (math.ceil(high) - 1 if high_open
                                              else math.floor(high))
        return largest_passing_int(holds, low=first, name=name, high=last, guess=guess,
                                   rtol=int_rtol)
    if settled is not None:
        try:
            return solve_unknown(param, _settling(holds, settled), guess=guess, rtol=rtol,
                                 guess_rtol=guess_rtol, low=low, high=high,
                                 low_open=low_open, high_open=high_open, name=name)
        except _Settled as done:
            return done.x
    if param.safer == "larger":
        return smallest_passing(holds, low=low, high=high, low_open=low_open, name=name,
                                guess=guess, rtol=rtol, guess_rtol=guess_rtol)
    return largest_passing(holds, low=low, high=high, high_open=high_open, name=name,
                           guess=guess, rtol=rtol, guess_rtol=guess_rtol, low_open=low_open)


class _Settled(Exception):
    """A passing point that the caller's ``settled`` accepts: the search ends with it."""

    def __init__(self, x: float):
        super().__init__(x)
        self.x = x


def _settling(holds: Predicate, settled: Callable[[float], bool]) -> Predicate:
    def checked(x: float) -> bool | None:
        got = holds(x)
        if got is True and settled(x):
            raise _Settled(x)
        return got

    return checked


def bisect_to_adjacent(passes: Callable[[float], bool], fail: float, ok: float, *,
                       max_steps: int = 200, rel_width: float = 0.0) -> float:
    """Halve [fail, ok] (either order) at the arithmetic midpoint, keeping ``ok`` passing.

    Stops when the midpoint is no longer strictly inside (the ends are adjacent doubles), when
    the width is at most ``rel_width``·max(1, |upper end|), or after ``max_steps`` halvings;
    returns the passing end, so the answer passes by construction (OpenDP's
    ``binary_search``). ``passes`` is evaluated once per halving, at the midpoint only.
    """
    for _ in range(max_steps):
        lo, hi = (fail, ok) if fail < ok else (ok, fail)
        if hi - lo <= rel_width * max(1.0, abs(hi)):
            break
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if passes(mid):
            ok = mid
        else:
            fail = mid
    return ok


def climb_to_adjacent(passes: Callable[[float], bool], x: float) -> float:
    """From a passing ``x``, the largest double reachable upward while ``passes`` holds.

    Gallops up by steps of 1, 2, 4, ... ulps (at most 64 doublings), then refines the last
    step by halving down to adjacent doubles; every point returned has passed.
    """
    step = max(math.ulp(x), math.ldexp(1.0, -1074))
    for _ in range(64):  # gallop
        if not passes(x + step):
            break
        x += step
        step *= 2.0
    while step > math.ulp(x):  # refine down to adjacent floats
        step *= 0.5
        if x + step > x and passes(x + step):
            x += step
    return x


def _widening(step: float):
    """Probe ratios r > 1: 1/(1 − step), with step growing 4x up to 1/2, then 2, 4, 16, ..."""
    while step < 0.5:
        yield 1.0 / (1.0 - step)
        step *= 4.0
    factor = 2.0
    while True:
        yield factor
        factor = min(factor * factor, 1e100)


def smallest_passing(holds: Predicate, *, low: float, high: float, low_open: bool,
                     name: str, guess: float | None = None, rtol: float = RTOL,
                     guess_rtol: float = CLOSED_FORM_RTOL) -> float:
    """Smallest x in the domain with ``holds(x)`` (within ``rtol``), never a failing x.

    ``holds`` must be monotone: failing below some threshold, passing above it.
    A ``guess`` believed accurate to ``guess_rtol`` is bracketed first at that distance (a
    closed form, with the default 1e-9, is returned as is when a point 1e-9 below fails);
    the bracket then widens geometrically.

    Raises:
        InfeasibleError: no x up to ``high`` passes.
    """
    holds = _memo(holds)
    if not low_open and _passes(holds, low):
        return low
    x = guess if guess is not None and low < guess < high else _start(low, high)
    closed_form = guess is not None and x == guess and guess_rtol <= CLOSED_FORM_RTOL
    if closed_form and not _passes(holds, x):
        x = _nudge_to_pass(holds, x, math.inf)  # a closed form a few ulps optimistic
    first = guess_rtol if guess is not None else 0.5
    if _passes(holds, x):
        ok = x
        for ratio in _widening(first):
            below = ok / ratio
            if below <= low or below == ok or below < 1e-300:
                if not low_open and _passes(holds, low):
                    return low
                if low == 0.0:
                    return _bisect_to_zero(holds, ok, rtol)
                return _bisect(holds, low, ok, rtol)
            if not _passes(holds, below):
                return _bisect(holds, below, ok, rtol)
            ok = below
    fail = x
    for ratio in _widening(first):
        above = fail * ratio if fail > 0 else 1.0
        if above >= high or above > _MAX_DOUBLE:
            # the top of the domain (the largest double when it is unbounded) decides
            top = high if not math.isinf(high) else _MAX_DOUBLE
            if top <= fail or not _passes(holds, top):
                raise InfeasibleError(f"no {name} up to {_cap(high)} meets the target")
            return _bisect(holds, fail, top, rtol)
        if _passes(holds, above):
            return _bisect(holds, fail, above, rtol)
        fail = above
    raise AssertionError("unreachable")


def _bisect_to_zero(holds: Predicate, ok: float, rtol: float) -> float:
    """Passing ``ok`` > 0, failing (or excluded) 0: find a failing point above 0, then bisect."""
    factor = 2.0
    probe = ok
    while probe > 1e-300:
        probe = ok / factor
        if not _passes(holds, probe):
            return _bisect(holds, probe, ok, rtol)
        ok = probe
        factor = min(factor * factor, 1e100)
    return ok


def largest_passing(holds: Predicate, *, low: float, high: float, high_open: bool,
                    name: str, guess: float | None = None, rtol: float = RTOL,
                    guess_rtol: float = CLOSED_FORM_RTOL, low_open: bool = True) -> float:
    """Largest x in the domain with ``holds(x)`` (within ``rtol``), never a failing x.

    ``holds`` must be monotone: passing below some threshold, failing above it. A ``guess``
    is used as in ``smallest_passing``. With ``low_open=False`` the domain includes ``low``,
    which is returned when it passes and nothing above it is found to (e.g. a base ε of 0).

    Raises:
        InfeasibleError: no x above ``low`` passes (or every x passes and ``high`` is inf).
    """
    holds = _memo(holds)
    if not high_open and not math.isinf(high) and _passes(holds, high):
        return high
    x = guess if guess is not None and low < guess < high else _start(low, high)
    closed_form = guess is not None and x == guess and guess_rtol <= CLOSED_FORM_RTOL
    if closed_form and not _passes(holds, x):
        x = _nudge_to_pass(holds, x, -math.inf)
    first = guess_rtol if guess is not None else 0.5
    if _passes(holds, x):
        ok = x
        for ratio in _widening(first):
            above = ok * ratio
            if above >= high:
                if math.isinf(high):
                    raise InfeasibleError(f"every {name} meets the target (no largest value)")
                return _bisect(holds, high, ok, rtol)
            if not _passes(holds, above):
                return _bisect(holds, above, ok, rtol)
            ok = above
    fail = x
    for ratio in _widening(first):
        below = fail / ratio
        if below <= low or below < 1e-300:
            if not low_open and _passes(holds, low):
                # low passes: the answer lies in [low, fail) (below 1e-300, low itself)
                return low if below < 1e-300 and low < 1e-300 else _bisect(holds, fail, low,
                                                                           rtol)
            raise InfeasibleError(f"no {name} above {low:g} meets the target")
        if _passes(holds, below):
            return _bisect(holds, fail, below, rtol)
        fail = below
    raise AssertionError("unreachable")


def largest_passing_int(holds: Callable[[int], bool | None], *, low: int, name: str,
                        high: int | None = None, guess: int | None = None,
                        rtol: float = 0.0) -> int:
    """Largest integer n >= low with ``holds(n)`` (monotone predicate); exact, or with
    ``rtol`` within max(1, ⌊rtol·n⌋) of the first failing integer (a passing n always).

    A ``guess`` (believed close, e.g. from a relation's own search) is probed first and the
    bracket widened from it by w, 2w, 4w, ..., w = max(1, ⌊rtol·guess⌋): an exact guess
    costs two probes.  ``rtol`` is for counts beyond a numerical predicate's resolution
    (DP-SGD steps near 4e9, where the PLD bound varies by 1e-6 between neighbouring counts:
    25 full evaluations to bisect 4,096 steps exactly, random case 103 of
    benchmarks/bench_dpsgd_random.py).

    Raises:
        InfeasibleError: ``holds(low)`` fails, or every n up to 2**62 passes.
    """
    cap = high if high is not None else 2**62
    if guess is not None and low < guess < cap:
        # gallop outwards from the guess in steps w, 2w, 4w, ...: a guess d off costs about
        # 2·log2(d/w) evaluations, an exact one two (the guess and the next integer)
        width = _int_width(guess, rtol)
        if holds(guess) is True:
            ok, step = guess, width
        else:
            fail, step = guess, width
            while True:
                probe = max(fail - step, low)
                if holds(probe) is True:
                    ok = probe
                    break
                if probe == low:
                    raise InfeasibleError(f"even {name} = {low} does not meet the target")
                fail, step = probe, step * 2
            step = 0  # bracketed: [ok, fail)
    else:
        if holds(low) is not True:
            raise InfeasibleError(f"even {name} = {low} does not meet the target")
        ok = low
        step = max(1, (guess - low) if guess is not None and guess > low else 1)
    while step:
        probe = min(ok + step, cap)
        if probe == ok:
            return ok
        if holds(probe) is True:
            ok = probe
            if ok == cap:
                if high is None:
                    raise InfeasibleError(f"every {name} up to {cap} meets the target")
                return ok
            step *= 2
        else:
            fail = probe
            break
    return _bisect_int(holds, ok, fail, rtol)


def _int_width(n: int, rtol: float) -> int:
    """max(1, ⌊rtol·n⌋): the integer search's resolution at n."""
    return max(1, math.floor(rtol * n)) if rtol > 0 else 1


def _bisect_int(holds: Callable[[int], bool | None], ok: int, fail: int,
                rtol: float = 0.0) -> int:
    """Passing ``ok`` < failing ``fail``: the largest passing integer between them (with
    ``rtol``, a passing one within max(1, ⌊rtol·ok⌋) of a failing one)."""
    while fail - ok > _int_width(ok, rtol):
        mid = (ok + fail) // 2
        if holds(mid) is True:
            ok = mid
        else:
            fail = mid
    return ok


def _nudge_to_pass(holds: Predicate, x: float, towards: float) -> float:
    """Up to 8 ulps from ``x`` towards ``towards``: the first passing point, else ``x``.

    For closed-form guesses only (``guess_rtol`` at its default): an approximate guess that
    fails is bracketed at its own accuracy instead.
    """
    probe = x
    for _ in range(8):
        probe = math.nextafter(probe, towards)
        if _passes(holds, probe):
            return probe
    return x


def _start(low: float, high: float) -> float:
    if low < 1.0 < high:
        return 1.0
    if math.isinf(high):
        return max(2.0 * low, low + 1.0)
    return low + (high - low) / 2.0


def _cap(x: float) -> str:
    return "infinity" if math.isinf(x) else f"{x:g}"
