"""Issue 9 item 13: solving the largest k for optimal composition answers in seconds, exactly.

The relation's own search (``optimal_largest_k``) and the solver's guess path must return the
same k as the plain doubling + bisection on the certified predicate, and the CLI's answer for a
huge total ε is the passing side of that predicate (k passes, k + 1 fails).
"""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from dpcalc.relations import compose as rel
from dpcalc.relations.compose_count import optimal_largest_k
from dpcalc.solve import largest_passing_int

CASES = [  # (ε, δ, total ε, total δ)
    (1.0, 0.0, 10.0, 1e-5),
    (0.5, 0.0, 3.0, 1e-6),
    (0.1, 0.0, 1.0, 1e-5),
    (0.1, 1e-8, 2.5, 1e-5),
    (1.0, 1e-7, 50.0, 1e-4),
    (2.0, 0.0, 100.0, 1e-9),
    (0.3, 1e-9, 40.0, 1e-6),
    (0.05, 0.0, 20.0, 1e-3),
    (1.0, 0.0, 3000.0, 1e-5),
]


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def _slow(eps: float, delta: float, total_eps: float, total_delta: float) -> int:
    """The path before the fix: doubling from 1, then bisection, on the certified predicate."""
    def holds(n: int) -> bool:
        return rel.optimal_log_delta(eps, _log(delta), n, total_eps) <= _log(total_delta)
    return largest_passing_int(holds, low=1, name="k", high=10**12)


@pytest.mark.parametrize("case", CASES)
def test_relation_search_matches_bisection(case):
    eps, delta, total_eps, total_delta = case
    fast = optimal_largest_k(eps, _log(delta), total_eps, _log(total_delta), 10**12)
    assert fast == _slow(*case)


@pytest.mark.parametrize("case", CASES)
def test_cli_value_matches_bisection(case):
    from dpcalc.api.compose import compose

    eps, delta, total_eps, total_delta = case
    result = compose(epsilon=eps, delta=delta, total_epsilon=total_eps, total_delta=total_delta)
    assert int(result.value) == _slow(*case)


@pytest.mark.parametrize("answer", [1, 2, 7, 100, 12345, 10**9 + 3])
@pytest.mark.parametrize("offset", [None, -50, -1, 0, 1, 2, 1000, 10**6])
def test_int_solver_guess_is_exact(answer, offset):
    calls = []

    def holds(n: int) -> bool:
        calls.append(n)
        return n <= answer

    guess = None if offset is None else max(1, answer + offset)
    assert largest_passing_int(holds, low=1, name="n", high=10**12, guess=guess) == answer
    if offset == 0 and answer > 1:
        assert len(set(calls)) == 2  # the guess and the next integer (monotone: low passes)


def test_int_solver_guess_at_cap():
    assert largest_passing_int(lambda n: True, low=1, name="n", high=50, guess=50) == 50


def test_relation_none_and_all():
    # not even one mechanism fits: 0; every k up to the cap fits: the cap
    assert optimal_largest_k(1.0, math.log(1e-3), 1.0, math.log(1e-5), 10**6) == 0
    assert optimal_largest_k(1.0, -math.inf, 10.0**7, -1.0, 1000) == 1000


@pytest.mark.parametrize("eps", ["1", "0.1"])
def test_cli_huge_total_epsilon_answers_passing_side(eps):
    argv = [sys.executable, "-m", "dpcalc", "compose", "--epsilon", eps, "--delta", "0",
            "--total-epsilon", "4294967297", "--total-delta", "1e-5", "--value"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    k = int(out.stdout.strip())
    log_target = math.log(1e-5)
    assert rel.optimal_log_delta(float(eps), -math.inf, k, 4294967297.0) <= log_target
    assert rel.optimal_log_delta(float(eps), -math.inf, k + 1, 4294967297.0) > log_target
