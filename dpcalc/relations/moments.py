"""The original moments accountant of Abadi et al. for DP-SGD (Poisson sampling rate q, noise
multiplier σ, T steps).

Relations [ACGMMTZ16, Thm 2 & Sec 3.2]: the log-moment of the privacy loss at integer λ,
α(λ) = max over both neighbour directions of log E[(μ/μ0)^λ] under the output distribution,
composes additively (T·α(λ)) and gives the tail bound

    δ = min_λ exp(T·α(λ) − λε),        ε = min_λ (T·α(λ) + log(1/δ)) / λ,   λ = 1..32.

For the sampled Gaussian, μ0 = N(0, σ²) and μ = (1−q)μ0 + q·N(1, σ²). The direction
E_{z∼μ}[(μ/μ0)^λ] = E_{z∼μ0}[(μ/μ0)^{λ+1}] = A_{λ+1} is the binomial sum
A_{λ+1} = Σ_k C(λ+1,k) (1−q)^{λ+1−k} q^k e^{(k²−k)/(2σ²)} [ACGMMTZ16, Sec 3.2; MTZ19, Sec 3.2],
and it dominates the other direction E_{μ0}[(μ0/μ)^λ] [MTZ19, Sec 3], so
α(λ) = log A_{λ+1} (a test checks the other direction by quadrature). This is the RDP of the
sampled Gaussian at order λ+1 times λ [Mir17], i.e. the classic RDP conversion restricted to
integer orders 2..33, which is why this accountant never beats ``rdp`` with the improved
conversion.

The moments use the binomial identity Σ_k C(n,k)(1−q)^{n−k}q^k = 1 to drop the constant, so
that every term is positive: A − 1 = Σ_{k≥2} C(n,k)(1−q)^{n−k} q^k (e^{(k²−k)/(2σ²)} − 1).
They are summed in floats with a proven relative error bound r (``_log_moments_float``), and
each α is returned enlarged by its allowance, an upper bound within 2·``_FLOAT_REL`` (5e-13)
of the exact value (the allowance and the error it covers each stay within
``_FLOAT_REL``). These certified floats (cached per (q, σ)) choose the λ that can attain the
minimum; ε or δ is then computed there to ~50 digits (Decimal, each operation correctly rounded),
enlarged by 1e-40 and rounded up to a double: the exact minimum rounded up. Where the float
path cannot certify (q = 1, terms below the normal double range, σ outside about
[1e-150, 1e145], cancellation between k·log q and (k²−k)/(2σ²) beyond the allowance), every
moment is computed exactly in mpmath (50 digits) instead.
"""

from __future__ import annotations

import math
from decimal import Context, Decimal
from functools import lru_cache

from dpcalc.errors import DomainError
from dpcalc.numeric.directed import MACHINE_EPSILON as _EPS
from dpcalc.numeric.directed import up as _up

__all__ = ["moments_epsilon", "moments_log_delta", "log_moments"]

_DPS = 50
_REL_PAD = "1e-40"  # far above the 50-digit working error, far below a double's resolution
#: the largest relative error the float path may carry (else mpmath decides): far below the
#: digits dpcalc reports, and within 1e-12 of the exact moments (tested)
_FLOAT_REL = 2.5e-13
#: M = max log-term outside ±_LOG_RANGE: e^M leaves the normal double range (mpmath decides)
_LOG_RANGE = 690.0


def _check(q: float, noise_multiplier: float, steps, max_lambda: int) -> tuple[float, float,
                                                                                float, int]:
    qq, sigma, t = float(q), float(noise_multiplier), float(steps)
    if not 0.0 <= qq <= 1.0:
        raise DomainError(f"sampling rate q must be in [0, 1], got q={q}")
    if not sigma > 0:
        raise DomainError(f"noise_multiplier must be > 0, got noise_multiplier={noise_multiplier}")
    if not (t >= 0 and math.isfinite(t)):
        raise DomainError(f"steps must be a finite number >= 0, got steps={steps}")
    lam = int(max_lambda)
    if lam < 1 or lam != max_lambda:
        raise DomainError(f"max_lambda must be an integer >= 1, got max_lambda={max_lambda}")
    return qq, sigma, t, lam


@lru_cache(maxsize=256)
def _log_moments_mp(q: float, sigma: float, max_lambda: int):
    """α(λ) = log A_{λ+1} for λ = 1..max_lambda, as mpmath numbers (exact to ~50 digits)."""
    import mpmath as mp

    if q == 0 or sigma == math.inf:
        return tuple(mp.mpf(0) for _ in range(max_lambda))
    out = []
    nmax = max_lambda + 1
    with mp.workdps(_DPS):
        mq, ms = mp.mpf(q), mp.mpf(sigma)
        inv = 1 / (2 * ms * ms)
        pq = [mq**k for k in range(nmax + 1)]
        p1q = [(1 - mq) ** k for k in range(nmax + 1)]
        w = [mp.expm1((k * k - k) * inv) for k in range(nmax + 1)]  # e^{(k²−k)/(2σ²)} − 1
        for lam in range(1, max_lambda + 1):
            n = lam + 1
            # [ACGMMTZ16, Sec 3.2] binomial form of E_{μ0}[(μ/μ0)^{λ+1}], with the binomial
            # identity Σ_k C(n,k)(1−q)^{n−k}q^k = 1 removing the constant: all terms ≥ 0
            am1 = mp.fsum(math.comb(n, k) * p1q[n - k] * pq[k] * w[k] for k in range(2, n + 1))
            out.append(mp.log1p(am1))
    return tuple(out)


def _to_float_up(x) -> float:
    """The smallest double >= x (x an mpmath number, possibly ±inf)."""
    import mpmath as mp

    if mp.isinf(x):
        return math.inf if x > 0 else -math.inf
    f = float(x)
    if mp.mpf(f) < x:
        f = math.nextafter(f, math.inf)
    return f


@lru_cache(maxsize=64)
def _log_binomials(n: int) -> tuple[tuple[float, float], ...]:
    """(log C(n, k), a bound on its absolute rounding error) for k = 0..n.

    C(n, k) is an exact integer; its conversion to a double errs by ≤ u relative (≤ 0.51 eps
    in the log), and ``math.log`` by ≤ 2 ulps (≤ 2 eps relative).
    """
    out = []
    for k in range(n + 1):
        lc = math.log(math.comb(n, k))
        out.append((lc, _EPS * (2.0 * abs(lc) + 0.51)))
    return tuple(out)


def _log_moments_float(q: float, sigma: float, max_lambda: int) -> tuple[float, ...] | None:
    """Upper bounds on α(λ) = log A_{λ+1}, λ = 1..max_lambda, in floats; None when the float
    path cannot certify a relative error ≤ ``_FLOAT_REL`` (mpmath then decides).

    [ACGMMTZ16, Sec 3.2; MTZ19, Sec 3.2] A_n − 1 = Σ_{k=2}^{n} t_k with the positive terms
    t_k = C(n,k)(1−q)^{n−k} q^k (e^{x_k} − 1), x_k = (k²−k)/(2σ²), each formed as e^{L_k} with
    L_k = log C(n,k) + (n−k)·log1p(−q) + k·log q + log(e^{x_k} − 1).

    Error bound (eps = 2^−52, u = eps/2; +, −, ×, / round to nearest, ≤ u relative; CPython's
    math.log, log1p, exp, expm1 (the platform libm, faithful on glibc) are allowed 2 ulps,
    ≤ 2 eps relative):
    - log C: ≤ 2 eps|log C| + 0.51 eps (``_log_binomials``); (n−k)·log1p(−q) and k·log q:
      ≤ 2 eps of the factor's log, times the count, plus the product's rounding: ≤ 2.5 eps|·|.
    - x_k = (k²−k)·((0.5/σ)/σ) errs by ≤ 1.51 eps·x_k; d log(e^x − 1)/dx = 1/(1 − e^{−x})
      ≤ 1 + 1/x, so that costs ≤ 1.51 eps (x_k + 1); expm1 and log add ≤ 2.01 eps and
      2 eps|log(e^x − 1)| (for x > 30, x + log1p(−e^{−x}) errs by less).
    - the three additions forming L_k: ≤ u·(|p1| + |p2| + |L_k|) with the partial sums p.
    So |L_k − log t_k| ≤ E_k, the sum of these. With M = max L_k, s_k = fl(L_k − M) errs by
    ≤ u|s_k| and exp by ≤ 2 eps, so t_k e^{−M} ≤ t̂_k e^{g_k}, g_k = E_k + u|s_k| + 2.01 eps
    (and ≥ t̂_k e^{−g_k}). With Ŝ = fsum(t̂_k) (correctly rounded) and D = Σ t̂_k g_k (all
    g_k ≤ 0.01, so e^g − 1 ≤ g(1 + g)), (A − 1)e^{−M} ≤ Ŝ(1 + r), r = 1.001 D/Ŝ + 2 eps
    (the 1.001 covers the roundings of D). Finally, with A − 1 ≤ x̂(1 + r'),
    α = log1p(A − 1) ≤ log1p(x̂) + r'·min(1, log1p(x̂)), since log1p(z) ≤ z and
    x/(1 + x) ≤ min(1, log1p(x)); for M > 690, α ≤ log(A − 1) + e^{−689}. The allowance is
    added and the sum moved two ulps up; it must stay ≤ ``_FLOAT_REL`` of α, else None.
    """
    if q == 1.0 and 1e-150 < sigma < 1e145:
        return _full_batch_moments(sigma, max_lambda)
    if not (0.0 < q < 1.0 and 1e-150 < sigma < 1e145):
        return None
    nmax = max_lambda + 1
    l1, lq = math.log1p(-q), math.log(q)
    inv = 0.5 / sigma / sigma
    le, le_err = [0.0, 0.0], [0.0, 0.0]
    for k in range(2, nmax + 1):
        x = (k * k - k) * inv  # [ACGMMTZ16, Sec 3.2] (k² − k)/(2σ²)
        if not 1e-290 < x < 1e300:
            return None
        v = math.log(math.expm1(x)) if x <= 30.0 else x + math.log1p(-math.exp(-x))
        le.append(v)
        le_err.append(_EPS * (1.51 * (x + 1.0) + 2.01 + 2.0 * abs(v)))
    # the terms of every λ at once (numpy's +, −, ×, abs round as Python's floats do, so
    # each value below is the one a loop over k gives; exp stays math.exp)
    import numpy as np

    ns, ks, lc, lc_err, starts = _moment_layout(max_lambda)
    le_k, le_err_k = np.array(le)[ks], np.array(le_err)[ks]
    a = (ns - ks) * l1
    b = ks * lq
    p1 = lc + a
    p2 = p1 + b
    vals = p2 + le_k
    errs = (lc_err + 2.5 * _EPS * (np.abs(a) + np.abs(b)) + le_err_k
            + 0.51 * _EPS * (np.abs(p1) + np.abs(p2) + np.abs(vals)))
    ms = np.maximum.reduceat(vals, starts)
    if not np.all(np.isfinite(ms) & (-_LOG_RANGE <= ms) & (ms <= 1e300)):
        return None
    shifts = vals - np.repeat(ms, np.diff(np.append(starts, vals.size)))
    gs = errs + 0.51 * _EPS * np.abs(shifts) + 2.01 * _EPS
    if not np.all(gs <= 0.01):
        return None
    all_terms = list(map(math.exp, shifts.tolist()))
    all_weighted = (np.array(all_terms) * (gs * (1.0 + gs))).tolist()  # e^g − 1 ≤ g(1 + g)
    out = []
    for lam in range(1, max_lambda + 1):
        lo, hi = int(starts[lam - 1]), int(starts[lam]) if lam < max_lambda else vals.size
        m = float(ms[lam - 1])
        terms, weighted = all_terms[lo:hi], all_weighted[lo:hi]
        total = math.fsum(terms)  # ≥ 1: the largest term is e^0
        r = 1.001 * math.fsum(weighted) / total + 2.0 * _EPS
        if m <= _LOG_RANGE:
            # x̂ = e^M·Ŝ (exp ≤ 2 eps, × ≤ u): A − 1 ≤ x̂(1 + r1), r1 = r + 3.1 eps, so
            # α ≤ log1p(x̂) + r1·min(1, log1p(x̂)); log1p errs by ≤ 2 eps; 4 eps·ℓ covers that
            # and the roundings of the allowance, one ulp the final addition
            ell = math.log1p(math.exp(m) * total)
            pad = (r + 3.1 * _EPS) * min(1.0, 1.001 * ell) + 4.0 * _EPS * ell
            value = ell
        else:
            # log(A − 1) ≤ M + log Ŝ + r (log ≤ 2 eps, + ≤ u); log1p(e^{−ℓ}) ≤ e^{−689}:
            # one ulp covers the rounding of the sum, the second the e^{−689}
            log_s = math.log(total)
            value = m + log_s
            pad = r + _EPS * (abs(value) + 2.0 * log_s + 1.0)
        if not pad <= _FLOAT_REL * value:
            return None
        out.append(_up(value + pad, 2))
    return tuple(out)


@lru_cache(maxsize=4)
def _moment_layout(max_lambda: int):
    """n, k, log C(n, k) and its error bound (``_log_binomials``) for every term k = 2..n of
    every n = λ + 1, λ = 1..max_lambda (flat, λ by λ), and where each λ starts."""
    import numpy as np

    rows = [(n, k, *_log_binomials(n)[k]) for n in range(2, max_lambda + 2)
            for k in range(2, n + 1)]
    ns, ks, lc, lc_err = (np.array(c) for c in zip(*rows, strict=True))
    starts = np.cumsum([0] + [n - 1 for n in range(2, max_lambda + 1)])
    return ns.astype(float), ks, lc, lc_err, starts


def _full_batch_moments(sigma: float, max_lambda: int) -> tuple[float, ...] | None:
    """α(λ) at q = 1, the Gaussian's λ(λ + 1)/(2σ²) [ACGMMTZ16, Sec 3.2: the sum's one term
    k = n], as doubles rounded up: (n² − n)·((0.5/σ)/σ) errs by ≤ 1.51 eps relative (as x_k
    above), 2 eps covers it; two ulps up.  (mpmath answered here, its import 0.03-0.05 s of a
    rate solve's comparison rows, which probe q = 1 first.)"""
    inv = 0.5 / sigma / sigma
    out = []
    for lam in range(1, max_lambda + 1):
        x = (lam * lam + lam) * inv
        if not 1e-290 < x < 1e300:
            return None
        out.append(_up(x * (1.0 + 2.0 * _EPS), 2))
    return tuple(out)


#: working precision of the exact evaluation at the chosen λ (Decimal: every operation
#: correctly rounded, so ~100 operations on positive terms err far below ``_REL_PAD``)
_CTX = Context(prec=60, Emin=-999999999, Emax=999999999)
_REL_PAD_D = Decimal("1e-40")


def _expm1_exact(x: Decimal) -> Decimal:
    """e^x − 1 for x ≥ 0 to ~60 digits (the series below 1e-3, where e^x − 1 would cancel)."""
    if x >= Decimal("1e-3"):
        return _CTX.subtract(_CTX.exp(x), 1)
    total, term, j = Decimal(0), x, 1
    while term > x * Decimal("1e-66"):
        total = _CTX.add(total, term)
        j += 1
        term = _CTX.divide(_CTX.multiply(term, x), j)
    return total


def _log1p_exact(y: Decimal) -> Decimal:
    """log(1 + y) for y ≥ 0 to ~60 digits (the alternating series below 1e-10)."""
    if y >= Decimal("1e-10"):
        return _CTX.ln(_CTX.add(1, y))
    total, power, j = Decimal(0), y, 1
    while power > y * Decimal("1e-66"):
        total = _CTX.add(total, _CTX.divide(power, j) if j % 2 else -_CTX.divide(power, j))
        j += 1
        power = _CTX.multiply(power, y)
    return total


@lru_cache(maxsize=64)
def _exact_weights(q: float, sigma: float, nmax: int) -> tuple[tuple[Decimal, ...], ...]:
    """(q^k, (1 − q)^k, e^{(k²−k)/(2σ²)} − 1) for k = 0..nmax, to ~60 digits."""
    dq = Decimal(q)
    one_minus = _CTX.subtract(1, dq)
    pq = tuple(_CTX.power(dq, k) for k in range(nmax + 1))
    p1q = tuple(_CTX.power(one_minus, k) for k in range(nmax + 1))
    return pq, p1q, _sigma_weights(sigma, nmax)


#: σ ↦ (e^{(k²−k)/(2σ²)} − 1 for k = 0..K): the Decimal exps (~70 % of the moments row's
#: exact evaluation, ~0.25 ms a batch line) depend on σ alone, so a batch that repeats σ (a
#: sweep over q or epochs; issue 13's 10,000 lines have ~1000 distinct 3-digit σ) computes
#: them once.  Each weight is computed on its own, so a longer list extends the cached one
#: with the same values.  At most _SIGMA_WEIGHTS_MAX σ (the oldest dropped).
_SIGMA_WEIGHTS: dict[float, tuple[Decimal, ...]] = {}
_SIGMA_WEIGHTS_MAX = 4096


def _sigma_weights(sigma: float, nmax: int) -> tuple[Decimal, ...]:
    """e^{(k²−k)/(2σ²)} − 1 for k = 0..nmax, to ~60 digits (cached by σ)."""
    key = float(sigma)
    have = _SIGMA_WEIGHTS.get(key, ())
    if len(have) <= nmax:
        ds = Decimal(key)
        inv = _CTX.divide(1, _CTX.multiply(2, _CTX.multiply(ds, ds)))
        have += tuple(_expm1_exact(_CTX.multiply(k * k - k, inv))
                      for k in range(len(have), nmax + 1))
        if key not in _SIGMA_WEIGHTS and len(_SIGMA_WEIGHTS) >= _SIGMA_WEIGHTS_MAX:
            del _SIGMA_WEIGHTS[next(iter(_SIGMA_WEIGHTS))]
        _SIGMA_WEIGHTS[key] = have
    return have[:nmax + 1]


def _log_moment_exact(q: float, sigma: float, lam: int) -> Decimal:
    """α(λ) = log A_{λ+1} to ~50 digits [ACGMMTZ16, Sec 3.2], for 0 < q < 1: the positive
    binomial sum A − 1 = Σ_{k≥2} C(n,k)(1−q)^{n−k} q^k (e^{(k²−k)/(2σ²)} − 1), n = λ + 1; at
    q = 1 its one term k = n: α(λ) = (n² − n)/(2σ²) (Decimal's 0⁰ is undefined)."""
    n = lam + 1
    if q == 1.0:
        ds = Decimal(sigma)
        return _CTX.divide(n * n - n, _CTX.multiply(2, _CTX.multiply(ds, ds)))
    pq, p1q, w = _exact_weights(q, sigma, n)
    am1 = Decimal(0)
    for k in range(2, n + 1):
        term = _CTX.multiply(_CTX.multiply(math.comb(n, k), p1q[n - k]),
                             _CTX.multiply(pq[k], w[k]))
        am1 = _CTX.add(am1, term)
    return _log1p_exact(am1)


def _decimal_up(x: Decimal) -> float:
    """The smallest double >= x (float(Decimal) rounds to nearest)."""
    f = float(x)
    if math.isfinite(f) and Decimal(f) < x:
        f = math.nextafter(f, math.inf)
    return f


def _exact_candidates(values: list[float]) -> list[int] | None:
    """The λ (1-based) whose float value, an upper bound within 2·``_FLOAT_REL`` (+ roundings) of
    its exact value, may hide the exact minimum: the float minimum and every λ within
    2·``_FLOAT_REL`` of it. None when the values are not all finite and positive."""
    best = min(values)
    if not (0 < best and math.isfinite(best)):
        return None
    cut = best * (1.0 + 2.0 * _FLOAT_REL + 1e-15)
    return [lam for lam, v in enumerate(values, start=1) if v <= cut]


#: the largest (k²−k)/(2σ²) the Decimal evaluation takes (its exponent range ends near
#: e^{2.3e9}); beyond it mpmath decides
_DECIMAL_X_MAX = 1e9


@lru_cache(maxsize=256)
def _float_moments(q: float, sigma: float, max_lambda: int) -> tuple[float, ...] | None:
    """``_log_moments_float``, cached per (q, σ); None also where the exact evaluation at the
    chosen λ (Decimal) would leave its exponent range."""
    n = max_lambda + 1
    if not (n * n - n) * (0.5 / sigma / sigma) <= _DECIMAL_X_MAX:
        return None
    return _log_moments_float(q, sigma, max_lambda)


@lru_cache(maxsize=256)
def _log_moments(q: float, sigma: float, max_lambda: int) -> tuple[float, ...]:
    """Upper bounds on α(λ), λ = 1..max_lambda, as doubles: the float path when it certifies
    its error, else the exact mpmath sum rounded up (cached per (q, σ))."""
    if q == 0 or sigma == math.inf:
        return (0.0,) * max_lambda
    got = _float_moments(q, sigma, max_lambda)
    if got is not None:
        return got
    return tuple(_to_float_up(v) for v in _log_moments_mp(q, sigma, max_lambda))


def log_moments(q: float, noise_multiplier: float, max_lambda: int = 32) -> list[float]:
    """Upper bounds on the per-step log-moments α(λ), λ = 1..max_lambda, of the sampled
    Gaussian [ACGMMTZ16, Thm 2 & Sec 3.2], each rounded up to a double."""
    qq, sigma, _, lam = _check(q, noise_multiplier, 0, max_lambda)
    return list(_log_moments(qq, sigma, lam))


def moments_epsilon(q: float, noise_multiplier: float, steps, log_delta: float,
                    max_lambda: int = 32) -> tuple[float, int]:
    """Upper bound on ε of T steps of DP-SGD by the moments accountant, and the best λ.

    References: [ACGMMTZ16, Thm 2]: ε = min_{λ ≤ max_lambda} (T·α(λ) + log(1/δ)) / λ. The
    certified float moments pick the λ that can attain the minimum (``_exact_candidates``);
    the value there is computed to ~50 digits (Decimal, every operation correctly rounded),
    enlarged by 1e-40 relative and absolute and rounded up to a double, the exact minimum
    rounded up. Without certified float moments, mpmath computes every λ. ε is clamped at 0.

    Args:
        q: Poisson sampling rate in [0, 1]. noise_multiplier: σ/Δ > 0. steps: T ≥ 0.
        log_delta: natural log of δ (−inf for δ = 0 gives ε = inf).
        max_lambda: largest moment order (32 in the paper).

    Returns:
        (epsilon, best_lambda).
    """
    qq, sigma, t, lam_max = _check(q, noise_multiplier, steps, max_lambda)
    ld = float(log_delta)
    if math.isnan(ld):
        raise DomainError("log_delta must not be NaN")
    if ld >= 0:
        return 0.0, 1  # δ ≥ 1: trivially (0, δ)-DP
    if ld == -math.inf:
        return math.inf, 1
    alphas = _float_moments(qq, sigma, lam_max)
    if alphas is not None:
        lams = _exact_candidates([(t * a - ld) / lam for lam, a in enumerate(alphas, start=1)])
        if lams is not None:
            dt, dld = Decimal(t), Decimal(ld)
            best, best_lam = None, 1
            for lam in lams:
                e = _CTX.divide(_CTX.subtract(_CTX.multiply(dt, _log_moment_exact(qq, sigma, lam)),
                                              dld), lam)  # [ACGMMTZ16, Thm 2]
                if best is None or e < best:
                    best, best_lam = e, lam
            best = _CTX.add(_CTX.multiply(best, 1 + _REL_PAD_D), _REL_PAD_D)
            return max(_decimal_up(best), 0.0), best_lam
    return _moments_epsilon_mp(qq, sigma, t, ld, lam_max)


def _moments_epsilon_mp(qq: float, sigma: float, t: float, ld: float,
                        lam_max: int) -> tuple[float, int]:
    """``moments_epsilon`` with every λ in mpmath (where the float moments do not certify)."""
    import mpmath as mp

    moments = _log_moments_mp(qq, sigma, lam_max)
    with mp.workdps(_DPS):
        best, best_lam = None, 1
        for lam, a in enumerate(moments, start=1):
            e = (mp.mpf(t) * a - mp.mpf(ld)) / lam  # [ACGMMTZ16, Thm 2]
            if best is None or e < best:
                best, best_lam = e, lam
        best = best * (1 + mp.mpf(_REL_PAD)) + mp.mpf(_REL_PAD)
        eps = _to_float_up(best)
    return max(eps, 0.0), best_lam


def moments_log_delta(q: float, noise_multiplier: float, steps, epsilon: float,
                      max_lambda: int = 32) -> tuple[float, int]:
    """Upper bound on log δ of T steps of DP-SGD at a given ε by the moments accountant.

    References: [ACGMMTZ16, Thm 2]: log δ = min_{λ ≤ max_lambda} (T·α(λ) − λε), clamped at
    log δ ≤ 0; the minimising λ chosen as in ``moments_epsilon`` (a float value v of
    T·α − λε errs by at most (2·``_FLOAT_REL`` + 4 eps)(T·α + λε)), the value computed to
    ~50 digits and rounded up.

    Returns:
        (log_delta, best_lambda).
    """
    qq, sigma, t, lam_max = _check(q, noise_multiplier, steps, max_lambda)
    eps = float(epsilon)
    if math.isnan(eps) or eps < 0:
        raise DomainError(f"epsilon must be >= 0, got epsilon={epsilon}")
    if eps == math.inf:
        return -math.inf, lam_max
    alphas = _float_moments(qq, sigma, lam_max)
    if alphas is not None:
        rel = 2.0 * _FLOAT_REL + 4.0 * _EPS
        vals = [(t * a - lam * eps, rel * (t * a + lam * eps) + 1e-300)
                for lam, a in enumerate(alphas, start=1)]
        if all(math.isfinite(v) and math.isfinite(e) for v, e in vals):
            top = min(v + e for v, e in vals)
            dt, de = Decimal(t), Decimal(eps)
            best, best_lam = None, 1
            for lam, (v, e) in enumerate(vals, start=1):
                if v - e > top:
                    continue  # its exact value is above the smallest upper value
                x = _CTX.subtract(_CTX.multiply(dt, _log_moment_exact(qq, sigma, lam)),
                                  _CTX.multiply(lam, de))  # [ACGMMTZ16, Thm 2]
                if best is None or x < best:
                    best, best_lam = x, lam
            best = _CTX.add(_CTX.add(best, _CTX.multiply(abs(best), _REL_PAD_D)), _REL_PAD_D)
            return min(_decimal_up(best), 0.0), best_lam
    import mpmath as mp

    moments = _log_moments_mp(qq, sigma, lam_max)
    with mp.workdps(_DPS):
        best, best_lam = None, 1
        for lam, a in enumerate(moments, start=1):
            v = mp.mpf(t) * a - lam * mp.mpf(eps)  # [ACGMMTZ16, Thm 2]
            if best is None or v < best:
                best, best_lam = v, lam
        best = best + abs(best) * mp.mpf(_REL_PAD) + mp.mpf(_REL_PAD)
        ld = _to_float_up(best)
    return min(ld, 0.0), best_lam
