"""A valid replay the backend cannot decide is not invalid input, in `audit` as in `check`.

`unmask audit` of one replay that the truth-table backend refuses (over its atom limit)
exited 4, the status of invalid input, while `unmask check` of the same replay exits 3 (no
definite answer) and `unmask validate` says it is valid. The docs said both (audit.md: exit
4 when "every input was invalid", the refusal counted as "invalid"; backends.md: "the run's
exit is 3"). Now exit 4 means what it means for `check`: no input was a valid replay.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.fuzz.test_regressions import wide_replay
from tests.helpers import full_line
from unmask.batch.summary import Summary
from unmask.checking.record import ResultRecord
from unmask.cli.main import main
from unmask.plumbing import exitcodes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _audit(*args: str):
    return CliRunner().invoke(main, ["audit", *args])


def test_check_and_validate_of_the_refused_replay(tmp_path: Path) -> None:
    wide = str(wide_replay(tmp_path))
    assert CliRunner().invoke(main, ["validate", wide]).exit_code == exitcodes.OK
    check = CliRunner().invoke(main, ["check", wide, "--backend", "truthtable"])
    assert check.exit_code == exitcodes.UNKNOWN


@pytest.mark.parametrize(
    ("gate", "status"),
    [((), exitcodes.OK), (("--fail-on", "violated"), exitcodes.OK), (("--fail-on", "unknown"), 3)],
    ids=["no gate", "fail-on violated", "fail-on unknown"],
)
def test_an_audit_of_only_a_refused_replay_is_not_exit_4(
    tmp_path: Path, gate: tuple[str, ...], status: int
) -> None:
    wide = str(wide_replay(tmp_path))
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    args = [wide, "--backend", "truthtable", "--out", str(out), "--summary-json", str(summary)]
    result = _audit(*args, *gate)
    assert result.exit_code == status, result.output
    (record,) = (json.loads(x) for x in out.read_text().splitlines())
    assert record["errors"][0]["code"] == "truthtable-limit"
    s = json.loads(summary.read_text())
    assert (s["replays"], s["valid"], s["invalid"], s["unchecked"]) == (1, 0, 1, 1)
    assert s["overall"]["INVALID"] == 1 and s["errors"] == {"truthtable-limit": 1}
    assert "1 invalid (1 of them valid but not decided by the backend)\n" in result.stderr


def test_resumed_records_count_the_same(tmp_path: Path) -> None:
    wide = str(wide_replay(tmp_path))
    out = tmp_path / "out.jsonl"
    assert _audit(wide, "--backend", "truthtable", "--out", str(out), "--quiet").exit_code == 0
    again = _audit(wide, "--backend", "truthtable", "--out", str(out), "--resume", "--quiet")
    assert again.exit_code == exitcodes.OK, again.output


def test_invalid_input_is_still_exit_4(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert _audit(str(bad), "--out", str(out), "--quiet").exit_code == exitcodes.INVALID
    # a refused replay beside it is a valid input: the run is no longer all invalid
    wide = str(wide_replay(tmp_path))
    both = _audit(str(bad), wide, "--backend", "truthtable", "--out", str(out), "--quiet")
    assert both.exit_code == exitcodes.OK, both.output


def test_the_summary_tells_unchecked_from_invalid() -> None:
    s = Summary()
    for code in ("json-syntax", "truthtable-limit", "internal-error", "unknown-atom"):
        s.add(
            ResultRecord.from_line(
                full_line(
                    {"schema": "unmask.error/1", "location": code, "errors": [{"code": code}]}
                )
            )
        )
    j = s.to_json()
    assert (j["valid"], j["invalid"], j["unchecked"], s.valid_inputs) == (0, 4, 2, 2)
    first = s.render_text().splitlines()[0]
    assert first == (
        "audited 4 replays: 0 satisfied, 0 violated, 0 unknown, 4 invalid "
        "(2 of them valid but not decided by the backend)"
    )
