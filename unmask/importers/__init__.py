"""Importers: turn another tool's judge output into replays, one module per format.

Contract: ``IMPORTERS`` maps a name to the module that reads that format; ``get(name)``
imports it on first use (an unknown name is an ``UnmaskError`` with a did-you-mean hint).
An importer module has ``PROTOCOL`` (the ``.proto`` it ships, or None when the user names
one) and ``read(path, options) -> Iterator[Imported | Skipped | Note]``: every record of the
input comes out as exactly one of the first two, so nothing is dropped silently; a ``Note``
says once per file what was not checked and why. An input that is not
of the format at all raises ``UnmaskError`` naming the file and the field. Importers build
replays only through ``unmask.replay.builder.ReplayBuilder``; every annotation they derive by a
rule passes ``by=rule_by(NAME)``.
"""

from __future__ import annotations

import bisect
import difflib
import importlib
import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeGuard

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits

PROTOCOLS = Path(__file__).resolve().parent / "protocols"

# name -> (module, one-line help); a new importer is one line here and one module
IMPORTERS: dict[str, tuple[str, str]] = {
    "promptfoo": ("unmask.importers.promptfoo", "promptfoo `eval -o results.json|.jsonl` output"),
    "deepeval": ("unmask.importers.deepeval", "a DeepEval test run (test cases with metrics)"),
    "inspect": ("unmask.importers.inspect", "model-graded scores of Inspect `.eval`/`.json` logs"),
    "ragas": (
        "unmask.importers.ragas",
        "RAGAS `result.to_pandas()` written as CSV, JSON or JSON Lines",
    ),
    "jsonl": ("unmask.importers.jsonl", "any JSON Lines file, through a mapping file"),
    "structured": (
        "unmask.importers.structured",
        "a judge's structured outputs (`unmaskc --emit judge-schema`), with `--protocol`",
    ),
    "wice": ("unmask.importers.wice", "WiCE claim-verification judgments, with `--gold`"),
    "realmistake": (
        "unmask.importers.realmistake",
        "ReaLMistake error detectors' judgments, with the items' `data.zip` as `--gold`",
    ),
    "factcc-explanations": (
        "unmask.importers.factcc",
        "FactCC judges' explanations (`factcc_explanation_annotation.json`)",
    ),
}


def rule_by(importer: str) -> dict[str, Any]:
    """The `by` of an annotation that ``importer`` derived by a rule: unreviewed."""
    return {"kind": "rule", "name": f"{importer}/1", "reviewed": False}


@frozen
class Options:
    """What the command line passes to every importer."""

    limits: Limits = DEFAULT_LIMITS
    mapping: Path | None = None  # the `jsonl` importer's mapping file
    gold: Path | None = None  # the dataset's items and gold labels (`wice`, `realmistake`)
    protocol: Path | None = None  # the judge's protocol (`structured`)


@frozen
class Imported:
    name: str  # the file name stem, before making it safe and unique
    replay: dict[str, Any]


@frozen
class Skipped:
    where: str  # FILE:LINE or FILE: JSON path, and the field
    reason: str
    count: int = 1  # how many judged results this one skip stands for


@frozen
class Note:
    """Something true of the whole input that the user should know, said once per file
    (a check not made because the input cannot tell); not a record."""

    where: str
    message: str


@dataclass
class Summary:
    written: list[Path] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)

    @property
    def n_skipped(self) -> int:
        return sum(s.count for s in self.skipped)


def get(name: str) -> ModuleType:
    if name not in IMPORTERS:
        close = difflib.get_close_matches(name, list(IMPORTERS), n=1)
        raise UnmaskError(
            [
                Diagnostic(
                    Code.UNKNOWN_IMPORTER,
                    f"no importer named `{name}`",
                    help=f"did you mean `{close[0]}`?"
                    if close
                    else "importers are " + ", ".join(f"`{n}`" for n in IMPORTERS),
                )
            ]
        )
    return importlib.import_module(IMPORTERS[name][0])


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(stem: str) -> str:
    """A file-name stem made of letters, digits, `.`, `_` and `-`, never hidden or empty,
    and never read as an option by a shell command (`-rf` becomes `_-rf`)."""
    s = _UNSAFE.sub("_", stem).strip("._")[:100]
    return f"_{s}" if s.startswith("-") else s or "replay"


def annotate_span(
    b: Any, atom: str, value: bool, text: str, start: int, end: int, source: str, *, by: Any
) -> None:
    """Annotate ``atom`` on the builder ``b`` with ``text[start:end]`` of the source named
    ``source`` as its one quote, pinned to that very occurrence."""
    quote = text[start:end]
    b.annotate(
        atom, value, quote=quote, source=source, occurrence=occurrence_at(text, quote, start), by=by
    )


def occurrence_at(text: str, quote: str, start: int) -> int:
    """Which occurrence (0-based, overlapping ones counted) of ``quote`` starts at ``start``."""
    return Occurrences(text).at(quote, start)


class Occurrences:
    """``occurrence_at`` for many quotes of one text: each quote's starts are found once,
    then looked up by bisection (a rationale quoting one phrase 8,000 times was quadratic)."""

    __slots__ = ("_starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._starts: dict[str, list[int]] = {}

    def at(self, quote: str, start: int) -> int:
        starts = self._starts.get(quote)
        if starts is None:
            from unmask.replay.builder import occurrences

            # bounded: a quote found too often raises ``TooOften`` (the record is skipped)
            starts = self._starts[quote] = occurrences(self.text, quote)
        n = bisect.bisect_left(starts, start)
        if n == len(starts) or starts[n] != start:
            raise ValueError("the quote does not start there")
        return n


def num(v: Any) -> str:
    """A number as the input wrote it (JSON's spelling), for rendered rationales."""
    import json

    return json.dumps(v)


def is_number(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def dig(obj: Any, dotted: str) -> Any:
    """``obj["a"]["b"]`` for ``"a.b"``, and ``obj["a"][0]`` for ``"a.0"`` where ``a`` is an
    array (a part of decimal digits indexes it, from 0); KeyError names the first missing part."""
    cur = obj
    for part in dotted.split("."):
        if isinstance(cur, list) and part.isascii() and part.isdecimal():
            # an index longer than any array could be is missing, never converted: `int` of
            # thousands of digits fails outright
            if len(part) > len(str(len(cur))) or (part != "0" and part.startswith("0")):
                raise KeyError(part)
            i = int(part)
            if i >= len(cur):
                raise KeyError(part)
            cur = cur[i]
            continue
        if not isinstance(cur, Mapping) or part not in cur:
            raise KeyError(part)
        cur = cur[part]
    return cur


_PASSAGE_ID = re.compile(r"[A-Za-z0-9_.-]+")


def source_text(v: Any) -> str | None:
    """A record's source as one text: a string as it is; a list of passages as one line each,
    numbered ``[1] …`` for a list of texts, ``[ID] …`` for a list of ``{"id": ID, "text": …}``
    (the pipeline's own passage ids, so a quote and the claim proposer can name them).
    None when ``v`` is neither, or an id is not letters, digits, ``_``, ``.`` and ``-``
    or repeats."""
    if isinstance(v, str):
        return v
    if not isinstance(v, list):
        return None
    if all(isinstance(x, str) for x in v):
        return "\n".join(f"[{k}] {x}" for k, x in enumerate(v, start=1))
    ids = [x.get("id") if isinstance(x, dict) else None for x in v]
    if not all(
        isinstance(x, dict)
        and set(x) == {"id", "text"}
        and isinstance(x["id"], str)
        and _PASSAGE_ID.fullmatch(x["id"])
        and isinstance(x["text"], str)
        for x in v
    ) or len(set(ids)) != len(ids):
        return None
    return "\n".join(f"[{x['id']}] {x['text']}" for x in v)


def tf(b: bool) -> str:
    """A boolean as the rendered rationales spell it."""
    return "true" if b else "false"


def not_the_format(file: str, message: str, at: str | None = None, help: str | None = None):
    """The error of an input that is not of the importer's format at all."""
    return UnmaskError([Diagnostic(Code.NOT_THE_FORMAT, message, file=file, path=at, help=help)])


def read_array(
    path: Path, options: Options, at: str, what: str, help: str | None = None
) -> tuple[Any, list]:
    """The JSON document at ``path`` and the array at its dotted path ``at``; anything else
    there is not the format: "not WHAT: expected an array at `AT`"."""
    from unmask.plumbing.jsonload import read_json_file

    data = read_json_file(path, options.limits)
    return data, array_at(data, path, at, what, help)


def array_at(data: Any, path: Path, at: str, what: str, help: str | None = None) -> list:
    """The array at dotted path ``at`` of a document already read from ``path``."""
    try:
        found = dig(data, at)
    except KeyError:
        found = None
    if not isinstance(found, list):
        raise not_the_format(str(path), f"not {what}: expected an array at `{at}`", at, help)
    return found


def build(where: str, stem: str, make: Any) -> Imported | Skipped:
    """``make()`` returns a ``ReplayBuilder``; its replay, or the reason it is invalid."""
    from unmask.replay.builder import TooOften

    try:
        return Imported(stem, make().build())
    except TooOften as exc:
        return Skipped(
            where, f"a quote occurs more than {exc.found} times in its text, too often to locate"
        )
    except UnmaskError as exc:
        d = exc.diagnostics[0]
        more = f" (and {len(exc.diagnostics) - 1} more)" if len(exc.diagnostics) > 1 else ""
        loc = f" at `{d.path}`" if d.path else ""
        return Skipped(where, f"the replay would be invalid{loc}: {d.message}{more}")


def import_file(
    importer: str,
    path: Path,
    out: Path,
    options: Options | None = None,
    *,
    replace: bool = False,
) -> Summary:
    """Read ``path`` with ``importer`` and write one replay per judged record into ``out``.

    File names are the importer's stems made safe, with `-2`, `-3`… on a repeat, so the
    same input always gives the same names. ``out`` must hold no replay but an earlier
    import's, unchanged, of the same tool and input file (a re-run), or of any with
    ``replace``: those are removed first, and the others are never touched
    (``unmask.replay.outfolder``). Raises ``UnmaskError`` when ``out`` holds other
    replays (``other-replays``), the input is not of the format or ``out`` cannot be
    written; a record that cannot be imported is a ``Skipped`` entry of the summary,
    never an exception.
    """
    from unmask.replay.builder import json_bytes
    from unmask.replay.outfolder import Manifest, survey

    mod = get(importer)
    options = options or Options()
    plan = survey(Path(out), importer, Path(path), options.limits)
    refused = plan.refusal(replace)
    if refused is not None:
        raise refused
    records = iter(mod.read(Path(path), options))
    # the first record is read before `out` is created: input that is not of the format
    # fails here and leaves nothing behind, an earlier import's replays included
    first = next(records, None)
    if first is not None:
        records = itertools.chain([first], records)
    summary = Summary()
    used: set[str] = set()
    manifest = None
    try:
        manifest, removed = Manifest.start(plan)
        if removed:
            summary.notes.append(Note(str(out), plan.removed_note(removed)))
        for rec in records:
            if isinstance(rec, Skipped):
                summary.skipped.append(rec)
                continue
            if isinstance(rec, Note):
                summary.notes.append(rec)
                continue
            stem = name = safe_name(rec.name)
            k = 2
            while name.lower() in used:  # case-insensitive file systems too
                name, k = f"{stem}-{k}", k + 1
            used.add(name.lower())
            target = out / f"{name}.json"
            data = json_bytes(rec.replay)
            taken = manifest.write(target.name, data)
            if taken is not None:
                summary.skipped.append(Skipped(str(target), taken))
                continue
            summary.written.append(target)
    except OSError as exc:
        reason = (exc.strerror or "cannot write").lower()
        where = exc.filename or out
        raise UnmaskError([Diagnostic(Code.IO, f"cannot write `{where}`: {reason}")]) from None
    finally:
        if manifest is not None:
            manifest.close()
    return summary
