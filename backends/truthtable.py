"""The exhaustive truth-table backend: an independent oracle with no solver inside.

Contract:
- a check is decided by enumerating every assignment, bit-parallel: over n atoms each
  formula is evaluated once as a 2**n-bit integer (atom i's column is the alternating
  pattern of period 2**(i+1); and/or/xor/not are bitwise; cardinalities use a bitwise
  binary counter and comparator); the conjunction is satisfiable iff its mask is nonzero;
- only the *relevant* part of a base is enumerated: atoms pinned by unit facts
  (``ATOM`` or ``not ATOM`` parts) and by ``assume`` are substituted first, and the rest
  splits into connected components (formulas sharing atoms), each enumerated alone;
- a component with more than ``MAX_ATOMS`` atoms is an ``UnmaskError`` (code
  ``truthtable-limit``) suggesting another backend, unless some smaller component is
  already unsatisfiable (then the answer is still proved);
- cores are the enabled labels of the unsatisfiable component plus the unit facts that
  pinned its atoms (valid, not minimal); a model is the first satisfying assignment of each
  component (canonical), atoms nothing constrains are false.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from functools import lru_cache

from unmask.backends.base import Backend, Part, Result, Sat, Session, Unsat
from unmask.backends.cnf import fold
from unmask.diagnostics import Diagnostic, UnmaskError
from unmask.ir import (
    Atom,
    Binary,
    Card,
    Const,
    Expr,
    Nary,
    Not,
    iter_atoms,
    mk_binary,
    mk_card,
    mk_nary,
    mk_not,
)

# the most atoms one connected component may have: 2**20 assignments per formula is about
# 128 KiB per bitmask and well under a second for a protocol-sized component
MAX_ATOMS = 20


@lru_cache(maxsize=256)
def column(n: int, i: int) -> int:
    """The truth column of atom i over n atoms: bit t is bit i of t."""
    width = 1 << n
    period = 1 << (i + 1)
    half = 1 << i
    repeat = ((1 << width) - 1) // ((1 << period) - 1)  # ones every `period` bits
    return repeat * (((1 << half) - 1) << half)


def _count_masks(masks: list[int]) -> list[int]:
    """Bit-planes of the per-assignment count of true masks (ripple-carry adder)."""
    planes: list[int] = []
    for m in masks:
        carry = m
        for j in range(len(planes)):
            if not carry:
                break
            planes[j], carry = planes[j] ^ carry, planes[j] & carry
        if carry:
            planes.append(carry)
    return planes


def _at_least(planes: list[int], k: int, full: int) -> int:
    """Mask of assignments whose count (as bit-planes) is >= k."""
    if k <= 0:
        return full
    if k >= 1 << len(planes):
        return 0
    greater, equal = 0, full
    for j in reversed(range(len(planes))):
        if (k >> j) & 1:
            equal &= planes[j]
        else:
            greater |= equal & planes[j]
            equal &= full ^ planes[j]
    return greater | equal


def card_mask(op: str, k: int, masks: list[int], full: int) -> int:
    planes = _count_masks(masks)
    if op == "atleast":
        return _at_least(planes, k, full)
    if op == "atmost":
        return full ^ _at_least(planes, k + 1, full)
    return _at_least(planes, k, full) & (full ^ _at_least(planes, k + 1, full))


def truth_mask(expr: Expr, index: Mapping[str, int], n: int) -> int:
    """The 2**n-bit mask of the assignments (over atoms ``index``) that satisfy ``expr``."""
    full = (1 << (1 << n)) - 1

    def leaf(e: Expr) -> int:
        if isinstance(e, Atom):
            return column(n, index[e.name])
        if isinstance(e, Const):
            return full if e.value else 0
        raise TypeError(f"not an expression: {e!r}")

    def node(e: Expr, ms: list[int]) -> int:
        if isinstance(e, Not):
            return full ^ ms[0]
        if isinstance(e, Nary):
            acc = full if e.op == "and" else 0
            for m in ms:
                if e.op == "and":
                    acc &= m
                elif e.op == "or":
                    acc |= m
                else:
                    acc ^= m
            return acc
        if isinstance(e, Binary):
            if e.op == "implies":
                return (full ^ ms[0]) | ms[1]
            return full ^ (ms[0] ^ ms[1])
        if isinstance(e, Card):
            return card_mask(e.op, e.k, ms, full)
        raise TypeError(f"not an expression: {e!r}")

    return fold(expr, leaf, node, {})


def substitute(expr: Expr, values: Mapping[str, bool]) -> Expr:
    """``expr`` with the atoms in ``values`` replaced by constants, folded by mk_*."""

    def leaf(e: Expr) -> Expr:
        if isinstance(e, Atom) and e.name in values:
            return Const(values[e.name])
        return e

    def node(e: Expr, args: list[Expr]) -> Expr:
        if isinstance(e, Not):
            return mk_not(args[0])
        if isinstance(e, Nary):
            return mk_nary(e.op, args)
        if isinstance(e, Binary):
            return mk_binary(e.op, args[0], args[1])
        if isinstance(e, Card):
            return mk_card(e.op, e.k, args)
        raise TypeError(f"not an expression: {e!r}")

    return fold(expr, leaf, node, {})


def _unit(e: Expr) -> tuple[str, bool] | None:
    if isinstance(e, Atom):
        return e.name, True
    if isinstance(e, Not) and isinstance(e.arg, Atom):
        return e.arg.name, False
    return None


class TruthTableBackend(Backend):
    name = "truthtable"

    def open(self, parts: Sequence[Part], atoms: Sequence[str]) -> Session:
        return TruthTableSession(parts, atoms)


class TruthTableSession(Session):
    def __init__(self, parts: Sequence[Part], atoms: Sequence[str]) -> None:
        self.calls = 0
        self._parts = list(parts)
        self._rank = {label: i for i, label in reversed(list(enumerate(p.label for p in parts)))}
        self._order: dict[str, int] = {}
        for name in atoms:
            self._order.setdefault(name, len(self._order))
        self._atoms = [tuple(iter_atoms(p.expr)) for p in self._parts]
        for names in self._atoms:
            for name in names:
                self._order.setdefault(name, len(self._order))
        self._units = [_unit(p.expr) for p in self._parts]

    def _core(self, labels: set[str]) -> Unsat:
        return Unsat(tuple(sorted(labels, key=self._rank.__getitem__)))

    def check(
        self,
        query: Expr | None = None,
        *,
        enabled: Collection[str] | None = None,
        assume: Mapping[str, bool] | None = None,
        want: Sequence[str] = (),
    ) -> Result:
        self.calls += 1
        on = [i for i, p in enumerate(self._parts) if enabled is None or p.label in enabled]
        # pin atoms: assumptions first (they need no label in a core), then unit facts
        pins: dict[str, tuple[bool, str | None]] = {n: (v, None) for n, v in (assume or {}).items()}
        for i in on:
            unit = self._units[i]
            if unit is None:
                continue
            name, value = unit
            label = self._parts[i].label
            if name not in pins:
                pins[name] = (value, label)
            elif pins[name][0] != value:
                other = pins[name][1]
                return self._core({label} | ({other} if other is not None else set()))
        values = {n: v for n, (v, _) in pins.items()}

        # what is left after substitution: (labels it rests on, formula, its atoms)
        rest: list[tuple[set[str], Expr, tuple[str, ...]]] = []
        todo: list[tuple[str | None, Expr, tuple[str, ...]]] = [
            (self._parts[i].label, self._parts[i].expr, self._atoms[i])
            for i in on
            if self._units[i] is None
        ]
        if query is not None:
            todo.append((None, query, tuple(iter_atoms(query))))
        for label, expr, names in todo:
            deps = {label} if label is not None else set()
            pinned = [n for n in names if n in values]
            if pinned:
                deps |= {pins[n][1] for n in pinned if pins[n][1] is not None}  # type: ignore[misc]
                expr = substitute(expr, values)
                names = tuple(iter_atoms(expr))
            if isinstance(expr, Const):
                if not expr.value:
                    return self._core(deps)
                continue
            rest.append((deps, expr, names))

        # connected components over shared atoms (formulas without atoms stand alone)
        parent: dict[str, str] = {}

        def find(x: str) -> str:
            while parent.setdefault(x, x) != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for _, _, names in rest:
            for n in names[1:]:
                parent[find(n)] = find(names[0])
        groups: dict[object, list[int]] = {}
        for k, (_, _, names) in enumerate(rest):
            groups.setdefault(find(names[0]) if names else k, []).append(k)

        comps = []
        for members in groups.values():
            names = sorted(
                {n for k in members for n in rest[k][2]},
                key=lambda n: self._order.setdefault(n, len(self._order)),
            )
            comps.append((len(names), names, members))
        comps.sort(key=lambda c: (c[0], self._order.get(c[1][0], -1) if c[1] else -1))

        model = dict(values)
        too_big: list[int] = []
        for size, names, members in comps:
            if size > MAX_ATOMS:
                too_big.append(size)
                continue
            index = {n: i for i, n in enumerate(names)}
            mask = (1 << (1 << size)) - 1
            for k in members:
                mask &= truth_mask(rest[k][1], index, size)
                if not mask:
                    break
            if not mask:
                return self._core(set().union(*(rest[k][0] for k in members)))
            first = (mask & -mask).bit_length() - 1
            for n, i in index.items():
                model[n] = bool((first >> i) & 1)
        if too_big:
            raise UnmaskError(
                [
                    Diagnostic(
                        code="truthtable-limit",
                        message=(
                            f"the truth-table backend enumerates at most {MAX_ATOMS} "
                            f"interdependent unknown atoms; this check needs {max(too_big)}"
                        ),
                        help="use `--backend z3` or `--backend pysat` for this replay",
                    )
                ]
            )
        return Sat({n: model.get(n, False) for n in want})
