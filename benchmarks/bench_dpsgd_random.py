"""Whole-process CPU time of random dpsgd questions (issue 14): the slowest ten.

    .venv/bin/python benchmarks/bench_dpsgd_random.py [--n 300] [--seed 14] [--start 0]
        [--count N] [--timeout 60] [--checkout DIR] [--fixed]

A fixed-seed sample over the documented ranges: q ∈ [1e-8, 1], σ ∈ [0.3, 1e4], steps ∈
[1, 1e7], δ ∈ [1e-300, 0.1], ε ∈ [0.01, 50] (all log-uniform), the unknown one of ε, δ, σ, q,
steps, epochs.  Each question runs the installed ``dpcalc ... --value`` once; its CPU time
(user + sys of the child, resource.getrusage) is printed as it finishes, then the slowest
ten.  ``--start``/``--count`` run a slice of the same sample (the whole run is long on a
loaded machine).  Infeasible solves exit 1 (no solution) and count like any other answer.
Goal (issue 14): the slowest ≤ 2 s CPU.  No test asserts a time; speed lives here.
``--fixed`` runs the issue's named commands A–E instead (goal: each ≤ 1 s CPU, with the same
or a tighter value than the issue's; the values are checked in tests/test_issue14_values.py).
"""

from __future__ import annotations

import argparse
import math
import random
import resource
import subprocess
import sys
from pathlib import Path

UNKNOWNS = ("epsilon", "delta", "sigma", "q", "steps", "epochs")

# issue 14's named commands: (label, arguments, the issue's value)
FIXED = [
    ("A", "dpsgd --q 9.955e-05 --sigma 3.46 --steps 443 --epsilon 4.162 --value",
     "δ ≤ 1.59e-433"),
    ("B", "dpsgd --sigma 0.9268 --steps 30706 --epsilon 4.336 --delta 5.197e-9 --value",
     "q = 0.00281"),
    ("C", "dpsgd --q 0.00226 --sigma 6.47 --steps 6541 --epsilon 2.1 --tolerance 1e-4 "
          "--value", "δ ≤ 2.28e-504"),
    ("D", "dpsgd --q 2.37e-05 --sigma 26.31 --epsilon 0.789 --delta 0.00464 "
          "--solve-for steps --value", "did not finish"),
    ("E", "dpsgd --q 1e-8 --sigma 14.3 --epsilon 0.3314 --delta 0.003099 --value",
     "did not finish (epochs)"),
]


def _logu(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def question(rng: random.Random) -> list[str]:
    """One random dpsgd command line (without the program name)."""
    unknown = rng.choice(UNKNOWNS)
    q = f"{_logu(rng, 1e-8, 1.0):.4g}"
    sigma = f"{_logu(rng, 0.3, 1e4):.4g}"
    steps = str(max(1, round(_logu(rng, 1.0, 1e7))))
    delta = f"{_logu(rng, 1e-300, 0.1):.4g}"
    eps = f"{_logu(rng, 0.01, 50.0):.4g}"
    args = ["dpsgd"]
    if unknown != "q":
        args += ["--q", q]
    if unknown != "sigma":
        args += ["--sigma", sigma]
    if unknown not in ("steps", "epochs"):
        args += ["--steps", steps]
    if unknown != "epsilon":
        args += ["--epsilon", eps]
    if unknown != "delta":
        args += ["--delta", delta]
    if unknown == "steps":
        args += ["--solve-for", "steps"]
    return [*args, "--value"]


def sample(n: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [question(rng) for _ in range(n)]


def run_one(exe: list[str], args: list[str], timeout: float, cwd: str | None):
    """(CPU seconds of the child, exit code or 'timeout')."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        proc = subprocess.run([*exe, *args], capture_output=True, timeout=timeout, cwd=cwd)
        code: object = proc.returncode
    except subprocess.TimeoutExpired:
        code = "timeout"     # the killed child is reaped by subprocess: its time counts
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, code


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--count", type=int)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--checkout", help="run python -m dpcalc from this checkout")
    parser.add_argument("--fixed", action="store_true", help="run issue 14's commands A–E")
    opts = parser.parse_args()
    exe = ([sys.executable, "-m", "dpcalc"] if opts.checkout
           else [str(Path(sys.executable).with_name("dpcalc"))])
    if opts.fixed:
        for label, line, before in FIXED:
            before_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
            proc = subprocess.run([*exe, *line.split()], capture_output=True, text=True,
                                  timeout=opts.timeout, cwd=opts.checkout)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = ((after.ru_utime - before_cpu.ru_utime)
                   + (after.ru_stime - before_cpu.ru_stime))
            print(f"{label} {cpu:6.2f} s  {proc.stdout.strip():>26}  (issue: {before})  "
                  f"{line}", flush=True)
        return
    qs = sample(opts.n, opts.seed)
    end = len(qs) if opts.count is None else min(len(qs), opts.start + opts.count)
    rows = []
    for i in range(opts.start, end):
        cpu, code = run_one(exe, qs[i], opts.timeout, opts.checkout)
        rows.append((cpu, i, code))
        print(f"{i:4d} {cpu:7.2f} s  exit {code!s:7}  {' '.join(qs[i])}", flush=True)
    rows.sort(reverse=True)
    print(f"\nslowest ten of {len(rows)} (seed {opts.seed}):")
    for cpu, i, code in rows[:10]:
        print(f"{i:4d} {cpu:7.2f} s  exit {code!s:7}  {' '.join(qs[i])}")


if __name__ == "__main__":
    main()
