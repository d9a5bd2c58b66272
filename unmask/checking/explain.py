"""Canonical witnesses and minimal explanations, the same on every backend.

Contract:
- ``BaseSession`` wraps one backend session on one base: it counts calls and remembers the
  unsat cores it has seen per query (cores are only ever used as proofs of unsat, never to
  steer the search, so the results do not depend on which core a backend returns);
- ``witness`` completes one side of an UNDERDETERMINED check greedily: atoms in declaration
  order, FALSE tried before TRUE, earlier choices kept; the result is the
  lexicographically least model restricted to those atoms (FALSE < TRUE), whatever model
  the backend started from;
- ``minimise`` is plain deletion in base order (facts in atom declaration order, then
  constraints in order, then the decision, or ``labels`` and each label's decision in
  declaration order), over the parts connected to the query's atoms; a call that times
  out keeps its part and marks the result not minimal;
- a ``Deadline`` bounds all the calls of one report: each call's timeout is the least of
  the backend's and the time left; once it has passed, ``BaseSession.check`` answers
  ``Unknown("deadline")`` without a call, a minimisation stops (not minimal) and a
  witness completion stops (not canonical, the rest taken from the last model, so it is
  still a real assignment). Nothing is guessed: an answer is only what a call proved.
  The deadline also cuts the encoding a backend does outside its solver (``open_session``
  and each check run under ``unmask.plumbing.budget.watching``): cut there, the answer is
  ``Unknown("deadline")`` as well, and the half-built encoding is never asked again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Generic

from unmask.backends.base import Backend, L, Part, PartLabel, Result, Sat, Session, Unknown, Unsat
from unmask.ir import Expr, mk_and, mk_atom, mk_not, mk_or
from unmask.plumbing.budget import OutOfTime, watching
from unmask.plumbing.frozen import frozen
from unmask.plumbing.interrupt import checkpoint

DEADLINE = "deadline"  # the reason of a call refused, or cut short, by the deadline


class Deadline:
    """A time budget for one report, in milliseconds on a monotonic clock.

    ``hit`` records that the deadline cut some work short: a call refused or timed out
    under a limit lowered to the time left. A report that never hit its deadline made
    exactly the calls, and got exactly the answers, it would have made without one.
    """

    def __init__(self, ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.ms = ms
        self.clock = clock
        self.end = clock() + ms / 1000
        self.hit = False

    def left_ms(self) -> int:
        """Whole milliseconds left (0 once passed)."""
        return max(0, int((self.end - self.clock()) * 1000))

    def passed(self) -> bool:
        if self.left_ms() <= 0:
            self.hit = True
            return True
        return False


class _Expired(Session):
    """A base whose opening the deadline cut short: every check is the deadline's."""

    def check(self, query=None, *, enabled=None, assume=None, want=(), timeout_ms=None):  # type: ignore[no-untyped-def]
        return Unknown(DEADLINE)


def open_session(
    backend: Backend, parts: Sequence[Part[L]], atoms: Sequence[str], deadline: Deadline | None
) -> Session:
    """``backend.open(parts, atoms)`` under ``deadline``: a backend that encodes the base
    when it opens (z3's lowering, the CNF, the sliced backend's index) stops when the
    deadline passes, and the base answers every check ``Unknown("deadline")``."""
    if deadline is None:
        return backend.open(parts, atoms)
    try:
        with watching(deadline.passed):
            return backend.open(parts, atoms)
    except OutOfTime:
        deadline.hit = True
        return _Expired()


class BaseSession(Generic[L]):
    """One base on one backend, with the cores seen so far (keyed by query)."""

    def __init__(
        self,
        name: str,
        parts: Sequence[Part[L]],
        session: Session,
        deadline: Deadline | None = None,
        timeout_ms: int | None = None,
    ) -> None:
        self.name = name
        self.deadline = deadline
        self.timeout_ms = timeout_ms  # the backend's own per-call timeout
        self.parts = tuple(parts)
        self.labels = tuple(p.label for p in parts)
        self.session = session
        # keyed by the query's identity (hashing a deep expression would recurse); the
        # entry holds the query, so the id stays its own
        self._cores: dict[int, tuple[Expr | None, list[frozenset[PartLabel]]]] = {}
        self._part_atoms: dict[L, tuple[str, ...]] | None = None
        self._by_atom: dict[str, list[L]] = {}
        self._rank: dict[L, int] | None = None

    def check(
        self,
        query: Expr | None = None,
        *,
        enabled: Sequence[L] | None = None,
        assume: Mapping[str, bool] | None = None,
        want: Sequence[str] = (),
    ) -> Result:
        checkpoint()  # a Ctrl-C that a solver object's `__del__` swallowed stops here
        if self.deadline is None:
            result = self.session.check(query, enabled=enabled, assume=assume, want=want)
        else:
            left = self.deadline.left_ms()
            if left <= 0:
                self.deadline.hit = True
                return Unknown(DEADLINE)
            capped = self.timeout_ms is None or left < self.timeout_ms
            limit = left if capped else self.timeout_ms
            try:
                # the encoding a check does first (a query's clauses, a slice) is cut too
                with watching(self.deadline.passed):
                    result = self.session.check(
                        query, enabled=enabled, assume=assume, want=want, timeout_ms=limit
                    )
            except OutOfTime:
                # the session may be left half-encoded: no call is made past the deadline
                self.deadline.hit = True
                return Unknown(DEADLINE)
            if capped and isinstance(result, Unknown):
                # undecided within the time left: the deadline, not the backend's timeout,
                # stopped it (and "timeout after N ms" would name a varying N)
                self.deadline.hit = True
                return Unknown(DEADLINE)
        if isinstance(result, Unsat) and not assume:
            self._cores.setdefault(id(query), (query, []))[1].append(frozenset(result.core))
        return result

    def expired(self) -> bool:
        """Has the deadline passed (so no further call will be made)?"""
        return self.deadline is not None and self.deadline.passed()

    def known_unsat(self, query: Expr | None, enabled: Iterable[L]) -> bool:
        have = set(enabled)
        entry = self._cores.get(id(query))
        return entry is not None and any(core <= have for core in entry[1])

    def cores(self, query: Expr | None) -> list[frozenset[PartLabel]]:
        """The cores seen so far for ``query``, in the order seen (the list grows as
        further calls are unsat; read, never change it)."""
        entry = self._cores.get(id(query))
        if entry is None or entry[0] is not query:
            return []
        return entry[1]

    def known_unsat_without(self, query: Expr | None, have: Mapping[L, object], label: L) -> bool:
        """``known_unsat(query, have minus label)`` without building that set."""
        entry = self._cores.get(id(query))
        if entry is None or entry[0] is not query:
            return False
        return any(label not in core and all(x in have for x in core) for core in entry[1])

    def part_atoms(self) -> dict[L, tuple[str, ...]]:
        """Each part's atoms, by its label (``Part.atoms``: found once per part)."""
        if self._part_atoms is None:
            self._part_atoms = {p.label: p.atoms for p in self.parts}
            by_atom: dict[str, list[L]] = {}
            self._by_atom = by_atom
            for label, atoms in self._part_atoms.items():
                for a in atoms:
                    got = by_atom.get(a)
                    if got is None:
                        by_atom[a] = [label]
                    else:
                        got.append(label)
        return self._part_atoms

    def component(self, atoms: Iterable[str]) -> list[L]:
        """Labels of the parts linked to ``atoms`` through shared atoms, in base order.

        When the base is consistent, the parts outside this set are satisfiable on their
        own and share no atom with the parts inside it or with a query over ``atoms``: a
        query is satisfiable with the whole base iff it is with this component, the
        assignments to ``atoms`` that extend to a model are the same, and deletion would
        drop every outside part anyway. So every check may be confined to the component
        without changing any result, only its cost.
        """
        part_atoms = self.part_atoms()
        by_atom = self._by_atom
        reached: set[L] = set()
        seen_atoms: set[str] = set()
        todo = list(atoms)
        while todo:
            a = todo.pop()
            if a in seen_atoms:
                continue
            seen_atoms.add(a)
            for label in by_atom.get(a, ()):
                if label not in reached:
                    reached.add(label)
                    todo.extend(part_atoms[label])  # an atom seen already is skipped above
        # in base order without a pass over the whole base (a check on a large replay
        # reaches a handful of parts; the base may have thousands)
        if self._rank is None:
            self._rank = {label: i for i, label in enumerate(self.labels)}
        if len(self._rank) != len(self.labels):  # repeated labels: keep every occurrence
            return [label for label in self.labels if label in reached]
        return sorted(reached, key=self._rank.__getitem__)


@frozen
class Minimised(Generic[L]):
    labels: tuple[L, ...]
    minimal: bool


def minimise(base: BaseSession[L], query: Expr | None, candidates: Sequence[L]) -> Minimised[L]:
    """A subset of ``candidates`` that with ``query`` is unsat and loses that when any one
    label is removed; ``candidates`` with ``query`` must be unsat."""
    if len(set(candidates)) != len(candidates):
        return _minimise_listwise(base, query, candidates)
    current = dict.fromkeys(candidates)  # an ordered set: removal without a list pass
    minimal = True
    # ``current`` and the cores seen as bit masks over the candidates, so the test below
    # is two integer operations per core, not a hash of every label of it
    bit: dict[PartLabel, int] = {label: 1 << i for i, label in enumerate(candidates)}
    have = (1 << len(candidates)) - 1
    masks: list[int] = []
    read = 0  # the cores of ``query`` already made masks
    for label in candidates:
        if base.expired():
            return Minimised(tuple(current), False)  # still unsat with the query
        # a core seen before that avoids `label` and lies within `current` proves the trial
        # unsat with no call and no copy of `current` (the test of known_unsat_without)
        cores = base.cores(query)
        while read < len(cores):
            mask = 0
            for x in cores[read]:
                b = bit.get(x)
                if b is None:  # a label no candidate has: never within `current`
                    mask = -1
                    break
                mask |= b
            if mask >= 0:
                masks.append(mask)
            read += 1
        without = have & ~bit[label]
        if any(not m & ~without for m in masks):
            del current[label]
            have = without
            continue
        # copied and cut in C: a Python pass per trial made deletion over n parts cost n²
        # interpreted steps (every claim of a large decision supported)
        trial = list(current)
        trial.remove(label)
        result = base.check(query, enabled=trial)
        if isinstance(result, Unsat):
            del current[label]
            have &= ~bit[label]
        elif isinstance(result, Unknown):
            minimal = False  # keep the part: the set still forces the result
    return Minimised(tuple(current), minimal)


def _minimise_listwise(
    base: BaseSession[L], query: Expr | None, candidates: Sequence[L]
) -> Minimised[L]:
    """``minimise`` for candidates with repeated labels (never made by the checker)."""
    current = list(candidates)
    minimal = True
    for label in candidates:
        if base.expired():
            return Minimised(tuple(current), False)
        trial = [x for x in current if x != label]
        if base.known_unsat(query, trial):
            current = trial
            continue
        result = base.check(query, enabled=trial)
        if isinstance(result, Unsat):
            current = trial
        elif isinstance(result, Unknown):
            minimal = False
    return Minimised(tuple(current), minimal)


@frozen
class Completed:
    values: tuple[tuple[str, bool], ...]
    canonical: bool


def witness(
    base: BaseSession[L],
    query: Expr,
    start: Mapping[str, bool],
    atoms: Sequence[str],
    observed: Mapping[str, bool],
    enabled: Sequence[L] | None = None,
) -> Completed:
    """Complete ``atoms`` (declaration order) on the side ``query``; ``start`` is a model of
    base ∧ query over ``atoms``; ``observed`` atoms are fixed by facts in the base;
    ``enabled`` confines the checks to a component (see ``BaseSession.component``).

    The greedy choice is made for runs of atoms at once, galloping (a run that succeeds
    doubles the next one): a run set FALSE together is satisfiable, so each of its atoms
    would have been FALSE in turn; a run none of which can be FALSE (the query with "one
    of them FALSE" is unsat) is forced TRUE in turn. One atom at a time cost a call per
    atom, each as long as the atoms: minutes over a cardinality of 20,000 arguments. The
    result is the one the atom-by-atom greedy gives; only the number of calls differs."""
    model = dict(start)
    assume: dict[str, bool] = {}
    canonical = True
    n = len(atoms)
    free_run = forced_run = 1  # the next run's length of each kind
    i = 0
    while i < n:
        a = atoms[i]
        if a in observed:
            assume[a] = observed[a]  # forced by a fact: no call needed
            i += 1
            continue
        if not model.get(a, False):
            assume[a] = False  # the current model already shows FALSE is possible
            i += 1
            continue
        if base.expired():
            # the current model agrees with every choice so far: the rest from it is a
            # real completion of this side, just not perhaps the least one
            assume[a] = True
            canonical = False
            i += 1
            continue
        if free_run > 1:
            run = _run(atoms, i, free_run, observed)
            trial = {**assume, **{b: observed.get(b, False) for b in run}}
            result = base.check(query, enabled=enabled, assume=trial, want=atoms)
            if isinstance(result, Sat):
                assume, model = trial, dict(result.model)
                i += len(run)
                free_run *= 2
                continue
            free_run = 1  # retry the first atom alone
            continue
        if forced_run > 1:
            run = [b for b in _run(atoms, i, forced_run, observed) if b not in observed]
            some_false = mk_or([mk_not(mk_atom(b)) for b in run])
            result = base.check(
                mk_and([query, some_false]), enabled=enabled, assume=assume, want=atoms
            )
            if isinstance(result, Unsat):
                for b in _run(atoms, i, forced_run, observed):
                    assume[b] = observed.get(b, True)
                i += len(_run(atoms, i, forced_run, observed))
                forced_run *= 2
                continue
            forced_run = 1
            if isinstance(result, Sat):
                model = dict(result.model)  # still a model of everything assumed so far
            continue
        result = base.check(query, enabled=enabled, assume={**assume, a: False}, want=atoms)
        if isinstance(result, Sat):
            assume[a] = False
            model = dict(result.model)
            free_run = 2
        else:
            # Unsat: TRUE is forced (the current model has it). Unknown: TRUE is still a
            # real completion, just perhaps not the least one.
            assume[a] = True
            if isinstance(result, Unknown):
                canonical = False
            else:
                forced_run = 2
        i += 1
    return Completed(tuple((a, assume[a]) for a in atoms), canonical)


def _run(atoms: Sequence[str], i: int, length: int, observed: Mapping[str, bool]) -> list[str]:
    """``atoms[i:]`` up to ``length`` atoms not fixed by facts (those fixed are kept: they
    take their observed value in any case)."""
    out: list[str] = []
    free = 0
    for b in atoms[i:]:
        if free == length:
            break
        out.append(b)
        if b not in observed:
            free += 1
    return out
