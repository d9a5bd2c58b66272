"""`unmask audit` against hostile inputs and outputs: walks stay in their tree, unreadable
folders are recorded, `--jobs` is bounded, outputs are never inputs, write errors are a
diagnostic with exit 2, and `--resume` refuses a file that is not audit results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.batch.test_audit_cli import audited, lines_of, run
from tests.helpers import full_line
from unmask.bench import replay_line
from unmask.commands.audit import MAX_JOBS
from unmask.plumbing.outputs import OutputError, atomic, write_text
from unmask.replay import inputs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEV_FULL = Path("/dev/full")
needs_dev_full = pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full here")


def _replays(folder: Path, *names: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLES / "factual_claims.proto", folder / "factual_claims.proto")
    for n in names:
        shutil.copy(EXAMPLES / n, folder / n)


def _no_traceback(result) -> None:
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


# --- directory walks ------------------------------------------------------------------------


def test_a_link_out_of_the_tree_is_recorded_not_followed(tmp_path: Path) -> None:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    _replays(tree, "case_a.json")
    _replays(outside, "case_b.json", "case_c.json")
    (tree / "escape").symlink_to(outside, target_is_directory=True)
    (tree / "one.json").symlink_to(outside / "case_b.json")
    (tree / "root").symlink_to("/", target_is_directory=True)
    (tree / "same.json").symlink_to(tree / "case_a.json")  # inside the tree: audited

    tasks = list(inputs.iter_tasks([str(tree)]))
    assert [t.location for t in tasks] == [
        str(tree / "case_a.json"),
        str(tree / "escape"),
        str(tree / "one.json"),
        str(tree / "root"),
        str(tree / "same.json"),
    ]
    outside_ones = [t for t in tasks if t.problem is not None]
    assert {t.problem[0] for t in outside_ones} == {"outside-tree"}
    assert len(outside_ones) == 3
    assert inputs.count_tasks([str(tree)]) == 5

    out = tmp_path / "r.jsonl"
    result = run([str(tree), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    objs = lines_of(out)
    assert not any("outside" in o["location"] for o in objs)
    records = [o for o in objs if o["schema"] == "unmask.error/1"]
    assert [r["errors"][0]["code"] for r in records] == ["outside-tree"] * 3
    assert "not followed" in records[0]["errors"][0]["message"]


def test_the_named_directory_may_itself_be_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real"
    _replays(real / "sub", "case_a.json")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    tasks = list(inputs.iter_tasks([str(link)]))
    assert [(t.location, t.problem) for t in tasks] == [(str(link / "sub" / "case_a.json"), None)]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a folder whatever its mode")
def test_an_unreadable_folder_is_an_error_record(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    _replays(tree, "case_a.json")
    locked = tree / "locked"
    _replays(locked, "case_b.json")
    locked.chmod(0)
    try:
        out = tmp_path / "r.jsonl"
        result = run([str(tree), "--out", str(out), "--quiet"])
    finally:
        locked.chmod(0o755)
    assert result.exit_code == 0
    records = [o for o in lines_of(out) if o["schema"] == "unmask.error/1"]
    assert [(r["location"], r["errors"][0]["code"]) for r in records] == [(str(locked), "io")]


def test_a_folder_that_cannot_be_listed_is_an_error_record(tmp_path: Path, monkeypatch) -> None:
    tree = tmp_path / "tree"
    _replays(tree, "case_a.json")
    locked = tree / "locked"
    _replays(locked, "case_b.json")
    real_scandir = os.scandir

    def scandir(path):
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    tasks = list(inputs.iter_tasks([str(tree)]))
    assert [t.location for t in tasks] == [str(tree / "case_a.json"), str(locked)]
    code, message, _ = tasks[1].problem
    assert code == "io" and message == f"cannot read the directory `{locked}`: permission denied"
    out = tmp_path / "r.jsonl"
    assert run([str(tree), "--out", str(out), "--quiet"]).exit_code == 0
    assert [o["schema"] for o in lines_of(out)] == ["unmask.result/2", "unmask.error/1"]


def test_a_jsonl_path_that_is_a_fifo_is_an_error_record_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "runs.jsonl"
    os.mkfifo(fifo)
    code = "from unmask.cli.main import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "audit", str(fifo), "--quiet"],
        capture_output=True,
        timeout=60,
    )
    [obj] = [json.loads(x) for x in done.stdout.splitlines()]
    assert obj["schema"] == "unmask.error/1"
    assert "not a regular file" in obj["errors"][0]["message"]
    assert done.returncode == 4  # no valid replay at all


# --- --jobs -----------------------------------------------------------------------------------


def test_jobs_has_an_upper_bound() -> None:
    result = run([str(EXAMPLES / "case_a.json"), "--jobs", str(MAX_JOBS + 1)])
    assert result.exit_code == 2
    assert str(MAX_JOBS) in result.output
    assert MAX_JOBS >= 4


# --- outputs ----------------------------------------------------------------------------------


def test_an_output_that_is_an_input_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "x.jsonl"
    text = replay_line(2, 0, 0) + "\n"
    src.write_text(text)
    for option in ("--out", "--summary-json", "--junit"):
        result = run([str(src), option, str(src)])
        assert result.exit_code == 2, option
        assert "would overwrite the input" in result.stderr
        _no_traceback(result)
    # the same file by another name, and with --resume
    alias = tmp_path / "alias.jsonl"
    alias.symlink_to(src)
    result = run([str(src), "--out", str(alias), "--resume"])
    assert result.exit_code == 2
    assert src.read_text() == text


def test_an_output_inside_an_audited_folder_is_refused(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    _replays(tree, "case_a.json")
    result = run([str(tree), "--summary-json", str(tree / "summary.json")])
    assert result.exit_code == 2 and "would overwrite the input" in result.stderr
    out = tmp_path / "r.jsonl"
    assert run([str(tree), "--out", str(tree / "r.jsonl"), "--quiet"]).exit_code == 0
    assert not out.exists()


@needs_dev_full
@pytest.mark.parametrize("option", ["--out", "--junit", "--summary-json"])
def test_a_full_disk_is_a_diagnostic_and_exit_2(option: str) -> None:
    result = run([str(EXAMPLES / "case_a.json"), option, str(DEV_FULL), "--quiet"])
    assert result.exit_code == 2, result.output
    assert f"cannot write `{DEV_FULL}`: no space left on device" in result.stderr
    _no_traceback(result)


@pytest.mark.parametrize("option", ["--out", "--junit", "--summary-json"])
def test_a_missing_or_wrong_kind_of_folder_is_exit_2(tmp_path: Path, option: str) -> None:
    missing = tmp_path / "no" / "such" / "file.out"
    result = run([str(EXAMPLES / "case_a.json"), option, str(missing), "--quiet"])
    assert result.exit_code == 2, result.output
    assert f"cannot write `{missing}`" in result.stderr
    _no_traceback(result)
    a_file = tmp_path / "plain"
    a_file.write_text("")
    under_a_file = a_file / "out"
    result = run([str(EXAMPLES / "case_a.json"), option, str(under_a_file), "--quiet"])
    assert result.exit_code == 2
    _no_traceback(result)


def test_html_into_a_file_is_exit_2(tmp_path: Path) -> None:
    a_file = tmp_path / "plain"
    a_file.write_text("")
    result = run([str(EXAMPLES / "case_a.json"), "--html", str(a_file / "pages"), "--quiet"])
    assert result.exit_code == 2
    _no_traceback(result)


def test_html_pages_that_cannot_be_written_are_exit_2(tmp_path: Path, monkeypatch) -> None:
    from unmask.batch import files

    def full(path: str, data: bytes, **kw: object) -> None:
        raise OutputError([files.cannot_write(path, OSError(28, "No space left on device"))])

    monkeypatch.setattr(files, "write_bytes", full)
    result = run([str(EXAMPLES / "case_a.json"), "--html", str(tmp_path / "h"), "--quiet"])
    assert result.exit_code == 2
    assert "no space left on device" in result.stderr
    _no_traceback(result)


def test_html_pages_replace_a_link_at_their_name_never_write_through_it(tmp_path) -> None:
    # issue 33: `index.html -> ../victim.txt` in the folder asked for had the victim
    # replaced by the index; a page's name likewise
    html, victim = tmp_path / "html", tmp_path / "victim.txt"
    html.mkdir()
    victim.write_text("VICTIM", encoding="utf-8")
    (html / "index.html").symlink_to(Path("..") / "victim.txt")
    first = run([str(EXAMPLES / "rag_citations.json"), "--html", str(html), "--quiet"])
    assert first.exit_code in (0, 1), first.output
    [page] = [p for p in html.iterdir() if p.name != "index.html"]
    page.unlink()
    page.symlink_to(Path("..") / "victim.txt")
    (html / "index.html").unlink()
    (html / "index.html").symlink_to(Path("..") / "victim.txt")
    again = run([str(EXAMPLES / "rag_citations.json"), "--html", str(html), "--quiet"])
    assert again.exit_code == first.exit_code, again.output
    assert victim.read_text(encoding="utf-8") == "VICTIM"
    for name in ("index.html", page.name):
        written = html / name
        assert not written.is_symlink() and written.read_bytes().startswith(b"<!DOCTYPE html>")


def test_a_closed_pipe_on_stdout_stops_quietly_with_141() -> None:
    # the convention of `| head`: no message, the status a shell gives a command the pipe
    # closed on (it was exit 2 with "cannot write the results to stdout: broken pipe")
    code = "from unmask.cli.main import main; main()"
    args = [str(EXAMPLES / n) for n in ("case_a.json", "case_b.json")] * 40
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "audit", *args, "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # the reader went away, as `| head -0` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""


# --- the atomic writer ------------------------------------------------------------------------


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path: Path) -> None:
    target = tmp_path / "report.xml"
    target.write_text("old")
    target.chmod(0o640)
    with pytest.raises(RuntimeError), atomic(str(target)) as fh:
        fh.write("half of the new")
        raise RuntimeError("disk full, say")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.xml"]  # no temporary left
    write_text(str(target), "new")
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o640


def test_atomic_write_follows_a_link_and_reports_errors_as_diagnostics(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_text(str(link), "new")
    assert link.is_symlink() and real.read_text() == "new"
    with pytest.raises(OutputError) as info:
        write_text(str(tmp_path / "missing" / "x.txt"), "x")
    [d] = info.value.diagnostics
    assert d.code == "output" and "no such file or directory" in d.message
    with pytest.raises(OutputError):
        write_text(str(tmp_path), "x")  # a directory


@needs_dev_full
def test_atomic_write_into_a_device_writes_in_place() -> None:
    with pytest.raises(OutputError) as info:
        write_text(str(DEV_FULL), "x" * 10_000)
    assert "no space left on device" in info.value.diagnostics[0].message
    assert DEV_FULL.is_char_device()  # written into, never replaced
    write_text(os.devnull, "fine")
    assert Path(os.devnull).is_char_device()


# --- resume -----------------------------------------------------------------------------------

_REPORT = full_line(
    {
        "schema": "unmask.report/1",
        "location": "a.json",
        "replay": "a",
        "protocol": "p",
        "overall": "VIOLATED",
        "verdict": {"observed": "PASS"},
        "dimensions": {"verdict": "OK", "procedure": "VIOLATED"},
        "requirements": [{"id": "r", "status": "REFUTED", "coverage": "ENTAILED"}],
        "grounding": [],
        "reasons": [],
        "gold": None,
        "verdict_matches_gold": None,
    }
)


@pytest.mark.parametrize(
    "change",
    [
        {"dimensions": []},
        {"dimensions": {"verdict": 3}},
        {"requirements": "r"},
        {"requirements": [1]},
        {"requirements": [{"id": ["r"]}]},
        {"grounding": [{"judge": 1}]},
        {"verdict": "PASS"},
        {"overall": ["VIOLATED"]},
        {"overall": None},
        {"reasons": [None]},
        {"verdict_matches_gold": "yes"},
        {"schema": "unmask.error/1", "errors": {"code": "x"}},
        {"schema": "unmask.error/1", "errors": [{"code": 1, "message": "m"}]},
        {"schema": "unmask.error/1", "errors": ["io"]},
        {"location": 7},
        {"overall": "\udfff"},  # a lone surrogate where a word is expected: no internal error
        {"grounding": [{**_REPORT["requirements"][0], "judge": "j", "direction": "\ud800"}]},
    ],
)
def test_resume_refuses_result_shaped_lines_with_wrong_types(tmp_path: Path, change) -> None:
    out = tmp_path / "r.jsonl"
    good = json.dumps(_REPORT)
    bad = json.dumps({**_REPORT, **change})
    out.write_text(good + "\n" + bad + "\n")
    before = out.read_bytes()
    junit = str(tmp_path / "j.xml")
    args = ["--out", str(out), "--resume", "--html", str(tmp_path), "--junit", junit]
    result = run([str(EXAMPLES / "case_a.json"), *args])
    assert result.exit_code == 2, result.output
    assert "line 2" in result.stderr and "not an audit result file" in result.stderr
    _no_traceback(result)
    assert out.read_bytes() == before


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ('"overall": "SATISFIED", "overall"', "has `$`: key `overall` occurs more than once"),
        ('"gold_score": NaN, "overall"', "has `gold_score`: `NaN` is not a json number"),
    ],
)
def test_resume_refuses_what_json_leaves_to_a_guess(tmp_path: Path, raw, said) -> None:
    """Found by tests/fuzz/test_readers_fuzz.py: `--resume` read the results by `json.loads`,
    which keeps the last of a key's two values and reads NaN as a number, so a line no
    other reader takes was carried into the summary. Now refused at its path, exit 2."""
    out = tmp_path / "r.jsonl"
    line = json.dumps(_REPORT).replace('"overall"', raw, 1)
    out.write_text(json.dumps(_REPORT) + "\n" + line + "\n")
    before = out.read_bytes()
    result = run([str(EXAMPLES / "case_a.json"), "--out", str(out), "--resume"])
    assert result.exit_code == 2, result.output
    assert f"is not an audit result file: line 2 {said}" in result.stderr
    _no_traceback(result)
    assert out.read_bytes() == before


def test_resume_writes_no_carriage_returns(tmp_path: Path) -> None:
    src, full = audited(tmp_path, 4)
    part = tmp_path / "part.jsonl"
    first_two = full.read_bytes().splitlines()[:2]
    part.write_bytes(b"".join(line + b"\r\n" for line in first_two))
    assert run([str(src), "--out", str(part), "--resume", "--quiet"]).exit_code == 0
    assert b"\r" not in part.read_bytes()
    assert part.read_bytes() == full.read_bytes()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_resume_into_a_named_pipe_is_one_line_not_a_wait(tmp_path: Path) -> None:
    fifo = tmp_path / "results.jsonl"
    os.mkfifo(fifo)
    res = subprocess.run(
        [sys.executable, "-c", "from unmask.cli.main import main; main()", "audit",
         str(EXAMPLES / "case_a.json"), "--out", str(fifo), "--resume"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert "is a named pipe, not a regular file" in res.stderr and "Traceback" not in res.stderr
