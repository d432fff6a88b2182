"""steps_for keeps its last (epochs, q) pairs: the cached count is the exact ⌈epochs/q⌉ of the
long way, for floats, ints and given inputs, and errors are raised every time."""

from __future__ import annotations

import importlib
import math
import random
from decimal import Decimal
from fractions import Fraction

import pytest

from dpcalc.errors import DomainError
from dpcalc.params import Given

dpsgd = importlib.import_module("dpcalc.api.dpsgd")  # the module (the package exports the function)


def test_cached_steps_are_the_exact_ceiling():
    rng = random.Random(4)
    for _ in range(2000):
        q = float(f"{10 ** rng.uniform(-8, 0):.3g}")
        epochs = rng.choice([rng.randint(1, 300), float(rng.randint(1, 300)),
                             rng.uniform(0.01, 50.0), 1e-12])
        want = max(1, math.ceil(Fraction(epochs) / Fraction(q)))
        if want > dpsgd.MAX_STEPS:
            continue
        for _ in range(2):                       # a miss, then a hit
            assert dpsgd.steps_for(epochs, q) == want
        assert dpsgd.steps_for(epochs, Given(q, Decimal(repr(q)))) == want
    assert dpsgd.steps_for(Decimal("3"), Decimal("0.7")) == 5       # the long way


def test_errors_are_raised_every_time():
    for _ in range(2):
        with pytest.raises(DomainError):
            dpsgd.steps_for(200.0, 1e-12)
        with pytest.raises(ValueError):
            dpsgd.steps_for(math.nan, 0.1)
