"""Review decisions written into their replays: one transaction per file.

Contract: ``apply_decisions(decisions, root, limits)`` writes every ``accept``/``reject``
``Decision`` (``unmask.review.queue``) into the replay its ``location`` names, relative to ``root``,
and returns an ``Applied``: how many were written, the refused ones with why, and the new
``record_digest`` of each record it changed. Per file, in the order of first mention:

- the location must lie inside ``root`` (resolved), and the file be a regular file: a link
  at it, a pipe or a device is refused, never followed, opened or waited on;
- the file is locked (``flock`` on the file itself; a file replaced while the lock was
  awaited is opened again), so two applies to one file take turns and neither loses the
  other's decisions, and it is read once, under ``--max-file-bytes``;
- a JSON Lines record is line N counted at ``\\n``, as the audit counts (a lone CR is
  whitespace inside a record, not a line end); before any decision on it is written, its
  digest and replay id are checked against the export's: a record that changed, or another
  one now at that line, is refused (``review-stale``), never written;
- each decision changes only its annotation's object: the new value, ``by``, evidence and
  ``review`` are spliced into the record's text, every other byte kept (an unchanged member
  of the changed annotation keeps its text too, ``review.original`` included), and the
  record is validated after each decision, a decision that would make it invalid refused;
- a decision the record holds already (its annotation is exactly what applying it writes:
  value, ``by``, ``review``) is counted in ``already`` and writes nothing, whatever the
  digest; a record changed since the export only by such decisions of the same review file
  takes the rest when, and only when, its exported bytes are rebuilt exactly (each such
  annotation restored from its ``review.original``, laid out as the export's text may have
  been: the rebuilt digest must be the exported one), else the rest are refused;
- the file is written once (a temporary file renamed over it, never through a link,
  ``unmask.plumbing.outputs``), while the lock is held.

New JSON text goes through ``unmask.review.queue.dumps`` (the output policy: acting characters as
``\\u`` escapes). Imports nothing from ``unmask.commands`` or ``unmask.cli``.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.files import open_regular, read_open
from unmask.plumbing.jsonload import parse_json_bytes, parse_json_document, show
from unmask.plumbing.jsonspans import elements, members, skip_ws
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.outputs import write_bytes
from unmask.review.queue import Decision, _spans, apply_to, dumps, record_digest

try:  # POSIX; elsewhere two applies to one file are not serialised
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

BOM = b"\xef\xbb\xbf"
LOCK_WAIT_S = 120.0  # another apply holding the file longer than this is said, not awaited


@dataclass(slots=True)
class Applied:
    """What ``apply_decisions`` did."""

    applied: int = 0
    already: list[Decision] = field(default_factory=list)  # held already: nothing written
    refused: list[tuple[Decision, UnmaskError]] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)  # location: its record's new digest


def _error(code: Code, message: str, help: str | None = None) -> UnmaskError:
    return UnmaskError([Diagnostic(code, message, help=help)])


def _stale(message: str) -> UnmaskError:
    return _error(
        Code.REVIEW_STALE,
        message,
        "it is not applied: export again and review the replay as it is now",
    )


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def locate(location: str, root: str) -> tuple[str, int | None]:
    """(file, line) of a location: a whole file, or ``FILE:LINE`` of JSON Lines; the file's
    folder resolved, and inside ``root``."""
    whole = os.path.join(root, location)
    file, line = whole, None
    if not (os.path.lexists(whole) and not whole.endswith(".jsonl")):
        name, sep, number = location.rpartition(":")
        jsonl = sep and number.isdigit() and name.endswith(".jsonl")  # as the audit names it
        if not (jsonl and os.path.lexists(os.path.join(root, name))):
            raise _error(
                Code.LOCATION,
                f"cannot find the replay `{show(location)}`",
                "run where the audit or export ran, or give that folder as --root",
            )
        file, line = os.path.join(root, name), int(number)
    folder, base = os.path.split(os.path.abspath(file))
    real = os.path.join(os.path.realpath(folder), base)
    if base in ("", ".", "..") or not _inside(real, os.path.realpath(root)):
        raise _error(
            Code.LOCATION,
            f"`{show(location)}` is outside the folder `{show(root)}`",
            "review writes only inside --root (default the working directory): run where "
            "the export ran, or give the folder the replays are in as --root",
        )
    return real, line


@contextlib.contextmanager
def locked(path: str, name: str, limits: Limits) -> Iterator[int]:
    """A read-only descriptor of the regular file ``path``, locked against other applies
    until the block ends; the file at ``path`` when the lock is taken, not one it replaced."""
    deadline = time.monotonic() + LOCK_WAIT_S
    busy = _error(
        Code.IO,
        f"`{show(name)}` is being changed by another review",
        "wait for it to end, then apply again",
    )
    while True:
        fd = open_regular(path, limits, name, follow=False)
        try:
            if fcntl is not None:
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            raise busy from None
                        time.sleep(0.02)
            held, now = os.fstat(fd), None
            with contextlib.suppress(OSError):
                now = os.lstat(path)
            if now is not None and (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev):
                yield fd
                return
            if time.monotonic() > deadline:  # replaced again and again: said, not chased
                raise busy
        finally:
            os.close(fd)  # releases the lock too


def apply_decisions(
    decisions: list[Decision], root: str = ".", limits: Limits = DEFAULT_LIMITS
) -> Applied:
    """Write the decisions into their files, one transaction per file (see the module)."""
    out = Applied()
    files: dict[str, dict[int | None, list[Decision]]] = {}
    for d in decisions:
        if d.decision == "skip":
            continue
        try:
            file, line = locate(d.location, root)
        except UnmaskError as exc:
            out.refused.append((d, exc))
            continue
        files.setdefault(file, {}).setdefault(line, []).append(d)
    for file, records in files.items():
        first = next(iter(records.values()))[0]
        # messages name the file as the review line does, not as resolved
        name = first.location if None in records else first.location.rpartition(":")[0]
        try:
            _apply_file(file, name, records, limits, out)
        except UnmaskError as exc:
            out.refused += [(d, exc) for ds in records.values() for d in ds]
    out.refused.sort(key=lambda r: r[0].line)
    return out


def _apply_file(
    file: str,
    name: str,
    records: dict[int | None, list[Decision]],
    limits: Limits,
    out: Applied,
) -> None:
    """One file's transaction; what it did is added to ``out`` only once it is written."""
    mine = Applied()
    with locked(file, name, limits) as fd:
        data = read_open(fd, limits, name)
        if None in records:  # the file is one replay
            new = _apply_record(data, None, file, records[None], limits, mine)
        else:
            lines = data.split(b"\n")  # the audit's numbering: records end at `\n` only
            for n, ds in records.items():
                assert n is not None  # a file with a `None` key took the branch above
                if not (1 <= n <= len(lines)) or not lines[n - 1].strip():
                    err = _stale(f"there is no replay at line {n} of `{show(name)}` any more")
                    mine.refused += [(d, err) for d in ds]
                    continue
                raw = lines[n - 1]
                body = raw.rstrip(b"\r")
                lines[n - 1] = _apply_record(body, n, file, ds, limits, mine) + raw[len(body) :]
            new = b"\n".join(lines)
        if mine.applied:
            write_bytes(file, new, follow=False)  # once per file, the lock still held
    out.applied += mine.applied
    out.already += mine.already
    out.refused += mine.refused
    out.digests.update(mine.digests)


def _apply_record(
    record: bytes,
    line: int | None,
    file: str,
    ds: list[Decision],
    limits: Limits,
    out: Applied,
) -> bytes:
    """The record with every decision it accepts spliced in (counted in ``out``)."""
    digest = record_digest(record)
    where = f"{file}:{line}" if line is not None else file
    bom = BOM if record.startswith(BOM) else b""
    try:
        doc, text = parse_json_document(record, file, limits, first_line=line)
    except UnmaskError as exc:
        out.refused += [(d, _changed(d) if d.digest not in (None, digest) else exc) for d in ds]
        return record
    rid = doc.get("id") if isinstance(doc, dict) else None
    # held already: written by an earlier run of this file (or the same decision from
    # another), so nothing is written and nothing can be harmed, whatever the digest
    held = [d for d in ds if (d.replay is None or d.replay == rid) and _holds(doc, d)]
    out.already += held
    rebuilt: set[str] | None = None  # digests of the record as exported, rebuilt from `held`
    todo = []
    for d in ds:
        if any(d is h for h in held):
            continue
        if d.digest is None or d.digest == digest:
            todo.append(d)
            continue
        if held and rebuilt is None:
            rebuilt = _exported_digests(text, bom, doc, held)
        if rebuilt and d.digest in rebuilt:  # changed only by decisions of this file
            todo.append(d)
        elif held:
            out.refused.append((d, _partly(d)))
        else:
            out.refused.append((d, _changed(d)))
    if not todo:
        return record
    done = 0
    for d in todo:
        if d.replay is not None and rid != d.replay:
            found = f"replay `{show(rid)}`" if isinstance(rid, str) else "another replay"
            out.refused.append(
                (
                    d,
                    _stale(
                        f"`{show(d.location)}` holds {found}, not the exported "
                        f"`{show(d.replay)}`: a record was inserted or moved since the export"
                    ),
                )
            )
            continue
        try:
            text = _decide(text, d, where, file, line, limits)
            done += 1
        except UnmaskError as exc:
            out.refused.append((d, exc))
    if not done:
        return record
    new = bom + text.encode("utf-8", "surrogatepass")
    out.applied += done
    for d in todo:
        out.digests[d.location] = record_digest(new)
    return new


def _changed(d: Decision) -> UnmaskError:
    return _stale(f"the replay at `{show(d.location)}` changed since the export")


def _partly(d: Decision) -> UnmaskError:
    return _error(
        Code.REVIEW_STALE,
        f"the replay at `{show(d.location)}` holds decisions of this review file already, "
        "and it cannot be shown that nothing else in it changed since the export",
        "it is not applied: export again to review the rest (the decisions already in it "
        "are not asked again)",
    )


def _holds(doc: Any, d: Decision) -> bool:
    """Whether the annotation of ``d`` holds exactly what applying ``d`` writes into it:
    the value, ``by`` as the reviewer's, and a ``review`` of this decision whose
    ``original`` is what the line says was there (a blind line never showed the value)."""
    anns = doc.get("annotations") if isinstance(doc, dict) else None
    found = [a for a in anns or () if isinstance(a, dict) and a.get("atom") == d.atom]
    a = found[0] if len(found) == 1 else None
    review = a.get("review") if a is not None else None
    original = review.get("original") if isinstance(review, dict) else None
    if a is None or not isinstance(review, dict) or not isinstance(original, dict):
        return False
    keys = {"decision", "original"} | ({"sample"} if d.sample is not None else set())
    written = () if d.value == "UNKNOWN" else d.evidence
    return (
        set(review) == keys
        and review.get("decision") == d.decision
        and (d.sample is None or review.get("sample") == d.sample)
        and a.get("value") == d.value
        and a.get("by") == {"kind": "human", "name": d.reviewer, "reviewed": True}
        and _spans(a.get("evidence", [])) == written
        and {"value", "by"} <= set(original) <= {"value", "by", "evidence", "explanation"}
        and (d.decision == "answer" or original.get("value") == d.current)
        and original.get("by") == d.by
        and _spans(original.get("evidence", [])) == d.evidence
    )


def _exported_digests(text: str, bom: bytes, doc: Any, held: list[Decision]) -> set[str]:
    """The digests of ``text`` with each annotation of ``held`` restored from its
    ``review.original``, under each layout its object may have had before it was replaced
    (``_emit`` keeps member values' text but not the object's own spacing): JSON on one
    line with ``, ``/``: `` or ``,``/``:`` between members, or indented as the line it
    starts on. A digest that is the exported one proves the rest of the record unchanged."""
    try:
        restored = _restored(text, doc, held)
    except (KeyError, StopIteration, IndexError, ValueError):  # odd text: not shown unchanged
        return set()
    # one line: as `json.dumps`, compact (no indent unit)
    layouts: list[tuple[str | None, str, str]] = [(None, ", ", ": "), (None, ",", ":")]
    units = ("  ", "    ", "\t", " ")
    layouts += [(unit, nl, ": ") for nl in (",\n", ",\r\n") for unit in units]  # indented
    out = set()
    for unit, sep, colon in layouts:
        new = text
        for s, e, was, lead in sorted(restored, key=lambda r: -r[0]):
            if unit is None:
                obj = "{" + sep.join(f"{dumps(k)}{colon}{raw}" for k, raw in was) + "}"
            else:
                body = sep.join(f"{lead}{unit}{dumps(k)}{colon}{raw}" for k, raw in was)
                obj = "{" + sep[1:] + body + sep[1:] + lead + "}"
            new = new[:s] + obj + new[e:]
        out.add(record_digest(bom + new.encode("utf-8", "surrogatepass")))
    return out


def _restored(text: str, doc: Any, held: list[Decision]) -> list:
    """(start, end, members as they were, the indent of its line) of each annotation of
    ``held``: its members' text, value, ``by`` and a decided UNKNOWN's evidence taken back
    from ``review.original``, ``review`` (and evidence the decision added) left out."""
    anns = doc["annotations"]
    index = [
        next(i for i, a in enumerate(anns) if isinstance(a, dict) and a.get("atom") == d.atom)
        for d in held
    ]
    spans = {k: (s, e) for k, s, e in members(text, skip_ws(text, 0))}
    at = elements(text, spans["annotations"][0])
    restored = []  # (start, end, [(key, text)], line indent) of each held annotation
    for i, d in dict(zip(index, held, strict=True)).items():  # an atom once, if two lines
        s, e = at[i]
        mine = [(k, text[ks:ke]) for k, ks, ke in members(text, s)]
        review = {k: ks for k, ks, _ in members(text, s)}["review"]
        orig_at = {k: ks for k, ks, _ in members(text, review)}["original"]
        orig = {k: text[ks:ke] for k, ks, ke in members(text, orig_at)}
        was = []
        for key, raw in mine:
            if key == "review" or (key == "evidence" and key not in orig):
                continue  # added by the decision
            if key in ("value", "by") or (key == "evidence" and d.value == "UNKNOWN"):
                raw = orig[key]
            was.append((key, raw))
        lead = text[text.rfind("\n", 0, s) + 1 : s]
        restored.append((s, e, was, "" if lead.strip() else lead))
    return restored


def _decide(text: str, d: Decision, where: str, file: str, line: int | None, limits: Limits):
    """``text`` with decision ``d`` spliced into its annotation, validated; else an error."""
    from unmask.replay.load import replay_from_obj

    doc = parse_json_bytes(text.encode("utf-8", "surrogatepass"), file, limits, line)
    anns = doc.get("annotations") if isinstance(doc, dict) else None
    index = [i for i, a in enumerate(anns or ()) if isinstance(a, dict) and a.get("atom") == d.atom]
    top = skip_ws(text, 0)
    spans = dict((k, (s, e)) for k, s, e in members(text, top)) if index else {}
    ann_span = None
    raw: dict[int, str] = {}
    if len(index) == 1 and "annotations" in spans:
        ann_span = elements(text, spans["annotations"][0])[index[0]]
        now = anns[index[0]]  # type: ignore[index]
        for key, s, e in members(text, ann_span[0]):
            raw[id(now[key])] = text[s:e]  # an unchanged value keeps its text, and the dict
            # keeps these objects alive (ids stay theirs) until the new text is made
    apply_to(doc, d)  # refuses an annotation that is not the exported one
    assert ann_span is not None
    new = text[: ann_span[0]] + _emit(anns[index[0]], raw) + text[ann_span[1] :]  # type: ignore[index]
    checked = parse_json_bytes(new.encode("utf-8", "surrogatepass"), file, limits, line)
    replay_from_obj(checked, file, Path(file).parent, limits, line=line)
    return new


def _emit(value: Any, raw: dict[int, str]) -> str:
    """``value`` as JSON text: a value the old annotation held, as it was written there."""
    kept = raw.get(id(value))
    if kept is not None:
        return kept
    if isinstance(value, dict):
        body = ", ".join(f"{dumps(k)}: {_emit(v, raw)}" for k, v in value.items())
        return "{" + body + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_emit(v, raw) for v in value) + "]"
    return dumps(value)


__all__ = ["Applied", "apply_decisions", "locate", "locked"]
