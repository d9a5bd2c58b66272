"""Reading a JSON Lines input the one way every importer does.

Contract: ``jsonl_records(path, limits)`` reads ``path`` once through the shared reader
(regular files only, size checked before the read; UTF-8, a byte order mark skipped, else
one ``encoding`` error naming the line) and yields ``(n, value)`` for each line that is not
blank, ``n`` its line number from 1. Lines end at ``\\n`` alone: a ``\\r`` before it is white
space to JSON, and a U+2028 inside a string is no line end; a last line without its newline
is read like any other. A line that is not JSON is, by ``bad``:
- ``"skip"``: a ``BadLine`` whose ``reason`` is what the record's ``Skipped`` says;
- ``"first"``: the same, but on the first line that is not blank its error is raised (a
  file whose first record is not JSON is not of the format at all);
- ``"raise"``: its ``UnmaskError``, naming file, line and column (a dataset the import
  cannot do without).
With ``objects=True`` a value that is not a JSON object is a ``BadLine`` too. With
``together=True`` (a reader that keeps every record, such as a gold file's index) the values
of all lines together are bounded by ``--max-json-values``, counted before any is parsed.
``jsonl_lines(data, file, limits)`` is the same for bytes already read (an archive member),
``jsonl_text`` for text already decoded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import Limits

Bad = Literal["skip", "first", "raise"]


@frozen
class BadLine:
    """A line that is no record: ``reason`` for its ``Skipped``; ``error`` the parser's,
    None for JSON that is not an object."""

    reason: str
    error: UnmaskError | None = None


def jsonl_records(
    path: Path | str,
    limits: Limits,
    *,
    bad: Bad = "skip",
    objects: bool = False,
    together: bool = False,
) -> Iterator[tuple[int, Any]]:
    """``(line number, value or BadLine)`` of each non-blank line of ``path``."""
    from unmask.plumbing.files import read_bytes
    from unmask.plumbing.jsonload import json_values, too_many_values

    file = str(path)
    data = read_bytes(path, limits, file)
    if together and json_values(data) + data.count(b"\n") > limits.max_json_values:
        raise too_many_values(file, limits, "the file's lines hold")
    return jsonl_lines(data, file, limits, bad=bad, objects=objects)


def jsonl_lines(
    data: bytes,
    file: str,
    limits: Limits,
    *,
    name: str | None = None,
    bad: Bad = "skip",
    objects: bool = False,
) -> Iterator[tuple[int, Any]]:
    """``jsonl_records`` of bytes already read; ``name`` is what an encoding error calls
    the input (default ``file``, which every other message names)."""
    from unmask.plumbing.files import decode_utf8

    text = decode_utf8(data, file if name is None else name, file)
    return jsonl_text(text, file, limits, bad=bad, objects=objects)


def jsonl_text(
    text: str, file: str, limits: Limits, *, bad: Bad = "skip", objects: bool = False
) -> Iterator[tuple[int, Any]]:
    """``jsonl_lines`` of text already decoded."""
    from unmask.plumbing.jsonload import parse_json_text, show

    seen = False
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = parse_json_text(line, file, limits, first_line=n)
        except UnmaskError as exc:
            if bad == "raise" or (bad == "first" and not seen):
                raise
            value = BadLine(f"not a JSON record: {exc.diagnostics[0].message}", exc)
        else:
            if objects and not isinstance(value, dict):
                value = BadLine(f"expected a JSON object, found `{show(value)}`")
        seen = True
        yield n, value
