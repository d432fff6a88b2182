"""FFT lengths and the a-priori round-off bounds of FFT convolutions [Hig02, Thm 24.2],
[GS66] (mixed radix), for the engine's convolutions (pmf).

Memoised per length: the engine convolves many vectors of a few lengths (a stage loop per
call was 3 % of a batch's convolution time); the same doubles.
"""

from __future__ import annotations

import bisect
import functools

from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.pld._core import PLDUncertifiable

# FFT lengths 2^a·3^b·5^c with b + c ≤ 2 (pocketfft's radix-2/3/4/5 passes, no Bluestein): a
# power of two pads an output of n points to up to 2n, these to at most 1.2n (convolutions of
# 2^17–2^19 points run 1.4–2.8× faster on this machine); at most two radix-3/5 stages keep
# the round-off bound within 1.2× the power of two's
_STAGE = {2: 8.0, 3: 18.0, 5: 29.0}   # rounding-error constant (in u) of a radix-p stage


def _smooth_lengths(top: int = 1 << 40) -> list[int]:
    out = []
    for m in (1, 3, 5, 9, 15, 25):
        while m <= top:
            out.append(m)
            m *= 2
    return sorted(out)


_SMOOTH = _smooth_lengths()


def _fft_len(nout: int) -> int:
    """The smallest FFT length ≥ nout of the form 2^a·m, m ∈ {1, 3, 5, 9, 15, 25}."""
    return _SMOOTH[bisect.bisect_left(_SMOOTH, nout)]


@functools.cache    # a dict hit, where the stage loop was 3 % of a batch's _conv time
def _fft_gamma(n: int) -> float:
    """Relative ℓ2 round-off bound of one FFT of length n = 2^a·3^b·5^c: Σ over its radix-p
    stages of a per-stage constant (each stage maps ℓ2 norms by a fixed factor, so their
    relative errors add, as in the proof of [Hig02, Thm 24.2]).  Radix 2: 8u ≥ Higham's
    η = μ + γ₄(√2 + μ) ≈ 6.7u with accurate twiddle factors (μ ≤ u).  Radix p = 3, 5: the
    twiddle products, |fl(wx) − wx| ≤ (√2γ₂ + μ)|x| ≈ 3.9u|x| [Hig02, Lemma 3.5], then a
    p-point DFT whose outputs are sums of p products with unit-modulus constants, each
    within (√2γ_{p+2} + μ)Σ|x_k| [Hig02, §3.6]: in ℓ2, √p(√2γ_{p+2} + μ) relative to
    ‖y‖₂ = √p‖x‖₂; together ≤ 18u (p = 3) and ≤ 29u (p = 5).  pocketfft's butterflies use
    fewer operations than these plain sums; [GS66] gives the same order.  Measured against
    exact integer convolution (spikes, flat tails, 3^k and 5^k lengths) the errors stay
    below 4 % of the resulting bound (review)."""
    g = 0.0
    for p, c in _STAGE.items():
        while n % p == 0:
            n //= p
            g += c
    if n != 1:
        raise PLDUncertifiable("an FFT length that is not 5-smooth has no round-off bound")
    return max(g, 8.0) * _U


def _fft_roundoff_l2(n: int, n1a: float, n2a: float, n1b: float, n2b: float) -> float:
    """ℓ2 bound on the round-off of an FFT convolution of length n (5-smooth).

    A computed FFT has ‖ŷ − y‖₂ ≤ (γ/(1 − γ))‖y‖₂, γ = _fft_gamma(n) ([Hig02, Thm 24.2] for
    radix 2, [GS66] for mixed radix).  For irfft(rfft(a)·rfft(b)) this gives
    ≲ (2γ + 4u)(‖a‖₁‖b‖₂ + ‖a‖₂‖b‖₁) (using |â_k| ≤ ‖a‖₁ and Parseval), plus 2u for the
    scaling by 1/n when n is not a power of two (the rounded reciprocal, then the product);
    a safety factor of 4 on top.
    """
    return _fft_coef(n) * (n1a * n2b + n2a * n1b)


@functools.cache
def _fft_coef(n: int) -> float:
    scale = 0.0 if n & (n - 1) == 0 else 2.0 * _U
    return 4.0 * (2.0 * _fft_gamma(n) + 4.0 * _U + scale)
