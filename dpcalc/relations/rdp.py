"""Rényi differential privacy (RDP) of the Gaussian and Laplace mechanisms, plain and
Poisson-subsampled, and its conversion to (ε, δ)-DP.

Relations (noise_multiplier folds the sensitivity in: σ/Δ for Gaussian, b/Δ for Laplace):

- Gaussian [Mir17, Prop 7]: ε(α) = α / (2σ²).
- Laplace [Mir17, Prop 6], λ = b/Δ, α > 1:
  ε(α) = 1/(α−1) · log( α/(2α−1) · e^{(α−1)/λ} + (α−1)/(2α−1) · e^{−α/λ} ),
  ε(1) = 1/λ + e^{−1/λ} − 1 (the KL limit), ε(∞) = 1/λ.
- Poisson-subsampled Gaussian, add/remove neighbours [MTZ19]: ε(α) = log(A_α)/(α−1) with
  A_α = E_{z∼N(0,σ²)}[((1−q) + q·e^{(2z−1)/(2σ²)})^α]. Integer α: the exact binomial sum
  A_α = Σ_k C(α,k)(1−q)^{α−k} q^k e^{(k²−k)/(2σ²)} [MTZ19, Sec 3.2]. Fractional α: the two
  series of [MTZ19, Sec 3.3]; their alternating tails are completely monotone, so an Euler
  transform sums them with a remainder of known sign and the result is a certified upper
  bound (see ``_frac_log_am1``). The other direction D_α(μ0‖μ) never exceeds this one
  [MTZ19, Sec 3], so A_α alone gives the RDP. In both cases the constant 1 is subtracted
  analytically (binomial identity), so A_α − 1 keeps its relative accuracy for tiny q.
- Poisson-subsampled Laplace: the general upper bound of [ZW19, Thm 6] at integer α,
  evaluated with the Laplace RDP above.
- Composition: RDP adds over steps [Mir17, Prop 1].
- Conversion to (ε, δ): ``classic`` ε = ε(α) + log(1/δ)/(α−1) [Mir17, Prop 3];
  ``improved`` ε = ε(α) + log((α−1)/α) − (log δ + log α)/(α−1) [CKS20, Prop 12 (v4)],
  also [ALCKS21, Eq 20].

Every returned value is an upper bound on the true quantity. The floating-point error of each
term is bounded explicitly (``_ERR`` below) and added, never subtracted; a term that cannot be
bounded becomes +inf ("no guarantee at this order"). Where a computation of the true quantity
(≥ 0) yields a clearly negative value, that is a bug and ``NumericalError`` is raised.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from dpcalc.errors import DomainError, NumericalError
from dpcalc.numeric.directed import MACHINE_EPSILON as _EPS
from dpcalc.numeric.directed import MIN_NORMAL as _MIN_NORMAL
from dpcalc.numeric.directed import TINY as _TINY
from dpcalc.numeric.directed import inflate
from dpcalc.numeric.logspace import log_add
from dpcalc.numeric.special import lgamma, log_ndtr

__all__ = [
    "DEFAULT_ORDERS",
    "rdp_gaussian",
    "rdp_laplace",
    "rdp_subsampled_gaussian",
    "rdp_subsampled_laplace",
    "epsilon_from_rdp",
    "log_delta_from_rdp",
]

# Each log-space term is a sum of a few pieces (log-binomials, k·log q, (k²−k)/(2σ²), log Φ),
# each computed with an error of a few ulps of its magnitude. A term whose pieces have total
# magnitude M therefore carries an absolute log error below _ERR·M: 32 ulps is a generous
# budget. The special functions (dpcalc.numeric.special, tested against mpmath) are assumed
# accurate to |err| ≤ 16 eps·(|lgamma| + 1) and ≤ 16 eps·max(1, |log Φ|) (measured ≤ 5.7 and
# ≤ 2 eps); log1p, expm1, log, exp to a few ulps. Accounting for a term: a log-binomial built
# from three lgammas (magnitude s = Σ|lgamma|) errs by ≤ 16 eps·(s + 3) while its magnitude
# (cmag, then mag0 adds 1) is ≥ s + 2; a log Φ piece contributes max(1, |log Φ|) to the
# magnitude and ≤ 16 eps of it to the error; the remaining pieces and the ≤ 8 roundings of the
# sum stay below 8 eps·M. So the error is ≤ 16 eps·(s + 3) + 8 eps·M ≤ 32 eps·M = _ERR·M.
_ERR = 32.0 * _EPS
_LOG_HALF_PI = 0.5 * math.log(math.pi)
_SIGMA_RANGE = (1e-100, 1e100)  # subsampled series evaluated for σ in this range
_MAX_SERIES_ORDER = 65536.0  # larger orders fall back to the (valid) Gaussian value


def _build_default_orders() -> tuple[float, ...]:
    near_one = [1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.08]
    fractional = [i / 10 for i in range(11, 110)]  # 1.1, 1.2, ..., 10.9 (integers 2..10 included)
    integers = [float(n) for n in range(11, 65)]
    tail = [72, 80, 88, 96, 112, 128, 144, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768,
            896, 1024, 1280, 1536, 2048, 2560, 3072, 4096]
    return tuple(near_one + fractional + integers + [float(t) for t in tail])


#: Default α grid: fractional orders from 1.01 to 10.9 (step ≤ 0.1, denser near 1), every
#: integer 11..64, then a geometric tail to 4096 (for δ down to 1e-300 and below).
DEFAULT_ORDERS: tuple[float, ...] = _build_default_orders()


# --------------------------------------------------------------------------------------------
# input handling and small helpers
# --------------------------------------------------------------------------------------------

def _orders_array(orders) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(orders, dtype=float))
    if arr.ndim != 1:
        raise DomainError(f"orders must be a 1-D sequence, got shape {arr.shape}")
    if np.any(np.isnan(arr)) or np.any(arr < 1.0):
        raise DomainError("RDP orders must be >= 1 (not NaN), got "
                          f"{arr[(arr < 1) | np.isnan(arr)]}")
    return arr


def _check_sigma(noise_multiplier: float) -> float:
    s = float(noise_multiplier)
    if not s > 0:
        raise DomainError(f"noise_multiplier must be > 0, got noise_multiplier={noise_multiplier}")
    return s


def _check_q(q: float) -> float:
    qq = float(q)
    if not 0.0 <= qq <= 1.0:
        raise DomainError(f"sampling rate q must be in [0, 1], got q={q}")
    return qq


def _log_expm1_vec(c: np.ndarray) -> np.ndarray:
    """log(e^c − 1) elementwise, −inf where c == 0 (c >= 0)."""
    out = np.full_like(c, -np.inf, dtype=float)
    big = c > 30.0
    small = (c > 0) & ~big
    out[big] = c[big] + np.log1p(-np.exp(-c[big]))
    out[small] = np.log(np.expm1(c[small]))
    return out


def _log_abs_expm1_vec(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log|e^c − 1|, sign(c)) elementwise, for any real c (−inf where c == 0)."""
    c = np.asarray(c, dtype=float)
    out = np.full(c.shape, -np.inf)
    pos = c > 0
    out[pos] = _log_expm1_vec(c[pos])
    neg = c < 0
    cn = c[neg]
    # log(1 − e^c) for c < 0: log(−expm1(c)) near 0, log1p(−e^c) further out
    out[neg] = np.where(cn > -0.693, np.log(-np.expm1(np.maximum(cn, -0.693))),
                        np.log1p(-np.exp(np.minimum(cn, -0.693))))
    return out, np.sign(c)


def _mills_bound(u: np.ndarray) -> np.ndarray:
    """Upper bound on d log Φ(u)/du = φ(u)/Φ(u): 1 − u for u < 0, e^{−u²/2} for u ≥ 0."""
    return np.where(u < 0, 1.0 - u, np.exp(-0.5 * np.square(np.maximum(u, 0.0))))


def _log1p_exp(x: float) -> float:
    """log(1 + e^x) for a float x (possibly ±inf)."""
    if x == -math.inf:
        return 0.0
    if x > 0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


def _rdp_from_log_am1(log_am1: float, alpha: float) -> float:
    """Upper bound on log(A)/(α−1) given an upper bound on log(A − 1)."""
    if log_am1 == math.inf:
        return math.inf
    if log_am1 - math.log(alpha - 1.0) < -700.0:
        # log A ≤ A − 1, so the RDP is below e^{-700}: report that (normal) double, avoiding
        # subnormal results whose relative error is uncontrolled
        return math.exp(-700.0)
    log_a = _log1p_exp(log_am1)  # log A = log(1 + (A − 1)), monotone in A − 1
    return inflate(log_a / (alpha - 1.0), 8 * _EPS)  # three roundings (exp, log1p, division)


def _signed_log_sum_upper(logs: np.ndarray, signs: np.ndarray, mags: np.ndarray) -> np.ndarray:
    """Row-wise upper bound on log(Σ sign·e^log), with each log carrying error ≤ _ERR·mag.

    Rows are independent sums; entries with log = −inf are zeros. Raises NumericalError when a
    row's certified upper bound is not positive (the true sum is A − 1 > 0, so that is a bug).
    """
    m = np.max(logs, axis=1)
    if not np.all(np.isfinite(m)):
        raise NumericalError("subsampled-Gaussian RDP: a row of terms is empty or infinite")
    shift = logs - m[:, None]
    t = np.exp(shift)  # exp(-inf) = 0 for padding
    s = np.sum(signs * t, axis=1)
    a = np.sum(t, axis=1)
    n = np.sum(t > 0, axis=1)
    # |e^{L+δ} − e^L| ≤ e^L·2|δ| for |δ| ≤ 1 (δ ≤ _ERR·mag); the rounding of the shift L − m
    # (≤ eps·|L − m|) and of exp (≤ eps) per term; summation error ≤ (n+2)·eps·Σ|t|.
    # |L| itself joins the magnitude: it bounds any piece not listed in mags (triangle inequality)
    shift_abs = np.where(t > 0, np.abs(shift), 0.0)
    tot_mag = np.where(t > 0, mags + np.abs(np.where(t > 0, logs, 0.0)), 0.0)
    err = np.sum(t * (2.0 * _ERR * tot_mag + 2.0 * _EPS * shift_abs), axis=1) + (n + 4) * _EPS * a
    upper = s + err
    if np.any(upper <= 0):
        bad = np.flatnonzero(upper <= 0)
        raise NumericalError(
            f"subsampled-Gaussian RDP: series sum not certified positive (rows {bad.tolist()}, "
            f"sum {s[bad].tolist()}, error bound {err[bad].tolist()})")
    return m + np.log(upper) + 4 * _EPS * (np.abs(m) + 50.0)


# --------------------------------------------------------------------------------------------
# plain mechanisms
# --------------------------------------------------------------------------------------------

def rdp_gaussian(orders, noise_multiplier: float) -> np.ndarray:
    """Upper bound on the RDP of the Gaussian mechanism: α/(2σ²) at each order.

    References: [Mir17, Prop 7]. σ = noise_multiplier is the noise std divided by the L2
    sensitivity. α = ∞ gives +inf.
    """
    alphas = _orders_array(orders)
    sigma = _check_sigma(noise_multiplier)
    if sigma == math.inf:
        return np.zeros_like(alphas)
    with np.errstate(over="ignore"):
        # [Mir17, Prop 7] α/(2σ²); three roundings (≤ 1.5 ulp), enlarged by 4 ulps.
        val = (0.5 * alphas / sigma) / sigma
        val = val * (1.0 + 4 * _EPS)
    # a value that underflowed below the normal range is reported as the smallest normal
    # double, which exceeds the truth (the subnormal result is off by at most a few 1e-324)
    return np.where(val < _MIN_NORMAL, _MIN_NORMAL, val)


def _laplace_scalar(alpha: float, lam: float) -> float:
    """Upper bound on the Laplace RDP at one order, λ = b/Δ [Mir17, Prop 6]."""
    a = 1.0 / lam
    if alpha == math.inf:
        return inflate(a)  # [Mir17, Prop 6] ε(∞) = Δ/b: pure DP
    if a == 0:
        return 0.0
    if alpha == 1.0:
        # [Mir17, Prop 6] α→1 limit (KL): a + e^{−a} − 1 = Σ_{n≥2} (−a)^n/n!
        if a <= 0.5:
            s, term = 0.0, 1.0
            for n in range(1, 30):
                term *= -a / n
                if n >= 2:
                    s += term
            return inflate(s, 1e-12)
        return inflate(a + math.expm1(-a), 1e-12)
    h = alpha - 1.0
    if alpha * a <= 0.5:
        # A_α − 1 = [α·expm1(ha) + h·expm1(−αa)]/(α+h) (the [Mir17, Prop 6] bracket minus 1),
        # with the first-order terms αha − hαa cancelled analytically:
        # α·expm1(ha) + h·expm1(−αa) = Σ_{n≥2} [α(ha)^n + h(−αa)^n]/n! = αh(α+h)(a²/2 − a³/6
        # + ...), each |term| ≤ 2αh·a·(αa)^{n−1}/n!; with αa ≤ 1/2 the truncation at n = 40
        # leaves a remainder below 1e-60 of the n = 2 term.
        s = 0.0
        pa = 1.0  # (h·a)^n / n!
        pb = 1.0  # (−α·a)^n / n!
        for n in range(1, 41):
            pa *= h * a / n
            pb *= -alpha * a / n
            if n >= 2:
                s += alpha * pa + h * pb
        x = s / (alpha + h)
        if x <= 0 and a < 1e-100:
            # the series underflowed (λ beyond 1e100): the mechanism is a-DP, hence
            # (a²/2)-zCDP, so its RDP is at most αa²/2 [BS16, Prop 1.4]; below the normal
            # range the smallest normal double bounds it (as for the Gaussian above)
            return max(inflate(0.5 * alpha * a * a, 1e-12), _MIN_NORMAL)
        if x <= 0:
            raise NumericalError(f"Laplace RDP: non-positive series at alpha={alpha}, lam={lam}")
        return inflate(math.log1p(x) / h, 1e-12)
    if h * a <= 700.0:
        # [Mir17, Prop 6] with 1 subtracted: X = [α·expm1(ha) + h·expm1(−αa)]/(α+h), where the
        # cancellation is at most a factor 15 for αa > 1/2 (A ≥ h(αa − 1 + e^{−αa}) ≥ 0.1 h·...).
        x = (alpha * math.expm1(h * a) + h * math.expm1(-alpha * a)) / (alpha + h)
        if x <= 0:
            raise NumericalError(f"Laplace RDP: non-positive value at alpha={alpha}, lam={lam}")
        return inflate(math.log1p(x) / h, 1e-12)
    # log space for large (α−1)/λ: both terms positive, no cancellation.
    log_a = log_add(math.log(alpha) + h * a, math.log(h) - alpha * a) - math.log(alpha + h)
    return inflate(log_a / h, 1e-12)


def rdp_laplace(orders, noise_multiplier: float) -> np.ndarray:
    """Upper bound on the RDP of the Laplace mechanism with scale b = noise_multiplier·Δ.

    References: [Mir17, Prop 6]. With λ = b/Δ, for α > 1
    ε(α) = 1/(α−1)·log(α/(2α−1)·e^{(α−1)/λ} + (α−1)/(2α−1)·e^{−α/λ}); ε(1) is the KL limit
    1/λ + e^{−1/λ} − 1 and ε(∞) = 1/λ. Evaluated with the constant 1 cancelled analytically,
    so small values keep their relative accuracy; the result is enlarged by 1e-12 relative,
    which exceeds the rounding error of each path (≤ 40 operations, condition number ≤ 15).
    """
    alphas = _orders_array(orders)
    lam = _check_sigma(noise_multiplier)
    return np.array([_laplace_scalar(float(a), lam) for a in alphas], dtype=float)


# --------------------------------------------------------------------------------------------
# Poisson-subsampled Gaussian [MTZ19]
# --------------------------------------------------------------------------------------------

@lru_cache(maxsize=64)
def _int_layout(ns: tuple[int, ...]):
    """Concatenated k = 2..n for every integer order n, with exact log C(n, k) and segments."""
    ks, logc, cmag, starts = [], [], [], []
    pos = 0
    for n in ns:
        k = np.arange(2, n + 1)
        starts.append(pos)
        pos += k.size
        ks.append(k)
        lc, mg = _log_binom_int(n)
        logc.append(lc[2:])
        cmag.append(mg[2:])
    ki = np.concatenate(ks)
    k_all = ki.astype(float)
    lengths = np.array([n - 1 for n in ns])
    nk = np.repeat(np.array(ns, dtype=float), lengths) - k_all  # n − k
    seg = np.repeat(np.arange(len(ns)), lengths)
    return (k_all, ki, nk, np.concatenate(logc), np.concatenate(cmag),
            np.array(starts, dtype=np.intp), seg, lengths.astype(float))


@lru_cache(maxsize=4096)
def _log_binom_int(n: int) -> tuple[np.ndarray, np.ndarray]:
    """log C(n, k) for k = 0..n, and the magnitude that bounds its rounding error."""
    if n <= 10000:
        # exact integers, one correctly-rounded-ish log each: error ≤ 2 ulp of |log C| + ulp;
        # C(n, k) = C(n, n − k), so the integers up to k = n/2 give every value
        c, vals = 1, [0.0]
        half = n // 2
        for k in range(half):
            c = c * (n - k) // (k + 1)
            vals.append(math.log(c))
        vals.extend(vals[n - k] for k in range(half + 1, n + 1))
        lc = np.array(vals)
        return lc, np.abs(lc) + 1.0
    lg = np.array([math.lgamma(k + 1.0) for k in range(n + 1)])
    lc = lg[n] - lg - lg[::-1]
    return lc, lg[n] + lg + lg[::-1] + 1.0


def _int_log_am1(ns: tuple[int, ...], q: float, log_w: np.ndarray, w_mag: np.ndarray
                 ) -> np.ndarray:
    """Upper bounds on log(A_n − 1) = log Σ_{k=2}^{n} C(n,k) q^k (1−q)^{n−k} w_k, all w_k > 0.

    log_w[k] = log w_k and w_mag[k] bounds its error magnitude. For the Gaussian,
    w_k = e^{(k²−k)/(2σ²)} − 1 [MTZ19, Sec 3.2]: the binomial identity Σ_k C(n,k)q^k(1−q)^{n−k}
    = 1 removes the constant 1 exactly, so every term is positive and A − 1 keeps full relative
    accuracy even when it is 1e-20.
    """
    k, ki, nk, logc, cmag, starts, seg, lengths = _int_layout(ns)
    lq, l1q = math.log(q), math.log1p(-q)
    terms = logc + k * lq + nk * l1q + log_w[ki]
    mags = cmag + k * abs(lq) + nk * abs(l1q) + w_mag[ki] + np.abs(terms)
    m = np.maximum.reduceat(terms, starts)
    shift = terms - m[seg]
    t = np.exp(shift)
    s = np.add.reduceat(t, starts)
    # all terms positive: relative error ≤ 2·_ERR·mag per term (log pieces), ≤ 2·eps·|shift|
    # (rounding of the shift) and eps (exp), plus the summation error (n+2)·eps·Σt
    e = np.add.reduceat(t * (2.0 * _ERR * mags + 2.0 * _EPS * np.abs(shift)), starts)
    upper = s + e + (lengths + 4) * _EPS * s
    return m + np.log(upper) + 4 * _EPS * (np.abs(m) + 50.0)


def _gauss_weights(nmax: int, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(nmax + 1, dtype=float)
    c = k * (k - 1.0) * (0.5 / sigma / sigma)  # (k²−k)/(2σ²)
    return _log_expm1_vec(c), c + 2.0


@lru_cache(maxsize=256)
def _frac_binom(alphas: tuple[float, ...], width: int):
    """log|C(α, k)|, sign and error magnitude for k = 0..width−1 (rows: orders).

    For k > ⌊α⌋ the reflection Γ(x)Γ(1−x) = π/sin(πx) is used, with sin(π·frac(α)) computed
    from the exact fractional part, so coefficients near integer α stay accurate.
    """
    a = np.array(alphas)[:, None]
    k = np.arange(width, dtype=float)[None, :]
    fl = np.floor(a)
    f = a - fl  # exact
    n = fl + 1.0  # ⌈α⌉ for fractional α
    low = k <= fl
    # lgamma errs by ≤ 16 eps·(|value| + 1) (dpcalc.numeric.special): covered by mag below
    g_a = lgamma(a + 1.0)
    g_k = lgamma(k + 1.0)
    g_low = lgamma(np.where(low, a - k + 1.0, 1.0))
    # Γ(α−k+1) for α−k+1 < 0: log|Γ(x)| = log π − log|sin πx| − log Γ(1−x), 1−x = k−α > 0
    g_high = lgamma(np.where(low, 1.0, k - a))
    log_sin = np.log(np.sin(np.pi * np.minimum(f, 1.0 - f)))
    log_abs_gamma_x = np.where(low, g_low, 2 * _LOG_HALF_PI - log_sin - g_high)
    logc = g_a - g_k - log_abs_gamma_x
    mag = np.abs(g_a) + np.abs(g_k) + np.where(low, np.abs(g_low), np.abs(g_high)
                                                + np.abs(log_sin) + 2.0) + 1.0
    # sign of C(α, k): + for k ≤ ⌈α⌉, then alternating: (−1)^{k−⌈α⌉} [MTZ19, Sec 3.3]
    sign = np.where(k <= n, 1.0, np.where(((k - n) % 2) == 1, -1.0, 1.0))
    return logc, sign, mag


# q up to this subtracts the constant 1 termwise (needs x0 = q/(1−q) ≤ 1)
_Q_SPLIT = 0.5
_EULER_TERMS = 60  # J: tail terms summed with Euler weights; remainder ≤ 2^-J · first term


def _euler_weights(n_terms: int) -> np.ndarray:
    """θ_i = Σ_{j=i}^{J−1} C(j,i)/2^{j+1}: Σ_i (−1)^i θ_i a_i is the J-term Euler transform.

    For a completely monotone sequence a_i = ∫_0^1 s^i dρ(s) (ρ ≥ 0, no atom at 1),
    Σ_{i≥0} (−1)^i a_i = ∫ dρ/(1+s) = Σ_{j≥0} Δ^j a_0 / 2^{j+1} with Δ^j a_0 = ∫(1−s)^j dρ ≥ 0,
    so the J-term partial sum E_J = Σ_{i<J} (−1)^i θ_i a_i satisfies
    E_J ≤ Σ_{i≥0} (−1)^i a_i ≤ E_J + 2^{−J} a_0 (the remainder is ∫((1−s)/2)^J/(1+s) dρ).
    """
    from fractions import Fraction

    theta = []
    for i in range(n_terms):
        # the exact sum over the common denominator 2^J, then one correctly rounded division
        # (1/2 ulp, covered by the error magnitudes)
        num = sum(math.comb(j, i) << (n_terms - 1 - j) for j in range(i, n_terms))
        theta.append(float(Fraction(num, 2 ** n_terms)))
    return np.array(theta)


_LOG_THETA = np.log(_euler_weights(_EULER_TERMS))


def _frac_log_am1(alphas: tuple[float, ...], q: float, sigma: float) -> np.ndarray:
    """Upper bounds on log(A_α − 1) for non-integer α > 1, 0 < q < 1 [MTZ19, Sec 3.3].

    Let r(z) = e^{(2z−1)/(2σ²)}, x(z) = q·r(z)/(1−q) and z0 = σ²·log((1−q)/q) + 1/2, where
    x = 1. With floats za ≤ z0 ≤ zb (a few ulps apart), A_α = ∫_{z≤za} μ0 (1−q)^α (1+x)^α
    + ∫_{z≥zb} μ0 (qr)^α (1+y)^α + (sliver), with x ≤ 1 on the left, y = 1/x ≤ 1 on the right,
    and the sliver (za, zb) bounded by its width × max μ0 × F(zb). Expand (1+x)^α = Σ_k C(α,k) x^k
    and integrate termwise: ∫_{z≤za} μ0 r^k = e^{(k²−k)/(2σ²)} Φ((za−k)/σ) and
    ∫_{z≥zb} μ0 r^j = e^{(j²−j)/(2σ²)} Φ((j−zb)/σ).

    Terms k ≤ ⌈α⌉ have C(α,k) > 0 and are summed exactly. For k > ⌈α⌉ the signs alternate and
    |C(α,k)| = (|sin πα|/π)·∫_0^1 t^{k−α−1}(1−t)^α dt, so the tail magnitudes a_k =
    |C(α,k)|·∫ x^k dν form a completely monotone sequence (a moment sequence of s = t·x ∈
    [0,1]). The tail, −Σ_i (−1)^i a_{⌈α⌉+1+i}, is bounded above by −E_J with the Euler weights of
    ``_euler_weights`` (remainder 2^{−J}·a ≥ 0 dropped: the bound only grows). This converges
    geometrically even where the plain series converges like k^{−α−2} (x near 1, q near 1/2).

    For q ≤ 1/2 the constant 1 = (1−q)^α Σ_k C(α,k) x0^k (x0 = q/(1−q)) is subtracted termwise
    with the same weights (its Euler remainder, ≤ 2^{−J}·|C(α,⌈α⌉+1)| x0^{⌈α⌉+1} (1−q)^α, is
    added; |C(α,k)| x0^k is completely monotone for x0 ≤ 1 too), so A − 1 keeps its relative
    accuracy for tiny q. For q > 1/2 the mirror image is used: 1 = q^α Σ_k C(α,k) y0^k
    (y0 = (1−q)/q < 1) is subtracted termwise from the region-1 series.
    """
    a = np.array(alphas)[:, None]
    rows = len(alphas)
    ceil_a = np.floor(a) + 1.0  # ⌈α⌉ (α is not an integer)
    width = int(ceil_a.max()) + _EULER_TERMS + 1  # k = 0..⌈α⌉+J
    logc, sign, cmag = _frac_binom(tuple(alphas), width)
    k = np.arange(width, dtype=float)[None, :]
    # weight of term k: 1 up to ⌈α⌉, then θ_{k−⌈α⌉−1}; zero beyond ⌈α⌉ + J
    i_tail = (k - ceil_a - 1.0).astype(np.intp)
    in_tail = (i_tail >= 0) & (i_tail < _EULER_TERMS)
    log_wt = np.where(k <= ceil_a, 0.0,
                      np.where(in_tail, _LOG_THETA[np.clip(i_tail, 0, _EULER_TERMS - 1)],
                               -np.inf))
    lcw = logc + log_wt  # weights θ ∈ (0, 1] carried with the binomial coefficient
    first_tail = k == ceil_a + 1.0

    lq, l1q = math.log(q), math.log1p(-q)
    s2 = sigma * sigma
    inv2s2 = 0.5 / sigma / sigma
    if 0.25 <= q <= 0.75:
        # log((1−q)/q) = log1p((1−2q)/q) with 1 − 2q exact: error ≤ 4 eps·|ℓ| (|u|/|log1p u|
        # ≤ 1.9 and 1/(1+u) ≤ 3 on this range), small even where ℓ ≈ 0 (q ≈ 1/2)
        ell = math.log1p((1.0 - 2.0 * q) / q)
        ell_err = 4.0 * abs(ell)
    else:
        ell = l1q - lq  # log((1−q)/q)
        ell_err = abs(l1q) + abs(lq)
    z0 = s2 * ell + 0.5
    # the rounding of z0 is a few ulps of its pieces: za ≤ true z0 ≤ zb
    dz = 8 * _EPS * (s2 * ell_err + abs(z0) + 1.0)
    za, zb = z0 - dz, z0 + dz
    # the sliver (za, zb): ∫ μ0 F ≤ (zb − za)·max μ0·F(zb), F(zb) = (1−q)^α (1 + x(zb))^α with
    # x(zb) = e^{(zb − z0)/σ²} ≤ e^{2dz/σ²}: log F(zb) ≤ α(log(1−q) + log 2 + 2dz/σ²)
    dist0 = 0.0 if za <= 0.0 <= zb else min(abs(za), abs(zb))
    l_sliver = (math.log(zb - za) - 0.5 * (dist0 / sigma) ** 2 - 0.5 * math.log(2 * math.pi)
                - math.log(sigma) + a[:, 0] * (l1q + math.log(2.0) + 2.0 * dz / s2))
    l_sliver = l_sliver + 1e-12 * (1.0 + np.abs(l_sliver))  # rounding margin on a crude bound

    zs = za  # region 0 is z ≤ za
    # ---- region 0 (z ≤ za): coefficient (1−q)^α C(α,k) x0^k = C(α,k) q^k (1−q)^{α−k}
    lc0 = lcw + k * lq + (a - k) * l1q
    mag0 = cmag + k * abs(lq) + np.abs(a - k) * abs(l1q) + 1.0
    # per-k quantities are shared by all rows: computed once on a (1, width) row
    ck = k * (k - 1.0) * inv2s2
    u0 = (zs - k) / sigma
    # zs is an exact float (the split point), so u0 = (zs−k)/σ has error ≤ eps·|u0|; log Φ moves
    # by at most that times the Mills bound φ(u)/Φ(u) ≤ 1 − u (u < 0), ≤ e^{−u²/2} (u ≥ 0)
    sens0 = _mills_bound(u0) * np.abs(u0)
    lphi0 = log_ndtr(u0)
    if q <= _Q_SPLIT:
        # bracket e^{c_k}Φ((zs−k)/σ) − 1, split to avoid cancellation:
        #   k ≤ zs: (e^{c_k} − 1) − e^{c_k}Φ((k−zs)/σ);   k > zs: e^{c_k}Φ((zs−k)/σ) − 1
        near = k <= zs
        lphi0m = log_ndtr(-u0)
        p_log = np.where(near, lc0 + _log_expm1_vec(ck[0])[None, :], lc0 + ck + lphi0)
        p_mag = np.where(near, mag0 + ck + 2.0, mag0 + ck + np.maximum(1.0, np.abs(lphi0)) + sens0)
        m_log = np.where(near, lc0 + ck + lphi0m, lc0)
        m_mag = np.where(near, mag0 + ck + np.maximum(1.0, np.abs(lphi0m)) + sens0, mag0)
        # Euler remainder of the constant's tail: 2^{−J}·|C(α,⌈α⌉+1)| q^{⌈α⌉+1} (1−q)^{α−⌈α⌉−1}
        lfirst = np.max(np.where(first_tail, logc + k * lq + (a - k) * l1q, -np.inf), axis=1)
        allow = lfirst - _EULER_TERMS * math.log(2.0)
        allow_mag = np.max(np.where(first_tail, mag0, 0.0), axis=1) + _EULER_TERMS
        blocks = [(p_log, sign, p_mag), (m_log, -sign, m_mag),
                  (allow[:, None], np.ones((rows, 1)), allow_mag[:, None])]
    else:
        p_log = lc0 + ck + lphi0  # plain: x ≤ 1 on region 0, no constant subtracted here
        p_mag = mag0 + ck + np.maximum(1.0, np.abs(lphi0)) + sens0
        blocks = [(p_log, sign, p_mag)]

    blocks.append((l_sliver[:, None], np.ones((rows, 1)), np.zeros((rows, 1))))

    # ---- region 1 (z ≥ zb): C(α,k) q^{α−k} (1−q)^k e^{c_j} Φ((j−zb)/σ), j = α−k
    j = a - k  # exact for |j| < 2; otherwise relative error ≤ eps
    lc1 = lcw + j * lq + k * l1q  # C(α,k) q^j (1−q)^k
    mag1 = cmag + np.abs(j) * abs(lq) + k * abs(l1q) + 1.0
    cj = j * (j - 1.0) * inv2s2  # relative error ≤ 6 eps (j − 1 exact when |j| < 2)
    u1 = (j - zb) / sigma
    lphi1 = log_ndtr(u1)
    # j = α−k and u1 carry errors ≤ eps·|j| and ≤ eps·(|u1| + 2(|j| + |zb|)/σ)
    sens1 = _mills_bound(u1) * (np.abs(u1) + 2.0 * (np.abs(j) + abs(zb)) / sigma)
    cmag1 = np.abs(cj) + np.abs(j) * (np.abs(j) + 1.0) / s2 + 8.0
    if q <= _Q_SPLIT:
        r_log = lc1 + cj + lphi1
        r_mag = mag1 + cmag1 + np.maximum(1.0, np.abs(lphi1)) + sens1
        blocks.append((r_log, sign, r_mag))
    else:
        # subtract 1 = q^α Σ_k C(α,k) y0^k (y0 = (1−q)/q ≤ 1) termwise from region 1:
        #   u1 ≥ 0: e^{c_j}Φ(u1) − 1 = expm1(c_j) − e^{c_j}Φ(−u1);  u1 < 0: e^{c_j}Φ(u1) − 1
        near = u1 >= 0
        lphi1m = log_ndtr(-u1)
        l_em1, sgn_em1 = _log_abs_expm1_vec(cj)
        base = mag1 + cmag1
        p_log = np.where(near, lc1 + l_em1, lc1 + cj + lphi1)
        p_sign = np.where(near, sign * sgn_em1, sign)
        p_mag = np.where(near, base + 2.0, base + np.maximum(1.0, np.abs(lphi1)) + sens1)
        m_log = np.where(near, lc1 + cj + lphi1m, lc1)
        m_mag = np.where(near, base + np.maximum(1.0, np.abs(lphi1m)) + sens1, mag1)
        # Euler remainder of the constant's tail: 2^{−J}·|C(α,⌈α⌉+1)| q^{α−⌈α⌉−1} (1−q)^{⌈α⌉+1}
        lfirst = np.max(np.where(first_tail, logc + j * lq + k * l1q, -np.inf), axis=1)
        allow = lfirst - _EULER_TERMS * math.log(2.0)
        allow_mag = np.max(np.where(first_tail, mag1, 0.0), axis=1) + _EULER_TERMS
        blocks += [(p_log, p_sign, p_mag), (m_log, -sign, m_mag),
                   (allow[:, None], np.ones((rows, 1)), allow_mag[:, None])]

    logs = np.concatenate([b[0] for b in blocks], axis=1)
    signs = np.concatenate([np.broadcast_to(b[1], b[0].shape) for b in blocks], axis=1)
    mags = np.concatenate([np.broadcast_to(b[2], b[0].shape) for b in blocks], axis=1)
    mags = np.where(np.isfinite(logs), mags, 0.0)
    return _signed_log_sum_upper(logs, signs, mags)


def _subsampled_gaussian_uncached(alphas: tuple[float, ...], q: float, sigma: float
                                  ) -> np.ndarray:
    out = np.empty(len(alphas))
    if q == 0.0 or sigma == math.inf:
        out[:] = 0.0
        return out
    gauss = rdp_gaussian(np.array(alphas), sigma)
    if q == 1.0:
        return gauss  # [MTZ19] q = 1 is the Gaussian itself
    if not _SIGMA_RANGE[0] <= sigma <= _SIGMA_RANGE[1]:
        # (k²−k)/(2σ²) would overflow or underflow; the Gaussian value bounds the subsampled
        # one (subsampling never increases RDP, see below) and is then either huge or < 1e-200
        return gauss
    int_idx, int_ns, frac_idx, frac_as = [], [], [], []
    for i, a in enumerate(alphas):
        if a == math.inf:
            out[i] = math.inf  # D_∞ of the subsampled Gaussian is unbounded
        elif a > _MAX_SERIES_ORDER:
            out[i] = math.inf  # not summed (cost ∝ α); capped by the Gaussian value below
        elif a == 1.0:
            # RDP is non-decreasing in α [Mir17, Sec 3], so ε(1) ≤ ε(1 + 2^-10)
            frac_idx.append(i)
            frac_as.append(1.0 + 2.0**-10)
        elif float(a).is_integer():
            int_idx.append(i)
            int_ns.append(int(a))
        else:
            frac_idx.append(i)
            frac_as.append(a)
    # every fractional α is also bounded by the exact value at ⌈α⌉ (monotonicity in α)
    ceil_ns = [int(math.floor(a)) + 1 for a in frac_as]
    all_ns = tuple(sorted(set(int_ns) | set(ceil_ns)))
    int_vals: dict[int, float] = {}
    with np.errstate(over="raise", invalid="raise", divide="ignore", under="ignore"):
        if all_ns:
            log_w, w_mag = _gauss_weights(max(all_ns), sigma)
            lam1 = _int_log_am1(all_ns, q, log_w, w_mag)
            for n, v in zip(all_ns, lam1, strict=True):
                int_vals[n] = _rdp_from_log_am1(float(v), float(n))
        for i, n in zip(int_idx, int_ns, strict=True):
            out[i] = int_vals[n]
        # orders of similar size are summed together (the block width follows the largest α)
        buckets: dict[int, list[int]] = {}
        for pos, a in enumerate(frac_as):
            buckets.setdefault(max(4, math.ceil(math.log2(a + 1.0))), []).append(pos)
        for members in buckets.values():
            lam_f = _frac_log_am1(tuple(frac_as[p] for p in members), q, sigma)
            for p, v in zip(members, lam_f, strict=True):
                a = frac_as[p]
                out[frac_idx[p]] = min(_rdp_from_log_am1(float(v), a), int_vals[ceil_ns[p]])
    # subsampling never increases RDP: by joint quasi-convexity of Rényi divergence (van Erven &
    # Harremoës 2014, Thm 13), D_α((1−q)P + qQ ‖ P) ≤ D_α(Q ‖ P), and likewise for the other
    # direction; so the Gaussian value [Mir17, Prop 7] also bounds every order (α = 1 included)
    out = np.minimum(out, gauss)
    if np.any(np.isnan(out)) or np.any(out < 0):
        raise NumericalError(f"subsampled-Gaussian RDP invalid at q={q}, sigma={sigma}")
    return out


@lru_cache(maxsize=512)
def _subsampled_gaussian_cached(alphas: tuple[float, ...], q: float, sigma: float) -> np.ndarray:
    res = _subsampled_gaussian_uncached(alphas, q, sigma)
    res.setflags(write=False)
    return res


def rdp_subsampled_gaussian(orders, q: float, noise_multiplier: float) -> np.ndarray:
    """Upper bound on the per-step RDP of the Poisson-subsampled Gaussian (add/remove).

    References: [MTZ19, Sec 3.2] exact binomial sum at integer α, [MTZ19, Sec 3.3] series at
    fractional α (tails summed with a certified Euler-transform bound; see ``_frac_log_am1``).
    q = 1 is [Mir17, Prop 7] exactly, q = 0 gives 0, α = ∞ gives +inf; α = 1 is bounded by
    α = 1 + 2^-10 (RDP is non-decreasing in α). Every fractional-order value is also capped by
    the exact value at ⌈α⌉ for the same reason, and every value by the unsubsampled Gaussian
    RDP (subsampling never increases Rényi divergence); orders above 65536 and σ outside
    [1e-100, 1e100] get that Gaussian value. Results are cached per (orders, q, σ).

    Accuracy: relative excess over the true RDP is typically below 1e-11 (integer α) and 1e-9
    (fractional α); it grows only where z0/σ ≈ 0 (q ≈ 1/2) with σ ≳ 30 at α near 1 (the series
    terms are O(1) and cancel), e.g. +1.6% at q = 1/2, σ = 1e4, α = 1.01 — still a bound.

    Args:
        orders: RDP orders α ≥ 1 (sequence or array).
        q: Poisson sampling rate in [0, 1].
        noise_multiplier: σ/Δ > 0.

    Returns:
        Array of upper bounds, one per order (+inf where no finite bound is available).

    Raises:
        DomainError (a ValueError): q, σ or an order out of range. NumericalError: a bound
        that could not be certified (a bug, never a silent result).
    """
    alphas = _orders_array(orders)
    qq = _check_q(q)
    sigma = _check_sigma(noise_multiplier)
    return np.array(_subsampled_gaussian_cached(tuple(alphas.tolist()), qq, sigma))


# --------------------------------------------------------------------------------------------
# Poisson-subsampled Laplace [ZW19, Thm 6]
# --------------------------------------------------------------------------------------------

@lru_cache(maxsize=64)
def _zw19_weights(nmax: int, lam: float):
    """log w_ℓ and error magnitudes, ℓ = 0..nmax: w_2 = e^{ε(2)} − 1, w_ℓ = 3e^{(ℓ−1)ε(ℓ)} − 1."""
    eps_l = rdp_laplace(np.arange(1, nmax + 1, dtype=float), lam)  # ε(1..nmax), upper bounds
    if not np.all(eps_l < 1e300):
        return None
    ce = np.zeros(nmax + 1)
    ce[1:] = np.arange(nmax, dtype=float) * eps_l  # (ℓ−1)ε(ℓ); rounding covered by w_mag
    log_w = np.full(nmax + 1, -np.inf)
    if nmax >= 2:
        log_w[2] = float(_log_expm1_vec(np.array([eps_l[1]]))[0])  # e^{ε(2)} − 1
    # 3e^{c} − 1 = 3e^{c}(1 − e^{−c}/3)
    log_w[3:] = math.log(3.0) + ce[3:] + np.log1p(-np.exp(-ce[3:]) / 3.0)
    log_w.setflags(write=False)
    w_mag = ce + 2.0
    w_mag.setflags(write=False)
    return log_w, w_mag


def rdp_subsampled_laplace(orders, q: float, noise_multiplier: float) -> np.ndarray:
    """Upper bound on the per-step RDP of the Poisson-subsampled Laplace mechanism.

    References: the general bound of [ZW19, Thm 6] for integer α ≥ 2 and any mechanism with
    RDP ε(·) under add/remove neighbours,
    ε'(α) ≤ 1/(α−1)·log{(1−q)^{α−1}(αq − q + 1) + C(α,2)q²(1−q)^{α−2}e^{ε(2)}
                        + 3·Σ_{ℓ=3}^{α} C(α,ℓ)(1−q)^{α−ℓ}q^ℓ e^{(ℓ−1)ε(ℓ)}},
    with ε(·) the Laplace RDP [Mir17, Prop 6]. Using Σ_ℓ C(α,ℓ)q^ℓ(1−q)^{α−ℓ} = 1 the
    bracket minus 1 is Σ_{ℓ≥2} C(α,ℓ)q^ℓ(1−q)^{α−ℓ} w_ℓ with w_2 = e^{ε(2)} − 1 and
    w_ℓ = 3e^{(ℓ−1)ε(ℓ)} − 1 > 0, summed in log space like the Gaussian. A fractional α uses
    ⌈α⌉ (valid: RDP is non-decreasing in α), α = 1 uses α = 2. Each value is also capped by
    the unsubsampled Laplace RDP (subsampling never hurts, by joint quasi-convexity of Rényi
    divergence) and by the pure-DP amplification log(1 + q(e^{1/λ} − 1)) [BBG18, Thm 8],
    which is also the value at α = ∞.
    """
    alphas = _orders_array(orders)
    qq = _check_q(q)
    lam = _check_sigma(noise_multiplier)
    if qq == 0.0 or lam == math.inf:
        return np.zeros_like(alphas)
    plain = rdp_laplace(alphas, lam)
    if qq == 1.0:
        return plain
    # [BBG18, Thm 8] pure ε = 1/λ amplified to log(1 + q(e^{1/λ} − 1)): bounds every order
    a_inv = 1.0 / lam
    if a_inv <= 1.0:
        inf_bound = inflate(math.log1p(qq * math.expm1(a_inv)), 8 * _EPS)
    else:  # = 1/λ + log(q + (1−q)e^{−1/λ}), no overflow for tiny λ
        inf_bound = inflate(a_inv + math.log(qq + (1.0 - qq) * math.exp(-a_inv)), 8 * _EPS)
    ns = tuple(sorted({2 if a <= 2 else int(math.ceil(a)) for a in alphas
                       if a <= _MAX_SERIES_ORDER}))
    vals: dict[int, float] = {}
    weights = _zw19_weights(max(ns), lam) if ns else None
    if weights is not None:  # None: no finite series bound (λ ~ 0); the caps below apply
        with np.errstate(over="raise", invalid="raise", divide="ignore", under="ignore"):
            lam1 = _int_log_am1(ns, qq, *weights)
        for n, v in zip(ns, lam1, strict=True):
            vals[n] = _rdp_from_log_am1(float(v), float(n))
    out = np.empty_like(alphas)
    for i, a in enumerate(alphas):
        n = 2 if a <= 2 else (int(math.ceil(a)) if a <= _MAX_SERIES_ORDER else -1)
        out[i] = min(vals.get(n, math.inf), plain[i], inf_bound)
    return out


# --------------------------------------------------------------------------------------------
# conversion to (ε, δ)
# --------------------------------------------------------------------------------------------

def _check_conversion(conversion: str) -> None:
    if conversion not in ("classic", "improved"):
        raise DomainError(f"conversion must be 'classic' or 'improved', got {conversion!r}")


def _check_rdp(orders, rdp) -> tuple[np.ndarray, np.ndarray]:
    alphas = _orders_array(orders)
    r = np.atleast_1d(np.asarray(rdp, dtype=float))
    if r.shape != alphas.shape:
        raise DomainError(f"orders and rdp must have the same length, got {alphas.shape} and "
                         f"{r.shape}")
    if np.any(np.isnan(r)) or np.any(r < 0):
        raise DomainError("RDP values must be >= 0 and not NaN (a negative RDP bound is a bug "
                         f"upstream), got {r[np.isnan(r) | (r < 0)]}")
    return alphas, r


def compose_steps(per_step, steps: int) -> np.ndarray:
    """Upper bound on the RDP of ``steps`` compositions: RDP adds [Mir17, Prop 1]; the
    product is rounded up one ulp (overflow to +inf means no guarantee at that order)."""
    with np.errstate(over="ignore"):
        return np.nextafter(np.asarray(per_step, dtype=float) * float(steps), np.inf)


def epsilon_from_rdp(orders, rdp, log_delta: float, conversion: str = "improved"
                     ) -> tuple[float, float, np.ndarray]:
    """Upper bound on ε such that (total) RDP at the given orders implies (ε, δ)-DP.

    References: ``classic`` ε = RDP(α) + log(1/δ)/(α−1) [Mir17, Prop 3]; ``improved``
    ε = RDP(α) + log((α−1)/α) − (log δ + log α)/(α−1) [CKS20, Prop 12 (v4)]; [ALCKS21].
    Any order gives a valid bound, so the minimum over orders needs no rounding care; each
    per-order value is enlarged by 8 ulps of the magnitudes it is built from, which also
    covers a 2-ulp rounding already in ``rdp`` (e.g. from steps·rdp). ε is clamped at 0
    ((ε, δ)-DP with ε < 0 implies (0, δ)-DP). Orders α ≤ 1 and orders with infinite RDP are
    skipped (+inf); at α = ∞, ε = RDP(∞) (pure DP).

    Args:
        orders: RDP orders. rdp: total RDP at each order (already composed).
        log_delta: natural log of δ (may be −2000 for δ = 1e-900; −inf means δ = 0).
        conversion: "improved" (default) or "classic".

    Returns:
        (epsilon, best_order, per_order_epsilon). With no usable order: (inf, nan, all inf).
    """
    _check_conversion(conversion)
    alphas, r = _check_rdp(orders, rdp)
    ld = float(log_delta)
    if math.isnan(ld):
        raise DomainError("log_delta must not be NaN")
    per = np.full(alphas.shape, math.inf)
    for i, (a, rv) in enumerate(zip(alphas.tolist(), r.tolist(), strict=True)):
        if rv == math.inf or a <= 1.0:
            continue
        if a == math.inf:
            per[i] = inflate(rv, 8 * _EPS) if rv > 0 else 0.0  # [Mir17, Prop 3] ∞-RDP is pure DP
            continue
        if ld >= 0.0:
            per[i] = 0.0  # δ ≥ 1: every mechanism is (0, δ)-DP
            continue
        if ld == -math.inf:
            continue  # δ = 0 needs α = ∞
        am1 = a - 1.0
        if conversion == "classic":
            t1 = 0.0
            t2 = -ld / am1  # [Mir17, Prop 3] log(1/δ)/(α−1)
        else:
            t1 = math.log1p(-1.0 / a)  # [CKS20, Prop 12 (v4)] log((α−1)/α)
            t2 = -(ld + math.log(a)) / am1  # −(log δ + log α)/(α−1)
        e = rv + t1 + t2
        # each piece is within a few ulps of its magnitude; log δ + log α may cancel, so its
        # pieces' magnitudes (|log δ| + log α)/(α−1) are used rather than |t2|
        e += 8 * _EPS * (abs(rv) + abs(t1) + (abs(ld) + math.log(a)) / am1) + _TINY
        per[i] = max(e, 0.0)
    if not np.any(np.isfinite(per)):
        return math.inf, math.nan, per
    best = int(np.argmin(per))
    return float(per[best]), float(alphas[best]), per


def log_delta_from_rdp(orders, rdp, epsilon: float, conversion: str = "improved"
                       ) -> tuple[float, float]:
    """Upper bound on log δ such that (total) RDP at the given orders implies (ε, δ)-DP.

    References: the per-order inverse of ``epsilon_from_rdp``. ``classic``:
    log δ = (α−1)(RDP − ε) [Mir17, Prop 3]. ``improved``: solving
    ε = RDP + log((α−1)/α) − (log δ + log α)/(α−1) for log δ gives
    log δ = (α−1)(RDP − ε + log((α−1)/α)) − log α [CKS20, Prop 12 (v4)]. Each per-order value
    is enlarged by 8 ulps of its pieces and clamped at log δ ≤ 0; any order is valid, so the
    minimum needs no rounding care. At α = ∞: −inf if RDP(∞) ≤ ε (pure DP) else 0.

    Returns:
        (log_delta, best_order); (0.0, nan) when no order is usable (δ ≤ 1 trivially).
    """
    _check_conversion(conversion)
    alphas, r = _check_rdp(orders, rdp)
    eps = float(epsilon)
    if math.isnan(eps) or eps < 0:
        raise DomainError(f"epsilon must be >= 0, got epsilon={epsilon}")
    best_ld, best_a = 0.0, math.nan
    for a, rv in zip(alphas.tolist(), r.tolist(), strict=True):
        if rv == math.inf or a <= 1.0:
            continue
        if a == math.inf:
            ld = -math.inf if rv <= eps else 0.0
        elif eps == math.inf:
            ld = -math.inf
        else:
            am1 = a - 1.0
            diff = rv - eps
            if conversion == "classic":
                ld = am1 * diff  # [Mir17, Prop 3]
                mag = am1 * (abs(rv) + abs(eps))
            else:
                t = math.log1p(-1.0 / a)
                la = math.log(a)
                ld = am1 * (diff + t) - la  # [CKS20, Prop 12 (v4)]
                mag = am1 * (abs(rv) + abs(eps) + abs(t)) + la
            ld += 8 * _EPS * (mag + abs(ld))
            ld = min(ld, 0.0)
        if math.isnan(best_a) or ld < best_ld:
            best_ld, best_a = ld, a
    return best_ld, best_a
