"""A `.proto` text compiled and checked as `unmaskc` checks it: the compiler's checks, then
the ones that need a solver (overlapping decisions), with or without members.

Contract: ``compile_checked(text, file, domains, limits, backend, tree)`` returns ``Compiled``:
the ground protocol when every free domain has members (from ``domains``), else None and
the free domains left without members; or it raises ``UnmaskError`` with every compile
error, or with every proved overlap of two decisions (``unmask.checking.overlap``), each
with a witness. Without members, every check the compiler makes runs on the text as
written (the domain taken empty); overlaps, which can depend on the number of members, are
looked for with 0, 1, 2 and 3 invented members per free domain (named after the domain,
``part_1``…, never an identifier of the text), stopping at the first size that shows one;
``checked_members`` says which sizes were checked. Undecided overlaps are warnings. The
text is parsed once (``tree``, when given, is its parse: not even once), and every
compile is of that tree (``unmask.language.compiler.compile_tree``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from unmask import ir
from unmask.backends.base import Backend
from unmask.checking.overlap import overlap_diagnostics
from unmask.language import ast
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import Limits
from unmask.plumbing.names import invent_members

# member counts tried for free domains: 0 matters (`all()` is true, `any()` false)
MEMBER_COUNTS = (0, 1, 2, 3)


@frozen
class Compiled:
    protocol: ir.Protocol | None  # None when a free domain has no members
    free: tuple[str, ...] = ()  # free domains without members
    warnings: tuple[Diagnostic, ...] = ()
    checked_members: tuple[int, ...] = ()  # member counts overlaps were looked for at


def compile_checked(
    text: str,
    file: str,
    domains: Mapping[str, Sequence[str]] | None,
    limits: Limits,
    backend: Backend,
    tree: ast.SourceFile | None = None,
) -> Compiled:
    from unmask.language.compiler import compile_tree
    from unmask.language.parser import parse_source

    given = {k: list(v) for k, v in (domains or {}).items()}
    if tree is None:
        tree = parse_source(text, file, limits)
    free = tuple(
        s.name
        for s in tree.statements
        if isinstance(s, ast.DomainDecl) and s.members is None and s.name not in given
    )
    if not free:
        protocol = compile_tree(tree, given, limits)
        found = overlap_diagnostics(protocol, backend)
        _raise_errors(found)
        return Compiled(protocol, (), found)
    checked: list[int] = []
    found = ()
    for n in MEMBER_COUNTS:
        made = {d: list(m) for d, m in invent_members(free, n, [text]).items()}
        try:
            scoped = compile_tree(tree, {**given, **made}, limits)
        except UnmaskError as err:
            if n == 0 or any(d.code != Code.LIMIT for d in err.diagnostics):
                # the compiler's own errors, on the text as written, or ones only members
                # show (a `for` naming one constraint for every member): every replay with
                # that many members would fail them
                raise
            break  # a limit at this size: the sizes before it were checked
        checked.append(n)
        shown = "; ".join(f"`{d}` = {{{', '.join(m)}}}" for d, m in made.items()) if n else ""
        scope = (
            f"with members invented for the free domains: {shown}"
            if n
            else "with no member in the free domains"
        )
        found = overlap_diagnostics(scoped, backend, scope)
        if any(d.severity == "error" for d in found):
            break
    _raise_errors(found)
    return Compiled(None, free, found, tuple(checked))


def _raise_errors(found: tuple[Diagnostic, ...]) -> None:
    if any(d.severity == "error" for d in found):
        raise UnmaskError(list(found))
