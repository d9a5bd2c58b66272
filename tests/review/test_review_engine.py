"""The review engine from Python, without the command line: the queue of a folder of replays
(``unmask.batch.reviewing.queue``), its lines exported, filled, read back and applied
(``unmask.review.lines``), an interactive session's decisions applied and kept
(``unmask.review.session``), a sample drawn and the calibration counted from it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from unmask.backends import create
from unmask.batch.reviewing import calibrate, queue, sample
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.limits import DEFAULT_LIMITS
from unmask.review.lines import apply_review, export_line, read_review
from unmask.review.queue import dumps
from unmask.review.session import Session, load_state

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RULE = {"kind": "rule", "name": "outside-knowledge/1", "reviewed": False}
PATHS = ("b1.json", "b2.json")


@pytest.fixture
def replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two copies of case B whose `external` (the context_only finding) is a rule's reading."""
    shutil.copy(EXAMPLES / "factual_claims.proto", tmp_path)
    for name in ("b1", "b2"):
        doc = json.loads((EXAMPLES / "case_b.json").read_text())
        doc["id"] = name
        for a in doc["annotations"]:
            if a["atom"] == "external":
                a["by"] = RULE
        (tmp_path / f"{name}.json").write_text(json.dumps(doc, indent=2))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _external(path: Path) -> dict:
    doc = json.loads(path.read_text())
    return next(a for a in doc["annotations"] if a["atom"] == "external")


def test_the_queue_lists_the_readings_findings_rest_on_and_the_unreadable(replays: Path) -> None:
    (replays / "bad.json").write_text("{")
    got = queue((*PATHS, "bad.json"), ".", DEFAULT_LIMITS, create("sliced"), 20, True)
    assert [(i.location, i.atom, i.value, i.checks) for i in got.items] == [
        ("b1.json", "external", "TRUE", ["requirement context_only"]),
        ("b2.json", "external", "TRUE", ["requirement context_only"]),
    ]
    # each quote's context is the window asked for, around the quote
    e = got.items[0].evidence[0]
    before, after = e["context"].split(f"[[{e['quote']}]]")
    assert len(before.lstrip("…")) == len(after.rstrip("…")) == 20
    assert [x.diagnostics[0].file for x in got.errors] == ["bad.json"]
    # without `findings_only` nothing passing rests on a reading here, so the same two
    assert len(queue(PATHS, ".", DEFAULT_LIMITS, create("sliced")).items) == 2


def test_exported_lines_filled_in_are_read_back_and_applied(replays: Path) -> None:
    items = queue(PATHS, ".", DEFAULT_LIMITS, create("sliced")).items
    lines = [export_line(i, None) for i in items]
    assert all(x["digest"].startswith("sha256:") and x["decision"] == "" for x in lines)
    lines[0].update(decision="accept", reviewer="ana")
    lines[1].update(decision="reject", value="FALSE")  # its reviewer: the default one
    Path("review.jsonl").write_text("".join(dumps(x) + "\n" for x in lines) + "not json\n")
    decisions, bad = read_review("review.jsonl", DEFAULT_LIMITS, "ben")
    assert [(d.location, d.decision, d.reviewer) for d in decisions] == [
        ("b1.json", "accept", "ana"),
        ("b2.json", "reject", "ben"),
    ]
    assert [(d.code, d.span.line if d.span else None) for d in bad] == [("review-line", 3)]
    applied, already, refused, digests = apply_review(
        decisions, "review.jsonl", ".", DEFAULT_LIMITS
    )
    assert (applied, already, refused) == (2, 0, [])
    assert set(digests) == set(PATHS)
    b1, b2 = _external(replays / "b1.json"), _external(replays / "b2.json")
    assert (b1["value"], b1["by"]["name"], b1["by"]["reviewed"]) == ("TRUE", "ana", True)
    assert (b2["value"], b2["by"]["name"]) == ("FALSE", "ben")
    # applied again: each replay holds its decision already, and nothing is written
    again = apply_review(decisions, "review.jsonl", ".", DEFAULT_LIMITS)
    assert again[:3] == (0, 2, [])


def test_a_review_file_that_cannot_be_read_raises_with_its_diagnostic(replays: Path) -> None:
    with pytest.raises(UnmaskError) as caught:
        read_review("missing.jsonl", DEFAULT_LIMITS, None)
    assert "missing.jsonl" in caught.value.diagnostics[0].message


def test_a_session_applies_each_decision_at_once_and_resumes_from_its_state(
    replays: Path,
) -> None:
    items = queue(PATHS, ".", DEFAULT_LIMITS, create("sliced")).items
    session = Session("state.jsonl", ".", DEFAULT_LIMITS, "ana")
    assert session.note is None and session.todo(items) == items
    assert session.decide(items[0], "reject", "FALSE", items[1:]) == []
    assert _external(replays / "b1.json")["value"] == "FALSE"
    kept = [json.loads(x) for x in Path("state.jsonl").read_text().splitlines()]
    assert [(x["location"], x["decision"], x["applied"]) for x in kept] == [
        ("b1.json", "reject", True)
    ]
    # a new session over the same state asks only for what is left
    later = Session("state.jsonl", ".", DEFAULT_LIMITS, "ana")
    assert [i.location for i in later.todo(items)] == ["b2.json"]
    assert later.decide(items[1], "skip") == []
    assert _external(replays / "b2.json")["value"] == "TRUE"  # a skip writes nothing


def test_a_state_line_torn_by_a_kill_is_cut_off_and_said(replays: Path) -> None:
    Path("state.jsonl").write_text('{"location": "b1.json", "atom": "ext')
    state, note = load_state("state.jsonl")
    assert state == {} and note == "the last line of `state.jsonl` was cut short: left out"
    assert Path("state.jsonl").read_text() == ""
    Path("state.jsonl").write_text("not a line\n{}\n")
    with pytest.raises(UnmaskError) as caught:
        load_state("state.jsonl")
    d = caught.value.diagnostics[0]
    assert (d.code, d.message, d.span.line if d.span else None) == (
        "review-line",
        "not a review line",
        1,
    )


def test_a_sample_is_drawn_applied_and_counted_into_a_calibration(replays: Path) -> None:
    drawn = sample(PATHS, 1, 7, False, ".", 40, DEFAULT_LIMITS)
    assert drawn.size == 2 and len(drawn.lines) == 1 and drawn.errors == []
    assert sample(PATHS, 1, 7, False, ".", 40, DEFAULT_LIMITS).lines == drawn.lines
    everything = sample(PATHS, 5, 7, True, ".", 40, DEFAULT_LIMITS)
    assert len(everything.lines) == 2 and all("current" not in x for x in everything.lines)
    line = dict(drawn.lines[0], decision="accept", reviewer="ana")
    Path("sample.jsonl").write_text(dumps(line) + "\n")
    decisions, bad = read_review("sample.jsonl", DEFAULT_LIMITS, None)
    assert bad == [] and apply_review(decisions, "sample.jsonl", ".", DEFAULT_LIMITS)[0] == 1
    measured = calibrate(PATHS, "two copies of case B", DEFAULT_LIMITS)
    assert measured.problems == [] and measured.replays == 2
    assert list(measured.by_reader.values()) == [(1, 1)]  # one reviewed, upheld
    calibration = json.loads(measured.calibration.dumps())
    assert calibration["data"] == "two copies of case B"
    assert [p["name"] for p in calibration["protocols"]] == ["factual_claims"]
