"""Shell completion at run time, for the scripts in ``completions/``.

Those scripts are Typer's own (``python -m dpcalc._generate`` writes them): on TAB the shell runs
``dpcalc`` again with ``_DPCALC_COMPLETE=complete_<shell>`` set, and Typer answers with the
commands and options of the app. ``main`` calls :func:`enable` only then, so an ordinary run pays
nothing. :func:`enable` registers Typer's shell classes (the app is built with
``add_completion=False``, which leaves them out) and gives the method-like options their values.
"""

from __future__ import annotations

import importlib

COMPLETE_VAR = "_DPCALC_COMPLETE"

# (command, option) -> (module, attribute): the tuple of values the API accepts for the option
# (its ``check_choice``), imported only when that option's value is being completed.
CHOICES: dict[tuple[str, str], tuple[str, str]] = {
    ("gaussian", "--method"): ("dpcalc.methods", "GAUSSIAN"),
    ("compose", "--method"): ("dpcalc.methods", "COMPOSE"),
    ("subsample", "--sampling"): ("dpcalc.api.subsample", "SAMPLINGS"),
    ("subsample", "--relation"): ("dpcalc.api.subsample", "RELATIONS"),
    ("rdp", "--conversion"): ("dpcalc.api.rdp", "CONVERSIONS"),
    ("rdp", "--mechanism"): ("dpcalc.api.rdp", "MECHANISMS"),
    ("dpsgd", "--accountant"): ("dpcalc.methods", "DPSGD"),
    **{(command, "--solve-for"): (f"dpcalc.cli.{command}", "SOLVE_FOR")
       for command in ("gaussian", "laplace", "compose", "subsample", "rdp", "dpsgd")},
    **{(command, "--format"): ("dpcalc.render", "FORMATS")
       for command in ("gaussian", "laplace", "compose", "subsample", "rdp", "dpsgd")},
}


def choices(command: str, option: str) -> tuple[str, ...]:
    """The values ``dpcalc COMMAND OPTION`` accepts (empty for a free-form option)."""
    where = CHOICES.get((command, option))
    if where is None:
        return ()
    module, attribute = where
    values = getattr(importlib.import_module(module), attribute)
    return tuple(getattr(values, "names", values))  # a dpcalc.methods.Registry: its names


def _completer(command: str, option: str):
    def complete(ctx, param, incomplete: str) -> list[str]:
        return [c for c in choices(command, option) if c.startswith(incomplete)]
    return complete


def enable(group) -> None:
    """Make ``group`` (``typer.main.get_command(app)``) answer completion requests."""
    from typer._completion_classes import completion_init

    completion_init()
    for (command, option) in CHOICES:
        for param in group.commands[command].params:
            if option in param.opts:
                param._custom_shell_complete = _completer(command, option)
