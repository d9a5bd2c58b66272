"""Claim–evidence support by lexical alignment: which sentences support a claim, and how well.

Contract: ``align(claim, evidence)`` is a pure, deterministic function of its arguments (no
model, no network, no state between calls, no set iteration order in the result). It returns
the supporting sentences (0-based, ascending), each with the exact span of it that the claim
matched and its own confidence, and a label (``supported``, ``partially_supported`` or
``not_supported``) with the label's confidence, all in [0, 1]. A proposal whose confidence is
below ``threshold`` abstains: the sentence is left out, the label is None.

Method, in short: the claim and every sentence become sets of normalised content terms
(lowercase, accents folded, light suffix stripping, month names and number words made
canonical, thousands separators dropped). Each claim term is weighted by an inverse document
frequency computed over the shown evidence alone, so a term that no sentence contains weighs
most (it is the part of the claim the evidence does not speak to) and the claim's subject,
repeated everywhere, weighs least. Sentences are chosen greedily, each time the one that covers
the most not-yet-covered claim weight, while that gain is large enough; a sentence's confidence
grows with its gain. The share of claim weight covered gives the label (and a number in the
claim that no chosen sentence has rules out ``supported``); the label's confidence is how often
that label was right at that coverage on the tuning data. The constants were tuned on one half
of WiCE and are reported on the other (``docs/proposers.md``).
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Protocol, runtime_checkable

from unmask.plumbing.frozen import frozen
from unmask.propose import CLAIM_SUPPORT, Proposer
from unmask.propose.material import MONTH_NAMES, MONTHS, NUMBER_WORDS, missing

SUPPORTED = "supported"
PARTIAL = "partially_supported"
NOT_SUPPORTED = "not_supported"
LABELS = (SUPPORTED, PARTIAL, NOT_SUPPORTED)


@frozen
class Params:
    """The method's constants; the defaults are the ones tuned on the WiCE dev half."""

    cover_gain: float = 0.01  # a sentence adding less of the claim's weight ends the search
    support_gain: float = 0.02  # ... and one adding less is not proposed as support
    max_sentences: int = 8
    supported_at: float = 0.65  # coverage at or above: supported
    part_supported_at: float = 0.0  # ... and every clause covered this much (0: off, see docs)
    not_supported_below: float = 0.1  # coverage below: not supported
    # something material of the claim (a number, a negation, a name, two or more content
    # words: ``unmask.propose.material``) that no chosen sentence has rules out `supported`
    material_must_match: bool = True
    gain_scale: float = 0.1  # sentence confidence is 1 - exp(-gain / gain_scale)


DEFAULT_PARAMS = Params()
# the threshold `unmask propose claims` abstains below unless told otherwise
DEFAULT_THRESHOLD = 0.5

# How often each label was right on the dev half, by tenth of coverage (Laplace-smoothed):
# the label's confidence. Regenerate with `python -m unmask.propose.measure --tune`.
LABEL_CONFIDENCE: dict[str, tuple[float, ...]] = {
    SUPPORTED: (0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.64, 0.67, 0.92, 0.84),
    PARTIAL: (0.5, 0.63, 0.84, 0.78, 0.75, 0.54, 0.61, 0.86, 0.6, 0.67),
    NOT_SUPPORTED: (0.93, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5),
}


@frozen
class Match:
    """One supporting sentence and the span of it from its first to its last matched term."""

    sentence: int
    start: int
    end: int
    quote: str
    confidence: float


@frozen
class Alignment:
    """Everything proposed for one claim before any abstention; ``at`` applies a threshold."""

    matches: tuple[Match, ...]  # ascending sentence index
    label: str | None
    confidence: float  # the label's
    coverage: float  # share of the claim's weight that some shown sentence matches

    @property
    def supporting(self) -> tuple[int, ...]:
        return tuple(m.sentence for m in self.matches)

    def at(self, threshold: float) -> Alignment:
        """What is left when proposals with confidence below ``threshold`` abstain."""
        return Alignment(
            tuple(m for m in self.matches if m.confidence >= threshold),
            self.label if self.confidence >= threshold else None,
            self.confidence,
            self.coverage,
        )


@runtime_checkable
class ClaimSupport(Protocol):
    """What a proposer that fills ``CLAIM_SUPPORT`` has: its task, as a method."""

    def claim_support(self, claim: str, evidence: list[str], threshold: float) -> Alignment: ...


# --- terms ---------------------------------------------------------------------------------

_STOP_WORDS = """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each few
    for from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    upon very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t one also known later"""
_STOP = frozenset(_STOP_WORDS.split())

_MONTHS = MONTHS  # the one table of month abbreviations, the material test's

# number words read as numbers: the one table, shared with the material-difference test
_NUMBER_WORDS = NUMBER_WORDS

# a word, or a number with thousands separators / a decimal part kept together
_TOKEN = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:st|nd|rd|th)?|[^\W\d_]+")
_CLAUSE = re.compile(
    r"[;:()\u2013\u2014]|,(?!\d)|\s(?:and|but|while|which|who|whom|where|as well as)\s"
)
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "ly", "s")


def _fold(text: str) -> str:
    # accents folded so `Ryūdai` and `Ryudai` meet; lengths change, so spans are never taken
    # from folded text (see `_term_spans`)
    return "".join(
        c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)
    ).lower()


_MONTH_NAMES = MONTH_NAMES


def _stem(word: str) -> str:
    if word in _MONTHS:
        return _MONTHS[word]
    if word in _MONTH_NAMES:  # `december` must not lose its `er`
        return word
    if word in _NUMBER_WORDS:
        return _NUMBER_WORDS[word]
    if word[0].isdigit():
        return word.replace(",", "")
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _term_spans(text: str) -> list[tuple[str, int, int]]:
    """Content terms with their [start, end) offsets in ``text`` itself."""
    out = []
    for m in _TOKEN.finditer(text):
        word = _fold(m.group())
        if not word or word in _STOP or (len(word) == 1 and not word.isdigit()):
            continue
        out.append((_stem(word), m.start(), m.end()))
    return out


def terms(text: str) -> list[str]:
    """The normalised content terms of ``text``, in order, repeats kept."""
    return [t for t, _, _ in _term_spans(text)]


def clauses(claim: str) -> list[list[str]]:
    """The claim cut at punctuation and connectives; each clause as its content terms."""
    parts = [terms(p) for p in _CLAUSE.split(f" {claim} ")]
    return [p for p in parts if p]


# --- alignment ---------------------------------------------------------------------------


def idf_weights(claim_terms: list[str], sentences: list[set[str]]) -> dict[str, float]:
    """Inverse document frequency over the shown sentences; absent terms weigh most."""
    n = len(sentences)
    return {
        t: math.log(1.0 + (n + 1) / (sum(t in s for s in sentences) + 0.5))
        for t in dict.fromkeys(claim_terms)
    }


def _span(sentence: str, wanted: set[str]) -> tuple[int, int]:
    hits = [(s, e) for t, s, e in _term_spans(sentence) if t in wanted]
    return hits[0][0], hits[-1][1]


def _decile(x: float) -> int:
    return min(int(x * 10), 9)


@frozen
class Search:
    """The greedy search's result for one claim, before any label or threshold."""

    chosen: tuple[tuple[int, frozenset[str], float], ...]  # (sentence, terms it added, gain)
    coverage: float
    clause_coverage: float  # the least-covered clause's share
    n_terms: int  # the claim's content terms; none, and there is nothing to align
    number_missing: bool  # some number in the claim is in no chosen sentence
    claim: str = ""  # the claim searched for, for the material test


def search(claim: str, evidence: list[str], cover_gain: float, max_sentences: int) -> Search:
    """Choose sentences greedily, each time the one adding the most uncovered claim weight."""
    claim_terms = terms(claim)
    sentence_terms = [set(terms(s)) for s in evidence]
    if not claim_terms or not evidence:
        return Search((), 0.0, 0.0, len(claim_terms), False, claim)
    weight = idf_weights(claim_terms, sentence_terms)
    total = sum(weight.values())
    covered: set[str] = set()
    chosen: list[tuple[int, frozenset[str], float]] = []
    while len(chosen) < max_sentences:
        best_new: frozenset[str] = frozenset()
        best, best_gain = -1, 0.0
        for i, s in enumerate(sentence_terms):
            new = frozenset((s & weight.keys()) - covered)
            gain = sum(weight[t] for t in sorted(new)) / total
            # strict `>` keeps the earliest sentence on ties: same input, same output
            if gain > best_gain + 1e-12:
                best, best_gain, best_new = i, gain, new
        if best < 0 or best_gain < cover_gain:
            break
        covered |= best_new
        chosen.append((best, best_new, best_gain))
    part_cover = [
        sum(weight[t] for t in sorted(set(p) & covered)) / sum(weight[t] for t in sorted(set(p)))
        for p in clauses(claim)
    ]
    return Search(
        tuple(chosen),
        sum(weight[t] for t in sorted(covered)) / total,
        min(part_cover, default=1.0),
        len(claim_terms),
        any(t[0].isdigit() and t not in covered for t in claim_terms),
        claim,
    )


def _short(found: Search, evidence: list[str]) -> bool:
    """Whether the chosen sentences, together, lack something material of the claim."""
    chosen = " ".join(evidence[i] for i, _, _ in sorted(found.chosen))
    return found.number_missing or missing(found.claim, chosen) is not None


def decide(
    found: Search,
    evidence: list[str],
    params: Params = DEFAULT_PARAMS,
    label_confidence: dict[str, tuple[float, ...]] | None = None,
) -> Alignment:
    """The label from the coverage, and the sentences that add enough to be proposed."""
    if found.n_terms == 0 or not evidence:
        return Alignment((), None, 0.0, 0.0)
    if found.coverage < params.not_supported_below:
        label = NOT_SUPPORTED
    elif (
        found.coverage >= params.supported_at
        and found.clause_coverage >= params.part_supported_at
        and not (params.material_must_match and _short(found, evidence))
    ):
        label = SUPPORTED
    else:
        label = PARTIAL
    matches = []
    if label != NOT_SUPPORTED:
        for i, new, gain in sorted(found.chosen):
            if gain < params.support_gain:
                continue
            start, end = _span(evidence[i], set(new))
            conf = round(1.0 - math.exp(-gain / params.gain_scale), 4)
            matches.append(Match(i, start, end, evidence[i][start:end], conf))
    table = LABEL_CONFIDENCE if label_confidence is None else label_confidence
    confidence = table[label][_decile(found.coverage)]
    return Alignment(tuple(matches), label, confidence, round(found.coverage, 4))


def align(
    claim: str,
    evidence: list[str],
    *,
    threshold: float = 0.0,
    params: Params = DEFAULT_PARAMS,
    label_confidence: dict[str, tuple[float, ...]] | None = None,
) -> Alignment:
    """Propose supporting sentences and a label for ``claim``; abstain below ``threshold``."""
    found = search(claim, evidence, params.cover_gain, params.max_sentences)
    return decide(found, evidence, params, label_confidence).at(threshold)


class LexicalClaims(Proposer):
    """The registered face of ``align``: a rule, since no model is involved."""

    name = "claims-lexical"
    kind = "rule"
    # 2: `supported` and a pair's TRUE need nothing material of the claim missing
    # (``unmask.propose.material``); its number is a match score, not a probability
    version = 2
    score = "match score"
    fills = (CLAIM_SUPPORT,)
    summary = "supporting sentences and a label from weighted term overlap; no model"

    def claim_support(self, claim: str, evidence: list[str], threshold: float) -> Alignment:
        return align(claim, evidence, threshold=threshold)
