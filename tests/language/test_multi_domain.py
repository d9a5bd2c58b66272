"""Families over several domains (`atom cites(claim, passage)`), end to end.

The language (parse, ground names, descriptions, `define`, `for` and generators with several
variables), its diagnostics (field by field), its bounds (a product of domains is refused
before it is built), the formatter, the judge schema, IR JSON and SMT-LIB, the importers
and the builder, `unmask analyze` and `unmask compare`, and the shipped RAG example. Every
backend against the truth table on such protocols: ``tests/checking/test_differential.py`` and
``tests/backends/test_backend_matrix.py``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import Phase, find, settings

from tests.checking.test_differential import BACKENDS
from tests.proto_strategies import protocols
from unmask import ir
from unmask.analysis.analyze import analyze
from unmask.analysis.compare import compare
from unmask.analysis.ground import Scope
from unmask.backends import create
from unmask.backends.emit import emit_smt2
from unmask.cli.main import main
from unmask.ir.json import protocol_to_json
from unmask.ir.json_reader import protocol_from_json
from unmask.language import ast
from unmask.language.compiler import compile_source
from unmask.language.formatter import format_source
from unmask.language.parser import parse_source
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.limits import Limits
from unmask.replay.judgeschema import ShapeError, judge_schema, judge_view, read_output

ROOT = Path(__file__).resolve().parents[2]

RAG = """protocol rag "cite"
domain claim = {c1, c2}
domain passage = {p1, p2, p3}
atom cites(claim, passage) : judge   "{claim} cites {passage}"
atom backs(passage, claim) : context "{passage} backs {claim}"
atom same(claim, claim)    : judge   "{1} is {2}, {claim} as written"
define ok(claim, passage) = cites(claim, passage) implies backs(passage, claim)
for c in claim, p in passage: ground cites(c, p) ~> backs(p, c)
for c in claim, p in passage: constraint k(c, p): ok(c, p) or same(c, c)
for c in claim, p in passage: requirement r(c, p) "{c} and {p}": ok(c, p)
requirement each: all(any(cites(c, p) for p in passage) for c in claim)
requirement two: atleast(2, cites(c, p) for c in claim, p in passage)
decision pass iff true
"""


def errors(text: str, **kw) -> list:
    with pytest.raises(UnmaskError) as exc:
        compile_source(text, "t.proto", **kw)
    return exc.value.diagnostics


# --- the language ----------------------------------------------------------------------------


def test_a_family_over_two_domains_parses_to_its_domains_in_order():
    stmts = parse_source(RAG, "t.proto").statements
    fams = [s for s in stmts if isinstance(s, ast.AtomDecl)]
    assert [f.params for f in fams] == [
        ("claim", "passage"),
        ("passage", "claim"),
        ("claim", "claim"),
    ]
    assert fams[0].param_spans[1].column == 19
    (loop, *_) = [s for s in stmts if isinstance(s, ast.ForDecl)]
    assert [(b.var, b.domain) for b in loop.binds] == [("c", "claim"), ("p", "passage")]
    assert loop.body.judge == ast.Ref("cites", ("c", "p"))


def test_ground_atoms_are_named_with_every_member_the_first_varying_slowest():
    p = compile_source(RAG, "t.proto")
    names = [a.name for a in p.atoms]
    assert names[:6] == [f"cites({c}, {q})" for c in ("c1", "c2") for q in ("p1", "p2", "p3")]
    assert names[6:8] == ["backs(p1, c1)", "backs(p1, c2)"]
    assert names[12:] == ["same(c1, c1)", "same(c1, c2)", "same(c2, c1)", "same(c2, c2)"]
    desc = {a.name: a.description for a in p.atoms}
    assert desc["cites(c2, p3)"] == "c2 cites p3"
    assert desc["backs(p3, c1)"] == "p3 backs c1"
    # a domain named twice is told apart by position; its own name stays as written
    assert desc["same(c1, c2)"] == "c1 is c2, {claim} as written"


def test_one_argument_keeps_its_name_and_its_description_as_before():
    p = compile_source(
        'protocol t\ndomain d = {a}\natom f(d) : judge "{d} {1}"\ndecision pass iff f(a)\n'
    )
    assert [(a.name, a.description) for a in p.atoms] == [("f(a)", "a {1}")]


def test_for_and_definitions_over_two_domains_ground_per_combination():
    p = compile_source(RAG, "t.proto")
    assert p.grounding[4].judge == ir.Atom("cites(c2, p2)")
    assert p.grounding[4].context == ir.Atom("backs(p2, c2)")
    assert [c.name for c in p.constraints][:2] == ["k(c1, p1)", "k(c1, p2)"]
    reqs = {r.id: r for r in p.requirements}
    assert reqs["r(c2, p1)"].description == "c2 and p1"
    assert [d.name for d in p.definitions][:2] == ["ok(c1, p1)", "ok(c1, p2)"]
    assert isinstance(reqs["two"].expr, ir.Card) and len(reqs["two"].expr.args) == 6


def test_a_generator_over_two_variables_means_the_nested_generators():
    def decision(expr: str) -> ir.Expr:
        return compile_source(RAG.replace("decision pass iff true", f"decision pass iff {expr}"))

    multi = decision("any(cites(c, p) and same(c, d) for c in claim, d in claim, p in passage)")
    nested = decision(
        "any(any(any(cites(c, p) and same(c, d) for p in passage) for d in claim) for c in claim)"
    )
    assert multi.decision == nested.decision
    # counting counts combinations: not the same as nesting the counts
    two = decision("exactly(1, cites(c, p) for c in claim, p in passage)").decision
    assert isinstance(two, ir.Card) and len(two.args) == 6


def test_free_domains_and_empty_domains_check_the_text_alone():
    text = RAG.replace("domain claim = {c1, c2}", "domain claim")
    p = compile_source(text, "t.proto", {"claim": []})
    assert not [a for a in p.atoms if a.name.startswith("cites")]
    # an error inside a body is still found when a domain has no members
    bad = text.replace("ground cites(c, p) ~>", "ground cites(p, c) ~>")
    assert {d.code for d in errors(bad, domains={"claim": []})} == {"domain-mismatch"}


# --- diagnostics -----------------------------------------------------------------------------


def test_wrong_arity_names_the_domains_and_how_to_write_it():
    (d,) = errors(RAG.replace("decision pass iff true", "decision pass iff cites(c1)"))
    assert d.code == "wrong-arity"
    assert d.message == "`cites` takes 2 members (of `claim`, `passage`), but 1 is given"
    assert (d.span.line, d.span.column) == (13, 19)
    assert d.help == (
        "write `cites(…)` with a member or a variable of each of `claim`, `passage`, in order"
    )
    (d,) = errors(RAG.replace("decision pass iff true", "decision pass iff cites"))
    assert d.code == "missing-member"
    assert d.message == "`cites` is a family of atoms over `claim`, `passage`, not one atom"


def test_a_variable_in_the_wrong_position_names_the_position():
    # swapped: each position says what it expected
    d, d2 = errors(RAG.replace("ground cites(c, p) ~>", "ground cites(p, c) ~>"))
    assert (
        d2.message == "`c` ranges over `claim`, but argument 2 of `cites` is a member of `passage`"
    )
    assert d.code == "domain-mismatch"
    assert (
        d.message == "`p` ranges over `passage`, but argument 1 of `cites` is a member of `claim`"
    )
    assert (d.span.line, d.span.column) == (8, 44)
    assert d.help == "the arguments of `cites` are members of `claim`, `passage`, in order"


def test_unknown_domains_in_a_family_a_for_and_a_generator():
    text = RAG.replace("atom same(claim, claim)", "atom same(claim, clam)  ")
    text = text.replace(
        "for c in claim, p in passage: constraint", "for c in claim, p in pasage: constraint"
    )
    text = text.replace("for c in claim)\n", "for c in claims)\n")
    found = sorted((d.span.line, d.span.column, d.message, d.help) for d in errors(text))
    assert found == [
        (6, 18, "unknown domain `clam`", "did you mean `claim`?"),
        (9, 22, "unknown domain `pasage`", "did you mean `passage`?"),
        (11, 66, "unknown domain `claims`", "did you mean `claim`?"),
    ]


def test_a_variable_bound_twice_and_a_definition_naming_a_domain_twice():
    text = RAG.replace(
        "for c in claim, p in passage: constraint k(c, p): ok(c, p) or same(c, c)",
        "for c in claim, c in passage: constraint k(c): same(c, c)",
    )
    (d,) = errors(text)  # the first binding stands: its uses are not reported again
    assert (d.code, d.message) == ("duplicate-name", "the variable `c` is bound twice")
    assert (d.span.line, d.span.column) == (9, 17)
    assert d.help == "name each variable once: `for x in passage, y in passage`"
    gen = "decision pass iff any(same(c, c) for c in claim, c in claim)"
    (d,) = errors(RAG.replace("decision pass iff true", gen))
    assert (d.code, d.message) == ("duplicate-name", "the variable `c` is bound twice")
    assert (d.span.line, d.span.column) == (13, 50)
    text = RAG.replace("decision pass iff true", "define eq(claim, claim) = same(claim, claim)\n")
    (d,) = errors(text + "decision pass iff eq(c1, c2)\n")
    assert (d.code, d.message) == (
        "duplicate-name",
        "definition `eq` names the domain `claim` twice",
    )
    assert (d.span.line, d.span.column) == (13, 18)
    assert "two variables" in d.help


def test_a_member_of_the_wrong_domain_at_a_position():
    d1, d2 = errors(RAG.replace("decision pass iff true", "decision pass iff cites(p1, c1)"))
    assert (d1.code, d2.code) == ("unknown-member", "unknown-member")
    assert d1.message == "`p1` is neither a variable nor a member of `claim`"
    assert (d1.span.line, d1.span.column) == (13, 25)
    assert d2.message == "`c1` is neither a variable nor a member of `passage`"
    assert (d2.span.line, d2.span.column) == (13, 29)


# --- bounds ----------------------------------------------------------------------------------


def test_the_atoms_of_a_product_are_bounded_before_they_are_made():
    text = "protocol t\ndomain d\natom f(d, d, d) : judge\ndecision pass iff true\n"
    members = {"d": [f"m{i}" for i in range(1000)]}
    start = time.monotonic()
    (d,) = errors(text, domains=members)
    assert time.monotonic() - start < 5
    assert d.code == "limit"
    assert d.message == "the protocol has 1000000000 ground atoms, more than the limit of 100000"
    assert d.notes == ("the family `f` alone has 1000 (`d`) × 1000 (`d`) × 1000 (`d`) atoms",)
    assert d.help == "raise it with `--max-atoms`"
    assert d.span.line == 3


def test_a_generator_over_a_product_is_bounded_before_it_is_built():
    text = (
        "protocol t\ndomain d\natom x : judge\n"
        "decision pass iff any(x for a in d, b in d, c in d)\n"
    )
    members = {"d": [f"m{i}" for i in range(1000)]}
    start = time.monotonic()
    (d,) = errors(text, domains=members)
    assert time.monotonic() - start < 5
    assert d.code == "limit"
    assert d.message == "grounding makes more than 1000000 expression nodes"
    assert d.help == "raise it with `--max-expr-nodes`"
    # the same through a `for`, under a smaller budget
    loop = "protocol t\ndomain d\natom x : judge\nfor a in d, b in d: constraint k(a, b): x\n"
    loop += "decision pass iff x\n"
    small = Limits(max_expr_nodes=50)
    (d,) = errors(loop, domains={"d": [f"m{i}" for i in range(10)]}, limits=small)
    assert d.code == "limit" and "50" in d.message


# --- formatter, IR JSON, SMT-LIB, judge schema ------------------------------------------------


def test_formatting_round_trips_every_multi_domain_form():
    text = RAG.replace("requirement two:", "requirement two :").replace("  ", " ")
    formatted = format_source(text, "t.proto")
    assert "atom cites(claim, passage) : judge" in formatted
    assert "for c in claim, p in passage: ground cites(c, p) ~> backs(p, c)" in formatted
    assert "atleast(2, cites(c, p) for c in claim, p in passage)" in formatted
    assert parse_source(formatted, "t.proto") == parse_source(text, "t.proto")
    assert format_source(formatted, "t.proto") == formatted
    assert compile_source(formatted) == compile_source(text)


def test_the_round_trip_property_test_draws_families_over_two_domains():
    # the strategy behind the formatter's and the compiler's property tests. The first
    # example found is enough: shrinking it to the smallest such protocol (find's default)
    # took minutes and proves nothing more
    fast = settings(phases=[Phase.generate], max_examples=2_000, database=None)
    two = lambda c: any(len(d) == 2 for d, _ in c.ctx.families.values())  # noqa: E731
    case = find(protocols(), two, settings=fast)
    assert two(case) and "," in case.text


def test_ir_json_and_smt2_keep_the_names():
    p = compile_source(RAG, "t.proto")
    assert protocol_from_json(json.loads(json.dumps(protocol_to_json(p)))) == p
    smt = emit_smt2(p)
    assert "(declare-const |cites(c1, p2)| Bool)" in smt
    assert "|ok(c2, p3)|" in smt


def test_the_judge_schema_nests_one_object_per_domain():
    view = judge_view(RAG, "t.proto")
    cites = judge_schema(view)["properties"]["atoms"]["properties"]["cites"]
    assert cites["propertyNames"] == {"enum": ["c1", "c2", "*"]}
    assert cites["additionalProperties"]["propertyNames"] == {"enum": ["p1", "p2", "p3", "*"]}
    assert cites["additionalProperties"]["additionalProperties"] == {"$ref": "#/$defs/statement"}
    stmt = {"value": "TRUE", "quotes": ["p2"]}
    out = {"rationale": "p2", "verdict": "PASS", "atoms": {"cites": {"c1": {"p2": stmt}}}}
    read = read_output(out, view, {"claim": ["c1", "c2"], "passage": ["p1", "p2", "p3"]})
    assert [s.atom for s in read.statements] == ["cites(c1, p2)"]
    out["atoms"]["cites"]["c1"] = {"c2": stmt}
    with pytest.raises(ShapeError) as exc:
        read_output(out, view, {"claim": ["c1", "c2"], "passage": ["p1", "p2", "p3"]})
    assert exc.value.path == "output.atoms.cites.c1.c2"
    assert exc.value.reason == "`c2` is not a member of domain `passage`"
    assert exc.value.help == "the members of `passage` are `p1`, `p2`, `p3`"


MEMBERS = {"claim": ["c1", "c2"], "passage": ["p1", "p2", "p3"]}
DONE = "These are all the passages I cite."


def _read(cites: dict):  # type: ignore[no-untyped-def]
    out = {"rationale": f"I cite p2. {DONE}", "verdict": "PASS", "atoms": {"cites": cites}}
    return read_output(out, judge_view(RAG, "t.proto"), MEMBERS).statements


def test_a_list_the_judge_says_is_complete_makes_the_rest_false_by_its_quote():
    cite = {"value": "TRUE", "quotes": ["I cite p2."]}
    rest = {"value": "FALSE", "quotes": [DONE]}
    # per claim: the passages not listed for c1 are FALSE; c2 says nothing, so stays open
    got = {(s.atom, s.value, s.quotes) for s in _read({"c1": {"p2": cite, "*": rest}})}
    assert got == {
        ("cites(c1, p2)", "TRUE", ("I cite p2.",)),
        ("cites(c1, p1)", "FALSE", (DONE,)),
        ("cites(c1, p3)", "FALSE", (DONE,)),
    }
    # at the top it covers everything the object does not state, at any depth: the other
    # passages of the claim listed, and every passage of the claim not listed
    top = _read({"c1": {"p2": cite}, "*": rest})
    assert sorted(s.atom for s in top if s.value == "FALSE") == [
        "cites(c1, p1)",
        "cites(c1, p3)",
        "cites(c2, p1)",
        "cites(c2, p2)",
        "cites(c2, p3)",
    ]
    # a nearer `*` speaks for its own claim, with its own words
    near = {"value": "FALSE", "quotes": ["I cite p2."]}
    both = {s.atom: s.quotes for s in _read({"c1": {"p2": cite, "*": near}, "*": rest})}
    assert both["cites(c1, p1)"] == ("I cite p2.",) and both["cites(c2, p1)"] == (DONE,)
    # a member the judge listed keeps its own statement, even UNKNOWN
    unknown = {"value": "UNKNOWN", "quotes": []}
    kept = {s.atom: s.value for s in _read({"c1": {"p1": unknown, "*": rest}})}
    assert kept["cites(c1, p1)"] == "UNKNOWN" and kept["cites(c1, p3)"] == "FALSE"


@pytest.mark.parametrize(
    ("rest", "path", "needle"),
    [
        ({"value": "TRUE", "quotes": [DONE]}, 'output.atoms.cites.c1["*"].value', "`FALSE`"),
        ({"value": "FALSE", "quotes": []}, 'output.atoms.cites.c1["*"].quotes', "needs a quote"),
        ({"value": "FALSE"}, 'output.atoms.cites.c1["*"]', "missing `quotes`"),
    ],
)
def test_a_completeness_statement_must_be_a_quoted_false(rest, path, needle):
    with pytest.raises(ShapeError) as exc:
        _read({"c1": {"*": rest}})
    assert exc.value.path == path and needle in exc.value.reason


def test_the_schema_accepts_a_completeness_statement_and_no_other_value():
    import jsonschema

    schema = judge_schema(judge_view(RAG, "t.proto"))
    ok = {"rationale": DONE, "verdict": "PASS"}
    rest = {"value": "FALSE", "quotes": [DONE]}
    jsonschema.validate({**ok, "atoms": {"cites": {"c1": {"*": rest}, "*": rest}}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        bad = {"value": "TRUE", "quotes": [DONE]}
        jsonschema.validate({**ok, "atoms": {"cites": {"c1": {"*": bad}}}}, schema)


def test_a_misspelt_atom_or_key_gets_a_did_you_mean_and_the_names():
    view = judge_view(RAG, "t.proto")
    with pytest.raises(ShapeError) as exc:
        read_output({"rationale": "x", "verdict": "PASS", "atoms": {"cite": {}}}, view, MEMBERS)
    assert exc.value.help is not None and exc.value.help.startswith("did you mean `cites`?")
    with pytest.raises(ShapeError) as exc:
        read_output({"rationale": "x", "verdict": "PASS", "atom": {}}, view, MEMBERS)
    assert exc.value.help == ("did you mean `atoms`? the keys are `rationale`, `verdict`, `atoms`")


# --- analyze and compare ---------------------------------------------------------------------


def test_analyze_finds_an_overlap_between_two_domains(backend_name):
    text = (
        "protocol a\ndomain claim = {c1}\ndomain passage = {p1, p2}\n"
        "atom cites(claim, passage) : judge\n"
        "verdict some | all_of\n"
        "decision some iff any(cites(c, p) for c in claim, p in passage)\n"
        "decision all_of iff all(cites(c, p) for c in claim, p in passage)\n"
    )
    found = analyze(compile_source(text, "a.proto"), create(backend_name), Scope()).findings
    overlap = [f for f in found if f.code == "overlapping-decisions"]
    assert overlap, [f.code for f in found]
    atoms = {
        a for f in overlap for a in json.dumps(f.to_json()).split('"') if a.startswith("cites(")
    }
    assert atoms <= {"cites(c1, p1)", "cites(c1, p2)"} and atoms


def test_analyze_and_compare_run_on_the_example_from_the_command_line(tmp_path):
    proto = ROOT / "examples" / "rag_citations.proto"
    run = CliRunner().invoke
    out = run(main, ["analyze", str(proto), "--members", "2"])
    assert out.exit_code == 0, out.output
    assert "claim = {claim_1, claim_2} (invented); passage = {passage_1, passage_2}" in out.output
    looser = tmp_path / "looser.proto"
    looser.write_text(
        proto.read_text(encoding="utf-8").replace(
            "decision supported iff all(cited(c) for c in claim)",
            "decision supported iff any(cited(c) for c in claim)",
        ),
        encoding="utf-8",
    )
    out = run(main, ["compare", str(proto), str(looser), "--format", "json", "--members", "2"])
    doc = json.loads(out.output)
    rel = next(r for r in doc["relations"] if r["subject"] == "label:supported")
    assert rel["relation"] == "looser"
    assert all(k.startswith("cites(") for k in rel["new_only"])
    assert any(v for v in rel["new_only"].values())


def test_compare_on_every_backend_names_the_changed_grounding_pairs():
    old = compile_source(RAG, "o")
    two_way = "ground cites(c, p) ~ backs(p, c)"
    new = compile_source(RAG.replace("ground cites(c, p) ~> backs(p, c)", two_way), "n")
    for backend in BACKENDS:
        doc = compare(old, new, create(backend), Scope()).to_json()
        assert doc["equivalent"] is False
        # each pair made two-way is the same pair made stricter, not one removed, one added
        assert doc["added"]["grounding"] == doc["removed"]["grounding"] == []
        pair = next(
            r
            for r in doc["relations"]
            if r["subject"] == "grounding:cites(c1, p2) ~> backs(p2, c1)"
        )
        assert pair["relation"] == "stricter"
        witness = pair["old_only"]
        assert (witness["cites(c1, p2)"], witness["backs(p2, c1)"]) == (False, True)
        others = [r for r in doc["relations"] if not r["subject"].startswith("grounding:")]
        assert all(r["relation"] == "equivalent" for r in others)


# --- the shipped example -----------------------------------------------------------------------


def test_the_rag_example_flags_the_citation_that_does_not_back_its_claim():
    out = CliRunner().invoke(
        main, ["check", str(ROOT / "examples" / "rag_citations.json"), "--format", "json"]
    )
    assert out.exit_code == 1, out.output
    doc = json.loads(out.output)
    assert doc["overall"] == "VIOLATED"
    refuted = [g for g in doc["grounding"] if g["status"] == "REFUTED"]
    assert [(g["judge"], g["context"]) for g in refuted] == [("cites(date, p2)", "backs(p2, date)")]
    assert doc["verdict"]["status"] == "ENTAILED"


def test_the_builder_names_members_of_two_domains_and_corrects_a_missing_space():
    from unmask.replay.builder import ReplayBuilder

    b = ReplayBuilder(
        ROOT / "examples" / "rag_citations.proto",
        sources={"rationale": "I cite p2 for the date.", "context": "[p2] It is in Sydney."},
        verdict="supported",
        domains={"claim": ["date"], "passage": ["p2"]},
    )
    b.annotate("cites(date, p2)", True, quote="I cite p2 for the date.")
    with pytest.raises(UnmaskError) as exc:
        b.annotate("backs(p2,date)", False, quote="It is in Sydney.")
    (d,) = exc.value.diagnostics
    assert (d.code, d.message) == ("unknown-atom", "unknown atom `backs(p2,date)`")
    assert d.help == "did you mean `backs(p2, date)`?"
    b.annotate("backs(p2, date)", False, quote="It is in Sydney.")
    built = b.build()
    assert [a["atom"] for a in built["annotations"]] == ["cites(date, p2)", "backs(p2, date)"]


def test_a_structured_output_over_two_domains_imports_into_a_replay(tmp_path):
    rationale = "For the date I cite passage p2. I used only the retrieved passages."
    rec = {
        "id": "r1",
        "judge": "judge-x",
        "sources": {"response": "It opened in 1932.", "context": "[p2] It is in Sydney."},
        "domains": {"claim": ["date"], "passage": ["p1", "p2"]},
        "output": {
            "rationale": rationale,
            "verdict": "supported",
            "atoms": {
                "cites": {
                    "date": {
                        "p2": {"value": "TRUE", "quotes": ["For the date I cite passage p2."]},
                        "p1": {"value": "UNKNOWN", "quotes": []},
                    }
                },
                "external": {"value": "FALSE", "quotes": ["I used only the retrieved passages."]},
            },
        },
    }
    src = tmp_path / "outputs.jsonl"
    src.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    proto = ROOT / "examples" / "rag_citations.proto"
    out = tmp_path / "o"
    res = CliRunner().invoke(
        main, ["import", "structured", str(src), "--out", str(out), "--protocol", str(proto)]
    )
    assert res.exit_code == 0, res.output
    replay = json.loads((out / "r1.json").read_text(encoding="utf-8"))
    values = {a["atom"]: a["value"] for a in replay["annotations"]}
    assert values["cites(date, p2)"] == "TRUE" and values["cites(date, p1)"] == "UNKNOWN"
    report = CliRunner().invoke(main, ["check", str(out / "r1.json"), "--format", "json"])
    doc = json.loads(report.stdout)
    assert doc["verdict"]["status"] == "ENTAILED"
    pair = next(g for g in doc["grounding"] if g["judge"] == "cites(date, p2)")
    assert pair["status"] == "UNDERDETERMINED"  # `backs(p2, date)` is for a reader to annotate


def test_the_audit_summary_groups_the_members_of_every_position():
    from unmask.batch.summary import family_key

    assert family_key("grounding:cites(c1, p2)~>backs(p2, c1)") == (
        "grounding:cites(*,*)~>backs(*,*)"
    )
    assert family_key("said(joined)") == "said(*)"


def _rag_mapping(tmp_path: Path, over) -> Path:
    (tmp_path / "rag_citations.proto").write_text(
        (ROOT / "examples" / "rag_citations.proto").read_text(encoding="utf-8"), encoding="utf-8"
    )
    m = {
        "protocol": "rag_citations.proto",
        "id": "id",
        "sources": {"rationale": "rationale", "context": "passages"},
        "verdict": {"field": "label"},
        "domains": {"claim": {"field": "claims"}, "passage": ["p1", "p2"]},
        "annotations": [
            {
                "for": over,
                "atom": "cites({claim}, {passage})",
                "quote": "why.{claim}",
                "value": {"field": "cites.{claim}.{passage}", "map": {"true": "TRUE"}},
            }
        ],
    }
    path = tmp_path / "mapping.json"
    path.write_text(json.dumps(m), encoding="utf-8")
    return path


def test_the_jsonl_importer_repeats_an_annotation_for_each_pair_of_members(tmp_path):
    rec = {
        "id": "r1",
        "label": "supported",
        "rationale": "The date comes from p2.",
        "passages": "[p1] x\n[p2] y",
        "claims": ["date"],
        "why": {"date": "The date comes from p2."},
        "cites": {"date": {"p1": None, "p2": True}},
    }
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    mapping = _rag_mapping(tmp_path, ["claim", "passage"])
    out = tmp_path / "o"
    run = CliRunner().invoke
    res = run(main, ["import", "jsonl", str(src), "--mapping", str(mapping), "--out", str(out)])
    assert res.exit_code == 1 and "skipped 1" in res.stderr  # `null` is not in the map
    rec["cites"]["date"]["p1"] = "UNKNOWN"
    src.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    mapping = _rag_mapping(tmp_path, ["claim", "passage"])
    raw = json.loads(mapping.read_text(encoding="utf-8"))
    raw["annotations"][0]["value"]["map"]["UNKNOWN"] = "UNKNOWN"
    mapping.write_text(json.dumps(raw), encoding="utf-8")
    res = run(main, ["import", "jsonl", str(src), "--mapping", str(mapping), "--out", str(out)])
    assert res.exit_code == 0, res.stderr
    replay = json.loads((out / "r1.json").read_text(encoding="utf-8"))
    got = {a["atom"]: a["value"] for a in replay["annotations"]}
    assert got == {"cites(date, p1)": "UNKNOWN", "cites(date, p2)": "TRUE"}


@pytest.mark.parametrize(
    ("over", "path", "message"),
    [
        (["claim", "pasage"], "annotations[0].for[1]", "`pasage` is not a domain"),
        (["claim", "claim"], "annotations[0].for[1]", "`claim` is named twice"),
        ([], "annotations[0].for", "expected a domain or a non-empty array of them"),
    ],
)
def test_the_jsonl_mapping_checks_each_domain_it_repeats_over(tmp_path, over, path, message):
    mapping = _rag_mapping(tmp_path, over)
    src = tmp_path / "in.jsonl"
    src.write_text("{}\n", encoding="utf-8")
    res = CliRunner().invoke(
        main, ["import", "jsonl", str(src), "--mapping", str(mapping), "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 4
    assert res.stderr.startswith(f"{mapping}: {path}: error: ") and message in res.stderr
