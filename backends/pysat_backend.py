"""The PySAT backend: the base lowered to CNF once, then answered incrementally.

Contract:
- ``create("pysat")`` uses ``DEFAULT_SOLVER``; ``create("pysat:glucose4")`` picks another
  solver by any of its PySAT names; a solver that is unknown, or that cannot answer under
  assumptions with cores, is an ``UnmaskError`` listing the usable ones;
- one solver per session; each ``Part`` is guarded by a selector variable assumed true
  when the part is enabled; a query's Tseitin literal (its clauses added once per distinct
  query) and the ``assume`` atoms are further assumptions; a core maps back to part labels;
- a check runs under a wall-clock limit and answers ``Unknown("timeout after N ms")``,
  never a guess: it first gets one slice of ``BUDGET_SLICE`` conflicts (most checks end
  there, with no timer thread to pay for), then either runs until a timer interrupts it
  or, for solvers whose bindings cannot be interrupted (CaDiCaL), in further slices until
  the deadline;
- deterministic: the clause order depends only on the input, and no solver is seeded
  randomly; only the ``want`` atoms are read from a model; ``calls`` counts solver calls.
"""

from __future__ import annotations

import difflib
import threading
import time
from collections.abc import Collection, Mapping, Sequence

from pysat.solvers import Solver, SolverNames

from unmask.backends.base import Backend, Part, Result, Sat, Session, Unknown, Unsat
from unmask.backends.cnf import CnfEncoder
from unmask.diagnostics import Diagnostic, UnmaskError
from unmask.ir import Expr

# solvers that answer under assumptions with cores; chosen by measurement (docs/backends.md)
DEFAULT_SOLVER = "minisat22"
# solvers whose search can be interrupted from a timer thread (others run in slices)
INTERRUPTIBLE = (
    "glucose3",
    "glucose4",
    "glucose42",
    "gluecard3",
    "gluecard4",
    "maplechrono",
    "maplecm",
    "maplesat",
    "mergesat3",
    "minicard",
    "minisat22",
)
# CaDiCaL cannot be interrupted through PySAT: it runs in conflict-budget slices
BUDGETED = ("cadical153", "cadical195", "cadical300")
SUPPORTED = BUDGETED + INTERRUPTIBLE
BUDGET_SLICE = 2_000  # conflicts per slice: about 10-20 ms of search


def _aliases() -> dict[str, str]:
    """Every PySAT name of every solver -> its canonical name."""
    out: dict[str, str] = {}
    for canonical, names in vars(SolverNames).items():
        if canonical.startswith("_") or not isinstance(names, tuple):
            continue
        for n in names:
            out[n] = canonical
        out[canonical] = canonical
    return out


def resolve_solver(option: str | None) -> str:
    """The canonical solver name for ``option`` (None means the default)."""
    if option is None:
        return DEFAULT_SOLVER
    aliases = _aliases()
    canonical = aliases.get(option.lower())
    if canonical in SUPPORTED:
        return canonical
    choices = ", ".join(f"`{n}`" for n in SUPPORTED)
    if canonical is not None:
        message = (
            f"the solver `{option}` cannot answer under assumptions with cores and a time "
            f"limit; usable solvers: {choices}"
        )
        hint = f"try `pysat:{DEFAULT_SOLVER}`"
    else:
        message = f"unknown pysat solver `{option}`; usable solvers: {choices}"
        close = difflib.get_close_matches(option.lower(), list(SUPPORTED), n=1, cutoff=0.5)
        hint = f"did you mean `pysat:{close[0]}`?" if close else None
    raise UnmaskError([Diagnostic(code="unknown-solver", message=message, help=hint)])


def _value(model: list[int], var: int) -> bool:
    """``var`` in a PySAT model (``model[v - 1]`` is v or -v); unseen variables are false."""
    if var <= len(model) and abs(model[var - 1]) == var:
        return model[var - 1] > 0
    return var in model


class PySatBackend(Backend):
    name = "pysat"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.solver_name = resolve_solver(self.option)

    def open(self, parts: Sequence[Part], atoms: Sequence[str]) -> Session:
        return PySatSession(self.solver_name, parts, atoms, self.timeout_ms)


class PySatSession(Session):
    def __init__(
        self, solver_name: str, parts: Sequence[Part], atoms: Sequence[str], timeout_ms: int
    ) -> None:
        self.calls = 0
        self.timeout_ms = timeout_ms
        self.solver_name = solver_name
        self.enc = CnfEncoder(atoms)
        self._labels: list[str] = []
        self._selectors: dict[str, list[int]] = {}
        for part in parts:
            sel = self.enc.pool.id()
            x = self.enc.lit(part.expr)
            self.enc.clauses.append([-sel, x])
            if part.label not in self._selectors:
                self._labels.append(part.label)
                self._selectors[part.label] = []
            self._selectors[part.label].append(sel)
        self._solver: Solver | None = Solver(name=solver_name)
        self._added = 0
        self._flush()

    def _flush(self) -> None:
        assert self._solver is not None
        new = self.enc.clauses[self._added :]
        if new:
            self._solver.append_formula(new)
            self._added = len(self.enc.clauses)

    def check(
        self,
        query: Expr | None = None,
        *,
        enabled: Collection[str] | None = None,
        assume: Mapping[str, bool] | None = None,
        want: Sequence[str] = (),
    ) -> Result:
        if self._solver is None:
            raise RuntimeError("session is closed")
        if enabled is None:
            labels = self._labels
        else:
            on = set(enabled)  # callers pass lists; membership must not cost O(n) each
            labels = [x for x in self._labels if x in on]
        assumptions = [sel for label in labels for sel in self._selectors[label]]
        if query is not None:
            assumptions.append(self.enc.lit(query))
        for name, value in (assume or {}).items():
            var = self.enc.atom_var(name)
            assumptions.append(var if value else -var)
        for name in want:
            self.enc.atom_var(name)  # so a free atom still has a variable to read
        self._flush()
        self.calls += 1
        answer = self._solve(assumptions)
        if answer is None:
            return Unknown(f"timeout after {self.timeout_ms} ms")
        if answer:
            model = self._solver.get_model() or []
            return Sat({n: _value(model, self.enc.atom_var(n)) for n in want})
        core = set(self._solver.get_core() or ())
        return Unsat(tuple(label for label in labels if self._in_core(label, core)))

    def _in_core(self, label: str, core: set[int]) -> bool:
        return any(sel in core for sel in self._selectors[label])

    def _solve(self, assumptions: list[int]) -> bool | None:
        solver = self._solver
        assert solver is not None
        if self.timeout_ms is None or self.timeout_ms <= 0:
            return solver.solve(assumptions=assumptions)
        deadline = time.monotonic() + self.timeout_ms / 1000
        # most checks end within one conflict-budget slice: no timer thread to pay for
        solver.conf_budget(BUDGET_SLICE)
        answer = solver.solve_limited(assumptions=assumptions)
        if answer is not None:
            return answer
        if self.solver_name in INTERRUPTIBLE:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            solver.conf_budget(-1)  # no budget: only the timer stops this search
            timer = threading.Timer(remaining, solver.interrupt)
            timer.daemon = True
            timer.start()
            try:
                return solver.solve_limited(assumptions=assumptions, expect_interrupt=True)
            finally:
                timer.cancel()
                timer.join()  # a firing timer must not interrupt the next call
                solver.clear_interrupt()
        while time.monotonic() < deadline:
            solver.conf_budget(BUDGET_SLICE)
            answer = solver.solve_limited(assumptions=assumptions)
            if answer is not None:
                return answer
        return None

    def close(self) -> None:
        if self._solver is not None:
            self._solver.delete()
            self._solver = None
