"""The result lines of an audit: their two shapes, how they are written, how one is checked.

Contract:
- a checked replay's line is ``unmask.checking.record.result_line``: its report's JSON with
  ``location`` after ``schema`` and each annotation written once (``RESULT_SCHEMA``; a
  results file of an earlier run may hold the report's JSON as it is, ``unmask.report/1``,
  read the same); a replay that could not be checked is an error record ``{"schema":
  ERROR_SCHEMA, "location": ..., "errors": [diagnostic fields ...]}`` (``unmask.checking.record``,
  which reads them all back);
- ``encode_line`` writes one compact UTF-8 line ending in a newline (a lone surrogate from
  the input is escaped, so the line stays valid UTF-8);
- ``line_problem(obj)`` says what is wrong with a parsed line read back for ``--resume``
  (None when every field the audit reads has its type), so a file that is not audit
  output is refused instead of crashing the run.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from unmask.checking.linewriter import encode_line  # noqa: F401 (where the batch engine imports it)
from unmask.checking.record import CHECKED_SCHEMAS, ERROR_SCHEMA, RESULT_SCHEMA, diagnostic_json
from unmask.checking.report import NOT_CHECKED, OK, SATISFIED, UNKNOWN, VIOLATED
from unmask.plumbing.diagnostics import Diagnostic

OVERALL = (SATISFIED, VIOLATED, UNKNOWN)
DIMENSION_RESULTS = (OK, VIOLATED, UNKNOWN, NOT_CHECKED)


def error_record(location: str, diags: Iterable[Diagnostic], recheck: Any = None) -> dict[str, Any]:
    """``recheck``: the run's ``--protocol`` (a ``Recheck``), recorded so that a resumed
    run can tell which protocol this line was checked against."""
    out = {
        "schema": ERROR_SCHEMA,
        "location": location,
        "errors": [diagnostic_json(d) for d in diags],
    }
    if recheck is not None:
        out["recheck"] = recheck.to_json()
    return out


def _str_or_none(v: Any) -> bool:
    return v is None or isinstance(v, str)


def _entries(obj: dict[str, Any], key: str, fields: tuple[str, ...]) -> str | None:
    items = obj.get(key)
    if not isinstance(items, list):
        return f"has no `{key}` list"
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not all(_str_or_none(item.get(f)) for f in fields):
            return f"has a malformed `{key}[{i}]`"
    return None


def line_problem(obj: Any) -> str | None:
    """What makes ``obj`` not an audit result line, or None."""
    if not isinstance(obj, dict):
        return "is not a json object"
    if not isinstance(obj.get("location"), str):
        return "has no `location`"
    schema = obj.get("schema")
    if schema == ERROR_SCHEMA:
        errors = obj.get("errors")
        if not isinstance(errors, list):
            return "has no `errors` list"
        for i, e in enumerate(errors):
            if not isinstance(e, dict) or not all(
                isinstance(e.get(f), str) for f in ("code", "message")
            ):
                return f"has a malformed `errors[{i}]`"
        return None
    if schema not in CHECKED_SCHEMAS:
        return "has no known `schema`"
    if schema == RESULT_SCHEMA and not isinstance(obj.get("annotations"), list):
        return "has no `annotations` list"
    if obj.get("overall") not in OVERALL:
        return "has no valid `overall`"
    for key in ("replay", "protocol"):
        if not isinstance(obj.get(key), str):
            return f"has no `{key}`"
    dims = obj.get("dimensions")
    if not isinstance(dims, dict) or any(v not in DIMENSION_RESULTS for v in dims.values()):
        return "has no valid `dimensions`"
    verdict = obj.get("verdict")
    if not isinstance(verdict, dict) or not _str_or_none(verdict.get("observed")):
        return "has no valid `verdict`"
    if obj.get("verdict_matches_gold") not in (True, False, None):
        return "has no valid `verdict_matches_gold`"
    if not _str_or_none(obj.get("gold")):
        return "has no valid `gold`"
    return (
        _entries(obj, "requirements", ("id", "status", "coverage"))
        or _entries(obj, "grounding", ("judge", "context", "status"))
        or _entries(obj, "reasons", ("message",))
    )
