"""Diagnostics as data, rendered in one place.

Contract: every user-facing problem (compile error, validation error, usage error) is a
``Diagnostic`` with a stable ``code``, a lowercase ``message`` that puts user input in
backticks and names no implementation type, an optional ``span`` (file, line, column) or
JSON ``path``, and an optional ``help``. ``render`` is the only place that turns them into
text; tests assert on the fields, not on rendered strings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from unmask.ir import Span


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
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


class UnmaskError(Exception):
    """Raised with one or more diagnostics; the CLI renders them and exits."""

    def __init__(self, diagnostics: Iterable[Diagnostic]):
        self.diagnostics = tuple(diagnostics)
        super().__init__("; ".join(d.message for d in self.diagnostics))


def _source_excerpt(span: Span, source: str | None) -> list[str]:
    if source is None:
        return []
    lines = source.splitlines()
    if not (1 <= span.line <= len(lines)):
        return []
    text = lines[span.line - 1].expandtabs(1)
    width = 1
    if span.end_line == span.line and span.end_column > span.column:
        width = span.end_column - span.column
    gutter = f"{span.line} | "
    return [
        f"{' ' * (len(gutter) - 2)}|",
        f"{gutter}{text}",
        f"{' ' * (len(gutter) - 2)}| {' ' * (span.column - 1)}{'^' * width}",
    ]


def render(d: Diagnostic, sources: dict[str, str] | None = None) -> str:
    """``FILE:LINE:COL: error: message``, the line with a caret, then notes and help."""
    loc = d.location()
    head = f"{loc}: {d.severity}: {d.message}" if loc else f"{d.severity}: {d.message}"
    out = [head]
    if d.span is not None:
        out.extend(_source_excerpt(d.span, (sources or {}).get(d.span.file)))
    out.extend(f"  = note: {n}" for n in d.notes)
    if d.help:
        out.append(f"  = help: {d.help}")
    return "\n".join(out)


def render_all(diags: Iterable[Diagnostic], sources: dict[str, str] | None = None) -> str:
    return "\n".join(render(d, sources) for d in diags)
