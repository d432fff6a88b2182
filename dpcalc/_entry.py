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
