"""Timing of the RDP of the subsampled Gaussian over the default order grid.

Plain script:  python benchmarks/bench_rdp.py
(Moved here from tests/test_relations_rdp.py, which asserted < 0.2 s: speed is measured in
benchmarks, never asserted in tests.)
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpcalc.relations import rdp  # noqa: E402


def main() -> None:
    orders = rdp.DEFAULT_ORDERS
    best = math.inf
    for i in range(3):
        t0 = time.perf_counter()
        rdp.rdp_subsampled_gaussian(orders, 0.01, 1.0 + 1e-3 * i + 1e-9)  # distinct σ: no cache
        best = min(best, time.perf_counter() - t0)
    print(f"rdp_subsampled_gaussian, {len(orders)} default orders, q=0.01 σ≈1: "
          f"best of 3 {best:.3f} s (target < 0.2 s)")


if __name__ == "__main__":
    main()
