"""The `wice` importer: WiCE claim-verification judgments joined to WiCE's human labels.

Contract: ``read(OUTPUTS.jsonl, options)`` with ``options.gold`` naming WiCE's
``gold_claim_test.jsonl`` yields one replay of ``protocols/wice.proto`` per judge output
line. A line is joined to the gold row with the same claim and the same shown sentence ids;
the judge's name comes from the file name (``gpt-4-0613_claim_test_outputs.jsonl`` →
``gpt-4-0613``), the item from the gold row (``test00561-0``: the claim id and which of its
evidence chunks). Without ``options.gold`` (judge outputs of the WiCE form with no human
labels) the item names the prompt's claim and shown lines (``claim-3f2a…``, the same for
every judge given that prompt), nothing is marked and there is no gold label:
``supports(l)`` rests on the aligner alone. Sources: ``rationale`` is the judge's whole
response, ``response`` the claim, ``context`` the evidence lines as shown, ``reference``
the annotators' supporting lines (an independent reading, evidence for context atoms only;
absent without gold). Judge and procedure atoms
come from rules over the response (``by: rule wice-rules/4``, unreviewed). ``supports(l)``
is TRUE where the annotators marked line l (``oracle_idx``), in this chunk or, the same text,
in any other chunk of the claim (``by: human wice-annotators``, reviewed); a line nobody
marked is UNKNOWN, never FALSE: ``oracle_idx`` lists support, it does not deny it. Where the
annotators are silent on a line the judge cites, the lexical aligner may read it as support
(``by: rule claims-lexical/2``, unreviewed, at ``LEXICAL_THRESHOLD``) and otherwise abstains.
Nothing is derived from the gold label, which stays in ``gold`` and out of every base. What
a rule cannot establish stays unannotated (UNKNOWN): ``gap`` is never FALSE, since a
rationale that does not mention a gap has not said there is none.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from unmask.importers import PROTOCOLS, Imported, Occurrences, Options, Skipped, build
from unmask.importers.jsonlines import BadLine, jsonl_records
from unmask.importers.wice_rules import MAX_DIGITS, citations, dismissal, gap, support_said
from unmask.importers.wice_rules import number as _number
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.jsonreader import kind, show
from unmask.replay.builder import ReplayBuilder

NAME = "wice"
PROTOCOL = PROTOCOLS / "wice.proto"
# 3: a line cited for what is not a part of the claim is not read as support
RULES = {"kind": "rule", "name": "wice-rules/4", "reviewed": False}
# WiCE's own annotators marked the line: a human reading the dataset reports as reviewed
ANNOTATORS = {"kind": "human", "name": "wice-annotators", "reviewed": True}
# the lexical aligner's reading of a cited line the annotators left unmarked
LEXICAL = {"kind": "rule", "name": "claims-lexical/2", "reviewed": False}
# a cited, unmarked line is read as support only at this confidence or above; sentence
# precision at 0.9 is 93% on both halves of WiCE (docs/proposers.md); below it: UNKNOWN
LEXICAL_THRESHOLD = 0.9
MARKED = "marked as supporting"
UNMARKED = "not marked (no reading either way)"
LABELS = ("supported", "partially_supported", "not_supported")

# tags are found by `_tag` and `_sentences`, in linear time: the lazy patterns
# `<claim>(.*?)</claim>` and `<sentence_(\d+)>(.*?)</sentence_\1>` they replace read to the
# end of the text from every unclosed tag (a 280 KB line of them took minutes)
_OPEN_SENTENCE = re.compile(r"<sentence_(\d+)>")
_CLOSE_SENTENCE = re.compile(r"</sentence_(\d+)>")


def _tag(text: str, name: str) -> _Found | None:
    """The first ``<NAME>…</NAME>``, as ``re.search(r"<NAME>(.*?)</NAME>", text, re.S)``
    finds it: the first opening a closing follows, up to the first closing after it."""
    i = text.find(f"<{name}>")
    if i < 0:
        return None
    inner = i + len(name) + 2
    j = text.find(f"</{name}>", inner)
    if j < 0:  # no closing after the first opening: none after a later one either
        return None
    return _Found(text, i, inner, j, j + len(name) + 3)


@frozen
class _Found:
    """A tag found by ``_tag``, read as a ``re.Match`` of its pattern is."""

    text: str
    a: int  # the opening tag's start
    b: int  # the content's start
    c: int  # the content's end
    d: int  # the closing tag's end

    def group(self, n: int = 0) -> str:
        return self.text[self.a : self.d] if n == 0 else self.text[self.b : self.c]

    def start(self, n: int = 0) -> int:
        return self.a if n == 0 else self.b

    def end(self, n: int = 0) -> int:
        return self.d if n == 0 else self.c


def _sentences(segment: str) -> list[tuple[int, str]]:
    """``(N, text)`` of each ``<sentence_N>text</sentence_N>``, as ``findall`` of the pattern
    ``<sentence_(\\d+)>(.*?)</sentence_\\1>`` (re.S) lists them: each opening is paired with
    the first closing of the same number after it, and a pair's text is not searched again.
    Every closing tag is indexed once, so unclosed openings cost no rescan."""
    closes: dict[str, list[int]] = {}
    for m in _CLOSE_SENTENCE.finditer(segment):
        closes.setdefault(m.group(1), []).append(m.start())
    out, pos = [], 0
    for m in _OPEN_SENTENCE.finditer(segment):
        if m.start() < pos:
            continue  # inside the text of a pair already read
        starts = closes.get(m.group(1), ())
        k = bisect.bisect_left(starts, m.end())
        if k == len(starts):
            continue
        out.append((_number(m.group(1)), segment[m.end() : starts[k]]))
        pos = starts[k] + len(m.group(1)) + 12  # past `</sentence_N>`
    return out


def judge_name(path: Path) -> str:
    stem = path.name
    for suffix in (".jsonl", "_claim_test_outputs", "_subclaim_test_outputs", "_outputs"):
        stem = stem.removesuffix(suffix)
    return stem


def _text_key(line: str) -> str:
    """A line's text as the merge by text compares it: whitespace runs made one space."""
    return " ".join(line.split())


# (claim, evidence ids) → (item, the gold row, its marked texts, the oracle's ids)
_GoldIndex = dict[tuple[str, tuple[int, ...]], tuple[str, Any, dict[str, str], frozenset[int]]]


def _gold_index(path: Path, options: Options) -> _GoldIndex:
    """(claim, shown ids) → (item, gold row, the texts of the claim's marked lines).

    A claim's chunks are annotated apart, and one chunk may leave unmarked a line another
    chunk of the same claim marks (or a word-for-word copy of it): the marked texts are
    gathered over all the claim's chunks, so a line marked anywhere counts as marked."""
    index: _GoldIndex = {}
    chunks: dict[str, int] = {}
    marked: dict[str, dict[str, str]] = {}  # claim id → marked text → the item marking it
    # every row is kept in the index: their values are bounded together, before parsing
    for n, row in jsonl_records(path, options.limits, bad="raise", together=True):
        claim, ids, cid, _, oracle = _gold_row(f"{path}:{n}", row)
        key = (claim, ids)
        evidence = row.get("evidence")
        k = chunks.get(cid, 0)
        chunks[cid] = k + 1
        item = f"{cid}-{k}"
        index[key] = (item, row, marked.setdefault(cid, {}), oracle)
        if isinstance(evidence, list) and len(evidence) == len(ids):
            for i, text in zip(ids, evidence, strict=True):
                if i in oracle and isinstance(text, str):
                    marked[cid].setdefault(_text_key(text), item)
    return index


def _gold_row(where: str, row: Any) -> tuple[str, tuple[int, ...], str, str, frozenset[int]]:
    """A gold row's claim, chunk_idx, id, label and oracle_idx, each of the kind WiCE
    writes; anything else is one error naming the line and the JSON path."""

    def bad(at: str, expected: str, found: Any = None) -> UnmaskError:
        if found is None:
            shown = ""
        elif isinstance(found, str):
            shown = f", found `{show(found)}`"
        else:
            shown = f", found {kind(found)}"
        return UnmaskError(
            [
                Diagnostic(
                    Code.WICE,
                    f"{where}: not a WiCE gold row: `{at}` must be {expected}{shown}",
                    help="pass WiCE's `gold_claim_test.jsonl` as `--gold`",
                )
            ]
        )

    if not isinstance(row, dict):
        raise bad("$", "an object", row)
    for key in ("claim", "meta", "label"):
        if key not in row:
            raise bad(key, "present")
    claim, meta, label = row["claim"], row["meta"], row["label"]
    if not isinstance(claim, str):
        raise bad("claim", "a string", claim)
    if not isinstance(meta, dict):
        raise bad("meta", "an object", meta)
    if not isinstance(label, str):
        raise bad("label", "a string", label)
    if label not in LABELS:
        raise bad("label", "one of " + ", ".join(f"`{x}`" for x in LABELS), label)
    cid = meta.get("id")
    if isinstance(cid, bool) or not isinstance(cid, (str, int)):
        raise bad("meta.id", "a string or a whole number", cid)

    def numbers(field: str, optional: bool) -> tuple[int, ...]:
        value = meta.get(field)
        if value is None and optional:
            return ()
        if not isinstance(value, list):
            raise bad(f"meta.{field}", "an array of line numbers", value)
        for j, i in enumerate(value):
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < 10**MAX_DIGITS:
                raise bad(f"meta.{field}[{j}]", "a line number (a whole number from 0)", i)
        return tuple(value)

    chunk_idx = numbers("chunk_idx", optional=False)
    oracle = frozenset(numbers("oracle_idx", optional=True))
    return claim, chunk_idx, str(cid), label, oracle


def _marks(
    shown: list[tuple[int, str]], oracle: set[int], marked_texts: dict[str, str], item: str
) -> dict[int, str]:
    """Shown line → how the annotators marked it: in this chunk, or (the same text) in
    another chunk of the claim. Lines not in the result were not marked anywhere."""
    out = {}
    for i, text in shown:
        if i in oracle:
            out[i] = MARKED
        elif (other := marked_texts.get(_text_key(text))) is not None:
            out[i] = f"{MARKED} in {other}" if other != item else f"{MARKED} (the same text)"
    return out


def lexical_support(
    claim: str, shown: list[tuple[int, str]], wanted: list[tuple[int, str]]
) -> list[tuple[int, str, float]]:
    """(line, quote, confidence) for each of ``wanted`` that the lexical aligner reads as
    supporting ``claim`` at ``LEXICAL_THRESHOLD`` or above; the others abstain. Only TRUE:
    a line the aligner does not match is no evidence that it does not support the claim."""
    from unmask.propose.claims import align

    if not wanted:
        return []
    numbers = [i for i, _ in shown]
    found = align(claim, [t for _, t in shown], threshold=LEXICAL_THRESHOLD)
    want = {i for i, _ in wanted}
    return [
        (numbers[m.sentence], m.quote, m.confidence)
        for m in found.matches
        if numbers[m.sentence] in want and m.quote
    ]


def _line_span(context: str, line: int, quote: str) -> tuple[int, int]:
    """Where ``quote`` sits inside ``line N: …`` of the context source."""
    head = f"line {line}: "
    at = context.index(head) if context.startswith(head) else context.index("\n" + head) + 1
    start = context.index(quote, at + len(head))
    return start, start + len(quote)


def _record(where: str, row: Any, gold: dict | None, judge: str, seen: dict) -> Imported | Skipped:
    if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
        return Skipped(where, "not a WiCE judge output (no `prompt` string)")
    if not isinstance(row.get("response"), str):
        return Skipped(where, "not a WiCE judge output (no `response` string)")
    prompt, response = row["prompt"], row["response"]
    last = prompt.rfind("<input>")
    segment = prompt[last:] if last >= 0 else prompt
    claim_m = _tag(segment, "claim")
    if claim_m is None:
        return Skipped(where, "`prompt`: no <claim> in the last <input>")
    claim = claim_m.group(1)
    shown = _sentences(segment)
    if any(i >= 10**MAX_DIGITS for i, _ in shown):
        return Skipped(where, f"`prompt`: a sentence number has more than {MAX_DIGITS} digits")
    key = (claim, tuple(i for i, _ in shown))
    if gold is None:  # no human labels given: no marks, no gold label
        item, label, marks = _unlabelled_item(key, seen), None, {}
        reference = None
    elif key not in gold:
        return Skipped(where, "`prompt`: no gold row has this claim and these evidence lines")
    else:
        item, g, marked_texts, oracle = gold[key]  # the row checked when the index was made
        label = g["label"]
        marks = _marks(shown, oracle, marked_texts, item)
        reference = "\n".join(f"line {i}: {marks.get(i, UNMARKED)}" for i, _ in shown)
    members = [f"s{i}" for i, _ in shown]
    context = "\n".join(f"line {i}: {s}" for i, s in shown)
    answer_m = _tag(response, "answer")
    verdict = answer_m.group(1).strip() if answer_m else None
    if verdict not in LABELS:
        if verdict is None:
            return Skipped(where, "`response`: no `<answer>…</answer>`")
        return Skipped(where, f"`response`: the answer is `{show(verdict)}`, not one of the labels")

    sources = {"rationale": response, "response": claim, "context": context}
    if reference is not None:
        sources["reference"] = reference
    sources["protocol"] = _instructions(prompt)

    def make() -> ReplayBuilder:
        b = ReplayBuilder(
            PROTOCOL,
            sources=sources,
            verdict=verdict,
            gold=label,
            id=f"{judge}/{item}",
            domains={"line": members},
            item=item,
            judge=judge,
        )
        cited = _judge_side(b, response, {i for i, _ in shown}, claim)
        for i, _ in shown:
            if i in marks:
                b.annotate(
                    f"supports(s{i})",
                    True,
                    quote=f"line {i}: {marks[i]}",
                    source="reference",
                    by=ANNOTATORS,
                )
        # where the annotators are silent, an independent reading of the lines the judge
        # cites; an unmarked line nobody read stays UNKNOWN (a missing mark is no "no")
        unmarked = [(i, s) for i, s in shown if i in cited and i not in marks]
        for i, quote, confidence in lexical_support(claim, shown, unmarked):
            b.annotate(
                f"supports(s{i})",
                True,
                quote=quote,
                source="context",
                occurrence=_occurrence(context, *_line_span(context, i, quote)),
                by=LEXICAL,
                explanation=f"the claim's terms match this line (confidence {confidence:g}); "
                "the annotators did not mark it",
            )
        return b

    return build(where, f"{judge}-{item}", make)


def _unlabelled_item(key: tuple[str, tuple[int, ...]], seen: dict) -> str:
    """An item id for a prompt with no gold row: a digest of its claim and shown lines, so
    two judges' outputs for one prompt share it; a repeat in one file gets `-2`, `-3`, …"""
    digest = hashlib.sha256(repr(key).encode("utf-8")).hexdigest()[:12]
    seen[digest] = n = seen.get(digest, 0) + 1
    return f"claim-{digest}" if n == 1 else f"claim-{digest}-{n}"


def _judge_side(b: ReplayBuilder, response: str, shown: set[int], claim: str) -> set[int]:
    """Annotations read off the response by rule; each quotes what it rests on. Returns
    the lines read as cited in support."""
    occurrences = Occurrences(response)

    def occurrence(start: int, end: int) -> int:
        return occurrences.at(response[start:end], start)

    ex = _tag(response, "explanation")
    ans = _tag(response, "answer")
    if ex and ans:
        first = ex.start() < ans.start()
        b.annotate(
            "explained_first",
            first,
            quote=response[min(ex.start(), ans.start()) : max(ex.end(), ans.end())],
            source="rationale",
            by=RULES,
        )
    if ans:
        b.annotate(
            "one_answer",
            ans.group(1).strip() in LABELS,
            quote=ans.group(0),
            source="rationale",
            by=RULES,
        )
    if ex is None or not ex.group(1).strip():
        return set()
    text, offset = ex.group(1), ex.start(1)
    # a line is read as cited in support only for what is a part of the claim
    cited = citations(text, claim)
    # after "the claim is not supported" or "a different person", a line the explanation
    # named was background, not support: neither TRUE nor FALSE
    dismissed = dismissal(text)
    support: dict[int, tuple[int, int]] = {}
    for line, s, e, denied in cited:
        if not denied and dismissed is None and line not in support:
            support[line] = (offset + s, offset + e)
    mentioned = {line for line, *_ in cited}
    whole = response[offset : offset + len(text)]
    for line in sorted(shown):
        atom = f"cites(s{line})"
        if line in support:
            s, e = support[line]
            b.annotate(
                atom,
                True,
                quote=response[s:e],
                source="rationale",
                occurrence=occurrence(s, e),
                by=RULES,
            )
        elif line not in mentioned:
            # the explanation, present and read whole, names this line nowhere: a reading
            # of the explanation about itself (docs/semantics.md, "No value from absence")
            b.annotate(
                atom,
                False,
                quote=whole,
                source="rationale",
                occurrence=occurrence(offset, offset + len(text)),
                by=RULES,
            )
        # named next to a denial, or before a dismissal: not for a rule to say (UNKNOWN)
    unshown = sorted({line for line, *_ in cited} - shown)
    if cited:
        if unshown:
            s, e = next((s, e) for line, s, e, _ in cited if line in unshown)
            b.annotate(
                "cites_shown",
                False,
                quote=response[offset + s : offset + e],
                source="rationale",
                occurrence=occurrence(offset + s, offset + e),
                by=RULES,
            )
        else:
            b.annotate(
                "cites_shown",
                True,
                quote=whole,
                source="rationale",
                occurrence=occurrence(offset, offset + len(text)),
                by=RULES,
            )
    said = None if dismissed is not None else support_said(text, claim)
    for atom, span in (("support_said", said), ("gap", gap(text))):
        if span is not None:
            s, e = offset + span[0], offset + span[1]
            b.annotate(
                atom,
                True,
                quote=response[s:e],
                source="rationale",
                occurrence=occurrence(s, e),
                by=RULES,
            )
    return set(support) & shown


def _instructions(prompt: str) -> str:
    """The judge's instructions: the prompt up to its worked examples."""
    cut = prompt.find("\n\nWe provide")
    return (prompt if cut < 0 else prompt[:cut]).strip()


def _occurrence(text: str, start: int, end: int) -> int:
    from unmask.importers import occurrence_at

    return occurrence_at(text, text[start:end], start)


def read(path: Path, options: Options) -> Iterator[Imported | Skipped]:
    gold_path = getattr(options, "gold", None)
    gold = None if gold_path is None else _gold_index(Path(gold_path), options)
    judge = judge_name(path)
    seen: dict[str, int] = {}
    for n, row in jsonl_records(path, options.limits):
        where = f"{path}:{n}"
        yield (
            Skipped(where, row.reason)
            if isinstance(row, BadLine)
            else _record(where, row, gold, judge, seen)
        )
