"""Satisfiability questions about protocols, asked of any backend, answered canonically.

Contract: a ``Space`` is one backend session over a set of constraint parts and the atoms
(declaration order) that queries may name. ``Space.sat(query)`` answers ``Answer``: SAT
with the canonical witness (the atoms the query can depend on, in declaration order, each
FALSE when it can be: the least model, so every backend prints the same), UNSAT, or
UNKNOWN with the solver's reason, which callers report as undecided and never read as
either. Checks are confined to the constraints linked to the query's atoms once the
constraints are known consistent (a consistent part with no shared atom cannot change the
answer). A ``Deadline`` given to the space bounds every question, its encoding included:
past it a question is UNKNOWN with the reason ``deadline``, and a witness completion stops
with the last model (a real one, not the least).
"""

from __future__ import annotations

from collections.abc import Sequence

from unmask.backends.base import Backend, Part, Sat, Unknown
from unmask.checking.explain import BaseSession, Deadline, open_session, witness
from unmask.ir import Expr, iter_atoms
from unmask.plumbing.frozen import frozen

SAT = "sat"
UNSAT = "unsat"
UNKNOWN = "unknown"


@frozen
class Answer:
    state: str
    witness: tuple[tuple[str, bool], ...] | None = None
    reason: str = ""


class Space:
    def __init__(
        self,
        backend: Backend,
        parts: Sequence[Part],
        atoms: Sequence[str],
        deadline: Deadline | None = None,
    ) -> None:
        self.atoms = tuple(atoms)
        self.rank = {a: i for i, a in enumerate(self.atoms)}
        self.deadline = deadline
        self.session = open_session(backend, parts, self.atoms, deadline)
        timeout = getattr(backend, "timeout_ms", None)
        self.base = BaseSession("constraints", parts, self.session, deadline, timeout)
        self.consistent = False  # set once the whole set of parts is known satisfiable

    @property
    def calls(self) -> int:
        return self.session.calls

    def close(self) -> None:
        self.session.close()

    def sat(self, query: Expr | None, *, want_witness: bool = True) -> Answer:
        qatoms = [] if query is None else list(iter_atoms(query))
        enabled = self.base.component(qatoms) if self.consistent else None
        want: list[str] = []
        if want_witness:
            seen = set(qatoms)
            if enabled is not None:
                parts = self.base.part_atoms()
                for label in enabled:
                    seen.update(parts[label])
            else:
                seen = set(self.atoms)
            want = sorted((a for a in seen if a in self.rank), key=self.rank.__getitem__)
        result = self.base.check(query, enabled=enabled, want=want)
        if isinstance(result, Unknown):
            return Answer(UNKNOWN, reason=result.reason)
        if not isinstance(result, Sat):
            return Answer(UNSAT)
        if query is None and enabled is None:
            self.consistent = True
        if not want_witness:
            return Answer(SAT)
        done = witness(self.base, query, result.model, want, {}, enabled)  # type: ignore[arg-type]
        return Answer(SAT, done.values)
