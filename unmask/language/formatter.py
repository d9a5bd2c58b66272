"""The canonical text of a `.proto` file (``unmaskc fmt``).

Contract: ``format_source(text, filename)`` parses (syntax only: a file with unknown names
still formats) and prints the statements in the order written, one per line, with single
spaces (`verdict a | b`, `decision a iff …`, `define f(d) = …`, `ground x ~> y`),
canonical string escapes and the fewest parentheses that keep the meaning (and the
compiled IR) unchanged; a side of `ground` or a definition's body is an expression and is
printed as one (the grammar needs no parentheses around either). Consecutive atom
declarations (no blank or comment line between) are set as a table, roles and
descriptions each in one column, as people write them; consecutive definitions likewise
have their `=` in one column.
Comments are kept (a character that acts written as its ``\\uXXXX`` escape, as in a
string): a comment on a statement's last line stays at the end of that line,
any other comment goes on its own line before the statement it was in or before; one
blank line is kept wherever the source had one or more, and one always follows the
`protocol` line. Formatting is idempotent, and
``compile_source(format_source(t)) == compile_source(t)`` for every text that compiles.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TypeVar

from unmask.ir import Span
from unmask.language import ast
from unmask.language.parser import parse_source
from unmask.language.syntaxtree import encode_string
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.safe import UNSAFE

# binding strength, loosest first; `not` binds tighter than every binary operator
PREC = {"iff": 1, "implies": 2, "or": 3, "xor": 4, "and": 5}
NOT_PREC = 6
ATOM_PREC = 7
# n-ary operators whose nested same-operator groups the IR flattens, so the parentheses
# in `a and (b and c)` say nothing; xor is left out because constant folding pushes its
# parity to a different place when regrouped (`a xor (true xor b)`)
_FLATTENING = frozenset({"and", "or"})


def format_source(text: str, filename: str = "<input>", limits: Limits = DEFAULT_LIMITS) -> str:
    """The canonical text; raises ``UnmaskError`` when the text does not parse."""
    source = parse_source(text, filename, limits)
    try:
        return format_file(source)
    except RecursionError:
        raise UnmaskError(
            [
                Diagnostic(
                    Code.LIMIT,
                    "an expression is nested too deeply to format",
                    file=filename,
                    help=f"lower `{limits.option('max_expr_depth')}`",
                )
            ]
        ) from None


# --- expressions ---------------------------------------------------------------------------


def _prec(e: ast.Expr) -> int:
    if isinstance(e, ast.BinE):
        return PREC[e.op]
    if isinstance(e, ast.NotE):
        return NOT_PREC
    return ATOM_PREC


def _wrap(e: ast.Expr, parens: bool) -> str:
    text = format_expr(e)
    return f"({text})" if parens else text


def _k(text: str) -> str:
    sign = "-" if text.startswith("-") else ""
    return sign + (text.lstrip("-").lstrip("0") or "0")


def format_expr(e: ast.Expr) -> str:
    if isinstance(e, ast.Lit):
        return "true" if e.value else "false"
    if isinstance(e, ast.Verdict):
        return "pass"
    if isinstance(e, ast.Ref):
        return str(e)
    if isinstance(e, ast.NotE):
        return "not " + _wrap(e.arg, _prec(e.arg) < NOT_PREC)
    if isinstance(e, ast.BinE):
        p = PREC[e.op]
        if e.op == "implies":  # right-associative
            left, right = e.left, e.right
            return f"{_wrap(left, _prec(left) <= p)} implies {_wrap(right, _prec(right) < p)}"
        # a chain is printed without recursing along it: chains may be very long
        ops = ast.chain_operands(e)
        parts = [_wrap(ops[0], _prec(ops[0]) < p)]
        for x in ops[1:]:
            # a right operand of the same strength needs parentheses unless the IR
            # flattens it anyway (and, or)
            parts.append(_wrap(x, _prec(x) < p or (_prec(x) == p and e.op not in _FLATTENING)))
        return f" {e.op} ".join(parts)
    assert isinstance(e, ast.Call)
    parts = [] if e.k is None else [_k(e.k)]
    if e.gen is not None:
        g = e.gen
        parts.append(f"{format_expr(g.body)} for {', '.join(map(str, g.binds))}")
    else:
        parts.extend(format_expr(a) for a in e.args)
    return f"{e.op}({', '.join(parts)})"


# --- statements ----------------------------------------------------------------------------


def _opt_str(value: str | None) -> str:
    return "" if value is None else " " + encode_string(value)


def format_statement(s: ast.Statement) -> list[str]:
    if isinstance(s, ast.ProtocolDecl):
        return [f"protocol {s.name}{_opt_str(s.text or None)}"]
    if isinstance(s, ast.AtomDecl):
        return [f"atom {_atom_head(s)} : {s.role}{_opt_str(s.description)}"]
    if isinstance(s, ast.DomainDecl):
        if s.members is None:
            return [f"domain {s.name}"]
        return [f"domain {s.name} = {{{', '.join(s.members)}}}"]
    if isinstance(s, ast.ConstraintDecl):
        return [f"constraint {s.ident}: {format_expr(s.expr)}"]
    if isinstance(s, ast.VerdictDecl):
        return [f"verdict {' | '.join(s.labels)}" + (" first-match" if s.first_match else "")]
    if isinstance(s, ast.DecisionDecl):
        label = "pass" if s.label is None else s.label
        if s.expr is None:
            return [f"decision {label} otherwise"]
        return [f"decision {label} iff {format_expr(s.expr)}"]
    if isinstance(s, ast.DefineDecl):
        return [f"define {ast.applied(s.name, s.params)} = {format_expr(s.expr)}"]
    if isinstance(s, ast.RequirementDecl):
        head = f"requirement {s.ident}{_opt_str(s.description)}"
        if s.addressed is None:
            return [f"{head}: {format_expr(s.holds)}"]
        return [
            f"{head} {{",
            f"  holds: {format_expr(s.holds)}",
            f"  addressed: {format_expr(s.addressed)}",
            "}",
        ]
    if isinstance(s, ast.GroundDecl):
        return [f"ground {format_expr(s.judge)} {s.direction} {format_expr(s.context)}"]
    assert isinstance(s, ast.ForDecl)
    body = format_statement(s.body)
    return [f"for {', '.join(map(str, s.binds))}: {body[0]}", *body[1:]]


@dataclass(slots=True)
class _Chunk:
    first_line: int  # where it was in the source, for keeping blank lines
    last_line: int
    lines: list[str]
    is_protocol: bool = False
    atom: ast.AtomDecl | None = None  # set for an atom declaration, which may be aligned
    define: ast.DefineDecl | None = None  # likewise for a definition
    comment: str | None = None  # a comment at the end of the last line


_D = TypeVar("_D", ast.AtomDecl, ast.DefineDecl)


def _decl(decl: _D | None) -> _D:
    """The declaration of a chunk in a run to align: a run holds only chunks that have one."""
    assert decl is not None
    return decl


def _spanned(span: Span | None) -> Span:
    """A node's span: every node of a parsed file has one (only nodes built by hand lack it)."""
    assert span is not None
    return span


def _atom_head(s: ast.AtomDecl) -> str:
    return ast.applied(s.name, s.params)


def _align_atoms(run: list[_Chunk]) -> None:
    """Set consecutive atom declarations as a table: roles in one column, descriptions in
    the next (a description-less line gets no padding, so no line ends in spaces)."""
    atoms = [_decl(c.atom) for c in run]
    heads = [_atom_head(a) for a in atoms]
    head_width = max(len(h) for h in heads)
    described = [a.role for a in atoms if a.description is not None]
    role_width = max((len(r) for r in described), default=0)
    for c, a, head in zip(run, atoms, heads, strict=True):
        line = f"atom {head.ljust(head_width)} : "
        if a.description is None:
            line += a.role
        else:
            line += f"{a.role.ljust(role_width)} {encode_string(a.description)}"
        c.lines = [line]


def _define_head(s: ast.DefineDecl) -> str:
    return ast.applied(s.name, s.params)


def _align_defines(run: list[_Chunk]) -> None:
    """Consecutive definitions with their `=` in one column, as atoms are set."""
    defines = [_decl(c.define) for c in run]
    width = max(len(_define_head(d)) for d in defines)
    for c, d in zip(run, defines, strict=True):
        c.lines = [f"define {_define_head(d).ljust(width)} = {format_expr(d.expr)}"]


def _comment(text: str) -> str:
    """A comment with each character that acts (a control, a carriage return, a
    bidirectional override: ``unmask.plumbing.safe.UNSAFE``) or breaks a line (U+2028/9)
    written as its ``\\uXXXX`` escape, as in a string literal: a `.proto` under review
    never hides a reversed line. A comment means nothing to the compiler: the IR is the same."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        f"\\u{ord(ch):04x}" if ch in "\u2028\u2029" or UNSAFE.match(ch) else ch for ch in text
    )


def format_file(source: ast.SourceFile) -> str:
    stmts = list(source.statements)
    leading: list[list[ast.Comment]] = [[] for _ in stmts]
    trailing: list[ast.Comment | None] = [None for _ in stmts]
    tail: list[ast.Comment] = []
    ends = [_spanned(s.span).end_pos for s in stmts]
    for c in source.comments:
        where = _spanned(c.span)
        pos, line = where.start_pos, where.line
        j = bisect.bisect_right(ends, pos)  # the first statement that ends after the comment
        if j > 0 and _spanned(stmts[j - 1].span).end_line == line and trailing[j - 1] is None:
            trailing[j - 1] = c
        elif j < len(stmts):
            leading[j].append(c)
        else:
            tail.append(c)

    chunks: list[_Chunk] = []
    for i, s in enumerate(stmts):
        for c in leading[i]:
            line = _spanned(c.span).line
            chunks.append(_Chunk(line, line, [_comment(c.text)]))
        sp = _spanned(s.span)
        after = trailing[i]
        chunks.append(
            _Chunk(
                sp.line,
                sp.end_line,
                format_statement(s),
                is_protocol=isinstance(s, ast.ProtocolDecl),
                atom=s if isinstance(s, ast.AtomDecl) else None,
                define=s if isinstance(s, ast.DefineDecl) else None,
                comment=None if after is None else _comment(after.text),
            )
        )
    for c in tail:
        line = _spanned(c.span).line
        chunks.append(_Chunk(line, line, [_comment(c.text)]))

    # where a blank line goes, and the runs of atom declarations that form one table
    blank_before = [
        i > 0 and (chunks[i - 1].is_protocol or ch.first_line > chunks[i - 1].last_line + 1)
        for i, ch in enumerate(chunks)
    ]
    for kind, align in (("atom", _align_atoms), ("define", _align_defines)):
        run: list[_Chunk] = []
        for ch, blank in zip([*chunks, None], [*blank_before, True], strict=True):
            if ch is not None and getattr(ch, kind) is not None and not (blank and run):
                run.append(ch)
                continue
            if len(run) > 1:
                align(run)
            run = [ch] if ch is not None and getattr(ch, kind) is not None else []

    out: list[str] = []
    for ch, blank in zip(chunks, blank_before, strict=True):
        if blank:
            out.append("")
        out.extend(ch.lines)
        if ch.comment is not None:
            out[-1] += "  " + ch.comment
    return "\n".join(out) + "\n" if out else ""
