"""What is still open in a replay, and which one annotation would settle it (`unmask next`).

Contract:
- the checks are the checker's (the verdict on B_all; each requirement, coverage and grounding
  pair on B_evid), named as the report's reasons name them (``verdict``, ``requirement:ID``,
  ``coverage:ID``, ``grounding:J~C``); ``_verdict_query`` is the one place the verdict is
  read, so more verdict labels change one function;
- a check is *open* when it is UNDERDETERMINED. It *depends on* the free atoms (unannotated,
  or annotated UNKNOWN) of its cone: the atoms of φ and of the base parts connected to them
  through shared atoms (the component the checker confines the check to). An atom outside the
  cone cannot change the check's status whatever its value;
- for each such atom and each value v, the status the check would have with one more fact
  (atom = v): Classify(B ∧ (x ⇔ v), φ), read from the backend as two satisfiability calls
  under the assumption x = v; ``INCONSISTENT`` when that value contradicts the base. A value
  *settles* the check when the status becomes ENTAILED or REFUTED;
- the to-do list ranks atoms by how many open checks some value of the atom settles, then by
  how many it settles whichever value it takes, then by declaration order; a batch adds the
  counts per (protocol, atom) over its replays;
- every call goes through the backend interface, and nothing depends on which model or core a
  backend returns, so every backend gives the same answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from unmask.backends.base import Backend, Unknown, Unsat, spec
from unmask.checking.checker import Case, base_parts, outcome, verdict_atoms, verdict_query
from unmask.checking.explain import DEADLINE, BaseSession, Deadline, open_session
from unmask.checking.report import (
    ENTAILED,
    INCONSISTENT_BASE,
    REFUTED,
    SOLVER_UNKNOWN,
    UNDERDETERMINED,
)
from unmask.ir import Expr, iter_atoms, mk_not
from unmask.ir.text import expr_text
from unmask.plumbing.frozen import frozen

SCHEMA = "unmask.next/1"
INCONSISTENT = "INCONSISTENT"  # this value contradicts the base: it cannot be annotated so
SETTLED = (ENTAILED, REFUTED)


@frozen
class Query:
    """One check to classify: its name, its base and its proposition φ."""

    subject: str
    base: str  # "all" | "evid"
    phi: Expr
    coverage: bool = False


def _verdict_query(case: Case) -> Query:
    # the verdict's only appearance: V (or not V) for PASS/FAIL, V_observed for labels
    return Query("verdict", "all", verdict_query(case.verdict, case.protocol))


def queries(case: Case) -> list[Query]:
    """Every check of a replay, in report order."""
    p = case.protocol
    out = [_verdict_query(case)]
    for r in p.requirements:
        out.append(Query(f"requirement:{r.id}", "evid", r.expr))
        if r.addressed is not None:
            out.append(Query(f"coverage:{r.id}", "evid", r.addressed, coverage=True))
    for g in p.grounding:
        # the subject names the pair as the report does (sides as written)
        pair = f"{expr_text(g.judge)}{g.direction}{expr_text(g.context)}"
        out.append(Query(f"grounding:{pair}", "evid", g.query))
    return out


@frozen
class Effect:
    """Annotating ``atom`` alone: the check's status with it TRUE and with it FALSE."""

    atom: str
    state: str  # "unannotated" | "UNKNOWN"
    if_true: str
    if_false: str
    coverage: bool = False

    def settles(self, value: bool) -> bool:
        return (self.if_true if value else self.if_false) in SETTLED

    def to_json(self) -> dict:
        return {
            "atom": self.atom,
            "state": self.state,
            "if_true": _side(self.if_true, self.coverage),
            "if_false": _side(self.if_false, self.coverage),
        }


def _side(status: str, coverage: bool) -> dict:
    out: dict = {"status": status, "settles": status in SETTLED}
    if status in SETTLED:
        out["outcome"] = outcome(status, coverage=coverage)
    return out


@frozen
class OpenCheck:
    subject: str
    effects: tuple[Effect, ...]

    def to_json(self) -> dict:
        return {
            "check": self.subject,
            "status": UNDERDETERMINED,
            "depends_on": [e.to_json() for e in self.effects],
        }


@frozen
class Undecided:
    """A check that is not settled and that no annotation settles: solver or base trouble."""

    subject: str
    status: str | None  # SOLVER_UNKNOWN, INCONSISTENT_BASE, or None (translation not valid)
    detail: str | None = None

    def to_json(self) -> dict:
        out: dict = {"check": self.subject, "status": self.status}
        if self.detail:
            out["detail"] = self.detail
        return out


@frozen
class Todo:
    """One atom to annotate: which open checks TRUE settles, and which FALSE settles."""

    atom: str
    if_true: tuple[str, ...]
    if_false: tuple[str, ...]
    protocol: str = ""
    replays: int = 1

    @property
    def settles(self) -> int:
        return len(set(self.if_true) | set(self.if_false))

    @property
    def either_way(self) -> int:
        return len(set(self.if_true) & set(self.if_false))

    def to_json(self, batch: bool = False) -> dict:
        out: dict = {"atom": self.atom}
        if batch:
            out = {"protocol": self.protocol, "atom": self.atom, "replays": self.replays}
        out.update(
            {
                "settles": self.settles,
                "settles_either_way": self.either_way,
                "if_true": list(self.if_true),
                "if_false": list(self.if_false),
            }
        )
        return out


@dataclass(frozen=True)
class NextReport:
    replay: str
    protocol: str
    backend: str
    translation: str
    checks: int
    open: tuple[OpenCheck, ...]
    undecided: tuple[Undecided, ...]
    todo: tuple[Todo, ...]
    verdict: str = ""  # the observed verdict
    order: tuple[str, ...] = field(default=())  # atom declaration order, for batch ranking
    location: str | None = None  # where a batch found the replay

    @property
    def exit_code(self) -> int:
        if self.open:
            return 1
        return 3 if self.undecided else 0

    def to_json(self) -> dict:
        out: dict = {"schema": SCHEMA}
        if self.location is not None:
            out["location"] = self.location
        return out | {
            "replay": self.replay,
            "protocol": self.protocol,
            "backend": self.backend,
            "translation": self.translation,
            "verdict": self.verdict,
            "checks": self.checks,
            "open": [c.to_json() for c in self.open],
            "undecided": [u.to_json() for u in self.undecided],
            "todo": [t.to_json() for t in self.todo],
        }


PASSED = "the deadline passed"


def _status(t: object, f: object) -> str:
    if isinstance(t, Unknown) or isinstance(f, Unknown):
        return SOLVER_UNKNOWN
    if isinstance(t, Unsat) and isinstance(f, Unsat):
        return INCONSISTENT
    if isinstance(f, Unsat):
        return ENTAILED
    if isinstance(t, Unsat):
        return REFUTED
    return UNDERDETERMINED


def next_steps(
    case: Case,
    backend: Backend,
    *,
    backend_name: str | None = None,
    deadline: Deadline | None = None,
) -> NextReport:
    """The open checks of one case, what each depends on, and the ranked to-do list;
    ``deadline`` bounds all its solver calls (a check it cuts short is undecided)."""
    name = backend_name or spec(backend)
    order = case.protocol.atom_names
    qs = queries(case)

    def report(opened: Iterable[OpenCheck], undecided: Iterable[Undecided]) -> NextReport:
        still_open = tuple(opened)
        todo = tuple(rank_todo(_todos(case.protocol.name, still_open), order))
        return NextReport(
            case.id,
            case.protocol.name,
            name,
            case.translation,
            len(qs),
            still_open,
            tuple(undecided),
            todo,
            case.verdict,
            order,
        )

    if case.translation != "valid":
        return report((), (Undecided(q.subject, None, "the translation is not valid") for q in qs))
    facts = case.facts
    unknown = set(case.unknown)
    rank = {n: i for i, n in enumerate(order)}
    atoms = [*order, *verdict_atoms(case.protocol)]
    parts = base_parts(case)
    sessions: dict[str, BaseSession] = {}
    states: dict[str, object] = {}
    opened: list[OpenCheck] = []
    undecided: list[Undecided] = []
    try:
        for q in qs:
            if q.base not in sessions:
                s = BaseSession(
                    q.base,
                    parts[q.base],
                    open_session(backend, parts[q.base], atoms, deadline),
                    deadline,
                    getattr(backend, "timeout_ms", None),
                )
                sessions[q.base] = s
                states[q.base] = s.check()
            base, state = sessions[q.base], states[q.base]
            if isinstance(state, Unsat):
                undecided.append(Undecided(q.subject, INCONSISTENT_BASE, f"base `{q.base}`"))
                continue
            if isinstance(state, Unknown):
                why = PASSED if state.reason == DEADLINE else state.reason
                undecided.append(Undecided(q.subject, SOLVER_UNKNOWN, why))
                continue
            scope = base.component(iter_atoms(q.phi))
            not_phi = mk_not(q.phi)
            status = _status(base.check(q.phi, enabled=scope), base.check(not_phi, enabled=scope))
            if status == SOLVER_UNKNOWN:
                why = PASSED if deadline and deadline.hit else "a solver call timed out"
                undecided.append(Undecided(q.subject, SOLVER_UNKNOWN, why))
                continue
            if status != UNDERDETERMINED:
                continue
            part_atoms = base.part_atoms()
            cone = set(iter_atoms(q.phi))
            for label in scope:
                cone.update(part_atoms[label])
            free = sorted((a for a in cone if a in rank and a not in facts), key=rank.__getitem__)
            effects = []
            for a in free:
                side = {}
                for v in (True, False):
                    t = base.check(q.phi, enabled=scope, assume={a: v})
                    f = base.check(not_phi, enabled=scope, assume={a: v})
                    side[v] = _status(t, f)
                state_name = "UNKNOWN" if a in unknown else "unannotated"
                effects.append(Effect(a, state_name, side[True], side[False], q.coverage))
            if deadline is not None and deadline.hit:  # effects cut short: none are shown
                undecided.append(Undecided(q.subject, SOLVER_UNKNOWN, PASSED))
                continue
            opened.append(OpenCheck(q.subject, tuple(effects)))
    finally:
        for s in sessions.values():
            s.session.close()
    return report(opened, undecided)


def _todos(protocol: str, opened: Iterable[OpenCheck]) -> list[Todo]:
    by_atom: dict[str, tuple[list[str], list[str]]] = {}
    for c in opened:
        for e in c.effects:
            t, f = by_atom.setdefault(e.atom, ([], []))
            if e.settles(True):
                t.append(c.subject)
            if e.settles(False):
                f.append(c.subject)
    return [Todo(a, tuple(t), tuple(f), protocol) for a, (t, f) in by_atom.items() if t or f]


def rank_todo(todos: Iterable[Todo], order: Sequence[str]) -> list[Todo]:
    """Most open checks settled by some value first, then by either value, then declared."""
    rank = {n: i for i, n in enumerate(order)}
    return sorted(
        todos, key=lambda t: (-t.settles, -t.either_way, rank.get(t.atom, len(rank)), t.atom)
    )


@dataclass(frozen=True)
class BatchTodo:
    """The to-do list of many replays: per protocol and atom, the checks settled, summed."""

    reports: int
    todo: tuple[Todo, ...]


def merge(reports: Sequence[NextReport]) -> BatchTodo:
    """Group every replay's to-do entries by (protocol, atom): counts add up over replays.

    Within a protocol, atoms keep the order in which the replays first declare them; a check
    of a replay is named ``LOCATION: check`` in the merged lists (the replay's id when it has
    no location).
    """
    protocols: list[str] = []
    order: dict[str, list[str]] = {}
    sums: dict[tuple[str, str], tuple[list[str], list[str], list[str]]] = {}
    for r in reports:
        if r.protocol not in order:
            protocols.append(r.protocol)
            order[r.protocol] = []
        seen = order[r.protocol]
        for a in r.order:
            if a not in seen:
                seen.append(a)
        where = r.location or r.replay
        for t in r.todo:
            entry = sums.setdefault((r.protocol, t.atom), ([], [], []))
            entry[0].extend(f"{where}: {c}" for c in t.if_true)
            entry[1].extend(f"{where}: {c}" for c in t.if_false)
            entry[2].append(where)
    ranked = [Todo(a, tuple(t), tuple(f), p, len(rs)) for (p, a), (t, f, rs) in sums.items()]
    prank = {p: i for i, p in enumerate(protocols)}
    arank = {(p, n): i for p in protocols for i, n in enumerate(order[p])}
    ranked.sort(
        key=lambda t: (
            -t.settles,
            -t.either_way,
            prank[t.protocol],
            arank.get((t.protocol, t.atom), 0),
        )
    )
    return BatchTodo(len(reports), tuple(ranked))
