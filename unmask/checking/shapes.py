"""The shapes of the report's JSON, the result line and the error record: msgspec structs.

Contract: ``ReportDoc`` (``unmask.report/1``) and ``ResultLine`` (``unmask.result/2``)
and the structs they hold are the formats, defined once: their fields are in the order
they are written, and a field that is only sometimes there is ``UNSET`` when absent, then
not written. ``ErrorLine`` (``unmask.error/1``) and its structs are declared below the
checker (``unmask.replay.error_record``, for the producers that write one too) and
re-exported here. ``unmask.checking.formats`` builds, writes, reads back and publishes (as
JSON Schema) these, and nothing else declares a field of these formats.
"""

from __future__ import annotations

from typing import Generic, Literal, TypeVar

from msgspec import UNSET, Struct, UnsetType

# the error record is defined below the checker, for every writer of one; a report's line
# holds its ``Recheck`` too
from unmask.replay.error_record import (  # noqa: F401 (re-exported: the formats in one place)
    ERROR_SCHEMA,
    DiagnosticDoc,
    ErrorLine,
    Recheck,
    SpanDoc,
)

REPORT_SCHEMA = "unmask.report/1"  # a report's JSON; a result line's first form
# a checked replay's line; its first form, the report's JSON as it is, was `unmask.report/1`
RESULT_SCHEMA = "unmask.result/2"

StatusWord = Literal[
    "ENTAILED",
    "REFUTED",
    "UNDERDETERMINED",
    "SOLVER_UNKNOWN",
    "INCONSISTENT_BASE",
    "NOT_SPECIFIED",
]
CheckOutcome = Literal["OK", "VIOLATED", "UNKNOWN"]
Overall = Literal["SATISFIED", "VIOLATED", "UNKNOWN"]
DimensionOutcome = Literal["OK", "VIOLATED", "UNKNOWN", "NOT_CHECKED"]
BaseWord = Literal["CONSISTENT", "INCONSISTENT", "SOLVER_UNKNOWN"]

P = TypeVar("P")  # an explanation's part: a ``Part``, or in a line an annotation's index too


class Quote(Struct, kw_only=True):
    """One evidence span as the replay gave it, or (``read``) a reviewed reading of the
    whole source, nothing quoted."""

    source: str
    start: int | UnsetType = UNSET
    end: int | UnsetType = UNSET
    quote: str | UnsetType = UNSET
    read: str | UnsetType = UNSET


class By(Struct, kw_only=True):
    """Who made an annotation (a replay's ``by``); none: a reviewed human annotation."""

    kind: str
    name: str | UnsetType = UNSET
    version: str | UnsetType = UNSET
    reviewed: bool | UnsetType = UNSET


class Entry(Struct, kw_only=True):
    """An annotation a check rests on: an entry of a result line's ``annotations``."""

    atom: str
    value: str
    evidence: list[Quote]
    explanation: str
    by: By | UnsetType = UNSET


class Part(Struct, kw_only=True):
    """One part of a base an explanation or a conflict rests on; ``kind`` tells which
    fields it has: an annotation's (``atom``, ``value``, ``evidence``, ``explanation``,
    ``by``: in a result line it is an index into ``annotations`` instead), a
    constraint's ``name``, a decision's ``label``."""

    part: str
    kind: Literal["annotation", "constraint", "labels", "decision"]
    atom: str | UnsetType = UNSET
    value: str | UnsetType = UNSET
    evidence: list[Quote] | UnsetType = UNSET
    explanation: str | UnsetType = UNSET
    by: By | UnsetType = UNSET
    name: str | UnsetType = UNSET
    label: str | UnsetType = UNSET


class Explanation(Struct, Generic[P], kw_only=True):
    """A set of parts that forces a result; ``minimal`` false when a solver call timed
    out while minimising (the set still forces it)."""

    minimal: bool
    parts: list[P]


class WitnessAtom(Struct, kw_only=True):
    atom: str
    value: Literal["TRUE", "FALSE"]
    origin: Literal["observed", "completed"]


class Witness(Struct, kw_only=True):
    """One side of an UNDERDETERMINED check: an assignment (``verdict``: the label the
    verdict takes on it, verdict check only)."""

    atoms: list[WitnessAtom]
    verdict: str | UnsetType = UNSET
    canonical: bool


class Witnesses(Struct, kw_only=True):
    holds: Witness
    fails: Witness


class Verdict(Struct, Generic[P], kw_only=True):
    """The verdict check; ``allowed``: the labels the evidence and the protocol allow."""

    observed: str
    status: StatusWord | None
    allowed: list[str] | None
    result: CheckOutcome | None
    explanation: Explanation[P] | None
    witnesses: Witnesses | None
    unreviewed: bool | UnsetType = UNSET
    gold_derived: bool | UnsetType = UNSET


class Requirement(Struct, Generic[P], kw_only=True):
    """A requirement's check (``result``...) and its coverage's (``coverage_result``...)."""

    id: str
    status: StatusWord | None
    coverage: StatusWord | None
    description: str
    result: CheckOutcome | None
    explanation: Explanation[P] | None
    witnesses: Witnesses | None
    unreviewed: bool | UnsetType = UNSET
    gold_derived: bool | UnsetType = UNSET
    coverage_result: CheckOutcome | None
    coverage_explanation: Explanation[P] | None
    coverage_witnesses: Witnesses | None
    coverage_unreviewed: bool | UnsetType = UNSET
    coverage_gold_derived: bool | UnsetType = UNSET


class Grounding(Struct, Generic[P], kw_only=True):
    """A grounding pair's check: ``direction`` ``~`` both ways, ``~>`` one way."""

    judge: str
    context: str
    status: StatusWord | None
    direction: Literal["~", "~>"]
    result: CheckOutcome | None
    explanation: Explanation[P] | None
    witnesses: Witnesses | None
    unreviewed: bool | UnsetType = UNSET
    gold_derived: bool | UnsetType = UNSET


class Bases(Struct, kw_only=True):
    proto: BaseWord
    evid: BaseWord
    all: BaseWord


class Conflicts(Struct, Generic[P], kw_only=True):
    """A minimal conflicting set of parts of each INCONSISTENT base."""

    proto: Explanation[P] | None
    evid: Explanation[P] | None
    all: Explanation[P] | None


class Dimensions(Struct, kw_only=True):
    verdict: DimensionOutcome
    procedure: DimensionOutcome
    coverage: DimensionOutcome
    grounding: DimensionOutcome


class Reason(Struct, kw_only=True):
    code: str
    subject: str
    message: str


class Reading(Struct, kw_only=True):
    by: By
    value: str
    evidence: list[Quote]
    explanation: str


class Disagreement(Struct, kw_only=True):
    """An atom readers read differently: its value, and each reader's reading."""

    atom: str
    value: str
    readings: list[Reading]


class ReportDoc(Struct, tag_field="schema", tag=REPORT_SCHEMA, kw_only=True):
    """A report's canonical JSON (``unmask.report/1``). As a result line (the first form,
    which older results files hold) it has ``location`` after ``schema``."""

    location: str | UnsetType = UNSET
    replay: str
    backend: str
    overall: Overall
    bases: Bases | None
    verdict: Verdict[Part]
    requirements: list[Requirement[Part]]
    grounding: list[Grounding[Part]]
    unannotated: list[str]
    gold: str | None
    verdict_matches_gold: bool | None
    protocol: str
    translation: str
    dimensions: Dimensions
    reasons: list[Reason]
    conflicts: Conflicts[Part] | None
    unknown: list[str]
    item: str | UnsetType = UNSET
    judge: str | UnsetType = UNSET
    recheck: Recheck | UnsetType = UNSET
    disagreements: list[Disagreement] | UnsetType = UNSET


LinePart = int | Part  # an annotation's index in ``annotations``, or another part


class ResultLine(Struct, tag_field="schema", tag=RESULT_SCHEMA, kw_only=True):
    """A checked replay's result line (``unmask.result/2``): the report's fields, each
    annotation part an index into ``annotations``."""

    location: str
    replay: str
    backend: str
    overall: Overall
    bases: Bases | None
    verdict: Verdict[LinePart]
    requirements: list[Requirement[LinePart]]
    grounding: list[Grounding[LinePart]]
    unannotated: list[str]
    gold: str | None
    verdict_matches_gold: bool | None
    protocol: str
    translation: str
    dimensions: Dimensions
    reasons: list[Reason]
    conflicts: Conflicts[LinePart] | None
    unknown: list[str]
    item: str | UnsetType = UNSET
    judge: str | UnsetType = UNSET
    recheck: Recheck | UnsetType = UNSET
    disagreements: list[Disagreement] | UnsetType = UNSET
    annotations: list[Entry]


AnyLine = ResultLine | ReportDoc | ErrorLine  # what a results file holds
CheckedLine = ResultLine | ReportDoc
