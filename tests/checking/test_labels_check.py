"""Protocols that declare their labels, definitions, one-way grounding and provenance,
checked end to end on every backend: the bases' parts, φ_v, ``allowed``, witnesses that
name a label, explanations with labelled decisions, the reasons, and what a result rests on.
Protocols are built as IR (or read from ``unmask.protocol/1`` JSON)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tests.checking.test_checker import make_replay
from unmask.api import check
from unmask.backends import Unknown, create
from unmask.checking.checker import Case, base_parts, check_case
from unmask.checking.report import dumps
from unmask.ir import (
    Atom,
    AtomDecl,
    Card,
    Constraint,
    Decision,
    Definition,
    GroundPair,
    Protocol,
    Requirement,
    mk_and,
    mk_iff,
    mk_not,
    mk_or,
    mk_ref,
)
from unmask.ir.json_reader import protocol_from_json
from unmask.plumbing.diagnostics import UnmaskError
from unmask.replay.data import Annotation, Provenance, Replay


def semantics(replay: Replay, backend_name: str):  # type: ignore[no-untyped-def]
    """The checker's report of a replay whose protocol has overlapping decisions: what
    exactly-one means there. ``check`` refuses such a replay (``refused`` below)."""
    return check_case(Case.from_replay(replay), create(backend_name), backend_name=backend_name)


def refused(replay: Replay) -> None:
    with pytest.raises(UnmaskError) as e:
        check(replay, "sliced")
    assert {d.code for d in e.value.diagnostics} == {"overlapping-decisions"}


A = Atom
LABELS = ("supported", "partially_supported", "not_supported")
ALL_SAID = mk_ref("all_said", mk_and([A("said_a"), A("said_b")]))
SOME_SAID = mk_ref("some_said", mk_or([A("said_a"), A("said_b")]))


def wice(*, grounding: tuple[GroundPair, ...] | None = None) -> Protocol:
    """The three-label claim verification protocol, over two parts `a` and `b`."""
    return Protocol(
        name="wice",
        text="Is the claim supported, partially supported or not supported?",
        atoms=(
            AtomDecl("said_a", "judge"),
            AtomDecl("said_b", "judge"),
            AtomDecl("backed_a", "context"),
            AtomDecl("backed_b", "context"),
        ),
        constraints=(),
        decision=None,
        requirements=(Requirement("some_part", "say which part is supported", SOME_SAID),),
        grounding=grounding
        if grounding is not None
        else (
            GroundPair("said_a", "backed_a", direction="~>"),
            GroundPair("said_b", "backed_b", direction="~>"),
        ),
        labels=LABELS,
        decisions=(
            Decision("supported", ALL_SAID),
            Decision("partially_supported", mk_and([SOME_SAID, mk_not(ALL_SAID)])),
            Decision("not_supported", None),
        ),
        definitions=(
            Definition("all_said", ALL_SAID.body),
            Definition("some_said", SOME_SAID.body),
        ),
    )


def run(values: dict[str, str], verdict: str, backend: str = "z3", **kw):  # type: ignore[no-untyped-def]
    return check(make_replay(wice(**kw), verdict, values), backend)


# --- the bases ------------------------------------------------------------------------------


def test_parts_are_constraints_then_labels_then_one_decision_per_label() -> None:
    p = replace(wice(), constraints=(Constraint("k", mk_or([A("said_a"), A("backed_a")])),))
    bases = base_parts(Case.from_replay(make_replay(p, "supported", {"said_a": "TRUE"})))
    labels = [str(x.label) for x in bases["proto"]]
    assert labels == [
        "constraint:k",
        "labels",
        "decision:supported",
        "decision:partially_supported",
        "decision:not_supported",
    ]
    assert [str(x.label) for x in bases["all"]] == ["fact:said_a", *labels]
    parts = {str(x.label): x.expr for x in bases["proto"]}
    variables = tuple(A(f"$v:{x}") for x in LABELS)
    assert parts["labels"] == Card("exactly", 1, variables)
    assert parts["decision:supported"] == mk_iff(A("$v:supported"), ALL_SAID)
    # `otherwise` is the negation of every other decision
    assert parts["decision:not_supported"] == mk_iff(
        A("$v:not_supported"),
        mk_not(mk_or([ALL_SAID, mk_and([SOME_SAID, mk_not(ALL_SAID)])])),
    )


# --- the verdict ----------------------------------------------------------------------------


def test_entailed_label_allows_only_itself(backend_name: str) -> None:
    r = run({"said_a": "TRUE", "said_b": "TRUE"}, "supported", backend_name)
    v = r.verdict
    assert (v.result.status, v.allowed) == ("ENTAILED", ("supported",))
    parts = r.to_json()["verdict"]["explanation"]["parts"]
    # ¬V_supported with both parts said contradicts supported's decision alone
    assert [x["part"] for x in parts] == ["fact:said_a", "fact:said_b", "decision:supported"]
    assert parts[-1] == {"part": "decision:supported", "kind": "decision", "label": "supported"}


def test_refuted_label_names_the_labels_still_allowed(backend_name: str) -> None:
    r = run({"said_a": "TRUE", "said_b": "FALSE"}, "supported", backend_name)
    v = r.verdict
    assert (v.result.status, v.allowed) == ("REFUTED", ("partially_supported",))
    assert r.to_json()["verdict"]["allowed"] == ["partially_supported"]
    reason = next(x for x in r.reasons if x.subject == "verdict")
    assert reason.code == "violated"
    assert reason.message == (
        "the observed verdict `supported` is refuted: "
        "the evidence allows only `partially_supported`"
    )


def test_otherwise_is_refuted_by_what_rules_out_every_other_world() -> None:
    # `not_supported` is `otherwise`: not some_said, refuted by one said part
    r = run({"said_a": "TRUE", "said_b": "TRUE"}, "not_supported")
    assert r.verdict.result.status == "REFUTED"
    assert [str(i.part) for i in r.verdict.result.explanation.items] == [
        "fact:said_b",
        "decision:not_supported",
    ]
    assert r.verdict.allowed == ("supported",)


def test_exactly_one_label_is_part_of_a_refutation(backend_name: str) -> None:
    # r's own decision leaves it open (z unknown); p holds, and only one label may
    p = replace(
        wice(),
        atoms=(AtomDecl("x", "judge"), AtomDecl("z", "judge")),
        requirements=(),
        grounding=(),
        labels=("p", "q", "r"),
        decisions=(Decision("p", A("x")), Decision("q", None), Decision("r", A("z"))),
        definitions=(),
    )
    replay = make_replay(p, "r", {"x": "TRUE"})
    refused(replay)  # p and r both hold when x and z do
    r = semantics(replay, backend_name)
    assert r.verdict.result.status == "REFUTED"
    parts = r.to_json()["verdict"]["explanation"]["parts"]
    assert [x["part"] for x in parts] == ["fact:x", "labels", "decision:p"]
    assert parts[1] == {"part": "labels", "kind": "labels"}
    assert r.verdict.allowed == ("p",)


def test_overlapping_decisions_make_b_all_inconsistent_only_where_pinned() -> None:
    # two decisions that may both hold: only exactly-one rules the observed label out
    p = replace(
        wice(),
        decisions=(
            Decision("supported", ALL_SAID),
            Decision("partially_supported", SOME_SAID),
            Decision("not_supported", None),
        ),
    )
    # a world where only one part is said is fine
    one = make_replay(p, "partially_supported", {"said_a": "TRUE", "said_b": "FALSE"})
    refused(one)  # `check` refuses the protocol whatever the replay pins
    fine = semantics(one, "z3")
    assert fine.bases.all == "CONSISTENT" and fine.verdict.result.status == "ENTAILED"
    both = make_replay(p, "partially_supported", {"said_a": "TRUE", "said_b": "TRUE"})
    r = semantics(both, "z3")
    # both decisions hold: B_all is inconsistent, and the conflict shows why
    assert r.bases.all == "INCONSISTENT"
    assert r.verdict.result.status == "INCONSISTENT_BASE"
    assert r.verdict.allowed == ()
    assert r.to_json()["verdict"]["allowed"] == []
    conflict = r.to_json()["conflicts"]["all"]["parts"]
    assert {"part": "labels", "kind": "labels"} in conflict
    assert [x["part"] for x in conflict] == [
        "fact:said_a",
        "fact:said_b",
        "labels",
        "decision:supported",
        "decision:partially_supported",
    ]


def test_underdetermined_witnesses_name_the_label_on_each_side(backend_name: str) -> None:
    r = run({"said_a": "TRUE"}, "partially_supported", backend_name)
    v = r.verdict
    assert v.result.status == "UNDERDETERMINED"
    assert v.allowed == ("supported", "partially_supported")
    w = v.result.witnesses
    assert w.holds.verdict == "partially_supported"
    assert [(x.atom, x.value, x.origin) for x in w.holds.atoms] == [
        ("said_a", True, "observed"),
        ("said_b", False, "completed"),
    ]
    assert w.fails.verdict == "supported"
    assert [(x.atom, x.value) for x in w.fails.atoms] == [("said_a", True), ("said_b", True)]
    reason = next(x for x in r.reasons if x.subject == "verdict")
    assert reason.message == (
        "the observed verdict `partially_supported` is underdetermined: "
        "the evidence allows `supported` and `partially_supported`"
    )


def test_nothing_known_allows_every_label_and_the_least_other_world(backend_name: str) -> None:
    r = run({}, "not_supported", backend_name)
    v = r.verdict
    assert v.allowed == LABELS
    # the least completion where `not_supported` fails: said_a FALSE, said_b TRUE
    assert v.result.witnesses.fails.verdict == "partially_supported"
    assert v.result.witnesses.holds.verdict == "not_supported"
    reason = next(x for x in r.reasons if x.subject == "verdict")
    assert reason.message.endswith("allows `supported`, `partially_supported` and `not_supported`")


class Z3With:
    """z3, with each session's ``check`` passed to ``hook(session, parts, query, **kw)``, which
    may answer itself or ask the session."""

    def __init__(self, hook) -> None:  # type: ignore[no-untyped-def]
        self.inner = create("z3")
        self.name, self.option = "z3", None
        self.hook = hook

    def open(self, parts, atoms):  # type: ignore[no-untyped-def]
        session = self.inner.open(parts, atoms)
        hook = self.hook

        class Wrapped:
            calls = 0

            def check(self, query=None, **kw):  # type: ignore[no-untyped-def]
                return hook(session, parts, query, **kw)

            def close(self) -> None:
                session.close()

        return Wrapped()


def test_allowed_is_null_when_a_needed_call_is_undecided() -> None:
    def gives_up(session, parts, query=None, **kw):  # type: ignore[no-untyped-def]
        # asking whether `supported` is possible times out
        if query == A("$v:supported"):
            return Unknown("timeout")
        return session.check(query, **kw)

    replay = make_replay(wice(), "partially_supported", {"said_a": "TRUE"})
    r = check(replay, Z3With(gives_up), closed_form=False)  # type: ignore[arg-type]
    assert r.verdict.result.status == "UNDERDETERMINED"  # the check itself was decided
    assert r.verdict.allowed is None
    assert r.to_json()["verdict"]["allowed"] is None
    reason = next(x for x in r.reasons if x.subject == "verdict")
    assert reason.message == (
        "the observed verdict `partially_supported` is underdetermined: "
        "the evidence allows it and another label"
    )


def test_binary_allowed_follows_the_status_without_extra_calls() -> None:
    from tests.checking.test_checker import case_replay, factual_protocol

    assert check(case_replay("case-a"), "z3").verdict.allowed == ("PASS",)
    assert check(case_replay("case-d"), "z3").verdict.allowed == ("FAIL",)  # PASS refuted
    open_replay = make_replay(factual_protocol(), "FAIL", {"j_joined": "TRUE"})
    r = check(open_replay, "z3")
    assert (r.verdict.result.status, r.verdict.allowed) == ("UNDERDETERMINED", ("PASS", "FAIL"))
    # no query of the verdict variable beyond Classify's two
    seen: list[object] = []

    def spy(session, parts, query=None, **kw):  # type: ignore[no-untyped-def]
        if "decision" in [str(p.label) for p in parts] and not kw.get("assume"):
            seen.append(query)
        return session.check(query, **kw)

    check(open_replay, Z3With(spy), closed_form=False)  # type: ignore[arg-type]
    phi = A("$pass")
    assert seen.count(phi) + seen.count(mk_not(phi)) == 2


def test_binary_reports_have_no_label_on_the_decision() -> None:
    from tests.checking.test_checker import case_replay

    j = check(case_replay("case-d"), "z3").to_json()
    decision = [x for x in j["verdict"]["explanation"]["parts"] if x["kind"] == "decision"]
    assert decision == [{"part": "decision", "kind": "decision"}]


def test_same_report_on_every_backend() -> None:
    from unmask.backends import available

    for values, verdict in [
        ({"said_a": "TRUE"}, "partially_supported"),
        ({"said_a": "FALSE", "said_b": "FALSE", "backed_a": "TRUE"}, "supported"),
        ({}, "not_supported"),
    ]:
        texts = set()
        for name in available():
            j = json.loads(dumps(run(values, verdict, name)))
            j.pop("backend")
            texts.add(json.dumps(j))
        assert len(texts) == 1


# --- definitions and one-way grounding ------------------------------------------------------


def test_requirement_over_a_definition_means_its_body(backend_name: str) -> None:
    r = run({"said_b": "TRUE"}, "partially_supported", backend_name)
    req = r.requirements[0]
    assert req.holds.status == "ENTAILED"
    assert [str(i.part) for i in req.holds.explanation.items] == ["fact:said_b"]


def test_one_way_grounding_holds_where_two_way_is_refuted(backend_name: str) -> None:
    # the judge did not cite part a, yet the context backs it: not a grounding failure
    values = {"said_a": "FALSE", "said_b": "TRUE", "backed_a": "TRUE", "backed_b": "TRUE"}
    one_way = run(values, "partially_supported", backend_name)
    assert [g.result.status for g in one_way.grounding] == ["ENTAILED", "ENTAILED"]
    two_way = run(
        values,
        "partially_supported",
        backend_name,
        grounding=(GroundPair("said_a", "backed_a"), GroundPair("said_b", "backed_b")),
    )
    assert [g.result.status for g in two_way.grounding] == ["REFUTED", "ENTAILED"]
    j = one_way.to_json()["grounding"][0]
    assert list(j)[:4] == ["judge", "context", "status", "direction"]
    assert (j["judge"], j["context"], j["direction"]) == ("said_a", "backed_a", "~>")
    assert two_way.to_json()["grounding"][0]["direction"] == "~"


def test_one_way_grounding_refuted_names_its_pair_with_the_arrow() -> None:
    r = run({"said_a": "TRUE", "backed_a": "FALSE"}, "partially_supported")
    g = r.grounding[0]
    assert g.result.status == "REFUTED"
    assert [str(i.part) for i in g.result.explanation.items] == ["fact:said_a", "fact:backed_a"]
    reason = next(x for x in r.reasons if x.subject.startswith("grounding:"))
    assert reason.subject == "grounding:said_a~>backed_a"
    assert reason.message == "grounding `said_a~>backed_a` is refuted"


def test_expression_sides_are_shown_as_written() -> None:
    some_backed = mk_ref("some_backed", mk_or([A("backed_a"), A("backed_b")]))
    r = run(
        {"said_a": "TRUE", "backed_b": "TRUE"},
        "partially_supported",
        grounding=(GroundPair(SOME_SAID, some_backed),),
    )
    g = r.to_json()["grounding"][0]
    assert (g["judge"], g["context"], g["direction"], g["status"]) == (
        "some_said",
        "some_backed",
        "~",
        "ENTAILED",
    )


def test_labelled_protocol_read_from_json_checks_the_same() -> None:
    def atom(name: str) -> dict:
        return {"name": name, "role": "judge" if name.startswith("said") else "context"}

    doc = {
        "schema": "unmask.protocol/1",
        "name": "wice",
        "text": "Is the claim supported, partially supported or not supported?",
        "atoms": [atom(n) for n in ("said_a", "said_b", "backed_a", "backed_b")],
        "definitions": [
            {
                "name": "all_said",
                "expr": {"op": "and", "args": [{"atom": "said_a"}, {"atom": "said_b"}]},
            },
            {
                "name": "some_said",
                "expr": {"op": "or", "args": [{"atom": "said_a"}, {"atom": "said_b"}]},
            },
        ],
        "constraints": [],
        "labels": list(LABELS),
        "decisions": [
            {"label": "supported", "expr": {"def": "all_said"}},
            {
                "label": "partially_supported",
                "expr": {
                    "op": "and",
                    "args": [{"def": "some_said"}, {"op": "not", "args": [{"def": "all_said"}]}],
                },
            },
            {"label": "not_supported", "otherwise": True},
        ],
        "requirements": [
            {
                "id": "some_part",
                "description": "say which part is supported",
                "expr": {"def": "some_said"},
            }
        ],
        "grounding": [
            {"judge": "said_a", "context": "backed_a", "direction": "~>"},
            {"judge": "said_b", "context": "backed_b", "direction": "~>"},
        ],
    }
    p = protocol_from_json(doc)
    values = {"said_a": "TRUE", "said_b": "FALSE", "backed_a": "TRUE"}
    from_json = check(make_replay(p, "supported", values), "z3").to_json()
    in_code = check(make_replay(wice(), "supported", values), "z3").to_json()
    assert from_json == in_code


# --- provenance -----------------------------------------------------------------------------


def with_by(replay: Replay, by: dict[str, Provenance]) -> Replay:
    anns = tuple(
        Annotation(a.atom, a.value, a.evidence, a.explanation, a.index, by.get(a.atom))
        for a in replay.annotations
    )
    return replace(replay, annotations=anns)


MODEL = Provenance("model", "gpt-4-citations")
GOLD = Provenance("gold", "wice-labels")


def test_explanation_rests_on_unreviewed_and_gold_annotations(backend_name: str) -> None:
    replay = make_replay(
        wice(), "supported", {"said_a": "TRUE", "said_b": "FALSE", "backed_a": "FALSE"}
    )
    replay = with_by(replay, {"said_b": MODEL, "backed_a": GOLD})
    r = check(replay, backend_name)
    v = r.verdict.result
    assert v.status == "REFUTED"
    assert (v.unreviewed, v.gold_derived) == (1, 0)  # said_b; backed_a is not in it
    j = r.to_json()
    assert j["verdict"]["unreviewed"] is True
    assert "gold_derived" not in j["verdict"]
    item = next(x for x in j["verdict"]["explanation"]["parts"] if x["part"] == "fact:said_b")
    assert item["by"] == {"kind": "model", "name": "gpt-4-citations"}
    assert list(item)[-1] == "by"
    assert [x["part"] for x in j["verdict"]["explanation"]["parts"]] == [
        "fact:said_b",
        "decision:supported",
    ]
    # the first grounding rests on said_a (no `by`) and backed_a (gold, reviewed)
    g = r.grounding[0].result
    assert (g.status, g.unreviewed, g.gold_derived) == ("REFUTED", 0, 1)
    assert j["grounding"][0]["gold_derived"] is True
    plain = j["grounding"][0]["explanation"]["parts"][0]
    assert plain["part"] == "fact:said_a" and "by" not in plain
    assert "unreviewed" not in j["grounding"][0]
    # the requirement `some_said` rests on said_a alone
    assert "unreviewed" not in j["requirements"][0]


def test_underdetermined_rests_on_its_pinned_atoms() -> None:
    replay = with_by(make_replay(wice(), "partially_supported", {"said_a": "TRUE"}), {})
    replay = with_by(replay, {"said_a": Provenance("rule", "regex")})
    r = check(replay, "z3")
    assert r.verdict.result.status == "UNDERDETERMINED"
    assert r.verdict.result.unreviewed == 1
    assert r.to_json()["verdict"]["unreviewed"] is True


def test_reviewed_rule_and_unreviewed_human_are_told_apart() -> None:
    values = {"said_a": "TRUE", "said_b": "TRUE"}
    base = make_replay(wice(), "supported", values)
    reviewed = with_by(base, {"said_a": Provenance("rule", "regex", True)})
    assert check(reviewed, "z3").verdict.result.unreviewed == 0
    unreviewed = with_by(base, {"said_a": Provenance("human", "ann-3", False)})
    r = check(unreviewed, "z3")
    assert r.verdict.result.unreviewed == 1
    by = r.to_json()["verdict"]["explanation"]["parts"][0]["by"]
    assert by == {"kind": "human", "name": "ann-3", "reviewed": False}


def test_coverage_flags_carry_the_coverage_prefix() -> None:
    p = replace(
        wice(),
        requirements=(Requirement("cites", "", A("said_a"), mk_or([A("said_a"), A("said_b")])),),
    )
    replay = with_by(make_replay(p, "supported", {"said_b": "TRUE"}), {"said_b": GOLD})
    j = check(replay, "z3").to_json()["requirements"][0]
    assert j["coverage"] == "ENTAILED"
    assert j["coverage_gold_derived"] is True
    assert "gold_derived" not in j  # `cites` itself is underdetermined on said_a alone
    assert "coverage_unreviewed" not in j


@pytest.mark.parametrize("status", ["partial", "invalid"])
def test_unsolved_report_has_null_allowed_and_directions(status: str) -> None:
    r = check(make_replay(wice(), "supported", {}, translation=status), "z3")
    j = r.to_json()
    assert j["verdict"]["allowed"] is None
    assert [g["direction"] for g in j["grounding"]] == ["~>", "~>"]
