"""The sliced backend: each check sees only the part of the base it can depend on.

Contract (``create("sliced")``, ``create("sliced:glucose4")`` for another PySAT solver):
- unit parts (``ATOM`` / ``not ATOM``: the facts) *pin* their atoms; a check starts from
  the atoms of its query, ``assume`` and ``want`` and collects the enabled parts reachable
  through atoms that are not pinned (a pinned atom is a constant and links nothing);
- once the whole base is known satisfiable, the parts outside that slice cannot change
  the answer: a subset of a satisfiable base is satisfiable, and its only shared atoms
  with the slice are pinned to the same values on both sides; until then (and for an
  inconsistent base) every check is answered on every enabled part, so minimising a
  conflict stays exact;
- a slice with at most ``TT_MAX_ATOMS`` unpinned atoms is decided by a bit-parallel truth
  table (``unmask.backends.truthtable``) after substituting the pins; a larger one by one
  incremental PySAT solver over the whole base (parts behind selectors, encoded once
  when first needed; facts are assumed as literals), so a check costs about the size of
  its slice, not of the base;
- cores are enabled labels (the slice's parts and the facts pinning its atoms; from the
  solver only those in its core); models hold exactly ``want``; a solver check runs in
  conflict-budget slices against a wall-clock deadline and answers ``Unknown`` when it
  runs out, never a guess. Statuses, witnesses and explanations equal every other
  backend's, since those are decided by ``unmask.explain`` from sat/unsat answers alone.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from unmask.backends.base import Backend, Part, Result, Sat, Session, Unknown, Unsat
from unmask.backends.pysat_core import DEFAULT_SOLVER, Incremental, resolve_solver
from unmask.ir import Const, Expr, iter_atoms, size
from unmask.ireval import closed_value, literal, substitute, truth_mask

# above this many unpinned atoms a slice goes to the SAT solver (measured: docs/performance.md)
TT_MAX_ATOMS = 12
QUERY_ENUM_MAX = 4  # a query alone with this few unpinned atoms is decided by enumeration
# a slice is enumerated (rather than tabled) when it has at most this many unpinned atoms
# and its formulas' nodes times the number of assignments stay within the budget
ENUM_MAX_ATOMS = 6
ENUM_BUDGET = 512

Pins = dict[str, tuple[bool, int]]  # atom -> (its value, the unit part pinning it)


@dataclass(frozen=True, slots=True)
class _Ask:
    """One check confined to a slice: the parts to look at, the atoms their enabled facts
    pin, and what the caller asked."""

    comp: list[int]
    pins: Pins
    query: Expr | None
    assume: dict[str, bool]
    want: Sequence[str]


class SlicedBackend(Backend):
    name = "sliced"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.solver_name = DEFAULT_SOLVER if self.option is None else resolve_solver(self.option)

    def open(self, parts: Sequence[Part], atoms: Sequence[str]) -> Session:
        return SlicedSession(parts, atoms, self.timeout_ms, self.solver_name)


class SlicedSession(Session):
    def __init__(
        self, parts: Sequence[Part], atoms: Sequence[str], timeout_ms: int, solver_name: str
    ) -> None:
        self.calls = 0
        self.timeout_ms = timeout_ms
        self.solver_name = solver_name
        self.parts = list(parts)
        self.labels = [p.label for p in self.parts]
        self.order: dict[str, int] = {}
        for name in atoms:
            self.order.setdefault(name, len(self.order))
        self.units: list[tuple[str, bool] | None] = []
        self.part_atoms: list[tuple[str, ...]] = []
        self.by_atom: dict[str, list[int]] = {}  # atom -> non-unit parts using it
        self.units_of: dict[str, list[int]] = {}  # atom -> unit parts pinning it
        for i, p in enumerate(self.parts):
            unit = literal(p.expr)
            self.units.append(unit)
            names = tuple(dict.fromkeys(iter_atoms(p.expr)))
            self.part_atoms.append(names)
            for n in names:
                self.order.setdefault(n, len(self.order))
            if unit is not None:
                self.units_of.setdefault(unit[0], []).append(i)
            else:
                for n in names:
                    self.by_atom.setdefault(n, []).append(i)
        self.base_sat: bool | None = None
        self._query_atoms: dict[int, tuple[Expr, tuple[str, ...]]] = {}
        self._query_size: dict[int, tuple[Expr, int]] = {}
        self.part_size = [
            0 if u is not None else size(p.expr)
            for u, p in zip(self.units, self.parts, strict=True)
        ]
        self._sat: _Incremental | None = None
        self._closed = False

    # --- the public check ---------------------------------------------------------------

    def check(
        self,
        query: Expr | None = None,
        *,
        enabled: Collection[str] | None = None,
        assume: Mapping[str, bool] | None = None,
        want: Sequence[str] = (),
    ) -> Result:
        if self._closed:
            raise RuntimeError("session is closed")
        self.calls += 1
        en = None if enabled is None else set(enabled)
        assume = dict(assume or {})
        whole = enabled is None and query is None and not assume
        if self.base_sat is None and not whole:
            self._establish()
        if self.base_sat is True and not whole:
            return self._sliced(query, en, assume, want)
        result = self._everything(query, en, assume, want)
        if whole and self.base_sat is None and not isinstance(result, Unknown):
            self.base_sat = isinstance(result, Sat)
        return result

    def _establish(self) -> None:
        result = self._everything(None, None, {}, ())
        if not isinstance(result, Unknown):
            self.base_sat = isinstance(result, Sat)

    # --- choosing what to look at ---------------------------------------------------------

    def _on(self, i: int, en: set[str] | None) -> bool:
        return en is None or self.labels[i] in en

    def _pin(self, name: str, en: set[str] | None, pins: Pins) -> Unsat | None:
        """Record the enabled fact pinning ``name`` (if any); two contrary facts: unsat."""
        for i in self.units_of.get(name, ()):
            if en is not None and self.labels[i] not in en:
                continue
            value = self.units[i][1]  # type: ignore[index]
            have = pins.get(name)
            if have is None:
                pins[name] = (value, i)
            elif have[0] != value:
                return self._core({i, have[1]})
        return None

    def _sliced(
        self, query: Expr | None, en: set[str] | None, assume: dict[str, bool], want: Sequence[str]
    ) -> Result:
        qatoms = self._atoms_of(query)
        seeds = [*want, *assume, *qatoms]
        pins: Pins = {}
        comp: list[int] = []
        taken: set[int] = set()
        seen: set[str] = set()
        free: list[str] = []
        stack = seeds
        while stack:
            a = stack.pop()
            if a in seen:
                continue
            seen.add(a)
            conflict = self._pin(a, en, pins)
            if conflict is not None:
                return conflict
            if a in pins:
                continue  # a constant now: links nothing
            free.append(a)
            for i in self.by_atom.get(a, ()):
                if i not in taken and (en is None or self.labels[i] in en):
                    taken.add(i)
                    comp.append(i)
                    stack.extend(self.part_atoms[i])
        if not comp:
            quick = self._query_only(query, qatoms, pins, assume, want)
            if quick is not None:
                return quick
        comp.sort()
        return self._decide(_Ask(comp, pins, query, assume, want), free)

    def _atoms_of(self, query: Expr | None) -> tuple[str, ...]:
        if query is None:
            return ()
        # keyed by identity (hashing a tree walks it); the entry keeps the query alive, so
        # its id cannot be reused while the entry exists
        got = self._query_atoms.get(id(query))
        if got is None or got[0] is not query:
            if len(self._query_atoms) > 10_000:
                self._query_atoms.clear()
            got = self._query_atoms[id(query)] = (query, tuple(iter_atoms(query)))
        return got[1]

    def _size_of(self, query: Expr | None) -> int:
        if query is None:
            return 0
        got = self._query_size.get(id(query))
        if got is None or got[0] is not query:
            if len(self._query_size) > 10_000:
                self._query_size.clear()
            got = self._query_size[id(query)] = (query, size(query))
        return got[1]

    def _query_only(
        self,
        query: Expr | None,
        qatoms: tuple[str, ...],
        pins: Pins,
        assume: dict[str, bool],
        want: Sequence[str],
    ) -> Result | None:
        """The common slice: no part besides facts. None when the query is not closed."""
        values = {n: v for n, (v, _) in pins.items()}
        for name, value in assume.items():
            if values.get(name, value) != value:
                return self._core({pins[name][1]})
            values[name] = value
        if query is not None:
            known = closed_value(query, values)
            if known is None:
                # a few unpinned atoms in the query alone: try their assignments in order
                free = [n for n in qatoms if n not in values]
                if len(free) > QUERY_ENUM_MAX:
                    return None
                for bits in range(1 << len(free)):
                    trial = dict(values)
                    trial.update((n, bool((bits >> k) & 1)) for k, n in enumerate(free))
                    if closed_value(query, trial):
                        values = trial
                        known = True
                        break
            if not known:
                return self._core({pins[n][1] for n in qatoms if n in pins})
        return Sat({n: values.get(n, False) for n in want})

    def _everything(
        self, query: Expr | None, en: set[str] | None, assume: dict[str, bool], want: Sequence[str]
    ) -> Result:
        pins: Pins = {}
        for name in self.units_of:
            conflict = self._pin(name, en, pins)
            if conflict is not None:
                return conflict
        comp = [i for i in range(len(self.parts)) if self.units[i] is None and self._on(i, en)]
        names: dict[str, None] = {}
        for i in comp:
            names.update(dict.fromkeys(self.part_atoms[i]))
        if query is not None:
            names.update(dict.fromkeys(iter_atoms(query)))
        names.update(dict.fromkeys(assume))
        names.update(dict.fromkeys(want))
        free = [n for n in names if n not in pins]
        return self._decide(_Ask(comp, pins, query, assume, want), free, guess=True)

    # --- deciding ---------------------------------------------------------------------------

    def _decide(self, ask: _Ask, free: list[str], guess: bool = False) -> Result:
        for name, value in ask.assume.items():
            pin = ask.pins.get(name)
            if pin is not None and pin[0] != value:
                return self._core({pin[1]})
        unpinned = [n for n in free if n not in ask.assume]
        if len(unpinned) <= TT_MAX_ATOMS:
            return self._table(ask)
        # a base's own consistency is usually shown by a trivial model; for a slice's query
        # the guess mostly fails and would only add two linear passes to the solver's work
        if guess:
            guessed = self._guess(ask, unpinned)
            if guessed is not None:
                return guessed
        if self._sat is None:
            self._sat = _Incremental(self, self.solver_name)
        return self._sat.check(ask, self.timeout_ms)

    def _guess(self, ask: _Ask, unpinned: list[str]) -> Sat | None:
        """A model with every unpinned atom false, or every one true, if either is one:
        a linear-time proof of satisfiability that spares building a solver."""
        exprs = [self.parts[i].expr for i in ask.comp]
        if ask.query is not None:
            exprs.append(ask.query)
        for value in (False, True):
            env = {n: v for n, (v, _) in ask.pins.items()}
            env.update(ask.assume)
            env.update(dict.fromkeys(unpinned, value))
            if all(closed_value(e, env) for e in exprs):
                return Sat({n: env.get(n, False) for n in ask.want})
        return None

    def _core(self, parts: Collection[int]) -> Unsat:
        return Unsat(tuple(self.labels[i] for i in sorted(parts)))

    def _table(self, ask: _Ask) -> Result:
        comp, pins, query, want = ask.comp, ask.pins, ask.query, ask.want
        values = {n: v for n, (v, _) in pins.items()}
        values.update(ask.assume)
        # the query first: an unsat slice is most often unsat because of it
        exprs: list[tuple[int | None, Expr]] = [] if query is None else [(None, query)]
        exprs.extend((i, self.parts[i].expr) for i in comp)
        names: dict[str, None] = {}
        for n in self._atoms_of(query):
            if n not in values:
                names[n] = None
        for i in comp:
            for n in self.part_atoms[i]:
                if n not in values:
                    names[n] = None
        nodes = self._size_of(query) + sum(self.part_size[i] for i in comp)
        if len(names) <= ENUM_MAX_ATOMS and (nodes << len(names)) <= ENUM_BUDGET:
            return self._enumerate(exprs, list(names), values, pins, want)
        rest: list[tuple[int | None, Expr, Expr]] = []  # (part, original, residual)
        for i, e in exprs:
            known = closed_value(e, values)
            residual = e
            if known is None and any(n in values for n in iter_atoms(e)):
                residual = substitute(e, values)
                if isinstance(residual, Const):
                    known = residual.value
            if known is True:
                continue
            if known is False:
                return self._table_core([(i, e)], pins)
            rest.append((i, e, residual))
        names = sorted(
            {n for _, _, r in rest for n in iter_atoms(r)},
            key=lambda n: self.order.setdefault(n, len(self.order)),
        )
        index = {n: k for k, n in enumerate(names)}
        mask = (1 << (1 << len(names))) - 1
        for k, (_, _, r) in enumerate(rest):
            mask &= truth_mask(r, index, len(names))
            if not mask:
                return self._table_core([(i, e) for i, e, _ in rest[: k + 1]], pins)
        first = (mask & -mask).bit_length() - 1
        model = {n: bool((first >> k) & 1) for n, k in index.items()}
        model.update(values)
        return Sat({n: model.get(n, False) for n in want})

    def _enumerate(
        self,
        exprs: list[tuple[int | None, Expr]],
        names: list[str],
        values: dict[str, bool],
        pins: Pins,
        want: Sequence[str],
    ) -> Result:
        """Try every assignment of the few unpinned ``names``, each formula evaluated as
        it stands (no substitution, nothing built): cheaper than a table when tiny."""
        env = dict(values)
        failing: set[int] = set()
        for bits in range(1 << len(names)):
            for k, n in enumerate(names):
                env[n] = bool((bits >> k) & 1)
            failed = -1
            for j, (_, e) in enumerate(exprs):
                if not closed_value(e, env):
                    failed = j
                    break
            if failed < 0:
                return Sat({n: env.get(n, False) for n in want})
            failing.add(failed)
        # every assignment falsifies one of these formulas: together they are unsat
        return self._table_core([exprs[j] for j in sorted(failing)], pins)

    def _table_core(self, used: list[tuple[int | None, Expr]], pins: Pins) -> Unsat:
        """The parts whose (substituted) conjunction was unsat, and the facts pinning them."""
        core: set[int] = set()
        for i, e in used:
            if i is not None:
                core.add(i)
            atoms = self.part_atoms[i] if i is not None else iter_atoms(e)
            core.update(pins[n][1] for n in atoms if n in pins)
        return self._core(core)

    def close(self) -> None:
        self._closed = True
        if self._sat is not None:
            self._sat.delete()
            self._sat = None


class _Incremental:
    """One PySAT solver over every non-unit part of a session, each behind a selector."""

    def __init__(self, session: SlicedSession, solver_name: str) -> None:
        self.session = session
        self.sat = Incremental(solver_name, session.order)
        enc = self.sat.enc
        self.selector: dict[int, int] = {}
        self.owner: dict[int, int] = {}  # selector -> part index
        for i, p in enumerate(session.parts):
            if session.units[i] is not None:
                continue
            sel = enc.pool.id()
            enc.clauses.append([-sel, enc.lit(p.expr)])
            self.selector[i] = sel
            self.owner[sel] = i
        self.sat.flush()

    def check(self, ask: _Ask, timeout_ms: int) -> Result:
        enc = self.sat.enc
        assumptions = [self.selector[i] for i in ask.comp]
        pin_of: dict[int, int] = {}
        for name, (value, i) in ask.pins.items():
            var = enc.atom_var(name)
            lit = var if value else -var
            assumptions.append(lit)
            pin_of[lit] = i
        if ask.query is not None:
            assumptions.append(enc.lit(ask.query))
        for name, value in ask.assume.items():
            var = enc.atom_var(name)
            assumptions.append(var if value else -var)
        for name in ask.want:
            enc.atom_var(name)
        answer = self.sat.solve(assumptions, timeout_ms)
        if answer is None:
            return Unknown(f"timeout after {timeout_ms} ms")
        if answer:
            return Sat(self.sat.model(ask.want))
        core = self.sat.core()
        parts = {self.owner[x] for x in core if x in self.owner}
        parts.update(pin_of[x] for x in core if x in pin_of)
        return self.session._core(parts)

    def delete(self) -> None:
        self.sat.delete()
