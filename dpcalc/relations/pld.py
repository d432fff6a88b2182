"""Certified privacy-loss-distribution (PLD) accountant for DP-SGD.

Relation. T steps of the Poisson-subsampled Gaussian mechanism (sampling rate q, noise
multiplier σ, L2 sensitivity 1) with add/remove neighbours. With Q0 = N(0, σ²),
P1 = N(1, σ²) and the mixture M = (1 − q)·Q0 + q·P1, one step is dominated by the pairs

    remove: (P, Q) = (M, Q0),   privacy loss  L(x) = log(1 − q + q·exp((2x − 1)/(2σ²)))
    add:    (P, Q) = (Q0, M),   privacy loss −L(x)      (bounded above by −log(1 − q))

The PLD of a pair is the law of its loss under P; the PLD of a T-fold composition is the
T-fold convolution of the one-step PLD, and the privacy profile is the hockey-stick
divergence [KJH20]

    δ(ε) = E_P[(1 − e^{ε−L})₊]  (+ the P-mass at L = +∞).

Both directions are composed; the mechanism's δ(ε) is the larger one and ε(δ) the larger of
the two inverses.  Every function returns a bracket: `upper` is never below the truth and
`lower` never above it (ε ≥ 0; log δ may be far below the double range).

Method and error analysis: dpcalc.pld (the engine, which composes any dominating pair);
the pair itself: dpcalc.mechanisms.subsampled_gaussian [ZDW22, Sec 5].  This module keeps
the DP-SGD entry points (q, σ, steps) and their input checks.
"""

from __future__ import annotations

import math
import sys
import types

import numpy as np

from dpcalc.mechanisms._normal import _ERFC_REL, _log_erfc
from dpcalc.mechanisms.subsampled_gaussian import SubsampledGaussian
from dpcalc.pld import _core, compose, discretise, evaluate, plan, pmf
from dpcalc.pld import accountant as _acc
from dpcalc.pld._core import _RHO_MIN, _U, PLDUncertifiable, _log_sub, _lse
from dpcalc.pld.compose import (
    _chernoff_log_delta,
    _compose_points,
    _eps_core,
    _first_rho,
    _log_eta,
    _next_rho,
    _plans_delta,
)
from dpcalc.pld.pmf import _conv, _Dist, _Engine, _fft_roundoff_l2

__all__ = [
    "PLDUncertifiable",
    "certify_epsilon",
    "epsilon_bounds",
    "epsilon_curve",
    "log_delta_bounds",
    "log_delta_profile",
]

# re-exported for the tests of the engine's building blocks
_INTERNALS = (_ERFC_REL, _U, _conv, _Dist, _Engine, _fft_roundoff_l2, _log_erfc)
_ENGINE_MODULES = (_core, compose, discretise, evaluate, plan, pmf)


class _Shim(types.ModuleType):
    """Setting an engine internal here (a test's monkeypatch) sets it where the engine reads
    it, as it did when the engine lived in this module."""

    def __setattr__(self, name, value):
        if name.startswith("_") and not name.startswith("__"):
            for mod in _ENGINE_MODULES:
                if hasattr(mod, name):
                    setattr(mod, name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Shim


def _validate(q, sigma, steps_list, tolerance):
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0.0 < float(q) <= 1.0:
        raise ValueError(f"q must be in (0, 1], got q={q!r}")
    if (isinstance(sigma, bool) or not isinstance(sigma, (int, float))
            or not math.isfinite(sigma) or not sigma > 0):
        raise ValueError(f"noise_multiplier must be finite and > 0, got {sigma!r}")
    for s in steps_list:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1:
            raise ValueError(f"steps must be integers ≥ 1, got {s!r}")
    if (isinstance(tolerance, bool) or not isinstance(tolerance, (int, float))
            or not 0.0 < tolerance < 1.0):
        raise ValueError(f"tolerance must be in (0, 1), got {tolerance!r}")


def _check_log_delta(log_delta):
    if (isinstance(log_delta, bool) or not isinstance(log_delta, (int, float))
            or not math.isfinite(log_delta) or not log_delta < 0):
        raise ValueError(f"log_delta must be finite and < 0, got {log_delta!r}")


def _check_epsilon(epsilon):
    if (isinstance(epsilon, bool) or not isinstance(epsilon, (int, float))
            or not math.isfinite(epsilon) or not epsilon >= 0):
        raise ValueError(f"epsilon must be finite and ≥ 0, got {epsilon!r}")


def epsilon_bounds(q: float, noise_multiplier: float, steps: int, log_delta: float,
                   tolerance: float = 1e-3) -> tuple[float, float]:
    """Certified bracket (lower, upper) on ε(δ) of DP-SGD (Poisson-subsampled Gaussian).

    ε(δ) is the smallest ε ≥ 0 with δ(ε) ≤ δ for both add and remove neighbours; upper is
    never below it, lower never above.  Refines the grid until (upper − lower)/upper ≤
    tolerance or the resolution cap is hit (then a wider, still certified, bracket).
    References: [KJH20], [DGKKM22, Alg. 1], [GLW21, Thm 5.5] (see the module docstring).

    Args:
        q: Poisson sampling rate in (0, 1].
        noise_multiplier: σ > 0 (noise std / L2 sensitivity).
        steps: number of steps T ≥ 1.
        log_delta: natural log of δ, < 0 (δ may be far below the double range).
        tolerance: target relative width of the bracket, in (0, 1).

    Raises:
        PLDUncertifiable: no finite certified upper bound could be obtained.
    """
    _validate(q, noise_multiplier, [steps], tolerance)
    _check_log_delta(log_delta)
    pair = SubsampledGaussian(float(q), float(noise_multiplier))
    return _eps_core(pair, [int(steps)], float(log_delta), float(tolerance))[0]


def epsilon_curve(q: float, noise_multiplier: float, steps_list, log_delta: float,
                  tolerance: float = 1e-3) -> list[tuple[int, float, float]]:
    """Certified brackets on ε(δ) after each of a strictly increasing list of step counts.

    Composed incrementally: within a group of step counts that share a tilt, the PLD after
    T_{i+1} steps is the one after T_i convolved with the (cached) increment.
    References: [KJH20], [DGKKM22] (see epsilon_bounds).

    Returns:
        [(steps, lower, upper), ...] in the order given.
    """
    steps_list = list(steps_list)
    if not steps_list:
        return []
    _validate(q, noise_multiplier, steps_list, tolerance)
    if any(b <= a for a, b in zip(steps_list, steps_list[1:], strict=False)):
        raise ValueError("steps_list must be strictly increasing")
    _check_log_delta(log_delta)
    pair = SubsampledGaussian(float(q), float(noise_multiplier))
    res = _eps_core(pair, [int(s) for s in steps_list], float(log_delta), float(tolerance))
    return [(int(s), lo, up) for s, (lo, up) in zip(steps_list, res, strict=False)]


def log_delta_bounds(q: float, noise_multiplier: float, steps: int, epsilon: float,
                     tolerance: float = 1e-3) -> tuple[float, float]:
    """Certified bracket (log lower, log upper) on δ(ε) of DP-SGD, add/remove neighbours.

    δ(ε) is the larger of the two directions' hockey-stick divergences of the T-fold
    composition [KJH20]; log lower may be −inf (no positive lower bound certified).
    Refines until (δ_up − δ_low)/δ_up ≤ tolerance or the resolution cap is hit.
    References: [KJH20], [DGKKM22, Alg. 1], [GLW21, Thm 5.5] (see the module docstring).

    Raises:
        PLDUncertifiable: no finite certified upper bound could be obtained.
    """
    _validate(q, noise_multiplier, [steps], tolerance)
    _check_epsilon(epsilon)
    pair = SubsampledGaussian(float(q), float(noise_multiplier))
    return _acc.log_delta_bounds([(pair, int(steps))], float(epsilon), float(tolerance))


def certify_epsilon(q: float, noise_multiplier: float, steps: int, log_delta: float,
                    epsilon: float) -> bool | None:
    """Decide whether T steps are (ε, δ)-DP: True (certainly δ(ε) ≤ δ), False (certainly
    not) or None (undecided at the finest resolution).

    A fast predicate for solvers: starts on a coarse grid and refines only while the
    certified δ bracket straddles δ; True rests on the pessimistic (upper) bound and False
    on the optimistic (lower) one, so both answers are certified.
    References: [KJH20], [DGKKM22] (see the module docstring).
    """
    _validate(q, noise_multiplier, [steps], 1e-3)
    _check_log_delta(log_delta)
    _check_epsilon(epsilon)
    pair = SubsampledGaussian(float(q), float(noise_multiplier))
    return _acc.certify_epsilon([(pair, int(steps))], float(log_delta), float(epsilon))


def log_delta_profile(q: float, noise_multiplier: float, steps: int, epsilons,
                      tolerance: float = 1e-3, focus: float | None = None,
                      log_delta_floor: float = -30.0) -> tuple[np.ndarray, np.ndarray]:
    """Certified brackets (log lower, log upper) on δ(ε) at many ε ≥ 0 from one composition
    per pass (both directions, both sides; δ is the larger direction, as in log_delta_bounds).

    The tilt and budgets are sized for ``focus`` (default: the median ε); every point is
    certified whatever the tilt, only its width depends on it.  Passes refine ρ while the
    relative width (1 − δ_low/δ_up) exceeds ``tolerance`` at some ε with log δ_up above
    ``log_delta_floor`` (at most 4 passes).  Each pass reuses _compose_points and
    the engine's _Final unchanged, so the error analysis of the module docstring applies.
    References: [KJH20], [DGKKM22, Alg. 1] (see the module docstring).

    Raises:
        PLDUncertifiable: no certified bracket at any resolution tried.
    """
    eps = [float(e) for e in epsilons]
    _validate(q, noise_multiplier, [steps], tolerance)
    for e in eps:
        _check_epsilon(e)
    q, sigma, tol, steps = float(q), float(noise_multiplier), float(tolerance), int(steps)
    ref = float(np.median(eps)) if focus is None else float(focus)
    pair = SubsampledGaussian(q, sigma)
    ch = _chernoff_log_delta(pair, steps, ref)
    est = ch - 8.0 - 0.05 * abs(ch)
    n = len(eps)
    best_lo = np.full(n, -np.inf)
    best_up = np.zeros(n)

    grid = np.asarray(eps, dtype=float)

    def many(fin) -> np.ndarray:
        # δ_fin(ε) = Σ_{ℓ_j>ε} m_j(1 − e^{ε−ℓ_j}) = S_a − e^ε S_b (suffix sums, O(n + m log n))
        # with a rigorous relative error γ on each suffix sum: the masses' own error
        # (fin.rel), recursive summation of ≤ n nonnegative terms ((n + 8)u), the rounding of
        # the exponents (8u·max|exponent|); terms lost to underflow below e^{M−700} are paid
        # as an absolute n·e^{M−700}.  The upper end uses S_a(1+γ) − e^ε S_b(1−γ), the lower
        # S_a(1−γ) − e^ε S_b(1+γ): each encloses the exact sum.
        ell, lm = fin.ell_nz, fin.lm_nz
        if ell.size == 0:
            lfin_up = lfin_lo = np.full(n, -np.inf)
        else:
            ma, mb = float(np.max(lm)), float(np.max(lm - ell))
            with np.errstate(under="ignore"):
                sa = np.concatenate((np.cumsum(np.exp(lm - ma)[::-1])[::-1], [0.0]))
                sb = np.concatenate((np.cumsum(np.exp(lm - ell - mb)[::-1])[::-1], [0.0]))
            big = float(np.max(np.abs(lm))) + float(np.max(np.abs(ell))) + abs(ma) + abs(mb)
            k = np.searchsorted(ell, grid, side="right")
            gam = 2.0 * fin.rel + (ell.size + 8) * 4 * _U + 8 * _U * (big + np.abs(grid) + 50.0)
            lost = math.log(ell.size) + max(ma, mb + float(np.max(grid))) - 700.0
            with np.errstate(divide="ignore", invalid="ignore"):
                la_up = ma + np.log(sa[k] * (1.0 + gam))
                la_lo = ma + np.log(sa[k] * (1.0 - gam))
                lb_up = grid + mb + np.log(sb[k] * (1.0 + gam))
                lb_lo = grid + mb + np.log(sb[k] * (1.0 - gam))
            lfin_up = _lse(_log_sub(la_up, lb_lo), np.full(n, lost))
            lfin_lo = _log_sub(_log_sub(la_lo, lb_up), np.full(n, lost))
        lerr = fin.lerr - fin.lam * grid
        with np.errstate(invalid="ignore"):
            if fin.pess:
                v = np.where(lfin_up > -np.inf, lfin_up + math.log1p(fin.rel), -np.inf)
                r = _lse(v, lerr, np.full(n, fin.lpinf))
                return np.where(np.isnan(r), np.inf, r)
            r = _log_sub(lfin_lo + math.log1p(-fin.rel), lerr)
            return np.where((lfin_lo == -np.inf) | ~(lerr < np.inf) | np.isnan(r), -np.inf, r)

    def evaluate(i, finals):
        lo = np.full(n, -np.inf)
        up = np.full(n, -np.inf)
        for (_, pess), fin in finals.items():
            v = many(fin)
            if pess:
                up = np.maximum(up, v)
            else:
                lo = np.maximum(lo, v)
        return lo, up

    rho = _first_rho(tol)
    done = False
    for _ in range(4):
        plans = _plans_delta(pair, steps, ref, tol, est)
        plans.update({d: p for d, p in _plans_delta(pair, steps, 0.0, tol, est).items()
                      if d not in plans})
        lo, up = _compose_points(pair, [steps], rho, plans, _log_eta(est, tol, steps),
                                 evaluate, directions=list(plans))[0]
        best_lo = np.maximum(best_lo, lo)
        best_up = np.minimum(best_up, up)
        done = True
        with np.errstate(invalid="ignore"):
            w = np.where(best_up > -np.inf, -np.expm1(best_lo - best_up), 0.0)
        w = np.where(best_up > log_delta_floor, w, 0.0)
        width = float(np.max(w)) if n else 0.0
        if width <= tol or rho <= _RHO_MIN:
            break
        rho = _next_rho(rho, tol, width)
    if not done or not np.all(best_up <= 0.0):
        raise PLDUncertifiable("no certified δ bracket at this resolution")
    return best_lo, best_up
