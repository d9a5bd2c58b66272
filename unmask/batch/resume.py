"""Resuming an audit into its earlier output.

Contract:
- ``read_done(path, fold, limits)`` reads an existing output for ``--resume``: every
  complete line must be JSON as every input is (``unmask.plumbing.jsonload``: a key given
  twice, NaN or Infinity refused at its path) and an audit result line of the right shape
  (``records.line_problem``), else
  ``ResumeError`` names the first bad line and nothing is changed; a truncated last line
  (no newline: the run was killed mid-write) is cut off, and lines ending in ``\\r\\n`` are
  rewritten with ``\\n`` (atomically), so the resumed file is the one an uninterrupted run
  writes. It returns the locations already done as a multiset, and hands every line,
  parsed, to ``fold`` (to carry the summary, the index and the JUnit file over);
- ``skip_done(tasks, done)`` drops the tasks already done, as often as they were done.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from unmask.batch.records import line_problem
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.outputs import atomic
from unmask.replay.inputs import Task


class ResumeError(Exception):
    """The existing output is not an audit result file (line number, what is wrong)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def read_done(
    path: str,
    fold: Callable[[dict[str, Any]], None] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Counter:
    """Locations already in ``path`` (a multiset); cuts off a truncated last line."""
    done: Counter = Counter()
    if not os.path.exists(path):
        return done
    good_end = 0
    crlf = False
    from unmask.plumbing.files import open_binary
    from unmask.plumbing.jsonload import parse_json_bytes

    # a regular file only: a named pipe at `--out` is refused, never read and waited on
    with open_binary(path) as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n"):
                break  # killed mid-write: the partial line is dropped below
            try:
                # the one JSON reader: a key given twice, NaN or Infinity is refused at its
                # path, never carried into the summary as one of the values
                obj = parse_json_bytes(raw, path, limits, first_line=number)
            except UnmaskError as exc:
                d = exc.diagnostics[0]
                if d.path is None or d.code == Code.JSON_SYNTAX:
                    raise ResumeError(number, "is not a json object") from None
                raise ResumeError(number, f"has `{d.path}`: {d.message}") from None
            problem = line_problem(obj)
            if problem is not None:
                raise ResumeError(number, problem)
            crlf = crlf or raw.endswith(b"\r\n")
            done[obj["location"]] += 1
            if fold is not None:
                fold(obj)
            good_end += len(raw)
    if crlf:
        _rewrite(path, good_end)
    elif os.path.getsize(path) != good_end:
        with open(path, "r+b") as fh:
            fh.truncate(good_end)
    return done


def _rewrite(path: str, end: int) -> None:
    """Keep the first ``end`` bytes of ``path``, every line ending in ``\\n`` alone."""
    with open(path, "rb") as src, atomic(path, "wb") as out:
        left = end
        for raw in src:
            if left <= 0:
                break
            left -= len(raw)
            out.write(raw.rstrip(b"\r\n") + b"\n")


def skip_done(tasks: Iterable[Task], done: Counter) -> Iterator[Task]:
    """Tasks whose location is not (or not as often) in ``done``; consumes ``done``."""
    for t in tasks:
        if done[t.location] > 0:
            done[t.location] -= 1
            continue
        yield t
