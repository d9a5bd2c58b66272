"""The `factcc-explanations` importer: FactCC judges' explanations, one replay per judgment.

Contract: ``read(factcc_explanation_annotation.json, options)`` yields one replay of
``protocols/factcc.proto`` per entry of an item's ``samples``. Sources: ``context`` is the
document, ``response`` the summary, ``rationale`` the judge's explanation, ``protocol`` the
judge's prompt (from ``prompts/NAME.txt`` beside the input, when it is there). The verdict
is the dataset's parsed ``prediction`` (0 → ``inconsistent``, 1 → ``consistent``); the
summaries are all known inconsistent, so ``gold`` is ``inconsistent``. The replay's ``item``
is the document and the prompt (``32300952/fewshot-cot-prompt3``), so judges compare on
the same task. The human grade of the explanation (``annotation``) never enters a replay:
the study reads it from the input.

Every annotation comes from a rule over the texts (``by: rule factcc-rules/1``,
unreviewed), and no rule writes FALSE because something was not found, with one exception
stated in the atom itself: ``in_doc(q)`` says the span is the document's words *word for
word*, which a search of the whole document decides (after folding case, punctuation,
spacing and the data's mojibake); a FALSE quotes the document's closest passage, so a
report shows both quotes. ``quotes_doc(q)`` is TRUE only when the words just before the
quote attribute it to the document, FALSE only when they attribute it to the summary (such
spans are not members), UNKNOWN otherwise.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from unmask.builder import ReplayBuilder
from unmask.importers import (
    PROTOCOLS,
    Imported,
    Options,
    Skipped,
    build,
    not_the_format,
    occurrence_at,
)

NAME = "factcc-explanations"
PROTOCOL = PROTOCOLS / "factcc.proto"
RULES = {"kind": "rule", "name": "factcc-rules/1", "reviewed": False}
GOLD = "inconsistent"
VERDICTS = {0: "inconsistent", 1: "consistent"}

# a span of at least this many characters and words in double quotes is a quotation; a
# shorter one is usually a term in scare quotes ("non-suspicious")
MIN_QUOTE_CHARS = 15
MIN_QUOTE_WORDS = 3
MAX_QUOTES = 20  # members per replay; the data's largest explanation has 9
_ELLIPSIS = re.compile(r"\.\.\.|…")
# who a quotation is given to: the nearest naming before it, in its sentence, decides
_NAMES = re.compile(
    r"\b(?:the|this)\s+(?:original\s+|news\s+|given\s+)?"
    r"(?:(document|article|text|passage|source)|(summary|summaries|claim|statement))\b",
    re.I,
)
# a naming of the document followed by a verb that reports its words, then at most one
# clause's worth of words before the quotation
_REPORTS = re.compile(
    r"\s+(?:also\s+|clearly\s+|explicitly\s+|specifically\s+|actually\s+|only\s+)?"
    r"(?:states?|says?|said|mentions?|reads?|reports?|notes?|quotes?|writes?|explains?|"
    r"indicates?|tells?)\b[^.!?\n]{0,150}$",
    re.I,
)
_ACCORDING = re.compile(
    r"\baccording\s+to\s+the\s+(?:document|article|text|passage)\b|\bevidence\s*:\s*$", re.I
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
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_NEGATIONS = {"not", "no", "never", "none", "nor", "without"}
# words that carry no fact of their own, left out when comparing a summary with the document
_STOPWORDS = """
a an the of to in on at by for with from and or but as is are was were be been being it its
this that these those he she they them his her their we our you your i has have had do does
did will would can could may might shall should than then there here which who whom whose
what when where why how all any each some such also after before over under about into out
up down off more most other only own same so too very just said says mr mrs ms
"""
_STOP = frozenset(_STOPWORDS.split())


def fold(text: str) -> tuple[str, list[int]]:
    """``text`` with case, punctuation and spacing folded (the data's ``Â£`` mojibake and
    curly quotes too), and for each folded character the index it came from."""
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


def locate(doc: str, quote: str) -> tuple[int, int] | None:
    """Where ``quote`` is ``doc``'s words (its pieces in order, across an ellipsis): the
    span in ``doc`` from the first piece's start to the last one's end, or None."""
    folded, where = fold(doc)
    pieces = [fold(p)[0] for p in _ELLIPSIS.split(quote)]
    pieces = [p for p in pieces if p]
    if not pieces:
        return None
    pos, first, last = 0, None, None
    for p in pieces:
        # a piece matches at word boundaries only: `rise` is not the words `rise`s
        for m in re.finditer(rf"(?<![a-z0-9]){re.escape(p)}(?![a-z0-9])", folded[pos:]):
            start = pos + m.start()
            first = start if first is None else first
            last = start + len(p)
            pos = last
            break
        else:
            return None
    assert first is not None and last is not None
    return where[first], where[last - 1] + 1


def closest(doc: str, quote: str) -> str:
    """The passage of ``doc`` most like ``quote``: a sentence, or the whole document."""
    sentences = _sentences(doc)
    q = fold(quote)[0]
    best = max(
        sentences,
        key=lambda s: difflib.SequenceMatcher(None, fold(s)[0], q, autojunk=False).ratio(),
        default=doc,
    )
    return best.strip() or doc


def quotations(explanation: str) -> list[tuple[int, int, bool | None, int]]:
    """(start, end, presented as the document's words, where that attribution starts) for
    each quotation; quotations given to the summary are left out. Quote marks are paired
    in order (straight with straight, curly open with curly close), so the text between two
    quotations is never read as one."""
    spans = sorted(_pairs(explanation, '"', '"') + _pairs(explanation, "“", "”"))
    out: list[tuple[int, int, bool | None, int]] = []
    prev_end = 0
    for s, e in spans:
        if s < prev_end:
            continue  # overlaps the previous quotation: the marks are not paired cleanly
        body = explanation[s:e]
        lead_start = max(prev_end, _sentence_start(explanation, s))
        prev_end = e + 1
        if len(body.strip()) < MIN_QUOTE_CHARS or len(body.split()) < MIN_QUOTE_WORDS:
            continue
        lead = explanation[lead_start : s - 1]
        names = list(_NAMES.finditer(lead))
        according = _ACCORDING.search(lead)
        if names and names[-1].group(2):
            continue  # the nearest naming is the summary's: its words, not the document's
        if names and _REPORTS.match(lead, names[-1].end()):
            out.append((s, e, True, lead_start + names[-1].start()))
        elif according:
            out.append((s, e, True, lead_start + according.start()))
        else:
            out.append((s, e, None, -1))
        if len(out) == MAX_QUOTES:
            break
    return out


def _pairs(text: str, open_: str, close: str) -> list[tuple[int, int]]:
    """The spans inside each pair of quote marks, paired in order."""
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


def _sentence_start(text: str, at: int) -> int:
    cut = max(text.rfind(". ", 0, at), text.rfind("\n", 0, at))
    return 0 if cut < 0 else cut + 1


def changed_words(doc: str, summary: str) -> set[str]:
    """The words of the summary that its closest document sentence lacks, negations
    included: the summaries are document sentences with one edit."""
    sentences = _sentences(doc)
    words = _content(summary)
    if not sentences or not words:
        return set()
    best = max(sentences, key=lambda s: len(words & _content(s)) / (len(_content(s)) or 1))
    near = _content(best)
    if len(words & near) < max(2, len(words) // 2):
        return set()  # no sentence close enough to call the summary an edit of it
    return words - near


def _content(text: str) -> set[str]:
    words = set()
    for w in _WORD.findall(text.lower().replace("’", "'")):
        if w.endswith("n't") or w in _NEGATIONS or (w not in _STOP and (len(w) > 2 or w.isdigit())):
            words.add(w)
    return words


def _record(where: str, item: Any, sample: Any, prompts: Path | None) -> Imported | Skipped:
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
    quotes = quotations(explanation)
    members = [f"q{k}" for k in range(1, len(quotes) + 1)]
    sources = {"rationale": explanation, "context": doc, "response": summary}
    instructions = _prompt(prompts, prompt)
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


def _at(b: ReplayBuilder, atom: str, value: bool, text: str, s: int, e: int, source: str):
    b.annotate(
        atom,
        value,
        quote=text[s:e],
        source=source,
        occurrence=occurrence_at(text, text[s:e], s),
        by=RULES,
    )


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


def _quotes(b: ReplayBuilder, explanation: str, doc: str, quotes: list) -> None:
    for k, (s, e, says_doc, lead) in enumerate(quotes, start=1):
        if says_doc:
            # the attribution and the quotation, as one span of the explanation
            _at(b, f"quotes_doc(q{k})", True, explanation, lead, e, "rationale")
        quote = explanation[s:e]
        found = locate(doc, quote)
        if found is not None:
            _at(b, f"in_doc(q{k})", True, doc, found[0], found[1], "context")
            continue
        # each sentence of the quotation against the document's sentence most like it
        for part in _sentences(quote):
            near = closest(doc, part)
            if locate(doc, part) is None and material(doc, near, part):
                i = doc.find(near)
                _at(b, f"in_doc(q{k})", False, doc, i, i + len(near), "context")
                break
        # near-verbatim (a pronoun for a name, a word dropped): not for a rule (UNKNOWN)


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def material(doc: str, near: str, quote: str) -> bool:
    """Whether one sentence of a quotation says what the document does not: a number the
    document never has, a negation the closest document sentence lacks (or drops one it
    has), or two or more words the document never uses."""
    doc_numbers = set(_NUMBER.findall(doc))
    if any(n not in doc_numbers for n in _NUMBER.findall(quote)):
        return True
    q, n = _content(quote), _content(near)
    negations = {w for w in q | n if w in _NEGATIONS or w.endswith("n't")}
    if (q - n) & negations:
        return True
    shared = n - negations
    if (n - q) & negations and shared and len(q & shared) >= 0.8 * len(shared):
        return True
    return len(q - _content(doc) - negations) >= 2


def _change(b: ReplayBuilder, explanation: str, doc: str, summary: str) -> None:
    changed = changed_words(doc, summary)
    if not changed:
        return
    low = explanation.lower().replace("’", "'")
    for m in _WORD.finditer(low):
        if m.group(0) in changed:
            _at(b, "names_change", True, explanation, m.start(), m.end(), "rationale")
            return
    # naming none of the changed words is no proof of missing the change (UNKNOWN)


def _prompt(prompts: Path | None, name: str) -> str | None:
    """The judge's instructions: the prompt file's first paragraph, when it is there."""
    if prompts is None or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
        return None
    try:
        text = (prompts / f"{name}.txt").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return text.strip().split("\n\n", 1)[0].strip() or None


def read(path: Path, options: Options) -> Iterator[Imported | Skipped]:
    from unmask.jsonload import read_json_file

    data = read_json_file(path, options.limits)
    file = str(path)
    if not isinstance(data, list):
        raise not_the_format(
            file,
            "not a FactCC explanation file: expected an array of items",
            help="give `factcc_explanation_annotation.json`",
        )
    prompts = Path(path).parent / "prompts"
    prompts = prompts if prompts.is_dir() else None
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
