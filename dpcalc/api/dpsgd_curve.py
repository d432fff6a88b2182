"""``dpsgd --curve --curve-accountants``: the other accountants' ε after each epoch.

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
    from dpcalc.api.dpsgd import Accountant, _curve
    from dpcalc.numeric.directed import log_of

    q, sigma, log_delta = values["q"], values["sigma"], log_of(values["delta"])
    series: dict[str, list] = {}
    for name in names:
        acc = Accountant(name, tolerance)
        if name == "pld":  # its own certified curve, at the same step counts
            rows = {r["steps"]: r["epsilon"] for r in _curve(acc, values)}
            series[name] = [rows[p["steps"]] for p in points]
        else:
            series[name] = [acc.epsilon(q, sigma, p["steps"], log_delta)[0] for p in points]
    for i, p in enumerate(points):
        p["comparison"] = {name: (v[i] if math.isfinite(v[i]) else None)
                           for name, v in series.items()}
