"""Reading a binary stream line by line with every line bounded: the one JSON Lines reader.

Contract: ``bounded_lines(stream, max_bytes)`` yields ``(number, line)`` for every line of
``stream``, numbered from 1, newline included. A line of more than ``max_bytes`` bytes before
its newline is never held in memory whole: it is read past in chunks and yielded as None, so
the caller can report it and go on with the next line. ``skip_bom`` drops a byte order mark
before the first line. Blank lines are yielded too: what they mean is the caller's business.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 20  # how much of an overlong line is read at a time while skipping it


def bounded_lines(
    stream: BinaryIO, max_bytes: int, *, skip_bom: bool = False
) -> Iterator[tuple[int, bytes | None]]:
    number = 0
    while True:
        raw = stream.readline(max_bytes + 1)
        if not raw:
            return
        number += 1
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = stream.readline(_CHUNK)
            yield number, None
            continue
        if number == 1 and skip_bom:
            raw = raw.removeprefix(BOM)
        yield number, raw
