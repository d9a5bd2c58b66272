"""Markdown report: read back through a CommonMark + GFM-table renderer (markdown-it-py, raw
HTML allowed as GitHub does) to check what a reader would see: the results, the quotes as
blockquotes, tables with the right columns, and hostile text shown literally."""

from __future__ import annotations

import html as htmllib
import re
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from tests.render_cases import (
    EXAMPLES,
    EXPLANATION,
    HOSTILE_ID,
    SCRIPT,
    example,
    hostile_replay,
)
from unmask.api import check, load
from unmask.cli.main import main
from unmask.render import markdown

MD = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")


def to_html(text: str) -> str:
    return MD.render(text)


def strip_tags(fragment: str) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", "", fragment.replace("<br>", "\n")))


def table_after(page: str, heading: str) -> list[list[str]]:
    """The first table after ``heading``, as rows of cell texts (header row first)."""
    section = page.split(heading, 1)[1]
    table = re.search(r"<table>(.*?)</table>", section, re.S)
    assert table, f"no table after {heading!r}"
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)
    return [
        [strip_tags(c).strip() for c in re.findall(r"<t[hd]>(.*?)</t[hd]>", r, re.S)] for r in rows
    ]


def test_case_c_shows_result_dimensions_and_the_violated_quotes():
    report, replay = example("case_c.json")
    page = to_html(markdown.render(report, replay))
    h2 = re.search(r"<h2>(.*?)</h2>", page).group(1)
    assert h2 == "✗ VIOLATED · case-c"
    dims = table_after(page, "case-c</h2>")
    assert dims[0] == ["dimension", "result", "question"]
    assert {r[0]: r[1] for r in dims[1:]} == {
        "verdict entailment": "✓ OK",
        "procedural compliance": "✓ OK",
        "coverage": "✓ OK",
        "grounding": "✗ VIOLATED",
    }
    wrong = page.split("What went wrong</h3>", 1)[1].split("<h3>", 1)[0]
    assert "grounding j_cto ~ c_cto (REFUTED)" in strip_tags(wrong)
    quotes = [
        strip_tags(q).strip() for q in re.findall(r"<blockquote>(.*?)</blockquote>", wrong, re.S)
    ]
    assert quotes[0].startswith("The context also supports that Alice is ACME's CTO")
    assert quotes[1].startswith("Alice joined ACME in 2024.")
    assert quotes[1].endswith("— context [0:26]")


def test_all_checks_table_has_one_row_per_check():
    report, replay = example("case_c.json")
    rows = table_after(to_html(markdown.render(report, replay)), "All checks</h3>")
    assert rows[0] == ["dimension", "check", "status", "result"]
    assert [r[2:] for r in rows[1:]] == [
        ["ENTAILED", "✓ OK"],
        ["ENTAILED", "✓ OK"],
        ["ENTAILED", "✓ OK"],
        ["ENTAILED", "✓ OK"],
        ["REFUTED", "✗ VIOLATED"],
    ]
    assert rows[5][1] == "grounding j_cto ~ c_cto"


def test_witness_completions_are_marked_possible_in_words():
    report, replay = example("case_unknown.json")
    page = to_html(markdown.render(report, replay))
    rows = table_after(page, "What is not settled</h3>")
    assert rows[0] == ["could hold with", "value", "origin"]
    assert rows[1] == ["external", "FALSE", "◇ possible"]
    # and in italics: the value and the label are emphasised
    assert "<em>◇ possible</em>" in page and "<em>FALSE</em>" in page


def test_hostile_text_is_shown_literally(tmp_path: Path):
    replay = load(hostile_replay(tmp_path))
    text = markdown.render(check(replay, "z3"), replay)
    page = to_html(text)
    # no element comes from user text: the only raw HTML the report writes is <br>
    tags = set(re.findall(r"<([a-z0-9]+)", page))
    assert tags <= {
        "h2",
        "h3",
        "h4",
        "p",
        "strong",
        "em",
        "code",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "blockquote",
        "br",
        "ul",
        "li",
    }, tags
    assert SCRIPT in strip_tags(page)
    assert HOSTILE_ID in strip_tags(re.search(r"<h2>(.*?)</h2>", page).group(1))
    # the annotator's note keeps every character, in the table cell and in the findings
    notes = table_after(page, "Annotations</h3>")
    assert notes[0] == ["atom", "role", "value", "evidence", "annotator's note"]
    assert len(notes) == 6 and all(len(r) == 5 for r in notes)
    assert notes[1][4] == EXPLANATION
    assert "\x01" not in text


alphabet = st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from(
    list("\n<>&|*_`[]#-+=.!\\1 ")
)


@given(st.text(alphabet=alphabet, max_size=40))
def test_escaped_text_renders_as_itself(raw: str):
    shown = strip_tags(to_html(markdown.escape(raw))).strip()
    # CommonMark trims each line and folds line breaks inside a paragraph
    norm = lambda s: re.sub(r"\s+", " ", s).strip()  # noqa: E731
    assert norm(shown) == norm(raw) or not raw.strip()


def test_same_bytes_every_run_and_cli_exit_status():
    report, replay = example("case_b.json")
    assert markdown.render(report, replay) == markdown.render(report, replay)
    res = CliRunner().invoke(main, ["check", str(EXAMPLES / "case_a.json"), "--format", "markdown"])
    assert res.exit_code == 0
    assert res.stdout.startswith("## ✓ SATISFIED · case-a\n")
