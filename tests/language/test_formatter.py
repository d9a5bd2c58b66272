"""The formatter: canonical layout (atom declarations aligned as a table), minimal
parentheses, comments kept, idempotence, the shipped examples already formatted, and the
property that formatting never changes the compiled IR."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given

from tests.proto_strategies import protocols
from unmask.language.compiler import compile_source
from unmask.language.formatter import format_source
from unmask.plumbing.diagnostics import UnmaskError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HEAD = "protocol p\natom a : judge\natom b : context\natom c : judge\n"


def fmt_decision(expr: str) -> str:
    out = format_source(HEAD + f"decision pass iff {expr}\n")
    line = out.splitlines()[-1]
    assert line.startswith("decision pass iff ")
    return line.removeprefix("decision pass iff ")


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("((a))", "a"),
        ("(a and b) and c", "a and b and c"),
        ("a and (b and c)", "a and b and c"),
        ("a or (b or c)", "a or b or c"),
        ("a xor (b xor c)", "a xor (b xor c)"),
        ("(a xor b) xor c", "a xor b xor c"),
        ("a iff (b iff c)", "a iff (b iff c)"),
        ("(a iff b) iff c", "a iff b iff c"),
        ("a implies (b implies c)", "a implies b implies c"),
        ("(a implies b) implies c", "(a implies b) implies c"),
        ("(not a) and b", "not a and b"),
        ("not (a and b)", "not (a and b)"),
        ("not (not a)", "not not a"),
        ("(a and b) or c", "a and b or c"),
        ("a and (b or c)", "a and (b or c)"),
        ("(a or b) implies (b iff c)", "a or b implies (b iff c)"),
        ("all( a ,b )", "all(a, b)"),
        ("atleast( 002 , a,b)", "atleast(2, a, b)"),
        ("any()", "any()"),
        ("TRUE_ISH", "TRUE_ISH"),
    ],
)
def test_minimal_parentheses(written, canonical):
    assert fmt_decision(written) == canonical


def test_canonical_statements():
    text = (
        'protocol   p   "say \\u0041\\"hi\\""\n'
        "domain d   =  { x ,y, }\n"
        "domain e\n"
        "atom a:judge\n"
        'atom f( d ):context "{d}\\t"\n'
        "decision   pass iff a\n"
        "constraint k :a\n"
        'requirement r "d" {holds: a}\n'
        "requirement s { holds: a addressed: f(x) }\n"
        "ground a~f(x)\n"
        "for v in d : ground a ~ f(v)\n"
    )
    assert format_source(text) == (
        'protocol p "say A\\"hi\\""\n'
        "\n"
        "domain d = {x, y}\n"
        "domain e\n"
        "atom a    : judge\n"
        'atom f(d) : context "{d}\\t"\n'
        "decision pass iff a\n"
        "constraint k: a\n"
        'requirement r "d": a\n'
        "requirement s {\n"
        "  holds: a\n"
        "  addressed: f(x)\n"
        "}\n"
        "ground a ~ f(x)\n"
        "for v in d: ground a ~ f(v)\n"
    )


def test_consecutive_atoms_are_aligned_as_a_table():
    expected = (
        "protocol p\n"
        "\n"
        'atom judge_says : judge     "j"\n'
        "atom c          : context  # no description\n"
        'atom ext(d)     : procedure "e"\n'
        "\n"
        'atom x           : judge   "a blank line starts a new table"\n'
        'atom longer_name : context "c"\n'
        "# a comment line does too\n"
        'atom y : judge "y"\n'
        "decision pass iff c\n"
    )
    # as written: one space between the parts, a wider gap before the comment, and no blank
    # line after the header
    squeezed = re.sub(" {2,}", " ", expected)
    text = squeezed.replace("protocol p\n\n", "protocol p\n").replace(" # no", "   # no")
    assert format_source(squeezed) == expected
    assert format_source(text) == expected
    assert format_source(expected) == expected
    assert all(line == line.rstrip() for line in expected.splitlines())


def test_the_shipped_examples_are_formatted():
    paths = sorted(EXAMPLES.glob("*.proto"))
    assert len(paths) >= 3, "the examples moved: this test would check nothing"
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert format_source(text, str(path)) == text, path


def test_comments_and_blank_lines_are_kept():
    text = (
        "# head\n"
        "protocol p # the name\n"
        "atom a : judge\n"
        "\n\n\n"
        "# about b\n"
        "atom b : context\n"
        "requirement r { # inside\n"
        "  holds: a\n"
        "  addressed: b } # after\n"
        "decision pass iff a\n"
        "# tail\n"
    )
    assert format_source(text) == (
        "# head\n"
        "protocol p  # the name\n"
        "\n"
        "atom a : judge\n"
        "\n"
        "# about b\n"
        "atom b : context\n"
        "# inside\n"
        "requirement r {\n"
        "  holds: a\n"
        "  addressed: b\n"
        "}  # after\n"
        "decision pass iff a\n"
        "# tail\n"
    )


def test_a_comment_never_carries_a_character_that_acts():
    """Found by tests/fuzz/test_readers_fuzz.py: `unmaskc fmt` wrote string literals'
    controls as escapes but comments raw, so ESC, BEL, a carriage return or U+202E in a
    comment reached the terminal and the file under review. They are escapes now, as in a
    string; a comment means nothing to the compiler, so the protocol is the same."""
    text = (
        "# head \x1b]0;owned\x07 \u202eevil\n"
        'protocol p "t"  # over\rwritten\n'
        "atom a : judge\n"
        "decision pass iff a\n"
        "# tail \x9b31m\u2066 é\ttab\n"
    )
    out = format_source(text)
    assert out == (
        "# head \\u001b]0;owned\\u0007 \\u202eevil\n"
        'protocol p "t"  # over\\u000dwritten\n'
        "\n"
        "atom a : judge\n"
        "decision pass iff a\n"
        "# tail \\u009b31m\\u2066 é\ttab\n"
    )
    assert format_source(out) == out
    assert compile_source(out) == compile_source(text)


def test_formatting_needs_only_syntax():
    # unknown names are the compiler's business; the formatter still formats
    assert format_source("protocol p decision pass iff nowhere") == (
        "protocol p\n\ndecision pass iff nowhere\n"
    )
    assert format_source("") == ""


def test_syntax_errors_are_reported():
    with pytest.raises(UnmaskError) as info:
        format_source("protocol p\ndecision pass a\n", "x.proto")
    (d,) = info.value.diagnostics
    assert (d.code, d.span.file, d.span.line, d.span.column) == ("syntax", "x.proto", 2, 15)


def test_long_chains_format_without_recursion():
    text = HEAD + "decision pass iff " + " and ".join(["a", "(b or c)"] * 800) + "\n"
    out = format_source(text)
    assert out.count(" and ") == 1599
    assert compile_source(out) == compile_source(text)


@given(protocols())
def test_formatting_keeps_the_ir_and_is_idempotent(case):
    once = format_source(case.text, "g.proto")
    assert compile_source(once, "f.proto", case.domains) == compile_source(
        case.text, "g.proto", case.domains
    )
    assert format_source(once) == once
    # every comment survives, word for word
    assert _comments(once) == _comments(case.text)


def _comments(text: str) -> list[str]:
    from unmask.language.parser import lark_parser

    toks = lark_parser().lex(text, dont_ignore=True)
    return [str(t).rstrip() for t in toks if t.type == "COMMENT"]
