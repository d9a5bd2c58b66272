"""Documents for an input that could not be checked, in the formats a CI reads.

Contract: ``render(fmt, name, diagnostics) -> str | None`` is what ``unmask check`` writes on
stdout when the replay at ``name`` is invalid (or checking it failed), so that a pipeline
which parses stdout still gets a valid document that records the error:
- ``sarif``: a log with one run, no results, and an invocation that did not succeed whose
  ``toolExecutionNotifications`` are the diagnostics (code, message, help, and the file,
  line and column or the JSON path they point at);
- ``junit``: ``<testsuites>`` with one ``<testsuite>`` holding one ``<testcase>`` (name =
  ``name``, classname ``unmask``) with an ``<error type="invalid">`` whose text is the
  diagnostics as the command prints them on stderr, exactly like an invalid replay in
  ``unmask audit --junit``;
- every other format: ``None`` (they write nothing; the diagnostics go to stderr).
Deterministic; user text goes through the same policy as every report.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from unmask.plumbing.diagnostics import Diagnostic, render_all
from unmask.plumbing.safe import clean, finish, visible_values
from unmask.render import sarif
from unmask.render.junit import xml_safe


def _location(d: Diagnostic, name: str) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    if d.span is not None and d.span.file:
        out["physicalLocation"] = {
            "artifactLocation": {"uri": sarif.uri(d.span.file)},
            "region": {"startLine": d.span.line, "startColumn": d.span.column},
        }
    elif d.file or d.path is not None:
        out["physicalLocation"] = {"artifactLocation": {"uri": sarif.uri(d.file or name)}}
    if d.path is not None:
        out["logicalLocations"] = [{"fullyQualifiedName": clean(d.path), "kind": "object"}]
    return out or None


def _notification(d: Diagnostic, name: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "level": "error" if d.severity == "error" else "warning",
        "message": {"text": clean(d.message)},
        "descriptor": {"id": d.code},
    }
    loc = _location(d, name)
    if loc is not None:
        out["locations"] = [loc]
    if d.help:
        out["properties"] = {"help": clean(d.help)}
    return out


def sarif_log(name: str, diagnostics: Sequence[Diagnostic], exit_code: int) -> dict[str, Any]:
    """The SARIF log of a replay that could not be checked."""
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "unmask",
                "version": sarif.version(),
                "semanticVersion": sarif.version(),
                "rules": sarif.rules(),
            }
        },
        "invocations": [
            {
                "executionSuccessful": False,
                "exitCode": exit_code,
                "toolExecutionNotifications": [_notification(d, name) for d in diagnostics],
            }
        ],
        "artifacts": [{"location": {"uri": sarif.uri(name)}}],
        "columnKind": "unicodeCodePoints",
        "results": [],
        "properties": {"replay": clean(name), "overall": None, "checked": False},
    }
    return {"$schema": sarif.SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def junit_xml(name: str, text: str) -> str:
    """The JUnit XML of a replay that could not be checked; ``text`` says why."""
    common = {"name": "unmask check", "tests": "1", "failures": "0", "errors": "1"}
    root = ET.Element("testsuites", dict(common))
    suite = ET.SubElement(root, "testsuite", {**common, "skipped": "0"})
    case = ET.SubElement(suite, "testcase", {"name": xml_safe(name), "classname": "unmask"})
    err = ET.SubElement(
        case, "error", {"type": "invalid", "message": "the replay could not be checked"}
    )
    err.text = xml_safe(text)
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def render(
    fmt: str, name: str, diagnostics: Sequence[Diagnostic], exit_code: int, text: str = ""
) -> str | None:
    """The document recording that ``name`` could not be checked, or None for a format
    that has none. ``text``: the diagnostics as printed (default: rendered without source
    excerpts)."""
    if fmt == "sarif":
        log = visible_values(sarif_log(name, diagnostics, exit_code))
        return finish(fmt, json.dumps(log, ensure_ascii=False, indent=2)) + "\n"
    if fmt == "junit":
        return finish(fmt, junit_xml(name, text or render_all(diagnostics)))
    return None
