"""Ctrl-C: every command of both programs says `interrupted` and exits 130, the status the
README and ``unmask.plumbing.exitcodes`` give an interrupted run (click alone says `Aborted!` and
exits 1, the status of a violated check)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import default_sigint
from unmask.cli import unmaskc
from unmask.cli.main import main
from unmask.plumbing import exitcodes

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.fixture(autouse=True)
def _python_takes_ctrl_c():
    # A shell without job control starts a background job (`pytest ... &`) with SIGINT
    # ignored, and every process it starts inherits that: these tests set the
    # disposition a terminal gives, Python's own handler, and put the old one back after.
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def _interrupt(*_args, **_kwargs):
    raise KeyboardInterrupt


def test_an_interrupted_check_exits_130(monkeypatch):
    from unmask.checking import outcomes

    monkeypatch.setattr(outcomes, "check_replay", _interrupt)
    result = CliRunner().invoke(main, ["check", str(EXAMPLES / "case_a.json")])
    assert result.exit_code == exitcodes.INTERRUPTED, result.output
    assert "interrupted" in result.output and "Aborted" not in result.output


def test_an_interrupted_compile_exits_130(monkeypatch):
    import unmask.language.compiler

    monkeypatch.setattr(unmask.language.compiler, "compile_source", _interrupt)
    monkeypatch.setattr(unmask.language.compiler, "compile_tree", _interrupt)
    proto = next(EXAMPLES.glob("*.proto"))
    result = CliRunner().invoke(unmaskc.cli, ["compile", str(proto)])
    assert result.exit_code == exitcodes.INTERRUPTED, result.output
    assert "interrupted" in result.output and "Traceback" not in result.output


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_ctrl_c_in_a_running_command_exits_130():
    # a long run, interrupted the way a terminal does it
    args = ["bench", "--sizes", "2000", "--runners", "baseline", "--no-jobs", "--no-memory"]
    proc = subprocess.Popen(
        [sys.executable, "-c", "from unmask.cli.main import main; main()", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the heading: the measuring has begun
    assert line.startswith("unmask bench"), line
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        proc.kill()
    assert proc.returncode == exitcodes.INTERRUPTED, err
    assert err.strip().endswith("interrupted") and "Traceback" not in err


@pytest.mark.skipif(sys.platform == "win32", reason="signal dispositions of a child")
def test_a_child_takes_ctrl_c_though_started_from_a_background_job():
    # what `pytest &` in a script gives: SIGINT ignored, inherited across exec
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    args = [sys.executable, "-c", probe]
    inherited = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert inherited.stdout.strip() == "False"  # the trap the test above must avoid
    set_here = subprocess.run(
        args, capture_output=True, text=True, timeout=60, preexec_fn=default_sigint
    )
    assert set_here.stdout.strip() == "True"


def _pigeonhole(n: int):
    """n + 1 pigeons in n holes, as clauses: unsatisfiable, and seconds of work for a
    SAT solver at n = 9 (resolution needs exponentially many steps)."""
    from unmask.backends.base import Part
    from unmask.ir import Nary, mk_atom, mk_not

    def p(i: int, j: int):
        return mk_atom(f"p{i}_{j}")

    parts = [
        Part(f"constraint:pigeon{i}", Nary("or", tuple(p(i, j) for j in range(n))))
        for i in range(n + 1)
    ]
    for j in range(n):
        for i in range(n + 1):
            for k in range(i + 1, n + 1):
                pair = Nary("or", (mk_not(p(i, j)), mk_not(p(k, j))))
                parts.append(Part(f"constraint:h{j}_{i}_{k}", pair))
    return parts, [f"p{i}_{j}" for i in range(n + 1) for j in range(n)]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to the process itself")
def test_z3_leaves_ctrl_c_to_python_and_its_answer_stands():
    # by default z3 takes SIGINT for itself during a check, cancels it and answers
    # `unknown`: an interruption reported as a solver's result, and Python never told
    import os
    import threading

    from unmask.backends import create
    from unmask.backends.base import Unsat

    seen: list[int] = []
    old = signal.signal(signal.SIGINT, lambda signum, _frame: seen.append(signum))
    try:
        session = create("z3", timeout_ms=60_000).open(*_pigeonhole(9))
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        got = session.check()
        timer.join()
        for _ in range(100):  # the handler runs at the next bytecode boundary
            if seen:
                break
            time.sleep(0.01)
    finally:
        signal.signal(signal.SIGINT, old)
    assert isinstance(got, Unsat), got
    assert seen == [signal.SIGINT]


# --- Ctrl-C in disguise ------------------------------------------------------------------------


def _disguised() -> BaseException:
    """What ctypes raises when SIGINT lands while it converts a C call's arguments."""
    import ctypes

    class Interrupting:
        @property
        def _as_parameter_(self):
            raise KeyboardInterrupt

    try:
        ctypes.CDLL(None).abs(Interrupting())
    except ctypes.ArgumentError as exc:
        return exc
    raise AssertionError("ctypes converted the argument")


def _raise_disguised(*_args, **_kwargs):
    raise _disguised()


@pytest.mark.skipif(sys.platform == "win32", reason="the C library of the process")
def test_a_wrapped_ctrl_c_is_known_for_what_it_is():
    import ctypes

    from unmask.plumbing.interrupt import is_interrupt

    assert is_interrupt(_disguised()) and is_interrupt(KeyboardInterrupt())
    assert not is_interrupt(ctypes.ArgumentError("argument 1: TypeError: wrong type"))
    assert not is_interrupt(ValueError("KeyboardInterrupt"))


@pytest.mark.skipif(sys.platform == "win32", reason="the C library of the process")
def test_an_audit_does_not_turn_a_wrapped_ctrl_c_into_an_error_record(monkeypatch):
    import unmask.checking.outcomes
    from unmask.batch import task as batch_task
    from unmask.bench.workload import replay_line
    from unmask.replay import inputs

    # the batch engine checks through the semantics layer, not the library face
    monkeypatch.setattr(unmask.checking.outcomes, "check_replay_line", _raise_disguised)
    task = inputs.Task("r.jsonl:1", "r.jsonl", 1, replay_line(2, 0, 0).encode())
    with pytest.raises(KeyboardInterrupt):
        batch_task.audit_task(task, batch_task.Settings("sliced", 60_000))


@pytest.mark.skipif(sys.platform == "win32", reason="the C library of the process")
@pytest.mark.parametrize(
    ("module", "name", "args"),
    [
        ("unmask.checking.outcomes", "check_replay", ["check", "REPLAY"]),
        ("unmask.api", "check", ["crosscheck", "REPLAY", "--backends", "z3,sliced"]),
        ("unmask.checking.next", "next_steps", ["next", "REPLAY"]),
    ],
)
def test_commands_stop_on_a_wrapped_ctrl_c(monkeypatch, module, name, args):
    # before: an internal error (exit 3), a disagreement (exit 1), a failed replay
    import importlib

    monkeypatch.setattr(importlib.import_module(module), name, _raise_disguised)
    replay = str(EXAMPLES / "case_a.json")
    result = CliRunner().invoke(main, [replay if a == "REPLAY" else a for a in args])
    assert result.exit_code == exitcodes.INTERRUPTED, result.output
    assert "interrupted" in result.output and "internal" not in result.output


# --- a Ctrl-C that Python swallowed --------------------------------------------------------------


class _DelInterrupted:
    """An object whose `__del__` the signal hits: Python prints and swallows the error."""

    def __del__(self):
        from unmask.plumbing import interrupt

        interrupt.interrupt(signal.SIGINT, None)


def test_a_swallowed_ctrl_c_is_raised_again_at_the_next_solver_call(monkeypatch):
    from unmask.api import check
    from unmask.plumbing import interrupt

    monkeypatch.setattr(sys, "unraisablehook", lambda _u: None)  # the swallowing, quietly
    replay = EXAMPLES / "case_a.json"
    with interrupt.sticky():
        _DelInterrupted()  # dropped at once: the KeyboardInterrupt goes nowhere
        with pytest.raises(KeyboardInterrupt):
            check(replay, "z3", closed_form=False)
    # outside, nothing is remembered: the same check runs
    interrupt.checkpoint()
    assert check(replay, "z3").overall


def test_sticky_puts_the_old_handler_back_and_leaves_others_alone():
    from unmask.plumbing import interrupt

    before = signal.getsignal(signal.SIGINT)
    with interrupt.sticky():
        assert signal.getsignal(signal.SIGINT) is (
            interrupt.interrupt if before is signal.default_int_handler else before
        )
    assert signal.getsignal(signal.SIGINT) is before

    def mine(signum, frame):
        return None

    signal.signal(signal.SIGINT, mine)
    try:
        with interrupt.sticky():
            assert signal.getsignal(signal.SIGINT) is mine  # a program's own: kept
    finally:
        signal.signal(signal.SIGINT, before)


class _DelFails:
    def __del__(self):
        raise ValueError("not an interruption")


def test_a_swallowed_ctrl_c_is_not_reported_but_other_unraisables_are(monkeypatch):
    from unmask.plumbing import interrupt

    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(type(u.exc_value)))
    monkeypatch.setattr(interrupt, "_seen", False)  # put back after: the last line sets it
    with interrupt.sticky():
        _DelInterrupted()  # Python would print "exception ignored ... KeyboardInterrupt"
        _DelFails()
        assert seen == [ValueError]
        with pytest.raises(KeyboardInterrupt):
            interrupt.checkpoint()  # remembered, though not reported
    _DelInterrupted()
    assert seen == [ValueError, KeyboardInterrupt]  # outside: Python's own hook again
