"""The accountant of a non-default DP-SGD run (``dpcalc.api.dpsgd_runs``): ε(δ), δ(ε) and
(ε, δ)-DP of T steps of the scheme's dominating pair, certified by the PLD [KJH20], with the
sound shortcuts and reductions described on ``_Pld``."""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import TYPE_CHECKING

from dpcalc.api._dpsgd_accountant import first_pass_sure
from dpcalc.errors import InfeasibleError
from dpcalc.numeric.directed import UNIT_ROUNDOFF

if TYPE_CHECKING:
    from dpcalc.api.dpsgd_runs import Scheme

#: A replace-one bracket wider than this (upper − lower, relative to the upper end; in log δ,
#: absolute) is also bounded through the add/remove run (_Pld._triangle): the grid's tails are
#: loose at small rates over many steps (a bracket [0.555, 1.135] at q 1e-6, 10¹⁰ steps)
_WIDE = 0.1
#: _triangle's ε is 2·ε_ar(δ') at some δ' ≤ δ/(1 + e^0.01), so it is not asked where twice
#: the add/remove run's cheap upper bound there, less this share (the full evaluation's
#: refinement of it, at most about 1 % on DP-SGD runs), already reaches the grid's upper end
_TRI_REFINE = 0.1

class _Pld:
    """ε(δ), δ(ε) and (ε, δ)-DP of T steps of one combination's pair, certified [KJH20].

    Two sound shortcuts beside the pair's PLD:
    - participation: the outputs are equal in law unless one of the user's K examples (under
      replace-one the K coupled slots of [SMG24]'s coupling; with fixed batches the one
      changed slot, in a batch with probability p = B/N) is sampled at some step, so
      δ(ε) ≤ TV ≤ 1 − (1 − q)^{KT} at every ε ≥ 0: where that is at most δ, ε = 0 exactly
      (a rate of 1e-10 for 1000 steps; the grid cannot resolve such rates: K = 2 failed,
      replace-one answered ε 0.05-2 for 0);
    - K ≥ 2 where the pair's grid cannot be placed (q ≲ 1e-9): the K-example pair is
      dominated by the one-example pair of the same relation at rate p = 1 − (1 − q)^K and
      noise σ/K (P = Σ_j v_j·[(1 − p)N(0) + pN(j)], the same v_j on both sides of
      replace-one; joint convexity of the hockey-stick divergence and the post-processing
      x ↦ (j/K)x + N(0, σ²(1 − j²/K²)) of shift K into shift j) [ZDW22, Thm 10], a looser
      but sound bound, said in a note.
    """

    def __init__(self, scheme: Scheme, tolerance: float):
        self.scheme, self.tol = scheme, tolerance
        self._seen: dict = {}
        self._tri_acc = None             # the add/remove run's accountant (_triangle)
        self._tri_notes: dict = {}       # its fallback note at each point it answered
        self.reduced: set = set()        # (q, σ) whose answers came from the K = 1 bound
        # set by a solve (σ, q, steps, batch size) whose predicate reads upper ends alone:
        # see solving()
        self.for_solve = False
        self._cheap: dict = {}           # the cheap upper bound of points, where finite
        # whether the last full bracket's upper end was its point's cheap bound (the first
        # pass final): a likely fail is then decided by the cheap bound (holds); and whether
        # with room to spare (first_pass_sure): then any fail is
        self._first_pass_final = False
        self._first_pass_sure = False

    @contextmanager
    def solving(self):
        """Within this block the full brackets are the solver's (``for_solve`` of
        dpcalc.pld.accountant.epsilon_bounds): the same upper end, bit for bit, without the
        optimistic side of the last pass (a third to a half of the evaluation at fixed
        batches).  Not for Poisson replace-one with one example per user: there the lower
        end decides whether the add/remove run is asked too (_engine), and so the upper
        end.  The brackets kept are forgotten on leaving, as their lower ends may be looser
        than a forward question's."""
        self.for_solve = not self._triangular()
        try:
            yield
        finally:
            if self.for_solve:
                self._seen = {k: v for k, v in self._seen.items() if k[0] != "e"}
            self.for_solve = False

    def _triangular(self) -> bool:
        """Whether the add/remove run may bound this scheme too (_engine, _triangle)."""
        s = self.scheme
        return s.sampling == "poisson" and s.relation == "replace-one" and s.k == 1

    def pair(self, q: float, sigma: float):
        from dpcalc.api.dpsgd_runs import pair_of

        return pair_of(self.scheme, q, sigma)

    def log_participation(self, q, steps) -> float:
        """log of 1 − (1 − q)^{KT}, rounded up (see the class docstring)."""
        from dpcalc.relations.dpsgd import log_participation

        return log_participation(q, steps, self.scheme.k)

    def _engine(self, name: str, q, sigma, steps, arg, **kw):
        """accountant.<name> on the scheme's pair (``_own``); with Poisson replace-one at one
        example per user, where that fails or its bracket is wide (_WIDE), also the bound
        through the add/remove run (``_triangle``): the smaller upper end.  (Only there: it
        costs two or three evaluations of the default run, and where the replace-one grid
        is tight it is the larger.)"""
        if not self._triangular():
            return self._own(name, q, sigma, steps, arg, **kw)
        from dpcalc.pld import PLDUncertifiable

        quick = name == "epsilon_upper"
        try:
            own = self._own(name, q, sigma, steps, arg, **kw)
        except (PLDUncertifiable, ArithmeticError, ValueError):
            if quick:
                return math.inf
            own = (0.0 if name == "epsilon_bounds" else -math.inf, math.inf)
        if quick:
            # the cheap pass is the grid's alone: a point it does not pass goes to the full
            # bracket (holds), which decides as a forward question at that point does (a
            # cheap pass through the add/remove run could pass a point whose forward answer,
            # a tight grid bracket, lies above the target)
            return own
        up = own[1]
        scale = 1.0 if name == "log_delta_bounds" else abs(up)
        if up < math.inf and up - own[0] <= _WIDE * scale:
            return own
        tri = self._triangle(name, q, sigma, steps, arg, above=up)
        if tri < up:
            self.reduced.add(("triangle", q, sigma, steps))
            up = tri
        if not up < math.inf:
            raise PLDUncertifiable("neither the replace-one grid nor the add/remove run "
                                   "certifies this run")
        return (min(own[0], up), up)

    def _triangle(self, name: str, q, sigma, steps, arg, above: float = math.inf) -> float:
        """An upper bound on ε(δ) (``arg`` = log δ) or log δ(ε) (``arg`` = ε) of Poisson
        replace-one through the add/remove run at the same q, σ and steps: with R the run
        without the user's example, for every event S, P(S) ≤ e^{ε₁}R(S) + δ₁ and R(S) ≤
        e^{ε₂}Q(S) + δ₂, so δ(ε₁ + ε₂) ≤ δ₁ + e^{ε₁}δ₂ [group privacy, DR14 Thm 2.2 and
        Vadhan 2017 Lemma 2.2], and P^T vs R^T, R^T vs Q^T are the remove and add runs the
        default accountant bounds (the larger of both): δ(ε) ≤ (1 + e^{ε/2})·δ_ar(ε/2).
        The replace-one grid loses its tails at small rates and huge step counts (ε 387191 at
        q 1e-14, 0.64 at q 1e-8, 10¹⁰ steps, where the add/remove run certifies 1.2e-8 and
        0.010).  For ε(δ), δ' = δ/(1 + e^{e + m}) until ε_ar(δ') ≤ e + m (m = 0.01), then
        2·ε_ar(δ'); rounded to the private side.  +inf where none is found, and for ε(δ)
        also where it would not be below ``above`` (the grid's upper end): the iteration's
        ε_ar only rise (δ' falls), so it stops once 2·ε_ar reaches ``above``, and it is not
        begun where twice the cheap bound at its first δ' does, less _TRI_REFINE (q 1e-5,
        σ 0.43, 10⁶ steps: 2.0 from the grid, 6.8 through add/remove, after seven full
        evaluations of the default run).  Either way +inf leaves the grid's bound, sound.
        The add/remove run's evaluations are a solver's (its upper ends, bit for bit)."""
        from dpcalc.api._dpsgd_accountant import Accountant

        if self._tri_acc is None:
            self._tri_acc = Accountant("pld", self.tol)
            self._tri_acc.for_solve = True      # only upper ends are read here
        acc, u = self._tri_acc, 4.0 * UNIT_ROUNDOFF
        if name == "log_delta_bounds":
            half = 0.5 * arg
            lv = acc.log_delta(q, sigma, steps, half)[0]
            grow = math.log1p(math.exp(half)) if half < 700 else half
            self._tri_notes[(q, sigma, steps)] = acc.fallback_note
            return lv + grow + u * (abs(lv) + grow) if math.isfinite(lv) else math.inf
        e, margin = 0.0, 0.01
        for _ in range(8):
            shrink = math.log1p(math.exp(e + margin)) if e + margin < 700 else e + margin
            ld = arg - shrink - u * (abs(arg) + shrink)
            if e == 0.0 and 2.0 * acc.upper(q, sigma, steps, ld) * (1.0 - _TRI_REFINE) >= above:
                return math.inf
            got = acc.epsilon(q, sigma, steps, ld)[0]
            if not math.isfinite(got):
                return math.inf
            if got <= e + margin:
                self._tri_notes[(q, sigma, steps)] = acc.fallback_note
                return 2.0 * got
            if 2.0 * got >= above:
                return math.inf
            e = got
        return math.inf

    def _own(self, name: str, q, sigma, steps, arg, **kw):
        """accountant.<name> on the scheme's pair; for K ≥ 2, on the dominating one-example
        pair where the grid cannot be placed (PLDUncertifiable otherwise)."""
        from dpcalc.accountants.dpsgd import PLD_Q_MIN
        from dpcalc.api.dpsgd import SIGMA_EVAL_MAX
        from dpcalc.pld import PLDUncertifiable, accountant

        fn = getattr(accountant, name)
        k = self.scheme.k
        if sigma > SIGMA_EVAL_MAX:
            # as the default run: more noise is post-processing (every component of both
            # sides gets the same independent N(0, σ² − σ_max²)), so the pair at σ_max
            # bounds it; beyond, the grid lost its resolution (ε 6e-8 at σ 1e7 for 0 at
            # 1e5, replace-one) and a σ solve galloped to 9e18 (h = 0: exit 2)
            self.reduced.add(("clamp", SIGMA_EVAL_MAX))
            sigma = SIGMA_EVAL_MAX
        if k == 1 and q < PLD_Q_MIN:
            out = self._floored(fn, self.scheme, q, sigma, steps, arg, kw)
            if name.endswith("_bounds"):   # the lower end bounds the pair at 1e-12, not q's
                out = (0.0 if name == "epsilon_bounds" else -math.inf, out[1])
            return out
        try:
            return fn([(self.pair(q, sigma), steps)], arg, self.tol, **kw)
        except PLDUncertifiable:
            if k == 1:
                raise
        p = min(1.0, -math.expm1(k * math.log1p(-q)) * (1.0 + 8.0 * UNIT_ROUNDOFF))
        from dpcalc.api.dpsgd_runs import Scheme

        one = Scheme(self.scheme.sampling, self.scheme.relation, 1)
        out = self._floored(fn, one, p, sigma / k * (1.0 - 4.0 * UNIT_ROUNDOFF), steps, arg,
                            kw)
        self.reduced.add((q, sigma))
        if name.endswith("_bounds"):     # the lower end bounds the looser pair, not this one
            out = (0.0 if name == "epsilon_bounds" else -math.inf, out[1])
        return out

    def _floored(self, fn, one: Scheme, rate, sigma, steps, arg, kw):
        """fn on a one-example pair at max(rate, PLD_Q_MIN): below 1e-12 the grid cannot
        resolve the one-step loss (the engine failed with an IndexError at 1e-40). Each
        one-example pair grows with its rate: at q < q' it is the pair at q' post-processed
        by replacing the output, with probability 1 − q/q', by a fresh draw of the common
        component N(0, σ²) (both sides share it), so the pair at 1e-12 bounds it (said in
        a note)."""
        from dpcalc.accountants.dpsgd import PLD_Q_MIN

        if rate < PLD_Q_MIN:
            self.reduced.add(("floor", rate))
            rate = PLD_Q_MIN
        from dpcalc.api.dpsgd_runs import pair_of

        return fn([(pair_of(one, rate, sigma), steps)], arg, self.tol, **kw)

    def epsilon(self, q, sigma, steps, log_delta):
        key = ("e", q, sigma, steps, log_delta)
        if key not in self._seen:
            from dpcalc.pld import PLDUncertifiable

            if self.log_participation(q, steps) <= log_delta:
                self._seen[key] = (0.0, (0.0, 0.0))
                return self._seen[key]
            kw = {"for_solve": True} if self.for_solve else {}
            try:
                lo, up = self._engine("epsilon_bounds", q, sigma, steps, log_delta, **kw)
            except PLDUncertifiable as exc:
                raise InfeasibleError(f"the PLD grid cannot certify this run ({exc})") from None
            except (ArithmeticError, ValueError):
                # the optimistic sides' coarsening can leave the double range first (K = 50,
                # q 0.5, σ 0.8, 10⁶ steps: a grid step of 240, expm1(3h) overflowed: exit 2;
                # helper-52): the pessimistic first pass alone is a certified upper end
                lo, up = 0.0, self._upper_only(q, sigma, steps, log_delta)
            self._seen[key] = (up, (lo, up))
            self._first_pass_final = up == self._cheap.get(key)
            self._first_pass_sure = first_pass_sure(self._first_pass_final, (lo, up),
                                                    self.tol)
        return self._seen[key]

    def _upper_only(self, q, sigma, steps, log_delta) -> float:
        from dpcalc.pld import PLDUncertifiable

        try:
            up = self._engine("epsilon_upper", q, sigma, steps, log_delta)
        except (PLDUncertifiable, ArithmeticError, ValueError):
            up = math.inf
        if not up < math.inf:
            raise InfeasibleError("the PLD grid cannot certify this run (its grid leaves the "
                                  "double range)")
        self.reduced.add(("upper only", q, sigma, steps))
        return up

    def log_delta(self, q, sigma, steps, epsilon):
        from dpcalc.pld import PLDUncertifiable

        part = self.log_participation(q, steps)
        try:
            lo, up = self._engine("log_delta_bounds", q, sigma, steps, epsilon)
        except (PLDUncertifiable, ArithmeticError, ValueError) as exc:
            if part < 0.0:
                self.reduced.add(("participation", q, steps))
                return part, (-math.inf, part)
            raise InfeasibleError(f"the PLD grid cannot certify this run ({exc})") from None
        return min(up, part), (min(lo, part), min(up, part))

    def upper(self, q, sigma, steps, log_delta) -> float:
        """The cheap certified upper bound on ε (the first pass; +inf where it certifies
        none): aims the solves' secants (dpcalc.api._dpsgd_runs_guess), decides nothing."""
        from dpcalc.pld import PLDUncertifiable

        if self.log_participation(q, steps) <= log_delta:
            return 0.0
        try:
            return self._keep_cheap((q, sigma, steps, log_delta), self._engine(
                "epsilon_upper", q, sigma, steps, log_delta))
        except (PLDUncertifiable, ArithmeticError, ValueError):
            return math.inf

    def _keep_cheap(self, point: tuple, value: float) -> float:
        if 0.0 <= value < math.inf:
            self._cheap[("e", *point)] = value
        return value

    def holds(self, q, sigma, steps, epsilon, log_delta) -> bool:
        # the reported ε's upper end (as the default accountant does): a solved value then
        # re-evaluates to at most the target in the ε direction. The PLD's cheap certified
        # upper bound (its first pass; +inf once certainly above the target) decides a
        # passing point first; otherwise the full bracket decides.
        if ("e", q, sigma, steps, log_delta) not in self._seen:
            from dpcalc.pld import PLDUncertifiable

            if self.log_participation(q, steps) <= log_delta:
                return True
            likely = self._likely_fails(q, sigma, steps, epsilon, log_delta)
            if likely and not self._first_pass_final:
                return self._certified(q, sigma, steps, epsilon, log_delta)
            try:
                quick = self._keep_cheap((q, sigma, steps, log_delta), self._engine(
                    "epsilon_upper", q, sigma, steps, log_delta, stop_above=epsilon))
            except (PLDUncertifiable, ArithmeticError, ValueError):
                quick = math.inf
            if quick <= epsilon:
                return True
            if likely or self._first_pass_sure:
                # the full bracket next to it changed nothing (with room to spare, for a
                # fail that is not likely): the cheap bound decides the fail too (as the
                # default run's Accountant.holds; a fail is never unsafe: an answer is
                # always a point whose own bound passed)
                return False
        return self._certified(q, sigma, steps, epsilon, log_delta)

    def settles(self, q, sigma, steps, epsilon, log_delta, rtol) -> bool:
        """Whether a passing point's full bracket, where it has been computed, puts the
        reported ε within ``rtol`` below the target: a σ or q solve may end there (as the
        default run's Accountant.settles; no evaluation is asked for here)."""
        got = self._seen.get(("e", q, sigma, steps, log_delta))
        return got is not None and epsilon * (1.0 - rtol) <= got[0] <= epsilon

    def _certified(self, q, sigma, steps, epsilon, log_delta) -> bool:
        try:
            return self.epsilon(q, sigma, steps, log_delta)[0] <= epsilon
        except InfeasibleError:
            return False        # not certified: failing, as the solver treats it

    def _likely_fails(self, q, sigma, steps, epsilon, log_delta) -> bool:
        """A point at least as costly (q and steps no smaller, σ no larger) as one whose full
        bound passed within 1e-4 of the target (a solver certifying its root): the cheap
        bound would most likely not decide it, so the full one is asked at once (as the
        default run's Accountant._likely_fails).  Only a matter of cost."""
        for key, (value, _) in self._seen.items():
            if key[0] == "e" and key[4] == log_delta and key[1] <= q and key[2] >= sigma \
                    and key[3] <= steps and epsilon * (1.0 - 1e-4) <= value <= epsilon:
                return True
        return False

    def notes(self, q, sigma, steps, log_delta) -> list[str]:
        """What the answer at these values rests on, beside the scheme's own PLD."""
        out = []
        if log_delta is not None and self.log_participation(q, steps) <= log_delta:
            out.append("ε = 0 exactly: the user's examples are sampled at all with "
                       "probability 1 − (1 − q)^(K·steps) ≤ δ, and the outputs are equal "
                       "in law otherwise")
        if (q, sigma) in self.reduced:
            out.append(f"the grid of the {self.scheme.k}-example pair cannot be placed at "
                       f"q = {q:.3g}: bounded by the one-example pair at rate "
                       f"1 − (1 − q)^K and noise σ/K (sound, looser)")
        if any(key[0] == "floor" for key in self.reduced if isinstance(key, tuple)) \
                and ("triangle", q, sigma, steps) not in self.reduced:
            out.append("below a rate of 1e-12 the one-example pair's grid cannot resolve the "
                       "loss: bounded by the pair at rate 1e-12 (the loss grows with the "
                       "rate; sound, looser)")
        from dpcalc.api.dpsgd import SIGMA_EVAL_MAX

        if sigma is not None and sigma > SIGMA_EVAL_MAX:
            out.append(f"σ above {SIGMA_EVAL_MAX:.0e} is evaluated at {SIGMA_EVAL_MAX:.0e}: "
                       "more noise is never less private, so the bound is an upper bound")
        if ("triangle", q, sigma, steps) in self.reduced:
            out.append("bounded through the add/remove run at the same q, σ and steps: "
                       "δ(ε) ≤ (1 + e^(ε/2))·δ_add/remove(ε/2) (group privacy through the "
                       "run without the example; sound, and tighter here than the "
                       "replace-one grid, whose tails are loose at this rate and length)")
            extra = self._tri_notes.get((q, sigma, steps))
            if extra:
                out.append(f"(the add/remove run: {extra})")
        if ("upper only", q, sigma, steps) in self.reduced:
            out.append("the PLD's lower end left the double range here: it is reported as 0 "
                       "(the upper end is certified)")
        if ("participation", q, steps) in self.reduced:
            out.append("the PLD grid cannot certify this run: δ is bounded by the "
                       "probability 1 − (1 − q)^(K·steps) that the user's examples are "
                       "sampled at all")
        return out
