"""Starting points for the solves of the other sampling schemes (``dpcalc.api.dpsgd_runs``):
a secant on the PLD's cheap certified upper bound (its first pass) of the scheme's own pair,
seeded by the Gaussian-DP CLT of the Poisson add/remove run [DRS19].

Any guess is safe: the solver (dpcalc.solve) checks it with the scheme's certified predicate
(``_Pld.holds``) and returns the passing side; a good guess only saves evaluations (the
bisection from the whole domain took 20-30 full evaluations: 3-5 s at q 0.02, 100 steps).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from dpcalc.api._common import SETTLE_RTOL
from dpcalc.errors import DpcalcError

#: the secant stops once its own step is below this in the log of the unknown
_STOP = 2e-5


def secant_guess(bound: Callable[[float], float], x0: float, epsilon: float, lo: float,
                 hi: float, slope: float, iterations: int = 10,
                 full: Callable[[float], float] | None = None,
                 inside: float = 0.0, settle: float = 0.0) -> tuple[float | None, float]:
    """(guess, accuracy) of the unknown whose log x makes ``bound(x)`` (a certified upper
    bound on ε, +inf or NaN where there is none) meet ``epsilon``: a Newton step on
    ``slope`` (a guess of d log ε / dx) from x0, then a secant on x ↦ log(bound / ε), every
    x kept in [lo, hi].  The accuracy is twice the secant's last step (it converges
    superlinearly: the root lies within it), so the solver's first probe beyond the guess
    brackets the root; (None, 0.5) without two finite probes (the solver searches alone).

    ``full(x)``, when given, is the bound the predicate decides on (at most ``bound``, and
    kept by the caller for the solver): the cheap secant's root is moved by a Newton step
    on the full bound there, and the accuracy widened to a quarter of that move.  The
    cheap bound can lie 3 % above it (K = 3, q 1.07e-4: the steps secant landed 6 % short,
    and the integer search stepped out one full evaluation at a time: helper-49).  It costs
    one full evaluation, so only the steps search, which gallops out from its guess one
    count at first, asks for it.

    ``inside``: how far (relative, in ε) ``epsilon`` lies inside the solve's own target
    (see aim): the accuracy is at least twice that distance over the last
    chord's slope, so that the solver's first probe beyond a guess met on the aimed bound
    lies past the target's root.  At 1e-7 the solver galloped out 1e-7, 5e-7, 2.1e-6 from
    the guess, two passing probes before a failing one (σ, MNIST, replace-one).

    ``settle``: a full bound at the cheap root that meets the solve's own target within this
    (relative) below it is not moved (the solve ends there: _Pld.settles).  Moving it
    chased the aim within the bounds' jitter: σ at MNIST, K = 2, three full evaluations
    1e-7 apart, each passing."""
    def f(x: float, of=bound) -> float:
        value = of(x)
        if not 0.0 < value < math.inf:
            raise ValueError("no finite bound")
        return math.log(value) - math.log(epsilon)

    try:
        f0 = f(x0)
        x1 = min(max(x0 - max(-2.0, min(2.0, f0 / slope)), lo), hi)
        for _ in range(iterations):
            if x1 == x0:
                break
            f1 = f(x1)
            if f1 == f0:
                break
            chord = (f1 - f0) / (x1 - x0)
            step = max(-2.0, min(2.0, f1 / chord))
            x0, f0 = x1, f1
            x1 = min(max(x1 - step, lo), hi)
            if abs(step) < _STOP:
                accuracy = max(2.0 * abs(step), 1e-7)
                if full is not None and chord * slope > 0.0:
                    band = _settled_band(inside, settle)
                    # where the last probe's cheap bound already meets the target within the
                    # settle window, the full bound is asked there (x0) rather than at the
                    # secant's point x1 within _STOP of it: it reuses that probe's first
                    # pass (kept compositions, pld.compose), and settles there if the pass
                    # is final (σ at MNIST, K = 2: one first pass fewer, 0.05 s of 0.5)
                    start = x0 if band is not None and band[0] <= f0 <= band[1] else x1
                    x1, accuracy = _full_root(f, full, start, chord, accuracy, lo, hi, band)
                if inside > 0.0 and chord != 0.0:
                    accuracy = max(accuracy, min(2.0 * inside / abs(chord), 0.01))
                return math.exp(x1), accuracy
        return math.exp(x1), 0.01
    except (ArithmeticError, ValueError, DpcalcError):
        return None, 0.5


def _settled_band(inside: float, settle: float) -> tuple[float, float] | None:
    """The values of f = log(bound / aimed ε) whose bound meets the target (aimed ``inside``
    below) within ``settle`` below it; None without a window."""
    if not settle > 0.0:
        return None
    top = -math.log1p(-inside)              # log(target / aimed)
    return top + math.log1p(-settle), top


def _full_root(f, full, x: float, chord: float, accuracy: float, lo: float, hi: float,
               settled: tuple[float, float] | None = None):
    """The cheap root x moved to the full bound's: a Newton step on the cheap chord, then
    (where it moved further than ``accuracy``) a secant through the two full values. One
    Newton step alone left the root 2e-5 away but had to declare a quarter of its move
    (0.2 %) as accuracy, and the solver bisected that with 7 full evaluations (q at K = 2,
    σ 1, 1000 steps, ε 0.5: the cheap bound 0.75 % above the full one)."""
    try:
        f0 = f(x, full)
    except (ArithmeticError, ValueError, DpcalcError):
        return x, accuracy       # (the cheap secant's root, then)
    if settled is not None and settled[0] <= f0 <= settled[1]:
        return x, accuracy       # it passes within the window: the solve ends there
    move = max(-0.5, min(0.5, -f0 / chord))
    if abs(move) <= accuracy:
        return x, accuracy
    x1 = min(max(x + move, lo), hi)
    try:
        f1 = f(x1, full)
    except (ArithmeticError, ValueError, DpcalcError):
        return x1, max(accuracy, 0.25 * abs(move))
    if settled is not None and settled[0] <= f1 <= settled[1]:
        return x1, accuracy      # the Newton point passes within the window: an answer
    if f1 == f0 or (f1 - f0) * (x1 - x) * chord <= 0.0:
        # (the full chord's slope against the cheap one's: of opposite sign, no secant.
        # Without the (x1 − x), every σ solve (a falling ε, Newton step downwards) took
        # this exit: the solver then bisected a quarter of the move, σ replace-one at q
        # 1e-5: six full brackets for three)
        return x1, max(accuracy, 0.25 * abs(move))
    step = max(-abs(move), min(abs(move), -f1 * (x1 - x) / (f1 - f0)))
    x2 = min(max(x1 + step, lo), hi)
    if abs(step) < _STOP:           # (converged as the cheap secant's stop)
        return x2, max(0.5 * abs(step), 1e-7)
    # the secant point is the solver's first probe (its full bound is kept by the caller):
    # its own residual, not half the step, says how far the root is
    try:
        f2 = f(x2, full)
    except (ArithmeticError, ValueError, DpcalcError):
        return x2, max(0.5 * abs(step), 1e-7)
    if settled is not None and settled[0] <= f2 <= settled[1]:
        return x2, max(0.5 * abs(step), 1e-7)
    chord2 = (f2 - f1) / (x2 - x1) if x2 != x1 else 0.0
    if chord2 * chord > 0.0:
        return x2, min(max(2.0 * abs(f2 / chord2), 1e-7), max(0.5 * abs(step), 1e-7))
    return x2, max(0.5 * abs(step), 1e-7)


#: how far inside the target (relative) the σ and q secants aim (aim): the middle of the
#: settle window, as the default run's secants
AIM = SETTLE_RTOL / 2


def aim(epsilon: float) -> float:
    """The ε a σ or q secant aims at: AIM (5e-6, relative) inside the target, above the PLD
    bound's jitter between neighbouring values (its grid follows σ and q: ~1e-9 at K = 2,
    up to 4e-7 with fixed batches). A root met exactly left the printed answer's read-back
    neighbour failing on that jitter, and printed_answer then paid two to four full
    evaluations to step past it (σ at MNIST, fixed batches, 60 epochs).  In the middle of
    the settle window (a full bound within SETTLE_RTOL below the target ends the solve):
    at 1e-6 a Newton point on the full bound landed 5e-6 above the target and cost a third
    full bracket (q with 60 epochs, fixed batches).  The answer moves by ~5e-6, inside the
    solves' accuracy (2e-5)."""
    return epsilon * (1.0 - AIM)


def estimate(fn, *args):
    """A CLT estimate for a secant's start, or None where it leaves the double range
    (q 1e-170: q² underflowed to a ZeroDivisionError; helper-49)."""
    try:
        return fn(*args)
    except (ArithmeticError, ValueError):
        return None


def chi2(scheme, q: float, sigma: float) -> float:
    """χ²(P‖Q) of one step of the scheme's pair, for the CLT seeds below (an estimate's
    ingredient, not a bound). With w_j = Binomial(j; K, q), φ the standard normal CDF:

    add/remove  Σ_ij w_i w_j expm1(ij/σ²)      (∫ (Σ_j w_j N(j))² / N(0) − 1, exactly)
    replace-one 4 Σ_ij w_i w_j sinh(ij/σ²)  (∫ (P − Q)²/N(0): Q ≈ N(0) at a small rate)
    fixed batch 2p²(e^{4/σ²}φ(3/σ) − 2φ(1/σ) + φ(−1/σ))  (the symmetrised pair's two
                halves x > 1 of ((1 − p)N(0) + pN(2), N(0)), to second order in p)

    The subsampled Gaussian's CLT is μ² = T·χ² [DRS19, Sec 5: μ = q√(T(e^{1/σ²} − 1))];
    taken for these pairs it seeds σ within 0.5 % (replace-one, fixed batches) and 2 %
    (K = 2, 3) on MNIST-like runs, where the Poisson CLT seeded 40-60 % off."""
    import numpy as np

    s2 = sigma * sigma
    if scheme.sampling == "fixed-batch":
        def phi(z):
            return 0.5 * math.erfc(-z / math.sqrt(2.0))

        if 4.0 / s2 > 700.0:
            return math.inf
        return 2.0 * q * q * (math.exp(4.0 / s2) * phi(3.0 / sigma) - 2.0 * phi(1.0 / sigma)
                              + phi(-1.0 / sigma))
    k = scheme.k
    j = np.arange(k + 1, dtype=float)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        w = np.array([math.comb(k, i) for i in range(k + 1)], dtype=float) * q ** j * (
            1.0 - q) ** (k - j)
        ij = np.outer(j, j) / s2
        kernel = 4.0 * np.sinh(ij) if scheme.relation == "replace-one" else np.expm1(ij)
        value = float(w @ kernel @ w)
    return value if math.isfinite(value) else math.inf   # (overflow: a σ far too small)


def clt_seed(scheme, unknown: str, q, sigma, steps, epsilon: float, log_delta: float,
             epochs: float | None = None):
    """An estimate of σ, steps or q (``unknown``) with T·χ²(q, σ) = μ², μ the Gaussian-DP
    parameter meeting (ε, δ) [DRS19, Cor 2.13]; None where it cannot be had.  For q with
    ``epochs`` (and no steps), T = epochs/q: T·χ² still grows with q (χ² ~ q²)."""
    from dpcalc.relations.dpsgd import clt_mu_guess

    try:
        mu = clt_mu_guess(epsilon, log_delta)
        if mu is None:
            return None
        if unknown == "steps":
            value = mu * mu / chi2(scheme, q, sigma)
            return value if 1.0 <= value < math.inf else None
        # bisection in the log: χ² falls with σ and grows with q
        lo, hi = (math.log(1e-3), math.log(1e4)) if unknown == "sigma" else (-700.0, 0.0)
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            c = chi2(scheme, q, math.exp(mid)) if unknown == "sigma" else chi2(
                scheme, math.exp(mid), sigma)
            t = steps if steps is not None else epochs / math.exp(mid)
            if (t * c > mu * mu) == (unknown == "sigma"):
                lo = mid
            else:
                hi = mid
        value = math.exp(0.5 * (lo + hi))
        return value if math.isfinite(value) and value > 0 else None
    except (ArithmeticError, ValueError):
        return None


def clt_slope(scheme, unknown: str, q, sigma, steps, epsilon: float, log_delta: float,
              epochs: float | None = None) -> float | None:
    """d log ε / d log x of the scheme's own CLT model (clt_seed) at the target, x the
    ``unknown`` (σ, steps or q), by relations.dpsgd.log_slope: the secants' first step.
    The one-example Poisson model's slope missed K = 2 by a third (σ at MNIST: −1.88 for
    the PLD's −1.40, and the secant took one more evaluation); the scheme's own is −1.39.
    None where the model gives no estimate (an estimate only: any slope is safe)."""
    from dpcalc.relations import dpsgd as rel

    def model(e: float) -> float | None:
        try:
            return clt_seed(scheme, unknown, q, sigma, steps, e, log_delta, epochs)
        except (ArithmeticError, ValueError):
            return None

    return rel.log_slope(model, epsilon, rate=unknown != "sigma")


def readback(x: float, param) -> float:
    """The nearest float to ``x`` on the private side of a solved value (``param.safer``)
    whose printed form (repr) reads back as itself (``param.parse`` rounds an inexact
    decimal to the private side of an input); ``x`` itself when none is within 16 ulps
    (runs of 4 and more ulps whose repr lies on the wrong side occur).  A
    solve that probes only such points (``snapped``) answers a value that prints as the
    point it certified: printed_answer then needs no evaluation of its own."""
    towards = math.inf if param.safer == "larger" else -math.inf
    y = x
    for _ in range(16):
        try:
            if param.parse(repr(y)) == y:
                return y
        except DpcalcError:      # (outside the parameter's domain: x as it is)
            return x
        y = math.nextafter(y, towards)
    return x


def snapped(param, holds: Callable[[float], bool]) -> Callable[[float], bool]:
    """``holds`` at readback(x): monotone where ``holds`` is (readback is nondecreasing: it
    takes the first float reading back within 16 ulps on the private side, else x), so the
    solver's answer x has holds(readback(x)) true; report readback(x)."""
    return lambda x: holds(readback(x, param))


def printed_answer(value: float, param, holds: Callable[[float], bool]) -> float:
    """The solved ``value``, moved to the private side (``param.safer``) until its printed
    form (repr, as --json shows it) reads back as itself (``param.parse`` rounds an inexact
    decimal to the private side: half the answers read back one ulp off) and that point
    passes ``holds``: a forward question at the printed answer then asks a certified point.
    The PLD bound moves by up to 1e-9 between neighbouring σ (its grid follows σ), and an
    answer that a secant put within that of the target read back above it (σ at q 0.02, 100
    steps, fixed batches: ε 2.0000000008 for a target of 2; at q 0.0045, 23 steps, K = 2,
    the five neighbours that read back as themselves all failed).  Steps of 1e-10·4^k
    (relative, within the solve's accuracy); the answer itself (certified) where none
    serves."""
    sign = 1.0 if param.safer == "larger" else -1.0
    for k in range(8):
        x = readback(value if k == 0 else value * (1.0 + sign * 1e-10 * 4.0 ** k), param)
        if param.parse(repr(x)) != x:
            continue                # (none reads back within readback's reach)
        if x == value or holds(x) is True:
            return x
    return value
