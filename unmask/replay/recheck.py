"""A protocol given apart from the replays (``--protocol FILE``), to re-check them against it.

Contract: ``load_protocol_file(path, limits)`` reads FILE once (``.json``: protocol IR,
``unmask.protocol/1``, or a replay whose protocol is embedded, as IR or as ``.proto`` text;
anything else: ``.proto`` text) and returns a ``ProtocolFile``, or
raises ``UnmaskError`` (with ``sources`` for excerpts) when it cannot be read, does not
parse, or does not compile with each free domain given one member (and the members the text
names in a free domain's place: those are each replay's to have, checked against its own
members): an error every replay would repeat is reported once. A ``ProtocolFile`` is plain,
picklable data (it travels to pool and Dask workers in the batch settings); it is equal to
another exactly when its digest (``sha256:`` of the protocol's text: for a replay, of the
text it embeds) and form are, and ``ground(domains, limits)`` is the
protocol one replay is checked against: the ``.proto`` compiled with that replay's members
through the compile cache (once per process and on disk for the same text and members),
IR parsed and read once per process (the loading, which has just parsed FILE, keeps what
it read). A ``.proto`` also keeps its text with the lines `unmask import structured` would
append to it (``verbatim``: the atom ``quotes_verbatim`` and its requirement, or the
requirement alone for a text that declares the atom and reads it nowhere), which
``ground(..., verbatim=True)`` compiles for a replay that importer annotated, so its
``verbatim_quotes`` check is not lost to a re-check. The replay reader
(``unmask.replay.load``) does the rest: which domains to pass, the annotations the protocol
lacks, labels it does not declare.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from unmask import ir
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.replay.data import Recheck

if TYPE_CHECKING:
    from unmask.language import ast

__all__ = ["ProtocolFile", "load_protocol_file"]

_IR: dict[tuple[str, Limits], ir.Protocol] = {}  # a few per process at most: one per run
_IR_LOCK = threading.Lock()  # a Dask worker may check replays in several threads
_UNREAD = object()  # no JSON parsed yet


@frozen
class ProtocolFile:
    """A protocol read from FILE: ``form`` is ``proto`` or ``ir``; ``domains`` the domains
    a ``.proto`` declares (a replay's members for the others are not passed on)."""

    path: str  # as given, for messages and compile spans
    name: str
    digest: str
    form: str
    text: str = field(compare=False, repr=False)
    domains: tuple[str, ...] = field(default=(), compare=False)
    json_path: str = field(default="$", compare=False)  # where in ``text`` the IR is
    # ``text`` with the lines `unmask import structured` appends (``verbatim_lines``), for a
    # replay it annotated; "" when it needs none (it reads its own `quotes_verbatim`), is IR,
    # or would not compile with them (its own requirement `verbatim_quotes`)
    verbatim: str = field(default="", compare=False, repr=False)

    @property
    def ground_already(self) -> bool:
        return self.form == "ir"

    def recheck(self, dropped: Sequence[str] = ()) -> Recheck:
        return Recheck(self.name, self.digest, tuple(dropped))

    def ground(
        self,
        domains: Mapping[str, Sequence[str]] | None,
        limits: Limits = DEFAULT_LIMITS,
        verbatim: bool = False,
    ) -> ir.Protocol:
        """The protocol ground with ``domains``; with ``verbatim`` (a replay whose
        `quotes_verbatim` the structured importer annotated) and ``self.verbatim``, the
        text with the importer's requirement, which FILE's lines never point into."""
        if self.form == "ir":
            return _read_ir(self, limits)
        from unmask.language.compile_cache import compile_cached

        if verbatim and self.verbatim:
            return _unspanned(compile_cached(self.verbatim, self.path, domains, limits))
        return compile_cached(self.text, self.path, domains, limits)


_UNSPANNED: dict[int, tuple[ir.Protocol, ir.Protocol]] = {}  # id -> (compiled, unspanned)


def _unspanned(p: ir.Protocol) -> ir.Protocol:
    """``p`` with no span on the appended atom and requirement: their lines are not in the
    file named, so a report (SARIF) must not point past its end."""
    from dataclasses import replace

    from unmask.replay.judgeschema import VERBATIM_ATOM, VERBATIM_REQUIREMENT

    with _IR_LOCK:
        got = _UNSPANNED.get(id(p))
    if got is not None and got[0] is p:
        return got[1]
    out = replace(
        p,
        atoms=tuple(replace(a, span=None) if a.name == VERBATIM_ATOM else a for a in p.atoms),
        requirements=tuple(
            replace(q, span=None) if q.id == VERBATIM_REQUIREMENT else q for q in p.requirements
        ),
    )
    with _IR_LOCK:
        if len(_UNSPANNED) >= 16:
            _UNSPANNED.clear()
        _UNSPANNED[id(p)] = (p, out)  # `p` held, so its id is not reused while cached
    return out


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _read_ir(pf: ProtocolFile, limits: Limits, obj: Any = _UNREAD) -> ir.Protocol:
    """The IR of ``pf``, read once per process; ``obj``: its JSON when already parsed (by
    ``load_protocol_file``, which has just read FILE), so the text is not parsed again."""
    key = (pf.digest, limits)
    with _IR_LOCK:
        got = _IR.get(key)
    if got is not None:
        return got
    from unmask.ir.json_reader import protocol_from_json

    if obj is _UNREAD:
        from unmask.plumbing.jsonload import parse_json_text

        obj = parse_json_text(pf.text, pf.path, limits)
    got = protocol_from_json(obj, pf.json_path, pf.path, limits)
    with _IR_LOCK:
        if len(_IR) >= 4:
            _IR.clear()
        _IR[key] = got
    return got


def load_protocol_file(path: str, limits: Limits = DEFAULT_LIMITS) -> ProtocolFile:
    """Read and check FILE once (see the module); errors carry ``sources``."""
    from unmask.plumbing.files import read_text

    text = read_text(path, limits)
    name = path
    if path.lower().endswith(".json"):
        text, name, at, obj = _inner(path, text, limits)
        if name == path:
            pf = ProtocolFile(path, "", _digest(text), "ir", text, json_path=at)
            protocol = _read_ir(pf, limits, obj)
            return ProtocolFile(path, protocol.name, pf.digest, "ir", text, json_path=at)
    try:
        return _load_proto(name, text, limits)
    except UnmaskError as err:
        err.sources = {name: text}  # type: ignore[attr-defined]
        raise


def _inner(path: str, text: str, limits: Limits) -> tuple[str, str, str, Any]:
    """A ``.json`` file's protocol: (the IR's JSON text, ``path``, its JSON path, the IR's
    parsed JSON), or for a replay that carries `.proto` text inline, (that text, the name
    its spans use, "", None). The file is parsed here, once. A
    replay's embedded IR is taken as `unmask analyze` takes it; one that names a `.proto`
    by path is refused."""
    import json

    from unmask.plumbing.jsonload import parse_json_text

    obj = parse_json_text(text, path, limits)
    inner = obj.get("protocol") if isinstance(obj, dict) and "atoms" not in obj else None
    if not isinstance(inner, dict):
        return text, path, "$", obj
    if "path" in inner and "atoms" not in inner:
        from unmask.plumbing.jsonreader import show

        # the path is the replay's data, of any length or kind: shown bounded and escaped
        message = (
            f"this replay names its protocol by path: give `{show(inner['path'], 200)}` itself"
        )
        raise UnmaskError([Diagnostic(Code.PROTOCOL, message, path="protocol.path", file=path)])
    if isinstance(inner.get("source"), str):
        return inner["source"], f"{path}: protocol.source", "", None
    return json.dumps(inner, ensure_ascii=False, sort_keys=True), path, "protocol", inner


def _load_proto(path: str, text: str, limits: Limits) -> ProtocolFile:
    from unmask.language import ast
    from unmask.language.compiler import compile_tree
    from unmask.language.parser import parse_source
    from unmask.plumbing.names import invent_members

    source = parse_source(text, path, limits)
    decls = [s for s in source.statements if isinstance(s, ast.DomainDecl)]
    free = [d.name for d in decls if d.members is None]
    # one member per free domain, a name the text does not use: enough to compile every
    # part that does not depend on how many members there are
    members = {d: list(m) for d, m in invent_members(free, 1, [text]).items()}
    try:
        protocol = compile_tree(source, members, limits)
    except UnmaskError as err:
        # the text names members of a free domain (`ground supported(joined) ~ ...`):
        # which members a free domain has is each replay's to say, so those names are
        # given too, and whether a replay has them is checked with its own members
        named = _named_members(err, text)
        if not named or not free:
            raise
        members = {d: [*m, *named] for d, m in members.items()}
        protocol = compile_tree(source, members, limits)
    return ProtocolFile(
        path,
        protocol.name,
        _digest(text),
        "proto",
        text,
        tuple(d.name for d in decls),
        verbatim=_verbatim_text(source, text, path, members, limits),
    )


def _verbatim_text(
    source: ast.SourceFile, text: str, path: str, members: dict[str, list[str]], limits: Limits
) -> str:
    """``ProtocolFile.verbatim``: ``text`` with the lines the structured importer would
    append to it (``verbatim_lines``), when there are any and it compiles with them;
    checked once here. A `quotes_verbatim` of another role or over domains gets none."""
    from unmask.language.compiler import compile_tree
    from unmask.language.parser import parse_source
    from unmask.replay.judgeschema import verbatim_lines, view_of_tree, with_verbatim

    view = view_of_tree(source)
    own = view.verbatim
    lines = verbatim_lines(view)
    if not lines or (own is not None and (own.role != "procedure" or own.domains)):
        return ""
    extended = with_verbatim(text, lines)
    try:
        compile_tree(parse_source(extended, path, limits), members, limits)
    except UnmaskError:
        return ""  # its own requirement `verbatim_quotes`: the annotation is left out, said
    return extended


def _named_members(err: UnmaskError, text: str) -> list[str]:
    """The names a failed compile found in a member's place and in no domain, in order."""
    names: list[str] = []
    for d in err.diagnostics:
        if d.code != Code.UNKNOWN_MEMBER or d.span is None:
            continue
        name = text[d.span.start_pos : d.span.end_pos]
        if name.isidentifier() and name not in names:
            names.append(name)
    return names
