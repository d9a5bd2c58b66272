"""The `factcc-explanations` importer: FactCC judges' explanations, one replay per judgment.

Contract: ``read(factcc_explanation_annotation.json, options)`` yields one replay of
``protocols/factcc.proto`` per entry of an item's ``samples``. Sources: ``context`` is the
document, ``response`` the summary, ``rationale`` the judge's explanation, ``protocol`` the
judge's prompt (from ``prompts/NAME.txt`` beside the input, when it is there: a regular
file, never a link, at most ``MAX_PROMPT_BYTES``; one that is there but refused skips the
judgments naming it). The verdict
is the dataset's parsed ``prediction`` (0 → ``inconsistent``, 1 → ``consistent``); the
summaries are all known inconsistent, so ``gold`` is ``inconsistent``. The replay's ``item``
is the document and the prompt (``32300952/fewshot-cot-prompt3``), so judges compare on
the same task. The human grade of the explanation (``annotation``) never enters a replay:
the study reads it from the input.

Every annotation comes from a rule over the texts (``by: rule factcc-rules/2``,
unreviewed), and no rule writes FALSE because something was not found, with one exception
stated in the atom itself: ``in_doc(q)`` says the span is the document's words *word for
word*, which a search of the whole document decides (after folding case, punctuation,
spacing and the data's mojibake); a FALSE quotes the document's closest passage, so a
report shows both quotes. ``quotes_doc(q)`` is TRUE only when the words just before the
quote attribute it to the document, FALSE only when they attribute it to the summary (such
spans are not members), UNKNOWN otherwise.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from unmask.importers import (
    PROTOCOLS,
    Imported,
    Options,
    Skipped,
    annotate_span,
    build,
    not_the_format,
)
from unmask.importers.quoting import (
    Namings,
    Quotation,
    content,
    locate,
    misquote,
    quotations,
    sentences,
)
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.files import read_text
from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import Limits
from unmask.propose.material import NUMBER, fold, terms
from unmask.replay.builder import ReplayBuilder

NAME = "factcc-explanations"
PROTOCOL = PROTOCOLS / "factcc.proto"
# 2: numbers matched whole (`2` is not named by `2-0`)
RULES = {"kind": "rule", "name": "factcc-rules/2", "reviewed": False}
GOLD = "inconsistent"
VERDICTS = {0: "inconsistent", 1: "consistent"}
# a prompt file is a few paragraphs (the dataset's are under 2 KB)
MAX_PROMPT_BYTES = 1 << 20

# who a quotation is given to: the document (checked) or the summary (left out)
NAMINGS = Namings(
    re.compile(
        r"\b(?:the|this)\s+(?:original\s+|news\s+|given\s+)?"
        r"(?:(?P<source>document|article|text|passage|source)|"
        r"(?P<other>summary|summaries|claim|statement))\b",
        re.I,
    ),
    re.compile(
        r"\baccording\s+to\s+the\s+(?:document|article|text|passage)\b|\bevidence\s*:\s*$",
        re.I,
    ),
)
# the bare answer the prompts ask for, which is not yet evidence or reasoning
_ANSWER = re.compile(
    r"""^\W*(?:answer\s*:\s*)?\W*(no|yes)\b[\s.,:;!"'-]*"""
    r"(?:(?:the\s+)?summary\s+(?:is\s+(?:not\s+)?(?:factually\s+)?"
    r"(?:correct|consistent|accurate|incorrect|inconsistent|inaccurate)|"
    r"(?:does\s+not|doesn't)\s+(?:match|agree\s+with|align\s+with|reflect)\b[^.\n]*)"
    r"(?:\s+with\s+the\s+document)?[\s.,:;!]*)?",
    re.I,
)
_NOT_CONSISTENT = re.compile(
    r"^\W*(?:the\s+)?summary\s+is\s+(?:not\s+(?:factually\s+)?(?:correct|consistent|accurate)"
    r"|(?:factually\s+)?(?:incorrect|inconsistent|inaccurate))\b"
    r"(?:\s+with\s+the\s+document)?[\s.,:;!]*",
    re.I,
)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def changed_words(doc: str, summary: str) -> set[str]:
    """The words of the summary that its closest document sentence lacks, negations
    included: the summaries are document sentences with one edit."""
    candidates = sentences(doc)
    words = content(summary)
    if not candidates or not words:
        return set()
    best = max(candidates, key=lambda s: len(words & content(s)) / (len(content(s)) or 1))
    near = content(best)
    if len(words & near) < max(2, len(words) // 2):
        return set()  # no sentence close enough to call the summary an edit of it
    # numbers whole (``unmask.propose.material``): a `2-1` for a `2-0` changed `2-1`, not `1`
    numbers = set(terms(summary).numbers) - set(terms(best).numbers)
    return {w for w in words - near if not w[0].isdigit()} | numbers


def _record(where: str, item: Any, sample: Any, prompts: _Prompts) -> Imported | Skipped:
    if not isinstance(sample, dict):
        return Skipped(where, "not a judgment (expected an object)")
    explanation, prediction = sample.get("explanation"), sample.get("prediction")
    model, prompt = sample.get("model"), sample.get("prompt")
    if not isinstance(explanation, str) or not explanation.strip():
        return Skipped(where, "`explanation` is not a text")
    if prediction not in VERDICTS or isinstance(prediction, bool):
        return Skipped(where, "`prediction` is neither 0 nor 1")
    if not isinstance(model, str) or not isinstance(prompt, str):
        return Skipped(where, "`model` or `prompt` is not a text")
    doc, summary = item["doc"], item["summary"]
    quotes = quotations(explanation, NAMINGS)
    members = [f"q{k}" for k in range(1, len(quotes) + 1)]
    sources = {"rationale": explanation, "context": doc, "response": summary}
    instructions = prompts.get(prompt)
    if isinstance(instructions, Refused):
        return Skipped(where, instructions.reason)
    if instructions:
        sources["protocol"] = instructions
    rid = f"{item['id']}-{sample.get('reason_idx', '?')}"

    def make() -> ReplayBuilder:
        b = ReplayBuilder(
            PROTOCOL,
            sources=sources,
            verdict=VERDICTS[prediction],
            gold=GOLD,
            id=f"{model}/{rid}",
            domains={"quote": members},
            item=f"{item['id']}/{prompt}",
            judge=model,
        )
        _answer(b, explanation)
        _quotes(b, explanation, doc, quotes)
        _change(b, explanation, doc, summary)
        return b

    return build(where, f"{model}-{rid}", make)


# every annotation here is a rule's reading of one span of a text
_at = functools.partial(annotate_span, by=RULES)


def _answer(b: ReplayBuilder, explanation: str) -> None:
    """The answer word, and whether anything beyond the bare answer follows."""
    m = _ANSWER.match(explanation)
    if m:
        word = m.group(1).lower()
        _at(b, "answers_no", word == "no", explanation, m.start(1), m.end(1), "rationale")
        rest_start = m.end()
    else:
        n = _NOT_CONSISTENT.match(explanation)
        if n:
            _at(b, "answers_no", True, explanation, n.start(), n.end(), "rationale")
        rest_start = n.end() if n else 0
    rest = explanation[rest_start:]
    words = _WORD.findall(rest.lower())
    if rest_start and not words:
        # the whole explanation is the bare answer: read whole, it gives no reasons
        s = len(explanation) - len(explanation.lstrip())
        e = len(explanation.rstrip())
        _at(b, "reasoned", False, explanation, s, e, "rationale")
    elif len(words) >= 5:
        s = rest_start + len(rest) - len(rest.lstrip())
        e = rest_start + len(rest.rstrip())
        _at(b, "reasoned", True, explanation, s, e, "rationale")
    # a few words after the answer: whether they are reasons is not for a rule (UNKNOWN)


def _quotes(b: ReplayBuilder, explanation: str, doc: str, quotes: list[Quotation]) -> None:
    for k, q in enumerate(quotes, start=1):
        if q.attributed:
            # the attribution and the quotation, as one span of the explanation
            _at(b, f"quotes_doc(q{k})", True, explanation, q.lead, q.end, "rationale")
        quote = explanation[q.start : q.end]
        found = locate(doc, quote)
        if found is not None:
            _at(b, f"in_doc(q{k})", True, doc, found[0], found[1], "context")
        elif (near := misquote(doc, quote)) is not None:
            i = doc.find(near)
            _at(b, f"in_doc(q{k})", False, doc, i, i + len(near), "context")
        # near-verbatim (a pronoun for a name, a word dropped): not for a rule (UNKNOWN)


def _change(b: ReplayBuilder, explanation: str, doc: str, summary: str) -> None:
    changed = changed_words(doc, summary)
    if not changed:
        return
    low = explanation.lower().replace("’", "'")
    # a changed number is named only by the number whole: the `2` inside a `2-0 friendly
    # win` is not the summary's changed `2`
    found = [(m.start(), m.end()) for m in _WORD.finditer(low) if m.group(0) in changed]
    found = [(s, e) for s, e in found if not low[s].isdigit()]
    found += [(m.start(), m.end()) for m in NUMBER.finditer(low) if fold(m.group()) in changed]
    if found:
        s, e = min(found)
        _at(b, "names_change", True, explanation, s, e, "rationale")
        return
    # naming none of the changed words is no proof of missing the change (UNKNOWN)


@frozen
class Refused:
    """A prompt file that is there but may not be read (why, in one line)."""

    reason: str


class _Prompts:
    """The judges' instructions from ``prompts/NAME.txt`` beside the input, each file read
    once: a regular file only, opened without following a link, inside the input's folder
    (a linked ``prompts`` folder leading elsewhere is refused), at most ``MAX_PROMPT_BYTES``.
    A missing file gives no instructions; one that is there but refused (a link, a named
    pipe, a device, too large, not UTF-8) skips every judgment that names it, with why."""

    def __init__(self, input_path: Path, limits: Limits) -> None:
        self.folder = input_path.parent
        self.limits = dataclasses.replace(
            limits, max_file_bytes=min(limits.max_file_bytes, MAX_PROMPT_BYTES)
        )
        self._read: dict[str, str | Refused | None] = {}

    def get(self, name: str) -> str | Refused | None:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
            return None
        if name not in self._read:
            self._read[name] = self._load(name)
        return self._read[name]

    def _load(self, name: str) -> str | Refused | None:
        path = self.folder / "prompts" / f"{name}.txt"
        if not os.path.lexists(path):
            return None
        try:
            text = read_text(path, self.limits, follow=False, inside=self.folder)
        except UnmaskError as exc:
            return Refused(f"the prompt file: {exc.diagnostics[0].message}")
        return text.strip().split("\n\n", 1)[0].strip() or None


def read(path: Path, options: Options) -> Iterator[Imported | Skipped]:
    from unmask.plumbing.jsonload import read_json_file

    data = read_json_file(path, options.limits)
    file = str(path)
    if not isinstance(data, list):
        raise not_the_format(
            file,
            "not a FactCC explanation file: expected an array of items",
            help="give `factcc_explanation_annotation.json`",
        )
    prompts = _Prompts(Path(path), options.limits)
    for i, item in enumerate(data):
        at = f"{file}: [{i}]"
        if not (
            isinstance(item, dict)
            and isinstance(item.get("doc"), str)
            and isinstance(item.get("summary"), str)
            and isinstance(item.get("id"), (str, int))
            and isinstance(item.get("samples"), list)
        ):
            yield Skipped(at, "not a FactCC item (`doc`, `summary`, `id` and `samples`)")
            continue
        for j, sample in enumerate(item["samples"]):
            yield _record(f"{at}.samples[{j}]", item, sample, prompts)
