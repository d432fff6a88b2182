"""CPU time of solving the largest k under optimal composition (issue 9 item 13).

    .venv/bin/python benchmarks/bench_compose_k.py [--src DIR]

Runs each command through ``python -m dpcalc`` and prints its answer and CPU time (user + sys
of the child). ``--src DIR`` puts another checkout's sources first on the path (e.g. an
exported older commit, for before/after numbers).

Measured on the shared 2-core machine under load (2026-11-22, CPU seconds, user + sys;
before = 5fa4f36 exported with ``git archive``, passed as ``--src``):

    case                                       before                        after
    ε = 1,   total ε = 4294967297 -> 9293320153      6.8 s                         0.9 s
    ε = 0.1, total ε = 4294967297 -> 859630116226    killed after 390 s wall       10.1 s
    ε = 1e308, k = 4294967297 (solve δ)              (fast already)                0.3 s

The ε = 0.1 answer needs ~7 exact probes at k ≈ 8.6e11, each summing a ~7e6-term window of
the binomial (O(√k)): the probe count is now small, the per-probe cost is what remains.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys

COMMANDS = [
    "compose --epsilon 1 --delta 0 --total-epsilon 4294967297 --total-delta 1e-5 --value",
    "compose --epsilon 0.1 --delta 0 --total-epsilon 4294967297 --total-delta 1e-5 --value",
    "compose --epsilon 0.5 --delta 1e-9 --total-epsilon 1000 --total-delta 1e-6 --value",
    "compose --total-epsilon 7.288 --k 4294967297 --total-delta 1.351e-05 --epsilon 1e308",
]


def cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--src", help="a checkout whose dpcalc/ to time instead")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = os.path.abspath(args.src)
    for line in COMMANDS:
        before = cpu_children()
        out = subprocess.run([sys.executable, "-m", "dpcalc", *line.split()], env=env,
                             cwd=os.path.abspath(args.src) if args.src else None,
                             capture_output=True, text=True)
        spent = cpu_children() - before
        answer = (out.stdout.strip() or out.stderr.strip()).splitlines()
        print(f"{spent:7.2f} s CPU  exit {out.returncode}  {answer[0] if answer else ''}  "
              f"<- {line}")


if __name__ == "__main__":
    main()
