"""Two things every command does the same way, each written once: a bug is one
``internal-error`` diagnostic (``unmask.plumbing.diagnostics.internal_error``) with exit 3 and no
traceback; ``--backend`` is opened by ``unmask.commands._options.open_backend``, so a wrong
name is one diagnostic with a "did you mean" hint and exit 2 in every command, and a backend
whose solver library is missing is named without the import error's text."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import found_files
from tests.message_style import message_problems
from unmask.cli.main import main
from unmask.plumbing import exitcodes
from unmask.plumbing.diagnostics import INTERNAL_HELP, internal_error

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CASE = str(EXAMPLES / "case_a.json")
PROTO = str(EXAMPLES / "factual_claims.proto")


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def _boom(*_a, **_k):
    raise RuntimeError("boom \x1b[2J")


# --- one internal error --------------------------------------------------------------------


def test_the_internal_error_names_no_implementation_type() -> None:
    d = internal_error(KeyError("x"), file="f.json")
    assert d.code == "internal-error" and d.file == "f.json"
    assert d.message == "internal error: Unmask failed unexpectedly"
    assert "KeyError" not in d.message and d.help == INTERNAL_HELP
    assert d.notes == ("for the report: `KeyError: 'x'`",)  # for the bug report, quoted


def _assert_internal(res, status: int = exitcodes.INTERNAL) -> None:
    assert res.exit_code == status, res.output
    assert "error: internal error: Unmask failed unexpectedly" in res.stderr
    assert "Traceback" not in res.output and "Traceback" not in res.stderr
    assert "\x1b" not in res.stderr  # the exception's text goes through the output policy
    assert isinstance(res.exception, SystemExit)


def test_a_bug_in_check_is_the_internal_error(monkeypatch) -> None:
    monkeypatch.setattr("unmask.checking.outcomes.check_replay", _boom)
    _assert_internal(run("check", CASE))
    # a CI format still gets its document, which records the same message
    res = run("check", CASE, "--format", "sarif")
    _assert_internal(res)
    notes = json.loads(res.stdout)["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert [n["message"]["text"] for n in notes] == [internal_error().message]


def test_a_bug_in_next_is_the_internal_error(monkeypatch) -> None:
    monkeypatch.setattr("unmask.checking.next.next_steps", _boom)
    _assert_internal(run("next", CASE))


def test_a_bug_anywhere_else_is_the_internal_error_not_a_traceback(monkeypatch) -> None:
    # validate, analyze and compare catch nothing themselves: the entry point does
    monkeypatch.setattr("unmask.replay.load.load_replay", _boom)
    _assert_internal(run("validate", CASE))
    monkeypatch.setattr("unmask.analysis.analyze.analyze", _boom)
    _assert_internal(run("analyze", PROTO))


def test_a_bug_in_an_audit_is_the_internal_error_record(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(
        "unmask.checking.outcomes.check_replay_line", _boom
    )  # the batch engine checks here
    out = tmp_path / "r.jsonl"
    res = run("audit", CASE, "--jobs", "1", "--out", str(out))
    assert res.exit_code == 0, res.output
    (line,) = out.read_text(encoding="utf-8").splitlines()
    (err,) = json.loads(line)["errors"]
    assert err["code"] == "internal-error" and err["message"] == internal_error().message


def test_a_crashing_backend_in_crosscheck_is_a_disagreement_with_the_internal_error(
    monkeypatch,
) -> None:
    from unmask.backends.truthtable import TruthTableSession

    monkeypatch.setattr(TruthTableSession, "check", _boom)
    res = run("crosscheck", CASE, "--backends", "z3,truthtable")
    assert res.exit_code == exitcodes.VIOLATED
    assert "backend `truthtable` failed" in res.stdout and "boom" not in res.stdout
    assert "error: internal error: Unmask failed unexpectedly" in res.stderr


def _calls(tree: ast.AST):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)]


def test_the_internal_error_is_built_in_one_place() -> None:
    """No other module builds an ``internal-error`` diagnostic or words the message."""
    for path in found_files((ROOT / "unmask").rglob("*.py"), at_least=50):
        if path.name == "diagnostics.py" and path.parent.name == "plumbing":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not node.value.lower().startswith("internal error"), path
        for call in _calls(tree):
            name = getattr(call.func, "id", getattr(call.func, "attr", ""))
            if name == "Diagnostic":
                args = [*call.args, *(k.value for k in call.keywords)]
                codes = [a.value for a in args if isinstance(a, ast.Constant)]
                assert "internal-error" not in codes, f"{path}:{call.lineno}"


# --- one backend opener --------------------------------------------------------------------

COMMANDS = {
    "check": ("check", CASE, "--backend"),
    "crosscheck": ("crosscheck", CASE, "--backends"),
    "audit": ("audit", CASE, "--backend"),
    "next": ("next", CASE, "--backend"),
    "analyze": ("analyze", PROTO, "--backend"),
    "compare": ("compare", PROTO, PROTO, "--backend"),
}


def _with_backend(command: str, name: str) -> list[str]:
    args = list(COMMANDS[command])
    value = f"z3,{name}" if args[-1] == "--backends" else name
    return [*args, value]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_unknown_backend_is_one_usage_error_with_a_hint(command: str) -> None:
    res = run(*_with_backend(command, "zz3"))
    assert res.exit_code == exitcodes.USAGE, res.output
    lines = res.stderr.splitlines()
    assert lines[0] == "error: unknown backend `zz3`"
    assert lines[1].startswith("  = help: did you mean `z3`? the backends are `z3`, ")
    assert "Traceback" not in res.output


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_option_a_backend_does_not_take_is_one_usage_error(command: str) -> None:
    res = run(*_with_backend(command, "z3:x"))
    assert res.exit_code == exitcodes.USAGE, res.output
    assert res.stderr.splitlines() == [
        "error: backend `z3` takes no option, `x` was given",
        "  = help: write `z3` alone; a solver is chosen after the colon in `pysat:SOLVER`, "
        "`sliced:SOLVER`",
    ]
    assert run(*_with_backend(command, "sliced:glucose4")).exit_code != exitcodes.USAGE


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_backend_that_cannot_be_imported_is_named_not_its_import_error(
    command: str, monkeypatch
) -> None:
    def missing(*_a, **_k):
        raise ImportError("No module named 'pysat.solvers'", name="pysat.solvers")

    monkeypatch.setattr("unmask.backends.create", missing)
    res = run(*_with_backend(command, "pysat"))
    assert res.exit_code == exitcodes.USAGE, res.output
    assert res.stderr.splitlines() == [
        "error: backend `pysat` cannot be loaded"
        if command != "crosscheck"
        else "error: backend `z3` cannot be loaded",
        "  = help: it needs the module `pysat`, which is not installed",
    ]


def test_a_bad_solver_option_is_one_usage_error_with_a_hint() -> None:
    res = run("check", CASE, "--backend", "pysat:glucose5")
    assert res.exit_code == exitcodes.USAGE
    assert res.stderr.splitlines()[0] == "error: unknown pysat solver `glucose5`"
    assert "did you mean `pysat:glucose4`?" in res.stderr


def test_commands_open_backends_only_through_open_backend() -> None:
    for path in found_files((ROOT / "unmask" / "commands").glob("*.py"), at_least=5):
        if path.name == "_options.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "unmask.backends":
                assert "create" not in {a.name for a in node.names}, path


def test_a_bug_in_unmaskc_is_the_internal_error_not_a_traceback(monkeypatch) -> None:
    from unmask.cli.unmaskc import cli as unmaskc

    # unmaskc compiles the tree it parsed (compile_tree); patch both entries
    monkeypatch.setattr("unmask.language.compiler.compile_source", _boom)
    monkeypatch.setattr("unmask.language.compiler.compile_tree", _boom)
    _assert_internal(CliRunner().invoke(unmaskc, [PROTO]))


# --- a command line that cannot be run: one `usage` diagnostic, not click's text -----------


def _usage(program, *args: str):
    """The diagnostic a command line that cannot be run ends with, and the rendered run."""
    from unmask.cli.usage import Usage

    name = "unmask" if program is main else "unmaskc"
    res = CliRunner().invoke(program, list(args), standalone_mode=False, prog_name=name)
    assert isinstance(res.exception, Usage), (res.exception, res.output)
    shown = CliRunner().invoke(program, list(args), prog_name=name)
    assert shown.exit_code == exitcodes.USAGE, shown.output
    assert "Error:" not in shown.output and "Try '" not in shown.output
    d = res.exception.diagnostic
    assert not message_problems(d.message, d.help), d  # docs/style.md, as every message
    return d, shown.stderr


def test_a_misspelt_option_is_named_with_the_one_meant() -> None:
    d, stderr = _usage(main, "check", CASE, "--formt", "html")
    assert (d.code, d.message) == ("usage", "no such option `--formt`")
    assert d.help == "did you mean `--format`? `unmask check --help` lists the options"
    assert d.notes == ("usage: unmask check [OPTIONS] REPLAY.json",)
    assert stderr.splitlines()[0] == "error: no such option `--formt`"


def test_a_value_an_option_does_not_take_names_the_option_and_the_values() -> None:
    d, _ = _usage(main, "audit", CASE, "--fail-on", "violate")
    assert d.code == "usage"
    assert d.message == (
        "invalid value for `--fail-on`: `violate` is not one of "
        "`violated`, `unknown`, `confirmed`, `trusted`"
    )
    d, _ = _usage(main, "audit", CASE, "--jobs", "999")
    assert d.message.startswith("invalid value for `--jobs`: 999 is not in the range 0<=x<=")


def test_a_missing_argument_and_an_extra_one_are_named() -> None:
    d, _ = _usage(main, "check")
    assert (d.code, d.message) == ("usage", "missing argument `REPLAY.json`")
    assert d.help == "`unmask check --help` lists the options"
    d, _ = _usage(main, "check", CASE, "other.json")
    assert d.message == "unexpected argument `other.json`"
    assert d.help == (
        "it checks one replay; `unmask audit PATH...` checks several; "
        "`unmask check --help` shows what it takes"
    )
    d, _ = _usage(main, "crosscheck", CASE, CASE)
    assert d.help is not None and d.help.startswith("it checks one replay; `unmask audit PATH...`")
    d, _ = _usage(main, "audit", CASE, "--out")
    assert d.message == "option `--out` requires an argument"
    # click's parser gives this one no context: the subcommand's usage all the same
    assert d.notes == ("usage: unmask audit [OPTIONS] PATH...",)
    assert d.help == "`unmask audit --help` lists the options"


def test_an_unknown_command_says_where_the_commands_are_listed() -> None:
    d, _ = _usage(main, "chek", CASE)
    assert d.message == "no such command `chek` (did you mean `check`?)"
    assert d.help == "`unmask --help` lists the commands"
    d, _ = _usage(main, "--versoin")
    assert d.help == "did you mean `--version`? `unmask --help` lists the options"
    # a subgroup's commands, and the one closest option alone (not `--help` beside it)
    d, _ = _usage(main, "propose", "jugde")
    assert (d.message, d.help) == (
        "no such command `jugde`",
        "did you mean `judge`? `unmask propose --help` lists the commands",
    )
    d, _ = _usage(main, "propose", "judge", "x.jsonl", "--feild", "a")
    assert d.help == "did you mean `--field`? `unmask propose judge --help` lists the options"
    d, _ = _usage(main, "check", CASE, "--hepl")
    assert d.help == "did you mean `--help`? `unmask check --help` lists the options"


def test_unmaskc_usage_errors_are_the_same_diagnostics(tmp_path) -> None:
    from unmask.cli.unmaskc import cli

    d, _ = _usage(cli, PROTO, "--domian", "claim=a")
    assert (d.code, d.message) == ("usage", "no such option `--domian`")
    assert d.help is not None and d.help.startswith("did you mean `--domain`?")
    d, _ = _usage(cli, "fmt", "--check", "--write", PROTO)
    assert d.message == "`--check` and `--write` cannot be used together"


def test_a_group_without_its_subcommand_still_shows_its_help() -> None:
    res = run("propose")
    assert res.exit_code == exitcodes.USAGE
    assert "Commands:" in res.output and "error:" not in res.output
