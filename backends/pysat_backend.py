"""The PySAT backend: the base lowered to CNF once, then answered incrementally.

Contract:
- ``create("pysat")`` uses ``DEFAULT_SOLVER``; ``create("pysat:glucose4")`` picks another
  solver by any of its PySAT names (``unmask.backends.pysat_core.resolve_solver``);
- one solver per session; each ``Part`` is guarded by a selector variable assumed true
  when the part is enabled; a query's Tseitin literal (its clauses added once per distinct
  query) and the ``assume`` atoms are further assumptions; a core maps back to part labels;
- a check runs under a wall-clock limit and answers ``Unknown("timeout after N ms")``,
  never a guess (conflict-budget slices, then a timer: ``pysat_core.Incremental.solve``);
- deterministic: the clause order depends only on the input, and no solver is seeded
  randomly; only the ``want`` atoms are read from a model; ``calls`` counts solver calls.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from unmask.backends.base import Backend, Part, PartLabel, Result, Sat, Session, Unknown, Unsat
from unmask.backends.pysat_core import (
    BUDGET_SLICE,
    BUDGETED,
    DEFAULT_SOLVER,
    INTERRUPTIBLE,
    SUPPORTED,
    Incremental,
    resolve_solver,
)
from unmask.ir import Expr

__all__ = [
    "BUDGETED",
    "BUDGET_SLICE",
    "DEFAULT_SOLVER",
    "INTERRUPTIBLE",
    "SUPPORTED",
    "PySatBackend",
    "PySatSession",
    "resolve_solver",
]


class PySatBackend(Backend):
    name = "pysat"
    takes_option = True

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.solver_name = resolve_solver(self.option)

    def open(self, parts: Sequence[Part[PartLabel]], atoms: Sequence[str]) -> Session:
        return PySatSession(self.solver_name, parts, atoms, self.timeout_ms)


class PySatSession(Session):
    def __init__(
        self,
        solver_name: str,
        parts: Sequence[Part[PartLabel]],
        atoms: Sequence[str],
        timeout_ms: int,
    ) -> None:
        self.calls = 0
        self.timeout_ms = timeout_ms
        self.solver_name = solver_name
        self._core = Incremental(solver_name, atoms)
        self.enc = enc = self._core.enc
        self._labels: list[PartLabel] = []
        self._selectors: dict[PartLabel, list[int]] = {}
        self._owner: dict[int, PartLabel] = {}  # selector -> its part's label
        for part in parts:
            sel = enc.pool.id()
            self._owner[sel] = part.label
            x = enc.lit(part.expr)
            enc.clauses.append([-sel, x])
            if part.label not in self._selectors:
                self._labels.append(part.label)
                self._selectors[part.label] = []
            self._selectors[part.label].append(sel)
        self._closed = False
        self._core.flush()

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
        if enabled is None:
            labels = self._labels
        else:
            on = set(enabled)  # callers pass lists; membership must not cost O(n) each
            labels = [x for x in self._labels if x in on]
        assumptions = [sel for label in labels for sel in self._selectors[label]]
        if query is not None:
            assumptions.append(self.enc.lit(query))
        # witness completion assumes every atom decided so far: one dict lookup each
        known = self.enc.atom_vars
        for name, value in (assume or {}).items():
            var = known.get(name) or self.enc.atom_var(name)
            assumptions.append(var if value else -var)
        for name in want:
            if name not in known:
                self.enc.atom_var(name)  # so a free atom still has a variable to read
        self.calls += 1
        limit = self.timeout_ms if timeout_ms is None else timeout_ms
        answer = self._core.solve(assumptions, limit)
        if answer is None:
            return Unknown(f"timeout after {limit} ms")
        if answer:
            return Sat(self._core.model(want))
        hit = {self._owner[x] for x in self._core.core() if x in self._owner}
        return Unsat(tuple(label for label in labels if label in hit))

    def close(self) -> None:
        self._closed = True
        self._core.delete()
