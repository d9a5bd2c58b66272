"""The Z3 backend's sessions: one incremental ``z3.Solver`` per base, parts behind selector
literals. Imported by the backend's first session (``unmask.backends.z3_backend``), so a run
that never asks the solver never imports z3.

Contract:
- every backend instance works in its own ``z3.Context``, and every session has its own
  solver with a fixed seed, so sessions never share assertions and runs repeat exactly:
  z3's SAT core (``QF_FD``), or its SMT core for a base with a cardinality over more than
  ``WIDE_CARD`` arguments;
- each part is asserted once as ``Implies(selector, expr)``; a check passes the selectors
  of the enabled parts as assumptions, so any subset of parts is checked without
  rebuilding; a query gets its own selector (cached per query object, asserted once) and atom
  assumptions are plain literals; cores are mapped back to part labels;
- a check that Z3 cannot decide within ``timeout_ms`` (or any other ``unknown``) is
  ``Unknown(reason)``, never sat or unsat; z3's own timer can be lost (``_Watchdog``), so a
  check still running ``GRACE_MS`` past its limit is interrupted from a watchdog thread too
  (z3 stops at its next look at the cancel flag) and is ``Unknown("timeout")`` whatever it
  then answers;
- ``lower(expr, ctx, var)`` turns an IR expression into a Z3 term without Python
  recursion (the IR may be deep).
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import z3

from unmask.backends.base import Part, PartLabel, Result, Sat, Session, Unknown, Unsat
from unmask.ir import Card, Expr, Memo, Nary, Table, fold


def lower(
    expr: Expr, ctx: z3.Context, var: Callable[[str], z3.BoolRef], memo: Memo | None = None
) -> z3.BoolRef:
    """The Z3 term for ``expr``; ``var(name)`` gives the term of each atom. ``memo`` (kept
    by a session across its parts and queries) lowers each shared node once."""
    # shared subtrees are lowered once (the fold is keyed by identity)
    return _LOWER(expr, (ctx, var), memo)


_Ctx = tuple[z3.Context, Callable[[str], z3.BoolRef]]


def _xor(c: _Ctx, e: Nary, args: list[z3.BoolRef]) -> z3.BoolRef:
    acc = z3.BoolVal(False, c[0])
    for a in args:
        acc = z3.Xor(acc, a, c[0])
    return acc


_PB = {"atleast": z3.PbGe, "atmost": z3.PbLe, "exactly": z3.PbEq}


def _card(c: _Ctx, e: Card, args: list[z3.BoolRef]) -> z3.BoolRef:
    if not args:
        n = 0
        holds = {"atleast": n >= e.k, "atmost": n <= e.k, "exactly": n == e.k}
        return z3.BoolVal(holds[e.op], c[0])
    return _PB[e.op]([(a, 1) for a in args], e.k)


_LOWER: Table[z3.BoolRef] = Table(
    "Z3",
    {
        "const": lambda c, e, v: z3.BoolVal(e.value, c[0]),
        "atom": lambda c, e, v: c[1](e.name),
        "not": lambda c, e, v: z3.Not(v[0], c[0]),
        "and": lambda c, e, v: z3.And(*v, c[0]) if v else z3.BoolVal(True, c[0]),
        "or": lambda c, e, v: z3.Or(*v, c[0]) if v else z3.BoolVal(False, c[0]),
        "xor": _xor,
        "implies": lambda c, e, v: z3.Implies(v[0], v[1], c[0]),
        "iff": lambda c, e, v: v[0] == v[1],
        Card: _card,
    },
)


# arguments of the widest cardinality a base may have and still go to z3's SAT core
WIDE_CARD = 64


def _widest_card(parts: Sequence[Part[PartLabel]]) -> int:
    """The number of arguments of the widest cardinality in ``parts`` (0: none)."""
    memo: dict = {}  # shared between parts: their common subtrees are walked once
    widest = 0
    for part in parts:
        widest = max(widest, fold(part.expr, _card_width, memo))
    return widest


def _card_width(e: Expr, values: list[int]) -> int:
    own = len(e.args) if isinstance(e, Card) else 0
    return max(own, *values) if values else own


# --- the watchdog ---------------------------------------------------------------------------
# z3 arms a check's timer before it installs the check's resource limit, and installing it
# clears the context's cancel flag (``Z3_solver_check_assumptions``: ``scoped_timer``, then
# ``scoped_rlimit``, whose ``reslimit::push`` sets ``m_cancel = 0``). A timer that fires in
# between, the calling thread descheduled for the whole limit, is lost and the check runs
# with no limit at all: with 1 ms on a loaded machine about one check in 300, and a
# pigeonhole base given 1 ms ran 13 minutes, then answered unsat (a report INCONSISTENT
# where the limit said SOLVER_UNKNOWN). So a check past its limit is interrupted from here
# too (``Z3_interrupt``), and again every ``AGAIN_MS`` until it returns, since an
# interrupt that lands in the same gap is lost the same way.

TIMEOUT = "timeout"  # what z3 answers for its own timer, and the watchdog's reason alike
GRACE_MS = 10  # after z3's own timer, which nearly always stops the check itself
AGAIN_MS = 10  # between two interrupts of a check that has not returned yet


class _Watchdog:
    """One daemon thread per process that interrupts the z3 contexts of the checks armed
    with it once they are past due. ``arm`` and ``disarm`` take a lock and a dict entry
    (the thread is woken only when a check is due sooner than it planned to look); after
    ``disarm`` no interrupt of that check is made."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        # also in a forked child: the parent's thread and lock are not its own
        self._cond = threading.Condition(threading.Lock())
        self._armed: dict[int, list[Any]] = {}  # token -> [due, context, interrupted]
        self._wake = math.inf  # when the thread next looks
        self._thread: threading.Thread | None = None
        self._tokens = itertools.count()

    def arm(self, ctx: z3.Context, limit_ms: int) -> int:
        due = time.monotonic() + (limit_ms + GRACE_MS) / 1000
        with self._cond:
            token = next(self._tokens)
            self._armed[token] = [due, ctx, False]
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="unmask-z3-watchdog", daemon=True
                )
                self._thread.start()
            if due < self._wake:
                self._wake = due
                self._cond.notify()
        return token

    def disarm(self, token: int) -> bool:
        """Stop watching the check of ``token``; whether it was interrupted."""
        with self._cond:
            return bool(self._armed.pop(token)[2])

    def _run(self) -> None:
        cond = self._cond
        with cond:
            while True:
                now = time.monotonic()
                soonest = math.inf
                for entry in self._armed.values():
                    if entry[0] <= now:
                        entry[1].interrupt()
                        entry[2] = True
                        entry[0] = now + AGAIN_MS / 1000
                    soonest = min(soonest, entry[0])
                self._wake = soonest
                cond.wait(None if soonest == math.inf else soonest - now)


_WATCHDOG = _Watchdog()
os.register_at_fork(after_in_child=_WATCHDOG._reset)


def _clear_cancel(ctx: z3.Context) -> None:
    """Clear a cancel an interrupt may have left on ``ctx`` after its check returned (it
    would stop the next model read with "canceled"): any check ends by clearing it."""
    z3.Solver(ctx=ctx).check()


def _clamp(timeout_ms: int) -> int:
    return min(max(1, int(timeout_ms)), 2**32 - 1)  # z3: unsigned int


class Z3Session(Session):
    def __init__(
        self,
        parts: Sequence[Part[PartLabel]],
        atoms: Sequence[str],
        timeout_ms: int,
        seed: int,
        ctx: z3.Context,
    ) -> None:
        self.calls = 0
        self._ctx = ctx
        self._vars: dict[str, z3.BoolRef] = {}
        # atom terms are made on first use: an atom no part, query or `want` names is free
        # and costs nothing
        # every base is purely Boolean (cardinalities are pseudo-Boolean), so the
        # finite-domain solver, z3's incremental SAT core, answers it; per check with
        # assumptions it is several times faster than the general SMT core on large bases
        # but its preprocessing of a wide pseudo-Boolean constraint grows faster than the
        # constraint (600 arguments: 1.2 s a check; 20,000: minutes in a loop the timeout
        # does not reach, and 2 GB), where the SMT core's own cardinality reasoning answers
        # in milliseconds: a base with a cardinality wider than WIDE_CARD goes to the latter
        wide = _widest_card(parts) > WIDE_CARD
        solver = z3.Solver(ctx=self._ctx) if wide else z3.SolverFor("QF_FD", ctx=self._ctx)
        self._timeout = self._limit = _clamp(timeout_ms)
        solver.set("timeout", self._limit)
        solver.set("random_seed", seed)
        solver.set("smt.random_seed" if wide else "sat.random_seed", seed)
        # z3 would take Ctrl-C for itself, cancel the check and answer `unknown`: an
        # interruption reported as a solver's result. Python's handler gets it instead,
        # once the call returns (the timeout bounds the wait)
        solver.set("ctrl_c", False)
        self._solver: z3.Solver | None = solver
        self._selectors: dict[PartLabel, z3.BoolRef] = {}
        self._labels: dict[int, PartLabel] = {}  # selector AST id -> part label
        self._queries: dict[int, tuple[Expr, z3.BoolRef]] = {}
        self._literals: dict[tuple[str, bool], z3.BoolRef] = {}
        self._memo: Memo = {}  # IR node id -> (node, term), for every part and query
        for i, part in enumerate(parts):
            sel = z3.Bool(f"part:{i}", self._ctx)
            self._selectors[part.label] = sel
            self._labels[sel.get_id()] = part.label
            solver.add(z3.Implies(sel, self._lower(part.expr)))

    def _var(self, name: str) -> z3.BoolRef:
        v = self._vars.get(name)
        if v is None:
            # every name lives in its own namespace: atoms `atom:…`, selectors `part:…`
            # and `query:…`, so no atom name can capture a selector
            v = self._vars[name] = z3.Bool(f"atom:{name}", self._ctx)
        return v

    def _lower(self, expr: Expr) -> z3.BoolRef:
        # one memo for the session: the decisions of a first-match protocol each negate
        # every earlier one, and lowering them part by part made n^2 terms (400 labels:
        # 73 s); shared, each decision is lowered once
        return lower(expr, self._ctx, self._var, self._memo)

    def _query(self, query: Expr) -> z3.BoolRef:
        # keyed by identity, not by value: hashing a deep expression recurses in Python;
        # the entry keeps the expression alive, so its id cannot be reused
        entry = self._queries.get(id(query))
        if entry is None:
            assert self._solver is not None
            sel = z3.Bool(f"query:{len(self._queries)}", self._ctx)
            self._solver.add(z3.Implies(sel, self._lower(query)))
            entry = self._queries[id(query)] = (query, sel)
        return entry[1]

    def check(
        self,
        query: Expr | None = None,
        *,
        enabled: Collection[PartLabel] | None = None,
        assume: Mapping[str, bool] | None = None,
        want: Sequence[str] = (),
        timeout_ms: int | None = None,
    ) -> Result:
        solver = self._solver
        if solver is None:
            raise RuntimeError("session is closed")
        limit = self._timeout if timeout_ms is None else _clamp(timeout_ms)
        if limit != self._limit:  # a caller's deadline: set only when it changes
            solver.set("timeout", limit)
            self._limit = limit
        labels = self._selectors if enabled is None else enabled
        lits = [self._selectors[label] for label in labels]
        if query is not None:
            lits.append(self._query(query))
        for name, value in (assume or {}).items():
            lits.append(self._literal(name, value))
        # the assumption array is built directly: z3's `Solver.check` re-casts every
        # assumption in Python, which dominated the run time on bases of thousands of parts
        array = (z3.Ast * len(lits))(*(lit.as_ast() for lit in lits))
        self.calls += 1
        token = _WATCHDOG.arm(self._ctx, limit)
        try:
            got = z3.Z3_solver_check_assumptions(self._ctx.ref(), solver.solver, len(lits), array)
        finally:
            interrupted = _WATCHDOG.disarm(token)
        if interrupted:
            # past its limit: undecided within it, whatever the call then answered
            _clear_cancel(self._ctx)
            return Unknown(TIMEOUT)
        answer = z3.CheckSatResult(got)
        if answer == z3.sat:
            if not want:
                return Sat({})  # building a model costs as much as the check itself
            model = solver.model()
            values = {
                name: z3.is_true(model.eval(self._var(name), model_completion=True))
                for name in want
            }
            return Sat(values)
        if answer == z3.unsat:
            core = {self._labels.get(c.get_id()) for c in solver.unsat_core()}
            return Unsat(tuple(label for label in self._selectors if label in core))
        return Unknown(solver.reason_unknown() or "unknown")

    def _literal(self, name: str, value: bool) -> z3.BoolRef:
        lit = self._literals.get((name, value))
        if lit is None:
            v = self._var(name)
            lit = self._literals[(name, value)] = v if value else z3.Not(v, self._ctx)
        return lit

    def close(self) -> None:
        self._solver = None
        self._queries.clear()
        self._memo.clear()
