"""``dpcalc batch`` throughput (issue 13): N dpsgd ε questions, whole process.

    .venv/bin/python benchmarks/bench_batch.py [--lines 10000] [--seed 13] [--compare-off]
        [--workers N] [--uniform] [--write FILE] [--checkout DIR]

Generates N lines with a fixed seed — σ log-uniform in [0.5, 10], q log-uniform in
[1e-4, 0.1] (``--uniform``: both uniform; the issue names the ranges, not the law), epochs
uniform in [1, 200] (integers), δ = 1e-5, ε asked — runs them through the installed
``dpcalc batch`` next to this interpreter, and prints wall and CPU time (user + sys of the
child), lines per second, and the exit status. ``--compare-off`` adds
``"compare": false`` (no comparison rows: the --value evaluation). ``--workers N`` sets
``DPCALC_BATCH_WORKERS`` (1: one process, as before the workers; default: one per core).
``--checkout DIR`` runs ``python -m dpcalc batch`` from another checkout (e.g. ``git archive``
of an earlier commit) for before/after numbers; on a machine whose timings drift, alternate
the two runs. Goal (issue 13): 10,000 lines in <= 60 s; wall time is the headline.

The CPU time includes the worker processes: ``dpcalc batch`` waits for (reaps) every worker
before it exits, so their times are added to its children's times, and those to this
process's children's times when it waits for ``dpcalc``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def questions(n: int, seed: int, compare: bool, uniform: bool = False) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if uniform:
            q, sigma = rng.uniform(1e-4, 0.1), rng.uniform(0.5, 10.0)
        else:
            q, sigma = 10 ** rng.uniform(-4, -1), 10 ** rng.uniform(math.log10(0.5), 1)
        line = {"command": "dpsgd", "q": float(f"{q:.3g}"), "sigma": float(f"{sigma:.3g}"),
                "epochs": rng.randint(1, 200), "delta": 1e-5, "id": i}
        if not compare:
            line["compare"] = False
        out.append(json.dumps(line))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--compare-off", action="store_true")
    parser.add_argument("--workers", type=int, help="DPCALC_BATCH_WORKERS (default: unset)")
    parser.add_argument("--uniform", action="store_true",
                        help="σ and q uniform on their ranges (default: log-uniform)")
    parser.add_argument("--write", help="also keep the generated questions in this file")
    parser.add_argument("--checkout", help="run python -m dpcalc from this checkout")
    args = parser.parse_args()
    exe = ([sys.executable, "-m", "dpcalc"] if args.checkout
           else [str(Path(sys.executable).parent / "dpcalc")])
    text = "\n".join(questions(args.lines, args.seed, not args.compare_off, args.uniform)) + "\n"
    if args.write:
        Path(args.write).write_text(text)
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as handle:
        handle.write(text)
    env = dict(os.environ)
    if args.workers is not None:
        env["DPCALC_BATCH_WORKERS"] = str(args.workers)
    workers = env.get("DPCALC_BATCH_WORKERS") or "one per core"
    try:
        before = os.times()
        start = time.perf_counter()
        proc = subprocess.run([*exe, "batch", handle.name], capture_output=True, env=env,
                              cwd=args.checkout)
        wall = time.perf_counter() - start
        after = os.times()
    finally:
        os.unlink(handle.name)
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system)
    answers = proc.stdout.decode().splitlines()
    errors = sum(1 for a in answers if '"error"' in a[:200] and '"exit_status"' in a)
    law = "uniform" if args.uniform else "log-uniform"
    print(f"{args.lines} lines (seed {args.seed}, {law}, "
          f"compare {'off' if args.compare_off else 'on'}, workers {workers}):"
          f" wall {wall:.1f} s, CPU {cpu:.1f} s, {args.lines / wall:.1f} lines/s, "
          f"exit {proc.returncode}, {len(answers)} answers, {errors} error lines")


if __name__ == "__main__":
    main()
