"""``dpsgd``: DP-SGD with Poisson sampling; leave one of q, σ, epochs (or steps), ε, δ out."""

from __future__ import annotations

import math
from fractions import Fraction

from dpcalc.api._common import check_choice, comparison_failures, failure_note, leave_one_out
from dpcalc.errors import DomainError, InfeasibleError, UsageError
from dpcalc.numeric.directed import exp_up, log_of
from dpcalc.params import DELTA, EPSILON, INF, Param, Q
from dpcalc.references import REFS
from dpcalc.result import Bounds, Comparison, Result
from dpcalc.solve import largest_passing, largest_passing_int, smallest_passing

ACCOUNTANTS = ("pld", "rdp", "moments", "strong")
_REF = {"pld": "GLW21", "rdp": "MTZ19", "moments": "ACGMMTZ16", "strong": "DRV10"}

EPOCHS = Param("epochs", 0.0, INF, True, True, "smaller", symbol="epochs")
STEPS = Param("steps", 0, 10**10, True, False, "smaller", integer=True, symbol="steps")
TOLERANCE = Param("tolerance", 0.0, 1.0, True, True, "smaller", symbol="tolerance")
NOISE = Param("sigma", 0.0, INF, True, True, "larger", symbol="σ")

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


class Accountant:
    """ε(δ) and δ(ε) of T steps of the Poisson-subsampled Gaussian under one accountant."""

    def __init__(self, name: str, tolerance: float):
        self.name = name
        self.tolerance = tolerance
        self.fallback_note = ""
        self._seen: dict[tuple, tuple[float, tuple[float, float] | None]] = {}

    def epsilon(self, q: float, sigma: float, steps: int,
                log_delta: float) -> tuple[float, tuple[float, float] | None]:
        """(upper bound on ε, certified bracket or None); each point is computed once."""
        key = (q, sigma, steps, log_delta)
        if key not in self._seen:
            self._seen[key] = self._epsilon(q, sigma, steps, log_delta)
        return self._seen[key]

    def _epsilon(self, q: float, sigma: float, steps: int,
                 log_delta: float) -> tuple[float, tuple[float, float] | None]:
        from dpcalc.relations import dpsgd as rel

        if self.name == "pld":
            from dpcalc.relations import pld

            try:
                lower, upper = pld.epsilon_bounds(q, sigma, steps, log_delta, self.tolerance)
                return upper, (lower, upper)
            except pld.PLDUncertifiable as exc:
                self.fallback_note = (f"the PLD grid cannot certify this δ ({exc}); the answer "
                                      "is the RDP accountant's (orders up to "
                                      f"{int(max(rel._orders()))})")
                return rel.rdp_epsilon(q, sigma, steps, log_delta)[0], None
        if self.name == "rdp":
            return rel.rdp_epsilon(q, sigma, steps, log_delta)[0], None
        if self.name == "moments":
            return rel.moments_epsilon(q, sigma, steps, log_delta)[0], None
        return rel.strong_epsilon(q, sigma, steps, log_delta)[0], None

    def log_delta(self, q: float, sigma: float, steps: int,
                  epsilon: float) -> tuple[float, tuple[float, float] | None]:
        """(upper bound on log δ, certified bracket of log δ or None)."""
        from dpcalc.relations import dpsgd as rel

        if self.name == "pld":
            from dpcalc.relations import pld

            try:
                lower, upper = pld.log_delta_bounds(q, sigma, steps, epsilon, self.tolerance)
                return upper, (lower, upper)
            except pld.PLDUncertifiable as exc:
                self.fallback_note = (f"the PLD grid cannot certify this δ ({exc}); the answer "
                                      "is the RDP accountant's")
                return rel.rdp_log_delta(q, sigma, steps, epsilon), None
        if self.name == "rdp":
            return rel.rdp_log_delta(q, sigma, steps, epsilon), None
        if self.name == "moments":
            return rel.moments_log_delta(q, sigma, steps, epsilon), None
        # strong: the smallest δ whose optimised ε meets the target (the one solver)
        if self.epsilon(q, sigma, steps, math.log(0.5))[0] > epsilon:
            return 0.0, None
        d = smallest_passing(
            lambda x: self.epsilon(q, sigma, steps, math.log(x))[0] <= epsilon,
            low=0.0, high=0.5, low_open=True, name="δ", rtol=1e-9)
        return math.log(d), None

    def holds(self, q: float, sigma: float, steps: int, epsilon: float,
              log_delta: float) -> bool:
        """Certified: T steps at (q, σ) are (ε, δ)-DP under this accountant (its upper bound)."""
        return self.epsilon(q, sigma, steps, log_delta)[0] <= epsilon


def dpsgd(*, q: object = None, batch_size: object = None, dataset_size: object = None,
          sigma: object = None, epochs: object = None, steps: object = None,
          epsilon: object = None, delta: object = None, accountant: str = "pld",
          tolerance: object = 1e-3, curve: bool = False, solve_for: str | None = None,
          compare: bool = True, fpr: object = None, tpr: object = None) -> Result:
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

    fprs = _risk.parse_fprs(fpr)
    target = _risk.parse_target(tpr, fprs, {"epsilon": epsilon, "delta": delta})
    if target is not None:
        from dpcalc.api._risk_dpsgd import dpsgd_for_tpr

        return dpsgd_for_tpr(q=q, batch_size=batch_size, dataset_size=dataset_size,
                             sigma=sigma, epochs=epochs, steps=steps, tolerance=tolerance,
                             solve_for=solve_for, target=target, alpha=fprs[0])
    tol = TOLERANCE.parse(tolerance)
    from dpcalc.api.subsample import rate_text, resolve_rate

    q = resolve_rate(q, batch_size, dataset_size, "--batch-size", "--dataset-size")
    if epochs is not None and steps is not None:
        raise UsageError("--epochs conflicts with --steps; give one (steps = ⌈epochs/q⌉)")
    if solve_for in ("steps", "epochs") and (epochs is not None or steps is not None):
        raise UsageError(f"--solve-for {solve_for} conflicts with --epochs/--steps, which "
                         "was given")
    count = STEPS if steps is not None or solve_for == "steps" else EPOCHS
    values, unknown = leave_one_out(
        {"q": q, "sigma": sigma, count.name: epochs if count is EPOCHS else steps,
         "epsilon": epsilon, "delta": delta},
        (Q, NOISE, count, EPSILON, DELTA), solve_for=solve_for)
    if "delta" in values and values["delta"] == 0:
        raise InfeasibleError("DP-SGD with Gaussian noise is never (ε, 0)-DP; give --delta > 0")
    comparison = []
    hint = None
    for other in ACCOUNTANTS if compare else ():
        if other == accountant:
            continue
        acc = Accountant(other, tol)
        try:
            v, _ = _solve(acc, unknown.name, dict(values))
            comparison.append(Comparison(other, v, REFS[_REF[other]].short, acc.fallback_note))
            hint = v if other == "rdp" else hint
        except comparison_failures() as exc:
            comparison.append(Comparison(other, None, REFS[_REF[other]].short, failure_note(exc)))
    main = Accountant(accountant, tol)
    value, bounds = _solve(main, unknown.name, values, hint)
    values[unknown.name] = value
    if count is EPOCHS:
        values["steps"] = steps_for(values["epochs"], values["q"])
    else:
        values["epochs"] = values["steps"] * values["q"]
    parameters = {k: values[k] for k in ("q", "sigma", "epochs", "steps", "epsilon", "delta")}
    notes = []
    method = accountant
    if main.fallback_note:
        notes.append(main.fallback_note)
        method = "rdp"
    if count is EPOCHS and unknown.name != "epochs":
        notes.append(f"steps = ⌈epochs/q⌉ = {values['steps']}")
    extra: dict = {}
    if curve:
        extra["curve"] = _curve(main, values)
        if unknown.name == "epsilon":
            # the point at the run's own length: both are certified upper bounds, so the
            # smaller one is too, and the curve then ends on the reported value
            for point in extra["curve"]:
                if point["steps"] == values["steps"]:
                    point["epsilon"] = min(point["epsilon"], value)
    direction = "upper" if unknown.name in ("epsilon", "delta", "sigma") else "lower"
    result = Result(
        command="dpsgd", solved_for=unknown.name, value=value, parameters=parameters,
        method=method, direction=direction, reference=REFS[_REF[method]].short,
        bounds=Bounds(*bounds) if bounds is not None else None,
        comparison=tuple(comparison), notes=tuple(notes), extra=extra, symbols=_SYMBOLS,
        derived=("steps",) if count is EPOCHS else ("epochs",),
        given=rate_text(batch_size, dataset_size))
    if not fprs:
        return result
    from dpcalc.api._dpsgd_items import setting_of
    from dpcalc.api._risk_dpsgd import risk_of

    # the run's setting goes with it: risk reads the pairs of that setting (or refuses)
    return _risk.attach(result, risk_of(values["q"], values["sigma"], values["steps"], tol,
                                        fprs, (values["epsilon"], values["delta"]),
                                        setting=setting_of(values)))


def _solve(acc: Accountant, unknown: str, values: dict, hint: float | None = None):
    """(private-side value, bracket or None) of ``unknown`` under one accountant.

    ``hint`` is a nearby value of the unknown (another accountant's answer) to start from.
    """
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
        guess, guess_rtol, rtol = None, 1e-9, 1e-9
        if acc.name == "pld":
            # The PLD bound is only 1e-3 tight, so 2e-5 on σ is plenty; seed the bracket with
            # a secant root of the continuous upper bound (any guess is safe: holds decides).
            guess = _pld_sigma_guess(acc, q, steps, eps, log_d, hint)
            guess_rtol, rtol = 1e-4, 2e-5
        return smallest_passing(lambda s: acc.holds(q, s, steps, eps, log_d), low=0.0,
                                high=math.inf, low_open=True, name="σ", rtol=rtol,
                                guess=guess, guess_rtol=guess_rtol), None
    if unknown == "steps":
        return largest_passing_int(lambda n: acc.holds(q, sigma, n, eps, log_d), low=1,
                                   name="steps", high=MAX_STEPS), None
    if unknown == "epochs":
        most = largest_passing_int(lambda n: acc.holds(q, sigma, n, eps, log_d), low=1,
                                   name="steps", high=MAX_STEPS)
        epochs = math.floor(Fraction(most) * Fraction(q))
        if epochs < 1:
            raise InfeasibleError(f"not even one epoch fits: at most {most} steps "
                                  f"(< 1/q = {1 / q:.6g})")
        assert steps_for(epochs, q) <= most  # checked both ways: ⌈epochs/q⌉ steps fit
        return epochs, None
    # q: the largest rate (steps follow from epochs when epochs were given)
    return largest_passing(lambda r: acc.holds(r, sigma, steps_of(values, r), eps, log_d),
                           low=0.0, high=1.0, high_open=False, name="q", rtol=1e-9), None


def _pld_sigma_guess(acc: Accountant, q: float, steps: int, epsilon: float, log_delta: float,
                     hint: float | None) -> float | None:
    """Secant iteration on log σ ↦ log ε_upper(σ) towards the target ε (a guess only)."""
    if epsilon <= 0:
        return None
    # seed: the hint, else the moments-accountant scaling σ ≈ q√(2T ln(1/δ))/ε [ACGMMTZ16]
    x0 = math.log(hint) if hint else math.log(max(0.5, q * math.sqrt(
        2.0 * steps * -log_delta) / epsilon))
    try:
        f0 = math.log(acc.epsilon(q, math.exp(x0), steps, log_delta)[0]) - math.log(epsilon)
        x1 = x0 - 0.05 if f0 > -0.05 else x0 + 0.05
        for _ in range(8):
            f1 = math.log(acc.epsilon(q, math.exp(x1), steps, log_delta)[0]) - math.log(epsilon)
            if abs(f1) < 2e-4 or f1 == f0:
                break
            x0, f0, x1 = x1, f1, x1 - f1 * (x1 - x0) / (f1 - f0)
        return math.exp(x1)
    except (ArithmeticError, ValueError):
        return None


def _curve(acc: Accountant, values: dict) -> list[dict]:
    """ε after each epoch (at most 100 evenly spaced points for long runs)."""
    q, sigma, log_d = values["q"], values["sigma"], log_of(values["delta"])
    final_steps = values["steps"]
    last = math.floor(values["epochs"])
    epochs = list(range(1, last + 1)) if last <= 100 else sorted(
        {max(1, round(i * last / 100)) for i in range(1, 101)})
    # whole epochs before the end of the run, then the run itself (which may end mid-epoch)
    run_epochs = values["epochs"]
    if isinstance(run_epochs, float) and run_epochs.is_integer():
        run_epochs = int(run_epochs)
    points = [e for e in epochs if steps_for(e, q) < final_steps] + [run_epochs]
    steps_list = [steps_for(e, q) for e in points[:-1]] + [final_steps]
    if acc.name == "pld":
        from dpcalc.relations import pld

        try:
            rows = pld.epsilon_curve(q, sigma, steps_list, log_d, acc.tolerance)
            return [{"epochs": e, "steps": s, "epsilon": hi, "lower": lo}
                    for e, (s, lo, hi) in zip(points, rows, strict=True)]
        except pld.PLDUncertifiable:
            acc = Accountant("rdp", acc.tolerance)
    return [{"epochs": e, "steps": s, "epsilon": acc.epsilon(q, sigma, s, log_d)[0]}
            for e, s in zip(points, steps_list, strict=True)]
