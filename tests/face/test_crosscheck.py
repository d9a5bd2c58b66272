"""`unmask crosscheck`: agreement, the first difference, skipped backends, exit statuses."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import unmask.backends as registry
from tests.helpers import assert_a_directory_or_an_unreadable_file_is_exit_4, wide_replay
from unmask.backends import Backend, Part, Sat, Session
from unmask.cli.main import main
from unmask.commands.crosscheck import first_difference


def run(*args: str):
    return CliRunner().invoke(main, ["crosscheck", *args])


class _AlwaysSat(Session):
    def check(self, query=None, *, enabled=None, assume=None, want=()):
        self.calls += 1
        return Sat({n: False for n in want})


class AlwaysSatBackend(Backend):
    """A broken backend that believes every base and query is satisfiable."""

    name = "alwayssat"

    def open(self, parts: list[Part], atoms: list[str]) -> Session:
        return _AlwaysSat()


def test_first_difference_walks_in_order():
    a = {"overall": "OK", "checks": [{"status": "ENTAILED"}, {"status": "REFUTED"}], "x": 1}
    b = {"overall": "OK", "checks": [{"status": "ENTAILED"}, {"status": "UNKNOWN"}], "x": 2}
    assert first_difference(a, b) == ("checks[1].status", "REFUTED", "UNKNOWN")
    assert first_difference(a, a) is None
    assert first_difference([1, 2], [1, 2, 3]) == (".length", 2, 3)
    assert first_difference({"a": True}, {"a": 1}) == ("a", True, 1)
    path, _, theirs = first_difference({"a": 1}, {"a": 1, "b": 2})
    assert (path, theirs) == ("b", 2)


@pytest.mark.parametrize("case", ["case_a", "case_b", "case_c_family", "case_unknown"])
def test_examples_agree_on_every_backend(examples_dir, case):
    result = run(str(examples_dir / f"{case}.json"))
    assert result.exit_code == 0, result.output + result.stderr
    assert f"{', '.join(registry.available())} agree" in result.stdout


def test_a_disagreeing_backend_is_caught_at_the_first_difference(examples_dir, monkeypatch):
    monkeypatch.setitem(registry._REGISTRY, "alwayssat", AlwaysSatBackend)
    result = run(str(examples_dir / "case_b.json"), "--backends", "z3,alwayssat")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "case-b: backends disagree at `overall`"
    assert lines[1] == '  z3: "VIOLATED"'
    assert lines[2].startswith("  alwayssat: ")


def test_a_backend_over_its_limit_is_skipped_not_a_disagreement(tmp_path):
    result = run(str(wide_replay(tmp_path, 30, "big")))
    assert result.exit_code == 0, result.output + result.stderr
    ran = ", ".join(n for n in registry.available() if n != "truthtable")
    assert result.stdout.strip() == f"big: {ran} agree (overall UNKNOWN)"
    assert result.stderr.startswith("truthtable: skipped: ")
    assert "`--backend z3`" in result.stderr


def test_nothing_compared_when_only_one_backend_runs(tmp_path):
    result = run(str(wide_replay(tmp_path, 30, "big")), "--backends", "pysat,truthtable")
    assert result.exit_code == 3
    assert "only `pysat` ran" in result.stdout


def test_invalid_input_and_usage(tmp_path, examples_dir):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "unmask.replay/1"}')
    assert run(str(bad)).exit_code == 4
    assert run(str(tmp_path / "missing.json")).exit_code == 4
    case = str(examples_dir / "case_a.json")
    assert run(case, "--backends", "z3").exit_code == 2
    assert run(case, "--backends", "z3,z3").exit_code == 2
    unknown = run(case, "--backends", "z3,pysat:glucos4")
    assert unknown.exit_code == 2 and "did you mean" in unknown.stderr
    assert run(case, "--timeout-ms", "0").exit_code == 2
    agree = run(case, "--backends", "pysat:glucose4,pysat:minisat22", "--timeout-ms", "5000")
    assert agree.exit_code == 0


def test_a_directory_or_an_unreadable_file_is_invalid_input(tmp_path):
    assert_a_directory_or_an_unreadable_file_is_exit_4(run, tmp_path)
