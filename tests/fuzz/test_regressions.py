"""Minimal cases of what fuzzing found, each kept as a test that failed before its fix.

- A replay the truth-table backend refuses (over 20 unknown atoms in one component) made
  `unmask check` exit 2, the usage status, though the command line was right. It is now
  "this backend cannot decide this replay" everywhere: `check` exits 3 with the limit and
  another backend named (SARIF and JUnit record it), `crosscheck` compares the other
  backends, `audit` writes an error record and counts it like any replay it could not check.
- `check`, `validate` and `crosscheck` writing to a full disk (stdout on `/dev/full`) ended
  in a traceback with exit 1 (VIOLATED, disagreement); now one diagnostic and exit 2, the
  status of every file a command cannot write.
- `check ""` said "`.` is a directory" (the empty path read as the current folder);
  `validate` and `crosscheck` named the empty path as given. Now all three do.
"""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.fuzz.gen import EXITS, Case
from tests.fuzz.oracle import BIN, problems, run_inprocess
from tests.helpers import wide_replay
from unmask.cli.main import main


@pytest.mark.parametrize("fmt", ["text", "json", "html", "markdown", "sarif", "junit"])
def test_check_truthtable_refusal_is_unknown_not_usage(tmp_path: Path, fmt: str) -> None:
    path = wide_replay(tmp_path)
    case = Case("regression", "unmask", ["check", str(path), "--backend", "truthtable"], "check")
    case.args += ["--format", fmt]
    case.fmt = fmt
    outcome = run_inprocess(case)
    assert outcome.code == 3, outcome.stderr
    assert problems(case, outcome) == []
    assert outcome.stderr.count("error:") == 1
    assert "at most 20" in outcome.stderr and "`--backend z3`" in outcome.stderr
    if fmt == "sarif":
        invocation = json.loads(outcome.stdout)["runs"][0]["invocations"][0]
        assert invocation["exitCode"] == 3
        notes = invocation["toolExecutionNotifications"]
        assert notes[0]["descriptor"]["id"] == "truthtable-limit"
    elif fmt == "junit":
        error = ET.fromstring(outcome.stdout).find(".//error")
        assert error is not None and "at most 20" in (error.text or "")
    else:
        assert outcome.stdout == ""
    # the same replay on a backend that can decide it gets a report
    ok = Case("regression", "unmask", ["check", str(path), "--format", fmt], "check", fmt)
    assert run_inprocess(ok).code in EXITS["check"] - {4}


def test_crosscheck_does_not_run_the_refusing_backend(tmp_path: Path) -> None:
    path = wide_replay(tmp_path)
    result = CliRunner().invoke(
        main, ["crosscheck", str(path), "--backends", "z3,truthtable,pysat"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "wide: z3, pysat agree (overall UNKNOWN)\n"
    assert result.stderr.startswith("truthtable: skipped: this check needs 25 interdependent")
    only = CliRunner().invoke(main, ["crosscheck", str(path), "--backends", "truthtable,z3"])
    assert only.exit_code == 3 and "only `z3` ran" in only.stdout


def test_audit_writes_an_error_record_for_the_refusal(tmp_path: Path, examples_dir: Path) -> None:
    path = wide_replay(tmp_path)
    out = tmp_path / "out.jsonl"
    args = ["audit", str(path), str(examples_dir / "case_a.json"), "--backend", "truthtable"]
    result = CliRunner().invoke(main, [*args, "--out", str(out), "--fail-on", "unknown"])
    assert result.exit_code == 3, result.output
    first, second = (json.loads(line) for line in out.read_text().splitlines())
    assert first["schema"] == "unmask.error/1" and first["location"] == str(path)
    (error,) = first["errors"]
    assert error["code"] == "truthtable-limit" and "`--backend z3`" in error["help"]
    assert second["overall"] == "SATISFIED"
    assert "truthtable-limit 1" in result.stderr
    # without a gate an audit reports findings and exits 0; the default backend decides it
    assert CliRunner().invoke(main, [*args, "--out", str(out)]).exit_code == 0
    default = CliRunner().invoke(main, ["audit", str(path), "--out", str(out)])
    assert default.exit_code == 0 and json.loads(out.read_text())["overall"] == "UNKNOWN"


STDOUT_COMMANDS = [
    *(["check", "case_b.json", "--format", fmt] for fmt in ("text", "json", "sarif", "junit")),
    ["check", "nope.json", "--format", "sarif"],  # the document recording an invalid replay
    ["validate", "case_b.json"],
    ["crosscheck", "case_b.json", "--backends", "z3,pysat"],
]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", STDOUT_COMMANDS, ids=" ".join)
def test_a_full_stdout_is_one_diagnostic_and_exit_2(examples_dir: Path, args: list[str]) -> None:
    # found by writing every command's stdout to /dev/full: a traceback and exit 1, which
    # `check` and `crosscheck` use for VIOLATED and disagreement
    with open("/dev/full", "w") as full:
        p = subprocess.run(
            [str(BIN / "unmask"), *args],
            cwd=examples_dir,
            stdin=subprocess.DEVNULL,
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert "Traceback" not in err and "Exception ignored" not in err
    assert err.splitlines()[-1] == "error: cannot write to standard output: no space left on device"


@pytest.mark.parametrize("command", ["check", "validate", "crosscheck"])
def test_an_empty_replay_path_is_named_as_given(command: str) -> None:
    # `check ""` said "`.` is a directory": the empty path was read as the current folder
    result = CliRunner().invoke(main, [command, ""])
    assert result.exit_code == 4
    assert result.stderr == "error: cannot read ``: no such file or directory\n"
