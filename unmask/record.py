"""One checked replay as every batch output sees it: the ``ResultRecord``.

Contract:
- a ``ResultRecord`` is what the summary, the HTML index, the JUnit file and the audit's
  hints read of one result, and nothing else: ``from_report(report, location)`` makes it
  of a report just checked, ``from_line(obj)`` of a result line (a report's JSON with its
  ``location``, or an error record ``ERROR_SCHEMA``) read back from a results file, and
  the two are equal for a report and its own line (tests/test_record.py), so a run that
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
  (tests/test_record.py);
- ``same_protocol(record.recheck, protocol_file)`` says whether a result was checked against
  that ``--protocol`` (or, both None, the replay's own): the digest decides, for
  ``audit --resume`` and ``next`` alike.

A named tuple, not a dataclass: a ``--jobs`` run builds one per replay in the parent,
from the pipe, and unpickling a tuple costs a fifth of a slotted dataclass there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from json.encoder import encode_basestring as _string  # what the encoder writes a string as
from typing import TYPE_CHECKING, Any, NamedTuple

from unmask.diagnostics import Diagnostic
from unmask.ir import Span
from unmask.report import (
    DIMENSIONS,
    INCONSISTENT,
    VIOLATED,
    AnnotationItem,
    AnnotationTable,
    CheckResult,
    PartId,
)
from unmask.report import SCHEMA as REPORT_SCHEMA
from unmask.safe import json_text

if TYPE_CHECKING:
    from unmask.report import Report

ERROR_SCHEMA = "unmask.error/1"  # the result line of a replay that could not be checked
# a checked replay's line; its first form, the report's JSON as it is, was `unmask.report/1`
RESULT_SCHEMA = "unmask.result/2"
CHECKED_SCHEMAS = (RESULT_SCHEMA, REPORT_SCHEMA)

ResultKey = tuple[str, str | None, str | None]  # requirement id, status, coverage status


class ResultRecord(NamedTuple):
    """What every batch output reads of one result; dimensions, flags and base states
    in ``unmask.report``'s orders (``DIMENSIONS``; ``proto``, ``evid``, ``all``)."""

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
        verdict = obj.get("verdict") if isinstance(obj.get("verdict"), Mapping) else {}
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
        )


def result_line(report: Report, location: str) -> dict[str, Any]:
    """A checked replay's result line (``RESULT_SCHEMA``), before encoding."""
    table = AnnotationTable()
    body = report.to_json(table)
    del body["schema"]
    return {"schema": RESULT_SCHEMA, "location": location, **body, "annotations": table.entries}


# made once: ``json.dumps`` with options builds a new encoder on every call. A line is data
# this module's callers built (a report's JSON, an error record): it has no cycles, so the
# encoder need not keep a set of every object it is inside of
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)
_COMPACT_ASCII = json.JSONEncoder(separators=(",", ":"), check_circular=False)


def encode_line(obj: dict[str, Any]) -> bytes:
    """One compact UTF-8 line ending in a newline (a lone surrogate from the input is
    escaped, so the line stays valid UTF-8)."""
    text = json_text(_COMPACT.encode(obj))  # the output policy: no raw control, no override
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate from the input: escape, stay valid UTF-8
        return _COMPACT_ASCII.encode(obj).encode() + b"\n"


# the keys of a report's JSON (``Report.to_json``) without the optional ones: a template
# keeps the runs of them that do not depend on the replay (``_MIDDLE``, ``_END``) encoded
_HEAD = ("schema", "replay")
_MIDDLE = ("backend", "overall", "bases", "verdict", "requirements", "grounding", "unannotated")
_GOLD = ("gold", "verdict_matches_gold")
_END = ("protocol", "translation", "dimensions", "reasons", "conflicts", "unknown")
_LAYOUT = (*_HEAD, *_MIDDLE, *_GOLD, *_END)


def _fields(obj: dict[str, Any]) -> str:
    """The encoded members of a non-empty object, without its braces."""
    return _COMPACT.encode(obj)[1:-1]


class LineTemplate:
    """The result line of every report that ``unmask.outcomes`` refills from one
    remembered report: the same line but for the location, the replay's id, its gold
    label and optional fields, and the annotations the explanations cite, which come in
    the same parts in the same order. ``of(report)`` encodes the rest once (None when the
    report's JSON is not of the usual layout); ``line(report, location, items)`` gives
    ``encode_line(result_line(report, location))`` for a refilled report whose annotation
    items are ``items`` (by part), or None when that line needs the slow path (a lone
    surrogate to escape)."""

    __slots__ = ("end", "middle", "parts")

    def __init__(self, middle: str, end: str, parts: tuple[PartId, ...]) -> None:
        self.middle = middle
        self.end = end
        self.parts = parts

    @classmethod
    def of(cls, report: Report) -> LineTemplate | None:
        table = AnnotationTable()
        body = report.to_json(table)
        parts = tuple(e.part for e in table.items)
        if tuple(body) != _LAYOUT or len(set(parts)) != len(parts):
            return None  # optional fields, or two annotations of one part: the slow path
        middle = _fields({k: body[k] for k in _MIDDLE})
        end = _fields({k: body[k] for k in _END})
        return cls(middle, end, parts)

    def line(
        self, report: Report, location: str, items: Mapping[PartId, AnnotationItem]
    ) -> bytes | None:
        # strings through the encoder's own string function: an encoder call costs
        # microseconds before it writes anything
        gold, matches = report.gold, report.verdict_matches_gold
        out = [
            _LINE_HEAD,
            _string(location),
            ',"replay":',
            _string(report.replay),
            ",",
            self.middle,
            ',"gold":',
            "null" if gold is None else _string(gold),
            ',"verdict_matches_gold":',
            _CONSTANTS[matches],
            ",",
            self.end,
        ]
        for k, v in report.extra_json().items():
            out += (',"', k, '":', _string(v) if isinstance(v, str) else _COMPACT.encode(v))
        out += (
            ',"annotations":',
            _COMPACT.encode([items[p].entry_json() for p in self.parts]),
            "}",
        )
        text = json_text("".join(out))
        try:
            return text.encode("utf-8") + b"\n"
        except UnicodeEncodeError:
            return None


_LINE_HEAD = _COMPACT.encode({"schema": RESULT_SCHEMA, "location": ""})[:-3]
_CONSTANTS = {None: "null", True: "true", False: "false"}


def _value(v: Any) -> str:
    """A JSON value as the line's encoder writes it; strings (statuses are a ``str``
    enum: its text), None and booleans directly."""
    if isinstance(v, str):
        return _string(v)
    if v is None or v is True or v is False:
        return _CONSTANTS[v]
    return _COMPACT.encode(v)


def write_line(report: Report, location: str) -> bytes | None:
    """``encode_line(result_line(report, location))``, written from the report's objects
    without building its JSON first (an encoder call costs microseconds before it writes
    anything, and a report of 200 claims has a few thousand values); None when the line
    needs the careful path (a lone surrogate to escape). The same bytes: the fields in
    ``Report.to_json``'s order, each annotation referred to in the same order
    (tests/test_record.py holds it to the encoder)."""
    return _write(report, location)[0]


def write_line_template(report: Report, location: str) -> tuple[bytes | None, LineTemplate | None]:
    """``write_line``, and the ``LineTemplate`` of ``report``'s refilled reports, taken
    from the same text (None when two annotations share a part)."""
    line, out, marks, table = _write(report, location)
    parts = tuple(i.part for i in table.items)
    if len(set(parts)) != len(parts):
        return line, None
    m0, m1, e0, e1 = marks
    return line, LineTemplate("".join(out[m0:m1])[1:], "".join(out[e0:e1])[1:], parts)


def _write(
    report: Report, location: str
) -> tuple[bytes | None, list[str], tuple[int, int, int, int], AnnotationTable]:
    """The line, its pieces, where the template's two runs of them start and end (each
    with its leading comma), and the annotations referred to."""
    table = AnnotationTable()
    out: list[str] = [_LINE_HEAD, _string(location), ',"replay":', _value(report.replay)]
    put = out.append
    m0 = len(out)
    put(',"backend":')
    put(_value(report.backend))
    put(',"overall":')
    put(_value(report.overall))
    bases = report.bases
    if bases is None:
        put(',"bases":null')
    else:
        put(',"bases":{"proto":')
        put(_value(bases.proto))
        put(',"evid":')
        put(_value(bases.evid))
        put(',"all":')
        put(_value(bases.all))
        put("}")
    v = report.verdict
    put(',"verdict":{"observed":')
    put(_value(v.observed))
    put(',"status":')
    put(_value(v.result.status))
    put(',"allowed":')
    put("null" if v.allowed is None else _strings(v.allowed))
    _put_result(out, v.result, _PLAIN_KEYS, table)
    put('},"requirements":[')
    first = True
    for r in report.requirements:
        put('{"id":' if first else ',{"id":')
        first = False
        put(_value(r.id))
        put(',"status":')
        put(_value(r.holds.status))
        put(',"coverage":')
        put(_value(r.coverage.status))
        put(',"description":')
        put(_value(r.description))
        _put_result(out, r.holds, _PLAIN_KEYS, table)
        _put_result(out, r.coverage, _COVERAGE_KEYS, table)
        put("}")
    put('],"grounding":[')
    first = True
    for g in report.grounding:
        if not first:
            put(",")
        first = False
        head = (g.judge, g.context, g.result.status, g.direction)
        text = _GROUNDING_TEXT.get(head)
        if text is None:
            j, c, st, d = map(_value, head)
            text = f'{{"judge":{j},"context":{c},"status":{st},"direction":{d}'
            if len(_GROUNDING_TEXT) >= RESULT_TEXTS:
                _GROUNDING_TEXT.clear()
            _GROUNDING_TEXT[head] = text
        put(text)
        _put_result(out, g.result, _PLAIN_KEYS, table)
        put("}")
    put('],"unannotated":')
    put(_strings(report.unannotated))
    m1 = len(out)
    put(',"gold":')
    put(_value(report.gold))
    put(',"verdict_matches_gold":')
    put(_value(report.verdict_matches_gold))
    e0 = len(out)
    put(',"protocol":')
    put(_value(report.protocol))
    put(',"translation":')
    put(_value(report.translation))
    d = report.dimensions
    put(',"dimensions":{"verdict":')
    put(_value(d.verdict))
    put(',"procedure":')
    put(_value(d.procedure))
    put(',"coverage":')
    put(_value(d.coverage))
    put(',"grounding":')
    put(_value(d.grounding))
    put('},"reasons":[')
    first = True
    for reason in report.reasons:
        put('{"code":' if first else ',{"code":')
        first = False
        put(_value(reason.code))
        put(',"subject":')
        put(_value(reason.subject))
        put(',"message":')
        put(_value(reason.message))
        put("}")
    if bases is None:
        put('],"conflicts":null')
    else:
        put('],"conflicts":{"proto":')
        _put_explanation(out, bases.proto_conflict, table)
        put(',"evid":')
        _put_explanation(out, bases.evid_conflict, table)
        put(',"all":')
        _put_explanation(out, bases.all_conflict, table)
        put("}")
    put(',"unknown":')
    put(_strings(report.unknown))
    e1 = len(out)
    for k, x in report.extra_json().items():
        out += (',"', k, '":', _value(x))
    put(',"annotations":')
    put(_COMPACT.encode(table.entries))
    put("}")
    text = json_text("".join(out))
    try:
        line: bytes | None = text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        line = None
    return line, out, (m0, m1, e0, e1), table


# a check result's keys with their separators, as ``CheckResult.put_fields`` names them
_PLAIN_KEYS = tuple(f',"{k}":' for k in ("result", "explanation", "witnesses"))
_PLAIN_FLAGS = (',"unreviewed":true', ',"gold_derived":true')
_COVERAGE_KEYS = tuple(f',"coverage_{k}":' for k in ("result", "explanation", "witnesses"))
_COVERAGE_FLAGS = (',"coverage_unreviewed":true', ',"coverage_gold_derived":true')
_FLAGS = {_PLAIN_KEYS: _PLAIN_FLAGS, _COVERAGE_KEYS: _COVERAGE_FLAGS}


def _strings(values: Any) -> str:
    return "[" + ",".join(map(_value, values)) + "]"


# the text of results that cite no annotation (witnesses, or nothing), by identity: the
# checker shares one such result among the replays of a protocol that reach it
# (``unmask.checker``'s results on the facts); each entry holds its result, so its id
# stays its own
_RESULT_TEXT: dict[tuple[int, tuple[str, ...]], tuple[CheckResult, str]] = {}
RESULT_TEXTS = 8192  # entries, at most; then it starts again
# a grounding check's fields before its result, by their values (a protocol's pairs)
_GROUNDING_TEXT: dict[tuple[Any, ...], str] = {}


def _put_result(
    out: list[str], r: CheckResult, keys: tuple[str, ...], table: AnnotationTable
) -> None:
    if r.explanation is not None:
        _put_cited(out, r, keys, table)
        return
    key = (id(r), keys)
    got = _RESULT_TEXT.get(key)
    if got is None:
        mine: list[str] = []
        _put_cited(mine, r, keys, table)  # cites nothing: the table is not touched
        if len(_RESULT_TEXT) >= RESULT_TEXTS:
            _RESULT_TEXT.clear()
        got = _RESULT_TEXT[key] = (r, "".join(mine))
    out.append(got[1])


def _put_cited(
    out: list[str], r: CheckResult, keys: tuple[str, ...], table: AnnotationTable
) -> None:
    out.append(keys[0])
    out.append(_value(r.outcome))
    out.append(keys[1])
    _put_explanation(out, r.explanation, table)
    out.append(keys[2])
    w = r.witnesses
    if w is None:
        out.append("null")
    else:
        out.append('{"holds":')
        _put_witness(out, w.holds)
        out.append(',"fails":')
        _put_witness(out, w.fails)
        out.append("}")
    if r.unreviewed:
        out.append(_FLAGS[keys][0])
    if r.gold_derived:
        out.append(_FLAGS[keys][1])


def _put_explanation(out: list[str], e: Any, table: AnnotationTable) -> None:
    if e is None:
        out.append("null")
        return
    parts = [
        str(table.ref(i)) if i.kind == "annotation" else _COMPACT.encode(i.to_json())
        for i in e.items
    ]
    out.append('{"minimal":')
    out.append(_value(e.minimal))
    out.append(',"parts":[')
    out.append(",".join(parts))
    out.append("]}")


def _put_witness(out: list[str], w: Any) -> None:
    out.append('{"atoms":[')
    out.append(
        ",".join(
            f'{{"atom":{_value(a.atom)},"value":{_TRUTH[bool(a.value)]},"origin":{_value(a.origin)}}}'
            for a in w.atoms
        )
    )
    out.append("]")
    if w.verdict is not None:
        out.append(',"verdict":')
        out.append(_value(w.verdict))
    out.append(',"canonical":')
    out.append(_value(w.canonical))
    out.append("}")


_TRUTH = {True: '"TRUE"', False: '"FALSE"'}


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
