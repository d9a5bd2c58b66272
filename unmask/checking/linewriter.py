"""The audit's result line as bytes: encoded, or written from the report's objects.

Contract:
- ``encode_line(obj)`` writes one compact UTF-8 line ending in a newline (a lone surrogate
  from the input is escaped, so the line stays valid UTF-8), under the output policy
  (``unmask.plumbing.safe.json_text``: no acting character raw);
- ``write_line(report, location)`` is ``encode_line(unmask.checking.record.result_line(report,
  location))``, the same bytes, written from the report's objects without building its
  JSON first; None when the line needs the careful path (a lone surrogate to escape). The
  text of a check result that cites no annotation is kept by the result's identity (the
  checker shares such results between the replays of a protocol), bounded;
- a ``LineTemplate`` is the line of every report ``unmask.checking.outcomes`` refills from one
  remembered report, all but the replay's own fields and the annotations encoded once:
  ``write_line_template`` makes it from a line being written, ``LineTemplate.of`` from a
  report; ``line(report, location, items)`` fills it in, or gives None for the careful
  path. tests/checking/test_record.py and tests/checking/test_outcomes.py hold both to the encoder.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from json.encoder import encode_basestring as _string  # what the encoder writes a string as
from typing import TYPE_CHECKING, Any

from unmask.checking.record import RESULT_SCHEMA
from unmask.checking.report import AnnotationItem, AnnotationTable, CheckResult, PartId
from unmask.plumbing.safe import json_text

if TYPE_CHECKING:
    from unmask.checking.report import Report


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
    """The result line of every report that ``unmask.checking.outcomes`` refills from one
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
    (tests/checking/test_record.py holds it to the encoder)."""
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
    dims = report.dimensions
    put(',"dimensions":{"verdict":')
    put(_value(dims.verdict))
    put(',"procedure":')
    put(_value(dims.procedure))
    put(',"coverage":')
    put(_value(dims.coverage))
    put(',"grounding":')
    put(_value(dims.grounding))
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
# (``unmask.checking.checker``'s results on the facts); each entry holds its result, so its id
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
