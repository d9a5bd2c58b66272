"""Codes on the wire, byte for byte: the JSON, SARIF and JUnit documents and the result lines
that carry diagnostic codes, for inputs that fail in many ways, as pinned in
``tests/data/codes`` before codes became typed values (``unmask/plumbing/codes.py``). The pins
were recorded with free-string codes; a registry member must write exactly the same bytes.
Regenerate on purpose with ``UNMASK_REGEN_GOLDEN=1 pytest tests/plumbing/test_codes_wire.py`` and
review the diff. This module imports nothing of the registry, so it runs on either side.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.render.test_golden import assert_pinned

ROOT = Path(__file__).resolve().parents[2]
PINS = ROOT / "tests" / "data" / "codes"


FINDINGS_PROTO = """\
protocol demo "Say yes when a holds."

atom a      : judge   "a holds"
atom b      : judge   "b holds"
atom unused : judge   "never read"
atom c      : context "c holds"

verdict yes | no | maybe
decision yes iff a
decision no iff a and b
decision maybe otherwise

requirement always "anything": a or not a
requirement never "nothing": a and not a
"""
BROKEN_PROTO = """\
protocol broken "Broken."
atom a : judge "a"
atom a : judge "again"
decision pass iff a and zz
"""


def _replays(folder: Path) -> list[str]:
    """Replays that fail in as many ways as possible, each with its own code."""
    shutil.copy(ROOT / "examples" / "factual_claims.proto", folder)
    good = json.loads((ROOT / "examples" / "case_a.json").read_text("utf-8"))
    ann = good["annotations"][0]
    variants: dict[str, object] = {
        "valid": good,
        "no_schema": {k: v for k, v in good.items() if k != "schema"},
        "bad_quote": {
            **good,
            "annotations": [{**ann, "evidence": [{**ann["evidence"][0], "quote": "x"}]}],
        },
        "bad_range": {
            **good,
            "annotations": [{**ann, "evidence": [{**ann["evidence"][0], "end": 9999}]}],
        },
        "unknown_source": {
            **good,
            "annotations": [{**ann, "evidence": [{**ann["evidence"][0], "source": "nowhere"}]}],
        },
        "unknown_atom": {**good, "annotations": [{**ann, "atom": "zz"}]},
        "bad_value": {**good, "annotations": [{**ann, "value": "YES"}]},
        "bad_verdict": {**good, "verdict": "MAYBE"},
        "empty_item": {**good, "item": ""},
        "no_protocol_file": {**good, "protocol": {"path": "nope.proto"}},
        "unknown_key": {**good, "extra": 1},
    }
    names = []
    for name, obj in variants.items():
        (folder / f"{name}.json").write_text(json.dumps(obj, indent=2), "utf-8")
        names.append(f"{name}.json")
    (folder / "json_syntax.json").write_text("{", "utf-8")
    (folder / "json_empty.json").write_text("", "utf-8")
    (folder / "json_duplicate.json").write_text('{"schema": 1, "schema": 2}', "utf-8")
    return [*names, "json_syntax.json", "json_empty.json", "json_duplicate.json"]


def _run(args: list[str], stderr: bool = False) -> bytes:
    from unmask.cli.main import main

    result = CliRunner().invoke(main, args)
    assert result.exit_code in (0, 1, 2, 3, 4), result.output
    return result.stderr_bytes if stderr else result.stdout_bytes


WIRE = {
    "audit.jsonl": None,  # the result lines, error records and all
    "audit.text": ["audit", "--out", "results.jsonl"],  # the summary (on stderr)
    "check.sarif": ["check", "bad_quote.json", "--format", "sarif"],
    "check.junit": ["check", "bad_quote.json", "--format", "junit"],
    "analyze.text": ["analyze", "findings.proto"],
    "analyze.json": ["analyze", "findings.proto", "--format", "json"],
    "analyze.sarif": ["analyze", "findings.proto", "--format", "sarif"],
    "analyze-broken.sarif": ["analyze", "broken.proto", "--format", "sarif"],
}


@pytest.mark.parametrize("name", sorted(WIRE))
def test_codes_on_the_wire_are_byte_identical_to_their_pins(
    name: str, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    files = _replays(tmp_path)
    (tmp_path / "findings.proto").write_text(FINDINGS_PROTO, "utf-8")
    (tmp_path / "broken.proto").write_text(BROKEN_PROTO, "utf-8")
    args = WIRE[name]
    if args is None:
        _run(["audit", *files, "--out", "results.jsonl"])
        actual = (tmp_path / "results.jsonl").read_bytes()
    elif args[0] == "audit":
        actual = _run([*args, *files], stderr=True)
    else:
        actual = _run(args)
    assert str(tmp_path).encode() not in actual  # a pin holds no machine's folder
    assert_pinned(
        actual, PINS / f"{name}.golden", regen=bool(os.environ.get("UNMASK_REGEN_GOLDEN"))
    )


def test_the_pins_are_the_ones_the_test_reads() -> None:
    assert {p.name for p in PINS.iterdir()} == {f"{n}.golden" for n in WIRE}
    broken = json.loads((PINS / "analyze-broken.sarif.golden").read_text("utf-8"))
    assert {r["id"] for r in broken["runs"][0]["tool"]["driver"]["rules"]} == {
        "duplicate-name",
        "unknown-name",
    }
