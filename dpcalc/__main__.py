"""``python -m dpcalc``."""

from dpcalc._entry import run

run()
