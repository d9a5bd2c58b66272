"""The adherence check (docs/semantics.md): Classify each check on its base.

Contract:
- ``check_case`` sees only a ``Case`` (``unmask.checking.bases``: no gold label); the bases are
  ``unmask.checking.bases``'s, each opened on the backend at most once, when a check needs it, and
  answering all its checks incrementally;
- with ``closed_form`` (the default) the checks that need no solver are decided without
  one (``unmask.checking.closed``: a check on the facts alone, a base small enough to tabulate,
  the bases of a binary protocol without constraints and its verdict when the facts force
  an ``and``/``or`` decision or leave it open), with the same result, so the report is
  the same either way; such a check makes no call, so no deadline cuts it; a result on
  the facts of a replay without provenance is remembered per protocol (``unmask.checking.bases``);
- statuses are only what the solver proved; the results are aggregated, and every reason
  the result is not SATISFIED named, by ``unmask.checking.aggregate``;
- a check *rests on* the annotations in its explanation, or pinned in its witnesses; its
  ``unreviewed`` and ``gold_derived`` counts are taken over those;
- an optional ``Deadline`` bounds the whole report (see ``unmask.checking.explain``), the
  making of the protocol's parts included (cut there: B_proto and B_all SOLVER_UNKNOWN
  without a call): a report it cut short is UNKNOWN with a ``deadline`` reason; one it did
  not is byte-identical to the report without a deadline.

Size: Classify (on a backend, or in closed form), the verdict's labels and the items of
an explanation are this module; the bases and what a protocol alone determines are
``unmask.checking.bases``, aggregation and reasons ``unmask.checking.aggregate``, witnesses,
minimisation and the deadline ``unmask.checking.explain``, the closed forms' arithmetic
``unmask.checking.closed``. The names
tests and callers import from here (``Case``, ``base_parts``, ``outcome``, …) stay here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

from unmask.backends.base import Backend, Part, Sat, Unknown, Unsat, spec
from unmask.checking.aggregate import aggregate, assemble, outcome, unsolved
from unmask.checking.bases import (
    DECISION,
    Case,
    Census,
    _derived,
    base_parts,
    fact_parts,
    proto_parts,
    verdict_atoms,
    verdict_query,
)
from unmask.checking.closed import MAX_TABLE, TableBase, forced_decision, open_decision
from unmask.checking.explain import (
    DEADLINE,
    BaseSession,
    Deadline,
    minimise,
    open_session,
    witness,
)
from unmask.checking.report import (
    CONSISTENT,
    ENTAILED,
    INCONSISTENT,
    INCONSISTENT_BASE,
    NOT_SPECIFIED,
    REFUTED,
    SOLVER_UNKNOWN,
    UNDERDETERMINED,
    AnnotationItem,
    Bases,
    CheckResult,
    ConstraintItem,
    DecisionItem,
    Explanation,
    GroundingCheck,
    Item,
    LabelsItem,
    PartId,
    Report,
    RequirementCheck,
    VerdictCheck,
    Witness,
    WitnessAtom,
    Witnesses,
    annotation_item,
)
from unmask.ir import (
    VERDICT_ATOM,
    Expr,
    evaluate,
    iter_atoms,
    mk_atom,
    mk_not,
)
from unmask.plumbing.budget import OutOfTime, watching

# what callers and tests import from the check, wherever it is defined
__all__ = [
    "VERDICT_ATOM",
    "Case",
    "aggregate",
    "base_parts",
    "check_case",
    "fact_parts",
    "outcome",
    "proto_parts",
    "verdict_atoms",
    "verdict_query",
]

# --- the check ------------------------------------------------------------------------------


class _Provenance(TypedDict):
    """The counts ``CheckResult`` keeps of the annotations a result rests on."""

    unreviewed: int
    gold_derived: int


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
        self.derived = derived = _derived(case.protocol)
        self.order = derived.order  # the protocol's atoms by declaration order
        self.atoms = derived.run_atoms  # ... and the verdict's: every atom a base has
        census = Census(case)
        self.facts = census.facts
        self.census = census
        self.by_atom = census.by_atom
        # no annotation says who made it: every result rests on reviewed ones only, so a
        # result on the facts depends on the query and the facts alone (``on_facts``)
        self.plain = census.plain
        self.parts: dict[str, list[Part]] = {}
        self.sessions: dict[str, BaseSession[PartId]] = {}
        self.states: dict[str, str] = {}
        self.base_detail: dict[str, str] = {}
        self.conflicts: dict[str, Explanation] = {}
        self.closed_form = closed_form
        self.tables: dict[str, TableBase] = {}
        self.items: dict[PartId, Item] = {}
        self.fact_items: dict[str, AnnotationItem] = {}  # by atom: the items of facts

    def close(self) -> None:
        for s in self.sessions.values():
            s.session.close()

    def session(self, name: str) -> BaseSession[PartId]:
        """The base opened on the backend, on first use."""
        got = self.sessions.get(name)
        if got is None:
            parts = self.base(name)
            got = BaseSession(
                name,
                parts,
                open_session(self.backend, parts, self.atoms, self.deadline),
                self.deadline,
                getattr(self.backend, "timeout_ms", None),
            )
            self.sessions[name] = got
        return got

    def base(self, name: str) -> list[Part]:
        """A base's parts, made on first use (a replay the closed form decides needs none)."""
        if not self.parts:
            self.parts = base_parts(self.case, self.facts)
        return self.parts[name]

    def protocol_parts(self) -> bool:
        """Make the protocol's parts (``_Derived.parts``, once per protocol) under the
        deadline: 2,000 first-match labels are real work, and the deadline bounds the whole
        check. False: it passed first, and nothing of them was kept."""
        if self.deadline is None:
            return True  # made at their first use
        try:
            with watching(self.deadline.passed):
                _ = self.derived.parts
        except OutOfTime:
            self.deadline.hit = True
            return False
        return True

    def open_bases(self) -> None:
        if not self.protocol_parts():
            # the two bases that hold the protocol's parts are undecided, without a call, as
            # a base the deadline stops before its first call is; B_evid is the facts alone
            for name in ("proto", "all"):
                self.states[name] = SOLVER_UNKNOWN
                self.base_detail[name] = DEADLINE
            self.parts = {"evid": fact_parts(self.case, self.facts)}
            if self.closed_form:
                self.states["evid"] = CONSISTENT  # as below: facts on distinct atoms
            else:
                self.decide("evid", False)
            return
        p = self.case.protocol
        # the closed form makes no call, so no deadline cuts it short
        closed = self.closed_form
        bare = closed and self.bare_decision()
        # a base has at most the protocol's atoms and the verdict's: a wide bare protocol
        # is not worth tabulating (its bases are consistent as they stand, below)
        tabulate = closed and (not bare or len(self.atoms) <= MAX_TABLE)
        # a base holds the protocol's parts: past MAX_TABLE atoms among them, no base of
        # this protocol tabulates (``TableBase.build`` would count them to say so)
        tabulate = tabulate and self.derived.proto_width <= MAX_TABLE
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
                if name == "proto" and self.derived.proto_base is not None:
                    # B_proto is the protocol's alone: proved once for every replay of it
                    self.states[name], conflict = self.derived.proto_base
                    if conflict is not None:
                        self.conflicts[name] = self.explanation(conflict, True)
                    continue
            self.decide(name, closed)

    def decide(self, name: str, closed: bool) -> None:
        """A base's state by a call on the backend (a conflict minimised if it has one)."""
        session = self.session(name)
        result = session.check()
        if isinstance(result, Sat):
            self.states[name] = CONSISTENT
            if closed and name == "proto":
                self.derived.proto_base = (CONSISTENT, None)
        elif isinstance(result, Unsat):
            self.states[name] = INCONSISTENT
            found = minimise(session, None, session.labels)
            self.conflicts[name] = self.explanation(found.labels, found.minimal)
            if closed and name == "proto" and found.minimal:
                self.derived.proto_base = (INCONSISTENT, found.labels)
        else:
            self.states[name] = SOLVER_UNKNOWN
            self.base_detail[name] = result.reason

    # -- explanation items --

    def item(self, part: PartId) -> Item:
        if part.kind == "fact":
            assert part.name is not None
            return self.fact_item(part.name)
        got = self.items.get(part)
        if got is None:  # explanations of a replay cite the same few parts again and again
            got = self.items[part] = self._item(part)
        return got

    def fact_item(self, atom: str) -> AnnotationItem:
        """The item of the fact on ``atom``, one per replay (keyed by the atom's name: a
        string compares by identity first, a part id by its fields)."""
        got = self.fact_items.get(atom)
        if got is None:
            part = self.derived.fact_id(atom)
            got = self.fact_items[atom] = annotation_item(part, self.by_atom[atom])
        return got

    def _item(self, part: PartId) -> Item:
        kind, name = part.kind, part.name
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
        atoms, every = self.derived.check_atoms(phi, witness_exprs)
        base = self.session(base_name)
        # the base is consistent: confining every call to the query's component changes
        # no answer (see BaseSession.component) and keeps large replays fast
        scope = base.component(every)
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
        (``unmask.checking.closed.forced_decision``): V is forced with it, and deletion keeps the
        facts that force it and the decision (without it V is free); else None."""
        p = self.case.protocol
        derived = self.derived
        query = derived.verdict_query(self.case.verdict)
        if phi is not query and phi != query:
            return None
        assert p.decision is not None
        shape = derived.decision_shape()
        if shape is None:
            return None
        got = forced_decision(p.decision, self.facts, self.order, shape)
        if got is None:
            return self.open_verdict(coverage)
        value, kept = got
        status = ENTAILED if value == (self.case.verdict == "PASS") else REFUTED
        labels = [*(derived.fact_id(a) for a in kept), DECISION]
        return self.forced(status, labels, True, coverage)

    def open_verdict(self, coverage: bool) -> CheckResult | None:
        """The verdict check when the facts leave such a decision open: UNDERDETERMINED,
        each side's witness the least completion under which the decision gives, or does
        not give, the observed label (``unmask.checking.closed.open_decision``); else None."""
        p = self.case.protocol
        assert p.decision is not None
        observed = self.case.verdict
        passes = observed == "PASS"
        shape = self.derived.decision_shape()
        holds = open_decision(p.decision, self.facts, self.order, passes, shape)
        fails = open_decision(p.decision, self.facts, self.order, not passes, shape)
        if holds is None or fails is None:
            return None
        other = "FAIL" if passes else "PASS"
        return self.open_result(
            self.assigned(holds, observed), self.assigned(fails, other), coverage
        )

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
        """Classify on the facts alone without a call (``unmask.checking.closed``), or None.

        Without provenance (``plain``) the result depends only on the query, the facts on
        its atoms and ``coverage``, so it is remembered per protocol: whole when it cites
        no annotation (UNDERDETERMINED: its witnesses), else its status and the parts of
        its explanation, whose items are this replay's."""
        derived = self.derived
        atoms = derived.query_atoms(phi, self.order)
        if atoms is None:
            return None  # an atom outside the protocol's: the backend decides
        facts = self.facts
        key = None
        if self.plain:
            key = (id(phi), tuple(map(facts.get, atoms)), coverage)
            known = derived.result(key)
            if known is not None:
                if known.__class__ is CheckResult:
                    return known  # type: ignore[no-any-return]
                # remembered: the status, its outcome and the atoms of the facts kept; the
                # items are this replay's annotations
                status, out, kept = known
                item = self.fact_item
                return CheckResult(status, out, Explanation(tuple(map(item, kept)), True))
        got = derived.settle(phi, list(atoms), facts)
        if got is None:
            return None
        if got.status == UNDERDETERMINED:
            result = self.open_result(self.assigned(got.holds), self.assigned(got.fails), coverage)
            if key is not None:
                derived.keep_result(phi, key, result)
            return result
        kept = tuple(got.kept)
        if key is not None:
            known = (got.status, outcome(got.status, coverage=coverage), kept)
            derived.keep_result(phi, key, known)
        return self.forced(got.status, [derived.fact_id(a) for a in kept], True, coverage)

    def grounding(self) -> tuple[GroundingCheck, ...]:
        """Every grounding pair's check, in order: ``classify`` on B_evid, with a pair
        answered from memory (``on_facts``) taken at once, its items this replay's."""
        derived = self.derived
        pairs = derived.pairs()
        if not (self.closed_form and self.plain and self.states["evid"] == CONSISTENT):
            return tuple(
                GroundingCheck(judge, context, self.classify("evid", query, ()), direction)
                for query, judge, context, direction in pairs
            )
        # ``on_facts``'s memo read inline: at 2,000 claims a pair's dispatch was a third
        # of its cost, and nearly every pair is answered from memory
        get, results, item = self.facts.get, derived.results, self.fact_item
        out = []
        for (query, judge, context, direction), atoms in zip(
            pairs, derived.pair_atoms(), strict=True
        ):
            got = None
            if atoms is not None:
                got = results.get((id(query), tuple(map(get, atoms)), False))
            if got is None:
                result = self.classify("evid", query, ())
            else:
                known = got[1]
                if known.__class__ is CheckResult:
                    result = known
                else:
                    status, outcome_, kept = known
                    result = CheckResult(
                        status, outcome_, Explanation(tuple(map(item, kept)), True)
                    )
            out.append(GroundingCheck(judge, context, result, direction))
        return tuple(out)

    def tabled(
        self, table: TableBase, phi: Expr, witness_exprs: Sequence[Expr], coverage: bool
    ) -> CheckResult:
        """Classify on a tabulated base (``unmask.checking.closed.TableBase``): no call."""
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

    def provenance(self, atoms: Iterable[str | None]) -> _Provenance:
        """How many of the annotations a result rests on are unreviewed, gold-derived."""
        bys = [self.by_atom[a].by for a in dict.fromkeys(atoms) if a is not None]
        return {
            "unreviewed": sum(1 for b in bys if b is not None and not b.reviewed),
            "gold_derived": sum(1 for b in bys if b is not None and b.gold_derived),
        }

    # -- the verdict --

    def verdict_check(self) -> VerdictCheck:
        observed = self.case.verdict
        phi_v = self.derived.verdict_query(observed)
        result = self.classify("all", phi_v, self.derived.verdict_exprs)
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
        base: BaseSession[PartId],
        query: Expr,
        start: Mapping[str, bool],
        atoms: list[str],
        scope: list[PartId],
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
    own: Mapping[str, Any] | None = None,
) -> Report:
    """Check one case; the report's ``gold`` is None (see ``unmask.api.check``), unless
    ``own`` gives the replay's own fields (``gold``, ``item``, ``judge``, ``recheck``,
    ``disagreements``), which go into the report as it is made and reach no check.

    ``deadline`` (started by the caller) bounds every solver call of the report.
    ``closed_form`` False sends every check to the backend, even those the facts alone
    settle (``unmask.checking.closed``); the report is the same either way.
    """
    name = backend_name or spec(backend)
    protocol = case.protocol
    if case.translation != "valid":
        return unsolved(case, name, own)
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
        grounding = run.grounding()
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
    census = run.census
    return assemble(
        case,
        name,
        bases,
        verdict,
        requirements,
        grounding,
        run.base_detail,
        deadline_ms=cut,
        unannotated=census.unannotated,
        unknown=census.unknown,
        own=own,
    )
