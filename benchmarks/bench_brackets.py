"""Tightness and CPU of the PLD's ε brackets on a fixed set of DP-SGD points, in-process.

    .venv/bin/python benchmarks/bench_brackets.py [--log 200] [--uniform 100] [--random 150]
        [--tolerance 1e-3] [--checkout DIR] [--write FILE] [--against FILE]

The points: bench_batch.py's lines (seed 31; σ and q log-uniform, then uniform; δ = 1e-5),
and random far-tail ones (seed 5: q log-uniform in [1e-6, 0.1], σ in [0.4, 10], steps in
[1e2, 1e7], log δ in [−400, −3]).  For each group it prints the CPU time of
``dpcalc.relations.pld.epsilon_bounds`` (process time, one process) and how many brackets
are wider than the tolerance, with the widest.  ``--checkout DIR`` imports dpcalc from
another checkout (e.g. ``git archive`` of an earlier commit, compiled first with
``python -m compileall``); ``--write`` keeps the brackets as JSON, and ``--against`` compares
them with such a file: lower and upper ends that moved, and any bracket of one run that lies
wholly above or below the other's (both are certified, so that would be a soundness bug).
On a machine whose timings drift, alternate the two runs for CPU numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path


def points(n_log: int, n_uniform: int, n_random: int) -> list[tuple[str, tuple]]:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_batch import questions

    from dpcalc.api.dpsgd import steps_for  # (the batch's own step count)

    out = []
    for group, n, uniform in (("log-uniform", n_log, False), ("uniform", n_uniform, True)):
        for line in questions(n, 31, True, uniform):
            d = json.loads(line)
            steps = steps_for(d["epochs"], d["q"])
            out.append((group, (d["q"], d["sigma"], steps, math.log(d["delta"]))))
    rng = random.Random(5)
    for _ in range(n_random):
        q = 10 ** rng.uniform(-6, -1)
        sigma = 10 ** rng.uniform(math.log10(0.4), 1)
        steps = int(10 ** rng.uniform(2, 7))
        log_delta = -10 ** rng.uniform(0.5, 2.6)
        out.append(("far-tail", (q, sigma, steps, log_delta)))
    return out


def run(pts, tolerance: float) -> list[dict]:
    from dpcalc.relations import pld

    rows = []
    for group, p in pts:
        t = time.process_time()
        try:
            lo, up = pld.epsilon_bounds(*p, tolerance)
            row = {"group": group, "point": list(p), "lower": lo, "upper": up}
        except Exception as exc:  # (a benchmark reports every outcome)
            row = {"group": group, "point": list(p), "error": type(exc).__name__}
        row["cpu"] = time.process_time() - t
        rows.append(row)
    return rows


def width(r: dict) -> float:
    return (r["upper"] - r["lower"]) / r["upper"] if r.get("upper", 0) > 0 else 0.0


def summary(rows: list[dict], tolerance: float) -> None:
    for group in dict.fromkeys(r["group"] for r in rows):
        rs = [r for r in rows if r["group"] == group]
        ok = [r for r in rs if "error" not in r]
        wide = [r for r in ok if width(r) > tolerance]
        widest = max((width(r) for r in ok), default=0.0)
        print(f"{group:12} {len(rs):4} points  CPU {sum(r['cpu'] for r in rs):7.2f} s  "
              f"wider than the tolerance: {len(wide):3}  widest {widest:.2e}  "
              f"errors {len(rs) - len(ok)}")


def compare(rows: list[dict], old: list[dict]) -> None:
    moved = {"lower up": 0, "lower down": 0, "upper up": 0, "upper down": 0}
    apart, worst_up = [], (0.0, None)
    for r, o in zip(rows, old, strict=True):
        if "error" in r or "error" in o:
            if r.get("error") != o.get("error"):
                print("outcome changed:", o["point"], o.get("error"), "->", r.get("error"))
            continue
        for end in ("lower", "upper"):
            d = (r[end] - o[end]) / max(o["upper"], 1e-300)
            if abs(d) > 1e-6:
                moved[f"{end} {'up' if d > 0 else 'down'}"] += 1
            if end == "upper" and d > worst_up[0]:
                worst_up = (d, r["point"])
        if r["lower"] > o["upper"] or o["lower"] > r["upper"]:
            apart.append(r["point"])
    print("moved by more than 1e-6 of the upper end:", moved)
    print(f"largest rise of an upper end: {worst_up[0]:.2e} relative at {worst_up[1]}")
    print(f"brackets lying apart (a soundness bug in one of the runs): {len(apart)}", apart[:5])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", type=int, default=200)
    parser.add_argument("--uniform", type=int, default=100)
    parser.add_argument("--random", type=int, default=150)
    parser.add_argument("--tolerance", type=float, default=1e-3)
    parser.add_argument("--checkout", help="import dpcalc from this checkout")
    parser.add_argument("--write", help="keep the brackets in this JSON file")
    parser.add_argument("--against", help="compare with a file written by --write")
    args = parser.parse_args()
    if args.checkout:
        sys.path.insert(0, str(Path(args.checkout).resolve()))
    rows = run(points(args.log, args.uniform, args.random), args.tolerance)
    summary(rows, args.tolerance)
    if args.write:
        Path(args.write).write_text(json.dumps(rows))
    if args.against:
        compare(rows, json.loads(Path(args.against).read_text()))


if __name__ == "__main__":
    main()
