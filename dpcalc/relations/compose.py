"""Composition of (ε, δ)-DP mechanisms, and group privacy.

Relations owned here (every total is an UPPER bound on the true privacy loss):

* basic        k mechanisms (ε, δ)      -> (kε, kδ)                              [DR14, Thm 3.16]
* advanced     k mechanisms (ε, δ), δ'  -> (ε√(2k ln(1/δ')) + kε(e^ε − 1), kδ + δ')
                                                               [DRV10; DR14, Thm 3.20]
* optimal      the exact optimal k-fold composition             [KOV15, Thm 3.3; MV16]
                   δ_tot(E) = 1 − (1−δ)^k
                              + (1−δ)^k Σ_l C(k,l) [p^(k−l)(1−p)^l − e^E p^l(1−p)^(k−l)]_+
               with p = e^ε/(1+e^ε).  It is the hockey-stick divergence of the k-fold product
               of the dominating pair of an (ε, δ)-DP mechanism: P = {⊤: δ, A: (1−δ)p,
               B: (1−δ)(1−p)}, Q = {⊥: δ, A: (1−δ)(1−p), B: (1−δ)p}; outcomes with a ⊤ give
               1 − (1−δ)^k, the (A, B)-words with l B's have privacy loss (k − 2l)ε.
* heterogeneous lists (ε_i, δ_i): basic, advanced [DRV10; KOV15, Thm 3.5 form], Gaussian
               μ-composition [DRS19, Cor 3.3], and a numerical optimal bound [MV16]:
                   δ_tot(E) = 1 − Π(1−δ_i) + Π(1−δ_i) · E_{L ~ P'}[(1 − e^(E − L))_+]
               where under P' each L_i is +ε_i w.p. e^ε_i/(1+e^ε_i) and −ε_i otherwise.
* group privacy and the seed variants (comparison only) live in ``relations.compose_group``.

All δ's travel as natural logs (``log_delta``; ``-inf`` is an exact 0). Float results are
nudged to the safe side; each nudge says why. numpy is imported lazily (only the optimal
and numerical paths need it), scipy is not used.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from functools import lru_cache

from dpcalc.errors import DomainError
from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.numeric.directed import down as _down
from dpcalc.numeric.directed import up as _up
from dpcalc.numeric.logspace import NEG_INF, log1mexp, log_add, log_sum
from dpcalc.solve import bisect_to_adjacent

_INF = math.inf
_TINY_X = 1e-300          # keeps a log1mexp argument strictly negative (only enlarges terms)
_EXACT_STATE_LIMIT = 1 << 20   # multinomial states enumerated exactly for heterogeneous lists
_GRID_POINTS_MAX = 1 << 20     # lattice size cap for the pessimistic grid path
_GRID_WORK_BUDGET = 6e7        # ~ multiply-adds allowed on the grid path


# ----------------------------------------------------------------------------------------------
# validation and directed rounding helpers
# ----------------------------------------------------------------------------------------------

def _check_epsilon(name: str, value: float, allow_inf: bool = False) -> float:
    value = float(value)
    if math.isnan(value) or value < 0 or (value == _INF and not allow_inf):
        what = "a number >= 0" if allow_inf else "a finite number >= 0"
        raise DomainError(f"{name} must be {what}, got {name}={value!r}")
    return value


def _check_log_delta(name: str, value: float) -> float:
    value = float(value)
    if math.isnan(value) or value > 0:
        raise DomainError(f"{name} must be a log-probability (<= 0), got {name}={value!r}")
    return value


def _check_count(name: str, value) -> int:
    if isinstance(value, bool):
        raise DomainError(f"{name} must be an integer >= 1, got {name}={value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise DomainError(f"{name} must be an integer >= 1, got {name}={value!r}")
        value = int(value)
    if not isinstance(value, int) or value < 1:
        raise DomainError(f"{name} must be an integer >= 1, got {name}={value!r}")
    return value


def _pad_up(x: float, abs_err: float) -> float:
    """x + abs_err, then one more ulp up: a certified upper end for a value known to ±abs_err."""
    if math.isinf(x):
        return x
    return _up(x + abs_err)


def _float_up(exact: Fraction) -> float:
    """Smallest double >= the exact rational."""
    try:
        f = float(exact)
    except OverflowError:
        return _INF
    if Fraction(f) < exact:
        f = _up(f)
    return f


def _log_count(k: int) -> float:
    """log(k) rounded up (an input to upper bounds)."""
    return _up(math.log(k)) if k > 1 else 0.0


# ----------------------------------------------------------------------------------------------
# basic and advanced composition
# ----------------------------------------------------------------------------------------------

def basic(epsilon: float, log_delta: float, k: int) -> tuple[float, float]:
    """Upper bound (kε, log kδ) for k adaptively composed (ε, δ)-DP mechanisms.

    Returns ``(total_epsilon, log_total_delta)``. ``log_total_delta`` may be >= 0 (total δ >= 1,
    no guarantee): it is returned as is and the caller rejects it.

    References: DR14, Thm 3.16.
    """
    epsilon = _check_epsilon("epsilon", epsilon)
    log_delta = _check_log_delta("log_delta", log_delta)
    k = _check_count("k", k)
    # [DR14, Thm 3.16] total ε = kε, computed exactly in rationals and rounded up
    total_epsilon = _float_up(Fraction(k) * Fraction(epsilon))
    if log_delta == NEG_INF:
        return total_epsilon, NEG_INF
    # [DR14, Thm 3.16] total δ = kδ; two roundings of size ≤ u·|term| each, padded up
    lk = _log_count(k)
    log_total = _pad_up(lk + log_delta, 2 * _U * (abs(lk) + abs(log_delta)))
    return total_epsilon, log_total


def basic_fits(epsilon, delta, k: int, total_epsilon, total_delta) -> bool:
    """Exactly whether kε <= E and kδ <= D: k (ε, δ)-DP mechanisms are then (E, D)-DP.

    The inputs are compared as exact rationals (floats or Decimals as given), so a budget equal
    to Σδ passes; the optimal composition is never looser than this [KOV15, Thm 3.3].

    References: DR14, Thm 3.16; KOV15, Thm 3.3.
    """
    def fits(x, budget) -> bool:
        if isinstance(budget, float) and math.isinf(budget):
            return budget > 0
        return Fraction(k) * Fraction(x) <= Fraction(budget)  # [DR14, Thm 3.16] (kε, kδ)

    return fits(epsilon, total_epsilon) and fits(delta, total_delta)


def basic_hetero_fits(eps_list, delta_list, total_epsilon, total_delta) -> bool:
    """Exactly whether Σε_i <= E and Σδ_i <= D (exact rationals of the inputs as given).

    References: DR14, Thm 3.16; KOV15, Thm 3.5 (the optimal bound is never looser).
    """
    def fits(xs, budget) -> bool:
        if isinstance(budget, float) and math.isinf(budget):
            return budget > 0
        return sum((Fraction(x) for x in xs), Fraction(0)) <= Fraction(budget)  # [DR14, 3.16]

    return fits(eps_list, total_epsilon) and fits(delta_list, total_delta)


def basic_hetero_epsilon(eps_list) -> float:
    """Σε_i rounded up (the basic total ε) [DR14, Thm 3.16]. References: DR14."""
    return _float_up(sum((Fraction(e) for e in eps_list), Fraction(0)))


def advanced_epsilon(epsilon: float, k: int, log_delta_slack: float) -> float:
    """Upper bound on the total ε of k adaptive (ε, δ)-DP mechanisms with slack δ'.

    ε_total = ε√(2k ln(1/δ')) + kε(e^ε − 1); the matching total δ = kδ + δ' is
    :func:`advanced_log_total_delta`. Returns ``inf`` when δ' = 0.

    References: DRV10, Thm III.3; DR14, Thm 3.20.
    """
    epsilon = _check_epsilon("epsilon", epsilon)
    k = _check_count("k", k)
    log_delta_slack = _check_log_delta("log_delta_slack", log_delta_slack)
    if log_delta_slack == NEG_INF:
        return _INF
    if epsilon == 0.0:
        return 0.0
    if epsilon > 700.0:  # e^ε overflows; the bound is astronomically large anyway
        return _INF
    # [DR14, Thm 3.20] ε√(2k ln(1/δ')) + kε(e^ε − 1), ln(1/δ') = −log δ'
    value = epsilon * math.sqrt(2.0 * k * (-log_delta_slack)) + k * epsilon * math.expm1(epsilon)
    # about six roundings, each ≤ u relative and all terms positive: pad 16u, then one ulp
    return _up(value * (1.0 + 16.0 * _U))


def advanced_log_total_delta(log_delta: float, k: int, log_delta_slack: float) -> float:
    """Upper bound on log(kδ + δ'), the total δ of advanced composition.

    References: DRV10, Thm III.3; DR14, Thm 3.20.
    """
    log_delta = _check_log_delta("log_delta", log_delta)
    k = _check_count("k", k)
    log_delta_slack = _check_log_delta("log_delta_slack", log_delta_slack)
    if log_delta == NEG_INF:
        return log_delta_slack
    lk = _log_count(k)
    a = lk + log_delta
    value = log_add(a, log_delta_slack)  # [DR14, Thm 3.20] total δ = kδ + δ'
    return _pad_up(value, 4 * _U * (abs(a) + abs(log_delta_slack) + abs(value) + 1.0))


def _log_slack_down(log_total_delta: float, log_used: float) -> float:
    """A lower bound on log(total − used) (−inf when it cannot be certified positive)."""
    if log_used == NEG_INF:
        return log_total_delta
    d = log_used - log_total_delta
    err = 2 * _U * (abs(log_used) + abs(log_total_delta))
    if d + err >= 0.0:
        return NEG_INF
    # log(T − U) = log T + log(1 − e^(d)); pushing d up by its error makes the result smaller
    value = log_total_delta + log1mexp(d + err)
    return _down(value - 8 * _U * (abs(value) + abs(log_total_delta) + 1.0))


def advanced_best(epsilon: float, log_delta: float, k: int,
                  log_total_delta: float) -> tuple[float, float]:
    """Smallest advanced-composition total ε (upper bound) meeting a total δ budget.

    The total ε decreases in δ', so the best slack is the largest allowed one,
    δ' = total δ − kδ (computed as a certified lower bound, since kδ + δ' must fit the budget).
    Returns ``(total_epsilon, log_delta_slack)``; ``(inf, -inf)`` when total δ ≤ kδ.

    References: DRV10, Thm III.3; DR14, Thm 3.20.
    """
    epsilon = _check_epsilon("epsilon", epsilon)
    log_delta = _check_log_delta("log_delta", log_delta)
    k = _check_count("k", k)
    log_total_delta = float(log_total_delta)
    if math.isnan(log_total_delta):
        raise DomainError("log_total_delta must not be NaN")
    log_total_delta = min(log_total_delta, 0.0)  # a δ budget above 1 is no tighter than 1
    if log_delta == NEG_INF:
        used = NEG_INF
    else:
        lk = _log_count(k)
        used = _pad_up(lk + log_delta, 2 * _U * (abs(lk) + abs(log_delta)))  # kδ rounded up
    log_slack = _log_slack_down(log_total_delta, used)
    if log_slack == NEG_INF:
        return _INF, NEG_INF
    return advanced_epsilon(epsilon, k, log_slack), log_slack


# ----------------------------------------------------------------------------------------------
# the dominating privacy-loss distribution (numpy, lazily)
# ----------------------------------------------------------------------------------------------

# stirlerr(n) = log n! − ((n + 1/2) log n − n + log √(2π)) for n = 0..15 (n = 0 unused)
_STIRLERR_SMALL = [0.0] + [math.lgamma(n + 1.0) - (n + 0.5) * math.log(n) + n
                           - 0.5 * math.log(2 * math.pi) for n in range(1, 16)]


def _stirlerr(n):
    """Stirling-formula error of log n! for a float array n >= 1 (Loader 2000, as R's dbinom).

    n <= 15 from math.lgamma (absolute error ~1e-14); larger n the series
    1/(12n) − 1/(360n³) + 1/(1260n⁵) − 1/(1680n⁷) + 1/(1188n⁹), truncation error < 1e-16 there.
    """
    import numpy as np

    out = np.empty_like(n)
    small = n <= 15
    if small.any():
        out[small] = np.take(np.asarray(_STIRLERR_SMALL), n[small].astype(np.int64))
    big = ~small
    nb = n[big]
    n2 = 1.0 / (nb * nb)
    out[big] = (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - n2 / 1188) * n2) * n2) * n2) / nb
    return out


def _bd0(x, m, log_m: float):
    """x log(x/m) + m − x >= 0 for float arrays x, m > 0, without cancellation (Loader 2000).

    ``log_m`` is log m, used where m underflowed to 0 (kπ with π = e^(−2000)): there
    x log(x/m) = x (log x − log m) is finite and huge, and dropping the m < 1e-308 it adds is
    far inside the error bound of the caller.
    """
    import numpy as np

    d = x - m
    t = x + m
    out = np.empty_like(x)
    ser = np.abs(d) < 0.1 * t
    if ser.any():
        # |v| < 0.1: s = d·v + 2x Σ_{j>=1} v^(2j+1)/(2j+1); 15 terms leave < 1e-30 relative
        v = d[ser] / t[ser]
        s = d[ser] * v
        ej = 2.0 * x[ser] * v
        v2 = v * v
        # stop once the largest |v|^(2j+1) is below 1e-31 (never more than the 15 terms above):
        # the dropped terms are then < 1e-30 relative, as before (large k: |v| ~ 1e-4, 4 terms)
        vmax = float(np.abs(v).max())
        terms = 15 if vmax == 0.0 else min(15, max(1, math.ceil((-31.0 / math.log10(vmax)
                                                                   - 1.0) / 2.0)))
        for j in range(1, terms + 1):
            ej = ej * v2
            s = s + ej / (2 * j + 1)
        out[ser] = s
    far = ~ser
    xf, mf = x[far], m[far]
    if mf.size and not mf[0] > 0.0:  # m underflowed (m is one value repeated: k·π or k·q)
        out[far] = xf * (np.log(xf) - log_m) - xf
    else:
        out[far] = xf * np.log(xf / mf) + mf - xf  # |x − m| >= 0.1(x + m): no cancellation
    return out


def _log_binom_pmf(k: int, ell, log_pi: float, log_q: float):
    """(log P[Binomial(k, π) = l], error bound) for a float array ell of integers in [0, k].

    Loader's saddle-point form log C(k,l) π^l q^(k−l) = stirlerr(k) − stirlerr(l) −
    stirlerr(k−l) − bd0(l, kπ) − bd0(k−l, kq) − ½ log(2π l (k−l)/k): every piece is of the size
    of the result (no log k! − log l! − log (k−l)! cancellation), so the absolute error is a few
    ulps of |result| + |l − kπ| (the latter from rounding π), + log k. The returned bound is
    64u times that, generous.
    """
    import numpy as np

    pi = math.exp(log_pi)
    q = math.exp(log_q)
    kf = float(k)
    out = np.empty_like(ell)
    zero = ell == 0
    full = ell == kf
    out[zero] = kf * log_q     # q^k
    out[full] = kf * log_pi    # π^k
    mid = ~(zero | full)
    if mid.any():
        x = ell[mid]
        y = kf - x
        lc = (_stirlerr(np.array([kf]))[0] - _stirlerr(x) - _stirlerr(y)
              - _bd0(x, np.full_like(x, kf * pi), math.log(kf) + log_pi)
              - _bd0(y, np.full_like(y, kf * q), math.log(kf) + log_q))
        out[mid] = lc - 0.5 * (math.log(2 * math.pi) + np.log(x) + np.log1p(-x / kf))
    err = 64 * _U * (np.abs(out) + np.abs(ell - kf * pi) + math.log(kf + 1.0) + 16.0)
    return out, err


def _log_p(epsilon: float) -> tuple[float, float]:
    """(log p, log(1 − p)) with p = e^ε/(1 + e^ε), each to ~2u relative."""
    lp = -math.log1p(math.exp(-epsilon))
    return lp, lp - epsilon


def _two_product(a, b: float):
    """Error-free product (Dekker): a·b = hi + lo exactly (no over/underflow for our ranges)."""
    split = 134217729.0  # 2^27 + 1
    hi = a * b
    ca = split * a
    a_hi = ca - (ca - a)
    a_lo = a - a_hi
    cb = split * b
    b_hi = cb - (cb - b)
    b_lo = b - b_hi
    lo = ((a_hi * b_hi - hi) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return hi, lo


def _x_from_residual(e: float, hi, lo):
    """A lower bound on x = E − (hi + lo) (clipped below 0), from the exact residual lo.

    d = E − hi and d − lo cost one rounding each, so |x̂ − x| ≤ 4u(|x̂| + |lo|): accurate even
    at a tie x ≈ 0. A smaller x only enlarges 1 − e^x, so this is safe.
    """
    import numpy as np

    x = (e - hi) - lo
    x = x - 4 * _U * (np.abs(x) + np.abs(lo)) - _TINY_X
    return np.minimum(x, -_TINY_X)


def _log_sum_hockey(logw, err, x) -> float:
    """Upper bound on log Σ e^(logw_i) (1 − e^(x_i)) for x_i < 0, logw_i known to ±err_i."""
    import numpy as np

    near = x > -math.log(2.0)  # log(1 − e^x): log(−expm1 x) near 0, log1p(−e^x) below
    lme = np.empty_like(x)
    lme[near] = np.log(-np.expm1(x[near]))
    lme[~near] = np.log1p(-np.exp(x[~near]))
    terms = logw + lme
    m = float(terms.max())
    r = np.exp(terms - m)
    s = float(r.sum())
    value = m + math.log(s)
    # each term is known to ±(err_i + 64u(|log1mexp_i| + |term_i| + 1)) in log, i.e. to a
    # relative e^(that) − 1 ≤ 2·that; the sum of positives then to the r-weighted mean of those;
    # exp and the (pairwise) sum add ≤ (n + 8)u relative
    tot = err + 64 * _U * (np.abs(lme) + np.abs(terms) + 1.0)
    pad = 2.0 * float((r * tot).sum()) / s + 4 * _U * (len(x) + 8)
    return _pad_up(value, pad)


def _far_log_s(lp: float, l1p: float, k: int, e: float, epsilon: float) -> float:
    """The sum of ``_homogeneous_log_s`` when 1 − p underflows (ε > ~690), bounded above.

    The word without B's (mass p^k, loss kε > E) contributes p^k(1 − e^(E − kε)); every other
    word together has mass 1 − p^k ≤ k(1 − p), and its factor (1 − e^(E − L))_+ is <= 1
    [KOV15, Thm 3.3].
    """
    hi, lo = _two_product(float(k), epsilon)  # kε = hi + lo exactly
    # E − kε rounded down: a smaller x only enlarges 1 − e^x (the safe side)
    x = (e - hi) - lo - 4 * _U * (abs(e) + abs(hi)) - _TINY_X
    first = k * lp + log1mexp(min(x, -_TINY_X))
    rest = math.log(k) + l1p
    value = log_add(first, rest)
    return min(_pad_up(value, 8 * _U * (abs(first) + abs(rest) + 1.0)), 0.0)


def _homogeneous_log_s(epsilon: float, k: int, e: float) -> float:
    """Upper bound on log Σ_l C(k,l) p^(k−l) (1−p)^l (1 − e^(E − (k−2l)ε))_+  [KOV15, Thm 3.3].

    Only a window of l around the largest included mass is summed (width ~ 30 binomial standard
    deviations, widened until its edges are e^−100 below the top); by unimodality of the
    binomial pmf every l outside has mass ≤ the edge mass, so the rest is bounded by
    (count) × (edge mass), since 1 − e^(E−L) ≤ 1. Cost O(√k) per call, no tables.
    """
    import numpy as np

    lp, l1p = _log_p(epsilon)            # log p (an A), log(1 − p) (a B)
    # words with l B's have loss (k − 2l)ε > E iff l < (k − E/ε)/2; +3 absorbs the roundings
    # (extra words only add terms clipped to ~0, which is safe)
    bound = (k - e / epsilon) / 2.0
    if bound < -3.0:
        return NEG_INF
    n = min((k + 1) // 2, int(math.floor(bound)) + 3)  # l in [0, n) (and l < k/2: loss > 0)
    if n <= 0:
        return NEG_INF
    pi = math.exp(l1p)
    if pi < 1e-300:
        return _far_log_s(lp, l1p, k, e, epsilon)
    mode = min(k, int(math.floor((k + 1) * pi)))
    top = min(n - 1, mode)
    half = int(15.0 * math.sqrt(k * pi * (1.0 - pi)) + 64.0)  # ~112 nats at 15 sd
    while True:
        a = max(0, top - half)
        b = n if top < mode else min(n, top + half + 1)
        lo_i = a - 1 if a > 0 else a
        hi_i = b + 1 if b < n else b
        ell = np.arange(lo_i, hi_i, dtype=np.float64)
        logw, err = _log_binom_pmf(k, ell, l1p, lp)
        top_val = float(logw[top - lo_i])
        edges = []
        if a > 0:
            edges.append(float(logw[0] + err[0]))
        if b < n:
            edges.append(float(logw[-1] + err[-1]))
        if all(v < top_val - 100.0 for v in edges) or half >= k:
            break
        half *= 4
    log_dropped = NEG_INF
    count = a + (n - b)
    if count:
        # unimodal pmf: [0, a) rises to a−1 and [b, n) falls from b, so the edges bound them
        log_dropped = _pad_up(math.log(count) + max(edges), 4 * _U * (abs(max(edges)) + 40.0))
    core = slice(a - lo_i, a - lo_i + (b - a))
    ell = ell[core]
    hi, lo = _two_product(k - 2.0 * ell, epsilon)  # the loss (k − 2l)ε = hi + lo exactly
    value = _log_sum_hockey(logw[core], err[core], _x_from_residual(e, hi, lo))
    return log_add(value, log_dropped)


class _Pld:
    """A discrete privacy-loss distribution (losses > 0, descending) for the heterogeneous paths.

    ``logw``/``err``: log-masses and their absolute error bounds. ``loss`` with either
    ``loss_lo`` (exact residual: true loss = loss + loss_lo) or ``loss_err`` (absolute error
    bound). ``log_extra``: log of mass moved to +∞ (pessimistic). ``rel_pad``: extra relative
    error of all masses (grid path).
    """

    __slots__ = ("logw", "err", "loss", "loss_lo", "loss_err", "log_extra", "rel_pad",
                 "max_loss", "neg_loss")

    def __init__(self, logw, err, loss, loss_err=0.0, log_extra=NEG_INF, rel_pad=0.0,
                 loss_lo=None):
        self.logw = logw
        self.err = err + 2.0 * rel_pad
        self.loss = loss
        self.loss_lo = loss_lo
        self.neg_loss = -loss  # ascending, for searchsorted
        self.loss_err = loss_err
        self.log_extra = log_extra
        self.rel_pad = rel_pad
        self.max_loss = float(loss[0]) if len(loss) else 0.0

    def log_hockey(self, total_epsilon: float) -> float:
        """Upper bound on log Σ w (1 − e^(E − L))_+ (+ the mass at +∞)."""
        import numpy as np

        e = total_epsilon
        # every loss that may exceed E (with a generous margin for the roundings below)
        sel = self.loss_err + 4 * _U * (abs(self.max_loss) + abs(e)) + _TINY_X
        n = int(np.searchsorted(self.neg_loss, -(e - sel), side="left"))  # loss > E − sel
        if n == 0:
            return self.log_extra
        sl = slice(0, n)
        log_dropped = NEG_INF
        if n > 4096:
            # masses < e^−120 × the largest are bounded, not summed: (count) × (their largest
            # mass, padded by its error), since 1 − e^(E−L) ≤ 1
            lw = self.logw[:n]
            cut = float(lw.max()) - 120.0
            keep = lw >= cut
            count = n - int(np.count_nonzero(keep))
            if count:
                worst = float((lw + self.err[:n])[~keep].max())
                log_dropped = _pad_up(math.log(count) + worst, 4 * _U * (abs(worst) + 40.0))
                sl = np.nonzero(keep)[0]
        if self.loss_lo is not None:
            x = _x_from_residual(e, self.loss[sl], self.loss_lo[sl])
        else:
            # each loss known to ±loss_err, plus one rounding of E − L: take every loss larger
            # by that much (a larger loss only enlarges (1 − e^(E−L))_+, so this is safe)
            x = np.minimum(e - self.loss[sl] - sel, -_TINY_X)
        value = _log_sum_hockey(self.logw[sl], self.err[sl], x)
        return log_add(log_add(value, log_dropped), self.log_extra)


def _log_a_part(log_deltas: list[float]) -> tuple[float, float]:
    """(upper bound on log(1 − Π(1−δ_i)), log Π(1−δ_i)) for the δ part of the dominating pair."""
    finite = [ld for ld in log_deltas if ld != NEG_INF]
    if not finite:
        return NEG_INF, 0.0
    if max(finite) == 0.0:  # some δ_i = 1: no guarantee at all
        return 0.0, NEG_INF
    terms = [log1mexp(ld) for ld in finite]   # log(1 − δ_i), each to ~3u relative
    l1 = math.fsum(terms)
    if l1 < -1e-200:
        # log(1 − e^(L1)), well conditioned; |error| ≤ 8u(1 + |value|) covers L1's 3u relative
        value = log1mexp(l1)
        value = _pad_up(value, 8 * _U * (1.0 + abs(value)))
    else:
        # Π(1−δ_i) indistinguishable from 1: use the union bound 1 − Π(1−δ_i) ≤ Σ δ_i
        value = log_sum(finite)
        value = _pad_up(value, 8 * _U * (1.0 + abs(value)) + 4 * _U * len(finite))
    return value, min(l1 * (1.0 - 8 * _U), 0.0)  # log Π(1−δ_i) rounded up (toward 0)


def _combine(log_a: float, log_1ma: float, log_s: float) -> float:
    """log(A + (1−A)·S), each input already an upper bound; result rounded up."""
    if log_s == NEG_INF or log_1ma == NEG_INF:
        value = log_a
    else:
        value = log_add(log_a, log_1ma + log_s)
    if value == NEG_INF:
        return NEG_INF
    return _pad_up(value, 4 * _U * (abs(value) + abs(log_a if log_a > NEG_INF else 0.0) + 1.0))


# ----------------------------------------------------------------------------------------------
# optimal homogeneous composition
# ----------------------------------------------------------------------------------------------

def optimal_log_delta(epsilon: float, log_delta: float, k: int, total_epsilon: float) -> float:
    """Upper bound on log δ_tot(E) of the exact optimal k-fold composition of (ε, δ)-DP.

    δ_tot(E) = 1 − (1−δ)^k + (1−δ)^k Σ_l C(k,l) [p^(k−l)(1−p)^l − e^E p^l(1−p)^(k−l)]_+,
    p = e^ε/(1+e^ε). The bracket equals C(k,l)p^(k−l)(1−p)^l (1 − e^(E − (k−2l)ε)), so every
    summand is a positive product: the sum is evaluated in log space with no cancellation, and
    the result is padded by a bound on its rounding error (~1e-11 relative at k = 1e5).
    Cost O(√k) per call (a window of the binomial around its top; the rest is bounded).
    Returns −inf only when δ_tot(E) is exactly 0 (δ = 0 and E >= kε).

    References: KOV15, Thm 3.3; MV16, Thm 1.5.
    """
    epsilon = _check_epsilon("epsilon", epsilon, allow_inf=True)
    log_delta = _check_log_delta("log_delta", log_delta)
    k = _check_count("k", k)
    total_epsilon = _check_epsilon("total_epsilon", total_epsilon, allow_inf=True)
    if epsilon == _INF:
        return 0.0  # the word without B's has infinite loss and positive mass: δ_tot = 1
    log_a, log_1ma = _log_a_part_homogeneous(log_delta, k)
    if total_epsilon == _INF:
        return log_a
    if epsilon == 0.0 or Fraction(total_epsilon) >= k * Fraction(epsilon):
        # every word has loss (k − 2l)ε ≤ kε ≤ E (checked exactly): the sum vanishes exactly
        return log_a
    log_s = _homogeneous_log_s_cached(epsilon, k, total_epsilon)
    return _combine(log_a, log_1ma, log_s)


@lru_cache(maxsize=64)
def _homogeneous_log_s_cached(epsilon: float, k: int, e: float) -> float:
    """``_homogeneous_log_s``, memoised: a solver re-verifying a point costs nothing."""
    return _homogeneous_log_s(epsilon, k, e)


def _log_a_part_homogeneous(log_delta: float, k: int) -> tuple[float, float]:
    if log_delta == NEG_INF:
        return NEG_INF, 0.0
    if log_delta == 0.0:
        return 0.0, NEG_INF
    l1 = k * log1mexp(log_delta)  # [KOV15, Thm 3.3] log (1−δ)^k
    # 1 − (1−δ)^k ≤ kδ: the union bound, rounded exactly as basic() rounds kδ, so the optimal
    # floor never exceeds the basic total δ
    lk = _log_count(k)
    union = _pad_up(lk + log_delta, 2 * _U * (abs(lk) + abs(log_delta)))
    if l1 < -1e-200:
        value = log1mexp(l1)       # log(1 − (1−δ)^k)
        value = min(_pad_up(value, 8 * _U * (1.0 + abs(value))), union)
    else:                          # (1−δ)^k rounds to 1
        value = union
    return value, min(l1 * (1.0 - 8 * _U), 0.0)


def _smallest_passing_epsilon(log_delta_at, log_total_delta: float, e_max: float) -> float:
    """Smallest E >= 0 (to adjacent doubles, passing side) with log_delta_at(E) <= target.

    log_delta_at is a certified, (essentially) monotone decreasing upper bound. Bisection keeps
    ``hi`` passing at all times and returns it [OpenDP-style search on a predicate].
    """
    if log_delta_at(0.0) <= log_total_delta:
        return 0.0
    hi = e_max
    if log_delta_at(hi) > log_total_delta:
        return _INF
    # to adjacent doubles (or 200 halvings), keeping the passing end
    return bisect_to_adjacent(lambda e: log_delta_at(e) <= log_total_delta, 0.0, hi)


def optimal_epsilon(epsilon: float, log_delta: float, k: int, log_total_delta: float) -> float:
    """Smallest total E whose optimal-composition δ_tot(E) certifiably fits total δ (upper bound).

    Bisection on the certified :func:`optimal_log_delta`, returning the passing side. ``inf``
    when infeasible, i.e. total δ < 1 − (1−δ)^k (the floor reached at E = kε).

    References: KOV15, Thm 3.3.
    """
    epsilon = _check_epsilon("epsilon", epsilon)
    log_delta = _check_log_delta("log_delta", log_delta)
    k = _check_count("k", k)
    log_total_delta = float(log_total_delta)
    if math.isnan(log_total_delta):
        raise DomainError("log_total_delta must not be NaN")

    def at(e: float) -> float:
        return optimal_log_delta(epsilon, log_delta, k, e)

    # hi = kε rounded up: there δ_tot is exactly the floor 1 − (1−δ)^k (never above basic)
    return _smallest_passing_epsilon(at, log_total_delta, _float_up(k * Fraction(epsilon)))


# ----------------------------------------------------------------------------------------------
# heterogeneous lists
# ----------------------------------------------------------------------------------------------

def _check_lists(eps_list, log_delta_list) -> tuple[list[float], list[float]]:
    eps = [_check_epsilon("epsilon", e) for e in eps_list]
    lds = [_check_log_delta("log_delta", d) for d in log_delta_list]
    if not eps:
        raise DomainError("the list of mechanisms must not be empty")
    if len(eps) != len(lds):
        raise DomainError(f"eps_list and log_delta_list differ in length: {len(eps)} != {len(lds)}")
    return eps, lds


def basic_hetero(eps_list, log_delta_list) -> tuple[float, float]:
    """Upper bound (Σ ε_i, log Σ δ_i) for adaptively composed (ε_i, δ_i)-DP mechanisms.

    References: DR14, Thm 3.16.
    """
    eps, lds = _check_lists(eps_list, log_delta_list)
    total = _float_up(sum((Fraction(e) for e in eps), Fraction(0)))  # exact sum, rounded up
    value = log_sum(lds)  # [DR14, Thm 3.16] Σ δ_i
    if value == NEG_INF:
        return total, NEG_INF
    pad = 4 * _U * (abs(value) + max(abs(d) for d in lds if d != NEG_INF) + len(lds) + 1.0)
    return total, _pad_up(value, pad)


def advanced_hetero(eps_list, log_delta_list, log_delta_slack: float) -> tuple[float, float]:
    """Upper bound (√(2 ln(1/δ') Σε_i²) + Σ ε_i(e^ε_i − 1), log(Σδ_i + δ')), adaptive.

    The heterogeneous advanced composition theorem (weaker than KOV15, Thm 3.5, which has
    ε_i tanh(ε_i/2) and 1 − Π(1−δ_i)(1−δ'); both forms are valid, this is the one in the
    contract).

    References: DRV10, Thm III.3; KOV15, Thm 3.5.
    """
    eps, lds = _check_lists(eps_list, log_delta_list)
    log_delta_slack = _check_log_delta("log_delta_slack", log_delta_slack)
    log_total = log_sum(lds + [log_delta_slack])
    if log_total != NEG_INF:
        log_total = _pad_up(log_total, 4 * _U * (abs(log_total) + len(lds) + 1.0 + max(
            abs(d) for d in lds + [log_delta_slack] if d != NEG_INF)))
    if log_delta_slack == NEG_INF:
        return _INF, log_total
    if max(eps) > 700.0:
        return _INF, log_total
    sq = math.fsum(e * e for e in eps)
    lin = math.fsum(e * math.expm1(e) for e in eps)
    # [KOV15, Thm 3.5 form] √(2 ln(1/δ') Σ ε_i²) + Σ ε_i (e^ε_i − 1)
    value = math.sqrt(2.0 * (-log_delta_slack) * sq) + lin
    return _up(value * (1.0 + 16.0 * _U)), log_total


def gaussian_hetero_mu(noise_multipliers) -> float:
    """Upper bound on μ of the composition of Gaussians: μ = √(Σ 1/σ_i²) (σ_i = noise/Δ_i).

    The k-fold composition of Gaussian mechanisms with noise multipliers σ_i is exactly μ-GDP
    with μ² = Σ (Δ_i/σ_i)²; the caller evaluates the exact Gaussian profile at μ (larger μ is
    less private, so rounding up is safe).

    References: DRS19, Cor 3.3.
    """
    sig = [float(s) for s in noise_multipliers]
    if not sig:
        raise DomainError("noise_multipliers must not be empty")
    for s in sig:
        if math.isnan(s) or s <= 0 or s == _INF:
            raise DomainError(f"noise multipliers must be finite and > 0, got sigma={s!r}")
    # [DRS19, Cor 3.3] μ² = Σ 1/σ_i²; fsum is exact-rounded, the 1/σ² carry ≤ 2u each
    mu = math.sqrt(math.fsum(1.0 / (s * s) for s in sig))
    return _up(mu * (1.0 + 8.0 * _U))


def _groups(eps: list[float]) -> tuple[tuple[float, int], ...]:
    return tuple(sorted(Counter(eps).items()))


@lru_cache(maxsize=2)
def _exact_groups_pld(groups: tuple[tuple[float, int], ...]) -> _Pld:
    """Exact product PLD by multinomial counting over groups of identical ε (loss > 0 kept)."""
    import numpy as np

    logw = np.zeros(1)
    err = np.zeros(1)
    loss = np.zeros(1)
    scale = 0.0
    for eps_j, n_j in groups:
        lp, l1p = _log_p(eps_j)
        ell = np.arange(n_j + 1, dtype=np.float64)
        lw, le = _log_binom_pmf(n_j, ell, l1p, lp)  # [MV16] l_j of the n_j mechanisms give −ε_j
        ls = (n_j - 2 * ell) * eps_j
        logw = np.add.outer(logw, lw).ravel()
        err = np.add.outer(err, le).ravel()
        loss = np.add.outer(loss, ls).ravel()
        scale += n_j * eps_j
    # each loss: m products and m additions, each rounding ≤ u·scale
    loss_err = 2 * (len(groups) + 2) * _U * scale
    keep = loss > -loss_err
    logw, err, loss = logw[keep], err[keep], loss[keep]
    err = err + 4 * _U * (np.abs(logw) + 1.0)  # the additions of the group log-masses
    order = np.argsort(-loss, kind="stable")
    return _Pld(logw[order], err[order], loss[order], loss_err=loss_err)


@lru_cache(maxsize=2)
def _grid_pld(groups: tuple[tuple[float, int], ...]) -> _Pld:
    """Pessimistic lattice PLD: each ε_i is rounded UP to a multiple of h = 2^−s.

    An (ε, δ)-DP mechanism is also (ε', δ)-DP for ε' >= ε, and the optimal composition of the
    rounded list [MV16] then upper-bounds the true one. On the lattice every loss ±c·h is exact,
    and the product distribution is built by direct (not FFT) convolution of nonnegative
    arrays: each entry carries a relative error ≤ (n+3)u + 2·(kernel log error) per group,
    accumulated in ``rel_pad``. Masses that underflow (or are flushed below 2^−900) are bounded
    and moved to +∞.
    """
    import numpy as np

    k = sum(n for _, n in groups)
    total = sum(e * n for e, n in groups)
    points_max = int(min(_GRID_POINTS_MAX, max(1024, _GRID_WORK_BUDGET / (k + len(groups)))))
    # finest h = 2^−s with 2 Σ n_j ceil(ε_j/h) + 1 <= points_max
    s = int(math.floor(math.log2(max(points_max / (2.0 * total + 1e-300), 1e-300)))) + 1
    while True:
        cs = [(math.ceil(math.ldexp(e, s)), n) for e, n in groups]  # ε·2^s is exact
        width = 2 * sum(c * n for c, n in cs) + 1
        if width <= points_max:
            break
        s -= 1
    h = math.ldexp(1.0, -s)
    merged: Counter = Counter()
    for c, n in cs:
        merged[c] += n
    w = np.ones(1)
    lo = 0           # loss index (in units of h) of w[0]
    rel = 0.0
    lost = 0.0       # absolute bound on mass lost to underflow / flushing
    flush = math.ldexp(1.0, -900)
    for c, n in sorted(merged.items()):
        eps_c = c * h  # exact
        lp, l1p = _log_p(eps_c)
        lw, le = _log_binom_pmf(n, np.arange(n + 1, dtype=np.float64), l1p, lp)
        kv = np.exp(lw)
        small = kv < flush * 0.5
        # a flushed kernel entry is < 2^−900 even allowing for its error; the mass of w is ≤ 2
        lost += float(np.count_nonzero(small)) * flush * 2.0
        kv[small] = 0.0
        nz = np.nonzero(kv)[0]
        new = np.zeros(len(w) + 2 * n * c)
        for j in nz:
            off = (2 * n - 2 * int(j)) * c  # loss (n − 2l)c, re-based at lo − n c
            new[off:off + len(w)] += kv[j] * w
        lost += len(nz) * len(w) * math.ldexp(1.0, -1074)  # products rounded in the subnormals
        small = (new < flush) & (new > 0)
        lost += float(np.count_nonzero(small)) * flush
        new[small] = 0.0
        rel += (len(nz) + 3) * _U + 2.0 * float(le[nz].max())
        w = new
        lo -= n * c
    idx = np.nonzero(w > 0)[0][::-1]  # descending loss
    loss_units = lo + idx
    keep = loss_units > 0
    idx, loss_units = idx[keep], loss_units[keep]
    loss = loss_units.astype(np.float64) * h  # exact: integers times a power of two
    logw = np.log(w[idx])
    err = 4 * _U * (np.abs(logw) + 1.0)
    log_extra = math.log(lost) if lost > 0 else NEG_INF
    return _Pld(logw, err, loss, loss_err=0.0, log_extra=log_extra, rel_pad=rel,
                loss_lo=np.zeros_like(loss))


class _HomogeneousPld:
    """The single-group case, evaluated by the windowed :func:`_homogeneous_log_s`."""

    def __init__(self, epsilon: float, k: int):
        self.epsilon = epsilon
        self.k = k

    def log_hockey(self, total_epsilon: float) -> float:
        return _homogeneous_log_s(self.epsilon, self.k, total_epsilon)


def _hetero_pld(eps: list[float], force_grid: bool = False):
    groups = tuple((e, n) for e, n in _groups(eps) if e > 0.0)
    if not groups:
        return None
    if len(groups) == 1 and not force_grid:
        e, n = groups[0]
        return _HomogeneousPld(e, n)
    states = 1
    for _, n in groups:
        states *= n + 1
        if states > _EXACT_STATE_LIMIT:
            break
    if states <= _EXACT_STATE_LIMIT and not force_grid:
        return _exact_groups_pld(groups)
    return _grid_pld(groups)


def numerical_hetero_log_delta(eps_list, log_delta_list, total_epsilon: float,
                               _force_grid: bool = False) -> float:
    """Upper bound on log δ_tot(E) of the optimal composition of (ε_i, δ_i)-DP mechanisms.

    Composes the dominating pairs of KOV15 (mass δ_i at +∞, and ±ε_i with weights
    e^ε_i/(1+e^ε_i), 1/(1+e^ε_i), scaled by 1−δ_i); by MV16 this product gives the exact optimal
    heterogeneous composition, whose exact computation is #P-hard. Which bound is computed:

    * all ε_i equal: exactly the KOV15, Thm 3.3 value (same code as :func:`optimal_log_delta`);
    * few distinct ε_i (Π (n_j + 1) <= 2^20 multinomial states): the exact MV16 value, by
      counting over groups of identical ε_i (up to a certified rounding pad);
    * otherwise: a pessimistic grid bound. Each ε_i is rounded UP to a multiple of h = 2^−s
      (s as fine as a ~1e6-point lattice allows) and the rounded list is composed exactly on
      the lattice. This is the exact optimal composition of a list of (ε_i', δ_i) with
      ε_i' >= ε_i, hence an upper bound; its slack grows with h·Σ(∂E/∂ε_i).

    References: KOV15, Thm 3.3; MV16, Thm 1.5.
    """
    eps, lds = _check_lists(eps_list, log_delta_list)
    total_epsilon = _check_epsilon("total_epsilon", total_epsilon, allow_inf=True)
    log_a, log_1ma = _log_a_part(lds)
    exact_sum = sum((Fraction(e) for e in eps), Fraction(0))
    if total_epsilon == _INF or Fraction(total_epsilon) >= exact_sum:
        return log_a  # E >= Σ ε_i (exactly): every loss ≤ E, the sum vanishes [MV16]
    pld = _hetero_pld(eps, _force_grid)
    if pld is None:
        return log_a
    return _combine(log_a, log_1ma, pld.log_hockey(total_epsilon))


def numerical_hetero_epsilon(eps_list, log_delta_list, log_total_delta: float,
                             _force_grid: bool = False) -> float:
    """Smallest total E (upper bound) with the heterogeneous optimal-composition bound ≤ total δ.

    Bisection on :func:`numerical_hetero_log_delta` returning the passing side; ``inf`` when
    total δ < 1 − Π(1−δ_i) (or the grid bound cannot certify it).

    References: KOV15, Thm 3.3; MV16, Thm 1.5.
    """
    eps, lds = _check_lists(eps_list, log_delta_list)
    log_total_delta = float(log_total_delta)
    if math.isnan(log_total_delta):
        raise DomainError("log_total_delta must not be NaN")
    log_a, log_1ma = _log_a_part(lds)
    exact_sum = sum((Fraction(e) for e in eps), Fraction(0))
    pld = _hetero_pld(eps, _force_grid)

    def at(e: float) -> float:
        if pld is None or Fraction(e) >= exact_sum:
            return log_a
        return _combine(log_a, log_1ma, pld.log_hockey(e))

    return _smallest_passing_epsilon(at, log_total_delta, _float_up(exact_sum))
