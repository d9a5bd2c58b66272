"""Standard output that cannot be written, the same for every command (``unmask.cli.stdout``).

- A closed pipe (`unmask ... | head -1`) stops the command quietly with exit 141 (128 +
  SIGPIPE), nothing on stderr. Before, `check`, `validate`, `crosscheck`, `audit`, `propose`
  and `unmaskc` said "broken pipe" and exited with the usage status (`propose claims` and
  `judge` called it a failure to *read* the input, status 4), and `analyze`, `compare`,
  `next`, `bench`, `propose list` and every `--help` exited 1, the status of a violation.
- A full disk (stdout on `/dev/full`) is one diagnostic and exit 2 (1 for `unmaskc`). Before,
  `analyze`, `compare`, `next`, `bench`, `propose list` and every `--help` ended in a
  traceback, `propose claims` and `judge` blamed the input and `propose replay` named a file
  `None`.
- A process started with stdout closed (`>&-`) is told so, where `audit` and `propose`
  crashed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from unmask.plumbing import exitcodes

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DATA = ROOT / "tests" / "data"
UNMASK = "from unmask.cli.main import main; main()"
UNMASKC = "from unmask.cli.unmaskc import main; main()"
JUDGE = str(DATA / "propose" / "judge_citations_50.jsonl")

QUICK_BENCH = [
    "bench",
    "--quick",
    "--sizes",
    "2",
    "--runners",
    "baseline,sliced",
    "--repeats",
    "1",
    "--budget-s",
    "0.05",
    "--no-jobs",
    "--no-memory",
]

# every command that writes to stdout, with arguments that make it write
COMMANDS: list[tuple[str, list[str]]] = [
    (UNMASK, ["--help"]),
    (UNMASK, ["check", "--help"]),
    (UNMASK, ["check", "case_b.json"]),
    (UNMASK, ["check", "case_b.json", "--format", "json"]),
    (UNMASK, ["check", "case_b.json", "--format", "html"]),
    (UNMASK, ["validate", "case_b.json"]),
    (UNMASK, ["crosscheck", "case_b.json", "--backends", "z3,truthtable"]),
    (UNMASK, ["audit", ".", "--quiet"]),
    (UNMASK, ["audit", ".", ".", "--quiet", "--jobs", "2"]),
    (UNMASK, ["analyze", "claim_parts.proto"]),
    (UNMASK, ["compare", "factual_claims.proto", "claim_parts.proto"]),
    (UNMASK, ["next", "case_unknown.json"]),
    (UNMASK, ["review", ".", "--list"]),
    (UNMASK, QUICK_BENCH),
    (UNMASK, ["propose", "list"]),
    (UNMASK, ["propose", "claims", str(DATA / "propose" / "claims.jsonl")]),
    (UNMASK, ["propose", "judge", JUDGE, "--field", "response"]),
    (UNMASK, ["propose", "replay", "case_unknown.json"]),
    (UNMASK, ["import", "--help"]),
    (UNMASKC, ["factual_claims.proto"]),
    (UNMASKC, ["fmt", "factual_claims.proto"]),
]


def _id(code: str, args: list[str]) -> str:
    words = [Path(a).name if os.sep in a else a for a in args]
    return " ".join(["unmaskc" if code is UNMASKC else "unmask", *words])


IDS = [_id(code, args) for code, args in COMMANDS]


def _run(code: str, args: list[str], **streams) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=EXAMPLES,
        stdin=subprocess.DEVNULL,
        timeout=300,
        check=False,
        **streams,
    )


def _clean(stderr: bytes) -> str:
    err = stderr.decode("utf-8", "replace")
    assert "Traceback" not in err and "Exception ignored" not in err, err
    return err


def _closed_pipe() -> int:
    """The writing end of a pipe whose reader is already gone."""
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.parametrize(("code", "args"), COMMANDS, ids=IDS)
def test_a_closed_pipe_stops_quietly_with_141(code: str, args: list[str]) -> None:
    write = _closed_pipe()
    try:
        p = _run(code, args, stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    assert (p.returncode, _clean(p.stderr)) == (exitcodes.BROKEN_PIPE, "")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(("code", "args"), COMMANDS, ids=IDS)
def test_a_full_stdout_is_one_diagnostic(code: str, args: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        p = _run(code, args, stdout=full, stderr=subprocess.PIPE)
    err = _clean(p.stderr)
    status = exitcodes.ERRORS if code is UNMASKC else exitcodes.USAGE
    assert p.returncode == status, err
    assert err.count("error:") == 1, err
    assert err.splitlines()[-1] == "error: cannot write to standard output: no space left on device"


@pytest.mark.parametrize(
    "args",
    [
        ["audit", ".", ".", ".", "--quiet"],  # results: far more than a pipe holds
        ["audit", ".", ".", ".", "--quiet", "--jobs", "2"],
        ["bench", "--quick"],
        ["propose", "judge", JUDGE, "--field", "response"],
    ],
    ids=" ".join,
)
def test_a_reader_that_leaves_after_one_line_stops_the_command(args: list[str]) -> None:
    # `unmask ... | head -1`: the pipe closes while the command is still writing
    proc = subprocess.Popen(
        [sys.executable, "-c", UNMASK, *args],
        cwd=EXAMPLES,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == exitcodes.BROKEN_PIPE
    assert _clean(err) == ""


@pytest.mark.parametrize(
    ("code", "args", "status"),
    [
        (UNMASK, ["check", "case_b.json"], exitcodes.USAGE),
        (UNMASK, ["audit", "."], exitcodes.USAGE),
        (UNMASK, ["propose", "claims", str(DATA / "propose" / "claims.jsonl")], exitcodes.USAGE),
        (UNMASKC, ["factual_claims.proto"], exitcodes.ERRORS),
    ],
    ids=lambda v: _id(UNMASK, v) if isinstance(v, list) else "",
)
def test_a_closed_stdout_is_one_diagnostic(code: str, args: list[str], status: int) -> None:
    # started with `>&-`: Python leaves no stdout, where `audit` and `propose` crashed
    p = subprocess.run(
        [sys.executable, "-c", f"import os; os.close(1); {code}", *args],
        cwd=EXAMPLES,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=300,
        check=False,
    )
    err = _clean(p.stderr)
    assert p.returncode == status, err
    assert err.splitlines()[-1] == "error: cannot write to standard output: bad file descriptor"


def test_a_closed_stderr_pipe_stops_quietly_too(tmp_path: Path) -> None:
    # `unmask import` writes only to stderr: `2>&1 | head -0` closes it
    write = _closed_pipe()
    src = DATA / "importers" / "promptfoo-sample-export.json"
    try:
        p = _run(UNMASK, ["import", "promptfoo", str(src), "--out", str(tmp_path)], stderr=write)
    finally:
        os.close(write)
    assert p.returncode == exitcodes.BROKEN_PIPE


def test_an_output_file_that_cannot_be_written_is_named(tmp_path: Path) -> None:
    # an `-o` file is not standard output: named, usage status, and never called the input
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    claims = str(DATA / "propose" / "claims.jsonl")
    p = _run(UNMASK, ["propose", "claims", claims, "-o", "/dev/full"], stderr=subprocess.PIPE)
    err = _clean(p.stderr)
    assert p.returncode == exitcodes.USAGE
    assert err == "error: cannot write `/dev/full`: no space left on device\n"


def test_an_unreadable_input_is_still_exit_4(tmp_path: Path) -> None:
    p = _run(
        UNMASK,
        ["propose", "claims", str(tmp_path / "missing.jsonl")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.returncode == exitcodes.INVALID
    assert "cannot read" in _clean(p.stderr)
