"""Partial evaluation of the ground IR, shared by the backends that decide without a solver.

Contract:
- ``literal(e)`` is ``(atom, value)`` when ``e`` is an atom or a negated atom, else None;
- ``closed_value(e, values)`` is ``e``'s value when ``values`` covers every atom it needs
  on the way, else None; it agrees with ``unmask.ir.evaluate`` wherever both answer;
- ``substitute(e, values)`` replaces atoms by constants or expressions and folds the result
  through the smart constructors, so it means the same as ``e`` under ``values``;
- ``truth_mask(e, index, n)`` evaluates ``e`` on all 2**n assignments at once, bit-parallel:
  atom i's column is the alternating pattern of period 2**(i+1); and/or/xor/not are bitwise;
  cardinalities use a bitwise binary counter and comparator;
- every walk is the IR's one iterative ``fold``: depth is bounded by memory only.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from unmask.ir import (
    Atom,
    Binary,
    Card,
    Const,
    Expr,
    Memo,
    Nary,
    Not,
    Table,
    evaluate,
    mk_binary,
    mk_card,
    mk_nary,
    mk_not,
    small_shape,
)


def literal(e: Expr) -> tuple[str, bool] | None:
    """``(name, True)`` for ``name``, ``(name, False)`` for ``not name``, else None."""
    if e.__class__ is Atom:
        return e.name, True  # type: ignore[union-attr]
    if e.__class__ is Not and e.arg.__class__ is Atom:  # type: ignore[union-attr]
        return e.arg.name, False  # type: ignore[union-attr]
    return None


def closed_value(e: Expr, values: Mapping[str, bool]) -> bool | None:
    """The value of ``e`` when ``values`` covers all its atoms, else None."""
    # the shapes of nearly every query (a literal, a grounding pair, their negations)
    node: Any = e
    neg = False
    if node.__class__ is Not:
        node, neg = node.arg, True
    shape = small_shape(node)
    if shape is not None:
        kind, a, b = shape
        left = values.get(a)
        if left is None:
            return None
        if kind == "atom":
            return left != neg
        if kind == "not":
            return left == neg
        right = values.get(b)
        if right is None:
            return None
        v = (not left or right) if kind == "implies" else left == right
        return v != neg
    try:
        return evaluate(e, values)
    except KeyError:  # an atom without a value: the evaluation table's only lookup
        return None


def _leaf(values: Mapping[str, bool | Expr], e: Atom, _: list[Expr]) -> Expr:
    v = values.get(e.name)
    if v is None:
        return e
    return Const(v) if isinstance(v, bool) else v


_SUBSTITUTE: Table[Expr] = Table(
    "substitution",
    {
        "const": lambda _, e, v: e,
        "atom": _leaf,
        "not": lambda _, e, v: mk_not(v[0]),
        Nary: lambda _, e, v: mk_nary(e.op, v),
        Binary: lambda _, e, v: mk_binary(e.op, v[0], v[1]),
        Card: lambda _, e, v: mk_card(e.op, e.k, v),
    },
)


def substitute(expr: Expr, values: Mapping[str, bool | Expr], memo: Memo | None = None) -> Expr:
    """``expr`` with the atoms in ``values`` replaced (by constants or expressions), folded
    by the smart constructors; ``memo`` may be kept between calls with the same ``values``."""
    return _SUBSTITUTE(expr, values, memo)


def smart(e: Expr) -> Expr:
    """``e`` rebuilt through the smart constructors."""
    return _SUBSTITUTE(e, {})


# --- all assignments at once ---------------------------------------------------------------


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


class _Masks:
    """What a truth-mask fold needs to know: the width and the atoms' columns."""

    __slots__ = ("fixed", "full", "index", "n")

    def __init__(self, index: Mapping[str, int], n: int, fixed: Mapping[str, bool] | None):
        self.index, self.n, self.fixed = index, n, fixed
        self.full = (1 << (1 << n)) - 1


def _atom_mask(m: _Masks, e: Atom, _: list[int]) -> int:
    if m.fixed is not None and e.name in m.fixed:
        return m.full if m.fixed[e.name] else 0
    return column(m.n, m.index[e.name])


def _and_mask(m: _Masks, e: Nary, v: list[int]) -> int:
    acc = m.full
    for x in v:
        acc &= x
    return acc


def _or_mask(m: _Masks, e: Nary, v: list[int]) -> int:
    acc = 0
    for x in v:
        acc |= x
    return acc


def _xor_mask(m: _Masks, e: Nary, v: list[int]) -> int:
    acc = 0
    for x in v:
        acc ^= x
    return acc


_MASK: Table[int] = Table(
    "truth table",
    {
        "const": lambda m, e, v: m.full if e.value else 0,
        "atom": _atom_mask,
        "not": lambda m, e, v: m.full ^ v[0],
        "and": _and_mask,
        "or": _or_mask,
        "xor": _xor_mask,
        "implies": lambda m, e, v: (m.full ^ v[0]) | v[1],
        "iff": lambda m, e, v: m.full ^ (v[0] ^ v[1]),
        Card: lambda m, e, v: card_mask(e.op, e.k, v, m.full),
    },
)


def truth_mask(
    expr: Expr,
    index: Mapping[str, int],
    n: int,
    memo: dict[int, tuple[Expr, int]] | None = None,
    fixed: Mapping[str, bool] | None = None,
) -> int:
    """The 2**n-bit mask of the assignments (over atoms ``index``) that satisfy ``expr``;
    ``memo`` may be shared by formulas over the same ``index`` (shared subterms); atoms in
    ``fixed`` are constants instead of columns."""
    return _MASK(expr, _Masks(index, n, fixed), memo)
