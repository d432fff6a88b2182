"""Attack risk of DP-SGD from its certified PLD profile, and the TPR-target solves.

The run's pairs come from one place (``_dpsgd_items.run_items``, which knows its setting);
the profile and the TPR bounds are those of any plan (``_risk_pld``) [DRS19, Prop 2.12].
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpcalc.api import _risk, _risk_pld
from dpcalc.api._common import leave_one_out
from dpcalc.api._dpsgd_items import run_items
from dpcalc.errors import InfeasibleError, UsageError
from dpcalc.relations.full_batch import NOTE as _Q1_NOTE
from dpcalc.result import Result


def _gdp_mu(q: float, sigma: float, steps: int) -> float:
    """CLT estimate μ ≈ q√(T(e^{1/σ²} − 1)) (only to seed the solver)."""
    return q * math.sqrt(steps * math.expm1(min(1.0 / (sigma * sigma), 700.0)))


def _run_mu(sigma: float, steps: int):
    """μ = √T/σ at 40 digits (an mpf, from the exact double σ: no pad; a μ rounded to a
    double and padded made steps solves one short where (μ*σ)² is an integer; helper-35)."""
    import mpmath as mp

    with mp.workdps(40):
        return mp.sqrt(int(steps)) / mp.mpf(sigma)


def _gaussian_run(q: float, scheme) -> bool:
    """Every step sees the whole dataset (q = 1, add/remove): T Gaussian mechanisms compose
    to exactly the Gaussian mechanism with μ = √T/σ [DRS19, Cor 3.3]."""
    return scheme is None and q == 1.0


def risk_of(q: float, sigma: float, steps: int, tolerance: float, fprs,
            point: tuple | None, certificate: tuple | None = None, scheme=None) -> dict:
    """The risk block of a DP-SGD run: exact at q = 1 (_gaussian_run), else the PLD profile
    of its items (run_items: the pairs of its scheme), or (said so) the (ε, δ) point when
    the PLD grid cannot certify it."""
    if _gaussian_run(q, scheme):
        return _risk.gaussian_mu_block(_run_mu(sigma, steps), fprs, point, note=_Q1_NOTE)
    items = run_items(q, sigma, steps, scheme)
    return _risk_pld.risk_of(items, tolerance, fprs, point, certificate, what="run")


def _gdp_guess(unknown: str, values: dict, mu: float) -> float:
    """The unknown under the CLT (Gaussian-DP) approximation μ = q√(T(e^{1/σ²} − 1)) (a guess
    only: it places ε* and seeds the solver)."""
    from dpcalc.api.dpsgd import steps_for

    q, sigma = values.get("q"), values.get("sigma")
    if unknown == "sigma":
        steps = values.get("steps") or steps_for(values["epochs"], q)
        return 1.0 / math.sqrt(math.log1p((mu / q) ** 2 / steps))
    c = math.expm1(min(1.0 / sigma ** 2, 700.0))
    if unknown in ("steps", "epochs"):
        steps = max(1.0, min(1e10, (mu / q) ** 2 / c))
        return steps if unknown == "steps" else steps * q
    if "steps" in values:
        return min(1.0, mu / math.sqrt(values["steps"] * c))
    return min(1.0, mu * mu / (values["epochs"] * c))


def dpsgd_for_tpr(*, q, batch_size, dataset_size, sigma, epochs, steps, tolerance, solve_for,
                  target: float, alpha: float, scheme=None) -> Result:
    """Solve q, σ, epochs or steps of DP-SGD so that the certified TPR bound at FPR α is at
    most T (σ smallest; epochs, steps, q largest), through the one solver.

    The predicate certifies δ(ε*) below the threshold that makes α e^{ε*} + δ(ε*) ≤ T, at the
    ε* where the profile's bound is smallest for the CLT guess, among the ε where T is
    reachable (_risk_pld.target) [DRS19, Prop 2.12].  A point the grid cannot certify fails.
    """
    from dpcalc.api.dpsgd import EPOCHS, NOISE, STEPS, TOLERANCE, steps_for
    from dpcalc.api.subsample import resolve_rate
    from dpcalc.params import Q
    from dpcalc.relations import risk as rrel
    from dpcalc.solve import solve_unknown

    tol = TOLERANCE.parse(tolerance)
    if dataset_size is not None and batch_size is None and q is None:
        # (an ε, δ target solves the batch size here: dpsgd.py, dpsgd_runs.py)
        raise UsageError("a --tpr target solves q, σ, epochs or steps, not the batch size: "
                         "give --batch-size with --dataset-size (or --q)")
    q = resolve_rate(q, batch_size, dataset_size, "--batch-size", "--dataset-size")
    if epochs is not None and steps is not None:
        raise UsageError("--epochs conflicts with --steps; give one (steps = ⌈epochs/q⌉)")
    count = STEPS if steps is not None or solve_for == "steps" else EPOCHS
    values, unknown = leave_one_out(
        {"q": q, "sigma": sigma, count.name: epochs if count is EPOCHS else steps},
        (Q, NOISE, count), solve_for=solve_for)
    mu = rrel.gaussian_mu_for_tpr(target, alpha)
    if _gaussian_run(values.get("q", 0.0), scheme) and unknown.name != "q":
        value = _gaussian_run_solve(unknown.name, values, target, alpha)
        return _tpr_result(unknown.name, value, values, count, target, alpha, tol, scheme,
                           note=_Q1_NOTE)
    guess = _gdp_guess(unknown.name, values, mu)

    def placed(guess_: float):
        """The certified predicate with ε* placed by the profile at the guess (by G_μ's
        tangent where the grid cannot certify that profile: _risk_pld.target)."""
        st = dict(values, **{unknown.name: guess_})
        if unknown.name == "epochs":
            st["steps"] = steps_for(max(guess_, values["q"]), values["q"])
        if unknown.name == "steps":
            st["steps"] = max(1, round(guess_))
        if "steps" not in st:
            st["steps"] = steps_for(st["epochs"], st["q"])
        holds_items, tpr_at = _risk_pld.target(run_items(st["q"], st["sigma"], st["steps"],
                                                         scheme), tol, alpha, target)

        def holds(q_: float, sigma_: float, steps_: int) -> bool:
            return holds_items(run_items(q_, sigma_, steps_, scheme))

        holds.at_best = holds_items.at_best
        return holds, tpr_at, st

    holds, (start_lo, start_tpr), start = placed(guess)
    first = guess
    if alpha < start_lo and start_tpr < 1.0 and rrel.gaussian_mu_for_tpr(
            start_tpr, alpha) <= 2.0 * rrel.gaussian_mu_for_tpr(start_lo, alpha):
        # correct the CLT guess by the ratio of the profile's μ to the CLT's at the start,
        # when the start's bracket places that μ within a factor 2 (the replace-one start σ
        # 8.4e4 for TPR 0.0100001 at FPR 0.01 read TPR ∈ [0.01000002, 0.01005]: the upper
        # end, a grid point's α e^0.005, sent the guess to σ 4.2e7, where the grid fails)
        mu_eff = rrel.gaussian_mu_for_tpr(start_tpr, alpha)
        mu_start = _gdp_mu(start["q"], start["sigma"], start["steps"])
        if mu_eff > 0 and mu_start > 0:
            guess = _gdp_guess(unknown.name, values, mu * mu_start / mu_eff)
    if guess != first and not holds.at_best:
        # the start's best ε is out of T's reach (an under-noised start): place ε* at the
        # corrected guess, nearer the answer, rather than at the start's reachable stand-in
        holds = placed(guess)[0]

    def steps_of(v: dict, rate: float) -> int:
        return v["steps"] if "steps" in v else steps_for(v["epochs"], rate)

    name = unknown.name

    def solve(holds) -> float:
        if name == "sigma":
            st = steps_of(values, values["q"])
            return solve_unknown(NOISE, lambda s: holds(values["q"], s, st), guess=guess,
                                 guess_rtol=2e-3, rtol=1e-4)
        if name in ("steps", "epochs"):
            most = solve_unknown(STEPS, lambda n: holds(values["q"], values["sigma"], n),
                                 guess=max(1, int(guess)))
            if name == "steps":
                return most
            value = math.floor(Fraction(most) * Fraction(values["q"]))
            if value < 1:
                raise InfeasibleError(f"not even one epoch fits: at most {most} steps")
            return value
        return solve_unknown(Q, lambda r: holds(r, values["sigma"], steps_of(values, r)),
                             rtol=1e-9, guess=guess if 0 < guess < 1 else None, guess_rtol=2e-3)

    try:
        try:
            value = solve(holds)
        except InfeasibleError:
            if guess == first:
                raise
            # ε* was placed from a start far from the answer (the CLT guess is for Poisson
            # add/remove): place it again at the corrected guess, once; still certified
            value = solve(placed(guess)[0])
    except InfeasibleError as exc:
        if name != "sigma":
            raise
        # T > α: enough noise meets it (TPR → α), so what failed is the certificate
        raise InfeasibleError(f"{exc} as far as the PLD grid can certify (more noise meets "
                              "any TPR above the FPR, but the grid's bound on the run's "
                              "profile loosens at very large σ)") from None
    for k in range(6 if name in ("sigma", "q") else 0):
        # ε* placed at the answer itself: the profile there has its own best ε*, whose
        # predicate admits a better answer when the answer's TPR bound is well below the
        # target (q = 1, one step, TPR 0.997 at FPR 0.0691: σ 0.324, TPR ≤ 0.945, where the
        # minimum is 0.2364; helper-32); then again until the answer moves by < 1e-4.
        # Every predicate is certified; the better answer is kept.  (Not for counts: a
        # whole number of steps leaves slack below the target anyway)
        holds_here, (_, tpr_here), _ = placed(value)
        if k == 0 and alpha < tpr_here < 1.0 and rrel.gaussian_mu_for_tpr(
                tpr_here, alpha) >= mu * (1.0 - 0.05):
            break                 # within 5 % of the target in μ: little to gain
        guess = value
        try:
            again = solve(holds_here)
        except InfeasibleError:
            break
        if not (again < value if name == "sigma" else again > value):
            break
        value, moved = again, abs(again - value) / abs(value)
        if moved < 1e-4:
            break
    value = _round_trip(value, name, values, tol, alpha, target, scheme)
    return _tpr_result(name, value, values, count, target, alpha, tol, scheme)


def _tpr_result(name: str, value, values: dict, count, target: float, alpha: float,
                tol: float, scheme, note: str = "") -> Result:
    from dpcalc.api.dpsgd import EPOCHS, steps_for

    values[name] = value
    if count is EPOCHS:
        values["steps"] = steps_for(values["epochs"], values["q"])
    else:
        values["epochs"] = values["steps"] * values["q"]
    parameters = {k: values[k] for k in ("q", "sigma", "epochs", "steps")}
    parameters.update(tpr=target, fpr=alpha)
    if scheme is not None:
        parameters.update(scheme.parameters())
    from dpcalc.references import REFS

    result = Result(
        command="dpsgd", solved_for=name, value=value, parameters=parameters,
        method="pld", direction="upper" if name == "sigma" else "lower",
        reference=REFS["DRS19"].short,
        notes=(f"{name} solved so that no membership-inference test exceeds TPR {target:g} at "
               f"FPR {alpha:g} ({'exact trade-off' if note else 'certified PLD profile'})",),
        symbols={"q": "q", "sigma": "σ", "epochs": "epochs", "steps": "steps", "tpr": "TPR",
                 "fpr": "FPR"})
    return _risk.attach(result, risk_of(values["q"], values["sigma"], values["steps"], tol,
                                        (alpha,), None, certificate=(alpha, target),
                                        scheme=scheme))


def _gaussian_run_solve(name: str, values: dict, target: float, alpha: float):
    """σ (smallest), steps or epochs (largest) of a q = 1 run whose exact TPR bound at α
    (the forward question's, risk_of) is at most the target, by the one solver from the
    closed form μ* = Φ⁻¹(T) − Φ⁻¹(α) [DRS19, Eq (6)]: σ = √steps/μ*, steps = ⌊(μ*σ)²⌋.  A σ
    is moved up until the number as printed, read back as the CLI reads it (rounded down),
    still meets the target (a bisection's answer can be the smallest passing double, whose
    shortest repr reads back one ulp lower: helper-35)."""
    from dpcalc.api.dpsgd import MAX_STEPS, NOISE, SIGMA_EVAL_MAX, SIGMA_SOLVE_MIN, STEPS, steps_for
    from dpcalc.relations import risk as rrel
    from dpcalc.solve import solve_unknown

    def meets(sigma: float, steps: int) -> bool:
        block = risk_of(1.0, sigma, steps, 1e-3, (alpha,), None)
        return block["tpr"][0]["upper"] <= target

    mu = rrel.gaussian_mu_for_tpr(target, alpha)
    if not mu > 0.0:
        raise InfeasibleError(f"TPR {target:g} at FPR {alpha:g} is met by no noise: even "
                              "a test that ignores the data reaches TPR = FPR")
    if name == "sigma":
        steps = values.get("steps") or steps_for(values["epochs"], 1.0)
        guess = min(max(math.sqrt(steps) / mu, SIGMA_SOLVE_MIN), SIGMA_EVAL_MAX)
        sigma = solve_unknown(NOISE, lambda s_: meets(s_, steps), low=SIGMA_SOLVE_MIN,
                              low_open=True, high=SIGMA_EVAL_MAX, rtol=1e-12, guess=guess,
                              guess_rtol=1e-9)
        for _ in range(60):
            if meets(float(NOISE.parse(repr(float(sigma)))), steps):
                break
            sigma = math.nextafter(sigma, math.inf)
        return sigma
    sigma = values["sigma"]
    guess = int(min(MAX_STEPS, max(1.0, math.floor((mu * sigma) ** 2))))
    return solve_unknown(STEPS, lambda n: meets(sigma, n), guess=guess)


def _round_trip(value, name: str, values: dict, tol: float, alpha: float, target: float,
                scheme):
    """The answer, moved to the private side until the forward question at it (the profile's
    own TPR bound at α, without the solve's certificate) meets the target too: the solve's
    predicate certifies TPR ≤ T at one ε*, the forward question reads a grid of ε, and at
    σ 2, 1000 steps, TPR 0.5 at FPR 1e-3 the solved q read TPR ≤ 0.50006 forward (a
    --max-tpr 0.5 gate at it failed; helper-33).  Steps of 1e-5·4^k (relative; a count at
    least 1): each candidate is more private than the certified answer, so still certified."""
    from dpcalc.api.dpsgd import steps_for

    for k in range(8):
        st = dict(values, **{name: value})
        if name == "epochs":
            st["steps"] = steps_for(value, st["q"])
        elif "steps" not in st:
            st["steps"] = steps_for(st["epochs"], st["q"])
        try:
            block = risk_of(st["q"], st["sigma"], st["steps"], tol, (alpha,), None,
                            scheme=scheme)
        except InfeasibleError:
            return value           # no forward profile to meet: the certificate stands
        if block["tpr"][0]["upper"] <= target:
            return value
        step = 1e-5 * 4.0 ** k
        if name == "sigma":
            value = value * (1.0 + step)
        elif name == "q":
            value = value * (1.0 - step)
        elif value > 1:
            value = max(1, value - max(1, int(value * step)))
        else:
            return value
    return value
