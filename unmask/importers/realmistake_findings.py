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
takes it back ("however, this is not an error", "this is acceptable"). It never says that
no error was reported: not finding a report is not a finding.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

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


def _sentences(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _SENTENCE.finditer(text) if m.group(0).strip()]


def reported_error(rationale: str, skip: Sequence[tuple[int, int]] = ()) -> tuple[int, int] | None:
    """The first sentence stating explicitly that the response fails a requirement."""
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
        lead = len(sentence) - len(sentence.lstrip(" \t\n*#>-"))
        return start + lead, end
    return None
