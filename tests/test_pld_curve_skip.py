"""A curve's later direction is not searched where an earlier direction's ε is certified for
it too (pld.eps_search._eps_group_quick): the same certified curve, with fewer root searches."""

from __future__ import annotations

import importlib

import pytest

import dpcalc.pld.eps_search as es
import dpcalc.pld.evaluate as ev

api = importlib.import_module("dpcalc.api.dpsgd")

CASES = [
    dict(batch_size=256, dataset_size=60000, sigma=1.1, epochs=60, delta=1e-5),
    dict(q=0.5, sigma=1.2, epochs=20, delta=1e-5),
    dict(q=0.01, sigma=1.0, epochs=5, delta=1e-8),
    dict(q=0.2, sigma=2.0, epochs=50, delta=1e-10),
]
# the add direction's ε is at most T·(−log(1 − q)) (27.7 and 5.03 here), below the remove
# direction's at every epoch (up to 32.2 and 15.7): it is not composed at all (helper-17)
CAPPED = [
    dict(q=0.5, sigma=0.8, epochs=20, delta=1e-5),
    dict(q=0.01, sigma=0.5, epochs=5, delta=1e-8),
]


def _curve(monkeypatch, kw, skip: bool, reverse: bool = False):
    searches = []
    real = ev._Final.epsilon

    def counted(self, log_delta):
        searches.append(self.pess)
        return real(self, log_delta)

    with monkeypatch.context() as m:
        m.setattr(es, "_CURVE_SKIP", skip)
        m.setattr(ev._Final, "epsilon", counted)
        if reverse:
            directions = es._directions
            m.setattr(es, "_directions", lambda pairs: list(reversed(directions(pairs))))
        r = api.dpsgd(**kw, curve=True, compare=False)
    return [p["epsilon"] for p in r.extra["curve"]], len(searches)


@pytest.mark.parametrize("kw", CASES)
def test_the_curve_is_the_searched_one_with_fewer_searches(monkeypatch, kw):
    skipped, n_skipped = _curve(monkeypatch, kw, True)
    searched, n_searched = _curve(monkeypatch, kw, False)
    assert skipped == searched
    assert n_skipped < n_searched


@pytest.mark.parametrize("kw", CASES[:2])
def test_a_later_direction_that_is_not_dominated_is_searched(monkeypatch, kw):
    # the larger direction second: its own search decides each point, the same maximum
    forward, _ = _curve(monkeypatch, kw, True)
    backward, n_backward = _curve(monkeypatch, kw, True, reverse=True)
    _, n_searched = _curve(monkeypatch, kw, False, reverse=True)
    assert backward == forward
    assert n_backward == n_searched


@pytest.mark.parametrize("kw", CAPPED)
def test_a_direction_capped_below_the_curve_is_not_composed(monkeypatch, kw):
    composed = []
    real = es._compose_points

    def spy(*args, **kwargs):
        composed.append(tuple(kwargs.get("directions") or ()))
        return real(*args, **kwargs)

    searched, _ = _curve(monkeypatch, kw, False)
    monkeypatch.setattr(es, "_compose_points", spy)
    skipped, _ = _curve(monkeypatch, kw, True)
    assert skipped == searched
    assert composed and all("add" not in d for d in composed)
