"""Tilted discrete PLDs with certified error bounds: convolution, truncation, coarsening.

A _Dist holds t_j ∝ p_j·e^{λℓ_j} on the grid ℓ_j = offset + j·h0·2^s, with ℓ1 and ℓ∞ bounds on
its distance to the same construction in exact arithmetic.  FFT convolution [KJH20] with the
a-priori round-off bound of [Hig02, Thm 24.2] and [GS66] (mixed radix; pld.roundoff);
coarsening by connect-the-dots [DGKKM22] (pessimistic) or bucket merging (optimistic);
_Engine composes by repeated squaring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.pld._core import _BUDGET, _NWIN_MAX, _norms
from dpcalc.pld.fftconv import _conv_fft, _square_split  # noqa: F401 (re-exported)
from dpcalc.pld.heavy import _heavy
from dpcalc.pld.roundoff import _fft_gamma, _fft_len, _fft_roundoff_l2  # noqa: F401 (re-exported)


@dataclass
class _Dist:
    """A tilted discrete PLD: original mass at ℓ_j = j·h0·2^s (+ the composed grid offset) is
    t_j·e^{logscale + Σ k·c − λℓ_j} (k steps of each one-step law, c its tilted log-MGF).

    e1 bounds ‖t − t_exact‖₁ and einf bounds max_j |t_j − t_exact,j| (same units as t),
    where t_exact is the same construction in exact arithmetic on exact inputs.
    """

    lo: int
    s: int
    t: np.ndarray
    logscale: float
    e1: float
    einf: float
    noise: float = 0.0   # ℓ1 round-off bound of the operation that produced t
    # what is known of t where it was made, for _conv's norms (see _dist_norms): nonneg,
    # t ≥ 0 (no NaN); mx, float(t.max()); n1, float(t.sum()).  Not init fields:
    # dataclasses.replace(d, t=…) resets them rather than copy them to another t.
    nonneg: bool = field(default=False, init=False, repr=False, compare=False)
    mx: float | None = field(default=None, init=False, repr=False, compare=False)
    n1: float | None = field(default=None, init=False, repr=False, compare=False)


def _normalise(d: _Dist, own: bool = False, clipped: bool = False) -> _Dist:
    """d scaled to a maximum of 1 (``own``: d.t is the caller's fresh array, divided in
    place; the same quotients; ``clipped``: d.t ≥ 0, marked on the result)."""
    m = float(d.t.max()) if d.t.size else 0.0
    if m <= 0.0 or not math.isfinite(m):
        return d
    t = np.divide(d.t, m, out=d.t) if own else d.t / m
    n1 = float(t.sum())
    extra = _U * n1  # rounding of the division
    out = _Dist(d.lo, d.s, t, d.logscale + math.log(m), d.e1 / m + extra, d.einf / m + _U,
                d.noise / m)
    if clipped:
        # (no NaN: the maximum is finite) each t_j ≤ m divides to ≤ 1, and m/m = 1 exactly
        out.nonneg, out.mx, out.n1 = True, 1.0, n1
    return out


def _dist_norms(d: _Dist) -> tuple[float, float, bool]:
    """_norms(d.t) without the reductions d knows (the same doubles): t.min() if marked ≥ 0,
    the maximum and sum where its maker took them (see _normalise, _truncate, _coarsen_pess):
    2/3 of the operands, ~0.55 % of a uniform batch line's instructions (callgrind)."""
    if d.nonneg:
        return (float(d.t.sum()) if d.n1 is None else d.n1,
                float(d.t.max()) if d.mx is None else d.mx, True)
    return _norms(d.t)


# a late squaring (few copies of it in the product) may coarsen past the λh rule while
# its coarsening costs at most this share of the one-step grid's (see _Engine._late_level)
_LATE_SHARE = 1.0 / 256
_LATE_LAMH = 0.1          # and while λ·h stays at most this
_SPLIT_TAILS = True      # one-step vectors with a long light tail: two grids (pld.split)
_LIGHT = True            # a spiky square's light part on a coarser grid (pld.light)
_LIGHT_MIN = 32768       # its shortest vector (shorter FFTs cost little; pld.light not loaded)
_SPLIT_MIN = 4096        # shorter outputs: the plain FFT (the split would not pay)
# split_noise of a plan (see _noisy): with τ from a guessed Γ/δ (at 1000 the split runs on
# 0.7 % of the convolutions of 200 random DP-SGD questions at δ = 1e-5, where it moved ε by
# < 2e-5 relative, and on none of the issue-13 solves), and with τ from the lower ends of a
# previous pass (q = 1e-4, δ = 1e-10: the upper end +0.17 % above the reference at 1000,
# +0.103 % at 10, +0.100 % at 1; at 10 the split covers 19 % of the convolved length of the
# 200 questions, at 1 35 %)
_SPLIT_NOISE_GUESSED = 1000.0
_SPLIT_NOISE_FITTED = 10.0


def _noisy(a: _Dist, nout: int, budget: float, n1: float | None = None,
           n2: float | None = None) -> bool:
    """Whether the plain FFT bound of a*a, times _BUDGET, exceeds ``budget`` (absolute
    tilted mass): the engine passes its truncation threshold τ for this power (τ divided by
    the copies of the power in the composition; n_tr such thresholds make _BUDGET of
    tol·δ/Γ) times its plan's split_noise.  With an accurate Γ/δ in τ, split_noise = 1 lets
    the round-off of the products it leaves plain cost about tol·δ in all; τ's first guess of
    Γ/δ is conservative by e^5 to e^8 (δ ≈ 1e-5), hence the larger factor of a plan without
    lower ends (_SPLIT_NOISE_GUESSED).  Only a work-saving gate: either way the bounds are
    certified.  ``n1``, ``n2``: a.t's sum and ℓ2 norm where the caller has them."""
    n = _fft_len(nout)
    n1 = float(a.t.sum()) if n1 is None else n1
    n2 = math.sqrt(float((a.t * a.t).sum())) if n2 is None else n2
    r1 = _fft_roundoff_l2(n, n1, n2, n1, n2) * math.sqrt(nout)
    return r1 * math.exp(min(2.0 * a.logscale, 700.0)) * _BUDGET > budget


def _conv(a: _Dist, b: _Dist, budget: float = 0.0, direct_max: int = 48,
          heavy_min: int = 0, light=None) -> _Dist:
    """Convolution with propagated ℓ1 / ℓ∞ error bounds; negatives clipped (never worse).

    Direct for short vectors.  Otherwise by FFT; when a few entries carry most of the mass
    (early compositions of a small-q step: a spike plus a thin tail) those are convolved
    directly as shifted copies, exact up to O(u) per entry, and only the rest by FFT,
    whose round-off bound scales with the ℓ2 norms and would otherwise be dominated by the
    spike.  ``direct_max``: the longest shorter operand convolved directly (bound 2mu·‖a‖‖b‖,
    m its length; the FFT's a-priori bound on a spike of ~100 points is ~1e4·u);
    ``heavy_min``: the shortest output for which the largest entries are looked for (0:
    any; _heavy skips operands of at most 8k entries, and looks in b only when a has a
    spike).  It was 16384, which left the spike of a short small-q step to the FFT: its bound,
    2.8e-11 per squaring where the shifted copies cost 2.9e-14, made the ℓ1 error term the
    upper end at q 7.7e-5, σ 1.15, 383 steps, δ 6.3e-14 (ε 0.0442 for [0.0343, 0.0347]).
    Gating it on the budget (as the split) missed that case: τ's guess of Γ/δ was off.
    ``light`` (a pessimistic engine's squares): may compute the light part's square on a
    coarser grid (pld.light; None where it does not pay).
    """
    assert a.s == b.s
    la, lb = a.t.size, b.t.size
    nout = la + lb - 1
    # a vector ≥ 0 has its sum as its ℓ1 norm: passed on (sa, sb), not summed again by
    # _conv_fft and _noisy (with the in-place clip and division: 102 -> 97 µs a call on
    # 40 uniform batch lines' 1,957 convolutions, FFTs included)
    n1a, mxa, pos_a = _dist_norms(a)
    n1b, mxb, pos_b = (n1a, mxa, pos_a) if b is a else _dist_norms(b)
    sa = n1a if pos_a else None
    sb = n1b if pos_b else None
    same = b is a
    off = 0        # where a.lo + b.lo sits in out (pld.light may widen it below)
    if min(la, lb) <= direct_max:
        out = np.convolve(a.t, b.t)
        m = min(la, lb)
        g = m * _U / (1 - m * _U) * 2
        r1 = g * n1a * n1b
        rinf = g * min(mxa * n1b, n1a * mxb)
    else:
        ha = _heavy(a.t, total=n1a, top=mxa) if nout > heavy_min else None
        hb = (ha if same else _heavy(b.t, total=n1b, top=mxb)) if ha is not None else None
        n2a = None
        if same and nout > _SPLIT_MIN:
            n2a = math.sqrt(float((a.t * a.t).sum()))
        split = same and nout > _SPLIT_MIN and _noisy(a, nout, budget, sa, n2a)
        sp = _square_split(a.t) if (ha is None and split) else None
        if sp is not None:
            out, r1, rinf = sp
        elif ha is None:
            out, r1, rinf = _conv_fft(a.t, b.t, same, sa, sb, n2a)
        else:
            # a*b = a_H*b + b_H*a_L + a_L*b_L   (H: heavy entries, L: the rest)
            aL = a.t.copy()
            aL[ha] = 0.0
            if hb is None:
                bL, hb_idx = b.t, np.zeros(0, dtype=int)
            else:
                bL = aL if same else b.t.copy()
                if not same:
                    bL[hb] = 0.0
                hb_idx = hb
            lt = None
            if light is not None and same and hb is not None:
                n1l = float(aL.sum())
                lt = light(_Dist(a.lo, a.s, aL, a.logscale, a.e1, a.einf), 2 * a.lo,
                           n1l / n1a if n1a > 0 else 1.0)
            if lt is not None:
                # C(L)*C(L) on the fine grid (pld.light), the output widened to hold it;
                # its bound, and the input error of the L*L it stands in for (a*a − L*L)
                vals, first, r1, norm = lt
                off = max(0, -first)
                out = np.zeros(max(nout, first + vals.size) + off)
                out[first + off:first + off + vals.size] = vals
                # (the input error below, a.e1·n1 twice and a.e1², covers a*a; C's map
                # norm g ≥ 1 on the light factors adds (g² − 1) of their share)
                light_in = 2.0 * n1l * a.e1 + a.e1 * a.e1
                r1 += (norm * norm - 1.0) * light_in
                # ℓ∞: the generic term below reads a's maximum, not C(L)'s; the light
                # product's whole ℓ1 input error (ℓ∞ ≤ ℓ1) covers that part, as r1 its own
                rinf = r1 + norm * norm * light_in
            else:
                sp = _square_split(aL) if split and hb is not None else None
                out, r1, rinf = (sp if sp is not None
                                 else _conv_fft(aL, bL, same and hb is not None))
            # the shifted copies through one buffer each (a fresh product per copy was
            # most of _conv's own time on long vectors)
            tmp = np.empty(lb)
            if same and hb_idx.size:
                # a square: a_H*a + a_H*a_L = a_H*(a + a_L), and a + a_L is a with its
                # light entries doubled, exactly: one set of copies (a product each)
                both = np.add(a.t, aL)
                for j in ha:
                    out[off + j:off + j + lb] += np.multiply(a.t[j], both, out=tmp)
                m = ha.size + 2
            else:
                for j in ha:
                    out[j:j + lb] += np.multiply(a.t[j], b.t, out=tmp)
                tmp = np.empty(la) if hb_idx.size else tmp
                for i in hb_idx:
                    out[i:i + la] += np.multiply(b.t[i], aL, out=tmp)
                m = ha.size + hb_idx.size + 2
            g = 2 * m * _U / (1 - m * _U)
            r1 += g * (n1a * n1b + r1)
            rinf += g * (mxa * n1b + mxb * n1a)
    # exact a = ã − e_a etc.: ã*b̃ − a*b = e_a*b̃ + ã*e_b − e_a*e_b
    e1 = a.e1 * n1b + n1a * b.e1 + a.e1 * b.e1 + r1
    einf = (min(a.einf * n1b, a.e1 * mxb) + min(n1a * b.einf, mxa * b.e1)
            + min(a.einf * b.e1, a.e1 * b.einf) + rinf)
    # exact values are ≥ 0: clipping moves towards them (in place: out is this call's own)
    out = np.maximum(out, 0.0, out=out)
    d = _Dist(a.lo + b.lo - off, a.s, out, a.logscale + b.logscale, e1 * (1 + 8 * _U),
              einf * (1 + 8 * _U), r1)
    return _normalise(d, own=True, clipped=True)


def _tail_cut(t: np.ndarray, tau_s: float) -> tuple[int, float]:
    """(i, mass): the first i entries of t sum to at most tau_s (i largest), and their sum.

    The running sums are formed on a prefix (numpy's cumsum is sequential, so a prefix's
    sums are those of the whole vector) long enough to end above tau_s (t ≥ 0: the count
    below it is then that of the whole vector), first 1024 (the cuts of DP-SGD questions
    lie mostly 256-1024 entries in: a first 4096 was 7 % of a batch's time).  Past it,
    sums of blocks of 256 (any order: within a relative n·u of the exact prefix sums, as
    the sequential ones [Hig02, §4.2], hence the margin) place the prefix's end, where
    growing it 4× at a time went up to 4× past the cut: 22 µs a cut for 30 on the large
    vectors of 40 log-uniform batch lines (cumsum: ~4-8 ns an entry).  The array methods,
    not np.cumsum/np.searchsorted: 8.5 µs a call for 10.7 on 4,062 uniform lines' cuts."""
    n = t.size
    m = min(n, 1024)
    cs = t[:m].cumsum()
    if m < n and not cs[-1] > tau_s:
        nb = n // 256
        if nb > 4:
            cb = t[:nb * 256].reshape(nb, 256).sum(axis=1).cumsum()
            j = int(cb.searchsorted(tau_s * (1.0 + 4.0 * n * _U), side="right"))
            m = min(n, (j + 1) * 256)
        while True:            # (the estimate only places the prefix: checked exactly)
            cs = t[:m].cumsum()
            if m == n or cs[-1] > tau_s:
                break
            m = min(n, 4 * m)
    i = int(cs.searchsorted(tau_s, side="right"))
    return i, (float(cs[i - 1]) if i else 0.0)


def _truncate(d: _Dist, tau: float, pess: bool) -> _Dist:
    """Drop both tails of tilted mass ≤ τ (τ in absolute tilted units).

    Optimistic: dropping mass only lowers δ (sound).  Pessimistic: the dropped mass is added
    to the ℓ1 error bound (the exact object keeps it), and is paid for at the end.  The
    threshold is at least the round-off bound of the step that produced t (FFT noise in the
    far tails is not worth keeping: dropping it at most doubles that error term).
    """
    t = d.t
    if t.size <= 2:
        return d
    tau_s = tau * math.exp(min(-d.logscale, 700.0))
    tau_s = max(tau_s, d.noise)
    if not tau_s > 0.0:
        return d
    i0, m0 = _tail_cut(t, tau_s)
    i1, m1 = _tail_cut(t[::-1], tau_s)
    if i0 + i1 >= t.size - 1:
        return d
    if i0 == 0 and i1 == 0:
        return d
    dropped = m0 + m1
    dropped *= 1.0 + t.size * _U * 2
    nt = t[i0:t.size - i1]
    e1 = d.e1 + dropped if pess else d.e1
    out = _Dist(d.lo + i0, d.s, nt, d.logscale, e1, d.einf)
    # a dropped t_j ≥ 0 is at most its cut's running sum ≤ tau_s: below d's maximum, kept
    out.nonneg = d.nonneg
    out.mx = d.mx if d.nonneg and d.mx is not None and tau_s < d.mx else None
    return out


def _ctd_factors(h: float, lam: float) -> tuple[float, float]:
    """(cu, cd): the tilted factors of an odd atom's shares going up and down a level
    (_coarsen_pess); its map's ℓ1 norm is max(1, cu + cd)."""
    w_up = 1.0 / (1.0 + math.exp(-h))
    return w_up * math.exp(lam * h), (1.0 - w_up) * math.exp(-lam * h)


def _coarsen_pess(d: _Dist, h: float, lam: float) -> _Dist:
    """Connect-the-dots from grid h to 2h [DGKKM22]: an atom at an odd point (2i+1)h is split
    between 2ih (P-mass fraction 1/(1+e^h)) and (2i+2)h (fraction 1/(1+e^{−h})), which keeps
    its P- and Q-mass: a dominating pair.  In tilted units the two parts get the factors
    e^{∓λh}.  ℓ1 norm of the map: max(1, cd + cu)."""
    t = d.t
    pad = d.lo % 2          # the fine vector from an even point (a zero in front), odd length
    lo = d.lo - pad
    odd = t[1 - pad::2]
    cu, cd = _ctd_factors(h, lam)
    # the even points copied once into the output (no padded copy of t) and the odd ones'
    # shares through one buffer: 21.3 -> 19.2 µs a call over 2,665 of 80 batch lines'
    out = np.zeros(odd.size + 1)
    out[pad:pad + (t.size + 1 - pad) // 2] = t[pad::2]
    part = np.multiply(odd, cd)
    out[:odd.size] += part
    out[1:odd.size + 1] += np.multiply(odd, cu, out=part)
    g = max(1.0, cu + cd)
    mx, n1 = float(out.max()), float(out.sum())
    e1 = d.e1 * g + 6 * _U * n1
    einf = d.einf * (1.0 + cu + cd) + 6 * _U * mx
    res = _Dist(lo // 2, d.s + 1, out, d.logscale, e1, einf)
    if d.nonneg and math.isfinite(cu) and math.isfinite(cd):
        # t ≥ 0 times cu, cd ≥ 0, summed: ≥ 0; its sum and maximum as just taken
        res.nonneg, res.mx, res.n1 = True, mx, n1
    return res


def _coarsen_opt(d: _Dist, h: float, lam: float) -> _Dist:
    """Bucket merging from grid h to 2h (optimistic, a dominated pair).

    Coarse point i collects the fine atoms 2i−1 (half), 2i, 2i+1 (half); merging (also of
    fractions) is a post-processing.  With X_i ∝ Σ m_j(1 − e^{2ih − ℓ_j}) its excess over the
    coarse grid value: a deficit bucket merges a fraction f of bucket i+1 (excess Y_i > 0
    w.r.t. 2ih); a surplus bucket merges a fraction g of bucket i−1 (excess Z_i < 0), so the
    merged atom sits (almost) exactly at its ratio.  All decisions are checked against the
    ℓ∞ error bound of the input, so they are valid for the exact vector as well (no error
    amplification).  A deficit bucket that cannot be fixed goes to 2(i−1)h (all its losses
    are ≥ (2i−1)h) — except its centre atom and the half of 2i+1, whose ratios are certainly
    ≥ e^{2ih} (they stay).  In tilted units a mass moved by Δ gets the factor e^{λΔ}.
    """
    # one zero-padded buffer, its strided views the shifted vectors (the concatenations and
    # repeated products were a quarter of this function's time: 200 -> 147 µs a call on
    # 40 uniform batch lines; the same values, with the same operations in the same order)
    lo = d.lo
    first = int(lo % 2 == 0)   # first entry odd, so that buckets are complete
    lo -= first
    m = d.t.size + first
    m += 1 - m % 2
    lo -= 2                    # room for buckets i−1 and i+1: two zeros each side
    nb = (m + 3) // 2
    # q[2:-2] holds the padded fine vector; q's outer two zeros make the shifted views
    q = np.zeros(m + 8)
    q[4 + first:4 + first + d.t.size] = d.t
    i0 = (lo + 1) // 2        # even[k] is fine index 2(i0 + k), odd[k] is 2(i0 + k) − 1
    even = q[3:3 + 2 * nb:2]
    o_prev = q[2:2 + 2 * nb:2]                 # 2i − 1
    o_next = q[4:4 + 2 * nb:2]                 # 2i + 1
    el, eml = math.exp(lam * h), math.exp(-lam * h)
    ownp = np.zeros(nb + 2)                    # own, with a zero each side
    own = ownp[1:nb + 1]
    np.multiply(o_prev, 0.5, out=own)
    own *= el
    own += even
    half_up = o_next * 0.5
    half_up *= eml                             # 0.5·o_next·e^{−λh}
    own += half_up                             # tilted at 2i
    # excess coefficients (1 − e^{2ih − ℓ_j}) times tilt factors, fine offsets −3..+3
    cp1 = 0.5 * eml * -math.expm1(-h)
    cm1 = 0.5 * el * math.expm1(h)
    a_up = cp1 * o_next
    a_dn = cm1 * o_prev
    X = a_up - a_dn
    absX = a_up + a_dn
    z2 = q[1:1 + 2 * nb:2]                     # 2i − 2
    z3 = q[0:2 * nb:2]                         # 2i − 3
    y2 = q[5:5 + 2 * nb:2]                     # 2i + 2
    y3 = q[6:6 + 2 * nb:2]                     # 2i + 3
    cy2, cy3 = eml ** 2 * -math.expm1(-2 * h), 0.5 * eml ** 3 * -math.expm1(-3 * h)
    cz2, cz3 = el ** 2 * math.expm1(2 * h), 0.5 * el ** 3 * math.expm1(3 * h)
    Y = a_up + cy2 * y2
    Y += cy3 * y3                                               # bucket i+1 (> 0)
    Zabs = a_dn + cz2 * z2
    Zabs += cz3 * z3                                            # −(bucket i−1) (> 0)
    own_up = ownp[2:] * eml
    own_up *= eml                                               # bucket i+1 at 2i
    own_dn = ownp[:nb] * el
    own_dn *= el                                                # bucket i−1 at 2i
    B = d.einf
    # the margins mX, mY, mZ (8u·|·| + B·Σc, added in either order: the same sums) in place
    need = np.multiply(absX, 8 * _U, out=absX)
    need += B * (cp1 + cm1)                    # mX
    need -= X
    den = Y * (8 * _U)
    den += B * (cp1 + cy2 + cy3)               # mY
    np.subtract(Y, den, out=den)
    mZ = Zabs * (8 * _U)
    mZ += B * (cm1 + cz2 + cz3)
    # f and ĝ are read only where den > 0 and need < 0 (borrow, surplus below): no np.where
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        f = need / den
        f *= 1 + 8 * _U
        mZ += Zabs
        ghat = -need / mZ
        ghat *= 1 - 1e-6
    live = own > 0
    deficit = live & (need > 0)
    borrow = deficit & (den > 0) & (f <= 1.0)
    fb = deficit & ~borrow
    fp = np.zeros(nb + 2)                      # f after two zeros: fprev, fprev2 are views
    np.copyto(fp[2:], f, where=borrow)
    f, fprev, fprev2 = fp[2:], fp[1:nb + 1], fp[:nb]
    surplus = live & (need < 0) & (own_dn > 0)
    gp = np.zeros(nb + 1)                      # ghat, then g, before a zero: their next
    np.copyto(gp[:nb], ghat, where=surplus)
    ghat, ghat_next = gp[:nb], gp[1:]
    one_f = 1.0 - fprev
    own_frac = np.maximum(0.0, one_f - np.minimum(ghat_next, one_f))
    g = np.minimum(ghat * own_frac, np.maximum(0.0, 1.0 - fprev2))
    np.multiply(g, 1 - 8 * _U, out=gp[:nb])
    g, g_next = gp[:nb], gp[1:]
    frac = np.maximum(0.0, one_f - g_next)
    keep = frac * own
    # a fall-back bucket keeps at 2ih its centre atom (likelihood ratio exactly e^{2ih},
    # whatever its mass) and the half of 2i + 1 (ratio e^{(2i+1)h}: lowered); only the half
    # of 2i − 1, whose ratio is below e^{2ih}, goes one coarse point down (tilted factor
    # e^{−2λh}). Moving the whole bucket lost e^{−2λh} of a spike's mass per coarsening.
    centre = np.where(fb, frac * (even + half_up), 0.0)
    out = np.where(fb, centre, keep)
    out += f * own_up
    out += g * own_dn
    fbm = np.maximum(np.where(fb, keep, 0.0) - centre, 0.0) * eml * eml
    out[:-1] += fbm[1:]
    lo_c = i0
    if fbm[0] > 0.0:
        out = np.concatenate(([float(fbm[0])], out))
        lo_c -= 1
    # ℓ1 map norm ≤ e^{3λh} (mass moves up by at most 3h); ℓ∞ row sums ≤ 6e^{3λh}
    e3 = math.exp(3 * lam * h)
    e1 = d.e1 * e3 + 12 * _U * float(out.sum())
    einf = B * 6.0 * e3 + 12 * _U * float(out.max())
    if fb.any():
        # the split keep − centre: one more rounding of at most 4u of what it moves
        e1 += 4 * _U * float(fbm.sum() + centre.sum())
        einf += 4 * _U * float(max(fbm.max(), centre.max()))
    nz = np.nonzero(out)[0]
    if nz.size:
        out = out[nz[0]:nz[-1] + 1]
        lo_c += int(nz[0])
    return _Dist(lo_c, d.s + 1, out, d.logscale, e1, einf)


class _Engine:
    """Composes a tilted one-step PLD by repeated squaring with a coarsening grid."""

    def __init__(self, base: _Dist, h0: float, lam: float, pess: bool, t_max: int,
                 tau: float, s_max: int = 1 << 30, nwin: int = _NWIN_MAX,
                 split_noise: float = _SPLIT_NOISE_GUESSED):
        self.h0, self.lam, self.pess = h0, lam, pess
        self.split_noise = split_noise
        self.nwin = nwin
        self.s_max = s_max
        self.t_max = t_max
        self.tau = tau
        self.base = base              # the one-step law (powers[0] may hold it split)
        self.powers = [base]
        if base is not None and _SPLIT_TAILS:
            from dpcalc.pld.split import split_base

            self.powers = [split_base(self, base)]    # a long, light tail: two grids
        self.cache: dict[tuple[int, int], _Dist] = {}

    def _late_level(self, kk: int) -> int:
        """The coarsest level power kk may take beyond s_max (the λh rule), or −1.

        A coarsening to level s spreads each atom over a cell h_s = 2^s·h0 (connect-the-dots
        or bucket merging): in tilted units it moves the log-MGF of the law it acts on by
        about (λh_s)²/8, and that law enters the composition at most mult = ⌊T/2^kk⌋ times.
        The one-step grid costs T·(λh0)²/8 that way, and so does each coarsening on the
        schedule (level kk/2 at squaring kk, mult·4^s = T), until λh reaches _LAMH·ρ
        (s_max); the grid then stayed put while the composed law widened like √(2^kk), and
        the last squarings' FFTs of 10⁵–10⁶ points were most of a long far-tail run's work
        (random case 30 of benchmarks/bench_dpsgd_random.py: 534,740 points at 1.5e6
        steps).  A late squaring has few copies left, so its coarsening costs
        mult·4^s/T of the one-step grid's share: allowed while that is at most _LATE_SHARE
        (one late coarsening per two squarings: all of them together add at most 3 % of it
        at 10⁷ steps), and while λh_s ≤ _LATE_LAMH.  The ℓ1 error term does not shrink
        with the copies: each coarsening multiplies it by its map's norm (e^{3λh} on the
        optimistic side), and where it makes the upper end (far in the tail) λh ≤ 0.25 had
        moved a δ bound's log by 0.134 (review; tests/test_pld_late_levels.py).  Random
        case 30: its final vectors 534,740 -> 67,071 points, a third less time.  A
        heuristic: any level is sound (each coarsening is a post-processing or a
        mean-preserving spread, its error terms carried)."""
        if _LATE_SHARE <= 0:
            return -1
        mult = max(1, self.t_max >> kk)
        ratio = self.t_max * _LATE_SHARE / mult
        lamh = self.lam * self.h0
        s = -1
        while 4.0 ** (s + 1) <= ratio and lamh * 2.0 ** (s + 1) <= _LATE_LAMH:
            s += 1
        return s

    def _coarsen(self, d: _Dist) -> _Dist:
        h = self.h0 * 2.0 ** d.s
        if self.pess:
            return _coarsen_pess(d, h, self.lam)
        return _coarsen_opt(d, h, self.lam)

    def to_grid(self, d: _Dist, s: int) -> _Dist:
        while d.s < s:
            d = self._coarsen(d)
        return d

    def power(self, k: int) -> _Dist:
        """base^{*2^k} on grid 2^{⌊k/2⌋}·h0 (a split.Split while the bulk's grid is finer
        than its tail's)."""
        while len(self.powers) <= k:
            kk = len(self.powers)
            p = self.powers[-1]
            mult = max(1, self.t_max >> kk)
            if not isinstance(p, _Dist):
                from dpcalc.pld.split import square

                sq = square(self, p, kk, mult)
                while isinstance(sq, _Dist) and sq.t.size > self.nwin // 2:
                    sq = self._coarsen(sq)
                self.powers.append(sq)
                continue
            sq = _conv(p, p, self.tau * self.split_noise / mult,
                       light=self._light(mult, p.s) if p.t.size >= _LIGHT_MIN else None)
            sq = _truncate(sq, self.tau / mult, self.pess)
            sq = self.to_grid(sq, min(kk // 2, max(self.s_max, sq.s, self._late_level(kk))))
            while sq.t.size > self.nwin // 2:
                sq = self._coarsen(sq)       # too long: a coarser grid is still sound
            self.powers.append(sq)
        return self.powers[k]

    def _light(self, mult: int, s: int):
        """For a pessimistic engine's square at level s with ``mult`` copies in the run: the
        light part's square on a coarser grid where that pays (pld.light), else None."""
        if not self.pess or not _LIGHT:
            return None
        from dpcalc.pld.light import light_square, plan_su

        share = mult * 4.0 ** s / max(1, self.t_max)

        def run(part: _Dist, out_lo: int, light_share: float):
            su = plan_su(part.t.size, light_share, share, self.s_max - s)
            if not su:
                return None
            norm = math.prod(max(1.0, sum(_ctd_factors(self.h0 * 2.0 ** k, self.lam)))
                             for k in range(s, s + su))
            return light_square(part, su, self._coarsen, out_lo, norm)

        return run

    def compose(self, n: int, mult: int = 1) -> _Dist:
        """base^{*n} (n ≥ 1) as a product of cached powers."""
        acc = None
        k = 0
        while n:
            if n & 1:
                p = self.power(k)
                if acc is None:
                    acc = p
                elif isinstance(acc, _Dist) and isinstance(p, _Dist):
                    acc = self.to_grid(acc, p.s)
                    acc = _truncate(_conv(acc, p), self.tau / mult, self.pess)
                else:
                    from dpcalc.pld.split import multiply

                    acc = multiply(self, acc, p, mult)
            n >>= 1
            k += 1
        if not isinstance(acc, _Dist):
            from dpcalc.pld.split import unify

            acc = unify(self, acc)
        return acc

    def multiply(self, a: _Dist, b: _Dist) -> _Dist:
        s = max(a.s, b.s)
        a = self.to_grid(a, s)
        b = self.to_grid(b, s)
        return _truncate(_conv(a, b), self.tau, self.pess)
