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
- ``justify(e, lookup)`` is ``e``'s value under the pins ``lookup`` gives (None where it
  is open) and the pins it rests on, as a bit set: fixing only those pins leaves ``e`` the
  same function of the unpinned atoms (a settled node rests on as few of its children as
  settle it, the latest first; an open one on all of its children's pins);
- ``achieve(e, want, fixed)`` is an assignment extending ``fixed`` under which ``e`` is
  ``want``, found top-down (each node asks its children for values that give it
  ``want``, undoing an alternative that fails) and checked by ``evaluate``, or None: the
  search is not complete, so None proves nothing, and it gives up past ``ACHIEVE_STEPS``
  steps or ``ACHIEVE_DEPTH`` levels;
- every other walk is the IR's one iterative ``fold``: depth is bounded by memory only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
    iter_atoms,
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


# --- the pins a formula rests on ------------------------------------------------------------

# (the node's value under the pins, None where it is open; the pins it rests on, bit i for
# the pin numbered i)
Why = tuple[bool | None, int]
_NONE = 1 << 62  # the sort key of a justification without pins: preferred to any


def _lowest(m: int) -> int:
    """The earliest pin a justification uses (the first deletion in base order drops)."""
    return (m & -m).bit_length() if m else _NONE


def _pick(v: list[Why], want: bool, need: int) -> int:
    """``need`` children whose value is ``want``, those resting on the latest pins first
    (deletion in base order drops the earliest pins first: a core of late ones survives
    more trials)."""
    if need <= 0:
        return 0
    found = [m for x, m in v if x is want]
    if need == 1:
        return max(found, key=_lowest)
    found.sort(key=_lowest, reverse=True)
    acc = 0
    for m in found[:need]:
        acc |= m
    return acc


def _all(v: list[Why]) -> int:
    acc = 0
    for _, m in v:
        acc |= m
    return acc


def _why_atom(lookup: Callable[[str], Why], e: Atom, _: list[Why]) -> Why:
    return lookup(e.name)


def _why_and(_c: Any, e: Nary, v: list[Why]) -> Why:
    values = [x for x, _ in v]
    if False in values:
        return False, _pick(v, False, 1)
    return (True if None not in values else None), _all(v)


def _why_or(_c: Any, e: Nary, v: list[Why]) -> Why:
    values = [x for x, _ in v]
    if True in values:
        return True, _pick(v, True, 1)
    return (False if None not in values else None), _all(v)


def _why_xor(_c: Any, e: Nary, v: list[Why]) -> Why:
    values = [x for x, _ in v]
    if None in values:
        return None, _all(v)
    return values.count(True) % 2 == 1, _all(v)


def _why_implies(_c: Any, e: Binary, v: list[Why]) -> Why:
    (a, ma), (b, mb) = v
    if a is False or b is True:
        options = [m for ok, m in ((a is False, ma), (b is True, mb)) if ok]
        return True, max(options, key=_lowest)
    if a is True and b is False:
        return False, ma | mb
    return None, ma | mb


def _why_iff(_c: Any, e: Binary, v: list[Why]) -> Why:
    (a, ma), (b, mb) = v
    if a is None or b is None:
        return None, ma | mb
    return a == b, ma | mb


def _why_card(_c: Any, e: Card, v: list[Why]) -> Why:
    n, k = len(v), e.k
    t = sum(1 for x, _ in v if x is True)
    f = sum(1 for x, _ in v if x is False)
    # at least k true is settled TRUE by k true arguments, FALSE by n-k+1 false ones
    if e.op == "atleast":
        if t >= k:
            return True, _pick(v, True, k)
        if f > n - k:
            return False, _pick(v, False, n - k + 1)
    elif e.op == "atmost":
        if f >= n - k:
            return True, _pick(v, False, n - k)
        if t > k:
            return False, _pick(v, True, k + 1)
    else:  # exactly
        if t > k:
            return False, _pick(v, True, k + 1)
        if f > n - k:
            return False, _pick(v, False, n - k + 1)
        if t == k and f == n - k:
            return True, _all(v)
    return None, _all(v)


_JUSTIFY: Table[Why] = Table(
    "justification",
    {
        "const": lambda _c, e, v: (e.value, 0),
        "atom": _why_atom,
        "not": lambda _c, e, v: (None if v[0][0] is None else not v[0][0], v[0][1]),
        "and": _why_and,
        "or": _why_or,
        "xor": _why_xor,
        "implies": _why_implies,
        "iff": _why_iff,
        Card: _why_card,
    },
)


def justify(expr: Expr, lookup: Callable[[str], Why], memo: Memo | None = None) -> Why:
    """``expr``'s value under the pins (``lookup(name)``: the atom's value and the bit set
    of the pin fixing it, ``(None, 0)`` when free) and the pins it rests on: with only
    those fixed, every settled node keeps its value and ``expr`` is the same function of
    the unpinned atoms as with all of them (Kleene's three-valued evaluation, keeping for
    a settled node only the children that settle it). ``memo`` may be shared by calls
    with the same ``lookup`` (a node's answer depends on it and the node alone)."""
    return _JUSTIFY(expr, lookup, memo)


# --- a model found by asking for it ----------------------------------------------------------

ACHIEVE_STEPS = 10_000  # nodes visited, alternatives included, before the search gives up
ACHIEVE_DEPTH = 200  # nesting the (recursive) search follows, no deeper


class _GiveUp(Exception):
    pass


class _Achieve:
    """One top-down search: ``env`` the values so far, ``trail`` the atoms it set, in order,
    so a failed alternative is undone by popping back to where it started."""

    __slots__ = ("env", "steps", "trail")

    def __init__(self, fixed: Mapping[str, bool]) -> None:
        self.env = dict(fixed)
        self.trail: list[str] = []
        self.steps = 0

    def undo(self, mark: int) -> None:
        while len(self.trail) > mark:
            del self.env[self.trail.pop()]

    def either(self, depth: int, *options: tuple[tuple[Expr, bool], ...]) -> bool:
        """The first option all of whose (node, value) pairs can be had together."""
        for pairs in options:
            mark = len(self.trail)
            if all(self.go(e, want, depth) for e, want in pairs):
                return True
            self.undo(mark)
        return False

    def go(self, e: Expr, want: bool, depth: int) -> bool:
        self.steps += 1
        if self.steps > ACHIEVE_STEPS or depth > ACHIEVE_DEPTH:
            raise _GiveUp
        cls, depth = e.__class__, depth + 1
        if cls is Atom:
            have = self.env.get(e.name)  # type: ignore[union-attr]
            if have is None:
                self.env[e.name] = want  # type: ignore[union-attr]
                self.trail.append(e.name)  # type: ignore[union-attr]
                return True
            return have == want
        if cls is Const:
            return e.value == want  # type: ignore[union-attr]
        if cls is Not:
            return self.go(e.arg, not want, depth)  # type: ignore[union-attr]
        if cls is Nary:
            args, op = e.args, e.op  # type: ignore[union-attr]
            if op == "xor":  # the first argument gives the parity, the rest are FALSE
                if not args:
                    return not want
                return self.go(args[0], want, depth) and all(
                    self.go(a, False, depth) for a in args[1:]
                )
            if (op == "and") == want:  # every argument must be `want`
                return all(self.go(a, want, depth) for a in args)
            return self.either(depth, *(((a, want),) for a in args))
        if cls is Binary:
            a, b = e.left, e.right  # type: ignore[union-attr]
            if e.op == "implies":  # type: ignore[union-attr]
                if want:
                    return self.either(depth, ((a, False),), ((b, True),))
                return self.go(a, True, depth) and self.go(b, False, depth)
            if want:
                return self.either(depth, ((a, True), (b, True)), ((a, False), (b, False)))
            return self.either(depth, ((a, True), (b, False)), ((a, False), (b, True)))
        if cls is Card:
            return self.count(e, want, depth)  # type: ignore[arg-type]
        return self.go(e.body, want, depth)  # type: ignore[union-attr]  # a Ref

    def count(self, e: Card, want: bool, depth: int) -> bool:
        n, k = len(e.args), e.k
        spans = {
            ("atleast", True): [(k, n)],
            ("atleast", False): [(0, k - 1)],
            ("atmost", True): [(0, k)],
            ("atmost", False): [(k + 1, n)],
            ("exactly", True): [(k, k)],
            ("exactly", False): [(k + 1, n), (0, k - 1)],
        }[(e.op, want)]
        for lo, hi in spans:
            mark = len(self.trail)
            if lo <= hi and self.between(e.args, lo, hi, depth):
                return True
            self.undo(mark)
        return False

    def between(self, args: tuple[Expr, ...], lo: int, hi: int, depth: int) -> bool:
        """From ``lo`` to ``hi`` of ``args`` true: each made TRUE while fewer than ``lo``
        are, FALSE after, the other value where the first cannot be had."""
        trues = 0
        for i, a in enumerate(args):
            left = len(args) - i - 1
            first = trues < lo
            for value in (first, not first):
                if (trues + value > hi) or (trues + value + left < lo):
                    continue
                mark = len(self.trail)
                if self.go(a, value, depth):
                    trues += value
                    break
                self.undo(mark)
            else:
                return False
        return lo <= trues <= hi


def achieve(expr: Expr, want: bool, fixed: Mapping[str, bool]) -> dict[str, bool] | None:
    """An assignment to every atom of ``expr`` agreeing with ``fixed`` under which ``expr``
    is ``want`` (atoms the search left open are FALSE), checked by evaluation; or None,
    which proves nothing (see the module contract)."""
    search = _Achieve(fixed)
    try:
        if not search.go(expr, want, 0):
            return None
    except _GiveUp:
        return None
    env = search.env
    for name in iter_atoms(expr):
        env.setdefault(name, False)
    return env if evaluate(expr, env) == want else None
