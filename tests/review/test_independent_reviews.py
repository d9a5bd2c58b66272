"""The second, blind readings of the studies' findings: each docs table is recounted from the
readings committed beside the tests, so a page cannot drift from what the reader said.

Each line of ``tests/data/reviews/*.jsonl`` is one judgment the reader saw without knowing
Unmask's status: the replay, Unmask's overall status (``unmask``), and the reader's answer
(``reviewer``: yes = breaks the protocol, no, unclear).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REVIEWS = ROOT / "tests" / "data" / "reviews"
ANSWERS = ("yes", "no", "unclear")


def table(name: str) -> str:
    rows = [json.loads(x) for x in (REVIEWS / name).read_text(encoding="utf-8").splitlines()]
    assert {r["reviewer"] for r in rows} <= set(ANSWERS)
    if "follows_findings" in rows[0]:  # one requirement's findings against the rest
        head, statuses = "`follows_findings`", ("VIOLATED", "not flagged")
        count = Counter(
            ("VIOLATED" if r["follows_findings"] == "VIOLATED" else "not flagged", r["reviewer"])
            for r in rows
        )
    else:
        head, statuses = "Unmask's status", ("VIOLATED", "SATISFIED")
        count = Counter((r["unmask"], r["reviewer"]) for r in rows)
    lines = [
        f"| {head} | reader: breaks | reader: does not | reader: unclear |",
        "|---|---|---|---|",
    ]
    for status in statuses:
        lines.append(f"| {status} | " + " | ".join(str(count[status, a]) for a in ANSWERS) + " |")
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("readings", "page"),
    [
        ("wice-independent.jsonl", "study-wice-review.md"),
        ("wice-subclaim-independent.jsonl", "study-wice-review.md"),
        ("factcc-independent.jsonl", "study-factcc.md"),
        ("realmistake-independent.jsonl", "study-realmistake.md"),
        ("realmistake-follows-findings.jsonl", "study-realmistake.md"),
    ],
)
def test_the_pages_table_is_the_recount_of_the_blind_readings(readings: str, page: str) -> None:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    assert table(readings) in text


def test_the_wice_reading_covers_every_violated_finding_of_the_frozen_run() -> None:
    rows = [
        json.loads(x)
        for x in (REVIEWS / "wice-independent.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    violated = [r for r in rows if r["unmask"] == "VIOLATED"]
    assert len(violated) == 21 and len({r["replay"] for r in rows}) == len(rows)
    assert all(r["violated"] == ["verdict"] for r in violated)


def test_the_subclaim_reading_covers_every_finding_of_the_held_out_run() -> None:
    # round 4: every VIOLATED and every SATISFIED replay of the subclaim run, read blind
    rows = [
        json.loads(x)
        for x in (REVIEWS / "wice-subclaim-independent.jsonl").read_text("utf-8").splitlines()
    ]
    count = Counter(r["unmask"] for r in rows)
    assert count == {"VIOLATED": 17, "SATISFIED": 13} and len({r["replay"] for r in rows}) == 30
    assert all(r["violated"] == ["verdict"] for r in rows if r["unmask"] == "VIOLATED")
    assert all(r["replay"].split("/")[1].startswith("claim-") for r in rows)
