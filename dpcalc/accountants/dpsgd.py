"""The DP-SGD accountants behind one interface: T steps of the Poisson-subsampled Gaussian.

Each accountant answers two questions, both as upper bounds, with a certified bracket where it
has one (else None):

- ``epsilon(q, σ, T, log δ, tolerance) -> (ε, bracket)``;
- ``log_delta(q, σ, T, ε, tolerance) -> (log δ, bracket of log δ)``.

The formulas live in ``dpcalc.relations.dpsgd`` and ``dpcalc.relations.pld`` (with their
references: pld [GLW21], rdp [MTZ19; CKS20], moments [ACGMMTZ16], strong [BW18; BBG18; DRV10]);
the registry ``dpcalc.methods.DPSGD`` names these objects, and ``evaluate`` applies the one
fallback policy (``dpcalc.methods.FALLBACK``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class DpsgdAccountant:
    """ε(δ) and log δ(ε) of one accountant (see the module docstring); ``epsilon_upper``, when
    given, is a cheaper certified upper bound on ε for solvers' probes (raises like
    ``epsilon``; at least the value ``epsilon`` returns); ``epsilon_solve``, when given,
    returns what ``epsilon`` does with the same upper bound, bit for bit, and a bracket
    whose lower end may be looser, for less work (what a solver's predicate reads)."""

    name: str
    epsilon: Callable
    log_delta: Callable
    epsilon_upper: Callable | None = None
    epsilon_solve: Callable | None = None


def pld_call(fn, *args):
    """A PLD evaluation; float trouble outside its grid's range is "cannot certify" too.

    The accountant then answers with its fallback's bound and says so (as for
    PLDUncertifiable).
    """
    import warnings

    from dpcalc.relations import pld

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            result = fn(*args)
    except (ArithmeticError, ValueError) as exc:
        raise pld.PLDUncertifiable(f"the PLD grid leaves the double range "
                                   f"({type(exc).__name__})") from exc
    pairs = [result] if isinstance(result, tuple) else [row[1:] for row in result]
    if any(x != x or x == math.inf for pair in pairs for x in pair):  # NaN, or no finite bound
        raise pld.PLDUncertifiable("the PLD bound is not finite here")
    return result


# below this rate (far under the documented q ≥ 1e-8) the one-step loss's bulk, of width
# ~q, is narrower than any affordable grid: the PLD bracket is wide and slow (a q solve
# probes such rates when even RDP's answer is there), so the fallback answers
PLD_Q_MIN = 1e-12


def _check_rate(q):
    from dpcalc.relations import pld

    if q < PLD_Q_MIN:
        raise pld.PLDUncertifiable(f"q = {q:.3g} is below {PLD_Q_MIN:g}, where the grid "
                                   "cannot resolve the one-step loss")


def _sampled_below_delta(q, steps, log_delta) -> bool:
    """ε = 0 exactly: the example is sampled at all with probability ≤ δ
    (relations.dpsgd.log_participation). The grid gave 0.5 at q 1e-12, 1000 steps and 0.71
    at 10⁶ steps (sound, far from 0), and the fallbacks below PLD_Q_MIN a bound above 0."""
    from dpcalc.relations.dpsgd import log_participation

    return log_participation(q, steps) <= log_delta


def _pld_epsilon(q, sigma, steps, log_delta, tolerance):
    from dpcalc.relations import pld

    if _sampled_below_delta(q, steps, log_delta):
        return 0.0, (0.0, 0.0)
    _check_rate(q)
    lower, upper = pld_call(pld.epsilon_bounds, q, sigma, steps, log_delta, tolerance)
    return upper, (lower, upper)


def _pld_epsilon_solve(q, sigma, steps, log_delta, tolerance):
    from dpcalc.relations import pld

    if _sampled_below_delta(q, steps, log_delta):
        return 0.0, (0.0, 0.0)
    _check_rate(q)
    lower, upper = pld_call(pld.epsilon_bounds, q, sigma, steps, log_delta, tolerance, True)
    return upper, (lower, upper)


def _pld_epsilon_upper(q, sigma, steps, log_delta, tolerance, stop_above=math.inf):
    from dpcalc.relations import pld

    if _sampled_below_delta(q, steps, log_delta):
        return 0.0
    _check_rate(q)  # the same domain as _pld_epsilon: below it, the fallback answers

    def run(*args):
        value = pld.epsilon_upper(*args)
        # +inf above a finite stop_above is an answer ("not below it"), not a failure
        return (-1.0 if value == math.inf and stop_above < math.inf else value), 0.0

    value = pld_call(run, q, sigma, steps, log_delta, tolerance, stop_above)[0]
    return math.inf if value < 0 else value


def _pld_log_delta(q, sigma, steps, epsilon, tolerance):
    from dpcalc.relations import pld

    _check_rate(q)
    lower, upper = pld_call(pld.log_delta_bounds, q, sigma, steps, epsilon, tolerance)
    if upper >= 0.0 and lower < -math.log(2.0):
        # a vacuous δ ≤ 1 certifies nothing where the bracket does not show δ near 1 either:
        # the fallback's bound answers, said so (q 1e-8, 10¹⁰ steps, ε 0.0104: the PLD gave
        # [0, 1], the RDP accountant 0.0072; the PLD's own ε at δ 5e-6 is 0.0104)
        raise pld.PLDUncertifiable("its δ bound is vacuous here")
    return upper, (lower, upper)


def _rdp_epsilon(q, sigma, steps, log_delta, tolerance):
    from dpcalc.relations import dpsgd as rel

    return rel.rdp_epsilon(q, sigma, steps, log_delta)[0], None


def _rdp_log_delta(q, sigma, steps, epsilon, tolerance):
    from dpcalc.relations import dpsgd as rel

    return rel.rdp_log_delta(q, sigma, steps, epsilon), None


def _moments_epsilon(q, sigma, steps, log_delta, tolerance):
    from dpcalc.relations import dpsgd as rel

    return rel.moments_epsilon(q, sigma, steps, log_delta)[0], None


def _moments_log_delta(q, sigma, steps, epsilon, tolerance):
    from dpcalc.relations import dpsgd as rel

    return rel.moments_log_delta(q, sigma, steps, epsilon), None


def _strong_epsilon(q, sigma, steps, log_delta, tolerance):
    from dpcalc.relations import dpsgd as rel

    return rel.strong_epsilon(q, sigma, steps, log_delta)[0], None


def _strong_log_delta(q, sigma, steps, epsilon, tolerance):
    """The smallest δ whose optimised ε meets the target, as log δ: the largest u = −log δ
    that passes (searched on u, so that δ far below the double range stays a number: on δ
    itself the search towards 0 underflowed to log(0) at q 2e-57, σ 0.4, ε 1.4, review),
    up to _STRONG_U_MAX (δ ≤ e^-u there is an upper bound like any passing u)."""
    from dpcalc.params import NEG_LOG_DELTA
    from dpcalc.relations import dpsgd as rel
    from dpcalc.solve import solve_unknown

    at_half = rel.strong_epsilon(q, sigma, steps, math.log(0.5))[0]
    if at_half > epsilon:
        return 0.0, None
    guess, accuracy = _strong_u_guess(lambda u: rel.strong_epsilon(q, sigma, steps, -u)[0],
                                      epsilon, at_half)
    u = solve_unknown(NEG_LOG_DELTA, lambda x: rel.strong_epsilon(q, sigma, steps, -x)[0]
                      <= epsilon, low=math.log(2.0), high=_STRONG_U_MAX, rtol=1e-12,
                      guess=guess, guess_rtol=accuracy)
    return -u, None


def _strong_u_guess(eps_of, epsilon: float, at_half: float) -> tuple[float | None, float]:
    """(guess, accuracy) of the root u of ε(u) = ``epsilon`` (``eps_of``: the optimised
    strong-composition ε at δ = e^-u, increasing in u): a secant on log u ↦ log ε, which
    is nearly a line (ε₁√(2T·u) [DR14, Thm 3.20], with ε₁ from the per-step Gaussian at a
    share of δ [BW18]), from u = log 2 where ε is ``at_half``.  The bisection from scratch
    took 50 evaluations of ε (each a minimisation over the δ split, 1-30 ms): 0.05-1.5 s
    of a δ solve's strong-composition row.  Any guess is safe (the solver checks it); (None,
    0.5) where the secant finds no finite chord."""
    x0, f0 = math.log(math.log(2.0)), math.log(at_half) - math.log(epsilon)
    x1 = x0 - f0 / 0.5 if f0 < 0 else x0 + 1.0    # ε ∝ √u: a slope of 1/2 in logs
    x_max = math.log(_STRONG_U_MAX)
    try:
        for _ in range(12):
            x1 = min(x1, x_max)
            value = eps_of(math.exp(x1))
            if not 0.0 < value < math.inf:
                return None, 0.5
            f1 = math.log(value) - math.log(epsilon)
            if f1 == f0:
                break
            step = f1 * (x1 - x0) / (f1 - f0)
            x0, f0, x1 = x1, f1, x1 - max(-2.0, min(2.0, step))
            if abs(step) < 1e-11:
                return math.exp(x1), max(4.0 * abs(step), 1e-12)
    except (ArithmeticError, ValueError):
        return None, 0.5
    return math.exp(min(x1, x_max)), 1e-3


_STRONG_U_MAX = 1e5   # the smallest δ a strong-composition δ solve asks about: e^-100000


PLD = DpsgdAccountant("pld", _pld_epsilon, _pld_log_delta, _pld_epsilon_upper,
                      _pld_epsilon_solve)
RDP = DpsgdAccountant("rdp", _rdp_epsilon, _rdp_log_delta)
MOMENTS = DpsgdAccountant("moments", _moments_epsilon, _moments_log_delta)
STRONG = DpsgdAccountant("strong", _strong_epsilon, _strong_log_delta)


def uncertifiable() -> type[Exception]:
    """The exception by which an accountant says it cannot certify an answer."""
    from dpcalc.relations.pld import PLDUncertifiable

    return PLDUncertifiable


class FallbackNote(str):
    """A fallback note: a str like every note, which also names the accountant that
    answered (``method``)."""

    method: str = ""


_FALLBACK_NAME = {"rdp": "the RDP accountant", "strong": "strong composition"}


def fallback_note(name: str, exc: Exception, question: str, used: str,
                  silent: tuple[str, ...] = ()) -> FallbackNote:
    """The note that says an answer is the fallback ``used``'s (``question``: epsilon or
    log_delta); ``silent``: the other fallbacks, which gave no bound here."""
    from dpcalc.methods import FALLBACK

    assert name == "pld" and used in FALLBACK[name]  # the only fallback, worded for it
    answer = _FALLBACK_NAME[used] + "'s"
    if used == "rdp" and question == "epsilon":
        from dpcalc.relations import dpsgd as rel

        answer += f" (orders up to {int(max(rel._orders()))})"
    if silent:
        why = " and ".join(_FALLBACK_NAME[n] for n in silent) + " gave no bound here"
    else:
        why = "the tighter of the RDP and strong-composition bounds here"
    note = FallbackNote(f"the PLD grid cannot certify an answer here ({exc}); the answer is "
                        f"{answer}, {why}")
    note.method = used
    return note


def fallback(name: str, question: str, q, sigma, steps, x, tolerance):
    """(value, accountant, the accountants that gave no bound) of the tightest fallback of
    ``name`` (dpcalc.methods.FALLBACK) for ``question`` ("epsilon" or "log_delta"): the
    smallest of their upper bounds (the first listed on a tie).  One that raises or gives
    NaN is passed over (and named); if all do, the first one's error is raised."""
    from dpcalc.errors import DpcalcError, NumericalError
    from dpcalc.methods import DPSGD, FALLBACK

    best, first_error, silent = None, None, []
    for other in FALLBACK[name]:
        try:
            value = getattr(DPSGD[other].load(), question)(q, sigma, steps, x, tolerance)[0]
        except (DpcalcError, ArithmeticError, ValueError) as exc:
            first_error = first_error or exc    # (raised below when no fallback answers)
            silent.append(other)
            continue
        if value != value:
            silent.append(other)
        elif best is None or value < best[0]:
            best = (value, other)
    if best is None:
        raise first_error or NumericalError(f"no fallback of {name} gives a bound here")
    return best[0], best[1], tuple(silent)


def evaluate(name: str, question: str, q, sigma, steps, x, tolerance):
    """(value, bracket or None, fallback note or "") of accountant ``name`` for ``question``
    ("epsilon" at x = log δ, or "log_delta" at x = ε; "epsilon_solve" is "epsilon" for a
    solver's predicate, see DpsgdAccountant), under the fallback policy
    (``dpcalc.methods.FALLBACK``): only an accountant listed there falls back, only when it
    raises ``uncertifiable()``, and the note says so."""
    from dpcalc.methods import DPSGD, FALLBACK

    accountant = DPSGD[name].load()
    if question == "epsilon_solve":
        # the accountant's own if it has one; the fallback and its note are those of ε
        question, method = "epsilon", accountant.epsilon_solve or accountant.epsilon
    else:
        method = getattr(accountant, question)
    if name not in FALLBACK:
        return (*method(q, sigma, steps, x, tolerance), "")
    try:
        return (*method(q, sigma, steps, x, tolerance), "")
    except uncertifiable() as exc:
        value, used, silent = fallback(name, question, q, sigma, steps, x, tolerance)
        return value, None, fallback_note(name, exc, question, used, silent)


def evaluate_upper(name: str, q, sigma, steps, log_delta, tolerance,
                   stop_above: float = math.inf) -> float | None:
    """The accountant's cheap certified upper bound on ε (``epsilon_upper``; +inf once it
    is certainly above ``stop_above``), or None when it has none or cannot certify one (the
    caller then asks ``evaluate``, which applies the fallback policy and says so)."""
    from dpcalc.methods import DPSGD

    accountant = DPSGD[name].load()
    if accountant.epsilon_upper is None:
        return None
    try:
        return accountant.epsilon_upper(q, sigma, steps, log_delta, tolerance, stop_above)
    except uncertifiable():
        return None
