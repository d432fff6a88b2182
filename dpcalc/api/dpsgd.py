"""``dpsgd``: DP-SGD with Poisson sampling; leave one of q, σ, epochs (or steps), ε, δ out."""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

from dpcalc.api._common import (
    COUNT_RTOL,
    SETTLE_RTOL,
    check_choice,
    comparison_failures,
    count_resolution_note,
    failure_note,
    leave_one_out,
    wide_bracket_note,
)
from dpcalc.api._dpsgd_accountant import (  # noqa: F401 - re-exported (its home until now)
    SIGMA_EVAL_MAX,
    Accountant,
    shared_accounting,
)
from dpcalc.errors import DomainError, InfeasibleError, UsageError
from dpcalc.methods import DPSGD
from dpcalc.numeric.directed import exp_up, log_of
from dpcalc.params import EPSILON, INF, WHOLE_EPOCHS, Given, Param, Q
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


def rate_floor(values: dict) -> float:
    """The open lower end of a q solve: 0 with the steps given; with the epochs given,
    epochs/MAX_STEPS (a smaller rate needs more steps than dpcalc accounts for).

    Raises:
        DomainError: epochs above MAX_STEPS: every q ≤ 1 gives more steps than that (the
            message named --q, which a q solve is not given).
    """
    if "steps" in values:
        return 0.0
    if Fraction(values["epochs"]) > MAX_STEPS:
        # (12 digits: just above 1e10 reads as itself, not as the allowed 1e+10)
        raise DomainError(f"--epochs {float(values['epochs']):.12g} needs at least that many "
                          f"steps at every q <= 1 (steps = ⌈epochs/q⌉); dpcalc accounts for at "
                          f"most {MAX_STEPS:.0e} steps")
    return float(Fraction(values["epochs"]) / MAX_STEPS)


def below_rate_floor(low: float) -> InfeasibleError:
    """The answer of a q solve that nothing above ``rate_floor`` passes (low > 0)."""
    return InfeasibleError(f"no q >= {low:.3g} meets the target (a smaller q would need more "
                           f"than {MAX_STEPS:.0e} steps)")


def steps_for(epochs: float, q: float) -> int:
    """steps = ⌈epochs/q⌉, exactly (more steps is the private side).

    Raises:
        DomainError: more than ``MAX_STEPS`` steps.
    """
    if type(epochs) in _PLAIN_STEPS_INPUTS and type(q) in _PLAIN_STEPS_INPUTS:
        steps = _exact_steps(epochs, q)
    else:
        steps = max(1, math.ceil(Fraction(epochs) / Fraction(q)))
    if steps > MAX_STEPS:
        raise DomainError(f"--epochs/--q give {steps:.3g} steps; dpcalc accounts for at most "
                          f"{MAX_STEPS:.0e} steps")
    return steps


#: the number types whose equal values are equal keys of ``_exact_steps`` (no bool)
_PLAIN_STEPS_INPUTS = (float, int, Given)


@lru_cache(maxsize=256)
def _exact_steps(epochs: float, q: float) -> int:
    """max(1, ⌈epochs/q⌉) in exact rationals, kept for the last few (epochs, q): a batch line
    asks it ~9 times for the same pair (every row and note), ~4 µs a time in Fractions."""
    return max(1, math.ceil(Fraction(epochs) / Fraction(q)))


#: A q solve whose secant guess (below this rate) passed and settled is answered there, without
#: the solver's first probe of q = 1 (a full evaluation, 0.03 s at random case 144)
_SETTLED_Q_MAX = 1e-2


#: The smallest noise multiplier a σ solve goes down to: when it already meets the target, it is
#: the answer (an upper bound on the smallest σ that does; the output says so).
SIGMA_SOLVE_MIN = 1e-3


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
    from dpcalc.api.dpsgd_runs import BATCH, SIZE
    from dpcalc.api.subsample import exact_rate, rate_text, resolve_rate

    # --dataset-size without --batch-size or --q: the largest batch size is the unknown
    size = SIZE.parse(dataset_size) if dataset_size is not None and batch_size is None \
        and q is None else None
    if size is None:
        q = resolve_rate(q, batch_size, dataset_size, "--batch-size", "--dataset-size")
    if epochs is not None and steps is not None:
        raise UsageError("--epochs conflicts with --steps; give one (steps = ⌈epochs/q⌉)")
    count = STEPS if steps is not None or solve_for == "steps" else EPOCHS
    values, unknown = leave_one_out(
        {"q": q, "sigma": sigma, count.name: epochs if count is EPOCHS else steps,
         "epsilon": epsilon, "delta": delta},
        (Q, NOISE, count, EPSILON, DELTA), solve_for=solve_for)
    if size is not None and unknown.name != "q":
        raise UsageError("--dataset-size needs --batch-size (or leave --batch-size out to "
                         "solve it, with every other parameter given)")

    def solve(acc: Accountant) -> tuple:
        """(value, bracket) of the unknown under ``acc``; a batch size: (B, None)."""
        if size is None:
            return _solve(acc, unknown.name, dict(values))
        return _solve_batch(acc, dict(values), size), None

    def rate(v):   # the unknown's value as the rate it was certified at (q, or B/N)
        return v if size is None else exact_rate(v, size)

    # one solve, the same in every output mode; the comparison rows come after it and never
    # change or abort it
    main = Accountant(accountant, tol)
    value, bounds = solve(main)
    main.fallback_note = _answer_note(main, unknown.name, values, rate(value))
    comparison = []
    for other in ACCOUNTANTS if compare else ():
        if other == accountant:
            continue
        acc = Accountant(other, tol)
        try:
            v, _ = solve(acc)
            note = _answer_note(acc, unknown.name, values, rate(v))
            comparison.append(Comparison(other, v, REFS[_REF[other]].short, note))
        except comparison_failures() as exc:
            comparison.append(Comparison(other, None, REFS[_REF[other]].short, failure_note(exc)))
    values[unknown.name] = rate(value)
    if count is EPOCHS:
        values["steps"] = steps_for(values["epochs"], values["q"])
    else:
        values["epochs"] = values["steps"] * values["q"]
    parameters = {k: values[k] for k in ("q", "sigma", "epochs", "steps", "epsilon", "delta")}
    if batch_size is not None or size is not None:
        parameters["batch_size"] = value if size is not None else BATCH.parse(batch_size)
        parameters["dataset_size"] = SIZE.parse(dataset_size)
    parameters.update(scheme.parameters())
    notes = []
    method = accountant
    if main.fallback_note:
        notes.append(main.fallback_note)
        method = main.fallback_note.method   # the fallback that answered (FallbackNote)
    if main.clamp_note:
        notes.append(main.clamp_note)
    wide = wide_bracket_note(bounds, tol, _SYMBOLS[unknown.name]) if method == "pld" else None
    if wide:
        notes.append(wide)
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
        from dpcalc.api.dpsgd_runs import loader_note

        notes.append(loader_note(values["steps"], parameters.get("batch_size"),
                                 parameters.get("dataset_size")))
    extra: dict = {}
    if curve:
        from dpcalc.api.dpsgd_curve import answer_curve

        extra["curve"] = answer_curve(main, values, curve_others, tol)
    direction = "upper" if unknown.name in ("epsilon", "delta", "sigma") else "lower"
    result = Result(
        command="dpsgd", solved_for=unknown.name if size is None else "batch_size",
        value=value, parameters=parameters,
        method=method, direction=direction, reference=REFS[_REF[method]].short,
        bounds=Bounds(*bounds) if bounds is not None else None,
        comparison=tuple(comparison), notes=tuple(notes), extra=extra,
        symbols={**_SYMBOLS, "examples_per_user": "K", "batch_size": "B", "dataset_size": "N"},
        derived=(("steps",) if count is EPOCHS else ("epochs",)) + (("q",) if size else ()),
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


def _solve_batch(acc: Accountant, values: dict, size: int) -> int:
    """The largest batch size B ≤ N = ``size`` that meets the target, its run sampled at
    q = B/N (``exact_rate``, as ``--batch-size B --dataset-size N`` gives it) for the given
    steps, or ⌈epochs/q⌉ of them.

    The rate solve's answer (the largest q, to its resolution) floored to whole batches is
    the guess of a whole-number search on B (two evaluations where it is exact: B passes,
    B + 1 fails).  With the epochs given the steps jump as B moves, so ε is a sawtooth in B
    and the search returns a passing B at an edge, as the q solve does on rates.  A rate
    below what dpcalc accounts for (more than MAX_STEPS steps) does not pass."""
    from dpcalc.api.dpsgd_runs import BATCH
    from dpcalc.api.subsample import exact_rate

    sigma, eps, log_d = values["sigma"], values["epsilon"], log_of(values["delta"])

    def holds(b: int) -> bool:
        rate = exact_rate(b, size)
        if "steps" in values:
            steps = values["steps"]
        elif Fraction(values["epochs"]) / Fraction(rate) > MAX_STEPS:
            return False
        else:
            steps = steps_for(values["epochs"], rate)
        return acc.holds(rate, sigma, steps, eps, log_d)

    try:
        rate, _ = _solve(acc, "q", values)
    except InfeasibleError:
        if "steps" not in values and Fraction(values["epochs"]) * size > MAX_STEPS:
            raise    # (its reason, the rate floor, is B = 1's too: not "does not meet")
        rate = 0.0   # (no rate passes: the search below says so for B = 1)
    # (a guess at N itself would start the search from B = 1; N - 1 probes N next)
    guess = min(max(1, math.floor(Fraction(rate) * size)), max(1, size - 1))

    def search() -> int:
        return solve_unknown(BATCH, holds, name="batch size", high=size, guess=guess)
    if acc.name != "pld":
        return search()
    from dpcalc.relations.pld import keeping_compositions

    with keeping_compositions():  # (acc reads upper ends only: _solve set for_solve)
        return search()


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
        guess, guess_rtol = sigma_guess(acc, q, steps, eps, log_d, 8e-6 if gridded else 2e-10,
                                        aim_rtol=SETTLE_RTOL / 2 if gridded else 0.0)
        # low_open: the floor is not probed first (a bisection towards it returns a point
        # that passes, just above it, when it passes too)
        return solve_unknown(NOISE, lambda s: acc.holds(q, s, steps, eps, log_d),
                             low=SIGMA_SOLVE_MIN, low_open=True, high=SIGMA_EVAL_MAX, rtol=rtol,
                             guess=guess, guess_rtol=guess_rtol,
                             settled=(lambda s: acc.settles(q, s, steps, eps, log_d,
                                                            SETTLE_RTOL)) if gridded
                             else None), None
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
    # q: the largest rate (steps follow from epochs when epochs were given)
    low = rate_floor(values)
    # with the steps given, ε rises smoothly with q: the PLD bound is only 1e-3 tight, so 2e-5
    # in ε is plenty (as on σ; on q divided by d log ε / d log q where that is below 0.5, see
    # q_guess), from a secant guess. Finer, a bisection only chases the bound's own
    # variation between neighbouring rates (1e-5 to 1e-4 where its grid changes): 10 full
    # evaluations from 1e-4 to 1e-7 on random case 239 of benchmarks/bench_dpsgd_random.py
    # (14.5 s -> 4.9 s).  With the epochs given, steps = ⌈epochs/q⌉ falls by one at rates
    # 1/T apart (relative), where ε drops by ~1/(2T): a jitter that neither the bisection
    # nor the secant resolves, and both return a passing rate; the PLD's search is the same
    # (2e-5 in ε, secant guess; it bisected to 1e-9 from scratch: 37 evaluations, 2 s, at
    # σ 1.1, 60 epochs, ε 3).  The other accountants' bounds are exact to 1e-9: a secant
    # guess, then the bisection to 1e-9 (from scratch: 40 RDP evaluations there, 0.2 s).
    pld = acc.name == "pld"
    guess, guess_rtol, rtol = q_guess(acc, values, eps, log_d, low, 2e-5 if pld else 1e-9,
                                      by_slope=pld, aim_rtol=SETTLE_RTOL / 2 if pld else 0.0)

    def settled(r: float) -> bool:
        return acc.settles(r, sigma, steps_of(values, r), eps, log_d, SETTLE_RTOL)
    if pld and guess is not None and low < guess < _SETTLED_Q_MAX \
            and guess_rtol <= 1e-9 and acc.holds(guess, sigma, steps_of(values, guess), eps,
                                                 log_d) and settled(guess):
        # the secant's last probe passed and settled (q_guess): the answer, without the
        # solver's probe of q = 1 first (far below it, q = 1 cannot pass where this point's
        # bound lies within SETTLE_RTOL of the target: ε only grows with q)
        return guess, None
    try:
        return solve_unknown(Q, lambda r: acc.holds(r, sigma, steps_of(values, r), eps, log_d),
                             low=low, low_open=True, rtol=rtol, guess=guess,
                             guess_rtol=guess_rtol, settled=settled), None
    except InfeasibleError:
        if low == 0.0 and acc.name == "pld":
            from dpcalc.accountants.dpsgd import PLD_Q_MIN

            raise InfeasibleError(
                f"no q meets the target that the PLD certifies (it accounts for q >= "
                f"{PLD_Q_MIN:g}; below, its fallbacks certify none either); a smaller "
                "q may meet it") from None
        if low == 0.0:
            raise
        raise below_rate_floor(low) from None
