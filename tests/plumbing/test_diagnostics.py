"""Rendering diagnostics: the excerpt with its caret, and a cost linear in the number of
diagnostics (each source is indexed by line once, however many diagnostics point into it)."""

from __future__ import annotations

import re
from pathlib import Path

import unmask.plumbing.diagnostics as diagnostics
from unmask.ir import Span
from unmask.language.compiler import compile_source
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, render, render_all


def _at(line: int, col: int, end: int | None = None, file: str = "f.proto") -> Diagnostic:
    return Diagnostic("syntax", "oops", Span(file, line, col, line, end or col + 1, 0, 0))


def test_an_excerpt_shows_the_line_and_a_caret_under_the_span():
    text = "protocol p\r\natom a : judge\n"
    assert render(_at(2, 6, 7), {"f.proto": text}) == (
        "f.proto:2:6: error: oops\n  |\n2 | atom a : judge\n  |      ^"
    )
    assert render(_at(1, 1, 9), {"f.proto": text}).splitlines()[2] == "1 | protocol p"


def test_the_caret_counts_terminal_columns_wide_and_combining_characters_included():
    # `日本` takes four columns, `e` with two combining accents one, `\x01` shows as four
    for line, col, before in (
        ('"日本" oops', 6, 7),
        ('"e\u0301\u0301" oops', 7, 4),
        ('"\x01" oops', 5, 7),
    ):
        excerpt = render(_at(1, col, col + 4), {"f.proto": line}).splitlines()
        assert excerpt[3] == "  | " + " " * before + "^^^^", (line, excerpt)


def test_no_excerpt_past_the_last_line_or_for_an_unknown_file():
    for text in ("", "a\n", "a"):
        assert render(_at(2, 1), {"f.proto": text}) == "f.proto:2:1: error: oops"
    assert render(_at(1, 1), {"other.proto": "a"}) == "f.proto:1:1: error: oops"
    assert render(_at(1, 1)) == "f.proto:1:1: error: oops"


def test_many_diagnostics_index_each_source_once(monkeypatch):
    text = "protocol p\natom a : judge\ndecision pass iff a\n" + "".join(
        f"constraint c{i}: zz{i}\n" for i in range(3000)
    )
    try:
        compile_source(text, "x.proto")
    except UnmaskError as e:
        diags = e.diagnostics
    assert len(diags) == 3000
    calls: list[str] = []
    real = diagnostics._line_starts
    monkeypatch.setattr(diagnostics, "_line_starts", lambda t: calls.append(t) or real(t))
    out = render_all([*diags, _at(1, 1, file="y.proto")], {"x.proto": text, "y.proto": "a"})
    assert len(calls) == 2  # once per source, not once per diagnostic
    blocks = out.split("\nx.proto:")
    assert blocks[1].startswith("5:16: error: unknown atom `zz1`\n  |\n5 | constraint c1: zz1\n")
    assert out.endswith("y.proto:1:1: error: oops\n  |\n1 | a\n  | ^")


def test_span_is_defined_once():
    root = Path(__file__).resolve().parents[2]
    defining = [
        p.relative_to(root).as_posix()
        for folder in ("unmask", "backends", "grammar")
        for p in sorted((root / folder).rglob("*.py"))
        if re.search(r"^\s*(class Span\b|Span\s*=)", p.read_text(encoding="utf-8"), re.M)
    ]
    assert defining == ["unmask/plumbing/span.py"]
    assert diagnostics.Span is Span


def test_a_long_line_is_shown_as_a_window_around_the_span():
    # a protocol of 20,000 labels has a 170 KB line: the excerpt points, it does not copy
    line = "x" * 5000 + "HERE" + "y" * 5000
    excerpt = render(_at(1, 5001, 5005), {"f.proto": line}).splitlines()
    shown, caret = excerpt[2], excerpt[3]
    assert len(shown) <= len("1 | ") + diagnostics.MAX_EXCERPT + 2
    assert shown.startswith("1 | …") and shown.endswith("…")
    at = caret.index("^")
    assert shown[at : at + 4] == "HERE" and caret[at:] == "^^^^"
    # at the start of the line: no leading mark; a span running past the window is cut there
    excerpt = render(_at(1, 1, 9000), {"f.proto": line}).splitlines()
    assert excerpt[2].startswith("1 | xxx") and excerpt[2].endswith("…")
    assert excerpt[3] == "  | " + "^" * diagnostics.MAX_EXCERPT
    # a line within the limit is shown whole, as before
    short = "a" * diagnostics.MAX_EXCERPT
    assert render(_at(1, 3, 4), {"f.proto": short}).splitlines()[2] == "1 | " + short
