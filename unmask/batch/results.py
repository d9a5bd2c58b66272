"""An audit's results file read back: `unmask next` and `unmask review` read it this one way.

Contract:
- ``is_results(path, limits)``: a ``.jsonl`` file whose first line that is not blank is a
  JSON object with the ``schema`` of a result line or of an error record
  (``unmask.checking.record``),
  its keys in any order (``jq -S`` sorts them); a file that cannot be read is not one (it
  is then read as replays, whose reader names it and why);
- ``result_lines(path, limits)`` yields a ``ResultLine`` for every line that is not blank:
  ``obj`` the parsed line, or ``error`` a ``bad-results`` ``UnmaskError`` naming FILE:LINE
  when the line is longer than ``limits.max_file_bytes``, not JSON (read as every input is,
  ``unmask.plumbing.jsonload``: a key given twice or NaN named at its path), not an object with a
  string ``location``, or of a ``schema`` that is neither (the lines after it are still
  read), or once, an ``io`` error, when the file cannot be opened;
- ``ResultLine.report()`` is a checked line's report JSON, each annotation in its parts
  (``unmask.checking.record.report_json``), once the line is one of its schema
  (``unmask.checking.formats``), else a ``bad-results`` ``UnmaskError`` naming FILE:LINE
  and the JSON path; ``unmask next``, which reads only ``location``, needs none of it;
- ``Locations(root, limits).task(location)`` is the audit task a line's ``location`` names,
  relative to ``root`` (a file, or ``FILE:LINE`` of JSON Lines), or a ``location``
  ``UnmaskError``; each JSON Lines file is read once, however many lines name it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from typing import Any

from unmask.checking.formats import LineError
from unmask.checking.record import CHECKED_SCHEMAS, ERROR_SCHEMA, report_json
from unmask.ir import Span
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.limits import Limits
from unmask.plumbing.lines import bounded_lines
from unmask.replay.inputs import STDIN_LABEL, Task, iter_tasks

RESULT_SCHEMAS = (*CHECKED_SCHEMAS, ERROR_SCHEMA)
_SCHEMAS = ", ".join(f"`{s}`" for s in RESULT_SCHEMAS[:-1]) + f" or `{RESULT_SCHEMAS[-1]}`"


@dataclasses.dataclass(frozen=True, slots=True)
class ResultLine:
    """One line of a results file: ``obj`` when it is a result line, else ``error``."""

    n: int
    where: str  # FILE:LINE
    obj: dict[str, Any] | None = None
    error: UnmaskError | None = None

    @property
    def location(self) -> str:
        assert self.obj is not None
        return self.obj["location"]

    @property
    def checked(self) -> bool:
        """A checked replay's line (a report); else an error record or a bad line."""
        return self.obj is not None and self.obj["schema"] in CHECKED_SCHEMAS

    def report(self) -> dict[str, Any]:
        """The checked line's report JSON, each annotation in its parts, whichever form
        (``unmask.checking.record.report_json``); a line not of its schema is a
        ``bad-results`` error naming FILE:LINE and the JSON path."""
        assert self.obj is not None
        try:
            return report_json(self.obj)
        except LineError as exc:
            file = self.where.rpartition(":")[0]
            diag = Diagnostic(
                Code.BAD_RESULTS,
                f"{exc.path}: {exc.message}" if exc.path else exc.message,
                span=Span(file, self.n, 1, self.n, 1),
                path=exc.path or None,
                help="write results with `unmask audit --out`; this line was edited",
            )
            raise UnmaskError([diag]) from None


def is_results(path: str, limits: Limits) -> bool:
    if not path.endswith(".jsonl") or not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as fh:
            for _, raw in bounded_lines(fh, limits.max_file_bytes, skip_bom=True):
                if raw is None:
                    return False
                if raw.strip():
                    first = _parse(raw)
                    return isinstance(first, dict) and first.get("schema") in RESULT_SCHEMAS
    except OSError:
        return False
    return False


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None


def result_lines(path: str, limits: Limits) -> Iterator[ResultLine]:
    """Every line of the results file ``path`` that is not blank (see the module)."""

    def bad(n: int, message: str) -> ResultLine:
        span = Span(path, n, 1, n, 1)
        return ResultLine(
            n, f"{path}:{n}", error=UnmaskError([Diagnostic(Code.BAD_RESULTS, message, span=span)])
        )

    from unmask.plumbing.jsonload import over_values, parse_json_bytes

    try:
        fh = open(path, "rb")  # noqa: SIM115 (closed below)
    except OSError as exc:  # gone or locked since `is_results` looked: one message
        why = (exc.strerror or "it cannot be opened").lower()
        diag = Diagnostic(Code.IO, f"cannot read `{path}`: {why}", file=path)
        yield ResultLine(0, path, error=UnmaskError([diag]))
        return
    with fh:
        for n, raw in bounded_lines(fh, limits.max_file_bytes, skip_bom=True):
            if raw is None:
                yield bad(n, "line longer than the file limit")
                continue
            if not raw.strip():
                continue
            # counted before it is parsed, as every JSON input is (unmask.plumbing.jsonload)
            if over_values(raw, limits):
                yield bad(n, f"a line of more than {limits.max_json_values} JSON values")
                continue
            try:
                # the one JSON reader: a key given twice, NaN or Infinity is refused at its
                # path, never read as one of the values
                obj = parse_json_bytes(raw, path, limits, first_line=n)
            except UnmaskError as exc:
                d = exc.diagnostics[0]
                if d.path is None or d.code == Code.JSON_SYNTAX:
                    yield bad(n, "not a result line: not valid JSON")
                else:
                    yield bad(n, f"{d.path}: {d.message}")
                continue
            if not isinstance(obj, dict) or not isinstance(obj.get("location"), str):
                yield bad(n, "a result line without `location`")
            elif obj.get("schema") not in RESULT_SCHEMAS:
                yield bad(n, f"not a result line: expected `schema` {_SCHEMAS}")
            else:
                yield ResultLine(n, f"{path}:{n}", obj)


class Locations:
    """The audit tasks result lines name, relative to ``root``."""

    __slots__ = ("_files", "limits", "root")

    def __init__(self, root: str, limits: Limits) -> None:
        self.root, self.limits = root, limits
        self._files: dict[str, dict[int, Task]] = {}  # a JSON Lines file's tasks by line

    def task(self, location: str) -> Task:
        if location.startswith(STDIN_LABEL):
            raise _location(f"cannot re-read `{location}`: the audit read it from stdin")
        whole = os.path.join(self.root, location)
        if os.path.isfile(whole) and not whole.endswith(".jsonl"):
            return Task(location, whole)
        file, sep, line = location.rpartition(":")
        path = os.path.join(self.root, file)
        if not sep or not line.isdigit() or not os.path.isfile(path):
            raise _missing(location)
        if path not in self._files:
            tasks = iter_tasks([path], self.limits)
            self._files[path] = {t.line: t for t in tasks if t.line is not None}
        task = self._files[path].get(int(line))
        if task is None:
            raise _missing(location)
        return dataclasses.replace(task, location=location)


def _location(message: str, help: str | None = None) -> UnmaskError:
    return UnmaskError([Diagnostic(Code.LOCATION, message, help=help)])


def _missing(location: str) -> UnmaskError:
    return _location(
        f"cannot re-read `{location}`: no such replay",
        help="run where the audit ran, or give that folder as --root",
    )
