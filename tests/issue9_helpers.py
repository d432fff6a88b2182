"""Helpers for the issue 9 tests: the installed entry point, and an exact composition oracle."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import mpmath

ERROR = re.compile(r"^dpcalc: error: .+\n$")


def _exe() -> list[str]:
    script = Path(sys.executable).with_name("dpcalc")
    return [str(script)] if script.exists() else [sys.executable, "-m", "dpcalc"]


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(_exe() + list(args), capture_output=True, text=True, check=False,
                          input=stdin)


def value(*args: str) -> float:
    done = cli(*args, "--value")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return float(done.stdout)


def no_nonfinite(text: str) -> None:
    assert not re.search(r"\b(nan|NaN|inf|Infinity)\b", text), text


def kov_delta(eps: float, delta: float, k: int, total_eps: float) -> mpmath.mpf:
    """Exact optimal composition [KOV15, Thm 3.3], mpmath at 60 digits (independent oracle)."""
    with mpmath.workdps(60):
        e, d, big = mpmath.mpf(eps), mpmath.mpf(delta), mpmath.mpf(total_eps)
        p, r = 1 / (1 + mpmath.exp(-e)), 1 / (1 + mpmath.exp(e))  # p and 1 − p
        s = mpmath.mpf(0)
        for ell in range(k + 1):
            term = (p ** (k - ell) * r ** ell
                    - mpmath.exp(big) * p ** ell * r ** (k - ell))
            if term > 0:
                s += mpmath.binomial(k, ell) * term
        return 1 - (1 - d) ** k + (1 - d) ** k * s


