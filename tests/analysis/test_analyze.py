"""`unmask analyze`: each finding code on a minimal protocol that triggers it and one that
does not, canonical witnesses the same on every backend, the shipped examples clean, the
scope stated, SARIF valid and pointing into the `.proto` file, exit statuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.render.test_render_sarif import validate
from unmask import ir
from unmask.analysis.analyze import analyze
from unmask.analysis.findings import CODES
from unmask.analysis.ground import Scope, load
from unmask.backends import create
from unmask.cli.main import main
from unmask.ir import Atom, AtomDecl, Constraint, Decision, Protocol, mk_and, mk_not, mk_ref
from unmask.ir.json import dumps, protocol_to_json
from unmask.language.compiler import compile_source

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ("sliced", "z3", "pysat", "truthtable")

HEAD = 'protocol p "a protocol"\n'
CLEAN = HEAD + (
    'atom j : judge "j"\natom c : context "c"\natom x : procedure "x"\n'
    'decision pass iff j\nrequirement r "r" {\n  holds: not x\n  addressed: true\n}\n'
    "ground j ~ c\n"
)


def findings(text: str, backend: str = "sliced"):
    p = compile_source(text, "t.proto")
    return analyze(p, create(backend), Scope(), "t.proto").findings


def codes(text_or_protocol, backend: str = "sliced") -> list[str]:
    if isinstance(text_or_protocol, str):
        return [f.code for f in findings(text_or_protocol, backend)]
    result = analyze(text_or_protocol, create(backend), Scope(), "t.json")
    return [f.code for f in result.findings]


def labelled(decisions, constraints=(), atoms=("x", "y"), grounded=True) -> Protocol:
    """A protocol with declared labels over judge atoms (grounded unless told not)."""
    decls = tuple(AtomDecl(a, "judge") for a in atoms)
    decls += tuple(AtomDecl(f"c_{a}", "context") for a in atoms)
    ground = tuple(ir.GroundPair(a, f"c_{a}") for a in atoms) if grounded else ()
    return Protocol(
        "lab",
        "",
        decls,
        tuple(Constraint(f"k{i}", e) for i, e in enumerate(constraints)),
        None,
        (),
        ground,
        labels=tuple(label for label, _ in decisions),
        decisions=tuple(Decision(label, e) for label, e in decisions),
    )


X, Y = Atom("x"), Atom("y")


def test_the_clean_protocol_has_no_finding():
    assert codes(CLEAN) == []


def test_every_code_is_documented_with_a_severity():
    doc = (ROOT / "docs" / "analysis.md").read_text(encoding="utf-8")
    assert len(CODES) >= 5
    for code, (severity, _) in CODES.items():
        assert severity in ("error", "warning", "note")
        assert f"`{code}`" in doc


# --- contradictory-protocol -----------------------------------------------------------------


def test_contradictory_constraints():
    text = CLEAN + "constraint bad: x and not x\n"
    assert codes(text) == ["contradictory-protocol"]


def test_contradictory_decisions_with_labels():
    # `a` and `b` both hold when x does and neither when it does not: never exactly one
    p = labelled([("a", X), ("b", X)])
    assert codes(p) == ["contradictory-protocol"]
    assert "contradictory-protocol" not in codes(labelled([("a", X), ("b", mk_not(X))]))


# --- unreachable-label, constant-decision ------------------------------------------------------


def test_unreachable_label_and_constant_decision():
    text = CLEAN.replace("decision pass iff j", "decision pass iff j and not j")
    assert codes(text) == ["unreachable-label", "constant-decision"]
    f = findings(text)[0]
    assert f.subject == "label:PASS" and f.span.line == 5


def test_constant_decision_under_the_constraints():
    # the constraint fixes j, so the decision is always true and FAIL never happens
    text = CLEAN + "constraint fixed: j\n"
    assert codes(text) == ["unreachable-label", "constant-decision"]
    assert findings(text)[0].subject == "label:FAIL"
    assert "constant-decision" not in codes(CLEAN)


def test_unreachable_label_with_labels():
    p = labelled([("a", mk_and([X, Y])), ("b", X), ("c", None)])
    found = analyze(p, create("sliced"), Scope()).findings
    assert [f.subject for f in found if f.code == "unreachable-label"] == ["label:a"]
    clean = labelled([("a", mk_and([X, Y])), ("b", mk_and([X, mk_not(Y)])), ("c", None)])
    assert codes(clean) == []


# --- overlapping-decisions, uncovered-assignment -----------------------------------------------


def test_overlapping_decisions_with_a_canonical_witness():
    p = labelled([("a", X), ("b", Y), ("c", None)])
    for backend in BACKENDS:
        found = [
            f
            for f in analyze(p, create(backend), Scope()).findings
            if f.code == "overlapping-decisions"
        ]
        assert len(found) == 1
        assert found[0].witness == (("x", True), ("y", True))
    assert "overlapping-decisions" not in codes(
        labelled([("a", X), ("b", mk_and([mk_not(X), Y])), ("c", None)])
    )


def test_uncovered_assignment_witness_is_the_least_one():
    p = labelled([("a", X), ("b", mk_and([mk_not(X), Y]))])
    for backend in BACKENDS:
        found = [
            f
            for f in analyze(p, create(backend), Scope()).findings
            if f.code == "uncovered-assignment"
        ]
        assert found[0].witness == (("x", False), ("y", False))
    assert "uncovered-assignment" not in codes(labelled([("a", X), ("b", mk_not(X))]))
    # `otherwise` covers every assignment by construction
    assert "uncovered-assignment" not in codes(labelled([("a", X), ("b", None)]))


def test_definitions_are_read_through():
    both = mk_ref("both", mk_and([X, Y]))
    p = labelled([("a", both), ("b", mk_not(both))])
    assert codes(p) == []


# --- requirements -----------------------------------------------------------------------------


def req(holds: str, addressed: str | None = "true", rid: str = "q") -> str:
    extra = f"\n  addressed: {addressed}" if addressed else ""
    return f'requirement {rid} "q" {{\n  holds: {holds}{extra}\n}}\n'


def test_vacuous_requirement():
    assert codes(CLEAN + req("x or not x")) == ["vacuous-requirement"]
    assert codes(CLEAN + req("x or not x").replace("x or not x", "x")) == []


def test_impossible_requirement_is_an_error(tmp_path):
    assert codes(CLEAN + req("x and not x")) == ["impossible-requirement"]
    path = tmp_path / "p.proto"
    path.write_text(CLEAN + req("x and not x"), encoding="utf-8")
    result = CliRunner().invoke(main, ["analyze", str(path)])
    assert result.exit_code == 1, result.output
    assert (
        f"{path}:11:1: error[impossible-requirement]: requirement `q` holds under no assignment"
        in result.output
    )


def test_never_addressed():
    assert codes(CLEAN + req("x", "x and not x")) == ["never-addressed"]
    assert codes(CLEAN + req("x", "x")) == []


def test_redundant_requirement_one_way_and_both_ways():
    k = 'constraint order: x implies y\natom y : procedure "y"\n'
    text = CLEAN + k + req("not y", rid="q1") + req("not x", rid="q2")
    found = [f for f in findings(text) if f.subject == "requirements:q1,q2"]
    assert len(found) == 1
    assert "`q2` holds whenever `q1` holds" in found[0].message
    same = CLEAN + req("not x", rid="q1") + req("not (x and x)", rid="q2")
    found = [f for f in findings(same) if f.subject == "requirements:q1,q2"]
    assert len(found) == 1 and "exactly when" in found[0].message
    independent = CLEAN + k + req("not y", rid="q1") + req("not j", rid="q2")
    assert not [f for f in findings(independent) if f.subject == "requirements:q1,q2"]


# --- atoms ------------------------------------------------------------------------------------


def test_ungrounded_decision_atom():
    text = CLEAN.replace("ground j ~ c\n", "") + 'atom k : judge "k"\nground k ~ c\n'
    assert codes(text) == ["ungrounded-decision-atom"]
    assert findings(text)[0].subject == "atom:j"
    assert "ungrounded-decision-atom" not in codes(CLEAN)
    p = labelled([("a", X), ("b", None)], atoms=("x",), grounded=False)
    assert "ungrounded-decision-atom" in codes(p)


def test_unused_atom():
    text = CLEAN + 'atom lonely : context "nobody reads me"\n'
    assert codes(text) == ["unused-atom"]
    f = findings(text)[0]
    assert f.span.line == 11 and f.severity == "note"


# --- examples, scope, formats -----------------------------------------------------------------


EXAMPLE_PROTOS = sorted(p.name for p in (ROOT / "examples").glob("*.proto"))


def test_the_shipped_examples_are_found():
    # an empty list would make the test below one skipped case, not a failure
    assert len(EXAMPLE_PROTOS) >= 3


@pytest.mark.parametrize("name", EXAMPLE_PROTOS)
def test_every_shipped_example_is_clean(name):
    (loaded,) = load([str(ROOT / "examples" / name)])
    assert analyze(loaded.protocol, create("sliced"), loaded.scope).findings == ()


def test_member_names_avoid_every_identifier():
    from unmask.plumbing.names import invent_members

    assert invent_members(["claim"], 2, ["x"]) == {"claim": ("claim_1", "claim_2")}
    assert invent_members(["claim"], 2, ["claim_2"]) == {"claim": ("claim__1", "claim__2")}
    # a later domain avoids an earlier one's names (`a_` + `_1` is `a__1`, made for `a`)
    assert invent_members(["a", "a_"], 1, ["a_1"]) == {"a": ("a__1",), "a_": ("a___1",)}


def test_the_scope_is_stated_and_members_do_not_clash(tmp_path):
    src = (ROOT / "examples" / "factual_claims_family.proto").read_text(encoding="utf-8")
    src = src.replace("atom external", 'atom claim_1 : procedure "clash"\natom external')
    path = tmp_path / "fam.proto"
    path.write_text(src + 'requirement q "q" {\n  holds: not claim_1\n}\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["analyze", str(path), "--members", "2"])
    assert "claim = {claim__1, claim__2} (invented)" in result.output
    assert "2 members per free domain" in result.output
    out = CliRunner().invoke(main, ["analyze", str(path), "--domain", "claim=a,b", "-f"])
    result = CliRunner().invoke(
        main, ["analyze", str(path), "--domain", "claim=a", "--format", "json"]
    )
    scope = json.loads(result.output)["scope"]
    assert scope == {"domains": {"claim": ["a"]}, "invented": [], "members": 3, "bounded": False}
    assert out.exit_code == 2


def test_ir_json_input_and_sarif(tmp_path):
    p = labelled([("a", X), ("b", Y), ("c", None)])
    path = tmp_path / "lab.json"
    path.write_text(dumps(protocol_to_json(p)) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["analyze", str(path), "--format", "json"])
    assert result.exit_code == 1
    doc = json.loads(result.output)
    assert [f["code"] for f in doc["findings"]] == ["overlapping-decisions"]
    assert doc["findings"][0]["witness"] == {"x": True, "y": True}


def test_sarif_is_valid_and_points_into_the_proto(tmp_path):
    path = tmp_path / "p.proto"
    path.write_text(CLEAN + req("x and not x") + 'atom lonely : context "l"\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["analyze", str(path), "--format", "sarif"])
    assert result.exit_code == 1
    log = json.loads(result.output)
    validate(log)
    results = log["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["impossible-requirement", "unused-atom"]
    assert [r["level"] for r in results] == ["error", "note"]
    region = results[0]["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (11, 1)
    rules = [r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]]
    assert rules == list(CODES)


def test_sarif_of_a_protocol_that_does_not_compile_holds_each_error(tmp_path):
    # code scanning needs its file even when the protocol is broken
    path = tmp_path / "broken.proto"
    path.write_text("protocol p\natom a judge\natom b : judge\ndecision pass iff c\n")
    result = CliRunner().invoke(main, ["analyze", str(path), "--format", "sarif"])
    assert result.exit_code == 4
    log = json.loads(result.stdout)
    validate(log)
    results = log["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["syntax"]
    region = results[0]["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (2, 8)
    assert "expected `:`" in results[0]["message"]["text"]
    assert "expected `:`" in result.stderr  # and the message, as for every format
    # a name error too, once the text parses
    path.write_text("protocol p\natom b : judge\ndecision pass iff c\n")
    log = json.loads(CliRunner().invoke(main, ["analyze", str(path), "--format", "sarif"]).stdout)
    validate(log)
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["unknown-name"]
    # text keeps stdout empty
    text = CliRunner().invoke(main, ["analyze", str(path)])
    assert text.exit_code == 4 and text.stdout == ""


def test_witnesses_agree_on_every_backend():
    text = CLEAN + req("x and not x") + req("x or not x", rid="q2")
    first = [f.to_json() for f in findings(text, "sliced")]
    assert {f["code"] for f in first} >= {"impossible-requirement"}
    for backend in BACKENDS[1:]:
        assert [f.to_json() for f in findings(text, backend)] == first


def test_invalid_input_and_usage(tmp_path):
    bad = tmp_path / "bad.proto"
    bad.write_text(HEAD + "decision pass iff nothing\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["analyze", str(bad)])
    assert result.exit_code == 4
    assert "bad.proto:2:" in result.output and "^" in result.output
    assert CliRunner().invoke(main, ["analyze", str(tmp_path / "missing.proto")]).exit_code == 2
    good = tmp_path / "good.proto"
    good.write_text(CLEAN, encoding="utf-8")
    assert CliRunner().invoke(main, ["analyze", str(good), "--backend", "nope"]).exit_code == 2
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema": "unmask.protocol/1"}', encoding="utf-8")
    assert CliRunner().invoke(main, ["analyze", str(broken)]).exit_code == 4


class _Undecided:
    """A backend that gives up on every query (a solver timeout)."""

    name = "undecided"
    option = None

    def open(self, parts, atoms):
        from unmask.backends.base import Session, Unknown

        class S(Session):
            def check(self, query=None, *, enabled=None, assume=None, want=()):
                self.calls += 1
                return Unknown("timeout")

        return S()


def test_an_undecided_question_is_reported_as_undecided():
    found = analyze(compile_source(CLEAN, "t.proto"), _Undecided(), Scope()).findings
    assert found and all(not f.decided for f in found)
    assert [f.code for f in found] == ["contradictory-protocol"]
    assert found[0].severity == "note" and not found[0].is_error


# --- size (figures in docs/performance.md; no wall-clock is asserted) -----------------------


def test_a_200_atom_protocol():
    (loaded,) = load([str(ROOT / "tests" / "data" / "analysis" / "large.proto")])
    assert len(loaded.protocol.atoms) == 200
    result = analyze(loaded.protocol, create("sliced"), loaded.scope)
    # steps are chained (s0 implies s1 …), so doing a later pair implies doing an earlier one
    assert {f.code for f in result.findings} == {"redundant-requirement"}
    assert len(result.findings) == 10
    assert "`step0` holds whenever `step2` holds" in result.findings[0].message


def test_a_2000_member_family_at_domain():
    members = [f"c{i}" for i in range(2000)]
    path = str(ROOT / "tests" / "data" / "analysis" / "family.proto")
    (loaded,) = load([path], domains={"claim": members})
    assert len(loaded.protocol.atoms) == 10000
    assert loaded.scope.to_json()["bounded"] is False
    assert analyze(loaded.protocol, create("sliced"), loaded.scope).findings == ()


# --- `check` and `audit` point at `analyze` when a protocol contradicts itself ----------------


def _contradictory_replay(tmp_path: Path) -> Path:
    proto = (ROOT / "examples" / "factual_claims.proto").read_text(encoding="utf-8")
    proto += "constraint yes: j_cto\nconstraint no: not j_cto\n"
    (tmp_path / "factual_claims.proto").write_text(proto, encoding="utf-8")
    replay = tmp_path / "case_b.json"
    replay.write_bytes((ROOT / "examples" / "case_b.json").read_bytes())
    return replay


def test_check_and_audit_mention_analyze_on_an_inconsistent_protocol(tmp_path):
    replay = _contradictory_replay(tmp_path)
    hint = "`unmask analyze` shows why the protocol contradicts itself"
    checked = CliRunner().invoke(main, ["check", str(replay)])
    assert checked.exit_code == 3 and hint in checked.output
    audited = CliRunner().invoke(main, ["audit", str(replay), "--out", str(tmp_path / "r.jsonl")])
    assert hint in audited.output
    fine = CliRunner().invoke(main, ["check", str(ROOT / "examples" / "case_b.json")])
    assert hint not in fine.output
    result = CliRunner().invoke(main, ["analyze", str(tmp_path / "factual_claims.proto")])
    assert result.exit_code == 1 and "contradictory-protocol" in result.output


def test_a_replay_input(tmp_path):
    by_path = CliRunner().invoke(main, ["analyze", str(ROOT / "examples" / "case_b.json")])
    assert by_path.exit_code == 4 and "analyse `factual_claims.proto` itself" in by_path.output
    inline = json.loads((ROOT / "examples" / "case_b.json").read_text(encoding="utf-8"))
    (loaded,) = load([str(ROOT / "examples" / "factual_claims.proto")])
    inline["protocol"] = protocol_to_json(loaded.protocol)
    path = tmp_path / "inline.json"
    path.write_text(json.dumps(inline), encoding="utf-8")
    result = CliRunner().invoke(main, ["analyze", str(path)])
    assert result.exit_code == 0 and "no findings" in result.output


def test_too_many_linked_requirement_pairs_are_undecided_not_clean():
    # one constraint links every step, so every pair must be compared
    steps = [f"s{i}" for i in range(5)]
    text = CLEAN + "".join(f'atom {s} : procedure "{s}"\n' for s in steps)
    text += f"constraint linked: atmost(4, {', '.join(steps)})\n"
    text += "".join(req(f"not {s}", rid=f"q{s}") for s in steps)
    p = compile_source(text, "t.proto")
    full = analyze(p, create("sliced"), Scope()).findings
    assert full == ()  # every pair compared: no requirement implies another
    capped = analyze(p, create("sliced"), Scope(), max_pairs=3).findings
    undecided = [f for f in capped if not f.decided]
    assert [f.code for f in undecided] == ["redundant-requirement"]
    assert "only the first 3" in undecided[0].detail


# --- labelled protocols written in `.proto` ----------------------------------------------------

WICE = ROOT / "tests" / "data" / "analysis" / "wice.proto"


def test_a_labelled_protocol_with_definitions_and_one_way_grounding_is_clean():
    (loaded,) = load([str(WICE)])
    assert loaded.protocol.labels == ("supported", "partially_supported", "not_supported")
    assert analyze(loaded.protocol, create("sliced"), loaded.scope).findings == ()


def test_overlapping_labelled_decisions_point_at_the_decision_line(tmp_path):
    text = WICE.read_text(encoding="utf-8").replace(
        "iff some_said and not all_said", "iff some_said"
    )
    path = tmp_path / "overlap.proto"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["analyze", str(path), "--members", "2"])
    assert result.exit_code == 1
    assert f"{path}:15:1: error[overlapping-decisions]" in result.output
    assert "witness: said(part_1) = TRUE, said(part_2) = TRUE" in result.output
    assert "error[unreachable-label]: label `supported`" in result.output


def test_uncovered_labelled_decisions(tmp_path):
    text = WICE.read_text(encoding="utf-8").replace(
        "decision not_supported otherwise", "decision not_supported iff false"
    )
    path = tmp_path / "uncovered.proto"
    path.write_text(text, encoding="utf-8")
    doc = json.loads(CliRunner().invoke(main, ["analyze", str(path), "--format", "json"]).output)
    codes_ = [f["code"] for f in doc["findings"]]
    assert "uncovered-assignment" in codes_
    found = next(f for f in doc["findings"] if f["code"] == "uncovered-assignment")
    assert found["witness"] == {"said(part_1)": False, "said(part_2)": False, "said(part_3)": False}


TWO_DOMAINS = """protocol two "t"
domain claim
domain passage
atom said(claim) : judge "the judge says {claim}"
atom read(passage) : context "{passage} was read"
verdict yes | maybe | no
decision yes iff all(said(c) for c in claim)
decision maybe iff any(read(p) for p in passage)
decision no otherwise
"""


def test_each_free_domain_gets_members_named_after_it(tmp_path):
    """A witness over two domains tells their members apart: `claim_1`, `passage_1`."""
    path = tmp_path / "two.proto"
    path.write_text(TWO_DOMAINS, encoding="utf-8")
    (loaded,) = load([str(path)], members=2)
    assert loaded.scope.domains == (
        ("claim", ("claim_1", "claim_2")),
        ("passage", ("passage_1", "passage_2")),
    )
    doc = json.loads(
        CliRunner()
        .invoke(main, ["analyze", str(path), "--members", "2", "--format", "json"])
        .output
    )
    (overlap,) = [f for f in doc["findings"] if f["code"] == "overlapping-decisions"]
    assert set(overlap["witness"]) == {
        "said(claim_1)",
        "said(claim_2)",
        "read(passage_1)",
        "read(passage_2)",
    }


def test_invented_members_of_two_domains_never_share_a_name(tmp_path):
    # `a` cannot take `a_1` (the file uses it) and moves to `a__1`, which `a_` would have
    # taken: `a_` moves on to `a___1`
    path = tmp_path / "clash.proto"
    path.write_text(
        'protocol p "p"\ndomain a\ndomain a_\natom a_1 : judge "x"\n'
        'atom s(a) : judge "s {a}"\natom t(a_) : context "t {a_}"\n'
        "decision pass iff a_1 and all(s(x) for x in a) and any(t(y) for y in a_)\n",
        encoding="utf-8",
    )
    (loaded,) = load([str(path)], members=1)
    assert loaded.scope.domains == (("a", ("a__1",)), ("a_", ("a___1",)))
