"""The sliced backend's sessions: each check sees only the part of the base it can depend on.

Imported by the backend's first session (``unmask.backends.sliced``), so a check whose facts
settle every question does not load it.

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
  table (``unmask.ir.partial.truth_mask``) after substituting the pins; a larger one by one
  incremental PySAT solver over the whole base (parts behind selectors, encoded once
  when first needed; facts are assumed as literals), so a check costs about the size of
  its slice, not of the base;
- once the base is known satisfiable, each part is substituted once with every fact of the
  base (wide ``and``/``or``/``xor`` first split into short nested ones, which means the
  same); a check that disables a few facts or assumes a few atoms re-folds only the nodes
  above those atoms, so deletion over a part with n pinned atoms (every claim of a
  decision supported) costs about n·log n, not n²;
- cores are enabled labels (the slice's parts and the facts pinning its atoms; from the
  solver only those in its core); models hold exactly ``want``; a solver check runs in
  conflict-budget slices against a wall-clock deadline and answers ``Unknown`` when it
  runs out, never a guess. Statuses, witnesses and explanations equal every other
  backend's, since those are decided by ``unmask.checking.explain`` from sat/unsat answers alone.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from unmask.backends.base import Part, PartLabel, Result, Sat, Session, Unknown, Unsat
from unmask.backends.refold import Refold
from unmask.ir import Const, Expr, Memo, children, iter_atoms
from unmask.ir.partial import Why, closed_value, justify, literal, substitute, truth_mask
from unmask.plumbing.budget import tick
from unmask.plumbing.frozen import frozen

if TYPE_CHECKING:  # the encoder imports PySAT: only a check that needs a solver does
    from unmask.backends.cnf import CnfEncoder

# above this many unpinned atoms a slice goes to the SAT solver (measured: docs/performance.md)
TT_MAX_ATOMS = 12
QUERY_ENUM_MAX = 4  # a query alone with this few unpinned atoms is decided by enumeration
# a slice is enumerated (rather than tabled) when it has at most this many unpinned atoms
# and its formulas' nodes times the number of assignments stay within the budget
ENUM_MAX_ATOMS = 6
ENUM_BUDGET = 512

Pins = dict[str, tuple[bool, int]]  # atom -> (its value, the unit part pinning it)


@frozen
class _Ask(Mapping[str, bool]):
    """One check confined to a slice: the parts to look at, the atoms their enabled facts
    pin, and what the caller asked.

    ``pins`` holds the atoms looked at one by one; with a reference (``ref``: every fact of
    a base known satisfiable) an atom not in ``pins`` and not in ``unpinned`` is pinned as
    the reference says. As a ``Mapping`` it gives the value of each atom the check fixes,
    which is what the folds (``closed_value``, ``substitute``, ``Refold``) read."""

    comp: list[int]
    pins: Pins
    query: Expr | None
    assume: dict[str, bool]
    want: Sequence[str]
    ref: Pins | None = None
    unpinned: frozenset[str] = field(default_factory=frozenset)

    def pin(self, name: str) -> tuple[bool, int] | None:
        got = self.pins.get(name)
        if got is None and self.ref is not None and name not in self.unpinned:
            got = self.ref.get(name)
        return got

    # the Mapping protocol the folds use: the value of each atom this check fixes
    def get(self, name: str, default: Any = None) -> Any:
        if name in self.assume:
            return self.assume[name]
        got = self.pin(name)
        return default if got is None else got[0]

    def __getitem__(self, name: str) -> bool:
        got = self.get(name)
        if got is None:
            raise KeyError(name)
        return got

    def __iter__(self) -> Iterator[str]:
        ref = () if self.ref is None else (n for n in self.ref if n not in self.unpinned)
        return iter(dict.fromkeys([*self.assume, *self.pins, *ref]))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def changed(self) -> set[str]:
        """The atoms whose value differs from the reference: unpinned, or newly assumed."""
        return {*self.unpinned, *(n for n in self.assume if n not in self.pins)}


class SlicedSession(Session):
    def __init__(
        self,
        parts: Sequence[Part[PartLabel]],
        atoms: Sequence[str],
        timeout_ms: int,
        solver_name: str | None,
    ) -> None:
        self.calls = 0
        self.timeout_ms = self._limit = timeout_ms
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
        order, units, part_atoms = self.order, self.units, self.part_atoms
        units_of, by_atom = self.units_of, self.by_atom
        for i, p in enumerate(self.parts):
            names = p.atoms
            tick(len(names) + 1)  # a caller's deadline cuts the indexing of a huge base
            unit = literal(p.expr)
            units.append(unit)
            part_atoms.append(names)
            for n in names:
                if n not in order:
                    order[n] = len(order)
            if unit is not None:
                got = units_of.get(unit[0])
                if got is None:
                    units_of[unit[0]] = [i]
                else:
                    got.append(i)
            else:
                for n in names:
                    got = by_atom.get(n)
                    if got is None:
                        by_atom[n] = [i]
                    else:
                        got.append(i)
        self.base_sat: bool | None = None
        # the base once came back undecided: asking again would spend each later check's
        # whole limit on the hard base before its own (often easy) question
        self._base_undecided = False
        self._ref: Pins | None = None  # every fact's pin, once no two were found contrary
        self._views: dict[int, Refold] = {}
        self._ref_memo: Memo = {}  # the views' substitutions against the one reference
        self._ref_values: dict[str, bool] | None = None  # the reference's values, by atom
        self.folds = 0  # parts substituted in full (a reference, or outside one)
        self._query_atoms: dict[int, tuple[Expr, tuple[str, ...]]] = {}
        self._sat: _Incremental | None = None
        self._closed = False

    # --- the public check ---------------------------------------------------------------

    def check(
        self,
        query: Expr | None = None,
        *,
        enabled: Collection[PartLabel] | None = None,
        assume: Mapping[str, bool] | None = None,
        want: Sequence[str] = (),
        timeout_ms: int | None = None,
    ) -> Result:
        if self._closed:
            raise RuntimeError("session is closed")
        self.calls += 1
        # every solver call this check makes gets the caller's limit
        self._limit = self.timeout_ms if timeout_ms is None else timeout_ms
        en = None if enabled is None else set(enabled)
        assume = dict(assume or {})
        whole = enabled is None and query is None and not assume
        if self.base_sat is None and not whole and not self._base_undecided:
            self._establish()
        if self.base_sat is True and not whole:
            return self._sliced(query, en, assume, want)
        result = self._everything(query, en, assume, want)
        if whole and self.base_sat is None:
            self._settle(result)
        return result

    def _establish(self) -> None:
        self._settle(self._everything(None, None, {}, ()))

    def _settle(self, base: Result) -> None:
        if isinstance(base, Unknown):
            self._base_undecided = True
        else:
            self.base_sat = isinstance(base, Sat)

    # --- choosing what to look at ---------------------------------------------------------

    def _pin(self, name: str, en: set[PartLabel] | None, pins: Pins) -> Unsat | None:
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

    def _view(self, i: int) -> Refold:
        view = self._views.get(i)
        if view is None:
            if self._ref is None:
                # the base is satisfiable, so no two facts contradict: the first of each
                # atom stands for all
                self._ref = {}
                for name, units in self.units_of.items():
                    self._ref[name] = (self.units[units[0]][1], units[0])  # type: ignore[index]
            self.folds += 1
            if self._ref_values is None:  # every fact's value, for every view's substitution
                self._ref_values = {a: v for a, (v, _) in self._ref.items()}
            view = self._views[i] = Refold(
                self.parts[i].expr,
                self.part_atoms[i],
                self._ref,
                self.labels,
                self._ref_memo,
                self._ref_values,
            )
        return view

    def _sliced(
        self,
        query: Expr | None,
        en: set[PartLabel] | None,
        assume: dict[str, bool],
        want: Sequence[str],
    ) -> Result:
        qatoms = self._atoms_of(query)
        seeds = [*want, *assume, *qatoms]
        pins: Pins = {}
        comp: list[int] = []
        taken: set[int] = set()
        seen: set[str] = set()
        free: list[str] = []
        stack = seeds
        units_of, by_atom, labels = self.units_of, self.by_atom, self.labels
        while stack:
            a = stack.pop()
            if a in seen:
                continue
            seen.add(a)
            tick()  # the slice of a check on a huge base: a caller's deadline cuts it
            if a in units_of:  # a fact may pin it
                conflict = self._pin(a, en, pins)
                if conflict is not None:
                    return conflict
                if a in pins:
                    continue  # a constant now: links nothing
            free.append(a)
            for i in by_atom.get(a, ()):
                if i not in taken and (en is None or labels[i] in en):
                    taken.add(i)
                    comp.append(i)
                    view = self._view(i)
                    # its atoms the reference leaves free, and those whose facts are all
                    # disabled here (the rest stay pinned without being looked at)
                    stack.extend(view.free)
                    if en is not None:
                        for label in view.pin_labels - en:
                            stack.extend(view.pinned_by[label])
        if not comp:
            quick = self._query_only(query, qatoms, pins, assume, want)
            if quick is not None:
                return quick
        comp.sort()
        ref = self._ref if comp else None
        unpinned = frozenset(a for a in free if ref is not None and a in ref)
        return self._decide(_Ask(comp, pins, query, assume, want, ref, unpinned), free)

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
                lookup = _lookup(lambda n: pins.get(n), assume)
                return self._core(set(_bits(justify(query, lookup)[1])))
        return Sat({n: values.get(n, False) for n in want})

    def _everything(
        self,
        query: Expr | None,
        en: set[PartLabel] | None,
        assume: dict[str, bool],
        want: Sequence[str],
    ) -> Result:
        pins: Pins = {}
        for name in self.units_of:
            conflict = self._pin(name, en, pins)
            if conflict is not None:
                return conflict
        ref = None
        if en is None:
            # every fact is on, none contradicts another: these pins are the reference the
            # part views fold against, so the views a later slice uses are folded now, once
            if self._ref is None:
                self._ref = pins
            ref = self._ref
        comp = [i for i in range(len(self.parts)) if self.units[i] is None and self._on(i, en)]
        names: dict[str, None] = {}
        for i in comp:
            names.update(dict.fromkeys(self.part_atoms[i]))
        if query is not None:
            names.update(dict.fromkeys(iter_atoms(query)))
        names.update(dict.fromkeys(assume))
        names.update(dict.fromkeys(want))
        free = [n for n in names if n not in pins]
        return self._decide(_Ask(comp, pins, query, assume, want, ref), free, guess=True)

    def _on(self, i: int, en: set[PartLabel] | None) -> bool:
        return en is None or self.labels[i] in en

    # --- deciding ---------------------------------------------------------------------------

    def _decide(self, ask: _Ask, free: list[str], guess: bool = False) -> Result:
        for name, value in ask.assume.items():
            pin = ask.pin(name)
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
        return self._sat.check(ask, self._limit)

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
        changed = ask.changed() if ask.ref is not None else set()
        # the query first: an unsat slice is most often unsat because of it
        items: list[tuple[int | None, Expr]] = [] if ask.query is None else [(None, ask.query)]
        items.extend((i, self.parts[i].expr) for i in ask.comp)
        rest: list[tuple[int | None, Expr, Expr]] = []  # (part, original, residual)
        for i, e in items:
            if i is not None and ask.ref is not None:
                residual = self._view(i).residual(ask, changed)
            else:
                known = closed_value(e, ask)
                if known is None:
                    residual = substitute(e, ask)
                    self.folds += i is not None
                else:
                    residual = Const(known)
            if isinstance(residual, Const):
                if residual.value:
                    continue
                return self._table_core([(i, e)], ask)
            rest.append((i, e, residual))
        names = sorted(
            {n for _, _, r in rest for n in iter_atoms(r)},
            key=lambda n: self.order.setdefault(n, len(self.order)),
        )
        # the formulas' size only where it decides, counted only while it may fit
        if len(names) <= ENUM_MAX_ATOMS and _within(rest, ENUM_BUDGET >> len(names)):
            return self._enumerate(rest, names, ask)
        index = {n: k for k, n in enumerate(names)}
        mask = (1 << (1 << len(names))) - 1
        for k, (_, _, r) in enumerate(rest):
            mask &= truth_mask(r, index, len(names))
            if not mask:
                return self._table_core([(i, e) for i, e, _ in rest[: k + 1]], ask)
        first = (mask & -mask).bit_length() - 1
        model = {n: bool((first >> k) & 1) for n, k in index.items()}
        return Sat({n: model[n] if n in model else ask.get(n, False) for n in ask.want})

    def _enumerate(
        self, rest: list[tuple[int | None, Expr, Expr]], names: list[str], ask: _Ask
    ) -> Result:
        """Try every assignment of the few unpinned ``names`` on the substituted formulas:
        cheaper than a table when tiny."""
        env: dict[str, bool] = {}
        failing: set[int] = set()
        for bits in range(1 << len(names)):
            for k, n in enumerate(names):
                env[n] = bool((bits >> k) & 1)
            failed = -1
            for j, (_, _, r) in enumerate(rest):
                if not closed_value(r, env):
                    failed = j
                    break
            if failed < 0:
                return Sat({n: env[n] if n in env else ask.get(n, False) for n in ask.want})
            failing.add(failed)
        # every assignment falsifies one of these formulas: together they are unsat
        return self._table_core([rest[j][:2] for j in sorted(failing)], ask)  # type: ignore[misc]

    def _table_core(self, used: list[tuple[int | None, Expr]], ask: _Ask) -> Unsat:
        """The parts whose (substituted) conjunction was unsat, and the facts they rest on
        (``unmask.ir.partial.justify``: often one fact of a wide ``and`` or ``or``, not all of
        them, so a core seen once spares deletion the trials it does not touch)."""
        core: set[int] = set()
        rests = 0
        lookup = _lookup(ask.pin, ask.assume)
        memo: Memo = {}  # one lookup: the parts' shared subformulas are justified once
        for i, e in used:
            if i is not None:
                core.add(i)
            rests |= justify(e, lookup, memo)[1]
        core.update(_bits(rests))
        return self._core(core)

    def close(self) -> None:
        self._closed = True
        if self._sat is not None:
            self._sat.delete()
            self._sat = None


def _within(rest: list[tuple[int | None, Expr, Expr]], budget: int) -> bool:
    """Whether the residuals of ``rest`` have at most ``budget`` nodes together, counted
    as ``size`` counts them (as written out), stopping once past it: a budget is a few
    nodes, a residual may have thousands."""
    nodes = 0
    stack = [r for _, _, r in rest]
    while stack:
        nodes += 1
        if nodes > budget:
            return False
        stack.extend(children(stack.pop()))
    return True


def _lookup(
    pin: Callable[[str], tuple[bool, int] | None], assume: Mapping[str, bool]
) -> Callable[[str], Why]:
    """What ``justify`` reads of a check: an assumed atom is fixed by the check itself (it
    rests on no part), a pinned one by its fact's part."""

    def lookup(name: str) -> Why:
        if name in assume:
            return assume[name], 0
        got = pin(name)
        return (None, 0) if got is None else (got[0], 1 << got[1])

    return lookup


def _bits(m: int) -> Iterator[int]:
    """The numbers of the set bits of ``m``."""
    while m:
        low = m & -m
        yield low.bit_length() - 1
        m ^= low


# the encoding of a session's non-unit parts, each behind its selector in part order, by
# the atom order and the parts' expressions (an entry holds them, so their ids stay
# theirs): the sessions of one protocol's replays differ only in their facts, which are
# assumed, never encoded, so each starts from a copy of the encoder left after the parts
_ENCODED: dict[tuple[Any, ...], tuple[tuple[Expr, ...], CnfEncoder, tuple[int, ...]]] = {}
ENCODED_SIZE = 16  # encodings kept (then the oldest goes)
ENCODED_MAX_ATOMS = 4096  # a session of more atoms is encoded for itself
ENCODED_MAX_CLAUSES = 100_000  # ... and so is an encoding of more clauses


def _encoded(order: Mapping[str, int], exprs: tuple[Expr, ...]) -> tuple[CnfEncoder, list[int]]:
    """An encoder with the atoms of ``order`` (variables 1..n in that order) and each of
    ``exprs`` encoded behind a fresh selector, and the selectors: made once per atom
    order and expressions, then copied (the same variables, clauses and memo)."""
    from unmask.backends.cnf import CnfEncoder

    key = None
    if len(order) <= ENCODED_MAX_ATOMS:
        key = (tuple(order), tuple(map(id, exprs)))
        got = _ENCODED.get(key)
        if got is not None and all(a is b for a, b in zip(got[0], exprs, strict=True)):
            return got[1].copy(), list(got[2])
    enc = CnfEncoder(order)
    selectors = []
    for e in exprs:
        sel = enc.pool.id()
        enc.clauses.append([-sel, enc.lit(e)])
        selectors.append(sel)
    if key is not None and enc.plain_pool and len(enc.clauses) <= ENCODED_MAX_CLAUSES:
        while len(_ENCODED) >= ENCODED_SIZE:
            _ENCODED.pop(next(iter(_ENCODED)), None)  # the oldest
        _ENCODED[key] = (exprs, enc.copy(), tuple(selectors))  # a copy: ``enc`` goes on
    return enc, selectors


class _Incremental:
    """One PySAT solver over every non-unit part of a session, each behind a selector."""

    def __init__(self, session: SlicedSession, solver_name: str | None) -> None:
        from unmask.backends.pysat_core import DEFAULT_SOLVER, Incremental

        self.session = session
        rest = [i for i, unit in enumerate(session.units) if unit is None]
        enc, selectors = _encoded(session.order, tuple(session.parts[i].expr for i in rest))
        self.sat = Incremental(solver_name or DEFAULT_SOLVER, enc=enc)
        self.selector: dict[int, int] = dict(zip(rest, selectors, strict=True))
        self.owner: dict[int, int] = dict(zip(selectors, rest, strict=True))  # selector -> part
        self.sat.flush()

    def check(self, ask: _Ask, timeout_ms: int) -> Result:
        enc = self.sat.enc
        assumptions = [self.selector[i] for i in ask.comp]
        pin_of: dict[int, int] = {}
        names: dict[str, None] = dict.fromkeys(ask.pins)
        if ask.ref is not None:
            for i in ask.comp:
                names.update(dict.fromkeys(self.session.part_atoms[i]))
        for name in names:
            pin = ask.pin(name)
            if pin is not None:
                var = enc.atom_var(name)
                lit = var if pin[0] else -var
                assumptions.append(lit)
                pin_of[lit] = pin[1]
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
