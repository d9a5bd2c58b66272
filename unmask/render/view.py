"""The view model every report format reads: checks as a flat list, evidence marks, segments.

Contract:
- ``RULES`` (one ``Rule`` per kind of result, keyed by dimension or ``base``,
  ``translation``, ``replay``) and ``DIMENSIONS`` are the one table and the one order all
  formats use;
- ``checks(report)`` lists every check in report order (verdict, requirements, coverage,
  grounding), each with its dimension, rule id (``unmask/verdict`` …), a title and the JSON
  path of the check inside the report; the formats only choose how to show them;
- ``marks(replay)`` lists every evidence span of every annotation with its atom, role, value
  and explanation, and a stable id (``ev-A-E``: annotation index, evidence index);
- ``segments(text, marks)`` cuts a source text at every span boundary, so overlapping and
  nested spans become a flat sequence of pieces, each knowing how many spans cover it and
  the innermost few of them (``SHOWN``), so a page stays linear in the replay however
  deeply spans nest. Offsets are Unicode code points, which is what Python ``str``
  indexing counts, so slicing happens here and nowhere else (never in a browser);
- ``provenance(by)`` words who made an annotation (``rule wice-citations/1, unreviewed``)
  and ``resting(result, lookup)`` says what a check rests on ("rests on 2 unreviewed
  annotations"): the annotations of its explanation, or those pinned in its witnesses
  (these, ``Lookup`` and the dimensions' titles live in ``unmask.render.words``, which the
  text format imports alone, and are re-exported here);
- user text goes through ``unmask.plumbing.safe``. Everything is deterministic.

Size: the view model every format reads (checks, findings, marks, provenance wording) is
kept in one place so the formats cannot drift apart.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any

from unmask.checking.report import (
    DIMENSIONS as DIMENSIONS,
)
from unmask.checking.report import (
    INCONSISTENT_BASE,
    NOT_CHECKED,
    NOT_SPECIFIED,
    OK,
    REFUTED,
    SATISFIED,
    SOLVER_UNKNOWN,
    UNKNOWN,
    VIOLATED,
    CheckResult,
    Report,
)
from unmask.ir.text import expr_text
from unmask.plumbing.frozen import frozen
from unmask.plumbing.safe import clean as clean

# re-exported: formats read the view, the output policy and the dimension order from here;
# the wording of rules, provenance and standing (all the text format needs) from its module
from unmask.render.words import DIMENSION_QUESTIONS as DIMENSION_QUESTIONS
from unmask.render.words import DIMENSION_TITLES as DIMENSION_TITLES
from unmask.render.words import WHY_ALSO as WHY_ALSO
from unmask.render.words import Lookup as Lookup
from unmask.render.words import calibration_note as calibration_note
from unmask.render.words import decision_rules as decision_rules
from unmask.render.words import first_error as first_error
from unmask.render.words import item_provenance as item_provenance
from unmask.render.words import item_rule as item_rule
from unmask.render.words import named_members as named_members
from unmask.render.words import provenance as provenance
from unmask.render.words import resting as resting
from unmask.render.words import rests_kinds as rests_kinds
from unmask.render.words import rests_on as rests_on
from unmask.render.words import standing as standing
from unmask.render.words import standing_text as standing_text
from unmask.render.words import trust_of as trust_of
from unmask.render.words import whole_reading as whole_reading
from unmask.render.words import why as why


@frozen
class Rule:
    """What a kind of result checks: its id in every format, a name, one sentence, and the
    level of a result that breaks it."""

    id: str
    name: str
    description: str
    level: str


RULES: dict[str, Rule] = {
    "verdict": Rule(
        "unmask/verdict",
        "VerdictEntailment",
        "The stated rationale must force the observed verdict under the protocol.",
        "error",
    ),
    "procedure": Rule(
        "unmask/requirement", "ProceduralCompliance", "Each requirement must be met.", "error"
    ),
    "coverage": Rule(
        "unmask/coverage",
        "Coverage",
        "Each requirement must be observable (addressed) in the replay.",
        "note",
    ),
    "grounding": Rule(
        "unmask/grounding",
        "Grounding",
        "Each claim of the judge must match the independent observation of the context.",
        "error",
    ),
    "base": Rule(
        "unmask/base",
        "ConsistentBase",
        "The facts (and the protocol) must not contradict each other.",
        "warning",
    ),
    "translation": Rule(
        "unmask/translation",
        "ValidTranslation",
        "The protocol's translation must be valid for anything to be checked.",
        "warning",
    ),
    "replay": Rule(
        "unmask/replay",
        "CheckableReplay",
        "A replay needs requirements and grounding pairs to be satisfied.",
        "note",
    ),
}
# a text label (and a symbol) for every result, so colour is never the only signal; keyed
# by str, as results are typed (a result read back from JSON is a plain string)
ICONS: dict[str | None, str] = {
    SATISFIED: "✓",
    OK: "✓",
    VIOLATED: "✗",
    UNKNOWN: "?",
    NOT_CHECKED: "–",
    None: "–",
}
SOURCE_ORDER = ("rationale", "context", "response", "reference", "trace", "protocol")


def label(result: str | None) -> str:
    """``✗ VIOLATED``: the symbol and the word, never the colour alone."""
    word = "NOT CHECKED" if result in (NOT_CHECKED, None) else result
    return f"{ICONS.get(result, '?')} {word}"


@frozen
class Check:
    key: str  # verdict | requirement:ID | coverage:ID | grounding:JUDGE~CONTEXT (or ~>)
    dimension: str  # one of DIMENSIONS
    rule: str
    title: str
    result: CheckResult
    path: str  # where the check is in the JSON report
    direction: str = "~"  # a grounding check's: `~` both ways, `~>` one way

    @property
    def status(self) -> str | None:
        return self.result.status

    @property
    def sides(self) -> tuple[str, str]:
        """A grounding check's judge and context sides, as written."""
        judge, _, context = self.key.removeprefix("grounding:").partition(self.direction)
        return judge, context

    @property
    def outcome(self) -> str | None:
        return self.result.outcome


def checks(report: Report) -> tuple[Check, ...]:
    out = [
        Check(
            "verdict",
            "verdict",
            RULES["verdict"].id,
            f"observed verdict {report.verdict.observed}",
            report.verdict.result,
            "$.verdict",
        )
    ]
    for i, r in enumerate(report.requirements):
        out.append(
            Check(
                f"requirement:{r.id}",
                "procedure",
                RULES["procedure"].id,
                f"requirement {r.id}: {r.description}" if r.description else f"requirement {r.id}",
                r.holds,
                f"$.requirements[{i}]",
            )
        )
    for i, r in enumerate(report.requirements):
        if r.coverage.status == NOT_SPECIFIED:
            continue
        out.append(
            Check(
                f"coverage:{r.id}",
                "coverage",
                RULES["coverage"].id,
                f"requirement {r.id} addressed",
                r.coverage,
                f"$.requirements[{i}].coverage",
            )
        )
    for i, g in enumerate(report.grounding):
        out.append(
            Check(
                f"grounding:{g.pair}",
                "grounding",
                RULES["grounding"].id,
                f"grounding {g.judge} {g.direction} {g.context}",
                g.result,
                f"$.grounding[{i}]",
                g.direction,
            )
        )
    return tuple(out)


def not_specified(report: Report) -> tuple[str, ...]:
    """Requirement ids without a coverage expression."""
    return tuple(r.id for r in report.requirements if r.coverage.status == NOT_SPECIFIED)


@frozen
class Mark:
    id: str  # ev-A-E
    atom: str
    role: str
    description: str
    value: str
    explanation: str
    source: str
    start: int
    end: int
    quote: str
    path: str  # the evidence span in the replay JSON
    whole: bool = False  # a reading of the whole source: nothing quoted, nothing marked


def marks(replay: Any, lookup: Lookup | None = None) -> tuple[Mark, ...]:
    if replay is None:
        return ()
    look = lookup or Lookup(replay)
    out = []
    for ai, ann in enumerate(replay.annotations):
        for ei, ev in enumerate(ann.evidence):
            out.append(
                Mark(
                    id=f"ev-{ai}-{ei}",
                    atom=ann.atom,
                    role=look.role(ann.atom),
                    description=look.description(ann.atom),
                    value=ann.value,
                    explanation=ann.explanation,
                    source=ev.source,
                    start=ev.start,
                    end=ev.end,
                    quote=ev.quote,
                    path=f"$.annotations[{ann.index}].evidence[{ei}]",
                    whole=ev.whole,
                )
            )
    return tuple(out)


def mark_index(ms: Iterable[Mark]) -> dict[tuple[str, str, int, int], Mark]:
    """Find the mark of an explanation's quote: (atom, source, start, end) -> mark."""
    out: dict[tuple[str, str, int, int], Mark] = {}
    for m in ms:
        out.setdefault((m.atom, m.source, m.start, m.end), m)
    return out


# a piece of text names at most this many of the spans covering it (the innermost ones),
# so that n nested spans cost O(n), not O(n²), in every format; the count says the rest
SHOWN = 3


@frozen
class Segment:
    text: str
    marks: tuple[Mark, ...]  # the innermost SHOWN spans covering this piece, in mark order
    depth: int  # how many spans cover this piece
    starts: tuple[Mark, ...]  # spans that begin with this piece (anchor targets)
    ends: tuple[Mark, ...]  # spans that end with this piece (their labels follow it)


def segments(text: str, ms: Sequence[Mark]) -> tuple[Segment, ...]:
    """Cut ``text`` at every span boundary; spans outside the text are left out.

    Innermost means shortest (the first in mark order among equals): for nested spans, the
    ones nearest the piece."""
    n = len(text)
    starts: dict[int, list[tuple[int, Mark]]] = {}
    ends: dict[int, list[tuple[int, Mark]]] = {}
    for i, m in enumerate(ms):
        # a whole reading marks no span: bolding all of a source would hide the quotes in it
        if 0 <= m.start < m.end <= n and not m.whole:
            starts.setdefault(m.start, []).append((i, m))
            ends.setdefault(m.end, []).append((i, m))
    cuts = sorted({0, n, *starts, *ends})
    active: list[tuple[int, int]] = []  # (length, mark order) of the spans open, sorted
    out = []
    for a, b in pairwise(cuts):
        for i, m in ends.get(a, ()):
            del active[bisect_left(active, (m.end - m.start, i))]
        for i, m in starts.get(a, ()):
            insort(active, (m.end - m.start, i))
        shown = tuple(ms[i] for i in sorted(i for _, i in active[:SHOWN]))
        out.append(
            Segment(
                text=clean(text[a:b]),
                marks=shown,
                depth=len(active),
                starts=tuple(m for _, m in starts.get(a, ())),
                ends=tuple(m for _, m in ends.get(b, ())),
            )
        )
    return tuple(out)


def finding(report: Report, check: Check, replay: Any, lookup: Lookup | None = None) -> str:
    """One plain sentence saying what a violated or unknown check means."""
    look = lookup or Lookup(replay)
    status = check.status
    if status == SOLVER_UNKNOWN:
        detail = f" ({check.result.detail})" if check.result.detail else ""
        return f"The solver gave no answer for this check{detail}; nothing is concluded."
    if status == INCONSISTENT_BASE:
        return "The base this check is classified against is inconsistent; nothing follows."
    if status is None:
        return "Not checked: the translation of the protocol is not valid."
    if check.dimension == "grounding":
        judge, context = check.sides
        if judge not in look.decls or context not in look.decls:
            return _grounding_sides(check, judge, context)
        jv, cv = look.value(judge), look.value(context)
        jd = look.description(judge) or judge
        cd = look.description(context) or context
        if status == REFUTED:
            return (
                f"The judge's claim does not match the context: “{jd}” is {jv}, "
                f"but the independent observation “{cd}” is {cv}."
            )
        return (
            f"Whether the judge's claim “{jd}” ({jv}) matches the observation “{cd}” ({cv}) "
            "is not settled by the annotations."
        )
    if check.dimension == "verdict":
        observed = report.verdict.observed
        if look.protocol is not None and look.protocol.declared_labels:
            return _label_finding(report, status, look)
        rule = look.rule(None)
        rule = f" `{rule}`" if rule else ""
        if status == REFUTED:
            other = "FAIL" if observed == "PASS" else "PASS"
            return (
                f"The rationale contradicts the observed verdict {observed}: under the "
                f"protocol's decision rule{rule}, the annotated facts force {other}."
            )
        return (
            f"The rationale does not force the observed verdict {observed}: under the "
            f"decision rule{rule}, the annotations leave it open."
        )
    rid = check.key.split(":", 1)[1]
    req = look.reqs.get(rid)
    name = f"“{req.description}” (`{rid}`)" if req is not None and req.description else f"`{rid}`"
    if check.dimension == "procedure":
        holds = "" if req is None else f": `{expr_text(req.expr)}` is false given the annotations"
        if status == REFUTED:
            return f"The requirement {name} is broken{holds}."
        return f"Whether the requirement {name} was met is not settled by the annotations."
    if check.dimension == "coverage":
        if status == REFUTED:
            return (
                f"The requirement {name} was not observable in this replay (not addressed): "
                "that is unknown, not a violation."
            )
        return f"Whether the requirement {name} was observable is not settled by the annotations."
    return check.title


def _grounding_sides(check: Check, judge: str, context: str) -> str:
    """The finding of a grounding check whose sides are expressions, not single atoms."""
    if check.status == REFUTED and check.direction == "~>":
        return (
            f"The judge asserts `{judge}`, but the independent observation `{context}` "
            "does not back it."
        )
    if check.status == REFUTED:
        return (
            f"The judge's claim `{judge}` does not match the independent observation `{context}`."
        )
    return (
        f"Whether the judge's claim `{judge}` matches the observation `{context}` "
        "is not settled by the annotations."
    )


def _label_finding(report: Report, status: str | None, look: Lookup) -> str:
    """The verdict finding of a protocol that declares its labels."""
    observed = report.verdict.observed
    rule = look.rule(observed)
    rule = f" `decision {rule}`" if rule else ""
    allowed = getattr(report.verdict, "allowed", None)
    if status == REFUTED:
        tail = ""
        if allowed:
            tail = f"; they allow only {', '.join(allowed)}"
        return (
            f"The rationale rules out the observed verdict {observed}: under the protocol's "
            f"decision{rule}, the annotated facts do not allow it{tail}."
        )
    tail = f" (it allows {', '.join(allowed)})" if allowed else ""
    return (
        f"The rationale does not force the observed verdict {observed}: under the "
        f"decision{rule}, the annotations leave it open{tail}."
    )
