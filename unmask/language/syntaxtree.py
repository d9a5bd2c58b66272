"""Lark's parse tree to the syntax tree (``unmask.language.ast``): spans and string literals.

Contract: ``ToAst(file).transform(tree)`` builds one ``unmask.language.ast`` node per rule, each
with the span of the text it came from, without recursion (``Transformer_NonRecursive``); string
escapes are decoded here and a bad one is a ``bad-escape`` diagnostic collected on ``diagnostics``,
not raised. ``decode_string`` and ``encode_string`` are the one reading and the one writing of a
string literal (the formatter writes with the latter).

Why not ``lark.ast_utils.create_transformer``: it builds each class from its rule's
children in order (``cls(*children)``, with ``meta`` first under ``WithMeta``), one class
per rule. Here the shapes differ on purpose: a node takes a ``Span`` made from ``meta``
and the file name, not lark's ``Meta``; several rules build one node with a fixed part
(``iff_``/``and_``/… are one ``BinE`` with its operator, ``ground_iff`` and
``ground_implies`` one ``GroundDecl`` with its direction, the three ``decision`` forms one
``DecisionDecl``); string literals are decoded, with diagnostics, before a node holds
them; and some rules only pass a token or a list up. Bending the dataclasses to lark's
calling convention would put lark's types into the syntax tree every later pass reads, so
the methods stay, each taking its children by name.
"""

from __future__ import annotations

from lark import Token, Transformer_NonRecursive, v_args

from unmask.language import ast
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic
from unmask.plumbing.safe import UNSAFE
from unmask.plumbing.span import Span

# --- spans and strings ---------------------------------------------------------------------


def span_of(file: str, m) -> Span | None:  # m: lark Meta or Token
    line = getattr(m, "line", None)
    if line is None:
        return None
    return Span(
        file,
        line,
        m.column,
        m.end_line,
        m.end_column,
        m.start_pos,
        m.end_pos,
    )


_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r"}
ESCAPES_HELP = 'the escapes are `\\"`, `\\\\`, `\\n`, `\\t`, `\\r` and `\\uXXXX`'


def decode_string(raw: str) -> tuple[str, list[tuple[int, str]]]:
    """The value of a string token, and (offset, message) for every bad escape in it.

    Plain runs are copied as slices, so the cost is one step per escape, not per character.
    """
    body = raw[1:-1]
    at = body.find("\\")
    if at < 0:
        return body, []
    out: list[str] = []
    errors: list[tuple[int, str]] = []
    i = 0
    while at >= 0:
        out.append(body[i:at])
        nxt = body[at + 1]  # the token's pattern guarantees a character after `\`
        i = at + 2
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
        elif nxt == "u":
            digits = body[at + 2 : at + 6]
            if len(digits) == 4 and all(c in "0123456789abcdefABCDEF" for c in digits):
                code = int(digits, 16)
                if 0xD800 <= code <= 0xDFFF:
                    errors.append((at + 1, f"`\\u{digits}` is a surrogate, not a character"))
                else:
                    out.append(chr(code))
                i = at + 6
            else:
                errors.append((at + 1, "`\\u` must be followed by four hexadecimal digits"))
        else:
            errors.append((at + 1, f"unknown escape `\\{nxt}`"))
            out.append(nxt)
        at = body.find("\\", i)
    out.append(body[i:])
    return "".join(out), errors


def encode_string(value: str) -> str:
    """The canonical string literal for ``value`` (inverse of ``decode_string``)."""
    out = ['"']
    for ch in value:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ch in "\u2028\u2029" or UNSAFE.match(ch):  # controls, bidirectional overrides
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


# --- tree to AST ---------------------------------------------------------------------------


def _binary(op: str):
    """The method for one binary operator's rule (``iff_``, ``and_``, …)."""

    @v_args(inline=True, meta=True)
    def build(self, meta, left, right):
        return ast.BinE(op, left, right, self._s(meta))

    return build


class ToAst(Transformer_NonRecursive):
    """Builds ``unmask.language.ast`` nodes, one method per grammar rule.

    The grammar leaves keywords and punctuation out of the tree, so each method receives
    by name exactly the parts that carry meaning, with ``meta`` (the rule's position) first;
    every node gets the span of the text it was parsed from. String escapes are checked
    here and reported as diagnostics.
    """

    def __init__(self, file: str):
        super().__init__()
        self.file = file
        self.diagnostics: list[Diagnostic] = []

    def _s(self, m) -> Span | None:
        return span_of(self.file, m)

    def _str(self, tok: Token | None) -> str | None:
        if tok is None:
            return None
        value, errors = decode_string(str(tok))
        for offset, message in errors:
            # a token the lexer made knows where it is (only a hand-made one could lack it)
            assert tok.line is not None and tok.column is not None and tok.start_pos is not None
            col = tok.column + offset
            pos = tok.start_pos + offset
            self.diagnostics.append(
                Diagnostic(
                    Code.BAD_ESCAPE,
                    message,
                    Span(self.file, tok.line, col, tok.line, col + 1, pos, pos + 1),
                    help=ESCAPES_HELP,
                )
            )
        return value

    # statements

    def start(self, children):
        return tuple(children)

    @v_args(inline=True, meta=True)
    def protocol_decl(self, meta, name, text):
        return ast.ProtocolDecl(str(name), self._str(text) or "", self._s(meta))

    @v_args(inline=True, meta=True)
    def atom_decl(self, meta, name, role, description):
        return ast.AtomDecl(
            str(name), role, self._str(description), (), self._s(meta), self._s(name)
        )

    @v_args(inline=True, meta=True)
    def family_decl(self, meta, name, params, role, description):
        return ast.AtomDecl(
            str(name),
            role,
            self._str(description),
            tuple(str(p) for p in params),
            self._s(meta),
            self._s(name),
            tuple(self._s(p) for p in params),
        )

    def name_list(self, names):
        return tuple(names)

    @v_args(inline=True)
    def binder(self, var, domain):
        return ast.Binder(str(var), str(domain), self._s(var), self._s(domain))

    @v_args(inline=True)
    def role(self, word):
        return str(word)

    @v_args(inline=True, meta=True)
    def free_domain(self, meta, name):
        return ast.DomainDecl(str(name), None, self._s(meta), self._s(name))

    @v_args(inline=True, meta=True)
    def fixed_domain(self, meta, name, members):
        members = members or ()
        return ast.DomainDecl(
            str(name),
            tuple(str(m) for m in members),
            self._s(meta),
            self._s(name),
            tuple(self._s(m) for m in members),
        )

    def member_list(self, names):
        return tuple(names)

    @v_args(inline=True, meta=True)
    def ident(self, meta, name, args):
        return ast.Ident(str(name), tuple(str(a) for a in args or ()), self._s(meta))

    @v_args(inline=True, meta=True)
    def constraint_decl(self, meta, ident, expr):
        return ast.ConstraintDecl(ident, expr, self._s(meta))

    @v_args(meta=True)
    def verdict_decl(self, meta, children):
        first_match = (
            bool(children) and children[-1] is not None and (children[-1].type == "FIRST_MATCH")
        )
        names = [n for n in children if n is not None and n.type == "NAME"]
        return ast.VerdictDecl(
            tuple(str(n) for n in names),
            self._s(meta),
            tuple(self._s(n) for n in names),
            first_match,
        )

    @v_args(inline=True, meta=True)
    def decision_pass(self, meta, expr):
        return ast.DecisionDecl(expr, self._s(meta))

    @v_args(inline=True, meta=True)
    def decision_label(self, meta, label, expr):
        return ast.DecisionDecl(expr, self._s(meta), str(label), self._s(label))

    @v_args(inline=True, meta=True)
    def decision_otherwise(self, meta, label):
        return ast.DecisionDecl(None, self._s(meta), str(label), self._s(label))

    @v_args(inline=True, meta=True)
    def define_plain(self, meta, name, expr):
        return ast.DefineDecl(str(name), expr, (), self._s(meta), self._s(name))

    @v_args(inline=True, meta=True)
    def define_family(self, meta, name, params, expr):
        return ast.DefineDecl(
            str(name),
            expr,
            tuple(str(p) for p in params),
            self._s(meta),
            self._s(name),
            tuple(self._s(p) for p in params),
        )

    @v_args(inline=True, meta=True)
    def requirement_simple(self, meta, ident, description, holds):
        return ast.RequirementDecl(ident, self._str(description), holds, None, self._s(meta))

    @v_args(inline=True, meta=True)
    def requirement_block(self, meta, ident, description, holds, addressed):
        return ast.RequirementDecl(ident, self._str(description), holds, addressed, self._s(meta))

    @v_args(inline=True)
    def holds(self, expr):
        return expr

    @v_args(inline=True)
    def addressed(self, expr):
        return expr

    @v_args(inline=True, meta=True)
    def ground_iff(self, meta, judge, context):
        return ast.GroundDecl(judge, context, self._s(meta), "~")

    @v_args(inline=True, meta=True)
    def ground_implies(self, meta, judge, context):
        return ast.GroundDecl(judge, context, self._s(meta), "~>")

    @v_args(meta=True)
    def for_decl(self, meta, children):
        *binds, body = children
        return ast.ForDecl(tuple(binds), body, self._s(meta))

    # expressions

    @v_args(inline=True, meta=True)
    def name_ref(self, meta, name):
        return ast.Ref(str(name), (), self._s(meta))

    @v_args(inline=True, meta=True)
    def member_ref(self, meta, name, args):
        return ast.Ref(
            str(name), tuple(str(a) for a in args), self._s(meta), tuple(self._s(a) for a in args)
        )

    iff_ = _binary("iff")
    implies_ = _binary("implies")
    or_ = _binary("or")
    xor_ = _binary("xor")
    and_ = _binary("and")

    @v_args(inline=True, meta=True)
    def not_(self, meta, arg):
        return ast.NotE(arg, self._s(meta))

    @v_args(inline=True, meta=True)
    def true_(self, meta):
        return ast.Lit(True, self._s(meta))

    @v_args(inline=True, meta=True)
    def false_(self, meta):
        return ast.Lit(False, self._s(meta))

    @v_args(inline=True, meta=True)
    def verdict(self, meta):
        return ast.Verdict(self._s(meta))

    @v_args(inline=True)
    def boolop(self, word):
        return str(word)

    @v_args(inline=True)
    def cardop(self, word):
        return str(word)

    def expr_list(self, exprs):
        return tuple(exprs)

    @v_args(meta=True)
    def generator(self, meta, children):
        body, *binds = children
        return ast.Generator(body, tuple(binds), self._s(meta))

    @v_args(inline=True, meta=True)
    def bool_call(self, meta, op, args):
        return ast.Call(op, None, args or (), None, self._s(meta))

    @v_args(inline=True, meta=True)
    def bool_gen(self, meta, op, gen):
        return ast.Call(op, None, (), gen, self._s(meta))

    @v_args(inline=True, meta=True)
    def card_call(self, meta, op, k, args):
        return ast.Call(op, str(k), args or (), None, self._s(meta), self._s(k))

    @v_args(inline=True, meta=True)
    def card_gen(self, meta, op, k, gen):
        return ast.Call(op, str(k), (), gen, self._s(meta), self._s(k))
