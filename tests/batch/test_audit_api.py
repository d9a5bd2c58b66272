"""A whole audit from Python (``unmask.batch.audit``), and one path for every result: a
resumed run writes the files a fresh run writes, byte for byte, the JUnit file included."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import found_files
from tests.helpers import assert_same_audit_outputs
from unmask.batch import audit as auditing
from unmask.batch import task as batch_task
from unmask.batch.audit import AuditError, AuditOptions, Interrupted, audit
from unmask.checking.record import ResultRecord
from unmask.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CASES = ["case_a.json", "case_b.json", "case_c.json", "case_d.json", "case_unknown.json"]
HINT = "`unmask analyze` shows why the protocol contradicts itself"


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    """The examples, a replay whose protocol contradicts itself (first in the walk's order)
    and one that is not a replay (an error record)."""
    d = tmp_path / "cases"
    (d / "a_broken").mkdir(parents=True)
    for name in [*CASES, "factual_claims.proto"]:
        shutil.copy(EXAMPLES / name, d / name)
    proto = (EXAMPLES / "factual_claims.proto").read_text(encoding="utf-8")
    proto += "constraint yes: j_cto\nconstraint no: not j_cto\n"
    (d / "a_broken" / "factual_claims.proto").write_text(proto, encoding="utf-8")
    shutil.copy(EXAMPLES / "case_b.json", d / "a_broken" / "case_b.json")
    (d / "bad.json").write_text('{"schema": "unmask.replay/1"}', encoding="utf-8")
    return d


def _cli_audit(cases: Path, folder: Path, *more: str) -> str:
    folder.mkdir(exist_ok=True)
    args = ["audit", str(cases), "--out", str(folder / "r.jsonl"), "--html", str(folder / "html")]
    args += ["--junit", str(folder / "junit.xml"), "--summary-json", str(folder / "s.json")]
    result = CliRunner().invoke(main, [*args, *more])
    assert result.exit_code == 0, result.output
    return result.stderr


def test_a_resumed_run_writes_the_files_a_fresh_run_writes(cases: Path, tmp_path: Path) -> None:
    fresh, resumed = tmp_path / "fresh", tmp_path / "resumed"
    text_fresh = _cli_audit(cases, fresh)
    assert HINT in text_fresh
    # a run stopped after three results: the broken protocol, the error record, case_a
    _cli_audit(cases, resumed)
    lines = (resumed / "r.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) == len(CASES) + 2
    (resumed / "r.jsonl").write_bytes(b"".join(lines[:3]) + lines[3][:20])
    for name in ("junit.xml", "s.json", "html/index.html"):
        (resumed / name).unlink()
    kept = {auditing.page_href(ResultRecord.from_line(json.loads(x))) for x in lines[:3]}
    assert len(kept - {""}) == 2
    for page in (resumed / "html").iterdir():
        if page.name not in kept:
            page.unlink()
    text_resumed = _cli_audit(cases, resumed, "--resume", "--jobs", "2")
    # the summary, hint included, the index, every page and the JUnit file: the same bytes
    pages = assert_same_audit_outputs(fresh, text_fresh, resumed, text_resumed, len(CASES) + 2)
    assert "index.html" in pages and len(pages) == len(CASES) + 2
    junit = (resumed / "junit.xml").read_text(encoding="utf-8")
    assert junit.count("<testcase ") == len(CASES) + 2 and 'type="invalid"' in junit


def test_an_audit_runs_from_python_and_writes_what_the_command_writes(
    cases: Path, tmp_path: Path
) -> None:
    text = _cli_audit(cases, tmp_path / "cli")
    d = tmp_path / "lib"
    d.mkdir()
    options = AuditOptions(
        out=str(d / "r.jsonl"),
        html=str(d / "html"),
        junit=str(d / "junit.xml"),
        summary_json=str(d / "s.json"),
    )
    outcome = audit([str(cases)], options)
    assert outcome.hints == (HINT,)
    assert outcome.summary.total == len(CASES) + 2 and outcome.summary.overall["INVALID"] == 1
    shown = outcome.summary.render_text() + "\n" + f"help: {HINT}\n"
    assert_same_audit_outputs(tmp_path / "cli", text, d, shown, len(CASES) + 2)


def test_without_outputs_an_audit_only_summarises() -> None:
    outcome = audit([str(EXAMPLES / n) for n in CASES])
    assert outcome.summary.total == len(CASES) and outcome.hints == ()
    assert outcome.summary.overall["VIOLATED"] == 3


@pytest.mark.parametrize(
    ("options", "paths", "says"),
    [
        (AuditOptions(resume=True), ["case_a.json"], "`--resume` needs `--out FILE`"),
        (AuditOptions(jobs=2, dask="local"), ["case_a.json"], "not both"),
        (AuditOptions(partition=3), ["case_a.json"], "`--partition` needs `--dask`"),
        (AuditOptions(), ["nope.json"], "no such file or directory"),
        (AuditOptions(), ["-", "-"], "may be given once"),
        (AuditOptions(out="case_a.json"), ["case_a.json"], "would overwrite the input"),
    ],
)
def test_an_audit_that_cannot_start_says_why_before_writing(
    options: AuditOptions, paths: list[str], says: str, monkeypatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLES / "case_a.json", tmp_path / "case_a.json")
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(AuditError) as caught:
        audit(paths, options)
    (d,) = caught.value.diagnostics
    assert says in d.message
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_an_interrupted_audit_keeps_whole_lines_and_says_how_to_go_on(
    cases: Path, tmp_path: Path, monkeypatch
) -> None:
    checked = batch_task.audit_task
    calls = []

    def stop_at_the_fourth(task, settings):
        calls.append(task)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return checked(task, settings)

    monkeypatch.setattr(batch_task, "audit_task", stop_at_the_fourth)
    out, junit = tmp_path / "r.jsonl", tmp_path / "j.xml"
    with pytest.raises(Interrupted) as caught:
        audit([str(cases)], AuditOptions(out=str(out), junit=str(junit)))
    assert caught.value.summary.total == 3
    assert f"continue with `--resume --out {out}`" in caught.value.message
    assert len(out.read_bytes().splitlines()) == 3 and out.read_bytes().endswith(b"\n")
    assert junit.read_text(encoding="utf-8").count("<testcase ") == 3  # what is done
    monkeypatch.setattr(batch_task, "audit_task", checked)
    outcome = audit([str(cases)], AuditOptions(out=str(out), resume=True))
    assert outcome.summary.total == len(CASES) + 2 and outcome.hints == (HINT,)


def test_the_batch_engine_imports_nothing_above_it_and_the_command_is_small() -> None:
    above = ("unmask.commands", "unmask.cli", "unmask.api")
    for path in found_files((ROOT / "unmask" / "batch").glob("*.py"), at_least=5):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            bad = [n for n in names if n.startswith(above)]
            assert not bad, f"{path.name} imports {bad}"
    command = (ROOT / "unmask" / "commands" / "audit.py").read_text(encoding="utf-8")
    assert len(command.splitlines()) < 200


def test_one_spelling_of_the_error_schema_and_no_byte_search_for_a_base() -> None:
    sources = [*(ROOT / "unmask").rglob("*.py"), *(ROOT / "backends").rglob("*.py")]
    texts = {p: p.read_text(encoding="utf-8") for p in sources}
    assert sum(t.count('"unmask.error/1"') for t in texts.values()) == 1
    assert '"unmask.error/1"' in texts[ROOT / "unmask" / "replay" / "error_record.py"]
    assert not any('"proto":"INCONSISTENT"' in t for t in texts.values())
    assert auditing.BROKEN_PROTOCOL_HINT == HINT
