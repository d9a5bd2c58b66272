"""Every shipped example, in every format, byte for byte as pinned in ``tests/data/golden``.

A reshaping of the code must not change what a user sees. Regenerate the pins on purpose
(after a change that should alter a report) with ``UNMASK_REGEN_GOLDEN=1 pytest
tests/test_golden.py`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "golden"
CASES = sorted(p.name for p in (ROOT / "examples").glob("*.json"))
FORMATS = ("json", "text", "markdown", "html", "sarif", "junit")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", CASES)
def test_report_is_byte_identical_to_its_pin(case: str, fmt: str, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(
        main, ["check", f"examples/{case}", "--format", fmt, "--backend", "z3"]
    )
    assert result.exit_code in (0, 1, 3), result.output
    pin = GOLDEN / f"{Path(case).stem}.{fmt}"
    if os.environ.get("UNMASK_REGEN_GOLDEN"):
        pin.parent.mkdir(parents=True, exist_ok=True)
        pin.write_bytes(result.stdout_bytes)
    assert result.stdout_bytes == pin.read_bytes()


def test_audit_lines_are_byte_identical_to_their_pin(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    out = tmp_path / "results.jsonl"
    files = [f"examples/{c}" for c in CASES]
    result = CliRunner().invoke(main, ["audit", *files, "--out", str(out)])
    assert result.exit_code in (0, 1), result.output
    pin = GOLDEN / "audit.jsonl"
    if os.environ.get("UNMASK_REGEN_GOLDEN"):
        pin.write_bytes(out.read_bytes())
    assert out.read_bytes() == pin.read_bytes()
