"""Review lines: an item's line as ``--export`` writes it, and a filled review file read back
and applied.

Contract: ``export_line(item, trust)`` is an item's review line (``Item.to_json``), with a
calibration (``trust``) its reader's ``measure``: the calibration's row, or
``{"measured": false}``; ``measure(item, trust)`` is that row, None when unmeasured.
``read_review(file, limits, reviewer)`` reads a filled review file, a regular file read once
under the size bound, into its decisions (``unmask.review.sample.read_line``: a sampled line
or an exported one) and the diagnostics of its bad lines (not JSON as
``unmask.plumbing.jsonload`` reads it, a key given twice included, longer than the file
limit, or a line ``decide`` refuses), each at its line; a file that cannot be read raises
``UnmaskError``. ``apply_review(decisions, file, root, limits)`` writes them into their
replays (``unmask.review.apply``) and returns how many were applied, how many the replays
held already, the refusals as diagnostics at their line of the review file (where in the
replay as a note), and each changed record's new digest by location.
"""

from __future__ import annotations

from typing import Any

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.limits import Limits
from unmask.plumbing.safe import printable


def measure(item: Any, trust: Any) -> Any:
    """The calibration's row for an item's reader, None when unmeasured."""
    from unmask.review.calibration import reader_of

    return trust.calibration.row(reader_of(item.by, item.atom))


def export_line(item: Any, trust: Any) -> dict[str, Any]:
    """An item's review line; with a calibration, ``measure``: its reader's row, or
    ``{"measured": false}``."""
    obj = item.to_json()
    if trust is not None:
        row = measure(item, trust)
        obj["measure"] = {"measured": False} if row is None else row.figures()
    return obj


def apply_review(decisions: list, review_file: str, root: str, limits: Limits):
    """Write every accept/reject decision into its replay, one transaction per file
    (``unmask.review.apply``): (how many were applied, how many its replay holds already,
    the refusals as diagnostics, one or more a refused line, each record's new digest by
    location)."""
    from unmask.plumbing.span import Span
    from unmask.review.apply import apply_decisions

    done = apply_decisions(decisions, root, limits)
    refused = []
    for d, exc in done.refused:
        span = Span(review_file, d.line, 1, d.line, 1)
        for diag in exc.diagnostics:
            where = diag.location()
            notes = (*diag.notes, *((f"at {where}",) if where else ()))
            refused.append(Diagnostic(diag.code, diag.message, span, help=diag.help, notes=notes))
    return done.applied, len(done.already), refused, done.digests


def _not_json(d: Diagnostic, span: Any) -> Diagnostic:
    """A review line the JSON reader refused: a value it names at its path, else the line."""
    if d.code in (Code.JSON_SYNTAX, Code.ENCODING):
        return Diagnostic(
            Code.REVIEW_LINE,
            "$: not valid JSON",
            span=span,
            help="each line is one JSON object, as exported",
        )
    # a key twice, NaN, a number too long (at their path), nesting past the limit
    return Diagnostic(Code.REVIEW_LINE, f"{d.path or '$'}: {d.message}", span=span, help=d.help)


def read_review(review_file: str, limits: Limits, reviewer: str | None):
    """(decisions, diagnostics of bad lines) of a review file: a regular file, read once
    under the size bound (a pipe or a device is one line, never waited on); raises
    ``UnmaskError`` when it cannot be read."""
    import io

    from unmask.plumbing.files import read_bytes
    from unmask.plumbing.jsonload import parse_json_bytes
    from unmask.plumbing.lines import bounded_lines
    from unmask.plumbing.span import Span
    from unmask.review.sample import read_line as decide

    decisions, bad = [], []
    data = read_bytes(review_file, limits, printable(review_file))
    with io.BytesIO(data) as fh:
        for n, raw in bounded_lines(fh, limits.max_file_bytes, skip_bom=True):
            span = Span(review_file, n, 1, n, 1)
            if raw is None:
                bad.append(
                    Diagnostic(Code.REVIEW_LINE, "line longer than the file limit", span=span)
                )
                continue
            if not raw.strip():
                continue
            try:
                # the one JSON reader: a key given twice, NaN or Infinity is refused at its
                # path, never read as one of the values (the decision would be a guess)
                obj = parse_json_bytes(raw, review_file, limits, first_line=n)
            except UnmaskError as exc:
                bad.append(_not_json(exc.diagnostics[0], span))
                continue
            try:
                d = decide(obj, review_file, n, reviewer)
            except UnmaskError as exc:
                bad.extend(exc.diagnostics)
                continue
            if d is not None:
                decisions.append(d)
    return decisions, bad
