"""Attack risk of DP-SGD from its certified PLD profile, and the TPR-target solves.

The profile is read at a grid of ε from one composition (``pld.log_delta_profile``); the
bounds on the TPR follow from it by ``relations.risk.profile_tpr`` [DRS19, Prop 2.12].
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpcalc.api import _risk
from dpcalc.api._common import leave_one_out
from dpcalc.errors import InfeasibleError, UsageError
from dpcalc.result import Result

# --------------------------------------------------------------------------------------

def _gdp_mu(q: float, sigma: float, steps: int) -> float:
    """CLT estimate μ ≈ q√(T(e^{1/σ²} − 1)) (only to place the grid's focus)."""
    return q * math.sqrt(steps * math.expm1(min(1.0 / (sigma * sigma), 700.0)))


def _focus(mu: float, alpha: float) -> float:
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1.0 - alpha)
    return abs(mu * z - mu * mu / 2.0)  # |ε*|: the mirrored branch when negative


def pld_profile(q: float, sigma: float, steps: int, tolerance: float, fprs):
    """(ε grid, δ lower, δ upper) of T steps, ε from 0 to past log(1/min FPR)."""
    import numpy as np

    from dpcalc.relations import pld

    eps_max = max(1.0, math.log(1.0 / min(fprs)) + 0.05)
    # coarse everywhere, fine (second-order bounds: error ∝ spacing²) around each FPR's
    # optimum as the CLT estimate places it; any grid is certified, only the width changes
    mu = _gdp_mu(q, sigma, steps)
    points = set(np.round(np.arange(0.0, eps_max + 0.05, 0.05), 12))
    for a in fprs:
        c = min(eps_max, _focus(mu, a))
        points |= set(np.round(np.arange(max(0.0, c - 0.4), min(eps_max, c + 0.4), 0.005), 12))
    grid = np.array(sorted(points))
    mid = sorted(fprs)[len(fprs) // 2]
    focus = min(eps_max, _focus(mu, mid))
    # refine the grid while δ's bracket is too wide where δ matters: δ below min FPR/20
    # moves a TPR bound by a negligible fraction of its own width
    lo, up = pld.log_delta_profile(q, sigma, steps, grid, tolerance, focus=focus,
                                   log_delta_floor=math.log(min(fprs)) - 3.0)
    with np.errstate(under="ignore"):
        dlo = np.exp(lo) * (1.0 - 1e-14)  # numpy's exp is within a few ulp: 1e-14 ≈ 45 ulp
        dup = np.minimum(1.0, np.exp(up) * (1.0 + 1e-14))
    return grid, dlo, dup


def pld_block(q: float, sigma: float, steps: int, tolerance: float, fprs,
              point: tuple | None, certificate: tuple | None = None) -> dict:
    """Risk of DP-SGD from its certified PLD profile (both directions, ε over ℝ).

    ``certificate`` = (α, T): T is a certified TPR bound at α found by the TPR-target solve
    (a point of the profile certified on its own); the reported upper takes it into account.
    """
    from dpcalc.relations import risk as rel

    # one composition per group of FPRs whose optimal ε lie within 1.5 of each other: the
    # engine's tilt is sized for one ε, and far from it the certified bracket widens
    mu = _gdp_mu(q, sigma, steps)
    groups: list[list[float]] = []
    for a in sorted(set(fprs), key=lambda a: _focus(mu, a)):
        if groups and _focus(mu, a) - _focus(mu, groups[-1][0]) <= 1.5:
            groups[-1].append(a)
        else:
            groups.append([a])
    found: dict[float, tuple[float, float]] = {}
    adv_lo, adv_hi = 0.0, 1.0
    for group in groups:
        grid, dlo, dup = pld_profile(q, sigma, steps, tolerance, group)
        for a in group:
            lo, hi = rel.profile_tpr(a, grid, dlo, dup)
            if certificate is not None and a == certificate[0]:
                hi = min(hi, certificate[1])
            found[a] = (min(lo, hi), hi)
        lo, hi = rel.profile_advantage(list(grid[:1]), dlo[:1], dup[:1])
        adv_lo, adv_hi = max(adv_lo, lo), min(adv_hi, hi)  # each bracket is certified
    block = _risk._block("pld", fprs, found.__getitem__, (adv_lo, adv_hi), point)
    block["gdp_mu_estimate"] = _gdp_estimate(0.5 * (adv_lo + adv_hi))
    return block


def _gdp_estimate(advantage: float) -> float:
    """μ of the Gaussian-DP curve G_μ with the same largest advantage, 2Φ(μ/2) − 1 [DRS19,
    Eq (6)]: for readers used to GDP. An estimate, neither an upper nor a lower bound (the
    profile is not exactly Gaussian)."""
    from statistics import NormalDist

    return 2.0 * NormalDist().inv_cdf(min(0.5 * (1.0 + advantage), 1.0 - 1e-16))


def pld_target(q: float, sigma: float, steps: int, tolerance: float, alpha: float,
               target: float):
    """A monotone certified predicate for "TPR at α ≤ T" in (q, σ, steps), and the TPR upper
    bound at the starting values (to correct the starting guess).

    The profile at the given (starting) values locates the ε* where the bound
    α e^ε + δ(ε) (or its mirrored form 1 − e^{−ε}(1 − α − δ(ε))) is smallest; the predicate
    then certifies δ(ε*) ≤ threshold with the PLD engine's fast decision (certify_epsilon).
    Each True is a certified TPR bound ≤ T [DRS19, Prop 2.12 at one ε]; a fixed ε* only
    makes the answer a little conservative, never optimistic.
    """
    import numpy as np

    from dpcalc.relations import pld

    grid, _, dup = pld_profile(q, sigma, steps, tolerance, [alpha])
    pos = alpha * np.exp(grid) + dup
    neg = 1.0 - np.exp(-grid) * (1.0 - alpha - dup)
    i_pos, i_neg = int(np.argmin(pos)), int(np.argmin(neg))
    mirrored = neg[i_neg] < pos[i_pos]
    eps = float(grid[i_neg] if mirrored else grid[i_pos])
    slack = 1.0 - 1e-12  # the threshold is rounded down generously (a few float operations)
    if mirrored:
        # 1 − e^{−ε}(1 − α − δ) ≤ T  ⟺  δ ≤ 1 − α − e^{ε}(1 − T)
        thr = (1.0 - alpha - math.exp(eps) * (1.0 - target) * (1.0 + 1e-12)) * slack
    else:
        thr = (target - alpha * math.exp(eps) * (1.0 + 1e-12)) * slack

    def holds(q_: float, sigma_: float, steps_: int) -> bool:
        if thr <= 0.0:
            return False
        return pld.certify_epsilon(q_, sigma_, steps_, math.log(thr), eps) is True

    return holds, float(min(1.0, pos[i_pos], neg[i_neg]))


def risk_of(q: float, sigma: float, steps: int, tolerance: float, fprs,
            point: tuple | None, certificate: tuple | None = None) -> dict:
    """The risk block of a DP-SGD run: the PLD profile, or (said so) the (ε, δ) point when the
    PLD grid cannot certify this setting."""
    from dpcalc.relations import pld

    try:
        return pld_block(q, sigma, steps, tolerance, fprs, point, certificate)
    except pld.PLDUncertifiable as exc:
        if point is None:
            raise InfeasibleError(f"the PLD grid cannot certify the attack risk here ({exc})") \
                from None
        block = _risk.point_block({"epsilon": point[0], "delta": point[1]}, "epsilon", "delta",
                                  fprs)
        block["note"] = (f"the PLD grid cannot certify this profile ({exc}); " +
                         _risk.POINT_NOTE)
        return block


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
                  target: float, alpha: float) -> Result:
    """Solve q, σ, epochs or steps of DP-SGD so that the certified TPR bound at FPR α is at
    most T (σ smallest; epochs, steps, q largest), through the one solver.

    The predicate certifies δ(ε*) below the threshold that makes α e^{ε*} + δ(ε*) ≤ T, at the
    ε* where the profile's bound is smallest for the CLT guess [DRS19, Prop 2.12].
    """
    from dpcalc.api.dpsgd import EPOCHS, NOISE, STEPS, TOLERANCE, steps_for
    from dpcalc.api.subsample import resolve_rate
    from dpcalc.params import Q
    from dpcalc.relations import risk as rrel
    from dpcalc.solve import largest_passing, largest_passing_int, smallest_passing

    tol = TOLERANCE.parse(tolerance)
    q = resolve_rate(q, batch_size, dataset_size, "--batch-size", "--dataset-size")
    if epochs is not None and steps is not None:
        raise UsageError("--epochs conflicts with --steps; give one (steps = ⌈epochs/q⌉)")
    count = STEPS if steps is not None or solve_for == "steps" else EPOCHS
    values, unknown = leave_one_out(
        {"q": q, "sigma": sigma, count.name: epochs if count is EPOCHS else steps},
        (Q, NOISE, count), solve_for=solve_for)
    mu = rrel.gaussian_mu_for_tpr(target, alpha)
    guess = _gdp_guess(unknown.name, values, mu)
    start = dict(values, **{unknown.name: guess})
    if unknown.name == "epochs":
        start["steps"] = steps_for(max(guess, values["q"]), values["q"])
    if unknown.name == "steps":
        start["steps"] = max(1, round(guess))
    if "steps" not in start:
        start["steps"] = steps_for(start["epochs"], start["q"])
    holds, start_tpr = pld_target(start["q"], start["sigma"], start["steps"], tol, alpha,
                                  target)
    if alpha < start_tpr < 1.0:
        # correct the CLT guess by the ratio of the profile's μ to the CLT's at the start
        mu_eff = rrel.gaussian_mu_for_tpr(start_tpr, alpha)
        mu_start = _gdp_mu(start["q"], start["sigma"], start["steps"])
        if mu_eff > 0 and mu_start > 0:
            guess = _gdp_guess(unknown.name, values, mu * mu_start / mu_eff)

    def steps_of(v: dict, rate: float) -> int:
        return v["steps"] if "steps" in v else steps_for(v["epochs"], rate)

    name = unknown.name
    if name == "sigma":
        st = steps_of(values, values["q"])
        value = smallest_passing(lambda s: holds(values["q"], s, st), low=0.0, high=math.inf,
                                 low_open=True, name="σ", guess=guess, guess_rtol=2e-3,
                                 rtol=1e-4)
    elif name in ("steps", "epochs"):
        most = largest_passing_int(lambda n: holds(values["q"], values["sigma"], n), low=1,
                                   name="steps", high=10**10, guess=max(1, int(guess)))
        if name == "steps":
            value = most
        else:
            value = math.floor(Fraction(most) * Fraction(values["q"]))
            if value < 1:
                raise InfeasibleError(f"not even one epoch fits: at most {most} steps")
    else:
        value = largest_passing(lambda r: holds(r, values["sigma"], steps_of(values, r)),
                                low=0.0, high=1.0, high_open=False, name="q", rtol=1e-9,
                                guess=guess if 0 < guess < 1 else None, guess_rtol=2e-3)
    values[name] = value
    if count is EPOCHS:
        values["steps"] = steps_for(values["epochs"], values["q"])
    else:
        values["epochs"] = values["steps"] * values["q"]
    parameters = {k: values[k] for k in ("q", "sigma", "epochs", "steps")}
    parameters.update(tpr=target, fpr=alpha)
    from dpcalc.references import REFS

    result = Result(
        command="dpsgd", solved_for=name, value=value, parameters=parameters,
        method="pld", direction="upper" if name == "sigma" else "lower",
        reference=REFS["DRS19"].short,
        notes=(f"{name} solved so that no membership-inference test exceeds TPR {target:g} at "
               f"FPR {alpha:g} (certified PLD profile)",),
        symbols={"q": "q", "sigma": "σ", "epochs": "epochs", "steps": "steps", "tpr": "TPR",
                 "fpr": "FPR"})
    return _risk.attach(result, risk_of(values["q"], values["sigma"], values["steps"], tol,
                                        (alpha,), None, certificate=(alpha, target)))
