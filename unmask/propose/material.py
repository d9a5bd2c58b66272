"""When two texts differ in what matters: the one test every reader that compares texts uses.

Contract: ``missing(text, other)`` returns a ``Difference`` naming what ``text`` says that
``other`` never has — a number (whole numbers at word boundaries: the ``2`` of a ``2-0``
score is not the number ``2``), a negation, a name (a capitalised word that does not only
open a sentence; where ``other`` says `he` or `she`, one name may be whom it stands for), or
``WORDS`` or more content words — or None when nothing material is missing. ``conflict(a,
b)`` says where two texts fill the same slot differently: each has a number the other lacks,
each a name the other lacks, or only one is negated. ``differs(claim, text)`` is both, and a
number only ``text`` has: what a reading of ``text`` as backing all of ``claim`` would get
wrong. Pure functions of their arguments, deterministic (the first difference in text order
is named); a reader that gets a ``Difference`` abstains with ``str(d)`` as its reason and
never turns it into a FALSE: differing in words is not proof of disagreeing.
"""

from __future__ import annotations

import re
import unicodedata

from unmask.plumbing.frozen import frozen

# two or more content words one side never uses are a difference: one is often a
# paraphrase (`kept` for `retained`), two rarely are
WORDS = 2

# a number and what is joined to it without a space (`2-0`, `3.5`, `1,300`, `10:30`,
# `2004/05`): one token, so a number is only ever matched whole
NUMBER = re.compile(r"(?<![\w.,:/-])\d+(?:[.,:/-]\d+)*(?:st|nd|rd|th|s)?(?![\w])")
_TOKEN = re.compile(r"\d+(?:[.,:/-]\d+)*[a-z]*|[^\W\d_]+(?:['’][^\W\d_]+)?")
NEGATIONS = frozenset({"not", "no", "never", "none", "nor", "neither", "without", "nothing"})
NUMBER_WORDS = {
    "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20",
    "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70",
    "eighty": "80", "ninety": "90", "hundred": "100", "first": "1st", "second": "2nd",
    "third": "3rd",
}  # fmt: skip
# words that carry no fact of their own
_STOP_WORDS = """
    a an the of to in on at by for with from and or but as is are was were be been being it
    its this that these those he she they them his her their we our you your i me my has
    have had do does did will would can could may might shall should than then there here
    which who whom whose what when where why how all any each some such also after before
    over under about into out up down off more most other only own same so too very just
    said says mr mrs ms if while because until since both either via per upon onto within s
    t
"""
STOP = frozenset(_STOP_WORDS.split())
MONTHS = {
    "jan": "january", "feb": "february", "mar": "march", "apr": "april", "jun": "june",
    "jul": "july", "aug": "august", "sep": "september", "sept": "september", "oct": "october",
    "nov": "november", "dec": "december",
}  # fmt: skip
MONTH_NAMES = frozenset(MONTHS.values())
_PRONOUNS = frozenset({"he", "she", "him", "his", "her", "they", "them", "their"})
_SUFFIXES = ("ations", "ation", "ings", "ing", "ers", "er", "ed", "es", "ly", "s")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]\s*|[\"“(]\s*)$")


def fold(word: str) -> str:
    """A word as it is compared: accents and case folded, a light suffix stripped, number
    words as digits, thousands separators dropped."""
    w = "".join(
        c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c)
    ).lower()
    w = w.replace("’", "'").removesuffix("'s")
    if w in NUMBER_WORDS:
        return NUMBER_WORDS[w]
    if w in MONTHS or w in MONTH_NAMES:  # `Dec.` meets `December`, which keeps its `er`
        return MONTHS.get(w, w)
    if w[:1].isdigit():
        return re.sub(r"(?<=\d),(?=\d{3}\b)", "", w)
    if w.endswith(("ies", "ied")) and len(w) > 5:  # `deliveries`, `retried`
        return w[:-3] + "y"
    for suffix in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            return w[: -len(suffix)]
    if len(w) == 4 and w.endswith("ed") and w[1] != "e":  # `aged` meets `age`; not `need`
        return w[:-1]
    return w


@frozen
class Terms:
    """What a text says that can differ: its numbers, names and content words (each folded,
    in text order, first spelling kept for the reason) and whether it is negated."""

    numbers: dict[str, str]
    names: dict[str, str]
    words: dict[str, str]
    negated: str | None  # the first negation, as written
    every: frozenset[str]  # every folded word, stop words too


def terms(text: str, ignore: frozenset[str] = frozenset()) -> Terms:
    """The terms of ``text``; folded words in ``ignore`` are left out (a reader's own
    vocabulary, `sentence`, `evidence`, which says nothing about the facts compared)."""
    numbers: dict[str, str] = {}
    names: dict[str, str] = {}
    words: dict[str, str] = {}
    negated = None
    every = set()
    found = list(_TOKEN.finditer(text))
    for k, m in enumerate(found):
        raw = m.group()
        low = raw.lower().replace("’", "'")
        f = fold(raw)
        every.add(f)
        if low in NEGATIONS or low.endswith("n't"):
            negated = negated or raw
            continue
        if f in ignore or low in STOP:
            continue
        if f[:1].isdigit() or raw in NUMBER_WORDS:  # `First World War` is a name
            if (f[:1].isdigit() and NUMBER.fullmatch(raw.lower())) or raw in NUMBER_WORDS:
                numbers.setdefault(f, raw)
            continue
        if len(f) < 3:
            continue
        if _is_name(text, found, k):
            names.setdefault(f, raw)
        else:
            words.setdefault(f, raw)
    return Terms(numbers, names, words, negated, frozenset(every))


def _is_name(text: str, found: list[re.Match[str]], k: int) -> bool:
    """A capitalised word is a name unless it only opens a sentence (`Logs are kept`); one
    that opens a sentence followed by another capitalised word is (`Amber Chia won`)."""
    raw = found[k].group()
    if not raw[0].isupper():
        return False
    if len(raw) > 1 and raw.isupper():
        return True  # an acronym: `CTO`, `VOA`
    if not _SENTENCE_START.search(text[: found[k].start()]):
        return True
    nxt = found[k + 1].group() if k + 1 < len(found) else ""
    return nxt[:1].isupper() and nxt.lower() not in STOP


@frozen
class Difference:
    """What one text says that another does not: its kind and the words, as written."""

    kind: str  # "number" | "negation" | "name" | "words"
    words: tuple[str, ...]
    other: str = "the other text"  # how the reason names the text compared with
    both: bool = False  # each text has one the other lacks: the same slot filled differently

    def __str__(self) -> str:
        shown = ", ".join(f"`{w}`" for w in self.words)
        if self.kind == "negation":
            return f"{shown}: only one of the claim and {self.other} is negated"
        if self.both:
            return f"{shown}: the claim and {self.other} give different {self.kind}s"
        what = {"number": "a number", "name": "a name", "words": "words"}[self.kind]
        return f"{shown}: {what} {self.other} never has"


def _absent(mine: dict[str, str], theirs: Terms) -> tuple[str, ...]:
    return tuple(raw for f, raw in mine.items() if f not in theirs.every)


def missing(
    text: str,
    other: str,
    *,
    ignore: frozenset[str] = frozenset(),
    words: int = WORDS,
    negation: bool = True,
    name: str = "the other text",
) -> Difference | None:
    """The first material thing ``text`` says that ``other`` never has, or None."""
    mine, theirs = terms(text, ignore), terms(other, ignore)
    if nums := _absent(mine.numbers, theirs):
        return Difference("number", nums, name)
    if negation and mine.negated and not theirs.negated:
        return Difference("negation", (mine.negated,), name)
    names = _absent(mine.names, theirs)
    if names and theirs.every & _PRONOUNS:
        # `He was appointed …` names its subject by a pronoun: one name the other text
        # gives (`Akram Khan Durrani`) may be whom it stands for
        names = names[1:]
    if names:
        return Difference("name", names, name)
    if len(ws := _absent(mine.words, theirs)) >= words:
        return Difference("words", ws, name)
    return None


def conflict(a: str, b: str, *, name: str = "the other text") -> Difference | None:
    """Where ``a`` and ``b`` fill the same slot differently, or None: each has a number the
    other lacks (`7 days` and `90 days`), each a name the other lacks (`Free plan` and `Pro
    plan`), or only one of them is negated."""
    ta, tb = terms(a), terms(b)
    for kind in ("numbers", "names"):
        mine, theirs = getattr(ta, kind), getattr(tb, kind)
        here, there = _absent(mine, tb), _absent(theirs, ta)
        if here and there:
            return Difference(kind.rstrip("s"), here + there, name, both=True)
    if bool(ta.negated) != bool(tb.negated):
        return Difference("negation", (ta.negated or tb.negated or "",), name)
    return None


def differs(claim: str, text: str, *, name: str = "the passage") -> Difference | None:
    """Why ``text`` cannot be read as backing all of ``claim``: something material in the
    claim it never has, a slot the two fill differently, or a number only ``text`` has (`every
    24 hours` does not back `every hour`); None when none of these. ``text`` should be the
    sentence that matched, not a whole document, whose other numbers say other things."""
    found = missing(claim, text, name=name) or conflict(claim, text, name=name)
    if found is None and (extra := _absent(terms(text).numbers, terms(claim))):
        found = Difference("number", extra, "the claim")
    return found
