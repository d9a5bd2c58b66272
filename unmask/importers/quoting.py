"""Quotations in a judge's rationale, and whether they are a source's words.

Contract: ``quotations(text, namings)`` finds the spans a rationale puts in double quotes
(marks paired in order, so the text between two quotations is never one) and says, for
each, whether the words just before it give it to a source (``True``), to something else
(left out), or to no one (``None``). ``locate(source, quote)`` finds a quotation in a
source after folding case, punctuation, spacing and mojibake, across an ellipsis;
``material(source, near, quote)`` says whether a quotation that is not there says what the
source does not (a number it never has, a negation its closest sentence lacks or drops, two
or more words it never uses) — the only ground on which an importer calls a quotation a
misquote. Nothing here decides a value from something not being found: a quotation that
differs only slightly is neither found nor material, and stays UNKNOWN.
"""

from __future__ import annotations

import difflib
import re

from unmask.plumbing.frozen import frozen
from unmask.propose.material import terms

# a span of at least this many characters and words in double quotes is a quotation; a
# shorter one is usually a term in scare quotes ("non-suspicious")
MIN_QUOTE_CHARS = 15
MIN_QUOTE_WORDS = 3
MAX_QUOTES = 20  # members per replay

_ELLIPSIS = re.compile(r"\.\.\.|…")
# a naming followed by a verb that reports its words, then at most one clause's worth of
# words before the quotation
_REPORTS = re.compile(
    r"\s+(?:also\s+|clearly\s+|explicitly\s+|specifically\s+|actually\s+|only\s+)?"
    r"(?:states?|says?|said|mentions?|reads?|reports?|notes?|quotes?|writes?|explains?|"
    r"indicates?|tells?|asks?|requires?|includes?|contains?|specifies|instructs?)\b"
    r"[^.!?\n]{0,150}$",
    re.I,
)
_CLAUSE = re.compile(r"(?<=[.!?;:])['\"”’]*,?\s+|['\"”’],?\s+['\"“‘]")
WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
NEGATIONS = frozenset({"not", "no", "never", "none", "nor", "without"})
# words that carry no fact of their own, left out when comparing a quotation with a source
_STOPWORDS = """
a an the of to in on at by for with from and or but as is are was were be been being it its
this that these those he she they them his her their we our you your i has have had do does
did will would can could may might shall should than then there here which who whom whose
what when where why how all any each some such also after before over under about into out
up down off more most other only own same so too very just said says mr mrs ms
"""
STOP = frozenset(_STOPWORDS.split())


@frozen
class Namings:
    """Who a quotation can be given to. ``naming`` matches a naming of the source whose
    words are checked, or, in a group ``other`` if it has one, of anything else (whose
    quotations are left out); ``according`` matches an attribution with no reporting verb."""

    naming: re.Pattern[str]
    according: re.Pattern[str] | None = None


@frozen
class Quotation:
    start: int  # inside the quote marks
    end: int
    attributed: bool | None  # True: given to the source; None: to no one the rule knows
    lead: int  # where the attribution starts (-1 without one)


def fold(text: str) -> tuple[str, list[int]]:
    """``text`` with case, punctuation and spacing folded (``Â£`` mojibake and curly
    apostrophes too), and for each folded character the index it came from."""
    out: list[str] = []
    where: list[int] = []
    space = True
    for i, ch in enumerate(text):
        if ch == "Â":  # UTF-8 read as Latin-1: `Â£` is `£`
            continue
        if ch.isalnum():
            out.append(ch.lower())
            where.append(i)
            space = False
        elif ch in "'’‘" and out and not space:
            continue  # `wasn't` and `wasn’t` fold alike, to `wasnt`
        elif not space:
            out.append(" ")
            where.append(i)
            space = True
    while out and out[-1] == " ":
        out.pop()
        where.pop()
    return "".join(out), where


def locate(source: str, quote: str) -> tuple[int, int] | None:
    """Where ``quote`` is ``source``'s words (its pieces in order, across an ellipsis): the
    span from the first piece's start to the last one's end, or None."""
    folded, where = fold(source)
    pieces = [p for p in (fold(x)[0] for x in _ELLIPSIS.split(quote)) if p]
    if not pieces:
        return None
    pos, first, last = 0, -1, -1
    for p in pieces:
        # whole words only: `rise` is not the start of `rises`
        m = re.search(rf"(?<![a-z0-9]){re.escape(p)}(?![a-z0-9])", folded[pos:])
        if m is None:
            return None
        start = pos + m.start()
        first = start if first < 0 else first
        last = pos = start + len(p)
    return where[first], where[last - 1] + 1


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def closest(source: str, quote: str) -> str:
    """The sentence of ``source`` most like ``quote`` (the whole source if it has none)."""
    q = fold(quote)[0]
    best = max(
        sentences(source),
        key=lambda s: difflib.SequenceMatcher(None, fold(s)[0], q, autojunk=False).ratio(),
        default=source,
    )
    return best.strip() or source


def content(text: str) -> set[str]:
    """The words of ``text`` that carry a fact: not stop words, negations kept."""
    words = set()
    for w in WORD.findall(text.lower().replace("’", "'")):
        if w.endswith("n't") or w in NEGATIONS or (w not in STOP and (len(w) > 2 or w.isdigit())):
            words.add(w)
    return words


def _negations(words: set[str]) -> set[str]:
    return {w for w in words if w in NEGATIONS or w.endswith("n't")}


def material(source: str, near: str, quote: str) -> bool:
    """Whether one sentence of a quotation says what ``source`` does not: a number the
    source never has, a negation ``near`` (the source's closest sentence) lacks or one it
    has dropped, or two or more words the source never uses."""
    # numbers matched whole (``unmask.propose.material``): the `2` of a `2-0` score is not a 2
    numbers = terms(source).numbers
    if any(n not in numbers for n in terms(quote).numbers):
        return True
    q, n = content(quote), content(near)
    if _negations(q - n):
        return True
    shared = n - _negations(n)
    if _negations(n - q) and shared and len(q & shared) >= 0.8 * len(shared):
        return True
    return len(q - content(source) - _negations(q)) >= 2


def misquote(source: str, quote: str) -> str | None:
    """The source's sentence a quotation contradicts, sentence by sentence; None when the
    quotation is the source's words or differs from them in nothing material."""
    if locate(source, quote) is not None:
        return None
    # clause by clause: a quotation may gather the source's sentences (a list of options,
    # each in its own quote marks) that are there one by one
    for part in _CLAUSE.split(quote):
        if not part.strip():
            continue
        near = closest(source, part)
        if locate(source, part) is None and material(source, near, part):
            return near
    return None


def pairs(text: str, open_: str, close: str) -> list[tuple[int, int]]:
    """The spans inside each pair of quote marks on one line, paired in order."""
    out = []
    i = text.find(open_)
    while i != -1:
        j = text.find(close, i + 1)
        if j == -1:
            break
        if "\n" not in text[i + 1 : j]:
            out.append((i + 1, j))
        i = text.find(open_, j + 1)
    return out


def sentence_start(text: str, at: int) -> int:
    cut = max(text.rfind(". ", 0, at), text.rfind("\n", 0, at))
    return 0 if cut < 0 else cut + 1


def quotations(text: str, namings: Namings) -> list[Quotation]:
    """Every quotation of ``text`` not given to something other than the source, in order,
    at most ``MAX_QUOTES``. The nearest naming before a quotation, in its sentence, says
    whose words it gives: the nearest naming followed by a verb that reports words ("the
    document states that"), unless a naming of something else comes nearer."""
    spans = sorted(pairs(text, '"', '"') + pairs(text, "“", "”"))
    out: list[Quotation] = []
    prev_end = 0
    for s, e in spans:
        if s < prev_end:
            continue  # overlaps the previous quotation: the marks are not paired cleanly
        body = text[s:e]
        lead_start = max(prev_end, sentence_start(text, s))
        prev_end = e + 1
        if len(body.strip()) < MIN_QUOTE_CHARS or len(body.split()) < MIN_QUOTE_WORDS:
            continue
        lead = text[lead_start : s - 1]
        according = namings.according.search(lead) if namings.according else None
        attribution = -1
        # the nearest naming that reports the words decides; one of something else first
        # gives the quotation to it
        for name in reversed(list(namings.naming.finditer(lead))):
            if name.groupdict().get("other"):
                break
            if _REPORTS.match(lead, name.end()):
                attribution = lead_start + name.start()
                break
        else:
            name = None
        if name is not None and name.groupdict().get("other"):
            continue  # given to something else: its words, not the source's
        if attribution >= 0:
            out.append(Quotation(s, e, True, attribution))
        elif according:
            out.append(Quotation(s, e, True, lead_start + according.start()))
        else:
            out.append(Quotation(s, e, None, -1))
        if len(out) == MAX_QUOTES:
            break
    return out
