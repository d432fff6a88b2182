"""Point-wise functions evaluated over blocks of points, so that no temporary grows too big.

A mixture's densities, losses and tails build (components × points) arrays: with a thousand
components (``dpsgd --examples-per-user 1000``) and a grid of 10⁵ thresholds such a
temporary is 10⁸ doubles, and a K = 400 question used 4.7 GB, most of its time paging.
Every output entry depends on its own points only, so evaluating block by block gives the
same values (each column's reductions run in the same order whatever the other columns).
"""

from __future__ import annotations

import functools

import numpy as np

#: the largest (components × points) temporary a block may build, in elements (2 MB; a
#: block of a mixture's loss error builds about ten at once)
BLOCK_ELEMENTS = 1 << 18


def _join(parts: list):
    if parts[0] is None:
        return None
    return np.concatenate(parts)


def blockwise(n_points: int):
    """Decorate a method whose first ``n_points`` arguments are point arrays of one length
    (None allowed) and whose outputs are arrays of that length (or a tuple of such arrays
    or None): it is called on blocks of at most BLOCK_ELEMENTS / self._rows points, and the
    outputs are concatenated.  ``self._rows`` is the number of components."""
    def decorate(method):
        @functools.wraps(method)
        def run(self, *args):
            pts = [None if a is None else np.atleast_1d(np.asarray(a, dtype=float))
                   for a in args[:n_points]]
            rest = args[n_points:]
            n = pts[0].size
            step = max(1, BLOCK_ELEMENTS // max(1, self._rows))
            if n <= step:
                return method(self, *pts, *rest)
            parts = [method(self, *(None if p is None else p[i:i + step] for p in pts), *rest)
                     for i in range(0, n, step)]
            if isinstance(parts[0], tuple):
                return tuple(_join([p[k] for p in parts]) for k in range(len(parts[0])))
            return _join(parts)
        return run
    return decorate
