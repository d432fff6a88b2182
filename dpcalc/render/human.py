"""Human output (rich): the solved value first and prominent, then the inputs, then the other
methods side by side. Every shortened number is rounded outward (to the private side)."""

from __future__ import annotations

from decimal import Decimal
from typing import IO

from dpcalc.numeric.display import as_input, shorten
from dpcalc.result import Result

DIGITS = 5
_NOISE = {"sigma", "scale"}


def make_console(file: IO[str] | None = None, width: int | None = None):
    """The one Console used for human output (honours NO_COLOR, FORCE_COLOR, non-TTY)."""
    from rich.console import Console

    return Console(file=file, width=width, highlight=False, soft_wrap=False)


def _label(result: Result, key: str) -> str:
    return result.symbols.get(key, key)


def _relation(key: str) -> str:
    # noise: any larger value also works; guarantees, counts, rates: at most this
    return "≥" if key.rsplit(".", 1)[-1] in _NOISE else "≤"   # "records[1].sigma" too


def headline(result: Result) -> str:
    """e.g. ``ε ≤ 1.9931`` — the solved value rounded to the private side."""
    key = result.solved_for
    shown = shorten(result.value, DIGITS, result.direction)
    return f"{_label(result, key)} {_relation(key)} {shown}"


def _ratio(value, reference) -> str:
    try:
        ref = Decimal(reference)
        if ref == 0:
            return ""
        change = (Decimal(value) / ref - 1) * 100
    except (ArithmeticError, TypeError, ValueError):
        return ""
    if abs(change) < Decimal("0.05"):
        return "same"
    return f"{float(change):+.1f}%"


def render(result: Result, console) -> None:
    """Print ``result`` to a rich Console."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    title = f"dpcalc {result.command} · {result.method}"
    if result.reference:
        title += f" ({result.reference})"
    body = Text(headline(result), style="bold")
    if result.bounds is not None:
        lo = shorten(result.bounds.lower, DIGITS, "lower")
        hi = shorten(result.bounds.upper, DIGITS, "upper")
        body.append(f"\ncertified bracket on the true value: [{lo}, {hi}]", style="dim")
    console.print(Panel(body, title=title, title_align="left", expand=False))

    inputs = [f"{_label(result, k)} = {as_input(v)}" for k, v in result.parameters.items()
              if k != result.solved_for]
    console.print(Text("inputs  " + "   ".join(inputs)))

    if result.comparison:
        key = result.solved_for
        table = Table(title=None, show_edge=False, pad_edge=False, box=None, padding=(0, 2))
        table.add_column("method", no_wrap=True)
        table.add_column(_label(result, key), justify="right", no_wrap=True)
        table.add_column(f"vs {result.method}", justify="right", no_wrap=True)
        table.add_column("reference")
        table.add_row(result.method, shorten(result.value, DIGITS, result.direction), "",
                      result.reference, style="bold")
        footnotes: list[str] = []
        for row in result.comparison:
            shown = "n/a" if row.value is None else shorten(row.value, DIGITS, result.direction)
            ratio = "" if row.value is None else _ratio(row.value, result.value)
            method = row.method
            if row.note:
                footnotes.append(row.note)
                method += f" [{len(footnotes)}]"
            table.add_row(method, shown, ratio, row.reference)
        console.print()
        console.print(table)
        for i, note in enumerate(footnotes, 1):
            console.print(Text(f"[{i}] {note}", style="dim"))
    for note in result.notes:
        console.print(Text("note: " + note, style="yellow"))
    if "orders" in result.extra:
        _orders_table(result, console)
    if "curve" in result.extra:
        _curve(result, console)


def _orders_table(result: Result, console, rows: int = 12) -> None:
    """α → RDP → converted ε, a window around the best order (marked)."""
    from rich.table import Table

    orders = result.extra["orders"]
    best = result.extra.get("alpha")
    index = next((i for i, o in enumerate(orders) if o["alpha"] == best), 0)
    start = max(0, min(index - rows // 2, len(orders) - rows))
    table = Table(show_edge=False, box=None, padding=(0, 2))
    for name in ("α", "RDP ε(α)", "ε"):
        table.add_column(name, justify="right")
    table.add_column("")
    for o in orders[start:start + rows]:
        mark = "← best" if o["alpha"] == best else ""
        table.add_row(f"{o['alpha']:g}", "inf" if o["rdp"] is None else shorten(o["rdp"], 5,
                      "upper"), "inf" if o["epsilon"] is None else shorten(o["epsilon"], 5,
                      "upper"), mark, style="bold" if mark else None)
    console.print()
    console.print(table)
    if len(orders) > rows:
        console.print(f"({len(orders)} orders in all; --json lists every one)", style="dim")


def _curve(result: Result, console) -> None:
    """ε after each epoch: a table of a few rows and a block-character plot."""
    from rich.table import Table

    points = result.extra["curve"]
    table = Table(show_edge=False, box=None, padding=(0, 2))
    table.add_column("epochs", justify="right")
    table.add_column("ε", justify="right")
    step = max(1, len(points) // 10)
    shown = points[::step] + ([points[-1]] if (len(points) - 1) % step else [])
    for p in shown:
        table.add_row(str(p["epochs"]), shorten(p["epsilon"], DIGITS, "upper"))
    console.print()
    console.print(table)
    console.print(plot([p["epsilon"] for p in points]))


def plot(values: list, height: int = 8, width: int = 60) -> str:
    """A block-character plot of a non-decreasing series (a terminal sparkline, multi-row)."""
    if not values:
        return ""
    n = len(values)
    w = min(width, n)
    cols = [values[(i * (n - 1)) // (w - 1)] if w > 1 else values[-1] for i in range(w)]
    top = max(float(v) for v in cols) or 1.0
    blocks = " ▁▂▃▄▅▆▇█"
    lines = []
    for row in range(height, 0, -1):
        line = ""
        for v in cols:
            level = float(v) / top * height - (row - 1)
            line += blocks[max(0, min(8, int(round(level * 8))))] if level < 1 else "█"
        label = f"{top * row / height:8.3g} │" if row in (height, 1) else "         │"
        lines.append(label + line)
    lines.append("         └" + "─" * len(cols) + f"  epochs 1..{n}")
    return "\n".join(lines)
