"""Timings of the PLD accountant (dpcalc.relations.pld) on the performance targets.

Plain script:  python benchmarks/bench_pld.py
Prints, per case, the certified bracket, the in-process time (best of 3, after a warm-up
call in a fresh interpreter the first time) and the whole-process time of
`python -c "<import and one call>"` (best of 3), which includes start-up and imports.
"""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

Q_MNIST = math.nextafter(256 / 60000, 1.0)   # q as a double nudged up (the CLI's rule)
CASES = [
    # name, call, expected window for the upper end
    ("headline q=0.01 σ=4 T=1e4 δ=1e-5",
     "pld.epsilon_bounds(0.01, 4.0, 10000, math.log(1e-5))",
     (0.9463870374438275, 0.9487621114410834)),
    ("1e6 steps q=1e-3 σ=1 δ=1e-6",
     "pld.epsilon_bounds(1e-3, 1.0, 1000000, math.log(1e-6))",
     (6.6848462412904235, 6.707702903135215)),
    ("MNIST q=256/60000 σ=1.1 T=14063 δ=1e-5",
     f"pld.epsilon_bounds({Q_MNIST!r}, 1.1, 14063, math.log(1e-5))",
     (2.3804844884219984, 2.386453976566726)),
    ("q=1 σ=10 T=100 δ=1e-5",
     "pld.epsilon_bounds(1.0, 10.0, 100, math.log(1e-5))",
     (4.3771780956812245, 4.385932451872588)),
    ("δ=1e-300 q=0.01 σ=4 T=1e4",
     "pld.epsilon_bounds(0.01, 4.0, 10000, -300 * math.log(10))", None),
    ("δ(ε=1) q=0.01 σ=4 T=1e4",
     "pld.log_delta_bounds(0.01, 4.0, 10000, 1.0)", None),
    ("certify ε=1 q=0.01 σ=3.9 T=1e4 δ=1e-5",
     "pld.certify_epsilon(0.01, 3.9, 10000, math.log(1e-5), 1.0)", None),
    ("curve 100 epochs q=0.01 σ=4",
     "pld.epsilon_curve(0.01, 4.0, [100 * e for e in range(1, 101)], math.log(1e-5))[-1]",
     None),
    ("σ solve ε=1 q=0.01 T=1e4 δ=1e-5 (bisection on certify_epsilon)",
     "solve_sigma()", (3.811118636598816, 3.820447813549263)),
]

# extreme inputs: each must answer (a finite bracket) or refuse (PLDUncertifiable) in seconds;
# tests/test_relations_pld.py checks the answer-or-refuse part, this measures the seconds
EXTREMES = [
    (1e-6, 0.5, 10_000_000, "math.log(1e-5)"),
    (1e-6, 1.0, 10_000_000, "math.log(1e-5)"),
    (1e-6, 0.5, 1, "math.log(1e-5)"),
    (0.5, 0.5, 10_000_000, "math.log(1e-5)"),
    (0.01, 1e4, 1_000_000, "math.log(1e-5)"),
    (1.0, 1e-3, 1, "math.log(1e-5)"),
    (0.01, 4.0, 10_000, "-300 * math.log(10)"),
]
CASES += [(f"extreme q={q:g} σ={s:g} T={t:g} log δ={ld}",
           f"answer_or_refuse({q!r}, {s!r}, {t!r}, {ld})", None) for q, s, t, ld in EXTREMES]

PRELUDE = """
import math
from dpcalc.relations import pld

def solve_sigma(eps=1.0, q=0.01, steps=10000, log_delta=math.log(1e-5)):
    # smallest σ (to a relative 1e-4) that certify_epsilon certifies; the lead's solver
    # works the same way (bracket + bisection keeping the passing end)
    lo, hi = 1.0, 2.0
    while not pld.certify_epsilon(q, hi, steps, log_delta, eps):
        lo, hi = hi, hi * 2
    while hi - lo > 1e-4 * hi:
        mid = 0.5 * (lo + hi)
        if pld.certify_epsilon(q, mid, steps, log_delta, eps):
            hi = mid
        else:
            lo = mid
    return hi

def answer_or_refuse(q, sigma, steps, log_delta):
    try:
        return pld.epsilon_bounds(q, sigma, steps, log_delta)
    except pld.PLDUncertifiable:
        return "refused (PLDUncertifiable)"
"""


def in_process(call: str) -> tuple[object, float]:
    ns: dict = {}
    exec(PRELUDE, ns)
    best = math.inf
    result = None
    for _ in range(3):
        t0 = time.perf_counter()
        result = eval(call, ns)
        best = min(best, time.perf_counter() - t0)
    return result, best


def whole_process(call: str) -> float:
    code = PRELUDE + f"\nr = {call}\n"
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import numpy"], check=True)
    base = time.perf_counter() - t0
    print(f"python -c 'import numpy': {base:.3f} s")
    for name, call, window in CASES:
        result, t_in = in_process(call)
        t_whole = whole_process(call)
        ok = ""
        if window is not None:
            upper = result[1] if isinstance(result, tuple) else result
            ok = "in window" if window[0] <= upper <= window[1] else "OUT OF WINDOW"
        print(f"{name}\n    result {result}  {ok}\n"
              f"    in-process {t_in:.3f} s   whole process {t_whole:.3f} s")


if __name__ == "__main__":
    main()
