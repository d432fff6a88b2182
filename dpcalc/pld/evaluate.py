"""Evaluation of a composed PLD: certified δ(ε) and its inverse ε(δ), on one side.

δ(ε) = E_P[(1 − e^{ε−L})₊] + P(L = +∞) [KJH20]; the tilted ℓ1 error e moves δ(ε) by at most
e·e^{Σk·c − λε}·C_λ (added on the pessimistic side, subtracted on the optimistic one).
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.numeric.directed import UNIT_ROUNDOFF as _U
from dpcalc.pld._core import _log_c_lambda, _log_mass_any, _log_sub, _logsumexp, _lse
from dpcalc.pld.pmf import _Dist
from dpcalc.solve import bisect_to_adjacent

# the surrogate's sums are kept to within this many e-folds of their largest term (_suffix)
_SCALED_RANGE = 600.0
# a surrogate this far (log) above log δ is taken as above it where that only skips a
# certified check whose failure would cost tightness alone (epsilon)
_SURROGATE_MARGIN = 0.1


def _log_c_lambda_exp(lam: float) -> float:
    """C_λ = sup_{y ≥ 0} e^{−λy}(1 − e^{−y}), padded up."""
    return math.exp(_log_c_lambda(lam)) * (1.0 + 1e-12)


class _Final:
    """Certified δ(ε) of one composed PLD (one direction, one side)."""

    def __init__(self, d: _Dist, h0: float, lam: float, steps: int, c: float,
                 lpinf: float, pess: bool, off: float = 0.0,
                 totals: tuple[float, float, float] | None = None, capped: bool = False):
        """d composed from `steps` copies of one law (one-step log-MGF c, +∞ mass e^{lpinf},
        grid offset off); or, for a heterogeneous plan, totals = (Σ k·off, Σ k·c, log of
        the composed +∞ mass 1 − Π(1 − p∞)^k rounded up) over its items (then steps, c,
        lpinf and off are ignored).  ``capped``: the one-step lattice's length cap set a
        coarser spacing than asked (plan._level0), which a last pass may raise."""
        h = h0 * 2.0 ** d.s
        self.pess = pess
        self.capped = capped
        self.lam = lam
        if totals is None:
            off_total, c_total = steps * off, steps * c
            # P-mass at +∞ after T steps: 1 − (1 − p∞)^T, rounded up (≤ T·p∞: three
            # (1, 1e-6) points have 2.999997e-6 there, and a total δ of 3e-6 is met)
            lpinf_total = _log_mass_any([(lpinf, steps)])[1]
        else:
            off_total, c_total, lpinf_total = totals     # 1 − Π_i(1 − p∞_i)^{k_i}, likewise
        idx = np.arange(d.lo, d.lo + d.t.size, dtype=float)
        self.ell = idx * h + off_total
        base = d.logscale + c_total
        with np.errstate(divide="ignore"):
            self.lm = np.log(d.t) + base - lam * self.ell       # log original masses
        # ℓ1 error (tilted) → δ error ≤ e1·e^{logscale + Σkc − λε}·C_λ
        # relative rounding of the untilting exponent and of the summation
        big = abs(base) + lam * float(np.max(np.abs(self.ell), initial=0.0)) + 50.0
        self.rel = 1e-12 + 8 * _U * (d.t.size + 8 * big)
        if not (math.isfinite(d.e1) and math.isfinite(base)):
            self.lerr = math.inf            # no usable bound: δ_up = ∞, δ_low = 0
        else:
            e1 = d.e1 * _log_c_lambda_exp(lam)
            self.lerr = (math.log(e1) if e1 > 0 else -math.inf) + base
        if pess and lpinf_total > -math.inf:
            self.lpinf = min(0.0, lpinf_total)
        else:
            self.lpinf = -math.inf
        ok = np.isfinite(self.lm)
        if ok.all():
            # (every mass positive, as in every batch line's finals: the arrays themselves,
            # only ever read, for the two copies)
            self.ell_nz, self.lm_nz = self.ell, self.lm
        else:
            self.ell_nz = self.ell[ok]
            self.lm_nz = self.lm[ok]
        self._sa = self._sb = None
        self._floor = -math.inf     # the lowest log δ the cached suffix sums serve (_suffix)

    def log_delta_parts(self, eps: float) -> tuple[float, float, float]:
        """The three terms of the pessimistic bound at ε (log): the grid part, the ℓ1 error
        term, the +∞ mass.  Only the first depends on the grid's resolution; the others are
        budgets (they steer the refinement; not bounds by themselves)."""
        keep, self.lpinf = self.lpinf, -math.inf
        lerr, self.lerr = self.lerr, -math.inf
        try:
            grid = self.log_delta(eps)
        finally:
            self.lpinf, self.lerr = keep, lerr
        return grid, lerr - self.lam * eps, keep

    def log_delta(self, eps: float) -> float:
        """Certified upper (pessimistic) or lower (optimistic) bound on log δ(ε)."""
        # ell_nz is non-decreasing (an arange times h, plus an offset): the points above ε
        # are a suffix, the same selection as the mask ell_nz > ε without copying it
        k = int(np.searchsorted(self.ell_nz, eps, side="right"))
        if k < self.ell_nz.size:
            with np.errstate(divide="ignore"):
                lw = self.lm_nz[k:] + np.log(-np.expm1(eps - self.ell_nz[k:]))
            lfin = _logsumexp(lw)
        else:
            lfin = -math.inf
        lerr = self.lerr - self.lam * eps
        if self.pess:
            v = lfin + math.log1p(self.rel) if lfin > -math.inf else -math.inf
            with np.errstate(invalid="ignore"):
                out = float(_lse(np.array(v), np.array(lerr), np.array(self.lpinf)))
            return out if out == out else math.inf          # NaN: no bound
        if lfin == -math.inf or not lerr < math.inf:
            return -math.inf
        out = float(_log_sub(lfin + math.log1p(-self.rel), lerr))
        return out if out == out else -math.inf

    def log_delta_many(self, grid: np.ndarray) -> np.ndarray:
        """Certified bound (upper if pessimistic, lower if optimistic) on log δ(ε) at every ε
        of a sorted-or-not array (any real ε), vectorised; the same claim as log_delta.

        δ_fin(ε) = Σ_{ℓ_j>ε} m_j(1 − e^{ε−ℓ_j}) = S_a − e^ε S_b with suffix sums
        S_a = Σ_{ℓ_j>ε} m_j, S_b = Σ_{ℓ_j>ε} m_j e^{−ℓ_j} [KJH20] (O(n + m log n)), with a
        rigorous relative error γ on each suffix sum: the masses' own error (rel), recursive
        summation of ≤ n nonnegative terms ((n + 8)u), the rounding of the exponents
        (8u·max|exponent|); terms lost to underflow below e^{M−700} are paid as an absolute
        n·e^{M−700}.  The upper end uses S_a(1+γ) − e^ε S_b(1−γ), the lower
        S_a(1−γ) − e^ε S_b(1+γ): each encloses the exact sum.  Then the ℓ1 error term and the
        +∞ mass as in log_delta.
        """
        grid = np.asarray(grid, dtype=float)
        n = grid.size
        ell, lm = self.ell_nz, self.lm_nz
        if ell.size == 0 or n == 0:
            lfin_up = lfin_lo = np.full(n, -np.inf)
        else:
            ma, mb = float(np.max(lm)), float(np.max(lm - ell))
            with np.errstate(under="ignore"):
                sa = np.concatenate((np.cumsum(np.exp(lm - ma)[::-1])[::-1], [0.0]))
                sb = np.concatenate((np.cumsum(np.exp(lm - ell - mb)[::-1])[::-1], [0.0]))
            big = float(np.max(np.abs(lm))) + float(np.max(np.abs(ell))) + abs(ma) + abs(mb)
            k = np.searchsorted(ell, grid, side="right")
            gam = 2.0 * self.rel + (ell.size + 8) * 4 * _U + 8 * _U * (big + np.abs(grid) + 50.0)
            lost = math.log(ell.size) + max(ma, mb + float(np.max(grid))) - 700.0
            with np.errstate(divide="ignore", invalid="ignore"):
                la_up = ma + np.log(sa[k] * (1.0 + gam))
                la_lo = ma + np.log(sa[k] * (1.0 - gam))
                lb_up = grid + mb + np.log(sb[k] * (1.0 + gam))
                lb_lo = grid + mb + np.log(sb[k] * (1.0 - gam))
            lfin_up = _lse(_log_sub(la_up, lb_lo), np.full(n, lost))
            lfin_lo = _log_sub(_log_sub(la_lo, lb_up), np.full(n, lost))
        lerr = self.lerr - self.lam * grid
        with np.errstate(invalid="ignore"):
            if self.pess:
                v = np.where(lfin_up > -np.inf, lfin_up + math.log1p(self.rel), -np.inf)
                r = _lse(v, lerr, np.full(n, self.lpinf))
                return np.where(np.isnan(r), np.inf, r)
            r = _log_sub(lfin_lo + math.log1p(-self.rel), lerr)
            return np.where((lfin_lo == -np.inf) | ~(lerr < np.inf) | np.isnan(r), -np.inf, r)

    def _suffix(self, floor: float = -math.inf):
        """log Σ_{i≥j} m_i and log Σ_{i≥j} m_i e^{−ℓ_i} at every j, for the surrogate (not
        certified).  Where every value the root search reads lies within _SCALED_RANGE
        e-folds of its sum's largest term (δ(ε) ≥ e^floor, ε at most the grid's top), as
        scaled sums (exp, cumsum, log: half to three quarters of logaddexp.accumulate's
        time; the terms lost below e^-745 of the largest change nothing there); else in the
        log domain."""
        if self._sa is None or floor < self._floor:   # (scaled sums for a higher floor)
            ell, lm = self.ell_nz, self.lm_nz
            self._floor = -math.inf
            if ell.size and floor > -math.inf:
                ma, mb = float(np.max(lm)), float(np.max(lm - ell))
                scaled = (floor - ma > -_SCALED_RANGE
                          and floor - float(ell[-1]) - mb > -_SCALED_RANGE)
            else:
                scaled = False
            if scaled:
                self._floor = floor
                with np.errstate(under="ignore", divide="ignore"):
                    self._sa = ma + np.log(np.cumsum(np.exp(lm - ma)[::-1])[::-1])
                    self._sb = mb + np.log(np.cumsum(np.exp(lm - ell - mb)[::-1])[::-1])
            else:
                self._sa = np.logaddexp.accumulate(lm[::-1])[::-1]          # log Σ_{i≥j} m_i
                self._sb = np.logaddexp.accumulate((lm - ell)[::-1])[::-1]  # … m_i e^{−ℓ_i}
        return self._sa, self._sb

    def approx_log_delta(self, eps: float) -> float:
        """Fast (not certified) value of the bound at ε, from suffix sums: Σ_{ℓ_j>ε} m_j −
        e^ε Σ_{ℓ_j>ε} m_j e^{−ℓ_j}.  Used to locate roots; results are then verified."""
        # the sums already computed, scaled or not (a search reads them near its own δ)
        sa, sb = self._suffix(self._floor if self._sa is not None else -math.inf)
        k = int(np.searchsorted(self.ell_nz, eps, side="right"))
        if k < sa.size:
            a, b = float(sa[k]), eps + float(sb[k])
            lfin = a + math.log(-math.expm1(b - a)) if a > b else -math.inf
        else:
            lfin = -math.inf
        lerr = self.lerr - self.lam * eps
        if self.pess:
            v = lfin + math.log1p(self.rel) if lfin > -math.inf else -math.inf
            m = max(v, lerr, self.lpinf)
            if m == -math.inf:
                return m
            return m + math.log(math.exp(v - m) + math.exp(lerr - m) + math.exp(self.lpinf - m))
        if lfin == -math.inf or lerr >= lfin:
            return -math.inf
        return lfin + math.log(-math.expm1(lerr - lfin))

    def grid_log_delta(self, floor: float = -math.inf) -> tuple[np.ndarray, np.ndarray]:
        """Approximate log δ_fin at every grid point (to locate a root; not certified); see
        _suffix for ``floor``."""
        ell = self.ell_nz
        if ell.size == 0:
            return ell, ell
        sa, sb = self._suffix(floor)
        sa = np.concatenate((sa[1:], [-np.inf]))
        sb = np.concatenate((sb[1:], [-np.inf]))
        with np.errstate(invalid="ignore"):
            v = _log_sub(sa, ell + sb)
        return ell, v

    def epsilon(self, log_delta: float) -> float:
        """Pessimistic: an ε ≥ 0 with certified δ_up(ε) ≤ δ, as small as possible (so
        ε_true ≤ it; inf if none is found).  Optimistic: an ε with certified δ_low(ε) > δ,
        as large as possible (so ε_true > it; 0 if none).

        Neither bound needs to be monotone in ε: the search keeps f(a) > log δ ≥ f(b) with
        f the certified evaluation and returns the certified end, which is all the claim
        uses.  The root is located with the fast surrogate, then verified.
        """
        f = self.log_delta
        thr = log_delta
        ell, approx = self.grid_log_delta(thr - _SURROGATE_MARGIN)
        approx_at = self.approx_log_delta
        if self.pess:
            # the certified check at 0 only where the surrogate does not already put δ(0)
            # clearly above δ (the certified bound lies above the surrogate; skipping it can
            # only return a larger ε, never a smaller one)
            if approx_at(0.0) <= thr + _SURROGATE_MARGIN and f(0.0) <= thr:
                return 0.0
            a, b = 0.0, None
            cand = (np.nonzero((approx < thr) & (ell > 0))[0] if ell.size
                    else np.zeros(0, dtype=int))
            for k in cand[:3]:
                if f(float(ell[k])) <= thr:
                    b = float(ell[k])
                    # a only brackets the surrogate's root (the returned end is b or a point
                    # that passes the certified check below, whatever a is): the grid point
                    # before b where the surrogate is above δ there (it is, but for ties: k
                    # is the first candidate), else the last candidate that failed
                    if k > 0 and ell[k - 1] > 0 and approx[k - 1] > thr:
                        a = float(ell[k - 1])
                    break
                a = float(ell[k])
            if b is None:
                top = float(ell[-1]) if ell.size else 0.0
                if top > 0 and f(top) <= thr:
                    b = top
            if b is None:
                # beyond the grid only the error term and the +∞ mass remain
                if self.lam <= 0 or self.lpinf >= thr:
                    return math.inf
                rest = float(_log_sub(np.array(thr), np.array(self.lpinf)))
                b = max(float(ell[-1]) if ell.size else 0.0,
                        (self.lerr - rest) / self.lam) + 1e-9
                for _ in range(60):
                    if f(b) <= thr:
                        break
                    b = b * 1.01 + 1e-6
                else:
                    return math.inf
        else:
            # a: the largest grid point with certified δ_low > δ; b: first one above it.  The
            # candidates are ranked with the ℓ1 error term subtracted, as the certified value
            # has it: on the bare surrogate, where that term matters (far in the tail), the
            # six largest candidates could all fail and the pass answered 0 (helper-12: q
            # 1e-4, σ 1, 1e6 steps, δ 1e-15: a lower end 0.97306, 0.98603 certified)
            if ell.size:
                with np.errstate(invalid="ignore"):
                    low = _log_sub(approx, self.lerr - self.lam * ell)
                cand = np.nonzero(low > thr)[0]
            else:
                cand = np.zeros(0, dtype=int)
            a = None
            for k in cand[::-1][:6]:
                if ell[k] >= 0 and f(float(ell[k])) > thr:
                    a = float(ell[k])
                    break
            if a is None:
                return 0.0
            above = ell[ell > a]
            b = float(above[0]) if above.size else a + 1.0
            if approx_at(b) > thr:
                return a    # the root lies beyond the next grid point: a is certified
        # locate the root of the surrogate in [a, b] (first the grid cell, then the Illinois
        # variant of regula falsi on e^{g−log δ} − 1), then certify a point next to it
        lo_, hi_ = a, b
        if ell.size:
            inside = np.nonzero((ell > a) & (ell < b))[0]
            if inside.size:
                vals = [k for k in inside[:: max(1, inside.size // 64)]]
                for k in vals:
                    if self.approx_log_delta(float(ell[k])) <= thr:
                        hi_ = float(ell[k])
                        break
                    lo_ = float(ell[k])

        def hfun(e):
            v = self.approx_log_delta(e) - thr
            return math.expm1(min(v, 50.0)) if v > -math.inf else -1.0

        hl, hh = hfun(lo_), hfun(hi_)
        if hl > 0 >= hh:
            side = 0
            for _ in range(100):
                if hi_ - lo_ <= 2 * _U * max(1.0, abs(hi_)):
                    break
                mid = (lo_ * hh - hi_ * hl) / (hh - hl)
                if not lo_ < mid < hi_:
                    mid = 0.5 * (lo_ + hi_)
                hm = hfun(mid)
                if hm <= 0:
                    hi_, hh = mid, hm
                    if side == -1:
                        hl *= 0.5
                    side = -1
                else:
                    lo_, hl = mid, hm
                    if side == 1:
                        hh *= 0.5
                    side = 1
        gap = 1e-12 * max(1.0, abs(b))
        for _ in range(30):
            cand_eps = min(b, hi_ + gap) if self.pess else max(a, lo_ - gap)
            ok = f(cand_eps) <= thr if self.pess else f(cand_eps) > thr
            if ok:
                if self.pess:
                    b = cand_eps
                else:
                    a = cand_eps
                break
            gap *= 8.0
        else:  # the surrogate misled us: plain bisection on the certified evaluation
            if self.pess:
                b = bisect_to_adjacent(lambda x: f(x) <= thr, a, b, rel_width=4 * _U)
            else:
                a = bisect_to_adjacent(lambda x: not f(x) <= thr, b, a, rel_width=4 * _U)
        # (ε ≥ 0: a certified point below 0 certifies 0, as δ(ε) never increases; the check
        # at 0 above is skipped on the surrogate's word, so b can lie below 0 here)
        return max(b, 0.0) if self.pess else a
