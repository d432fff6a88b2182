"""Shortcuts in the one-step PLD's construction that must give the doubles of the long way:
the subsampled Gaussian's tails_defined (whether tails answers, without the tails), _level0's
one tails call for atoms and boundaries and its check-only boundaries, the pointwise interval
masses, the asymptotic series skipped where every large argument is infinite, the untilted
median computed only where it is read."""

from __future__ import annotations

import math
from dataclasses import fields

import numpy as np

from dpcalc.mechanisms import _normal
from dpcalc.mechanisms.subsampled_gaussian import SubsampledGaussian
from dpcalc.pld import discretise, plan
from dpcalc.pld._core import _LOG_HALF, _LOG_U4, _log_sub
from dpcalc.pld.pair import Tails

PAIRS = ((0.01, 1.1), (0.3, 0.7), (1e-5, 20.0), (0.9, 3.0))


def _bits(a):
    return np.asarray(a, dtype=float).view(np.int64)


def _same(a, b) -> bool:
    return np.shape(a) == np.shape(b) and np.array_equal(_bits(a), _bits(b))


def _same_tails(a: Tails | None, b: Tails | None) -> bool:
    if a is None or b is None:
        return a is b
    return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in fields(Tails))


class _Plain:
    """A subsampled Gaussian without tails_defined: _level0's one-call-per-set path."""

    def __init__(self, pair):
        self._pair = pair
        self.symmetric = pair.symmetric

    def __getattr__(self, name):
        if name == "tails_defined":
            raise AttributeError(name)
        return getattr(self._pair, name)


def test_tails_defined_is_whether_tails_answers():
    for q, sigma in PAIRS:
        pair = SubsampledGaussian(q, sigma)
        edge = math.log1p(-q)
        for direction, e in (("remove", edge), ("add", -edge)):
            near = e + np.array([-1e-9, -1e-15, -1e-17, 0.0, 1e-17, 1e-16, 1e-15, 1e-12])
            far = e + np.linspace(-2.0, 2.0, 41)
            for pts in [near, far, np.concatenate((far, near[3:4]))] + [p[None] for p in near]:
                assert pair.tails_defined(pts, direction) == (
                    pair.tails(pts, direction) is not None)


def test_level0_one_call_and_check_only_boundaries_place_the_same_grid():
    for q, sigma in PAIRS:
        pair = SubsampledGaussian(q, sigma)
        for direction in ("remove", "add"):
            lo, hi = pair.support(direction, -25.0)
            edge = pair.loss_bounds(direction)[0 if direction == "remove" else 1]
            h = (hi - lo) / 700
            # offset on the edge: the first grid asked is ill-conditioned there and nudged
            for offset in (0.0, edge):
                args = (direction, h, lo, hi, (3.0, 3.0))
                kw = dict(log_eta_top=-25.0, offset=offset)
                one = plan._level0(pair, *args, **kw)
                two = plan._level0(_Plain(pair), *args, **kw)
                check = plan._level0(pair, *args, half=False, **kw)
                assert check[7] is None
                for a, b, c in zip(one, two, check, strict=True):
                    if isinstance(a, Tails):
                        assert _same_tails(a, b)
                        assert c is None or _same_tails(a, c)
                    elif isinstance(a, np.ndarray):
                        assert _same(a, b) and _same(a, c)
                    else:
                        assert a == b == c
                # (an array two fields share stays shared, as the pair returned it)
                t_full, t_half = one[6], one[7]
                assert (t_full.ePlo is t_full.ePup) == (t_half.ePlo is t_half.ePup)


def _interval_mass_by_halves(lup_l, lup_r, llo_l, llo_r, eup_l, eup_r, elo_l, elo_r,
                             log_err=False):
    """The former form: each half of the points on copies of its selection."""
    args = np.broadcast_arrays(lup_l, lup_r, llo_l, llo_r, eup_l, eup_r, elo_l, elo_r)
    lup_l, lup_r, llo_l, llo_r, eup_l, eup_r, elo_l, elo_r = args
    m, err = np.empty(lup_l.shape), np.empty(lup_l.shape)
    up = lup_l <= _LOG_HALF
    with np.errstate(divide="ignore"):
        for sel, (l0, l1, e0, e1) in ((up, (lup_l, lup_r, eup_l, eup_r)),
                                      (~up, (llo_r, llo_l, elo_r, elo_l))):
            l0, l1, e0, e1 = (v[sel] for v in (l0, l1, e0, e1))
            m[sel] = _log_sub(l0, l1)
            err[sel] = (np.logaddexp(e0, e1) if log_err else
                        np.logaddexp(np.log(e0) + l0, np.log(e1) + l1))
    return m, np.logaddexp(err, _LOG_U4 + m)


def test_interval_mass_is_the_halves_pointwise():
    rng = np.random.default_rng(11)
    for shape in ((0,), (1,), (257,), (8, 33)):
        lup = np.sort(-rng.exponential(2.0, shape), axis=-1)[..., ::-1]
        llo = np.log(-np.expm1(lup))
        for v in (lup, llo):
            v.flat[:: 7] = -np.inf
        lup.flat[5:6] = np.nan
        e = rng.uniform(0.0, 1e-12, shape)
        e.flat[:: 5] = 0.0
        cases = [(lup, lup * 1.01, llo, llo * 0.99, e, e * 2, e * 3, e)]
        if len(shape) == 1 and shape[0] > 1:           # a first threshold broadcast
            cases.append((lup[:1], lup, llo[:1], llo, e[:1], e, e[:1], e))
        for args in cases:
            for log_err in (False, True):
                with np.errstate(all="ignore"):
                    got = discretise._interval_mass(*args, log_err=log_err)
                    ref = _interval_mass_by_halves(*args, log_err=log_err)
                assert all(_same(a, b) for a, b in zip(got, ref, strict=True))


def test_log_erfc_of_infinite_arguments_is_the_series_value():
    y = np.array([np.inf, 3.0, np.inf, 0.5])
    assert _same(_normal._log_erfc(y), [_normal._log_erfc(np.array([v]))[0] for v in y])
    assert _same(_normal._log_erfc(np.array([np.inf, np.inf])), [-np.inf, -np.inf])
    mixed = np.array([np.inf, 27.0, 40.0])        # a finite large one: the series for all
    assert _same(_normal._log_erfc(mixed)[1:], _normal._log_erfc(mixed[1:]))
    assert _normal._log_erfc(mixed)[0] == -np.inf
    # libm erfc point by point, whatever the array's layout
    grid = np.linspace(0.0, 20.0, 64).reshape(8, 8)[:, ::3]
    with np.errstate(divide="ignore"):
        want = np.log(np.array([[math.erfc(v) for v in row] for row in grid]))
    assert _same(_normal._log_erfc(grid), want)


def test_untilted_median_only_where_no_tilt_gives_the_quantiles():
    pair = SubsampledGaussian(0.01, 1.1)
    for direction in ("remove", "add"):
        lower, upper, lo_deep = plan._tilted_quantiles(pair, direction, (0.0, 0.0), 1e-30,
                                                       -25.0)
        loss, cdf = plan._tilted_cdf(pair, direction, 0.0, -25.0)
        median = float(loss[min(np.searchsorted(cdf, 0.5), cdf.size - 1)])
        assert lower == upper == [median] * 5 and lo_deep == -math.inf
        # a zero tilt beside a positive one changes nothing
        assert plan._tilted_quantiles(pair, direction, (0.0, 4.0), 1e-30, -25.0) == \
            plan._tilted_quantiles(pair, direction, (4.0,), 1e-30, -25.0)
