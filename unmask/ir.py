"""The ground intermediate representation: Boolean expressions and protocols.

Contract:
- every node is a frozen, slotted dataclass; its ``span`` (where it came from in a
  ``.proto`` file) never takes part in equality or hashing, so two protocols that mean the
  same thing compare equal whatever their layout;
- build expressions through the smart constructors (``mk_*``), which fold constants,
  flatten nested ``and``/``or`` and cancel double negation: that keeps the IR small and makes
  equal meanings more often equal trees; the constructors never change what a formula means;
- the IR is *ground*: no families, domains or variables are left (see ``unmask.compiler``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

ROLES = ("judge", "context", "procedure")
CARD_OPS = ("atleast", "atmost", "exactly")
NARY_OPS = ("and", "or", "xor")
BINARY_OPS = ("implies", "iff")


@dataclass(frozen=True, slots=True)
class Span:
    """A half-open region of a source file; lines and columns count from 1."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    start_pos: int = 0
    end_pos: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


def _loc() -> Span | None:
    return field(default=None, compare=False, hash=False, repr=False)


# --- expressions -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Const:
    value: bool
    span: Span | None = _loc()


@dataclass(frozen=True, slots=True)
class Atom:
    name: str
    span: Span | None = _loc()


@dataclass(frozen=True, slots=True)
class Not:
    arg: Expr
    span: Span | None = _loc()


@dataclass(frozen=True, slots=True)
class Nary:
    """``and``, ``or`` or ``xor`` over any number of arguments."""

    op: str
    args: tuple[Expr, ...]
    span: Span | None = _loc()


@dataclass(frozen=True, slots=True)
class Binary:
    """``implies`` or ``iff``."""

    op: str
    left: Expr
    right: Expr
    span: Span | None = _loc()


@dataclass(frozen=True, slots=True)
class Card:
    """``atleast``/``atmost``/``exactly`` k of the arguments are true."""

    op: str
    k: int
    args: tuple[Expr, ...]
    span: Span | None = _loc()


Expr = Const | Atom | Not | Nary | Binary | Card

TRUE = Const(True)
FALSE = Const(False)


def mk_const(value: bool, span: Span | None = None) -> Const:
    return Const(bool(value), span)


def mk_atom(name: str, span: Span | None = None) -> Atom:
    return Atom(name, span)


def mk_not(arg: Expr, span: Span | None = None) -> Expr:
    if isinstance(arg, Const):
        return Const(not arg.value, span)
    if isinstance(arg, Not):
        return arg.arg
    return Not(arg, span)


def mk_nary(op: str, args: Iterable[Expr], span: Span | None = None) -> Expr:
    if op == "and":
        return mk_and(args, span)
    if op == "or":
        return mk_or(args, span)
    if op == "xor":
        return mk_xor(args, span)
    raise ValueError(f"not an n-ary operator: {op}")


def _flatten(op: str, args: Iterable[Expr], unit: bool, span: Span | None) -> Expr:
    out: list[Expr] = []
    for a in args:
        if isinstance(a, Const):
            if a.value == unit:
                continue  # the unit (true for and, false for or) changes nothing
            return Const(not unit, span)  # the absorbing element decides
        if isinstance(a, Nary) and a.op == op:
            out.extend(a.args)
        else:
            out.append(a)
    if not out:
        return Const(unit, span)
    if len(out) == 1:
        return out[0]
    return Nary(op, tuple(out), span)


def mk_and(args: Iterable[Expr], span: Span | None = None) -> Expr:
    return _flatten("and", args, True, span)


def mk_or(args: Iterable[Expr], span: Span | None = None) -> Expr:
    return _flatten("or", args, False, span)


def mk_xor(args: Iterable[Expr], span: Span | None = None) -> Expr:
    parity = False
    out: list[Expr] = []
    for a in args:
        if isinstance(a, Const):
            parity ^= a.value
        elif isinstance(a, Nary) and a.op == "xor":
            out.extend(a.args)
        else:
            out.append(a)
    if not out:
        return Const(parity, span)
    body = out[0] if len(out) == 1 else Nary("xor", tuple(out), span)
    return mk_not(body, span) if parity else body


def mk_binary(op: str, left: Expr, right: Expr, span: Span | None = None) -> Expr:
    if op == "implies":
        return mk_implies(left, right, span)
    if op == "iff":
        return mk_iff(left, right, span)
    raise ValueError(f"not a binary operator: {op}")


def mk_implies(left: Expr, right: Expr, span: Span | None = None) -> Expr:
    if isinstance(left, Const):
        return right if left.value else Const(True, span)
    if isinstance(right, Const):
        return Const(True, span) if right.value else mk_not(left, span)
    return Binary("implies", left, right, span)


def mk_iff(left: Expr, right: Expr, span: Span | None = None) -> Expr:
    if isinstance(left, Const):
        return right if left.value else mk_not(right, span)
    if isinstance(right, Const):
        return left if right.value else mk_not(left, span)
    return Binary("iff", left, right, span)


def mk_card(op: str, k: int, args: Iterable[Expr], span: Span | None = None) -> Expr:
    """Cardinality with constants folded: known-true arguments lower k, known-false vanish."""
    if op not in CARD_OPS:
        raise ValueError(f"not a cardinality operator: {op}")
    if k < 0:
        raise ValueError("k must be >= 0")
    rest: list[Expr] = []
    for a in args:
        if isinstance(a, Const):
            if a.value:
                k -= 1
        else:
            rest.append(a)
    n = len(rest)
    if op == "atleast":
        if k <= 0:
            return Const(True, span)
        if k > n:
            return Const(False, span)
        if k == n:
            return mk_and(rest, span)
        if k == 1:
            return mk_or(rest, span)
    elif op == "atmost":
        if k < 0:
            return Const(False, span)
        if k >= n:
            return Const(True, span)
        if k == 0:
            return mk_and((mk_not(a) for a in rest), span)
    else:  # exactly
        if k < 0 or k > n:
            return Const(False, span)
        if k == 0:
            return mk_and((mk_not(a) for a in rest), span)
        if k == n:
            return mk_and(rest, span)
    return Card(op, k, tuple(rest), span)


# --- traversal and evaluation -------------------------------------------------------------


def children(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, Not):
        return (e.arg,)
    if isinstance(e, (Nary, Card)):
        return e.args
    if isinstance(e, Binary):
        return (e.left, e.right)
    return ()


def iter_atoms(e: Expr) -> Iterator[str]:
    """Atom names in first-occurrence order, each once (iterative: IR may be deep)."""
    seen: set[str] = set()
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, Atom):
            if node.name not in seen:
                seen.add(node.name)
                yield node.name
        else:
            stack.extend(reversed(children(node)))


def evaluate(e: Expr, env: dict[str, bool]) -> bool:
    """Evaluate under a total assignment to e's atoms (the reference semantics)."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Atom):
        return env[e.name]
    if isinstance(e, Not):
        return not evaluate(e.arg, env)
    if isinstance(e, Nary):
        vals = [evaluate(a, env) for a in e.args]
        if e.op == "and":
            return all(vals)
        if e.op == "or":
            return any(vals)
        return sum(vals) % 2 == 1
    if isinstance(e, Binary):
        lv, rv = evaluate(e.left, env), evaluate(e.right, env)
        return (not lv or rv) if e.op == "implies" else lv == rv
    if isinstance(e, Card):
        n = sum(evaluate(a, env) for a in e.args)
        if e.op == "atleast":
            return n >= e.k
        if e.op == "atmost":
            return n <= e.k
        return n == e.k
    raise TypeError(f"not an expression: {e!r}")


def depth(e: Expr) -> int:
    best = 0
    stack = [(e, 1)]
    while stack:
        node, d = stack.pop()
        best = max(best, d)
        stack.extend((c, d + 1) for c in children(node))
    return best


def size(e: Expr) -> int:
    n = 0
    stack = [e]
    while stack:
        node = stack.pop()
        n += 1
        stack.extend(children(node))
    return n


# --- protocols ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AtomDecl:
    name: str
    role: str
    description: str = ""
    span: Span | None = _loc()


@dataclass(frozen=True, slots=True)
class Constraint:
    name: str
    expr: Expr
    span: Span | None = _loc()


@dataclass(frozen=True, slots=True)
class Requirement:
    id: str
    description: str
    expr: Expr
    addressed: Expr | None = None
    span: Span | None = _loc()


@dataclass(frozen=True, slots=True)
class GroundPair:
    judge: str
    context: str
    span: Span | None = _loc()


@dataclass(frozen=True, slots=True)
class Protocol:
    """A ground protocol (SPEC section 3, ``unmask.protocol/1``)."""

    name: str
    text: str
    atoms: tuple[AtomDecl, ...]
    constraints: tuple[Constraint, ...]
    decision: Expr
    requirements: tuple[Requirement, ...]
    grounding: tuple[GroundPair, ...]
    span: Span | None = _loc()

    def atom(self, name: str) -> AtomDecl | None:
        for a in self.atoms:
            if a.name == name:
                return a
        return None

    @property
    def atom_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.atoms)
