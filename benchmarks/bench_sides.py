"""CPU time of the PLD's one-step discretisation (dpcalc.pld.sides._make_sides) per
``dpcalc batch`` line, beside the whole line's.

    .venv/bin/python benchmarks/bench_sides.py [--lines 100] [--seed 13] [--replays 7]

The lines are bench_batch.py's uniform questions (σ in [0.5, 10], q in [1e-4, 0.1], epochs
1..200, δ 1e-5) through dpcalc.api.dpsgd.dpsgd(compare=False). Prints the whole line's CPU
time (the least of three passes) and the sides' alone: every _make_sides call of the pass is
replayed --replays times on fresh copies of its pair, the least total kept. CPU time
(time.process_time), not wall time: the machine is shared.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_batch import questions  # noqa: E402

from dpcalc.api.dpsgd import dpsgd  # noqa: E402
from dpcalc.mechanisms import _normal  # noqa: E402
from dpcalc.pld import compose  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--replays", type=int, default=7)
    args = parser.parse_args()
    lines = [json.loads(v) for v in questions(args.lines, args.seed, True, uniform=True)]
    made = compose._make_sides
    calls: list = []

    def record(*a, **k):
        calls.append((len(done), a, k))
        return made(*a, **k)

    def run() -> float:
        start = time.process_time()
        for v in lines:
            dpsgd(q=v["q"], sigma=v["sigma"], epochs=v["epochs"], delta="1e-5", compare=False)
            done.append(1)
        return time.process_time() - start

    done: list = []
    run()                                  # (imports and first-call costs)
    whole = min(run() for _ in range(3))
    compose._make_sides = record
    done.clear()
    run()
    compose._make_sides = made
    memo = getattr(_normal._z_for_log_tail, "cache_clear", None)
    best = float("inf")
    for _ in range(args.replays):
        total, last = 0.0, None
        for i, a, k in calls:
            pair = copy.copy(a[0])
            if hasattr(pair, "_nodes"):
                pair._nodes = {}           # (a fresh pair keeps no nodes)
            if memo is not None and i != last:
                memo()                     # (nor has a new line's process its quantiles)
            last = i
            start = time.process_time()
            made(pair, *a[1:], **k)
            total += time.process_time() - start
        best = min(best, total)
    n = len(lines)
    print(f"{n} lines: {1000 * whole / n:.2f} ms/line in all, "
          f"{1000 * best / n:.2f} ms/line in _make_sides ({len(calls)} calls)")


if __name__ == "__main__":
    main()
