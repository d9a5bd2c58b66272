"""The ground intermediate representation: Boolean expressions and protocols.

Contract:
- every node is a frozen, slotted dataclass; its ``span`` (where it came from in a
  ``.proto`` file) never takes part in equality or hashing, so two protocols that mean the
  same thing compare equal whatever their layout;
- build expressions through the smart constructors (``mk_*``), which fold constants,
  flatten nested ``and``/``or`` and cancel double negation: that keeps the IR small and makes
  equal meanings more often equal trees; the constructors never change what a formula means;
- the IR is *ground*: no families, domains or variables are left (see ``unmask.language.compiler``).

Size: the nodes, their smart constructors, the one fold with its ``Table`` and the protocol types
stay together so the IR imports nothing of the project but ``Span`` (``unmask.plumbing.span``, under
every layer, so diagnostics can name a place without the IR) and the deadline watch
(``unmask.plumbing.budget``: a fold under a caller's deadline stops when it passes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import field
from typing import Any, ClassVar, Generic, TypeVar

from unmask.plumbing.budget import EVERY, tick
from unmask.plumbing.frozen import frozen
from unmask.plumbing.span import Span

ROLES = ("judge", "context", "procedure")
CARD_OPS = ("atleast", "atmost", "exactly")
NARY_OPS = ("and", "or", "xor")
BINARY_OPS = ("implies", "iff")
# every kind of node a table must cover: the leaves, then each operator
KINDS = ("const", "atom", "ref", "not", *NARY_OPS, *BINARY_OPS, *CARD_OPS)
# the verdict labels of a protocol without a `verdict` statement
BINARY_LABELS = ("PASS", "FAIL")
# the verdict variables among the atoms: V of a binary protocol (true for PASS), and V_L of
# each declared label; `$` is in no name, so they never clash with an atom
VERDICT_ATOM = "$pass"
LABEL_PREFIX = "$v:"
DIRECTIONS = ("~", "~>")
# binding strength in `.proto` syntax, loosest first (cardinalities are written as calls)
PRECEDENCE = {"iff": 1, "implies": 2, "or": 3, "xor": 4, "and": 5, "not": 6}


def _loc() -> Span | None:
    return field(default=None, compare=False, hash=False, repr=False)


# --- expressions -------------------------------------------------------------------------


@frozen
class Const:
    value: bool
    span: Span | None = _loc()
    kind: ClassVar[str] = "const"


@frozen
class Atom:
    name: str
    span: Span | None = _loc()
    kind: ClassVar[str] = "atom"


@frozen
class Ref:
    """A use of a definition (``define NAME = EXPR``): it means ``body`` and is shown as
    ``name`` (the ground name as written: ``all_said``, or ``ok(cto)`` for a family)."""

    name: str
    body: Expr
    span: Span | None = _loc()
    kind: ClassVar[str] = "ref"


@frozen
class Not:
    arg: Expr
    span: Span | None = _loc()
    kind: ClassVar[str] = "not"


@frozen
class Nary:
    """``and``, ``or`` or ``xor`` over any number of arguments."""

    op: str
    args: tuple[Expr, ...]
    span: Span | None = _loc()

    @property
    def kind(self) -> str:
        return self.op


@frozen
class Binary:
    """``implies`` or ``iff``."""

    op: str
    left: Expr
    right: Expr
    span: Span | None = _loc()

    @property
    def kind(self) -> str:
        return self.op


@frozen
class Card:
    """``atleast``/``atmost``/``exactly`` k of the arguments are true."""

    op: str
    k: int
    args: tuple[Expr, ...]
    span: Span | None = _loc()

    @property
    def kind(self) -> str:
        return self.op


Expr = Const | Atom | Ref | Not | Nary | Binary | Card
# the node class of each kind (a table may key an entry by class to cover all its kinds)
KIND_CLASS: dict[str, type] = {
    "const": Const,
    "atom": Atom,
    "ref": Ref,
    "not": Not,
    **dict.fromkeys(NARY_OPS, Nary),
    **dict.fromkeys(BINARY_OPS, Binary),
    **dict.fromkeys(CARD_OPS, Card),
}

FALSE = Const(False)  # what the compiler puts where nothing is left to check


def mk_const(value: bool, span: Span | None = None) -> Const:
    return Const(bool(value), span)


def mk_atom(name: str, span: Span | None = None) -> Atom:
    return Atom(name, span)


def mk_ref(name: str, body: Expr, span: Span | None = None) -> Ref:
    # kept even when the body is a constant: reports show expressions as written
    return Ref(name, body, span)


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


# --- traversal ---------------------------------------------------------------------------


def children(e: Expr) -> tuple[Expr, ...]:
    cls = e.__class__
    if cls is Nary or cls is Card:
        return e.args  # type: ignore[union-attr]
    if cls is Not:
        return (e.arg,)  # type: ignore[union-attr]
    if cls is Binary:
        return (e.left, e.right)  # type: ignore[union-attr]
    if cls is Ref:
        return (e.body,)  # type: ignore[union-attr]
    return ()


T = TypeVar("T")
Memo = MutableMapping[int, tuple[Expr, Any]]


def fold(expr: Expr, step: Callable[[Expr, list[T]], T], memo: Memo | None = None) -> T:
    """Bottom-up fold of ``expr`` without recursion (depth is bounded by memory, not by
    Python's stack); ``step(node, values of its children)``, each node object once.

    ``memo`` maps ``id(node)`` to ``(node, value)``; it keeps the node alive so its id can
    never be reused while the memo lives, and may be kept between calls.
    """
    if memo is None:
        memo = {}
    got = memo.get(id(expr))
    if got is not None:
        return got[1]
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    work = 0
    while stack:
        e, expanded = stack.pop()
        if id(e) in memo:
            continue
        work += 1
        if work >= EVERY:  # a caller's deadline cuts a fold of a huge expression
            tick(work)
            work = 0
        kids = children(e)
        if kids and not expanded:
            stack.append((e, True))
            stack.extend((c, False) for c in reversed(kids) if id(c) not in memo)
            continue
        memo[id(e)] = (e, step(e, [memo[id(c)][1] for c in kids]))
    return memo[id(expr)][1]


def _body_value(_context: Any, _node: Any, values: list[Any]) -> Any:
    return values[0]


class MissingEntry(TypeError):
    """A table lacks an entry for some kind of node (a programming error, found at import)."""


Entry = Callable[[Any, Any, list[Any]], Any]


class Table(Generic[T]):
    """One target of the IR: an entry per kind of node, applied by the one ``fold``.

    ``entries`` maps a kind (``"atom"``, ``"and"``, ``"atleast"``…) or a node class (which
    covers all its kinds) to ``entry(context, node, values of its children)``. Every kind
    in ``KINDS`` must be covered: a missing one is an error when the table is built, not a
    silent fall-through when a formula happens to use it. The one default is ``ref``: a
    definition means its body, so a table that does not print names gets the body's value.
    """

    def __init__(self, target: str, entries: Mapping[str | type, Entry]) -> None:
        self.target = target
        by_kind: dict[str, Entry] = {}
        for kind in KINDS:
            entry = entries.get(kind) or entries.get(KIND_CLASS[kind])
            if entry is None and kind == "ref":
                entry = _body_value
            if entry is None:
                raise MissingEntry(f"the {target} table has no entry for `{kind}`")
            by_kind[kind] = entry
        unknown = [k for k in entries if k not in KINDS and k not in KIND_CLASS.values()]
        if unknown:
            raise MissingEntry(f"the {target} table names unknown kinds: {unknown!r}")
        self.by_kind = by_kind

    def __call__(self, expr: Expr, context: Any = None, memo: Memo | None = None) -> T:
        by_kind = self.by_kind

        def step(e: Expr, values: list[Any]) -> Any:
            entry = by_kind.get(e.kind)
            if entry is None:
                raise MissingEntry(f"the {self.target} table cannot handle {e!r}")
            return entry(context, e, values)

        return fold(expr, step, memo)


def small_shape(e: Expr) -> tuple[str, str, str] | None:
    """``(kind, left, right)`` for the shapes of nearly every part and query, else None:
    ``("atom", a, a)`` for ``a``, ``("not", a, a)`` for ``not a``, ``(op, a, b)`` for
    ``a implies b`` and ``a iff b``. The one place that knows them, so every quick path
    (atoms, closed values, truth masks) reads the same shapes without a fold."""
    cls = e.__class__
    if cls is Atom:
        return "atom", e.name, e.name  # type: ignore[union-attr]
    if cls is Not:
        arg = e.arg  # type: ignore[union-attr]
        return ("not", arg.name, arg.name) if arg.__class__ is Atom else None
    if cls is Binary:
        left, right = e.left, e.right  # type: ignore[union-attr]
        if left.__class__ is Atom and right.__class__ is Atom:
            return e.op, left.name, right.name  # type: ignore[union-attr]
    return None


def iter_atoms(e: Expr) -> Iterator[str]:
    """Atom names in first-occurrence order, each once (iterative: IR may be deep)."""
    shape = small_shape(e)
    if shape is not None:
        _, left, right = shape
        return iter((left,) if left == right else (left, right))
    return _walk_atoms(e)


def _walk_atoms(e: Expr) -> Iterator[str]:
    seen: set[str] = set()
    # a node shared by several parents (a definition's body, a decision that first-match
    # negates under every later label) is walked at its first use, whose atoms come first
    # anyway: the walk is linear in the distinct nodes, not in the written-out tree (a
    # chain of doubling definitions, or 400 first-match labels: cubic in `analyze`)
    walked: set[int] = set()
    stack = [e]
    while stack:
        node = stack.pop()
        cls = node.__class__
        if cls is Atom:
            if node.name not in seen:  # type: ignore[union-attr]
                seen.add(node.name)  # type: ignore[union-attr]
                yield node.name  # type: ignore[union-attr]
        elif cls is not Const:
            if id(node) in walked:
                continue
            walked.add(id(node))
            stack.extend(reversed(children(node)))


def _card_holds(op: str, k: int, n: int) -> bool:
    return n >= k if op == "atleast" else n <= k if op == "atmost" else n == k


# the reference semantics; an atom missing from the assignment is a KeyError
_EVALUATE: Table[bool] = Table(
    "evaluation",
    {
        "const": lambda env, e, _: e.value,
        "atom": lambda env, e, _: env[e.name],
        "not": lambda env, e, v: not v[0],
        "and": lambda env, e, v: all(v),
        "or": lambda env, e, v: any(v),
        "xor": lambda env, e, v: sum(v) % 2 == 1,
        "implies": lambda env, e, v: not v[0] or v[1],
        "iff": lambda env, e, v: v[0] == v[1],
        Card: lambda env, e, v: _card_holds(e.op, e.k, sum(v)),
    },
)


def evaluate(e: Expr, env: Mapping[str, bool]) -> bool:
    """Evaluate under a total assignment to e's atoms (the reference semantics)."""
    return _EVALUATE(e, env)


def depth(e: Expr, memo: Memo | None = None) -> int:
    """Nesting of ``e`` as written out, a definition's body counted at each use; in time
    linear in the distinct nodes (``memo``, as ``fold``'s, may be kept between calls)."""
    return fold(e, lambda _node, v: 1 + max(v, default=0), memo)


def size(e: Expr, memo: Memo | None = None) -> int:
    """Nodes of ``e`` as written out, a definition's body counted at each use (what
    ``max_expr_nodes`` bounds), counted without writing it out: linear in the distinct
    nodes, however often a body is shared."""
    return fold(e, lambda _node, v: 1 + sum(v), memo)


# --- protocols ------------------------------------------------------------------------------


@frozen
class AtomDecl:
    name: str
    role: str
    description: str = ""
    span: Span | None = _loc()


@frozen
class Constraint:
    name: str
    expr: Expr
    span: Span | None = _loc()


@frozen
class Requirement:
    id: str
    description: str
    expr: Expr
    addressed: Expr | None = None
    span: Span | None = _loc()


@frozen
class GroundPair:
    """``ground JUDGE ~ CONTEXT`` (``direction`` ``~``, checked as iff) or ``~>`` (one way,
    checked as implies). Each side is an expression; an atom name given as a string is
    taken as that atom, so ``GroundPair("j", "c")`` still means what it always did."""

    judge: Expr
    context: Expr
    span: Span | None = _loc()
    direction: str = "~"
    # built once: every replay sharing the protocol asks the same query object
    _query: Expr = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for side in ("judge", "context"):
            value = getattr(self, side)
            if isinstance(value, str):
                object.__setattr__(self, side, Atom(value))
        if self.direction not in DIRECTIONS:
            raise ValueError(f"not a grounding direction: {self.direction}")
        make = mk_implies if self.direction == "~>" else mk_iff
        object.__setattr__(self, "_query", make(self.judge, self.context))

    @property
    def query(self) -> Expr:
        """What the check asks of the evidence: JUDGE iff CONTEXT, or JUDGE implies CONTEXT."""
        return self._query


@frozen
class Decision:
    """``decision LABEL iff EXPR``; ``expr`` is None for ``decision LABEL otherwise``."""

    label: str
    expr: Expr | None
    span: Span | None = _loc()


@frozen
class Definition:
    """``define NAME = EXPR`` at one ground name (``ok(cto)`` for a family definition)."""

    name: str
    expr: Expr
    span: Span | None = _loc()


@frozen
class Protocol:
    """A ground protocol (the ``unmask.protocol/1`` form of ``unmask.ir.json``).

    Two shapes: a *binary* protocol (no ``verdict`` statement) has ``decision`` D, labels
    PASS and FAIL, and no ``decisions``; a protocol that declares its labels has
    ``decision`` None and one ``Decision`` per label in ``decisions``, in declaration order.
    ``decision_for(label)`` answers D_L for either shape. ``first_match`` (declared labels
    only, ``verdict … first-match``) makes the labels an ordered list: D_L is L's decision
    and none of the earlier labels' decisions, so the effective decisions never overlap.
    """

    name: str
    text: str
    atoms: tuple[AtomDecl, ...]
    constraints: tuple[Constraint, ...]
    decision: Expr | None
    requirements: tuple[Requirement, ...]
    grounding: tuple[GroundPair, ...]
    span: Span | None = _loc()
    labels: tuple[str, ...] = BINARY_LABELS
    decisions: tuple[Decision, ...] = ()
    definitions: tuple[Definition, ...] = ()
    first_match: bool = False
    # read for every replay many times over (facts, order, the unannotated): kept once
    _names: tuple[str, ...] = field(init=False, repr=False, compare=False)
    # an importer annotates thousands of atoms; a scan per lookup made that quadratic
    _by_name: dict[str, AtomDecl] = field(init=False, repr=False, compare=False)
    # each label's decision (the last of its name, as a scan found it): a scan per label
    # made building the decision parts of n labels quadratic
    _by_label: dict[str, Decision] = field(init=False, repr=False, compare=False)
    # first-match: D_L of every label, made once, over one shared chain (below)
    _first: dict[str, Expr] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_names", tuple(a.name for a in self.atoms))
        by_name: dict[str, AtomDecl] = {}
        for a in self.atoms:
            by_name.setdefault(a.name, a)  # the first declaration, as the scan found it
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "_by_label", {d.label: d for d in self.decisions})
        object.__setattr__(self, "_first", None)

    @property
    def declared_labels(self) -> bool:
        return bool(self.decisions)

    def decision_for(self, label: str) -> Expr:
        """D_L: the condition under which ``label`` is the verdict (``otherwise`` is the
        negation of every other label's decision; under ``first_match`` a written decision
        is conjoined with the negation of every earlier label's written decision)."""
        if not self.decisions:
            assert self.decision is not None
            if label == BINARY_LABELS[0]:
                return self.decision
            if label == BINARY_LABELS[1]:
                return mk_not(self.decision)
            raise KeyError(label)
        found = self._by_label.get(label)
        if found is None:
            raise KeyError(label)
        if self.first_match:
            return self._first_match()[label]
        if found.expr is not None:
            return found.expr
        return mk_not(
            mk_or(d.expr for d in self.decisions if d.label != label and d.expr is not None)
        )

    def _first_match(self) -> dict[str, Expr]:
        """D_L of every label under first-match, made once per protocol: "some earlier
        label's written decision holds" is a chain R_1 = false, R_(i+1) = R_i or E_i, each
        link written `not R_i implies E_i` so that no smart constructor (nor a substitution
        through them) flattens it into one wide `or` per label; D_L = E_L and not R_L, and
        `otherwise` is not R_end. Linear in the labels: written out, each D_L repeated
        every earlier decision, n^2 nodes in all (2,000 labels took minutes to check)."""
        got = self._first
        if got is None:
            got = {}
            earlier: Expr = FALSE
            for d in self.decisions:
                if d.expr is None:
                    continue
                got[d.label] = mk_and([d.expr, mk_not(earlier)])
                earlier = mk_implies(mk_not(earlier), d.expr)
            for d in self.decisions:
                if d.expr is None:
                    got[d.label] = mk_not(earlier)
            object.__setattr__(self, "_first", got)
        return got

    @property
    def decision_exprs(self) -> tuple[Expr, ...]:
        """Every decision expression as written (``otherwise`` has none)."""
        if not self.decisions:
            return () if self.decision is None else (self.decision,)
        return tuple(d.expr for d in self.decisions if d.expr is not None)

    def exprs(self) -> Iterator[Expr]:
        """Every expression the protocol states (decisions, grounding sides, constraints,
        requirements and their coverage), as written; a definition's body is reached
        through its uses."""
        yield from self.decision_exprs
        for g in self.grounding:
            yield g.judge
            yield g.context
        for c in self.constraints:
            yield c.expr
        for r in self.requirements:
            yield r.expr
            if r.addressed is not None:
                yield r.addressed

    def atom(self, name: str) -> AtomDecl | None:
        return self._by_name.get(name)

    @property
    def atom_names(self) -> tuple[str, ...]:
        return self._names
