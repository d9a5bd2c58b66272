"""The rules that read a WiCE judge's explanation: citations, dismissal, support in words, gap.

Contract: pure functions of the explanation text (no state, no model). ``citations`` gives
each line number the text names, with whether its sentence denies it as support: a denial
cue (in a sentence that reports what a line says, only before the reported content), a hedge
("could be"), or a line named for its topic alone ("Sentence 38 mentions 'A Basic Record
Library'", no `that` and no word of support after); ``dismissal`` the span of a statement
that sets the cited lines aside as a whole (the claim "is not supported", the line is about
"the person mentioned in the claim" or "a different" one), after which no citation is read
as support; ``support_said`` the span of support stated in words in a sentence that names no
line ("The evidence only mentions that …"); ``gap`` the span of a statement that part of the
claim is unsupported, ignoring negations inside what a cited line is reported to say
("Sentence 21 states that the Church … did not mention …"). Given the claim, ``citations``
and ``support_said`` read support only where what the line is cited for is a part of the
claim (``part_of_claim``, by the one test of a material difference in ``unmask.propose.material``,
the judge's own words such as `mentions` left out of what it reports, never out of the claim);
elsewhere the citation is UNKNOWN ("Sentence 8 mentions that X. However, …" with X another
fact). Each returns None where it finds nothing: a rule that finds nothing has read nothing,
and the atom stays UNKNOWN. Precision on hand-labelled held-out explanations is in
``docs/study-wice.md`` (labels: ``tests/data/wice_rules_heldout.jsonl``).
"""

from __future__ import annotations

import bisect
import re

from unmask.propose.material import Difference, fold, missing, terms

MAX_DIGITS = 18  # a line number with more digits is no line a prompt shows
_STOP = re.compile(r"[.\n]")

# "Sentence 5", "sentences 5, 7 and 8", "line 3", "lines 3-5", "<sentence_5>"
CITE = re.compile(
    r"(?:<sentence_(\d+)>|\b(?:sentences?|lines?)\s+((?:\d+(?:\s*(?:-|–|to)\s*\d+)?"
    r"(?:\s*(?:,|and|&)\s*)*)+))",
    re.I,
)
_NUM_RANGE = re.compile(r"(\d+)(?:\s*(?:-|–|to)\s*(\d+))?")
# a cue that the sentence around a citation denies support rather than giving it
_DENIAL = re.compile(
    r"\b(?:not|no|does(?:n't| not)|nor|neither|without|lacks?|fails?|contradicts?|"
    r"however|but)\b",
    re.I,
)
# the cited lines set aside as a whole: the claim as such is unsupported, or the lines are
# about someone or something else than the claim
_DISMISS = re.compile(
    r"\b(?:the|this) claim (?:is|was) not (?:directly |explicitly |clearly )?supported\b"
    r"|\bdoes not (?:directly )?support the claim\b(?!\s+that)(?!')"
    r"|\bdoes not (?:mention|provide|contain|include|say) anything (?:about|regarding|on)\b"
    r"|\b(?:the|a) (?:\w+ )?(?:person|individual|people|entity|event|player|team|company|band"
    r"|film|club|school|album|song) (?:mentioned|named|described|referred to) in the claim\b"
    r"|\b(?:a |an )?(?:different|another|other) (?:person|individual|event|entity|player"
    r"|team|company|band|film|song|album|book|organi[sz]ation)\b"
    r"|\bnot (?:necessarily )?(?:the same|related to the claim)\b",
    re.I,
)
# support stated in words: the evidence as subject of a verb of support ("only" marks the
# partial support GPT-4 often states this way), or "is supported by the evidence"
_SUPPORT_WORDS = re.compile(
    r"\b(?:the )?(?:evidence|snippet|article|text|passage|it)(?: provided| given)? only"
    r" (?:(?:confirms|states|shows|says|indicates|supports|verifies|proves|establishes)\b"
    r"|(?:mentions|provides|talks about|discusses|refers to|lists|notes) that\b)"
    r"|\bthe (?:evidence|snippet|article|text|passage)(?: provided| given)?"
    r" (?:confirms|supports|verifies|corroborates|shows|states|mentions) that\b"
    r"|\b(?:is|are|was|were) (?:partially |partly )?(?:supported|confirmed) by the evidence\b",
    re.I,
)
_NEGATED_BEFORE = re.compile(r"\b(?:not|no|nor|neither|never|without)\b|n't\b", re.I)
# a statement that some part of the claim is unsupported
_GAP = re.compile(
    r"(?:does not|doesn't|do not|don't|did not|didn't|cannot|fails to|failed to)"
    r" (?:\w+ )?(?:mention|provide|support|state|confirm|say|specify|include|indicate|show"
    r"|give|contain|verify|address|discuss|establish|prove|name|list)"
    r"|\bno (?:direct |specific |explicit |clear |further )?(?:mention|information|evidence"
    r"|indication|details?|data|reference|confirmation|support)\b"
    r"|\b(?:is|are|was|were|has not been|have not been) not (?:\w+ )?(?:mentioned|supported"
    r"|provided|stated|confirmed|specified|named|given|included|addressed|found|verified"
    r"|indicated|listed|clear)\b"
    r"|\bthere is no\b|\bnothing (?:is |was )?(?:mentioned|said|stated) about\b"
    r"|\bcannot be (?:confirmed|verified|determined|established)\b"
    r"|\bcontradict(?:s|ed|ing)?\b|\bunclear\b",
    re.I,
)
# the evidence itself as the subject of a gap: a gap even inside a reported sentence
_EVIDENCE_SUBJECT = re.compile(
    r"\b(?:the )?(?:evidence|snippet|article|text|passage|document|source|none of the"
    r" (?:sentences|lines|evidence))(?: provided| given)?\s*$",
    re.I,
)
# the end of what a line is reported to say: ", but there is no …" is the judge's own voice
_CONTRAST = re.compile(r"(?:,|;)\s*(?:but|however|yet),?\s*$", re.I)
# a sentence that reports what a cited line says: "Sentence 21 states that …"
_REPORTED = re.compile(
    r"^\W*(?:(?:however|but|also|additionally|furthermore|moreover|and),?\s+)?"
    r"(?:<sentence_\d+>|(?:sentences?|lines?)\s+\d[^.;]*?)\s+(?:\w+\s+)?"
    r"(?:states?|says?|mentions?|shows?|confirms?|indicates?|reports?|notes?|explains?"
    r"|describes?|reveals?)\s+that\b",
    re.I,
)
# a hedge: the line may or may not be what the claim is about ("one of whom could be …")
_HEDGE = re.compile(
    r"\b(?:could|may|might) (?:be|refer|have been)\b|\bpossibly\b|\bperhaps\b"
    r"|\b(?:appears?|seems?) to\b|\bit is (?:unclear|possible)\b",
    re.I,
)
# a line named for its topic, not for what it asserts: "Sentence 38 mentions 'A Basic Record
# Library'" (no `that`), with no word of support after it in the sentence
_TOPIC = re.compile(
    r"^\W*(?:(?:however|but|also|and),?\s+)?(?:sentences?|lines?)\s+[\d,\s&–-]+(?:and\s+\d+\s+)?"
    r"(?:also\s+)?mentions?\s+(?!that\b)",
    re.I,
)
_SUPPORT_AFTER = re.compile(r"\b(?:support|confirm|align|verif|corroborat|prov|match)\w*", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")


def sentences(text: str) -> list[tuple[int, int]]:
    """Half-open spans of the explanation's sentences."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        out.append((start, m.start()))
        start = m.end()
    out.append((start, len(text)))
    return [(a, b) for a, b in out if text[a:b].strip()]


def _sentence_of(spans: list[tuple[int, int]], at: int) -> tuple[int, int]:
    return next(((a, b) for a, b in spans if a <= at < b), (at, at))


# the judge's own vocabulary, which says nothing about the facts: left out of what the judge
# says a line says ("Sentence 5 mentions that …"), never out of the claim, where the same
# words are facts ("a supporting role", "the TV show", "penetrated the line")
_META_WORDS = """
    sentence sentences line lines evidence claim claims mention mentions mentioned state
    states stated say says said support supports supported supporting provide provides
    provided information indicate indicates show shows confirm confirms article snippet text
    passage note notes describe describes explain explains refer refers discuss discusses
    specifically directly explicitly clearly however also only instead talk talks about
    regarding related given seen fact
"""
_META = frozenset(fold(w) for w in _META_WORDS.split())
_REPORT_LEAD = re.compile(
    r"^.*?\b(?:states?|says?|mentions?|shows?|confirms?|indicates?|reports?|notes?|explains?"
    r"|describes?|reveals?|discuss(?:es)?|talks about|refers to)\s+(?:that\s+)?",
    re.I | re.S,
)


_OWN_VOICE = re.compile(
    r"[,;]\s*(?:but|however|yet|although|though|whereas|while|not)\b|\bas the claim\b", re.I
)


# a sentence's end, but not the dot of an initial (`J.J. Watt`) or of `vs.`, `No.`, `St.`
_FULL_STOP = re.compile(
    r"(?<!\b[A-Z])(?<!\bvs)(?<!\bNo)(?<!\bSt)(?<!\bMr)(?<!\bDr)\.(?=\s|$)|[!?](?=\s|$)|\n"
)
# a claim's parts, cut as the aligner cuts its clauses
_CLAIM_PARTS = re.compile(
    r"[;:()\u2013\u2014]|,(?!\d)|\s(?:and|but|while|which|who|whom|where|when|as well as)\s"
)
_PARTS = re.compile(r"\band that\b|;|,\s*and\b|\band also\b", re.I)


def cited_for(sentence: str) -> str:
    """What a sentence of the explanation says a line (or the evidence) says: the words after
    "states that" / "mentions", else the sentence itself, its citations taken out."""
    reported = _REPORTED.match(sentence) or _REPORT_LEAD.match(sentence)
    body = sentence[reported.end() :] if reported else sentence
    # up to the judge's own comment: ", but it does not …", ", not 2002 as the claim states"
    cut = _OWN_VOICE.search(body)
    return CITE.sub(" ", body[: cut.start()] if cut else body)


def part_of_claim(said: str, claim: str) -> Difference | None:
    """Why ``said`` (what a line is cited for) is not a part of ``claim``, or None when it
    is: some part of it has nothing material the claim never has, or some part of the claim
    has nothing material ``said`` never has (``unmask.propose.material.missing``). The judge's
    own words (`sentence`, `mentions`, `supports`) are left out of ``said`` only: in the claim
    they are facts. "Sentence 8 mentions that Amber Chia won the 2004 Guess Watches Timeless
    Beauty Contest" is neither for "Amber Chia won the Beauty International Model Search
    2004 title": another fact, named to set it apart. Nor is "the emcee role … was played by
    D.J. Pierce" for "he had a supporting role as a drag queen emcee": `supporting` and
    `queen` are the claim's, not the judge's."""
    found = None
    # a judge often reports several things a line says ("he was a former captain at Widnes
    # and that he died at the age of 65"): any one that is a part of the claim is support
    for part in _PARTS.split(said):
        if part.strip():
            why = missing(part, claim, ignore=_META, name="the claim")
            if why is None:
                return None
            found = found or why
    # and a line usually says more than the part of the claim it is cited for ("Akram Khan
    # Durrani is the Housing Minister" for "He was appointed as the Minister for Housing"):
    # every term of the part must be there but one content word, the test's allowance for a
    # paraphrase (`appointed`); the claim's words are all counted, the judge's vocabulary
    # too, since here it is the claim's (wice-rules/4; /3 left it out on both sides)
    for part in _CLAIM_PARTS.split(f" {claim} "):
        t = terms(part)
        if len(t.numbers) + len(t.names) + len(t.words) >= 2 and (
            missing(part, said, name="what the line is cited for") is None
        ):
            return None
    return found


def citations(explanation: str, claim: str | None = None) -> list[tuple[int, int, int, bool]]:
    """(line number, start, end, denied) for each line the explanation cites; ``denied``
    when the sentence around the citation carries a denial cue, or, given the ``claim``,
    when what the sentence says the line says is not a part of the claim (``part_of_claim``):
    a citation that may be for another fact is not read as support (UNKNOWN)."""
    out = []
    # the sentence around a citation runs from after the last `.` or line break before it
    # to the next `.`; the stops are indexed once and each sentence is read once, however
    # many citations it holds (a rescan per citation was quadratic on a long explanation)
    stops = [m.start() for m in _STOP.finditer(explanation)]
    dots = [i for i in stops if explanation[i] == "."]
    read: dict[tuple[int, int], bool] = {}
    full = [m.start() for m in _FULL_STOP.finditer(explanation)] if claim is not None else []
    other: dict[tuple[int, int], bool] = {}  # sentence → cited for another fact
    for m in CITE.finditer(explanation):
        start, end = m.span()
        k = bisect.bisect_left(stops, start)
        s0 = stops[k - 1] + 1 if k else 0
        k = bisect.bisect_left(dots, end)
        s1 = dots[k] if k < len(dots) else len(explanation)
        if (s0, s1) not in read:
            read[s0, s1] = _denies(explanation[s0:s1])
        denied = read[s0, s1]
        if claim is not None and not denied:
            # the whole sentence, not cut at `J.J.` or `vs.`: what the line is cited for
            k = bisect.bisect_left(full, start)
            f0 = full[k - 1] + 1 if k else 0
            k = bisect.bisect_left(full, end)
            f1 = full[k] if k < len(full) else len(explanation)
            if (f0, f1) not in other:
                said = cited_for(explanation[f0:f1])
                other[f0, f1] = part_of_claim(said, claim) is not None
            denied = other[f0, f1]
        if m.group(1) is not None:
            out.append((number(m.group(1)), start, end, denied))
            continue
        for r in _NUM_RANGE.finditer(m.group(2)):
            a = number(r.group(1))
            b = number(r.group(2)) if r.group(2) else a
            if b < a or b - a > 50:
                b = a
            out.extend((i, start, end, denied) for i in range(a, b + 1))
    return out


def _denies(sentence: str) -> bool:
    """Whether the sentence around a citation sets it aside as support."""
    # "Sentence 21 states that the Church did not mention …": what follows `that` is the
    # line's content, so only the words before it can deny the citation
    reported = _REPORTED.match(sentence)
    if _DENIAL.search(reported.group(0) if reported else sentence):
        return True
    # a hedged line, or one named for its topic only, is not cited as support either
    topic = _TOPIC.match(sentence)
    return bool(_HEDGE.search(sentence)) or bool(
        topic and not _SUPPORT_AFTER.search(sentence[topic.end() :])
    )


def number(digits: str) -> int:
    """A line number as written; one too long to be a line of any prompt reads as one past
    every line a prompt can show (``int`` refuses over 4,300 digits)."""
    return int(digits) if len(digits) <= MAX_DIGITS else 10**MAX_DIGITS


def dismissal(explanation: str) -> tuple[int, int] | None:
    """Where the explanation sets its cited lines aside as a whole, or None."""
    m = _DISMISS.search(explanation)
    return m.span() if m else None


def support_said(explanation: str, claim: str | None = None) -> tuple[int, int] | None:
    """The first support stated in words, in a sentence that names no line and carries no
    negation before it, or None; given the ``claim``, only where what the evidence is said
    to say is a part of it (``part_of_claim``)."""
    spans = sentences(explanation)
    for m in _SUPPORT_WORDS.finditer(explanation):
        a, b = _sentence_of(spans, m.start())
        if CITE.search(explanation[a:b]) or _NEGATED_BEFORE.search(explanation[a : m.start()]):
            continue
        said = explanation[m.end() : b]
        cut = _OWN_VOICE.search(said)
        said = said[: cut.start()] if cut else said
        if claim is not None and part_of_claim(said, claim) is not None:
            continue
        return m.span()
    return None


def gap(explanation: str) -> tuple[int, int] | None:
    """The first statement that part of the claim is unsupported, or None. Inside a sentence
    that reports what a line says ("Sentence 21 states that …"), a negation is the line's
    content, not the judge's reading, unless its subject is the evidence itself."""
    spans = sentences(explanation)
    for m in _GAP.finditer(explanation):
        a, _ = _sentence_of(spans, m.start())
        before = explanation[a : m.start()]
        if (
            _REPORTED.match(before)
            and not _EVIDENCE_SUBJECT.search(before)
            and not _CONTRAST.search(before)
        ):
            continue
        return m.span()
    return None
