"""Writing compiled protocols into the cache folder (``unmask.language.cache`` reads them).

Contract: ``store(entry, protocol, filename, limits)`` writes the entry for a protocol
just compiled: its ``unmask.protocol/1`` JSON, the digest of its key, the SHA-256 of its
source text and every span in the order of ``spans``, sealed with the folder's MAC key
(``unmask.plumbing.cachedir.write_sealed``). It writes only when reading the entry back through
``unmask.language.cache`` gives the very protocol, spans included; the file is written under a
private name (``unmask.plumbing.outputs.atomic``) and renamed over the entry, so a concurrent run
never reads half an entry and a link in the entry's place is replaced, never followed. A
process writes at most ``WRITES_PER_PROCESS`` entries and the folder keeps the newest
``MAX_ENTRIES`` (and no temporary file of a killed run), so a batch of many distinct
protocols neither slows down nor fills the disk; a protocol of more than ``MAX_ATOMS``
atoms is not written. Any failure only skips the cache.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from unmask import ir
from unmask.ir.json import protocol_to_json
from unmask.language.cache import ENTRY_PREFIX, ENTRY_SCHEMA, MAX_ENTRY_BYTES, Entry, decode, kids
from unmask.plumbing.cachedir import write_sealed
from unmask.plumbing.limits import Limits

WRITES_PER_PROCESS = 16
MAX_ENTRIES = 256
# Past this many atoms reading an entry back costs about what compiling does (1,000
# claims: some 70 ms to read, 50 ms to compile, three times that to write and verify), so
# a large protocol is not written: the cache is for the start-up of small checks.
MAX_ATOMS = 1_000

_writes = 0


def spans(p: ir.Protocol) -> Iterator[ir.Span | None]:
    """Every span of ``p``, in the order ``unmask.language.cache`` takes them back."""
    yield p.span
    for a in p.atoms:
        yield a.span
    for d in p.definitions:
        yield d.span
        yield from _expr_spans(d.expr)
    for c in p.constraints:
        yield c.span
        yield from _expr_spans(c.expr)
    if p.decision is not None:
        yield from _expr_spans(p.decision)
    for dec in p.decisions:
        yield dec.span
        if dec.expr is not None:
            yield from _expr_spans(dec.expr)
    for r in p.requirements:
        yield r.span
        yield from _expr_spans(r.expr)
        if r.addressed is not None:
            yield from _expr_spans(r.addressed)
    for g in p.grounding:
        yield g.span
        yield from _expr_spans(g.judge)
        yield from _expr_spans(g.context)


def _expr_spans(root: ir.Expr) -> Iterator[ir.Span | None]:
    todo = [root]
    while todo:
        e = todo.pop()
        yield e.span
        todo.extend(reversed(kids(e)))


def _refs_share_their_definition(p: ir.Protocol) -> bool:
    """Every use of a definition means the listed definition itself (so its spans are
    the definition's, which is what a rebuilt use points to)."""
    defs = {d.name: d.expr for d in p.definitions}
    todo = [*defs.values(), *p.exprs()]
    while todo:
        e = todo.pop()
        if e.__class__ is ir.Ref and defs.get(e.name) is not e.body:  # type: ignore[union-attr]
            return False
        todo.extend(kids(e))
    return True


def _encode_spans(p: ir.Protocol, filename: str) -> list[Any] | None:
    out: list[Any] = []
    for s in spans(p):
        if s is None:
            out.append(None)
        elif s.file != filename:
            return None
        else:
            out.append([s.line, s.column, s.end_line, s.end_column, s.start_pos, s.end_pos])
    return out


def store(entry: Entry, protocol: ir.Protocol, filename: str, limits: Limits) -> None:
    """Write the entry for ``protocol``, if this process may still write and reading it
    back gives the same protocol, spans included; any failure only skips the cache."""
    global _writes
    if _writes >= WRITES_PER_PROCESS or len(protocol.atoms) > MAX_ATOMS:
        return
    _writes += 1
    try:
        if not _refs_share_their_definition(protocol):
            return
        encoded = _encode_spans(protocol, filename)
        if encoded is None:
            return
        doc = protocol_to_json(protocol)
        obj = {
            "schema": ENTRY_SCHEMA,
            "key": entry.key,
            "source": entry.source,
            "protocol": doc,
            "spans": encoded,
        }
        data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "surrogatepass"
        )
        if len(data) > MAX_ENTRY_BYTES:
            return
        back = decode(data, entry, filename, limits)
        if (
            back is None
            or protocol_to_json(back) != doc
            or list(spans(back)) != list(spans(protocol))
        ):
            return
        if write_sealed(entry.path, data):
            _prune(entry.path.parent)
    except Exception:  # a cache is never worth a failure: a full disk, a deep expression…
        return


def _prune(folder: Path) -> None:
    """Keep the newest ``MAX_ENTRIES`` entries, and no temporary file of a killed run:
    the folder never grows without bound."""
    from unmask.plumbing.outputs import remove_stale_temps

    remove_stale_temps(folder)
    with contextlib.suppress(OSError):
        entries = [e for e in os.scandir(folder) if e.name.startswith(ENTRY_PREFIX)]
        if len(entries) <= MAX_ENTRIES:
            return
        entries.sort(key=lambda e: e.stat().st_mtime_ns, reverse=True)
        for old in entries[MAX_ENTRIES:]:
            with contextlib.suppress(OSError):
                os.unlink(old.path)
