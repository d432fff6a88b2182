"""``dpsgd --curve``: ε after each epoch, and with ``--curve-accountants`` the other
accountants' ε beside it.

Each accountant's curve is its own upper bound on ε at the curve's step counts (rdp [MTZ19],
moments [ACGMMTZ16], strong composition [DRV10]), beside the PLD curve, so that Figure 2 of
Abadi et al. (moments vs strong composition) can be redrawn. The per-step RDP and moments
are computed once per (q, σ) and composed in closed form at every step count.
"""

from __future__ import annotations

import math

from dpcalc.errors import UsageError

CURVE_ACCOUNTANTS = ("pld", "rdp", "moments", "strong")


def parse_curve_accountants(text: object, main: str) -> tuple[str, ...]:
    """``--curve-accountants``: a comma-separated list of accountants other than ``main``
    (or ``all``), in the order given, without repeats.

    Raises:
        UsageError: an unknown name, or the main accountant itself.
    """
    if text is None:
        return ()
    names = [t.strip() for t in str(text).split(",") if t.strip()]
    if names == ["all"]:
        return tuple(a for a in CURVE_ACCOUNTANTS if a != main)
    out: list[str] = []
    for name in names:
        if name not in CURVE_ACCOUNTANTS:
            raise UsageError(f"--curve-accountants: unknown accountant {name!r}; give a "
                             "comma-separated list of pld, rdp, moments, strong (or all)")
        if name == main:
            raise UsageError(f"--curve-accountants: {name} is the --accountant already "
                             "plotted; list the others to compare")
        if name not in out:
            out.append(name)
    if not out:
        raise UsageError("--curve-accountants: give a comma-separated list of pld, rdp, "
                         "moments, strong (or all)")
    return tuple(out)


def add_comparison_curves(points: list[dict], names: tuple[str, ...], values: dict,
                          tolerance: float) -> None:
    """Add ``"comparison": {name: ε upper bound or None}`` to each curve point (None: the
    accountant gives no finite bound there, e.g. strong composition over few steps).

    ``values`` are the run's (q, σ, epochs, steps, δ), as given to the main curve.
    """
    from dpcalc.api._dpsgd_accountant import Accountant
    from dpcalc.numeric.directed import log_of

    q, sigma, log_delta = values["q"], values["sigma"], log_of(values["delta"])
    series: dict[str, list] = {}
    for name in names:
        acc = Accountant(name, tolerance)
        if name == "pld":  # its own certified curve, at the same step counts
            rows = {r["steps"]: r["epsilon"] for r in curve_points(acc, values)}
            series[name] = [rows[p["steps"]] for p in points]
        else:
            series[name] = [acc.epsilon(q, sigma, p["steps"], log_delta)[0] for p in points]
    for i, p in enumerate(points):
        p["comparison"] = {name: (v[i] if math.isfinite(v[i]) else None)
                           for name, v in series.items()}


def curve_points(acc, values: dict) -> list[dict]:
    """ε after each epoch (at most 100 evenly spaced points for long runs) under ``acc`` (a
    dpcalc.api.dpsgd.Accountant)."""
    from dpcalc.api.dpsgd import steps_for
    from dpcalc.numeric.directed import log_of

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
        from dpcalc.accountants.dpsgd import _check_rate, pld_call
        from dpcalc.relations import pld

        try:
            _check_rate(q)   # the PLD's own rates, as for the answer (else its fallback)
            # certified upper bounds from the PLD's first pass (the answer itself keeps its
            # refined bracket): a curve is read for its shape, at a third of the cost
            rows = pld_call(pld.epsilon_curve, q, acc._evaluated_sigma(sigma), steps_list,
                            log_d, acc.tolerance, True)
            return [{"epochs": e, "steps": s, "epsilon": hi}
                    for e, (s, _, hi) in zip(points, rows, strict=True)]
        except pld.PLDUncertifiable:
            from dpcalc.accountants.dpsgd import fallback

            # the fallback policy per point: the tightest of its accountants' bounds
            sig = acc._evaluated_sigma(sigma)
            return [{"epochs": e, "steps": s,
                     "epsilon": fallback(acc.name, "epsilon", q, sig, s, log_d,
                                         acc.tolerance)[0]}
                    for e, s in zip(points, steps_list, strict=True)]
    return [{"epochs": e, "steps": s, "epsilon": acc.epsilon(q, sigma, s, log_d)[0]}
            for e, s in zip(points, steps_list, strict=True)]


def answer_curve(acc, values: dict, others: tuple[str, ...], tolerance: float) -> list[dict]:
    """The answer's curve (``curve_points``), with the other accountants' (``others``)."""
    points = curve_points(acc, values)
    # the point at the run's own length shows the answer's ε: the answer certifies (ε, δ)
    # there, whichever unknown was solved (a solved count by the passing count it lies
    # below).  The curve's own bound there is certified too, but read on the curve's grid
    # it differs from the answer's: above it (a δ solve at ε 2 ended on 2.0012, its ε read
    # back at the solved δ), or below where the solve ended a little inside the target
    # (1.9999968 at K = 3, σ solved for ε 2): the curve ends on the answer either way
    for point in points:
        if point["steps"] == values["steps"]:
            point["epsilon"] = values["epsilon"]
    if others:
        add_comparison_curves(points, others, values, tolerance)
    return points
