"""Loading a protocol for analysis: a `.proto` file compiled at a bounded scope, or IR JSON.

Contract: ``load(paths, members, domains, limits)`` reads each file (``.json`` is protocol
IR, ``unmask.protocol/1``; anything else is `.proto` text) and returns one ``Loaded`` per
path, or raises ``UnmaskError``. Every free domain without ``--domain`` members gets
``members`` invented members named after it, ``claim_1..claim_N`` for ``claim``, so a
witness over two domains says which member is which; the names are checked against every
identifier of every file loaded together and every name invented before them (domains in
name order), so a member never coincides with a name the protocol writes (``claim__1``… is
tried next), and two versions of one protocol ground to the same atom names.
``Scope`` says which members were used: a finding at three members is a bounded result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any

from unmask import ir
from unmask.language import ast
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.names import invent_members

DEFAULT_MEMBERS = 3


@frozen
class Scope:
    """The members each domain was grounded at; ``invented`` lists the free domains that
    got invented members (``claim_1``…) rather than members given on the command line."""

    domains: tuple[tuple[str, tuple[str, ...]], ...] = ()
    invented: tuple[str, ...] = ()
    members: int = DEFAULT_MEMBERS

    @property
    def bounded(self) -> bool:
        return bool(self.invented)

    def text(self) -> str:
        if not self.domains:
            return "scope: ground protocol (no free domain)"
        parts = []
        for name, members in self.domains:
            how = "invented" if name in self.invented else "given"
            parts.append(f"{name} = {{{', '.join(members)}}} ({how})")
        line = "scope: " + "; ".join(parts)
        if self.bounded:
            line += (
                f"; results hold for {self.members} member"
                f"{'' if self.members == 1 else 's'} per free domain, not beyond"
            )
        return line

    def to_json(self) -> dict[str, Any]:
        return {
            "domains": {name: list(members) for name, members in self.domains},
            "invented": list(self.invented),
            "members": self.members,
            "bounded": self.bounded,
        }


@frozen
class Loaded:
    path: str
    protocol: ir.Protocol
    scope: Scope
    sources: dict[str, str] = field(default_factory=dict)


def _is_json(path: str) -> bool:
    return path.lower().endswith(".json")


def _free_domains(source: ast.SourceFile) -> list[str]:
    return [
        s.name for s in source.statements if isinstance(s, ast.DomainDecl) and s.members is None
    ]


def load(
    paths: Sequence[str],
    members: int = DEFAULT_MEMBERS,
    domains: Mapping[str, Sequence[str]] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> list[Loaded]:
    """Load every path; an error carries ``sources`` (the texts read) for its excerpts."""
    texts: dict[str, str] = {}
    try:
        return _load(paths, members, domains, limits, texts)
    except UnmaskError as err:
        err.sources = dict(texts)  # type: ignore[attr-defined]
        raise


def _load(
    paths: Sequence[str],
    members: int,
    domains: Mapping[str, Sequence[str]] | None,
    limits: Limits,
    texts: dict[str, str],
) -> list[Loaded]:
    from unmask.language.compiler import compile_tree
    from unmask.language.parser import parse_source
    from unmask.plumbing.files import read_text

    given = dict(domains or {})
    parsed: dict[str, ast.SourceFile] = {}
    for p in paths:
        if _is_json(p):
            continue
        texts[p] = read_text(p, limits)
        parsed[p] = parse_source(texts[p], p, limits)
    everywhere = {
        s.name for src in parsed.values() for s in src.statements if isinstance(s, ast.DomainDecl)
    }
    # one set of names per free domain, the same in every file that declares it
    free_anywhere = {d for src in parsed.values() for d in _free_domains(src)} - set(given)
    invented = invent_members(sorted(free_anywhere), members, texts.values())
    out: list[Loaded] = []
    for p in paths:
        if _is_json(p):
            out.append(Loaded(p, _load_json(p, limits), Scope(members=members)))
            continue
        free = _free_domains(parsed[p])
        declared = {s.name for s in parsed[p].statements if isinstance(s, ast.DomainDecl)}
        # a `--domain` for a domain only the other file declares is for that file; one that
        # no file declares is passed on, so the compiler reports it
        here = {k: list(v) for k, v in given.items() if k in declared or k not in everywhere}
        made = [d for d in free if d not in here]
        for d in made:
            here[d] = list(invented[d])
        protocol = compile_tree(parsed[p], here, limits)
        scope = Scope(
            tuple((d, tuple(here[d])) for d in sorted(here) if d in declared),
            tuple(made),
            members,
        )
        out.append(Loaded(p, protocol, scope, {p: texts[p]}))
    return out


def _load_json(path: str, limits: Limits) -> ir.Protocol:
    from unmask.ir.json_reader import protocol_from_json
    from unmask.plumbing.jsonload import read_json_file

    obj = read_json_file(path, limits)
    if isinstance(obj, dict) and "protocol" in obj and "atoms" not in obj:
        # a replay carries its protocol under `protocol`, inline or as a `.proto` path
        inner = obj["protocol"]
        if isinstance(inner, dict) and "path" in inner and "atoms" not in inner:
            message = f"this replay names its protocol by path: analyse `{inner['path']}` itself"
            raise UnmaskError([Diagnostic(Code.PROTOCOL, message, path="protocol.path", file=path)])
        return protocol_from_json(inner, "protocol", path, limits)
    if not isinstance(obj, dict):
        raise UnmaskError(
            [
                Diagnostic(
                    Code.PROTOCOL, "expected a protocol IR object (`unmask.protocol/1`)", file=path
                )
            ]
        )
    return protocol_from_json(obj, "$", path, limits)
