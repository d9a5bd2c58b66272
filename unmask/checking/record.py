"""One checked replay as every batch output sees it: the ``ResultRecord``.

Contract:
- a ``ResultRecord`` is what the summary, the HTML index, the JUnit file and the audit's
  hints read of one result, and nothing else. It is made one way, ``of(line)``, of a result
  line's struct (``unmask.checking.formats``): ``from_report(report, location)`` is the
  record of the report's own line, ``from_line(obj)`` of a parsed line read back from a
  results file (``ResultLine``, ``ReportDoc`` with ``location``, or ``ErrorLine``; one
  of another shape is a ``LineError`` naming the JSON path), so a run that resumes
  writes what a fresh run writes;
- an error record's record has ``error`` (its first diagnostic's code) and ``errors``
  (its diagnostics, read back from their JSON fields), and no report field;
- ``report_json(line)`` gives back the report's JSON (``unmask.report/1``) of a parsed
  line of either form (the first form, the report's JSON as it is, older results files
  hold), so a reader of explanations reads either; for a report,
  ``report_json(result_line(report, loc))`` is ``report.to_json()`` with ``location``
  (tests/checking/test_record.py). A line not of its schema is a ``LineError``; an index that
  names no annotation (an edited file) is left as it is, for the reader to pass over;
- ``same_protocol(record.recheck, protocol_file)`` says whether a result was checked against
  that ``--protocol`` (or, both None, the replay's own): the digest decides, for
  ``audit --resume`` and ``next`` alike.

A named tuple, not a dataclass: a ``--jobs`` run builds one per replay in the parent,
from the pipe, and unpickling a tuple costs a fifth of a slotted dataclass there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from msgspec import UNSET

from unmask.checking.formats import (
    ERROR_SCHEMA,
    REPORT_SCHEMA,
    RESULT_SCHEMA,
    CheckedLine,
    DiagnosticDoc,
    ErrorLine,
    ReportDoc,
    ResultLine,
    read_line,
    report_of,
    result_line,
    to_builtins,
)
from unmask.checking.report import INCONSISTENT, SATISFIED, VIOLATED
from unmask.ir import Span
from unmask.plumbing.codes import read_back
from unmask.plumbing.diagnostics import Diagnostic

if TYPE_CHECKING:
    from unmask.checking.report import Report
    from unmask.review.calibration import Reader, Trust

__all__ = ["CHECKED_SCHEMAS", "ERROR_SCHEMA", "RESULT_SCHEMA", "ResultRecord", "report_json"]

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
    # their codes, in the same order: which of them decided ``overall`` (``render.words.why``)
    reason_codes: tuple[str, ...] = ()
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
        """The record of a report just checked: the record of its own result line."""
        return cls.of(result_line(report, location))

    @classmethod
    def from_line(cls, obj: Any) -> ResultRecord:
        """The record of a parsed result line (a report's JSON, or an error record);
        ``LineError`` (the JSON path, what is wrong) when it is not one."""
        return cls.of(read_line(obj))

    @classmethod
    def of(cls, line: ResultLine | ReportDoc | ErrorLine) -> ResultRecord:
        """The record of a result line: how every record is made."""
        if isinstance(line, ErrorLine):
            return cls(
                location=line.location,
                error=line.errors[0].code if line.errors else "error",
                errors=tuple(_diagnostic(e) for e in line.errors),
                recheck=_recheck(line.recheck),
            )
        verdict = line.verdict
        reqs = line.requirements
        ground = line.grounding
        bases = line.bases
        dims = line.dimensions
        location = line.location
        return cls(
            location="" if location is UNSET else location,  # type: ignore[arg-type]
            replay=line.replay,
            protocol=line.protocol,
            overall=line.overall,
            bases=None if bases is None else (bases.proto, bases.evid, bases.all),
            dimensions=(dims.verdict, dims.procedure, dims.coverage, dims.grounding),
            matches=line.verdict_matches_gold,
            requirements=tuple((r.id, r.status, r.coverage) for r in reqs),
            grounding=tuple((g.judge, g.context, g.status, g.direction) for g in ground),
            observed=verdict.observed,
            gold=line.gold,
            labels=() if verdict.allowed is None else tuple(verdict.allowed),
            item=_set(line.item),
            judge=_set(line.judge),
            reasons=tuple(r.message for r in line.reasons),
            reason_codes=tuple(r.code for r in line.reasons),
            unreviewed=_flags(line, "unreviewed"),
            gold_derived=_flags(line, "gold_derived"),
            confirmed=(
                _confirmed([verdict]),
                _confirmed(reqs),
                None,  # coverage is never VIOLATED (not observable is no violation)
                _confirmed(ground),
            ),
            recheck=_recheck(line.recheck),
            findings=_findings(line),
            passes=_passes(line),
        )


def report_json(line: Mapping[str, Any]) -> dict[str, Any]:
    """The report's JSON (``unmask.report/1``, with ``location``) of a checked replay's
    parsed line of either form (``formats.report_of``); ``LineError`` (the JSON path, what
    is wrong) when it is not a line of its schema."""
    got = read_line(line)
    return to_builtins(got if isinstance(got, ErrorLine) else report_of(got))


def recheck_of(v: Any) -> tuple[str, str, tuple[str, ...]] | None:
    """A parsed line's ``recheck`` as ``ResultRecord.recheck`` holds it, or None when it has
    none; a name or digest that is not a string is ``""`` (``unmask next`` reads only
    ``location`` and this of a line)."""
    if not isinstance(v, Mapping):
        return None
    dropped = v.get("dropped")
    name, digest = v.get("protocol"), v.get("digest")
    return (
        name if isinstance(name, str) else "",
        digest if isinstance(digest, str) else "",
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


def _set(v: Any) -> Any:
    return None if v is UNSET else v


def _recheck(v: Any) -> tuple[str, str, tuple[str, ...]] | None:
    return None if v is UNSET else (v.protocol, v.digest, tuple(v.dropped))


def _diagnostic(e: DiagnosticDoc) -> Diagnostic:
    """The diagnostic an error record's entry was written of."""
    s = e.span
    return Diagnostic(
        code=read_back(e.code),
        message=e.message,
        span=None if s is UNSET else Span(s.file, s.line, s.column, s.end_line, s.end_column),  # type: ignore[union-attr]
        path=_set(e.path),
        file=_set(e.file),
        help=_set(e.help),
        severity=e.severity,
        notes=() if e.notes is UNSET else tuple(e.notes),  # type: ignore[arg-type]
    )


def _flags(line: CheckedLine, flag: str) -> tuple[int, ...]:
    """How many checks of each dimension rest on ``flag`` annotations (a check's field is
    written only when true)."""
    coverage = f"coverage_{flag}"
    reqs = line.requirements
    return (
        int(getattr(line.verdict, flag) is True),
        sum(getattr(r, flag) is True for r in reqs),
        sum(getattr(r, coverage) is True for r in reqs),
        sum(getattr(g, flag) is True for g in line.grounding),
    )


def _confirmed(checks: Sequence[Any]) -> bool | None:
    """None without a VIOLATED check; else whether one rests only on reviewed annotations."""
    hits = [c for c in checks if c.result == VIOLATED]
    if not hits:
        return None
    return any(c.unreviewed is not True and c.gold_derived is not True for c in hits)


def _parts(line: CheckedLine) -> Callable[[Any], list[tuple[Any, str]]]:
    """A function giving the (``by``, atom) of each annotation part of an explanation, of
    a line of either form (an index that names no entry is passed over); ``by`` as its
    JSON fields, or None."""
    entries = line.annotations if isinstance(line, ResultLine) else []

    def parts(expl: Any) -> list[tuple[Any, str]]:
        out = []
        for p in () if expl is None else expl.parts:
            if isinstance(p, int):
                if not 0 <= p < len(entries):
                    continue
                p = entries[p]
            elif p.kind != "annotation" or p.atom is UNSET:
                continue
            out.append((None if p.by is UNSET else to_builtins(p.by), p.atom))
        return out

    return parts


def _findings(line: CheckedLine) -> tuple[tuple[str, tuple[Reader, ...]], ...]:
    """Each VIOLATED check's dimension and the readers of the readings it rests on."""
    checks: list[tuple[str, Any]] = [("verdict", line.verdict)]
    checks += [("procedure", r) for r in line.requirements]
    checks += [("grounding", g) for g in line.grounding]
    hits = [(d, c) for d, c in checks if c.result == VIOLATED]
    if not hits:
        return ()  # most lines: nothing to weigh, and nothing imported for it
    from unmask.review.calibration import readers_of

    parts = _parts(line)
    return tuple(
        (d, readers_of(parts(c.explanation), c.unreviewed is True or c.gold_derived is True))
        for d, c in hits
    )


def _passes(line: CheckedLine) -> tuple[Reader, ...]:
    """A SATISFIED line's: the readers behind its passing checks that rest on unreviewed
    readings, each once (a wrong TRUE can hide a break)."""
    if line.overall != SATISFIED:
        return ()
    checks: list[tuple[Any, Any]] = [(line.verdict.unreviewed, line.verdict.explanation)]
    checks += [(g.unreviewed, g.explanation) for g in line.grounding]
    for r in line.requirements:
        checks += [(r.unreviewed, r.explanation), (r.coverage_unreviewed, r.coverage_explanation)]
    flagged = [e for u, e in checks if u is True]
    if not flagged:
        return ()
    from unmask.review.calibration import readers_of

    parts = _parts(line)
    out: set[Reader] = set()
    for e in flagged:
        out.update(readers_of(parts(e), True))
    return tuple(sorted(out))


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
