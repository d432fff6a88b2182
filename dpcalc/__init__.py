"""dpcalc: a differential-privacy budget calculator. Leave one parameter out; dpcalc solves for it.

Every command of the CLI is a function here with the same parameters as keyword arguments::

    >>> import dpcalc
    >>> r = dpcalc.gaussian(sigma=2, delta=1e-5)
    >>> r.solved_for, round(r.value, 4)
    ('epsilon', 1.9931)
"""

from __future__ import annotations

__version__ = "0.1.0"

from dpcalc.errors import (  # noqa: E402
    DomainError,
    DpcalcError,
    GateError,
    InfeasibleError,
    NumericalError,
    UsageError,
)

# the result classes load on first use: ``import dpcalc`` stays quick, which keeps the window
# in which a Ctrl-C at start-up could not be caught (dpcalc._entry) short
_RESULT = ("Bounds", "Comparison", "Result")

_API = ("check_gates", "compose", "dpsgd", "gaussian", "laplace", "rdp", "subsample")

__all__ = [
    "Bounds", "Comparison", "DomainError", "DpcalcError", "GateError", "InfeasibleError",
    "NumericalError", "Result", "UsageError", "__version__", *_API,
]


def __getattr__(name: str):
    # resolve through the module, never through the package attribute: importing the
    # submodule dpcalc.api.gaussian binds that name on dpcalc.api to the module itself
    if name in _RESULT:
        import importlib

        return getattr(importlib.import_module("dpcalc.result"), name)
    if name in _API:
        import importlib

        module = "dpcalc.api._common" if name == "check_gates" else f"dpcalc.api.{name}"
        return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module 'dpcalc' has no attribute {name!r}")
