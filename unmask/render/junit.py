"""The report as JUnit XML, so a CI server shows audited replays as test cases.

Contract:
- one test case per replay, built in one place (``Case``): name = the replay id, classname
  = ``unmask.PROTOCOL``. SATISFIED passes (its text in ``<system-out>``); VIOLATED is
  a ``<failure type="VIOLATED">``; UNKNOWN is ``<skipped type="UNKNOWN">`` (nothing was
  proved either way, which is not a failure of the judge and not a pass); a replay that
  could not be checked is an ``<error type="invalid">``. The message attribute says why
  (the report's reasons that decided its result, then the others after ``also open (not
  why VIOLATED):``, as the text report splits them: ``words.why``), the element text is the
  text report (in an audit, what the result record says, split the same way);
- ``case(item, text=None)`` makes every ``Case`` from a ``unmask.checking.record.ResultRecord``: of
  a record itself (``unmask audit --junit``: its text is ``record_text``, what the record
  says, so a replay just checked and a line carried over by ``--resume`` give the same
  case), or of a ``Report``, a ``(Report, Replay | None)`` pair (text: the text report) or
  an ``Invalid``, each made a record first;
- ``render(report, replay)`` (``unmask check --format junit``) and ``render_batch(results,
  name="unmask audit")`` write a whole document: ``<testsuites>`` with one ``<testsuite>``;
  ``Suite`` writes the same document to a stream one case at a time (``unmask audit
  --junit FILE``), counting from each case's kind, so memory does not grow with the run;
- a re-check (``--protocol``) is said once, by the suite: ``<properties>`` with
  ``recheck.protocol`` (its name) and ``recheck.digest`` (the JSON report's
  ``recheck``), first in the ``<testsuite>``; a case's text names the annotated atoms it
  left out (the text report's line, and ``record_text``'s);
- the XML is built with ``xml.etree`` (escaping by construction); characters XML 1.0 cannot
  carry (control characters, lone surrogates, U+FFFE/U+FFFF) are written as ``\\xHH`` /
  ``\\uHHHH`` text. No time attributes: same input, same bytes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import IO, Any

from unmask.checking.record import ResultRecord, finding_lines, level_of
from unmask.checking.report import DIMENSIONS, SATISFIED, VIOLATED, Reason, Report
from unmask.plumbing.diagnostics import render_all
from unmask.plumbing.frozen import frozen
from unmask.plumbing.safe import UNSAFE, escape_char
from unmask.render import text as text_render
from unmask.render.words import WHY_ALSO, why
from unmask.review.calibration import WORDS

INVALID_MESSAGE = "the replay could not be checked"
# the suite's properties for a re-check (``--protocol``)
RECHECK_PROTOCOL = "recheck.protocol"
RECHECK_DIGEST = "recheck.digest"
# the element that marks a case, and the suite attribute that counts it
KINDS = {"failure": "failures", "error": "errors", "skipped": "skipped"}


@frozen
class Invalid:
    """A replay of a batch that could not be checked: ``name`` (its id or path) and the
    diagnostics' text."""

    name: str
    message: str


@frozen
class Case:
    """One ``<testcase>``: ``kind`` is ``failure``, ``skipped``, ``error`` or None (passed);
    ``text`` is the element's text (for a pass, the ``<system-out>``; None: no element)."""

    name: str
    classname: str
    kind: str | None = None
    type: str | None = None
    message: str | None = None
    text: str | None = None
    # `--protocol`: (its name, its digest), said once by the suite (``Suite.properties``)
    recheck: tuple[str, str] | None = None

    def element(self) -> ET.Element:
        el = ET.Element("testcase", {"name": xml_safe(self.name), "classname": self.classname})
        child = None
        if self.kind is not None:
            attrs = {"type": xml_safe(self.type or ""), "message": xml_safe(self.message or "")}
            child = ET.SubElement(el, self.kind, attrs)
        elif self.text is not None:
            child = ET.SubElement(el, "system-out")
        if child is not None and self.text is not None:
            child.text = xml_safe(self.text)
        return el

    def xml(self) -> str:
        """The case as it stands inside a suite: indented, one trailing newline."""
        el = self.element()
        ET.indent(el, space="  ", level=2)
        return "    " + ET.tostring(el, "unicode").rstrip() + "\n"


def xml_safe(text: str) -> str:
    """``text`` with every character XML 1.0 forbids, and every one the output policy keeps
    out of documents (``safe.UNSAFE``: controls, bidirectional overrides), written out as an
    escape sequence."""
    out = []
    for ch in text:
        o = ord(ch)
        if (ch in "\t\n" or 0x20 <= o < 0xD800 or 0xE000 <= o < 0xFFFE or o > 0xFFFF) and (
            not UNSAFE.match(ch)
        ):
            out.append(ch)
        else:
            out.append(escape_char(ch))
    return "".join(out)


def _why(record: ResultRecord) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The messages of the record's reasons that decided its result, and of the others
    (``words.why``, as the text report splits them)."""
    codes = record.reason_codes
    if len(codes) != len(record.reasons):  # a record made without codes: nothing to split
        return record.reasons, ()
    pairs = zip(codes, record.reasons, strict=True)
    deciding, also = why(record.overall or "", tuple(Reason(c, "", m) for c, m in pairs))
    return tuple(r.message for r in deciding), tuple(r.message for r in also)


def _message(overall: str, reasons: Iterable[str], also: tuple[str, ...] = ()) -> str:
    reasons = list(reasons)
    if also:  # the reasons that did not decide it follow, said to be so
        reasons.append(f"{WHY_ALSO[overall]} (not why {overall}): " + "; ".join(also))
    return f"{overall}: " + "; ".join(reasons) if reasons else overall


def _result_case(
    name: str,
    protocol: str,
    overall: str,
    reasons: Iterable[str],
    text: str | None,
    also: tuple[str, ...] = (),
) -> Case:
    classname = xml_safe(f"unmask.{protocol}")
    if overall == SATISFIED:
        return Case(name, classname, text=text)
    kind = "failure" if overall == VIOLATED else "skipped"
    return Case(name, classname, kind, overall, _message(overall, reasons, also), text)


def case(
    item: ResultRecord | Report | tuple[Report, Any] | Invalid,
    text: str | None = None,
    trust: Any = None,
) -> Case:
    """The test case of one replay, built from its ``ResultRecord`` (a report, with its
    replay if known, or an ``Invalid`` is made one first). ``text`` is the element's text:
    by default a report's text report, and a record's ``record_text``."""
    if isinstance(item, Invalid):
        return case(ResultRecord(location=item.name, error="invalid"), item.message)
    if isinstance(item, ResultRecord):  # before the pair: a record is a tuple too
        record = item
        body = record_text(record, trust) if text is None else text
    else:
        report, replay = item if isinstance(item, tuple) else (item, None)
        record = ResultRecord.from_report(report)
        body = text_render.render(report, replay, trust=trust) if text is None else text
    recheck = None if record.recheck is None else record.recheck[:2]
    if record.error is not None:
        return Case(record.location, "unmask", "error", "invalid", INVALID_MESSAGE, body, recheck)
    overall = record.overall or ""
    reasons, also = _why(record)
    if trust is not None and overall == VIOLATED:  # the finding's level leads the message
        reasons = (f"{WORDS[level_of(record, trust)]} finding", *reasons)
    made = _result_case(record.replay or "", record.protocol or "", overall, reasons, body, also)
    return made if recheck is None else replace(made, recheck=recheck)


def record_text(record: ResultRecord, trust: Any = None) -> str:
    """What a record alone says of its replay (``unmask audit --junit``, where a replay just
    checked and a line carried over by ``--resume`` must give the same case): an error
    record's diagnostics, or the location, the overall result, the four dimensions and
    the reasons."""
    if record.error is not None:
        return render_all(record.errors)
    dims = ", ".join(f"{d} {r}" for d, r in zip(DIMENSIONS, record.dimensions, strict=False))
    lines = [f"{record.location}: {record.overall}", f"dimensions: {dims}"]
    if record.recheck is not None and record.recheck[2]:
        # the suite names the protocol; which of this replay's annotations it left out is
        # the case's own
        left = ", ".join(f"`{a}`" for a in record.recheck[2])
        lines.append(f"left out, annotated atoms the protocol lacks: {left}")
    reasons, also = _why(record)
    lines += [f"- {reason}" for reason in reasons]
    if also:
        lines.append(f"{WHY_ALSO[record.overall or '']} (not why {record.overall}):")
        lines += [f"- {reason}" for reason in also]
    if trust is not None:
        lines += finding_lines(record, trust)
    return "\n".join(lines)


def _suite_attrs(name: str, counts: Mapping[str, int]) -> tuple[dict[str, str], dict[str, str]]:
    common = {
        "name": xml_safe(name),
        "tests": str(counts["tests"]),
        "failures": str(counts["failures"]),
        "errors": str(counts["errors"]),
    }
    return common, {**common, "skipped": str(counts["skipped"])}


def render_batch(results: Iterable[Any], name: str = "unmask audit", trust: Any = None) -> str:
    cases = [case(item, trust=trust) for item in results]
    counted = Suite(name)
    for c in cases:
        counted.add(c)
    outer, inner = _suite_attrs(name, counted.counts)
    root = ET.Element("testsuites", outer)
    suite = ET.SubElement(root, "testsuite", inner)
    props = counted.properties()
    if props is not None:
        suite.append(props)
    suite.extend(c.element() for c in cases)
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def render(report: Report, replay: Any = None, *, trust: Any = None) -> str:
    return render_batch([(report, replay)], name="unmask check", trust=trust)


def _start_tag(tag: str, attrs: dict[str, str]) -> str:
    # the start tag exactly as ``xml.etree`` writes it, attributes escaped the same way
    return ET.tostring(ET.Element(tag, attrs), "unicode")[: -len(" />")] + ">"


class Suite:
    """Counts cases as they are added; ``write(out, body)`` writes the document around the
    cases' XML (``Case.xml``), read back from ``body`` (a stream the caller kept them in)."""

    def __init__(self, name: str = "unmask audit") -> None:
        self.name = name
        self.counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        self.rechecks: dict[tuple[str, str], None] = {}  # in the order first met

    def add(self, c: Case) -> None:
        """Count ``c`` (its XML for the body is ``c.xml()``)."""
        self.counts["tests"] += 1
        if c.kind is not None:
            self.counts[KINDS[c.kind]] += 1
        if c.recheck is not None:
            self.rechecks[c.recheck] = None

    def properties(self) -> ET.Element | None:
        """``<properties>`` naming the protocol the cases were re-checked against
        (``recheck.protocol`` and ``recheck.digest``, the JSON report's
        ``recheck``), None when none was: a run has one ``--protocol``, and a resumed run
        never mixes two, but each would be named."""
        if not self.rechecks:
            return None
        props = ET.Element("properties")
        for name, digest in self.rechecks:
            ET.SubElement(props, "property", {"name": RECHECK_PROTOCOL, "value": xml_safe(name)})
            ET.SubElement(props, "property", {"name": RECHECK_DIGEST, "value": xml_safe(digest)})
        return props

    def write(self, out: IO[str], body: IO[str]) -> None:
        outer, inner = _suite_attrs(self.name, self.counts)
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        out.write(_start_tag("testsuites", outer) + "\n")
        out.write("  " + _start_tag("testsuite", inner) + "\n")
        props = self.properties()
        if props is not None:
            ET.indent(props, space="  ", level=2)
            out.write("    " + ET.tostring(props, "unicode").rstrip() + "\n")
        for chunk in iter(lambda: body.read(1 << 16), ""):
            out.write(chunk)
        out.write("  </testsuite>\n</testsuites>\n")
