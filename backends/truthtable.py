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
  already unsatisfiable (then the answer is still proved);
- cores are the labels the unsatisfiable component rests on: its own, those of the units
  that pinned its atoms and of the definitions put into it (valid, not minimal); a model is
  the first satisfying assignment of each component, defined atoms are computed from their
  definitions, atoms nothing constrains are false.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from unmask.backends.base import Backend, Part, PartLabel, Result, Sat, Session, Unsat
from unmask.ir import Atom, Binary, Const, Expr, Nary, evaluate, iter_atoms
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
        pins, rest, defs = simplified
        order = self._order

        # connected components over shared atoms
        parent: dict[str, str] = {}

        def find(x: str) -> str:
            while parent.setdefault(x, x) != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for _, _, names in rest:
            for n in names[1:]:
                parent[find(n)] = find(names[0])
        groups: dict[str, list[int]] = {}
        for k, (_, _, names) in enumerate(rest):
            groups.setdefault(find(names[0]), []).append(k)
        comps = []
        for members in groups.values():
            comp_atoms = sorted(
                {n for k in members for n in rest[k][2]},
                key=lambda n: order.setdefault(n, len(order)),
            )
            comps.append((len(comp_atoms), order[comp_atoms[0]], comp_atoms, members))
        comps.sort()

        model = {n: v for n, (v, _) in pins.items()}
        too_big: list[int] = []
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
]


def _simplify(
    todo: list[tuple[frozenset[PartLabel], Expr]], assume: dict[str, bool]
) -> Simplified | frozenset[PartLabel]:
    """Shrink a conjunction before enumerating it, keeping every answer exact.

    Each formula carries the labels it rests on. Repeated to a fixpoint: top-level ``and``
    splits into conjuncts; an atom or negated atom pins that atom (assumptions first: they
    need no label) and is substituted everywhere; a formula ``x iff E`` (x not in E) defines
    x: E replaces x everywhere and the formula goes (x is computed from E in the model).
    Returns the pins, the remaining formulas with their atoms, and the definitions in order,
    or the labels of an unsatisfiable subset.
    """
    pins: dict[str, tuple[bool, frozenset[PartLabel]]] = {
        n: (v, frozenset()) for n, v in assume.items()
    }
    defs: list[tuple[str, Expr]] = []
    queue = list(todo)
    rest: list[tuple[frozenset[PartLabel], Expr, tuple[str, ...]]] = []
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
        # eliminate one definition at a time, then simplify again
        found = _definition(rest)
        if found is None:
            return pins, rest, defs
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
