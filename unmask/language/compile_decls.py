"""Declarations: the protocol line, atoms, families, definitions and domains, and the ground
atoms they give once each domain's members are known.

Contract: ``Declarations`` records every declaration in the shared environment (a name
declared twice is one `duplicate-name` error naming the first), resolves each domain's
members (fixed in the text, or given for a free domain, each checked as a name) and grounds
every atom family over its members (over several domains, every combination, counted
against ``max_atoms`` before any is made), ``{DOMAIN}`` in a description becoming the member.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

from unmask import ir
from unmask.ir import Span
from unmask.language import ast
from unmask.language.compile_base import (
    DOMAIN_HELP,
    CompilerBase,
    _as_json,
    _did_you_mean,
    _subst,
)
from unmask.language.parser import reserved_words
from unmask.plumbing.codes import Code
from unmask.plumbing.names import IDENT_PATTERN, IDENT_RE, member_help


class Declarations(CompilerBase):
    """Declarations, domains and the ground atoms they give."""

    def _protocol_line(self, stmts) -> ast.ProtocolDecl | None:
        heads = [s for s in stmts if isinstance(s, ast.ProtocolDecl)]
        if not heads:
            self.error(
                Code.MISSING_PROTOCOL,
                'expected a `protocol NAME "text"` line at the top of the file',
                Span(self.file, 1, 1, 1, 2, 0, 1),
            )
            return None
        if stmts[0] is not heads[0]:
            self.error(
                Code.PROTOCOL_ORDER,
                "the `protocol` line must come before every other statement",
                heads[0].span,
            )
        for extra in heads[1:]:
            self.error(
                Code.DUPLICATE_PROTOCOL,
                "the file has a second `protocol` line",
                extra.span,
                help="a file holds one protocol",
                notes=(f"the first is at {heads[0].span}",),
            )
        return heads[0]

    def _declare(self, stmts) -> None:
        for s in stmts:
            if isinstance(s, ast.DomainDecl):
                if s.name in self.domains:
                    self._duplicate("domain", s.name, s.name_span, self.domains[s.name].span)
                else:
                    self.domains[s.name] = s
            elif isinstance(s, ast.AtomDecl):
                prev = self.plain.get(s.name) or self.families.get(s.name)
                if prev is not None:
                    self._duplicate("atom", s.name, s.name_span, prev.span)
                elif not s.params:
                    self.plain[s.name] = s
                else:
                    self.families[s.name] = s
        for s in stmts:
            if not isinstance(s, ast.DefineDecl):
                continue
            atom = self.plain.get(s.name) or self.families.get(s.name)
            if atom is not None:
                self.error(
                    Code.DUPLICATE_NAME,
                    f"definition `{s.name}` has the name of an atom",
                    s.name_span or s.span,
                    notes=(f"the atom is declared at {atom.span}",),
                    help="a definition may not shadow an atom; choose another name",
                )
            elif s.name in self.defs:
                self._duplicate("definition", s.name, s.name_span, self.defs[s.name].span)
            else:
                self.defs[s.name] = s

    def _resolve_domains(self) -> None:
        supplied = self.supplied
        if not isinstance(supplied, Mapping):
            self.error(Code.BAD_DOMAINS, "domains must map each domain name to its members", None)
            supplied = {}
        for name in supplied:
            if name not in self.domains:
                hint = _did_you_mean(str(name), self.domains)
                self.error(
                    Code.UNKNOWN_DOMAIN,
                    f"members were given for `{name}`, but the protocol declares no such domain",
                    None,
                    path=f"domains.{name}",
                    help=hint,
                )
        for name, decl in self.domains.items():
            fixed = decl.members
            if fixed is not None:
                self._check_fixed(decl)
            given = supplied.get(name)
            members: tuple[str, ...] | None
            if given is None:
                if fixed is None:
                    self.error(
                        Code.MISSING_DOMAIN,
                        f"no members were given for the free domain `{name}`",
                        decl.span,
                        help=DOMAIN_HELP.format(name=name),
                    )
                    continue
                members = fixed
            else:
                members = self._check_given(name, given, decl)
                if members is None:
                    continue
            if len(members) > self.limits.max_domain_size:
                self.limit(
                    f"domain `{name}` has {len(members)} members, more than the limit of "
                    f"{self.limits.max_domain_size}",
                    "max_domain_size",
                    decl.span,
                )
                continue
            self.members[name] = tuple(members)

    def _check_fixed(self, decl: ast.DomainDecl) -> None:
        seen: set[str] = set()
        spans = decl.member_spans or (None,) * len(decl.members or ())
        for m, sp in zip(decl.members or (), spans, strict=False):
            if m in seen:
                self.error(
                    Code.DUPLICATE_NAME,
                    f"member `{m}` appears twice in `{decl.name}`",
                    sp or decl.span,
                )
            seen.add(m)

    def _check_given(self, name: str, given, decl: ast.DomainDecl) -> tuple[str, ...] | None:
        path = f"domains.{name}"
        if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
            self.error(
                Code.BAD_MEMBER,
                f"the members of `{name}` must be an array of names",
                None,
                path=path,
            )
            return None
        ok = True
        seen: set[str] = set()
        for i, m in enumerate(given):
            if not isinstance(m, str) or not IDENT_RE.match(m) or m in reserved_words():
                shown = m if isinstance(m, str) else _as_json(m)
                self.error(
                    Code.BAD_MEMBER,
                    f"member `{shown}` of `{name}` is not a name",
                    None,
                    path=f"{path}[{i}]",
                    help=member_help(m)
                    if isinstance(m, str) and m[:1].isdigit()
                    else f"a member is a name `{IDENT_PATTERN}` that is not a reserved word",
                )
                ok = False
            elif m in seen:
                self.error(
                    Code.DUPLICATE_NAME,
                    f"member `{m}` of `{name}` is given twice",
                    None,
                    path=f"{path}[{i}]",
                )
                ok = False
            elif decl.members is not None and m not in decl.members:
                self.error(
                    Code.MEMBER_NOT_IN_DOMAIN,
                    f"member `{m}` is not in the fixed domain `{name}`",
                    decl.span,
                    path=f"{path}[{i}]",
                    notes=("its members are " + ", ".join(f"`{x}`" for x in decl.members),)
                    if decl.members
                    else ("it has no members",),
                )
                ok = False
            if isinstance(m, str):
                seen.add(m)
        return tuple(given) if ok else None

    def _ground_atoms(self) -> list[ir.AtomDecl]:
        out: list[ir.AtomDecl] = []
        total = 0
        for d in list(self.plain.values()) + list(self.families.values()):
            # a family over several domains has one atom per combination: the product,
            # computed before any is made, so a huge one is a limit error and not a hang
            total += math.prod(len(self.members.get(p, ())) for p in d.params)
        if total > self.limits.max_atoms:
            big = max(self.families.values(), key=self._family_size, default=None)
            notes: tuple[str, ...] = ()
            if big is not None and len(big.params) > 1:
                sizes = " × ".join(f"{len(self.members.get(p, ()))} (`{p}`)" for p in big.params)
                notes = (f"the family `{big.name}` alone has {sizes} atoms",)
            self.error(
                Code.LIMIT,
                f"the protocol has {total} ground atoms, more than the limit of "
                f"{self.limits.max_atoms}",
                big.span if big is not None and notes else None,
                help=f"raise it with `{self.limits.option('max_atoms')}`",
                notes=notes,
            )
            return out
        for s in self.src.statements:
            if not isinstance(s, ast.AtomDecl):
                continue
            if self.plain.get(s.name) is not s and self.families.get(s.name) is not s:
                continue  # a duplicate, already reported
            desc = s.description or ""
            if not s.params:
                out.append(ir.AtomDecl(s.name, s.role, desc, s.span))
                continue
            spans = s.param_spans or (None,) * len(s.params)
            unknown = [
                (p, sp) for p, sp in zip(s.params, spans, strict=True) if p not in self.domains
            ]
            for p, sp in unknown:
                self._unknown_domain(p, sp)
            if unknown:
                continue
            lists = [self.members.get(p, ()) for p in s.params]
            for combo in itertools.product(*lists):
                name = ast.applied(s.name, combo)
                out.append(ir.AtomDecl(name, s.role, describe(desc, s.params, combo), s.span))
        return out

    def _family_size(self, d: ast.AtomDecl) -> int:
        return math.prod(len(self.members.get(p, ())) for p in d.params)


def describe(text: str, domains: tuple[str, ...], members: tuple[str, ...]) -> str:
    """A family member's description: ``{DOMAIN}`` becomes the member of a domain that the
    family names once; over several domains ``{1}``, ``{2}``, … become the members by
    position too (the only way to tell the two of ``same(claim, claim)`` apart)."""
    if len(domains) == 1:
        return _subst(text, domains[0], members[0])
    for d, m in zip(domains, members, strict=True):
        if domains.count(d) == 1:
            text = text.replace("{" + d + "}", m)
    for i, m in enumerate(members, 1):
        text = text.replace("{" + str(i) + "}", m)
    return text
