"""The ``dpcalc`` executable and ``python -m dpcalc``: import the CLI, run it, exit.

Kept apart from ``dpcalc.cli`` so that a Ctrl-C while the CLI is still being imported (typer,
rich: the first ~0.1 s) ends the same way as one during the run: one line, exit 130, no
traceback. ``dpcalc/__init__`` imports almost nothing, so the window left is Python's own
start-up.
"""

from __future__ import annotations

import os
import sys

INTERRUPTED = 130  # ExitStatus.INTERRUPTED, without importing it


def run() -> None:
    """Entry point: ``sys.exit`` with the status of ``dpcalc.cli.main``."""
    # dpcalc does no linear algebra (its FFTs are numpy's pocketfft, not BLAS); OpenBLAS
    # would start a thread per core at ``import numpy`` and spin them, which costs about
    # 0.1 s of CPU per process on a 2-core machine. A user's own setting is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.meta_path.insert(0, _KeepHeapWithNumpy())
    try:
        from dpcalc.cli import main

        status = main()
    except KeyboardInterrupt:
        try:
            if sys.stderr is not None:
                sys.stderr.write("dpcalc: error: interrupted\n")
                sys.stderr.flush()
        except (OSError, ValueError):
            pass
        status = INTERRUPTED
    sys.exit(status)


# glibc mallopt parameters (malloc.h): M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD.
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3


class _KeepHeapWithNumpy:
    """A meta-path finder that finds nothing: the first time ``numpy`` is looked up it runs
    ``_keep_heap`` (only the commands that load numpy allocate large arrays; the others are
    spared the ctypes import, ~5 ms). It stays in place as a no-op: removing a finder while
    the import system walks ``sys.meta_path`` could skip the next one."""

    done = False

    def find_spec(self, name, path=None, target=None):
        if name == "numpy" and not self.done:
            self.done = True
            _keep_heap()
        return None


def _keep_heap() -> None:
    """Let glibc's malloc keep freed memory for reuse instead of returning it to the kernel.

    The PLD engine allocates and frees arrays of 0.1-30 MB hundreds of times per question;
    by default glibc maps each one afresh (mmap above 128 kB), so every allocation pays page
    faults (about 0.1 s of system time on a σ solve). A short-lived process loses nothing by
    keeping them. Only the executable does this (never ``import dpcalc``), only on Linux
    with glibc, and never when the user has tuned malloc (``MALLOC_*`` or malloc tunables in
    ``GLIBC_TUNABLES``)."""
    if not sys.platform.startswith("linux") or any(
            key.startswith("MALLOC_") for key in os.environ) or "malloc" in os.environ.get(
            "GLIBC_TUNABLES", ""):
        return
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
        # 32 MB: the largest threshold every glibc accepts on 64 bits (mallopt(3)); one that
        # refuses it keeps its defaults (a trim threshold alone would switch off the dynamic
        # mmap threshold)
        if mallopt(_M_MMAP_THRESHOLD, 32 << 20) == 1:
            mallopt(_M_TRIM_THRESHOLD, 512 << 20)
            mallopt(_M_TOP_PAD, 64 << 20)
    except (ImportError, OSError, AttributeError, TypeError, ValueError):
        return                       # not glibc (musl has no mallopt symbol): nothing to tune
