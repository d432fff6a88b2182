"""Privacy amplification by subsampling: a (ε, δ)-DP mechanism run on a random sample.

Sampling schemes: ``poisson`` (each record independently with probability q) and
``without-replacement`` (a uniform sample of m records out of n, q = m/n). The (ε, δ) given is
the guarantee of the mechanism run on the sample, with respect to the neighbouring relation
that is natural for its inputs: add-remove for Poisson samples (their size varies), replace-one
for fixed-size samples. ``relation`` selects the neighbouring relation of the AMPLIFIED
guarantee on the full dataset. Every result is an upper bound (nudged up).

==================  ============  ==========================================================
sampling            relation      amplified (ε', δ')
==================  ============  ==========================================================
poisson             add-remove    log(1 + q(e^ε − 1)),  qδ                [BBG18, Thm 8]
without-replacement replace-one   log(1 + q(e^ε − 1)),  qδ                [BBG18, Thm 9]
without-replacement add-remove    log(1 + q(e^ε − 1)),  qδ                derived below (a)
poisson             replace-one   log((1 + q(e^ε − 1)) / (1 − q(1 − e^−ε))),
                                  qδ (1 + e^−ε) / (1 − q(1 − e^−ε))       derived below (b)
==================  ============  ==========================================================

The first two are the tight theorems of BBG18 (Table 1; Claim 19 of Che19 is the
without-replacement one). BBG18 pairs Poisson only with add-remove and sampling without
replacement only with substitution; the two other combinations are derived here with the same
tools (a coupling of the two samples and convexity of the hockey-stick divergence
H_a(P‖Q) = sup_T P(T) − a·Q(T), BBG18 Sec. 3):

(a) without-replacement, add-remove. Let x' = x ∪ {z}, |x| = n, and sample m records. Under x'
    the sample contains z with probability γ = m/(n+1); otherwise it is a uniform m-subset of
    x, so P_x' = (1−γ) Q_x + γ B, where B (z in the sample) is a mixture of replace-one
    neighbours of Q_x's samples (swap z for a uniform member). Hence B and Q_x are (ε, δ)-close
    both ways, and P(T) − e^ε' Q(T) = γ(B(T) − e^ε Q(T)) ≤ γδ for e^ε' = 1 + γ(e^ε − 1); the
    reverse direction gives the smaller −log(1 − γ(1 − e^−ε)) with δ'' ≤ γδ. γ ≤ q = m/n for
    either neighbour of a size-n dataset, and the bound grows with γ, so q is safe.
(b) poisson, replace-one (base mechanism add-remove-DP). With x = C ∪ {z}, x' = C ∪ {z'} and
    the same coins for C: P = (1−q)A + qB, Q = (1−q)A + qB' (A = M(S), B = M(S ∪ {z}),
    B' = M(S ∪ {z'}), per sample S of C; mixtures over S preserve the bound). With
    B(T) ≤ e^ε A(T) + δ and B'(T) ≥ e^−ε (A(T) − δ):
    P(T) ≤ (1 − q + q e^ε) A(T) + qδ and e^ε' Q(T) ≥ e^ε' (1 − q + q e^−ε) A(T) − e^ε' q e^−ε δ,
    so e^ε' = (1 − q + q e^ε)/(1 − q + q e^−ε) gives δ' = qδ(1 + e^(ε'−ε))
    = qδ(1 + e^−ε)/(1 − q + q e^−ε). At q = 1 it is group privacy for a replacement
    (2ε, (1 + e^ε)δ) [DR14, Thm 2.2 style chaining].

References: BBG18 (Thm 8 Poisson / add-remove, Thm 9 without replacement / substitution,
Sec. 3 tools); Che19 (Claim 19).
"""

from __future__ import annotations

import math

from dpcalc.errors import DomainError
from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.numeric.directed import down as _down
from dpcalc.numeric.directed import up as _up
from dpcalc.numeric.logspace import NEG_INF, log1mexp, log_add, log_expm1
from dpcalc.solve import bisect_to_adjacent, climb_to_adjacent

_INF = math.inf
SAMPLINGS = ("poisson", "without-replacement")
RELATIONS = ("add-remove", "replace-one")


def _check(epsilon: float, log_delta: float, q: float, sampling: str, relation: str):
    epsilon = float(epsilon)
    if math.isnan(epsilon) or epsilon < 0 or epsilon == _INF:
        raise DomainError(f"epsilon must be a finite number >= 0, got epsilon={epsilon!r}")
    log_delta = float(log_delta)
    if math.isnan(log_delta) or log_delta > 0:
        raise DomainError("log_delta must be a log-probability (<= 0), got "
                          f"log_delta={log_delta!r}")
    _check_q(q)
    _check_scheme(sampling, relation)
    return epsilon, log_delta, float(q)


def _check_q(q: float) -> None:
    q = float(q)
    if math.isnan(q) or not (0.0 < q <= 1.0):
        raise DomainError(f"q must be in (0, 1], got q={q!r}")


def _check_scheme(sampling: str, relation: str) -> None:
    if sampling not in SAMPLINGS:
        raise DomainError(f"sampling must be one of {', '.join(SAMPLINGS)}, "
                         f"got sampling={sampling!r}")
    if relation not in RELATIONS:
        raise DomainError(f"relation must be one of {', '.join(RELATIONS)}, "
                         f"got relation={relation!r}")


def _two_sided(sampling: str, relation: str) -> bool:
    """True for the derived Poisson / replace-one form (b), False for log(1 + q(e^ε − 1))."""
    return sampling == "poisson" and relation == "replace-one"


def _softplus(y: float) -> float:
    """log(1 + e^y), stable for all y."""
    if y > 0:
        return y + math.log1p(math.exp(-y))
    return math.log1p(math.exp(y))


def _log1p_q_expm1(q: float, log_q: float, epsilon: float) -> float:
    """log(1 + q(e^ε − 1)) for ε > 0, to a few ulps relative (tiny q, tiny or huge ε)."""
    if epsilon <= 700.0:
        return math.log1p(q * math.expm1(epsilon))  # three roundings of ≤ u relative each
    return _softplus(log_q + log_expm1(epsilon))  # value ≈ ε + log q: absolute error ~ u·ε


def _log_one_minus_q_b(q: float, log_q: float, epsilon: float) -> float:
    """log(1 − q(1 − e^−ε)) (≤ 0), to a few ulps of its magnitude.

    log1p(−q b) when q b ≤ 1/2 (b = 1 − e^−ε = −expm1(−ε) is accurate); otherwise the
    sum of positives (1 − q) + q e^−ε, whose log is then at least ln 2 in magnitude.
    """
    qb = -q * math.expm1(-epsilon)
    if qb <= 0.5:
        return math.log1p(-qb)
    if q == 1.0:
        return -epsilon
    return log_add(math.log1p(-q), log_q - epsilon)


def amplify(epsilon: float, log_delta: float, q: float, sampling: str = "poisson",
            relation: str = "add-remove") -> tuple[float, float]:
    """Upper bound (ε', log δ') of a (ε, δ)-DP mechanism run on a q-subsample.

    See the module table for the four (sampling, relation) combinations. The base (ε, δ) is
    w.r.t. add-remove for Poisson samples and replace-one for fixed-size samples; ``relation``
    is the neighbouring relation of the amplified guarantee. For without-replacement, q = m/n
    with n the size of the dataset sampled from. ``log_delta`` = −inf (pure DP) gives
    ``log δ'`` = −inf.

    References: BBG18, Thm 8 (poisson, add-remove); BBG18, Thm 9 (without-replacement,
    replace-one); the other two derived in the module docstring from BBG18, Sec. 3.
    """
    epsilon, log_delta, q = _check(epsilon, log_delta, q, sampling, relation)
    log_q = math.log(q)
    if not _two_sided(sampling, relation):
        if epsilon == 0.0:
            eps_amp = 0.0
        else:
            # [BBG18, Thm 8 / Thm 9] ε' = log(1 + q(e^ε − 1)); ~5 roundings, each ≤ u relative
            eps_amp = _up(_log1p_q_expm1(q, log_q, epsilon) * (1 + 16 * _U))
        if log_delta == NEG_INF:
            return eps_amp, NEG_INF
        # [BBG18, Thm 8 / Thm 9] δ' = qδ
        value = log_q + log_delta
        return eps_amp, _up(value + 4 * _U * (abs(log_q) + abs(log_delta) + 1.0))
    # derived form (b): ε' = log(1 + q(e^ε − 1)) − log(1 − q(1 − e^−ε))
    if epsilon == 0.0:
        eps_amp = 0.0
        log_den = 0.0
    else:
        log_den = _log_one_minus_q_b(q, log_q, epsilon)
        num = _log1p_q_expm1(q, log_q, epsilon)
        eps_amp = num - log_den
        # both logs are accurate to a few ulps of their size; the difference loses nothing
        # relative to its terms (num >= 0 >= log_den), so pad by 16u of the terms
        eps_amp = _up(eps_amp + 16 * _U * (abs(num) + abs(log_den)))
    if log_delta == NEG_INF:
        return eps_amp, NEG_INF
    # δ' = qδ (1 + e^−ε) / (1 − q(1 − e^−ε))
    factor = math.log1p(math.exp(-epsilon)) - log_den
    value = log_q + log_delta + factor
    pad = 16 * _U * (abs(log_q) + abs(log_delta) + abs(factor) + epsilon + 1.0)
    return eps_amp, _up(value + pad)


def _passes(epsilon, log_delta, q, amplified_epsilon, log_amplified_delta, sampling, relation):
    e, ld = amplify(epsilon, log_delta, q, sampling, relation)
    ok = amplified_epsilon is None or e <= amplified_epsilon
    return ok and (log_amplified_delta is None or ld <= log_amplified_delta)


def _shrink_until(value: float, passes, lower: float = 0.0) -> float | None:
    """Nudge a closed-form allowance down until the forward function certifies it."""
    for i in range(60):
        if value <= lower:
            return None
        if passes(value):
            return value
        value = _down(value * (1.0 - 2.0 ** (i - 52)))
    return None


def _bisect_largest(passes, lo: float, hi: float) -> float | None:
    """Largest x in [lo, hi] with passes(x), assuming a monotone predicate; lo may fail."""
    if passes(hi):
        return hi
    if not passes(lo):
        return None
    return bisect_to_adjacent(passes, hi, lo)


def max_q(epsilon: float, log_delta: float, amplified_epsilon: float, log_amplified_delta: float,
          sampling: str = "poisson", relation: str = "add-remove") -> float | None:
    """Largest sampling rate q ≤ 1 (rounded down, certified by :func:`amplify`) meeting targets.

    log(1 + q(e^ε − 1)) form: q = min((e^ε' − 1)/(e^ε − 1), δ'/δ, 1).
    Poisson / replace-one form: q = min((e^ε' − 1)/((e^ε − 1) + (1 − e^−ε) e^ε'),
    δ'/(δ(1 + e^−ε) + δ'(1 − e^−ε)), 1) (the forward formulas solved for q).
    Returns None when no q > 0 meets the targets (ε' = 0 < ε, or δ' = 0 < δ).

    References: BBG18, Thm 8; BBG18, Thm 9 (inverted in q).
    """
    epsilon, log_delta, _ = _check(epsilon, log_delta, 1.0, sampling, relation)
    amplified_epsilon = float(amplified_epsilon)
    log_amplified_delta = float(log_amplified_delta)
    if math.isnan(amplified_epsilon) or amplified_epsilon < 0:
        raise DomainError(f"amplified_epsilon must be >= 0, got {amplified_epsilon!r}")
    if math.isnan(log_amplified_delta):
        raise DomainError("log_amplified_delta must not be NaN")
    two = _two_sided(sampling, relation)
    logs = [0.0]  # log of each upper limit on q; q ≤ 1
    if epsilon > 0.0:
        if amplified_epsilon == 0.0:
            return None
        if amplified_epsilon < _INF:
            num = log_expm1(amplified_epsilon)
            den = log_expm1(epsilon)
            if two:  # (e^ε − 1) + (1 − e^−ε) e^ε'
                den = log_add(den, log1mexp(-epsilon) + amplified_epsilon)
            logs.append(num - den)
    if log_delta > NEG_INF:
        if log_amplified_delta == NEG_INF:
            return None
        if two:  # q = D / (δ(1 + e^−ε) + D(1 − e^−ε))
            den = log_delta + math.log1p(math.exp(-epsilon))
            if epsilon > 0.0:
                den = log_add(den, log_amplified_delta + log1mexp(-epsilon))
            logs.append(log_amplified_delta - den)
        else:
            logs.append(log_amplified_delta - log_delta)
    # an allowance: round the closed form down, then confirm with the forward bound
    q = min(1.0, math.exp(min(logs)) * (1.0 - 64 * _U))

    def passes(x: float) -> bool:
        return _passes(epsilon, log_delta, x, amplified_epsilon, log_amplified_delta,
                       sampling, relation)

    if passes(1.0):
        return 1.0
    if q > 0.0:
        got = _shrink_until(q, passes)
        if got is not None:
            return got
    return _bisect_largest(passes, math.ldexp(1.0, -1074), max(q, math.ldexp(1.0, -1000)))


def max_base_epsilon(q: float, amplified_epsilon: float, sampling: str = "poisson",
                     relation: str = "add-remove", log_delta: float | None = None,
                     log_amplified_delta: float | None = None) -> float | None:
    """Largest base ε (rounded down, certified by :func:`amplify`) with amplified ε ≤ target.

    log(1 + q(e^ε − 1)) form: ε = log(1 + (e^ε' − 1)/q).
    Poisson / replace-one form: with T = e^ε', t = e^ε solves q t² + (1−q)(1−T) t − qT = 0.
    Under that form the amplified δ depends on ε too; pass ``log_delta`` and
    ``log_amplified_delta`` to meet both targets. Returns None when no ε ≥ 0 qualifies; ``inf``
    when every ε qualifies (q(e^ε − 1) is unbounded, so only ε' = inf does that).

    References: BBG18, Thm 8; BBG18, Thm 9 (inverted in ε).
    """
    _check_q(q)
    _check_scheme(sampling, relation)
    q = float(q)
    amplified_epsilon = float(amplified_epsilon)
    if math.isnan(amplified_epsilon) or amplified_epsilon < 0:
        raise DomainError(f"amplified_epsilon must be >= 0, got {amplified_epsilon!r}")
    if amplified_epsilon == _INF:
        eps = _INF
    elif amplified_epsilon == 0.0:
        eps = 0.0
    elif not _two_sided(sampling, relation):
        # ε = log(1 + (e^ε' − 1)/q) = softplus(log(e^ε' − 1) − log q)
        eps = _softplus(log_expm1(amplified_epsilon) - math.log(q))
    else:
        eps = _base_eps_two_sided(q, amplified_epsilon)
    ld = 0.0 if log_delta is None else float(log_delta)

    def eps_ok(x: float) -> bool:  # monotone: true up to the answer, false above
        return _passes(x, ld, q, amplified_epsilon, None, sampling, relation)

    def delta_ok(x: float) -> bool:
        return _passes(x, ld, q, None, log_amplified_delta, sampling, relation)

    if eps == _INF:
        return _INF if delta_ok(1e300) else None
    # an allowance: take the closed form a little low, certify it, then climb back up by
    # doubling steps while the forward bound still certifies (so the answer is also tight)
    top = max(_down(eps * (1.0 - 64 * _U)), 0.0)
    if not eps_ok(top):
        top = _shrink_until(top, eps_ok, lower=0.0)
        if top is None:
            return 0.0 if eps_ok(0.0) and delta_ok(0.0) else None
        top = max(top, 0.0)
    top = climb_to_adjacent(eps_ok, top)
    if delta_ok(top):
        return top
    if not _two_sided(sampling, relation):
        return None  # δ' = qδ does not depend on ε
    # δ' = qδ(1 + e^−ε)/(1 − q + q e^−ε) is increasing in ε for q > 1/2 (then the δ target
    # caps ε: bisect below `top`), decreasing for q < 1/2 and constant at q = 1/2 (then a
    # smaller ε cannot help)
    if q <= 0.5:
        return None
    return _bisect_largest(delta_ok, 0.0, top)


def _base_eps_two_sided(q: float, amplified_epsilon: float) -> float:
    """Root t = e^ε of q t² + (1−q)(1−T) t − qT = 0, as ε (closed form, then verified)."""
    big_t = math.exp(amplified_epsilon) if amplified_epsilon < 700 else _INF
    if big_t == _INF:
        return _INF
    b = (1.0 - q) * math.expm1(amplified_epsilon)  # −(1−q)(1−T) >= 0
    # t = (b + √(b² + 4q²T)) / (2q); no cancellation since b >= 0
    t = (b + math.sqrt(b * b + 4.0 * q * q * big_t)) / (2.0 * q)
    return math.log(t)
