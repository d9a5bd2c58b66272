"""The `.proto` grammar and parser: every statement, operator precedence and associativity
(checked on the IR's shape), syntax errors with their positions, recovery, and robustness
against garbage and deep nesting."""

from __future__ import annotations

import re
from importlib.resources import files

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.language.test_compiler import assert_follows_the_style_guide
from tests.proto_strategies import token_soup
from unmask.ir import Atom, Binary, Card, Const, Nary, Not, Protocol
from unmask.language import ast
from unmask.language.compiler import compile_source
from unmask.language.parser import lark_parser, parse_source, reserved_words
from unmask.language.syntaxtree import decode_string, encode_string
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.limits import Limits
from unmask.plumbing.names import IDENT_PATTERN

HEAD = 'protocol p "t"\natom a : judge\natom b : context\natom c : procedure\natom d : judge\n'
A, B, C, D = Atom("a"), Atom("b"), Atom("c"), Atom("d")


def decision(expr: str) -> object:
    return compile_source(HEAD + f"decision pass iff {expr}\n").decision


def errors(text: str, **kw) -> list:
    with pytest.raises(UnmaskError) as info:
        compile_source(text, "t.proto", **kw)
    return list(info.value.diagnostics)


def one_error(text: str, **kw):
    diags = errors(text, **kw)
    assert len(diags) == 1, diags
    return diags[0]


# --- statements --------------------------------------------------------------------------


def test_the_factual_claims_example_compiles_to_the_expected_ir():
    text = (
        '# factual_claims.proto\nprotocol factual_claims "Check claims."\n'
        'atom j_joined : judge "J joined"\natom j_cto : judge "J cto"\n'
        'atom c_joined : context "C joined"\natom c_cto : context "C cto"\n'
        'atom external : procedure "outside"\n'
        "decision pass iff j_joined and j_cto\n"
        'requirement context_only "Use only supplied context" {\n'
        "  holds: not external\n  addressed: true\n}\n"
        "ground j_joined ~ c_joined\nground j_cto ~ c_cto\n"
    )
    p = compile_source(text)
    assert isinstance(p, Protocol)
    assert (p.name, p.text) == ("factual_claims", "Check claims.")
    assert [(a.name, a.role, a.description) for a in p.atoms] == [
        ("j_joined", "judge", "J joined"),
        ("j_cto", "judge", "J cto"),
        ("c_joined", "context", "C joined"),
        ("c_cto", "context", "C cto"),
        ("external", "procedure", "outside"),
    ]
    assert p.decision == Nary("and", (Atom("j_joined"), Atom("j_cto")))
    (r,) = p.requirements
    assert (r.id, r.description, r.expr, r.addressed) == (
        "context_only",
        "Use only supplied context",
        Not(Atom("external")),
        Const(True),
    )
    assert [(g.judge.name, g.context.name) for g in p.grounding] == [
        ("j_joined", "c_joined"),
        ("j_cto", "c_cto"),
    ]


def test_statements_with_optional_parts_left_out():
    p = compile_source(
        "protocol p atom a : judge atom b : context decision pass iff a "
        "constraint k: a or b requirement r: a requirement s { holds: b } "
        'requirement t "d" { holds: a addressed: false } ground a ~ b'
    )
    assert p.text == ""
    assert p.atoms[0].description == ""
    assert [(c.name, c.expr) for c in p.constraints] == [("k", Nary("or", (A, B)))]
    assert [(r.id, r.description, r.expr, r.addressed) for r in p.requirements] == [
        ("r", "", A, None),
        ("s", "", B, None),
        ("t", "d", A, Const(False)),
    ]


def test_statements_may_come_in_any_order_after_the_protocol_line():
    p = compile_source(
        "protocol p ground a ~ b decision pass iff a atom b : context atom a : judge"
    )
    assert p.atom_names == ("b", "a")
    assert p.grounding[0].judge == Atom("a")


def test_whitespace_and_comments_are_free():
    p = compile_source("protocol\np#c\n atom\ta\n:\njudge#x\ndecision pass\n\niff\n(\na\n)\n# end")
    assert p.decision == A


def test_spans_point_at_the_source():
    sf = parse_source(HEAD + "decision pass iff a and\n  not b\n", "f.proto")
    dec = sf.statements[-1]
    assert isinstance(dec, ast.DecisionDecl)
    assert (dec.span.file, dec.span.line, dec.span.column) == ("f.proto", 6, 1)
    assert (dec.expr.span.line, dec.expr.span.column) == (6, 19)
    assert (dec.expr.span.end_line, dec.expr.span.end_column) == (7, 8)
    assert isinstance(dec.expr, ast.BinE)
    assert (dec.expr.right.span.line, dec.expr.right.span.column) == (7, 3)


def test_the_compiled_ir_carries_spans():
    p = compile_source(HEAD + "decision pass iff a and b\n", "f.proto")
    assert (p.decision.span.line, p.decision.span.column) == (6, 19)
    assert (p.atoms[1].span.line, p.atoms[1].span.column) == (3, 1)


# --- operators ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("true", Const(True)),
        ("false", Const(False)),
        ("a", A),
        ("not a", Not(A)),
        ("a and b", Nary("and", (A, B))),
        ("a or b", Nary("or", (A, B))),
        ("a xor b", Nary("xor", (A, B))),
        ("a implies b", Binary("implies", A, B)),
        ("a iff b", Binary("iff", A, B)),
        # precedence, loosest first: iff, implies, or, xor, and, not
        ("not a and b", Nary("and", (Not(A), B))),
        ("not (a and b)", Not(Nary("and", (A, B)))),
        ("a and b or c", Nary("or", (Nary("and", (A, B)), C))),
        ("a or b and c", Nary("or", (A, Nary("and", (B, C))))),
        ("a xor b and c", Nary("xor", (A, Nary("and", (B, C))))),
        ("a or b xor c", Nary("or", (A, Nary("xor", (B, C))))),
        ("a or b implies c", Binary("implies", Nary("or", (A, B)), C)),
        ("a implies b iff c", Binary("iff", Binary("implies", A, B), C)),
        ("a iff b implies c", Binary("iff", A, Binary("implies", B, C))),
        # associativity
        ("a implies b implies c", Binary("implies", A, Binary("implies", B, C))),
        ("(a implies b) implies c", Binary("implies", Binary("implies", A, B), C)),
        ("a iff b iff c", Binary("iff", Binary("iff", A, B), C)),
        ("a iff (b iff c)", Binary("iff", A, Binary("iff", B, C))),
        ("a and b and c", Nary("and", (A, B, C))),
        ("a and (b and c)", Nary("and", (A, B, C))),
        ("a xor b xor c", Nary("xor", (A, B, C))),
        ("not not a", A),
        ("((a))", A),
        # calls
        ("all(a, b, c)", Nary("and", (A, B, C))),
        ("any(a, b)", Nary("or", (A, B))),
        ("all()", Const(True)),
        ("any()", Const(False)),
        ("atleast(2, a, b, c)", Card("atleast", 2, (A, B, C))),
        ("atmost(1, a, b, c)", Card("atmost", 1, (A, B, C))),
        ("exactly(2, a, b, c)", Card("exactly", 2, (A, B, C))),
        ("atleast(0)", Const(True)),
        ("atleast(1, a, b)", Nary("or", (A, B))),
        ("exactly(0, a, b)", Nary("and", (Not(A), Not(B)))),
        ("atleast(007, a, b, c, d, a, b, c, d)", Card("atleast", 7, (A, B, C, D) * 2)),
        ("all(a, b or c) and d", Nary("and", (A, Nary("or", (B, C)), D))),
    ],
)
def test_operator_shapes(text, expected):
    assert decision(text) == expected


def test_long_chains_do_not_recurse():
    n = 3000
    assert decision(" and ".join(["a", "b"] * n)) == Nary("and", (A, B) * n)
    assert decision(" xor ".join(["a", "b"] * n)) == Nary("xor", (A, B) * n)
    assert decision(" or ".join(f"({x})" for x in ["a", "b"] * n)) == Nary("or", (A, B) * n)


# --- syntax errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "column", "needle"),
    [
        ("protocol p\ndecision pass a\n", 2, 15, "expected `iff` after `decision pass`"),
        ("protocol p\ndecision a\n", 2, 11, "expected `iff` or `otherwise` after"),
        ("protocol p\ndecision iff a\n", 2, 10, "`iff` is a reserved word"),
        ("protocol p\ndecision\n", 2, 9, "expected a label after `decision`"),
        ("protocol p\ndefine a b\n", 2, 10, "expected `=` after the definition"),
        ("protocol p\nverdict a b\n", 2, 11, "expected"),
        ("protocol p\nconstraint k a\n", 2, 14, "expected `:` after the constraint"),
        ("protocol p\natom a judge\n", 2, 8, "expected `:` between"),
        ("protocol p\natom a : jduge\n", 2, 10, "expected a role"),
        ("protocol p\nground a = b\n", 2, 10, "expected `~`"),
        ("protocol p\nrequirement r { a }\n", 2, 17, "starts with `holds: EXPR`"),
        ('protocol p "unclosed\n', 1, 12, "unterminated string"),
        ("protocol p\natom and : judge\n", 2, 6, "`and` is a reserved word"),
        ("protocol p\ndomain claim = {a, in}\n", 2, 20, "`in` is a reserved word"),
        ("protocol p\ndecision pass iff a and\n", 2, 24, "expected an expression after `and`"),
        ("protocol p\ndecision pass iff (a or b\n", 2, 26, "expected"),
        ("protocol p\ndecision pass iff a b\n", 2, 21, "expected an operator"),
        ("protocol p\natom a : judge @\n", 2, 16, "unexpected character `@`"),
        ("protocol p\ndecision pass iff all(a, b for c in d)\n", 2, 28, "expected"),
        ("protocol p\ndecision pass iff atleast(a, b)\n", 2, 27, "a number"),
    ],
)
def test_syntax_errors_say_where_and_what(text, line, column, needle):
    d = errors(text)[0]
    assert d.code == "syntax"
    assert (d.span.file, d.span.line, d.span.column) == ("t.proto", line, column)
    assert needle in d.message
    assert "NAME" not in d.message and "LPAR" not in d.message and "$END" not in d.message


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ('protocol p\natom a : judge\nrequirment r "x": a\n', "did you mean `requirement`?"),
        ("protocol p\natom a : judge\ndecison pass iff a\n", "did you mean `decision`?"),
        ("protocol p\natom a : judge\ngrund a ~ a\n", "did you mean `ground`?"),
        ("protocol p\natom a : jduge\n", "did you mean `judge`?"),
        ("protocol p\natom a : contxt\n", "did you mean `context`?"),
    ],
)
def test_a_misspelt_keyword_gets_a_did_you_mean(text, hint):
    d = errors(text)[0]
    assert (d.code, d.help) == ("syntax", hint)
    assert_follows_the_style_guide(d)


def test_a_name_far_from_every_keyword_gets_no_guess():
    d = errors("protocol p\natom a : judge\nzzzz\n")[0]
    assert d.code == "syntax" and "did you mean" not in (d.help or "")


def test_the_end_of_the_file_is_reported_after_the_last_token():
    d = one_error("protocol p\ndecision pass iff (a\n\n\n")
    assert (d.span.line, d.span.column) == (2, 21)
    assert "the end of the file" in d.message


def test_several_syntax_errors_are_reported_in_one_run():
    text = (
        "protocol p\n"
        "atom a judge\n"  # 2
        "atom b : context\n"
        "decision pass iff a and\n"  # 4: the next statement interrupts
        "atom c : frob\n"  # 5
        "ground a = b\n"  # 6
    )
    diags = errors(text)
    assert [d.code for d in diags] == ["syntax"] * 4
    assert [(d.span.line, d.span.column) for d in diags] == [(2, 8), (5, 1), (5, 10), (6, 10)]


def test_bad_escapes_are_reported_at_the_backslash():
    d = one_error('protocol p "ok \\q"\n')
    assert (d.code, d.span.line, d.span.column) == ("bad-escape", 1, 16)
    d = one_error('protocol p "\\ud800"\n')
    assert d.code == "bad-escape" and "surrogate" in d.message
    d = one_error('protocol p "\\u12"\n')
    assert d.code == "bad-escape" and "four hexadecimal digits" in d.message


def test_string_escapes_round_trip():
    raw = '"a\\"b\\\\c\\nd\\te\\u00e9\\r"'
    value, errs = decode_string(raw)
    assert (value, errs) == ('a"b\\c\nd\te\u00e9\r', [])
    for s in ['a"b', "\\", "\n\t\r", "\x00\x7f\u2028", "plain é…"]:
        assert decode_string(encode_string(s)) == (s, [])


def test_reserved_words_are_exactly_the_documented_list():
    documented = [
        "protocol",
        "atom",
        "domain",
        "constraint",
        "decision",
        "requirement",
        "ground",
        "for",
        "in",
        "pass",
        "iff",
        "implies",
        "or",
        "xor",
        "and",
        "not",
        "true",
        "false",
        "all",
        "any",
        "atleast",
        "atmost",
        "exactly",
        "judge",
        "context",
        "procedure",
        "holds",
        "addressed",
        "verdict",
        "define",
        "otherwise",
    ]
    assert set(documented) == reserved_words()
    for word in documented:
        d = errors(f"protocol p\natom {word} : judge\n")[0]
        assert (d.code, d.span.line, d.span.column) == ("syntax", 2, 6)


def test_the_parser_is_built_once():
    assert lark_parser() is lark_parser()


# --- robustness --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "(" * 100_000,
        "(" * 3000 + "a" + ")" * 3000 + " and " + "not " * 3000 + "a",
        "not " * 5000 + "a",
        "a implies " * 5000 + "a",
        "all(" * 5000 + "a" + ")" * 5000,
    ],
)
def test_deep_nesting_gives_a_diagnostic_not_a_recursion_error(body):
    diags = errors(HEAD + "decision pass iff " + body)
    assert diags[0].code in {"syntax", "limit"}
    assert diags[0].span is not None


def test_deep_nesting_within_the_limit_compiles():
    assert decision("not " * 199 + "a") == Not(A)
    assert decision("(" * 5000 + "a" + ")" * 5000) == A


@given(st.text(max_size=200))
def test_random_text_never_raises_anything_else(text):
    try:
        assert isinstance(compile_source(text, "r.proto"), Protocol)
    except UnmaskError as e:
        assert e.diagnostics
        for d in e.diagnostics:
            assert d.code and d.message
            assert d.message == d.message.strip()


@given(token_soup)
def test_token_soup_never_raises_anything_else(text):
    try:
        assert isinstance(compile_source(text, "s.proto", {"claim": ["x"]}), Protocol)
    except UnmaskError as e:
        for d in e.diagnostics:
            assert d.code
            assert d.span is None or d.span.file == "s.proto"
            assert_follows_the_style_guide(d)


# --- one vocabulary ----------------------------------------------------------------------

GRAMMAR_TEXT = (files("unmask.grammar") / "unmask.lark").read_text("utf-8")


def test_the_reserved_words_are_the_word_literals_of_the_grammar():
    rules = "\n".join(ln.split("//")[0] for ln in GRAMMAR_TEXT.splitlines())
    literals = set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', rules))
    assert literals and reserved_words() == literals


def test_the_name_terminal_is_the_one_identifier_pattern():
    (name,) = [t for t in lark_parser().terminals if t.name == "NAME"]
    assert name.pattern.value == IDENT_PATTERN


def test_keywords_never_reach_the_tree():
    tree = lark_parser().parse("protocol p\ndecision pass iff not a and b\nground a ~ b\n")
    kinds = {t.type for t in tree.scan_values(lambda v: hasattr(v, "type"))}
    assert kinds == {"NAME"}


def test_the_grammar_loads_lalr_with_positions():
    opts = lark_parser().options
    assert (opts.parser, opts.propagate_positions) == ("lalr", True)


def _automaton(parser) -> tuple[dict, dict, list]:
    """A parser's LALR tables as lark saves them: the rules, the start states, and each
    state's actions keyed by terminal name (lark numbers terminals and states in an
    order that differs from one build to the next, even in one process)."""
    import json

    from lark.grammar import Rule
    from lark.lexer import TerminalDef

    data, memo = parser.memo_serialize([TerminalDef, Rule])
    tables = data["parser"]["parser"]
    names = tables["tokens"]
    states = {s: {names[t]: act for t, act in row.items()} for s, row in tables["states"].items()}
    # as JSON: tuples and lists alike, as the shipped tables hold them
    return states, tables["start_states"], json.loads(json.dumps(memo))


def _same_automaton(a, b) -> bool:
    """The two parsers' automata are the same up to the numbering of their states."""
    (states_a, start_a, rules_a), (states_b, start_b, rules_b) = a, b
    if rules_a != rules_b or start_a.keys() != start_b.keys() or len(states_a) != len(states_b):
        return False
    pairs = [(start_a[k], start_b[k]) for k in start_a]
    seen: dict[int, int] = {}
    while pairs:
        sa, sb = pairs.pop()
        if sa in seen:
            if seen[sa] != sb:
                return False
            continue
        seen[sa] = sb
        row_a, row_b = states_a[sa], states_b[sb]
        if row_a.keys() != row_b.keys():
            return False
        for name, (kind, arg) in row_a.items():
            kind_b, arg_b = row_b[name]
            if kind != kind_b:
                return False
            if kind == 0:  # shift: to the state the other parser shifts to
                pairs.append((arg, arg_b))
            elif arg != arg_b:  # reduce: by the same rule
                return False
    return len(seen) == len(states_a) and len(set(seen.values())) == len(seen)


def test_the_grammar_is_strict_and_its_tables_are_the_ones_the_run_builds():
    # strict: no shift/reduce conflict and no two terminals that can match the same text
    # (lark's regex-collision check), else the build raises. The run skips that check,
    # for speed, and must build the very same automaton
    import lark

    from unmask.language.parser import _build

    strict = _build(strict=True)
    assert strict.options.strict
    assert lark.lexer.has_interegular
    assert _same_automaton(_automaton(_build()), _automaton(strict))
    assert lark.lexer.has_interegular  # the switch is put back after the run's build


def test_the_automaton_comparison_sees_a_different_grammar():
    import lark

    from unmask.language.parser import _build

    other = lark.Lark(
        'start: "protocol" NAME\nNAME: /[a-z]+/\n%ignore " "\n', parser="lalr", lexer="basic"
    )
    assert not _same_automaton(_automaton(other), _automaton(_build()))


# --- the shipped tables ---------------------------------------------------------------------


def test_the_shipped_tables_are_the_grammars():
    # a grammar edited without `python -m unmask.language.parser_tables` fails here
    import json

    import lark

    from unmask.language import parser_tables

    grammar = parser_tables.grammar_text()
    shipped = files("unmask.grammar").joinpath(parser_tables.TABLES).read_text("utf-8")
    head = json.loads(shipped)
    assert head["grammar_sha256"] == parser_tables._digest(grammar), (
        "grammar/unmask.tables.json is not the grammar's: "
        "run `python -m unmask.language.parser_tables`"
    )
    loaded = parser_tables.load(grammar)
    assert loaded is not None
    assert _same_automaton(_automaton(loaded), _automaton(parser_tables.build(strict=True)))
    if head["lark"] == lark.__version__:  # the very bytes this lark would write
        assert shipped == parser_tables.tables_json(parser_tables.build(), grammar)


def test_the_tables_file_is_the_same_whichever_process_builds_it():
    # lark numbers states in set order, which changes between processes: the file is
    # numbered canonically, else every regeneration would be a diff of the whole file
    import subprocess
    import sys

    code = (
        "from unmask.language import parser_tables as t; import sys; "
        "sys.stdout.write(t.tables_json(t.build(), t.grammar_text()))"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**__import__("os").environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outs) == 1 and next(iter(outs)).startswith("{")


def test_the_run_parses_with_the_shipped_tables_and_never_builds(monkeypatch):
    from unmask.language import parser as parser_mod
    from unmask.language import parser_tables

    def refuse(strict=False):
        raise AssertionError("built the tables though the shipped ones are the grammar's")

    monkeypatch.setattr(parser_tables, "build", refuse)
    parser_mod.lark_parser.cache_clear()
    try:
        assert parse_source("protocol p\natom a : judge\ndecision pass iff a\n").statements
    finally:
        parser_mod.lark_parser.cache_clear()


@pytest.mark.parametrize(
    "damage",
    [
        lambda t: t.replace('"lark": "', '"lark": "0.'),  # another series of lark
        lambda t: t.replace('"schema": "unmask.lark-tables/1"', '"schema": "x"'),
        lambda t: t[: len(t) // 2],  # cut short
        lambda t: "",
    ],
)
def test_tables_of_another_lark_or_damaged_are_not_used(monkeypatch, tmp_path, damage):
    from unmask.language import parser_tables

    grammar = parser_tables.grammar_text()
    good = files("unmask.grammar").joinpath(parser_tables.TABLES).read_text("utf-8")
    (tmp_path / parser_tables.TABLES).write_text(damage(good), "utf-8")
    assert damage(good) != good
    monkeypatch.setattr(parser_tables.resources, "files", lambda _pkg: tmp_path)
    assert parser_tables.load(grammar) is None


def test_tables_of_another_grammar_are_not_used():
    from unmask.language import parser_tables

    assert parser_tables.load(parser_tables.grammar_text() + "\n") is None
    assert parser_tables.load(parser_tables.grammar_text()) is not None


def test_the_shipped_and_the_built_parser_read_every_example_alike():
    from tests.conftest import ROOT
    from unmask.language import parser_tables

    protos = sorted(ROOT.glob("examples/**/*.proto"))
    assert len(protos) >= 5, protos
    loaded = parser_tables.load(parser_tables.grammar_text())
    built = parser_tables.build()
    assert loaded is not None
    for path in protos:
        text = path.read_text("utf-8")
        assert loaded.parse(text) == built.parse(text), path
        assert list(loaded.lex(text, dont_ignore=True)) == list(built.lex(text, dont_ignore=True))


# Dask pickles every task and result it carries between processes; the cluster runner
# hands it bytes it pickled itself and reads back what its own workers return: the wire
# Dask already trusts, never a file
UNPICKLES_FROM_THE_WIRE = {"unmask/batch/cluster.py"}


def test_nothing_in_the_package_unpickles_a_file():
    # the parser's tables were a pickle in the cache folder, sealed so that unpickling was
    # safe; they ship as JSON now, and no file is unpickled anywhere in the package
    from tests.conftest import ROOT

    sources = sorted([*(ROOT / "unmask").rglob("*.py"), *(ROOT / "backends").rglob("*.py")])
    assert len(sources) > 50, sources
    reads = re.compile(
        r"\b(pickle\.(load|Unpickler)|marshal\.loads?|shelve\.open|dill\.|cloudpickle\.)\b"
        r"|\bLark\.load\((?!\{)"
    )
    wire = re.compile(r"\bpickle\.loads\(")
    found = [
        f"{p.relative_to(ROOT)}: {line.strip()}"
        for p in sources
        for line in p.read_text("utf-8").splitlines()
        if reads.search(line)
        or (wire.search(line) and p.relative_to(ROOT).as_posix() not in UNPICKLES_FROM_THE_WIRE)
    ]
    assert found == []
    assert any(wire.search(line) for line in (ROOT / "unmask/batch/cluster.py").open()), (
        "cluster.py no longer unpickles: remove it from UNPICKLES_FROM_THE_WIRE"
    )


def test_a_grammar_with_colliding_terminals_is_refused_by_the_strict_build():
    # what the strict test above relies on: lark in strict mode raises on a collision
    import lark

    grammar = "start: A | B\nA: /a+/\nB: /a|b/\n"
    lark.Lark(grammar, parser="lalr", lexer="basic")  # not strict: builds
    with pytest.raises(lark.exceptions.LexError):
        lark.Lark(grammar, parser="lalr", lexer="basic", strict=True)


# --- long string literals ----------------------------------------------------------------


def test_a_string_longer_than_the_limit_is_one_located_error():
    text = 'protocol p "short"\n# "a comment is not a string ' + "x" * 50 + '"\n'
    text += 'atom a : judge "' + "\\n" * 30 + '" # "' + "z" * 60 + '"\n'
    with pytest.raises(UnmaskError) as info:
        parse_source(text, "s.proto", Limits(max_string_chars=59))
    (d,) = info.value.diagnostics
    assert (d.code, d.span.line, d.span.column) == ("limit", 3, 16)
    assert d.message == "this string has 60 characters, more than the limit of 59"
    assert d.help == "raise it with `--max-string-chars`"
    assert parse_source(text, "s.proto", Limits(max_string_chars=60)).statements


@pytest.mark.parametrize(("body", "most_bytes_per_char"), [("x", 20), ("x\\n", 90)])
def test_lexing_a_long_string_costs_memory_linear_in_its_length(body, most_bytes_per_char):
    # the old pattern kept a backtracking record per character: some 200 bytes each
    import tracemalloc

    lark_parser()
    literal = body * (150_000 // len(body))
    tracemalloc.start()
    try:
        parse_source(f'protocol p "{literal}"\n')
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < most_bytes_per_char * len(literal)


def test_decoding_copies_plain_runs_whole():
    raw = '"' + "a" * 1000 + "\\u00e9\\q" + "b" * 1000 + '"'
    value, errors = decode_string(raw)
    assert value == "a" * 1000 + "\u00e9q" + "b" * 1000
    assert errors == [(1007, "unknown escape `\\q`")]


def test_the_vocabulary_of_syntax_errors_is_read_off_the_grammar():
    from unmask.language.parser import _vocabulary

    v = _vocabulary()
    words = "protocol atom domain constraint verdict decision define requirement ground for"
    assert v.statements == {w.upper() for w in words.split()}
    assert v.roles == {"JUDGE", "CONTEXT", "PROCEDURE"}
    assert v.operators == {"AND", "OR", "XOR", "IMPLIES", "IFF"}
    assert v.expr_start == {
        *("NAME", "LPAR", "TRUE", "FALSE", "NOT", "PASS"),
        *("ALL", "ANY", "ATLEAST", "ATMOST", "EXACTLY"),
    }
