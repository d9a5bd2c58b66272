"""Checks decided in closed form, without a backend call.

Contract:
- ``settle`` answers Classify on B_evid, the base of the facts alone: one literal per
  annotated atom, on distinct atoms, so the base is always consistent;
- ``settle(phi, atoms, facts)`` gives what the solver path of ``unmask.checking.checker``
  finds for the same check — the status; for ENTAILED and REFUTED the facts that deletion in base
  order keeps; for UNDERDETERMINED the least assignment to ``atoms`` on each side — or None when
  that would mean enumerating more than ``MAX_FREE`` atoms at once or more than ``MAX_WORK`` steps
  of deletion; the caller then takes the solver path; deletion skips a fact the facts that settle
  the query (``unmask.ir.partial.justify``) do not include, and a trial over more atoms is decided
  on the query with the facts put in, or shown to fail by an assignment
  (``unmask.ir.partial.achieve``);
- nothing is approximated: every validity and satisfiability question is answered by
  evaluating the query on all assignments of its unobserved atoms at once
  (``unmask.ir.partial.truth_mask``, bit-parallel), with the observed atoms fixed to their
  facts;
- ``TableBase`` holds a whole base of at most ``MAX_TABLE`` atoms (B_proto, B_all of a
  small protocol) as truth masks: consistency, Classify, deletion (in base order, over
  every part), the least completion of a witness and the labels still possible are mask
  operations, with the same answers as the solver path;
- ``forced_decision`` settles a wide ``and``/``or`` decision of literals on distinct atoms
  by counting, for the verdict of a binary protocol without constraints, and
  ``open_decision`` gives the least completion of each side of one the facts leave open;
- ``tests/checking/test_closed_form.py`` holds all three to the solver path on every backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from unmask.backends.base import Part
from unmask.checking.report import ENTAILED, REFUTED, UNDERDETERMINED, PartId
from unmask.ir import Const, Expr, Nary, iter_atoms, small_shape
from unmask.ir.partial import achieve, column, justify, literal, substitute, truth_mask
from unmask.plumbing.frozen import frozen

# 2**12 assignments are one 4096-bit integer per node: far cheaper than a solver call
MAX_FREE = 12
# deletion evaluates the query once per observed atom: bound the product
MAX_WORK = 4096
# a whole base (facts, constraints, decisions) tabulated at once: 2**14 bits per mask
MAX_TABLE = 14


@frozen
class Settled:
    """A check decided without a call.

    ``kept``: the observed atoms whose facts the explanation keeps (ENTAILED, REFUTED).
    ``holds`` / ``fails``: the least assignment to the check's atoms on each side
    (UNDERDETERMINED), FALSE before TRUE, in the order given.
    """

    status: str
    kept: tuple[str, ...] = ()
    holds: tuple[tuple[str, bool], ...] = ()
    fails: tuple[tuple[str, bool], ...] = ()


def settle(phi: Expr, atoms: Sequence[str], facts: Mapping[str, bool]) -> Settled | None:
    """Classify ``phi`` on the facts alone; ``atoms`` are all of ``phi``'s atoms in
    declaration order (the order its witnesses are completed in)."""
    free = [a for a in atoms if a not in facts]
    if len(free) > MAX_FREE:
        return None
    observed = [a for a in atoms if a in facts]
    mask, full = _mask(phi, free, {a: facts[a] for a in observed})
    if mask == full:
        status = ENTAILED
    elif mask == 0:
        status = REFUTED
    else:
        return Settled(
            UNDERDETERMINED,
            holds=_least(mask, atoms, free, facts),
            fails=_least(full ^ mask, atoms, free, facts),
        )
    if len(observed) * len(atoms) > MAX_WORK:
        return None
    # deletion in base order (the facts in atom declaration order): a fact goes when
    # the others still force the same answer on every assignment of the rest
    want = status == ENTAILED
    kept = dict.fromkeys(observed)
    dropped: list[str] = []
    rests = _rests(phi, kept, facts, observed)
    for a in observed:
        if rests is not None and a not in rests:
            # the facts that settle phi stay: it keeps its value without this one
            del kept[a]
            dropped.append(a)
            continue
        trial = {b: facts[b] for b in kept if b != a}
        got = _still(phi, [*free, *dropped, a], trial, want)
        if got is None:
            return None
        if got:
            del kept[a]
            dropped.append(a)
            rests = _rests(phi, kept, facts, observed)
    return Settled(status, kept=tuple(kept))


def _rests(
    phi: Expr, kept: Mapping[str, object], facts: Mapping[str, bool], observed: Sequence[str]
) -> set[str] | None:
    """The kept facts phi's value rests on (``unmask.ir.partial.justify``), or None when
    three-valued evaluation does not settle it (a table did)."""
    number = {a: k for k, a in enumerate(observed)}

    def lookup(name: str) -> tuple[bool | None, int]:
        return (facts[name], 1 << number[name]) if name in kept else (None, 0)

    value, bits = justify(phi, lookup)
    if value is None:
        return None
    return {a for a in kept if bits >> number[a] & 1}


def _still(phi: Expr, columns: list[str], trial: dict[str, bool], want: bool) -> bool | None:
    """Whether the facts ``trial`` still force phi to ``want`` (``columns``: every atom
    they leave open), or None when that would take a table of more than ``MAX_FREE``."""
    if len(columns) <= MAX_FREE:
        m, f = _mask(phi, columns, trial)
        return m == (f if want else 0)
    # an assignment giving phi the other value proves the fact is needed (the usual case:
    # deletion tries only the facts phi's value rests on)
    if achieve(phi, not want, trial) is not None:
        return False
    # the facts put in: what is left may need far fewer columns
    rest = substitute(phi, trial)
    if rest.__class__ is Const:
        return rest.value == want  # type: ignore[union-attr]
    names = list(iter_atoms(rest))
    if len(names) <= MAX_FREE:
        m, f = _mask(rest, names, {})
        return m == (f if want else 0)
    return None


@frozen
class Shape:
    """A decision of ``forced_decision``'s shape: ``op`` (``and``/``or``) over literals on
    distinct declared atoms, ``lits`` as written, ``polarity`` by atom and ``names`` in
    declaration order. It depends on the decision and the protocol's order alone, so the
    checker finds it once per protocol (``decision_shape``)."""

    op: str
    lits: tuple[tuple[str, bool], ...]
    polarity: Mapping[str, bool]
    names: tuple[str, ...]


def decision_shape(d: Expr, order: Mapping[str, int]) -> Shape | None:
    """``d``'s ``Shape``, or None for another shape (see ``_connective``)."""
    got = _connective(d, order)
    if got is None:
        return None
    op, lits = got
    polarity = dict(lits)
    return Shape(op, tuple(lits), polarity, tuple(sorted(polarity, key=order.__getitem__)))


def forced_decision(
    d: Expr, facts: Mapping[str, bool], order: Mapping[str, int], shape: Shape | None = None
) -> tuple[bool, tuple[str, ...]] | None:
    """A wide decision the facts settle, without enumerating: for ``d`` an ``and`` or ``or``
    of literals on distinct atoms (``all(...)``, ``any(...)``), or one literal, the value
    the facts force on it and the observed atoms that deletion in declaration order
    (``order``) keeps, in that order: ``d`` keeps its value with only their facts, and
    loses it with any one dropped. None when the facts do not force ``d``, or ``d`` has
    another shape. ``shape``: ``decision_shape(d, order)``, when the caller has it.

    A literal that settles the connective (FALSE under ``and``, TRUE under ``or``) forces
    it alone: deletion drops each such fact while a later one remains, and every other
    fact, so it keeps the last. Without one, the value is forced only when every literal is
    observed, and then each is needed."""
    if shape is None:
        shape = decision_shape(d, order)
        if shape is None:
            return None
    settles = shape.op == "or"  # the literal value that settles the connective
    last = None  # the latest settling fact in declaration order
    free = False
    for a in shape.names:
        v = facts.get(a)
        if v is None:
            free = True
        elif (v == shape.polarity[a]) == settles:
            last = a
    if last is not None:
        return settles, (last,)
    if not free:
        return not settles, shape.names
    return None


def open_decision(
    d: Expr,
    facts: Mapping[str, bool],
    order: Mapping[str, int],
    value: bool,
    shape: Shape | None = None,
) -> tuple[tuple[str, bool], ...] | None:
    """For a decision of ``forced_decision``'s shape that the facts do not force: the least
    assignment to its atoms (in declaration order, FALSE first, the facts kept) under which
    ``d`` is ``value``, as the greedy witness completion finds it; None for another shape
    or a forced one. ``shape`` as for ``forced_decision``.

    Unforced, no observed literal settles the connective and some atom is free. For the
    value that settling gives, one free literal must settle it: each free atom is FALSE
    unless it is the last free one and nothing has settled it yet; for the other value
    every free literal must not settle it, which fixes every free atom."""
    if shape is None:
        shape = decision_shape(d, order)
    if shape is None or forced_decision(d, facts, order, shape) is not None:
        return None
    settles = shape.op == "or"
    polarity = shape.polarity
    names = shape.names
    free = [a for a in names if a not in facts]
    last = free[-1]
    done = False
    out: list[tuple[str, bool]] = []
    for a in names:
        if a in facts:
            out.append((a, facts[a]))
            continue
        pos = polarity[a]
        if value != settles:
            out.append((a, (not settles) == pos))  # the literal must not settle
        elif done or (not pos) == settles or a != last:
            done = done or (not pos) == settles
            out.append((a, False))
        else:
            done = True
            out.append((a, True))  # the last chance to settle it: TRUE does, as FALSE did not
    return tuple(out)


def _connective(d: Expr, order: Mapping[str, int]) -> tuple[str, list[tuple[str, bool]]] | None:
    """``d`` as an ``and``/``or`` of literals on distinct declared atoms (one literal: an
    ``and`` of it), or None."""
    got = literal(d)
    if got is not None:
        op, lits = "and", [got]
    elif d.__class__ is Nary and d.op in ("and", "or"):  # type: ignore[union-attr]
        op = d.op  # type: ignore[union-attr]
        found = [literal(x) for x in d.args]  # type: ignore[union-attr]
        if any(x is None for x in found):
            return None
        lits = found  # type: ignore[assignment]
    else:
        return None
    names = [a for a, _ in lits]
    if len(set(names)) != len(names) or any(a not in order for a in names):
        return None  # `x and not x` is settled by no fact: the general path decides
    return op, lits


def _mask(phi: Expr, columns: Sequence[str], fixed: Mapping[str, bool]) -> tuple[int, int]:
    """The assignments of ``columns`` that satisfy ``phi`` with ``fixed``, and all of them.

    The first column is the most significant bit of an assignment's number, so the
    least number in a mask is the lexicographically least assignment (FALSE < TRUE)."""
    n = len(columns)
    index = {a: n - 1 - j for j, a in enumerate(columns)}
    full = (1 << (1 << n)) - 1
    # the shapes of nearly every check (a grounding pair, a literal) without a fold
    shape = small_shape(phi)
    if shape is not None:
        kind, a, b = shape
        left = _column(a, index, n, fixed, full)
        if kind == "atom":
            return left, full
        if kind == "not":
            return full ^ left, full
        right = _column(b, index, n, fixed, full)
        if kind == "implies":
            return (full ^ left) | right, full
        return full ^ (left ^ right), full  # iff
    if phi.__class__ is Const:
        return (full if phi.value else 0), full  # type: ignore[union-attr]
    return truth_mask(phi, index, n, fixed=fixed), full


def _column(
    name: str, index: Mapping[str, int], n: int, fixed: Mapping[str, bool], full: int
) -> int:
    v = fixed.get(name)
    if v is not None:
        return full if v else 0
    return column(n, index[name])


def _least(
    mask: int, atoms: Sequence[str], free: Sequence[str], facts: Mapping[str, bool]
) -> tuple[tuple[str, bool], ...]:
    t = (mask & -mask).bit_length() - 1
    n = len(free)
    values = {a: bool((t >> (n - 1 - j)) & 1) for j, a in enumerate(free)}
    return tuple((a, facts[a] if a in facts else values[a]) for a in atoms)


class TableBase:
    """A whole base over at most ``MAX_TABLE`` atoms, every answer read off truth masks.

    Bit t of a mask is the assignment numbered t (atom i is bit i of t); a part's mask is
    the assignments satisfying it, the base's models are the AND of its parts' masks.
    Satisfiability, deletion and the least completion are then mask operations, and agree
    with the solver path: a base small enough to tabulate needs no confinement to a
    component (deletion drops every part outside it; the models projected onto the
    check's atoms are the same).
    """

    def __init__(
        self, parts: Sequence[Part[PartId]], names: Sequence[str], within: TableBase | None = None
    ) -> None:
        self.labels = tuple(p.label for p in parts)
        if within is None:
            self.n = len(names)
            self.index = {a: i for i, a in enumerate(names)}
            self.full = (1 << (1 << self.n)) - 1
            self.memo: dict[int, tuple[Expr, int]] = {}
            self.masks = [self.mask(p.expr) for p in parts]
        else:  # the same columns and part masks: one index per replay
            self.n, self.index, self.full = within.n, within.index, within.full
            # a copy: ``within`` may serve many replays (a protocol's own table), and a
            # query's masks must not outlive its replay
            self.memo = dict(within.memo)
            known = dict(zip(within.labels, within.masks, strict=True))
            self.masks = [known[p.label] if p.label in known else self.mask(p.expr) for p in parts]
        self.models = self.full
        for m in self.masks:
            self.models &= m

    def restrict(self, parts: Sequence[Part[PartId]]) -> TableBase | None:
        """The table of a base whose parts are among this one's (B_proto within B_all)."""
        if any(a not in self.index for p in parts for a in p.atoms):
            return None
        return TableBase(parts, (), within=self)

    @classmethod
    def build(cls, parts: Sequence[Part[PartId]], extra: Sequence[Expr]) -> TableBase | None:
        """The table of ``parts`` able to answer queries over ``extra``'s atoms too, or
        None when that is more than ``MAX_TABLE`` atoms."""
        names: dict[str, None] = {}
        for p in parts:
            names.update(dict.fromkeys(p.atoms))
        for e in extra:
            names.update(dict.fromkeys(iter_atoms(e)))
        if len(names) > MAX_TABLE:
            return None
        return cls(parts, list(names))

    def mask(self, e: Expr) -> int:
        got = literal(e)  # a fact, most of a base's parts: its column without a fold
        if got is not None:
            col = column(self.n, self.index[got[0]])
            return col if got[1] else self.full ^ col
        return truth_mask(e, self.index, self.n, self.memo)

    def column(self, name: str) -> int:
        return column(self.n, self.index[name])

    def kept(self, side: int) -> tuple[PartId, ...]:
        """Deletion in base order: the parts that, with ``side``, stay unsatisfiable."""
        current = list(range(len(self.masks)))
        for i in range(len(self.masks)):
            trial = side
            for j in current:
                if j != i:
                    trial &= self.masks[j]
                    if not trial:
                        break
            if not trial:
                current.remove(i)
        return tuple(self.labels[j] for j in current)

    def least(self, models: int, atoms: Sequence[str]) -> tuple[tuple[str, bool], ...]:
        """The least assignment to ``atoms`` (in order, FALSE first) among ``models``."""
        out = []
        for a in atoms:
            col = self.column(a)
            without = models & ~col
            if without:
                models = without
                out.append((a, False))
            else:
                models &= col
                out.append((a, True))
        return tuple(out)
