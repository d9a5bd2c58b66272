"""The compiler: name resolution, families and domains, every semantic error (code, line,
column), limits, file reading, and a property test against an independent evaluator."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.message_style import message_problems
from tests.proto_strategies import eval_surface, protocols
from unmask import ir
from unmask.ir import Atom, Card, Const, Nary, Not
from unmask.language.compiler import compile_file, compile_source
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.limits import Limits

FAMILY = (
    'protocol factual_claims "…"\n'
    "domain claim\n"
    'atom supported(claim) : judge   "The judge asserts the context supports claim {claim}"\n'
    'atom backed(claim)    : context "The context supports claim {claim}"\n'
    'atom external         : procedure "The judge consulted outside knowledge"\n'
    "decision pass iff all(supported(c) for c in claim)\n"
    'requirement context_only "Use only supplied context" '
    "{ holds: not external  addressed: true }\n"
    "for c in claim: ground supported(c) ~ backed(c)\n"
)
HEAD = 'protocol p "t"\natom a : judge\natom b : context\n'


def errors(text: str, **kw) -> list:
    with pytest.raises(UnmaskError) as info:
        compile_source(text, "t.proto", **kw)
    return list(info.value.diagnostics)


def one_error(text: str, **kw):
    diags = errors(text, **kw)
    assert len(diags) == 1, diags
    return diags[0]


def where(d) -> tuple:
    return (d.code, d.span.line, d.span.column)


# --- families ----------------------------------------------------------------------------


def test_family_with_many_members():
    p = compile_source(FAMILY, domains={"claim": ["joined", "cto"]})
    assert p.atom_names == (
        "supported(joined)",
        "supported(cto)",
        "backed(joined)",
        "backed(cto)",
        "external",
    )
    assert p.atoms[1].description == "The judge asserts the context supports claim cto"
    assert p.decision == Nary("and", (Atom("supported(joined)"), Atom("supported(cto)")))
    assert [(g.judge.name, g.context.name) for g in p.grounding] == [
        ("supported(joined)", "backed(joined)"),
        ("supported(cto)", "backed(cto)"),
    ]


def test_family_with_one_member():
    p = compile_source(FAMILY, domains={"claim": ["only"]})
    assert p.decision == Atom("supported(only)")
    assert len(p.grounding) == 1


def test_family_with_no_members():
    p = compile_source(FAMILY, domains={"claim": []})
    assert p.atom_names == ("external",)
    assert p.decision == Const(True)  # all() of nothing
    assert p.grounding == ()
    any_p = compile_source(FAMILY.replace("all(", "any("), domains={"claim": []})
    assert any_p.decision == Const(False)  # any() of nothing


def test_fixed_domain_and_literal_members():
    p = compile_source(
        'protocol p\ndomain claim = {x, y}\natom s(claim) : judge "{claim}!"\n'
        "decision pass iff s(x) and not s(y)\n"
    )
    assert p.atom_names == ("s(x)", "s(y)")
    assert [a.description for a in p.atoms] == ["x!", "y!"]
    assert p.decision == Nary("and", (Atom("s(x)"), Not(Atom("s(y)"))))


def test_supplied_members_may_narrow_a_fixed_domain():
    p = compile_source(
        "protocol p\ndomain claim = {x, y}\natom s(claim) : judge\n"
        "decision pass iff all(s(c) for c in claim)\n",
        domains={"claim": ["y"]},
    )
    assert p.decision == Atom("s(y)")


def test_for_statements_expand_ids_and_descriptions():
    p = compile_source(
        "protocol p\ndomain claim\natom s(claim) : judge\natom k(claim) : context\n"
        "decision pass iff true\n"
        "for c in claim: constraint cited(c): s(c) implies k(c)\n"
        'for c in claim: requirement checked(c) "check {c}" { holds: s(c) addressed: k(c) }\n',
        domains={"claim": ["a", "b"]},
    )
    assert [c.name for c in p.constraints] == ["cited(a)", "cited(b)"]
    assert p.constraints[1].expr == ir.Binary("implies", Atom("s(b)"), Atom("k(b)"))
    assert [(r.id, r.description, r.addressed) for r in p.requirements] == [
        ("checked(a)", "check a", Atom("k(a)")),
        ("checked(b)", "check b", Atom("k(b)")),
    ]


def test_cardinality_over_generators_and_nested_generators():
    text = (
        "protocol p\ndomain d\natom s(d) : judge\n"
        "decision pass iff atleast(2, s(x) for x in d) and "
        "all(any(s(y) for y in d) for x in d)\n"
    )
    p = compile_source(text, domains={"d": ["a", "b", "c"]})
    s = tuple(Atom(f"s({m})") for m in "abc")
    # one `any(...)` per member of the outer generator; the IR does not deduplicate
    assert p.decision == Nary("and", (Card("atleast", 2, s), *[Nary("or", s)] * 3))
    # more than the members: folds, since the count depends on the replay
    assert compile_source(text, domains={"d": ["a"]}).decision == Const(False)


def test_the_generator_variable_shadows_nothing_and_binds_per_member():
    p = compile_source(
        "protocol p\ndomain d = {u, v}\natom s(d) : judge\n"
        "decision pass iff exactly(1, s(x) for x in d)\n"
    )
    assert p.decision == Card("exactly", 1, (Atom("s(u)"), Atom("s(v)")))


# --- semantic errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code", "line", "column"),
    [
        (HEAD + "decision pass iff a and c\n", "unknown-name", 4, 25),
        (HEAD + "atom a : context\ndecision pass iff a\n", "duplicate-name", 4, 6),
        (HEAD + "decision pass iff a\nconstraint k: a\nconstraint k: b\n", "duplicate-name", 6, 1),
        (
            HEAD + "decision pass iff a\nrequirement r: a\nrequirement r: b\n",
            "duplicate-name",
            6,
            1,
        ),
        (
            "protocol p\ndomain d = {x}\ndomain d = {y}\ndecision pass iff true\n",
            "duplicate-name",
            3,
            8,
        ),
        ("protocol p\ndomain d = {x, y, x}\ndecision pass iff true\n", "duplicate-name", 2, 19),
        (HEAD + "decision pass iff a\nground b ~ a\n", "role-mismatch", 5, 8),
        (HEAD + "decision pass iff a\nground a ~ a\n", "role-mismatch", 5, 12),
        (HEAD, "missing-decision", 1, 1),
        (HEAD + "decision pass iff a\ndecision pass iff b\n", "duplicate-decision", 5, 1),
        (HEAD + "decision pass iff all(s(c) for c in claim)\n", "unknown-domain", 4, 37),
        ("protocol p\natom s(claim) : judge\ndecision pass iff true\n", "unknown-domain", 2, 8),
        (
            "protocol p\ndomain d = {x}\natom s(d) : judge\ndecision pass iff s(y)\n",
            "unknown-member",
            4,
            21,
        ),
        (
            "protocol p\ndomain d = {x}\natom s(d) : judge\ndecision pass iff s\n",
            "missing-member",
            4,
            19,
        ),
        (HEAD + "decision pass iff a(x)\n", "not-a-family", 4, 19),
        (
            "protocol p\ndomain d = {x}\natom s(d) : judge\ndecision pass iff all(c for c in d)\n",
            "not-an-atom",
            4,
            23,
        ),
        (
            "protocol p\ndomain d = {x}\ndomain e = {y}\natom s(d) : judge\n"
            "decision pass iff all(s(c) for c in e)\n",
            "domain-mismatch",
            5,
            25,
        ),
        (HEAD + "decision pass iff a and pass\n", "verdict-misuse", 4, 25),
        (HEAD + "decision pass iff a\nconstraint k: not pass\n", "verdict-misuse", 5, 19),
        (HEAD + "decision pass iff atleast(-1, a)\n", "cardinality", 4, 27),
        (HEAD + "decision pass iff atmost(3, a, b)\n", "cardinality", 4, 26),
        (HEAD + "decision pass iff exactly(99999999999999999999, a)\n", "cardinality", 4, 27),
        ("atom a : judge\nprotocol p\ndecision pass iff a\n", "protocol-order", 2, 1),
        (HEAD + "protocol q\ndecision pass iff a\n", "duplicate-protocol", 4, 1),
        ("atom a : judge\ndecision pass iff a\n", "missing-protocol", 1, 1),
        (
            "protocol p\ndomain d = {x}\natom a(d) : judge\n"
            "decision pass iff all(a(x) for a in d)\n",
            "duplicate-name",
            4,
            32,
        ),
    ],
)
def test_semantic_errors_have_a_code_and_a_place(text, code, line, column):
    diags = errors(text)
    assert (diags[0].code, diags[0].span.line, diags[0].span.column) == (code, line, column)
    assert diags[0].span.file == "t.proto"
    for d in diags:
        assert_follows_the_style_guide(d)


def assert_follows_the_style_guide(d) -> None:
    """docs/style.md, by the one checker every message is held to (tests/message_style.py)."""
    assert message_problems(d.message, d.help) == [], (d.message, d.help)


@pytest.mark.parametrize(
    ("member", "shown"),
    [(None, "null"), (3, "3"), (["x"], '["x"]'), ("not ok", "not ok"), ("and", "and")],
)
def test_a_member_that_is_not_a_name_is_shown_as_written(member, shown):
    d = one_error(FAMILY, domains={"claim": [member]})
    assert d.message == f"member `{shown}` of `claim` is not a name"
    assert_follows_the_style_guide(d)


def test_unknown_names_suggest_the_closest_one():
    d = one_error(HEAD + "decision pass iff a and bb\n")
    assert d.code == "unknown-name"
    assert d.help == "did you mean `b`?"


def test_all_semantic_errors_are_collected():
    text = (
        "protocol p\natom a : judge\natom b : context\n"
        "decision pass iff a and zz\n"  # unknown name
        "ground b ~ a\n"  # role mismatch (twice)
        "constraint k: pass\n"  # verdict
        "constraint k: a\n"  # duplicate
        "decision pass iff b\n"  # second decision
    )
    codes = sorted(d.code for d in errors(text))
    assert codes == sorted(
        [
            "unknown-name",
            "role-mismatch",
            "role-mismatch",
            "verdict-misuse",
            "duplicate-name",
            "duplicate-decision",
        ]
    )


def test_errors_inside_a_generator_are_found_even_with_no_members():
    d = one_error(
        "protocol p\ndomain d\natom s(d) : judge\ndecision pass iff all(t(x) for x in d)\n",
        domains={"d": []},
    )
    assert where(d) == ("unknown-name", 4, 23)


@pytest.mark.parametrize(
    "ground",
    [
        "for x in d: ground f(x) ~ f(x)",  # f is a judge family: the right side is wrong
        "for x in d: ground c(x) ~ c(x)",  # c is a context family: the left side is wrong
    ],
)
def test_ground_roles_are_checked_on_the_template_whatever_the_members(ground):
    text = (
        "protocol p\ndomain d = {m}\natom f(d) : judge\natom c(d) : context\n"
        "atom a : judge\ndecision pass iff a\n" + ground + "\n"
    )
    with_members = errors(text, domains={"d": ["m"]})
    without = errors(text, domains={"d": []})
    assert [d.code for d in with_members] == ["role-mismatch"]
    assert [(d.code, d.message, d.span) for d in without] == [
        (d.code, d.message, d.span) for d in with_members
    ]


def test_errors_repeated_per_member_are_reported_once():
    diags = errors(
        "protocol p\ndomain d = {a, b, c}\natom s(d) : judge\n"
        "decision pass iff all(s(x) and zz for x in d)\n"
    )
    assert [d.code for d in diags] == ["unknown-name"]


def test_a_free_domain_without_members_says_how_to_give_them():
    d = one_error(FAMILY)
    assert where(d) == ("missing-domain", 2, 1)
    assert "--domain claim=a,b" in d.help and "domains" in d.help


def test_members_outside_a_fixed_domain():
    d = one_error(
        "protocol p\ndomain d = {x, y}\ndecision pass iff true\n", domains={"d": ["x", "z"]}
    )
    assert d.code == "member-not-in-domain"
    assert d.path == "domains.d[1]"
    assert (d.span.line, d.span.column) == (2, 1)


@pytest.mark.parametrize(
    ("members", "code", "path"),
    [
        (["ok", "not ok"], "bad-member", "domains.claim[1]"),
        (["and"], "bad-member", "domains.claim[0]"),
        (["1x"], "bad-member", "domains.claim[0]"),
        ([3], "bad-member", "domains.claim[0]"),
        ("ab", "bad-member", "domains.claim"),
        (["x", "x"], "duplicate-name", "domains.claim[1]"),
    ],
)
def test_supplied_members_must_be_names(members, code, path):
    d = one_error(FAMILY, domains={"claim": members})
    assert (d.code, d.path) == (code, path)


def test_members_for_an_undeclared_domain_are_an_error():
    diags = errors(FAMILY, domains={"claim": ["x"], "clam": ["y"]})
    assert [(d.code, d.path) for d in diags] == [("unknown-domain", "domains.clam")]
    assert diags[0].help == "did you mean `claim`?"


# --- limits ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "domains", "option"),
    [
        (Limits(max_atoms=3), {"claim": ["a", "b"]}, "--max-atoms"),
        (Limits(max_domain_size=1), {"claim": ["a", "b"]}, "--max-domain-size"),
        (Limits(max_expr_nodes=5), {"claim": ["a", "b", "c", "d", "e", "f"]}, "--max-expr-nodes"),
        (Limits(max_source_chars=100), {"claim": []}, "--max-source-chars"),
    ],
)
def test_limits_give_a_limit_diagnostic_naming_the_option(limits, domains, option):
    diags = errors(FAMILY, domains=domains, limits=limits)
    assert [d.code for d in diags] == ["limit"]
    assert option in diags[0].help


def test_expression_depth_limit():
    d = one_error(
        HEAD + "decision pass iff " + "not " * 30 + "a\n", limits=Limits(max_expr_depth=10)
    )
    assert where(d) == ("limit", 4, 19)
    assert "--max-expr-depth" in d.help


def test_a_generator_explosion_stops_at_the_node_limit():
    members = [f"m{i}" for i in range(300)]
    text = (
        "protocol p\ndomain d\natom s(d) : judge\n"
        "decision pass iff all(all(all(s(x) or s(y) or s(z) for z in d) for y in d) for x in d)\n"
    )
    d = one_error(text, domains={"d": members}, limits=Limits(max_expr_nodes=100_000))
    assert d.code == "limit" and "--max-expr-nodes" in d.help


# --- files -------------------------------------------------------------------------------


def test_compile_file(tmp_path):
    f = tmp_path / "fc.proto"
    f.write_text(FAMILY, encoding="utf-8")
    p = compile_file(f, domains={"claim": ["x"]})
    assert p.decision == Atom("supported(x)")
    assert p.span.file == str(f)


def test_compile_file_reports_missing_and_undecodable_files(tmp_path):
    with pytest.raises(UnmaskError) as info:
        compile_file(tmp_path / "nope.proto")
    assert [d.code for d in info.value.diagnostics] == ["io"]
    bad = tmp_path / "bad.proto"
    bad.write_bytes(b"protocol p\n\xff\xfe")
    with pytest.raises(UnmaskError) as info:
        compile_file(bad)
    (d,) = info.value.diagnostics
    assert d.code == "encoding" and "line 2" in d.message
    with pytest.raises(UnmaskError) as info:
        compile_file(tmp_path)
    assert [d.code for d in info.value.diagnostics] == ["io"]


def test_file_size_limit(tmp_path):
    f = tmp_path / "big.proto"
    f.write_text(FAMILY, encoding="utf-8")
    with pytest.raises(UnmaskError) as info:
        compile_file(f, limits=Limits(max_file_bytes=10))
    assert [d.code for d in info.value.diagnostics] == ["limit"]


# --- meaning -----------------------------------------------------------------------------


@given(protocols(), st.randoms(use_true_random=False))
def test_compiled_decision_means_what_the_surface_says(case, rnd):
    p = compile_source(case.text, "g.proto", case.domains)
    names = p.atom_names
    assert len(set(names)) == len(names)
    assert p.labels == (case.labels or ir.BINARY_LABELS)
    decision = p.decision_for(p.labels[0])
    for _ in range(8):
        world = {n: rnd.random() < 0.5 for n in names}
        assert ir.evaluate(decision, world) == eval_surface(case.decision, world, case.ctx, {})


def test_exhaustively_small_precedence_table():
    # every pair of binary operators, both groupings, against Python's own truth tables
    ops = {
        "and": lambda x, y: x and y,
        "or": lambda x, y: x or y,
        "xor": lambda x, y: x != y,
        "implies": lambda x, y: (not x) or y,
        "iff": lambda x, y: x == y,
    }
    prec = {"iff": 1, "implies": 2, "or": 3, "xor": 4, "and": 5}
    head = "protocol p\natom a : judge\natom b : judge\natom c : judge\n"
    for o1, o2 in itertools.product(ops, repeat=2):
        e = compile_source(head + f"decision pass iff a {o1} b {o2} c\n").decision
        right = prec[o2] > prec[o1] or (o1 == o2 == "implies")
        for va, vb, vc in itertools.product([False, True], repeat=3):
            want = ops[o1](va, ops[o2](vb, vc)) if right else ops[o2](ops[o1](va, vb), vc)
            assert ir.evaluate(e, {"a": va, "b": vb, "c": vc}) == want, (o1, o2)
