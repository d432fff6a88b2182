"""``dpsgd``: DP-SGD with Poisson sampling; leave one of q, σ, epochs (or steps), ε, δ out."""

from __future__ import annotations

import math
from fractions import Fraction

from dpcalc.api._common import (
    COUNT_RTOL,
    check_choice,
    comparison_failures,
    count_resolution_note,
    failure_note,
    leave_one_out,
)
from dpcalc.errors import DomainError, InfeasibleError, UsageError
from dpcalc.methods import DPSGD
from dpcalc.numeric.directed import exp_up, log_of
from dpcalc.params import EPSILON, INF, WHOLE_EPOCHS, Param, Q
from dpcalc.references import REFS
from dpcalc.result import Bounds, Comparison, Result
from dpcalc.solve import solve_unknown

ACCOUNTANTS = DPSGD.names  # the registry (dpcalc.methods): names, references, help
_REF = DPSGD.references

EPOCHS = Param("epochs", 0.0, INF, True, True, "smaller", symbol="epochs")
STEPS = Param("steps", 0, 10**10, True, False, "smaller", integer=True, symbol="steps")
# never solved; a given tolerance is read down (a tighter bracket is never less sound)
TOLERANCE = Param("tolerance", 0.0, 1.0, True, True, "larger", symbol="tolerance")
NOISE = Param("sigma", 0.0, INF, True, True, "larger", symbol="σ")
#: DP-SGD's Gaussian noise is never (ε, 0)-DP: δ = 0 is outside the domain (exit 2), as the
#: help says, not an infeasible target
DELTA = Param("delta", 0.0, 1.0, True, True, "larger", tiny_ok=True, symbol="δ")

_SYMBOLS = {"q": "q", "sigma": "σ", "epochs": "epochs", "steps": "steps", "epsilon": "ε",
            "delta": "δ"}


#: The most steps dpsgd accounts for (the PLD composes by repeated squaring, but a run of
#: more than 1e10 steps is not a real training run, and larger counts only invite overflow).
MAX_STEPS = 10**10


def steps_for(epochs: float, q: float) -> int:
    """steps = ⌈epochs/q⌉, exactly (more steps is the private side).

    Raises:
        DomainError: more than ``MAX_STEPS`` steps.
    """
    steps = max(1, math.ceil(Fraction(epochs) / Fraction(q)))
    if steps > MAX_STEPS:
        raise DomainError(f"--epochs/--q give {steps:.3g} steps; dpcalc accounts for at most "
                          f"{MAX_STEPS:.0e} steps")
    return steps


#: The largest noise multiplier the accountants evaluate. A larger σ is evaluated at this one:
#: more noise is never less private (adding noise is post-processing), so the bound stays an
#: upper bound, and the output says so. (Beyond it the PLD grid and the strong accountant's
#: per-step profile leave the double range.)
SIGMA_EVAL_MAX = 1e6
#: The smallest noise multiplier a σ solve goes down to: when it already meets the target, it is
#: the answer (an upper bound on the smallest σ that does; the output says so).
SIGMA_SOLVE_MIN = 1e-3


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
        cheap = self.upper(q, sigma, steps, log_delta)
        value = self.epsilon(q, sigma, steps, log_delta)[0]
        self._first_pass_final = value == cheap
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

    def holds(self, q: float, sigma: float, steps: int, epsilon: float,
              log_delta: float) -> bool:
        """Certified: T steps at (q, σ) are (ε, δ)-DP under this accountant (its upper bound).

        The cheap upper bound decides a passing point; otherwise the full evaluation (whose
        upper bound is at most the cheap one) does, so the answer is the full evaluation's.
        A likely fail (``_likely_fails``) goes to the full evaluation at once, unless the
        last full one (next to it) changed nothing (``_first_pass_final``): the cheap bound
        then decides a fail too (issue 13's MNIST σ: its last probe 0.08 -> 0.035 s); an
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
        value = self.epsilon(q, sigma, steps, log_delta)[0]
        self._first_pass_final = self.name == "pld" and value == self._upper.get(key)
        return value <= epsilon


def dpsgd(*, q: object = None, batch_size: object = None, dataset_size: object = None,
          sigma: object = None, epochs: object = None, steps: object = None,
          epsilon: object = None, delta: object = None, accountant: str = "pld",
          tolerance: object = 1e-3, curve: bool = False, solve_for: str | None = None,
          compare: bool = True, fpr: object = None, tpr: object = None,
          sampling: str | None = None, relation: str | None = None,
          examples_per_user: object = None, curve_accountants: object = None) -> Result:
    """DP-SGD accounting: Poisson rate q, noise multiplier σ, T = ⌈epochs/q⌉ steps.

    Solves ε or δ (guarantees, upper bounds), σ (smallest that meets the target), or the
    largest epochs/steps/q that fit. ``pld`` reports a certified bracket and returns its
    upper end. Every other accountant is solved for the same unknown in ``comparison``
    (skipped with ``compare=False``, as ``--value`` does).

    ``fpr`` adds the TPR bound of any membership-inference test at each FPR, from the
    certified PLD profile; ``tpr`` (with one ``fpr``, in place of ε and δ) solves q, σ,
    epochs or steps so that the certified TPR bound at that FPR is at most the target.

    Raises:
        UsageError, DomainError: bad input. InfeasibleError: no value meets the target.
    """
    check_choice(accountant, ACCOUNTANTS, "--accountant")
    from dpcalc.api import _risk
    from dpcalc.api.dpsgd_curve import parse_curve_accountants

    # the other accountants' curves, plotted beside the main one (implies --curve)
    curve_others = parse_curve_accountants(curve_accountants, accountant)
    curve = curve or bool(curve_others)
    from dpcalc.api.dpsgd_runs import scheme_of

    # how the run samples its batches (CONTRACT "How the run samples its batches")
    scheme = scheme_of(sampling, relation, examples_per_user)
    fprs = _risk.parse_fprs(fpr)
    target = _risk.parse_target(tpr, fprs, {"epsilon": epsilon, "delta": delta})
    run_scheme = None if scheme.is_default else scheme
    if fprs or target is not None:
        # the attack-risk read-outs use the profile of the run's own pair (run_items); a
        # scheme without one refuses here, before any work: never a silent answer for
        # another setting
        from dpcalc.api._dpsgd_items import run_items

        run_items(0.5, 1.0, 1, run_scheme)
    if curve_others and (target is not None or not scheme.is_default):
        raise UsageError("--curve-accountants is available for --sampling poisson with "
                         "add-remove neighbours and one example per user, without --tpr")
    if solve_for in ("steps", "epochs") and (epochs is not None or steps is not None):
        raise UsageError(f"--solve-for {solve_for} conflicts with --epochs/--steps, which "
                         "was given")
    if target is not None:
        from dpcalc.api._risk_dpsgd import dpsgd_for_tpr

        if run_scheme is not None and accountant != "pld":
            raise UsageError(f"--accountant {accountant} is not available with --sampling "
                             f"{scheme.sampling} --relation {scheme.relation} "
                             f"--examples-per-user {scheme.k}")
        return dpsgd_for_tpr(q=q, batch_size=batch_size, dataset_size=dataset_size,
                             sigma=sigma, epochs=epochs, steps=steps, tolerance=tolerance,
                             solve_for=solve_for, target=target, alpha=fprs[0],
                             scheme=run_scheme)
    tol = TOLERANCE.parse(tolerance)
    # the default combination (poisson, add-remove, K = 1) continues below unchanged
    from dpcalc.api.dpsgd_runs import dpsgd_run

    if run_scheme is not None:
        result = dpsgd_run(scheme, q=q, batch_size=batch_size, dataset_size=dataset_size,
                           sigma=sigma, epochs=epochs, steps=steps, epsilon=epsilon,
                           delta=delta, accountant=accountant, tolerance=tol, curve=curve,
                           solve_for=solve_for, compare=compare)
        if not fprs:
            return result
        from dpcalc.api._risk_dpsgd import risk_of

        p = result.parameters
        return _risk.attach(result, risk_of(p["q"], p["sigma"], p["steps"], tol, fprs,
                                            (p["epsilon"], p["delta"]), scheme=run_scheme))
    from dpcalc.api.subsample import rate_text, resolve_rate

    q = resolve_rate(q, batch_size, dataset_size, "--batch-size", "--dataset-size")
    if epochs is not None and steps is not None:
        raise UsageError("--epochs conflicts with --steps; give one (steps = ⌈epochs/q⌉)")
    count = STEPS if steps is not None or solve_for == "steps" else EPOCHS
    values, unknown = leave_one_out(
        {"q": q, "sigma": sigma, count.name: epochs if count is EPOCHS else steps,
         "epsilon": epsilon, "delta": delta},
        (Q, NOISE, count, EPSILON, DELTA), solve_for=solve_for)
    # one solve, the same in every output mode; the comparison rows come after it and never
    # change or abort it
    main = Accountant(accountant, tol)
    value, bounds = _solve(main, unknown.name, dict(values))
    main.fallback_note = _answer_note(main, unknown.name, values, value)
    comparison = []
    for other in ACCOUNTANTS if compare else ():
        if other == accountant:
            continue
        acc = Accountant(other, tol)
        try:
            v, _ = _solve(acc, unknown.name, dict(values))
            note = _answer_note(acc, unknown.name, values, v)
            comparison.append(Comparison(other, v, REFS[_REF[other]].short, note))
        except comparison_failures() as exc:
            comparison.append(Comparison(other, None, REFS[_REF[other]].short, failure_note(exc)))
    values[unknown.name] = value
    if count is EPOCHS:
        values["steps"] = steps_for(values["epochs"], values["q"])
    else:
        values["epochs"] = values["steps"] * values["q"]
    parameters = {k: values[k] for k in ("q", "sigma", "epochs", "steps", "epsilon", "delta")}
    if batch_size is not None:
        from dpcalc.api.dpsgd_runs import BATCH, SIZE

        parameters["batch_size"] = BATCH.parse(batch_size)
        parameters["dataset_size"] = SIZE.parse(dataset_size)
    parameters.update(scheme.parameters())
    notes = []
    method = accountant
    if main.fallback_note:
        notes.append(main.fallback_note)
        method = main.fallback_note.method   # the fallback that answered (FallbackNote)
    if main.clamp_note:
        notes.append(main.clamp_note)
    if method == "pld" and values["q"] == 1.0:
        from dpcalc.relations.full_batch import NOTE

        notes.append(NOTE)
    if unknown.name == "sigma" and value <= SIGMA_SOLVE_MIN * (1.0 + 1e-3):
        notes.append(f"σ = {SIGMA_SOLVE_MIN:g} is the smallest noise dpcalc solves for; it "
                     "meets the target, and a smaller σ may too")
    if unknown.name in ("steps", "epochs") and method == "pld" and values["q"] != 1.0:
        # (an epochs answer searches whole epochs; below 2 epochs, steps: finer than one)
        note = count_resolution_note(values[unknown.name], unknown.name)
        if note:
            notes.append(note)
    if count is EPOCHS and unknown.name != "epochs":
        notes.append(f"steps = ⌈epochs/q⌉ = {values['steps']}")
    extra: dict = {}
    if curve:
        from dpcalc.api.dpsgd_curve import answer_curve

        extra["curve"] = answer_curve(main, values, curve_others, tol)
    direction = "upper" if unknown.name in ("epsilon", "delta", "sigma") else "lower"
    result = Result(
        command="dpsgd", solved_for=unknown.name, value=value, parameters=parameters,
        method=method, direction=direction, reference=REFS[_REF[method]].short,
        bounds=Bounds(*bounds) if bounds is not None else None,
        comparison=tuple(comparison), notes=tuple(notes), extra=extra,
        symbols={**_SYMBOLS, "examples_per_user": "K", "batch_size": "B", "dataset_size": "N"},
        derived=("steps",) if count is EPOCHS else ("epochs",),
        given=rate_text(batch_size, dataset_size))
    if not fprs:
        return result
    from dpcalc.api._risk_dpsgd import risk_of

    return _risk.attach(result, risk_of(values["q"], values["sigma"], values["steps"], tol,
                                        fprs, (values["epsilon"], values["delta"])))


def _answer_note(acc: Accountant, unknown: str, values: dict, value) -> str:
    """The fallback note of the evaluation that certifies ``value`` (not of every probe)."""
    if unknown == "delta":
        return acc.fallback_note  # one evaluation, at the given point
    point = dict(values, **{unknown: value})
    if "epochs" in point:  # steps follow from epochs, as in the solve
        point["steps"] = steps_for(point["epochs"], point["q"])
    return acc.note_at(point["q"], point["sigma"], point["steps"], log_of(point["delta"]))


def _solve(acc: Accountant, unknown: str, values: dict):
    """(private-side value, bracket or None) of ``unknown`` under one accountant."""
    if acc.name != "pld" or unknown in ("epsilon", "delta"):
        return _solve_one(acc, unknown, values)
    from dpcalc.relations.pld import keeping_compositions

    acc.for_solve = True  # its predicate reads upper ends only (no bracket is reported)

    with keeping_compositions():  # a probe's quick pass is reused by its full bracket
        return _solve_one(acc, unknown, values)


def _solve_one(acc: Accountant, unknown: str, values: dict):
    from dpcalc.api._dpsgd_guess import q_guess, sigma_guess, steps_guess

    q, sigma = values.get("q"), values.get("sigma")
    eps = values.get("epsilon")
    log_d = log_of(values["delta"]) if "delta" in values else None

    def steps_of(v: dict, rate: float) -> int:
        return v["steps"] if "steps" in v else steps_for(v["epochs"], rate)

    if unknown == "epsilon":
        value, bounds = acc.epsilon(q, sigma, steps_of(values, q), log_d)
        if not math.isfinite(value):
            raise InfeasibleError(f"the {acc.name} accountant gives no finite ε here")
        return value, bounds
    if unknown == "delta":
        log_value, log_bounds = acc.log_delta(q, sigma, steps_of(values, q), eps)
        bounds = None
        if log_bounds is not None:
            from dpcalc.numeric.directed import exp_down

            bounds = (exp_down(log_bounds[0]), exp_up(log_bounds[1]))
        return exp_up(log_value), bounds
    if unknown == "sigma":
        steps = steps_of(values, q)
        # seed the bracket with a secant root of the continuous upper bound (any guess is
        # safe: holds decides, and the solver returns the passing side)
        # the PLD bound is only 1e-3 tight (exact at q = 1: dpcalc.relations.full_batch)
        gridded = acc.name == "pld" and q != 1.0
        rtol = 2e-5 if gridded else 1e-9
        guess, guess_rtol = sigma_guess(acc, q, steps, eps, log_d, 8e-6 if gridded else 2e-10)
        # low_open: the floor is not probed first (a bisection towards it returns a point
        # that passes, just above it, when it passes too)
        return solve_unknown(NOISE, lambda s: acc.holds(q, s, steps, eps, log_d),
                             low=SIGMA_SOLVE_MIN, low_open=True, high=SIGMA_EVAL_MAX, rtol=rtol,
                             guess=guess, guess_rtol=guess_rtol), None
    if unknown in ("steps", "epochs"):
        guess = steps_guess(acc, q, sigma, eps, log_d)
        count_rtol = COUNT_RTOL if acc.name == "pld" and q != 1.0 else 0.0
    if unknown == "steps":
        return solve_unknown(STEPS, lambda n: acc.holds(q, sigma, n, eps, log_d),
                             guess=guess, int_rtol=count_rtol), None
    if unknown == "epochs" and guess is not None and guess * q >= 2:
        # the largest whole epochs e with ⌈e/q⌉ steps passing: monotone in e, so the same
        # answer as ⌊most·q⌋ below, with a few evaluations around the guess
        top = math.floor(Fraction(MAX_STEPS) * Fraction(q))
        try:
            return solve_unknown(
                WHOLE_EPOCHS, lambda e: acc.holds(q, sigma, steps_for(e, q), eps, log_d),
                high=top, guess=min(max(1, math.floor(guess * q)), top),
                int_rtol=count_rtol), None
        except InfeasibleError:
            pass  # not even one epoch: the steps search below says how many steps fit
    if unknown == "epochs":
        most = solve_unknown(STEPS, lambda n: acc.holds(q, sigma, n, eps, log_d),
                             int_rtol=count_rtol)
        epochs = math.floor(Fraction(most) * Fraction(q))
        if epochs < 1:
            raise InfeasibleError(f"not even one epoch fits: at most {most} steps "
                                  f"(< 1/q = {1 / q:.6g})")
        assert steps_for(epochs, q) <= most  # checked both ways: ⌈epochs/q⌉ steps fit
        return epochs, None
    # q: the largest rate (steps follow from epochs when epochs were given); a rate below
    # epochs/MAX_STEPS would need more steps than dpcalc accounts for
    low = 0.0 if "steps" in values else float(Fraction(values["epochs"]) / MAX_STEPS)
    # with the steps given, ε rises smoothly with q: the PLD bound is only 1e-3 tight, so 2e-5
    # in ε is plenty (as on σ; on q divided by d log ε / d log q where that is below 0.5, see
    # q_guess), from a secant guess. Finer, a bisection only chases the bound's own
    # variation between neighbouring rates (1e-5 to 1e-4 where its grid changes): 10 full
    # evaluations from 1e-4 to 1e-7 on random case 239 of benchmarks/bench_dpsgd_random.py
    # (14.5 s -> 4.9 s). (With the epochs given, steps = ⌈epochs/q⌉ jumps with q and the
    # search keeps its bisection from scratch.)
    rtol, guess, guess_rtol = 1e-9, None, 1e-9
    if "steps" in values:
        rtol = 2e-5 if acc.name == "pld" else 1e-9
        guess, guess_rtol, rtol = q_guess(acc, values, eps, log_d, low, rtol,
                                          by_slope=acc.name == "pld")
    try:
        return solve_unknown(Q, lambda r: acc.holds(r, sigma, steps_of(values, r), eps, log_d),
                             low=low, low_open=True, rtol=rtol, guess=guess,
                             guess_rtol=guess_rtol), None
    except InfeasibleError:
        if low == 0.0 and acc.name == "pld":
            from dpcalc.accountants.dpsgd import PLD_Q_MIN

            raise InfeasibleError(
                f"no q meets the target that the PLD certifies (it accounts for q >= "
                f"{PLD_Q_MIN:g}; below, its fallbacks certify none either); a smaller "
                "q may meet it") from None
        if low == 0.0:
            raise
        raise InfeasibleError(f"no q >= {low:.3g} meets the target (a smaller q would need more "
                              f"than {MAX_STEPS:.0e} steps)") from None
