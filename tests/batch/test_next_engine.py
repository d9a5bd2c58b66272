"""`unmask next`'s engine from Python, without the command line (``unmask.batch.todo``): every
replay the paths name, and each results line's replay, as a report, or why there is none."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from unmask.backends import create
from unmask.batch.todo import steps
from unmask.plumbing.limits import DEFAULT_LIMITS


def test_steps_give_each_replay_its_report_or_why_there_is_none(
    tmp_path: Path, examples_dir: Path
) -> None:
    for name in ("case_a.json", "case_unknown.json", "factual_claims.proto"):
        shutil.copy(examples_dir / name, tmp_path / name)
    (tmp_path / "broken.json").write_text("{")
    results = tmp_path / "results.jsonl"
    lines = [
        json.dumps({"schema": "unmask.report/1", "location": "case_unknown.json"}),
        "{not json",
        json.dumps({"schema": "unmask.error/1", "location": "gone.json", "errors": []}),
    ]
    results.write_text("\n".join(lines) + "\n")
    paths = tuple(str(tmp_path / n) for n in ("case_a.json", "case_unknown.json", "broken.json"))
    got = list(steps((*paths, str(results)), str(tmp_path), DEFAULT_LIMITS, create("sliced")))
    assert [s.location for s in got] == [
        *paths,
        "case_unknown.json",
        f"{results}:2",
        "gone.json",
    ]
    a, unknown, broken, again, bad, gone = got
    assert a.report.open == () and a.report.checks == 5
    assert [t.atom for t in unknown.report.todo] == ["external", "disclosed"]
    assert again.report.to_json() == unknown.report.to_json()  # re-read from its location
    assert broken.report is None and broken.invalid is not None
    assert bad.invalid is not None and bad.invalid.diagnostics[0].code == "bad-results"
    assert gone.skipped == "the audit could not check it" and gone.report is None
