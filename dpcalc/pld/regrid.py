"""An optimistic PLD vector moved onto the grid it is offset from: mean-preserving merges.

A coarse vector whose atoms sit at (lo + j)·H + d, 0 < d < H (pld.split's optimistic cross
term: the rest times one phase of a spiky bulk, see split._cross) is put on the points
(lo + i)·H.  Atom j sends a fraction α_j down to point j and u_j = 1 − α_j up to point j + 1;
the atom formed at point i merges α_i of atom i with u_{i−1} of atom i − 1.  Merging
outcomes (fractions of atoms too) is a post-processing [DR14, Prop. 2.1], so δ(ε) only falls;
the merged atom's loss, log(P-mass / Q-mass), is kept at least its point's loss, which is
where it is placed: a lower loss, so δ(ε) = E_P[(1 − e^{ε−L})₊] falls again, also after
composition (it rises with every summand of L).  This is pmf._coarsen_opt's merging for an
offset of any d rather than h within a level.

With the P-masses p_j, the merged loss is at least (lo + i)·H when

    u_{i−1}·p_{i−1}·(e^{H−d} − 1) ≤ α_i·p_i·(1 − e^{−d}),

which for a smooth vector holds with equality at u ≈ d/H (the merged atom sits at its point:
no loss of first order, unlike a move of the whole atom down by d).  In tilted units
(t_j ∝ p_j·e^{λℓ_j}) p_{i−1}/p_i = e^{λH}·t_{i−1}/t_i.  Each u_j starts at the balance it
would have with a neighbour of the same fraction and is then lowered where the inequality,
read with the input's ℓ∞ error bound against it, asks: lowering u_j raises α_j, which only
helps point j, so one vectorised pass settles every point, for the exact vector as well.
The top atom keeps u = 0 (nothing above it to merge with); the bottom point takes α_0 of
atom 0 alone, moved down by d (a lower loss).
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.pld.pmf import _Dist

_TINY = 2.0 ** -900     # below it a cap's products could leave the normal range: no merge up
_LAMH_MAX = 16.0        # λH beyond which nothing merges up (the margins grow with it)


def up_fractions(t: np.ndarray, big_e: float, d: float, hd: float,
                 lam: float) -> np.ndarray:
    """u_j, the fraction of atom j merged up into point j + 1 (the rest, 1 − u_j, goes down
    to point j), for tilted values t with ℓ∞ error bound E, atoms d above their point and hd
    below the next (each given, not one from the other: H − d rounded from a rounded d erred
    by up to (d/(H − d))·u, 63u at 64 phases; review, helper-30): every point's merged atom
    has a loss at least the point's for every vector within E of t (see the module)."""
    n = t.size
    # the two sides' excess factors, a rounded up and b down: a few ulps each, and exp's
    # argument λ(d + hd), itself rounded, errs by up to λH·u relative (review, helper-31:
    # the bare 16u held to λH ≈ 32 only; regrid_opt merges nothing up beyond _LAMH_MAX)
    a = math.exp(lam * (d + hd)) * math.expm1(hd) * (1.0 + (16.0 + 4.0 * lam * (d + hd)) * _U)
    b = -math.expm1(-d) * (1.0 - 16.0 * _U)
    nxt = np.zeros(n)
    nxt[:-1] = t[1:]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        # the balance with a neighbour of the same fraction: u·t_j·a = (1 − u)·t_{j+1}·b
        tb = nxt * b
        u0 = tb / (t * a + tb)
        u0 = np.where(np.isfinite(u0), np.clip(u0, 0.0, 1.0), 0.0)
        alpha0 = 1.0 - u0
        # point j + 1 certified for the exact vector: t_j ≤ t̃_j + E, t_{j+1} ≥ t̃_{j+1} − E,
        # and α_{j+1} ≥ alpha0_{j+1} (u only falls); (1 − 9u) covers this line's roundings,
        # as long as no product leaves the normal range (a tiny t_{j+1}: no merge up)
        lo_next = np.maximum(nxt - big_e, 0.0)
        lo_next[lo_next < _TINY] = 0.0
        a_next = np.zeros(n)
        a_next[:-1] = alpha0[1:]
        # (b/a first: a product of a tiny t_{j+1} and a fine grid's b could go subnormal
        # and pass the guard below as a quotient; review, helper-31)
        cap = a_next * lo_next * (b / a) / (t + big_e) * (1.0 - 9.0 * _U)
        cap = np.where(np.isfinite(cap) & (cap >= _TINY), cap, 0.0)
    u = np.minimum(u0, cap)
    u[-1] = 0.0
    return u


def regrid_opt(v: _Dist, d: float, hd: float, lam: float) -> _Dist:
    """v (atoms at (v.lo + j)·H + d, H = d + hd, d, hd > 0, in tilted units with tilt
    λ ≥ 0) merged onto the points (v.lo + i)·H, i = 0..n: an optimistic (dominated) vector
    on v's level, with v's error bounds carried through the map (ℓ1 norm ≤ e^{λ·hd}) and its
    own roundings.  Beyond λH = _LAMH_MAX (far beyond the λh rule: splits keep λH ≤ 0.2)
    every atom goes down whole instead (a lower loss; α = 1)."""
    assert d > 0.0 and hd > 0.0 and lam >= 0.0
    t = v.t
    n = t.size
    if n == 0:
        return v
    if lam * (d + hd) > _LAMH_MAX:
        u = np.zeros(n)
    else:
        u = up_fractions(t, v.einf, d, hd, lam)
    alpha = 1.0 - u
    down = math.exp(-lam * d)
    up = math.exp(lam * hd) if lam * hd <= _LAMH_MAX else 1.0   # (unused then: u = 0)
    out = np.zeros(n + 1)
    out[:n] = alpha * t * down
    with np.errstate(invalid="ignore", over="ignore"):
        out[1:] += np.where(u > 0.0, u * t * up, 0.0)
    n1_in, mx_in = float(t.sum()), float(t.max())
    n1, mx = float(out.sum()), float(out.max())
    # fl(1 − u) may exceed 1 − u by an ulp (mass the exact map does not have: ≤ u·t_j), each
    # output is two products of three factors and a sum (≤ 12u of its terms; the factors'
    # exp within 2u); the map's ℓ1 norm is at most max(down, up) = up, or down where no
    # atom goes up
    norm = up if bool((u > 0.0).any()) else down
    # (exp's factors err by up to λ·max(d, hd)·u more through their rounded arguments)
    g = (12.0 + 4.0 * lam * (d + hd)) * _U
    e1 = v.e1 * norm * (1.0 + g) + g * n1 + _U * norm * n1_in
    einf = v.einf * (down + norm) * (1.0 + g) + g * mx + _U * norm * mx_in
    return _Dist(v.lo, v.s, out, v.logscale, e1, einf, v.noise)
