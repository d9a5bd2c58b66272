"""Reviewing the unreviewed annotations that findings and passing checks rest on.

Contract:
- ``items(docs)`` takes (location, report JSON, replay JSON) triples and returns one ``Item``
  per unreviewed annotation (``by.reviewed`` false, given or by default) in the explanation of
  a VIOLATED check (``checks``) or an OK one (``passing``: a wrong TRUE can hide a break),
  ranked by how many checks it settles (most first; then more findings first; then location,
  then atom: the same input, the same order); ``findings_only`` leaves the passing ones out;
- ``Item.to_json()`` is one line of a review file (``unmask.review/1``): where the replay is,
  its id and the digest of its record's bytes (``digest``), the atom, its current value and
  ``by``, each quote with a window of the source around it, and the empty ``decision``,
  ``value`` and ``reviewer`` a person fills in; checks are counted one by one, two of one
  name (two identical grounding pairs) as two, as the audit counts them;
- ``decide(obj, file, line)`` reads one filled line back into a ``Decision`` or raises
  ``UnmaskError`` naming ``file:line`` and the JSON path; ``apply_to(doc, decision)`` changes
  one replay document in place: ``by`` becomes ``{kind: human, name, reviewed: true}``, the old
  value, ``by`` and evidence are kept in ``review.original`` (and a sampled line's draw in
  ``review.sample``; a blind ``answer`` is not checked against a value it never showed); a
  replay whose annotation no longer is what was exported is refused (``review-stale``), never
  overwritten; a ``Decision`` keeps the line's other keys (``extra``) for whoever writes more
  of them;
- ``record_digest(data)`` is the digest an export line carries; ``dumps`` is review's JSON
  text under the output policy (``unmask.plumbing.safe.json_text``). Writing decisions into the
  files is ``unmask.review.apply``'s.
Imports nothing from ``unmask.commands`` or ``unmask.cli``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.jsonload import show
from unmask.plumbing.safe import json_text
from unmask.plumbing.span import Span
from unmask.plumbing.structs import UNSET
from unmask.replay.data import VALUES
from unmask.review.format import REVIEW_SCHEMA, ReviewLine, ReviewSpan, line_json, read_review_line

SCHEMA = REVIEW_SCHEMA
DECISIONS = ("accept", "reject", "skip")
CONTEXT_CHARS = 160  # characters of source shown on each side of a quote
DIGEST_PREFIX = "sha256:"


def record_digest(data: bytes) -> str:
    """The digest of a replay's record as stored: a whole file's bytes, or a JSON Lines
    record's (its line without the line end), as the audit reads them."""
    return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()


def reviewed(by: dict[str, Any] | None) -> bool:
    """``by`` as a replay gives it: reviewed unless a rule's or model's, or it says so."""
    if not isinstance(by, dict):
        return True
    flag = by.get("reviewed")
    if isinstance(flag, bool):
        return flag
    return by.get("kind") in ("human", "gold")


@dataclass(slots=True)
class Item:
    """One unreviewed annotation and the findings that rest on it."""

    location: str
    replay: str
    atom: str
    value: str
    by: dict[str, Any]
    evidence: list[dict[str, Any]]  # source, start, end, quote, context
    explanation: str = ""
    checks: list[str] = field(default_factory=list)  # one name per VIOLATED check on it
    passing: list[str] = field(default_factory=list)  # one name per passing (OK) check on it
    digest: str = ""  # of the replay's record when it was read: `--apply` checks it

    @property
    def key(self) -> tuple[str, str]:
        return (self.location, self.atom)

    def rests(self) -> str:
        """``1 finding rests on it: …; 2 passing checks rest on it: …``."""
        out = []
        for names, one, many in (
            (self.checks, "finding rests", "findings rest"),
            (self.passing, "passing check rests", "passing checks rest"),
        ):
            if names:
                n = len(names)
                out.append(f"{n} {one if n == 1 else many} on it: " + ", ".join(names))
        return "; ".join(out)

    def to_json(self) -> dict[str, Any]:
        return line_json(
            ReviewLine(
                schema=REVIEW_SCHEMA,
                location=self.location,
                replay=self.replay,
                digest=self.digest or UNSET,
                atom=self.atom,
                current=self.value,  # type: ignore[arg-type]  # as the report gives it
                by=self.by,
                evidence=spans_of(self.evidence),
                explanation=self.explanation,
                findings=len(self.checks),
                checks=self.checks,
                passing=self.passing,
                decision="",
                value="",
                reviewer="",
            )
        )


def spans_of(evidence: list[dict[str, Any]]) -> list[ReviewSpan]:
    """Spans shaped as ``items`` and ``unmask.review.sample.frame`` make them (source,
    start, end, quote, context) as the review line's."""
    return [ReviewSpan(**e) for e in evidence]


def _checks(report: dict[str, Any]) -> list[tuple[str, dict[str, Any] | None, bool]]:
    """(name, explanation, finding?) of every check of a report whose status its explanation
    decides: VIOLATED ones (findings) and OK ones (passing: ENTAILED), in report order. A
    check left UNKNOWN (a coverage REFUTED among them) passes and fails nothing."""
    out = []
    decided = {"VIOLATED": True, "OK": False}

    def add(name: str, result: Any, expl: Any) -> None:
        if result in decided:
            out.append((name, expl, decided[result]))

    v = report.get("verdict")
    if isinstance(v, dict):
        add("verdict", v.get("result"), v.get("explanation"))
    for r in report.get("requirements") or ():
        if not isinstance(r, dict):
            continue
        add(f"requirement {r.get('id')}", r.get("result"), r.get("explanation"))
        add(
            f"requirement {r.get('id')} coverage",
            r.get("coverage_result"),
            r.get("coverage_explanation"),
        )
    for g in report.get("grounding") or ():
        if isinstance(g, dict):
            arrow = g.get("direction") or "~"
            name = f"grounding {g.get('judge')} {arrow} {g.get('context')}"
            add(name, g.get("result"), g.get("explanation"))
    return out


def window(text: str, start: int, end: int, chars: int = CONTEXT_CHARS) -> str:
    """The source around ``[start, end)``, the quote in ``[[…]]``, cut at ``chars`` a side."""
    lo, hi = max(0, start - chars), min(len(text), end + chars)
    head = ("…" if lo > 0 else "") + text[lo:start]
    tail = text[end:hi] + ("…" if hi < len(text) else "")
    return f"{head}[[{text[start:end]}]]{tail}"


def _is_part(part: Any) -> bool:
    """An annotation part shaped as the report writes it (a results file may be edited)."""
    if not isinstance(part, dict) or part.get("kind") != "annotation":
        return False
    ok = isinstance(part.get("atom"), str) and isinstance(part.get("value"), str)
    return ok and isinstance(part.get("by"), dict) and _spans(part.get("evidence", [])) is not None


def items(
    docs: list[tuple[str, dict[str, Any], dict[str, Any]]],
    chars: int = CONTEXT_CHARS,
    findings_only: bool = False,
    digests: dict[str, str] | None = None,
):
    """The ranked review items of (location, report, replay document) triples: the
    unreviewed annotations behind every decided check, or behind the findings only;
    ``digests`` gives each location's ``record_digest``, for the export."""
    found: dict[tuple[str, str], Item] = {}
    counted: set[tuple[str, str, int]] = set()  # (location, atom, check): once per check
    for location, report, doc in docs:
        doc = doc if isinstance(doc, dict) else {}
        sources = doc.get("sources")
        sources = sources if isinstance(sources, dict) else {}
        notes = {
            a.get("atom"): a.get("explanation", "")
            for a in doc.get("annotations") or ()
            if isinstance(a, dict)
        }
        for n, (name, expl, finding) in enumerate(_checks(report)):
            if findings_only and not finding:
                continue
            parts = expl.get("parts", ()) if isinstance(expl, dict) else ()
            for part in parts if isinstance(parts, list) else ():
                by = part.get("by") if _is_part(part) else None
                if by is None or reviewed(by):
                    continue
                key = (location, part["atom"])
                if key not in found:
                    evidence = []
                    for e in part.get("evidence") or ():
                        text = sources.get(e["source"])
                        text = text if isinstance(text, str) else ""
                        evidence.append({**e, "context": window(text, e["start"], e["end"], chars)})
                    found[key] = Item(
                        location,
                        str(report.get("replay", "")),
                        part["atom"],
                        part["value"],
                        dict(by),
                        evidence,
                        str(notes.get(part["atom"]) or ""),
                        digest=(digests or {}).get(location, ""),
                    )
                if (*key, n) not in counted:  # an atom twice in one explanation: once
                    counted.add((*key, n))
                    (found[key].checks if finding else found[key].passing).append(name)
    return sorted(found.values(), key=_rank)


def _rank(i: Item) -> tuple[int, int, str, str]:
    """Most checks settled first; among as many, more findings first; then where and what."""
    return (-len(i.checks) - len(i.passing), -len(i.checks), i.location, i.atom)


# --- reading decisions back -----------------------------------------------------------------


@frozen
class Decision:
    location: str
    atom: str
    current: str
    by: dict[str, Any]
    evidence: tuple[tuple[str, int, int, str], ...]
    decision: str  # accept | reject | skip | answer (a blind sample's line)
    value: str  # the value to write: the current one (accept) or the reviewer's (reject)
    reviewer: str
    line: int = 0
    sample: dict[str, Any] | None = None  # a sampled line's `sample`, kept in `review`
    replay: str | None = None  # the replay's id as exported: checked before writing
    digest: str | None = None  # its record's digest as exported (older exports have none)
    extra: dict[str, Any] = field(default_factory=dict)  # the line's other keys, as given


def _bad(file: str, line: int, path: str, message: str, help: str | None = None) -> UnmaskError:
    where = f"{path}: " if path else ""
    return UnmaskError(
        [
            Diagnostic(
                Code.REVIEW_LINE, where + message, span=Span(file, line, 1, line, 1), help=help
            )
        ]
    )


def _spans(raw: Any) -> tuple[tuple[str, int, int, str], ...] | None:
    if not isinstance(raw, list):
        return None
    out = []
    for e in raw:
        if not isinstance(e, dict):
            return None
        src, start, end, quote = (e.get(k) for k in ("source", "start", "end", "quote"))
        if not (isinstance(src, str) and isinstance(quote, str)):
            return None
        if type(start) is not int or type(end) is not int:
            return None
        out.append((src, start, end, quote))
    return tuple(out)


def reviewer_of(obj: dict, what: str, reviewer: str | None, file: str, line: int) -> str:
    """Who decided a review line: its `reviewer`, else ``--reviewer``; a decision (not a
    `skip`) without one is refused."""
    name = obj.get("reviewer", "")
    name = (name.strip() if isinstance(name, str) else name) or reviewer or ""
    if what != "skip" and (not isinstance(name, str) or not name):
        raise _bad(
            file,
            line,
            "reviewer",
            "a decision needs the reviewer's name",
            "fill in `reviewer`, or give `--reviewer NAME`",
        )
    return name if isinstance(name, str) else ""


def read_line_as_exported(obj: Any, file: str, line: int) -> ReviewLine:
    """A review line's fields read into a ``ReviewLine`` (``unmask.review.format``), or the
    error naming the first field that is not as exported."""
    if not isinstance(obj, dict) or obj.get("schema") != SCHEMA:
        raise _bad(
            file,
            line,
            "$",
            f'not a review line: expected `"schema": "{SCHEMA}"`',
            "write review lines with `unmask review --export`",
        )
    got = read_review_line(obj)
    if isinstance(got, Diagnostic):
        raise _bad(file, line, got.path or "$", got.message)
    for key in ("location", "atom"):  # present and strings; not empty either
        if not getattr(got, key):
            raise _bad(file, line, key, f"expected `{key}` as exported, a string")
    return got


def decide(obj: Any, file: str, line: int, reviewer: str | None = None) -> Decision | None:
    """One review line read back: a ``Decision``, None when it has none yet, else an error."""
    got = read_line_as_exported(obj, file, line)
    if not isinstance(got.current, str) or not got.current:  # only a blind line has none
        raise _bad(file, line, "current", "expected `current` as exported, a string")
    spans = tuple((e.source, e.start, e.end, e.quote) for e in got.evidence)
    what = got.decision
    if what in ("", None, UNSET):
        return None
    if not isinstance(what, str) or what.strip().lower() not in DECISIONS:
        raise _bad(
            file,
            line,
            "decision",
            f"unknown decision `{show(what)}`",
            "write `accept`, `reject` (with the correct `value`), `skip` or leave it empty",
        )
    what = what.strip().lower()
    value = "" if got.value is UNSET else got.value
    value = value.strip().upper() if isinstance(value, str) else value
    current = got.current
    if what == "reject":
        if value not in VALUES:
            raise _bad(
                file,
                line,
                "value",
                "a rejected annotation needs the correct value"
                + (f", found `{show(value)}`" if value not in ("", None) else ""),
                "write `TRUE`, `FALSE` or `UNKNOWN`",
            )
        if value == current:
            raise _bad(
                file,
                line,
                "value",
                f"`reject` with the value the annotation has, `{current}`",
                "write `accept` to keep the value, or give another one",
            )
    elif what == "accept":
        if value not in ("", None, current):
            raise _bad(
                file,
                line,
                "value",
                f"`accept` keeps `{current}`, found `{show(value)}`",
                "write `reject` to change the value",
            )
        value = current
    else:
        value = current
    name = reviewer_of(obj, what, reviewer, file, line)
    extra = {k: v for k, v in obj.items() if k not in _KNOWN}
    return Decision(
        got.location,
        got.atom,
        current,
        got.by,
        spans,
        what,
        value,
        name,
        line,
        replay=None if got.replay is UNSET else got.replay,
        digest=None if got.digest is UNSET else got.digest,
        extra=extra,
    )


_KNOWN = frozenset(Item("", "", "", "", {}, []).to_json()) | {"digest"}


def apply_to(doc: dict[str, Any], d: Decision) -> None:
    """Write decision ``d`` into the replay document ``doc`` (in place), keeping the original.

    Raises ``UnmaskError`` (``review-stale``) when the annotation is not what was exported."""
    anns = doc.get("annotations") if isinstance(doc, dict) else None
    found = [a for a in anns or () if isinstance(a, dict) and a.get("atom") == d.atom]
    now = found[0] if len(found) == 1 else None
    if now is None or (
        # a blind line never showed the value, so it cannot say which it was
        (d.decision != "answer" and now.get("value") != d.current)
        or now.get("by") != d.by
        or _spans(now.get("evidence", [])) != d.evidence
    ):
        raise UnmaskError(
            [
                Diagnostic(
                    Code.REVIEW_STALE,
                    f"the annotation of `{show(d.atom)}` in `{show(d.location)}` changed since "
                    "the export",
                    help="it is not applied: export again and review the annotation as it is now",
                )
            ]
        )
    original = {k: now[k] for k in ("value", "by", "evidence", "explanation") if k in now}
    now["review"] = {"decision": d.decision, "original": original}
    if d.sample is not None:  # what calibration counts: a draw, not a ranked queue
        now["review"]["sample"] = d.sample
    now["value"] = d.value
    now["by"] = {"kind": "human", "name": d.reviewer, "reviewed": True}
    if d.value == "UNKNOWN":
        # no value is claimed: the quotes backed the old one, and stay in `review.original`
        now["evidence"] = []


def dumps(doc: Any, indent: int | None = None) -> str:
    """JSON text that can be written as UTF-8 under the output policy: non-ASCII kept as it
    is but every acting character (U+202E, C1 controls) as a ``\\u`` escape
    (``unmask.plumbing.safe.json_text``), unless the text holds a lone surrogate (JSON allows one),
    then every non-ASCII character is escaped."""
    text = json.dumps(doc, indent=indent, ensure_ascii=False)
    try:
        text.encode()
    except UnicodeEncodeError:
        return json.dumps(doc, indent=indent)
    return json_text(text)


__all__ = [
    "DECISIONS",
    "SCHEMA",
    "Decision",
    "Item",
    "apply_to",
    "decide",
    "dumps",
    "items",
    "record_digest",
    "reviewed",
    "window",
]
