"""A finding shows the text of each claim or passage it names (a source line `[NAME] …`),
in the text, Markdown and HTML reports; a check that holds, or a member with no such line,
shows none, and the text goes through the output policy like any source text."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from unmask.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "rag_citations.json"


def _replay(tmp_path: Path, context: str) -> Path:
    obj = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    obj["protocol"] = {"source": (ROOT / "examples" / "rag_citations.proto").read_text()}
    obj["sources"]["context"] = context
    # the quotes of the example's context annotations, moved to their new offsets
    for a in obj["annotations"]:
        for e in a.get("evidence", []):
            if e.get("source") == "context":
                e["start"] = context.index(e["quote"])
                e["end"] = e["start"] + len(e["quote"])
    path = tmp_path / "r.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def check(path: Path, fmt: str) -> str:
    return CliRunner().invoke(main, ["check", str(path), "--format", fmt]).stdout


def test_the_passage_a_refuted_pair_names_is_shown_beside_it_in_every_format(tmp_path):
    p1 = "The Sydney Harbour Bridge opened to traffic in 1932."
    p2 = "The bridge spans Sydney Harbour and is a symbol of Sydney."
    path = _replay(tmp_path, f"[p1] {p1}\n[p2] {p2}")
    text = check(path, "text")
    lines = [x.strip() for x in text.splitlines()]
    where = f"where: `p2` (passage) “{p2}”"
    assert lines.count(where) == 1  # the refuted pair only: no check that holds shows one
    assert lines[lines.index(where) - 2].startswith("`cites(date, p2)` ~> `backs(p2, date)`")
    assert f"- `p2` (passage): {p2}" in check(path, "markdown")
    page = check(path, "html")
    assert f'<dt><code>p2</code> <span class="domain">passage</span></dt><dd>{p2}</dd>' in page
    assert page.count('<dl class="members">') == 2  # in "what went wrong" and "all checks"


def test_a_member_without_a_line_of_its_own_and_hostile_text(tmp_path):
    # `date` has no line anywhere; p2's text carries an escape sequence and a bidi override
    p2 = "The bridge spans Sydney Harbour and is a symbol of Sydney."
    p1 = "The Sydney Harbour Bridge opened to traffic in 1932."
    path = _replay(tmp_path, f"[p1] {p1}\n[p2] {p2} \x1b[31m\u202e.")
    text = check(path, "text")
    where = next(x.strip() for x in text.splitlines() if x.strip().startswith("where:"))
    assert "`date`" not in where
    assert "\x1b" not in text and "\u202e" not in text
    assert where == f"where: `p2` (passage) “{p2} \\x1b[31m\\u202e.”"


def test_the_index_groups_each_requirement_and_grounding_family_by_outcome():
    from unmask.render.html import index_context

    def row(rid: str, reqs: dict, pairs: dict) -> dict:
        return {
            "id": rid,
            "href": f"{rid}.html",
            "groups": {"requirements": reqs, "grounding": pairs},
        }

    rows = [
        row("a", {"r": "satisfied"}, {"s(*) ~> b(*)": "violated"}),
        row("b", {"r": "violated"}, {"s(*) ~> b(*)": "open"}),
        row("c", {"r": "satisfied"}, {}),
    ]
    tables = {t["kind"]: t for t in index_context({}, rows)["check_tables"]}
    (req,) = tables["requirements"]["rows"]
    got = {c["outcome"]: [x["id"] for x in c["links"]] for c in req["cells"]}
    assert (req["name"], got) == ("r", {"violated": ["b"], "open": [], "satisfied": ["a", "c"]})
    (pair,) = tables["grounding"]["rows"]
    assert [c["count"] for c in pair["cells"]] == [1, 1, 0]
