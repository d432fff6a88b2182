"""The ``dpcalc`` command line: one Typer app, one error funnel (``main``).

Every failure leaves as one line ``dpcalc: error: ...`` on stderr with an exit status from
``ExitStatus``; ``--debug`` re-raises instead. Commands live one per module in this package;
each module only defines its function, and ``REGISTRY`` below adds them to the app
explicitly, in the contract's order (the order of ``dpcalc --help``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import typer

from dpcalc import __version__
from dpcalc.cli import _streams
from dpcalc.errors import DpcalcError, ExitStatus


def _reject_repeats(command, ctx, args: list[str]) -> None:
    """Exit 2 when an option that takes one value (or a flag) is given more than once.

    Click keeps the last of repeated options silently (``--max-epsilon 0.5 --max-epsilon 100``
    would pass a gate that should fail), so every command and the root parse through here.
    Options declared ``multiple`` (``--alpha``, ``--fpr``) may repeat.
    """
    from typer._click import exceptions as click_exc

    try:
        _, _, order = command.make_parser(ctx).parse_args(args=list(args))
    except click_exc.UsageError:
        return  # the real parse below reports it
    seen: set[str] = set()
    for param in order:
        if getattr(param, "multiple", False) or getattr(param, "count", False):
            continue
        if param.name in seen:
            names = "/".join(param.opts + param.secondary_opts)
            repeatable = [p.opts[0] for p in command.params if getattr(p, "multiple", False)]
            hint = f" (only {' and '.join(repeatable)} may be repeated)" if repeatable else ""
            raise click_exc.UsageError(f"{names} was given more than once; give it once{hint}",
                                       ctx=ctx)
        seen.add(param.name)


class _Command(typer.core.TyperCommand):
    def parse_args(self, ctx, args):
        if not ctx.resilient_parsing:
            _reject_repeats(self, ctx, args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        """Run the command with float trouble loud: numpy reports an overflow, a division by
        zero or an invalid operation (NaN) through a RuntimeWarning unless the code asked it
        not to (``np.errstate``, where the core handles that case deliberately). Here such a
        warning is an error, so an unhandled one can never leave a silent NaN behind an exit 0
        with noise on stderr: it is a bug, exit 3. (The same as running under
        ``np.errstate(over="raise", divide="raise", invalid="raise")``, without importing
        numpy for the commands that do not need it.)"""
        import warnings

        if {"json", "value", "fmt"} <= ctx.params.keys():
            from dpcalc.cli.output import output_format

            # conflicting output formats are bad input, found before any computation
            output_format(json=ctx.params["json"], value=ctx.params["value"],
                          fmt=ctx.params["fmt"])
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            return super().invoke(ctx)


class _Group(typer.core.TyperGroup):
    def parse_args(self, ctx, args):
        if not ctx.resilient_parsing:
            _reject_repeats(self, ctx, args)
        return super().parse_args(ctx, args)


class _Typer(typer.Typer):
    """Every command of dpcalc parses through ``_Command`` (repeated options are exit 2)."""

    def command(self, *args, cls=None, **kwargs):
        return super().command(*args, cls=cls or _Command, **kwargs)


def _new_app() -> _Typer:
    return _Typer(
        name="dpcalc",
        cls=_Group,
        help="A differential-privacy budget calculator: give every parameter but one, and "
             "dpcalc solves for the one left out, rounded to the private side.",
        no_args_is_help=False,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )


app = _new_app()

DEBUG_HELP = ("On an error, also print the Python traceback to stderr (for bug reports); "
              "the exit status is unchanged.")


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"dpcalc {__version__}\n")
        raise typer.Exit(0)


def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Show the version and exit."),
    debug: bool = typer.Option(False, "--debug", help=DEBUG_HELP),
) -> None:
    """dpcalc: leave one parameter out, dpcalc solves for it."""


# The commands, registered explicitly in the contract's order (the order of --help). The
# command modules import nothing from this one: importing them registers nothing by itself.
from dpcalc.cli import batch, compose, dpsgd, gaussian, laplace, rdp, subsample  # noqa: E402

REGISTRY = (
    ("gaussian", gaussian.gaussian),
    ("laplace", laplace.laplace),
    ("compose", compose.compose),
    ("subsample", subsample.subsample),
    ("rdp", rdp.rdp),
    ("dpsgd", dpsgd.dpsgd),
    ("batch", batch.batch),
)
app.callback()(_root)
for _name, _function in REGISTRY:
    app.command(_name)(_function)
COMMANDS = tuple(name for name, _ in REGISTRY)


def _app_for(args: list[str]) -> _Typer:
    """The app that parses ``args``: when they start with a command's name (after an optional
    ``--debug``), an app holding that command alone, which parses them exactly as the full
    one does (the same root options and callback, the same command); building the click
    options of every command costs about 30 ms per process, and only this one is read."""
    rest = args[1:] if args[:1] == ["--debug"] else args
    if not rest or rest[0] not in COMMANDS:
        return app
    slim = _new_app()
    slim.callback()(_root)
    slim.command(rest[0])(dict(REGISTRY)[rest[0]])
    return slim


def error_line(message: str) -> str:
    """The one-line error format, with newlines folded."""
    return "dpcalc: error: " + " ".join(str(message).split()) + "\n"


def _wants_debug(args: list[str]) -> bool:
    """``--debug`` anywhere among the options (before a ``--``), at the root or after a command."""
    return "--debug" in (args[:args.index("--")] if "--" in args else args)


def _fail(message: str, status: int, debug: bool) -> int:
    """Report one error: the traceback first when debugging, then the one line; the status."""
    if debug:
        import traceback

        _streams.write_err(traceback.format_exc())
    _streams.write_err(error_line(message))
    return int(status)


def _suggest(exc) -> str:
    """``No such option: --eps`` with every option it may mean: those it begins (--epsilon,
    --epochs), then the close spellings; click's three closest alone can miss the intended one."""
    import difflib

    command = exc.ctx.command if exc.ctx is not None else None
    names = [n for p in getattr(command, "params", ()) for n in (*p.opts, *p.secondary_opts)
             if n.startswith("--") and n != "--help"]
    given = exc.option_name
    matches = [n for n in names if n.startswith(given)]
    matches += [n for n in difflib.get_close_matches(given, names, n=3) if n not in matches]
    if not matches:
        return f"no such option: {given}"
    listed = ", ".join(matches[:-1]) + " or " + matches[-1] if len(matches) > 1 else matches[0]
    return f"no such option: {given} (did you mean {listed}?)"


def _usage_message(exc) -> str:
    from typer._click import exceptions as click_exc

    if isinstance(exc, click_exc.NoSuchOption):
        return _suggest(exc)
    message = exc.format_message()
    if message == "Missing command.":
        return (f"missing command: give one of {', '.join(COMMANDS)} "
                "(dpcalc --help lists them, dpcalc COMMAND --help its options)")
    return message


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (the single error funnel)."""
    from typer._click import exceptions as click_exc

    args = list(sys.argv[1:] if argv is None else argv)
    debug = _wants_debug(args)
    real_stdout = sys.stdout
    sys.stdout = _streams.GuardedStdout(real_stdout)
    try:
        _streams.install_ascii_fallback()
        completing = bool(os.environ.get("_DPCALC_COMPLETE"))
        command = typer.main.get_command(app if completing else _app_for(args))
        if completing:  # a shell asking for completions: see completions/
            from dpcalc.cli._completion import enable

            enable(command)
        try:
            rv = command.main(args=args, prog_name="dpcalc", standalone_mode=False)
        finally:
            sys.stdout.flush()  # a failed write surfaces here, not in Python's exit handler
        return int(rv) if isinstance(rv, int) else ExitStatus.SUCCESS
    except _streams.OutputFailed as exc:
        _streams.silence_stdout(real_stdout)
        if exc.broken_pipe:  # the reader has gone (``| head``): quiet, as SIGPIPE would be
            return ExitStatus.BROKEN_PIPE
        return _fail(str(exc), ExitStatus.OUTPUT_ERROR, debug)
    except BrokenPipeError:
        _streams.silence_stdout(real_stdout)
        return ExitStatus.BROKEN_PIPE
    except DpcalcError as exc:
        return _fail(str(exc), exc.exit_status, debug)
    except click_exc.UsageError as exc:
        return _fail(_usage_message(exc), ExitStatus.BAD_INPUT, debug)
    except (OverflowError, ZeroDivisionError, RuntimeWarning) as exc:
        # inputs at the edge of the double range (σ = 1e-300, Δ = 1e300, ...) overflow the
        # arithmetic: that is a range problem of the input, not a result to report. A numpy
        # overflow or division by zero the core did not handle (see _Command.invoke) is the
        # same; an invalid operation (a NaN) is a bug.
        if isinstance(exc, RuntimeWarning) and "overflow" not in str(exc) and (
                "divide by zero" not in str(exc)):
            return _fail(f"internal error (float trouble: {exc}); please report it with the "
                         "command line, and rerun with --debug for details",
                         ExitStatus.INTERNAL, debug)
        return _fail("the inputs are outside the range dpcalc can evaluate "
                     f"({type(exc).__name__}); use less extreme values", ExitStatus.BAD_INPUT,
                     debug)
    except click_exc.ClickException as exc:
        return _fail(exc.format_message(), ExitStatus.BAD_INPUT, debug)
    except KeyboardInterrupt:
        return _fail("interrupted", ExitStatus.INTERRUPTED, False)
    except Exception as exc:  # noqa: BLE001 - the funnel: anything unexpected is a bug
        return _fail(f"internal error ({type(exc).__name__}); please report it with the "
                     "command line, and rerun with --debug for details", ExitStatus.INTERNAL,
                     debug)
    finally:
        sys.stdout = real_stdout
