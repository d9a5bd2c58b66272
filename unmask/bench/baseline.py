"""The baseline ``unmask bench`` compares every backend with.

Contract: ``Baseline().check(replay)`` loads nothing itself (it takes a validated replay,
as the audit produces it) and classifies every check the straightforward way: a fresh z3
``Solver`` per satisfiability query, the base re-added each time, in one z3 context that
lives as long as the ``Baseline`` (as a direct user keeps one; a context per replay would
add its own set-up to every replay). It computes statuses only (no witnesses, no
explanations), so it does less work than a real audit and the ratios against it are
conservative; a test checks its statuses equal the checker's.
"""

from __future__ import annotations

from typing import Any

from unmask.plumbing.interrupt import checkpoint


class Baseline:
    """Classify done the straightforward way: a fresh z3 ``Solver`` per query.

    Each base is lowered once per replay and re-added to a new solver for every query;
    base consistency is decided once per base, then two queries per check. Statuses only.
    The z3 context is made once and reused by every replay.
    """

    name = "baseline"

    def __init__(self) -> None:
        import z3

        self.z3 = z3
        self.ctx = z3.Context()
        self.calls = 0

    def _sat(self, terms: list[Any], extra: Any | None) -> bool:
        z3 = self.z3
        checkpoint()  # see unmask.plumbing.interrupt
        solver = z3.Solver(ctx=self.ctx)
        solver.set("ctrl_c", False)  # Ctrl-C stops the run, not this check (z3_backend)
        for t in terms:
            solver.add(t)
        if extra is not None:
            solver.add(extra)
        self.calls += 1
        answer = solver.check()
        if answer == z3.unknown:
            raise RuntimeError("the baseline's solver gave up")
        return answer == z3.sat

    def check(self, replay: Any) -> dict[str, Any]:
        """Statuses of every check of ``replay`` (a validated ``Replay``)."""
        from unmask.backends.z3_solver import lower
        from unmask.checking.checker import Case, base_parts, verdict_query
        from unmask.ir import mk_not

        z3 = self.z3
        names: dict[str, Any] = {}

        def var(name: str) -> Any:
            if name not in names:
                names[name] = z3.Bool(name, self.ctx)
            return names[name]

        def term(e: Any) -> Any:
            return lower(e, self.ctx, var)

        case = Case.from_replay(replay)
        if case.translation != "valid":
            return {"overall": "UNKNOWN"}
        bases = {k: [term(p.expr) for p in parts] for k, parts in base_parts(case).items()}
        consistent = {k: self._sat(terms, None) for k, terms in bases.items()}

        def classify(base: str, phi: Any) -> str:
            if not consistent[base]:
                return "INCONSISTENT_BASE"
            f = self._sat(bases[base], term(mk_not(phi)))
            t = self._sat(bases[base], term(phi))
            if not f:
                return "ENTAILED"
            if not t:
                return "REFUTED"
            return "UNDERDETERMINED"

        p = case.protocol
        return {
            "verdict": classify("all", verdict_query(case.verdict, case.protocol)),
            "requirements": [
                (
                    classify("evid", r.expr),
                    None if r.addressed is None else classify("evid", r.addressed),
                )
                for r in p.requirements
            ],
            "grounding": [classify("evid", g.query) for g in p.grounding],
        }
