"""The IR of labelled protocols: definitions as `Ref`, decisions per label, expression sides
and one-way grounding; their JSON form round-trips and the binary form is unchanged."""

from __future__ import annotations

import json

import pytest

from unmask import ir
from unmask.ir import Atom, Decision, Definition, GroundPair, Protocol, mk_and, mk_or, mk_ref
from unmask.ir.json import protocol_to_json
from unmask.ir.json_reader import protocol_from_json
from unmask.ir.text import expr_text
from unmask.plumbing.diagnostics import UnmaskError


def _wice() -> Protocol:
    said = [Atom(f"said({p})") for p in ("a", "b")]
    backed = [Atom(f"backed({p})") for p in ("a", "b")]
    all_said = mk_ref("all_said", mk_and(said))
    some_said = mk_ref("some_said", mk_or(said))
    return Protocol(
        "wice",
        "",
        tuple(ir.AtomDecl(a.name, "judge") for a in said)
        + tuple(ir.AtomDecl(a.name, "context") for a in backed),
        (),
        None,
        (),
        (
            GroundPair(said[0], backed[0], direction="~>"),
            GroundPair(some_said, mk_or(backed)),
        ),
        labels=("supported", "partially_supported", "not_supported"),
        decisions=(
            Decision("supported", all_said),
            Decision("partially_supported", mk_and([some_said, ir.mk_not(all_said)])),
            Decision("not_supported", None),
        ),
        definitions=(
            Definition("all_said", all_said.body),
            Definition("some_said", some_said.body),
        ),
    )


def test_json_round_trip_keeps_labels_definitions_and_directions() -> None:
    p = _wice()
    j = protocol_to_json(p)
    assert j["labels"] == ["supported", "partially_supported", "not_supported"]
    assert "decision" not in j
    assert j["decisions"][2] == {"label": "not_supported", "otherwise": True}
    assert j["decisions"][0]["expr"] == {"def": "all_said"}
    assert j["grounding"][0] == {"judge": "said(a)", "context": "backed(a)", "direction": "~>"}
    assert j["grounding"][1]["judge"] == {"def": "some_said"}
    back = protocol_from_json(json.loads(json.dumps(j)))
    assert back == p
    assert protocol_to_json(back) == j


def test_definitions_print_as_written_and_expand_on_request() -> None:
    p = _wice()
    d = p.decision_for("partially_supported")
    assert expr_text(d) == "some_said and not all_said"
    assert expr_text(d, expand=True) == "(said(a) or said(b)) and not (said(a) and said(b))"


def test_otherwise_is_no_other_decision() -> None:
    p = _wice()
    env = {"said(a)": False, "said(b)": False, "backed(a)": False, "backed(b)": False}
    assert ir.evaluate(p.decision_for("not_supported"), env)
    env["said(a)"] = True
    assert not ir.evaluate(p.decision_for("not_supported"), env)
    assert ir.evaluate(p.decision_for("partially_supported"), env)


def test_one_way_grounding_query_is_an_implication() -> None:
    g = GroundPair("j", "c", direction="~>")
    assert g.query == ir.Binary("implies", Atom("j"), Atom("c"))
    assert GroundPair("j", "c").query == ir.Binary("iff", Atom("j"), Atom("c"))
    with pytest.raises(ValueError):
        GroundPair("j", "c", direction="<~")


def test_binary_protocol_json_is_the_old_form() -> None:
    p = Protocol(
        "p",
        "",
        (ir.AtomDecl("a", "judge"), ir.AtomDecl("c", "context")),
        (),
        Atom("a"),
        (),
        (GroundPair("a", "c"),),
    )
    j = protocol_to_json(p)
    assert list(j) == [
        "schema",
        "name",
        "text",
        "atoms",
        "constraints",
        "decision",
        "requirements",
        "grounding",
    ]
    assert j["grounding"] == [{"judge": "a", "context": "c"}]
    assert p.decision_for("FAIL") == ir.Not(Atom("a"))


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda j: j["decisions"][0].update({"expr": {"def": "nope"}}), "unknown-definition"),
        (lambda j: j["decisions"].pop(0), "missing-decision"),
        (lambda j: j["decisions"][0].update({"label": "maybe"}), "unknown-label"),
        (lambda j: j["grounding"][0].update({"judge": "backed(a)"}), "ground-role"),
        (lambda j: j["grounding"][1].update({"context": {"def": "some_said"}}), "ground-role"),
        (lambda j: j.update({"decision": {"const": True}}), "decision"),
    ],
)
def test_bad_labelled_ir_is_refused_at_its_path(mutate, code) -> None:
    j = json.loads(json.dumps(protocol_to_json(_wice())))
    mutate(j)
    with pytest.raises(UnmaskError) as exc:
        protocol_from_json(j)
    assert code in [d.code for d in exc.value.diagnostics]
