"""Passages, claims and citation markers: how a source is read as things with ids.

Contract: ``passages(text)`` reads a source as one item a non-blank line, each after an id in
one of ``PASSAGE_FORMS`` (``line 3: …`` as the WiCE importer writes it, ``[1] …`` and
``[p1] …`` as the ``jsonl`` and ``structured`` importers write a list, ``passage 2: …``,
``p2: …``; one form throughout, no id twice), or None. ``passage_of(member, ids)`` is the id a
family member names: its own, else the one ending in the same number, when exactly one does.
``markers(text, ids)`` finds the citation markers in an answer's text (``[p1]``, ``[2]``,
``[1, 3]``) and gives, per id a marker names, the spans of those markers; an id no marker
names is not in the result (not citing is not a statement). ``AnswerCitations``
(``answer-citations``) is the registered rule that fills context atoms from those markers
(``unmask propose replay``). All of it is pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from unmask.propose import Fill, Proposer

# the task `unmask propose replay` asks the citation reader for
ANSWER_CITATIONS = Fill("context", "answer-citations")
# a marker's confidence: a bracketed id that names a passage is what the answer cites; the
# rest is for a marker that is not a citation at all (`[sic]` never names a passage)
MARKER_CONFIDENCE = 0.95
MAX_MARKERS = 10_000  # per text; past it no marker is read (docs/security.md)

# a passage's id, then its text; the first form every non-blank line of a source fits is used
PASSAGE_FORMS = (
    re.compile(r"line (\d+): "),
    re.compile(r"\[([A-Za-z0-9_.-]+)\] ?"),
    re.compile(r"(?i:passage|document|doc|source|chunk|context) ([A-Za-z0-9_.-]+): "),
    re.compile(r"([A-Za-z_]*\d+)[:.)] "),
)
_TRAILING_NUMBER = re.compile(r"[A-Za-z_]*?(\d+)")
_MARKER = re.compile(r"\[([A-Za-z0-9_.-]{1,64}(?:\s*[,;]\s*[A-Za-z0-9_.-]{1,64}){0,49})\]")
_MARKER_ID = re.compile(r"[A-Za-z0-9_.-]+")


def passages(text: str) -> dict[str, tuple[int, str]] | None:
    """The passages of a context source, one a non-blank line, in order: id → (offset of the
    text, text), in the first of ``PASSAGE_FORMS`` that every non-blank line fits with no id
    twice; None when none fits (prose is not passages)."""
    for form in PASSAGE_FORMS:
        out: dict[str, tuple[int, str]] = {}
        pos = 0
        for raw in text.split("\n"):
            line = raw.rstrip("\r")
            if line.strip():
                m = form.match(line)
                if m is None or m.group(1) in out:
                    break
                out[m.group(1)] = (pos + m.end(), line[m.end() :])
            pos += len(raw) + 1
        else:
            if out:
                return out
    return None


def passage_of(member: str, ids: Iterable[str]) -> str | None:
    """The passage a family member names: the one whose id it is, else the one whose id is
    the number the member ends in, ignoring leading zeros (``s5``, ``p5`` → ``5``, ``line 5``)."""
    ids = list(ids)
    if member in ids:
        return member
    m = _TRAILING_NUMBER.fullmatch(member)
    if m is None:
        return None
    # compared as digits, leading zeros aside: a member's number is the file's text, and
    # `int` of thousands of digits fails outright
    n = m.group(1).lstrip("0") or "0"
    by_number = [
        i
        for i in ids
        if (k := _TRAILING_NUMBER.fullmatch(i)) and (k.group(1).lstrip("0") or "0") == n
    ]
    return by_number[0] if len(by_number) == 1 else None


def markers(text: str, ids: Iterable[str]) -> dict[str, list[tuple[int, int]]]:
    """Per passage id, the [start, end) spans in ``text`` of the citation markers naming it,
    in order of the ids' first mention; an id cited by no marker is absent."""
    ids = list(ids)
    out: dict[str, list[tuple[int, int]]] = {}
    for k, m in enumerate(_MARKER.finditer(text)):
        if k >= MAX_MARKERS:
            return {}
        for item in _MARKER_ID.finditer(m.group(1)):
            found = passage_of(item.group(), ids)
            spans = out.setdefault(found, []) if found is not None else None
            # markers come in order: one naming a passage twice (`[1, p1]`) is the last one
            if spans is not None and (not spans or spans[-1] != m.span()):
                spans.append(m.span())
    return out


def without_markers(text: str) -> str:
    """``text`` with its bracketed markers blanked out (same length): what a claim says,
    without the `[p1]` that says where from (its `1` is no term of the claim)."""
    return _MARKER.sub(lambda m: " " * len(m.group()), text)


class AnswerCitations(Proposer):
    """The answer's own citation markers, as context atoms that say what it cites."""

    name, kind, version = "answer-citations", "rule", 1
    fills = (ANSWER_CITATIONS,)
    summary = "the passages an answer cites, from its markers such as `[p1]` or `[2]`; no model"

    def cited(self, text: str, ids: list[str]) -> dict[str, list[tuple[int, int]]]:
        return markers(text, ids)
