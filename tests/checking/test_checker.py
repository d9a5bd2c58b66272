"""The adherence check end to end on replays built in code: the article's four cases, each
base inconsistent in turn, gold isolation, determinism, timeouts, translation status,
witness markings and explanation minimality."""

from __future__ import annotations

import itertools
import time
from dataclasses import replace

import pytest

from tests.helpers import LostTimer, Rescue
from unmask.api import check
from unmask.backends import create
from unmask.checking.checker import VERDICT_ATOM, Case, base_parts, check_case
from unmask.checking.report import Report, dumps
from unmask.ir import (
    AtomDecl,
    Constraint,
    Expr,
    GroundPair,
    Protocol,
    Requirement,
    evaluate,
    iter_atoms,
    mk_and,
    mk_atom,
    mk_const,
    mk_iff,
    mk_not,
    mk_or,
)
from unmask.replay.data import Annotation, Evidence, Replay

A = mk_atom
TRUE = mk_const(True)

RATIONALE = (
    "There are two claims. Joining ACME in 2024 is supported. I also checked my outside "
    "knowledge to confirm this first claim. The context does not support the CTO title."
)
CONTEXT = "Alice joined ACME in 2024."


def factual_protocol(constraints: tuple[Constraint, ...] = ()) -> Protocol:
    return Protocol(
        name="factual_claims",
        text="Identify every factual claim. PASS if and only if every claim is supported.",
        atoms=tuple(
            AtomDecl(n, r)
            for n, r in [
                ("j_joined", "judge"),
                ("j_cto", "judge"),
                ("c_joined", "context"),
                ("c_cto", "context"),
                ("external", "procedure"),
            ]
        ),
        constraints=constraints,
        decision=mk_and([A("j_joined"), A("j_cto")]),
        requirements=(
            Requirement("context_only", "Use only supplied context", mk_not(A("external")), TRUE),
        ),
        grounding=(GroundPair("j_joined", "c_joined"), GroundPair("j_cto", "c_cto")),
    )


def ann(atom: str, value: str, quote: str = "two claims", source: str = "rationale") -> Annotation:
    if value == "UNKNOWN":
        return Annotation(atom, value)
    text = RATIONALE if source == "rationale" else CONTEXT
    start = text.index(quote)
    ev = Evidence(source, start, start + len(quote), quote)
    return Annotation(atom, value, (ev,), f"{atom} is {value.lower()}")


def make_replay(
    protocol: Protocol,
    verdict: str,
    values: dict[str, str],
    *,
    gold: str | None = None,
    id: str = "case",
    translation: str = "valid",
) -> Replay:
    anns = tuple(
        ctx_ann(a, v) if protocol.atom(a).role == "context" else ann(a, v)
        for a, v in values.items()
    )
    anns = tuple(
        Annotation(x.atom, x.value, x.evidence, x.explanation, index=i) for i, x in enumerate(anns)
    )
    return Replay(
        id=id,
        protocol=protocol,
        verdict=verdict,
        annotations=anns,
        sources={"rationale": RATIONALE, "context": CONTEXT},
        translation=translation,
        gold=gold,
    )


def ctx_ann(atom: str, value: str) -> Annotation:
    return ann(atom, value, quote="Alice joined ACME in 2024", source="context")


# the article's four cases (the documented example protocol)
CASES = {
    "case-a": (
        "PASS",
        "PASS",
        {
            "j_joined": "TRUE",
            "j_cto": "TRUE",
            "c_joined": "TRUE",
            "c_cto": "TRUE",
            "external": "FALSE",
        },
    ),
    "case-b": (
        "FAIL",
        "FAIL",
        {
            "j_joined": "TRUE",
            "j_cto": "FALSE",
            "c_joined": "TRUE",
            "c_cto": "FALSE",
            "external": "TRUE",
        },
    ),
    "case-c": (
        "PASS",
        "FAIL",
        {
            "j_joined": "TRUE",
            "j_cto": "TRUE",
            "c_joined": "TRUE",
            "c_cto": "FALSE",
            "external": "FALSE",
        },
    ),
    "case-d": (
        "PASS",
        "FAIL",
        {
            "j_joined": "TRUE",
            "j_cto": "FALSE",
            "c_joined": "TRUE",
            "c_cto": "FALSE",
            "external": "TRUE",
        },
    ),
}


def case_replay(name: str, protocol: Protocol | None = None) -> Replay:
    verdict, gold, values = CASES[name]
    return make_replay(protocol or factual_protocol(), verdict, values, gold=gold, id=name)


# --- the four cases -------------------------------------------------------------------------


def test_case_a_follows_the_protocol(backend_name: str) -> None:
    r = check(case_replay("case-a"), backend_name)
    assert r.overall == "SATISFIED"
    assert r.exit_code == 0
    assert r.verdict.result.status == "ENTAILED"
    assert [(q.holds.status, q.coverage.status) for q in r.requirements] == [
        ("ENTAILED", "ENTAILED")
    ]
    assert [g.result.status for g in r.grounding] == ["ENTAILED", "ENTAILED"]
    assert r.verdict_matches_gold is True
    assert r.reasons == ()


def test_case_b_right_verdict_wrong_procedure(backend_name: str) -> None:
    r = check(case_replay("case-b"), backend_name)
    assert r.overall == "VIOLATED"
    assert r.verdict.result.status == "ENTAILED"
    assert r.requirements[0].holds.status == "REFUTED"
    assert r.verdict_matches_gold is True
    # the violation is proved by the annotation `external`, with its quote
    items = r.requirements[0].holds.explanation.items
    assert [str(i.part) for i in items] == ["fact:external"]
    assert items[0].evidence[0].quote == "two claims"
    assert [x.subject for x in r.reasons] == ["requirement:context_only"]


def test_case_c_consistent_but_ungrounded(backend_name: str) -> None:
    r = check(case_replay("case-c"), backend_name)
    assert r.overall == "VIOLATED"
    assert r.verdict.result.status == "ENTAILED"
    assert r.requirements[0].holds.status == "ENTAILED"
    assert [g.result.status for g in r.grounding] == ["ENTAILED", "REFUTED"]
    assert [str(i.part) for i in r.grounding[1].result.explanation.items] == [
        "fact:j_cto",
        "fact:c_cto",
    ]
    assert r.dimensions.grounding == "VIOLATED"
    assert r.dimensions.procedure == "OK"


def test_case_d_contradicts_itself_and_breaks_the_protocol(backend_name: str) -> None:
    r = check(case_replay("case-d"), backend_name)
    assert r.overall == "VIOLATED"
    assert r.verdict.result.status == "REFUTED"
    assert [str(i.part) for i in r.verdict.result.explanation.items] == ["fact:j_cto", "decision"]
    assert r.requirements[0].holds.status == "REFUTED"
    assert r.exit_code == 1


# --- bases ----------------------------------------------------------------------------------


def test_bases_order_and_labels() -> None:
    case = Case.from_replay(case_replay("case-b", factual_protocol((Constraint("k", TRUE),))))
    bases = base_parts(case)
    labels = {k: [str(p.label) for p in v] for k, v in bases.items()}
    facts = ["fact:j_joined", "fact:j_cto", "fact:c_joined", "fact:c_cto", "fact:external"]
    assert labels["evid"] == facts
    assert labels["proto"] == ["constraint:k", "decision"]
    assert labels["all"] == [*facts, "constraint:k", "decision"]
    assert VERDICT_ATOM in set(iter_atoms(bases["proto"][-1].expr))


def test_case_has_no_gold_field() -> None:
    assert "gold" not in Case.__slots__
    assert not hasattr(Case.from_replay(case_replay("case-b")), "gold")


def test_contradictory_protocol_names_proto_and_keeps_evidence_checks(backend_name: str) -> None:
    k = (Constraint("yes", A("j_cto")), Constraint("no", mk_not(A("j_cto"))))
    r = check(case_replay("case-b", factual_protocol(k)), backend_name)
    assert (r.bases.proto, r.bases.evid, r.bases.all) == (
        "INCONSISTENT",
        "CONSISTENT",
        "INCONSISTENT",
    )
    assert r.verdict.result.status == "INCONSISTENT_BASE"
    # requirements and grounding stand on the evidence alone
    assert r.requirements[0].holds.status == "REFUTED"
    assert [g.result.status for g in r.grounding] == ["ENTAILED", "ENTAILED"]
    assert r.overall == "UNKNOWN"
    assert "base:proto" in [x.subject for x in r.reasons]
    assert [str(i.part) for i in r.bases.proto_conflict.items] == [
        "constraint:yes",
        "constraint:no",
    ]


def test_evidence_contradicting_protocol_makes_all_inconsistent(backend_name: str) -> None:
    # the protocol demands that a supported claim was checked in the context; case C's
    # annotations say the judge supports j_cto while the context does not
    k = (Constraint("grounded", mk_iff(A("j_cto"), A("c_cto"))),)
    r = check(case_replay("case-c", factual_protocol(k)), backend_name)
    assert (r.bases.proto, r.bases.evid, r.bases.all) == (
        "CONSISTENT",
        "CONSISTENT",
        "INCONSISTENT",
    )
    assert r.verdict.result.status == "INCONSISTENT_BASE"
    assert r.overall == "UNKNOWN"
    subjects = [x.subject for x in r.reasons]
    assert "base:all" in subjects and "base:proto" not in subjects
    assert [str(i.part) for i in r.bases.all_conflict.items] == [
        "fact:j_cto",
        "fact:c_cto",
        "constraint:grounded",
    ]


def test_evidence_base_is_consistent_by_construction(backend_name: str) -> None:
    # one annotation per atom makes F a set of literals over distinct atoms: B_evid can
    # never be inconsistent, so requirement and grounding checks always get classified
    case = Case.from_replay(case_replay("case-d"))
    assert len(case.facts) == len(base_parts(case)["evid"]) == 5
    r = check(case_replay("case-d"), backend_name)
    assert r.bases.evid == "CONSISTENT" and r.bases.evid_conflict is None


# --- gold, determinism ----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_gold_flip_changes_only_gold_fields(name: str, backend_name: str) -> None:
    replay = case_replay(name)
    flipped = replace(replay, gold="PASS" if replay.gold == "FAIL" else "FAIL")
    none = replace(replay, gold=None)
    a, b, c = (check(x, backend_name).to_json() for x in (replay, flipped, none))
    for other in (b, c):
        diff = {k for k in a if a[k] != other[k]}
        assert diff == {"gold", "verdict_matches_gold"}
    assert c["verdict_matches_gold"] is None


def test_same_replay_twice_same_bytes(backend_name: str) -> None:
    for name in CASES:
        first = dumps(check(case_replay(name), backend_name))
        second = dumps(check(case_replay(name), backend_name))
        assert first == second


def test_report_names_backend_spec() -> None:
    r = check(case_replay("case-a"), create("z3"))
    assert r.backend == "z3"


# --- timeouts -------------------------------------------------------------------------------


def pigeonhole(pigeons: int) -> tuple[tuple[AtomDecl, ...], tuple[Constraint, ...]]:
    holes = pigeons - 1
    names = [[f"p{i}_{j}" for j in range(holes)] for i in range(pigeons)]
    atoms = tuple(AtomDecl(n, "procedure") for row in names for n in row)
    cons = [Constraint(f"pigeon{i}", mk_or([A(n) for n in row])) for i, row in enumerate(names)]
    for j in range(holes):
        for i1, i2 in itertools.combinations(range(pigeons), 2):
            cons.append(
                Constraint(f"hole{j}_{i1}_{i2}", mk_not(mk_and([A(names[i1][j]), A(names[i2][j])])))
            )
    return atoms, tuple(cons)


def pigeonhole_replay() -> Replay:
    """Case A under a protocol that adds pigeonhole(12): unsat, and no solver proves it in
    the few milliseconds these tests allow (z3 takes minutes)."""
    extra_atoms, cons = pigeonhole(12)
    p = factual_protocol(cons)
    return case_replay("case-a", replace(p, atoms=p.atoms + extra_atoms))


def undecided(r: Report, took: float) -> None:
    """``r`` says the solver proved nothing about its bases and verdict; a failure shows
    what it said instead (a base INCONSISTENT under a 1 ms limit was proved, so the solver
    ran past its limit: ``took`` tells how far)."""
    why = (
        f"took {took:.1f} s; bases {r.bases!r}; verdict {r.verdict.result!r}; "
        f"reasons {[(x.code, x.subject, x.message) for x in r.reasons]!r}"
    )
    assert r.bases.proto == "SOLVER_UNKNOWN", why
    assert r.bases.all == "SOLVER_UNKNOWN", why
    assert r.verdict.result.status == "SOLVER_UNKNOWN", why
    assert r.verdict.result.detail == "timeout", why
    assert r.overall == "UNKNOWN" and r.exit_code == 3, why
    codes = {(x.code, x.subject) for x in r.reasons}
    assert ("solver-unknown", "base:proto") in codes, why
    assert ("solver-unknown", "verdict") in codes, why


@pytest.mark.parametrize("closed_form", [True, False])
def test_timeout_is_solver_unknown_never_a_guess(closed_form: bool) -> None:
    # the memo of reports never holds this protocol (137 atoms, past outcomes.MAX_ATOMS), and
    # its B_proto is proved once per protocol object, a new one here: every state below is
    # this check's own. It once said INCONSISTENT under xdist: z3 had lost its own timer
    # and proved the base in minutes (see test_timeout_holds_when_z3_loses_its_own_timer).
    start = time.monotonic()
    r = check(pigeonhole_replay(), "z3", timeout_ms=1, closed_form=closed_form)
    undecided(r, time.monotonic() - start)


def test_timeout_holds_when_z3_loses_its_own_timer() -> None:
    # z3 clears a check's cancel flag after arming its timer, so a timer that fires in
    # between (the thread descheduled for the whole limit) is lost: the base above was then
    # proved unsat after 13 minutes, and the report said INCONSISTENT where its limit said
    # SOLVER_UNKNOWN. Every session of this backend has lost its timer from the start.
    backend = LostTimer(timeout_ms=20)
    rescue = Rescue(lambda: backend._ctx and backend._ctx.interrupt())
    try:
        start = time.monotonic()
        r = check(pigeonhole_replay(), backend)
        took = time.monotonic() - start
    finally:
        rescue.stop()
    undecided(r, took)  # without the watchdog: 10 s, each base then `interrupted`
    assert took < 5


# --- translation ----------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["partial", "invalid"])
def test_translation_not_valid_is_unknown_without_solving(status: str) -> None:
    class NoSolver:
        name = "none"
        option = None

        def open(self, parts, atoms):  # type: ignore[no-untyped-def]
            raise AssertionError("nothing may be solved")

    replay = replace(case_replay("case-a"), translation=status)
    r = check_case(Case.from_replay(replay), NoSolver())  # type: ignore[arg-type]
    j = r.to_json()
    assert j["overall"] == "UNKNOWN" and r.exit_code == 3
    assert j["bases"] is None
    assert j["verdict"]["status"] is None
    assert [x["status"] for x in j["requirements"]] == [None]
    assert [x["status"] for x in j["grounding"]] == [None, None]
    assert j["translation"] == status
    assert r.reasons[0].code == "translation"


# --- overrides ------------------------------------------------------------------------------


def test_no_grounding_is_never_satisfied(backend_name: str) -> None:
    p = replace(factual_protocol(), grounding=())
    r = check(case_replay("case-a", p), backend_name)
    assert r.overall == "UNKNOWN"
    assert r.dimensions.grounding == "NOT_CHECKED"
    assert [x.code for x in r.reasons] == ["no-grounding"]


def test_no_requirements_is_never_satisfied_but_violated_stays(backend_name: str) -> None:
    p = replace(factual_protocol(), requirements=())
    assert check(case_replay("case-a", p), backend_name).overall == "UNKNOWN"
    assert check(case_replay("case-c", p), backend_name).overall == "VIOLATED"


def test_refuted_coverage_is_unknown_not_violated(backend_name: str) -> None:
    req = Requirement("context_only", "d", mk_not(A("external")), A("external"))
    p = replace(factual_protocol(), requirements=(req,))
    values = dict(CASES["case-a"][2])
    r = check(make_replay(p, "PASS", values), backend_name)
    assert r.requirements[0].coverage.status == "REFUTED"
    assert r.requirements[0].coverage.outcome == "UNKNOWN"
    assert r.overall == "UNKNOWN"
    assert [x.code for x in r.reasons] == ["not-observable"]


def test_missing_coverage_is_not_specified_and_not_a_check(backend_name: str) -> None:
    req = Requirement("context_only", "d", mk_not(A("external")), None)
    p = replace(factual_protocol(), requirements=(req,))
    r = check(case_replay("case-a", p), backend_name)
    assert r.requirements[0].coverage.status == "NOT_SPECIFIED"
    assert r.dimensions.coverage == "NOT_CHECKED"
    assert r.overall == "SATISFIED"


# --- witnesses ------------------------------------------------------------------------------


def test_witnesses_mark_observed_and_completed(backend_name: str) -> None:
    values = dict(CASES["case-a"][2])
    values["j_cto"] = "UNKNOWN"
    del values["c_cto"]
    r = check(make_replay(factual_protocol(), "PASS", values), backend_name)
    v = r.verdict.result
    assert v.status == "UNDERDETERMINED"
    holds, fails = v.witnesses.holds, v.witnesses.fails
    assert [(a.atom, a.value, a.origin) for a in holds.atoms] == [
        ("j_joined", True, "observed"),
        ("j_cto", True, "completed"),
    ]
    assert [(a.atom, a.value, a.origin) for a in fails.atoms] == [
        ("j_joined", True, "observed"),
        ("j_cto", False, "completed"),
    ]
    assert (holds.verdict, fails.verdict) == ("PASS", "FAIL")
    g = r.grounding[1].result
    assert g.status == "UNDERDETERMINED"
    # canonical: FALSE first for j_cto, then c_cto as the side demands
    assert [(a.atom, a.value) for a in g.witnesses.holds.atoms] == [
        ("j_cto", False),
        ("c_cto", False),
    ]
    assert [(a.atom, a.value) for a in g.witnesses.fails.atoms] == [
        ("j_cto", False),
        ("c_cto", True),
    ]
    assert r.unannotated == ("c_cto",)
    assert r.unknown == ("j_cto",)


# --- explanation minimality by brute force ---------------------------------------------------


def _sat(exprs: list[Expr]) -> bool:
    names = sorted({a for e in exprs for a in iter_atoms(e)})
    for bits in itertools.product([False, True], repeat=len(names)):
        env = dict(zip(names, bits, strict=True))
        if all(evaluate(e, env) for e in exprs):
            return True
    return False


def test_explanations_are_minimal_by_brute_force(backend_name: str) -> None:
    k = (
        Constraint("ext_fails", mk_or([mk_not(A("external")), mk_not(A("j_joined"))])),
        Constraint("cto_needs_ctx", mk_or([mk_not(A("j_cto")), A("c_cto")])),
    )
    p = factual_protocol(k)
    for name in CASES:
        replay = case_replay(name, p)
        r = check(replay, backend_name)
        case = Case.from_replay(replay)
        parts = {pt.label: pt.expr for ps in base_parts(case).values() for pt in ps}
        checked = 0
        phi_v = A(VERDICT_ATOM) if replay.verdict == "PASS" else mk_not(A(VERDICT_ATOM))
        queries = [(r.verdict.result, phi_v)]
        queries += [
            (q.holds, req.expr) for q, req in zip(r.requirements, p.requirements, strict=True)
        ]
        queries += [
            (g.result, pair.query) for g, pair in zip(r.grounding, p.grounding, strict=True)
        ]
        for res, phi in queries:
            if res.status not in ("ENTAILED", "REFUTED"):
                continue
            side = mk_not(phi) if res.status == "ENTAILED" else phi
            chosen = [parts[i.part] for i in res.explanation.items]
            assert not _sat([*chosen, side])
            for drop in range(len(chosen)):
                assert _sat([*chosen[:drop], *chosen[drop + 1 :], side])
            checked += 1
        assert checked >= 3


# --- sessions -------------------------------------------------------------------------------


class _Spy:
    """Wraps a backend: counts sessions and records everything the solver is given."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.name, self.option = inner, inner.name, inner.option
        self.opened: list[list[str]] = []
        self.seen: list[str] = []

    def open(self, parts, atoms):  # type: ignore[no-untyped-def]
        self.opened.append([str(p.label) for p in parts])
        self.seen.extend(repr(p) for p in parts)
        self.seen.extend(atoms)
        session = self.inner.open(parts, atoms)
        spy = self

        class Wrapped:
            calls = 0

            def check(self, query=None, **kw):  # type: ignore[no-untyped-def]
                spy.seen.append(repr((query, kw)))
                return session.check(query, **kw)

            def close(self) -> None:
                session.close()

        return Wrapped()


def test_one_session_per_base_and_no_gold_in_solver_input() -> None:
    for gold in ("PASS", "FAIL"):
        spy = _Spy(create("z3"))
        replay = replace(case_replay("case-c"), gold=gold)
        # every check on the backend (the closed form makes no call:
        # tests/checking/test_closed_form.py)
        report = check(replay, spy, closed_form=False)  # type: ignore[arg-type]
        assert len(spy.opened) == 3  # proto, evid, all: each opened once
        assert spy.opened[0] == ["decision"]
        assert report.overall == "VIOLATED"
        if gold == "PASS":
            first = list(spy.seen)
        else:
            # the solver saw exactly the same input whatever the gold label
            assert spy.seen == first


def test_deep_expressions_check_and_render_without_recursion_errors() -> None:
    from unmask.ir import Atom, Nary, Not
    from unmask.render.text import render

    deep: Expr = A("external")
    for i in range(5000):  # far past the default depth limit, as `--max-expr-depth` allows
        deep = Nary("and" if i % 2 else "or", (Atom("j_cto"), Not(deep)))
    p = replace(factual_protocol(), requirements=(Requirement("deep", "", deep, deep),))
    replay = case_replay("case-b", p)
    report = check(replay, "z3")
    assert report.requirements[0].holds.status in ("ENTAILED", "REFUTED")
    assert dumps(report) == dumps(check(replay, "z3"))
    assert render(report, replace(replay, protocol=replace(p, decision=deep))).startswith("case-b")


# --- canonical minimisation and completion, whatever the solver returns ----------------------


class _BruteSession:
    """A reference session over truth tables; ``cores`` picks which unsat core to return
    (``"all"``: every enabled part, ``"first"``/``"last"``: a minimal one found scanning
    forwards/backwards), and ``unknown_without`` answers Unknown to any check that leaves
    out that part (a timeout stand-in)."""

    def __init__(self, parts, cores="all", unknown_without=None):  # type: ignore[no-untyped-def]
        self.parts = {p.label: p.expr for p in parts}
        self.order = [p.label for p in parts]
        self.cores = cores
        self.unknown_without = unknown_without
        self.calls = 0

    def _sat(self, labels, query, assume):  # type: ignore[no-untyped-def]
        exprs = [self.parts[x] for x in labels] + ([] if query is None else [query])
        names = sorted({a for e in exprs for a in iter_atoms(e)} | set(assume))
        for bits in itertools.product([False, True], repeat=len(names)):
            env = dict(zip(names, bits, strict=True))
            if all(env[k] == v for k, v in assume.items()) and all(evaluate(e, env) for e in exprs):
                return env
        return None

    def check(self, query=None, *, enabled=None, assume=None, want=()):  # type: ignore[no-untyped-def]
        from unmask.backends import Sat, Unknown, Unsat

        self.calls += 1
        labels = [x for x in self.order if enabled is None or x in set(enabled)]
        if self.unknown_without is not None and self.unknown_without not in labels:
            return Unknown("canceled")
        env = self._sat(labels, query, dict(assume or {}))
        if env is not None:
            return Sat({n: env.get(n, False) for n in want})
        core = list(labels)
        if self.cores != "all":
            for x in list(core if self.cores == "first" else reversed(core)):
                if self._sat([y for y in core if y != x], query, dict(assume or {})) is None:
                    core.remove(x)
        return Unsat(tuple(core))

    def close(self) -> None:
        pass


def _conflicting_parts():  # type: ignore[no-untyped-def]
    from unmask.backends import Part

    return [
        Part("fact:a", A("a")),
        Part("fact:b", A("b")),
        Part("fact:c", mk_not(A("c"))),
        Part("constraint:ab", mk_or([mk_not(A("a")), A("c")])),
        Part("constraint:bc", mk_or([mk_not(A("b")), A("c")])),
        Part("decision", mk_iff(A(VERDICT_ATOM), A("a"))),
    ]


def test_minimisation_does_not_depend_on_the_cores_returned() -> None:
    from unmask.checking.explain import BaseSession, minimise

    parts = _conflicting_parts()
    results, calls = {}, {}
    for mode in ("all", "first", "last"):
        session = _BruteSession(parts, cores=mode)
        base = BaseSession("all", parts, session)  # type: ignore[arg-type]
        assert base.check().__class__.__name__ == "Unsat"  # its core is remembered
        found = minimise(base, None, base.labels)
        results[mode], calls[mode] = (found.labels, found.minimal), session.calls
    # plain deletion in base order: a is dropped (b, c, bc still clash), then b is kept...
    assert results["all"] == (("fact:b", "fact:c", "constraint:bc"), True)
    assert results["first"] == results["last"] == results["all"]
    # informative cores only save calls, never change the answer
    assert calls["first"] <= calls["all"] and calls["last"] <= calls["all"]


def test_minimisation_that_times_out_keeps_the_part_and_says_not_minimal() -> None:
    from unmask.checking.explain import BaseSession, minimise

    parts = _conflicting_parts()
    base = BaseSession("all", parts, _BruteSession(parts, unknown_without="fact:a"))  # type: ignore[arg-type]
    found = minimise(base, None, base.labels)
    assert "fact:a" in found.labels
    assert found.minimal is False


def test_witness_completion_is_the_least_model_whatever_the_start() -> None:
    from unmask.backends import Part
    from unmask.checking.explain import BaseSession, witness

    parts = [Part("constraint:k", mk_or([A("a"), A("b"), A("c")]))]
    base = BaseSession("evid", parts, _BruteSession(parts))  # type: ignore[arg-type]
    query = mk_or([A("b"), A("c")])
    for start in ({"a": True, "b": True, "c": True}, {"a": False, "b": True, "c": False}):
        done = witness(base, query, start, ["a", "b", "c"], {})
        assert done.values == (("a", False), ("b", False), ("c", True))
        assert done.canonical
    # an observed atom is taken as pinned, without a solver call
    calls = base.session.calls
    done = witness(base, query, {"a": True, "b": True, "c": False}, ["a", "b"], {"a": True})
    assert done.values == (("a", True), ("b", False))
    assert base.session.calls == calls + 1  # only b was tried: a is pinned
