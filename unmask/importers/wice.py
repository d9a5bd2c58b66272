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
A gold row with a field of another kind than WiCE writes is an ``UnmaskError`` naming the
line and JSON path, before anything is read; tags are paired in linear time.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unmask.builder import ReplayBuilder
from unmask.diagnostics import Diagnostic, UnmaskError
from unmask.files import decode_utf8, read_bytes
from unmask.importers import PROTOCOLS, Imported, Occurrences, Options, Skipped, build
from unmask.jsonload import parse_json_text
from unmask.jsonreader import kind, show

NAME = "wice"
PROTOCOL = PROTOCOLS / "wice.proto"
RULES = {"kind": "rule", "name": "wice-rules/1", "reviewed": False}
LABELS = ("supported", "partially_supported", "not_supported")
MAX_DIGITS = 18  # a line number with more digits is no line a prompt shows

# tags are found by `_tag` and `_sentences`, in linear time: the lazy patterns
# `<claim>(.*?)</claim>` and `<sentence_(\d+)>(.*?)</sentence_\1>` they replace read to the
# end of the text from every unclosed tag (a 280 KB line of them took minutes)
_OPEN_SENTENCE = re.compile(r"<sentence_(\d+)>")
_CLOSE_SENTENCE = re.compile(r"</sentence_(\d+)>")
# "Sentence 5", "sentences 5, 7 and 8", "line 3", "lines 3-5", "<sentence_5>"
_CITE = re.compile(
    r"(?:<sentence_(\d+)>|\b(?:sentences?|lines?)\s+((?:\d+(?:\s*(?:-|–|to)\s*\d+)?"
    r"(?:\s*(?:,|and|&)\s*)*)+))",
    re.I,
)
_STOP = re.compile(r"[.\n]")
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


@dataclass(frozen=True, slots=True)
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
        claim, chunk_idx, cid, _, _ = _gold_row(f"{path}:{n}", row)
        key = (claim, chunk_idx)
        k = chunks.get(cid, 0)
        chunks[cid] = k + 1
        index[key] = (f"{cid}-{k}", row)
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
                    "wice",
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


def citations(explanation: str) -> list[tuple[int, int, int, bool]]:
    """(line number, start, end, denied) for each line the explanation cites; ``denied``
    when the sentence around the citation carries a denial cue."""
    out = []
    # the sentence around a citation runs from after the last `.` or line break before it
    # to the next `.`; the stops are indexed once and each sentence is read for the denial
    # cue once, however many citations it holds (a rescan per citation was quadratic)
    stops = [m.start() for m in _STOP.finditer(explanation)]
    dots = [i for i in stops if explanation[i] == "."]
    denial: dict[tuple[int, int], bool] = {}
    for m in _CITE.finditer(explanation):
        start, end = m.span()
        k = bisect.bisect_left(stops, start)
        s0 = stops[k - 1] + 1 if k else 0
        k = bisect.bisect_left(dots, end)
        s1 = dots[k] if k < len(dots) else len(explanation)
        if (s0, s1) not in denial:
            denial[s0, s1] = bool(_DENIAL.search(explanation, s0, s1))
        denied = denial[s0, s1]
        if m.group(1) is not None:
            out.append((_number(m.group(1)), start, end, denied))
            continue
        for r in _NUM_RANGE.finditer(m.group(2)):
            a = _number(r.group(1))
            b = _number(r.group(2)) if r.group(2) else a
            if b < a or b - a > 50:
                b = a
            out.extend((i, start, end, denied) for i in range(a, b + 1))
    return out


def _number(digits: str) -> int:
    """A line number as written; one too long to be a line of any prompt reads as one past
    every line a prompt can show (``int`` refuses over 4,300 digits)."""
    return int(digits) if len(digits) <= MAX_DIGITS else 10**MAX_DIGITS


def _record(where: str, row: Any, gold: dict, judge: str) -> Imported | Skipped:
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
    if key not in gold:
        return Skipped(where, "`prompt`: no gold row has this claim and these evidence lines")
    item, g = gold[key]
    oracle = _gold_row(where, g)[4]  # checked when the index was made
    members = [f"s{i}" for i, _ in shown]
    context = "\n".join(f"line {i}: {s}" for i, s in shown)
    reference = "\n".join(
        f"line {i}: {'supporting' if i in oracle else 'not marked as supporting'}" for i, _ in shown
    )
    answer_m = _tag(response, "answer")
    verdict = answer_m.group(1).strip() if answer_m else None
    if verdict not in LABELS:
        if verdict is None:
            return Skipped(where, "`response`: no `<answer>…</answer>`")
        return Skipped(where, f"`response`: the answer is `{show(verdict)}`, not one of the labels")

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
                occurrence=occurrence(s, e),
                by=RULES,
            )
        elif line not in mentioned:
            # the explanation, read whole, cites this line nowhere
            b.annotate(
                atom,
                False,
                quote=whole,
                source="rationale",
                occurrence=occurrence(offset, offset + len(text)),
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
    gap = _GAP.search(text)
    if gap:
        s, e = offset + gap.start(), offset + gap.end()
        b.annotate(
            "gap",
            True,
            quote=response[s:e],
            source="rationale",
            occurrence=occurrence(s, e),
            by=RULES,
        )


def _instructions(prompt: str) -> str:
    """The judge's instructions: the prompt up to its worked examples."""
    cut = prompt.find("\n\nWe provide")
    return (prompt if cut < 0 else prompt[:cut]).strip()


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
