"""HTML report and batch index: structure read back with a parser, overlapping spans cut
into segments by code point, hostile text kept as text, self-contained, deterministic."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import found_files
from tests.render_cases import (
    EXAMPLES,
    EXPLANATION,
    HOSTILE_ID,
    SCRIPT,
    example,
    hostile_replay,
    overlapping_replay,
    surrogate_replay,
)
from unmask.api import check, load
from unmask.checking.record import ResultRecord
from unmask.cli.main import main
from unmask.plumbing import safe
from unmask.render import html
from unmask.render import view as ev

VOID = {"meta", "br", "input", "img", "hr", "link"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list = field(default_factory=list)  # Node or str

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.walk()

    def find_all(self, tag: str, **attrs: str) -> list[Node]:
        out = []
        for n in self.walk():
            if n.tag != tag:
                continue
            if all(
                (v in n.attrs.get(k.rstrip("_"), "").split())
                if k.endswith("_")
                else n.attrs.get(k) == v
                for k, v in attrs.items()
            ):
                out.append(n)
        return out

    def by_id(self, ident: str) -> Node:
        hits = [n for n in self.walk() if n.attrs.get("id") == ident]
        assert len(hits) == 1, f"id {ident!r} occurs {len(hits)} times"
        return hits[0]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return
        raise AssertionError(f"stray </{tag}>")

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse(page: str) -> Node:
    b = _Builder()
    b.feed(page)
    b.close()
    assert [n.tag for n in b.stack] == ["#root"], "unclosed elements"
    return b.root


def source_div(doc: Node, name: str) -> Node:
    sec = doc.by_id(f"src-{name}")
    return sec.find_all("div", class_="text")[0]


def mark_text(div: Node) -> str:
    """The source text as shown, without the tags that follow each span."""
    out = []
    for c in div.children:
        if isinstance(c, str):
            out.append(c)
        elif c.tag == "mark":
            out.append(c.text())
    return "".join(out)


# --- one report ------------------------------------------------------------------------------


def test_case_c_top_shows_overall_and_the_four_dimensions():
    report, replay = example("case_c.json")
    doc = parse(html.render(report, replay))
    assert doc.by_id("overall").text() == "✗ VIOLATED"
    dims = doc.by_id("dimensions").find_all("li", class_="dim")
    assert [d.find_all("span", class_="dname")[0].children[0].strip() for d in dims] == [
        "verdict entailment",
        "procedural compliance",
        "coverage",
        "grounding",
    ]
    badges = [d.find_all("span", class_="badge")[0].text() for d in dims]
    assert badges == ["✓ OK", "✓ OK", "✓ OK", "✗ VIOLATED"]


def test_case_c_violated_grounding_check_shows_both_quotes():
    report, replay = example("case_c.json")
    doc = parse(html.render(report, replay))
    findings = doc.by_id("findings").find_all("article", class_="check")
    assert [f.attrs["data-check"] for f in findings] == ["grounding:j_cto~c_cto"]
    f = findings[0]
    assert f.find_all("span", class_="badge")[0].text() == "✗ VIOLATED"
    assert "does not match the context" in f.find_all("p", class_="finding")[0].text()
    quotes = [m.text() for m in f.find_all("mark", class_="q")]
    assert quotes == [
        "The context also supports that Alice is ACME's CTO, so the second claim is supported.",
        "Alice joined ACME in 2024.",
    ]
    # each quote links to its highlight in the source text, and that anchor exists
    links = [a.attrs["href"] for a in f.find_all("a") if a.attrs.get("href", "").startswith("#")]
    assert links == ["#ev-1-0", "#ev-3-0"]
    for link in links:
        doc.by_id(link[1:])


def test_every_evidence_span_is_highlighted_and_linked_to_its_annotation():
    report, replay = example("case_c.json")
    doc = parse(html.render(report, replay))
    context = source_div(doc, "context")
    marks = context.find_all("mark")
    # c_joined and c_cto quote the same sentence: one segment carrying both annotations
    assert len(marks) == 1
    assert marks[0].text() == "Alice joined ACME in 2024."
    assert marks[0].attrs["data-ann"] == "ann-2 ann-3"
    assert marks[0].attrs["tabindex"] == "0"
    assert "c_cto = FALSE (context)" in marks[0].attrs["title"]
    tags = [(a.attrs["href"], a.text()) for a in context.find_all("a", class_="tag")]
    assert tags == [("#ann-2", "c_joined ✓ TRUE"), ("#ann-3", "c_cto ✗ FALSE")]
    card = doc.by_id("ann-3")
    assert "says nothing about Alice's title" in card.text()
    assert mark_text(context) == replay.sources["context"]


def test_overlapping_spans_are_cut_into_segments_by_code_point(tmp_path: Path):
    replay = load(overlapping_replay(tmp_path))
    doc = parse(html.render(check(replay, "z3"), replay))
    div = source_div(doc, "rationale")
    text = replay.sources["rationale"]
    assert mark_text(div) == text
    segs = [(m.text(), m.attrs["data-ann"].split()) for m in div.find_all("mark")]
    # j_joined covers "Alice … 2024", j_cto "2024 … CTO."; the shared "2024" has both
    assert segs == [
        ("Intro", ["ann-4"]),
        ("Alice joined ACME in ", ["ann-0"]),
        ("2024", ["ann-0", "ann-1"]),
        (" and she is ACME's CTO.", ["ann-1"]),
    ]
    assert div.find_all("mark")[2].attrs["class"].split() == ["ev", "depth2"]


spans = st.lists(st.tuples(st.integers(0, 12), st.integers(1, 12)), max_size=6)


@given(text=st.text(alphabet="ab🙂é\n", min_size=1, max_size=12), raw=spans)
def test_segments_partition_the_text_and_know_their_covering_spans(text: str, raw):
    marks = [
        ev.Mark(f"ev-{i}-0", "a", "judge", "", "TRUE", "", "rationale", s, e, text[s:e], "")
        for i, (s, e) in enumerate(raw)
        if s < e <= len(text)
    ]
    segs = ev.segments(text, marks)
    assert "".join(s.text for s in segs) == text
    pos = 0
    covers: dict[str, str] = {m.id: "" for m in marks}
    for s in segs:
        a, b = pos, pos + len(s.text)
        covering = [m for m in marks if m.start <= a and b <= m.end]
        assert s.depth == len(covering)
        # the innermost (shortest, then first) few, in mark order
        inner = sorted(covering, key=lambda m: (m.end - m.start, marks.index(m)))[: ev.SHOWN]
        assert [m.id for m in s.marks] == [m.id for m in marks if m in inner]
        assert {m.id for m in s.starts} == {m.id for m in covering if m.start == a}
        assert {m.id for m in s.ends} == {m.id for m in covering if m.end == b}
        for m in covering:
            covers[m.id] += s.text
        pos = b
    # a piece never straddles a boundary: every span is a union of whole pieces
    for m in marks:
        assert covers[m.id] == text[m.start : m.end]


def test_hostile_text_stays_text(tmp_path: Path):
    replay = load(hostile_replay(tmp_path))
    page = html.render(check(replay, "z3"), replay)
    doc = parse(page)
    # the only script element is the report's own, and no element comes from user text
    assert len(doc.find_all("script")) == 1
    assert "alert" not in doc.find_all("script")[0].text()
    assert doc.find_all("img") == []
    assert SCRIPT in source_div(doc, "rationale").text()
    # the text in full, a control character in it shown as an escape (the output policy)
    shown = mark_text(source_div(doc, "rationale"))
    assert "\x01" not in shown and shown == safe.visible(replay.sources["rationale"])
    assert HOSTILE_ID in doc.find_all("h1")[0].text()
    assert EXPLANATION in doc.by_id("ann-0").text()
    assert "<b>c</b>" not in page and "<img" not in page


def test_witnesses_mark_completed_values_as_possible():
    report, replay = example("case_unknown.json")
    doc = parse(html.render(report, replay))
    findings = doc.by_id("findings")
    rows = findings.find_all("tr", class_="possible")
    assert rows, "an underdetermined check shows its witnesses"
    for r in rows:
        # not colour alone: an italic word says it is a possibility
        assert [e.text() for e in r.find_all("em", class_="possible")] == ["◇ possible"]
    for r in findings.find_all("tr", class_="observed"):
        assert r.find_all("em") == [] and "● observed" in r.text()
    # the completed value itself is in italics too (the row's class), and labelled
    assert all(r.find_all("td")[2].text() == "◇ possible" for r in rows)


def test_page_is_self_contained_accessible_and_printable():
    report, replay = example("case_c.json")
    page = html.render(report, replay)
    doc = parse(page)
    assert doc.find_all("html")[0].attrs["lang"] == "en"
    for landmark in ("header", "nav", "main", "footer"):
        assert len(doc.find_all(landmark)) == 1, landmark
    # nothing is fetched: no external script, stylesheet, image, font or import
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "@import" not in page and "url(" not in page
    assert doc.find_all("link") == []
    assert "@media print" in doc.find_all("style")[0].text()
    # ids are unique (by_id asserts it) and every in-page link has a target
    for a in doc.find_all("a"):
        href = a.attrs.get("href", "")
        if href.startswith("#"):
            doc.by_id(href[1:])


def test_same_report_same_bytes_and_backends_differ_only_by_name():
    replay = load(EXAMPLES / "case_unknown.json")
    a = html.render(check(replay, "z3"), replay)
    assert a == html.render(check(replay, "z3"), replay)
    b = html.render(check(replay, "truthtable"), replay)
    assert a.replace("backend z3", "") == b.replace("backend truthtable", "")


def test_check_command_writes_html_with_the_exit_status():
    res = CliRunner().invoke(main, ["check", str(EXAMPLES / "case_c.json"), "--format", "html"])
    assert res.exit_code == 1
    assert res.stdout.startswith("<!DOCTYPE html>")
    assert res.stdout.endswith("</html>\n")


def test_every_example_renders_and_shows_every_source():
    for path in found_files(EXAMPLES.glob("case_*.json"), at_least=5):
        replay = load(path)
        doc = parse(html.render(check(replay, "z3"), replay))
        for name, text in replay.sources.items():
            assert mark_text(source_div(doc, name)) == safe.clean(text), (path.name, name)


# --- the batch index -------------------------------------------------------------------------


def _row(rid: str, overall: str, dims: dict, gold, match, href: str) -> dict:
    return {
        "id": rid,
        "overall": overall,
        "dimensions": dims,
        "verdict": "PASS",
        "gold": gold,
        "verdict_matches_gold": match,
        "href": href,
    }


OK4 = dict.fromkeys(ev.DIMENSIONS, "OK")
ROWS = [
    _row("case-a", "SATISFIED", OK4, "PASS", True, "case-a.html"),
    _row("case-c", "VIOLATED", {**OK4, "grounding": "VIOLATED"}, "FAIL", False, "case-c.html"),
    _row("case-b", "VIOLATED", {**OK4, "procedure": "VIOLATED"}, "PASS", True, "case-b.html"),
    _row("<script>x</script>", "UNKNOWN", {**OK4, "coverage": "UNKNOWN"}, None, None, "u v.html"),
]


def _legend(node: Node) -> dict[str, str]:
    out = {}
    for span in node.find_all("span", class_="lg"):
        word = span.text().split(" ")[1]
        out[word] = span.find_all("strong")[0].text()
    return out


def test_index_counts_are_computed_from_rows_when_the_summary_has_none():
    doc = parse(html.render_index({"title": "nightly"}, ROWS))
    summary = doc.by_id("summary")
    assert _legend(summary.find_all("p", class_="legend")[0]) == {
        "SATISFIED": "1",
        "VIOLATED": "2",
        "UNKNOWN": "1",
    }
    bars = summary.find_all("div", class_="dimbar")
    grounding = next(b for b in bars if b.find_all("h3")[0].text() == "grounding")
    assert _legend(grounding)["VIOLATED"] == "1"
    assert _legend(grounding)["OK"] == "3"
    # the cross table: rows verdict-vs-gold, columns overall
    cross = {
        tr.find_all("th")[0].text(): [td.find_all("span", class_="num")[0].text() for td in tds]
        for tr in doc.by_id("cross").find_all("tr")
        if (tds := [td for td in tr.find_all("td") if td.find_all("span", class_="num")])
    }
    assert cross == {
        "matches gold": ["1", "1", "0"],
        "differs from gold": ["0", "1", "0"],
        "no gold": ["0", "0", "1"],
    }


def test_index_header_says_unmask_audit_once():
    # the audit's own title is the kicker's words: shown once, not twice over each other
    top = parse(html.render_index({"title": "unmask audit"}, ROWS)).find_all("header")[0]
    assert top.find_all("h1")[0].text() == "unmask audit"
    assert top.find_all("p", class_="kicker") == []
    top = parse(html.render_index({"title": "nightly"}, ROWS)).find_all("header")[0]
    assert [p.text() for p in top.find_all("p", class_="kicker")] == ["unmask audit"]


def test_index_uses_the_summary_counts_it_is_given():
    summary = {"title": "t", "total": 10, "overall": {"SATISFIED": 7, "VIOLATED": 3}}
    doc = parse(html.render_index(summary, ROWS))
    legend = _legend(doc.by_id("summary").find_all("p", class_="legend")[0])
    assert legend == {"SATISFIED": "7", "VIOLATED": "3", "UNKNOWN": "0"}
    widths = [s.attrs["style"] for s in doc.by_id("summary").find_all("span", class_="seg")][:2]
    assert widths == ["width: 70.0%", "width: 30.0%"]


def test_index_table_links_every_replay_and_escapes_ids():
    page = html.render_index({}, ROWS)
    doc = parse(page)
    table = doc.by_id("replay-table")
    body_rows = table.find_all("tbody")[0].find_all("tr")
    assert len(body_rows) == len(ROWS)
    links = [(a.text(), a.attrs["href"]) for a in table.find_all("a")]
    assert links == [(r["id"], r["href"]) for r in ROWS]
    assert [r.attrs["data-overall"] for r in body_rows] == [r["overall"] for r in ROWS]
    heads = [th.text() for th in table.find_all("thead")[0].find_all("th")]
    assert heads[:3] == ["replay", "overall", "checks failed or open"] and len(heads) == 10
    assert len(doc.find_all("script")) == 1
    # without JS the filters stay hidden and the table is complete
    assert doc.by_id("filters").attrs.get("hidden") == ""
    assert html.render_index({}, ROWS) == page


def test_report_without_its_replay_still_renders_every_check():
    report, _ = example("case_c.json")
    doc = parse(html.render(report))
    assert doc.by_id("overall").text() == "✗ VIOLATED"
    keys = [a.attrs["data-check"] for a in doc.by_id("checks").find_all("article")]
    assert keys == [
        "verdict",
        "requirement:context_only",
        "coverage:context_only",
        "grounding:j_joined~c_joined",
        "grounding:j_cto~c_cto",
    ]
    assert doc.by_id("sources").find_all("mark") == []


def test_templates_are_flat_so_the_package_data_glob_ships_them():
    # pyproject ships `templates/*`, which does not descend into folders
    entries = list(html.TEMPLATES.iterdir())
    assert entries and all(p.is_file() for p in entries)
    used = {"report.html.j2", "index.html.j2", "report.md.j2", "report.css", "report.js"}
    assert used <= {p.name for p in entries}


def test_every_format_prints_lone_surrogates_as_replacement_characters(tmp_path: Path):
    path = str(surrogate_replay(tmp_path))
    # what each format shows of the note: U+FFFD, or JUnit's written-out escape
    shown = {"html": "\ufffd", "markdown": "\ufffd", "sarif": "", "junit": "\\ud800"}
    for fmt, mark in shown.items():
        res = CliRunner().invoke(main, ["check", path, "--format", fmt])
        assert res.exit_code == 1, (fmt, res.output[-300:])
        assert mark in res.stdout, fmt
        assert not any(0xD800 <= ord(c) < 0xE000 for c in res.stdout), fmt


def test_index_rows_built_from_reports_render_like_hand_written_ones():
    rows = []
    for name in ("case_a.json", "case_c.json", "case_unknown.json"):
        report, _ = example(name)
        record = ResultRecord.from_report(report, name)
        rows.append(html.index_row(record, name.replace(".json", ".html")))
    assert rows[1] == {
        "id": "case-c",
        "overall": "VIOLATED",
        "dimensions": {
            "verdict": "OK",
            "procedure": "OK",
            "coverage": "OK",
            "grounding": "VIOLATED",
        },
        "verdict": "PASS",
        "gold": "FAIL",
        "verdict_matches_gold": False,
        "protocol": "factual_claims",
        "href": "case_c.html",
        "failed": ["j_cto ~ c_cto"],
        "open": [],
        "groups": {
            "requirements": {"context_only": "satisfied"},
            "grounding": {"j_joined ~ c_joined": "satisfied", "j_cto ~ c_cto": "violated"},
        },
    }
    doc = parse(html.render_index({"title": "examples"}, rows))
    cells = doc.by_id("replay-table").find_all("tbody")[0].find_all("tr")[1].find_all("td")
    assert [c.text() for c in cells] == [
        "case-c",
        "✗ VIOLATED",
        "✗ failed: j_cto ~ c_cto",
        "✓ OK",
        "✓ OK",
        "✓ OK",
        "✗ VIOLATED",
        "PASS",
        "FAIL",
        "✗ no",
    ]


def _checks_cell(doc, replay: str) -> str:
    for tr in doc.by_id("replay-table").find_all("tbody")[0].find_all("tr"):
        cells = tr.find_all("td")
        if cells[0].text() == replay:
            assert cells[2].attrs["class"] == "checks"
            return cells[2].text()
    raise AssertionError(f"no row for {replay}")


def test_index_rows_name_the_checks_that_failed_or_stayed_open(tmp_path: Path):
    """Each row of the index says which requirement, grounding pair (with its arrow) or
    verdict failed and which stayed open, and why a replay could not be checked."""
    rows = []
    for name in (
        "case_b.json",
        "case_c.json",
        "case_d.json",
        "case_unknown.json",
        "claim_parts_underdetermined.json",
        "case_a.json",
    ):
        report, _ = example(name)
        rows.append(html.index_row(ResultRecord.from_report(report, name), name))
    rows.append(html.index_row(ResultRecord(location="bad.jsonl:1", error="schema"), ""))
    doc = parse(html.render_index({"title": "t"}, rows))
    assert _checks_cell(doc, "case-b") == "✗ failed: context_only"
    assert _checks_cell(doc, "case-c") == "✗ failed: j_cto ~ c_cto"
    assert _checks_cell(doc, "case-d") == "✗ failed: verdict, context_only"
    assert _checks_cell(doc, "case-unknown") == "? open: context_only"
    one_way = "? open: said(medal) ~> backed(medal)"
    assert _checks_cell(doc, "claim-parts-underdetermined") == one_way
    assert _checks_cell(doc, "case-a") == "–"
    assert _checks_cell(doc, "bad.jsonl:1") == "could not be checked: schema"


def test_an_input_that_could_not_be_checked_says_why_in_its_row():
    from unmask.plumbing.codes import Code
    from unmask.plumbing.diagnostics import Diagnostic

    first = Diagnostic(Code.MISSING, "missing `start` and `end`", path="annotations[0].evidence[0]")
    record = ResultRecord(location="r.json", error="missing", errors=(first, first))
    row = html.index_row(record, "")
    assert row["why"] == "annotations[0].evidence[0]: missing `start` and `end`"
    doc = parse(html.render_index({"title": "t"}, [row]))
    assert _checks_cell(doc, "r.json") == (
        "could not be checked: missing annotations[0].evidence[0]: missing `start` and `end`"
    )
    long = Diagnostic(Code.TYPE, "x" * 500)
    said = html.index_row(ResultRecord(location="r", error="type", errors=(long,)), "")["why"]
    assert len(said) == 200 and said.endswith("…")


def test_index_names_at_most_six_checks_a_row_and_counts_the_rest():
    names = [f"r{i}" for i in range(9)]
    row = {"id": "x", "overall": "VIOLATED", "failed": names, "open": ["<o>"]}
    doc = parse(html.render_index({}, [row]))
    assert _checks_cell(doc, "x") == "✗ failed: r0, r1, r2, r3, r4, r5 and 3 more? open: <o>"
