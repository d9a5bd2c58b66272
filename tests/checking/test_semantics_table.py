"""The bases and Classify (docs/semantics.md) against exhaustive truth tables: the article's
two-atom table, entailment that is not Kleene logic, and random protocols whose statuses,
canonical witnesses and canonical minimal explanations must equal a brute-force reference on
every backend; for declared labels the reference writes B_proto out itself (exactly one
verdict variable, each label's decision, `otherwise`) and also checks `allowed` and the
label each verdict witness names."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.checking.test_checker import make_replay
from tests.strategies import exprs as random_exprs
from unmask.api import check, dumps
from unmask.backends import create
from unmask.checking.checker import VERDICT_ATOM, Case, base_parts, check_case
from unmask.ir import (
    AtomDecl,
    Constraint,
    Decision,
    Expr,
    GroundPair,
    Nary,
    Not,
    Protocol,
    Requirement,
    evaluate,
    iter_atoms,
    mk_atom,
    mk_iff,
    mk_not,
)
from unmask.plumbing.diagnostics import UnmaskError
from unmask.replay.data import Replay

A = mk_atom


def two_atom_protocol(decision: Expr) -> Protocol:
    return Protocol(
        name="two",
        text="",
        atoms=(AtomDecl("A", "judge"), AtomDecl("B", "context")),
        constraints=(),
        decision=decision,
        requirements=(Requirement("r", "", decision, None),),
        grounding=(GroundPair("A", "B"),),
    )


AND = Nary("and", (A("A"), A("B")))
OR = Nary("or", (A("A"), A("B")))
TAUT = Nary("or", (A("A"), Not(A("A"))))


@pytest.mark.parametrize(
    ("decision", "a_value", "expected"),
    [
        (AND, "FALSE", "REFUTED"),
        (AND, "TRUE", "UNDERDETERMINED"),
        (OR, "TRUE", "ENTAILED"),
        (OR, "FALSE", "UNDERDETERMINED"),
    ],
)
def test_two_atom_table(decision: Expr, a_value: str, expected: str, backend_name: str) -> None:
    # B is unknown: once unannotated, once annotated UNKNOWN; same result
    for values in ({"A": a_value}, {"A": a_value, "B": "UNKNOWN"}):
        r = check(make_replay(two_atom_protocol(decision), "PASS", values), backend_name)
        assert r.requirements[0].holds.status == expected
        assert r.verdict.result.status == expected  # PASS iff decision, observed PASS


def test_excluded_middle_is_entailed_not_kleene_unknown(backend_name: str) -> None:
    r = check(make_replay(two_atom_protocol(TAUT), "PASS", {}), backend_name)
    assert r.requirements[0].holds.status == "ENTAILED"
    # it holds by itself: the explanation is empty
    assert r.requirements[0].holds.explanation.items == ()


# --- random protocols against the brute-force reference --------------------------------------

NAMES = ("a", "b", "c", "d")
ROLES = ("judge", "judge", "context", "context")

exprs = random_exprs(NAMES, max_leaves=6)
values = st.sampled_from(["TRUE", "FALSE", "UNKNOWN", None])


def replay_over_names(
    vals: tuple[str | None, ...],
    verdict: str,
    constraint: Expr | None,
    requirement: Requirement,
    grounding: tuple[GroundPair, ...],
    *,
    name: str = "random",
    **fields,
) -> Replay:
    """A replay of the protocol over NAMES (with ROLES) that has constraint `k` when one is
    given, the one requirement, the grounding pairs and ``fields``; each atom annotated with
    its value in ``vals``, if any."""
    protocol = Protocol(
        name=name,
        text="",
        atoms=tuple(AtomDecl(n, r) for n, r in zip(NAMES, ROLES, strict=True)),
        constraints=() if constraint is None else (Constraint("k", constraint),),
        requirements=(requirement,),
        grounding=grounding,
        **fields,
    )
    annotated = {n: v for n, v in zip(NAMES, vals, strict=True) if v is not None}
    return make_replay(protocol, verdict, annotated)


def _models(exprs_: list[Expr], names: list[str]):  # type: ignore[no-untyped-def]
    for bits in itertools.product([False, True], repeat=len(names)):
        env = dict(zip(names, bits, strict=True))
        if all(evaluate(e, env) for e in exprs_):
            yield env


ALL = [*NAMES, VERDICT_ATOM]


def _sat(exprs_: list[Expr], names: list[str] = ALL) -> bool:
    return next(_models(exprs_, names), None) is not None


def ref_classify(base: list[Expr], phi: Expr, names: list[str] = ALL) -> str:
    if not _sat(base, names):
        return "INCONSISTENT_BASE"
    if not _sat([*base, mk_not(phi)], names):
        return "ENTAILED"
    if not _sat([*base, phi], names):
        return "REFUTED"
    return "UNDERDETERMINED"


def ref_minimise(
    parts: list[tuple[str, Expr]], side: Expr | None, names: list[str] = ALL
) -> list[str]:
    """Plain deletion in base order, no shortcuts (the reference for canonicity)."""
    extra = [] if side is None else [side]
    current = list(parts)
    for p in parts:
        trial = [q for q in current if q[0] != p[0]]
        if not _sat([e for _, e in trial] + extra, names):
            current = trial
    return [label for label, _ in current]


def ref_witness(
    base: list[Expr], side: Expr, atoms: list[str], names: list[str] = ALL
) -> list[tuple[str, bool]]:
    """The least assignment to ``atoms`` (in order, FALSE < TRUE) that extends to a model."""
    best = None
    for env in _models([*base, side], names):
        key = tuple(env[a] for a in atoms)
        best = key if best is None or key < best else best
    assert best is not None
    return list(zip(atoms, best, strict=True))


@given(
    decision=exprs,
    constraint=st.none() | exprs,
    req=exprs,
    addressed=st.none() | exprs,
    vals=st.tuples(values, values, values, values),
    verdict=st.sampled_from(["PASS", "FAIL"]),
)
def test_random_protocols_match_brute_force(
    decision: Expr,
    constraint: Expr | None,
    req: Expr,
    addressed: Expr | None,
    vals: tuple[str | None, ...],
    verdict: str,
) -> None:
    requirement = Requirement("r", "", req, addressed)
    grounding = (GroundPair("a", "c"), GroundPair("b", "d"))
    replay = replay_over_names(vals, verdict, constraint, requirement, grounding, decision=decision)
    case = Case.from_replay(replay)
    bases = {k: [(str(p.label), p.expr) for p in v] for k, v in base_parts(case).items()}
    facts = case.facts
    # one backend is enough per example here; the cross-backend run is test_crosscheck's.
    # The report decides what it can in closed form: the solver path must agree, so both
    # are held to the reference below
    report = check(replay, "z3")
    assert dumps(report) == dumps(check(replay, "z3", closed_form=False))

    # bases
    for name in ("proto", "evid", "all"):
        ok = _sat([e for _, e in bases[name]])
        assert report.bases.state(name) == ("CONSISTENT" if ok else "INCONSISTENT")
        conflict = report.bases.conflict(name)
        if not ok:
            assert [str(i.part) for i in conflict.items] == ref_minimise(bases[name], None)

    v = A(VERDICT_ATOM)
    phi_v = v if verdict == "PASS" else mk_not(v)
    checks = [
        (report.verdict.result, "all", phi_v, [decision]),
        (report.requirements[0].holds, "evid", req, []),
        (report.grounding[0].result, "evid", mk_iff(A("a"), A("c")), []),
        (report.grounding[1].result, "evid", mk_iff(A("b"), A("d")), []),
    ]
    if addressed is not None:
        checks.append((report.requirements[0].coverage, "evid", addressed, []))
    else:
        assert report.requirements[0].coverage.status == "NOT_SPECIFIED"
    for res, base_name, phi, extra in checks:
        base = [e for _, e in bases[base_name]]
        expected = ref_classify(base, phi)
        assert res.status == expected
        if expected in ("ENTAILED", "REFUTED"):
            side = mk_not(phi) if expected == "ENTAILED" else phi
            assert [str(i.part) for i in res.explanation.items] == ref_minimise(
                bases[base_name], side
            )
            assert res.explanation.minimal
        if expected == "UNDERDETERMINED":
            names = {x for e in [phi, *extra] for x in iter_atoms(e)}
            atoms = [n for n in NAMES if n in names]
            for side, w in ((phi, res.witnesses.holds), (mk_not(phi), res.witnesses.fails)):
                assert [(x.atom, x.value) for x in w.atoms] == ref_witness(base, side, atoms)
                assert [x.origin for x in w.atoms] == [
                    "observed" if a in facts else "completed" for a in atoms
                ]


# --- declared labels against the brute-force reference --------------------------------------

LABELS = ("yes", "maybe", "no")
LABEL_VARS = [f"$v:{x}" for x in LABELS]
LABELLED_ALL = [*NAMES, *LABEL_VARS]


def ref_labelled_proto(
    constraint: Expr | None, decisions: dict[str, Expr | None]
) -> list[tuple[str, Expr]]:
    """B_proto written out from its definition: K, exactly one verdict variable, and
    V_L iff D_L for each label (`otherwise`: none of the other decisions holds)."""
    parts: list[tuple[str, Expr]] = []
    if constraint is not None:
        parts.append(("constraint:k", constraint))
    variables = [A(v) for v in LABEL_VARS]
    at_least_one = Nary("or", tuple(variables))
    no_two = [Not(Nary("and", (x, y))) for x, y in itertools.combinations(variables, 2)]
    parts.append(("labels", Nary("and", (at_least_one, *no_two))))
    for label, v in zip(LABELS, variables, strict=True):
        d = decisions[label]
        if d is None:
            others = [x for k, x in decisions.items() if k != label and x is not None]
            d = Not(Nary("or", tuple(others)))
        parts.append((f"decision:{label}", mk_iff(v, d)))
    return parts


@given(
    yes=exprs,
    maybe=exprs,
    no=st.none() | exprs,
    constraint=st.none() | exprs,
    vals=st.tuples(values, values, values, values),
    verdict=st.sampled_from(LABELS),
)
def test_declared_labels_match_brute_force(
    yes: Expr,
    maybe: Expr,
    no: Expr | None,
    constraint: Expr | None,
    vals: tuple[str | None, ...],
    verdict: str,
) -> None:
    decisions = {"yes": yes, "maybe": maybe, "no": no}
    replay = replay_over_names(
        vals,
        verdict,
        constraint,
        Requirement("r", "", yes, None),
        (GroundPair("a", "c", direction="~>"),),
        name="labelled",
        decision=None,
        labels=LABELS,
        decisions=tuple(Decision(x, decisions[x]) for x in LABELS),
    )
    facts = Case.from_replay(replay).facts
    fact_parts = [(f"fact:{n}", A(n) if v else mk_not(A(n))) for n, v in facts.items()]
    base = fact_parts + ref_labelled_proto(constraint, decisions)
    exprs_ = [e for _, e in base]
    # `check` refuses a replay whose protocol's written decisions can both hold under K
    # (unmaskc's `overlapping-decisions`); the checker's meaning of it is exactly-one
    k = [] if constraint is None else [constraint]
    written = [d for d in decisions.values() if d is not None]
    overlap = _sat(k, LABELLED_ALL) and any(
        _sat([*k, x, y], LABELLED_ALL) for x, y in itertools.combinations(written, 2)
    )
    try:
        checked = check(replay, "z3")
    except UnmaskError as e:
        assert overlap and {d.code for d in e.diagnostics} == {"overlapping-decisions"}
    else:
        assert not overlap
    case = Case.from_replay(replay)
    report = check_case(case, create("z3"), backend_name="z3")
    if not overlap:
        assert dumps(report) == dumps(checked)
    assert dumps(report) == dumps(
        check_case(case, create("z3"), backend_name="z3", closed_form=False)
    )
    res = report.verdict.result
    phi = A(f"$v:{verdict}")
    expected = ref_classify(exprs_, phi, LABELLED_ALL)
    assert res.status == expected
    allowed = tuple(x for x in LABELS if _sat([*exprs_, A(f"$v:{x}")], LABELLED_ALL))
    assert report.verdict.allowed == (allowed if _sat(exprs_, LABELLED_ALL) else ())
    if expected in ("ENTAILED", "REFUTED"):
        side = mk_not(phi) if expected == "ENTAILED" else phi
        assert [str(i.part) for i in res.explanation.items] == ref_minimise(
            base, side, LABELLED_ALL
        )
    if expected == "UNDERDETERMINED":
        used = {x for d in decisions.values() if d is not None for x in iter_atoms(d)}
        atoms = [n for n in NAMES if n in used]
        for side, w in ((phi, res.witnesses.holds), (mk_not(phi), res.witnesses.fails)):
            want = ref_witness(exprs_, side, atoms, LABELLED_ALL)
            assert [(x.atom, x.value) for x in w.atoms] == want
            # the label true in every model that extends the witness
            env = dict(want)
            named = {
                x
                for m in _models([*exprs_, side], LABELLED_ALL)
                if all(m[a] == v for a, v in env.items())
                for x in LABELS
                if m[f"$v:{x}"]
            }
            assert named == {w.verdict}
    # a one-way grounding against the evidence alone
    g = report.grounding[0].result
    assert g.status == ref_classify([e for _, e in fact_parts], Nary("or", (Not(A("a")), A("c"))))
