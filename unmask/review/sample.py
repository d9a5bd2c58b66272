"""A uniform random sample of unreviewed readings, stratified by reader, to measure readers.

Contract:
- ``frame(replays)`` takes (location, replay document, ``Replay``) triples and returns every
  unreviewed reading there (``by.reviewed`` false, given or by default) that claims a value
  (TRUE or FALSE: an UNKNOWN claims nothing, so it has no precision to measure), whether
  or not a check rests on it: a queue ranked by impact would bias an estimate;
- ``draw(readings, n, seed)`` draws ``min(n, len(readings))`` of them without replacement,
  stratified by reader (``by`` kind, name, version) with *equal* allocation: each reader
  gets the same share (a reader with fewer readings gives all it has, and the rest is shared
  among the others). Within a stratum every subset of its size is equally likely: readings
  are ordered by the SHA-256 of the seed, the reader and the reading, and the first are
  taken. Same readings and seed, same sample in the same order, on any platform;
- ``Reading.to_json(sample, blind)`` is one line of a review file (``unmask.review/1``) with
  ``sample`` (``{seed, size, stratum, blind}``, docs/review.md); a blind line has neither
  ``current`` nor the reader's ``explanation``, and is answered with ``decision`` ``answer``
  and the ``value`` the sources give;
- ``read_line(obj, file, line, reviewer)`` reads any review line back: a sampled one here
  (``Decision.sample`` set), any other through ``unmask.review.queue.decide``.
Imports nothing from ``unmask.commands`` or ``unmask.cli``.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any

import msgspec

from unmask.plumbing.jsonload import show
from unmask.plumbing.structs import UNSET
from unmask.replay.data import EVIDENCE_SOURCES, SOURCES, VALUES
from unmask.review.format import REVIEW_SCHEMA, ReviewLine, Sample, line_json
from unmask.review.queue import (
    CONTEXT_CHARS,
    Decision,
    _bad,
    _spans,
    decide,
    read_line_as_exported,
    reviewed,
    reviewer_of,
    spans_of,
    window,
)

CLAIMS = ("TRUE", "FALSE")  # the values a reading can be right or wrong about


def stratum(by: dict[str, Any]) -> tuple[str, str, str]:
    """The reader of a reading: (kind, name, version), absent ones ``""``."""
    kind, name, version = (str(by.get(k) or "") for k in ("kind", "name", "version"))
    return (kind, name, version)


@dataclass(slots=True)
class Reading:
    """One unreviewed reading: an annotation a rule or a model made and nobody checked."""

    location: str
    replay: str
    atom: str
    description: str
    value: str
    by: dict[str, Any]
    evidence: list[dict[str, Any]]  # source, start, end, quote, context
    explanation: str
    sources: dict[str, str]  # the texts a reviewer reads to decide it

    @property
    def reader(self) -> tuple[str, str, str]:
        return stratum(self.by)

    def to_json(self, sample: dict[str, Any], blind: bool) -> dict[str, Any]:
        # a reader's explanation argues for its value: a blind line would give it away
        shown = not blind
        return line_json(
            ReviewLine(
                schema=REVIEW_SCHEMA,
                location=self.location,
                replay=self.replay,
                atom=self.atom,
                description=self.description,
                current=self.value if shown else UNSET,  # type: ignore[arg-type]
                by=self.by,
                evidence=spans_of(self.evidence),
                explanation=self.explanation if shown else UNSET,
                sources=self.sources,
                sample=msgspec.convert(sample, Sample),
                decision="",
                value="",
                reviewer="",
            )
        )


def _sources(role: str, given: dict[str, Any]) -> dict[str, str]:
    """What a reviewer needs to decide an atom of ``role``: the sources its evidence may
    come from, and the response (what the claims are), in the replay format's order."""
    names = {*EVIDENCE_SOURCES.get(role, ()), "response"}
    return {s: given[s] for s in SOURCES if s in names and isinstance(given.get(s), str)}


def frame(replays: list[tuple[str, Any, Any]], chars: int = CONTEXT_CHARS) -> list[Reading]:
    """Every unreviewed TRUE or FALSE reading of the replays, in input order."""
    out = []
    for location, doc, replay in replays:
        decls = {a.name: a for a in replay.protocol.atoms}
        valid = {a.atom for a in replay.annotations}
        given = doc.get("sources") if isinstance(doc.get("sources"), dict) else {}
        for ann in doc.get("annotations") or ():
            if not isinstance(ann, dict) or ann.get("atom") not in valid:
                continue
            by, value = ann.get("by"), ann.get("value")
            if not isinstance(by, dict) or reviewed(by) or value not in CLAIMS:
                continue
            spans = _spans(ann.get("evidence", []))
            if spans is None:  # a whole reading: only ever a reviewed reader's
                continue
            evidence = []
            for src, start, end, quote in spans:
                text = given.get(src)
                text = text if isinstance(text, str) else ""
                evidence.append(
                    {
                        "source": src,
                        "start": start,
                        "end": end,
                        "quote": quote,
                        "context": window(text, start, end, chars),
                    }
                )
            decl = decls.get(ann["atom"])
            out.append(
                Reading(
                    location,
                    replay.id,
                    ann["atom"],
                    decl.description if decl is not None else "",
                    value,
                    dict(by),
                    evidence,
                    str(ann.get("explanation") or ""),
                    _sources(decl.role if decl is not None else "", given),
                )
            )
    return out


def _order(seed: int, *parts: str) -> bytes:
    """A key that orders readings at random under ``seed``, the same on every platform."""
    return hashlib.sha256("\0".join((str(seed), *parts)).encode("utf-8", "surrogatepass")).digest()


def allocate(sizes: dict[tuple[str, str, str], int], n: int, seed: int) -> dict[Any, int]:
    """Equal allocation of ``n`` over the strata, none given more than it has: the highest
    level L with every stratum given ``min(size, L)`` within ``n``, then one more to as many
    of the strata larger than L as ``n`` has left, in an order the seed decides (so no
    reader is favoured). No stratum that is not exhausted gets two fewer than another."""
    left = min(n, sum(sizes.values()))
    lo, hi = 0, max(sizes.values(), default=0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(min(k, mid) for k in sizes.values()) <= left:
            lo = mid
        else:
            hi = mid - 1
    alloc = {key: min(k, lo) for key, k in sizes.items()}
    rest = left - sum(alloc.values())
    larger = sorted((key for key in sizes if sizes[key] > lo), key=lambda k: _order(seed, *k))
    for key in larger[:rest]:
        alloc[key] += 1
    return alloc


def draw(readings: list[Reading], n: int, seed: int) -> list[Reading]:
    """The sample: strata in (kind, name, version) order, each in its random order."""
    strata: dict[tuple[str, str, str], list[Reading]] = {}
    for r in readings:
        strata.setdefault(r.reader, []).append(r)
    alloc = allocate({k: len(v) for k, v in strata.items()}, n, seed)
    out = []
    for key in sorted(strata):
        ranked = sorted(strata[key], key=lambda r: _order(seed, *key, r.location, r.atom))
        out += ranked[: alloc[key]]
    return out


def sample_json(seed: int, size: int, reader: tuple[str, str, str], blind: bool) -> dict:
    kind, name, version = reader
    stratum_ = {"kind": kind, "name": name, "version": version}
    return {"seed": seed, "size": size, "stratum": stratum_, "blind": blind}


# --- reading sampled lines back ---------------------------------------------------------------


def _sample(got: ReviewLine, file: str, line: int) -> dict[str, Any]:
    """The line's ``sample`` as exported (its shape is checked as the line is read), its
    stratum the reader in ``by``; else an error naming the JSON path."""
    s: dict[str, Any] = msgspec.to_builtins(got.sample)
    if stratum(got.by) != tuple(s["stratum"][k] for k in ("kind", "name", "version")):
        raise _bad(
            file,
            line,
            "sample.stratum",
            "the stratum is not the reader in `by`",
            "export the sample again; a sampled line is applied as it was drawn",
        )
    return s


def read_line(obj: Any, file: str, line: int, reviewer: str | None = None) -> Decision | None:
    """Any review line read back: a sampled one carries its ``sample`` into the decision."""
    if not isinstance(obj, dict) or "sample" not in obj:
        return decide(obj, file, line, reviewer)
    got = read_line_as_exported(obj, file, line)
    s = _sample(got, file, line)
    what = got.decision
    what = what.strip().lower() if isinstance(what, str) else what
    if not s["blind"]:
        if what == "answer":
            raise _bad(
                file,
                line,
                "decision",
                "`answer` is for a blind line, and this one shows the value",
                "write `accept` or `reject` (with the correct `value`)",
            )
        d = decide(obj, file, line, reviewer)
        return None if d is None else dataclasses.replace(d, sample=s)
    return _blind(obj, got, s, what, file, line, reviewer)


def _blind(
    obj: dict[str, Any],
    got: ReviewLine,
    s: dict[str, Any],
    what: Any,
    file: str,
    line: int,
    reviewer: str | None,
) -> Decision | None:
    """A blind line: no value was shown, so the reviewer answers with one."""
    if got.current is not UNSET:
        raise _bad(
            file,
            line,
            "current",
            "a blind line shows no value",
            "export the sample again with `--blind`, or without it to accept or reject",
        )
    spans = tuple((e.source, e.start, e.end, e.quote) for e in got.evidence)
    if what in ("", None, UNSET):
        return None
    if what not in ("answer", "skip"):
        raise _bad(
            file,
            line,
            "decision",
            f"unknown decision `{show(what)}` for a blind line",
            "write `answer` with the `value` the sources give, `skip`, or leave it empty",
        )
    raw = "" if got.value is UNSET else got.value
    value = raw.strip().upper() if isinstance(raw, str) else raw
    if what == "answer" and value not in VALUES:
        raise _bad(
            file,
            line,
            "value",
            "an answer needs the value the sources give"
            + (f", found `{show(raw)}`" if value not in ("", None) else ""),
            "write `TRUE`, `FALSE` or `UNKNOWN`",
        )
    name = reviewer_of(obj, what, reviewer, file, line)
    value = value if what == "answer" else ""
    rid = None if got.replay is UNSET else got.replay
    # the replay's id is checked before anything is written (`unmask.review.apply`)
    return Decision(got.location, got.atom, "", got.by, spans, what, value, name, line, s, rid)


__all__ = ["CLAIMS", "Reading", "allocate", "draw", "frame", "read_line", "sample_json", "stratum"]
