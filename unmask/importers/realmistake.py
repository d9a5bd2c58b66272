"""The `realmistake` importer: ReaLMistake error detectors' judgments, joined to their items.

Contract: ``read(judgments.jsonl, options)`` with ``options.gold`` naming the dataset's
``data.zip`` yields one replay of ``protocols/realmistake.proto`` per judgment line. The
items (the task input, the judged model response, the expert's gold label) are read from
the password-protected archive at run time and never written out but as the replay's
sources: the upstream authors ask that they not be published in plain text, so keep the
replays where you keep the archive. The archive is read with its member count, sizes and
compression ratio bounded, each member bounded while it is decompressed (``archive``), and
its member names are never used as paths.

Sources: ``context`` is the model input, ``response`` the model response, ``rationale`` the
judge's output. The verdict is the dataset's parse of the judge's conclusion
(``judge_verdict``: ``error``, ``no_error``, or ``none`` where it is null); ``gold`` is the
expert label. Every annotation comes from a rule over the rationale and the item
(``by: rule realmistake-rules/3``, unreviewed; ``reports_error``, what the explanation says
it found, is read by ``realmistake_findings.py``); nothing comes from the gold label or the
expert's explanation, and nothing is FALSE because something was not found, except
``states_fixed``, which the whole rationale decides (it states one of the two fixed
sentences or it does not), and ``in_task(q)``, FALSE only for a material difference (see
``quoting.py``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from unmask.importers import PROTOCOLS, Imported, Options, Skipped, annotate_span, build
from unmask.importers.archive import Archive
from unmask.importers.jsonlines import BadLine, jsonl_lines, jsonl_records
from unmask.importers.quoting import Namings, Quotation, locate, misquote, quotations
from unmask.importers.realmistake_findings import reported_error
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.files import read_bytes
from unmask.plumbing.jsonload import json_values, too_many_values
from unmask.plumbing.safe import shorten
from unmask.replay.builder import ReplayBuilder

NAME = "realmistake"
PROTOCOL = PROTOCOLS / "realmistake.proto"
# 3: a report taken back anywhere later is not read as one
RULES = {"kind": "rule", "name": "realmistake-rules/3", "reviewed": False}
# the upstream authors publish this password with the data, to keep it out of crawls
PASSWORD = b"open-realmistake"
VERDICTS = {"error": "error", "no_error": "no_error", None: "none"}
GOLD = ("error", "no_error")
# bounds on the archive: the upstream one has 11 members, the largest 0.75 MB at 4:1
MAX_MEMBERS = 64
MAX_RATIO = 50

NAMINGS = Namings(
    re.compile(
        r"\b(?:the|this)\s+(?:model(?:'s)?\s+|generated\s+|given\s+|original\s+)?"
        r"(?P<source>input|response|question|claim|instructions?|prompt|problem|"
        r"requirements?|evidence)\b",
        re.I,
    )
)
# a conclusion: "Therefore, the model response contains an error." and its variants
# ("The model response contains an error." opening a line or sentence counts as well)
_CONCLUSION = re.compile(
    r"(?:\b(?:therefore|thus|so|hence|in conclusion|overall|i conclude that)\b[,:]?\s+"
    r"|(?:^|(?<=[.!?:]\s)|(?<=\n))[\s*]*)"
    r"(?:the\s+)?model(?:'s)?\s+response\s+(?:contains|has)\s+(an|no)\s+errors?\b",
    re.I,
)
_FIXED = (
    "therefore, the model response contains an error",
    "therefore, the model response contains no error",
)


def conclusions(rationale: str) -> list[re.Match[str]]:
    """The rationale's conclusions, in order; the two options side by side ("… an error." or
    "… no error.") are the judge restating its instructions, not a conclusion."""
    found = list(_CONCLUSION.finditer(rationale))
    out = []
    for k, m in enumerate(found):
        near = [
            o
            for o in found[max(0, k - 1) : k + 2]
            if o is not m
            and o.group(1).lower() != m.group(1).lower()
            and " or " in rationale[min(m.end(), o.end()) : max(m.start(), o.start())].lower()
            and abs(m.start() - o.start()) < 120
        ]
        if not near:
            out.append(m)
    return out


def _span(m: re.Match[str]) -> tuple[int, int]:
    """A conclusion's span without the spacing or markup it may open with."""
    text = m.group(0)
    return m.start() + len(text) - len(text.lstrip(" \t\n*")), m.end()


def is_fixed(rationale: str, m: re.Match[str]) -> bool:
    """Whether a conclusion is one of the two fixed sentences, word for word."""
    return _norm(m.group(0)) in _FIXED and rationale[m.end() : m.end() + 1] == "."


def _norm(text: str) -> str:
    return " ".join(text.replace("*", " ").split()).lower()


def _items(path: Path, options: Options) -> dict[str, dict[str, Any]]:
    """The archive's items by ``metadata.id``."""
    file = str(path)

    def bad(message: str) -> UnmaskError:
        return UnmaskError(
            [
                Diagnostic(
                    Code.REALMISTAKE,
                    message,
                    file=file,
                    help="give the dataset's `data.zip` with `--gold`",
                )
            ]
        )

    # a regular file only (a named pipe or a device is one line), read under the size bound;
    # every member bounded while it is decompressed (``archive``), never by ``zipfile``
    data = read_bytes(path, options.limits, file)
    archive = Archive(
        data,
        file,
        options.limits,
        max_members=MAX_MEMBERS,
        max_ratio=MAX_RATIO,
        password=PASSWORD,
    )
    items: dict[str, dict[str, Any]] = {}
    budget = options.limits.max_json_values
    for info in archive.members:
        if not re.fullmatch(r"data/[a-z_]+/[A-Za-z0-9._-]+\.jsonl", info.filename):
            continue  # not an item file (a README, the paper's three examples)
        member = f"{file}:{info.filename}"
        lines = archive.read(info)
        # the items of every member are kept together: bound their values before any is built
        budget -= json_values(lines)
        if budget < 0:
            raise too_many_values(file, options.limits, "the archive's item files hold")
        for _, row in jsonl_lines(lines, member, options.limits, name=file, bad="raise"):
            key = row.get("metadata", {}).get("id") if isinstance(row, dict) else None
            if isinstance(key, str):
                items[key] = row
    if not items:
        raise bad(f"`{shorten(file)}` holds no ReaLMistake items")
    return items


# every annotation here is a rule's reading of one span of a text
_at = functools.partial(annotate_span, by=RULES)


def _conclusion(b: ReplayBuilder, rationale: str) -> None:
    found = conclusions(rationale)
    whole = (len(rationale) - len(rationale.lstrip()), len(rationale.rstrip()))
    # what the explanation says it found: TRUE on explicit words only, never FALSE
    report = reported_error(rationale, [_span(m) for m in found])
    if report is not None:
        _at(b, "reports_error", True, rationale, *report, "rationale")
    if not found:
        # read whole, the rationale states no conclusion at all, fixed or not
        _at(b, "states_fixed", False, rationale, *whole, "rationale")
        return
    last = found[-1]
    error = last.group(1).lower() == "an"
    _at(b, "concludes_error", error, rationale, *_span(last), "rationale")
    _at(b, "concludes_no_error", not error, rationale, *_span(last), "rationale")
    fixed = [m for m in found if is_fixed(rationale, m)]
    if fixed:
        _at(b, "states_fixed", True, rationale, *_span(fixed[-1]), "rationale")
    # what follows the last conclusion, markup and closing marks aside
    rest = rationale[last.end() + 1 :].strip(" \t\n*\"'”.")
    if fixed and fixed[-1] is last and not rest:
        _at(b, "ends_fixed", True, rationale, *_span(last), "rationale")
    elif rest:
        i = rationale.rfind(rest)
        _at(b, "ends_fixed", False, rationale, i, i + len(rest), "rationale")
    before = len(rationale[: found[0].start()].split())
    after = len(rationale[found[0].end() :].split())
    if before >= 15:
        _at(b, "explained_first", True, rationale, *whole, "rationale")
    elif before < 3 and after >= 15:
        _at(b, "explained_first", False, rationale, *_span(found[0]), "rationale")


def _quotes(b: ReplayBuilder, rationale: str, task: dict[str, str], quotes: list[Quotation]):
    for k, q in enumerate(quotes, start=1):
        if q.attributed:
            _at(b, f"quotes_task(q{k})", True, rationale, q.lead, q.end, "rationale")
        quote = rationale[q.start : q.end]
        for source, text in task.items():
            found = locate(text, quote)
            if found is not None:
                _at(b, f"in_task(q{k})", True, text, found[0], found[1], source)
                break
        else:
            both = task["context"] + "\n\n" + task["response"]
            near = misquote(both, quote)
            for source, text in task.items():
                if near is not None and near in text:
                    i = text.find(near)
                    _at(b, f"in_task(q{k})", False, text, i, i + len(near), source)
                    break


def _record(where: str, row: Any, items: dict[str, dict[str, Any]]) -> Imported | Skipped:
    if not isinstance(row, dict):
        return Skipped(where, "not a judgment (expected an object)")
    rationale, verdict = row.get("judge_rationale"), row.get("judge_verdict", "?")
    judge, item_id = row.get("judge_model"), row.get("item_id")
    if not isinstance(rationale, str) or not rationale.strip():
        return Skipped(where, "`judge_rationale` is not a text")
    if not isinstance(judge, str) or not isinstance(item_id, str):
        return Skipped(where, "`judge_model` or `item_id` is not a text")
    if verdict not in VERDICTS:
        return Skipped(where, "`judge_verdict` is not `error`, `no_error` or null")
    item = items.get(item_id)
    if item is None:
        return Skipped(where, "`item_id`: no item of the archive has this id")
    context, response = item.get("input"), item.get("llm_response")
    gold = item.get("error_label")
    if not (isinstance(context, str) and isinstance(response, str)) or gold not in GOLD:
        return Skipped(where, "the item has no `input`, `llm_response` or `error_label`")
    task = {"context": context, "response": response}
    prompt = str(row.get("judge_prompt", "?"))
    # the judge's own closing sentences, quoted, are its instructions' words, not the task's
    quotes = [
        q
        for q in quotations(rationale, NAMINGS)
        if "model response contains" not in _norm(rationale[q.start : q.end])
    ]

    def make() -> ReplayBuilder:
        b = ReplayBuilder(
            PROTOCOL,
            sources={"rationale": rationale, **task},
            verdict=VERDICTS[verdict],
            gold=gold,
            id=f"{judge}/{item_id}/{prompt}",
            domains={"quote": [f"q{k}" for k in range(1, len(quotes) + 1)]},
            item=f"{item_id}/{prompt}",
            judge=judge,
        )
        _conclusion(b, rationale)
        _quotes(b, rationale, task, quotes)
        return b

    return build(where, f"{judge}-{item_id}-{prompt}", make)


def read(path: Path, options: Options) -> Iterator[Imported | Skipped]:
    if options.gold is None:
        raise UnmaskError(
            [
                Diagnostic(
                    Code.REALMISTAKE,
                    "the `realmistake` importer needs the dataset's items",
                    help="pass `--gold data.zip`",
                )
            ]
        )
    items = _items(Path(options.gold), options)
    file = str(path)
    for n, row in jsonl_records(path, options.limits):
        where = f"{file}:{n}"
        yield Skipped(where, row.reason) if isinstance(row, BadLine) else _record(where, row, items)
