"""The `structured` importer: judges that annotate themselves, through ``--emit judge-schema``.

Contract: ``unmask import structured OUTPUTS.jsonl --protocol FILE.proto`` reads one
judgment per line: ``{"judge": NAME, "output": OUTPUT, "id"?, "item"?, "gold"?, "sources"?,
"domains"?, "meta"?}``, where OUTPUT (an object, or a string holding one) follows the schema
``unmaskc --emit judge-schema`` writes (``unmask.replay.judgeschema``; a text that is one ```json
fenced block is read as its content, and a note says so). Each line becomes a replay:
the output's rationale and verdict; each atom the judge stated annotated with its value and
its quotes located in the rationale, ``by: {kind: model, name: NAME, reviewed: false}``; an
atom it did not state stays unannotated (UNKNOWN). A quote that is not in the rationale is a
finding, not an error: the statement keeps only the quotes found (UNKNOWN when none is), and
the procedure atom ``quotes_verbatim``, which the importer appends to the protocol with a
requirement ``verbatim_quotes`` (``judgeschema.verbatim_lines``: unless the protocol
declares that atom itself, when only the requirement is added, if nothing names it), is FALSE,
quoting the missing quotes in the ``trace`` source (the output as stated). A line that does
not follow the shape is skipped with ``FILE:LINE`` and the JSON path.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from unmask.importers import (
    Note,
    Occurrences,
    Options,
    Skipped,
    build,
    not_the_format,
    rule_by,
    source_text,
)
from unmask.importers.jsonlines import BadLine, jsonl_records
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.jsonload import parse_json_text, show
from unmask.replay.builder import ReplayBuilder
from unmask.replay.judgeschema import (
    VERBATIM_ATOM,
    JudgeView,
    ShapeError,
    judge_view,
    key_path,
    read_output,
    verbatim_lines,
    with_verbatim,
)

NAME = "structured"
PROTOCOL = None  # `--protocol` names it

RECORD_KEYS = ("judge", "output", "id", "item", "gold", "sources", "domains", "meta")
# the sources a record may give; `rationale` and `trace` come from the output itself
RECORD_SOURCES = ("response", "context", "reference", "protocol")
MAX_LOOKUP = 10**9  # characters searched for one line's quotes, as `inspect` bounds it


class _Bad(Exception):
    def __init__(self, path: str, reason: str):
        super().__init__(path, reason)
        self.path, self.reason = path, reason


def _protocol(options: Options) -> tuple[str, JudgeView]:
    """The protocol text each replay embeds (with the appended requirement) and its view."""
    from unmask.plumbing.files import read_text

    if options.protocol is None:
        raise UnmaskError(
            [
                Diagnostic(
                    Code.PROTOCOL,
                    "the `structured` importer needs the judge's protocol",
                    help="pass `--protocol FILE.proto`",
                )
            ]
        )
    path = options.protocol
    text = read_text(path, options.limits)
    view = judge_view(text, str(path), None, options.limits)
    own = view.verbatim
    if own is not None and (own.role != "procedure" or own.domains):
        raise not_the_format(
            str(path),
            f"atom `{VERBATIM_ATOM}` must be a single procedure atom: the importer annotates it",
            help="rename the atom, or declare it `atom quotes_verbatim : procedure`",
        )
    text = with_verbatim(text, verbatim_lines(view))
    # compiled once as every replay will embed it: a clash with the appended lines (a
    # requirement of the protocol named `verbatim_quotes`) stops here, not on every line
    return text, judge_view(text, str(path), None, options.limits)


def read(path: Path, options: Options) -> Iterator[Any]:
    proto, view = _protocol(options)
    file = str(path)
    fenced: list[int] = []  # the lines whose output came in a ```json fence
    for n, rec in jsonl_records(path, options.limits, objects=True):
        yield _record(proto, view, file, n, rec, options, fenced)
    if fenced:
        lines = ", ".join(map(str, fenced[:10])) + (", …" if len(fenced) > 10 else "")
        yield Note(
            file,
            f"{len(fenced)} output(s) came as text in a ```json fenced block (line {lines}),"
            " as chat models often answer: each was read as the block's content",
        )


# a chat model asked for JSON often wraps it in a Markdown code fence: the whole text is one
# fenced block, its info string `json` or nothing
_FENCE = re.compile(r"\A\s*```(?:json|JSON)?[ \t]*\r?\n(.*?)\r?\n[ \t]*```\s*\Z", re.S)


def unfence(text: str) -> str | None:
    """The content of a text that is one ```json fenced block, else None."""
    m = _FENCE.match(text)
    return m.group(1) if m else None


def _text(v: Any, path: str) -> str:
    """A source: text as it is; an array of texts as numbered lines ``[1] …``, an array of
    ``{"id", "text"}`` passages as lines ``[ID] …`` (as ``jsonl``)."""
    text = source_text(v)
    if text is not None:
        return text
    raise _Bad(
        path,
        'expected text, an array of texts or of `{"id", "text"}` passages with distinct ids,'
        f" found `{show(v)}`",
    )


# what a required key of a record is, said when it is missing
_REQUIRED = {"judge": "the name of the judge that wrote the output (the annotations' `by.name`)"}


def _string(rec: dict, key: str, required: bool) -> str | None:
    if key not in rec:
        if required:
            raise _Bad(key, f"missing `{key}`, {_REQUIRED[key]}")
        return None
    v = rec[key]
    if not isinstance(v, str) or not v:
        raise _Bad(key, f"expected text, found `{show(v)}`")
    return v


def _fields(rec: dict, view: JudgeView, file: str, n: int, options: Options) -> dict[str, Any]:
    for key in rec:
        if key not in RECORD_KEYS:
            close = difflib.get_close_matches(key, RECORD_KEYS, n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            raise _Bad(key_path("$", key).removeprefix("$."), f"unknown key `{show(key)}`{hint}")
    judge = _string(rec, "judge", True)
    out: dict[str, Any] = {
        "judge": judge,
        "id": _string(rec, "id", False) or f"{Path(file).stem}-{n}",
        "item": _string(rec, "item", False),
        "gold": _string(rec, "gold", False),
    }
    if out["gold"] is not None and out["gold"] not in view.labels:
        labels = ", ".join(f"`{x}`" for x in view.labels)
        raise _Bad("gold", f"expected one of {labels}, found `{show(out['gold'])}`")
    sources = rec.get("sources", {})
    if not isinstance(sources, dict):
        raise _Bad("sources", f"expected an object of source texts, found `{show(sources)}`")
    for k in sources:
        if k not in RECORD_SOURCES:
            raise _Bad(
                key_path("sources", k),
                f"`{show(k)}` is not a source a record gives: expected "
                + ", ".join(f"`{s}`" for s in RECORD_SOURCES),
            )
    out["sources"] = {k: _text(v, f"sources.{k}") for k, v in sources.items()}
    domains = rec.get("domains", {})
    if not isinstance(domains, dict) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in domains.values()
    ):
        raise _Bad("domains", "expected an object of domain names to arrays of members")
    for d in view.free_domains:
        if d not in domains:
            raise _Bad("domains", f"missing the members of domain `{d}`")
    out["domains"] = domains
    output = rec.get("output")
    out["fenced"] = False
    if isinstance(output, str):  # a chat API returns the structured output as text
        inner = unfence(output)
        if inner is not None:
            output, out["fenced"] = inner, True
        try:
            output = parse_json_text(output, file, options.limits, first_line=n)
        except UnmaskError as exc:
            why = f"not a JSON object: {exc.diagnostics[0].message}"
            if not out["fenced"] and "```" in output:
                why += "; a ``` fenced block is read only when it is the whole text"
            raise _Bad("output", why) from None
    if "output" not in rec:
        raise _Bad("output", "missing `output`, the judge's structured output")
    out["output"] = output
    return out


def _trace(verdict: str, statements: list) -> tuple[str, list[list[int]]]:
    """The output as stated, one line per statement and one per quote; and where each quote
    starts in it, so that a quote missing from the rationale can be shown where it was said."""
    n = sum(len(s.quotes) for s in statements)
    text = f"verdict: {verdict}\nquotes: {n}\n"
    starts = []
    for s in statements:
        text += f"{s.atom}: {s.value}\n"
        mine = []
        for q in s.quotes:
            text += "  quote: "
            mine.append(len(text))
            text += q + "\n"
        starts.append(mine)
    return text, starts


def _first(seen: dict[str, int], text: str, quote: str) -> int:
    """``text.find(quote)``, once per distinct quote."""
    i = seen.get(quote)
    if i is None:
        i = seen[quote] = text.find(quote)
    return i


def _record(
    proto: str, view: JudgeView, file: str, n: int, rec: Any, options: Options, fenced: list[int]
):
    where = f"{file}:{n}"
    if isinstance(rec, BadLine):
        return Skipped(where, rec.reason)
    try:
        f = _fields(rec, view, file, n, options)
        if f["fenced"]:
            fenced.append(n)
        members = {
            d: list(m)
            for a in view.atoms
            for d, m in zip(a.domains, a.members, strict=True)
            if m is not None
        }
        members.update(f["domains"])
        out = read_output(f["output"], view, members)
    except _Bad as exc:
        return Skipped(f"{where}: field `{exc.path}`", exc.reason)
    except ShapeError as exc:
        hint = f"; {exc.help}" if exc.help else ""
        return Skipped(f"{where}: field `{exc.path}`", exc.reason + hint)
    statements = list(out.statements)
    distinct = len({q for s in statements for q in s.quotes})
    if distinct * (len(out.rationale) + 1) > MAX_LOOKUP:
        return Skipped(
            f"{where}: field `output`",
            f"too many quotes to look up: more than {MAX_LOOKUP:,} characters to search"
            " (distinct quotes times the length of the rationale)",
        )
    trace, starts = _trace(out.verdict, statements)
    rationale = Occurrences(out.rationale)
    tr = Occurrences(trace)
    model = {"kind": "model", "name": f["judge"], "reviewed": False}

    def make() -> ReplayBuilder:
        sources = {**f["sources"], "rationale": out.rationale, "trace": trace}
        b = ReplayBuilder(
            proto,
            sources=sources,
            verdict=out.verdict,
            gold=f["gold"],
            id=f["id"],
            domains=f["domains"] or None,
            item=f["item"],
            judge=f["judge"],
            limits=options.limits,
        )
        found: list[tuple[str, int]] = []  # (quote, start in the rationale)
        missing: list[tuple[str, int, str]] = []  # (quote, start in the trace, atom)
        # each distinct quote searched for once, however often the judge repeats it
        first: dict[str, int] = {}
        for s, at in zip(statements, starts, strict=True):
            here = [(q, _first(first, out.rationale, q)) for q in s.quotes]
            ok = [(q, i) for q, i in here if i != -1]
            missing += [(q, t, s.atom) for (q, i), t in zip(here, at, strict=True) if i == -1]
            found += ok
            if s.value == "UNKNOWN" or ok:
                b.annotate(
                    s.atom,
                    s.value,
                    quote=[q for q, _ in ok] or None,
                    source="rationale" if ok else None,
                    occurrence=[rationale.at(q, i) for q, i in ok] if ok else None,
                    by=model,
                )
            else:
                # the judge's value rests on quotes it did not write: no value from them
                b.annotate(
                    s.atom,
                    "UNKNOWN",
                    by=rule_by(NAME),
                    explanation=f"the judge stated {s.value}, but none of its quotes is in "
                    "the rationale",
                )
        if missing:
            b.annotate(
                VERBATIM_ATOM,
                "FALSE",
                quote=[q for q, _, _ in missing],
                source="trace",
                occurrence=[tr.at(q, t) for q, t, _ in missing],
                by=rule_by(NAME),
                explanation="not in the rationale: a quote of "
                + ", ".join(dict.fromkeys(f"`{a}`" for _, _, a in missing)),
            )
        elif found:
            uniq = list(dict.fromkeys(found))
            b.annotate(
                VERBATIM_ATOM,
                "TRUE",
                quote=[q for q, _ in uniq],
                source="rationale",
                occurrence=[rationale.at(q, i) for q, i in uniq],
                by=rule_by(NAME),
            )
        else:  # nothing was quoted, so nothing was misquoted: the trace says so
            b.annotate(VERBATIM_ATOM, "TRUE", quote="quotes: 0", source="trace", by=rule_by(NAME))
        return b

    return build(where, f["id"], make)
