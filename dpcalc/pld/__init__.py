"""The certified PLD engine: composes the privacy loss distributions of dominating pairs.

It knows nothing of any mechanism: a mechanism enters through the DominatingPair interface
(dpcalc.pld.pair); the pairs live in dpcalc.mechanisms.  A plan is a list of (pair, count)
items; dpcalc.pld.accountant brackets its ε(δ) and δ(ε).  Modules, by concept:
_core (constants, log space), discretise (one step on a grid), pmf (tilted vectors,
convolution, coarsening), roundoff (FFT lengths, their round-off bounds), split (two-grid
compositions of long, light one-step tails), evaluate (δ(ε) and ε(δ) of a composed PLD),
plan (tilt, grid, supports), compose (drivers), accountant (entry points, Profile).

Method.
  * One step, pessimistic: connect-the-dots [DGKKM22] on a grid (each loss interval's P- and
    Q-mass is split between its end points; the true pair is a post-processing of the
    result, so the result dominates it).  Mass above the top grid point goes to +∞.
  * One step, optimistic: loss buckets around the grid points are merged, also fractions of
    neighbouring buckets, until each merged atom's likelihood ratio is (just) at or above
    its grid value; merging is a post-processing, placing an atom below its ratio only
    lowers δ: the result is dominated by the true pair.
  * Both are second order in the grid spacing h.  The one-step grid is piecewise uniform
    (stride 4^k where the tilted tails carry < 1e-6, 1e-9, …), offset so that the clump of
    mass at the hard edge of the loss (log(1 − q), small q or σ) sits on a grid point.
  * Composition by repeated squaring with FFT convolution [KJH20], on grids that coarsen by
    2 every second squaring (ρ ≈ h/std stays constant, and λ·h ≤ 2ρ); coarsening re-applies
    connect-the-dots (pessimistic, a fixed linear filter) or bucket merging (optimistic, its
    decisions checked against the ℓ∞ error bound so they hold for the exact vector too).
    A pessimistic one-step vector whose tilted mass sits in a short bulk (small q) is kept
    as that bulk on the fine grid plus the rest 2^su coarser, until the bulk's own grid
    reaches it (split: coarsening a part is a mean-preserving spread of that part).
  * Exponential tilting: vectors hold p_j·e^{λℓ_j − k·c} (k steps, c the one-step log-MGF on
    the grid), λ from a Chernoff-type bound so that the tilted law is centred where δ(ε)
    comes from (a Gaussian guess, then Newton to the optimum, unless the quadrature's nodes
    cannot carry it; an entry point that fails after a grown λ runs again at the guess).
    Absolute errors in tilted units are relative errors near ε: δ is certified far below
    the FFT round-off level (1e-300, e^{−2000}: log space throughout).
  * A plan of several items (pair_i, n_i): one tilt λ minimises Σ n_i·K_i(λ) + log C_λ −
    λε; item i is discretised on the lattice h_base·2^{k_i} (its own resolution, a power of
    two apart), composed n_i times, and the items are convolved on the coarser grid; T·c
    becomes Σ n_i·c_i, T·p∞ becomes Σ n_i·p∞_i and the offsets add.
  * ε(δ) inverts the certified δ(ε) (bisection with verified end points); passes refine
    ρ until (upper − lower)/upper ≤ tolerance or ρ reaches its floor (then a wider bracket).

Error analysis (each term and its side).  [GLW21, Thm 5.5] budgets the discretisation error
of a mean-preserving grid; here domination removes that term, and the budget only covers:
  1. Discretisation: none on either side (domination / post-processing, as above).
  2. One-step tails: mass above the grid → +∞ (pessimistic; Σ n·p∞ ≤ 1% of tol·δ is added to
     δ) or lowered/dropped (optimistic; a one-step PLD with no certified bucket at all is
     left out, and the lower end stays trivial).  Mass below the grid: raised (pessimistic) or,
     when cut at a tilted quantile, dropped with its tilted mass bounded by a Riemann upper
     sum and added to the error term; dropped (optimistic).
  3. Closed-form tails: erfc (assumed ≤ 1e-15 relative, checked against mpmath in the
     tests) and the threshold x(ℓ) carry per-point error bounds; the grid CDF is moved by
     twice those bounds towards the safe side, so the computed one-step PLD stochastically
     dominates (is dominated by) the exact discretisation.
  4. FFT round-off: per convolution the a-priori bound of floating-point FFTs (Higham 2002,
     Thm 24.2, 4× safety factor), as ℓ2 → ℓ1 (√n) and ℓ∞; heavy entries are convolved
     directly (error O(u)).  Errors propagate through every later convolution and
     coarsening (ℓ1 norms of the maps); clipping negatives never increases them.
     Pessimistic truncations of tilted tails are added to the same ℓ1 bound.  An ℓ1 error e
     (tilted units) moves δ(ε) by ≤ e·e^{T·c − λε}·C_λ, C_λ = sup_{y≥0} e^{−λy}(1 − e^{−y}):
     added to the pessimistic δ, subtracted from the optimistic one.
  5. exp/log at the untilting and the final sums: a relative margin (≥ 1e-12) on δ.
When no finite certified upper bound results, PLDUncertifiable is raised.
"""

from dpcalc.pld._core import BelowInfinityMass, PLDUncertifiable
from dpcalc.pld.pair import DominatingPair, Tails

__all__ = ["BelowInfinityMass", "DominatingPair", "PLDUncertifiable", "Tails"]
