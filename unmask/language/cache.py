"""Compiled protocols kept in the user's cache folder between runs: their keys and reading.

Contract: ``entry(text, domains, limits)`` names the entry of a ``.proto`` text (or None when
there is no trusted cache folder, ``unmask.plumbing.cachedir.trusted_dir``): a file named by a
digest of the text, the domains, the limits, Python's version, and of each module and grammar
file that compiling reads (and lark's `__init__`, which holds its version), where it is, its
size and its time of change: what Python trusts to tell stale bytecode from fresh. ``load(entry,
filename, limits)`` returns the protocol it holds, spans included and given the file name asked
for, or None: an entry is read only as a sealed file (``unmask.plumbing.cachedir.read_sealed``:
a private regular file whose MAC under the folder's key holds), must record the full digest of
its key and the digest of the very text being compiled (BLAKE2b, as the seal: no OpenSSL to
load), and is decoded into the IR's structs (``unmask.ir.format``) and read by the protocol IR
reader (``unmask.ir.json_reader``), so a hit imports neither lark nor the compiler. An entry
that fails any of this is a miss: compiled again, and replaced
(``unmask.language.compile_cache.compile_cached`` puts the two together,
``unmask.language.cache_writer`` writes). The file name is not in the key: compiling puts it in
the spans and nowhere else, so an entry is shared by every copy of the same text.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import msgspec

from unmask import ir
from unmask.ir.format import ProtocolDoc
from unmask.plumbing.cachedir import CACHE_ENV as CACHE_ENV  # the folder's names, also read here
from unmask.plumbing.cachedir import blake2b, read_sealed, trusted_dir
from unmask.plumbing.cachedir import cache_dir as cache_dir
from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import Limits

ENTRY_SCHEMA = "unmask.compiled/3"
ENTRY_PREFIX = "protocol-"
MAX_ENTRY_BYTES = 4 * 1024 * 1024  # a larger file is not an entry this module wrote
# what compiling a `.proto` text reads, and how an entry is written and read back: a
# change to any of them changes every key. Paths are under the package root (`unmask/`).
# Every module of the language and the IR is listed (a test holds the list to the folders:
# a compiler pass left out would be served stale entries)
_MODULES = (
    *(
        f"language/{m}"
        for m in (
            "__init__",
            "ast",
            "cache",
            "cache_writer",
            "compile_base",
            "compile_cache",
            "compile_decisions",
            "compile_decls",
            "compile_exprs",
            "compiler",
            "formatter",
            "parser",
            "parser_tables",
            "syntaxtree",
        )
    ),
    *(
        f"ir/{m}"
        for m in (
            "__init__",
            "atoms",
            "format",
            "json",
            "json_convert",
            "json_reader",
            "nodes",
            "partial",
            "text",
        )
    ),
    *(
        f"plumbing/{m}"
        for m in (
            "cachedir",
            "diagnostics",
            "jsonreader",
            "limits",
            "names",
            "span",
            "structs",
        )
    ),
)

_END = object()


# --- keys ---------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _fingerprint() -> str | None:
    """A digest of everything besides the input that compiling depends on, or None when
    some of it cannot be read (then nothing is cached)."""
    import importlib.util

    h = blake2b(digest_size=32)
    try:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        files = [os.path.join(root, f"{m}.py") for m in _MODULES]
        grammar = importlib.util.find_spec("unmask.grammar")
        lark = importlib.util.find_spec("lark")
        if grammar is None or lark is None or lark.origin is None:
            return None
        (folder,) = list(grammar.submodule_search_locations or ())
        # the grammar, the tables shipped for it, and lark's `__init__`, which holds its version
        files += [os.path.join(folder, n) for n in ("unmask.lark", "unmask.tables.json")]
        files.append(lark.origin)
        _update(h, ENTRY_SCHEMA)
        _update(h, sys.version)
        for f in files:
            # each file as Python itself tells a stale module from a fresh one (its size
            # and time of change), and where it is (another copy, a file replaced): reading
            # and hashing the bytes of all 30 cost a warm check about 2 ms, 8% of its
            # start-up, and an edit Python's bytecode check misses would run stale code
            # anyway
            st = os.stat(f)
            _update(h, f"{f}\0{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
    except (OSError, ValueError, ImportError):
        return None
    return h.hexdigest()


def _update(h: Any, part: str | bytes) -> None:
    data = part if isinstance(part, bytes) else part.encode("utf-8", "surrogatepass")
    h.update(len(data).to_bytes(8, "big"))
    h.update(data)


@frozen
class Entry:
    """Where the entry of one compile lives and what it must record."""

    path: Path
    key: str  # the digest of everything compiling reads
    source: str  # the digest (BLAKE2b) of the `.proto` text alone


def entry(
    text: str, domains: tuple[tuple[str, tuple[str, ...]], ...], limits: Limits
) -> Entry | None:
    """The entry of this compile, or None when there is no trusted cache folder."""
    folder = trusted_dir()
    fingerprint = _fingerprint() if folder is not None else None
    if folder is None or fingerprint is None:
        return None
    h = blake2b(digest_size=32)
    for part in (fingerprint, repr(domains), repr(limits), text):
        _update(h, part)
    digest = h.hexdigest()
    source = blake2b(text.encode("utf-8", "surrogatepass"), digest_size=32).hexdigest()
    return Entry(folder / f"{ENTRY_PREFIX}{digest[:32]}.json", digest, source)


# --- reading --------------------------------------------------------------------------------


def load(e: Entry, filename: str, limits: Limits) -> ir.Protocol | None:
    """The protocol in the entry ``e``, or None when there is none or it is not usable
    (then it will be rebuilt and replaced)."""
    data = read_sealed(e.path, MAX_ENTRY_BYTES)
    return None if data is None else decode(data, e, filename, limits)


class _Stored(msgspec.Struct):
    """An entry as ``unmask.language.cache_writer`` writes it: the protocol in the IR's
    structs (``unmask.ir.format``), decoded with them in one pass."""

    schema: str
    key: str
    source: str
    protocol: ProtocolDoc
    spans: list[Any]


def decode(data: bytes | str, e: Entry, filename: str, limits: Limits) -> ir.Protocol | None:
    """The protocol of an entry's text, or None when it is not the entry ``e``: another
    key, or compiled from another source text."""
    from unmask.ir.json_reader import protocol_from_doc

    try:
        stored = msgspec.json.decode(data, type=_Stored)
        if not (
            stored.schema == ENTRY_SCHEMA and stored.key == e.key and stored.source == e.source
        ):
            return None
        protocol = protocol_from_doc(stored.protocol, "protocol", None, limits)
        spans = iter(stored.spans)
        out = _with_spans(protocol, spans, filename)
        if next(spans, _END) is not _END:  # spans left over: not this protocol's
            return None
        return out
    except Exception:  # whatever is wrong with an entry, compiling is the answer
        return None


def _span(raw: Any, filename: str) -> ir.Span | None:
    if raw is None:
        return None
    if not (isinstance(raw, list) and len(raw) == 6 and all(type(v) is int for v in raw)):
        raise ValueError("not a span")
    return ir.Span(filename, *raw)


def _with_spans(p: ir.Protocol, spans: Iterator[Any], filename: str) -> ir.Protocol:
    """``p`` rebuilt with the spans of ``spans``, taken in the order in which
    ``unmask.language.cache_writer.spans`` lists them."""

    def take() -> ir.Span | None:
        return _span(next(spans), filename)

    rebuild = _Rebuild(take)
    span = take()
    atoms = tuple(ir.AtomDecl(a.name, a.role, a.description, take()) for a in p.atoms)
    definitions = []
    for d in p.definitions:
        s = take()
        e = rebuild(d.expr)
        rebuild.defs[d.name] = e
        definitions.append(ir.Definition(d.name, e, s))
    constraints = []
    for c in p.constraints:
        s = take()
        constraints.append(ir.Constraint(c.name, rebuild(c.expr), s))
    decision = None if p.decision is None else rebuild(p.decision)
    decisions = []
    for dec in p.decisions:
        s = take()
        decisions.append(ir.Decision(dec.label, None if dec.expr is None else rebuild(dec.expr), s))
    requirements = []
    for r in p.requirements:
        s = take()
        e = rebuild(r.expr)
        addressed = None if r.addressed is None else rebuild(r.addressed)
        requirements.append(ir.Requirement(r.id, r.description, e, addressed, s))
    grounding = []
    for g in p.grounding:
        s = take()
        judge = rebuild(g.judge)
        context = rebuild(g.context)
        grounding.append(ir.GroundPair(judge, context, s, g.direction))
    return ir.Protocol(
        p.name,
        p.text,
        atoms,
        tuple(constraints),
        decision,
        tuple(requirements),
        tuple(grounding),
        span,
        p.labels,
        tuple(decisions),
        tuple(definitions),
        p.first_match,
    )


def kids(e: ir.Expr) -> tuple[ir.Expr, ...]:
    # a use of a definition is a leaf here: its body is the definition's, rebuilt once
    return () if e.__class__ is ir.Ref else ir.children(e)


class _Rebuild:
    """Expressions rebuilt with the spans taken from an entry: each node takes the next
    span in pre-order (``kids``), then ``_WITH_SPANS`` rebuilds the tree over the IR's
    fold. One memo serves the whole protocol, so a use of a definition finds its body
    already rebuilt."""

    def __init__(self, take: Any) -> None:
        self.take = take
        self.spans: dict[int, ir.Span | None] = {}
        self.defs: dict[str, ir.Expr] = {}
        self.memo: ir.Memo = {}

    def __call__(self, root: ir.Expr) -> ir.Expr:
        todo = [root]  # iterative: expressions may be deep
        while todo:
            e = todo.pop()
            self.spans[id(e)] = self.take()
            todo.extend(reversed(kids(e)))
        return _WITH_SPANS(root, self, self.memo)


# one entry per kind of node, checked when this module is imported: a new kind of node
# fails here at once, not when some cached protocol happens to use it
_WITH_SPANS: ir.Table[ir.Expr] = ir.Table(
    "cache span",
    {
        ir.Const: lambda c, e, _: ir.Const(e.value, c.spans[id(e)]),
        ir.Atom: lambda c, e, _: ir.Atom(e.name, c.spans[id(e)]),
        ir.Ref: lambda c, e, _: ir.Ref(e.name, c.defs[e.name], c.spans[id(e)]),
        ir.Not: lambda c, e, v: ir.Not(v[0], c.spans[id(e)]),
        ir.Nary: lambda c, e, v: ir.Nary(e.op, tuple(v), c.spans[id(e)]),
        ir.Binary: lambda c, e, v: ir.Binary(e.op, v[0], v[1], c.spans[id(e)]),
        ir.Card: lambda c, e, v: ir.Card(e.op, e.k, tuple(v), c.spans[id(e)]),
    },
)
