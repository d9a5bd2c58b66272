"""The adherence report as frozen data, and its one canonical JSON form.

Contract:
- a ``Report`` is plain data: the checker (``unmask.checking.checker``) fills it in, renderers only
  read it; nothing in it varies between runs (no time, no path), so ``dumps`` is
  byte-identical for the same replay on every backend except for the ``backend`` field;
- ``to_json`` writes the fixed fields first, in their documented order, then the
  additions (both in ``docs/report-format.md``);
- ``gold`` is added after checking (``with_gold``); flipping it changes only ``gold`` and
  ``verdict_matches_gold``; the replay's ``item`` and ``judge`` are added after checking
  too, and appear in the JSON only when the replay has them, as do ``disagreements`` (the
  annotations whose readers did not agree, each reader's reading);
- a field that only says something when true (``unreviewed``, ``gold_derived``) is written
  only then, and a part's ``label`` and ``by`` only when there is one, so a binary
  protocol with unattributed annotations reads as it always did;
- ``to_json(table)`` with an ``AnnotationTable`` writes each annotation part as its index
  in the table instead, and fills the table: the result line's form (``unmask.checking.record``),
  where an annotation several checks rest on is written once.
"""

from __future__ import annotations

import json
from dataclasses import field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from unmask.plumbing.frozen import frozen

if TYPE_CHECKING:
    from unmask.replay.data import Annotation, Provenance, Recheck

SCHEMA = "unmask.report/1"


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


@frozen
class Quote:
    """One evidence span of an annotation, as the replay gave it; or, with ``read``
    ``whole``, a reviewed reading of the whole source (nothing quoted)."""

    source: str
    start: int
    end: int
    quote: str
    read: str | None = None

    @property
    def whole(self) -> bool:
        return self.read is not None

    @staticmethod
    def of(e: Any) -> Quote:
        return Quote(e.source, e.start, e.end, e.quote, e.read)

    def to_json(self) -> dict[str, Any]:
        if self.read is not None:  # as the replay writes it: what was read, not a span
            return {"source": self.source, "read": self.read}
        return {"source": self.source, "start": self.start, "end": self.end, "quote": self.quote}


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

    def to_json(self) -> dict[str, Any]:
        return self._put({"part": str(self.part), "kind": self.kind})

    def entry_json(self) -> dict[str, Any]:
        """The annotation's own fields (every field but ``part`` and ``kind``, which follow
        from it): its entry in a result line's ``annotations``."""
        return self._put({})

    def _put(self, out: dict[str, Any]) -> dict[str, Any]:
        out["atom"] = self.atom
        out["value"] = self.value
        out["evidence"] = [q.to_json() for q in self.evidence]
        out["explanation"] = self.explanation or ""
        if self.by is not None:
            out["by"] = self.by.to_json()
        return out


@frozen
class ConstraintItem:
    """A constraint of the protocol, by ``name``."""

    kind: ClassVar[Literal["constraint"]] = "constraint"
    part: PartId
    name: str

    def to_json(self) -> dict[str, Any]:
        return {"part": str(self.part), "kind": self.kind, "name": self.name}


@frozen
class LabelsItem:
    """Exactly one declared label holds."""

    kind: ClassVar[Literal["labels"]] = "labels"
    part: PartId

    def to_json(self) -> dict[str, Any]:
        return {"part": str(self.part), "kind": self.kind}


@frozen
class DecisionItem:
    """The decision rule: a binary protocol's (``label`` None), or one declared label's."""

    kind: ClassVar[Literal["decision"]] = "decision"
    part: PartId
    label: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"part": str(self.part), "kind": self.kind}
        if self.label is not None:
            out["label"] = self.label
        return out


# one part of a base used by an explanation or a conflict; ``kind`` tells them apart
Item = AnnotationItem | ConstraintItem | LabelsItem | DecisionItem


class AnnotationTable:
    """The annotations a result line's explanations and conflicts rest on, each once, in
    the order they are first referred to; ``ref`` gives an annotation's index."""

    __slots__ = ("_index", "_items", "entries")

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self._items: list[AnnotationItem] = []
        self._index: dict[PartId, int] = {}  # by part: a part id's hash is cached

    @property
    def items(self) -> tuple[AnnotationItem, ...]:
        """The annotations referred to, in the order of ``entries``."""
        return tuple(self._items)

    def ref(self, item: AnnotationItem) -> int:
        i = self._index.get(item.part)
        if i is not None:
            seen = self._items[i]
            if seen is item or seen == item:  # the checker hands out one item per part
                return i
        i = self._index[item.part] = len(self.entries)
        self._items.append(item)
        self.entries.append(item.entry_json())
        return i


@frozen
class Explanation:
    """A set of parts that forces a result; ``minimal`` is False only if a solver call
    timed out while minimising (the set still forces the result)."""

    items: tuple[Item, ...]
    minimal: bool = True

    def to_json(self, table: AnnotationTable | None = None) -> dict[str, Any]:
        if table is None:
            return {"minimal": self.minimal, "parts": [i.to_json() for i in self.items]}
        parts = [table.ref(i) if i.kind == "annotation" else i.to_json() for i in self.items]  # type: ignore[arg-type]
        return {"minimal": self.minimal, "parts": parts}


@frozen
class WitnessAtom:
    atom: str
    value: bool
    origin: str  # "observed" (pinned by an annotation) or "completed" (a possibility)

    def to_json(self) -> dict[str, Any]:
        return {
            "atom": self.atom,
            "value": "TRUE" if self.value else "FALSE",
            "origin": self.origin,
        }


@frozen
class Witness:
    """One assignment on one side of an UNDERDETERMINED check; ``verdict`` is the label
    the verdict takes on this side (verdict check only)."""

    atoms: tuple[WitnessAtom, ...]
    verdict: str | None = None
    # False when a solver call timed out while completing: the values are still a real
    # assignment of that side, but not necessarily the canonical (least) one
    canonical: bool = True

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"atoms": [a.to_json() for a in self.atoms]}
        if self.verdict is not None:
            out["verdict"] = self.verdict
        out["canonical"] = self.canonical
        return out


@frozen
class Witnesses:
    holds: Witness  # the proposition true
    fails: Witness  # the proposition false

    def to_json(self) -> dict[str, Any]:
        return {"holds": self.holds.to_json(), "fails": self.fails.to_json()}


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

    def fields(self, prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        self.put_fields(out, _field_names(prefix))
        return out

    def put_fields(
        self, out: dict[str, Any], names: tuple[str, ...], table: AnnotationTable | None = None
    ) -> None:
        """Add what ``fields`` holds to ``out``; ``names`` is ``_field_names(prefix)``."""
        expl = self.explanation
        wit = self.witnesses
        out[names[0]] = self.outcome
        out[names[1]] = None if expl is None else expl.to_json(table)
        out[names[2]] = None if wit is None else wit.to_json()
        if self.unreviewed:
            out[names[3]] = True
        if self.gold_derived:
            out[names[4]] = True


def _field_names(prefix: str) -> tuple[str, ...]:
    """The keys of a check result's fields under ``prefix``, in the order they are written."""
    names = _FIELD_NAMES.get(prefix)
    if names is None:
        names = tuple(prefix + n for n in _FIELDS)
    return names


_FIELDS = ("result", "explanation", "witnesses", "unreviewed", "gold_derived")
_FIELD_NAMES = {p: tuple(p + n for n in _FIELDS) for p in ("", "coverage_")}
_PLAIN, _COVERAGE = _FIELD_NAMES[""], _FIELD_NAMES["coverage_"]


@frozen
class VerdictCheck:
    """The verdict check; ``allowed`` is the labels the evidence and the protocol still
    allow, in declaration order (None when unsolved or a needed call timed out)."""

    observed: str
    result: CheckResult
    allowed: tuple[str, ...] | None = None

    def to_json(self, table: AnnotationTable | None = None) -> dict[str, Any]:
        out = {
            "observed": self.observed,
            "status": self.result.status,
            "allowed": None if self.allowed is None else list(self.allowed),
        }
        self.result.put_fields(out, _PLAIN, table)
        return out


@frozen
class RequirementCheck:
    id: str
    description: str
    holds: CheckResult
    coverage: CheckResult

    def to_json(self, table: AnnotationTable | None = None) -> dict[str, Any]:
        out = {
            "id": self.id,
            "status": self.holds.status,
            "coverage": self.coverage.status,
            "description": self.description,
        }
        self.holds.put_fields(out, _PLAIN, table)
        self.coverage.put_fields(out, _COVERAGE, table)
        return out


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

    def to_json(self, table: AnnotationTable | None = None) -> dict[str, Any]:
        out = {
            "judge": self.judge,
            "context": self.context,
            "status": self.result.status,
            "direction": self.direction,
        }
        self.result.put_fields(out, _PLAIN, table)
        return out


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

    def to_json(self) -> dict[str, Any]:
        return {n: self.state(n) for n in BASE_NAMES}

    def conflicts_json(self, table: AnnotationTable | None = None) -> dict[str, Any]:
        return {
            n: None if self.conflict(n) is None else self.conflict(n).to_json(table)  # type: ignore[union-attr]
            for n in BASE_NAMES
        }


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

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "subject": self.subject, "message": self.message}


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

    def to_json(self, table: AnnotationTable | None = None) -> dict[str, Any]:
        """The report's JSON; with ``table``, each annotation part is its index there."""
        return {
            # the fixed fields, in their documented order
            "schema": SCHEMA,
            "replay": self.replay,
            "backend": self.backend,
            "overall": self.overall,
            "bases": None if self.bases is None else self.bases.to_json(),
            "verdict": self.verdict.to_json(table),
            "requirements": [r.to_json(table) for r in self.requirements],
            "grounding": [g.to_json(table) for g in self.grounding],
            "unannotated": list(self.unannotated),
            "gold": self.gold,
            "verdict_matches_gold": self.verdict_matches_gold,
            # additions (docs/report-format.md)
            "protocol": self.protocol,
            "translation": self.translation,
            "dimensions": self.dimensions.to_json(),
            "reasons": [r.to_json() for r in self.reasons],
            "conflicts": None if self.bases is None else self.bases.conflicts_json(table),
            "unknown": list(self.unknown),
            **self.extra_json(),
        }

    def extra_json(self) -> dict[str, Any]:
        """The fields added only when the replay has them, in their order."""
        out: dict[str, Any] = {}
        if self.item is not None:
            out["item"] = self.item
        if self.judge is not None:
            out["judge"] = self.judge
        if self.recheck is not None:
            out["recheck"] = self.recheck.to_json()
        if self.disagreements:
            out["disagreements"] = [disagreement_json(a) for a in self.disagreements]
        return out


def disagreement_json(a: Annotation) -> dict[str, Any]:
    """An atom several readers read differently: its value, and each reader's reading."""

    def span(e: Any) -> dict[str, Any]:
        return {"source": e.source, "start": e.start, "end": e.end, "quote": e.quote}

    return {
        "atom": a.atom,
        "value": a.value,
        "readings": [
            {
                "by": r.by.to_json(),
                "value": r.value,
                "evidence": [span(e) for e in r.evidence],
                "explanation": r.explanation,
            }
            for r in a.readings
        ],
    }


def dumps(report: Report) -> str:
    """THE canonical serialisation: same report, same bytes."""
    return json.dumps(report.to_json(), ensure_ascii=False, indent=2, sort_keys=False) + "\n"
