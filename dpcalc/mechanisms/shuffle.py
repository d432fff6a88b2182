"""Shuffled epochs: a sound upper bound without amplification, and the attack's lower bound.

Mechanism. Each epoch draws a fresh uniform permutation of the N examples and cuts it into
consecutive batches of B (every example used once per epoch); each batch's clipped sum
(norms ≤ 1) gets N(0, σ²I). No tight accountant is known for this [Chua24; ChuaS24], so
dpcalc reports the two bounds below; Poisson accounting does not apply to it.

Upper bound (sound). Δ = 1 for add/remove, 2 for replace-one; a user holds k ≤ K examples.

    μ = K·Δ·√E/σ,  δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)       [BW18, Thm 8; DRS19, Cor 3.3]

Proof. The permutations do not depend on the data and have the same law under both
neighbours, so by joint convexity of the hockey-stick divergence it suffices to bound the
divergence for every fixed sequence of permutations. For a fixed one, epoch e places the
user's k examples into batches with counts k_b (Σ_b k_b = k ≤ K); batch b's sum moves by at
most k_b·Δ, all other batches are unchanged (replace-one: the replacing examples take the
same slots; add/remove: the added examples take slots of their own and the other batches
are as without them, the convention of the shuffled-batch analysis of [Chua24]). An
adaptive sequence of Gaussian releases with sensitivities s_i is μ-GDP with
μ² = Σ s_i²/σ² [DRS19, Cor 3.3], and Σ_b (k_b Δ)² ≤ (Σ_b k_b Δ)² ≤ (KΔ)²: each epoch is at
most KΔ/σ-GDP (all k examples in one batch is the worst placement), E epochs √E·KΔ/σ-GDP,
whose exact profile is the analytic Gaussian [DRS19, Cor 2.13; BW18, Thm 8].
A loader whose batch boundaries shift when one example is added or removed (so that every
later batch changes) is not covered by any per-example bound; use replace-one for it.

Lower bound (an attack; certified from below). [Chua24] show that shuffled batches can be
much less private than Poisson accounting says, with this instance: every example but the
target has gradient 0, the target has gradient +1 (add/remove: against its absence;
replace-one: against a replacement with gradient −1), T = ⌈N/B⌉ batches per epoch. The
target's batch J is random, the T noisy batch sums are Y_j = s·[j = J] + N(0, σ²), and the
test statistic is the largest of them, M = max_j Y_j, per epoch. Its laws have closed forms
(the law of M does not depend on J, so partial batches do not matter):

    F_s(t) = Φ(t/σ)^{T−1} · Φ((t − s)/σ)     (s = 1 with the target, 0 without, −1 replaced)

The E epochs use independent permutations, so (M_1, …, M_E) under the two datasets is the
E-fold product of the pair (F_a, F_b): a post-processing of the real output, so its
hockey-stick divergence is at most the mechanism's: a LOWER bound on δ(ε), hence on ε(δ).
It is computed from below: the line is cut into bins (merging outcomes is a post-processing,
so any binning is a valid lower bound), each bin's masses are taken with their rounding
error against the bound (P lowered, Q raised: δ = Σ (P_k − e^ε Q_k)₊ only decreases), the
E-fold product is formed by exact (direct) convolution over loss buckets (merging atoms of
equal bucket is again a post-processing), and the final sum is lowered by its rounding
bound. A user with K > 1 examples is bounded below by the same one-example instance (a user
holds up to K examples).

References: BW18, DRS19, Chua24, ChuaS24.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.errors import DomainError
from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U  # noqa: E402
from dpcalc.numeric.special import LOG_NDTR_ERR, log_ndtr

RELATIONS = ("add-remove", "replace-one")


def sensitivity(relation: str) -> float:
    """Δ of one example's clipped gradient in a batch sum: 1 (add/remove), 2 (replace-one).

    References: DRS19 (sensitivity of the Gaussian mechanism).
    """
    if relation not in RELATIONS:
        raise DomainError(f"relation must be one of {', '.join(RELATIONS)}, got {relation!r}")
    return 1.0 if relation == "add-remove" else 2.0


def upper_sensitivity(epochs: int, relation: str, k: int = 1) -> float:
    """K·Δ·√E, rounded up: the total sensitivity of the no-amplification bound.

    [DRS19, Cor 3.3] E epochs of (KΔ/σ)-GDP are (√E·KΔ/σ)-GDP.

    References: DRS19.
    """
    if int(epochs) != epochs or epochs < 1:
        raise DomainError(f"epochs must be an integer >= 1, got {epochs!r}")
    if int(k) != k or k < 1:
        raise DomainError(f"examples per user must be an integer >= 1, got {k!r}")
    value = k * sensitivity(relation) * math.sqrt(epochs)
    return math.nextafter(value, math.inf)


def upper_log_delta(sigma: float, epochs: int, epsilon: float, relation: str = "add-remove",
                    k: int = 1) -> float:
    """Upper bound on log δ(ε) of E shuffled epochs (no amplification).

    [BW18, Thm 8] analytic Gaussian profile at sensitivity K·Δ·√E [DRS19, Cor 3.3].

    References: BW18, DRS19.
    """
    from dpcalc.relations.gaussian import analytic_log_delta

    return analytic_log_delta(sigma, epsilon, upper_sensitivity(epochs, relation, k))


def upper_epsilon(sigma: float, epochs: int, log_delta: float, relation: str = "add-remove",
                  k: int = 1) -> float:
    """Upper bound on ε(δ) of E shuffled epochs: the smallest ε (to ~1e-12 relative, on the
    passing side) with the analytic Gaussian δ(ε) ≤ δ at sensitivity K·Δ·√E.

    References: BW18 (Thm 8), DRS19 (Cor 3.3).
    """
    from dpcalc.relations.gaussian import analytic_epsilon

    return analytic_epsilon(sigma, log_delta, upper_sensitivity(epochs, relation, k))[0]


# ---------------------------------------------------------------------------------------
# the attack's lower bound
# ---------------------------------------------------------------------------------------

def _shifts(relation: str) -> tuple[float, float]:
    """(s under the first dataset, s under the second) of the attack instance."""
    return (1.0, 0.0) if relation == "add-remove" else (1.0, -1.0)


def _log_cdf_max(t: np.ndarray, sigma: float, batches: int, s: float):
    """log F_s(t) = (T − 1)·log Φ(t/σ) + log Φ((t − s)/σ), and an absolute error bound."""
    a = log_ndtr(t / sigma)
    b = log_ndtr((t - s) / sigma)
    value = (batches - 1) * a + b
    # log_ndtr: 16 eps·max(1, |log Φ|) each [numeric.special]; the argument's rounding moves
    # log Φ by ≤ (|z| + 1)·2u|z|; the product and the sum add a few ulps of the value
    za, zb = np.abs(t / sigma), np.abs((t - s) / sigma)
    err = ((batches - 1) * (LOG_NDTR_ERR * np.maximum(1.0, np.abs(a))
                            + (za + 1.0) * 4 * _U * (za + 1.0))
           + LOG_NDTR_ERR * np.maximum(1.0, np.abs(b)) + (zb + 1.0) * 4 * _U * (zb + 1.0)
           + 4 * _U * np.abs(value))
    return value, err


def _bin_masses(sigma: float, batches: int, s: float, edges: np.ndarray):
    """Masses of F_s on (−∞, e_0], (e_0, e_1], …, (e_n, ∞): (value, absolute error bound)."""
    lf, lerr = _log_cdf_max(edges, sigma, batches, s)
    cdf = np.exp(lf)
    sf = -np.expm1(lf)
    # |F̂ − F| ≤ F·(e^{err} − 1) (+ an ulp); Ŝ = 1 − F̂ carries the same absolute error
    e_abs = cdf * np.expm1(lerr + 4 * _U) + _U * np.maximum(cdf, sf)
    use_sf = cdf > 0.5
    # a bin's mass as a difference of whichever side is small at both its ends
    lo_c, hi_c = cdf[:-1], cdf[1:]
    lo_s, hi_s = sf[:-1], sf[1:]
    inner = np.where(use_sf[:-1] & use_sf[1:], lo_s - hi_s, hi_c - lo_c)
    inner_err = e_abs[:-1] + e_abs[1:] + 2 * _U * np.abs(inner)
    mass = np.concatenate([[cdf[0]], inner, [sf[-1]]])
    err = np.concatenate([[e_abs[0]], inner_err, [e_abs[-1]]])
    return np.maximum(mass, 0.0), err


def _product(a, b, max_len: int):
    """The product pair of two grouped pairs (P over summed labels, Q likewise), P lowered
    and Q raised by its rounding, and neighbouring labels merged down to max_len entries."""
    out_p = np.convolve(a[0], b[0])      # direct: positive sums, error ≤ len·u relative
    out_q = np.convolve(a[1], b[1])
    slack = 1.0 + 2.0 * _U * (min(len(a[0]), len(b[0])) + 4)
    out_p, out_q = out_p / slack, out_q * slack
    while len(out_p) > max_len:         # merge neighbouring buckets (post-processing)
        if len(out_p) % 2:
            out_p, out_q = np.append(out_p, 0.0), np.append(out_q, 0.0)
        out_p = out_p.reshape(-1, 2).sum(axis=1)
        out_q = out_q.reshape(-1, 2).sum(axis=1)
    return out_p, out_q


class AttackLowerBound:
    """Certified lower bounds on δ(ε) and ε(δ) of E shuffled epochs, from [Chua24]'s attack.

    Args:
        sigma: noise multiplier σ > 0.
        batches: T, batches per epoch (⌈N/B⌉).
        epochs: E ≥ 1 (integer).
        relation: "add-remove" or "replace-one".
        bins: number of bins of the max statistic per epoch (accuracy only; any is sound).
    """

    def __init__(self, sigma: float, batches: int, epochs: int, relation: str = "add-remove",
                 bins: int = 3000, bucket: float = 0.01, max_len: int = 8000):
        if not sigma > 0:
            raise DomainError(f"sigma must be > 0, got {sigma!r}")
        if int(batches) != batches or batches < 1:
            raise DomainError(f"batches per epoch must be an integer >= 1, got {batches!r}")
        if int(epochs) != epochs or epochs < 1:
            raise DomainError(f"epochs must be an integer >= 1, got {epochs!r}")
        sensitivity(relation)
        self.sigma, self.batches, self.epochs = float(sigma), int(batches), int(epochs)
        s_p, s_q = _shifts(relation)
        # the max of T normals sits near σ√(2 log T); cover ~[−9σ, that + 9σ] in t
        centre = sigma * math.sqrt(2.0 * math.log(batches)) if batches > 1 else 0.0
        edges = np.linspace(min(s_q, 0.0) - 9.0 * sigma - 1.0,
                            centre + max(s_p, 0.0) + 9.0 * sigma + 1.0, bins + 1)
        p, ep = _bin_masses(sigma, batches, s_p, edges)
        q, eq = _bin_masses(sigma, batches, s_q, edges)
        p_lo = np.maximum(p - ep, 0.0)          # P lowered, Q raised: δ only decreases
        q_hi = q + eq
        # one epoch, both orders (the neighbour relation is symmetric in what it protects)
        self._sides = [self._compose(p_lo, q_hi, bucket, max_len),
                       self._compose(np.maximum(q - eq, 0.0), p + ep, bucket, max_len)]

    def _compose(self, p: np.ndarray, q: np.ndarray, bucket: float, max_len: int):
        """E-fold product of the binned pair, merged by loss buckets (post-processings)."""
        keep = p > 0
        q_only = float(q[~keep].sum())          # P-null outcomes: merged into the lowest bucket
        p, q = p[keep], q[keep]
        with np.errstate(divide="ignore"):
            ell = np.log(p) - np.log(q)
        finite = np.isfinite(ell)               # q = 0: loss +∞; dropping P-mass lowers δ
        p, q, ell = p[finite], q[finite], ell[finite]
        idx = np.floor(ell / bucket).astype(np.int64)
        base = int(idx.min())
        n = int(idx.max()) - base + 1
        bp = np.bincount(idx - base, weights=p, minlength=n)
        bq = np.bincount(idx - base, weights=q, minlength=n)
        bq[0] += q_only
        # the sums above: positive terms, relative error ≤ (count)·u
        slack = 1.0 + 2.0 * _U * (len(p) + 4)
        bp, bq = bp / slack, bq * slack
        # the E-fold product by binary powers (E − 1 products one epoch at a time took 19 s
        # at 10⁴ epochs and ran past a minute at 10⁵: helper-52): a product of two grouped
        # products is a grouping of the product of the epochs they hold, and any grouping
        # of outcomes is a post-processing [DR14, Prop. 2.1], so δ_lower stays a lower bound
        power, out, left = (bp, bq), None, self.epochs
        while True:
            if left & 1:
                out = power if out is None else _product(out, power, max_len)
            left >>= 1
            if not left:
                return out
            power = _product(power, power, max_len)

    def delta_lower(self, epsilon: float) -> float:
        """Certified lower bound on δ(ε) (the larger over both orders of the instance).

        References: Chua24 (the instance), KJH20 (δ of a discrete pair).
        """
        a = math.exp(epsilon) if epsilon < 709 else math.inf
        best = 0.0
        for p, q in self._sides:
            if a == math.inf:
                continue
            terms = p - a * q
            pos = terms > 0
            total = float(np.sum(terms[pos]))
            # each term ≤ 2u(p + aq) off, the sum ≤ n·u of the sum of magnitudes
            margin = (2.0 + pos.sum()) * _U * float(np.sum(p[pos] + a * q[pos]))
            best = max(best, total - margin)
        return max(best, 0.0)

    def epsilon_lower(self, log_delta: float) -> float:
        """Certified lower bound on ε(δ): the largest ε found with δ_lower(ε) > δ (else 0).

        δ(ε) is non-increasing, so every ε' ≤ ε also has δ(ε') > δ: ε(δ) ≥ ε.

        References: Chua24.
        """
        delta = math.exp(log_delta)
        if not self.delta_lower(0.0) > delta:
            return 0.0
        lo, hi = 0.0, 1.0
        while self.delta_lower(hi) > delta:
            lo, hi = hi, 2.0 * hi
            if hi > 1e6:
                return lo
        while hi - lo > 1e-9 * hi:
            mid = 0.5 * (lo + hi)
            if self.delta_lower(mid) > delta:
                lo = mid
            else:
                hi = mid
        return lo
