"""`unmask annotate --out DIR` and `unmask propose replay --out DIR` never mix two runs'
replays in one folder, as `unmask import` does not (test_import_mixing): a later `unmask
audit DIR` would audit both. Another run's replays are refused (exit 2, `other-replays`)
unless `--replace`; a re-run of the same inputs replaces its own; a file no run wrote is
never removed; a folder the run reads from is never its output."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main
from unmask.replay.outfolder import MANIFEST

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def annotate(tmp_path: Path, out: Path, *inputs: str, extra: tuple[str, ...] = ()):
    """`unmask annotate` with a person's readings (none): no model, every replay written."""
    empty = tmp_path / "none.jsonl"
    empty.write_text("", encoding="utf-8")
    paths = [str(EXAMPLES / i) for i in inputs]
    return cli(
        "annotate", *paths, "--from", str(empty), "--reader", "ana", "--out", str(out), *extra
    )


def propose(tmp_path: Path, out: Path, *inputs: str, extra: tuple[str, ...] = ()):
    return cli("propose", "replay", *[str(EXAMPLES / i) for i in inputs], "--out", str(out), *extra)


RUNS = {"annotate": annotate, "propose": propose}


def replays(out: Path) -> list[str]:
    return sorted(p.name for p in out.glob("*.json"))


@pytest.mark.parametrize("command", sorted(RUNS))
def test_a_run_of_other_inputs_is_refused_and_the_folder_left_as_it_was(tmp_path, command):
    run, out = RUNS[command], tmp_path / "out"
    assert run(tmp_path, out, "case_a.json").exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    res = run(tmp_path, out, "case_b.json")
    assert res.exit_code == 2
    assert res.stderr.startswith(
        f"error: the output folder `{out}` holds 1 replay of an earlier run (`{command}` of"
        " `case_a.json`), e.g. `case-a.json`: an audit of the folder would mix it with this run's"
    )
    assert "pass `--replace` to replace them" in res.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize("command", sorted(RUNS))
def test_replace_removes_the_earlier_runs_replays_and_lists_only_the_new(tmp_path, command):
    run, out = RUNS[command], tmp_path / "out"
    assert run(tmp_path, out, "case_a.json").exit_code == 0
    res = run(tmp_path, out, "case_b.json", "case_c.json", extra=("--replace",))
    assert res.exit_code == 0, res.stderr
    assert f"{out}: note: replaced 1 replay an earlier run (`{command}` of `case_a.json`)" in (
        res.stderr
    )
    assert replays(out) == ["case-b.json", "case-c.json"]
    head, *lines = [json.loads(x) for x in (out / MANIFEST).read_text("utf-8").splitlines()]
    assert (head["tool"], head["input"]) == (command, "case_b.json and 1 more")
    assert [x["file"] for x in lines] == ["case-b.json", "case-c.json"]


@pytest.mark.parametrize("command", sorted(RUNS))
def test_a_rerun_of_the_same_inputs_replaces_its_own(tmp_path, command):
    run, out = RUNS[command], tmp_path / "out"
    assert run(tmp_path, out, "case_a.json", "case_b.json").exit_code == 0
    first = (out / "case-a.json").read_bytes()
    res = run(tmp_path, out, "case_a.json", "case_b.json")
    assert res.exit_code == 0, res.stderr
    assert "replaced 2 replays an earlier run" in res.stderr
    assert replays(out) == ["case-a.json", "case-b.json"]
    assert (out / "case-a.json").read_bytes() == first


@pytest.mark.parametrize("command", sorted(RUNS))
def test_a_replay_no_run_wrote_is_never_removed_even_with_replace(tmp_path, command):
    run, out = RUNS[command], tmp_path / "out"
    out.mkdir()
    shutil.copy(EXAMPLES / "case_d.json", out / "mine.json")
    res = run(tmp_path, out, "case_a.json", extra=("--replace",))
    assert res.exit_code == 2
    assert (
        "holds 1 `*.json` file that no `unmask import`, `annotate` or `propose` wrote there,"
        " e.g. `mine.json`" in res.stderr
    )
    assert replays(out) == ["mine.json"] and not (out / MANIFEST).exists()


@pytest.mark.parametrize("command", sorted(RUNS))
def test_an_imports_replays_are_another_runs(tmp_path, command):
    """The manifest is the one `unmask import` writes: a folder it filled is refused too."""
    run, out = RUNS[command], tmp_path / "out"
    out.mkdir()
    shutil.copy(EXAMPLES / "case_d.json", out / "case-d.json")
    head = {"schema": "unmask.import-manifest/1", "tool": "jsonl", "input": "a.jsonl"}
    data = (out / "case-d.json").read_bytes()
    line = {"file": "case-d.json", "sha256": hashlib.sha256(data).hexdigest()}
    (out / MANIFEST).write_text(
        json.dumps({**head, "input_sha256": "0" * 64}) + "\n" + json.dumps(line) + "\n", "utf-8"
    )
    res = run(tmp_path, out, "case_a.json")
    assert res.exit_code == 2
    assert "holds 1 replay of an earlier run (`jsonl` of `a.jsonl`)" in res.stderr
    assert replays(out) == ["case-d.json"]


@pytest.mark.parametrize("command", sorted(RUNS))
def test_the_output_folder_is_never_one_the_run_reads(tmp_path, command):
    run, out = RUNS[command], tmp_path / "in"
    out.mkdir()
    for name in ("case_a.json", "factual_claims.proto"):
        shutil.copy(EXAMPLES / name, out / name)
    before = sorted(p.name for p in out.iterdir())
    for given in (out, out / "case_a.json"):
        res = run(tmp_path, out, str(given), extra=("--replace",))
        assert res.exit_code == 2
        assert res.stderr.startswith(f"error: `{given}` is read from the output folder `{out}`")
        assert sorted(p.name for p in out.iterdir()) == before


def test_a_rerun_with_an_unknown_proposer_is_refused_before_the_folder_is_touched(tmp_path):
    out = tmp_path / "out"
    assert propose(tmp_path, out, "case_a.json").exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    res = propose(tmp_path, out, "case_a.json", extra=("--proposer", "bogus"))
    assert res.exit_code == 2
    assert "bogus" in res.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # its replays kept
