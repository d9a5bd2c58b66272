"""One checked replay as every batch output sees it: the ``ResultRecord``.

Contract:
- a ``ResultRecord`` is what the summary, the HTML index, the JUnit file and the audit's
  hints read of one result, and nothing else: ``from_report(report, location)`` makes it
  of a report just checked, ``from_line(obj)`` of a result line (a report's JSON with its
  ``location``, or an error record ``ERROR_SCHEMA``) read back from a results file, and
  the two are equal for a report and its own line (tests/checking/test_record.py), so a run that
  resumes writes what a fresh run writes;
- an error record's record has ``error`` (its first diagnostic's code) and ``errors``
  (its diagnostics, read back from their JSON fields), and no report field;
- ``from_line`` reads what ``unmask.batch.records.line_problem`` accepts, and takes a
  field of another type as absent, never raises;
- ``result_line(report, location)`` is a checked replay's line (``RESULT_SCHEMA``): the
  report's JSON with ``location`` after ``schema``, each annotation an explanation or a
  conflict rests on written once, in ``annotations`` at the end, and referred to by its
  index there. ``report_json(line)`` gives back the report's JSON of such a line, or of
  a line of the first form (``unmask.report/1``: the report's JSON as it is, which older
  results files hold), so a reader of explanations reads either; for a report,
  ``report_json(result_line(report, loc))`` is ``report.to_json()`` with ``location``
  (tests/checking/test_record.py); ``unmask.checking.linewriter`` writes it as bytes;
- ``same_protocol(record.recheck, protocol_file)`` says whether a result was checked against
  that ``--protocol`` (or, both None, the replay's own): the digest decides, for
  ``audit --resume`` and ``next`` alike.

A named tuple, not a dataclass: a ``--jobs`` run builds one per replay in the parent,
from the pipe, and unpickling a tuple costs a fifth of a slotted dataclass there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from unmask.checking.report import DIMENSIONS, INCONSISTENT, VIOLATED, AnnotationTable, CheckResult
from unmask.checking.report import SCHEMA as REPORT_SCHEMA
from unmask.ir import Span
from unmask.plumbing.diagnostics import Diagnostic

if TYPE_CHECKING:
    from unmask.checking.report import Report
    from unmask.review.calibration import Reader, Trust

ERROR_SCHEMA = "unmask.error/1"  # the result line of a replay that could not be checked
# a checked replay's line; its first form, the report's JSON as it is, was `unmask.report/1`
RESULT_SCHEMA = "unmask.result/2"
CHECKED_SCHEMAS = (RESULT_SCHEMA, REPORT_SCHEMA)

ResultKey = tuple[str, str | None, str | None]  # requirement id, status, coverage status


class ResultRecord(NamedTuple):
    """What every batch output reads of one result; dimensions, flags and base states
    in ``unmask.checking.report``'s orders (``DIMENSIONS``; ``proto``, ``evid``, ``all``)."""

    location: str = ""
    error: str | None = None  # an error record's first diagnostic code; then no report
    errors: tuple[Diagnostic, ...] = ()
    replay: str | None = None  # the replay's id
    protocol: str | None = None  # the protocol's name
    overall: str | None = None
    bases: tuple[str | None, str | None, str | None] | None = None  # proto, evid, all
    dimensions: tuple[str | None, ...] = ()
    matches: bool | None = None  # verdict_matches_gold
    requirements: tuple[ResultKey, ...] = ()
    # judge, context, status, direction (`~` both ways, `~>` one way)
    grounding: tuple[tuple[str, str, str | None, str], ...] = ()
    observed: str | None = None
    gold: str | None = None
    labels: tuple[str, ...] = ()  # the labels the report names (`allowed`), in its order
    item: str | None = None
    judge: str | None = None
    reasons: tuple[str, ...] = ()  # the messages of the report's reasons
    # per dimension: checks resting on unreviewed / gold-derived annotations
    unreviewed: tuple[int, ...] = (0, 0, 0, 0)
    gold_derived: tuple[int, ...] = (0, 0, 0, 0)
    # per dimension: None where nothing is VIOLATED; True where some VIOLATED check rests only
    # on reviewed annotations (a confirmed finding), False where every one is provisional
    confirmed: tuple[bool | None, ...] = (None, None, None, None)
    # `--protocol`: (its name, its digest, the annotated atoms it lacks); None: the replay's
    # own protocol. An error record of such a run carries it too, with no atoms
    recheck: tuple[str, str, tuple[str, ...]] | None = None
    # per VIOLATED check, in report order: its dimension and the readers (kind, name,
    # version, atom family) of the unreviewed or gold-derived readings it rests on; none
    # for a confirmed finding. What a calibration weighs (``level_of``)
    findings: tuple[tuple[str, tuple[Reader, ...]], ...] = ()
    # a SATISFIED replay's: the readers of the unreviewed readings its passing checks rest
    # on (a wrong TRUE can hide a break), each once; what a calibration weighs of a pass
    passes: tuple[Reader, ...] = ()

    @property
    def protocol_contradicts_itself(self) -> bool:
        """The protocol's own base is inconsistent: no replay of it can be checked."""
        return self.bases is not None and self.bases[0] == INCONSISTENT

    @classmethod
    def from_report(cls, report: Report, location: str = "") -> ResultRecord:
        """The record of a report just checked (the one its result line gives back)."""
        bases = report.bases
        verdict = report.verdict
        reqs = report.requirements
        ground = report.grounding
        dims = report.dimensions
        return cls(
            location=location,
            replay=report.replay,
            protocol=report.protocol,
            overall=report.overall,
            bases=None if bases is None else (bases.proto, bases.evid, bases.all),
            dimensions=(dims.verdict, dims.procedure, dims.coverage, dims.grounding),
            matches=report.verdict_matches_gold,
            requirements=tuple((r.id, r.holds.status, r.coverage.status) for r in reqs),
            grounding=tuple((g.judge, g.context, g.result.status, g.direction) for g in ground),
            observed=verdict.observed,
            gold=report.gold,
            labels=() if verdict.allowed is None else tuple(verdict.allowed),
            item=report.item,
            judge=report.judge,
            reasons=tuple(r.message for r in report.reasons),
            unreviewed=_report_flags(report, "unreviewed"),
            gold_derived=_report_flags(report, "gold_derived"),
            confirmed=(
                _confirmed([verdict.result]),
                _confirmed([r.holds for r in reqs]),
                None,  # coverage is never VIOLATED (not observable is no violation)
                _confirmed([g.result for g in ground]),
            ),
            recheck=None
            if report.recheck is None
            else (report.recheck.protocol, report.recheck.digest, report.recheck.dropped),
            findings=_report_findings(report),
            passes=_report_passes(report),
        )

    @classmethod
    def from_line(cls, obj: Mapping[str, Any]) -> ResultRecord:
        """The record of a result line, parsed (a report's JSON or an error record)."""
        location = _text(obj.get("location")) or ""
        if obj.get("schema") == ERROR_SCHEMA:
            entries = [e for e in obj.get("errors") or () if isinstance(e, Mapping)]
            codes = [e.get("code", "error") for e in entries]
            return cls(
                location=location,
                error=str(codes[0]) if codes else "error",
                errors=tuple(diagnostic_from_json(e) for e in entries),
                recheck=recheck_of(obj.get("recheck")),
            )
        dims = obj.get("dimensions") or {}
        verdict = obj.get("verdict")
        verdict = verdict if isinstance(verdict, Mapping) else {}
        allowed = verdict.get("allowed")
        bases = obj.get("bases")
        return cls(
            location=location,
            replay=_text(obj.get("replay")),
            protocol=_text(obj.get("protocol")),
            overall=obj.get("overall"),
            bases=(bases.get("proto"), bases.get("evid"), bases.get("all"))
            if isinstance(bases, Mapping)
            else None,
            dimensions=tuple(dims.get(d) for d in DIMENSIONS),
            matches=obj.get("verdict_matches_gold"),
            requirements=tuple(
                (str(r.get("id")), r.get("status"), r.get("coverage"))
                for r in obj.get("requirements") or ()
            ),
            grounding=tuple(
                (
                    str(g.get("judge")),
                    str(g.get("context")),
                    g.get("status"),
                    "~>" if g.get("direction") == "~>" else "~",
                )
                for g in obj.get("grounding") or ()
            ),
            observed=_text(verdict.get("observed")),
            gold=_text(obj.get("gold")),
            labels=tuple(x for x in allowed if isinstance(x, str))
            if isinstance(allowed, list)
            else (),
            item=_text(obj.get("item")),
            judge=_text(obj.get("judge")),
            reasons=tuple(
                _text(r.get("message")) or ""
                for r in obj.get("reasons") or ()
                if isinstance(r, Mapping)
            ),
            unreviewed=_line_flags(obj, "unreviewed"),
            gold_derived=_line_flags(obj, "gold_derived"),
            confirmed=_line_confirmed(obj),
            recheck=recheck_of(obj.get("recheck")),
            findings=_line_findings(obj),
            passes=_line_passes(obj),
        )


def result_line(report: Report, location: str) -> dict[str, Any]:
    """A checked replay's result line (``RESULT_SCHEMA``), before encoding."""
    table = AnnotationTable()
    body = report.to_json(table)
    del body["schema"]
    return {"schema": RESULT_SCHEMA, "location": location, **body, "annotations": table.entries}


def report_json(line: Mapping[str, Any]) -> dict[str, Any]:
    """The report's JSON (``unmask.report/1``, with ``location``) of a checked replay's
    line of either form. An index that names no entry of ``annotations`` (an edited
    file) is left as it is, for the reader to pass over as a malformed part."""
    out = dict(line)
    if out.get("schema") != RESULT_SCHEMA:
        return out
    out["schema"] = REPORT_SCHEMA
    table = out.pop("annotations", None)
    entries = table if isinstance(table, list) else []

    def part(p: Any) -> Any:
        if isinstance(p, int) and not isinstance(p, bool) and 0 <= p < len(entries):
            e = entries[p]
            if isinstance(e, Mapping):
                return {"part": f"fact:{e.get('atom')}", "kind": "annotation", **e}
        return p

    def expl(e: Any) -> Any:
        if isinstance(e, Mapping) and isinstance(e.get("parts"), list):
            return {**e, "parts": [part(p) for p in e["parts"]]}
        return e

    def check(c: Any, prefixes: tuple[str, ...] = ("",)) -> Any:
        if not isinstance(c, Mapping):
            return c
        c = dict(c)
        for p in prefixes:
            if f"{p}explanation" in c:
                c[f"{p}explanation"] = expl(c[f"{p}explanation"])
        return c

    if "verdict" in out:
        out["verdict"] = check(out["verdict"])
    for key, prefixes in (("requirements", ("", "coverage_")), ("grounding", ("",))):
        if isinstance(out.get(key), list):
            out[key] = [check(c, prefixes) for c in out[key]]
    if isinstance(out.get("conflicts"), Mapping):
        out["conflicts"] = {k: expl(v) for k, v in out["conflicts"].items()}
    return out


def _text(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def recheck_of(v: Any) -> tuple[str, str, tuple[str, ...]] | None:
    """A line's ``recheck`` (``Recheck.to_json``) as ``ResultRecord.recheck`` holds it, or
    None when it has none; a name or digest that is not a string is ``""``."""
    if not isinstance(v, Mapping):
        return None
    dropped = v.get("dropped")
    return (
        _text(v.get("protocol")) or "",
        _text(v.get("digest")) or "",
        tuple(a for a in dropped if isinstance(a, str)) if isinstance(dropped, list) else (),
    )


def same_protocol(recheck: tuple[str, str, tuple[str, ...]] | None, against: Any) -> bool:
    """Whether a result whose ``recheck`` is this (None: checked against the replay's own
    protocol) was checked against ``against``, a ``ProtocolFile`` (None: each replay's own).

    The digest decides: it is the SHA-256 of the protocol file's text, and the name is read
    from that text, so the same digest is the same protocol whatever the line's name says
    (``ProtocolFile`` equality is the digest's too); a ``recheck`` without a digest is
    checked against no protocol anyone can name, and matches none. ``unmask audit --resume``
    and ``unmask next`` both ask this."""
    if recheck is None or against is None:
        return recheck is None and against is None
    return recheck[1] == against.digest


def _on(result: CheckResult, flag: str) -> int:
    return int(getattr(result, flag) > 0)


def _report_flags(report: Report, flag: str) -> tuple[int, ...]:
    """How many checks of each dimension rest on ``flag`` annotations (as the line says)."""
    reqs = report.requirements
    return (
        _on(report.verdict.result, flag),
        sum(_on(r.holds, flag) for r in reqs),
        sum(_on(r.coverage, flag) for r in reqs),
        sum(_on(g.result, flag) for g in report.grounding),
    )


def _line_flags(obj: Mapping[str, Any], flag: str) -> tuple[int, ...]:
    """``_report_flags`` read back from a line: a check's field is written only when true."""

    def on(entry: Any, key: str) -> int:
        return int(isinstance(entry, Mapping) and entry.get(key) is True)

    reqs = [r for r in obj.get("requirements") or () if isinstance(r, Mapping)]
    return (
        on(obj.get("verdict"), flag),
        sum(on(r, flag) for r in reqs),
        sum(on(r, f"coverage_{flag}") for r in reqs),
        sum(on(g, flag) for g in obj.get("grounding") or ()),
    )


def _confirmed(results: list[CheckResult]) -> bool | None:
    """None without a VIOLATED check; else whether one rests only on reviewed annotations."""
    hits = [r for r in results if r.outcome == VIOLATED]
    if not hits:
        return None
    return any(not r.unreviewed and not r.gold_derived for r in hits)


def _line_confirmed(obj: Mapping[str, Any]) -> tuple[bool | None, ...]:
    """``_confirmed`` per dimension, read back from a line (flags written only when true)."""

    def found(entries: list[Any]) -> bool | None:
        hits = [e for e in entries if isinstance(e, Mapping) and e.get("result") == VIOLATED]
        if not hits:
            return None
        return any(not e.get("unreviewed") and not e.get("gold_derived") for e in hits)

    reqs = list(obj.get("requirements") or ())
    return (found([obj.get("verdict")]), found(reqs), None, found(list(obj.get("grounding") or ())))


def _report_findings(report: Report) -> tuple[tuple[str, tuple[Reader, ...]], ...]:
    """``ResultRecord.findings`` of a report: each VIOLATED check's readers to measure."""
    dims = report.dimensions  # aggregated without overrides: a VIOLATED check shows here
    if VIOLATED not in (dims.verdict, dims.procedure, dims.grounding):
        return ()  # most reports: nothing to weigh, and nothing imported for it
    from unmask.review.calibration import readers_of

    checks = [("verdict", report.verdict.result)]
    checks += [("procedure", r.holds) for r in report.requirements]
    checks += [("grounding", g.result) for g in report.grounding]
    out = []
    for dimension, r in checks:
        if r.outcome != VIOLATED:
            continue
        items = r.explanation.items if r.explanation is not None else ()
        parts = [(i.by, i.atom) for i in items if i.kind == "annotation"]  # type: ignore[union-attr]
        out.append((dimension, readers_of(parts, bool(r.unreviewed or r.gold_derived))))
    return tuple(out)


def _report_passes(report: Report) -> tuple[Reader, ...]:
    """``ResultRecord.passes`` of a report: the readers behind a SATISFIED replay's passing
    checks that rest on unreviewed readings."""
    from unmask.checking.report import SATISFIED

    if report.overall != SATISFIED:
        return ()
    results = [report.verdict.result, *(g.result for g in report.grounding)]
    results += [x for r in report.requirements for x in (r.holds, r.coverage)]
    if not any(r.unreviewed for r in results):
        return ()
    from unmask.review.calibration import readers_of

    out: set[Reader] = set()
    for r in results:
        if r.unreviewed:
            items = r.explanation.items if r.explanation is not None else ()
            parts = [(i.by, i.atom) for i in items if i.kind == "annotation"]  # type: ignore[union-attr]
            out.update(readers_of(parts, True))
    return tuple(sorted(out))


def _line_passes(obj: Mapping[str, Any]) -> tuple[Reader, ...]:
    """``_report_passes`` read back from a line of either form."""
    if obj.get("overall") != "SATISFIED":
        return ()
    from unmask.review.calibration import readers_of

    parts = _line_parts(obj)
    checks: list[tuple[Any, str]] = [(obj.get("verdict"), "")]
    checks += [(g, "") for g in obj.get("grounding") or ()]
    checks += [(r, p) for r in obj.get("requirements") or () for p in ("", "coverage_")]
    out: set[Reader] = set()
    for c, prefix in checks:
        if isinstance(c, Mapping) and c.get(f"{prefix}unreviewed") is True:
            out.update(readers_of(parts(c.get(f"{prefix}explanation")), True))
    return tuple(sorted(out))


def _line_parts(obj: Mapping[str, Any]) -> Any:
    """A function giving the (``by``, atom) of each annotation part of an explanation of a
    line of either form (a malformed part, of an edited file, is passed over)."""
    table = obj.get("annotations") if obj.get("schema") == RESULT_SCHEMA else None
    entries = table if isinstance(table, list) else []

    def parts(expl: Any) -> list[tuple[Any, str]]:
        raw = expl.get("parts") if isinstance(expl, Mapping) else None
        out = []
        for p in raw if isinstance(raw, list) else ():
            if isinstance(p, int) and not isinstance(p, bool) and 0 <= p < len(entries):
                p = entries[p]
            elif not (isinstance(p, Mapping) and p.get("kind") == "annotation"):
                continue
            if isinstance(p, Mapping) and isinstance(p.get("atom"), str):
                by = p.get("by")
                out.append((by if isinstance(by, Mapping) else None, p["atom"]))
        return out

    return parts


def _line_findings(obj: Mapping[str, Any]) -> tuple[tuple[str, tuple[Reader, ...]], ...]:
    """``_report_findings`` read back from a line of either form (a malformed part, of an
    edited file, is passed over; the check's flags still count it as unmeasured)."""
    from unmask.review.calibration import readers_of

    parts = _line_parts(obj)
    checks = [("verdict", obj.get("verdict"))]
    checks += [("procedure", r) for r in obj.get("requirements") or ()]
    checks += [("grounding", g) for g in obj.get("grounding") or ()]
    out = []
    for dimension, c in checks:
        if not isinstance(c, Mapping) or c.get("result") != VIOLATED:
            continue
        counted = c.get("unreviewed") is True or c.get("gold_derived") is True
        out.append((dimension, readers_of(parts(c.get("explanation")), counted)))
    return tuple(out)


def level_of(record: ResultRecord, trust: Trust) -> str:
    """A VIOLATED replay's level under a calibration: ``confirmed`` when some finding rests
    on reviewed readings only, else ``trusted`` when some finding's readings are all
    measured and trusted, else ``to_review``."""
    levels = {trust.standing(readers).level for _, readers in record.findings}
    for level in ("confirmed", "trusted"):
        if level in levels:
            return level
    return "to_review"


def finding_lines(record: ResultRecord, trust: Trust) -> list[str]:
    """What a record says of each finding's trust (``unmask audit --junit``)."""
    return [
        f"{dimension} finding: {trust.standing(readers).words()}"
        for dimension, readers in record.findings
    ]


def diagnostic_json(d: Diagnostic) -> dict[str, Any]:
    """A diagnostic's fields as an error record writes them."""
    out: dict[str, Any] = {"code": d.code, "message": d.message, "severity": d.severity}
    if d.file is not None:
        out["file"] = d.file
    if d.path is not None:
        out["path"] = d.path
    if d.span is not None:
        s = d.span
        out["span"] = {
            "file": s.file,
            "line": s.line,
            "column": s.column,
            "end_line": s.end_line,
            "end_column": s.end_column,
        }
    if d.help is not None:
        out["help"] = d.help
    if d.notes:
        out["notes"] = list(d.notes)
    return out


_SPAN_FIELDS = ("line", "column", "end_line", "end_column")


def diagnostic_from_json(e: Mapping[str, Any]) -> Diagnostic:
    """The diagnostic ``diagnostic_json`` wrote (a field of another type is left out)."""
    span = e.get("span")
    if isinstance(span, Mapping) and isinstance(span.get("file"), str):
        numbers = [span.get(k) for k in _SPAN_FIELDS]
        ok = all(isinstance(n, int) and not isinstance(n, bool) for n in numbers)
        span = Span(span["file"], *numbers) if ok else None  # type: ignore[arg-type]
    else:
        span = None
    notes = e.get("notes")
    return Diagnostic(
        code=str(e.get("code", "error")),
        message=str(e.get("message", "")),
        span=span,
        path=_text(e.get("path")),
        file=_text(e.get("file")),
        help=_text(e.get("help")),
        severity=_text(e.get("severity")) or "error",
        notes=tuple(n for n in notes if isinstance(n, str)) if isinstance(notes, list) else (),
    )
