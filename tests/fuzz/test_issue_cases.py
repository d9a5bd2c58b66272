"""The minimal case of every break found when replays were probed as an attacker would,
each run through a real process with the fuzz oracle (it ends in time, its exit status is
documented, no traceback, nothing from outside the replay's folder is printed) plus the
one thing that case is about. Each was fixed where it lived; the focused tests sit beside
the code (test_hostile_paths, test_audit_hostile, test_render_output, ...); these keep the
cases found together with the fuzz suite that guards their kind.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.fuzz.gen import Case
from tests.fuzz.oracle import problems, run_process

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"
SECRET = "SECRET-4d1e-in-the-environment"


def _replay(folder: Path, **changes) -> Path:
    r = json.loads((EXAMPLES / "case_c.json").read_text(encoding="utf-8"))
    shutil.copy(EXAMPLES / "factual_claims.proto", folder / "factual_claims.proto")
    r.update(changes)
    path = folder / "replay.json"
    path.write_text(json.dumps(r, ensure_ascii=True), encoding="utf-8")
    return path


def _run(prog: str, command: str, *args: str, fmt: str = "", timeout: float = 60.0):
    case = Case("issue", prog, list(args), command, fmt)
    os.environ["UNMASK_FUZZ_SECRET"] = SECRET
    try:
        out = run_process(case, timeout)
    finally:
        del os.environ["UNMASK_FUZZ_SECRET"]
    assert problems(case, out) == [], (args, out.stderr[-2000:])
    assert SECRET not in out.stdout and SECRET not in out.stderr
    return out


def test_a_protocol_path_to_the_process_environment_is_refused(tmp_path: Path) -> None:
    path = _replay(tmp_path, protocol={"path": "/proc/self/environ"})
    out = _run("unmask", "validate", "validate", str(path))
    assert out.code == 4 and "protocol-path" in out.stderr


def test_a_protocol_path_to_a_fifo_fails_fast(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p.proto")
    path = _replay(tmp_path, protocol={"path": "p.proto"})
    assert _run("unmask", "check", "check", str(path), timeout=30).code == 4


def test_unmaskc_on_dev_zero_is_bounded() -> None:
    out = _run("unmaskc", "unmaskc-path", "/dev/zero", timeout=30)
    assert out.code in (1, 2)


def test_a_deep_iff_chain_prints_as_json(tmp_path: Path) -> None:
    chain = " iff ".join(["a"] * 1200)
    src = tmp_path / "deep.proto"
    src.write_text(f"protocol deep\natom a : judge\ndecision pass iff {chain}\n", encoding="utf-8")
    # (not parsed back here: Python's own JSON reader recurses per level)
    out = _run("unmaskc", "unmaskc", str(src), "--max-expr-depth", "2000")
    assert out.code == 0 and out.stdout.count('"iff"') == 1199


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_lone_surrogate_in_the_id_prints(tmp_path: Path, fmt: str) -> None:
    path = _replay(tmp_path, id="case-\ud800")
    out = _run("unmask", "check", "check", str(path), "--format", fmt, fmt=fmt)
    assert out.code == 1


def test_terminal_escapes_in_an_explanation_are_shown_not_obeyed(tmp_path: Path) -> None:
    r = json.loads((EXAMPLES / "case_c.json").read_text(encoding="utf-8"))
    r["annotations"][1]["explanation"] = "\x1b[2J\x1b]0;pwned\x07VIOLATED? no: SATISFIED"
    path = _replay(tmp_path, annotations=r["annotations"])
    out = _run("unmask", "check", "check", str(path), fmt="text")
    assert "\x1b" not in out.stdout and "\\x1b" in out.stdout


@pytest.mark.parametrize("fmt", ["sarif", "junit"])
def test_an_invalid_replay_still_gets_a_document(tmp_path: Path, fmt: str) -> None:
    path = _replay(tmp_path, verdict="MAYBE")
    out = _run("unmask", "check", "check", str(path), "--format", fmt, fmt=fmt)
    assert out.code == 4 and out.stdout.strip()


def test_a_role_mismatch_does_not_depend_on_members(tmp_path: Path) -> None:
    src = tmp_path / "f.proto"
    src.write_text(
        "protocol f\ndomain d\natom f(d) : judge\ndecision pass iff true\n"
        "for x in d: ground f(x) ~ f(x)\n",
        encoding="utf-8",
    )
    out = _run("unmaskc", "unmaskc", str(src), "--domain", "d=", fmt="ir")
    assert out.code == 1 and "`f(x)` is a judge atom" in out.stderr


def test_an_audit_output_that_is_its_input_is_refused(tmp_path: Path) -> None:
    path = _replay(tmp_path)
    lines = tmp_path / "x.jsonl"
    lines.write_text(path.read_text(encoding="utf-8").replace("\n", " ") + "\n", "utf-8")
    before = lines.read_bytes()
    case = Case("issue", "unmask", ["audit", str(lines), "--out", str(lines)], "audit")
    out = run_process(case, 60)
    assert out.code == 2 and "Traceback" not in out.stderr
    assert lines.read_bytes() == before


@pytest.mark.parametrize(
    "args",
    [["audit", "--jobs", "200", "-", "--out", "-"], ["bench", "--budget-s", "nan"]],
    ids=["jobs", "bench"],
)
def test_numeric_options_have_ranges(args: list[str]) -> None:
    out = run_process(Case("issue", "unmask", args, "audit"), 60)
    assert out.code == 2 and "Traceback" not in out.stderr
