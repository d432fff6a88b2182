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
the pair itself: dpcalc.mechanisms.subsampled_gaussian [ZDW22, Sec 5].  At q = 1 the
T steps are exactly one Gaussian mechanism, μ = √T/σ [DRS19, Cor 3.3]: ε and δ come from its
closed-form profile (dpcalc.relations.full_batch), with no grid.  This module keeps
the DP-SGD entry points (q, σ, steps) and their input checks.
"""

from __future__ import annotations

import math
import sys
import types

import numpy as np

from dpcalc.errors import DomainError
from dpcalc.mechanisms._normal import _ERFC_REL, _log_erfc  # noqa: F401 (re-exported)
from dpcalc.mechanisms.subsampled_gaussian import SubsampledGaussian
from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U  # noqa: F401 (re-exported)
from dpcalc.pld import _core, compose, discretise, evaluate, fftconv, plan, pmf
from dpcalc.pld import accountant as _acc
from dpcalc.pld._core import PLDUncertifiable
from dpcalc.pld.accountant import _check_log_delta, _check_tol
from dpcalc.pld.compose import keeping_compositions
from dpcalc.pld.eps_search import _eps_core
from dpcalc.pld.pmf import _conv, _Dist, _Engine, _fft_roundoff_l2  # noqa: F401 (re-exported)
from dpcalc.relations import full_batch

__all__ = [
    "PLDUncertifiable",
    "certify_epsilon",
    "epsilon_bounds",
    "epsilon_curve",
    "epsilon_upper",
    "keeping_compositions",
    "log_delta_bounds",
    "log_delta_profile",
]

# the engine's building blocks above (noqa: F401) are re-exported for their tests
_ENGINE_MODULES = (_core, compose, discretise, evaluate, fftconv, plan, pmf, _acc)


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
        raise DomainError(f"q must be in (0, 1], got q={q!r}")
    if (isinstance(sigma, bool) or not isinstance(sigma, (int, float))
            or not math.isfinite(sigma) or not sigma > 0):
        raise DomainError(f"noise_multiplier must be finite and > 0, got {sigma!r}")
    for s in steps_list:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1:
            raise DomainError(f"steps must be integers ≥ 1, got {s!r}")
    _check_tol(tolerance)


def _check_epsilon(epsilon):
    if (isinstance(epsilon, bool) or not isinstance(epsilon, (int, float))
            or not math.isfinite(epsilon) or not epsilon >= 0):
        raise DomainError(f"epsilon must be finite and ≥ 0, got {epsilon!r}")


def epsilon_bounds(q: float, noise_multiplier: float, steps: int, log_delta: float,
                   tolerance: float = 1e-3, for_solve: bool = False) -> tuple[float, float]:
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
        for_solve: the same upper end, bit for bit, with a lower end that may be looser
            (cheaper; see dpcalc.pld.accountant.epsilon_bounds): for solvers' predicates.

    Raises:
        PLDUncertifiable: no finite certified upper bound could be obtained.
    """
    _validate(q, noise_multiplier, [steps], tolerance)
    _check_log_delta(log_delta)
    if q == 1.0:
        return full_batch.epsilon_bounds(float(noise_multiplier), int(steps), float(log_delta))
    pair = SubsampledGaussian(float(q), float(noise_multiplier))
    return _eps_core(pair, [int(steps)], float(log_delta), float(tolerance),
                     for_solve=bool(for_solve))[0]


def epsilon_upper(q: float, noise_multiplier: float, steps: int, log_delta: float,
                  tolerance: float = 1e-3, stop_above: float = math.inf) -> float:
    """A certified upper bound on ε(δ) of DP-SGD from the first pass of
    :func:`epsilon_bounds` alone (dpcalc.pld.accountant.epsilon_upper, which also explains
    ``stop_above``): what a solver's probe needs. References: as epsilon_bounds.

    Raises:
        PLDUncertifiable: no finite certified upper bound could be obtained.
    """
    _validate(q, noise_multiplier, [steps], tolerance)
    _check_log_delta(log_delta)
    if q == 1.0:
        return full_batch.epsilon_upper(float(noise_multiplier), int(steps), float(log_delta))
    pair = SubsampledGaussian(float(q), float(noise_multiplier))
    return _acc.epsilon_upper([(pair, int(steps))], float(log_delta), float(tolerance),
                              stop_above)


def epsilon_curve(q: float, noise_multiplier: float, steps_list, log_delta: float,
                  tolerance: float = 1e-3, upper_only: bool = False
                  ) -> list[tuple[int, float, float]]:
    """Certified brackets on ε(δ) after each of a strictly increasing list of step counts.

    Composed incrementally: within a group of step counts that share a tilt, the PLD after
    T_{i+1} steps is the one after T_i convolved with the (cached) increment.
    ``upper_only``: the upper ends of the first pass only (pessimistic sides, no refinement;
    see epsilon_upper), lower ends 0: about a third of the work.
    References: [KJH20], [DGKKM22] (see epsilon_bounds).

    Returns:
        [(steps, lower, upper), ...] in the order given.
    """
    steps_list = list(steps_list)
    if not steps_list:
        return []
    _validate(q, noise_multiplier, steps_list, tolerance)
    if any(b <= a for a, b in zip(steps_list, steps_list[1:], strict=False)):
        raise DomainError("steps_list must be strictly increasing")
    _check_log_delta(log_delta)
    if q == 1.0:
        return [(int(s), *full_batch.epsilon_bounds(float(noise_multiplier), int(s),
                                                    float(log_delta))) for s in steps_list]
    pair = SubsampledGaussian(float(q), float(noise_multiplier))
    res = _eps_core(pair, [int(s) for s in steps_list], float(log_delta), float(tolerance),
                    quick=upper_only)
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
    if q == 1.0:
        return full_batch.log_delta_bounds(float(noise_multiplier), int(steps), float(epsilon))
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
    """Certified brackets (log lower, log upper) on δ(ε) of DP-SGD at many ε ≥ 0 from one
    composition per pass (both directions, both sides; δ is the larger direction, as in
    log_delta_bounds): the engine's plan reader (dpcalc.pld.accountant.log_delta_profile) on
    the one item (subsampled Gaussian, T).  ``focus`` sizes the tilt (default: the median
    ε); passes refine while the relative width exceeds ``tolerance`` above
    ``log_delta_floor``.  References: [KJH20], [DGKKM22, Alg. 1] (see the module docstring).

    Raises:
        PLDUncertifiable: no certified bracket at any resolution tried.
    """
    eps = [float(e) for e in epsilons]
    _validate(q, noise_multiplier, [steps], tolerance)
    for e in eps:
        _check_epsilon(e)
    pair = SubsampledGaussian(float(q), float(noise_multiplier))
    return _acc.log_delta_profile([(pair, int(steps))], eps, float(tolerance), focus=focus,
                                  log_delta_floor=log_delta_floor)
