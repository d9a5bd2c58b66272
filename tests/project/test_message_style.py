"""docs/style.md holds for every diagnostic the code can produce, not for a few call sites:
the messages are collected from the sources (``tests/message_style.py``) and each is
checked; the checker itself is shown to catch each rule on bad examples. The fuzz oracle
checks the messages the exit paths print, too (``tests/fuzz/oracle.py``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.message_style import Template, collect, message_problems, problems

ROOT = Path(__file__).resolve().parents[2]


def test_every_diagnostic_message_keeps_the_style_guide() -> None:
    found = collect([ROOT / "unmask", ROOT / "backends"])
    # every module that reports a problem is read: not a handful of call sites
    assert len(found) > 200
    assert len({t.where.split(":")[0] for t in found}) > 30
    bad = [f"{t.where}: {t.shown()!r}: {', '.join(problems(t))}" for t in found if problems(t)]
    assert bad == [], "\n".join(bad)


def _collect_source(tmp_path: Path, source: str) -> list[Template]:
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "mod.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return collect([folder])


BAD = {
    "Unknown atom `x`": "starts with a capital letter",
    "unknown atom `x`.": "ends with a period",
    "unknown atom `x`; the atoms are `a`, `b`": "second clause",
    "expected a str, found a dict": "implementation type `str`",
    "the value is NoneType": "implementation type `NoneType`",
    "cannot read the file: KeyError": "implementation type `KeyError`",
    "backend cannot be loaded: ImportError": "implementation type `ImportError`",
    "see the Traceback": "implementation type `Traceback`",
}


@pytest.mark.parametrize(("message", "rule"), sorted(BAD.items()))
def test_the_checker_catches_a_message_that_breaks_a_rule(
    tmp_path: Path, message: str, rule: str
) -> None:
    (t,) = _collect_source(tmp_path, f"Diagnostic('code', {message!r})\n")
    assert any(rule in p for p in problems(t)), problems(t)
    assert any(rule in p for p in message_problems(message))


def test_the_checker_catches_raw_exceptions_and_bare_user_input(tmp_path: Path) -> None:
    source = """
        def f(exc, name):
            Diagnostic("c", f"backend cannot be loaded: {exc}")
            Diagnostic("c", f"it failed with {type(exc).__name__}")
            Diagnostic("c", f"unknown atom {show(name)}")
            Diagnostic("c", f"unknown atom `{show(name)}`", help="Try another.")
    """
    found = [problems(t) for t in _collect_source(tmp_path, source)]
    assert found == [
        ["shows an exception's raw text or type `{exc}`"],
        ["shows an exception's raw text or type `{type(exc).__name__}`"],
        ["shows user input `{show(name)}` without backticks"],
        ["help starts with a capital letter", "help ends with a period"],
    ]


def test_messages_that_keep_the_rules_pass(tmp_path: Path) -> None:
    source = """
        def f(name, n):
            Diagnostic("c", f"unknown atom `{show(name)}`", help="did you mean `a`?")
            Diagnostic("c", f"`{show(name)}` is not a name")
            Diagnostic("c", f"this string has {n} characters, more than the limit of 10")
            Diagnostic("c", "the member `str` is fine inside backticks; so is `a;b`")
    """
    found = _collect_source(tmp_path, source)
    assert len(found) == 4
    assert [problems(t) for t in found[:3]] == [[], [], []]
    # a `;` outside backticks is still a second clause
    assert problems(found[3]) == ["has a second clause after `;` (it belongs in help)"]


def test_messages_are_found_through_helpers_locals_and_branches(tmp_path: Path) -> None:
    source = """
        def _usage(message, help=None):
            raise UsageError(message)

        def _fail(msg):
            _usage(msg)

        class R:
            def err(self, code, path, message, help=None):
                self.diags.append(Diagnostic(code, message, path=path, help=help))

        def g(r, ok):
            _fail("Through two helpers")
            r.err("c", "$", "through a method.")
            message = "from a local; second" if ok else "other branch"
            Diagnostic("c", message)
    """
    found = {t.text: problems(t) for t in _collect_source(tmp_path, source)}
    assert found == {
        "Through two helpers": ["starts with a capital letter"],
        "through a method.": ["ends with a period"],
        "from a local; second": ["has a second clause after `;` (it belongs in help)"],
        "other branch": [],
    }
