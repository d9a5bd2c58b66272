"""The language of labelled verdicts, definitions and one-way grounding: parsing, the
ground IR it compiles to, every compile error (code and place), the formatter and the
SMT-LIB / DIMACS lowering (read back by z3 and by a SAT solver, against the IR's own
evaluator)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings

from tests.helpers import dimacs_models, dimacs_vars, smt2_models
from tests.proto_strategies import protocols
from unmask import ir
from unmask.backends.emit import emit_dimacs, emit_smt2, label_key, smt2_symbols
from unmask.ir.json import protocol_to_json
from unmask.ir.json_reader import protocol_from_json
from unmask.ir.text import expr_text
from unmask.language import ast
from unmask.language.compiler import compile_source
from unmask.language.formatter import format_source
from unmask.language.parser import parse_source
from unmask.plumbing.diagnostics import UnmaskError, render

WICE = """protocol wice "Is the claim supported by the evidence?"
domain part
atom said(part)   : judge   "The judge asserts part {part} of the claim is supported"
atom backed(part) : context "The evidence supports part {part} of the claim"

define some_said = any(said(p) for p in part)
define all_said  = all(said(p) for p in part)
define ok(part)  = said(part) and backed(part)

verdict supported | partially_supported | not_supported
decision supported iff all_said
decision partially_supported iff some_said and not all_said
decision not_supported otherwise

constraint c: ok(a) implies some_said
for p in part: ground said(p) ~> backed(p)
ground some_said ~ any(backed(p) for p in part)
"""
PARTS = {"part": ["a", "b"]}
HEAD = 'protocol p "t"\natom a : judge\natom b : context\natom x : procedure\n'


def compiled(text: str = WICE, domains=None) -> ir.Protocol:
    if domains is None and "domain part" in text:
        domains = PARTS
    return compile_source(text, "t.proto", domains)


def errors(text: str, domains=None) -> list:
    with pytest.raises(UnmaskError) as info:
        compile_source(text, "t.proto", domains)
    return list(info.value.diagnostics)


# --- parsing --------------------------------------------------------------------------------


def test_every_new_statement_parses_to_its_node():
    stmts = parse_source(WICE).statements
    verdict = next(s for s in stmts if isinstance(s, ast.VerdictDecl))
    assert verdict.labels == ("supported", "partially_supported", "not_supported")
    assert verdict.label_spans[1].column == 21
    decisions = [s for s in stmts if isinstance(s, ast.DecisionDecl)]
    assert [d.label for d in decisions] == list(verdict.labels)
    assert decisions[2].expr is None  # otherwise
    defines = [s for s in stmts if isinstance(s, ast.DefineDecl)]
    assert [(d.name, d.params) for d in defines] == [
        ("some_said", ()),
        ("all_said", ()),
        ("ok", ("part",)),
    ]
    grounds = [s for s in stmts if isinstance(s, ast.GroundDecl)]
    grounds += [s.body for s in stmts if isinstance(s, ast.ForDecl)]
    assert sorted(g.direction for g in grounds) == ["~", "~>"]
    plain = next(g for g in grounds if g.direction == "~")
    assert plain.judge == ast.Ref("some_said")
    assert isinstance(plain.context, ast.Call)


def test_binary_decision_keeps_its_form():
    (d,) = [s for s in parse_source(HEAD + "decision pass iff a\n").statements[4:]]
    assert d == ast.DecisionDecl(ast.Ref("a"))
    assert d.label is None


# --- the ground IR --------------------------------------------------------------------------


def test_wice_compiles_to_labels_decisions_definitions_and_one_way_grounding():
    p = compiled()
    assert p.declared_labels and p.decision is None
    assert p.labels == ("supported", "partially_supported", "not_supported")
    assert [(d.label, d.expr is None) for d in p.decisions] == [
        ("supported", False),
        ("partially_supported", False),
        ("not_supported", True),
    ]
    assert p.decisions[0].expr == ir.Ref(
        "all_said", ir.mk_and([ir.Atom("said(a)"), ir.Atom("said(b)")])
    )
    # used definitions only, in the order written, a family's members at their ground name
    assert [d.name for d in p.definitions] == ["some_said", "all_said", "ok(a)"]
    assert expr_text(p.definitions[2].expr) == "said(a) and backed(a)"
    assert expr_text(p.constraints[0].expr) == "ok(a) implies some_said"
    assert expr_text(p.constraints[0].expr, expand=True) == (
        "said(a) and backed(a) implies said(a) or said(b)"
    )
    assert [(expr_text(g.judge), g.direction, expr_text(g.context)) for g in p.grounding] == [
        ("said(a)", "~>", "backed(a)"),
        ("said(b)", "~>", "backed(b)"),
        ("some_said", "~", "backed(a) or backed(b)"),
    ]
    # D_L for `otherwise` is the negation of the others
    world = {"said(a)": False, "said(b)": False, "backed(a)": True, "backed(b)": True}
    assert ir.evaluate(p.decision_for("not_supported"), world)


def test_definitions_come_after_those_they_use_and_unused_ones_are_left_out():
    text = HEAD + (
        "define top = mid and a\ndefine mid = low or a\ndefine low = not a\n"
        "define unused = b\nverdict yes | no\ndecision yes iff top\ndecision no otherwise\n"
    )
    p = compiled(text, None)
    assert [d.name for d in p.definitions] == ["low", "mid", "top"]
    assert "unused" not in expr_text(p.decisions[0].expr)


def test_family_definition_over_a_generator_and_a_for_variable():
    text = (
        "protocol p\ndomain d\natom s(d) : judge\natom t(d) : context\n"
        "define both(d) = s(d) and t(d)\n"
        "decision pass iff any(both(x) for x in d)\n"
        "for y in d: constraint k(y): both(y) implies s(y)\n"
    )
    p = compiled(text, {"d": ["m", "n"]})
    assert expr_text(p.decision) == "both(m) or both(n)"
    assert [c.name for c in p.constraints] == ["k(m)", "k(n)"]
    assert [d.name for d in p.definitions] == ["both(m)", "both(n)"]
    assert not p.declared_labels and p.decisions == ()


def test_binary_protocols_compile_as_before():
    p = compiled(HEAD + "decision pass iff a\nground a ~ b\n", None)
    assert p.labels == ir.BINARY_LABELS and p.decisions == () and p.definitions == ()
    assert p.grounding == (ir.GroundPair("a", "b"),)
    assert p.decision == ir.Atom("a")


def test_explicit_pass_and_fail_labels_are_declared_labels():
    p = compiled(HEAD + "verdict PASS | FAIL\ndecision PASS iff a\ndecision FAIL otherwise\n", None)
    assert p.declared_labels and p.labels == ("PASS", "FAIL")


# --- compile errors -------------------------------------------------------------------------

LABELS = HEAD + "verdict yes | no\n"

ERRORS = [
    # (text, code, line, column, words in the message)
    (
        LABELS + "decision yes iff a\ndecision maybe iff b\ndecision no otherwise\n",
        "unknown-label",
        7,
        10,
        "`maybe` is not a declared label",
    ),
    (HEAD + "decision yes iff a\n", "unknown-label", 5, 10, "no `verdict` statement"),
    (
        LABELS + "decision pass iff a\ndecision yes iff a\ndecision no otherwise\n",
        "unknown-label",
        6,
        1,
        "`decision pass` is for a protocol without",
    ),
    (LABELS + "decision yes iff a\n", "missing-decision", 5, 15, "label `no` has no decision"),
    (
        LABELS + "decision yes iff a\ndecision yes iff b\ndecision no otherwise\n",
        "duplicate-decision",
        7,
        1,
        "label `yes` has a second decision",
    ),
    (
        LABELS + "decision yes otherwise\ndecision no otherwise\n",
        "otherwise",
        7,
        1,
        "second `otherwise`",
    ),
    (HEAD + "verdict yes\ndecision yes iff a\n", "labels", 5, 1, "only one label"),
    (
        HEAD + "verdict yes | no | yes\ndecision yes iff a\ndecision no otherwise\n",
        "labels",
        5,
        20,
        "label `yes` is declared twice",
    ),
    (
        LABELS + "verdict maybe | no\ndecision yes iff a\ndecision no otherwise\n",
        "duplicate-verdict",
        6,
        1,
        "second `verdict`",
    ),
    (
        HEAD + "define d = d and a\ndecision pass iff d\n",
        "recursive-definition",
        5,
        8,
        "definition `d` refers to itself",
    ),
    (
        HEAD + "define d = e\ndefine e = not d\ndecision pass iff d\n",
        "recursive-definition",
        5,
        8,
        "`d` → `e` → `d`",
    ),
    (
        HEAD + "define d = a and nope\ndecision pass iff d\n",
        "unknown-name",
        5,
        18,
        "unknown atom or definition `nope`",
    ),
    (HEAD + "decision pass iff undefined_one\n", "unknown-name", 5, 19, "unknown atom"),
    (
        HEAD + "define a = b\ndecision pass iff a\n",
        "duplicate-name",
        5,
        8,
        "definition `a` has the name of an atom",
    ),
    (
        HEAD + "define d = a\ndefine d = b\ndecision pass iff d\n",
        "duplicate-name",
        6,
        8,
        "definition `d` is declared twice",
    ),
    (
        HEAD + "decision pass iff a\nground b ~ b\n",
        "role-mismatch",
        6,
        8,
        "`b` is a context atom, but the left side",
    ),
    (
        HEAD + "decision pass iff a\nground a ~> a\n",
        "role-mismatch",
        6,
        13,
        "`a` is a judge atom, but the right side",
    ),
    (
        HEAD + "define cb = not b\ndecision pass iff a\nground a and cb ~ b\n",
        "role-mismatch",
        7,
        14,
        "`cb` reads the context atom `b`, but the left side",
    ),
    (HEAD + "decision pass iff a\nground x ~ b\n", "role-mismatch", 6, 8, "procedure atom"),
    (HEAD + "decision pass iff a\nground a ~ b or x\n", "role-mismatch", 6, 17, "procedure atom"),
    (HEAD + "define d = pass\ndecision pass iff d\n", "verdict-misuse", 5, 12, "`pass`"),
    (
        "protocol p\ndomain d = {m}\natom s(d) : judge\ndefine f(d) = s(d)\ndecision pass iff f\n",
        "missing-member",
        5,
        19,
        "family of definitions",
    ),
    (HEAD + "define f = a\ndecision pass iff f(q)\n", "not-a-family", 6, 19, "single definition"),
    (HEAD + "define f(nod) = a\ndecision pass iff a\n", "unknown-domain", 5, 10, "`nod`"),
    (
        "protocol p\ndomain d = {m}\natom s(d) : judge\ndefine f = a\natom a : judge\n"
        "decision pass iff all(s(f) for f in d)\n",
        "duplicate-name",
        6,
        32,
        "has the name of a definition",
    ),
]


@pytest.mark.parametrize(("text", "code", "line", "column", "words"), ERRORS)
def test_each_error_is_located_and_coded(text, code, line, column, words):
    found = errors(text)
    assert [d.code for d in found] == [code], [d.message for d in found]
    d = found[0]
    assert (d.span.file, d.span.line, d.span.column) == ("t.proto", line, column)
    assert words in d.message
    shown = render(d, {"t.proto": text})
    assert shown.startswith(f"t.proto:{line}:{column}: error: ")
    assert "^" in shown


def test_errors_carry_hints():
    (d,) = errors(LABELS + "decision yes iff a\ndecision noo iff b\ndecision no otherwise\n")
    assert d.help == "did you mean `no`?"
    (d,) = errors(LABELS + "decision yes iff a\n")
    assert d.help == "add `decision no iff EXPR` (or `decision no otherwise`)"
    (d,) = errors(HEAD + "decision pass iff a\nground b ~ a\n")[:1]
    assert "judge atoms" in d.help


@pytest.mark.parametrize(
    "text",
    [
        HEAD + "define and = a\n",
        HEAD + "verdict yes | define\n",
        HEAD + "verdict yes | pass\n",
        HEAD + "verdict otherwise | no\n",
        HEAD + "decision verdict iff a\n",
    ],
)
def test_reserved_words_are_never_names(text):
    with pytest.raises(UnmaskError) as info:
        parse_source(text, "t.proto")
    d = info.value.diagnostics[0]
    assert d.code == "syntax" and "reserved word" in d.message


def test_role_checks_do_not_depend_on_the_members():
    text = (
        "protocol p\ndomain d\natom s(d) : judge\natom t(d) : context\n"
        "define ts(d) = t(d)\ndecision pass iff true\n"
        "for y in d: ground ts(y) ~> s(y)\n"
    )
    for members in ([], ["m"], ["m", "n"]):
        found = errors(text, {"d": members})
        assert [(d.code, d.span.line, d.span.column) for d in found] == [
            ("role-mismatch", 7, 20),
            ("role-mismatch", 7, 29),
        ]


def test_a_recursive_family_definition_is_found_without_members():
    text = "protocol p\ndomain d\natom s(d) : judge\ndefine f(d) = s(d) or f(d)\n"
    text += "decision pass iff true\n"
    for members in ([], ["m"]):
        (d,) = errors(text, {"d": members})
        assert d.code == "recursive-definition"


def test_a_definition_error_is_reported_once_however_often_it_is_used():
    text = HEAD + "define d = zz\ndecision pass iff d and d\nconstraint k: d\n"
    assert [d.code for d in errors(text)] == ["unknown-name"]


# --- formatting -----------------------------------------------------------------------------


def test_the_formatter_writes_every_new_construct_canonically():
    messy = (
        'protocol   wice "t"\ndomain part\natom said(part) : judge\natom backed(part) : context\n'
        "define   all_said=all( said(p) for p in part )\n"
        "define ok( part ) = (said(part)) and (backed(part))\n"
        "verdict  yes|no |maybe\n"
        "decision yes iff (all_said)\ndecision   maybe iff ok(a)\n"
        "decision no   otherwise\n"
        "for p in part :  ground said(p)~>backed(p)\n"
        "ground (all_said) ~ (any(backed(p) for p in part))\n"
    )
    out = format_source(messy)
    assert out.splitlines()[5:] == [
        "define all_said = all(said(p) for p in part)",
        "define ok(part) = said(part) and backed(part)",
        "verdict yes | no | maybe",
        "decision yes iff all_said",
        "decision maybe iff ok(a)",
        "decision no otherwise",
        "for p in part: ground said(p) ~> backed(p)",
        "ground all_said ~ any(backed(p) for p in part)",
    ]
    assert format_source(out) == out
    assert compile_source(out, "t", PARTS) == compile_source(messy, "t", PARTS)


# --- SMT-LIB and DIMACS ---------------------------------------------------------------------


def proto_models(p: ir.Protocol) -> set[tuple[bool, ...]]:
    """Models of B_proto over the atoms then the label variables, by brute force over the
    IR's own evaluator."""
    keys = [label_key(x) for x in p.labels]
    names = [*p.atom_names, *keys]
    out = set()
    for values in itertools.product((False, True), repeat=len(names)):
        env = dict(zip(names, values, strict=True))
        if not all(ir.evaluate(c.expr, env) for c in p.constraints):
            continue
        if sum(env[k] for k in keys) != 1:
            continue
        if all(env[label_key(x)] == ir.evaluate(p.decision_for(x), env) for x in p.labels):
            out.add(values)
    return out


LABELLED = [
    WICE,
    HEAD + "verdict C | P | I\ndecision C iff a and not b\ndecision P iff a and b\n"
    "decision I iff not a\nconstraint k: atmost(1, a, x)\n",
    HEAD + "define d = a xor x\nverdict hi | lo\ndecision hi iff d\ndecision lo iff not d\n",
    # overlapping decisions: B_proto is unsatisfiable where both hold
    HEAD + "verdict one | two\ndecision one iff a\ndecision two iff a or b\n",
]


@pytest.mark.parametrize("text", LABELLED)
def test_smt2_of_a_labelled_protocol_read_back_by_z3_has_the_models_of_b_proto(text):
    p = compiled(text)
    symbols = smt2_symbols(p)
    names = [*p.atom_names, *(label_key(x) for x in p.labels)]
    found = smt2_models(emit_smt2(p), [symbols[n] for n in names])
    assert found == proto_models(p)


@pytest.mark.parametrize("text", LABELLED)
def test_dimacs_of_a_labelled_protocol_has_the_models_of_b_proto(text):
    p = compiled(text)
    dimacs = emit_dimacs(p)
    table = dimacs_vars(dimacs, label_key)
    names = [*p.atom_names, *(label_key(x) for x in p.labels)]
    assert [table[n] for n in names] == list(range(1, len(names) + 1))
    found = dimacs_models(dimacs, table, names)
    assert found == proto_models(p)
    assert len(found) == len(proto_models(p))


def test_smt2_names_labels_definitions_and_one_way_grounding():
    lines = emit_smt2(compiled()).splitlines()
    assert (
        "(declare-const verdict_partially_supported Bool) ; verdict `partially_supported`" in lines
    )
    assert "(define-fun |ok(a)| () Bool (and |said(a)| |backed(a)|)) ; definition" in lines
    assert "(assert (! (= verdict_supported all_said) :named decision_supported))" in lines
    assert "(define-fun |ground_said(a)_backed(a)| () Bool (=> |said(a)| |backed(a)|))" in lines
    assert any(ln.startswith("(assert (! (and (or verdict_supported ") for ln in lines)
    assert emit_smt2(compiled()) == "\n".join(lines) + "\n"


def test_binary_emission_is_unchanged_by_labels():
    p = compiled(HEAD + "decision pass iff a\n", None)
    assert "(declare-const pass Bool) ; verdict" in emit_smt2(p).splitlines()
    assert "c var 4 verdict pass" in emit_dimacs(p).splitlines()


def test_consecutive_definitions_align_their_equals_sign():
    text = HEAD + "define d = a\ndefine longer = b\n\ndefine alone = a\ndecision pass iff d\n"
    assert format_source(text).splitlines()[5:9] == [
        "define d      = a",
        "define longer = b",
        "",
        "define alone = a",
    ]


@given(protocols())
@settings(max_examples=60)
def test_compiled_protocols_survive_the_ir_json_round_trip(case):
    # the IR JSON reader wants each definition after those it uses: the compiler's order
    p = compile_source(case.text, "g.proto", case.domains)
    assert protocol_from_json(protocol_to_json(p)) == p
    assert p.declared_labels == bool(case.labels)


@given(protocols())
@settings(max_examples=40, deadline=None)
def test_dimacs_and_smt2_of_random_protocols_have_the_models_of_b_proto(case):
    p = compile_source(case.text, "g.proto", case.domains)
    if not p.declared_labels or len(p.atoms) + len(p.labels) > 9:
        return  # binary protocols are covered by test_emit; keep brute force small
    expected = proto_models(p)
    dimacs = emit_dimacs(p)
    names = [*p.atom_names, *(label_key(x) for x in p.labels)]
    assert dimacs_models(dimacs, dimacs_vars(dimacs, label_key), names) == expected
    symbols = smt2_symbols(p)
    assert smt2_models(emit_smt2(p), [symbols[n] for n in names]) == expected


def test_a_label_used_as_an_expression_is_an_unknown_name_with_a_hint():
    (d,) = errors(LABELS + "decision yes iff no\ndecision no otherwise\n")
    assert (d.code, d.span.line, d.span.column) == ("unknown-name", 6, 18)
    assert d.help == "`no` is a verdict label: labels appear only in `verdict` and `decision`"
