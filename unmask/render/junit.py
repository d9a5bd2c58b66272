"""The report as JUnit XML, so a CI server shows audited replays as test cases.

Contract:
- ``render(report, replay) -> str`` (``unmask check --format junit``) and
  ``render_batch(results, name="unmask audit") -> str`` (``unmask audit --junit FILE``) write
  ``<testsuites>`` with one ``<testsuite>`` holding one ``<testcase>`` per replay: name = the
  replay id, classname = ``unmask.PROTOCOL``. SATISFIED passes; VIOLATED is a
  ``<failure type="VIOLATED">``; UNKNOWN is ``<skipped type="UNKNOWN">`` (nothing was proved
  either way, which is not a failure of the judge and not a pass); a replay that could not
  be checked (``Invalid``) is an ``<error type="invalid">``. The message attribute says why
  (the report's reasons), the element text is the text report;
- ``results`` items are ``Report``, ``(Report, Replay | None)`` or ``Invalid``, in the order
  given (the caller sorts);
- the XML is built with ``xml.etree`` (escaping by construction); characters XML 1.0 cannot
  carry (control characters, lone surrogates, U+FFFE/U+FFFF) are written as ``\\xHH`` /
  ``\\uHHHH`` text. No time attributes: same input, same bytes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from unmask.render import text as text_render
from unmask.report import SATISFIED, VIOLATED, Report


@dataclass(frozen=True, slots=True)
class Invalid:
    """A replay of a batch that could not be checked: ``name`` (its id or path) and the
    diagnostics' text."""

    name: str
    message: str


def xml_safe(text: str) -> str:
    """``text`` with every character XML 1.0 forbids written out as an escape sequence."""
    out = []
    for ch in text:
        o = ord(ch)
        if ch in "\t\n\r" or 0x20 <= o < 0xD800 or 0xE000 <= o < 0xFFFE or o > 0xFFFF:
            out.append(ch)
        elif o < 0x100:
            out.append(f"\\x{o:02x}")
        else:
            out.append(f"\\u{o:04x}")
    return "".join(out)


def _message(report: Report) -> str:
    if not report.reasons:
        return report.overall
    return f"{report.overall}: " + "; ".join(r.message for r in report.reasons)


def _case(item: Any) -> ET.Element:
    if isinstance(item, Invalid):
        case = ET.Element("testcase", {"name": xml_safe(item.name), "classname": "unmask"})
        err = ET.SubElement(
            case, "error", {"type": "invalid", "message": "the replay could not be checked"}
        )
        err.text = xml_safe(item.message)
        return case
    report, replay = item if isinstance(item, tuple) else (item, None)
    case = ET.Element(
        "testcase",
        {"name": xml_safe(report.replay), "classname": xml_safe(f"unmask.{report.protocol}")},
    )
    body = xml_safe(text_render.render(report, replay, color=False))
    if report.overall == VIOLATED:
        el = ET.SubElement(
            case, "failure", {"type": VIOLATED, "message": xml_safe(_message(report))}
        )
        el.text = body
    elif report.overall != SATISFIED:
        el = ET.SubElement(
            case, "skipped", {"type": report.overall, "message": xml_safe(_message(report))}
        )
        el.text = body
    else:
        out = ET.SubElement(case, "system-out")
        out.text = body
    return case


def render_batch(results: Iterable[Any], name: str = "unmask audit") -> str:
    cases = [_case(item) for item in results]
    counts = {"failure": 0, "skipped": 0, "error": 0}
    for c in cases:
        for tag in counts:
            if c.find(tag) is not None:
                counts[tag] += 1
    common = {
        "name": xml_safe(name),
        "tests": str(len(cases)),
        "failures": str(counts["failure"]),
        "errors": str(counts["error"]),
    }
    root = ET.Element("testsuites", dict(common))
    suite = ET.SubElement(root, "testsuite", {**common, "skipped": str(counts["skipped"])})
    suite.extend(cases)
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def render(report: Report, replay: Any = None) -> str:
    return render_batch([(report, replay)], name="unmask check")
