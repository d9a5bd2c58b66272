"""The surface syntax tree of a `.proto` file, as written (families, variables, spans).

Contract: every node is a frozen, slotted dataclass whose ``span`` (an ``unmask.ir.Span``)
takes no part in equality, so two parses of differently laid-out text compare equal when
they say the same thing. Strings hold their decoded values. Nothing here is ground: the
compiler (``unmask.language.compiler``) resolves names and expands families into ``unmask.ir``.
Helpers that walk expressions are iterative, because surface trees may be very deep.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import field

from unmask.ir import Span
from unmask.plumbing import names
from unmask.plumbing.frozen import frozen

# --- expressions ---------------------------------------------------------------------------


@frozen
class Lit:
    """``true`` or ``false``."""

    value: bool
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)


@frozen
class Verdict:
    """The reserved verdict ``pass`` used as an expression (always a compile error)."""

    span: Span | None = field(default=None, compare=False, hash=False, repr=False)


# how a family member is written and named: one function for every layer (unmask.plumbing.names)
applied = names.applied


@frozen
class Ref:
    """``name`` (no ``args``) or ``family(a, …)``, each argument a variable or a member."""

    name: str
    args: tuple[str, ...] = ()
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)
    arg_spans: tuple[Span | None, ...] = field(default=(), compare=False, hash=False, repr=False)

    def __str__(self) -> str:
        return applied(self.name, self.args)


@frozen
class NotE:
    arg: Expr
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)


@frozen
class BinE:
    """One binary operator as written: ``iff``, ``implies``, ``or``, ``xor`` or ``and``."""

    op: str
    left: Expr
    right: Expr
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)


@frozen
class Binder:
    """``var in domain``, one of the bindings of a generator or a ``for`` statement."""

    var: str
    domain: str
    var_span: Span | None = field(default=None, compare=False, hash=False, repr=False)
    domain_span: Span | None = field(default=None, compare=False, hash=False, repr=False)

    def __str__(self) -> str:
        return f"{self.var} in {self.domain}"


@frozen
class Generator:
    """``body for x in D, y in E``: the body once per combination of members, the first
    binder varying slowest (as nested generators written in the same order would)."""

    body: Expr
    binds: tuple[Binder, ...]
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)


@frozen
class Call:
    """``all``/``any``/``atleast``/``atmost``/``exactly``: either ``args`` or one ``gen``.

    ``k`` is the cardinality bound for the counting calls, ``None`` for ``all``/``any``;
    it is kept as the text written so that a huge or negative bound is a diagnostic.
    """

    op: str
    k: str | None
    args: tuple[Expr, ...] = ()
    gen: Generator | None = None
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)
    k_span: Span | None = field(default=None, compare=False, hash=False, repr=False)


Expr = Lit | Verdict | Ref | NotE | BinE | Call


def children(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, NotE):
        return (e.arg,)
    if isinstance(e, BinE):
        return (e.left, e.right)
    if isinstance(e, Call):
        return (e.gen.body,) if e.gen is not None else e.args
    return ()


# Chains that the IR flattens (`a and b and …`) count as one level of nesting wherever the
# same operator is regrouped; for `xor` and `iff` only the left-associative spine does (a
# regrouped `xor` folds constants differently, and `iff` is kept binary).
FLAT_OPS = frozenset({"and", "or"})
LEFT_CHAIN_OPS = frozenset({"xor", "iff"})
CHAIN_OPS = FLAT_OPS | LEFT_CHAIN_OPS


def same_chain(parent: Expr, child: Expr, is_left: bool) -> bool:
    if not (isinstance(parent, BinE) and isinstance(child, BinE) and child.op == parent.op):
        return False
    return parent.op in FLAT_OPS or (is_left and parent.op in LEFT_CHAIN_OPS)


def depth(e: Expr) -> int:
    """Nesting depth (a leaf is 1; see ``same_chain``), computed without recursion."""
    best = 0
    stack = [(e, 1)]
    while stack:
        node, d = stack.pop()
        best = max(best, d)
        if isinstance(node, BinE):
            stack.append((node.left, d if same_chain(node, node.left, True) else d + 1))
            stack.append((node.right, d if same_chain(node, node.right, False) else d + 1))
        else:
            stack.extend((c, d + 1) for c in children(node))
    return best


def chain_operands(e: BinE) -> list[Expr]:
    """The operands of the chain rooted at ``e`` (see ``same_chain``), left to right."""
    out: list[Expr] = []
    stack: list[tuple[Expr, Expr | None, bool]] = [(e, None, True)]
    while stack:
        node, parent, is_left = stack.pop()
        if parent is None or same_chain(parent, node, is_left):
            assert isinstance(node, BinE)
            stack.append((node.right, node, False))
            stack.append((node.left, node, True))
        else:
            out.append(node)
    return out


# --- statements ----------------------------------------------------------------------------


@frozen
class Ident:
    """A constraint name or requirement id: ``cited``, ``cited(X)`` or ``cited(X, Y)``."""

    name: str
    args: tuple[str, ...] = ()
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)

    def __str__(self) -> str:
        return applied(self.name, self.args)


@frozen
class ProtocolDecl:
    name: str
    text: str
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)


@frozen
class AtomDecl:
    """``atom name : role "description"``; a family when ``params`` names its domains, one
    per position (a domain may appear twice: ``same(claim, claim)``)."""

    name: str
    role: str
    description: str | None = None
    params: tuple[str, ...] = ()
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)
    name_span: Span | None = field(default=None, compare=False, hash=False, repr=False)
    param_spans: tuple[Span | None, ...] = field(default=(), compare=False, hash=False, repr=False)


@frozen
class DomainDecl:
    """``domain name`` (free: ``members`` None) or ``domain name = {a, b}`` (fixed)."""

    name: str
    members: tuple[str, ...] | None = None
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)
    name_span: Span | None = field(default=None, compare=False, hash=False, repr=False)
    member_spans: tuple[Span | None, ...] = field(default=(), compare=False, hash=False)


@frozen
class ConstraintDecl:
    ident: Ident
    expr: Expr
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)


@frozen
class VerdictDecl:
    """``verdict L1 | L2 | …``: the protocol's verdict labels, in declaration order;
    ``first_match`` when written ``verdict L1 | L2 first-match`` (the first label whose
    decision holds is the verdict)."""

    labels: tuple[str, ...]
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)
    label_spans: tuple[Span | None, ...] = field(default=(), compare=False, hash=False)
    first_match: bool = False


@frozen
class DecisionDecl:
    """``decision pass iff EXPR`` (``label`` None), ``decision L iff EXPR`` or
    ``decision L otherwise`` (``expr`` None)."""

    expr: Expr | None
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)
    label: str | None = None
    label_span: Span | None = field(default=None, compare=False, hash=False, repr=False)


@frozen
class DefineDecl:
    """``define NAME = EXPR``, or a family ``define NAME(D1, D2) = EXPR`` (``params``), in
    whose body each domain's name stands for its member (so each is named once)."""

    name: str
    expr: Expr
    params: tuple[str, ...] = ()
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)
    name_span: Span | None = field(default=None, compare=False, hash=False, repr=False)
    param_spans: tuple[Span | None, ...] = field(default=(), compare=False, hash=False, repr=False)


@frozen
class RequirementDecl:
    ident: Ident
    description: str | None
    holds: Expr
    addressed: Expr | None = None
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)


@frozen
class GroundDecl:
    """``ground LEFT ~ RIGHT`` (``direction`` ``~``) or ``ground LEFT ~> RIGHT``."""

    judge: Expr
    context: Expr
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)
    direction: str = "~"


@frozen
class ForDecl:
    """``for x in D, y in E: STATEMENT``: the statement once per combination of members."""

    binds: tuple[Binder, ...]
    body: ConstraintDecl | RequirementDecl | GroundDecl
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)


Statement = (
    ProtocolDecl
    | AtomDecl
    | DomainDecl
    | ConstraintDecl
    | VerdictDecl
    | DecisionDecl
    | DefineDecl
    | RequirementDecl
    | GroundDecl
    | ForDecl
)


@frozen
class Comment:
    """A ``#`` comment, kept for the formatter."""

    text: str
    span: Span | None = field(default=None, compare=False, hash=False, repr=False)


@frozen
class SourceFile:
    statements: tuple[Statement, ...]
    comments: tuple[Comment, ...] = field(default=(), compare=False, hash=False)
    file: str = field(default="<input>", compare=False, hash=False)


def statement_exprs(s: Statement) -> Iterator[Expr]:
    """The expressions a statement holds (for limit checks)."""
    if isinstance(s, ForDecl):
        s = s.body
    if isinstance(s, (ConstraintDecl, DefineDecl)):
        yield s.expr
    elif isinstance(s, DecisionDecl):
        if s.expr is not None:
            yield s.expr
    elif isinstance(s, GroundDecl):
        yield s.judge
        yield s.context
    elif isinstance(s, RequirementDecl):
        yield s.holds
        if s.addressed is not None:
            yield s.addressed
