"""A program run ends without the interpreter's teardown, and with nothing else skipped
(``unmask.cli.finish``).

Each run here is a child process whose program is started as its entry point starts it (the
group called with no arguments). A sentinel object kept in a module global is freed only by
the teardown, and its ``__del__`` says so on stderr: it is silent where the teardown was
skipped, and speaks wherever the teardown must happen. Everything a normal exit does that a
user can see still happens: ``atexit`` callbacks run after the command's output, the output
is whole, the status is the command's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.finish import finish
from unmask.cli.main import main
from unmask.plumbing import exitcodes

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# os.write: the teardown may already have replaced or closed sys.stderr
SENTINEL = """
import os, sys
class _Sentinel:
    def __del__(self):
        os.write(2, b"teardown ran\\n")
_kept = _Sentinel()
"""


def run(body: str, *args: str, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    code = SENTINEL + body + "\nfrom unmask.cli.main import main\nmain()\n"
    # standard output to a pipe is block-buffered, as a user's is: what is not flushed
    # before the process ends is lost, which these tests must see
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run(
        [sys.executable, *flags, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=EXAMPLES,
        env=env,
        timeout=120,
    )


def test_a_check_ends_with_its_status_and_whole_output_without_teardown(monkeypatch):
    p = run("", "check", "case_b.json", "--format", "json")
    monkeypatch.chdir(EXAMPLES)
    in_process = CliRunner().invoke(main, ["check", "case_b.json", "--format", "json"])
    assert p.returncode == in_process.exit_code == exitcodes.VIOLATED
    assert json.loads(p.stdout)["schema"]
    assert p.stdout == in_process.stdout
    assert "teardown ran" not in p.stderr


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["check", "case_a.json"], exitcodes.OK),
        (["chek"], exitcodes.USAGE),
        (["--version"], 0),
        (["check", "no-such-file.json"], exitcodes.INVALID),
    ],
)
def test_the_status_is_the_commands(args, status):
    p = run("", *args)
    assert p.returncode == status, p.stderr
    assert "teardown ran" not in p.stderr


def test_atexit_callbacks_run_after_the_output():
    p = run("import atexit\natexit.register(print, 'atexit ran')", "check", "case_a.json")
    assert p.returncode == exitcodes.OK
    assert p.stdout.rstrip().endswith("atexit ran")
    assert p.stdout.count("atexit ran") == 1  # run once, not again by a later exit
    assert "teardown ran" not in p.stderr


def test_the_original_stdout_is_flushed_where_the_stream_was_replaced():
    # a library that swapped sys.stdout leaves the original holding what was written to it
    body = (
        "import atexit, io\n"
        "def late():\n"
        "    sys.__stdout__.write('written late')\n"
        "    sys.stdout = io.StringIO()\n"
        "atexit.register(late)"
    )
    p = run(body, "check", "case_a.json")
    assert p.returncode == exitcodes.OK
    assert p.stdout.endswith("written late")
    assert "teardown ran" not in p.stderr


def test_a_running_thread_is_waited_for_as_a_normal_exit_waits():
    body = (
        "import threading, time\n"
        "def late():\n"
        "    time.sleep(0.3)\n"
        "    print('thread done', flush=True)\n"
        "threading.Thread(target=late).start()"
    )
    p = run(body, "check", "case_a.json")
    assert p.returncode == exitcodes.OK
    assert "thread done" in p.stdout
    assert "teardown ran" in p.stderr


def test_a_daemon_thread_does_not_hold_the_exit():
    body = (
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()"
    )
    p = run(body, "check", "case_a.json")
    assert p.returncode == exitcodes.OK
    assert "teardown ran" not in p.stderr


def test_development_mode_gets_the_teardown():
    p = run("", "check", "case_a.json", flags=("-X", "dev"))
    assert p.returncode == exitcodes.OK
    assert "teardown ran" in p.stderr


@pytest.mark.parametrize("install", [sys.settrace, sys.setprofile], ids=["tracer", "profiler"])
def test_a_tracer_or_profiler_means_a_normal_exit(install):
    # in this process: a finish that did not raise would end the test run, and fail it
    before = sys.gettrace() if install is sys.settrace else sys.getprofile()
    exc = SystemExit(0)
    install(lambda *a: None)
    try:
        with pytest.raises(SystemExit) as caught:
            finish(exc)
    finally:
        install(before)
    assert caught.value is exc


def test_a_flush_that_fails_at_the_end_is_a_normal_exit():
    # standard error that cannot be flushed once the command is done: the normal exit
    # handles it as it always did, so the teardown runs
    body = (
        "import io\n"
        "class Stuck(io.StringIO):\n"
        "    def flush(self):\n"
        "        raise OSError(5, 'stuck')\n"
        "import atexit\n"
        "atexit.register(lambda: setattr(sys, 'stderr', Stuck()))\n"
        "atexit.register(lambda: sys.__stderr__.write('before the flush\\n'))"
    )
    p = run(body, "check", "case_a.json")
    assert "before the flush" in p.stderr
    assert "teardown ran" in p.stderr


def test_a_caller_with_arguments_gets_system_exit():
    with pytest.raises(SystemExit) as caught:
        main(["check", str(EXAMPLES / "case_a.json")])
    assert caught.value.code == exitcodes.OK


@pytest.mark.parametrize("code", ["a text", 256, -1])
def test_a_status_python_words_itself_is_raised_again(code):
    exc = SystemExit(code)
    with pytest.raises(SystemExit) as caught:
        finish(exc)
    assert caught.value is exc


def test_a_live_thread_in_this_process_means_a_normal_exit():
    gate = threading.Event()
    t = threading.Thread(target=gate.wait)
    t.start()
    try:
        exc = SystemExit(0)
        with pytest.raises(SystemExit) as caught:
            finish(exc)
        assert caught.value is exc
    finally:
        gate.set()
        t.join()
