"""One gold × observed table per protocol when an audit mixes protocols.

An audit over binary PASS/FAIL replays and replays of protocols with their own labels
(`claim_parts`, `graded_fact`) printed one merged table: `PASS` crossed with `supported` and
`C`, cells no replay can ever fill, and the PASS row of two different binary protocols
added up. Now the text summary and the HTML index show one table per protocol, under its
name; the summary JSON keeps the merged `confusion` and adds `confusion_by_protocol`. A run
of one protocol prints exactly what it printed before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.batch.confusion import confusion_text
from unmask.batch.summary import Summary
from unmask.checking.record import ResultRecord
from unmask.cli.main import main
from unmask.render.html import index_row, render_index

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BINARY = ["case_a.json", "case_b.json", "case_c.json", "case_d.json"]
MIXED = [
    *BINARY,
    "case_unknown.json",  # factual_claims_disclosed: binary too, but another protocol
    "claim_parts_entailed.json",
    "claim_parts_refuted.json",
    "claim_parts_underdetermined.json",
    "graded_fact_refuted.json",
    "graded_fact_satisfied.json",
]


def _audit(tmp_path: Path, names: list[str]) -> tuple[str, dict, list[dict]]:
    out, summary = tmp_path / "r.jsonl", tmp_path / "s.json"
    args = ["audit", *(str(EXAMPLES / n) for n in names), "--out", str(out)]
    result = CliRunner().invoke(main, [*args, "--summary-json", str(summary)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    return result.stderr, json.loads(summary.read_text(encoding="utf-8")), lines


def _section(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("gold x observed"))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("  "))
    return lines[start:end]


def test_mixed_protocols_get_one_text_table_each(tmp_path: Path) -> None:
    text, _, _ = _audit(tmp_path, MIXED)
    assert _section(text) == [
        "gold x observed label, per protocol (replays, and satisfied/violated/unknown among them):",
        "  protocol `factual_claims`:",
        "    gold \\ observed       PASS       FAIL",
        "    PASS             1 (1/0/0)          0",
        "    FAIL             2 (0/2/0)  1 (0/1/0)",
        "  protocol `factual_claims_disclosed`:",
        "    gold \\ observed       PASS",
        "    PASS             1 (0/0/1)",
        "  protocol `claim_parts`:",
        "    gold \\ observed      partially_supported  supported",
        "    partially_supported            1 (1/0/0)  2 (0/1/1)",
        "    supported                              0          0",
        "    of these, 1 rest on unreviewed annotations and 0 on gold-derived ones",
        "  protocol `graded_fact`:",
        "    gold \\ observed  C          P",
        "    C                0  1 (0/1/0)",
        "    P                0  1 (1/0/0)",
    ]


def test_the_summary_json_adds_the_tables_per_protocol(tmp_path: Path) -> None:
    _, s, lines = _audit(tmp_path, MIXED)
    by = s["confusion_by_protocol"]
    assert list(by) == ["factual_claims", "factual_claims_disclosed", "claim_parts", "graded_fact"]
    assert by["graded_fact"]["labels"] == ["C", "P"]
    assert by["factual_claims"]["table"]["PASS"]["PASS"]["replays"] == 1
    # the merged table is kept as it was: every label of the run, cells added up
    assert s["confusion"]["labels"] == [
        "PASS",
        "FAIL",
        "partially_supported",
        "supported",
        "C",
        "P",
    ]
    assert s["confusion"]["table"]["PASS"]["PASS"]["replays"] == 2  # two protocols' PASS
    for g in s["confusion"]["labels"]:
        for o in s["confusion"]["labels"]:
            parts = [t["table"][g][o]["replays"] for t in by.values() if {g, o} <= set(t["labels"])]
            assert s["confusion"]["table"][g][o]["replays"] == sum(p for p in parts)
    # folding the result lines again (as --resume does) gives the same tables
    again = Summary()
    for obj in lines:
        again.add(ResultRecord.from_line(obj))
    assert again.to_json()["confusion_by_protocol"] == by


@pytest.mark.parametrize(
    "names",
    [BINARY, ["claim_parts_entailed.json", "claim_parts_refuted.json"], ["case_a.json"]],
    ids=["binary", "labels", "one replay"],
)
def test_one_protocol_prints_what_it_printed_before(tmp_path: Path, names: list[str]) -> None:
    text, s, _ = _audit(tmp_path, names)
    (only,) = s["confusion_by_protocol"].values()
    assert only == s["confusion"]
    section = _section(text)
    assert section[0] == (
        "gold x observed label (replays, and satisfied/violated/unknown among them):"
    )
    assert not any("protocol `" in x for x in section)
    assert section == confusion_text(s["confusion"])


def test_a_protocol_without_gold_labels_gets_no_table() -> None:
    from unmask.batch.confusion import confusions_text

    by = {
        "a": {"labels": ["PASS"], "table": {"PASS": {"PASS": _cell(1)}}},
        "b": {"labels": ["C"], "table": {"C": {"C": _cell(0)}}},
    }
    merged = {"labels": ["PASS", "C"], "table": {}}
    lines = confusions_text(merged, by)
    assert "  protocol `a`:" in lines and not any("`b`" in x for x in lines)
    # a name read back from a results file is shown escaped, never acted on
    by["\x1b[2Jx"] = by.pop("a")
    assert "  protocol `\\x1b[2Jx`:" in confusions_text(merged, by)


def _cell(n: int) -> dict:
    counts = {"SATISFIED": n, "VIOLATED": 0, "UNKNOWN": 0, "unreviewed": 0, "gold_derived": 0}
    return {"replays": n, **counts}


def _index(tmp_path: Path, names: list[str]) -> str:
    html = tmp_path / "html"
    args = ["audit", *(str(EXAMPLES / n) for n in names), "--out", str(tmp_path / "r.jsonl")]
    assert CliRunner().invoke(main, [*args, "--html", str(html)]).exit_code == 0
    return (html / "index.html").read_text(encoding="utf-8")


def test_the_html_index_shows_one_table_per_protocol(tmp_path: Path) -> None:
    page = _index(tmp_path, MIXED)
    assert page.count('<table class="cross confusion">') == 4
    for name in ("factual_claims", "factual_claims_disclosed", "claim_parts", "graded_fact"):
        assert f"<h3>protocol <code>{name}</code></h3>" in page
    # no table crosses labels of two protocols
    assert '<th scope="col">PASS</th><th scope="col">FAIL</th><th scope="col">partially' not in page


def test_the_html_index_of_one_protocol_has_one_unnamed_table(tmp_path: Path) -> None:
    page = _index(tmp_path, BINARY)
    assert page.count('<table class="cross confusion">') == 1
    assert "<h3>protocol" not in page and "One table per protocol" not in page


def test_the_html_index_groups_rows_by_protocol_without_a_summary(tmp_path: Path) -> None:
    _, _, lines = _audit(tmp_path, MIXED)
    page = render_index({}, [index_row(ResultRecord.from_line(o), "r.html") for o in lines])
    assert page.count('<table class="cross confusion">') == 4
    assert "<h3>protocol <code>graded_fact</code></h3>" in page
