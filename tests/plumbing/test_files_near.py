"""A path that does not exist is answered with the closest name beside it
(``unmask.plumbing.files.near_path``), in every command that reads a named file."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main
from unmask.cli.unmaskc import cli
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.files import near_name, near_path
from unmask.replay.load import load_replay

ROOT = Path(__file__).resolve().parents[2]


def test_the_closest_name_beside_a_missing_path(tmp_path: Path) -> None:
    for name in ("claims.proto", "other.proto", "r3.json", ".hidden.json"):
        (tmp_path / name).write_text("x", encoding="utf-8")
    assert near_path(str(tmp_path / "claim.proto")) == f"did you mean `{tmp_path}/claims.proto`?"
    assert near_path(str(tmp_path / "r33.json")) == f"did you mean `{tmp_path}/r3.json`?"
    assert near_path(str(tmp_path / "zzzzzzzz")) is None
    assert near_path(str(tmp_path / "nofolder" / "claims.proto")) is None
    # a suffix every name shares is not a likeness: `zzz.proto` is not `other.proto`
    assert near_name(tmp_path, "zzz.proto", ".proto") is None
    assert near_name(tmp_path, "claim.proto", ".proto") == "claims.proto"
    assert near_name(tmp_path, "hidden.json") is None  # a hidden file is never offered


def test_check_audit_and_unmaskc_offer_it(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "case_b.json").write_bytes((ROOT / "examples" / "case_b.json").read_bytes())
    (tmp_path / "claims.proto").write_text("protocol p\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnmaskError) as exc:
        load_replay("case_c.json")
    (d,) = exc.value.diagnostics
    assert (d.code, d.help) == ("io", "did you mean `case_b.json`?")
    res = CliRunner().invoke(main, ["check", "case_c.json"])
    assert res.exit_code == 4 and "did you mean `case_b.json`?" in res.stderr
    res = CliRunner().invoke(main, ["audit", "case_c.json"])
    assert res.exit_code == 2
    assert res.stderr.splitlines() == [
        "error: no such file or directory `case_c.json`",
        "  = help: did you mean `case_b.json`?",
    ]
    res = CliRunner().invoke(cli, ["claim.proto"])
    assert res.exit_code == 2
    assert res.stderr.splitlines()[1] == "  = help: did you mean `claims.proto`?"
    # every reader of a named file: here `unmask analyze` and `--protocol`
    res = CliRunner().invoke(main, ["analyze", "claim.proto"])
    assert "did you mean `claims.proto`?" in res.stderr
    res = CliRunner().invoke(main, ["check", "case_b.json", "--protocol", "claim.proto"])
    assert res.exit_code == 2 and "did you mean `claims.proto`?" in res.stderr


def test_read_bytes_says_it_as_data(tmp_path: Path) -> None:
    from unmask.plumbing.files import read_bytes

    (tmp_path / "results.json").write_text("{}", encoding="utf-8")
    with pytest.raises(UnmaskError) as exc:
        read_bytes(str(tmp_path / "result.json"))
    (d,) = exc.value.diagnostics
    assert d.code == "io" and d.help == f"did you mean `{tmp_path}/results.json`?"
    # a file named otherwise than by its path (a protocol `path`) gets its caller's help
    with pytest.raises(UnmaskError) as exc:
        read_bytes(str(tmp_path / "result.json"), name="result.json")
    assert exc.value.diagnostics[0].help is None
