"""The user's cache folder, and compiled protocols kept there between runs.

Contract: ``cache_dir()`` is ``$UNMASK_CACHE_DIR`` (empty: no cache at all), else
``$XDG_CACHE_HOME/unmask``, else ``~/.cache/unmask``. ``compile_cached(text, filename,
domains, limits)`` returns what ``unmask.compiler.compile_source`` returns for the same
arguments, spans included, or raises the same ``UnmaskError``: it remembers the last
``COMPILE_CACHE_SIZE`` protocols per process, and keeps each compiled protocol on disk as
its ``unmask.protocol/1`` JSON with the spans beside it, named by a digest of the text, the
domains, the limits, Python's and lark's versions and the bytes of every module and grammar
file that compiling reads. The file name is not in the key: compiling puts it in the spans
and nowhere else, so an entry is shared by every copy of the same text (a checkout moved, a
temporary folder) and its spans are given the name asked for. A hit is read back through
the protocol IR reader (``unmask.irjson_reader``), so it imports neither lark nor the
compiler. An entry that cannot be read, does not validate, or was written for another key
is ignored and rebuilt; an entry is written only after reading it back gave the very
protocol compiled; compile errors are never written (``unmask.cache_writer``, imported only
on a miss). A cache that cannot be used is skipped silently.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from unmask import ir
from unmask.limits import DEFAULT_LIMITS, Limits

CACHE_ENV = "UNMASK_CACHE_DIR"  # overrides the cache folder; empty turns the cache off
COMPILE_CACHE_SIZE = 32  # distinct (text, file, domains, limits) kept per process
ENTRY_SCHEMA = "unmask.compiled/1"
ENTRY_PREFIX = "protocol-"
MAX_ENTRY_BYTES = 4 * 1024 * 1024  # a larger file is not an entry this module wrote
# what compiling a `.proto` text reads, and how an entry is written and read back: a
# change to any of them changes every key
_MODULES = (
    "ast",
    "cache",
    "cache_writer",
    "compiler",
    "diagnostics",
    "ir",
    "irjson",
    "irjson_reader",
    "jsonreader",
    "limits",
    "names",
    "parser",
    "span",
    "syntaxtree",
)

_END = object()


def cache_dir() -> Path | None:
    """The folder for cached files: ``$UNMASK_CACHE_DIR``, else ``$XDG_CACHE_HOME/unmask``,
    else ``~/.cache/unmask``; None when caching is off."""
    env = os.environ.get(CACHE_ENV)
    if env is not None:
        return Path(env) if env else None
    xdg = os.environ.get("XDG_CACHE_HOME")
    try:
        base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    except RuntimeError:  # no home folder to be found
        return None
    return base / "unmask"


def compile_cached(
    text: str,
    filename: str = "<input>",
    domains: Mapping[str, Sequence[str]] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> ir.Protocol:
    """``compile_source``, remembered in this process and on disk: replays that share a
    protocol (an audit, a worker's partition, one command run after another) compile it
    once. The protocol is immutable, so it is shared; a compile error is raised again
    each time, never remembered."""
    key = tuple((name, tuple(members)) for name, members in (domains or {}).items())
    return _memo(text, filename, key, limits)


@lru_cache(maxsize=COMPILE_CACHE_SIZE)
def _memo(
    text: str, filename: str, domains: tuple[tuple[str, tuple[str, ...]], ...], limits: Limits
) -> ir.Protocol:
    entry = _entry(text, domains, limits)
    if entry is not None:
        path, digest = entry
        found = _load(path, digest, filename, limits)
        if found is not None:
            return found
    from unmask import compiler

    protocol = compiler.compile_source(text, filename, dict(domains), limits)
    if entry is not None:
        from unmask.cache_writer import store

        store(entry[0], entry[1], protocol, filename, limits)
    return protocol


# --- keys ---------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _fingerprint() -> str | None:
    """A digest of everything besides the input that compiling depends on, or None when
    some of it cannot be read (then nothing is cached)."""
    import importlib.util

    h = hashlib.sha256()
    try:
        here = Path(__file__).resolve().parent
        files = [here / f"{m}.py" for m in _MODULES]
        grammar = importlib.util.find_spec("unmask.grammar")
        lark = importlib.util.find_spec("lark")
        if grammar is None or lark is None or lark.origin is None:
            return None
        (folder,) = grammar.submodule_search_locations or ()
        files += [Path(folder) / "unmask.lark", Path(lark.origin)]  # lark's holds its version
        for part in [ENTRY_SCHEMA, sys.version, *(f.read_bytes() for f in files)]:
            _update(h, part)
    except (OSError, ValueError, ImportError):
        return None
    return h.hexdigest()


def _update(h: Any, part: str | bytes) -> None:
    data = part if isinstance(part, bytes) else part.encode("utf-8", "surrogatepass")
    h.update(len(data).to_bytes(8, "big"))
    h.update(data)


def _entry(
    text: str, domains: tuple[tuple[str, tuple[str, ...]], ...], limits: Limits
) -> tuple[Path, str] | None:
    """(the entry's file, the digest it must record), or None when caching is off."""
    folder = cache_dir()
    fingerprint = _fingerprint() if folder is not None else None
    if folder is None or fingerprint is None:
        return None
    h = hashlib.sha256()
    for part in (fingerprint, repr(domains), repr(limits), text):
        _update(h, part)
    digest = h.hexdigest()
    return folder / f"{ENTRY_PREFIX}{digest[:32]}.json", digest


# --- reading --------------------------------------------------------------------------------


def _load(path: Path, digest: str, filename: str, limits: Limits) -> ir.Protocol | None:
    """The protocol in the entry at ``path``, or None when there is none or it is not
    usable (then it will be rebuilt and replaced)."""
    # an entry is a regular file this module renamed into place: a link, a pipe (which
    # would block) or a device in its place is not read
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb") as f:
            fd = -1
            data = f.read(MAX_ENTRY_BYTES + 1)
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > MAX_ENTRY_BYTES:
        return None
    return decode(data, digest, filename, limits)


def decode(data: bytes | str, digest: str, filename: str, limits: Limits) -> ir.Protocol | None:
    """The protocol of an entry's text, or None when it is not an entry for ``digest``."""
    from unmask.irjson_reader import protocol_from_json

    try:
        obj = json.loads(data)
        if not (
            isinstance(obj, dict)
            and obj.get("schema") == ENTRY_SCHEMA
            and obj.get("key") == digest
            and isinstance(obj.get("spans"), list)
        ):
            return None
        protocol = protocol_from_json(obj.get("protocol"), "protocol", None, limits)
        spans = iter(obj["spans"])
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
    ``unmask.cache_writer.spans`` lists them."""

    def take() -> ir.Span | None:
        return _span(next(spans), filename)

    span = take()
    atoms = tuple(ir.AtomDecl(a.name, a.role, a.description, take()) for a in p.atoms)
    defs: dict[str, ir.Expr] = {}
    definitions = []
    for d in p.definitions:
        s = take()
        e = _expr_with_spans(d.expr, take, defs)
        defs[d.name] = e
        definitions.append(ir.Definition(d.name, e, s))
    constraints = []
    for c in p.constraints:
        s = take()
        constraints.append(ir.Constraint(c.name, _expr_with_spans(c.expr, take, defs), s))
    decision = None if p.decision is None else _expr_with_spans(p.decision, take, defs)
    decisions = []
    for d in p.decisions:
        s = take()
        e = None if d.expr is None else _expr_with_spans(d.expr, take, defs)
        decisions.append(ir.Decision(d.label, e, s))
    requirements = []
    for r in p.requirements:
        s = take()
        e = _expr_with_spans(r.expr, take, defs)
        addressed = None if r.addressed is None else _expr_with_spans(r.addressed, take, defs)
        requirements.append(ir.Requirement(r.id, r.description, e, addressed, s))
    grounding = []
    for g in p.grounding:
        s = take()
        judge = _expr_with_spans(g.judge, take, defs)
        context = _expr_with_spans(g.context, take, defs)
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
    )


def kids(e: ir.Expr) -> tuple[ir.Expr, ...]:
    # a use of a definition is a leaf here: its body is the definition's, rebuilt once
    return () if e.__class__ is ir.Ref else ir.children(e)


def _expr_with_spans(root: ir.Expr, take: Any, defs: Mapping[str, ir.Expr]) -> ir.Expr:
    """``root`` rebuilt node by node, each taking the next span in pre-order; iterative,
    since expressions may be deep."""
    done: list[ir.Expr] = []
    todo: list[tuple[ir.Expr, bool, Any]] = [(root, False, None)]
    while todo:
        e, visited, span = todo.pop()
        if not visited:
            todo.append((e, True, take()))
            todo.extend((k, False, None) for k in reversed(kids(e)))
            continue
        n = len(kids(e))
        args = done[len(done) - n :] if n else []
        if n:
            del done[len(done) - n :]
        cls = e.__class__
        if cls is ir.Const:
            out: ir.Expr = ir.Const(e.value, span)
        elif cls is ir.Atom:
            out = ir.Atom(e.name, span)
        elif cls is ir.Ref:
            out = ir.Ref(e.name, defs[e.name], span)
        elif cls is ir.Not:
            out = ir.Not(args[0], span)
        elif cls is ir.Nary:
            out = ir.Nary(e.op, tuple(args), span)
        elif cls is ir.Binary:
            out = ir.Binary(e.op, args[0], args[1], span)
        elif cls is ir.Card:
            out = ir.Card(e.op, e.k, tuple(args), span)
        else:
            raise TypeError(f"not an expression node: {cls.__name__}")
        done.append(out)
    (result,) = done
    return result
