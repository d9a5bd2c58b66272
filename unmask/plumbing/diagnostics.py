"""Diagnostics as data, rendered in one place.

Contract: every user-facing problem (compile error, validation error, usage error) is a
``Diagnostic`` with a stable ``code``, a lowercase ``message`` that puts user input in
backticks and names no implementation type, an optional ``span`` (file, line, column) or
JSON ``path``, and an optional ``help``. ``render`` is the only place that turns them into
text, and it writes every part through the output policy (``unmask.plumbing.safe.printable``):
a file name, a source line or a message that holds a control character or a bidirectional
override shows it as an escape, never acts on the terminal. Tests assert on the fields, not
on rendered strings. ``internal_error`` is the one diagnostic of a bug: every command and
the batch engine report an unexpected exception with it, with the exit status
``exitcodes.INTERNAL``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import field

from unmask.plumbing.codes import Code
from unmask.plumbing.frozen import frozen
from unmask.plumbing.safe import printable, shorten
from unmask.plumbing.span import Span


@frozen
class Diagnostic:
    code: Code
    message: str
    span: Span | None = None
    path: str | None = None  # JSON path such as ``annotations[3].evidence[0].end``
    file: str | None = None  # the file a JSON path points into
    help: str | None = None
    severity: str = "error"
    notes: tuple[str, ...] = field(default=())

    def location(self) -> str:
        if self.span is not None:
            return str(self.span)
        if self.path is not None and self.file:
            return f"{self.file}: {self.path}"
        if self.path is not None:
            return self.path
        return self.file or ""


# the longest location a rendered message shows (a file name and a line, a JSON path)
MAX_LOCATION = 600
# a source line longer than this is shown as a window around the span, cut with `…` (a
# protocol of 20,000 labels has a 170 KB line; the excerpt is there to point, not to copy)
MAX_EXCERPT = 160
_EXCERPT_BEFORE = 40  # characters kept before the span in such a window


def counted(n: int, word: str) -> str:
    """``1 line``, ``2 lines``: a count in a message, its noun agreeing (a regular plural)."""
    return f"{n} {word}{'' if n == 1 else 's'}"


INTERNAL_HELP = "nothing was proved, please report this with the input that caused it"


def internal_error(
    exc: BaseException | None = None,
    *,
    file: str | None = None,
    what: str = "Unmask failed unexpectedly",
) -> Diagnostic:
    """The one message of a bug, never a traceback: ``internal error: WHAT`` (by default an
    unexpected exception ``exc``; the batch engine says a process died). What failed inside
    is a note in backticks, for the bug report: the message names no implementation type."""
    notes: tuple[str, ...] = ()
    if exc is not None:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        notes = (f"for the report: `{text if len(text) <= 200 else text[:199] + '…'}`",)
    return Diagnostic(
        Code.INTERNAL_ERROR, f"internal error: {what}", file=file, help=INTERNAL_HELP, notes=notes
    )


class UnmaskError(Exception):
    """Raised with one or more diagnostics; the CLI renders them and exits."""

    def __init__(self, diagnostics: Iterable[Diagnostic]):
        self.diagnostics = tuple(diagnostics)
        super().__init__("; ".join(d.message for d in self.diagnostics))


def _line_starts(text: str) -> list[int]:
    """Where each line of ``text`` starts (lines end at ``\n``, as spans count them)."""
    starts = [0]
    at = text.find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    if starts[-1] == len(text):  # no line after a final line break, or in an empty text
        starts.pop()
    return starts


class _Sources:
    """The texts diagnostics point into; each is indexed by line once, on first use, so
    rendering any number of diagnostics costs time linear in their number and the text."""

    def __init__(self, texts: dict[str, str] | None):
        self.texts = texts or {}
        self.starts: dict[str, list[int]] = {}

    def line(self, file: str, number: int) -> str | None:
        text = self.texts.get(file)
        if text is None:
            return None
        starts = self.starts.get(file)
        if starts is None:
            starts = self.starts[file] = _line_starts(text)
        if not 1 <= number <= len(starts):
            return None
        begin = starts[number - 1]
        end = text.find("\n", begin)
        return text[begin : end if end >= 0 else len(text)].rstrip("\r")


def _columns(text: str) -> int:
    """The terminal columns ``text`` takes (escapes already applied)."""
    if text.isascii():
        return len(text)
    wide = ("W", "F")
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in wide else 1
        for c in text
    )


def _source_excerpt(span: Span, sources: _Sources) -> list[str]:
    line = sources.line(span.file, span.line)
    if line is None:
        return []
    text = line.expandtabs(1)
    start = span.column - 1
    end = start + 1
    if span.end_line == span.line and span.end_column > span.column:
        end = span.end_column - 1
    if len(text) > MAX_EXCERPT:
        lo = max(0, min(start, len(text)) - _EXCERPT_BEFORE)
        hi = min(len(text), lo + MAX_EXCERPT)
        head, tail = ("…" if lo > 0 else ""), ("…" if hi < len(text) else "")
        text = head + text[lo:hi] + tail
        # the caret stays under the same characters, and ends where the window does
        start, end = start - lo + len(head), min(end, hi) - lo + len(head)
    # a character shown as an escape is wider, a wide (CJK) one takes two columns, a
    # combining one none: the caret follows the columns a terminal gives the shown text
    before = _columns(printable(text[:start])) + max(0, start - len(text))
    shown = text[start:end]
    width = _columns(printable(shown)) + (end - start - len(shown))  # past the line's end too
    gutter = f"{span.line} | "
    return [
        f"{' ' * (len(gutter) - 2)}|",
        f"{gutter}{printable(text)}",
        f"{' ' * (len(gutter) - 2)}| {' ' * before}{'^' * width}",
    ]


def render(d: Diagnostic, sources: dict[str, str] | _Sources | None = None) -> str:
    """``FILE:LINE:COL: error: message``, the line with a caret, then notes and help."""
    if not isinstance(sources, _Sources):
        sources = _Sources(sources)
    # a file name or JSON path from the input can be megabytes: shown with its middle elided
    loc = printable(shorten(d.location(), MAX_LOCATION))
    message = printable(d.message)
    head = f"{loc}: {d.severity}: {message}" if loc else f"{d.severity}: {message}"
    out = [head]
    if d.span is not None:
        out.extend(_source_excerpt(d.span, sources))
    out.extend(f"  = note: {printable(n)}" for n in d.notes)
    if d.help:
        out.append(f"  = help: {printable(d.help)}")
    return "\n".join(out)


def render_all(diags: Iterable[Diagnostic], sources: dict[str, str] | None = None) -> str:
    indexed = _Sources(sources)
    return "\n".join(render(d, indexed) for d in diags)
