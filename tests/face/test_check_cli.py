"""`unmask check`: exit statuses, the JSON on stdout, usage and input errors on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import assert_a_directory_or_an_unreadable_file_is_exit_4
from unmask.api import check
from unmask.checking.report import dumps
from unmask.cli.main import main
from unmask.commands.check import FORMATS
from unmask.replay.load import load_replay


def run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, ["check", *args])


@pytest.mark.parametrize(
    ("name", "code"),
    [("case_a", 0), ("case_b", 1), ("case_c", 1), ("case_d", 1), ("case_unknown", 3)],
)
def test_exit_status_follows_overall(examples_dir: Path, name: str, code: int) -> None:
    result = run(str(examples_dir / f"{name}.json"), "--format", "json")
    assert result.exit_code == code, result.stderr
    j = json.loads(result.stdout)
    assert j["overall"] == {0: "SATISFIED", 1: "VIOLATED", 3: "UNKNOWN"}[code]
    assert j["schema"] == "unmask.report/1"


def test_json_output_is_the_canonical_report(examples_dir: Path, backend_name: str) -> None:
    path = examples_dir / "case_d.json"
    result = run(str(path), "--format", "json", "--backend", backend_name)
    assert result.stdout == dumps(check(load_replay(path), backend_name))
    assert json.loads(result.stdout)["backend"] == backend_name


def test_backend_option_is_echoed_in_report(examples_dir: Path) -> None:
    result = run(str(examples_dir / "case_b.json"), "--format", "json", "--backend", "z3")
    assert json.loads(result.stdout)["backend"] == "z3"


def test_text_has_no_colour_when_not_a_terminal(examples_dir: Path) -> None:
    result = run(str(examples_dir / "case_b.json"))
    assert result.exit_code == 1
    assert "\x1b[" not in result.stdout
    first = result.stdout.splitlines()[0]
    assert first.split(": ") == ["case-b", "VIOLATED"]


def test_unknown_backend_is_usage_with_hint(examples_dir: Path) -> None:
    result = run(str(examples_dir / "case_a.json"), "--backend", "z4")
    assert result.exit_code == 2
    assert "unknown backend `z4`" in result.stderr
    assert "did you mean `z3`?" in result.stderr
    assert result.stdout == ""


def test_unknown_format_is_usage(examples_dir: Path) -> None:
    result = run(str(examples_dir / "case_a.json"), "--format", "yaml")
    assert result.exit_code == 2
    assert FORMATS[:2] == ("text", "json")


def test_bad_timeout_is_usage(examples_dir: Path) -> None:
    assert run(str(examples_dir / "case_a.json"), "--timeout-ms", "0").exit_code == 2


def test_invalid_replay_is_exit_4_with_json_path(tmp_path: Path, examples_dir: Path) -> None:
    obj = json.loads((examples_dir / "case_b.json").read_text())
    obj["verdict"] = "MAYBE"
    # the labels come from the protocol: it must be readable for the verdict to be judged
    proto = "factual_claims.proto"
    (tmp_path / proto).write_text((examples_dir / proto).read_text())
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(obj))
    result = run(str(bad))
    assert result.exit_code == 4
    assert "bad.json: verdict: error: the verdict must be `PASS` or `FAIL`" in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr


def test_missing_file_is_exit_4(tmp_path: Path) -> None:
    result = run(str(tmp_path / "nope.json"))
    assert result.exit_code == 4
    assert "nope.json" in result.stderr


def test_limit_option_reaches_the_validator(examples_dir: Path) -> None:
    result = run(str(examples_dir / "case_a.json"), "--max-atoms", "2")
    assert result.exit_code == 4
    assert "--max-atoms" in result.stderr


def _pigeonhole_replay(tmp_path: Path, holes: int) -> Path:
    """A replay whose protocol puts ``holes + 1`` pigeons in ``holes`` holes, one to a hole:
    unsatisfiable, but only a solver finds out, and only after thousands of conflicts (no
    resolution proof of it is short), so no machine decides it within a millisecond."""
    from dataclasses import replace

    from tests.checking.test_checker import factual_protocol
    from unmask.ir import AtomDecl, Constraint, mk_and, mk_atom, mk_not, mk_or
    from unmask.ir.json import protocol_to_json

    pigeons = range(holes + 1)

    def at(i: int, j: int):  # type: ignore[no-untyped-def]
        return mk_atom(f"p{i}_{j}")

    atoms = tuple(AtomDecl(f"p{i}_{j}", "procedure") for i in pigeons for j in range(holes))
    each = [Constraint(f"pigeon{i}", mk_or([at(i, j) for j in range(holes)])) for i in pigeons]
    alone = [
        Constraint(f"hole{j}_{a}_{b}", mk_not(mk_and([at(a, j), at(b, j)])))
        for j in range(holes)
        for a in pigeons
        for b in pigeons
        if a < b
    ]
    protocol = factual_protocol((*each, *alone))
    protocol = replace(protocol, atoms=protocol.atoms + atoms)
    obj = {
        "schema": "unmask.replay/1",
        "id": "pigeonhole",
        "protocol": protocol_to_json(protocol),
        "sources": {"rationale": "r", "context": "c", "response": "s"},
        "verdict": "PASS",
        "annotations": [],
    }
    path = tmp_path / "pigeonhole.json"
    path.write_text(json.dumps(obj))
    return path


@pytest.mark.parametrize("backend", ["z3", "sliced"])
def test_tiny_timeout_never_guesses(tmp_path: Path, backend: str) -> None:
    # the protocol's base needs a solver (no fact settles it) and more than a millisecond
    # of one: the timeout fires, and the base is SOLVER_UNKNOWN, never a guessed CONSISTENT
    path = _pigeonhole_replay(tmp_path, holes=7)
    result = run(str(path), "--format", "json", "--timeout-ms", "1", "--backend", backend)
    assert result.exit_code == 3, result.stderr
    j = json.loads(result.stdout)
    assert j["overall"] == "UNKNOWN"
    assert j["bases"]["proto"] == "SOLVER_UNKNOWN"
    assert j["bases"]["all"] in ("SOLVER_UNKNOWN", "INCONSISTENT")  # proved, or not decided
    assert any(r["code"] == "solver-unknown" for r in j["reasons"])


def test_backend_refusing_the_replay_is_unknown_not_usage(tmp_path: Path) -> None:
    from dataclasses import replace

    from tests.checking.test_checker import factual_protocol
    from unmask.ir import AtomDecl, Constraint, mk_atom, mk_card
    from unmask.ir.json import protocol_to_json

    extra = tuple(AtomDecl(f"x{i}", "procedure") for i in range(30))
    wide = Constraint("wide", mk_card("atleast", 2, [mk_atom(a.name) for a in extra]))
    p = replace(factual_protocol((wide,)), atoms=factual_protocol().atoms + extra)
    obj = {
        "schema": "unmask.replay/1",
        "id": "wide",
        "protocol": protocol_to_json(p),
        "sources": {"rationale": "r", "context": "c", "response": "s"},
        "verdict": "PASS",
        "annotations": [],
    }
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(obj))
    assert run(str(path), "--format", "json").exit_code == 3  # z3 copes: all unknown
    result = run(str(path), "--backend", "truthtable")
    assert result.exit_code == 3  # this backend cannot decide it: unknown, not a usage error
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert result.stderr.startswith("error:")


def test_a_directory_or_an_unreadable_file_is_exit_4(tmp_path: Path) -> None:
    assert_a_directory_or_an_unreadable_file_is_exit_4(run, tmp_path)
