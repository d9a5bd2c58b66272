"""What a ReaLMistake rationale says it found: an explicit report that the response fails.

Contract: ``reported_error(rationale, skip)`` returns the span ``(start, end)`` of the first
sentence of the rationale that states, in explicit words, that the model response fails
the input's instructions or requirements ("the model response does not follow …", "the
response violates …", "this requirement is not met", "this is an error"), or ``None``.
``skip`` holds the spans of the rationale's conclusions, which are read elsewhere. It
reads from explicit wording only and abstains (``None``: the atom stays UNKNOWN) on
anything else: a sentence whose subject is not the response (the model input, the
question, "it"); a negated or conditional use ("does not violate", "if it were …",
"would"); a hedge ("may", "seems", "slightly", "minor"); and a sentence whose next one
takes it back ("however, this is not an error", "this is acceptable"), or one anywhere after
it that takes it back in explicit words ("… which is in line with the instructions", "this
is not an error"; conclusions aside, since they are read apart). It never says that
no error was reported: not finding a report is not a finding.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from unmask.propose.material import fold, terms

# a sentence: up to a full stop, ?, ! or a line break (list items are sentences)
_SENTENCE = re.compile(r"[^\n.!?]+(?:[.!?]+|$)", re.M)
_OPENER = (
    r"^[\s*#>\-\d.)(]*(?:[A-Za-z ]{1,40}:\s*\**\s*)?"  # a list mark, a bold "Criterion:" label
    r"(?:(?:however|but|also|additionally|moreover|furthermore|further|first|second|third|"
    r"finally|in addition|specifically|unfortunately)\b,?\s+)?"
)
_RESPONSE = r"(?:the\s+)?(?:model(?:'s)?\s+response|response|model)"
_AUX = r"(?:does\s+not|doesn't|did\s+not|didn't|fails\s+to|failed\s+to)"
_VERB = r"(?:follow|satisfy|meet|adhere\s+to|comply\s+with|fulfil|fulfill|obey|abide\s+by)"
_STATES = [
    # "the model response does not follow the instruction …", "the response fails to meet …"
    re.compile(_OPENER + _RESPONSE + r"\s+(?:also\s+)?" + _AUX + r"\s+" + _VERB + r"\w*\b", re.I),
    # "the model response violates the requirement …"
    re.compile(_OPENER + _RESPONSE + r"\s+(?:also\s+)?(?:violates|violated)\b", re.I),
    # "this requirement is not met", "the instruction … is violated"
    re.compile(
        _OPENER + r"(?:this|that|the)\s+(?:requirement|instruction|criterion|constraint)s?\s+"
        r"(?:is|was|are|were)\s+(?:not\s+(?:met|satisfied|followed|fulfilled)|violated)\b",
        re.I,
    ),
    # "this is an error", "this is a violation of …"
    re.compile(_OPENER + r"(?:this|that)\s+is\s+(?:an\s+error|a\s+violation)\b", re.I),
]
# a sentence with one of these is not explicit enough: a hedge, a condition, a concession
_ABSTAIN = re.compile(
    r"\b(?:if|unless|whether|would|could|might|may|seems?|seemingly|appears?|"
    r"possibly|perhaps|arguably|potentially|likely|slightly|somewhat|minor|partially|"
    r"partly|not\s+necessarily|not\s+strictly|strictly\s+speaking|technically|"
    r"explicitly|fully|completely|entirely|perfectly|exactly|precisely|100%|"
    r"not\s+only|although|though|while|except|unclear|debatable|questionable)\b"
    r"|\?",
    re.I,
)
# a next sentence that takes the report back
_RETRACT = re.compile(
    r"\b(?:not\s+(?:an?\s+)?(?:error|mistake|violation|issue|problem|requirement)|"
    r"not\s+(?:required|necessary|considered|significant|critical|a\s+major)|"
    r"minor|acceptable|does\s+not\s+affect|doesn't\s+affect|still|nevertheless|"
    r"nonetheless|overall|otherwise|despite|anyway|reasonable|justified|fine)\b",
    re.I,
)


# a sentence anywhere after the report that takes it back in explicit words: the response
# is in line with the instructions after all, or what was reported is not an error
_TAKE_BACK = re.compile(
    r"\b(?:(?:is|are|was|were|be)\s+)?(?:in\s+line\s+with|consistent\s+with|in\s+accordance\s+with"
    r"|follows?|followed|meets?|satisf(?:y|ies|ied)|adheres?\s+to|complies\s+with|fulfil(?:l|ls|s)?)"
    # the instructions as a whole, not one of them ("meets the length requirement")
    r"\s+(?:(?:all|each|of|the|given|stated|above|these|those|its|model|input's|user's|task's)\s+){0,4}"
    r"(?:instructions?|requirements?|criteria|criterion|constraints?)\b"
    r"|\bnot\s+(?:an?\s+)?(?:error|mistake|violation)\b"
    r"|\b(?:on\s+second\s+thought|upon\s+(?:closer|further)\s+(?:inspection|review)|i\s+was\s+wrong)\b",
    re.I,
)
# a take-back must itself be plain: no negation or contrast in it, not a heading or question
_NOT_PLAIN = re.compile(
    r"\b(?:not|no|never|nor|fails?|failed|but|however|although|though|except|whether|if"
    r"|would|could|might|partially|partly)\b|n't\b|\?",
    re.I,
)


# the words every sentence about a response's compliance uses, which say nothing of what
_GENERIC_WORDS = """
    model response input instruction instructions requirement requirements criterion criteria
    constraint constraints follow follows line error mistake violation correct correctly
"""
_GENERIC = frozenset(fold(w) for w in _GENERIC_WORDS.split())
_CONTRAST_AFTER = re.compile(r"\b(?:but|however|except|although|though)\b", re.I)


def _about(sentence: str) -> set[str]:
    t = terms(sentence, _GENERIC)
    return {*t.words, *t.names, *t.numbers}


def _takes_back(sentence: str, report: str) -> bool:
    """Whether ``sentence`` takes ``report`` back: it says in plain words that the response
    is in line with the instructions, or that something is not an error, and it speaks of
    what the report spoke of (two content words in common, ``unmask.propose.material``): "(b) … the
    correct episode, which is in line with the requirements" is about another criterion."""
    m = _TAKE_BACK.search(sentence)
    if m is None or sentence.strip(" \t\n*#").endswith(":"):
        return False
    if len(_about(sentence) & _about(report)) < 2:
        return False
    if re.match(r"\s*not\b", m.group(0), re.I):  # "this is not an error": plain as it is
        return not re.search(r"\b(?:if|whether|would|could|might)\b|\?", sentence, re.I)
    # the clause it stands in, from the last comma or semicolon before it: "does not provide
    # an answer, which is in line with the instructions" is plain; "does not follow the
    # instructions" is not, nor "follows the instructions, but …"
    head = sentence[: m.start()]
    clause = head[max(head.rfind(","), head.rfind(";")) + 1 :] + m.group(0)
    tail = sentence[m.end() :]
    return not _NOT_PLAIN.search(clause) and not _CONTRAST_AFTER.search(tail)


def _sentences(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _SENTENCE.finditer(text) if m.group(0).strip()]


def reported_error(
    rationale: str, skip: Sequence[tuple[int, int]] = (), *, anywhere: bool = True
) -> tuple[int, int] | None:
    """The first sentence stating explicitly that the response fails a requirement and
    not taken back; ``anywhere=False`` looks for a take-back in the next sentence only (as
    ``realmistake-rules/2`` did, whose firings the committed labels sample)."""
    spans = _sentences(rationale)
    for k, (start, end) in enumerate(spans):
        if any(s < end and start < e for s, e in skip):
            continue  # a conclusion ("Therefore, the model response contains an error.")
        sentence = rationale[start:end]
        if sentence.strip(" \t\n*#").endswith(":"):
            continue  # a heading: what follows it is the finding, if any
        if not any(p.search(sentence) for p in _STATES) or _ABSTAIN.search(sentence):
            continue
        after = rationale[end : spans[k + 1][1]] if k + 1 < len(spans) else ""
        if _RETRACT.search(after):
            continue
        # taken back anywhere later, two paragraphs on included (but not by a conclusion,
        # which is read apart: a report followed by "no error" is what the check is for)
        later = [(a, b) for a, b in spans[k + 1 :] if not any(x < b and a < y for x, y in skip)]
        report = rationale[start:end]
        if anywhere and any(_takes_back(rationale[a:b], report) for a, b in later):
            continue
        lead = len(sentence) - len(sentence.lstrip(" \t\n*#>-"))
        return start + lead, end
    return None
