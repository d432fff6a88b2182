"""The dominating-pair interface: everything the certified PLD engine needs from a mechanism.

A mechanism M is accounted through a *dominating pair* (P, Q) of distributions on an output
space X: for every pair of neighbouring datasets (D, D') in the chosen direction, the
hockey-stick divergence of (M(D), M(D')) is at most that of (P, Q) at every ε [ZDW22, Def 7].
The *privacy loss* is L(x) = log(dP/dQ)(x); its law under P is the PLD, and the privacy
profile is [KJH20]

    δ(ε) = E_P[(1 − e^{ε − L})₊]  (+ the P-mass at L = +∞).

Composition of independent mechanisms multiplies pairs, i.e. convolves PLDs [KJH20]; the
engine (dpcalc.pld) does the convolutions, the grids, the tilt and every error bound.  A pair
only answers the questions below, in log space, with per-point error bounds.  It never sees a
grid plan, a tolerance or a step count.

Directions.  Add/remove neighbours give two pairs per mechanism: "remove" (D' = D minus one
record; for the subsampled Gaussian (P, Q) = (mixture, N(0, σ²))) and "add" (the reverse).
For each direction the engine composes the pairs of *that* direction of every item of a plan
(every mechanism sees the same neighbouring datasets), and reports the larger δ of the two.
A pair whose two directions have the same PLD sets ``symmetric = True`` and then only ever
receives ``direction="remove"`` (the engine asks nothing else of it).  A pair whose
neighbouring relation has one direction only (replace-one) also sets ``symmetric = True``
after checking that its PLD law does not depend on the order, or else implements both and
documents what "add" means for it.

Contract of each method (`direction` is "remove" or "add"; arrays are float64 numpy arrays):

``key() -> Hashable``
    Identifies the pair's law exactly (type and parameters); used to cache tilts and grids.

``tails(ell, direction) -> Tails | None``
    For thresholds ℓ (any real numbers, any order), the natural logs of
    P(L > ℓ), P(L ≤ ℓ), Q(L > ℓ), Q(L ≤ ℓ), each with a *relative* error bound e ≥ 0:
    the returned log value v̂ satisfies |e^{v̂} − T| ≤ e·T for the exact tail T of the exact
    pair at the exact float ℓ given.  Exactly-zero tails are −inf with e = 0.  Both tails of a
    side are needed because each is accurate where it is small (no 1 − tiny cancellation):
    compute the minor tail directly and the major one as log1p(−minor).  Return None when
    some threshold is ill-conditioned (within rounding of a point where a tail jumps or the
    loss's inverse is undefined, e.g. ℓ next to an atom or a hard edge): the engine then moves
    its grid slightly and asks again.  This is the only method on which soundness rests:
    the bound e must hold (use mpmath-checked special functions and cite them).

``loss_bounds(direction) -> (lo, hi)``
    Hard edges of the loss: P-almost surely lo ≤ L ≤ hi (−inf / +inf if unbounded).  For the
    Poisson-subsampled Gaussian (remove) lo = log(1 − q), hi = +inf; add: −inf, −log(1 − q).
    The engine aligns its grid with a finite edge (a clump of mass can sit next to it) and
    uses hi for exact zeros: δ(ε) = 0 for ε ≥ Σ count·hi.  Must be exact or outward (a
    lo that is too high or a hi too low is unsound).

``support(direction, log_eta) -> (lo, hi)``
    A loss range outside which the P-mass is at most e^{log_eta} on each side (an upper bound
    on the mass is fine; a heuristic placement is fine, since the engine pays for what lies
    outside with certified tails).  Sizes the grid only.

``quadrature(direction, lam, density, nmin, log_eta_top) -> (loss, log_w0, log_w)``
    Nodes for *heuristics* (choice of the tilt λ and of the grid tiers; never for a bound):
    loss values L(x_i) at nodes x_i of the output space, and the log of a positive weight per
    node, proportional to the P-mass near x_i: log_w0 untilted, log_w the same times e^{λ·L}
    (λ ≥ 0).  ``density`` nodes per natural unit of the output scale and at least ``nmin``
    nodes; nodes whose upper P-tail is below e^{log_eta_top} may be omitted (that mass goes
    to +∞ on the pessimistic side and must not steer the tilt), None keeps all.  P-mass at
    L = +∞ is never a node (the engine keeps it at +∞ through ``tails``).  Any order
    of the nodes; the engine sorts when it needs monotone losses.  Accuracy matters only
    for speed and tightness: every choice made from it is sound.

``cgf_nodes(direction, lam, density, nmin, log_eta_top) -> (loss, log_w, log_total_w0)``
(optional)
    quadrature's loss and log_w at the same arguments, the same doubles, and
    _core._logsumexp of its log_w0 (the same double; a pair computes it once per node set
    rather than at every tilt: plan._cgf asks ~13 times per batch line).  The loss array
    may be shared and read-only: the caller does not write to it.  Absent: quadrature.

``tails_defined(ell, direction) -> bool`` (optional)
    Whether ``tails(ell, direction)`` answers (is not None), without computing the tails:
    exactly tails' None test (plan._level0 asks it of the boundaries of a side that reads
    none of their tails, and its nudges must stay those of tails).  A pair that has this
    method also promises that ``tails`` answers point by point: each threshold's values
    are the same doubles whatever the other thresholds of the call (plan._level0 then asks
    for atoms and boundaries in one call and splits the answer).

``log_mass_at_infinity(direction) -> float`` (optional)
    log P(L = +∞), the double nearest it (absent: none claimed); readers pad it by its
    rounding both ways (pld._core._log_mass_any).  δ(ε) is at least the composition's mass
    at +∞ at every ε: it lifts lower ends where the finite losses cannot reach ε (an (ε, δ)
    point's δ), and the error budgets of an ε(δ) search are sized for what δ leaves beside
    it (a heuristic: any budget is sound).

``finite_loss_bounds(direction) -> (lo, hi)`` (optional, with ``log_mass_at_infinity``
the mass's own log, not a bound on it)
    loss_bounds of the finite losses (hi finite where loss_bounds' is +inf only for the
    atom at +∞): beyond Σ n·hi, δ(ε) is exactly the mass at +∞, so an ε(δ) search whose
    δ is at least that mass (rounded up) answers at most Σ n·hi.

``tails_estimate(ell, direction) -> Tails | None`` (optional)
    The tails for a heuristic only (the choice of the grid's offset next to a hard edge,
    dpcalc.pld.discretise._edge_offset), where ``tails`` would pay for a certification that
    the choice does not need; the error fields are estimates.  Absent: ``tails`` is asked.

``symmetric: bool``
    True when the "add" PLD equals the "remove" one (Gaussian, Laplace, q = 1).

Atoms.  A PLD may have atoms (Laplace: at ±Δ/b) and a hard edge (subsampled Gaussian at
log(1 − q)); ``tails`` returns None at thresholds too close to one, and ``loss_bounds`` names
the edges.  Mass at L = +∞ (a pair that is not absolutely continuous) is P(L > ℓ) for every
finite ℓ: the pessimistic side keeps it at +∞.

Adding a mechanism: one module in dpcalc/mechanisms/ with a class implementing this
protocol and its citation, and one registry entry (dpcalc.mechanisms.PAIRS).  See
dpcalc/mechanisms/laplace.py for a small complete example.

References: [ZDW22] (dominating pairs), [KJH20] (PLD, composition by convolution),
[DGKKM22] (connect-the-dots, which makes the engine's discretisation dominate the pair).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["DIRECTIONS", "DominatingPair", "Tails"]

DIRECTIONS = ("remove", "add")


@dataclass
class Tails:
    """Log tail probabilities of one pair's loss L at thresholds ℓ, with relative errors.

    lPup = log P(L > ℓ), lPlo = log P(L ≤ ℓ), lQup = log Q(L > ℓ), lQlo = log Q(L ≤ ℓ); the
    e* arrays bound the relative error of the corresponding probability (see
    DominatingPair.tails).  All arrays have the shape of ℓ.
    """

    lPup: np.ndarray
    lPlo: np.ndarray
    lQup: np.ndarray
    lQlo: np.ndarray
    ePup: np.ndarray
    ePlo: np.ndarray
    eQup: np.ndarray
    eQlo: np.ndarray


@runtime_checkable
class DominatingPair(Protocol):
    """A mechanism's dominating pair (P, Q), as the PLD engine sees it (module docstring)."""

    symmetric: bool

    def key(self) -> Hashable: ...

    def tails(self, ell: np.ndarray, direction: str) -> Tails | None: ...

    def loss_bounds(self, direction: str) -> tuple[float, float]: ...

    def support(self, direction: str, log_eta: float) -> tuple[float, float]: ...

    def quadrature(self, direction: str, lam: float, density: float, nmin: int,
                   log_eta_top: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
