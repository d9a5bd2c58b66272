"""The adherence report as frozen data, and its one canonical JSON form.

Contract:
- a ``Report`` is plain data: the checker (``unmask.checking.checker``) fills it in, renderers only
  read it; nothing in it varies between runs (no time, no path), so ``dumps`` is
  byte-identical for the same replay on every backend except for the ``backend`` field;
- its JSON is declared once, in ``unmask.checking.shapes`` (``ReportDoc``: the fixed
  fields first, in their documented order, then the additions, both in
  ``docs/report-format.md``), and built here of the report's objects, never through
  dicts: ``report_doc`` (``to_json`` gives it as plain values, ``dumps`` as text, two-space
  indented as ``json.dumps(..., indent=2)`` writes it) and ``result_line(report,
  location)``, the audit's line (``unmask.result/2``), each annotation an explanation or
  a conflict rests on written once, in ``annotations``, and referred to by its index
  (``AnnotationTable``); ``own_fields`` are what ``unmask.checking.formats.refilled``
  puts in a remembered report's line for another replay. A check's
  fields that cite no annotation, and parts that are not annotations, are kept by the
  identity of the object the checker shares between replays (at most ``KEPT`` each);
- ``gold`` is added after checking (``with_gold``); flipping it changes only ``gold`` and
  ``verdict_matches_gold``; the replay's ``item`` and ``judge`` are added after checking
  too, and appear in the JSON only when the replay has them, as do ``disagreements`` (the
  annotations whose readers did not agree, each reader's reading).
"""

from __future__ import annotations

import json
from dataclasses import field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from unmask.plumbing.frozen import frozen
from unmask.replay.data import Evidence

if TYPE_CHECKING:
    from msgspec import UNSET

    from unmask.checking import shapes as S
else:  # imported at the first JSON built: `unmask check`'s text report needs neither
    S = UNSET = None

SCHEMA = "unmask.report/1"  # shapes.REPORT_SCHEMA (tests/checking/test_formats.py)

if TYPE_CHECKING:
    from unmask.replay.data import Annotation, Provenance, Recheck


class _Word(str, Enum):
    """A word of the report: equal to, hashed as, printed and written to JSON as its
    value, so comparing it with the JSON's plain strings just works (``enum.StrEnum`` is
    Python 3.11 or later; this is the same thing for 3.10)."""

    def __str__(self) -> str:
        return self.value  # type: ignore[no-any-return]

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Status(_Word):
    """What a check established; NOT_SPECIFIED only for a coverage with no ``addressed``."""

    ENTAILED = "ENTAILED"
    REFUTED = "REFUTED"
    UNDERDETERMINED = "UNDERDETERMINED"
    SOLVER_UNKNOWN = "SOLVER_UNKNOWN"
    INCONSISTENT_BASE = "INCONSISTENT_BASE"
    NOT_SPECIFIED = "NOT_SPECIFIED"


class BaseState(_Word):
    """What a base is; SOLVER_UNKNOWN is the same word as the check status."""

    CONSISTENT = "CONSISTENT"
    INCONSISTENT = "INCONSISTENT"
    SOLVER_UNKNOWN = "SOLVER_UNKNOWN"


class Outcome(_Word):
    """What one check contributes (OK, VIOLATED, UNKNOWN), a dimension with no check
    (NOT_CHECKED), and the overall result (SATISFIED, VIOLATED, UNKNOWN)."""

    OK = "OK"
    VIOLATED = "VIOLATED"
    UNKNOWN = "UNKNOWN"
    SATISFIED = "SATISFIED"
    NOT_CHECKED = "NOT_CHECKED"


# the words by their plain names, as the checker and the formats import them
ENTAILED = Status.ENTAILED
REFUTED = Status.REFUTED
UNDERDETERMINED = Status.UNDERDETERMINED
SOLVER_UNKNOWN = Status.SOLVER_UNKNOWN
INCONSISTENT_BASE = Status.INCONSISTENT_BASE
NOT_SPECIFIED = Status.NOT_SPECIFIED
CONSISTENT = BaseState.CONSISTENT
INCONSISTENT = BaseState.INCONSISTENT
BASE_NAMES = ("proto", "evid", "all")
OK = Outcome.OK
VIOLATED = Outcome.VIOLATED
UNKNOWN = Outcome.UNKNOWN
SATISFIED = Outcome.SATISFIED
NOT_CHECKED = Outcome.NOT_CHECKED

# the four dimensions, in the order every report and every format shows them
DIMENSIONS = ("verdict", "procedure", "coverage", "grounding")

EXIT_CODES: dict[str, int] = {SATISFIED: 0, VIOLATED: 1, UNKNOWN: 3}


# one evidence span of an annotation as the report shows it: the replay's own ``Evidence``
# (a span with its quote, or with ``read`` ``whole`` a reading of the whole source),
# shared, not copied: a report cites a few annotations per check, and a copy of each span
# was a fifth of the check at 2,000 claims
Quote = Evidence


@frozen
class PartId:
    """The name of one conjunct of a base, as the checker gives it to a backend and the
    report shows it: ``fact:ATOM``, ``constraint:NAME`` (``constraint:NAME#2`` for a second
    constraint of one name), ``decision`` (a binary protocol's), ``labels`` (exactly one
    declared label holds) and ``decision:LABEL``. Built from its fields and printed by
    ``str``; never parsed back. A backend only hashes and compares it."""

    kind: Literal["fact", "constraint", "decision", "labels"]
    name: str | None = None  # the atom, constraint or label
    n: int = 1  # which constraint of that name (the first is 1)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # cached: a backend looks parts up by their id at every call
        object.__setattr__(self, "_hash", hash((self.kind, self.name, self.n)))

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        if self.name is None:
            return self.kind
        return f"{self.kind}:{self.name}" + (f"#{self.n}" if self.n > 1 else "")

    @staticmethod
    def fact(atom: str) -> PartId:
        return PartId("fact", atom)


@frozen
class AnnotationItem:
    """An annotation the explanation rests on (``by``: who made it, when the replay says)."""

    kind: ClassVar[Literal["annotation"]] = "annotation"
    part: PartId
    atom: str
    value: str
    evidence: tuple[Quote, ...] = ()
    explanation: str | None = None
    by: Provenance | None = None


@frozen
class ConstraintItem:
    """A constraint of the protocol, by ``name``."""

    kind: ClassVar[Literal["constraint"]] = "constraint"
    part: PartId
    name: str


@frozen
class LabelsItem:
    """Exactly one declared label holds."""

    kind: ClassVar[Literal["labels"]] = "labels"
    part: PartId


@frozen
class DecisionItem:
    """The decision rule: a binary protocol's (``label`` None), or one declared label's."""

    kind: ClassVar[Literal["decision"]] = "decision"
    part: PartId
    label: str | None = None


def annotation_item(part: PartId, ann: Annotation) -> AnnotationItem:
    """The item of the annotation ``ann`` an explanation cites as ``part``: its value,
    evidence (the replay's own spans), explanation and provenance."""
    evidence = ann.evidence
    if evidence.__class__ is not tuple:  # an annotation made in code may hold a list
        evidence = tuple(evidence)
    return AnnotationItem(part, ann.atom, ann.value, evidence, ann.explanation, ann.by)


# one part of a base used by an explanation or a conflict; ``kind`` tells them apart
Item = AnnotationItem | ConstraintItem | LabelsItem | DecisionItem


@frozen
class Explanation:
    """A set of parts that forces a result; ``minimal`` is False only if a solver call
    timed out while minimising (the set still forces the result)."""

    items: tuple[Item, ...]
    minimal: bool = True


@frozen
class WitnessAtom:
    atom: str
    value: bool
    origin: str  # "observed" (pinned by an annotation) or "completed" (a possibility)


@frozen
class Witness:
    """One assignment on one side of an UNDERDETERMINED check; ``verdict`` is the label
    the verdict takes on this side (verdict check only)."""

    atoms: tuple[WitnessAtom, ...]
    verdict: str | None = None
    # False when a solver call timed out while completing: the values are still a real
    # assignment of that side, but not necessarily the canonical (least) one
    canonical: bool = True


@frozen
class Witnesses:
    holds: Witness  # the proposition true
    fails: Witness  # the proposition false


@frozen
class CheckResult:
    """One Classify result. ``status`` is None when nothing was solved (translation not
    valid); ``outcome`` is its contribution (OK/VIOLATED/UNKNOWN, None if not a check);
    ``detail`` is the solver's reason for SOLVER_UNKNOWN. ``unreviewed`` and
    ``gold_derived`` count the annotations the result rests on (those in its explanation,
    or pinned in its witnesses) that are not reviewed, or derived from the gold label."""

    status: str | None
    outcome: str | None
    explanation: Explanation | None = None
    witnesses: Witnesses | None = None
    detail: str | None = None
    unreviewed: int = 0
    gold_derived: int = 0


@frozen
class VerdictCheck:
    """The verdict check; ``allowed`` is the labels the evidence and the protocol still
    allow, in declaration order (None when unsolved or a needed call timed out)."""

    observed: str
    result: CheckResult
    allowed: tuple[str, ...] | None = None


@frozen
class RequirementCheck:
    id: str
    description: str
    holds: CheckResult
    coverage: CheckResult


@frozen
class GroundingCheck:
    """One grounding pair: each side as written, ``direction`` ``~`` or ``~>``."""

    judge: str
    context: str
    result: CheckResult
    direction: str = "~"

    @property
    def pair(self) -> str:
        return f"{self.judge}{self.direction}{self.context}"


@frozen
class Bases:
    proto: str
    evid: str
    all: str
    # a minimal conflicting set of parts for each INCONSISTENT base
    proto_conflict: Explanation | None = None
    evid_conflict: Explanation | None = None
    all_conflict: Explanation | None = None

    def state(self, name: str) -> str:
        return getattr(self, name)

    def conflict(self, name: str) -> Explanation | None:
        return getattr(self, f"{name}_conflict")


@frozen
class Reason:
    """Why the overall result is not SATISFIED: one per contributing base, check or rule.

    ``code``: ``translation``, ``inconsistent-base``, ``solver-unknown``, ``violated``,
    ``underdetermined``, ``not-observable``, ``no-requirements``, ``no-grounding``.
    ``subject``: ``translation``, ``base:NAME``, ``verdict``, ``requirement:ID``,
    ``coverage:ID``, ``grounding:JUDGE~CONTEXT`` (``~>`` for one-way) or ``replay``.
    """

    code: str
    subject: str
    message: str


@frozen
class Dimensions:
    """Each dimension's checks aggregated like the overall result (no overrides);
    NOT_CHECKED when the dimension has no check."""

    verdict: str
    procedure: str
    coverage: str
    grounding: str

    def to_json(self) -> dict[str, Any]:
        return {d: getattr(self, d) for d in DIMENSIONS}


@frozen
class Report:
    replay: str
    protocol: str
    backend: str
    translation: str
    overall: str
    bases: Bases | None
    verdict: VerdictCheck
    requirements: tuple[RequirementCheck, ...]
    grounding: tuple[GroundingCheck, ...]
    unannotated: tuple[str, ...]
    unknown: tuple[str, ...]  # atoms annotated UNKNOWN explicitly
    dimensions: Dimensions
    reasons: tuple[Reason, ...]
    gold: str | None = None
    item: str | None = None  # the replay's `item` and `judge`, for grouping in an audit
    judge: str | None = None
    # `--protocol`: the protocol checked against instead of the replay's own (replaydata)
    recheck: Recheck | None = None
    # annotations whose readers did not agree (their `readings`), shown, never solved
    disagreements: tuple[Annotation, ...] = ()

    @property
    def verdict_matches_gold(self) -> bool | None:
        return None if self.gold is None else self.gold == self.verdict.observed

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.overall]

    def with_gold(self, gold: str | None) -> Report:
        return replace(self, gold=gold)

    def to_json(self) -> dict[str, Any]:
        """The report's JSON (``unmask.checking.shapes.ReportDoc``) as plain values."""
        import msgspec

        out: dict[str, Any] = msgspec.to_builtins(report_doc(self))
        return out


# --- the report's JSON and its result line, built of its objects (shapes) -----------------


def _shapes() -> None:
    """Import the structs (and msgspec) at the first JSON built of a report."""
    global S, UNSET
    from msgspec import UNSET

    from unmask.checking import shapes as S


def _quote(q: Any) -> S.Quote:
    if q.read is not None:  # as the replay writes it: what was read, not a span
        return S.Quote(source=q.source, read=q.read)
    return S.Quote(source=q.source, start=q.start, end=q.end, quote=q.quote)


def _by(p: Any) -> S.By:
    return S.By(
        kind=p.kind,
        name=p.name or UNSET,
        version=p.version or UNSET,
        reviewed=UNSET if p.reviewed_flag is None else p.reviewed_flag,
    )


def entry(item: AnnotationItem) -> S.Entry:
    """An annotation's entry in a result line's ``annotations``."""
    if S is None:
        _shapes()
    by = item.by
    return S.Entry(
        atom=item.atom,
        value=item.value,
        evidence=[_quote(q) for q in item.evidence],
        explanation=item.explanation or "",
        by=UNSET if by is None else _by(by),
    )


def part(item: Item) -> S.Part:
    """A part as a report writes it in place."""
    kind = item.kind
    if kind == "annotation":
        e = entry(item)  # type: ignore[arg-type]
        return S.Part(
            part=str(item.part),
            kind=kind,
            atom=e.atom,
            value=e.value,
            evidence=e.evidence,
            explanation=e.explanation,
            by=e.by,
        )
    if kind == "constraint":
        return S.Part(part=str(item.part), kind=kind, name=item.name)  # type: ignore[union-attr]
    label = getattr(item, "label", None)
    return S.Part(part=str(item.part), kind=kind, label=UNSET if label is None else label)


class AnnotationTable:
    """The annotations a result line's explanations and conflicts rest on, each once, in
    the order they are first referred to; ``ref`` gives an annotation's index."""

    __slots__ = ("_index", "entries", "items")

    def __init__(self) -> None:
        self.entries: list[S.Entry] = []
        self.items: list[AnnotationItem] = []
        self._index: dict[PartId, int] = {}  # by part: a part id's hash is cached

    def ref(self, item: AnnotationItem) -> int:
        i = self._index.get(item.part)
        if i is not None:
            seen = self.items[i]
            if seen is item or seen == item:  # the checker hands out one item per part
                return i
        i = self._index[item.part] = len(self.entries)
        self.items.append(item)
        self.entries.append(entry(item))
        return i


# a part that is not an annotation, by identity: the checker shares its items among the
# replays of a protocol; each entry holds its item, so its id stays its own
_PARTS: dict[int, tuple[Any, S.Part]] = {}
# a check's fields that cite no annotation (witnesses, or nothing), by the result's
# identity: the checker shares such results among the replays of a protocol
_FIELDS: dict[int, tuple[Any, tuple[Any, ...]]] = {}
KEPT = 8192  # entries of each, at most; then it starts again


def _other_part(item: Item) -> S.Part:
    got = _PARTS.get(id(item))
    if got is None:
        if len(_PARTS) >= KEPT:
            _PARTS.clear()
        got = _PARTS[id(item)] = (item, part(item))
    return got[1]


def _explanation(e: Explanation | None, table: AnnotationTable | None) -> Any:
    if e is None:
        return None
    if table is None:
        return S.Explanation(minimal=e.minimal, parts=[part(i) for i in e.items])
    parts: list[Any] = [
        table.ref(i) if i.kind == "annotation" else _other_part(i)  # type: ignore[arg-type]
        for i in e.items
    ]
    return S.Explanation(minimal=e.minimal, parts=parts)


def _witness(w: Witness) -> S.Witness:
    return S.Witness(
        atoms=[
            S.WitnessAtom(atom=a.atom, value="TRUE" if a.value else "FALSE", origin=a.origin)  # type: ignore[arg-type]
            for a in w.atoms
        ],
        verdict=UNSET if w.verdict is None else w.verdict,
        canonical=w.canonical,
    )


def _fields(r: CheckResult, table: AnnotationTable | None) -> tuple[Any, ...]:
    """A check result's written fields: result, explanation, witnesses and the two flags."""
    if r.explanation is not None:
        return _made(r, table)
    got = _FIELDS.get(id(r))
    if got is None:
        if len(_FIELDS) >= KEPT:
            _FIELDS.clear()
        got = _FIELDS[id(r)] = (r, _made(r, None))
    return got[1]


def _made(r: CheckResult, table: AnnotationTable | None) -> tuple[Any, ...]:
    w = r.witnesses
    return (
        r.outcome,
        _explanation(r.explanation, table),
        None if w is None else S.Witnesses(holds=_witness(w.holds), fails=_witness(w.fails)),
        True if r.unreviewed else UNSET,
        True if r.gold_derived else UNSET,
    )


def _body(report: Report, table: AnnotationTable | None) -> dict[str, Any]:
    """The fields of a report's JSON after ``schema`` (and ``location``), in order."""
    v = report.verdict
    vr, ve, vw, vu, vg = _fields(v.result, table)
    reqs = []
    for r in report.requirements:
        hr, he, hw, hu, hg = _fields(r.holds, table)
        cr, ce, cw, cu, cg = _fields(r.coverage, table)
        reqs.append(
            S.Requirement(
                id=r.id,
                status=r.holds.status,  # type: ignore[arg-type]
                coverage=r.coverage.status,  # type: ignore[arg-type]
                description=r.description,
                result=hr,
                explanation=he,
                witnesses=hw,
                unreviewed=hu,
                gold_derived=hg,
                coverage_result=cr,
                coverage_explanation=ce,
                coverage_witnesses=cw,
                coverage_unreviewed=cu,
                coverage_gold_derived=cg,
            )
        )
    ground = []
    for g in report.grounding:
        gr, ge, gw, gu, gg = _fields(g.result, table)
        ground.append(
            S.Grounding(
                judge=g.judge,
                context=g.context,
                status=g.result.status,  # type: ignore[arg-type]
                direction=g.direction,  # type: ignore[arg-type]
                result=gr,
                explanation=ge,
                witnesses=gw,
                unreviewed=gu,
                gold_derived=gg,
            )
        )
    b = report.bases
    d = report.dimensions
    return {
        "replay": report.replay,
        "backend": report.backend,
        "overall": report.overall,
        "bases": None if b is None else S.Bases(proto=b.proto, evid=b.evid, all=b.all),  # type: ignore[arg-type]
        "verdict": S.Verdict(
            observed=v.observed,
            status=v.result.status,  # type: ignore[arg-type]
            allowed=None if v.allowed is None else list(v.allowed),
            result=vr,
            explanation=ve,
            witnesses=vw,
            unreviewed=vu,
            gold_derived=vg,
        ),
        "requirements": reqs,
        "grounding": ground,
        "unannotated": list(report.unannotated),
        "gold": report.gold,
        "verdict_matches_gold": report.verdict_matches_gold,
        "protocol": report.protocol,
        "translation": report.translation,
        "dimensions": S.Dimensions(
            verdict=d.verdict,  # type: ignore[arg-type]
            procedure=d.procedure,  # type: ignore[arg-type]
            coverage=d.coverage,  # type: ignore[arg-type]
            grounding=d.grounding,  # type: ignore[arg-type]
        ),
        "reasons": [
            S.Reason(code=r.code, subject=r.subject, message=r.message) for r in report.reasons
        ],
        "conflicts": None
        if b is None
        else S.Conflicts(
            proto=_explanation(b.proto_conflict, table),
            evid=_explanation(b.evid_conflict, table),
            all=_explanation(b.all_conflict, table),
        ),
        "unknown": list(report.unknown),
        **own_fields(report),
    }


def own_fields(report: Report) -> dict[str, Any]:
    """The fields only some replays have (``item``, ``judge``, ``recheck``,
    ``disagreements``): absent ones are ``UNSET``, not written."""
    from unmask.replay.error_record import recheck_doc  # as an error record writes it

    return {
        "item": UNSET if report.item is None else report.item,
        "judge": UNSET if report.judge is None else report.judge,
        "recheck": recheck_doc(report.recheck),
        "disagreements": [_disagreement(a) for a in report.disagreements]
        if report.disagreements
        else UNSET,
    }


def _disagreement(a: Any) -> S.Disagreement:
    return S.Disagreement(
        atom=a.atom,
        value=a.value,
        readings=[
            S.Reading(
                by=_by(r.by),
                value=r.value,
                evidence=[
                    S.Quote(source=e.source, start=e.start, end=e.end, quote=e.quote)
                    for e in r.evidence
                ],
                explanation=r.explanation,
            )
            for r in a.readings
        ],
    )


def report_doc(report: Report) -> S.ReportDoc:
    """A report's canonical JSON (``unmask.report/1``)."""
    if S is None:
        _shapes()
    return S.ReportDoc(**_body(report, None))


def result_line(report: Report, location: str) -> S.ResultLine:
    """A checked replay's result line (``unmask.result/2``)."""
    if S is None:
        _shapes()
    table = AnnotationTable()
    body = _body(report, table)
    return S.ResultLine(location=location, **body, annotations=table.entries)


def line_and_parts(report: Report, location: str) -> tuple[S.ResultLine, tuple[PartId, ...]]:
    """``result_line``, and the parts of its annotations in order (``table_parts``)."""
    if S is None:
        _shapes()
    table = AnnotationTable()
    body = _body(report, table)
    line = S.ResultLine(location=location, **body, annotations=table.entries)
    return line, tuple(i.part for i in table.items)


def dumps(report: Report) -> str:
    """THE canonical serialisation of a report: same report, same bytes (two-space
    indent; ``json.dumps(..., ensure_ascii=False, indent=2)`` writes the same text)."""
    import msgspec

    doc = report_doc(report)
    try:
        data = msgspec.json.format(msgspec.json.encode(doc), indent=2)
    except UnicodeEncodeError:  # a lone surrogate: the output policy replaces it later
        return json.dumps(msgspec.to_builtins(doc), ensure_ascii=False, indent=2) + "\n"
    return data.decode("utf-8") + "\n"
