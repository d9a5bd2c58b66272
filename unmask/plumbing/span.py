"""Where something came from in a source file: ``Span``, a half-open region.

Contract: lines and columns count from 1; ``start_pos``/``end_pos`` are code-point offsets
into the text. It sits under every layer (it imports nothing) so that diagnostics, file
readers and the IR can all name a place; ``unmask.ir`` re-exports it.
"""

from __future__ import annotations

from unmask.plumbing.frozen import frozen


@frozen
class Span:
    """A half-open region of a source file; lines and columns count from 1."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    start_pos: int = 0
    end_pos: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"
