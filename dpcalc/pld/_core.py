"""Constants, the error class and vectorised log-space helpers of the PLD engine.

References: [KJH20] (the engine), [DGKKM22] (its discretisation); the helpers are plain
log-space identities (log(1 − e^d) after Maechler 2012).
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U

_SQRT2 = math.sqrt(2.0)
_LOG_HALF = math.log(0.5)
_LOG_U4 = math.log(4 * _U)
_RHO_MIN = 0.004                # finest grid spacing the refinement will try
_N0_MAX = 400_000               # cap on one-step grid points (memory and time)
_NWIN_MAX = 1 << 21             # cap on any composed vector length
_N0_LEN_MAX = 1 << 19           # cap on the one-step vector length (its square is 2×)
# and on a last pass where that cap coarsened the finest grid (see eps_search._eps_group)
_N0_LEN_FAR = 1 << 21
_TAU_FLOOR = 1e-45              # smallest truncation threshold (tilted mass)
_BUDGET = 0.01                  # share of tolerance·δ for each of: +∞ mass, truncation
_LAMH = 2.0                     # every grid keeps λ·h ≤ _LAMH·ρ
# tilted tail mass beyond which the one-step grid thins to stride 4, 16, 64, 256: a tier of
# mass m at stride s adds about m·s² of the bulk's discretisation error (second order), here
# at most 7e-4 of it.  Measured: 200 batch questions' upper ends move by < 3e-7 relative,
# lower ends by < 4e-4 (the optimistic buckets feel the tails more; 10x coarser levels
# moved the README's lower end by 4e-5).  Heavy tilted tails (small q, small σ: 1e-6 of the
# tilted mass beyond a loss of 9) stayed dense at (1e-6, ..., 1e-15).
_TIER_LEVELS = (1e-5, 1e-6, 1e-7, 1e-8)
# the one-step grid reaches at least to where the tilted tails carry this much (far-tail δ:
# at log δ −423, q 0.77, σ 67, 4 steps, the 1e-7 quantile left the optimistic side empty)
_EXTENT_LEVEL = 1e-15


def _n_truncations(steps: int) -> int:
    return 2 * (steps.bit_length() + bin(steps).count("1") + 2)


class PLDUncertifiable(Exception):
    """The PLD grid cannot certify the requested quantity; fall back to another accountant."""


class BelowInfinityMass(PLDUncertifiable):
    """The asked δ is at or below the plan's P-mass at +∞: no ε meets it (δ(ε) ≥ that mass
    at every ε)."""


# --------------------------------------------------------------------------------------
# log-space helpers (vectorised)
# --------------------------------------------------------------------------------------

def _log1mexp(d):
    """log(1 − e^d) for d ≤ 0 (Maechler 2012); −inf at d = 0."""
    d = np.asarray(d, dtype=float)
    out = np.empty_like(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _log1mexp_to(d, out)


_LOG2 = math.log(2.0)


def _log1mexp_to(d: np.ndarray, out: np.ndarray) -> np.ndarray:
    """_log1mexp(d) into out (which may be d itself), under the caller's errstate.

    Where every point takes one branch (most calls), its three ufuncs run in place on out:
    the same doubles as the expressions with temporaries (the same ufuncs, elementwise).
    With _log_sub on b − a's own buffer (no np.where copy): callgrind, 30 uniform batch
    lines, 5,165 -> 5,142 M instructions past start-up (−0.44 %)."""
    near = d > -_LOG2
    k = int(np.count_nonzero(near))
    # each branch on its own points only (both over every point were 5 % of a batch)
    if k == near.size:
        np.expm1(d, out=out)
        np.negative(out, out=out)
        np.log(out, out=out)
    elif k == 0:
        np.exp(d, out=out)
        np.negative(out, out=out)
        np.log1p(out, out=out)
    else:
        far = ~near
        dn, df = d[near], d[far]       # (copies: out may be d)
        out[near] = np.log(-np.expm1(dn))
        out[far] = np.log1p(-np.exp(df))
    return out


def _log_sub(a, b):
    """log(e^a − e^b), −inf where a ≤ b (callers handle the sign)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.subtract(b, a)
        if not isinstance(d, np.ndarray):      # 0-d inputs: a scalar, no buffer to reuse
            out = a + _log1mexp_to(np.asarray(np.minimum(d, 0.0)), np.empty(()))
            return np.where(a > b, out, -np.inf)
        # on b − a's own buffer, in place (a + log1mexp(min(b − a, 0)), then −inf where
        # a ≤ b, as with the temporaries and np.where: the same doubles)
        at_most = np.greater(a, b)
        np.logical_not(at_most, out=at_most)
        np.minimum(d, 0.0, out=d)
        _log1mexp_to(d, d)
        np.add(a, d, out=d)
        np.copyto(d, -np.inf, where=at_most)
    return d


def _lse(*arrays):
    """Elementwise log(Σ e^{a_i}) of several arrays."""
    out = arrays[0]
    for a in arrays[1:]:
        out = np.logaddexp(out, a)
    return out


def _by_form(norm, fall, fbm, a: int, b: int):
    """(values, errors) over the points a..b−1 from norm at the normal ones and fall at the
    fall-backs (fbm), each function called on its points' indices only."""
    sel = fbm[a:b]
    k = int(np.count_nonzero(sel))
    if k == 0:
        return norm(slice(a, b))
    v, e = np.empty(b - a), np.empty(b - a)
    for part, fn in ((~sel, norm), (sel, fall)):
        if part.any():
            v[part], e[part] = fn(np.flatnonzero(part) + a)
    return v, e


def _logsumexp(a) -> float:
    a = np.asarray(a, dtype=float)
    if a.size == 0:
        return -math.inf
    m = float(np.max(a))
    if m == -math.inf:
        return -math.inf
    return m + math.log(float(np.sum(np.exp(a - m))))




def _log_mass_any(parts) -> tuple[float, float]:
    """(lower, upper) bounds on log(1 − Π(1 − p_i)^{n_i}) over parts [(log p_i, n_i)]: the
    P-mass at +∞ of a composition whose n_i copies of item i each put p_i there (one copy
    at +∞ puts the sum there) [KOV15].

    Each log p_i is itself a rounded logarithm (of a δ the user gave, or an upper bound):
    p_i is known to a relative (|log p_i| + 2)u, and the evaluation (exp, log1p, the sum of
    k parts, expm1, log) adds (6 + k)u relative to the mass (|s|e^s/(1 − e^s) ≤ 1 carries
    the sum's relative error through expm1) and u|v| to its log v; both are padded twice.
    A part with log p_i ≥ 0 makes the upper end 0 (and is left out of the lower end).
    Masses below e^-700 (p_i underflows) enter as n_i·p_i (the union bound, within their
    own size, < 1e-290, of the product form)."""
    parts = [(float(lp), int(n)) for lp, n in parts if lp > -math.inf and n > 0]
    saturated = any(lp >= 0.0 for lp, _ in parts)
    parts = [(lp, n) for lp, n in parts if lp < 0.0]
    if not parts:
        return -math.inf, (0.0 if saturated else -math.inf)
    rel_p = 2.0 * _U * (max(abs(lp) for lp, _ in parts) + 2.0)
    log_none, tiny = 0.0, []
    for lp, n in parts:
        if lp < -700.0:
            tiny.append(math.log(n) + lp)
        else:
            log_none += n * math.log1p(-math.exp(lp))
    v = math.log(-math.expm1(log_none)) if log_none < 0.0 else -math.inf
    tiny_mass = 0.0
    if tiny:
        lt = _logsumexp(np.array(tiny))
        v = float(np.logaddexp(v, lt))
        tiny_mass = math.exp(lt)
    if v == -math.inf:
        return v, (0.0 if saturated else v)
    pad = 2.0 * (rel_p + (6 + len(parts)) * _U + tiny_mass) + 2.0 * _U * abs(v)
    return v - pad, (0.0 if saturated else min(0.0, v + pad))


def _slog(v) -> float:
    """log of a non-negative scalar, −inf at 0."""
    v = float(v)
    return math.log(v) if v > 0 else -math.inf


def _log_c_lambda(lam: float) -> float:
    """log C_λ, C_λ = sup_{y ≥ 0} e^{−λy}(1 − e^{−y}) = (1/(1+λ))·(λ/(1+λ))^λ (1 at λ = 0)."""
    if lam <= 0.0:
        return 0.0
    return -math.log1p(lam) - lam * math.log1p(1.0 / lam)


def _norms(t: np.ndarray) -> tuple[float, float, bool]:
    """(‖t‖₁, ‖t‖∞, t ≥ 0): the sum and maximum where t ≥ 0 (the engine's vectors, clipped
    at 0: the same doubles, without two copies of |t|), else of |t|."""
    if float(t.min()) >= 0.0:
        return float(t.sum()), float(t.max()), True
    at = np.abs(t)
    return float(at.sum()), float(at.max()), False
