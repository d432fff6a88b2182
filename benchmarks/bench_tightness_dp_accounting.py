"""Tightness beside Google's dp_accounting: dpcalc's certified ε brackets against dp_accounting's
pessimistic PLD ε on random DP-SGD points of the usual region.

    .venv/bin/python benchmarks/bench_tightness_dp_accounting.py --python REFVENV/bin/python
        [--n 40] [--seed 77] [--discretisation 1e-5] [--max-steps 100000]

dp_accounting is a benchmark dependency only (``python -m venv /tmp/refvenv &&
/tmp/refvenv/bin/pip install dp-accounting``); it runs in that interpreter, one process for
all points.  The points: q log-uniform in [1e-4, 0.1], σ in [0.5, 10], epochs uniform in
[1, 100] (steps ⌈epochs/q⌉, at most --max-steps: dp_accounting's fine grids are slow on long
runs), δ log-uniform in [1e-10, 1e-5].  dp_accounting's connect-the-dots PLD at a fine value
discretisation is an upper bound a little above the true ε, so for each point it prints
dpcalc's bracket, dp_accounting's ε and upper / dp_accounting − 1, then a summary:

* the largest such excess (dpcalc's upper end should lie within its tolerance, 1e-3, of
  the truth, so within about that of a finely discretised pessimistic reference);
* the points where dpcalc's lower end lies above dp_accounting's pessimistic ε, which would
  make one of the two unsound (none expected).

Session 43 (dp_accounting 0.6, discretisation 1e-5, 40 points): the largest excess
+2.5e-4, 18 points below dp_accounting's, no lower end above it.  No test runs this: the
reference lives outside dpcalc's dependencies.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys

_REFERENCE = """
import json, sys
import dp_accounting
from dp_accounting.pld import pld_privacy_accountant
points, interval = json.load(sys.stdin)
out = []
for q, sigma, steps, delta in points:
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
    acc.compose(event, steps)
    out.append(acc.get_epsilon(delta))
print(json.dumps(out))
"""


def sample(n: int, seed: int, max_steps: int) -> list[tuple[float, float, int, float]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        q = float(f"{10 ** rng.uniform(-4, -1):.3g}")
        sigma = float(f"{10 ** rng.uniform(math.log10(0.5), 1):.3g}")
        steps = min(max_steps, max(1, math.ceil(rng.randint(1, 100) / q)))
        delta = float(f"{10 ** rng.uniform(-10, -5):.3g}")
        out.append((q, sigma, steps, delta))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", required=True, help="an interpreter with dp_accounting")
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=77)
    parser.add_argument("--discretisation", type=float, default=1e-5)
    parser.add_argument("--max-steps", type=int, default=100_000)
    args = parser.parse_args()

    from dpcalc.relations import pld

    points = sample(args.n, args.seed, args.max_steps)
    ours = [pld.epsilon_bounds(q, s, t, math.log(d), 1e-3) for q, s, t, d in points]
    done = subprocess.run([args.python, "-c", _REFERENCE], capture_output=True, text=True,
                          input=json.dumps([points, args.discretisation]), check=False)
    if done.returncode != 0:
        sys.exit(f"the reference failed: {done.stderr.strip()[-300:]}")
    reference = json.loads(done.stdout)
    excess, above = [], []
    for p, (lower, upper), ref in zip(points, ours, reference, strict=True):
        excess.append(upper / ref - 1.0)
        if lower > ref:
            above.append(p)
        print(f"q {p[0]:<8g} σ {p[1]:<6g} steps {p[2]:<7d} δ {p[3]:<9.3g} "
              f"dpcalc [{lower:.6g}, {upper:.6g}]  dp_accounting {ref:.6g}  "
              f"{excess[-1]:+.2e}")
    print(f"\n{len(points)} points: largest excess {max(excess):+.2e}, "
          f"{sum(e < 0 for e in excess)} below dp_accounting's, "
          f"{len(above)} lower ends above it {above if above else ''}")


if __name__ == "__main__":
    main()
