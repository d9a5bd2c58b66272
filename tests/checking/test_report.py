"""The report: the fixed fields in their documented order, the canonical bytes, exit codes, gold
fields, and every example's fixed fields against tests/data/examples_expected.json."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.checking.test_checker import CASES, case_replay
from unmask.api import check
from unmask.checking.report import EXIT_CODES, SCHEMA, Report, dumps
from unmask.replay.load import load_replay

FIXED = [
    "schema",
    "replay",
    "backend",
    "overall",
    "bases",
    "verdict",
    "requirements",
    "grounding",
    "unannotated",
    "gold",
    "verdict_matches_gold",
]


def _report(name: str = "case-b") -> Report:
    return check(case_replay(name), "z3")


def test_fixed_fields_first_in_spec_order() -> None:
    j = _report().to_json()
    assert list(j)[: len(FIXED)] == FIXED
    assert j["schema"] == SCHEMA == "unmask.report/1"
    assert list(j["bases"]) == ["proto", "evid", "all"]
    assert list(j["verdict"])[:2] == ["observed", "status"]
    assert list(j["requirements"][0])[:3] == ["id", "status", "coverage"]
    assert list(j["grounding"][0])[:3] == ["judge", "context", "status"]


def test_dumps_is_the_canonical_bytes() -> None:
    r = _report()
    text = dumps(r)
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert json.loads(text) == r.to_json()
    assert text == json.dumps(r.to_json(), ensure_ascii=False, indent=2) + "\n"


def test_non_ascii_is_written_as_is(examples_dir: Path) -> None:
    r = check(load_replay(examples_dir / "case_unicode.json"), "z3")
    text = dumps(r)
    assert "\\u" not in text
    assert any(ord(ch) > 127 for ch in text)


@pytest.mark.parametrize(
    ("name", "overall", "code"),
    [("case-a", "SATISFIED", 0), ("case-b", "VIOLATED", 1), ("case-d", "VIOLATED", 1)],
)
def test_exit_code_follows_overall(name: str, overall: str, code: int) -> None:
    r = _report(name)
    assert (r.overall, r.exit_code) == (overall, code)
    assert EXIT_CODES == {"SATISFIED": 0, "VIOLATED": 1, "UNKNOWN": 3}


def test_gold_fields() -> None:
    r = _report("case-c")  # observed PASS, gold FAIL
    assert (r.gold, r.verdict_matches_gold) == ("FAIL", False)
    assert r.with_gold("PASS").verdict_matches_gold is True
    assert r.with_gold(None).to_json()["verdict_matches_gold"] is None
    assert r.gold == "FAIL"  # with_gold made a new report


def test_report_is_frozen() -> None:
    r = _report()
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.overall = "SATISFIED"  # type: ignore[misc]


def test_additions_are_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "report-format.md").read_text(
        encoding="utf-8"
    )
    j = _report().to_json()
    for key in j:
        assert f"`{key}`" in doc, key
    for key in j["requirements"][0]:
        assert f"`{key}`" in doc, key
    for key in j["verdict"]["explanation"]["parts"][0]:
        assert f"`{key}`" in doc, key


def test_every_example_matches_expected(examples_dir: Path, backend_name: str) -> None:
    expected = json.loads(
        (examples_dir.parent / "tests" / "data" / "examples_expected.json").read_text()
    )
    names = [k for k in expected if not k.startswith("_")]
    assert len(names) >= 4
    for name in names:
        report = check(load_replay(examples_dir / name), backend_name).to_json()
        want = expected[name]
        for key, value in want.items():
            if key in ("requirements", "grounding"):
                got = [{k: item[k] for k in value[0]} for item in report[key]]
                assert got == value, (name, key)
            elif key == "verdict":
                assert {k: report[key][k] for k in value} == value, name
            else:
                assert report[key] == value, (name, key)


def test_examples_and_in_code_cases_agree(examples_dir: Path) -> None:
    # the in-code cases used across the tests are the same four cases as the examples
    for name in CASES:
        mine = _report(name).to_json()
        theirs = check(load_replay(examples_dir / f"{name.replace('-', '_')}.json"), "z3")
        for key in ("overall", "bases"):
            assert mine[key] == theirs.to_json()[key]
        assert mine["verdict"]["status"] == theirs.verdict.result.status


# --- the text format ------------------------------------------------------------------------


def test_text_shows_quotes_of_violations_and_marks_possibilities() -> None:
    from tests.checking.test_checker import factual_protocol, make_replay
    from unmask.render.text import render

    replay = case_replay("case-b")
    lines = render(check(replay, "z3"), replay).splitlines()
    assert lines[0] == "case-b: VIOLATED"
    i = lines.index("  requirement `context_only` (Use only supplied context): REFUTED")
    # a finding says first what it rests on: here one annotation with no `by`, reviewed
    assert lines[i + 1].strip() == "confirmed: rests on reviewed human"
    assert lines[i + 2].strip() == "refuted by"
    assert lines[i + 3].strip() == "- annotation `external` = TRUE"
    assert lines[i + 4].strip().startswith("rationale[10:20]")

    values = {"j_joined": "TRUE", "c_joined": "TRUE", "external": "FALSE"}
    replay = make_replay(factual_protocol(), "PASS", values)
    text = render(check(replay, "z3"), replay)
    assert "could hold with: j_joined=TRUE (observed), j_cto=TRUE (possible), verdict PASS" in text
    assert "unannotated (unknown, never read as false): j_cto, c_cto" in text
    assert "\x1b[" not in text
    assert "\x1b[" in render(check(replay, "z3"), replay, color=True)


def test_fields_of_labels_grounding_direction_and_provenance_are_documented() -> None:
    from tests.checking.test_checker import make_replay
    from tests.checking.test_labels_check import GOLD, MODEL, wice, with_by

    doc = (Path(__file__).resolve().parents[2] / "docs" / "report-format.md").read_text(
        encoding="utf-8"
    )
    values = {"said_a": "TRUE", "said_b": "FALSE", "backed_a": "FALSE"}
    replay = with_by(make_replay(wice(), "supported", values), {"said_b": MODEL, "backed_a": GOLD})
    j = check(replay, "z3").to_json()
    keys = {
        *j["verdict"],
        *j["grounding"][0],
        *j["requirements"][0],
        *(k for x in j["verdict"]["explanation"]["parts"] for k in x),
        *(k for x in j["grounding"][0]["explanation"]["parts"] for k in x),
    }
    assert {"allowed", "direction", "unreviewed", "gold_derived", "by", "label"} <= keys
    for key in keys:
        assert f"`{key}`" in doc, key
    for key in ("coverage_unreviewed", "coverage_gold_derived", "labels", "decision:LABEL"):
        assert f"`{key}`" in doc, key


def test_binary_report_keeps_its_keys_and_adds_allowed_and_direction() -> None:
    j = _report().to_json()
    assert list(j["verdict"]) == [
        "observed",
        "status",
        "allowed",
        "result",
        "explanation",
        "witnesses",
    ]
    assert list(j["grounding"][0]) == [
        "judge",
        "context",
        "status",
        "direction",
        "result",
        "explanation",
        "witnesses",
    ]
    assert j["verdict"]["allowed"] == ["FAIL"]
    parts = j["verdict"]["explanation"]["parts"]
    assert all(p["kind"] != "labels" and "label" not in p for p in parts)
