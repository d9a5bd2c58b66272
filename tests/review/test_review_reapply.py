"""`unmask review --apply` run again on the same review file: a decision its replay holds
already is counted and skipped, never refused nor written twice; a decision left out the
first time lands when its record differs from the exported one only by decisions of this
file (its exported bytes rebuilt exactly), and is refused, saying why, when anything else
in the record changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RULE = {"kind": "rule", "name": "outside-knowledge/1", "reviewed": False}


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def case(name: str) -> dict:
    doc = json.loads((EXAMPLES / "case_b.json").read_text())
    doc["id"] = name
    doc["verdict"] = "PASS"  # a finding on the verdict too: several lines per record
    for a in doc["annotations"]:
        a["by"] = RULE
    return doc


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two JSON Lines records as `json.dumps` writes them, and a replay indented by two."""
    shutil.copy(EXAMPLES / "factual_claims.proto", tmp_path)
    (tmp_path / "batch.jsonl").write_text("".join(json.dumps(case(n)) + "\n" for n in "ab"))
    (tmp_path / "w.json").write_text(json.dumps(case("w"), indent=2))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def exported() -> list[dict]:
    r = run("review", "batch.jsonl", "w.json", "--export", "review.jsonl")
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in Path("review.jsonl").read_text().splitlines()]
    assert len({x["location"] for x in lines}) == 3 and len(lines) > 6
    for x in lines:
        x.update(decision="accept", reviewer="ana")
    return lines


def write(lines: list[dict]) -> None:
    Path("review.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def replays() -> dict[str, bytes]:
    return {p: Path(p).read_bytes() for p in ("batch.jsonl", "w.json")}


def test_a_fully_applied_file_applied_again_is_all_already_applied(folder: Path) -> None:
    lines = exported()
    lines[0].update(decision="reject", value="UNKNOWN")  # evidence emptied, kept in original
    write(lines)
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 0 and f"applied {len(lines)} decisions, refused 0 lines" in r.output
    once = replays()
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 0, r.output
    assert f"applied 0 decisions, {len(lines)} already applied, refused 0 lines" in r.output
    assert "changed since" not in r.output and "error" not in r.output
    assert replays() == once  # nothing written


def test_the_line_left_out_lands_on_the_second_run(folder: Path) -> None:
    lines = exported()
    lines[1].update(decision="reject", value="UNKNOWN")  # evidence emptied, kept in original
    write(lines)
    assert run("review", "--apply", "review.jsonl").exit_code == 0
    in_one_go = replays()
    # the replays as exported again, and the same decisions with a typo on one line of each
    # replay (the UNKNOWN one among them): the rest lands, the typos are refused
    (folder / "batch.jsonl").write_text("".join(json.dumps(case(n)) + "\n" for n in "ab"))
    (folder / "w.json").write_text(json.dumps(case("w"), indent=2))
    typos = {1, _first(lines, "batch.jsonl:1"), _first(lines, "w.json")}
    write([dict(x, decision="anwser") if i in typos else x for i, x in enumerate(lines)])
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1 and f"refused {len(typos)} lines" in r.output
    assert "unknown decision `anwser`" in r.output
    write(lines)  # the typos fixed: each record holds some of this file's decisions already
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 0, r.output
    done = f"applied {len(typos)} decisions, {len(lines) - len(typos)} already applied"
    assert done + ", refused 0 lines" in r.output
    assert replays() == in_one_go  # byte for byte what one run of the whole file writes


def _first(lines: list[dict], location: str) -> int:
    return next(i for i, x in enumerate(lines) if x["location"] == location and i != 1)


def test_a_record_changed_otherwise_is_still_refused_saying_so(folder: Path) -> None:
    lines = exported()
    k = _first(lines, "batch.jsonl:1")
    write([dict(x, decision="anwser") if i == k else x for i, x in enumerate(lines)])
    assert run("review", "--apply", "review.jsonl").exit_code == 1
    # someone else changes the record: one space, nowhere near the annotations
    records = Path("batch.jsonl").read_text().split("\n")
    records[0] = records[0].replace('"verdict": ', '"verdict":  ', 1)
    Path("batch.jsonl").write_text("\n".join(records))
    before = replays()
    write(lines)
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1, r.output
    assert f"applied 0 decisions, {len(lines) - 1} already applied, refused 1 line" in r.output
    assert (
        f"review.jsonl:{k + 1}:1: error: the replay at `batch.jsonl:1` holds decisions of this "
        "review file already, and it cannot be shown that nothing else in it changed"
    ) in r.output
    assert "export again to review the rest" in r.output
    assert replays() == before


def test_a_decision_by_another_reviewer_is_not_already_applied(folder: Path) -> None:
    lines = exported()
    write(lines)
    assert run("review", "--apply", "review.jsonl").exit_code == 0
    once = replays()
    lines[0]["reviewer"] = "bob"  # not what the replay holds: the record changed since
    write(lines)
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1 and "refused 1 line" in r.output
    assert f"{len(lines) - 1} already applied" in r.output
    assert f"the replay at `{lines[0]['location']}` holds decisions of this" in r.output
    assert replays() == once


def test_a_record_changed_with_no_decision_of_the_file_in_it_says_changed(folder: Path) -> None:
    lines = exported()
    write(lines)
    Path("w.json").write_text(Path("w.json").read_text() + "\n")
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1 and "already applied" not in r.output
    assert "the replay at `w.json` changed since the export" in r.output


def test_an_annotation_whose_review_says_another_original_is_not_already_applied(
    folder: Path,
) -> None:
    lines = exported()
    write(lines)
    assert run("review", "--apply", "review.jsonl").exit_code == 0
    doc = json.loads(Path("w.json").read_text())
    k = _first(lines, "w.json")
    ann = next(a for a in doc["annotations"] if a["atom"] == lines[k]["atom"])
    ann["review"]["original"]["by"] = {"kind": "model", "name": "other", "reviewed": False}
    Path("w.json").write_text(json.dumps(doc, indent=2))  # as if decided from another export
    before = replays()
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1 and f"{len(lines) - 1} already applied, refused 1 line" in r.output
    assert f"review.jsonl:{k + 1}:1: error: the replay at `w.json` holds decisions" in r.output
    assert replays() == before


def test_replays_of_other_layouts_are_rebuilt_too(folder: Path) -> None:
    layouts = {
        "crlf": (2, "\r\n", None),
        "four": (4, "\n", None),
        "compact": (None, "\n", (",", ":")),
    }
    for name, (indent, nl, seps) in layouts.items():
        text = json.dumps(case(name), indent=indent, separators=seps).replace("\n", nl)
        Path(f"{name}.json").write_bytes(text.encode())
    r = run("review", *(f"{n}.json" for n in layouts), "--export", "review.jsonl")
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in Path("review.jsonl").read_text().splitlines()]
    for x in lines:
        x.update(decision="accept", reviewer="ana")
    typos = {_first(lines, f"{n}.json") for n in layouts}
    write([dict(x, decision="anwser") if i in typos else x for i, x in enumerate(lines)])
    assert run("review", "--apply", "review.jsonl").exit_code == 1
    write(lines)
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 0, r.output
    assert f"applied 3 decisions, {len(lines) - 3} already applied, refused 0 lines" in r.output
    assert b"\r\n" in Path("crlf.json").read_bytes()
