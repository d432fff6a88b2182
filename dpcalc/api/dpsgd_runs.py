"""``dpsgd --sampling/--relation/--examples-per-user``: the run the user actually trains.

``poisson`` / ``fixed-batch``: the certified PLD engine over the dominating pair of the
combination (dpcalc.mechanisms: poisson_add_remove, poisson_replace_one, fixed_batch).
``shuffle``: no tight accountant exists; the sound no-amplification upper bound and the
lower bound of the attack on shuffled batches (dpcalc.mechanisms.shuffle) form ``bounds``.
The default combination (poisson, add-remove, K = 1) stays in dpcalc.api.dpsgd.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from dpcalc.api._common import (
    COUNT_RTOL,
    SETTLE_RTOL,
    check_choice,
    count_resolution_note,
    leave_one_out,
    wide_bracket_note,
)
from dpcalc.api._runs_pld import _Pld  # (the scheme's accountant; re-exported)
from dpcalc.errors import InfeasibleError, UsageError
from dpcalc.numeric.directed import exp_down, exp_up, log_of
from dpcalc.params import DELTA, EPSILON, INF, Param, Q
from dpcalc.references import REFS
from dpcalc.result import Bounds, Comparison, Result
from dpcalc.solve import solve_unknown

SAMPLINGS = ("poisson", "fixed-batch", "shuffle")
RELATIONS = ("add-remove", "replace-one")
K_PARAM = Param("examples_per_user", 1, 1000, False, False, "smaller", integer=True,
                symbol="K")
SIZE = Param("dataset_size", 1, 10**15, False, False, "smaller", integer=True, symbol="N")
BATCH = Param("batch_size", 1, 10**15, False, False, "smaller", integer=True, symbol="B")
EPOCHS = Param("epochs", 0.0, INF, True, True, "smaller", symbol="epochs")
STEPS = Param("steps", 0, 10**10, True, False, "smaller", integer=True, symbol="steps")
NOISE = Param("sigma", 0.0, INF, True, True, "larger", symbol="σ")
SYMBOLS = {"q": "q", "sigma": "σ", "epochs": "epochs", "steps": "steps", "epsilon": "ε",
           "delta": "δ", "examples_per_user": "K", "batch_size": "B", "dataset_size": "N"}
_REF = {"poisson": "ZDW22", "fixed-batch": "DRS19", "shuffle": "DRS19"}


@dataclass(frozen=True)
class Scheme:
    """How the run samples its batches, the neighbouring relation and K."""

    sampling: str
    relation: str
    k: int

    @property
    def is_default(self) -> bool:
        return (self.sampling, self.relation, self.k) == ("poisson", "add-remove", 1)

    def parameters(self) -> dict:
        return {"sampling": self.sampling, "relation": self.relation,
                "examples_per_user": self.k}


def scheme_of(sampling: str | None, relation: str | None, examples_per_user: object) -> Scheme:
    """Validate the three options (contract defaults: poisson; add-remove, replace-one for
    fixed-batch; K = 1). Raises UsageError (exit 2) for a combination without sound
    accounting, with the reason."""
    sampling = check_choice(sampling or "poisson", SAMPLINGS, "--sampling")
    default_rel = "replace-one" if sampling == "fixed-batch" else "add-remove"
    relation = check_choice(relation or default_rel, RELATIONS, "--relation")
    k = 1 if examples_per_user is None else K_PARAM.parse(examples_per_user)
    if sampling == "fixed-batch" and k > 1:
        from dpcalc.mechanisms.fixed_batch import REFUSE_K

        raise UsageError(REFUSE_K)
    return Scheme(sampling, relation, int(k))


def pair_of(scheme: Scheme, q: float, sigma: float):
    """The dominating pair of one step of the combination (shuffle has none: ValueError).
    The one map from a run's setting to its pair: every PLD question about a run (ε, δ, the
    attack risk, plans) goes through it (dpcalc.api._dpsgd_items.run_items)."""
    s = scheme
    if s.sampling == "shuffle":
        raise ValueError("shuffled batches have no dominating pair here")
    if s.sampling == "fixed-batch":
        from dpcalc.mechanisms._mixture import EnginePair
        from dpcalc.mechanisms.fixed_batch import SymmetrisedPair

        return EnginePair(("fixed-batch", float(q), float(sigma)),
                          {"remove": SymmetrisedPair(q, sigma)}, symmetric=True)
    if s.relation == "replace-one":
        from dpcalc.mechanisms import poisson_replace_one

        return poisson_replace_one.engine_pair(q, sigma, s.k)
    from dpcalc.mechanisms import poisson_add_remove

    return poisson_add_remove.engine_pair(q, sigma, s.k)


def _steps_for(epochs, q) -> int:
    from dpcalc.api.dpsgd import steps_for

    return steps_for(epochs, q)


def _batches(q: float, batch_size, dataset_size) -> int:
    """Batches per shuffled epoch: ⌈N/B⌉ (the last one partial), or ⌈1/q⌉."""
    if batch_size is not None and dataset_size is not None:
        return -(-int(dataset_size) // int(batch_size))
    return max(1, math.ceil(1 / Fraction(q)))


def dpsgd_run(scheme: Scheme, *, q, batch_size, dataset_size, sigma, epochs, steps, epsilon,
              delta, accountant: str, tolerance: float, curve: bool, solve_for, compare: bool
              ) -> Result:
    """Solve one unknown for a non-default combination (see the module docstring).

    Raises:
        UsageError, DomainError: bad input. InfeasibleError: no value meets the target.
    """
    if accountant != "pld":
        raise UsageError(f"--accountant {accountant} is not available with --sampling "
                         f"{scheme.sampling} --relation {scheme.relation} --examples-per-user "
                         f"{scheme.k}; this run is accounted by its dominating pair (pld)")
    if epochs is not None and steps is not None:
        raise UsageError("--epochs conflicts with --steps; give one")
    from dpcalc.api.subsample import exact_rate

    size = SIZE.parse(dataset_size) if dataset_size is not None else None
    bsize = BATCH.parse(batch_size) if batch_size is not None else None
    solve_batch = size is not None and bsize is None and q is None
    if bsize is not None and size is None:
        raise UsageError("--batch-size needs --dataset-size")
    if size is not None and bsize is not None:
        if q is not None:
            raise UsageError("--q conflicts with --batch-size/--dataset-size; give one")
        if bsize > size:
            raise UsageError(f"--batch-size ({bsize}) must not exceed --dataset-size ({size})")
        q = exact_rate(bsize, size)
    count = STEPS if steps is not None or solve_for == "steps" else EPOCHS
    values, unknown = leave_one_out(
        {"q": q, "sigma": sigma, count.name: epochs if count is EPOCHS else steps,
         "epsilon": epsilon, "delta": delta},
        (Q, NOISE, count, EPSILON, DELTA), solve_for=solve_for)
    if solve_batch and unknown.name != "q":
        raise UsageError("--dataset-size needs --batch-size (or leave --batch-size out to "
                         "solve it, with every other parameter given)")
    if "delta" in values and values["delta"] == 0:
        raise InfeasibleError("DP-SGD with Gaussian noise is never (ε, 0)-DP; give --delta > 0")
    if scheme.sampling == "shuffle":
        from dpcalc.api.dpsgd_shuffle import solve_shuffle

        result = solve_shuffle(scheme, values, unknown.name, count.name, bsize, size,
                               solve_batch, compare)
        if curve:
            result.extra["curve"] = _shuffle_curve(scheme, result.parameters, bsize, size)
        return result
    acc = _Pld(scheme, tolerance)
    value, bounds = _solve(acc, unknown.name, values, size if solve_batch else None)
    notes: list[str] = []
    if solve_batch:
        bsize = value
        value = exact_rate(bsize, size)   # (the rate its ε was certified at)
        values["q"] = value
        unknown_name = "batch_size"
    else:
        values[unknown.name] = value
        unknown_name = unknown.name
    if count is EPOCHS:
        values["steps"] = _steps_for(values["epochs"], values["q"])
    else:
        values["epochs"] = values["steps"] * values["q"]
    if unknown.name == "sigma":
        from dpcalc.api.dpsgd import SIGMA_SOLVE_MIN

        if values["sigma"] <= SIGMA_SOLVE_MIN * (1.0 + 1e-3):
            notes.append(f"σ = {SIGMA_SOLVE_MIN:g} is the smallest noise dpcalc solves for; it "
                         "meets the target, and a smaller σ may too")
    notes.extend(acc.notes(values["q"], values["sigma"], values["steps"],
                           log_of(values["delta"]) if values["delta"] > 0 else None))
    wide = wide_bracket_note(bounds, tolerance, SYMBOLS[unknown.name])
    if wide:
        notes.append(wide)
    parameters = {k: values[k] for k in ("q", "sigma", "epochs", "steps", "epsilon", "delta")}
    if bsize is not None:
        parameters["batch_size"] = bsize
        parameters["dataset_size"] = size
    parameters.update(scheme.parameters())
    if unknown.name in ("steps", "epochs"):
        # (both searched over steps: an epochs answer is ⌊most·q⌋)
        note = count_resolution_note(values["steps"], "steps")
        if note:
            notes.append(note)
    if count is EPOCHS and unknown.name not in ("epochs",):
        notes.append(loader_note(values["steps"], bsize, size))
    if scheme.sampling == "fixed-batch" and scheme.relation == "add-remove":
        notes.append("fixed batches under add/remove are bounded by the replace-one pair at "
                     "p = B/N, sound when the number of steps does not depend on the dataset "
                     "size (a loader running ⌊N/B⌋ steps per epoch reveals N ± 1)")
    comparison = []
    if compare and unknown.name == "epsilon" and scheme.sampling == "fixed-batch":
        from dpcalc.api.dpsgd import dpsgd

        # the default run's own answer (its PLD, or its fallbacks below the PLD's rates: the
        # bare PLD failed at q = 1e-300 and aborted the answer)
        claim = dpsgd(q=values["q"], sigma=values["sigma"], steps=values["steps"],
                      delta=values["delta"], tolerance=tolerance, compare=False).value
        comparison.append(Comparison("poisson-accounting", claim, REFS["ZDW22"].short,
                                     "what Poisson add-remove accounting at q = B/N would "
                                     "claim; it does not apply to fixed-size batches (the "
                                     "example that enters displaces another: sensitivity 2, "
                                     "Dong, Roth & Su Thm 4.2; Lebeda et al. 2024)"))
    extra: dict = {}
    if curve:
        extra["curve"] = _pld_curve(acc, values, tolerance)
        # the answer certifies (ε, δ) at the run's length, whichever unknown was solved:
        # the curve ends on the answer's ε (dpsgd_curve.answer_curve)
        extra["curve"][-1]["epsilon"] = values["epsilon"]
    direction = "upper" if unknown.name in ("epsilon", "delta", "sigma") else "lower"
    return Result(
        command="dpsgd", solved_for=unknown_name, value=parameters.get(unknown_name, value),
        parameters=parameters, method="pld", direction=direction,
        reference=REFS[_REF[scheme.sampling]].short,
        bounds=Bounds(*bounds) if bounds is not None else None, comparison=tuple(comparison),
        notes=tuple(notes), extra=extra, symbols=SYMBOLS,
        derived=(("steps",) if count is EPOCHS else ("epochs",)) + (("q",) if solve_batch else ()),
        given={"q": f"{bsize}/{size}"} if bsize is not None and not solve_batch else {})


def loader_note(steps: int, bsize, size) -> str:
    text = f"steps = ⌈epochs/q⌉ = {steps}"
    if bsize is not None:
        text += (f"; a data loader that runs ⌊N/B⌋ = {size // bsize} (drop_last) or ⌈N/B⌉ = "
                 f"{-(-size // bsize)} batches per epoch takes a different count: give --steps "
                 "with the loader's exact count")
    return text


def _solve(acc: _Pld, unknown: str, values: dict, size: int | None):
    """(private-side value, bracket or None) of ``unknown``; ``size`` set: solve the batch
    size B ≤ N as an integer (the largest that meets the target)."""
    from dpcalc.pld.compose import keeping_compositions

    with keeping_compositions():  # a probe's quick pass is reused by its full bracket
        if unknown in ("epsilon", "delta"):
            return _solve_one(acc, unknown, values, size)
        with acc.solving():  # the solver's predicates read upper ends alone
            return _solve_one(acc, unknown, values, size)


def _solve_one(acc: _Pld, unknown: str, values: dict, size: int | None):
    q, sigma = values.get("q"), values.get("sigma")
    eps = values.get("epsilon")
    log_d = log_of(values["delta"]) if "delta" in values else None

    def steps_of(v, rate):
        return v["steps"] if "steps" in v else _steps_for(v["epochs"], rate)

    if unknown == "epsilon":
        return acc.epsilon(q, sigma, steps_of(values, q), log_d)
    if unknown == "delta":
        lv, lb = acc.log_delta(q, sigma, steps_of(values, q), eps)
        return min(exp_up(lv), 1.0), (exp_down(lb[0]), min(exp_up(lb[1]), 1.0))
    from dpcalc.api._dpsgd_runs_guess import (
        AIM,
        aim,
        clt_seed,
        clt_slope,
        estimate,
        printed_answer,
        readback,
        secant_guess,
        snapped,
    )
    from dpcalc.relations import dpsgd as rel

    scheme = acc.scheme

    if unknown == "sigma":
        steps = steps_of(values, q)
        from dpcalc.api._dpsgd_guess import _clt_slope

        seed = (clt_seed(scheme, "sigma", q, None, steps, eps, log_d)
                or estimate(rel.clt_sigma_guess, q, steps, eps, log_d) or 1.0)
        slope = (clt_slope(scheme, "sigma", q, None, steps, eps, log_d)
                 or estimate(_clt_slope, q, steps, eps, log_d) or -1.5)
        # every probe at a σ that prints as itself (snapped): the answer needs no read-back
        # evaluation of its own (printed_answer), and the secant's points are the solver's
        def sig(x):
            return readback(math.exp(x), NOISE)

        guess, accuracy = secant_guess(lambda x: acc.upper(q, sig(x), steps, log_d),
                                       math.log(seed), aim(eps), -6.9, 13.8, slope,
                                       full=lambda x: acc.epsilon(q, sig(x), steps, log_d)[0],
                                       inside=AIM, settle=SETTLE_RTOL)
        from dpcalc.api.dpsgd import SIGMA_EVAL_MAX, SIGMA_SOLVE_MIN

        def ok_s(s: float) -> bool:
            return acc.holds(q, s, steps, eps, log_d)

        # (the default run's floor: where every σ meets the target, e.g. a rate so small that
        # the examples are sampled with probability ≤ δ, the answer is that floor, said so)
        def settles(s: float) -> bool:
            return acc.settles(q, s, steps, eps, log_d, SETTLE_RTOL)

        found = solve_unknown(NOISE, snapped(NOISE, ok_s), low=SIGMA_SOLVE_MIN, low_open=True,
                              high=SIGMA_EVAL_MAX, rtol=2e-5, guess=guess,
                              guess_rtol=accuracy, settled=snapped(NOISE, settles))
        return printed_answer(readback(found, NOISE), NOISE, ok_s), None
    if unknown in ("steps", "epochs"):
        seed = (clt_seed(scheme, "steps", q, sigma, None, eps, log_d)
                or estimate(rel.clt_steps_guess, q, sigma, eps, log_d))
        guess = None
        if seed is not None and 1.0 <= seed < 1e10:
            found, _ = secant_guess(
                lambda x: acc.upper(q, sigma, max(1, round(math.exp(x))), log_d),
                math.log(seed), eps, 0.0, math.log(1e10),
                clt_slope(scheme, "steps", q, sigma, None, eps, log_d) or 0.5,
                full=lambda x: acc.epsilon(q, sigma, max(1, round(math.exp(x))), log_d)[0])
            guess = max(1, round(found)) if found is not None else None
        most = solve_unknown(STEPS, lambda n: acc.holds(q, sigma, n, eps, log_d),
                             int_rtol=COUNT_RTOL, guess=guess)
        if unknown == "steps":
            return most, None
        epochs = math.floor(Fraction(most) * Fraction(q))
        if epochs < 1:
            raise InfeasibleError(f"not even one epoch fits: at most {most} steps")
        assert _steps_for(epochs, q) <= most  # checked both ways
        return epochs, None
    if size is not None:
        from dpcalc.api.subsample import exact_rate

        def rate_b(b: int) -> float:
            return exact_rate(b, size)  # (the rate a batch of b in size is sampled at)

        def ok_b(b: int) -> bool:
            return acc.holds(rate_b(b), sigma, steps_of(values, rate_b(b)), eps, log_d)

        def rate_x(x: float) -> float:
            return rate_b(min(size, max(1, math.floor(math.exp(x) * size))))

        # a guess from the q secant on whole batches (its points are the solver's: the
        # search from B = 1 took 9 full brackets, K = 2, N 60000, σ 1.1, 10 epochs; now 1)
        guess_b = None
        seed = clt_seed(scheme, "q", None, sigma, values.get("steps"), eps, log_d,
                        epochs=values.get("epochs"))
        if seed is not None and 0.0 < seed < 1.0:
            g, _ = secant_guess(
                lambda x: acc.upper(rate_x(x), sigma, steps_of(values, rate_x(x)), log_d),
                math.log(seed), eps, math.log(1.0 / size), 0.0, 0.5,
                full=lambda x: acc.epsilon(rate_x(x), sigma, steps_of(values, rate_x(x)),
                                           log_d)[0])
            if g is not None:
                guess_b = min(size, max(1, math.floor(g * size)))
        return solve_unknown(BATCH, ok_b, name="batch size", high=size, guess=guess_b), None
    guess, accuracy = None, 0.5
    # (with the epochs given the steps ⌈epochs/q⌉ fall by one every 1/T in q, relative: a
    # jitter of ~1/(2T) in ε under the secant's stop; the search from scratch took 30 full
    # evaluations, 12 s at fixed batches, σ 1.1, 60 epochs, ε 3)
    steps, epochs = values.get("steps"), values.get("epochs")
    seed = (clt_seed(scheme, "q", None, sigma, steps, eps, log_d, epochs=epochs)
            or estimate(rel.clt_q_guess, sigma, eps, log_d, steps, epochs))
    if seed is not None and 0.0 < seed < 1.0:
        def rate(x):
            return readback(math.exp(x), Q)

        def count(x):
            return steps_of(values, rate(x))

        guess, accuracy = secant_guess(
            lambda x: acc.upper(rate(x), sigma, count(x), log_d),
            math.log(seed), aim(eps), -745.0, 0.0,
            # (with the epochs given ε is a sawtooth in q at the scale 1/T, where a model's
            # slope helps no more than the fixed one: K = 2, σ 1.1, 3 epochs took 11 full
            # evaluations for 4, the secant landing a plateau off)
            (clt_slope(scheme, "q", None, sigma, steps, eps, log_d) or 1.0)
            if steps is not None else 0.5,
            full=lambda x: acc.epsilon(rate(x), sigma, count(x), log_d)[0],
            inside=AIM, settle=SETTLE_RTOL)
    # 2e-5 on q, as the Poisson add/remove run's solve (the PLD bound is only 1e-3 tight; at
    # 1e-6 the bisection took three more full evaluations, 0.4 s at q 0.02, K = 2)
    def ok_q(r: float) -> bool:
        return acc.holds(r, sigma, steps_of(values, r), eps, log_d)

    def settles(r: float) -> bool:
        return acc.settles(r, sigma, steps_of(values, r), eps, log_d, SETTLE_RTOL)

    # with the epochs given the search stays above epochs/MAX_STEPS, as the default run's (a
    # probe below raised the --q/--epochs usage error, exit 2, for a target no rate meets:
    # fixed batches, σ 0.5, 1e5 epochs)
    from dpcalc.api.dpsgd import below_rate_floor, rate_floor

    low = rate_floor(values)
    try:
        found = solve_unknown(Q, snapped(Q, ok_q), rtol=2e-5, guess=guess,
                              guess_rtol=accuracy, low=low, low_open=True,
                              settled=snapped(Q, settles))
    except InfeasibleError:
        if low == 0.0:
            raise
        raise below_rate_floor(low) from None
    return printed_answer(readback(found, Q), Q, ok_q), None


def _epoch_points(epochs) -> list[int]:
    """Whole epochs to show (at most 100, evenly spaced), before the end of the run."""
    last = math.floor(epochs)
    pts = list(range(1, last + 1)) if last <= 100 else sorted(
        {max(1, round(i * last / 100)) for i in range(1, 101)})
    return [e for e in pts if e < epochs]


def _pld_curve(acc: _Pld, values: dict, tolerance: float) -> list[dict]:
    """ε after each epoch, certified brackets from one incremental composition [KJH20]."""
    from dpcalc.api.dpsgd import SIGMA_EVAL_MAX
    from dpcalc.pld import accountant

    q, sigma, log_d = values["q"], values["sigma"], log_of(values["delta"])
    points = [e for e in _epoch_points(values["epochs"])
              if _steps_for(e, q) < values["steps"]] + [values["epochs"]]
    steps = [_steps_for(e, q) for e in points[:-1]] + [values["steps"]]
    from dpcalc.pld import PLDUncertifiable

    try:
        # (σ evaluated as the answer's is: at most SIGMA_EVAL_MAX, helper-54)
        rows = accountant.epsilon_curve(acc.pair(q, min(sigma, SIGMA_EVAL_MAX)), steps, log_d,
                                        tolerance)
    except PLDUncertifiable:   # point by point, with the shortcuts of _Pld (helper-51)
        rows = [acc.epsilon(q, sigma, n, log_d)[1] for n in steps]
    return [{"epochs": e, "steps": n, "epsilon": up, "lower": lo}
            for e, n, (lo, up) in zip(points, steps, rows, strict=True)]


def _shuffle_curve(scheme: Scheme, params: dict, bsize, size) -> list[dict]:
    """The two shuffle bounds after each whole epoch."""
    from dpcalc.mechanisms import shuffle

    batches = _batches(params["q"], bsize, size)
    log_d = log_of(params["delta"])
    last = max(1, math.ceil(params["epochs"]))
    out = []
    for e in [p for p in _epoch_points(last) if p < last] + [last]:
        up = shuffle.upper_epsilon(params["sigma"], e, log_d, scheme.relation, scheme.k)
        lo = shuffle.AttackLowerBound(params["sigma"], batches, e,
                                      scheme.relation).epsilon_lower(log_d)
        out.append({"epochs": e, "steps": e * batches, "epsilon": up, "lower": min(lo, up)})
    return out
