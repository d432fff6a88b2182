"""Whole-process race: dpcalc vs Google's dp_accounting on the DP-SGD questions of issue 13.

    python benchmarks/bench_vs_dp_accounting.py [--python PATH_WITH_DP_ACCOUNTING] [--runs N]
        [--only SUBSTRING]

dp_accounting is an optional benchmark dependency, never a runtime one: install it in a
separate venv (``python -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install dp-accounting``)
and pass that interpreter with --python. Each row is a fresh process on each side, the same
question: the headline ε (q = 0.01, σ = 4, 10000 steps, δ = 1e-5), the σ solves, the largest
epochs and the 60-epoch curve of the issue's table. dp_accounting's PLD accountant runs at
value discretisation 1e-4, which gives a pessimistic ε within about 1e-3 relative of the
truth, the width of dpcalc's default certified bracket (--tolerance 1e-3); its solves are
its own ``calibrate_dp_mechanism`` (Brent's method on fresh accountants), the curve one
accountant composed epoch by epoch. Printed: the median CPU time (user + sys) of each side's
process and its answer. dpcalc's rows print the solved value only (``--value``, or the
curve's JSON length for the curve).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from pathlib import Path

_SETUP = """
import math
import dp_accounting
from dp_accounting.pld import pld_privacy_accountant as p
def fresh():
    return p.PLDAccountant(value_discretization_interval=1e-4)
def run(q, sigma, steps):
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
"""

_SIGMA = _SETUP + """
print(dp_accounting.calibrate_dp_mechanism(
    fresh, lambda s: run({q}, s, {steps}), {eps}, 1e-5,
    dp_accounting.ExplicitBracketInterval(0.3, 20.0), tol=1e-4))
"""

MNIST_Q = 256 / 60000
ROWS = [
    ("ε headline", ["--q", "0.01", "--sigma", "4", "--epochs", "100", "--delta", "1e-5",
                    "--value"],
     _SETUP + "a = fresh(); a.compose(run(0.01, 4.0, 10000)); print(a.get_epsilon(1e-5))"),
    ("σ, q 0.01, 100 epochs, ε 1", ["--q", "0.01", "--epochs", "100", "--epsilon", "1",
                                    "--delta", "1e-5", "--value"],
     _SIGMA.format(q=0.01, steps=10000, eps=1.0)),
    ("σ, MNIST 60 epochs, ε 3", ["--batch-size", "256", "--dataset-size", "60000", "--epochs",
                                 "60", "--epsilon", "3", "--delta", "1e-5", "--value"],
     _SIGMA.format(q=MNIST_Q, steps=14063, eps=3.0)),
    ("epochs, MNIST σ 1.1, ε 8", ["--batch-size", "256", "--dataset-size", "60000", "--sigma",
                                  "1.1", "--epsilon", "8", "--delta", "1e-5", "--value"],
     _SETUP + f"""
q = {MNIST_Q!r}
print(dp_accounting.calibrate_dp_mechanism(
    fresh, lambda e: run(q, 1.1, math.ceil(e / q)), 8.0, 1e-5,
    dp_accounting.ExplicitBracketInterval(1, 2000), discrete=True))
"""),
    ("--curve, MNIST 60 epochs", ["--batch-size", "256", "--dataset-size", "60000", "--sigma",
                                  "1.1", "--epochs", "60", "--delta", "1e-5", "--curve",
                                  "--json"],
     _SETUP + f"""
q = {MNIST_Q!r}
a, done, out = fresh(), 0, []
for e in range(1, 61):
    steps = math.ceil(e / q)
    a.compose(run(q, 1.1, steps - done))
    done = steps
    out.append(a.get_epsilon(1e-5))
print(len(out), out[-1])
"""),
]


def cpu_run(cmd: list[str], runs: int) -> tuple[float, str]:
    """Median CPU seconds (user + sys) of ``cmd`` as a child process, and its last output."""
    times, out = [], ""
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times), out


def _short(out: str) -> str:
    return out if len(out) < 40 else f"{len(out)} characters of JSON"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", help="an interpreter with dp_accounting installed")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", default="")
    opts = parser.parse_args()
    dpcalc = str(Path(sys.executable).with_name("dpcalc"))
    print(f"{'row':28} {'dpcalc CPU s':>12} {'dp_accounting':>14}  answers")
    for label, args, script in ROWS:
        if opts.only not in label:
            continue
        t, out = cpu_run([dpcalc, "dpsgd", *args], opts.runs)
        if opts.python:
            t2, out2 = cpu_run([opts.python, "-c", script], opts.runs)
            other = f"{t2:14.3f}"
        else:
            other, out2 = f"{'skipped':>14}", "(pass --python)"
        print(f"{label:28} {t:12.3f} {other}  {_short(out)} | {out2}")


if __name__ == "__main__":
    main()
