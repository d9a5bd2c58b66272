"""The review line (``unmask.review/1``) and the calibration file (``unmask.calibration/1``),
each defined once as typed structures.

Contract: ``ReviewLine`` is one line of a review file, as ``unmask review --export`` writes it
(``unmask.review.queue.Item`` and ``unmask.review.sample.Reading`` fill it, ``line_json``
turns it into the JSON object, keys in the order below, absent ones left out) and as
``--apply`` reads it back (``read_review_line``: the first field that is not as exported
is one ``review-line`` error naming it; what a line's decision may be is the reader's).
``CalibrationJson`` is the calibration file (written by ``Calibration.to_json``, read by
``read_calibration``, whose first problem is one diagnostic at its JSON path; whether the
figures follow from the counts is the reader's). ``review_schema()`` and
``calibration_schema()`` are the JSON Schemas published in ``docs/schemas/``. A review line
keeps keys it does not know (a reviewer's notes): no warning.
"""

# no `from __future__ import annotations`: msgspec then reads the types as they are built,
# rather than evaluating their text at the first read (a millisecond of every start-up)
from typing import Annotated, Any, ClassVar, Final, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic
from unmask.plumbing.jsonreader import JsonReader
from unmask.plumbing.limits import DEFAULT_LIMITS
from unmask.plumbing.struct_reader import StructReader, what_of
from unmask.plumbing.struct_schema import json_schema
from unmask.plumbing.structs import Format

__all__ = [
    "CALIBRATION_SCHEMA",
    "REVIEW_SCHEMA",
    "CalibrationJson",
    "ReviewLine",
    "calibration_schema",
    "line_json",
    "read_calibration",
    "read_review_line",
    "review_schema",
]

REVIEW_SCHEMA: Final = "unmask.review/1"
CALIBRATION_SCHEMA: Final = "unmask.calibration/1"


class _Kept(Format):
    """A struct whose unknown keys are kept by the reader, not warned about."""

    @classmethod
    def unknown_key(cls, r: JsonReader, raw: dict, key: str, path: str) -> None:
        return None


class ReviewSpan(_Kept):
    """A quote of the annotation, with the source around it."""

    source: str
    start: Annotated[int, Meta(ge=0)]
    end: Annotated[int, Meta(ge=1)]
    quote: str
    context: (
        Annotated[str, Meta(description="the source around the quote, the quote in [[…]]")]
        | UnsetType
    ) = UNSET


class Stratum(_Kept):
    """The reader of a sampled reading: its `by` kind, name and version (absent = "")."""

    kind: str
    name: str
    version: str


class Sample(_Kept):
    """The draw a sampled line came from (`unmask review --sample`)."""

    seed: Annotated[int, Meta(ge=0)]
    size: Annotated[int, Meta(ge=1)]
    stratum: Stratum
    blind: bool


# shown to the reviewer, never read back: kept as the line has it, whatever it has become
_SHOWN = {"own": True}


class ReviewLine(_Kept, kw_only=True):
    """One unreviewed annotation to decide: what it is, what rests on it, the decision."""

    schema: Literal["unmask.review/1"]
    location: Annotated[str, Meta(min_length=1, description="the replay, as the audit names it")]
    replay: Annotated[str, Meta(description="the replay's id")] | UnsetType = UNSET
    digest: (
        Annotated[str, Meta(description="`sha256:` of the replay's record as it was read")]
        | UnsetType
    ) = UNSET
    atom: Annotated[str, Meta(min_length=1)]
    description: (
        Annotated[str, Meta(extra=_SHOWN, description="the atom's description (a sampled line)")]
        | UnsetType
    ) = UNSET
    current: (
        Annotated[
            Literal["TRUE", "FALSE", "UNKNOWN"],
            Meta(description="the annotation's value; not in a blind line"),
        ]
        | UnsetType
    ) = UNSET
    by: Annotated[dict[str, Any], Meta(description="who made it, as the replay says")]
    evidence: list[ReviewSpan]
    explanation: Annotated[str, Meta(extra=_SHOWN)] | UnsetType = UNSET
    findings: Annotated[int, Meta(ge=0, extra=_SHOWN)] | UnsetType = UNSET
    checks: (
        Annotated[list[str], Meta(extra=_SHOWN, description="the VIOLATED checks that rest on it")]
        | UnsetType
    ) = UNSET
    passing: (
        Annotated[list[str], Meta(extra=_SHOWN, description="the OK checks that rest on it")]
        | UnsetType
    ) = UNSET
    sources: (
        Annotated[
            dict[str, str],
            Meta(extra=_SHOWN, description="the texts to decide it by (a sampled line)"),
        ]
        | UnsetType
    ) = UNSET
    sample: Sample | UnsetType = UNSET
    # the reviewer's: read as given, so that each mistake gets its own message
    decision: Annotated[
        str,
        Meta(
            extra={"own": True},
            description="`accept`, `reject`, `skip`, `answer` (a blind line), or empty",
        ),
    ]
    value: Annotated[
        str, Meta(extra={"own": True}, description="`TRUE`, `FALSE` or `UNKNOWN`, or empty")
    ]
    reviewer: Annotated[str, Meta(extra={"own": True}, description="who decided")]


_FIELD_TYPES = {f.encode_name: f.type for f in msgspec.structs.fields(ReviewLine)}
# a line's mistake says "KEY: expected `KEY` as exported, a string" (or an object); these two
# say more
_AS_EXPORTED = {
    "evidence": "expected `evidence` as exported",
    "sample": "expected `sample` as exported: seed, size, stratum, blind",
}


def line_json(line: ReviewLine) -> dict[str, Any]:
    """The review line as the JSON object written to the file."""
    out: dict[str, Any] = msgspec.to_builtins(line)
    return out


def read_review_line(obj: dict[str, Any]) -> ReviewLine | Diagnostic:
    """The line ``obj`` (a JSON object) read into a ``ReviewLine``, or the first field that
    is not as exported: a diagnostic whose ``path`` is that field's key."""
    try:
        return msgspec.convert(obj, ReviewLine)
    except (msgspec.ValidationError, UnicodeEncodeError):
        pass
    r = JsonReader(None, DEFAULT_LIMITS)
    line = StructReader(r).struct(obj, ReviewLine, "")
    if not r.diags:
        return line  # only fields read as given, or shown and never read back, differ
    d = r.diags[0]
    # the key at fault: the path's first step, or the key a `missing `KEY`` names
    path = d.path or "$"
    key = path.split(".")[0].split("[")[0] if path != "$" else d.message.split("`")[1]
    message = _AS_EXPORTED.get(key) or (
        f"expected `{key}` as exported, {what_of(_FIELD_TYPES[key])}"
    )
    return Diagnostic(Code.REVIEW_LINE, message, path=key)


class ProtocolRow(Format):
    """A protocol the readings were measured under."""

    ITEM: ClassVar[str] = "a protocol"

    name: str
    digest: Annotated[str, Meta(description="`sha256:` of the protocol's text")]


_COUNT = {"expect": "a count, a whole number ≥ 0"}


class ReaderRow(Format):
    """One reader's measure on one family of atoms."""

    ITEM: ClassVar[str] = "a reader"

    kind: str
    name: str
    version: str
    family: Annotated[str, Meta(description="`backs` for `backs(p1, c2)`; a scalar atom's name")]
    reviewed: Annotated[int, Meta(ge=1, extra=_COUNT)]
    upheld: Annotated[int, Meta(ge=0, extra=_COUNT)]
    # checked against the counts, with that message, rather than for their type
    precision: Annotated[float, Meta(ge=0, le=1, extra={"own": True})]
    interval: Annotated[
        list[float],
        Meta(min_length=2, max_length=2, extra={"own": True}, description="95% Wilson score"),
    ]
    level: Annotated[float, Meta(extra={"own": True}, extra_json_schema={"const": 0.95})]


class CalibrationJson(Format):
    """Each reader's measured precision (`unmask calibrate`)."""

    EXPECT: ClassVar[str] = "a calibration object"

    schema: Annotated[Literal["unmask.calibration/1"], Meta(extra={"own": True})]
    data: Annotated[
        str,
        Meta(
            extra={"expect": "the data it was measured on, a string"},
            description="what the reviews were drawn from",
        ),
    ]
    protocols: list[ProtocolRow]
    readers: list[ReaderRow]


def read_calibration(obj: dict[str, Any]) -> tuple[CalibrationJson | None, Diagnostic | None]:
    """A calibration file's JSON object read into a ``CalibrationJson``, or the first
    structural problem as a diagnostic at its JSON path (unknown keys are not one)."""
    try:
        return msgspec.convert(obj, CalibrationJson), None
    except (msgspec.ValidationError, UnicodeEncodeError):
        pass
    r = JsonReader(None, DEFAULT_LIMITS)
    doc = StructReader(r).struct(obj, CalibrationJson, "")
    return (None, r.diags[0]) if r.diags else (doc, None)


def review_schema() -> dict[str, Any]:
    """The JSON Schema of a review line, as published in ``docs/schemas/review-1.json``."""
    return json_schema(REVIEW_SCHEMA, ReviewLine)


def calibration_schema() -> dict[str, Any]:
    """The JSON Schema of a calibration file (``docs/schemas/calibration-1.json``)."""
    return json_schema(CALIBRATION_SCHEMA, CalibrationJson)
