"""The error record, ``unmask.error/1``: the result line of a replay that could not be checked.

Contract: ``ErrorLine`` and the structs it holds (``DiagnosticDoc``, ``SpanDoc``, and
``Recheck``, which a report's line holds too) are the format, defined once: fields in
the order they are written, one only sometimes there ``UNSET`` when absent, then not
written. ``error_line(location, diags, recheck)`` is the record of a replay's diagnostics
(``recheck``: the run's ``--protocol``, a ``unmask.replay.data.Recheck``);
``unmask.plumbing.structs.encode_line`` is its bytes. The record is here, below the
checker, so that every command that writes one (``audit``'s results file, ``annotate``'s
``errors.jsonl``) writes it the one way, producers included (they may not import
``unmask.checking``, which re-exports these and publishes the schema, error-1.json).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from msgspec import UNSET, Struct, UnsetType

if TYPE_CHECKING:
    from unmask.plumbing.diagnostics import Diagnostic
    from unmask.replay import data

ERROR_SCHEMA = "unmask.error/1"  # the result line of a replay that could not be checked


# a ``unmask.replay.data.Recheck`` as written, named as the published schemas name it
class Recheck(Struct, kw_only=True):
    """``--protocol``: the protocol checked against, its digest, the atoms it lacks."""

    protocol: str
    # always written; a line without one (edited) was checked against no protocol anyone
    # can name, and ``audit --resume`` and ``next`` say so (``record.same_protocol``)
    digest: str = ""
    dropped: list[str]


class SpanDoc(Struct, kw_only=True):
    """Where a diagnostic points: a file, a line and column to an end line and column."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int


class DiagnosticDoc(Struct, kw_only=True):
    """A diagnostic as an error record writes it (docs/codes.md has the codes)."""

    code: str
    message: str
    severity: str = "error"  # always written; read as an error when left out
    file: str | UnsetType = UNSET
    path: str | UnsetType = UNSET
    span: SpanDoc | UnsetType = UNSET
    help: str | UnsetType = UNSET
    notes: list[str] | UnsetType = UNSET


class ErrorLine(Struct, tag_field="schema", tag=ERROR_SCHEMA, kw_only=True):
    """The result line of a replay that could not be checked (``unmask.error/1``);
    ``recheck``: the run's ``--protocol``, so a resumed run can tell which it was."""

    location: str
    errors: list[DiagnosticDoc]
    recheck: Recheck | UnsetType = UNSET


def recheck_doc(rc: data.Recheck | None) -> Recheck | UnsetType:
    """A run's ``--protocol`` as a line writes it; ``UNSET`` (not written) without one."""
    if rc is None:
        return UNSET
    return Recheck(protocol=rc.protocol, digest=rc.digest, dropped=list(rc.dropped))


def diagnostic_doc(d: Diagnostic) -> DiagnosticDoc:
    s = d.span
    return DiagnosticDoc(
        code=d.code,
        message=d.message,
        severity=d.severity,
        file=UNSET if d.file is None else d.file,
        path=UNSET if d.path is None else d.path,
        span=UNSET
        if s is None
        else SpanDoc(
            file=s.file,
            line=s.line,
            column=s.column,
            end_line=s.end_line,
            end_column=s.end_column,
        ),
        help=UNSET if d.help is None else d.help,
        notes=list(d.notes) if d.notes else UNSET,
    )


def error_line(
    location: str, diags: Sequence[Diagnostic], recheck: data.Recheck | None = None
) -> ErrorLine:
    """The error record of a replay that could not be checked; ``recheck``: the run's
    ``--protocol``."""
    return ErrorLine(
        location=location,
        errors=[diagnostic_doc(d) for d in diags],
        recheck=recheck_doc(recheck),
    )
