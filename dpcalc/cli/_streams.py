"""The process's standard streams, made safe at the output edge (used only by ``cli.main``).

- **Encoding.** Where a stream cannot encode a character (a latin-1 or C locale,
  ``PYTHONIOENCODING=ascii``), the codec error handler ``dpcalc-ascii`` writes an ASCII
  stand-in instead (ε → eps, δ → delta, σ → sigma, ≤ → <=, ...). It is installed on stdout
  and stderr once, so no string anywhere in dpcalc needs its own ASCII variant; on a UTF-8
  stream it is never called.
- **Closed or failing stdout.** Writes to stdout go through :class:`GuardedStdout`, which turns
  a failed write or flush (``>&-``, ``/dev/full``, a closed pipe) into :class:`OutputFailed`,
  so the funnel reports it once and Python's shutdown flush adds no noise.
- **Closed stderr.** :func:`write_err` writes an error line where it can and drops it silently
  where it cannot: the exit status still tells the story.
"""

from __future__ import annotations

import codecs
import errno
import os
import sys
import unicodedata

HANDLER = "dpcalc-ascii"

# Symbols dpcalc prints, spelled the way the options and the papers spell them in ASCII.
ASCII = {
    "ε": "eps", "δ": "delta", "σ": "sigma", "α": "alpha", "ρ": "rho", "λ": "lambda",
    "μ": "mu", "Δ": "Delta", "Φ": "Phi", "≤": "<=", "≥": ">=", "≈": "~", "≠": "!=",
    "−": "-", "–": "-", "—": "--", "×": "x", "·": "-", "…": "...", "√": "sqrt", "∞": "inf",
    "←": "<-", "→": "->", "⌈": "ceil(", "⌉": ")", "⌊": "floor(", "⌋": ")", "′": "'",
    "’": "'", "‘": "'", "“": '"', "”": '"', "│": "|", "─": "-", "└": "+", "┌": "+",
    "┐": "+", "┘": "+", "├": "+", "┤": "+", "╭": "+", "╮": "+", "╯": "+", "╰": "+",
    "█": "#", "▁": "_", "▂": "_", "▃": "-", "▄": "-", "▅": "=", "▆": "=", "▇": "#",
    "²": "^2", "⁻": "^-", "¹": "^1", "ᵉ": "^e", "\u00a0": " ",
}


def ascii_for(char: str) -> str:
    """An ASCII stand-in for ``char``: the table above, else its Greek letter name, else ?."""
    if char in ASCII:
        return ASCII[char]
    name = unicodedata.name(char, "")
    if name.startswith("GREEK SMALL LETTER "):
        return name.removeprefix("GREEK SMALL LETTER ").lower()
    if name.startswith("GREEK CAPITAL LETTER "):
        return name.removeprefix("GREEK CAPITAL LETTER ").capitalize()
    decomposed = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()
    return decomposed or "?"


def _replace(exc: UnicodeError):
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    bad = exc.object[exc.start:exc.end]
    return "".join(ascii_for(c) for c in bad), exc.end


# the handlers Python picks by itself (stdout strict, stderr backslashreplace); a handler the
# user chose with PYTHONIOENCODING=enc:handler is left alone
_PLAIN = ("strict", "backslashreplace", "surrogateescape", None)


def install_ascii_fallback() -> None:
    """Register the handler and put it on stdout and stderr (idempotent, never raises)."""
    try:
        codecs.lookup_error(HANDLER)
    except LookupError:
        codecs.register_error(HANDLER, _replace)
    for stream in (sys.stdout, sys.stderr):
        stream = getattr(stream, "stream", stream)  # a GuardedStdout: its real stream
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) in _PLAIN:
            try:
                reconfigure(errors=HANDLER)
            except (ValueError, OSError, AttributeError):  # closed, or not a text wrapper
                pass


class OutputFailed(Exception):
    """Writing the result to stdout failed; ``broken_pipe`` when the reader went away."""

    def __init__(self, error: OSError | None):
        self.error = error
        self.broken_pipe = isinstance(error, BrokenPipeError)
        reason = os.strerror(error.errno) if error is not None and error.errno else (
            "standard output is closed")
        super().__init__(f"cannot write the result to standard output: {reason}")


class GuardedStdout:
    """``sys.stdout`` as dpcalc writes to it: a failed write or flush raises OutputFailed."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        if self.stream is None:
            raise OutputFailed(None)
        try:
            return self.stream.write(text)
        except OSError as exc:
            raise OutputFailed(exc) from None

    def flush(self) -> None:
        if self.stream is None:
            return
        try:
            self.stream.flush()
        except OSError as exc:
            raise OutputFailed(exc) from None

    def isatty(self) -> bool:
        try:
            return self.stream is not None and self.stream.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        if self.stream is None:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        return self.stream.fileno()

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def silence_stdout(stream) -> None:
    """After a failed write: point stdout's descriptor at /dev/null and drop what is buffered,
    so the interpreter's flush at exit neither fails nor prints ``Exception ignored``."""
    if stream is None:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def write_err(text: str) -> None:
    """Write ``text`` to stderr if there is a working stderr; otherwise drop it."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        pass
