"""Shortcuts beside the one-step tails and the edge offset that must give the doubles of the
long way: the subsampled Gaussian's tails_defined from y alone (also at q = 1),
_bucket_mean_loss's shifted copies for its gathers, _Final's arrays kept where every mass is
positive."""

from __future__ import annotations

import math

import numpy as np

from dpcalc.mechanisms import subsampled_gaussian as sg
from dpcalc.pld import discretise

PAIRS = ((0.01, 1.1), (0.3, 0.7), (1e-5, 20.0), (0.9, 3.0), (1.0, 2.0))


def _bits(a):
    return np.asarray(a, dtype=float).view(np.int64)


def _same(a, b) -> bool:
    return np.shape(a) == np.shape(b) and np.array_equal(_bits(a), _bits(b))


def test_tails_defined_reads_y_alone_and_answers_at_q_one():
    rng = np.random.default_rng(23)
    for q, sigma in PAIRS:
        pair = sg.SubsampledGaussian(q, sigma)
        edge = math.log1p(-q) if q < 1.0 else 0.0
        for direction, e in (("remove", edge), ("add", -edge)):
            near = e + np.array([-1e-9, -1e-15, -1e-17, 0.0, 1e-17, 1e-16, 1e-15, 1e-12])
            for pts in [near, e + rng.normal(0.0, 2.0, 50), near[3:4], np.array(e)]:
                with np.errstate(all="ignore"):
                    assert pair.tails_defined(pts, direction) == (
                        not sg._x_of_loss(-pts if direction == "add" else pts, q, sigma)[2]
                        .any()) == (pair.tails(pts, direction) is not None)


def _mean_loss_long(ell, d, n_win):
    """_bucket_mean_loss as it was written before (index gathers)."""
    with np.errstate(all="ignore"):
        a = np.exp(d["la"])
        lam = np.where(np.isfinite(d["la"]), d["la"] - d["lb"], 0.0)
    n, f, g, fb, dn = d["n"], d["f"], d["g"], d["fb"], d["dn"]
    up = np.minimum(np.arange(n) + 1, n - 1)
    own = np.maximum(0.0, 1.0 - d["fprev"] - np.concatenate((g[1:], [0.0])))
    placed = np.where(fb, 0.0, own * a) + f * a[up] + g * a[dn]
    below = np.concatenate((np.where(fb, own * a, 0.0)[1:], [0.0]))
    before = np.nan_to_num(a * lam)
    after = np.nan_to_num((placed + below) * ell)
    return (before - after).reshape(-1, n_win).sum(axis=1)


def test_bucket_mean_loss_shifts_are_the_gathers():
    """On the edge offset's own windows (every pair, both directions, a few spacings)."""
    seen = []
    plan = discretise._bucket_plan

    def keep(ell, *args):
        d = plan(ell, *args)
        seen.append((ell.copy(), d))
        return d

    discretise._bucket_plan = keep
    try:
        for q, sigma in PAIRS[:4]:
            for h in (1e-3, 0.02, 0.3):
                for direction in ("remove", "add"):
                    discretise._edge_offset(sg.SubsampledGaussian(q, sigma), direction, h)
    finally:
        discretise._bucket_plan = plan
    assert len(seen) >= 20
    for ell, d in seen:
        assert _same(discretise._bucket_mean_loss(ell, d, 40), _mean_loss_long(ell, d, 40))


def test_final_keeps_its_arrays_where_every_mass_is_positive():
    from dpcalc.pld.evaluate import _Final
    from dpcalc.pld.pmf import _Dist

    rng = np.random.default_rng(24)
    for zeros in (False, True):
        t = rng.uniform(0.0, 1.0, 500)
        if zeros:
            t[[0, 17, 300]] = 0.0
        fin = _Final(_Dist(-250, 0, t / t.sum(), 0.0, 1e-12, 1e-14), 0.01, 2.0, 10, 0.1,
                     -math.inf, True, off=0.003)
        ok = np.isfinite(fin.lm)
        assert _same(fin.ell_nz, fin.ell[ok]) and _same(fin.lm_nz, fin.lm[ok])
        assert (fin.ell_nz is fin.ell) == (not zeros)
