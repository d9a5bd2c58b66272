"""`unmask import --out DIR` writes only regular files directly inside DIR: a link found
there is never written through (a link named as a replay refuses the import; one put there
meanwhile is skipped), a name taken by anything else is skipped with one line, temporary
files of a killed import are removed by the next, and no file name reads as a shell option.
Issue 28. Which replays in DIR an import may replace: tests/producers/test_import_mixing.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import TEST_DATA
from tests.producers.test_importers import RECORDS, jsonl, mapping
from unmask.cli.main import main
from unmask.importers import safe_name
from unmask.plumbing.outputs import atomic, remove_stale_temps, write_in_folder

PROMPTFOO = TEST_DATA / "importers" / "promptfoo-sample-export.json"
MAIN = "from unmask.cli.main import main; main()"


def imp(tool: str, src: Path, out: Path, *extra: str):
    return CliRunner().invoke(main, ["import", tool, str(src), "--out", str(out), *extra])


def test_a_link_in_the_output_folder_is_never_written_through(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    notes = victim / "notes.txt"
    notes.write_text("keep me", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "t0-p0.json").symlink_to(Path("..") / "victim" / "notes.txt")
    # a link named as a replay is no import's own: the import is refused before anything is
    # written, `--replace` or not, and the link is left alone
    for extra in ((), ("--replace",)):
        res = imp("promptfoo", PROMPTFOO, out, *extra)
        assert res.exit_code == 2, res.stderr
        assert "holds 1 `*.json` file that no `unmask import` wrote there" in res.stderr
        assert notes.read_text(encoding="utf-8") == "keep me"
        assert (out / "t0-p0.json").is_symlink()
        assert sorted(p.name for p in out.iterdir()) == ["t0-p0.json"]


def test_a_link_swapped_in_while_importing_is_skipped_with_one_line(tmp_path):
    # a link that appears after the folder was looked at: the one name is left alone
    victim = tmp_path / "notes.txt"
    victim.write_text("keep me", encoding="utf-8")
    (tmp_path / "t0-p0.json").symlink_to(victim)
    why = write_in_folder(tmp_path, "t0-p0.json", b"{}")
    assert why == "`t0-p0.json` in the output folder is a symbolic link, not a regular file"
    assert victim.read_text(encoding="utf-8") == "keep me"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_name_taken_by_a_folder_or_a_pipe_is_skipped_never_a_hang(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "t0-p1.json").mkdir()
    os.mkfifo(out / "t1-p0.json")
    res = imp("promptfoo", PROMPTFOO, out)
    assert res.exit_code == 1
    assert "`t0-p1.json` in the output folder is a folder" in res.stderr
    assert "`t1-p0.json` in the output folder is a named pipe" in res.stderr
    assert (out / "t0-p1.json").is_dir() and not (out / "t1-p0.json").is_file()
    assert json.loads((out / "t0-p0.json").read_text(encoding="utf-8"))["schema"]


def test_a_replay_replaced_by_a_rerun_keeps_its_other_names_text(tmp_path):
    out = tmp_path / "out"
    assert imp("promptfoo", PROMPTFOO, out).exit_code == 0
    # the same bytes under another name too (a hard link): still the import's own, unchanged
    victim = tmp_path / "victim.json"
    os.link(out / "t0-p0.json", victim)
    kept = victim.read_bytes()
    res = imp("promptfoo", PROMPTFOO, out)
    assert res.exit_code == 0, res.stderr
    assert victim.read_bytes() == kept and victim.stat().st_nlink == 1
    assert json.loads((out / "t0-p0.json").read_text(encoding="utf-8"))["schema"]


def test_a_hard_link_to_another_file_is_not_the_imports_and_is_never_touched(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    os.link(victim, out / "t0-p0.json")
    assert imp("promptfoo", PROMPTFOO, out, "--replace").exit_code == 2
    assert victim.read_text(encoding="utf-8") == "keep me"
    assert (out / "t0-p0.json").read_text(encoding="utf-8") == "keep me"


def test_a_link_swapped_in_after_the_check_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    target = tmp_path / "r.json"
    with atomic(str(target), "w", follow=False) as fh:
        target.symlink_to(victim)  # the race: a link appears while the file is written
        fh.write("new")
    assert victim.read_text(encoding="utf-8") == "keep me"
    assert not target.is_symlink() and target.read_text(encoding="utf-8") == "new"


def test_write_in_folder_takes_only_a_plain_name(tmp_path):
    for bad in ("", ".", "..", "a/b", "../x.json"):
        with pytest.raises(ValueError):
            write_in_folder(tmp_path, bad, b"x")
    assert write_in_folder(tmp_path, "ok.json", b"x") is None
    assert (tmp_path / "ok.json").read_bytes() == b"x"


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_rerun_removes_the_temporary_files_a_killed_import_left(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    stale = out / f".unmask-{_dead_pid()}-abc123_x.tmp"
    stale.write_text("half a replay", encoding="utf-8")
    live = out / f".unmask-{os.getpid()}-abc123_x.tmp"  # a running writer's: kept
    live.write_text("being written", encoding="utf-8")
    other = out / ".notes.tmp"  # not of our naming: kept
    other.write_text("mine", encoding="utf-8")
    assert imp("promptfoo", PROMPTFOO, out).exit_code == 0
    assert not stale.exists() and live.exists() and other.exists()


def test_stale_temporaries_are_only_regular_files_of_our_naming(tmp_path):
    dead = _dead_pid()
    (tmp_path / "victim").mkdir()
    kept = [
        tmp_path / f".unmask-{dead}-abc.tmp.json",
        tmp_path / f"unmask-{dead}-abc.tmp",
        tmp_path / ".unmask-x-abc.tmp",
    ]
    for k in kept:
        k.write_text("x", encoding="utf-8")
    link = tmp_path / f".unmask-{dead}-link.tmp"
    link.symlink_to(tmp_path / "victim")
    folder = tmp_path / f".unmask-{dead}-dir.tmp"
    folder.mkdir()
    assert remove_stale_temps(tmp_path) == 0
    assert all(k.exists() for k in kept) and link.is_symlink() and folder.is_dir()


def test_kill_9_during_an_import_leaves_nothing_a_rerun_keeps(tmp_path):
    # many records, so the import is still writing when it is killed
    records = [json.dumps({**RECORDS[1], "qid": f"q{i}"}) for i in range(1000)]
    src = jsonl(tmp_path, records)
    m = mapping(tmp_path)
    out = tmp_path / "out"
    args = [sys.executable, "-c", MAIN, "import", "jsonl", str(src), "--out", str(out)]
    args += ["--mapping", str(m)]
    for delay in (0.0, 0.03):
        proc = subprocess.Popen(args, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not (out.is_dir() and any(out.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # whatever the kills left, a re-run ends with the replays and no temporary file
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    names = [p.name for p in out.iterdir()]
    assert not [n for n in names if n.endswith(".tmp")]
    assert len(names) == 1001 and ".unmask-import" in names  # the replays and the manifest


def test_ids_that_read_as_options_are_escaped(tmp_path):
    assert safe_name("-rf") == "_-rf"
    assert safe_name("--out") == "_--out"
    assert safe_name("..-x") == "_-x"  # what is left after the hidden dots, escaped too
    assert safe_name("a-b") == "a-b"
    lines = [json.dumps({**RECORDS[1], "qid": q}) for q in ("-rf", "--out", "ok")]
    out = tmp_path / "out"
    res = imp("jsonl", jsonl(tmp_path, lines), out, "--mapping", str(mapping(tmp_path)))
    assert res.exit_code == 0, res.stderr
    names = sorted(p.name for p in out.glob("*.json"))
    assert names == ["_--out.json", "_-rf.json", "ok.json"]
    assert not [n for n in names if n.startswith("-")]
