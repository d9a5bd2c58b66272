"""A replay whose protocol has overlapping decisions (two labels' decisions can both hold, no
`first-match`) is refused by every way of checking it, with the diagnostic `unmaskc` gives
for the same protocol and members: `unmask check` exits 4, `unmask audit` writes an error
record for it and goes on, a protocol of IR is located by its JSON path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.checking import overlap
from unmask.cli.main import main
from unmask.cli.unmaskc import cli as unmaskc
from unmask.ir.json import protocol_to_json
from unmask.language.compiler import compile_source
from unmask.plumbing import exitcodes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GRADED = (EXAMPLES / "graded_fact.proto").read_text(encoding="utf-8")
# P no longer excludes C: both hold when every fact is said and nothing contradicts
OVERLAPPING = GRADED.replace(
    "decision P iff some_has and not all_has and not contradicts",
    "decision P iff some_has and not contradicts",
)
REPLAYS = ("graded_fact_refuted.json", "graded_fact_satisfied.json")


def cli(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    assert OVERLAPPING != GRADED
    (tmp_path / "graded_fact.proto").write_text(OVERLAPPING, encoding="utf-8")
    for name in REPLAYS:
        shutil.copy(EXAMPLES / name, tmp_path)
    return tmp_path


def test_check_refuses_it_with_unmaskcs_diagnostic(folder: Path, monkeypatch) -> None:
    monkeypatch.chdir(folder)  # spans name the file as the replay does: `graded_fact.proto`
    got = cli("check", "graded_fact_refuted.json")
    assert got.exit_code == exitcodes.INVALID, got.output
    assert got.stdout == ""
    # the members the replay gives, passed to unmaskc: the same text, excerpt included
    compiled = CliRunner().invoke(unmaskc, ["graded_fact.proto", "--domain", "fact=place,year"])
    assert compiled.exit_code == exitcodes.ERRORS
    assert compiled.stderr.startswith(
        "graded_fact.proto:18:1: error: the decisions of `C` and `P` can both hold\n"
    )
    assert "both hold when `has(place)` = TRUE, `has(year)` = TRUE" in compiled.stderr
    assert got.stderr == compiled.stderr
    # crosscheck: no backend may check it, which is invalid input, not "nothing ran"
    crossed = cli("crosscheck", "graded_fact_refuted.json")
    assert crossed.exit_code == exitcodes.INVALID
    assert crossed.stderr == compiled.stderr
    # a CI format still gets its document recording the error
    sarif = cli("check", "graded_fact_refuted.json", "--format", "sarif")
    assert sarif.exit_code == exitcodes.INVALID
    assert "overlapping-decisions" in sarif.stdout


def test_audit_writes_an_error_record_for_each_and_goes_on(folder: Path) -> None:
    out = folder / "r.jsonl"
    alone = cli("audit", str(folder), "--out", str(out), "--quiet")
    assert alone.exit_code == exitcodes.INVALID, alone.output  # no valid replay at all
    for name in ("case_a.json", "factual_claims.proto"):  # another protocol's replay
        shutil.copy(EXAMPLES / name, folder)
    got = cli("audit", str(folder), "--out", str(out), "--quiet")
    assert got.exit_code == exitcodes.OK, got.output  # the batch went on
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [x["schema"] for x in lines] == ["unmask.result/2"] + ["unmask.error/1"] * 2
    for line in lines[1:]:
        (err,) = line["errors"]
        assert err["code"] == "overlapping-decisions"
        assert (err["span"]["line"], err["span"]["column"]) == (18, 1)
        assert err["span"]["file"].endswith("graded_fact.proto")
    # with the overlap gone, the same replays are checked
    (folder / "graded_fact.proto").write_text(GRADED, encoding="utf-8")
    cli("audit", str(folder), "--out", str(out), "--quiet")
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [x["schema"] for x in lines] == ["unmask.result/2"] * 3


def test_first_match_is_checked(folder: Path) -> None:
    ordered = OVERLAPPING.replace("verdict C | P | I", "verdict C | P | I first-match")
    (folder / "graded_fact.proto").write_text(ordered, encoding="utf-8")
    got = cli("check", str(folder / "graded_fact_satisfied.json"))
    assert got.exit_code == exitcodes.OK, got.output


def test_a_protocol_of_ir_is_located_by_its_json_path(folder: Path) -> None:
    p = compile_source(OVERLAPPING, "graded_fact.proto", {"fact": ["place", "year"]})
    replay = json.loads((folder / "graded_fact_refuted.json").read_text(encoding="utf-8"))
    replay["protocol"] = protocol_to_json(p)
    del replay["domains"]
    path = folder / "ir.json"
    path.write_text(json.dumps(replay), encoding="utf-8")
    got = cli("check", str(path))
    assert got.exit_code == exitcodes.INVALID, got.output
    assert got.stderr.startswith(
        f"{path}: protocol.decisions[1]: error: the decisions of `C` and `P` can both hold\n"
    )


def test_the_question_is_asked_once_per_protocol(folder: Path, monkeypatch) -> None:
    asked: list[str] = []
    real = overlap.overlap_diagnostics

    def spy(p, backend, note="", deadline=None):  # type: ignore[no-untyped-def]
        asked.append(p.name)
        return real(p, backend, note, deadline)

    monkeypatch.setattr(overlap, "overlap_diagnostics", spy)
    monkeypatch.setattr(overlap, "_MEMO", {})
    for name in REPLAYS:  # two replays with the same members: one compiled protocol
        cli("check", str(folder / name))
    assert asked == ["graded_fact"]


def test_a_backend_that_cannot_answer_refuses_nothing(folder: Path) -> None:
    # the truth table over its atom limit cannot decide the overlap: the check goes on and
    # says what it says of such a replay (exit 3, naming the limit), as before
    replay = json.loads((folder / "graded_fact_refuted.json").read_text(encoding="utf-8"))
    replay["domains"] = {"fact": [f"f{i}" for i in range(30)]}
    replay["annotations"] = []
    path = folder / "wide.json"
    path.write_text(json.dumps(replay), encoding="utf-8")
    table = cli("check", str(path), "--backend", "truthtable")
    assert table.exit_code == exitcodes.UNKNOWN, table.output
    assert "truthtable-limit" in table.stderr or "truth-table" in table.stderr
    sliced = cli("check", str(path), "--backend", "sliced")
    assert sliced.exit_code == exitcodes.INVALID
    assert "the decisions of `C` and `P` can both hold" in sliced.stderr


def test_the_overlap_questions_are_bounded_by_the_deadline(folder: Path) -> None:
    # n labels ask n^2/2 questions before the check starts; the check's deadline bounds
    # them too: a pair it leaves undecided refuses nothing, and the report says the
    # deadline cut it
    from unmask.backends import create
    from unmask.checking.explain import Deadline
    from unmask.replay.load import load_replay

    labels = [f"l{i}" for i in range(40)]
    src = ['protocol many "p"', *(f'atom a{i} : judge "a{i}"' for i in range(40))]
    src.append("verdict " + " | ".join(labels))
    src += [
        f"decision l{i} iff a{i} and not a{i + 1}" if i < 39 else "decision l39 otherwise"
        for i in range(40)
    ]
    replay = {
        "schema": "unmask.replay/1",
        "id": "many",
        "protocol": {"source": "\n".join(src) + "\n"},
        "sources": {"rationale": "r", "context": "c", "response": "s"},
        "verdict": "l0",
        "annotations": [],
    }
    path = folder / "many.json"
    path.write_text(json.dumps(replay), encoding="utf-8")
    loaded = load_replay(path)
    passed = Deadline(1, clock=lambda: 0.0)
    passed.end = -1.0  # already past
    assert overlap.overlap_diagnostics(loaded.protocol, create("sliced"), deadline=passed)
    found = overlap.overlap_diagnostics(loaded.protocol, create("sliced"), deadline=passed)
    assert {d.code for d in found} == {"overlap-undecided"}
    assert all("deadline" in d.notes[0] for d in found)
    full = overlap.overlap_diagnostics(loaded.protocol, create("sliced"))
    assert full and {d.code for d in full} == {"overlapping-decisions"}
    result = cli("check", str(path), "--deadline-ms", "1", "--format", "json")
    assert result.exit_code in (3, 4), result.output
