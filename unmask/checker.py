"""The adherence check (docs/semantics.md): three bases, Classify, aggregation.

Contract:
- the solver sees only a ``Case``, built from a validated ``Replay``; ``Case`` has no gold
  field, so the gold label cannot reach any base (``unmask.api`` adds it to the report);
- F, B_proto, B_evid = F and B_all = B_proto ∧ F are lists of parts, each named by a
  ``PartId`` (``unmask.report``), in a canonical order: ``fact:ATOM``, then
  ``constraint:NAME``, then for a binary protocol ``decision`` (V ⇔ D), for one that
  declares its labels ``labels`` (exactly one verdict variable holds) and
  ``decision:LABEL`` (V_L ⇔ D_L) per label; a base is opened on the backend at most once,
  when a check needs it, and answers all its checks incrementally;
- with ``closed_form`` (the default) the checks that need no solver are decided without
  one (``unmask.closed``: a check on the facts alone, a base small enough to tabulate,
  the bases of a binary protocol without constraints and its verdict when the facts force
  an ``and``/``or`` decision), with the same result, so the report is the same either
  way; such a check makes no call, so no deadline cuts it;
- what a protocol alone determines (its parts, their table, the checks on the facts it
  has settled) is made once per process for the last ``DERIVED_SIZE`` protocols, keyed
  by the protocol object (``unmask.replay`` hands every replay of a batch the same one);
- the verdict variables are ``$pass`` (binary) or ``$v:LABEL``: no identifier or family
  member can contain ``$``, so they never clash with a protocol atom;
- statuses are only what the solver proved; aggregation follows the documented table and
  overrides, and every reason the result is not SATISFIED is named in ``Report.reasons``;
- a check *rests on* the annotations in its explanation, or pinned in its witnesses; its
  ``unreviewed`` and ``gold_derived`` counts are taken over those;
- an optional ``Deadline`` bounds the whole report (see ``unmask.explain``): a report it
  cut short is UNKNOWN with a ``deadline`` reason; one it did not is byte-identical to the
  report without a deadline.

Size: bases, Classify (on a backend, or in closed form), aggregation, labels and the
reasons a result is not SATISFIED are the one semantics of a check; witnesses,
minimisation and the deadline already live in ``unmask.explain``, the closed forms'
arithmetic in ``unmask.closed``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from unmask.backends.base import Backend, Part, Sat, Unknown, Unsat, spec
from unmask.closed import MAX_TABLE, Settled, TableBase, forced_decision, settle
from unmask.explain import DEADLINE, BaseSession, Deadline, minimise, witness
from unmask.ir import (
    LABEL_PREFIX,
    VERDICT_ATOM,
    Expr,
    Protocol,
    evaluate,
    iter_atoms,
    mk_atom,
    mk_card,
    mk_iff,
    mk_not,
)
from unmask.irtext import expr_text
from unmask.replaydata import Annotation, Replay
from unmask.report import (
    CONSISTENT,
    ENTAILED,
    INCONSISTENT,
    INCONSISTENT_BASE,
    NOT_CHECKED,
    NOT_SPECIFIED,
    OK,
    REFUTED,
    SATISFIED,
    SOLVER_UNKNOWN,
    UNDERDETERMINED,
    UNKNOWN,
    VIOLATED,
    AnnotationItem,
    Bases,
    CheckResult,
    ConstraintItem,
    DecisionItem,
    Dimensions,
    Explanation,
    GroundingCheck,
    Item,
    LabelsItem,
    PartId,
    Quote,
    Reason,
    Report,
    RequirementCheck,
    VerdictCheck,
    Witness,
    WitnessAtom,
    Witnesses,
)

# '$' is not allowed in any name, so these atoms cannot clash with the protocol's atoms


def verdict_atoms(protocol: Protocol) -> list[str]:
    """The verdict variables, in label declaration order."""
    if not protocol.declared_labels:
        return [VERDICT_ATOM]
    return [f"{LABEL_PREFIX}{label}" for label in protocol.labels]


@dataclass(frozen=True, slots=True)
class Case:
    """What the solver may see of a replay: deliberately no gold label."""

    id: str
    protocol: Protocol
    verdict: str
    annotations: tuple[Annotation, ...]
    translation: str = "valid"

    @classmethod
    def from_replay(cls, replay: Replay) -> Case:
        return cls(
            id=replay.id,
            protocol=replay.protocol,
            verdict=replay.verdict,
            annotations=tuple(replay.annotations),
            translation=replay.translation,
        )

    @property
    def facts(self) -> dict[str, bool]:
        """Pinned atoms (non-UNKNOWN annotations) in atom declaration order."""
        given = {a.atom: a.value for a in self.annotations}
        return {
            n: given[n] == "TRUE"
            for n in self.protocol.atom_names
            if given.get(n, "UNKNOWN") != "UNKNOWN"
        }

    @property
    def unannotated(self) -> tuple[str, ...]:
        seen = {a.atom for a in self.annotations}
        return tuple(n for n in self.protocol.atom_names if n not in seen)

    @property
    def unknown(self) -> tuple[str, ...]:
        marked = {a.atom for a in self.annotations if a.value == "UNKNOWN"}
        return tuple(n for n in self.protocol.atom_names if n in marked)


# --- bases ----------------------------------------------------------------------------------


def fact_parts(case: Case) -> list[Part]:
    return [
        Part(PartId.fact(name), mk_atom(name) if value else mk_not(mk_atom(name)))
        for name, value in case.facts.items()
    ]


# a binary protocol's decision part, V ⇔ D
DECISION = PartId("decision")


def proto_parts(p: Protocol) -> list[Part]:
    parts: list[Part] = []
    seen: dict[str, int] = {}
    for c in p.constraints:
        # defensive: part ids must be unique for selectors, so a repeated name is numbered
        seen[c.name] = n = seen.get(c.name, 0) + 1
        parts.append(Part(PartId("constraint", c.name, n), c.expr))
    if not p.declared_labels:
        assert p.decision is not None
        parts.append(Part(DECISION, mk_iff(mk_atom(VERDICT_ATOM), p.decision)))
        return parts
    variables = [mk_atom(v) for v in verdict_atoms(p)]
    parts.append(Part(PartId("labels"), mk_card("exactly", 1, variables)))
    for label, v in zip(p.labels, variables, strict=True):
        parts.append(Part(PartId("decision", label), mk_iff(v, p.decision_for(label))))
    return parts


def base_parts(case: Case) -> dict[str, list[Part]]:
    """The three bases, each in canonical part order."""
    facts, proto = fact_parts(case), list(_derived(case.protocol).parts)
    return {"proto": proto, "evid": facts, "all": facts + proto}


class _Derived:
    """What a protocol alone determines, made once for all the replays that share it (a
    batch embeds one protocol in every replay; ``unmask.replay`` reads it once): its
    base parts, the table of those parts over every atom, and the checks on the facts
    already settled (``unmask.closed``), by the facts on the check's atoms."""

    __slots__ = ("_template", "parts", "protocol", "room", "settled")

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol  # kept alive: the cache is keyed by its identity
        self.parts = tuple(proto_parts(protocol))
        self._template: TableBase | bool | None = False
        self.settled: dict[tuple[int, tuple[bool | None, ...]], tuple[Expr, Settled | None]] = {}
        # room for a few fact patterns of every check a replay makes on the facts, so a
        # protocol with thousands of them does not clear the memo every replay
        checks = 2 * len(protocol.requirements) + len(protocol.grounding)
        self.room = min(SETTLED_MAX, max(SETTLED_SIZE, SETTLED_PER_CHECK * checks))

    def settle(self, phi: Expr, atoms: list[str], facts: dict[str, bool]) -> Settled | None:
        """``unmask.closed.settle``, remembered: it depends only on ``phi`` and the facts on
        its atoms (``atoms`` follow from ``phi`` and this protocol's order)."""
        # keyed by ``id(phi)``: the entry holds ``phi``, so no other query can take its id
        # while the entry lives
        key = (id(phi), tuple(facts.get(a) for a in atoms))
        got = self.settled.get(key)
        if got is not None:
            return got[1]
        found = settle(phi, atoms, facts)
        with _LOCK:
            if len(self.settled) >= self.room:
                self.settled.clear()
            self.settled[key] = (phi, found)
        return found

    def template(self, names: Sequence[str]) -> TableBase | None:
        """The parts tabulated over ``names`` (the protocol's atoms and the verdict's),
        or None when that is more than ``MAX_TABLE`` atoms."""
        if self._template is False:
            fits = len(names) <= MAX_TABLE and all(a in names for p in self.parts for a in p.atoms)
            self._template = TableBase(self.parts, names) if fits else None
        return self._template  # type: ignore[return-value]


_DERIVED: dict[int, _Derived] = {}
DERIVED_SIZE = 8  # protocols whose derived parts are kept per process
SETTLED_SIZE = 4096  # checks on the facts remembered per protocol, at least
SETTLED_PER_CHECK = 16  # ... or this many per check the protocol makes on the facts
SETTLED_MAX = 1 << 16  # ... but never more (about 20 MB)


_LOCK = threading.Lock()  # a Dask worker may check replays in several threads


def _derived(protocol: Protocol) -> _Derived:
    # keyed by ``id``: the entry holds the protocol, so its id is not reused while it lives
    got = _DERIVED.get(id(protocol))
    if got is None:
        made = _Derived(protocol)
        with _LOCK:
            while len(_DERIVED) >= DERIVED_SIZE:
                del _DERIVED[next(iter(_DERIVED))]  # the oldest
            got = _DERIVED[id(protocol)] = made
    return got


def verdict_query(verdict: str, protocol: Protocol | None = None) -> Expr:
    """φ_v: the observed label holds (``protocol`` None or binary: V, or ¬V for FAIL)."""
    if protocol is not None and protocol.declared_labels:
        return mk_atom(f"{LABEL_PREFIX}{verdict}")
    v = mk_atom(VERDICT_ATOM)
    return v if verdict == "PASS" else mk_not(v)


def verdict_exprs(protocol: Protocol) -> list[Expr]:
    """What a verdict witness completes: the decision, or every label's decision."""
    if not protocol.declared_labels:
        assert protocol.decision is not None
        return [protocol.decision]
    return [protocol.decision_for(label) for label in protocol.labels]


# --- aggregation ----------------------------------------------------------------------------


def outcome(status: str | None, *, coverage: bool = False) -> str | None:
    """A check's contribution (the aggregation table); None for NOT_SPECIFIED."""
    if status == NOT_SPECIFIED:
        return None
    if status == ENTAILED:
        return OK
    if status == REFUTED:
        return UNKNOWN if coverage else VIOLATED
    return UNKNOWN


def aggregate(outcomes: Sequence[str]) -> str:
    if VIOLATED in outcomes:
        return VIOLATED
    if all(o == OK for o in outcomes):
        return SATISFIED
    return UNKNOWN


def _dimension(outcomes: Sequence[str | None]) -> str:
    present = [o for o in outcomes if o is not None]
    if not present:
        return NOT_CHECKED
    agg = aggregate(present)
    return OK if agg == SATISFIED else agg


# --- the check ------------------------------------------------------------------------------


class _Run:
    def __init__(
        self,
        case: Case,
        backend: Backend,
        deadline: Deadline | None = None,
        closed_form: bool = True,
    ) -> None:
        self.case = case
        self.backend = backend
        self.deadline = deadline
        self.order = {n: i for i, n in enumerate(case.protocol.atom_names)}
        self.facts = case.facts
        self.by_atom = {a.atom: a for a in case.annotations}
        self.atoms = [*case.protocol.atom_names, *verdict_atoms(case.protocol)]
        self.parts: dict[str, list[Part]] = {}
        self.sessions: dict[str, BaseSession] = {}
        self.states: dict[str, str] = {}
        self.base_detail: dict[str, str] = {}
        self.conflicts: dict[str, Explanation] = {}
        self.closed_form = closed_form
        self.tables: dict[str, TableBase] = {}
        self.items: dict[PartId, Item] = {}
        self.derived = _derived(case.protocol)

    def close(self) -> None:
        for s in self.sessions.values():
            s.session.close()

    def session(self, name: str) -> BaseSession:
        """The base opened on the backend, on first use."""
        got = self.sessions.get(name)
        if got is None:
            parts = self.base(name)
            got = BaseSession(
                name,
                parts,
                self.backend.open(parts, self.atoms),
                self.deadline,
                getattr(self.backend, "timeout_ms", None),
            )
            self.sessions[name] = got
        return got

    def base(self, name: str) -> list[Part]:
        """A base's parts, made on first use (a replay the closed form decides needs none)."""
        if not self.parts:
            self.parts = base_parts(self.case)
        return self.parts[name]

    def open_bases(self) -> None:
        p = self.case.protocol
        # the closed form makes no call, so no deadline cuts it short
        closed = self.closed_form
        bare = closed and self.bare_decision()
        # a base has at most the protocol's atoms and the verdict's: a wide bare protocol
        # is not worth tabulating (its bases are consistent as they stand, below)
        tabulate = closed and (not bare or len(self.atoms) <= MAX_TABLE)
        whole = None
        if tabulate:
            template = self.derived.template(self.atoms)
            if template is not None:  # the protocol's masks are made once, not per replay
                whole = TableBase(self.base("all"), (), within=template)
            else:
                whole = TableBase.build(self.base("all"), [verdict_query(self.case.verdict, p)])
        for name in ("proto", "evid", "all"):
            if closed:
                if name == "evid":
                    # one literal per annotated atom, on distinct atoms: consistent, and
                    # every check on it is first tried in closed form (the backend opens
                    # on demand)
                    self.states[name] = CONSISTENT
                    continue
                table = None
                if name == "all":
                    table = whole
                elif whole is not None:
                    table = whole.restrict(self.base(name))
                elif tabulate:
                    table = TableBase.build(self.base(name), [])
                if table is not None:
                    self.tables[name] = table
                    if table.models:
                        self.states[name] = CONSISTENT
                    else:
                        self.states[name] = INCONSISTENT
                        self.conflicts[name] = self.explanation(table.kept(table.full), True)
                    continue
                if bare:
                    # V ⇔ D and facts on distinct atoms: any completion, with V set to D's
                    # value, satisfies it (the backend opens if a check needs it)
                    self.states[name] = CONSISTENT
                    continue
            session = self.session(name)
            result = session.check()
            if isinstance(result, Sat):
                self.states[name] = CONSISTENT
            elif isinstance(result, Unsat):
                self.states[name] = INCONSISTENT
                found = minimise(session, None, session.labels)
                self.conflicts[name] = self.explanation(found.labels, found.minimal)
            else:
                self.states[name] = SOLVER_UNKNOWN
                self.base_detail[name] = result.reason

    # -- explanation items --

    def item(self, part: PartId) -> Item:
        got = self.items.get(part)
        if got is None:  # explanations of a replay cite the same few parts again and again
            got = self.items[part] = self._item(part)
        return got

    def _item(self, part: PartId) -> Item:
        kind, name = part.kind, part.name
        if kind == "fact":
            assert name is not None
            ann = self.by_atom[name]
            return AnnotationItem(
                part,
                name,
                ann.value,
                tuple(Quote(e.source, e.start, e.end, e.quote) for e in ann.evidence),
                ann.explanation,
                ann.by,
            )
        if kind == "constraint":
            assert name is not None
            return ConstraintItem(part, name)
        if kind == "labels":
            return LabelsItem(part)
        return DecisionItem(part, name)

    def explanation(self, labels: Sequence[PartId], minimal: bool) -> Explanation:
        return Explanation(tuple(self.item(x) for x in labels), minimal)

    # -- Classify --

    def sorted_atoms(self, exprs: Sequence[Expr]) -> list[str]:
        names = {a for e in exprs for a in iter_atoms(e) if a in self.order}
        return sorted(names, key=self.order.__getitem__)

    def classify(
        self, base_name: str, phi: Expr, witness_exprs: Sequence[Expr], *, coverage: bool = False
    ) -> CheckResult:
        state = self.states[base_name]
        if state == INCONSISTENT:
            return CheckResult(INCONSISTENT_BASE, outcome(INCONSISTENT_BASE))
        if state == SOLVER_UNKNOWN:
            return CheckResult(
                SOLVER_UNKNOWN, outcome(SOLVER_UNKNOWN), detail=self.base_detail[base_name]
            )
        if base_name == "evid" and self.closed_form and not witness_exprs:
            settled = self.on_facts(phi, coverage)
            if settled is not None:
                return settled
        table = self.tables.get(base_name)
        if table is not None and all(a in table.index for a in iter_atoms(phi)):
            return self.tabled(table, phi, witness_exprs, coverage)
        if base_name == "all" and self.closed_form and self.bare_decision():
            forced = self.forced_verdict(phi, coverage)
            if forced is not None:
                return forced
        atoms = self.sorted_atoms([phi, *witness_exprs])
        base = self.session(base_name)
        # the base is consistent: confining every call to the query's component changes
        # no answer (see BaseSession.component) and keeps large replays fast
        scope = base.component({a for e in [phi, *witness_exprs] for a in iter_atoms(e)})
        not_phi = mk_not(phi)
        t = base.check(phi, enabled=scope, want=atoms)
        f = base.check(not_phi, enabled=scope, want=atoms)
        if isinstance(t, Unknown) or isinstance(f, Unknown):
            reason = t.reason if isinstance(t, Unknown) else f.reason  # type: ignore[union-attr]
            return CheckResult(SOLVER_UNKNOWN, outcome(SOLVER_UNKNOWN), detail=reason)
        if isinstance(f, Unsat):
            status, side = ENTAILED, not_phi
        elif isinstance(t, Unsat):
            status, side = REFUTED, phi
        else:
            assert isinstance(t, Sat) and isinstance(f, Sat)
            return self.open_result(
                self.witness(base, phi, t.model, atoms, scope, True),
                self.witness(base, not_phi, f.model, atoms, scope, False),
                coverage,
            )
        found = minimise(base, side, scope)
        return self.forced(status, found.labels, found.minimal, coverage)

    def bare_decision(self) -> bool:
        """A binary protocol without constraints: its B_proto is V ⇔ D and nothing else."""
        p = self.case.protocol
        return not p.constraints and not p.declared_labels and p.decision is not None

    def forced_verdict(self, phi: Expr, coverage: bool) -> CheckResult | None:
        """The verdict check when the facts force a wide ``all``/``any`` decision
        (``unmask.closed.forced_decision``): V is forced with it, and deletion keeps the
        facts that force it and the decision (without it V is free); else None."""
        p = self.case.protocol
        if phi != verdict_query(self.case.verdict, p):
            return None
        assert p.decision is not None
        got = forced_decision(p.decision, self.facts, self.order)
        if got is None:
            return None
        value, kept = got
        status = ENTAILED if value == (self.case.verdict == "PASS") else REFUTED
        return self.forced(status, [*(PartId.fact(a) for a in kept), DECISION], True, coverage)

    def open_result(self, holds: Witness, fails: Witness, coverage: bool) -> CheckResult:
        """UNDERDETERMINED, with its two witnesses; it rests on their observed atoms."""
        pinned = [w.atom for side in (holds, fails) for w in side.atoms if w.origin == "observed"]
        return CheckResult(
            UNDERDETERMINED,
            outcome(UNDERDETERMINED, coverage=coverage),
            witnesses=Witnesses(holds, fails),
            **self.provenance(pinned),
        )

    def forced(
        self, status: str, labels: Sequence[PartId], minimal: bool, coverage: bool
    ) -> CheckResult:
        """ENTAILED or REFUTED, explained by ``labels``; it rests on their annotations."""
        expl = self.explanation(labels, minimal)
        return CheckResult(
            status,
            outcome(status, coverage=coverage),
            explanation=expl,
            **self.provenance(i.atom for i in expl.items if i.kind == "annotation"),
        )

    def on_facts(self, phi: Expr, coverage: bool) -> CheckResult | None:
        """Classify on the facts alone without a call (``unmask.closed``), or None."""
        atoms = list(iter_atoms(phi))
        order = self.order
        if any(a not in order for a in atoms):
            return None  # an atom outside the protocol's: the backend decides
        if len(atoms) > 1:
            atoms.sort(key=order.__getitem__)
        got = self.derived.settle(phi, atoms, self.facts)
        if got is None:
            return None
        if got.status == UNDERDETERMINED:
            return self.open_result(self.assigned(got.holds), self.assigned(got.fails), coverage)
        return self.forced(got.status, [PartId.fact(a) for a in got.kept], True, coverage)

    def tabled(
        self, table: TableBase, phi: Expr, witness_exprs: Sequence[Expr], coverage: bool
    ) -> CheckResult:
        """Classify on a tabulated base (``unmask.closed.TableBase``): no call."""
        q = table.mask(phi)
        holds, fails = table.models & q, table.models & (table.full ^ q)
        if holds and fails:
            atoms = self.sorted_atoms([phi, *witness_exprs])
            h, f = table.least(holds, atoms), table.least(fails, atoms)
            return self.open_result(
                self.assigned(h, self.witness_label(phi, dict(h), True)),
                self.assigned(f, self.witness_label(phi, dict(f), False)),
                coverage,
            )
        status = ENTAILED if not fails else REFUTED
        kept = table.kept(table.full ^ q if status == ENTAILED else q)
        return self.forced(status, kept, True, coverage)

    def assigned(
        self, values: Sequence[tuple[str, bool]], label: str | None = None, canonical: bool = True
    ) -> Witness:
        items = tuple(
            WitnessAtom(a, v, "observed" if a in self.facts else "completed") for a, v in values
        )
        return Witness(items, label, canonical)

    def provenance(self, atoms: Iterable[str | None]) -> dict[str, int]:
        """How many of the annotations a result rests on are unreviewed, gold-derived."""
        bys = [self.by_atom[a].by for a in dict.fromkeys(atoms) if a is not None]
        return {
            "unreviewed": sum(1 for b in bys if b is not None and not b.reviewed),
            "gold_derived": sum(1 for b in bys if b is not None and b.gold_derived),
        }

    # -- the verdict --

    def verdict_check(self) -> VerdictCheck:
        p = self.case.protocol
        observed = self.case.verdict
        phi_v = verdict_query(observed, p)
        result = self.classify("all", phi_v, verdict_exprs(p))
        return VerdictCheck(observed, result, self.allowed(result, phi_v))

    def allowed(self, result: CheckResult, phi_v: Expr) -> tuple[str, ...] | None:
        """The labels L with B_all ∧ V_L satisfiable, in declaration order."""
        p = self.case.protocol
        observed, status = self.case.verdict, result.status
        if status == INCONSISTENT_BASE:
            return ()
        if status not in (ENTAILED, REFUTED, UNDERDETERMINED):
            return None  # a needed call was undecided
        if status == ENTAILED:
            return (observed,)  # no other label is possible: exactly one holds
        # the two calls of Classify answer for the observed label; a binary protocol has
        # only the other one left, which holds exactly where φ_v fails
        observed_ok = status == UNDERDETERMINED
        if not p.declared_labels:
            return tuple(x for x in p.labels if x != observed or observed_ok)
        variables = dict(zip(p.labels, verdict_atoms(p), strict=True))
        table = self.tables.get("all")
        if table is not None:
            return tuple(
                label
                for label in p.labels
                if (
                    observed_ok
                    if label == observed
                    else table.models & table.column(variables[label])
                )
            )
        base = self.session("all")
        scope = base.component(variables.values())
        out: list[str] = []
        for label in p.labels:
            if label == observed:
                if observed_ok:
                    out.append(label)
                continue
            got = base.check(mk_atom(variables[label]), enabled=scope)
            if isinstance(got, Unknown):
                return None
            if isinstance(got, Sat):
                out.append(label)
        return tuple(out)

    def witness(
        self,
        base: BaseSession,
        query: Expr,
        start: dict,
        atoms: list[str],
        scope: list[str],
        holds: bool,
    ) -> Witness:
        done = witness(base, query, start, atoms, self.facts, scope)
        label = self.witness_label(query, dict(done.values), holds)
        return self.assigned(done.values, label, done.canonical)

    def witness_label(self, query: Expr, values: dict[str, bool], holds: bool) -> str | None:
        """The label true on one side of the verdict check (None for other checks)."""
        p = self.case.protocol
        if not set(iter_atoms(query)) & set(verdict_atoms(p)):
            return None
        observed = self.case.verdict
        if holds:
            return observed  # φ_v holds: the observed label is the verdict
        if not p.declared_labels:
            return "FAIL" if observed == "PASS" else "PASS"
        # every decision's atoms were completed, so each V_L ⇔ D_L is settled on this
        # side; exactly one holds in any model it extends to
        for label in p.labels:
            if label != observed and evaluate(p.decision_for(label), values):
                return label
        return None


def check_case(
    case: Case,
    backend: Backend,
    *,
    backend_name: str | None = None,
    deadline: Deadline | None = None,
    closed_form: bool = True,
) -> Report:
    """Check one case; the report's ``gold`` is None (see ``unmask.api.check``).

    ``deadline`` (started by the caller) bounds every solver call of the report.
    ``closed_form`` False sends every check to the backend, even those the facts alone
    settle (``unmask.closed``); the report is the same either way.
    """
    name = backend_name or spec(backend)
    protocol = case.protocol
    if case.translation != "valid":
        return _unsolved(case, name)
    run = _Run(case, backend, deadline, closed_form)
    try:
        run.open_bases()
        verdict = run.verdict_check()
        requirements = tuple(
            RequirementCheck(
                r.id,
                r.description,
                run.classify("evid", r.expr, []),
                CheckResult(NOT_SPECIFIED, None)
                if r.addressed is None
                else run.classify("evid", r.addressed, [], coverage=True),
            )
            for r in protocol.requirements
        )
        grounding = tuple(
            GroundingCheck(
                expr_text(g.judge),
                expr_text(g.context),
                run.classify("evid", g.query, []),
                g.direction,
            )
            for g in protocol.grounding
        )
    finally:
        run.close()
    bases = Bases(
        run.states["proto"],
        run.states["evid"],
        run.states["all"],
        run.conflicts.get("proto"),
        run.conflicts.get("evid"),
        run.conflicts.get("all"),
    )
    cut = deadline.ms if deadline is not None and deadline.hit else None
    return _assemble(
        case, name, bases, verdict, requirements, grounding, run.base_detail, deadline_ms=cut
    )


def _unsolved(case: Case, backend_name: str) -> Report:
    """Translation not valid: nothing is solved, every check is UNKNOWN with status null."""
    p = case.protocol
    blank = CheckResult(None, UNKNOWN)
    requirements = tuple(
        RequirementCheck(
            r.id,
            r.description,
            blank,
            CheckResult(NOT_SPECIFIED, None) if r.addressed is None else blank,
        )
        for r in p.requirements
    )
    grounding = tuple(
        GroundingCheck(expr_text(g.judge), expr_text(g.context), blank, g.direction)
        for g in p.grounding
    )
    return _assemble(
        case, backend_name, None, VerdictCheck(case.verdict, blank), requirements, grounding, {}
    )


_BASE_MEANING = {
    "proto": "the protocol contradicts itself",
    "evid": "the annotations contradict each other",
    "all": "the annotations contradict the protocol",
}
_STATUS_REASON = {
    REFUTED: ("violated", "is refuted"),
    UNDERDETERMINED: ("underdetermined", "is underdetermined: the evidence allows both"),
    SOLVER_UNKNOWN: ("solver-unknown", "could not be decided by the solver"),
    INCONSISTENT_BASE: ("inconsistent-base", "was not classified: its base is inconsistent"),
}


def _check_reason(subject: str, what: str, result: CheckResult, base: str) -> Reason | None:
    if result.outcome in (None, OK):
        return None
    if result.status is None:
        return None  # the translation reason covers it
    if subject.startswith("coverage:") and result.status == REFUTED:
        return Reason(
            "not-observable", subject, f"{what} is refuted: the requirement was not observable"
        )
    code, text = _STATUS_REASON[result.status]
    message = f"{what} {text}"
    if result.status == SOLVER_UNKNOWN and result.detail == DEADLINE:
        message = f"{what} was not decided before the deadline"
    elif result.status == SOLVER_UNKNOWN and result.detail:
        message += f" ({result.detail})"
    if result.status == INCONSISTENT_BASE:
        message += f" (base `{base}`)"
    return Reason(code, subject, message)


def _labels_text(labels: Sequence[str]) -> str:
    shown = [f"`{x}`" for x in labels]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" and {shown[-1]}"


def _verdict_reason(protocol: Protocol, verdict: VerdictCheck) -> Reason | None:
    what = f"the observed verdict `{verdict.observed}`"
    reason = _check_reason("verdict", what, verdict.result, "all")
    allowed = verdict.allowed
    if reason is None or not protocol.declared_labels:
        return reason
    # with more than two labels, "the other one" is not enough: name what is still open
    status = verdict.result.status
    if status == REFUTED and allowed:
        message = f"{what} is refuted: the evidence allows only {_labels_text(allowed)}"
    elif status == UNDERDETERMINED:
        allows = "it and another label" if allowed is None else _labels_text(allowed)
        message = f"{what} is underdetermined: the evidence allows {allows}"
    else:
        return reason
    return Reason(reason.code, reason.subject, message)


def _assemble(
    case: Case,
    backend_name: str,
    bases: Bases | None,
    verdict: VerdictCheck,
    requirements: tuple[RequirementCheck, ...],
    grounding: tuple[GroundingCheck, ...],
    base_detail: dict[str, str],
    *,
    deadline_ms: int | None = None,
) -> Report:
    """``deadline_ms`` is set when that deadline cut the report short."""
    reasons: list[Reason] = []
    if deadline_ms is not None:
        reasons.append(
            Reason(
                "deadline",
                "replay",
                f"the check ran past its deadline of {deadline_ms} ms: what was not decided "
                "by then is unknown, and the report is incomplete",
            )
        )
    if case.translation != "valid":
        reasons.append(
            Reason(
                "translation",
                "translation",
                f"the translation is `{case.translation}`, so nothing was solved",
            )
        )
    if bases is not None:
        for name in ("proto", "evid", "all"):
            state = bases.state(name)
            if state == INCONSISTENT:
                reasons.append(
                    Reason(
                        "inconsistent-base",
                        f"base:{name}",
                        f"base `{name}` is inconsistent: {_BASE_MEANING[name]}",
                    )
                )
            elif state == SOLVER_UNKNOWN:
                detail = base_detail.get(name)
                if detail == DEADLINE:
                    tail = " before the deadline"
                else:
                    tail = f" ({detail})" if detail else ""
                reasons.append(
                    Reason(
                        "solver-unknown",
                        f"base:{name}",
                        f"the solver could not decide whether base `{name}` is consistent" + tail,
                    )
                )
    checks: list[Reason | None] = [_verdict_reason(case.protocol, verdict)]
    for r in requirements:
        checks.append(
            _check_reason(f"requirement:{r.id}", f"requirement `{r.id}`", r.holds, "evid")
        )
        checks.append(
            _check_reason(f"coverage:{r.id}", f"coverage of `{r.id}`", r.coverage, "evid")
        )
    for g in grounding:
        pair = g.pair
        checks.append(_check_reason(f"grounding:{pair}", f"grounding `{pair}`", g.result, "evid"))
    reasons.extend(r for r in checks if r is not None)
    if not requirements:
        reasons.append(
            Reason("no-requirements", "replay", "the protocol has no requirements to check")
        )
    if not grounding:
        reasons.append(Reason("no-grounding", "replay", "the protocol has no grounding pairs"))

    verdict_out = verdict.result.outcome
    req_outs = [r.holds.outcome for r in requirements]
    cov_outs = [r.coverage.outcome for r in requirements]
    ground_outs = [g.result.outcome for g in grounding]
    every = [o for o in [verdict_out, *req_outs, *cov_outs, *ground_outs] if o is not None]
    overall = aggregate(every)
    if overall == SATISFIED and (not requirements or not grounding):
        overall = UNKNOWN
    statuses = [verdict.result.status]
    for r in requirements:
        statuses += [r.holds.status, r.coverage.status]
    statuses += [g.result.status for g in grounding]
    if (
        deadline_ms is not None
        or case.translation != "valid"
        or bases is None
        or any(bases.state(n) != CONSISTENT for n in ("proto", "evid", "all"))
        or SOLVER_UNKNOWN in statuses
    ):
        overall = UNKNOWN
    dims = Dimensions(
        verdict=_dimension([verdict_out]),
        procedure=_dimension(req_outs),
        coverage=_dimension(cov_outs),
        grounding=_dimension(ground_outs),
    )
    return Report(
        replay=case.id,
        protocol=case.protocol.name,
        backend=backend_name,
        translation=case.translation,
        overall=overall,
        bases=bases,
        verdict=verdict,
        requirements=requirements,
        grounding=grounding,
        unannotated=case.unannotated,
        unknown=case.unknown,
        dimensions=dims,
        reasons=tuple(reasons),
    )
