"""Each reader's precision, measured on sampled reviews: the calibration file and its use.

Contract:
- a *reader* is an unreviewed annotation's ``by`` (``kind``, ``name``, ``version``, absent =
  ``""``) with the atom's family (``backs`` for ``backs(p1, c2)``, a scalar atom's own name:
  ``unmask.plumbing.names.split_applied``); ``reader_of(by, atom)`` gives that key;
- ``tally(docs)`` counts, from replay documents, the annotations whose ``review`` has a
  ``sample`` (a uniform draw, ``unmask review --sample``) and a decision: *upheld* when the
  annotation's ``value`` equals ``review.original.value``; reviews without ``sample`` are
  not counted (a queue ranked by impact biases an estimate); a sampled review that is not
  shaped as ``unmask review --apply`` writes it is a diagnostic at its JSON path;
- ``Calibration`` is the file ``unmask.calibration/1`` (``docs/calibration.md``): ``data``,
  ``protocols`` and one ``Row`` per reader, precision with its 95% Wilson score interval;
  ``dumps`` is canonical (readers sorted, numbers to 3 decimals: same input, same bytes);
  ``read(path)`` reads one back as untrusted input, bounded, refusing it with one
  diagnostic (code ``calibration``, at its JSON path) whatever is wrong, a row whose figures
  do not follow from its counts included;
- ``Trust(calibration, threshold)`` gives a check's ``Standing`` from the readers it rests
  on: ``confirmed`` (none), ``trusted`` (every one measured, the weakest interval's lower
  bound at least ``threshold``) or ``to_review``, with the weakest reader and its row.
Nothing here reads a report: the formats and the audit hand it readers.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import Any

import msgspec

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.jsonload import read_json_file
from unmask.plumbing.jsonreader import index_path, join_path, kind, show
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.names import split_applied
from unmask.review.format import (
    CALIBRATION_SCHEMA,
    CalibrationJson,
    ProtocolRow,
    ReaderRow,
    read_calibration,
)

SCHEMA = CALIBRATION_SCHEMA
LEVEL = 0.95
Z = 1.959963984540054  # the standard normal quantile of 0.975: a two-sided 95% interval
DEFAULT_TRUST = 0.9
LEVELS = ("confirmed", "trusted", "to_review")  # as JSON writes them; words: WORDS
WORDS = {"confirmed": "confirmed", "trusted": "trusted", "to_review": "to review"}
READER_KEYS = ("kind", "name", "version", "family")
ROW_KEYS = (*READER_KEYS, "reviewed", "upheld", "precision", "interval", "level")
DECISIONS = ("accept", "reject", "answer")  # what `review --apply` writes (skip writes nothing)
_HELP = "write the file with `unmask calibrate`"

Reader = tuple[str, str, str, str]  # kind, name, version, family
# a reading the checker counted as unreviewed but no explanation names: never measured
UNNAMED: Reader = ("", "", "", "")


def family(atom: str) -> str:
    """The family of a ground atom (``backs`` of ``backs(p1, c2)``), a scalar's own name."""
    split = split_applied(atom)
    return atom if split is None else split[0]


def reader_of(by: Any, atom: str) -> Reader:
    """The reader key of an annotation: its ``by`` (data or JSON) and the atom's family."""
    if isinstance(by, Mapping):
        fields = [by.get(k, "") for k in ("kind", "name", "version")]
        fields = [f if isinstance(f, str) else "" for f in fields]
    else:
        fields = [by.kind, by.name or "", getattr(by, "version", "") or ""]
    return (fields[0], fields[1], fields[2], family(atom))


def needs_measure(by: Any) -> bool:
    """Whether a reading's standing rests on a measure: unreviewed, or derived from the
    gold label (a person's review does not make a restated gold label independent)."""
    if by is None:
        return False  # a reviewed human annotation
    if isinstance(by, Mapping):
        k = by.get("kind")
        flag = by.get("reviewed")
        reviewed = flag if isinstance(flag, bool) else k in ("human", "gold")
        return k == "gold" or not reviewed
    return by.gold_derived or not by.reviewed


def readers_of(parts: Iterable[tuple[Any, str]], counted: bool) -> tuple[Reader, ...]:
    """The readers, each once and sorted, of the (``by``, atom) readings a check rests on
    that need a measure; ``counted``: the checker counted some (``unreviewed`` or
    ``gold_derived``), so if none is named here one is ``UNNAMED``, never measured."""
    out = {reader_of(by, atom) for by, atom in parts if needs_measure(by)}
    if not out and counted:
        out.add(UNNAMED)
    return tuple(sorted(out))


def reader_words(reader: Reader) -> str:
    """``rule wice-rules/2 (version 3) on `cites```: a reader as every format names it."""
    kind_, name, version, fam = reader
    if reader == UNNAMED:
        return "an unnamed reading"
    who = " ".join(x for x in (kind_, name) if x) + (f" (version {version})" if version else "")
    return f"{who} on `{fam}`"


def wilson(upheld: int, reviewed: int, z: float = Z) -> tuple[float, float]:
    """The Wilson score interval of ``upheld`` successes in ``reviewed`` trials."""
    if reviewed <= 0:
        return (0.0, 1.0)
    p = upheld / reviewed
    d = 1 + z * z / reviewed
    centre = (p + z * z / (2 * reviewed)) / d
    half = z / d * math.sqrt(p * (1 - p) / reviewed + z * z / (4 * reviewed * reviewed))
    # at 0 or all upheld one end is exact; rounding error must not move it
    lo = 0.0 if upheld == 0 else max(0.0, centre - half)
    hi = 1.0 if upheld == reviewed else min(1.0, centre + half)
    return (lo, hi)


def _r3(x: float) -> float:
    return round(x + 0.0, 3)


@frozen
class Row:
    """One reader's measure: how many of its sampled readings were reviewed and upheld."""

    reader: Reader
    reviewed: int
    upheld: int

    @property
    def precision(self) -> float:
        return self.upheld / self.reviewed

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.upheld, self.reviewed)

    @property
    def lower(self) -> float:
        """The interval's lower bound as the file writes it (what ``--trust`` compares)."""
        return _r3(self.interval[0])

    def figures(self) -> dict[str, Any]:
        lo, hi = self.interval
        return {
            "reviewed": self.reviewed,
            "upheld": self.upheld,
            "precision": _r3(self.precision),
            "interval": [_r3(lo), _r3(hi)],
        }

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self.as_struct())
        return out

    def as_struct(self) -> ReaderRow:
        f = self.figures()
        kind, name, version, family = self.reader
        return ReaderRow(
            kind=kind,
            name=name,
            version=version,
            family=family,
            reviewed=self.reviewed,
            upheld=self.upheld,
            precision=f["precision"],
            interval=f["interval"],
            level=LEVEL,
        )

    def words(self) -> str:
        f = self.figures()
        lo, hi = f["interval"]
        return f"precision {f['precision']:.3f} (95% {lo:.3f}–{hi:.3f}, {self.reviewed} reviewed)"


@frozen
class Calibration:
    """A calibration file: which data, which protocols, one row per reader, sorted."""

    data: str
    protocols: tuple[tuple[str, str], ...]  # (name, digest), sorted
    rows: tuple[Row, ...]
    by_reader: Mapping[Reader, Row] = field(default_factory=dict, compare=False, repr=False)

    def row(self, reader: Reader) -> Row | None:
        return self.by_reader.get(reader)

    def to_json(self) -> dict[str, Any]:
        doc = CalibrationJson(
            schema=CALIBRATION_SCHEMA,
            data=self.data,
            protocols=[ProtocolRow(name=n, digest=d) for n, d in self.protocols],
            readers=[r.as_struct() for r in self.rows],
        )
        out: dict[str, Any] = msgspec.to_builtins(doc)
        return out

    def dumps(self) -> str:
        """The canonical text: same calibration, same bytes; under the output policy, as
        every JSON document is (a reader's name from a replay may hold ESC, a bidirectional
        override or a lone surrogate, which no UTF-8 file holds)."""
        from unmask.plumbing.safe import finish

        return finish("json", json.dumps(self.to_json(), ensure_ascii=False, indent=2)) + "\n"

    def measured_under(self, name: str, digest: str) -> bool:
        """Whether a replay of protocol ``name`` (text digest ``digest``) is of a protocol
        this calibration was measured under: same name and, when both are known, digest."""
        return any(n == name and (not d or not digest or d == digest) for n, d in self.protocols)


def make(data: str, protocols: Iterable[tuple[str, str]], counts: Mapping[Reader, tuple[int, int]]):
    """A ``Calibration`` of (reviewed, upheld) counts per reader, in canonical order."""
    rows = tuple(Row(k, n, u) for k, (n, u) in sorted(counts.items()) if n > 0)
    return Calibration(data, tuple(sorted(set(protocols))), rows, {r.reader: r for r in rows})


# --- counting sampled reviews -------------------------------------------------------------


def tally(doc: Any, where: str, counts: Counter, problems: list[Diagnostic]) -> int:
    """Add the sampled reviews of one replay document to ``counts`` (``reader:reviewed`` and
    ``reader:upheld`` keys: plain sums, so the order of documents does not matter); a
    malformed one is a diagnostic naming ``where`` and its JSON path. Returns how many."""
    anns = doc.get("annotations") if isinstance(doc, dict) else None
    n = 0
    for i, a in enumerate(anns if isinstance(anns, list) else ()):
        review = a.get("review") if isinstance(a, dict) else None
        if not isinstance(review, dict) or "sample" not in review:
            continue
        path = join_path(index_path("annotations", i), "review")
        got = _sampled(a, review, path)
        if isinstance(got, Diagnostic):
            problems.append(
                Diagnostic(got.code, got.message, path=got.path, file=where, help=got.help)
            )
            continue
        if got is None:
            continue
        reader, upheld = got
        counts[(reader, "reviewed")] += 1
        counts[(reader, "upheld")] += upheld
        n += 1
    return n


def _sampled(a: dict, review: dict, path: str) -> tuple[Reader, bool] | Diagnostic | None:
    """(reader, upheld) of one sampled review, None when it decided nothing, or why not."""

    def bad(at: str, message: str) -> Diagnostic:
        help_ = "a sampled review is written by `unmask review --apply`: leave it as it wrote it"
        return Diagnostic(Code.CALIBRATION_INPUT, message, path=at, help=help_)

    if not isinstance(review["sample"], dict):
        return bad(join_path(path, "sample"), f"expected an object, found {kind(review['sample'])}")
    decision = review.get("decision")
    if decision in ("", None, "skip"):
        return None
    if decision not in DECISIONS:
        return bad(join_path(path, "decision"), f"unknown decision `{show(decision)}`")
    original = review.get("original")
    if not isinstance(original, dict):
        return bad(join_path(path, "original"), f"expected an object, found {kind(original)}")
    value, by = original.get("value"), original.get("by")
    if not isinstance(value, str):
        return bad(join_path(path, "original.value"), f"expected a string, found {kind(value)}")
    if not isinstance(by, dict) or not isinstance(by.get("kind"), str):
        return bad(join_path(path, "original.by"), "expected the original reader's `by`")
    atom = a.get("atom")
    if not isinstance(atom, str) or not isinstance(a.get("value"), str):
        return bad(path, "the annotation has no `atom` and `value` strings")
    return reader_of(by, atom), a["value"] == value


def counted(counts: Counter) -> dict[Reader, tuple[int, int]]:
    """``tally``'s counter as (reviewed, upheld) per reader."""
    readers = {k[0] for k in counts}
    return {r: (counts[(r, "reviewed")], counts[(r, "upheld")]) for r in readers}


def digest_text(text: str) -> str:
    """``sha256:…`` of a protocol's text, as ``--protocol`` digests it
    (``unmask.replay.recheck``)."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# --- reading a calibration file back --------------------------------------------------------


# the largest count a float holds exactly (2^53): the figures of a larger one would be
# rounded, and one past about 10^308 no float holds at all
MAX_COUNT = 2**53


class _Bad(Exception):
    def __init__(self, path: str, message: str, help: str | None = _HELP) -> None:
        self.path, self.message, self.help = path, message, help


def read(path: str, limits: Limits = DEFAULT_LIMITS) -> Calibration:
    """A calibration file, or ``UnmaskError`` with one diagnostic (exit status 4)."""
    obj = read_json_file(path, limits)  # bounded; its own one diagnostic
    try:
        return from_json(obj)
    except _Bad as bad:
        raise UnmaskError(
            [
                Diagnostic(
                    Code.CALIBRATION, bad.message, path=bad.path or "$", file=path, help=bad.help
                )
            ]
        ) from None


def from_json(obj: Any) -> Calibration:
    if not isinstance(obj, dict):
        raise _Bad("$", f"expected a calibration object, found {kind(obj)}")
    if obj.get("schema") != SCHEMA:
        raise _Bad("schema", f'not a calibration file: expected `"schema": "{SCHEMA}"`')
    doc, problem = read_calibration(obj)
    if doc is None:
        assert problem is not None
        raise _Bad(problem.path or "$", problem.message)
    protocols = [(p.name, p.digest) for p in doc.protocols]
    rows: dict[Reader, Row] = {}
    for i, r in enumerate(doc.readers):
        at = index_path("readers", i)
        row = _row(r, at)
        if row.reader in rows:
            raise _Bad(at, f"a second row for {show(reader_words(row.reader), 120)}")
        rows[row.reader] = row
    return make(doc.data, protocols, {k: (r.reviewed, r.upheld) for k, r in rows.items()})


def _row(r: ReaderRow, at: str) -> Row:
    """A row whose fields have their types: its counts and the figures they give."""
    for key in ("reviewed", "upheld"):
        if getattr(r, key) < 0:
            raise _Bad(join_path(at, key), "expected a count, a whole number ≥ 0, found a number")
        if getattr(r, key) > MAX_COUNT:  # past it a count is no float: no precision to give
            message = f"expected a count of at most {MAX_COUNT:,}, found a larger number"
            raise _Bad(join_path(at, key), message)
    reviewed, upheld = r.reviewed, r.upheld
    if reviewed == 0:
        raise _Bad(join_path(at, "reviewed"), "a reader with no reviewed reading has no row")
    if upheld > reviewed:
        raise _Bad(join_path(at, "upheld"), f"{upheld} upheld of {reviewed} reviewed")
    row = Row((r.kind, r.name, r.version, r.family), reviewed, upheld)
    if r.level != LEVEL:
        raise _Bad(join_path(at, "level"), f"expected the interval's level, {LEVEL}")
    # an edited figure must not make a reader look better than its counts say
    for key, want in row.figures().items():
        if getattr(r, key) != want:
            raise _Bad(
                join_path(at, key),
                f"`{key}` is not what {upheld} upheld of {reviewed} reviewed give (`{show(want)}`)",
                help="the figures follow from the counts: write the file again with "
                "`unmask calibrate`",
            )
    return row


# --- the trust of a check -------------------------------------------------------------------


@frozen
class Standing:
    """A check's standing: its level, and the weakest reader it rests on with its row
    (None: unmeasured; no reader at all for a confirmed check)."""

    level: str  # one of LEVELS
    weakest: Reader | None = None
    row: Row | None = None

    @property
    def word(self) -> str:
        return WORDS[self.level]

    def words(self) -> str:
        """``trusted: weakest reading rule r/1 (cites), precision 0.925 (95% 0.801–0.974, 40
        reviewed)``, or ``… unmeasured``; ``confirmed: rests on reviewed readings only``."""
        if self.weakest is None:
            return f"{self.word}: rests on reviewed readings only"
        measure = "unmeasured" if self.row is None else self.row.words()
        return f"{self.word}: weakest reading {reader_words(self.weakest)}, {measure}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"level": self.level}
        if self.weakest is not None:
            w: dict[str, object] = dict(zip(READER_KEYS, self.weakest, strict=True))
            w.update(self.row.figures() if self.row is not None else {"measured": False})
            out["weakest"] = w
        return out


@frozen
class Trust:
    """A calibration and the lower bound a reader's precision must reach to be trusted."""

    calibration: Calibration
    threshold: float = DEFAULT_TRUST

    def standing(self, readers: Iterable[Reader]) -> Standing:
        """The standing of a check resting on these readers (the unreviewed ones)."""
        keys = sorted(set(readers))
        if not keys:
            return Standing("confirmed")
        rows = [(k, self.calibration.row(k)) for k in keys]
        unmeasured = [k for k, r in rows if r is None]
        if unmeasured:
            return Standing("to_review", unmeasured[0])
        k, row = min(rows, key=lambda kr: (kr[1].lower, kr[0]))  # type: ignore[union-attr]
        level = "trusted" if row.lower >= self.threshold else "to_review"  # type: ignore[union-attr]
        return Standing(level, k, row)

    def header_json(self) -> dict[str, Any]:
        """What a report says of the calibration it was read with."""
        return {"data": self.calibration.data, "trust": self.threshold}


__all__ = [
    "DEFAULT_TRUST",
    "LEVELS",
    "SCHEMA",
    "UNNAMED",
    "Calibration",
    "Reader",
    "Row",
    "Standing",
    "Trust",
    "counted",
    "digest_text",
    "family",
    "make",
    "needs_measure",
    "read",
    "reader_of",
    "reader_words",
    "tally",
    "wilson",
]
