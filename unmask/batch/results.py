"""An audit's results file read back: `unmask next` and `unmask review` read it this one way.

Contract:
- ``is_results(path, limits)``: a ``.jsonl`` file whose first line that is not blank is a
  JSON object with the ``schema`` of a result line or of an error record
  (``unmask.checking.record``),
  its keys in any order (``jq -S`` sorts them); a file that cannot be read is not one (it
  is then read as replays, whose reader names it and why);
- ``result_lines(path, limits)`` yields a ``ResultLine`` for every line that is not blank:
  ``obj`` the parsed line, or ``error`` a ``bad-results`` ``UnmaskError`` naming FILE:LINE
  when the line is longer than ``limits.max_file_bytes``, not JSON, not an object with a
  string ``location``, or of a ``schema`` that is neither (the lines after it are still
  read), or once, an ``io`` error, when the file cannot be opened;
- ``ResultLine.report()`` is a checked line's object once the members a reader of its
  report walks have their shapes (``verdict`` an object, ``requirements``, ``grounding`` and
  ``annotations`` arrays of objects, every annotation's ``by`` an object whose ``kind`` and
  ``name`` are strings and ``reviewed`` a boolean), else a ``bad-results`` ``UnmaskError``
  naming FILE:LINE and the JSON path; ``unmask next``, which reads only ``location``, needs
  none of it;
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

from unmask.checking.record import CHECKED_SCHEMAS, ERROR_SCHEMA
from unmask.ir import Span
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.jsonreader import index_path, join_path, kind
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
        """The checked line's object, its report's shape checked (see the module)."""
        assert self.obj is not None
        problem = _misshapen(self.obj)
        if problem is None:
            return self.obj
        path, expected, found = problem
        file = self.where.rpartition(":")[0]
        diag = Diagnostic(
            "bad-results",
            f"{path}: expected {expected}, found {kind(found)}",
            span=Span(file, self.n, 1, self.n, 1),
            path=path,
            help="write results with `unmask audit --out`; this line was edited",
        )
        raise UnmaskError([diag])


def _misshapen(obj: dict[str, Any]) -> tuple[str, str, Any] | None:
    """(JSON path, what was expected, what is there) of the first member of a result line
    that a reader of its report cannot walk, or None."""
    v = obj.get("verdict")
    if v is not None and not isinstance(v, dict):
        return "verdict", "an object", v
    checks: list[tuple[str, Any]] = [("verdict", v)] if v is not None else []
    for key in ("requirements", "grounding", "annotations"):
        rows = obj.get(key)
        if rows is None:
            continue
        if not isinstance(rows, list):
            return key, "an array", rows
        for i, row in enumerate(rows):
            at = index_path(key, i)
            if not isinstance(row, dict):
                return at, "an object", row
            if key == "annotations":
                bad = _by(row, at)
                if bad is not None:
                    return bad
            else:
                checks.append((at, row))
    for at, check in checks:  # the parts written in place (a report's own form)
        for name in ("explanation", "coverage_explanation"):
            e = check.get(name)
            parts = e.get("parts") if isinstance(e, dict) else None
            for i, part in enumerate(parts if isinstance(parts, list) else ()):
                if isinstance(part, dict):
                    bad = _by(part, index_path(join_path(join_path(at, name), "parts"), i))
                    if bad is not None:
                        return bad
    return None


def _by(entry: dict[str, Any], at: str) -> tuple[str, str, Any] | None:
    by = entry.get("by")
    if by is None:
        return None
    if not isinstance(by, dict):
        return join_path(at, "by"), "an object", by
    for key, want, ok in (
        ("kind", "a string", str),
        ("name", "a string", str),
        ("reviewed", "`true` or `false`", bool),
    ):
        if key in by and not isinstance(by[key], ok):
            return join_path(join_path(at, "by"), key), want, by[key]
    return None


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
            n, f"{path}:{n}", error=UnmaskError([Diagnostic("bad-results", message, span=span)])
        )

    from unmask.plumbing.jsonload import over_values

    try:
        fh = open(path, "rb")  # noqa: SIM115 (closed below)
    except OSError as exc:  # gone or locked since `is_results` looked: one message
        why = (exc.strerror or "it cannot be opened").lower()
        diag = Diagnostic("io", f"cannot read `{path}`: {why}", file=path)
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
            obj = _parse(raw)
            if obj is None:
                yield bad(n, "not a result line: not valid JSON")
            elif not isinstance(obj, dict) or not isinstance(obj.get("location"), str):
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
    return UnmaskError([Diagnostic("location", message, help=help)])


def _missing(location: str) -> UnmaskError:
    return _location(
        f"cannot re-read `{location}`: no such replay",
        help="run where the audit ran, or give that folder as --root",
    )
