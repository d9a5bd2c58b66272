"""The `wice` importer: WiCE claim-verification judgments joined to WiCE's human labels.

Contract: ``read(OUTPUTS.jsonl, options)`` with ``options.gold`` naming WiCE's
``gold_claim_test.jsonl`` yields one replay of ``protocols/wice.proto`` per judge output
line. A line is joined to the gold row with the same claim and the same shown sentence ids;
the judge's name comes from the file name (``gpt-4-0613_claim_test_outputs.jsonl`` →
``gpt-4-0613``), the item from the gold row (``test00561-0``: the claim id and which of its
evidence chunks). Sources: ``rationale`` is the judge's whole response, ``response`` the
claim, ``context`` the evidence lines as shown, ``reference`` the annotators' supporting
lines (an independent reading, evidence for context atoms only). Judge and procedure atoms
come from rules over the response (``by: rule wice-rules/1``, unreviewed); ``supports``
comes from the annotators' ``oracle_idx`` (a reviewed human reading); nothing is derived
from the gold label, which stays in ``gold`` and out of every base. What a rule cannot
establish stays unannotated (UNKNOWN): in particular ``gap`` is never FALSE, since a
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
from unmask.jsonload import parse_json_text

NAME = "wice"
PROTOCOL = PROTOCOLS / "wice.proto"
RULES = {"kind": "rule", "name": "wice-rules/1", "reviewed": False}
LABELS = ("supported", "partially_supported", "not_supported")

_CLAIM = re.compile(r"<claim>(.*?)</claim>", re.S)
_SENTENCE = re.compile(r"<sentence_(\d+)>(.*?)</sentence_\1>", re.S)
_EXPLANATION = re.compile(r"<explanation>(.*?)</explanation>", re.S)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)
# "Sentence 5", "sentences 5, 7 and 8", "line 3", "lines 3-5", "<sentence_5>"
_CITE = re.compile(
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
# a cue that the explanation says some part of the claim is unsupported
_GAP = re.compile(
    r"(?:does not|doesn't|do not|did not) (?:mention|provide|support|state|confirm|say|"
    r"specify|include|indicate)|no (?:mention|information|evidence)|not (?:mentioned|"
    r"supported|provided|stated|confirmed)|there is no|is not (?:supported|mentioned)",
    re.I,
)


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


def _gold_index(path: Path, options: Options) -> dict[tuple[str, tuple[int, ...]], tuple[str, Any]]:
    index: dict[tuple[str, tuple[int, ...]], tuple[str, Any]] = {}
    chunks: dict[str, int] = {}
    for n, line in _lines(path, options):
        row = parse_json_text(line, str(path), options.limits, first_line=n)
        try:
            claim, meta, label = row["claim"], row["meta"], row["label"]
            key = (claim, tuple(int(i) for i in meta["chunk_idx"]))
            cid = str(meta["id"])
        except (KeyError, TypeError, ValueError):
            help_ = "a row has `claim`, `label` and `meta` with `id` and `chunk_idx`"
            raise UnmaskError(
                [Diagnostic("wice", f"{path}:{n}: not a WiCE gold row", help=help_)]
            ) from None
        if label not in LABELS:
            raise UnmaskError(
                [Diagnostic("wice", f"{path}:{n}: `label` is `{label}`, not a WiCE label")]
            )
        k = chunks.get(cid, 0)
        chunks[cid] = k + 1
        index[key] = (f"{cid}-{k}", row)
    return index


def citations(explanation: str) -> list[tuple[int, int, int, bool]]:
    """(line number, start, end, denied) for each line the explanation cites; ``denied``
    when the sentence around the citation carries a denial cue."""
    out = []
    for m in _CITE.finditer(explanation):
        start, end = m.span()
        # the sentence around the citation, for the denial cue
        s0 = max(explanation.rfind(".", 0, start), explanation.rfind("\n", 0, start)) + 1
        s1 = explanation.find(".", end)
        sentence = explanation[s0 : len(explanation) if s1 < 0 else s1]
        denied = bool(_DENIAL.search(sentence))
        if m.group(1) is not None:
            out.append((int(m.group(1)), start, end, denied))
            continue
        for r in _NUM_RANGE.finditer(m.group(2)):
            a = int(r.group(1))
            b = int(r.group(2)) if r.group(2) else a
            if b < a or b - a > 50:
                b = a
            out.extend((i, start, end, denied) for i in range(a, b + 1))
    return out


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
    item, g = gold[key]
    oracle = {int(i) for i in g["meta"].get("oracle_idx") or ()}
    members = [f"s{i}" for i, _ in shown]
    context = "\n".join(f"line {i}: {s}" for i, s in shown)
    reference = "\n".join(
        f"line {i}: {'supporting' if i in oracle else 'not marked as supporting'}" for i, _ in shown
    )
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
        _judge_side(b, response, {i for i, _ in shown})
        for i, _ in shown:
            line = f"line {i}: {'supporting' if i in oracle else 'not marked as supporting'}"
            b.annotate(f"supports(s{i})", i in oracle, quote=line, source="reference")
        return b

    return build(where, f"{judge}-{item}", make)


def _judge_side(b: ReplayBuilder, response: str, shown: set[int]) -> None:
    """Annotations read off the response by rule; each quotes what it rests on."""
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
        return
    text, offset = ex.group(1), ex.start(1)
    cited = citations(text)
    support: dict[int, tuple[int, int]] = {}
    for line, s, e, denied in cited:
        if not denied and line not in support:
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
            # the explanation, read whole, cites this line nowhere
            b.annotate(
                atom,
                False,
                quote=whole,
                source="rationale",
                occurrence=_occurrence(response, offset, offset + len(text)),
                by=RULES,
            )
        # cited next to a denial: whether as support is not for a rule to say (UNKNOWN)
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
    gap = _GAP.search(text)
    if gap:
        s, e = offset + gap.start(), offset + gap.end()
        b.annotate(
            "gap",
            True,
            quote=response[s:e],
            source="rationale",
            occurrence=_occurrence(response, s, e),
            by=RULES,
        )


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
