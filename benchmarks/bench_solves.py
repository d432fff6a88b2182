"""Whole-process CPU time (user + sys) of the dpsgd solves of issue 13 (and the slow corners
of issue 14), median of several runs.

    .venv/bin/python benchmarks/bench_solves.py [--runs N] [--only SUBSTRING] [--checkout DIR]

Each row runs the installed ``dpcalc`` next to this interpreter N times (default 5) and
prints the median and min CPU seconds of the child process (resource.getrusage), which a
loaded machine inflates less than wall time. ``--checkout DIR`` runs ``python -m dpcalc``
from another checkout instead (e.g. a ``git worktree`` of main, for before/after numbers).
Goal (issue 13): every issue-13 row <= 0.5 s. The "corner" rows (other runs' slow corners,
one of them ~45 s) are for ``--only corner``; ``--only 13`` or ``--only 14`` leaves them out.
No test asserts a time; speed lives here.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from pathlib import Path

MNIST = ["--batch-size", "256", "--dataset-size", "60000"]
ROWS = [
    ("13: σ, human", ["dpsgd", "--q", "0.01", "--epochs", "100", "--epsilon", "1", "--delta",
                      "1e-5"]),
    ("13: σ, --value", ["dpsgd", "--q", "0.01", "--epochs", "100", "--epsilon", "1",
                        "--delta", "1e-5", "--value"]),
    ("13: σ, MNIST", ["dpsgd", *MNIST, "--epochs", "60", "--epsilon", "3", "--delta", "1e-5"]),
    ("13: epochs, MNIST", ["dpsgd", *MNIST, "--sigma", "1.1", "--epsilon", "8", "--delta",
                           "1e-5"]),
    ("13: --curve 60 epochs", ["dpsgd", *MNIST, "--sigma", "1.1", "--epochs", "60", "--delta",
                               "1e-5", "--curve"]),
    ("13: --curve-accountants all", ["dpsgd", "--q", "0.01", "--sigma", "4", "--epochs", "100",
                                     "--delta", "1e-5", "--curve-accountants", "all"]),
    # item 1's "and the same with --sampling": the MNIST σ and epochs questions per scheme
    ("13: σ, MNIST, K = 2", ["dpsgd", *MNIST, "--epochs", "60", "--epsilon", "3", "--delta",
                             "1e-5", "--examples-per-user", "2"]),
    ("13: σ, MNIST, replace-one", ["dpsgd", *MNIST, "--epochs", "60", "--epsilon", "3",
                                   "--delta", "1e-5", "--relation", "replace-one"]),
    ("13: σ, MNIST, fixed-batch", ["dpsgd", *MNIST, "--epochs", "60", "--epsilon", "3",
                                   "--delta", "1e-5", "--sampling", "fixed-batch"]),
    ("13: epochs, MNIST, K = 2", ["dpsgd", *MNIST, "--sigma", "1.1", "--epsilon", "8",
                                  "--delta", "1e-5", "--examples-per-user", "2"]),
    # q with the epochs given (the steps follow the rate): the rate a 60-epoch run affords
    ("13: q, 60 epochs", ["dpsgd", "--sigma", "1.1", "--epochs", "60", "--epsilon", "3",
                          "--delta", "1e-5"]),
    ("13: q, 60 epochs, K = 2", ["dpsgd", "--sigma", "1.1", "--epochs", "60", "--epsilon",
                                 "3", "--delta", "1e-5", "--examples-per-user", "2"]),
    ("13: q, 60 epochs, fixed-batch", ["dpsgd", "--sigma", "1.1", "--epochs", "60",
                                       "--epsilon", "3", "--delta", "1e-5", "--sampling",
                                       "fixed-batch"]),
    # the largest batch size (the default run solves it since session 39)
    ("13: batch size, 10 epochs", ["dpsgd", "--dataset-size", "60000", "--sigma", "1.1",
                                   "--epochs", "10", "--epsilon", "3", "--delta", "1e-5"]),
    ("14: δ, q 9.955e-05", ["dpsgd", "--q", "9.955e-05", "--sigma", "3.46", "--steps", "443",
                            "--epsilon", "4.162", "--value"]),
    ("14: q solve", ["dpsgd", "--sigma", "0.9268", "--steps", "30706", "--epsilon", "4.336",
                     "--delta", "5.197e-9", "--value"]),
    ("14: δ, tolerance 1e-4", ["dpsgd", "--q", "0.00226", "--sigma", "6.47", "--steps", "6541",
                               "--epsilon", "2.1", "--tolerance", "1e-4", "--value"]),
    ("14: steps, q 2.37e-05", ["dpsgd", "--q", "2.37e-05", "--sigma", "26.31", "--epsilon",
                               "0.789", "--delta", "0.00464", "--solve-for", "steps",
                               "--value"]),
    ("14: epochs, q 1e-8", ["dpsgd", "--q", "1e-8", "--sigma", "14.3", "--epsilon", "0.3314",
                            "--delta", "0.003099", "--value"]),
    # slow corners of the other runs (session 38: 35 s, 15.9 s, 1.94 s, 67 s before)
    ("corner: σ, replace-one, q 1e-5", ["dpsgd", "--q", "1e-5", "--epochs", "10", "--epsilon",
                                        "2", "--delta", "1e-5", "--relation", "replace-one",
                                        "--value"]),
    ("corner: q, K = 3, 9 epochs", ["dpsgd", "--sigma", "0.78", "--epochs", "9", "--epsilon",
                                    "0.629", "--delta", "6.16e-5", "--examples-per-user", "3",
                                    "--value"]),
    ("corner: batch size, K = 2", ["dpsgd", "--dataset-size", "60000", "--sigma", "1.1",
                                   "--epochs", "10", "--epsilon", "3", "--delta", "1e-5",
                                   "--examples-per-user", "2", "--value"]),
    ("corner: ε, K = 200", ["dpsgd", "--batch-size", "256", "--dataset-size", "60000",
                            "--sigma", "1.1", "--epochs", "60", "--delta", "1e-5",
                            "--examples-per-user", "200", "--value"]),
]


def cpu_of(exe: list[str], args: list[str], timeout: float, cwd: str | None = None) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([*exe, *args], check=True, capture_output=True, timeout=timeout, cwd=cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", help="run only rows whose label contains this")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--checkout", help="run python -m dpcalc from this checkout")
    opts = parser.parse_args()
    exe = ([sys.executable, "-m", "dpcalc"] if opts.checkout
           else [str(Path(sys.executable).with_name("dpcalc"))])
    print(f"{'row':32} {'median CPU s':>12} {'min':>7}")
    for label, args in ROWS:
        if opts.only and opts.only not in label:
            continue
        try:
            times = [cpu_of(exe, args, opts.timeout, opts.checkout) for _ in range(opts.runs)]
        except subprocess.TimeoutExpired:
            print(f"{label:32} {'timeout':>12}")
            continue
        except subprocess.CalledProcessError as exc:
            print(f"{label:32} {'exit ' + str(exc.returncode):>12}")
            continue
        print(f"{label:32} {statistics.median(times):12.3f} {min(times):7.3f}", flush=True)


if __name__ == "__main__":
    main()
