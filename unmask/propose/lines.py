"""One input line of ``unmask propose claims`` or ``propose judge``, read and answered.

Contract: ``parse_claim(raw)`` is a line's id, claim and evidence sentences;
``parse_rationale(raw, field)`` its id and the rationale ``field`` names (a key of the line,
else a dotted path through objects and lists: ``result.reason``, ``contexts.0``). Each
raises ``BadLine`` saying what is wrong, naming the field (and the line's id when it has
one): not UTF-8, not JSON as ``unmask.plumbing.jsonload`` reads it (a key given twice, a
number JSON does not allow), not an object, a field
missing or of another type; a line of more than ``MAX_LINE_BYTES`` is read as None and is
bad unread. ``claim_record`` and ``judge_record`` are a line's output record, and
``answers(lines, respond)`` is one record per non-blank line, in order: ``respond``'s, or
``{"id", "line", "error"}`` with the message (a line too large to answer is that line's
error, the rest still answered). ``claim_proposer`` and ``judge_proposer`` make the
proposer of each, or raise ``UnmaskError`` (a usage problem). Output is a function of the
input alone; nothing here reads a file or prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.limits import Limits
from unmask.propose import Proposer
from unmask.propose.claims import ClaimSupport

MAX_LINE_BYTES = 16 * 1024 * 1024
MAX_SENTENCES = 10_000
_LINE_LIMITS = Limits(max_file_bytes=MAX_LINE_BYTES)


class BadLine(Exception):
    def __init__(self, message: str, row_id: object = None):
        super().__init__(message)
        self.message = message
        self.row_id = row_id


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _object(raw: bytes | None) -> tuple[dict, object]:
    """One input line as a JSON object and its optional ``id``, or ``BadLine`` saying why
    (None: a line skipped unread past the limit)."""
    if raw is None:
        raise BadLine(f"line longer than {MAX_LINE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadLine(f"not UTF-8 (byte {exc.start + 1})") from None
    from unmask.plumbing.jsonload import parse_json_text

    try:
        # the one JSON reader: a key given twice, NaN or nesting past the limit is a bad
        # line, never a value guessed
        row = parse_json_text(text, None, _LINE_LIMITS)
    except UnmaskError as exc:
        msg = exc.diagnostics[0].message.removeprefix("invalid json: ")
        raise BadLine(f"not valid JSON: {msg}") from None
    if not isinstance(row, dict):
        raise BadLine(f"expected a JSON object, found {_kind(row)}")
    row_id = row.get("id")
    if row_id is not None and (isinstance(row_id, bool) or not isinstance(row_id, (str, int))):
        raise BadLine(f"field `id` must be a string or an integer, found {_kind(row_id)}")
    return row, row_id


def parse_claim(raw: bytes | None) -> tuple[object, str, list[str]]:
    """The line's id, claim and evidence, or ``BadLine`` naming the field at fault."""
    row, row_id = _object(raw)
    if "claim" not in row:
        raise BadLine("missing field `claim`", row_id)
    claim = row["claim"]
    if not isinstance(claim, str):
        raise BadLine(f"field `claim` must be a string, found {_kind(claim)}", row_id)
    if "evidence" not in row:
        raise BadLine("missing field `evidence`", row_id)
    evidence = row["evidence"]
    if not isinstance(evidence, list):
        raise BadLine(
            f"field `evidence` must be an array of sentences, found {_kind(evidence)}", row_id
        )
    if len(evidence) > MAX_SENTENCES:
        raise BadLine(f"field `evidence` has more than {MAX_SENTENCES} sentences", row_id)
    for k, sentence in enumerate(evidence):
        if not isinstance(sentence, str):
            raise BadLine(
                f"field `evidence[{k}]` must be a string, found {_kind(sentence)}", row_id
            )
    return row_id, claim, evidence


def parse_rationale(raw: bytes | None, field: str) -> tuple[object, str]:
    """The line's id and rationale, or ``BadLine`` naming the field at fault."""
    row, row_id = _object(raw)
    value = _at(row, field, row_id)
    if isinstance(value, dict) and isinstance(value.get("rationale"), str):
        # a judge output in the judge schema's shape: its rationale is one step further
        raise BadLine(
            f"field `{field}` must be a string, found an object whose rationale is"
            f" `{field}.rationale`",
            row_id,
        )
    if not isinstance(value, str):
        raise BadLine(f"field `{field}` must be a string, found {_kind(value)}", row_id)
    return row_id, value


def _at(row: dict, field: str, row_id: object) -> object:
    """The value ``field`` names in ``row``: a key of the line, else a dotted path through
    objects and lists (``result.reason``, ``contexts.0``); ``BadLine`` says which step
    found nothing."""
    if field in row:
        return row[field]
    steps = field.split(".")
    if len(steps) == 1 or "" in steps:
        raise BadLine(f"missing field `{field}`", row_id)
    value: object = row
    for n, step in enumerate(steps):
        where = ".".join(steps[:n])
        if isinstance(value, dict):
            if step not in value:
                at = f" in `{where}`" if where else ""
                raise BadLine(f"missing field `{field}`: no `{step}`{at}", row_id)
            value = value[step]
        elif isinstance(value, list):
            if not (step.isascii() and step.isdigit() and int(step) < len(value)):
                raise BadLine(
                    f"missing field `{field}`: `{where}` holds {len(value)} items, "
                    f"with no item `{step}` (items count from 0)",
                    row_id,
                )
            value = value[int(step)]
        else:
            raise BadLine(
                f"missing field `{field}`: `{where}` is {_kind(value)}, not an object or an array",
                row_id,
            )
    return value


def claim_proposer(name: str) -> Proposer:
    """The registered proposer ``name``, which must fill claim support (``ClaimSupport``)."""
    from unmask.propose import CLAIM_SUPPORT, create

    proposer = create(name, CLAIM_SUPPORT)
    if not isinstance(proposer, ClaimSupport):  # a registered class that lacks its task
        raise TypeError(f"proposer `{proposer.name}` fills claim support without `claim_support`")
    return proposer


def claim_record(proposer: Any, raw: bytes | None, threshold: float) -> dict:
    """A ``propose claims`` line's record: which sentences support the claim, and a label."""
    row_id, claim, evidence = parse_claim(raw)
    a = proposer.claim_support(claim, evidence, threshold)
    return {
        "id": row_id,
        "supporting": list(a.supporting),
        "label": a.label,
        "confidence": a.confidence,
        "evidence": [
            {
                "sentence": m.sentence,
                "start": m.start,
                "end": m.end,
                "quote": m.quote,
                "confidence": m.confidence,
            }
            for m in a.matches
        ],
        "by": proposer.by.to_json(),
    }


def judge_proposer(rules_path: str | None, protocol_path: str | None, max_chars: int) -> Any:
    """The judge rules of ``--rules``, of the rule file beside ``--protocol``, or the
    built-in ones; a rationale longer than ``max_chars`` is its line's error."""
    from unmask.propose.judge import JudgeRules, load_rules, rules_for

    if rules_path and protocol_path:
        raise UnmaskError([Diagnostic(Code.USAGE, "give `--rules` or `--protocol`, not both")])
    path = rules_path or (str(rules_for(protocol_path)) if protocol_path else None)
    return JudgeRules(load_rules(path) if path else None, max_chars)


def judge_record(proposer: Any, raw: bytes | None, field: str, threshold: float) -> dict:
    """A ``propose judge`` line's record: its rationale's judge annotations."""
    from unmask.propose.judge import TooLarge

    row_id, text = parse_rationale(raw, field)
    try:
        return {"id": row_id, "annotations": proposer.annotations(text, threshold)}
    except TooLarge as exc:
        raise BadLine(str(exc), row_id) from None


def answers(
    lines: Iterable[tuple[int, bytes | None]], respond: Callable[[bytes | None], dict]
) -> Iterator[tuple[int, dict, str | None]]:
    """(line number, record, error message or None) of each non-blank line, in order."""
    for n, raw in lines:
        if raw is not None and not raw.strip():
            continue
        try:
            try:
                record = respond(raw)
            except (MemoryError, RecursionError):
                # one line too large to hold is that line's error; the lines before it
                # are written and the rest are still read
                raise BadLine("too large to propose for: out of memory") from None
        except BadLine as exc:
            yield n, {"id": exc.row_id, "line": n, "error": exc.message}, exc.message
            continue
        yield n, record, None
