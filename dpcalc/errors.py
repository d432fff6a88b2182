"""Error classes and exit statuses: one enum, one hierarchy (HTTPie's ``ExitStatus`` pattern)."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """Process exit codes, as fixed by the contract."""

    SUCCESS = 0
    GATE_OR_INFEASIBLE = 1
    BAD_INPUT = 2
    INTERNAL = 3
    OUTPUT_ERROR = 74   # stdout closed or full (sysexits.h EX_IOERR)
    INTERRUPTED = 130   # Ctrl-C: 128 + SIGINT, as a shell reports it
    BROKEN_PIPE = 141   # the reader of stdout went away: 128 + SIGPIPE, quietly


class DpcalcError(Exception):
    """Base class: every error dpcalc raises on purpose."""

    exit_status = ExitStatus.INTERNAL


class UsageError(DpcalcError):
    """Missing, conflicting or unknown parameters (exit 2)."""

    exit_status = ExitStatus.BAD_INPUT


class DomainError(UsageError, ValueError):
    """A value outside its allowed range, NaN, inf or non-numeric (exit 2).

    Also a ``ValueError``: the relations raise it for arguments outside their domain, and
    ``except ValueError`` (the Python convention for a bad argument) still catches it.
    """


class InfeasibleError(DpcalcError):
    """No value of the unknown meets the target (exit 1)."""

    exit_status = ExitStatus.GATE_OR_INFEASIBLE


class GateError(DpcalcError):
    """The result was solved but a requested gate (--max-epsilon, --max-delta) failed (exit 1)."""

    exit_status = ExitStatus.GATE_OR_INFEASIBLE


class NumericalError(DpcalcError):
    """A bound could not be certified numerically; dpcalc refuses rather than guess (exit 3)."""

    exit_status = ExitStatus.INTERNAL
