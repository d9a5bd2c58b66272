"""The result lines of an audit: how one read back for ``--resume`` is checked.

Contract:
- a results file holds result lines (``unmask.checking.formats``: a checked replay's
  ``ResultLine``, ``unmask.result/2``, or the report's JSON as it is, ``unmask.report/1``,
  which an earlier run's file may hold) and error records (``ErrorLine``,
  ``unmask.error/1``); those structs write them and read them back;
- ``line_problem(obj)`` says what is wrong with a parsed line read back for ``--resume``:
  None when it is a line of its schema, else the JSON path and what is wrong there, so a
  file that is not audit output is refused instead of crashing the run.
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from unmask.checking.formats import LineError, ReportDoc, read_line


def line_problem(obj: Any) -> str | None:
    """What makes ``obj`` not an audit result line, or None."""
    if not isinstance(obj, dict):
        return "is not a json object"
    try:
        line = read_line(obj)
    except LineError as exc:
        return f"has `{exc.path}`: {exc.message}" if exc.path else f"is {exc.message}"
    if isinstance(line, ReportDoc) and line.location is UNSET:  # a report, not a line
        return "is missing `location`"
    return None
