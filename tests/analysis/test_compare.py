"""`unmask compare`: each relation on a minimal pair of protocols, witnesses where they
differ, what was added and removed, the CI gate, and that layout, order and descriptions
never make two protocols different."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from unmask.analysis.compare import compare
from unmask.analysis.ground import Scope
from unmask.backends import create
from unmask.cli.main import main
from unmask.language.compiler import compile_source

ROOT = Path(__file__).resolve().parents[2]
BASE = """protocol p "a protocol"
atom a : judge "a"
atom b : judge "b"
atom ca : context "ca"
atom x : procedure "x"
decision pass iff DECISION
requirement r "r" {
  holds: HOLDS
  addressed: true
}
ground a ~ ca
"""


def proto(decision: str = "a and b", holds: str = "not x", extra: str = "") -> str:
    return BASE.replace("DECISION", decision).replace("HOLDS", holds) + extra


def relations(old: str, new: str, backend: str = "sliced") -> dict[str, object]:
    c = compare(
        compile_source(old, "old.proto"), compile_source(new, "new.proto"), create(backend), Scope()
    )
    return {r.subject: r for r in c.relations}


def rel(old: str, new: str, subject: str = "label:PASS") -> str:
    return relations(old, new)[subject].relation


def test_equivalent_when_only_layout_order_and_descriptions_change():
    old = proto()
    new = """# reformatted, reordered and described differently
protocol p "another text"
atom x : procedure "something else"
atom ca : context "c a"
atom b : judge "bee"
atom a : judge "ay"
ground a ~ ca
requirement r "renamed description" { holds: not x
  addressed: true }
decision pass iff b and a
"""
    rs = relations(old, new)
    assert {s: r.relation for s, r in rs.items()} == {
        "constraints": "equivalent",
        "label:PASS": "equivalent",
        "label:FAIL": "equivalent",
        "holds:r": "equivalent",
        "addressed:r": "equivalent",
    }
    c = compare(compile_source(old, "o"), compile_source(new, "n"), create("z3"), Scope())
    assert not c.different and c.exit_code == 0


def test_looser_with_a_witness():
    r = relations(proto("a and b"), proto("a or b"))["label:PASS"]
    assert r.relation == "looser"
    assert r.looser == (("a", False), ("b", True))  # the least world NEW passes, OLD fails
    assert r.stricter is None


def test_stricter():
    r = relations(proto("a or b"), proto("a and b"))["label:PASS"]
    assert r.relation == "stricter" and r.stricter == (("a", False), ("b", True))
    assert relations(proto("a or b"), proto("a and b"))["label:FAIL"].relation == "looser"


def test_incomparable():
    r = relations(proto("a"), proto("b"))["label:PASS"]
    assert r.relation == "incomparable"
    assert r.looser == (("a", False), ("b", True))
    assert r.stricter == (("a", True), ("b", False))


def test_under_both_constraint_sets():
    # NEW allows `a or b` but its constraint says b implies a: under both it is `a`... and
    # OLD's `a` agrees, so the labels are equivalent while the constraints are stricter
    rs = relations(proto("a"), proto("a or b", extra="constraint k: b implies a\n"))
    assert rs["label:PASS"].relation == "equivalent"
    assert rs["constraints"].relation == "stricter"


def test_requirements_holds_and_addressed():
    rs = relations(proto(holds="not x"), proto(holds="x or not x"))
    assert rs["holds:r"].relation == "looser"
    old = proto().replace("addressed: true", "addressed: x")
    assert relations(old, proto())["addressed:r"].relation == "looser"
    unspecified = proto().replace("\n  addressed: true", "")
    assert relations(proto(), unspecified)["addressed:r"].relation == "unspecified"


def test_added_and_removed_things():
    new = proto(
        extra='atom cb : context "cb"\nground b ~ cb\nrequirement s "s" {\n  holds: x\n}\n'
    ).replace("ground a ~ ca\n", "")
    c = compare(compile_source(proto(), "o"), compile_source(new, "n"), create("sliced"), Scope())
    assert c.added == {
        "labels": (),
        "requirements": ("s",),
        "grounding": ("b ~ cb",),
        "atoms": ("cb",),
    }
    assert c.removed["grounding"] == ("a ~ ca",)
    assert c.different and c.exit_code == 1


def test_an_atom_on_one_side_only_is_free_on_the_other():
    new = proto("a and b and z", extra='atom z : judge "z"\n')
    r = relations(proto(), new)["label:PASS"]
    assert r.relation == "stricter"
    assert r.stricter == (("a", True), ("b", True), ("z", False))


def test_witnesses_agree_on_every_backend():
    first = [r.to_json() for r in relations(proto("a"), proto("b")).values()]
    assert any(r["relation"] != "equivalent" for r in first)  # witnesses to compare
    for backend in ("z3", "pysat", "truthtable"):
        assert [r.to_json() for r in relations(proto("a"), proto("b"), backend).values()] == first


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_cli_exit_statuses_and_the_gate(tmp_path):
    old = write(tmp_path, "old.proto", proto("a and b"))
    looser = write(tmp_path, "looser.proto", proto("a or b"))
    same = write(tmp_path, "same.proto", proto("b and a"))
    run = CliRunner().invoke
    assert run(main, ["compare", old, same]).exit_code == 0
    out = run(main, ["compare", old, looser])
    assert out.exit_code == 1 and "label:PASS: looser" in out.output
    assert run(main, ["compare", old, looser, "--fail-if", "looser"]).exit_code == 1
    assert run(main, ["compare", old, looser, "--fail-if", "stricter"]).exit_code == 0
    assert run(main, ["compare", looser, old, "--fail-if", "stricter"]).exit_code == 1
    assert (
        run(main, ["compare", old, looser, "--fail-if", "looser", "--label", "FAIL"]).exit_code == 0
    )
    assert run(main, ["compare", old, looser, "--fail-if", "looser", "--label", "X"]).exit_code == 2
    doc = json.loads(run(main, ["compare", old, looser, "--format", "json"]).output)
    assert doc["equivalent"] is False
    pass_rel = next(r for r in doc["relations"] if r["subject"] == "label:PASS")
    assert pass_rel == {
        "subject": "label:PASS",
        "relation": "looser",
        "new_only": {"a": False, "b": True},
    }
    bad = write(tmp_path, "bad.proto", "protocol p\n")
    assert run(main, ["compare", old, bad]).exit_code == 4


def test_families_ground_to_the_same_members(tmp_path):
    fam = str(ROOT / "examples" / "factual_claims_family.proto")
    out = CliRunner().invoke(main, ["compare", fam, fam, "--members", "4"])
    assert out.exit_code == 0, out.output
    assert "claim = {claim_1, claim_2, claim_3, claim_4} (invented)" in out.output


def test_labelled_protocols_through_ir_json(tmp_path):
    from unmask import ir
    from unmask.ir.json import dumps, protocol_to_json

    def lab(d_a):
        x, y = ir.Atom("x"), ir.Atom("y")
        return ir.Protocol(
            "lab",
            "",
            (ir.AtomDecl("x", "judge"), ir.AtomDecl("y", "judge")),
            (),
            None,
            (),
            (),
            labels=("yes", "partly", "no"),
            decisions=(
                ir.Decision("yes", d_a),
                ir.Decision("partly", ir.mk_or([x, y])),
                ir.Decision("no", None),
            ),
        )

    x, y = ir.Atom("x"), ir.Atom("y")
    old = write(tmp_path, "old.json", dumps(protocol_to_json(lab(ir.mk_and([x, y])))))
    new = write(tmp_path, "new.json", dumps(protocol_to_json(lab(x))))
    out = CliRunner().invoke(main, ["compare", old, new, "--format", "json"])
    doc = json.loads(out.output)
    got = {r["subject"]: r["relation"] for r in doc["relations"]}
    assert got["label:yes"] == "looser"
    assert got["label:no"] == "equivalent"
    # the gate's default label is the first declared one when there is no PASS
    assert CliRunner().invoke(main, ["compare", old, new, "--fail-if", "looser"]).exit_code == 1


def test_constraint_sets_that_rule_each_other_out():
    old = proto(extra="constraint k: x\n")
    new = proto(extra="constraint k: not x\n")
    rs = relations(old, new)
    assert rs["constraints"].relation == "incomparable"
    assert rs["constraints:both"].relation == "contradictory"
    assert "label:PASS" not in rs


def test_a_domain_no_file_declares_is_an_error(tmp_path):
    fam = str(ROOT / "examples" / "factual_claims_family.proto")
    out = CliRunner().invoke(main, ["compare", fam, fam, "--domain", "nope=a"])
    assert out.exit_code == 4 and "nope" in out.output


def test_labelled_protocols_in_proto(tmp_path):
    wice = ROOT / "tests" / "data" / "analysis" / "wice.proto"
    text = wice.read_text(encoding="utf-8")
    looser = write(
        tmp_path, "looser.proto", text.replace("iff some_said and not all_said", "iff some_said")
    )
    out = CliRunner().invoke(
        main, ["compare", str(wice), looser, "--members", "2", "--format", "json"]
    )
    doc = json.loads(out.output)
    got = {r["subject"]: r for r in doc["relations"]}
    assert got["label:partially_supported"]["relation"] == "looser"
    assert got["label:partially_supported"]["new_only"] == {
        "said(part_1)": True,
        "said(part_2)": True,
    }
    assert got["label:supported"]["relation"] == "equivalent"
    # the gate's default label is the first declared one: `supported` did not get looser
    gate = CliRunner().invoke(main, ["compare", str(wice), looser, "--fail-if", "looser"])
    assert gate.exit_code == 0
    gate = ["compare", str(wice), looser, "--fail-if", "looser", "--label", "partially_supported"]
    assert CliRunner().invoke(main, gate).exit_code == 1
    # one-way grounding made two-way is the same pair made stricter, not one removed and
    # one added: a replay whose judge cites less than the context backs now fails it
    both_ways = write(tmp_path, "both.proto", text.replace("~> backed(p)", "~ backed(p)"))
    doc = json.loads(
        CliRunner().invoke(main, ["compare", str(wice), both_ways, "--format", "json"]).output
    )
    assert doc["added"]["grounding"] == doc["removed"]["grounding"] == []
    got = {r["subject"]: r for r in doc["relations"]}
    pair = got["grounding:said(part_1) ~> backed(part_1)"]
    assert pair["relation"] == "stricter"
    assert pair["detail"] == "now `said(part_1) ~ backed(part_1)`"
    assert pair["old_only"] == {"said(part_1)": False, "backed(part_1)": True}
    gate = CliRunner().invoke(main, ["compare", str(wice), both_ways, "--fail-if", "stricter"])
    assert gate.exit_code == 1
    assert (
        "grounding pair `said(part_1) ~> backed(part_1)` holds under OLD where it does not "
        "under NEW (now `said(part_1) ~ backed(part_1)`)" in gate.stderr
    )
    back = CliRunner().invoke(main, ["compare", both_ways, str(wice), "--fail-if", "stricter"])
    assert back.exit_code == 0, back.stderr  # `~` to `~>` only loosens


def _verdicts(tmp_path, old_text: str, new_text: str):  # type: ignore[no-untyped-def]
    """(JSON `equivalent`, JSON `outcome`, the text's last line, exit status) of one pair."""
    old, new = write(tmp_path, "o.proto", old_text), write(tmp_path, "n.proto", new_text)
    js = CliRunner().invoke(main, ["compare", old, new, "--format", "json"])
    tx = CliRunner().invoke(main, ["compare", old, new])
    assert js.exit_code == tx.exit_code
    doc = json.loads(js.stdout)
    return doc["equivalent"], doc["outcome"], tx.stdout.splitlines()[-1], tx.exit_code


def test_an_added_or_removed_pair_or_requirement_is_different_in_json_text_and_status(
    tmp_path,
):
    # the docs: equivalent is every relation equivalent *and* nothing added or removed; a
    # removal alone was `"equivalent": true` and `equivalent` while the status was 1
    base = proto()
    extra_pair = proto(extra='atom cb : context "cb"\nground b ~ cb\n')
    no_req = base.replace('requirement r "r" {\n  holds: not x\n  addressed: true\n}\n', "")
    assert no_req != base
    for old, new in ((base, extra_pair), (extra_pair, base), (base, no_req), (no_req, base)):
        assert _verdicts(tmp_path, old, new) == (False, "different", "different", 1)
    assert _verdicts(tmp_path, base, proto()) == (True, "equivalent", "equivalent", 0)


def test_an_undecided_relation_alone_is_unknown_everywhere():
    from unmask.analysis.compare import RELATION_UNKNOWN, Comparison, Relation, text

    empty = {k: () for k in ("labels", "requirements", "grounding", "atoms")}
    rels = (Relation("constraints", "equivalent"), Relation("label:PASS", RELATION_UNKNOWN))
    c = Comparison("o", "n", "sliced", Scope(), rels, dict(empty), dict(empty))
    assert c.exit_code == 3 and c.to_json()["equivalent"] is False
    assert c.to_json()["outcome"] == "unknown"
    assert text(c).splitlines()[-1].startswith("unknown:")
    # a known difference outweighs the undecided relation, as the exit status says
    changed = Comparison("o", "n", "sliced", Scope(), rels, dict(empty, atoms=("z",)), empty)
    assert changed.exit_code == 1 and changed.outcome == "different"


def test_the_gate_says_what_it_decided_on_stderr_and_leaves_stdout_alone(tmp_path):
    old = write(tmp_path, "old.proto", proto("a and b"))
    looser = write(tmp_path, "looser.proto", proto("a or b"))
    run = CliRunner().invoke
    failed = run(main, ["compare", old, looser, "--fail-if", "looser"])
    assert failed.exit_code == 1
    assert failed.stderr == (
        "gate --fail-if looser: failed (exit 1): NEW gives `PASS` where OLD does not: "
        "a = FALSE, b = TRUE\n"
    )
    passed = run(main, ["compare", old, looser, "--fail-if", "stricter", "--format", "json"])
    assert passed.exit_code == 0
    assert passed.stderr == (
        "gate --fail-if stricter: passed (exit 0): nowhere OLD gives `PASS` where NEW does not,"
        " and no requirement, coverage or grounding check holds under OLD where it does not"
        " under NEW\n"
    )
    json.loads(passed.stdout)  # the JSON report stays whole on stdout
    plain = run(main, ["compare", old, looser])
    assert plain.stderr == ""


def test_an_undecided_gate_says_so_and_exits_3():
    from unmask.analysis.compare import Comparison, Relation, gate

    rel = Relation("label:PASS", "unknown", detail="the solver timed out")
    c = Comparison("o", "n", "z3", Scope(), (rel,), {}, {})
    assert gate(c, "looser", "PASS") == (
        3,
        "gate --fail-if looser: undecided (exit 3): the solver could not decide whether NEW "
        "gives `PASS` where OLD does not (the solver timed out)",
    )


def _gate(tmp_path: Path, old_text: str, new_text: str, fail_if: str):  # type: ignore[no-untyped-def]
    old, new = write(tmp_path, "o.proto", old_text), write(tmp_path, "n.proto", new_text)
    return CliRunner().invoke(main, ["compare", old, new, "--fail-if", fail_if])


def test_the_stricter_gate_looks_at_requirements_coverage_and_grounding(tmp_path):
    # the labels are the same in every pair here: only the checks change
    tighter = proto(holds="not x and not b")
    got = _gate(tmp_path, proto(), tighter, "stricter")
    assert got.exit_code == 1
    assert got.stderr == (
        "gate --fail-if stricter: failed (exit 1): requirement `r` holds under OLD where it "
        "does not under NEW: b = TRUE, x = FALSE\n"
    )
    # only loosening passes the stricter gate and fails the looser one
    assert _gate(tmp_path, tighter, proto(), "stricter").exit_code == 0
    assert _gate(tmp_path, tighter, proto(), "looser").exit_code == 1
    # coverage: NEW addresses the requirement in fewer worlds
    fewer = proto().replace("addressed: true", "addressed: x")
    assert _gate(tmp_path, proto(), fewer, "stricter").exit_code == 1
    assert _gate(tmp_path, fewer, proto(), "stricter").exit_code == 0


def test_a_check_added_is_stricter_and_one_removed_looser(tmp_path):
    extra = proto(extra='atom cb : context "cb"\nground b ~> cb\n')
    got = _gate(tmp_path, proto(), extra, "stricter")
    assert got.exit_code == 1 and "grounding pair `b ~> cb` holds under OLD" in got.stderr
    assert _gate(tmp_path, extra, proto(), "stricter").exit_code == 0
    assert _gate(tmp_path, extra, proto(), "looser").exit_code == 1
    no_req = proto().replace('requirement r "r" {\n  holds: not x\n  addressed: true\n}\n', "")
    assert _gate(tmp_path, no_req, proto(), "stricter").exit_code == 1
    assert _gate(tmp_path, proto(), no_req, "stricter").exit_code == 0


def test_a_pair_whose_context_side_changed_is_related_not_added_and_removed():
    new = proto(extra='atom cb : context "cb"\n').replace("ground a ~ ca", "ground a ~ ca and cb")
    c = compare(compile_source(proto(), "o"), compile_source(new, "n"), create("sliced"), Scope())
    assert c.added["grounding"] == c.removed["grounding"] == ()
    r = c.relation("grounding:a ~ ca")
    assert r is not None and r.relation == "incomparable" and r.detail == "now `a ~ ca and cb`"
