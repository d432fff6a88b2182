"""Shared test set-up: hypothesis profiles and the --run-slow switch."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, max_examples=60, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False, help="run slow tests")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def splits(monkeypatch):
    """Records what pld.split.split_base returned for each engine built (pessimistic?, a
    split?): tests/test_pld_two_grid.py and test_pld_regrid.py."""
    from dpcalc.pld import split

    seen = []
    original = split.split_base

    def recording(eng, base):
        out = original(eng, base)
        seen.append((eng.pess, isinstance(out, split._Split)))
        return out

    monkeypatch.setattr(split, "split_base", recording)
    return seen
