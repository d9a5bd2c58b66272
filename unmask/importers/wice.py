"""The `wice` importer: WiCE claim-verification judgments joined to WiCE's human labels.

Contract: ``read(OUTPUTS.jsonl, options)`` with ``options.gold`` naming WiCE's
``gold_claim_test.jsonl`` yields one replay of ``protocols/wice.proto`` per judge output
line. A line is joined to the gold row with the same claim and the same shown sentence ids;
the judge's name comes from the file name (``gpt-4-0613_claim_test_outputs.jsonl`` →
``gpt-4-0613``), the item from the gold row (``test00561-0``: the claim id and which of its
evidence chunks). Sources: ``rationale`` is the judge's whole response, ``response`` the
claim, ``context`` the evidence lines as shown, ``reference`` the annotators' supporting
lines (an independent reading, evidence for context atoms only). Judge and procedure atoms
come from rules over the response (``by: rule wice-rules/2``, unreviewed). ``supports(l)``
is TRUE where the annotators marked line l (``oracle_idx``), in this chunk or, the same text,
in any other chunk of the claim (``by: human wice-annotators``, reviewed); a line nobody
marked is UNKNOWN, never FALSE: ``oracle_idx`` lists support, it does not deny it. Where the
annotators are silent on a line the judge cites, the lexical aligner may read it as support
(``by: rule claims-lexical/1``, unreviewed, at ``LEXICAL_THRESHOLD``) and otherwise abstains.
Nothing is derived from the gold label, which stays in ``gold`` and out of every base. What
a rule cannot establish stays unannotated (UNKNOWN): ``gap`` is never FALSE, since a
rationale that does not mention a gap has not said there is none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from unmask.builder import ReplayBuilder
from unmask.diagnostics import Diagnostic, UnmaskError
from unmask.files import decode_utf8, read_bytes
from unmask.importers import PROTOCOLS, Imported, Options, Skipped, build
from unmask.importers.wice_rules import citations, dismissal, gap, support_said
from unmask.jsonload import parse_json_text

NAME = "wice"
PROTOCOL = PROTOCOLS / "wice.proto"
RULES = {"kind": "rule", "name": "wice-rules/2", "reviewed": False}
# WiCE's own annotators marked the line: a human reading the dataset reports as reviewed
ANNOTATORS = {"kind": "human", "name": "wice-annotators", "reviewed": True}
# the lexical aligner's reading of a cited line the annotators left unmarked
LEXICAL = {"kind": "rule", "name": "claims-lexical/1", "reviewed": False}
# a cited, unmarked line is read as support only at this confidence or above; sentence
# precision at 0.9 is 93% on both halves of WiCE (docs/proposers.md); below it: UNKNOWN
LEXICAL_THRESHOLD = 0.9
MARKED = "marked as supporting"
UNMARKED = "not marked (no reading either way)"
LABELS = ("supported", "partially_supported", "not_supported")

_CLAIM = re.compile(r"<claim>(.*?)</claim>", re.S)
_SENTENCE = re.compile(r"<sentence_(\d+)>(.*?)</sentence_\1>", re.S)
_EXPLANATION = re.compile(r"<explanation>(.*?)</explanation>", re.S)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)


def _lines(path: Path, options: Options) -> Iterator[tuple[int, str]]:
    file = str(path)
    text = decode_utf8(read_bytes(path, options.limits, file), file, file)
    for n, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield n, line


def judge_name(path: Path) -> str:
    stem = path.name
    for suffix in (".jsonl", "_claim_test_outputs", "_outputs"):
        stem = stem.removesuffix(suffix)
    return stem


def _text_key(line: str) -> str:
    """A line's text as the merge by text compares it: whitespace runs made one space."""
    return " ".join(line.split())


def _gold_index(path: Path, options: Options) -> dict[tuple[str, tuple[int, ...]], tuple[str, Any]]:
    """(claim, shown ids) → (item, gold row, the texts of the claim's marked lines).

    A claim's chunks are annotated apart, and one chunk may leave unmarked a line another
    chunk of the same claim marks (or a word-for-word copy of it): the marked texts are
    gathered over all the claim's chunks, so a line marked anywhere counts as marked."""
    index: dict[tuple[str, tuple[int, ...]], tuple[str, Any]] = {}
    chunks: dict[str, int] = {}
    marked: dict[str, dict[str, str]] = {}  # claim id → marked text → the item marking it
    for n, line in _lines(path, options):
        row = parse_json_text(line, str(path), options.limits, first_line=n)
        try:
            claim, meta, label = row["claim"], row["meta"], row["label"]
            ids = tuple(int(i) for i in meta["chunk_idx"])
            key = (claim, ids)
            cid = str(meta["id"])
            oracle = {int(i) for i in meta.get("oracle_idx") or ()}
            evidence = row.get("evidence")
        except (KeyError, TypeError, ValueError) as exc:
            raise UnmaskError(
                [Diagnostic("wice", f"{path}:{n}: not a WiCE gold row (field {exc})")]
            ) from None
        if label not in LABELS:
            raise UnmaskError(
                [Diagnostic("wice", f"{path}:{n}: `label` is `{label}`, not a WiCE label")]
            )
        k = chunks.get(cid, 0)
        chunks[cid] = k + 1
        item = f"{cid}-{k}"
        index[key] = (item, row, marked.setdefault(cid, {}))
        if isinstance(evidence, list) and len(evidence) == len(ids):
            for i, text in zip(ids, evidence, strict=True):
                if i in oracle and isinstance(text, str):
                    marked[cid].setdefault(_text_key(text), item)
    return index


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


def _record(where: str, row: Any, gold: dict, judge: str) -> Imported | Skipped:
    if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
        return Skipped(where, "not a WiCE judge output (no `prompt` string)")
    if not isinstance(row.get("response"), str):
        return Skipped(where, "not a WiCE judge output (no `response` string)")
    prompt, response = row["prompt"], row["response"]
    last = prompt.rfind("<input>")
    segment = prompt[last:] if last >= 0 else prompt
    claim_m = _CLAIM.search(segment)
    if claim_m is None:
        return Skipped(where, "`prompt`: no <claim> in the last <input>")
    claim = claim_m.group(1)
    shown = [(int(i), s) for i, s in _SENTENCE.findall(segment)]
    key = (claim, tuple(i for i, _ in shown))
    if key not in gold:
        return Skipped(where, "`prompt`: no gold row has this claim and these evidence lines")
    item, g, marked_texts = gold[key]
    oracle = {int(i) for i in g["meta"].get("oracle_idx") or ()}
    members = [f"s{i}" for i, _ in shown]
    context = "\n".join(f"line {i}: {s}" for i, s in shown)
    marks = _marks(shown, oracle, marked_texts, item)
    reference = "\n".join(f"line {i}: {marks.get(i, UNMARKED)}" for i, _ in shown)
    answer_m = _ANSWER.search(response)
    verdict = answer_m.group(1).strip() if answer_m else None
    if verdict not in LABELS:
        return Skipped(where, f"`response`: the answer is {verdict!r}, not one of the labels")

    def make() -> ReplayBuilder:
        b = ReplayBuilder(
            PROTOCOL,
            sources={
                "rationale": response,
                "response": claim,
                "context": context,
                "reference": reference,
                "protocol": _instructions(prompt),
            },
            verdict=verdict,
            gold=g["label"],
            id=f"{judge}/{item}",
            domains={"line": members},
            item=item,
            judge=judge,
        )
        cited = _judge_side(b, response, {i for i, _ in shown})
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


def _judge_side(b: ReplayBuilder, response: str, shown: set[int]) -> set[int]:
    """Annotations read off the response by rule; each quotes what it rests on. Returns
    the lines read as cited in support."""
    ex = _EXPLANATION.search(response)
    ans = _ANSWER.search(response)
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
    cited = citations(text)
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
                occurrence=_occurrence(response, s, e),
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
                occurrence=_occurrence(response, offset, offset + len(text)),
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
                occurrence=_occurrence(response, offset + s, offset + e),
                by=RULES,
            )
        else:
            b.annotate(
                "cites_shown",
                True,
                quote=whole,
                source="rationale",
                occurrence=_occurrence(response, offset, offset + len(text)),
                by=RULES,
            )
    said = None if dismissed is not None else support_said(text)
    for atom, span in (("support_said", said), ("gap", gap(text))):
        if span is not None:
            s, e = offset + span[0], offset + span[1]
            b.annotate(
                atom,
                True,
                quote=response[s:e],
                source="rationale",
                occurrence=_occurrence(response, s, e),
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
    if gold_path is None:
        raise UnmaskError(
            [
                Diagnostic(
                    "wice",
                    "the `wice` importer needs WiCE's gold rows",
                    help="pass `--gold gold_claim_test.jsonl`",
                )
            ]
        )
    gold = _gold_index(Path(gold_path), options)
    judge = judge_name(path)
    for n, line in _lines(path, options):
        where = f"{path}:{n}"
        try:
            row = parse_json_text(line, str(path), options.limits, first_line=n)
        except UnmaskError as exc:
            yield Skipped(where, f"not a JSON record: {exc.diagnostics[0].message}")
            continue
        yield _record(where, row, gold, judge)
