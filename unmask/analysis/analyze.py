"""`unmask analyze`: findings about a protocol alone, over every assignment of its atoms.

Contract: ``analyze(protocol, backend, scope)`` returns an ``Analysis`` whose findings are
those of ``unmask.analysis.findings.CODES``, in the order of that table and, within a code,
in declaration order. K is the conjunction of the constraints; D_L is the decision of
label L (for a protocol without labels, PASS is D and FAIL is `not D`, so overlapping and
uncovered decisions cannot happen and a contradiction is K alone). Precisely:

- `contradictory-protocol`: K ∧ exactly-one(D_L…) is unsatisfiable (nothing else is
  reported then, since every other question would be vacuous when K alone is);
- `overlapping-decisions` L, M (two written decisions, labels without `first-match`):
  K ∧ D_L ∧ D_M is satisfiable (reported before `unreachable-label`, which an overlap
  often causes: exactly-one rules out the worlds where both hold);
- `unreachable-label` L: K ∧ D_L ∧ ⋀_{M≠L} ¬D_M is unsatisfiable (D_L the effective
  decision: under `first-match`, L's and none of the earlier ones', which exclude each
  other by construction, so the question is K ∧ D_L alone);
- `uncovered-assignment` (no `otherwise`): K ∧ ¬⋁ D_L is satisfiable;
- `constant-decision` L (a written decision): D_L is the same on every model of K (K ∧ D_L
  or K ∧ ¬D_L is unsatisfiable), i.e. no atom can change it;
- `vacuous-requirement` / `impossible-requirement` / `never-addressed`: K ∧ ¬holds,
  K ∧ holds, K ∧ addressed is unsatisfiable;
- `addressed-as-condition`: a requirement whose `addressed` reads a judge or context atom
  (through definitions): coverage is about whether compliance could be observed, which
  procedure atoms say, and `holds` is checked whether or not it is addressed; reported
  once per statement (a `for` requirement once, not per member);
- `redundant-requirement`: K ∧ holds_i ∧ ¬holds_j is unsatisfiable for two requirements
  that are neither vacuous nor impossible: j can only fail where i fails, reported on j;
  when the implication goes both ways it is reported once, on the later requirement;
- `ungrounded-decision-atom`: a judge atom some decision reads (through definitions) that
  no grounding pair reads on its judge side;
- `unused-atom`: an atom no decision, constraint, requirement or grounding pair reads.

A question the solver could not decide gives the finding with ``decided`` False; so does
one ``deadline`` (started by the caller) left no time for, or cut short (its reason
``deadline``): past it every remaining question is undecided without a call, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from unmask import ir
from unmask.analysis.findings import CODES, Finding
from unmask.analysis.ground import Scope
from unmask.backends.base import Backend, Part, spec
from unmask.checking.explain import Deadline
from unmask.checking.overlap import overlaps
from unmask.checking.solve import SAT, UNKNOWN, UNSAT, Answer, Space
from unmask.ir import iter_atoms, mk_and, mk_card, mk_not, mk_or
from unmask.ir.text import expr_text
from unmask.plumbing.codes import Code
from unmask.plumbing.frozen import frozen

SCHEMA = "unmask.analysis/1"


@frozen
class Analysis:
    file: str
    protocol: str
    backend: str
    scope: Scope
    labels: tuple[str, ...]
    findings: tuple[Finding, ...]
    calls: int = 0

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.is_error)

    @property
    def undecided(self) -> int:
        return sum(1 for f in self.findings if not f.decided)

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.decided and f.severity == severity)

    @property
    def exit_code(self) -> int:
        from unmask.plumbing import exitcodes

        if self.errors:
            return exitcodes.VIOLATED
        return exitcodes.UNKNOWN if self.undecided else exitcodes.OK

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "file": self.file,
            "protocol": self.protocol,
            "backend": self.backend,
            "scope": self.scope.to_json(),
            "labels": list(self.labels),
            "counts": {
                "error": self.count("error"),
                "warning": self.count("warning"),
                "note": self.count("note"),
                "undecided": self.undecided,
            },
            "findings": [f.to_json() for f in self.findings],
        }


@dataclass
class _Run:
    protocol: ir.Protocol
    space: Space
    max_pairs: int
    out: list[Finding] = field(default_factory=list)

    def ask(self, query: ir.Expr | None, witness: bool = False) -> Answer:
        return self.space.sat(query, want_witness=witness)

    def add(self, code: Code, message: str, span, subject: str, answer: Answer | None = None):
        assert code in CODES
        if answer is not None and answer.state == UNKNOWN:
            self.out.append(Finding(code, message, span, None, False, answer.reason, subject))
            return
        wit = answer.witness if answer is not None and answer.state == SAT else None
        self.out.append(Finding(code, message, span, wit, True, "", subject))


def _decision_span(p: ir.Protocol, label: str) -> ir.Span | None:
    if not p.declared_labels:
        return p.decision.span if p.decision is not None else p.span
    for d in p.decisions:
        if d.label == label:
            return d.span
    return p.span


def _written(p: ir.Protocol) -> list[tuple[str, ir.Expr]]:
    """The decisions as written, with their labels (FAIL of a binary protocol has none)."""
    if not p.declared_labels:
        return [] if p.decision is None else [(p.labels[0], p.decision)]
    return [(d.label, d.expr) for d in p.decisions if d.expr is not None]


def analyze(
    protocol: ir.Protocol,
    backend: Backend,
    scope: Scope,
    file: str = "",
    *,
    max_pairs: int | None = None,
    deadline: Deadline | None = None,
) -> Analysis:
    parts = [Part(f"constraint:{c.name}", c.expr) for c in protocol.constraints]
    space = Space(backend, parts, protocol.atom_names, deadline)
    try:
        run = _Run(protocol, space, MAX_PAIRS if max_pairs is None else max_pairs)
        _solve(run)
        _structure(run)
        calls = space.calls
    finally:
        space.close()
    order = {code: i for i, code in enumerate(CODES)}
    findings = sorted(run.out, key=lambda f: order[f.code])  # stable: declaration order kept
    return Analysis(
        file,
        protocol.name,
        spec(backend),
        scope,
        protocol.labels,
        tuple(findings),
        calls,
    )


def _first_constraint_span(p: ir.Protocol) -> ir.Span | None:
    return p.constraints[0].span if p.constraints else p.span


def _solve(run: _Run) -> None:
    p = run.protocol
    base = run.ask(None)
    if base.state != SAT:
        run.add(
            Code.CONTRADICTORY_PROTOCOL,
            "the constraints contradict each other: no assignment satisfies them",
            _first_constraint_span(p),
            "constraints",
            base,
        )
        return
    labels = p.labels
    dec = {label: p.decision_for(label) for label in labels}
    if p.declared_labels:
        one = run.ask(mk_card("exactly", 1, [dec[label] for label in labels]))
        if one.state != SAT:
            run.add(
                Code.CONTRADICTORY_PROTOCOL,
                "no assignment satisfies the constraints and exactly one decision",
                p.span,
                "decisions",
                one,
            )
            if one.state == UNSAT:
                return
    _labels(run, dec)
    _requirements(run)


def _labels(run: _Run, dec: dict[str, ir.Expr]) -> None:
    p = run.protocol
    labels = p.labels
    for label in labels:
        if p.first_match:
            # first-match decisions exclude each other by construction (each is its own
            # and none of the earlier ones'; `otherwise`, none of the others'), so L alone
            # is D_L: the conjunction over every other label made each question O(n) in
            # size, n questions O(n^2) nodes each, and 400 labels took a minute
            alone = dec[label]
        else:
            alone = mk_and([dec[label], *(mk_not(dec[m]) for m in labels if m != label)])
        a = run.ask(alone)
        if a.state != SAT:
            run.add(
                Code.UNREACHABLE_LABEL,
                f"label `{label}` is never the verdict: no assignment allowed by the "
                "constraints gives it alone",
                _decision_span(p, label),
                f"label:{label}",
                a,
            )
    written = _written(p)
    for o in overlaps(p, run.space):
        first, second = o.first.label, o.second.label
        run.add(
            Code.OVERLAPPING_DECISIONS,
            f"the decisions of `{first}` and `{second}` both hold on some assignment",
            _decision_span(p, second),
            f"labels:{first},{second}",
            o.answer,
        )
    if p.declared_labels and all(d.expr is not None for d in p.decisions):
        a = run.ask(mk_not(mk_or(d for _, d in written)), witness=True)
        if a.state != UNSAT:
            run.add(
                Code.UNCOVERED_ASSIGNMENT,
                "some assignment satisfies no decision, and no label is `otherwise`",
                p.decisions[-1].span if p.decisions else p.span,
                "decisions",
                a,
            )
    for label, d in written:
        yes = run.ask(d)
        no = run.ask(mk_not(d)) if yes.state == SAT else None
        if yes.state == UNSAT or (no is not None and no.state == UNSAT):
            value = "false" if yes.state == UNSAT else "true"
            run.add(
                Code.CONSTANT_DECISION,
                f"the decision of `{label}` is {value} under every assignment the "
                "constraints allow: no atom changes it",
                _decision_span(p, label),
                f"label:{label}",
            )
        elif yes.state == UNKNOWN or (no is not None and no.state == UNKNOWN):
            run.add(
                Code.CONSTANT_DECISION,
                f"whether the decision of `{label}` depends on any atom",
                _decision_span(p, label),
                f"label:{label}",
                yes if yes.state == UNKNOWN else no,
            )


def _requirements(run: _Run) -> None:
    p = run.protocol
    varying: list[ir.Requirement] = []
    for r in p.requirements:
        subject = f"requirement:{r.id}"
        always = run.ask(mk_not(r.expr))
        never = run.ask(r.expr)
        if always.state == UNSAT:
            run.add(
                Code.VACUOUS_REQUIREMENT,
                f"requirement `{r.id}` holds under every assignment: it checks nothing",
                r.span,
                subject,
            )
        elif never.state == UNSAT:
            run.add(
                Code.IMPOSSIBLE_REQUIREMENT,
                f"requirement `{r.id}` holds under no assignment: every replay violates it",
                r.span,
                subject,
            )
        elif UNKNOWN in (always.state, never.state):
            run.add(
                Code.VACUOUS_REQUIREMENT,
                f"whether requirement `{r.id}` can fail and can hold",
                r.span,
                subject,
                always if always.state == UNKNOWN else never,
            )
        else:
            varying.append(r)
        if r.addressed is not None:
            a = run.ask(r.addressed)
            if a.state != SAT:
                run.add(
                    Code.NEVER_ADDRESSED,
                    f"requirement `{r.id}` is addressed under no assignment: its coverage "
                    "is never observable",
                    r.span,
                    subject,
                    a,
                )
    _addressed_as_condition(run)
    _redundant(run, varying, run.max_pairs)


def _addressed_as_condition(run: _Run) -> None:
    """The `addressed:` trap: coverage written as the condition under which the requirement
    applies (`addressed: some_said`), which leaves `holds` checked where it does not apply."""
    p = run.protocol
    seen: set[object] = set()
    for r in p.requirements:
        if r.addressed is None:
            continue
        found = None
        for name in iter_atoms(r.addressed):
            decl = p.atom(name)
            if decl is not None and decl.role in ("judge", "context"):
                found = decl
                break
        # a `for` requirement is one statement: its members share its span
        key = r.span if r.span is not None else r.id
        if found is None or key in seen:
            continue
        seen.add(key)
        cond, holds = expr_text(r.addressed, 3), expr_text(r.expr, 2)
        run.out.append(
            Finding(
                Code.ADDRESSED_AS_CONDITION,
                f"`addressed` of requirement `{r.id}` reads the {found.role} atom "
                f"`{found.name}`, but `holds` is checked whether or not it is addressed",
                r.span,
                subject=f"requirement:{r.id}",
                help="`addressed` says whether compliance could be observed, not when the "
                f"requirement applies: for a requirement that applies when `{cond}`, write "
                f"`holds: {cond} implies {holds}` and keep in `addressed` only procedure atoms "
                "that say whether compliance was observable",
            )
        )


class _Components:
    """Atoms linked through the constraints (union-find), so two requirements in different
    components cannot imply each other and need no solver call."""

    def __init__(self, constraints: tuple[ir.Constraint, ...]) -> None:
        self.parent: dict[str, str] = {}
        for c in constraints:
            atoms = list(iter_atoms(c.expr))
            for a in atoms[1:]:
                self.union(atoms[0], a)

    def find(self, a: str) -> str:
        root = a
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while a != root:
            self.parent[a], a = root, self.parent.get(a, a)
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb

    def roots(self, e: ir.Expr) -> frozenset[str]:
        return frozenset(self.find(a) for a in iter_atoms(e))


# pairs of linked requirements compared at most: two solver calls each, so a family with
# thousands of requirements tied by one constraint stays bounded (the rest is reported
# as undecided, never as "no redundancy")
MAX_PAIRS = 5_000


def _redundant(run: _Run, reqs: list[ir.Requirement], max_pairs: int = MAX_PAIRS) -> None:
    comps = _Components(run.protocol.constraints)
    roots = [comps.roots(r.expr) for r in reqs]
    compared = 0
    for j, rj in enumerate(reqs):
        for i in range(j):
            ri = reqs[i]
            if not roots[i] & roots[j]:
                continue  # no shared atom, even through constraints: independent
            if compared == max_pairs:
                run.out.append(
                    Finding(
                        Code.REDUNDANT_REQUIREMENT,
                        f"whether requirement `{rj.id}` and later ones repeat another",
                        rj.span,
                        None,
                        False,
                        f"only the first {max_pairs} linked pairs of requirements are compared",
                        f"requirement:{rj.id}",
                    )
                )
                return
            compared += 1
            i_j = run.ask(mk_and([ri.expr, mk_not(rj.expr)]))
            j_i = run.ask(mk_and([rj.expr, mk_not(ri.expr)]))
            subject = f"requirements:{ri.id},{rj.id}"
            undecided = next((a for a in (i_j, j_i) if a.state == UNKNOWN), None)
            if undecided is not None:
                run.add(
                    Code.REDUNDANT_REQUIREMENT,
                    f"whether requirements `{ri.id}` and `{rj.id}` imply each other",
                    rj.span,
                    subject,
                    undecided,
                )
            elif i_j.state == UNSAT and j_i.state == UNSAT:
                run.add(
                    Code.REDUNDANT_REQUIREMENT,
                    f"requirement `{rj.id}` holds exactly when `{ri.id}` holds",
                    rj.span,
                    subject,
                )
            elif i_j.state == UNSAT:
                run.add(
                    Code.REDUNDANT_REQUIREMENT,
                    f"requirement `{rj.id}` holds whenever `{ri.id}` holds: it fails only "
                    f"where `{ri.id}` fails too",
                    rj.span,
                    subject,
                )
            elif j_i.state == UNSAT:
                run.add(
                    Code.REDUNDANT_REQUIREMENT,
                    f"requirement `{ri.id}` holds whenever `{rj.id}` holds: it fails only "
                    f"where `{rj.id}` fails too",
                    ri.span,
                    subject,
                )


def _structure(run: _Run) -> None:
    p = run.protocol
    decided: set[str] = set()
    for e in p.decision_exprs:
        decided.update(iter_atoms(e))
    grounded: set[str] = set()
    read: set[str] = set(decided)
    for g in p.grounding:
        grounded.update(iter_atoms(g.judge))
        read.update(iter_atoms(g.judge))
        read.update(iter_atoms(g.context))
    for c in p.constraints:
        read.update(iter_atoms(c.expr))
    for r in p.requirements:
        read.update(iter_atoms(r.expr))
        if r.addressed is not None:
            read.update(iter_atoms(r.addressed))
    for a in p.atoms:
        if a.role == "judge" and a.name in decided and a.name not in grounded:
            run.add(
                Code.UNGROUNDED_DECISION_ATOM,
                f"the verdict reads the judge atom `{a.name}`, but no grounding pair checks it",
                a.span,
                f"atom:{a.name}",
            )
    for a in p.atoms:
        if a.name not in read:
            run.add(
                Code.UNUSED_ATOM,
                f"nothing reads the atom `{a.name}`",
                a.span,
                f"atom:{a.name}",
            )
