"""The largest entries of a non-negative vector, for the engine's exact shifted copies
(pmf._conv; moved here from pmf, which is at its size limit)."""

from __future__ import annotations

import numpy as np


def _heavy(t: np.ndarray, k: int = 16, total: float | None = None,
           top: float | None = None):
    """Indices of the k largest entries if they carry at least half of the mass (``total``
    and ``top``: t's sum and maximum when the caller has them; t ≥ 0)."""
    if t.size <= 8 * k:
        return None
    total = float(t.sum()) if total is None else total
    top = float(t.max()) if top is None else top
    if top * k < 0.5 * total:
        return None        # k entries of at most the maximum cannot carry half: no selection
    # the k largest lie among the entries ≥ thr once there are at least k of them (at most
    # total/thr): partition those alone, not the whole vector, lowering thr until k are in
    # (a spike on a vector of zeros: argpartition over 2.6e5 entries, 3/4 of them tied at
    # 0, took 74 ms, a fifth of an evaluation at q = 1.8e-7)
    thr = total / (16.0 * k)
    cand = np.flatnonzero(t >= thr)
    if cand.size < k:
        nz = np.flatnonzero(t)
        if nz.size < k:
            # fewer than k nonzero entries: they and any k − nnz zeros (whose shifted copies
            # add nothing) are the k largest; helper-35
            zeros = np.flatnonzero(t == 0.0)[:k - nz.size]
            idx = np.concatenate((nz, zeros))
            return idx if float(t[idx].sum()) >= 0.5 * total else None
        while cand.size < k:
            thr *= 1e-4
            cand = nz[t[nz] >= thr] if thr > 0.0 else nz
    idx = cand[np.argpartition(t[cand], cand.size - k)[cand.size - k:]]
    return idx if float(t[idx].sum()) >= 0.5 * total else None
