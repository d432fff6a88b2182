"""Human output (rich): the solved value first and prominent, then the inputs, then the other
methods side by side. Every shortened number is rounded outward (to the private side)."""

from __future__ import annotations

from decimal import Decimal
from typing import IO

from dpcalc.numeric.display import as_input, outward, outward_at_most, shorten
from dpcalc.result import PROBABILITY_KEYS, Result

DIGITS = 5
_NOISE = {"sigma", "scale"}
#: Narrower terminals (and absurd COLUMNS such as 0 or 1) are laid out at this width.
MIN_WIDTH = 40
_GLUE = {"=", "≤", "≥", "≈", "<", ">", "·", "×", "+", "−", "-"}


def make_console(file: IO[str] | None = None, width: int | None = None):
    """The one Console used for human output (honours NO_COLOR, FORCE_COLOR, non-TTY).

    A width below ``MIN_WIDTH`` (``COLUMNS=0``, a 1-column pane) is raised to it: the answer
    is always printed, wrapped at whole units.
    """
    from rich.console import Console

    # emoji=False: dpcalc prints no emoji codes, and the code table (a 3 ms import) and the
    # per-string :name: scan are skipped
    console = Console(file=file, width=width, highlight=False, soft_wrap=False, emoji=False)
    if console.width < MIN_WIDTH:
        console.width = MIN_WIDTH
    return console


def _label(result: Result, key: str) -> str:
    return result.symbols.get(key, key)


def _relation(key: str) -> str:
    # noise: any larger value also works; guarantees, counts, rates: at most this
    return "≥" if key.rsplit(".", 1)[-1] in _NOISE else "≤"   # "records[1].sigma" too


def headline(result: Result) -> str:
    """e.g. ``ε ≤ 1.9931`` — the solved value rounded to the private side."""
    key = result.solved_for
    shown = outward(result.value, DIGITS, result.direction)
    return f"{_label(result, key)} {_relation(key)} {shown}"


def units(text: str) -> list[str]:
    """Split text at spaces into units that must stay on one line: a relation and its two
    sides (``δ = 1e-05``, ``steps = ⌈epochs/q⌉ = 235``) are never broken apart."""
    words = text.split(" ")
    out: list[str] = []
    glue_next = False
    for word in words:
        if not word:
            continue
        if out and (glue_next or word in _GLUE or word.startswith("(")):
            out[-1] += " " + word
        else:
            out.append(word)
        glue_next = word in _GLUE
    return out


def wrap(pieces: list[str], width: int, indent: str = "", sep: str = " ") -> str:
    """Lay out unbreakable ``pieces`` in lines of at most ``width`` cells (a piece longer
    than a line gets a line of its own); continuation lines start with ``indent``."""
    from rich.cells import cell_len

    lines: list[str] = []
    line = ""
    for piece in pieces:
        if line and cell_len(line) + cell_len(sep) + cell_len(piece) > width:
            lines.append(line)
            line = indent + piece
        else:
            line = line + sep + piece if line else piece
    if line:
        lines.append(line)
    return "\n".join(lines)


def _say(console, text: str, style: str | None = None, indent: str = "") -> None:
    """Print free text wrapped at whole units (rich would break ``δ = ⏎1e-05``)."""
    from rich.text import Text

    console.print(Text(wrap(units(text), console.width, indent), style=style or ""),
                  soft_wrap=True)


def _input_text(result: Result, key: str, x) -> str:
    given = result.given.get(key)
    if given is None:
        return f"{_label(result, key)} = {as_input(x)}"
    if as_input(x) == given:
        return f"{_label(result, key)} = {given}"
    # a rate derived from sizes is nudged up when inexact: the private side for an input
    return f"{_label(result, key)} = {given} ≈ {outward(x, DIGITS, 'upper')}"


def _derived_text(result: Result, key: str, x) -> str:
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e15):
        return f"{_label(result, key)} = {as_input(x)}"
    if key in PROBABILITY_KEYS or "epsilon" in key:  # a guarantee beside the solved one
        return f"{_label(result, key)} ≤ {outward(x, DIGITS, 'upper')}"
    return f"{_label(result, key)} ≈ {outward(x, DIGITS, 'upper')}"


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


def gate_text(result: Result, gate) -> str:
    """e.g. ``gate --max-epsilon 1: passed (ε ≤ 0.30711 ≤ 1)``."""
    option = "--" + gate.name.replace("_", "-")
    label = _label(result, gate.key)
    limit = as_input(gate.limit)
    computed = gate.key == result.solved_for or gate.key in result.derived
    if gate.name == "max_tpr":  # a computed TPR bound at one FPR
        label, computed = f"TPR at FPR {as_input(gate.key[8:-1])}", True
    if not computed:
        shown = f"{label} = {as_input(gate.value)}"
    elif gate.passed:  # digits enough that the bound shown is within the limit too
        shown = f"{label} ≤ {outward_at_most(gate.value, gate.limit, DIGITS)}"
    else:
        shown = f"{label} ≤ {outward(gate.value, DIGITS, 'upper')}"
    verdict = f"passed ({shown} ≤ {limit})" if gate.passed else \
        f"FAILED ({shown}, above {limit})"
    return f"gate {option} {limit}: {verdict}"


def _spelling(console):
    """The boxed text as the stream will write it: where it cannot encode the symbols
    (``PYTHONIOENCODING=ascii``), spelt in ASCII before the box is measured (the stream's
    own fallback, dpcalc.cli._streams, widened "ε ≤" to "eps <=" inside a box sized for
    the Greek: its right edge 3 columns out)."""
    encoding = getattr(console.file, "encoding", None) or "utf-8"
    try:
        "ε≤·–".encode(encoding)
        return str
    except (UnicodeEncodeError, LookupError):
        from dpcalc.cli._streams import ascii_for

        return lambda text: "".join(c if ord(c) < 128 else ascii_for(c) for c in text)


def render(result: Result, console) -> None:
    """Print ``result`` to a rich Console."""
    from rich.panel import Panel
    from rich.text import Text

    width = console.width
    plain = _spelling(console)
    title = f"dpcalc {result.command} · {result.method}"
    if result.reference and len(title) + len(result.reference) + 9 <= width:
        title += f" ({result.reference})"
    title = plain(title)
    body = Text(plain(headline(result)), style="bold")
    if result.bounds is not None:
        lo = outward(result.bounds.lower, DIGITS, "lower")
        hi = outward(result.bounds.upper, DIGITS, "upper")
        bracket = [plain(u) for u in units(f"certified bracket on the true value: [{lo}, {hi}]")]
        body.append("\n" + wrap(bracket, width - 4), style="dim")
    # a Text title is printed as is (a str would be parsed as markup, with emoji codes)
    console.print(Panel(body, title=Text(title), title_align="left", expand=False))

    hidden = {result.solved_for, *result.derived}
    inputs = [_input_text(result, k, v) for k, v in result.parameters.items() if k not in hidden]
    derived = [_derived_text(result, k, result.parameters[k]) for k in result.derived
               if k in result.parameters]
    for label, pieces in (("inputs  ", inputs), ("derived ", derived)):
        if pieces:  # each `name = value` is one unbreakable piece
            text = wrap([label + pieces[0], *pieces[1:]], width, " " * 8, sep="   ")
            console.print(Text(text), soft_wrap=True)

    if result.comparison:
        _comparison(result, console)
    for note in result.notes:
        _say(console, "note: " + note, "yellow", indent="      ")
    if "orders" in result.extra:
        _orders_table(result, console)
    if "curve" in result.extra:
        _curve(result, console)
    if "risk" in result.extra:
        _risk_table(result.extra["risk"], console)
    for gate in result.gates:
        _say(console, gate_text(result, gate), "green" if gate.passed else "bold red",
             indent="      ")


def _pct(x, direction: str) -> str:
    """A probability as a percentage, shortened outward (Decimal: ×100 is exact)."""
    return shorten(Decimal(x) * 100, 3, direction) + " %"


def _risk_table(risk: dict, console) -> None:
    """FPR → certified TPR bound (and lower end), beside the single (ε, δ) point's bound."""
    from rich.table import Table
    from rich.text import Text

    table = Table(show_edge=False, box=None, padding=(0, 2))
    table.add_column("FPR", justify="right")
    table.add_column("TPR ≤", justify="right")
    bracket = risk.get("basis") == "pld"
    if bracket:
        table.add_column("(bracket low)", justify="right")
    point = "single_point" in (risk["tpr"][0] if risk["tpr"] else {})
    if point:
        table.add_column("from (ε, δ) alone", justify="right")
    for row in risk["tpr"]:
        cells = [f"{float(row['fpr']) * 100:g} %", _pct(row["upper"], "upper")]
        if bracket:
            cells.append(_pct(row["lower"], "lower"))
        if point:
            cells.append(_pct(row["single_point"], "upper"))
        table.add_row(*cells)
    adv = risk["advantage"]
    console.print()
    console.print(Text("attack risk (membership inference)", style="bold"))
    console.print(table)
    console.print(f"largest advantage TPR − FPR ≤ {_pct(adv['upper'], 'upper')}")
    if "gdp_mu_estimate" in risk:
        console.print(Text(f"closest Gaussian-DP curve: μ ≈ {risk['gdp_mu_estimate']:.4g} "
                           "(an estimate, neither an upper nor a lower bound)", style="dim"))
    first = risk["tpr"][0] if risk["tpr"] else None
    if first is not None:
        console.print(Text(f"No membership-inference attack can exceed TPR "
                           f"{_pct(first['upper'], 'upper')} at FPR "
                           f"{float(first['fpr']) * 100:g} %.", style="bold"))


def _comparison(result: Result, console) -> None:
    """One row per method; when the width is short, the reference column is dropped (each
    row's reference is in --json, the method's own in the title), then the ratio column."""
    from rich.cells import cell_len
    from rich.table import Table

    key = result.solved_for
    rows = [(result.method, outward(result.value, DIGITS, result.direction), "",
             result.reference)]
    footnotes: list[str] = []
    for row in result.comparison:
        shown = "n/a" if row.value is None else outward(row.value, DIGITS, result.direction)
        if row.method == result.method and shown == rows[0][1] and not row.note:
            # the answer's own row (a fallback answers with a compared method; a solve on
            # the PLD's path stops at its own resolution, so the values can differ below
            # the digits shown: q 9.82576182e-17 and 9.82576466e-17 under strong)
            continue
        ratio = "" if row.value is None else _ratio(row.value, result.value)
        method = row.method
        if row.note:
            footnotes.append(row.note)
            method += f" [{len(footnotes)}]"
        rows.append((method, shown, ratio, row.reference))
    headers = ("method", _label(result, key), f"vs {result.method}", "reference")
    widths = [max(cell_len(h), *(cell_len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    # narrow: drop the reference column, then the ratio; a value is never cut
    columns = 4
    while columns > 2 and sum(widths[:columns]) + 2 * (columns - 1) >= console.width:
        columns -= 1
    table = Table(title=None, show_edge=False, pad_edge=False, box=None, padding=(0, 2))
    table.add_column("method", overflow="fold")  # the only column that may fold
    table.add_column(headers[1], justify="right", no_wrap=True, min_width=widths[1])
    if columns > 2:
        table.add_column(headers[2], justify="right", no_wrap=True, min_width=widths[2])
    if columns > 3:
        table.add_column("reference", no_wrap=True)
    for i, r in enumerate(rows):
        table.add_row(*r[:columns], style="bold" if i == 0 else None)
    console.print()
    console.print(table)
    for i, note in enumerate(footnotes, 1):
        _say(console, f"[{i}] {note}", "dim", indent="    ")


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
        # an order whose RDP is not finite gives no guarantee: say so, never print "inf"
        table.add_row(f"{o['alpha']:g}", _order_cell(o["rdp"]), _order_cell(o["epsilon"]),
                      mark, style="bold" if mark else None)
    console.print()
    console.print(table)
    if len(orders) > rows:
        console.print(f"({len(orders)} orders in all; --json lists every one)", style="dim")


def _order_cell(x) -> str:
    return "no bound" if x is None else outward(x, 5, "upper")


def _curve(result: Result, console) -> None:
    """ε after each epoch: a table of a few rows and a block-character plot (one marker per
    accountant when other accountants' curves were asked for)."""
    from rich.table import Table

    points = result.extra["curve"]
    others = list(points[0].get("comparison", {})) if points else []
    table = Table(show_edge=False, box=None, padding=(0, 2))
    table.add_column("epochs", justify="right")
    table.add_column(f"ε ({result.method})" if others else "ε", justify="right")
    for name in others:
        table.add_column(f"ε ({name})", justify="right")
    step = max(1, len(points) // 10)
    shown = points[::step] + ([points[-1]] if (len(points) - 1) % step else [])
    for p in shown:
        cells = [outward(p["epsilon"], DIGITS, "upper")]
        for name in others:
            v = p["comparison"][name]
            cells.append("no bound" if v is None else outward(v, DIGITS, "upper"))
        table.add_row(str(p["epochs"]), *cells)
    console.print()
    console.print(table)
    if not others:
        console.print(plot([p["epsilon"] for p in points]))
        return
    series = {result.method: [p["epsilon"] for p in points]}
    for name in others:
        series[name] = [p["comparison"][name] for p in points]
    console.print(plot_series(series, [p["epochs"] for p in points]), markup=False)


_MARKERS = "●+x○*#"


def plot_series(series: dict[str, list], epochs: list, height: int = 12,
                width: int = 60) -> str:
    """Several ε curves on one character grid, one marker per series (None: no bound)."""
    n = len(epochs)
    w = min(width, n)
    idx = [(i * (n - 1)) // (w - 1) if w > 1 else n - 1 for i in range(w)]
    finite = [float(v) for vals in series.values() for v in vals if v is not None]
    top = max(finite, default=1.0) or 1.0
    grid = [[" "] * w for _ in range(height)]
    # the first series (the main accountant) is drawn last, on top
    for marker, vals in reversed(list(zip(_MARKERS, series.values(), strict=False))):
        for col, i in enumerate(idx):
            v = vals[i]
            if v is None:
                continue
            row = min(height - 1, max(0, int(round(float(v) / top * (height - 1)))))
            grid[height - 1 - row][col] = marker
    lines = []
    for r, cells in enumerate(grid):
        label = (f"{top:8.3g} │" if r == 0 else f"{0.0:8.3g} │" if r == height - 1
                 else "         │")
        lines.append(label + "".join(cells))
    lines.append("         └" + "─" * w)
    lines.append(f"          epochs {epochs[0]}..{epochs[-1]}   " + "   ".join(
        f"{m} {name}" for m, name in zip(_MARKERS, series, strict=False)))
    return "\n".join(lines)


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


def write(result: Result) -> None:
    """``--format human``: the report on stdout (the renderer registry's entry point)."""
    render(result, make_console())
