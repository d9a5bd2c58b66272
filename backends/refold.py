"""A part of a base folded once against reference values, then re-folded cheaply.

Contract (used by the ``sliced`` backend once a base is known satisfiable):
- ``Refold(expr, atoms, ref, labels, memo)`` substitutes every atom ``ref`` pins (atom -> (value,
  index of the unit part pinning it)) into ``expr``, after splitting every and/or/xor wider
  than ``CHUNK`` into short nested ones (the same formula), and remembers each node's result
  (in ``memo``, which the views of one reference may share);
  the nesting and the map of parents depend on ``expr`` alone and are made once per
  formula (the last ``SHAPES``), so every replay of a protocol shares them;
- ``residual(values, changed)`` is ``expr`` with ``values`` substituted, where ``values``
  differ from the reference only on ``changed``: only the nodes above those atoms are
  folded again (a few short nodes per atom), so a check that unpins one fact of a part
  with n pinned atoms costs about log n, not n.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from unmask.backends.base import PartLabel
from unmask.ir import Atom, Binary, Card, Expr, Memo, Nary, Table, children
from unmask.ir.partial import substitute

CHUNK = 16  # the widest and/or/xor kept for re-folding (wider ones are nested)


def _nest(op: str, args: list[Expr]) -> Nary:
    while len(args) > CHUNK:
        args = [Nary(op, tuple(args[k : k + CHUNK])) for k in range(0, len(args), CHUNK)]
    return Nary(op, tuple(args))


def _same(e: Expr, v: list[Expr]) -> bool:
    return all(a is b for a, b in zip(children(e), v, strict=True))


_NESTED: Table[Expr] = Table(
    "nesting",
    {
        "const": lambda _, e, v: e,
        "atom": lambda _, e, v: e,
        "not": lambda _, e, v: e if _same(e, v) else type(e)(v[0]),
        Nary: lambda _, e, v: (
            _nest(e.op, v) if len(v) > CHUNK else e if _same(e, v) else Nary(e.op, tuple(v))
        ),
        Binary: lambda _, e, v: e if _same(e, v) else Binary(e.op, v[0], v[1]),
        Card: lambda _, e, v: e if _same(e, v) else Card(e.op, e.k, tuple(v)),
    },
)


class _Overlay(dict[int, Any]):
    """A fold memo over a reference one: entries outside ``stale`` are read from it."""

    __slots__ = ("base", "stale")

    def __init__(self, base: Memo, stale: set[int]) -> None:
        super().__init__()
        self.base, self.stale = base, stale

    def get(self, key: int, default: Any = None) -> Any:
        got = dict.get(self, key)
        if got is None and key not in self.stale:
            got = self.base.get(key)
        return default if got is None else got

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and self.get(key) is not None  # keys are ids

    def __getitem__(self, key: int) -> Any:
        got = self.get(key)
        if got is None:
            raise KeyError(key)
        return got


class _Shape:
    """What a part's re-folding needs of its formula alone: the formula with wide nodes
    nested, each node's parents and each atom's leaves. The same for every replay of a
    protocol (its parts are the same objects), so made once per formula."""

    __slots__ = ("expr", "leaves", "parents")

    def __init__(self, expr: Expr) -> None:
        self.expr = _NESTED(expr)
        self.parents: dict[int, list[Expr]] = {}
        self.leaves: dict[str, list[int]] = {}
        seen: set[int] = set()
        stack = [self.expr]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, Atom):
                self.leaves.setdefault(node.name, []).append(id(node))
            for c in children(node):
                self.parents.setdefault(id(c), []).append(node)
                stack.append(c)


SHAPES = 4096  # formulas whose shapes are kept (then the memo starts again)
# id(formula) -> (the formula, kept alive so its id is not reused; its shape)
_SHAPES: dict[int, tuple[Expr, _Shape]] = {}


def _shape(expr: Expr) -> _Shape:
    got = _SHAPES.get(id(expr))
    if got is None or got[0] is not expr:
        if len(_SHAPES) >= SHAPES:
            _SHAPES.clear()
        got = _SHAPES[id(expr)] = (expr, _Shape(expr))
    return got[1]


class Refold:
    """A non-unit part substituted with every fact of a satisfiable base (the reference),
    ready to be re-folded above the few atoms a check changes."""

    __slots__ = (
        "atoms",
        "expr",
        "free",
        "leaves",
        "memo",
        "parents",
        "pin_labels",
        "pinned",
        "pinned_by",
    )

    def __init__(
        self,
        expr: Expr,
        atoms: tuple[str, ...],
        ref: Mapping[str, tuple[bool, int]],
        labels: Sequence[PartLabel],
        memo: Memo | None = None,
        values: Mapping[str, bool] | None = None,
    ) -> None:
        shape = _shape(expr)
        self.expr = shape.expr
        self.atoms = frozenset(atoms)
        self.free = tuple(a for a in atoms if a not in ref)
        self.pinned = tuple(a for a in atoms if a in ref)
        self.pinned_by: dict[PartLabel, list[str]] = {}  # a fact's label -> the atoms it pins here
        for a in self.pinned:
            self.pinned_by.setdefault(labels[ref[a][1]], []).append(a)
        self.pin_labels = frozenset(self.pinned_by)
        self.parents, self.leaves = shape.parents, shape.leaves
        # ``memo`` may be shared by the views of one reference: a node's result depends only
        # on the atoms below it, which every part holding it has, pinned the same. Parts
        # that share a subformula (first-match decisions share the chain of earlier ones)
        # then substitute it once, not once per part (2,000 labels: 4 GB)
        self.memo: Memo = {} if memo is None else memo
        # ``values``: the reference's values of every atom (the caller's, made once for its
        # views); an atom not in this part is never looked up, so all of them may be given
        if values is None:
            values = {a: v for a, (v, _) in ref.items() if a in self.atoms}
        substitute(self.expr, values, self.memo)

    def residual(self, values: Mapping[str, bool], changed: set[str]) -> Expr:
        """The part with the check's values put in, re-folding only above ``changed``."""
        touched = [a for a in changed if a in self.atoms]
        if not touched:
            return self.memo[id(self.expr)][1]
        stale: set[int] = set()
        stack = [k for a in touched for k in self.leaves.get(a, ())]
        while stack:
            k = stack.pop()
            if k not in stale:
                stale.add(k)
                stack.extend(id(p) for p in self.parents.get(k, ()))
        return substitute(self.expr, values, _Overlay(self.memo, stale))
