"""Attack risk for every command: ``--fpr`` read-outs, the ``--max-tpr`` gate, and the
predicates the TPR-target solves use (``--tpr T --fpr A``).

JSON (contract, "Attack risk"): ``"risk": {"advantage": {"lower", "upper"}, "tpr": [{"fpr",
"lower", "upper", "single_point"}], "basis": ..., "note": ...}``; ``single_point`` is the bound
the one reported (ε, δ) point gives, for comparison.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

from dpcalc.errors import UsageError
from dpcalc.params import Param
from dpcalc.result import Result

FPR = Param("fpr", 0.0, 1.0, True, True, "smaller", symbol="FPR")
# a TPR target is read down and an FPR up (params.Param.input_rounding): both are the
# private side, as the TPR bound grows with the FPR
TPR = Param("tpr", 0.0, 1.0, True, True, "larger", symbol="TPR")
MAX_TPR = Param("max_tpr", 0.0, 1.0, False, False, "larger", symbol="TPR gate")

POINT_NOTE = ("attack risk from the single (ε, δ) point only (Kairouz, Oh & Viswanath 2015): "
              "dpcalc has no privacy profile of this mechanism, so the true risk may be lower")


def parse_fprs(fpr: object) -> tuple[float, ...]:
    """The ``--fpr`` values (none, one, or a list), each in (0, 1)."""
    if fpr is None:
        return ()
    items = list(fpr) if isinstance(fpr, list | tuple) else [fpr]
    return tuple(float(FPR.parse(a)) for a in items)


def parse_target(tpr: object, fprs: Sequence[float], given: dict[str, object]) -> float | None:
    """The ``--tpr`` target, checked against what else was given (None when absent).

    Raises:
        UsageError: --tpr without exactly one --fpr, or with --epsilon/--delta.
    """
    if tpr is None:
        return None
    target = TPR.parse(tpr)  # a Given float: computed with, and shown as written
    if len(fprs) != 1:
        raise UsageError(f"--tpr needs exactly one --fpr (the FPR the target applies to); "
                         f"got {len(fprs)}")
    clash = [f"--{k.replace('_', '-')}" for k, v in given.items() if v is not None]
    if clash:
        raise UsageError(f"--tpr replaces {' and '.join(given_opts(given))}: "
                         f"{', '.join(clash)} conflicts with it")
    if target <= fprs[0]:
        from dpcalc.errors import InfeasibleError

        raise InfeasibleError(f"--tpr {target:g} is not above --fpr {fprs[0]:g}: every "
                              "mechanism allows the coin-flip test TPR = FPR (no noise meets it)")
    return target


def given_opts(given: dict[str, object]) -> list[str]:
    return [f"--{k.replace('_', '-')}" for k in given]


def _block(basis: str, fprs, tpr: Callable[[float], tuple[float, float]],
           advantage: tuple[float, float], point: tuple | None, note: str = "") -> dict:
    from dpcalc.relations import risk as rel

    # the answer's own (ε, δ) point is a certified guarantee of the same mechanism: the
    # bounds it gives [KOV15, Thm 2.1] cap the basis's where they are the tighter (a PLD
    # profile left trivial where strong composition answered: TPR ≤ 100 % beside 7.17 % at
    # FPR 5 %, q 1e-16)
    rows = []
    for a in fprs:
        lo, hi = tpr(a)
        row = {"fpr": a, "lower": lo, "upper": hi}
        if point is not None:
            row["single_point"] = rel.point_tpr(point[0], point[1], a)[1]
            row["upper"] = min(hi, row["single_point"])
            row["lower"] = min(lo, row["upper"])
        rows.append(row)
    adv_lo, adv_hi = advantage
    if point is not None:
        adv_hi = min(adv_hi, rel.point_advantage(point[0], point[1])[1])
        adv_lo = min(adv_lo, adv_hi)
    out = {"basis": basis, "advantage": {"lower": adv_lo, "upper": adv_hi},
           "tpr": rows}
    if point is not None:
        out["point"] = {"epsilon": point[0], "delta": point[1]}
    if note:
        out["note"] = note
    return out


def attach(result: Result, block: dict | None) -> Result:
    """``result`` with ``"risk"`` in its extra (and the block's note among its notes)."""
    if block is None:
        return result
    note = block.get("note")
    notes = result.notes + ((note,) if note and note not in result.notes else ())
    return dataclasses.replace(result, extra={**result.extra, "risk": block}, notes=notes)


def _point_of(parameters: dict, eps_key: str, delta_key: str) -> tuple | None:
    eps, delta = parameters.get(eps_key), parameters.get(delta_key)
    if eps is None or delta is None:
        return None
    return (eps, delta)


def exact_block(kind: str, sensitivity: float, noise: float, fprs,
                point: tuple | None) -> dict:
    """Risk of the Gaussian (μ = Δ/σ) or Laplace (μ = Δ/b) mechanism, exact.

    μ is rounded up for the upper bounds and down for the lower ones (TPR grows with μ).
    """
    mu = sensitivity / noise
    from dpcalc.relations import risk as rel

    tpr_fn = rel.gaussian_tpr if kind == "gaussian" else rel.laplace_tpr
    adv_fn = rel.gaussian_advantage if kind == "gaussian" else rel.laplace_advantage
    mu_lo, mu_hi = math.nextafter(mu, 0.0), math.nextafter(mu, math.inf)

    def tpr(a):
        return tpr_fn(mu_lo, a)[0], tpr_fn(mu_hi, a)[1]

    adv = adv_fn(mu_lo)[0], adv_fn(mu_hi)[1]
    return _block("exact", fprs, tpr, adv, point)


def gaussian_mu_block(mu, fprs, point: tuple | None, note: str = "") -> dict:
    """Risk of the Gaussian trade-off G_μ with μ given exactly (an mpf at 40 digits, or a
    double): TPR(α) = Φ(Φ⁻¹(α) + μ) and the advantage 2Φ(μ/2) − 1, each rounded outward
    [DRS19, Eq (6), Prop 2.12]."""
    from dpcalc.relations import risk as rel

    return _block("exact", fprs, lambda a: rel.gaussian_tpr(mu, a),
                  rel.gaussian_advantage(mu), point, note)


def point_block(parameters: dict, eps_key: str, delta_key: str, fprs,
                profile_tpr: Callable[[float], float] | None = None,
                profile_advantage: float | None = None) -> dict | None:
    """Risk from the one (ε, δ) point a composition or subsampling result reports.

    ``profile_tpr(α)``, when given, is another valid upper bound at α (e.g. the best point
    of the whole composition's profile): the smaller of the two is reported; likewise
    ``profile_advantage`` (δ(0) of that profile, the largest TPR − FPR [KOV15]).
    """
    from dpcalc.relations import risk as rel

    point = _point_of(parameters, eps_key, delta_key)
    if point is None:
        return None
    if profile_tpr is not None:
        advantage = rel.point_advantage(*point)[1]
        if profile_advantage is not None:
            advantage = min(advantage, profile_advantage)
        return _block("point", fprs, lambda a: (a, min(rel.point_tpr(point[0], point[1], a)[1],
                                                       profile_tpr(a))),
                      (0.0, advantage), point, POINT_NOTE)
    # Only the point is known: its curve is the upper bound (tight for the worst (ε, δ)-DP
    # mechanism), but the mechanism's own largest TPR may be as low as the trivial test's,
    # TPR = FPR (advantage 0): that is the lower end that holds for every such mechanism.
    return _block("point", fprs, lambda a: (a, rel.point_tpr(point[0], point[1], a)[1]),
                  (0.0, rel.point_advantage(*point)[1]), point, POINT_NOTE)


def mu_up(sensitivity: float, noise: float) -> float:
    """Δ/noise rounded up (TPR grows with μ)."""
    return math.nextafter(sensitivity / noise, math.inf)
