"""The accountant behind ``dpsgd``'s questions: ε(δ) and δ(ε) of T steps of the
Poisson-subsampled Gaussian under one registered accountant (dpcalc.methods.DPSGD), each point
computed once, with the cheap first-pass bound and the learning the solves aim with
(dpcalc.api._dpsgd_guess), and the sharing of accountings across a batch's questions."""

from __future__ import annotations

import math

#: The largest noise multiplier the accountants evaluate. A larger σ is evaluated at this one:
#: more noise is never less private (adding noise is post-processing), so the bound stays an
#: upper bound, and the output says so. (Beyond it the PLD grid and the strong accountant's
#: per-step profile leave the double range.)
SIGMA_EVAL_MAX = 1e6


#: Accountings shared between the questions of a batch (``shared_accounting``): None when off.
#: Keyed by everything an evaluation depends on, so a shared answer is the one a fresh run
#: computes (the same bracket, the same fallback note).
_SHARED: dict | None = None


class shared_accounting:  # noqa: N801 - used as a context manager, reads like a function
    """Within this block every ``Accountant`` evaluates each (accountant, tolerance, q, σ,
    steps, δ or ε) point once, across calls: ``dpcalc batch`` asks many questions about the
    same mechanisms (several lines, and each line's comparison rows)."""

    def __enter__(self):
        global _SHARED
        self._outer = _SHARED
        if _SHARED is None:
            _SHARED = {}
        return self

    def __exit__(self, *exc) -> None:
        global _SHARED
        _SHARED = self._outer


#: A full evaluation whose first pass was final with a bracket at most this share of the
#: tolerance wide: its neighbours' first passes are taken as final too (Accountant.holds)
_SURE_WIDTH = 0.25


def first_pass_sure(final: bool, bounds, tolerance: float) -> bool:
    """Whether a full evaluation that found its first pass final (``final``) did so with a
    certified bracket ``bounds`` (lower, upper) at most _SURE_WIDTH of the tolerance wide:
    a neighbour's first pass is then final as surely, and its cheap bound decides a fail
    too (the solves' ``holds``: a fail decided so only costs tightness, never soundness)."""
    lo, up = bounds or (0.0, math.inf)
    return final and 0.0 < up < math.inf and up - lo <= _SURE_WIDTH * tolerance * up


_LEARN_LOG_DELTA = -50.0   # below: bound_for learns the refinement just below the target too


class Accountant:
    """ε(δ) and δ(ε) of T steps of the Poisson-subsampled Gaussian under one accountant."""

    def __init__(self, name: str, tolerance: float):
        self.name = name
        self.tolerance = tolerance
        self.fallback_note = ""
        self.clamp_note = ""
        self._seen: dict[tuple, tuple[float, tuple[float, float] | None]] = {}
        self._notes: dict[tuple, str] = {}  # the fallback note of each ε point, if any
        self._upper: dict[tuple, float | None] = {}  # the cheap upper bound of ε points
        # whether the last full evaluation (full_bound, holds) gave the cheap bound unchanged
        # (the first pass met the tolerance): the secant then aims with the cheap bound alone
        self._first_pass_final = False
        # ... and its bracket lay within _SURE_WIDTH of the tolerance: a neighbour's cheap
        # bound then decides a fail too (holds)
        self._first_pass_sure = False
        # log(full / cheap) at the last point where bound_for computed both (see aimed)
        self._refined: float | None = None
        # set by a solve (σ, q, steps): a full evaluation only needs its upper end, which
        # epsilon_solve gives bit for bit at less cost (its lower end may be looser)
        self.for_solve = False

    def _evaluated_sigma(self, sigma: float) -> float:
        if sigma <= SIGMA_EVAL_MAX:
            return sigma
        self.clamp_note = (f"σ above {SIGMA_EVAL_MAX:.0e} is evaluated at {SIGMA_EVAL_MAX:.0e}: "
                           "more noise is never less private, so the bound is an upper bound")
        return SIGMA_EVAL_MAX

    def epsilon(self, q: float, sigma: float, steps: int,
                log_delta: float) -> tuple[float, tuple[float, float] | None]:
        """(upper bound on ε, certified bracket or None); each point is computed once."""
        sigma = self._evaluated_sigma(sigma)
        key = (q, sigma, steps, log_delta)
        if key not in self._seen:
            shared_key = ("epsilon", self.for_solve, self.name, self.tolerance, *key)
            if _SHARED is not None and shared_key in _SHARED:
                self._seen[key], self._notes[key] = _SHARED[shared_key]
            else:
                self.fallback_note = ""
                self._seen[key] = self._epsilon(q, sigma, steps, log_delta)
                self._notes[key] = self.fallback_note
                if _SHARED is not None:
                    _SHARED[shared_key] = (self._seen[key], self._notes[key])
            self.fallback_note = self._notes[key]
        return self._seen[key]

    def upper(self, q: float, sigma: float, steps: int, log_delta: float) -> float:
        """A certified upper bound on ε, as cheap as the accountant offers: the first pass of
        the PLD (``evaluate_upper``), else the full evaluation's. Each point once."""
        sigma = self._evaluated_sigma(sigma)
        key = (q, sigma, steps, log_delta)
        if key in self._seen:
            return self._seen[key][0]
        if key not in self._upper:
            shared_key = ("upper", self.name, self.tolerance, *key)
            if _SHARED is not None and shared_key in _SHARED:
                self._upper[key] = _SHARED[shared_key]
            else:
                from dpcalc.accountants.dpsgd import evaluate_upper

                self._upper[key] = evaluate_upper(self.name, *key, self.tolerance)
                if _SHARED is not None:
                    _SHARED[shared_key] = self._upper[key]
        got = self._upper[key]
        return got if got is not None else self.epsilon(q, sigma, steps, log_delta)[0]

    def bound_for(self, q: float, sigma: float, steps: int, log_delta: float,
                  target: float) -> float:
        """The upper bound on ε that ``holds`` compares with ``target``: the cheap one when
        it meets the target, else the full evaluation's. A secant on it converges to the
        predicate's own threshold, also where the full bracket refines the cheap bound.
        Far above the target (by more than 20 tolerances, which refinement does not recover)
        the cheap bound is enough to aim the next step.  Just below it, the first time, the
        full evaluation is asked too: its refinement moves the bounds a secant aims with
        (``aimed``), and a search that came from below would otherwise settle on the cheap
        bound's root (random case 291 of benchmarks/bench_dpsgd_random.py, seeded below
        the root: 0.7 % below the predicate's threshold in q, then 10 full evaluations to
        climb).  Only for δ < e^-50: above, the first pass is mostly final (the MNIST σ
        solve of issue 13 took a second full evaluation)."""
        cheap = self.upper(q, sigma, steps, log_delta)
        near = max(0.02, 20.0 * self.tolerance)
        if cheap <= target and (self._refined is not None or self._first_pass_final
                                or cheap < target * (1.0 - near)
                                or log_delta >= _LEARN_LOG_DELTA):
            return cheap
        if cheap > target * (1.0 + near):
            return cheap
        if self._first_pass_final:
            return cheap  # a refinement nearby changed nothing: aim with the cheap bound
        return self.full_bound(q, sigma, steps, log_delta)

    def full_bound(self, q: float, sigma: float, steps: int, log_delta: float) -> float:
        """The full evaluation's upper bound on ε, learning log(full / cheap) there (aimed;
        _first_pass_final too)."""
        key = (q, self._evaluated_sigma(sigma), steps, log_delta)
        # (at a point evaluated in full already, upper() is that value: the cheap one, if
        # any, is read instead, and nothing is learned without one)
        cheap = self._upper.get(key) if key in self._seen else self.upper(*key)
        value = self.epsilon(q, sigma, steps, log_delta)[0]
        if cheap is not None:
            self._learn_final(key, value == cheap)
            if 0.0 < value < math.inf and 0.0 < cheap < math.inf:
                self._refined = math.log(value) - math.log(cheap)
        return value

    def aimed(self, q: float, sigma: float, steps: int, log_delta: float,
              bound: float) -> float:
        """The bound a secant aims with where ``bound_for`` gave ``bound``: a cheap one is
        moved by the refinement seen at the last point evaluated both ways (log full/cheap
        varies slowly: −0.1061 to −0.1056 over q 4.843e-4 to 4.866e-4, random case 30), so
        a chord does not mix the two bounds.  Only aims; ``bound`` is decided on."""
        key = (q, self._evaluated_sigma(sigma), steps, log_delta)
        if key in self._seen or self._refined is None or not 0.0 < bound < math.inf:
            return bound
        return bound * math.exp(self._refined)

    def _implied_fail(self, key: tuple, epsilon: float) -> bool:
        """A point at least as costly as one whose refined PLD bound already exceeds the
        target, at the same δ (q and steps no smaller, σ no larger): taken to fail without
        an evaluation. This is the monotonicity every bisection here already assumes (the
        true ε never decreases as q or the steps grow or σ shrinks: the hockey-stick
        divergences of the subsampled pair are jointly convex in q and 0 at q = 0, more
        noise is post-processing [DR14, Prop. 2.1], and dominating pairs compose [ZDW22]).
        It decides only failing points: an answer is always a point whose own bound passed,
        so the answer and a forward question at it agree. (A pass is never implied: the
        bounds are not monotone at the scale of their bracket, and an answer certified by a
        neighbour's bound could show an ε above the target when asked forward.)"""
        q, sigma, steps, log_delta = key
        for (kq, ks, kt, kd), (value, _) in self._seen.items():
            if kd == log_delta and value > epsilon and math.isfinite(value) \
                    and not self._notes.get((kq, ks, kt, kd)) \
                    and kq <= q and ks >= sigma and kt <= steps:
                return True
        return False

    def _likely_fails(self, key: tuple, epsilon: float) -> bool:
        """A point just beyond a passing one whose bound is within 1e-4 of the target (a
        solver certifying its root): the cheap bound would most likely not decide it, so
        the full evaluation (which decides alone: its upper bound is at most the cheap
        one) is asked at once. Only a matter of cost."""
        if self.name != "pld":
            return False
        q, sigma, steps, log_delta = key
        for (kq, ks, kt, kd), bound in self._known():
            if kd == log_delta and epsilon * (1.0 - 1e-4) <= bound <= epsilon \
                    and kq <= q and ks >= sigma and kt <= steps:
                return True
        return False

    def _known(self):
        """(point, certified upper bound on ε) of the PLD's own evaluations so far."""
        for known, (value, _) in self._seen.items():
            if not self._notes.get(known) and math.isfinite(value):
                yield known, value
        for known, bound in self._upper.items():
            if bound is not None and math.isfinite(bound) and known not in self._seen:
                yield known, bound

    def note_at(self, q: float, sigma: float, steps: int, log_delta: float) -> str:
        """The fallback note of the ε point that certifies an answer ("" when none)."""
        key = (q, self._evaluated_sigma(sigma), steps, log_delta)
        if key not in self._seen and self._upper.get(key) is not None:
            return ""  # certified by the accountant's own upper bound: no fallback
        self.epsilon(q, sigma, steps, log_delta)  # memoised: the point the solver certified
        return self._notes[key]

    def _epsilon(self, q: float, sigma: float, steps: int,
                 log_delta: float) -> tuple[float, tuple[float, float] | None]:
        # the registry's accountant (dpcalc.methods.DPSGD), under the one fallback policy
        from dpcalc.accountants.dpsgd import evaluate

        value, bounds, note = evaluate(self.name, "epsilon_solve" if self.for_solve
                                       else "epsilon", q, sigma, steps, log_delta,
                                       self.tolerance)
        self.fallback_note = note or self.fallback_note
        return value, bounds

    def log_delta(self, q: float, sigma: float, steps: int,
                  epsilon: float) -> tuple[float, tuple[float, float] | None]:
        """(upper bound on log δ, certified bracket of log δ or None)."""
        sigma = self._evaluated_sigma(sigma)
        if _SHARED is None:
            return self._log_delta(q, sigma, steps, epsilon)
        key = ("log_delta", self.name, self.tolerance, q, sigma, steps, epsilon)
        if key not in _SHARED:
            before, self.fallback_note = self.fallback_note, ""
            got = self._log_delta(q, sigma, steps, epsilon)
            _SHARED[key] = (got, self.fallback_note)
            if not self.fallback_note:  # as without sharing: a note is only ever set here
                self.fallback_note = before
        got, note = _SHARED[key]
        if note:
            self.fallback_note = note
        return got

    def _log_delta(self, q: float, sigma: float, steps: int,
                   epsilon: float) -> tuple[float, tuple[float, float] | None]:
        from dpcalc.accountants.dpsgd import evaluate

        value, bounds, note = evaluate(self.name, "log_delta", q, sigma, steps, epsilon,
                                       self.tolerance)
        self.fallback_note = note or self.fallback_note
        return value, bounds

    def settles(self, q: float, sigma: float, steps: int, epsilon: float, log_delta: float,
                rtol: float) -> bool:
        """Whether a passing point's full upper bound on ε lies within ``rtol`` below the
        target: a solve may end there (dpcalc.solve's ``settled``), as the bound's root in
        the unknown lies about rtol / |d log ε / d log x| beyond it, the accuracy a failing
        neighbour would certify (q_guess's, on q; σ's rtol is on σ, where |d log ε / d log
        σ| is 1 to 2).  The full evaluation is asked here only where the cheap bound that
        passed already lies in that window (the full one is at most the cheap one), and
        the last full evaluation did not find its first pass final; it replaces the failing
        neighbour the search would otherwise evaluate in full.  Only decides when to stop:
        the point passes either way."""
        if self.name != "pld" or not rtol > 0:
            return False
        key = (q, self._evaluated_sigma(sigma), steps, log_delta)
        floor = epsilon * (1.0 - rtol)
        if key in self._seen:
            value = self._seen[key][0]
        else:
            cheap = self._upper.get(key)
            if cheap is None or not floor <= cheap:
                return False
            if self._first_pass_final:
                # the solve's last full evaluation (near the root once the secant has
                # converged) found the first pass final: so is this one, most likely
                # (bound_for aims so too; only when to stop rests on it).  Its optimistic
                # pass, only to confirm it, cost as much as the whole probe (random case 183
                # of benchmarks/bench_dpsgd_random.py: 0.52 s of 3.4)
                return cheap <= epsilon
            value = self.full_bound(q, sigma, steps, log_delta)
        return floor <= value <= epsilon

    def holds(self, q: float, sigma: float, steps: int, epsilon: float,
              log_delta: float) -> bool:
        """Certified: T steps at (q, σ) are (ε, δ)-DP under this accountant (its upper bound).

        The cheap upper bound decides a passing point; otherwise the full evaluation (whose
        upper bound is at most the cheap one) does, so the answer is the full evaluation's.
        A likely fail (``_likely_fails``) goes to the full evaluation at once, unless the
        last full one (next to it) changed nothing (``_first_pass_final``): the cheap bound
        then decides a fail too (issue 13's MNIST σ: its last probe 0.08 -> 0.035 s), as it
        does any fail where that full one's bracket had room to spare (first_pass_sure); an
        answer is still always a point whose own bound passed."""
        sigma = self._evaluated_sigma(sigma)
        key = (q, sigma, steps, log_delta)
        if key not in self._seen and key not in self._upper and self.name == "pld" \
                and self._implied_fail(key, epsilon):
            return False
        if key not in self._seen:
            quick = self._upper.get(key)
            if key not in self._upper:
                likely_fails = self._likely_fails(key, epsilon)
                if not likely_fails or self._first_pass_final:
                    from dpcalc.accountants.dpsgd import evaluate_upper

                    # stop_above: a bound certainly above the target ends the pass early
                    quick = evaluate_upper(self.name, *key, self.tolerance,
                                           stop_above=epsilon)
                    if quick is not None and quick < math.inf:
                        self._upper[key] = quick
                    if likely_fails and quick is not None and quick > epsilon:
                        return False
            if quick is not None and quick <= epsilon:
                return True
            if quick is not None and q == 1.0 and self.name == "pld":
                # the full batch's first pass is its closed form [BW18; DRS19], the full
                # evaluation's upper end bit for bit: it decides a fail too (without the
                # lower end, certified in mpmath: 49 ms of a q solve's first probe); its
                # first pass is final, as that evaluation would have found
                self._first_pass_final, self._first_pass_sure = True, False
                return False
            if quick is not None and quick > epsilon and self._first_pass_sure:
                # the last full evaluation's first pass was final with room to spare: so is
                # this neighbour's, whose full bound would be the cheap one (random case 116
                # of benchmarks/bench_dpsgd_random.py: its optimistic pass, 0.33 s, only
                # confirmed a fail); a fail decided so only costs tightness, never soundness
                return False
        value = self.epsilon(q, sigma, steps, log_delta)[0]
        self._learn_final(key, self.name == "pld" and value == self._upper.get(key))
        return value <= epsilon

    def _learn_final(self, key: tuple, final: bool) -> None:
        """Record whether the full evaluation at ``key`` found its first pass final, and
        whether with a bracket narrow enough (_SURE_WIDTH of the tolerance) that a neighbour's
        first pass is final as surely."""
        self._first_pass_final = final
        self._first_pass_sure = self.name == "pld" and first_pass_sure(
            final, self._seen[key][1], self.tolerance)
