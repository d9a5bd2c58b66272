"""The report's JSON, the audit's result line and its error record, each defined once.

Contract:
- the three formats are typed structures (msgspec ``Struct``s, declared in
  ``unmask.checking.shapes`` and re-exported here): ``ReportDoc``
  (``unmask.report/1``, the canonical JSON of a report), ``ResultLine``
  (``unmask.result/2``: the report's fields with ``location`` after ``schema``, each
  annotation an explanation or a conflict rests on written once, in ``annotations`` at
  the end, and referred to by its index there) and ``ErrorLine`` (``unmask.error/1``, a
  replay that could not be checked). Their fields are in the order they are written; a
  field that is only sometimes there (``item``, a check's ``unreviewed``, a part's
  ``label``) is ``UNSET`` when absent and then not written. Writing, reading back and the
  published JSON Schemas (``schemas()``, docs/schemas/) all derive from them;
- ``report_doc(report)`` and ``result_line(report, location)`` build them from a
  ``Report``'s objects (never through dicts), ``error_line(location, diags)`` from a
  replay's diagnostics (``unmask.replay.error_record``, where the error record is
  declared, below the producers that write one too); ``encode_line(line)`` is the line's
  bytes (``unmask.plumbing.structs``): compact UTF-8 ending in a newline, under the output
  policy (no acting character raw, ``unmask.plumbing.safe.json_text``; a lone surrogate
  escaped, so the line stays valid UTF-8), the bytes ``json.dumps`` writes of the same
  values; ``dumps(report)`` the report's canonical JSON (two-space indent, as
  ``json.dumps(..., indent=2)``);
- ``read_line(obj)`` is a parsed result line of any of the three schemas as its struct,
  or a ``LineError`` naming the JSON path, what was expected and what is there;
  ``report_of(line)`` the report's JSON of a line of either form (each annotation back
  in its parts);
- ``refilled(line, report, location, items)`` is the line of a report
  ``unmask.checking.outcomes`` refilled from a remembered one whose line is ``line``: the
  same structs but for the replay's own fields and the annotations it cites, which come
  in the same parts in the same order (``table_parts`` says when a line can be refilled);
- ``schemas()`` is the JSON Schema of each format, committed as docs/schemas/*.json
  (``python -m unmask.checking.formats`` writes them; tests/checking/test_formats.py holds the
  files to what the structs generate).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import Struct

from unmask.checking.report import (  # noqa: F401 (built there, of the report's objects)
    KEPT,
    AnnotationTable,
    dumps,
    entry,
    line_and_parts,
    own_fields,
    report_doc,
    result_line,
)
from unmask.plumbing.jsonreader import kind
from unmask.plumbing.structs import encode_line  # noqa: F401 (every line's one writer)
from unmask.replay.error_record import diagnostic_doc, error_line  # noqa: F401 (built there)

if TYPE_CHECKING:
    from unmask.checking.report import AnnotationItem, PartId, Report

from unmask.checking.shapes import (  # noqa: F401 (the formats, as their users import them)
    ERROR_SCHEMA,
    REPORT_SCHEMA,
    RESULT_SCHEMA,
    AnyLine,
    Bases,
    BaseWord,
    By,
    CheckedLine,
    CheckOutcome,
    Conflicts,
    DiagnosticDoc,
    DimensionOutcome,
    Dimensions,
    Disagreement,
    Entry,
    ErrorLine,
    Explanation,
    Grounding,
    LinePart,
    Overall,
    Part,
    Quote,
    Reading,
    Reason,
    Recheck,
    ReportDoc,
    Requirement,
    ResultLine,
    SpanDoc,
    StatusWord,
    Verdict,
    Witness,
    WitnessAtom,
    Witnesses,
)


def table_parts(parts: tuple[PartId, ...]) -> bool:
    """Whether a line whose annotations are of ``parts`` can be refilled: no two of one
    part (then which entry a refilled annotation replaces is not its part's alone)."""
    return len(set(parts)) == len(parts)


def refilled(
    line: ResultLine,
    parts: tuple[PartId, ...],
    report: Report,
    location: str,
    items: Mapping[PartId, AnnotationItem],
) -> ResultLine:
    """The line of ``report``, refilled from the remembered report whose line is ``line``
    (its annotations of ``parts``): only its own fields and its annotations are new."""
    import msgspec

    return msgspec.structs.replace(
        line,
        location=location,
        replay=report.replay,
        gold=report.gold,
        verdict_matches_gold=report.verdict_matches_gold,
        annotations=[entry(items[p]) for p in parts],
        **own_fields(report),
    )


def report_of(line: ResultLine | ReportDoc) -> ReportDoc:
    """The report's JSON of a line of either form: each annotation's index in a part is
    the annotation in place (``{"part": "fact:" + atom, "kind": "annotation", ...}``, as
    the report writes it); an index that names no entry (an edited file) is left as it
    is, for a reader to pass over."""
    if isinstance(line, ReportDoc):
        return line
    entries = line.annotations
    placed: dict[int, Part] = {}

    def part(p: Any) -> Any:
        if not isinstance(p, int) or not 0 <= p < len(entries):
            return p
        got = placed.get(p)
        if got is None:
            e = entries[p]
            got = placed[p] = Part(
                part=f"fact:{e.atom}",
                kind="annotation",
                atom=e.atom,
                value=e.value,
                evidence=e.evidence,
                explanation=e.explanation,
                by=e.by,
            )
        return got

    def expl(e: Any) -> Any:
        return (
            None if e is None else Explanation(minimal=e.minimal, parts=[part(p) for p in e.parts])
        )

    replace = msgspec.structs.replace
    c = line.conflicts
    fields = {name: getattr(line, name) for name in ReportDoc.__struct_fields__}
    fields.update(
        verdict=replace(line.verdict, explanation=expl(line.verdict.explanation)),
        requirements=[
            replace(
                r,
                explanation=expl(r.explanation),
                coverage_explanation=expl(r.coverage_explanation),
            )
            for r in line.requirements
        ],
        grounding=[replace(g, explanation=expl(g.explanation)) for g in line.grounding],
        conflicts=None
        if c is None
        else Conflicts(proto=expl(c.proto), evid=expl(c.evid), all=expl(c.all)),
    )
    return ReportDoc(**fields)


# --- to values ------------------------------------------------------------------------------


def to_builtins(doc: Struct) -> dict[str, Any]:
    """A struct as plain JSON values (dicts in field order, ``UNSET`` fields left out)."""
    out: dict[str, Any] = msgspec.to_builtins(doc)
    return out


# --- reading back --------------------------------------------------------------------------


class LineError(Exception):
    """A result line that is not of its schema: the JSON path, and what is wrong there."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


_SCHEMA_WORDS = f"`{RESULT_SCHEMA}`, `{REPORT_SCHEMA}` or `{ERROR_SCHEMA}`"


def read_line(obj: Any) -> ResultLine | ReportDoc | ErrorLine:
    """A parsed result line of any schema as its struct, or ``LineError``."""
    from unmask.plumbing.struct_reader import problem

    try:
        return msgspec.convert(obj, AnyLine)  # type: ignore[arg-type]
    except UnicodeEncodeError:
        # a lone surrogate (JSON may escape one) where a word of a fixed set is expected:
        # msgspec cannot compare it, while as U+FFFD it is a value that is none of them,
        # refused below at its JSON path (free text converts with its surrogates as is)
        from unmask.plumbing.safe import clean_values

        return read_line(clean_values(obj))
    except msgspec.ValidationError as exc:
        path, message = problem(exc, obj)
        if path == "schema":  # the tag: say which schemas a line may have
            message = f"expected one of {_SCHEMA_WORDS}, found {kind(obj.get('schema'))}"
        raise LineError(path, message) from None


# --- the published schemas ----------------------------------------------------------------

# file name under docs/schemas/ -> (the struct, the schema's title)
SCHEMAS: dict[str, tuple[Any, str]] = {
    "result-2.json": (ResultLine, RESULT_SCHEMA),
    "report-1.json": (ReportDoc, REPORT_SCHEMA),
    "error-1.json": (ErrorLine, ERROR_SCHEMA),
}


def _def_name(title: str) -> str:
    """A definition's name: a generic one's without its argument, ``Line`` before it in
    a result line (whose parts are indices)."""
    base, _, args = title.partition("[")
    return ("Line" + base) if "int" in args else base


def schema(struct: Any, title: str) -> dict[str, Any]:
    """The JSON Schema of one format: the line itself at the top, its definitions named
    plainly (``_def_name``)."""
    from unmask.plumbing.struct_schema import json_schema

    return json_schema(title, struct, inline=True, rename=_def_name)


def schemas() -> dict[str, str]:
    """Every published schema's file name and text (docs/schemas/, written by ``python -m
    unmask.checking.formats FOLDER``): this layer's three, and those of the formats below it
    (the protocol IR, the replay, the review line, the calibration file), so one list names
    them all."""
    from unmask.ir import format as ir_format
    from unmask.plumbing.struct_schema import schema_text
    from unmask.replay import format as replay_format
    from unmask.review import format as review_format

    docs = {name: schema(struct, title) for name, (struct, title) in SCHEMAS.items()}
    docs["protocol-1.json"] = ir_format.json_schema()
    docs["replay-1.json"] = replay_format.replay_schema()
    docs["review-1.json"] = review_format.review_schema()
    docs["calibration-1.json"] = review_format.calibration_schema()
    return {name: schema_text(doc) for name, doc in docs.items()}


def main(argv: Sequence[str]) -> int:
    """``python -m unmask.checking.formats [FOLDER]``: write the schemas (docs/schemas)."""
    import os

    folder = argv[0] if argv else os.path.join("docs", "schemas")
    os.makedirs(folder, exist_ok=True)
    for name, text in schemas().items():
        with open(os.path.join(folder, name), "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        print(os.path.join(folder, name))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
