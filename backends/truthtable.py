"""The exhaustive truth-table backend: an independent oracle with no solver inside.

Contract:
- a check is decided by enumerating every assignment, bit-parallel: over n atoms each
  formula is evaluated once as a 2**n-bit integer (atom i's column is the alternating
  pattern of period 2**(i+1); and/or/xor/not are bitwise; cardinalities use a bitwise
  binary counter and comparator); the conjunction is satisfiable iff its mask is nonzero;
- only the *relevant* part of a base is enumerated: first, to a fixpoint, top-level
  conjunctions split, atoms pinned by unit formulas (``ATOM``, ``not ATOM``, also those that
  appear after substitution) and by ``assume`` are substituted, and a definition ``x iff E``
  (x not in E, e.g. the decision ``V iff D``) is eliminated by putting E for x; the rest
  splits into connected components (formulas sharing atoms), each enumerated alone;
- a component with more than ``MAX_ATOMS`` atoms is an ``UnmaskError`` (code
  ``truthtable-limit``) suggesting another backend, unless some smaller component is
  already unsatisfiable (then the answer is still proved); when no substitution can fold
  anything, the components that will end too big are found on atom sets before any
  definition is eliminated and left out (``_screen``): same answers, no cubic re-folding;
- cores are the labels the unsatisfiable component rests on: its own, those of the units
  that pinned its atoms and of the definitions put into it (valid, not minimal); a model is
  the first satisfying assignment of each component, defined atoms are computed from their
  definitions, atoms nothing constrains are false.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from unmask.backends.base import Backend, Part, PartLabel, Result, Sat, Session, Unsat
from unmask.ir import (
    Atom,
    Binary,
    Card,
    Const,
    Expr,
    Nary,
    Not,
    Ref,
    children,
    evaluate,
    iter_atoms,
    mk_card,
)
from unmask.ir.partial import literal, substitute, truth_mask
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError

# the most atoms one connected component may have: 2**20 assignments per formula is about
# 128 KiB per bitmask and well under a second for a protocol-sized component
MAX_ATOMS = 20


class TruthTableBackend(Backend):
    name = "truthtable"

    def open(self, parts: Sequence[Part[PartLabel]], atoms: Sequence[str]) -> Session:
        return TruthTableSession(parts, atoms)


class TruthTableSession(Session):
    def __init__(self, parts: Sequence[Part[PartLabel]], atoms: Sequence[str]) -> None:
        self.calls = 0
        self._parts = list(parts)
        self._rank = {label: i for i, label in reversed(list(enumerate(p.label for p in parts)))}
        self._order: dict[str, int] = {}
        for name in atoms:
            self._order.setdefault(name, len(self._order))
        for p in self._parts:
            for name in p.atoms:
                self._order.setdefault(name, len(self._order))

    def _core(self, labels: set[PartLabel]) -> Unsat:
        return Unsat(tuple(sorted(labels, key=self._rank.__getitem__)))

    def check(
        self,
        query: Expr | None = None,
        *,
        enabled: Collection[PartLabel] | None = None,
        assume: Mapping[str, bool] | None = None,
        want: Sequence[str] = (),
        timeout_ms: int | None = None,  # no limit: the atom limit bounds every check
    ) -> Result:
        self.calls += 1
        chosen = None if enabled is None else set(enabled)
        on = [i for i, p in enumerate(self._parts) if chosen is None or p.label in chosen]
        todo: list[tuple[frozenset[PartLabel], Expr]] = [
            (frozenset((self._parts[i].label,)), self._parts[i].expr) for i in on
        ]
        if query is not None:
            todo.append((frozenset(), query))
        simplified = _simplify(todo, dict(assume or {}))
        if isinstance(simplified, frozenset):
            return self._core(set(simplified))
        pins, rest, defs, too_big = simplified
        order = self._order

        # connected components over shared atoms
        groups: dict[int, list[int]] = {}
        for k, comp in enumerate(_components([names for _, _, names in rest])):
            groups.setdefault(comp, []).append(k)
        comps = []
        for members in groups.values():
            comp_atoms = sorted(
                {n for k in members for n in rest[k][2]},
                key=lambda n: order.setdefault(n, len(order)),
            )
            comps.append((len(comp_atoms), order[comp_atoms[0]], comp_atoms, members))
        comps.sort()

        model = {n: v for n, (v, _) in pins.items()}
        for size, _, comp_atoms, members in comps:
            if size > MAX_ATOMS:
                too_big.append(size)
                continue
            index = {n: i for i, n in enumerate(comp_atoms)}
            mask = (1 << (1 << size)) - 1
            memo: dict[int, tuple[Expr, int]] = {}
            for k in members:
                mask &= truth_mask(rest[k][1], index, size, memo)
                if not mask:
                    return self._core(set().union(*(rest[k][0] for k in members)))
            first = (mask & -mask).bit_length() - 1
            for n, i in index.items():
                model[n] = bool((first >> i) & 1)
        if too_big:
            raise UnmaskError(
                [
                    Diagnostic(
                        code=Code.TRUTHTABLE_LIMIT,
                        message=(
                            f"this check needs {max(too_big)} interdependent unknown atoms, but "
                            f"the truth-table backend enumerates at most {MAX_ATOMS}"
                        ),
                        help="use `--backend z3` or `--backend pysat` for this replay",
                    )
                ]
            )
        # defined atoms take the value of their definition, the latest definition first
        for name, definition in reversed(defs):
            for a in iter_atoms(definition):
                model.setdefault(a, False)
            model[name] = evaluate(definition, model)
        return Sat({n: model.get(n, False) for n in want})


Simplified = tuple[
    dict[str, tuple[bool, frozenset[PartLabel]]],
    list[tuple[frozenset[PartLabel], Expr, tuple[str, ...]]],
    list[tuple[str, Expr]],
    list[int],
]


def _simplify(
    todo: list[tuple[frozenset[PartLabel], Expr]], assume: dict[str, bool]
) -> Simplified | frozenset[PartLabel]:
    """Shrink a conjunction before enumerating it, keeping every answer exact.

    Each formula carries the labels it rests on. Repeated to a fixpoint: top-level ``and``
    splits into conjuncts; an atom or negated atom pins that atom (assumptions first: they
    need no label) and is substituted everywhere; a formula ``x iff E`` (x not in E) defines
    x: E replaces x everywhere and the formula goes (x is computed from E in the model).
    Returns the pins, the remaining formulas with their atoms, the definitions in order and
    the sizes of the components left out as too big to enumerate (``_screen``), or the
    labels of an unsatisfiable subset.
    """
    pins: dict[str, tuple[bool, frozenset[PartLabel]]] = {
        n: (v, frozenset()) for n, v in assume.items()
    }
    defs: list[tuple[str, Expr]] = []
    queue = list(todo)
    rest: list[tuple[frozenset[PartLabel], Expr, tuple[str, ...]]] = []
    too_big: list[int] | None = None  # found once, before the first definition goes
    while True:
        # split conjunctions, collect units, drop tautologies
        pending: list[tuple[frozenset[PartLabel], Expr]] = []
        while queue:
            deps, e = queue.pop()
            if isinstance(e, Nary) and e.op == "and":
                queue.extend((deps, a) for a in e.args)
            elif isinstance(e, Const):
                if not e.value:
                    return deps
            elif (unit := literal(e)) is not None:
                name, value = unit
                if name in pins:
                    if pins[name][0] != value:
                        return deps | pins[name][1]
                else:
                    pins[name] = (value, deps)
            else:
                pending.append((deps, e))
        pending.extend((deps, e) for deps, e, _ in rest)
        # substitute the pins
        rest = []
        values = {n: v for n, (v, _) in pins.items()}
        for deps, e in pending:
            names = tuple(iter_atoms(e))
            pinned = [n for n in names if n in pins]
            if not names:  # closed but not folded (raw IR such as `not not and()`)
                if not evaluate(e, {}):
                    return deps
            elif pinned:
                deps = deps.union(*(pins[n][1] for n in pinned))
                queue.append((deps, substitute(e, values)))
            else:
                rest.append((deps, e, names))
        if queue:
            continue
        if too_big is None:
            # the components that cannot fit, whatever the eliminations: left out now,
            # before substituting into them round after round (n^3 on n definitions)
            too_big, rest = _screen(rest)
        # eliminate one definition at a time, then simplify again
        found = _definition(rest)
        if found is None:
            return pins, rest, defs, too_big
        k, name, definition = found
        def_deps = rest[k][0]
        del rest[k]
        defs.append((name, definition))
        kept = []
        for deps, e, names in rest:
            if name in names:
                queue.append((deps | def_deps, substitute(e, {name: definition})))
            else:
                kept.append((deps, e, names))
        rest = kept


def _definition(
    rest: list[tuple[frozenset[PartLabel], Expr, tuple[str, ...]]],
) -> tuple[int, str, Expr] | None:
    for k, (_, e, _) in enumerate(rest):
        if isinstance(e, Binary) and e.op == "iff":
            for x, other in ((e.left, e.right), (e.right, e.left)):
                if isinstance(x, Atom) and x.name not in iter_atoms(other):
                    return k, x.name, other
    return None


# --- leaving out what cannot fit ------------------------------------------------------------

Formula = tuple[frozenset[PartLabel], Expr, tuple[str, ...]]
# an ``iff`` side's shape: ("atom", name), ("not", name) or ("other", ""), and its atoms
Side = tuple[str, str, set[str]]


def _screen(rest: list[Formula]) -> tuple[list[int], list[Formula]]:
    """The sizes of the components ``_simplify`` would leave with more than ``MAX_ATOMS``
    atoms, and ``rest`` without the formulas of the components it need not simplify for
    them; ``([], rest)`` when that cannot be told in advance.

    Told only when every formula is *stable* (``_stable``): no constant, no double
    negation, no ``and``/``or``/``xor`` of fewer than two, no cardinality its constructor
    would change, and no definition's use where a formula's shape is read (``_shape_nodes``:
    a substitution writes a use out as its body). Then putting a formula E for x (E has
    atoms, no pin is in it) folds nothing: a formula keeps its top operator and its atoms
    but x, with E's added, so no new pin, conjunction or constant ever appears, and the
    eliminations alone change the atoms. They are replayed here on atom sets, in
    ``_simplify``'s order (``_definition``'s choice, the queue's), which is linear work per
    elimination where substituting re-folds every formula that holds x. A component of the
    formulas as they are now (the unit where they share atoms) is left out when every
    component it ends as is too big: the answer is then that refusal, or the ``Unsat`` of
    some smaller component, which the formulas kept still give, exactly as before."""
    if not rest or not _stable([e for _, e, _ in rest]):
        return [], rest
    if any(node.__class__ is Ref for _, e, _ in rest for node in _shape_nodes(e)):
        return [], rest
    # (atoms, sides of an ``iff`` or None, the component it started in)
    recs: list[tuple[set[str], tuple[Side, Side] | None, int]] = []
    start = _components([names for _, _, names in rest])
    for (_, e, names), comp in zip(rest, start, strict=True):
        sides = None
        if isinstance(e, Binary) and e.op == "iff":
            sides = (_side(e.left), _side(e.right))
        recs.append((set(names), sides, comp))
    while True:
        found = _sim_definition(recs)
        if found is None:
            break
        k, name, value = found
        del recs[k]
        queue, kept = [], []
        for rec in recs:
            if name in rec[0]:
                queue.append(_sim_put(rec, name, value))
            else:
                kept.append(rec)
        queue.reverse()  # ``_simplify`` pops its queue
        recs = queue + kept
    ends = _components([tuple(atoms) for atoms, _, _ in recs])
    sizes: dict[int, set[str]] = {}
    for (atoms, _, _), end in zip(recs, ends, strict=True):
        sizes.setdefault(end, set()).update(atoms)
    starts: dict[int, list[int]] = {}  # each start's ends
    for (_, _, comp), end in zip(recs, ends, strict=True):
        starts.setdefault(comp, []).append(end)
    out = {c for c, e in starts.items() if all(len(sizes[x]) > MAX_ATOMS for x in e)}
    if not out:
        return [], rest
    big = [len(sizes[x]) for c in out for x in set(starts[c])]
    return big, [f for f, comp in zip(rest, start, strict=True) if comp not in out]


def _components(names: list[tuple[str, ...]]) -> list[int]:
    """Each formula's component (formulas sharing atoms), as the index of an atom."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for ns in names:
        for n in ns[1:]:
            parent[find(n)] = find(ns[0])
    ids: dict[str, int] = {}
    return [ids.setdefault(find(ns[0]), len(ids)) for ns in names]


def _stable(exprs: list[Expr]) -> bool:
    """Whether no substitution of a stable formula for an atom folds anything in these."""
    seen: set[int] = set()
    stack = list(exprs)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        cls = node.__class__
        if cls is Atom:
            continue
        if cls is Not:
            if node.arg.__class__ is Not:  # type: ignore[union-attr]
                return False
        elif cls is Nary:
            if len(node.args) < 2:  # type: ignore[union-attr]
                return False
        elif cls is Card:
            args = node.args  # type: ignore[union-attr]
            try:
                again = mk_card(node.op, node.k, args)  # type: ignore[union-attr]
            except ValueError:  # raw IR the constructor refuses (k < 0)
                return False
            if not (
                again.__class__ is Card
                and again.op == node.op  # type: ignore[union-attr]
                and again.k == node.k  # type: ignore[union-attr]
                and len(again.args) == len(args)  # type: ignore[union-attr]
            ):
                return False
        elif cls is not Binary and cls is not Ref:  # a constant
            return False
        stack.extend(children(node))
    return True


def _shape_nodes(e: Expr) -> list[Expr]:
    """Where ``_simplify`` reads a formula's shape: the formula (a unit, a conjunction, an
    ``iff``), the argument of its ``not``, an ``iff``'s sides and their ``not``'s argument."""
    out = [e]
    if isinstance(e, Not):
        out.append(e.arg)
    elif isinstance(e, Binary) and e.op == "iff":
        for side in (e.left, e.right):
            out.append(side)
            if isinstance(side, Not):
                out.append(side.arg)
    return out


def _side(e: Expr) -> Side:
    unit = literal(e)
    if unit is None:
        return "other", "", set(iter_atoms(e))
    return ("atom" if unit[1] else "not"), unit[0], {unit[0]}


def _sim_definition(
    recs: list[tuple[set[str], tuple[Side, Side] | None, int]],
) -> tuple[int, str, Side] | None:
    """``_definition`` on atom sets: the first ``x iff E`` with x not in E."""
    for k, (_, sides, _) in enumerate(recs):
        if sides is not None:
            for x, other in (sides, sides[::-1]):
                if x[0] == "atom" and x[1] not in other[2]:
                    return k, x[1], other
    return None


def _sim_put(
    rec: tuple[set[str], tuple[Side, Side] | None, int], name: str, value: Side
) -> tuple[set[str], tuple[Side, Side] | None, int]:
    """``rec`` with ``value`` put for the atom ``name``, on atom sets (nothing folds)."""
    atoms, sides, comp = rec
    atoms = (atoms - {name}) | value[2]
    if sides is not None:
        sides = (_put_side(sides[0], name, value), _put_side(sides[1], name, value))
    return atoms, sides, comp


def _put_side(side: Side, name: str, value: Side) -> Side:
    if name not in side[2]:
        return side
    if side[0] == "atom":  # the side was the atom: it is the value now
        return value[0], value[1], set(value[2])
    if side[0] == "not":  # ``not`` of the value: a literal's negation is a literal
        flip = {"atom": "not", "not": "atom"}.get(value[0])
        return (flip, value[1], set(value[2])) if flip else ("other", "", set(value[2]))
    return "other", "", (side[2] - {name}) | value[2]
