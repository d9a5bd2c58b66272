"""The PySAT machinery the ``pysat`` and ``sliced`` backends share.

Contract:
- ``resolve_solver(option)`` names a usable solver (``DEFAULT_SOLVER`` for None); a solver
  that is unknown, or that cannot answer under assumptions with cores, is an
  ``UnmaskError`` listing the usable ones;
- ``Incremental`` is one solver fed from one ``CnfEncoder``: ``flush`` hands it the clauses
  encoded since the last call and drops them from the encoder (clause order depends only on
  the input); ``solve`` answers under assumptions within a wall-clock limit, ``True`` or
  ``False``, or None when the time ran out, never a guess: it first gets one slice of
  ``BUDGET_SLICE`` conflicts (most checks end there, with no timer thread to pay for),
  then either runs until a timer interrupts it or, for solvers whose bindings cannot be
  interrupted (CaDiCaL), in further slices until the deadline; a limit of zero or less
  means none.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError

if TYPE_CHECKING:
    from pysat.solvers import Solver

    from unmask.backends.cnf import CnfEncoder

# PySAT (and the encoder built on it) is imported by the first call that needs a solver: the
# sliced backend answers most small replays without one, and the import costs start-up time

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
    from pysat.solvers import SolverNames

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
    choices = "the usable solvers are " + ", ".join(f"`{n}`" for n in SUPPORTED)
    if canonical is not None:
        message = (
            f"the solver `{option}` cannot answer under assumptions with cores and a time limit"
        )
        hint = f"try `pysat:{DEFAULT_SOLVER}`, {choices}"
    else:
        message = f"unknown pysat solver `{option}`"
        import difflib  # only for a wrong name: not at every start-up

        close = difflib.get_close_matches(option.lower(), list(SUPPORTED), n=1, cutoff=0.5)
        hint = f"did you mean `pysat:{close[0]}`? {choices}" if close else choices
    raise UnmaskError([Diagnostic(code=Code.UNKNOWN_SOLVER, message=message, help=hint)])


class Incremental:
    """One PySAT solver over the clauses of ``enc``, fed as they are encoded."""

    def __init__(
        self, solver_name: str, atoms: Iterable[str] = (), enc: CnfEncoder | None = None
    ) -> None:
        from unmask.backends.cnf import CnfEncoder

        self.solver_name = solver_name
        self.enc = CnfEncoder(atoms) if enc is None else enc  # ``enc``: made by the caller
        self.solver: Solver | None = None

    def flush(self) -> None:
        """Give the solver every clause encoded since the last flush (creating it once)."""
        if self.solver is None:
            from pysat.solvers import Solver

            self.solver = Solver(name=self.solver_name)
        new = self.enc.clauses
        if new:
            self.solver.append_formula(new)
            # the solver holds its own copy: keeping ours doubled the memory of a base
            # (millions of clauses for a cardinality over thousands of atoms)
            self.enc.clauses = []

    def solve(self, assumptions: list[int], timeout_ms: int | None) -> bool | None:
        self.flush()
        solver = self.solver
        assert solver is not None
        if timeout_ms is None or timeout_ms <= 0:
            return solver.solve(assumptions=assumptions)
        deadline = time.monotonic() + timeout_ms / 1000
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

    def model(self, names: Iterable[str]) -> dict[str, bool]:
        """The last model's values of ``names`` (an atom the solver never saw is false)."""
        assert self.solver is not None
        got = self.solver.get_model() or []
        known, size = self.enc.atom_vars, len(got)
        out = {}
        for n in names:
            var = known.get(n) or self.enc.atom_var(n)
            # a model lists variable v at index v - 1 (the common case, read directly)
            out[n] = got[var - 1] > 0 if var <= size and abs(got[var - 1]) == var else var in got
        return out

    def core(self) -> set[int]:
        assert self.solver is not None
        return set(self.solver.get_core() or ())

    def delete(self) -> None:
        if self.solver is not None:
            self.solver.delete()
            self.solver = None
