"""The audit summary's label tables, on hand-made result lines whose counts are worked out
by hand below: gold × observed with adherence for any label set, judges compared on the
items they both judged, and results resting on unreviewed or gold-derived annotations."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tests.helpers import full_line
from unmask.batch.summary import Summary
from unmask.checking.record import ResultRecord
from unmask.cli.main import main
from unmask.render.html import index_row, render_index

DIMS = ("verdict", "procedure", "coverage", "grounding")


def line(
    observed: str,
    gold: str | None,
    overall: str,
    *,
    item: str | None = None,
    judge: str | None = None,
    dims: tuple[str, ...] = ("OK", "OK", "OK", "OK"),
    verdict_flags: dict | None = None,
    requirements: list | None = None,
    grounding: list | None = None,
) -> dict:
    obj = {
        "schema": "unmask.report/1",
        "location": f"{item}-{judge}",
        "replay": f"{item}-{judge}",
        "protocol": "wice",
        "overall": overall,
        "verdict": {"observed": observed, "status": "ENTAILED", **(verdict_flags or {})},
        "gold": gold,
        "verdict_matches_gold": None if gold is None else gold == observed,
        "dimensions": dict(zip(DIMS, dims, strict=True)),
        "requirements": requirements or [],
        "grounding": grounding or [],
    }
    if item is not None:
        obj["item"] = item
    if judge is not None:
        obj["judge"] = judge
    return full_line(obj)


S, P, N = "supported", "partially_supported", "not_supported"
GD = {"judge": "said(a)", "context": "backed(a)", "status": "ENTAILED", "gold_derived": True}
UN = {"id": "cites", "status": "ENTAILED", "coverage": "ENTAILED", "unreviewed": True}

# two judges on three items, and one replay with no item
LINES = [
    line(S, S, "SATISFIED", item="i1", judge="gpt-4"),
    line(P, S, "VIOLATED", item="i1", judge="gpt-3.5", dims=("VIOLATED", "OK", "OK", "OK")),
    line(N, N, "SATISFIED", item="i2", judge="gpt-4", grounding=[GD]),
    line(N, N, "UNKNOWN", item="i2", judge="gpt-3.5", dims=("OK", "OK", "UNKNOWN", "OK")),
    line(
        P,
        P,
        "VIOLATED",
        item="i3",
        judge="gpt-4",
        dims=("OK", "VIOLATED", "OK", "VIOLATED"),
        requirements=[UN, {**UN, "unreviewed": False, "coverage_unreviewed": True}],
        verdict_flags={"unreviewed": True},
    ),
    line(S, P, "SATISFIED", item="i3", judge="gpt-3.5"),
    line(S, None, "SATISFIED"),
]


def summary(lines=LINES) -> Summary:
    s = Summary()
    for obj in lines:
        s.add(ResultRecord.from_line(obj))
    return s


def cell(j: dict, gold: str, observed: str) -> dict:
    return j["confusion"]["table"][gold][observed]


def test_labels_in_the_order_first_seen() -> None:
    # observed before gold in each line: S (line 1), P (line 2), N (line 3)
    assert summary().to_json()["confusion"]["labels"] == [S, P, N]


def test_confusion_cells_with_adherence() -> None:
    j = summary().to_json()
    assert cell(j, S, S) == {
        "replays": 1,
        "SATISFIED": 1,
        "VIOLATED": 0,
        "UNKNOWN": 0,
        "unreviewed": 0,
        "gold_derived": 0,
    }
    assert cell(j, S, P)["replays"] == 1 and cell(j, S, P)["VIOLATED"] == 1
    # i2 by both judges: gold N, observed N, one SATISFIED (gold-derived grounding), one UNKNOWN
    assert cell(j, N, N) == {
        "replays": 2,
        "SATISFIED": 1,
        "VIOLATED": 0,
        "UNKNOWN": 1,
        "unreviewed": 0,
        "gold_derived": 1,
    }
    assert cell(j, P, P)["VIOLATED"] == 1 and cell(j, P, P)["unreviewed"] == 1
    assert cell(j, P, S)["replays"] == 1 and cell(j, P, S)["SATISFIED"] == 1
    # 6 replays have gold; the one without is in no cell
    total = sum(c["replays"] for row in j["confusion"]["table"].values() for c in row.values())
    assert total == 6
    assert cell(j, S, N)["replays"] == 0


def test_binary_labels_work_the_same() -> None:
    lines = [line("PASS", "FAIL", "VIOLATED"), line("FAIL", "FAIL", "SATISFIED")]
    j = summary(lines).to_json()
    assert j["confusion"]["labels"] == ["PASS", "FAIL"]
    assert cell(j, "FAIL", "PASS")["VIOLATED"] == 1
    assert cell(j, "FAIL", "FAIL")["SATISFIED"] == 1
    assert cell(j, "PASS", "PASS")["replays"] == 0


def test_allowed_labels_fix_the_declaration_order() -> None:
    first = line(N, N, "SATISFIED")
    first["verdict"]["allowed"] = [S, P, N]  # what the report says B_all allows, in order
    assert summary([first]).to_json()["confusion"]["labels"] == [S, P, N]


def test_judge_pairs_over_items_judged_by_both() -> None:
    j = summary().to_json()["judges"]
    assert j["items"] == 3 and j["repeated"] == 0
    (pair,) = j["pairs"]
    assert pair["judges"] == ["gpt-4", "gpt-3.5"]
    assert pair["items"] == 3
    # verdicts: i1 S/P differ, i2 N/N agree, i3 P/S differ
    assert pair["verdict_agreement"] == 1
    # dimensions: i1 verdict differs; i2 coverage; i3 procedure and grounding
    assert pair["differ"] == {"verdict": 1, "procedure": 1, "coverage": 1, "grounding": 1}


def test_three_judges_give_three_pairs_and_a_repeat_is_left_out() -> None:
    lines = [
        line(S, S, "SATISFIED", item="x", judge="a"),
        line(S, S, "SATISFIED", item="x", judge="b"),
        line(N, S, "VIOLATED", item="x", judge="c", dims=("VIOLATED", "OK", "OK", "OK")),
        line(N, S, "VIOLATED", item="x", judge="a"),  # a second result of a on x
        line(S, S, "SATISFIED", item="y", judge="c"),  # y judged once: no pair
    ]
    j = summary(lines).to_json()["judges"]
    assert j["items"] == 1 and j["repeated"] == 1
    assert [(p["judges"], p["items"], p["verdict_agreement"]) for p in j["pairs"]] == [
        (["a", "b"], 1, 1),
        (["a", "c"], 1, 0),
        (["b", "c"], 1, 0),
    ]
    assert j["pairs"][1]["differ"]["verdict"] == 1


def test_replays_without_a_judge_are_not_paired() -> None:
    lines = [line(S, S, "SATISFIED", item="x"), line(N, S, "VIOLATED", item="x")]
    assert summary(lines).to_json()["judges"] == {"items": 0, "repeated": 0, "pairs": []}


def test_provenance_counts() -> None:
    p = summary().to_json()["provenance"]
    # unreviewed: only the i3/gpt-4 replay (verdict, one requirement, one coverage)
    assert p["unreviewed"] == {
        "with": 1,
        "without": 6,
        "replays": {"verdict": 1, "procedure": 1, "coverage": 1, "grounding": 0},
        "checks": {"verdict": 1, "procedure": 1, "coverage": 1, "grounding": 0},
    }
    # gold-derived: the i2/gpt-4 replay's grounding check
    assert p["gold_derived"]["with"] == 1
    assert p["gold_derived"]["checks"] == {
        "verdict": 0,
        "procedure": 0,
        "coverage": 0,
        "grounding": 1,
    }


def test_text_shows_the_tables_and_the_warning() -> None:
    text = summary().render_text()
    assert "gold x observed label" in text
    rows = {ln.split()[0]: ln for ln in text.splitlines() if ln.startswith("  not_supported ")}
    assert rows["not_supported"].split()[-2:] == ["2", "(1/0/1)"]
    assert "replays resting on unreviewed annotations: 1 (6 do not)" in text
    assert "warning: in 1 replay a gold-derived annotation feeds a grounding check" in text
    assert (
        "gpt-4 / gpt-3.5: 3 items, same verdict 1; results differ on verdict 1, "
        "procedure 1, coverage 1, grounding 1"
    ) in text
    assert text.splitlines()[-1].startswith("fails most often:")


def test_nothing_extra_without_gold_judges_or_provenance() -> None:
    text = summary([line("PASS", None, "SATISFIED")]).render_text()
    assert "gold x observed" not in text
    assert "judges compared" not in text and "unreviewed" not in text


def test_html_index_shows_the_tables() -> None:
    s = summary()
    page = render_index(
        s.index_summary("z3"), [index_row(ResultRecord.from_line(o), "r.html") for o in LINES]
    )
    assert 'id="labels"' in page and 'id="provenance"' in page and 'id="judges"' in page
    assert "gpt-4 / gpt-3.5</th><td>3</td><td>1 (33.3%)</td>" in page
    assert "feeds a grounding check" in page
    assert "violated, confirmed" in page and "violated, provisional" in page


def test_html_index_computes_the_label_table_from_rows_alone() -> None:
    page = render_index({}, [index_row(ResultRecord.from_line(o), "r.html") for o in LINES])
    assert 'id="labels"' in page and 'id="judges"' not in page


def test_audit_writes_the_tables_to_summary_json(tmp_path: Path, examples_dir: Path) -> None:
    out = tmp_path / "summary.json"
    files = [str(examples_dir / f"case_{c}.json") for c in "abcd"]
    result = CliRunner().invoke(
        main, ["audit", *files, "--out", str(tmp_path / "r.jsonl"), "--summary-json", str(out)]
    )
    assert result.exit_code in (0, 1), result.output
    j = json.loads(out.read_text())
    # the article's cases (observed/gold): A PASS/PASS satisfied, B FAIL/FAIL violated,
    # C and D PASS/FAIL violated
    assert j["confusion"]["labels"] == ["PASS", "FAIL"]
    assert cell(j, "PASS", "PASS") == {**cell(j, "PASS", "PASS"), "replays": 1, "SATISFIED": 1}
    assert cell(j, "FAIL", "FAIL") == {**cell(j, "FAIL", "FAIL"), "replays": 1, "VIOLATED": 1}
    assert cell(j, "FAIL", "PASS") == {**cell(j, "FAIL", "PASS"), "replays": 2, "VIOLATED": 2}
    assert cell(j, "PASS", "FAIL")["replays"] == 0
    assert j["judges"]["pairs"] == []
    assert j["provenance"]["unreviewed"]["with"] == 0
