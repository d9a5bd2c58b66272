"""Domain members are names, not numbers: a number gets a fix-it, and one bad member is one
error (it does not also make the domain look as if no members were given)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from unmask.cli.main import main as unmask_main
from unmask.cli.unmaskc import cli as unmaskc_main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_numeric_member_in_a_replay_is_one_error_with_a_fix(tmp_path: Path) -> None:
    r = json.loads((EXAMPLES / "case_c_family.json").read_text(encoding="utf-8"))
    r["protocol"] = {"source": (EXAMPLES / "factual_claims_family.proto").read_text("utf-8")}
    r["domains"] = {"claim": ["joined", "5"]}
    r["annotations"] = [a for a in r["annotations"] if "cto" not in a["atom"]]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(r), encoding="utf-8")
    res = CliRunner().invoke(unmask_main, ["validate", str(path)])
    assert res.exit_code == 4
    assert "domains.claim[1]: error: `5` is not a valid member name" in res.stderr
    assert "write `s5`" in res.stderr
    assert "no members were given" not in res.stderr
    assert res.stderr.count("error:") == 1


def test_a_numeric_member_on_the_command_line_gets_the_same_fix() -> None:
    res = CliRunner().invoke(
        unmaskc_main, [str(EXAMPLES / "factual_claims_family.proto"), "--domain", "claim=5"]
    )
    assert res.exit_code != 0
    assert "member `5` of `claim` is not a name" in res.stderr
    assert "write `s5`" in res.stderr
