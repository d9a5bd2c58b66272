"""Every shipped example, in every format, byte for byte as pinned in ``tests/data/golden``.

A reshaping of the code must not change what a user sees. Each pin is named
``NAME.FORMAT.golden`` (``case_a.html.golden``, ``audit.jsonl.golden``): the ``.golden`` suffix
marks it as recorded output, not source of its format. Regenerate the pins on purpose (after a
change that should alter a report) with ``UNMASK_REGEN_GOLDEN=1 pytest tests/render/test_golden.py``
and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden"
SUFFIX = ".golden"
CASES = sorted(p.name for p in (ROOT / "examples").glob("*.json"))
FORMATS = ("json", "text", "markdown", "html", "sarif", "junit")
AUDIT = ("audit", "jsonl")


def pin_path(folder: Path, stem: str, fmt: str) -> Path:
    """Where the pin of ``stem`` in ``fmt`` lives."""
    return folder / f"{stem}.{fmt}{SUFFIX}"


def assert_pinned(actual: bytes, pin: Path, *, regen: bool) -> None:
    """``actual`` equals the pin byte for byte; with ``regen``, write it there first."""
    if regen:
        pin.parent.mkdir(parents=True, exist_ok=True)
        pin.write_bytes(actual)
    assert actual == pin.read_bytes(), f"output differs from its pin {pin.name}"


def _regen() -> bool:
    return bool(os.environ.get("UNMASK_REGEN_GOLDEN"))


def _report(case: str, fmt: str) -> bytes:
    result = CliRunner().invoke(
        main, ["check", f"examples/{case}", "--format", fmt, "--backend", "z3"]
    )
    assert result.exit_code in (0, 1, 3), result.output
    return result.stdout_bytes


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", CASES)
def test_report_is_byte_identical_to_its_pin(case: str, fmt: str, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    assert_pinned(_report(case, fmt), pin_path(GOLDEN, Path(case).stem, fmt), regen=_regen())


def test_audit_lines_are_byte_identical_to_their_pin(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    out = tmp_path / "results.jsonl"
    files = [f"examples/{c}" for c in CASES]
    result = CliRunner().invoke(main, ["audit", *files, "--out", str(out)])
    assert result.exit_code in (0, 1), result.output
    assert_pinned(out.read_bytes(), pin_path(GOLDEN, *AUDIT), regen=_regen())


def test_the_pins_folder_holds_exactly_the_pins_the_tests_read() -> None:
    # A pin left under an old name, or for an example that no longer ships, would pass
    # unnoticed forever: the folder holds one file per (example, format) and the audit lines.
    expected = {pin_path(GOLDEN, Path(c).stem, f).name for c in CASES for f in FORMATS}
    expected.add(pin_path(GOLDEN, *AUDIT).name)
    assert {p.name for p in GOLDEN.iterdir()} == expected


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_one_changed_pinned_byte_fails_the_comparison(where: str, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    actual = _report("case_a.json", "json")
    pinned = bytearray(pin_path(GOLDEN, "case_a", "json").read_bytes())
    assert actual == bytes(pinned)
    at = {"first": 0, "middle": len(pinned) // 2, "last": len(pinned) - 1}[where]
    pinned[at] ^= 0x01
    tampered = tmp_path / "case_a.json.golden"
    tampered.write_bytes(bytes(pinned))
    with pytest.raises(AssertionError, match=r"differs from its pin case_a\.json\.golden"):
        assert_pinned(actual, tampered, regen=False)


def test_regeneration_writes_the_suffixed_name_and_then_matches(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    actual = _report("case_b.json", "html")
    folder = tmp_path / "golden"
    assert_pinned(actual, pin_path(folder, "case_b", "html"), regen=True)
    assert [p.name for p in folder.iterdir()] == ["case_b.html.golden"]
    assert (folder / "case_b.html.golden").read_bytes() == actual
    assert_pinned(actual, pin_path(folder, "case_b", "html"), regen=False)
