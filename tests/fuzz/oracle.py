"""Running a fuzz case and judging its outcome.

Contract: ``run_inprocess(case)`` runs it through click's ``CliRunner`` under a wall-clock
alarm; ``run_process(case)`` through a real process (stdin closed, a timeout). Both return
an ``Outcome``; ``problems(case, outcome)`` lists what is wrong with it: no exit within the
timeout, an exit status the command does not document, a traceback, stdout that is not a
valid document of the format asked for, a control character or bidirectional override
from the input raw on stderr or on `unmask`'s stdout (the output policy), a message on
stderr that breaks docs/style.md (``tests.message_style``), or a canary's content anywhere
in the output.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from tests.fuzz.gen import CANARY, EXITS, Case
from tests.message_style import message_problems

BIN = Path(sys.executable).parent
# a diagnostic as `unmask.plumbing.diagnostics.render` prints it: `[PLACE: ]error: MESSAGE`
_MESSAGE = re.compile(r"^(?:.*?: )?(?:error|warning): (.*)$", re.MULTILINE)
# what the output policy (unmask/plumbing/safe.py) keeps out of every output, written out here
ACTING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@dataclass
class Outcome:
    code: int | None  # None: it did not end in time
    stdout: str
    stderr: str
    crash: str = ""  # an exception that escaped the command (in-process)


class _Hang(BaseException):
    """Raised by the alarm; a BaseException so click's runner does not swallow it."""


def _alarm(signum, frame):  # type: ignore[no-untyped-def]
    raise _Hang


def run_inprocess(case: Case, timeout_s: float = 60.0) -> Outcome:
    if case.prog == "unmask":
        from unmask.cli.main import main as prog
    else:
        from unmask.cli.unmaskc import cli as prog
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        result = CliRunner().invoke(prog, case.args)
    except _Hang:
        return Outcome(None, "", "")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    crash = ""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        exc = result.exception
        crash = f"{type(exc).__name__}: {exc}"[:500]
    return Outcome(result.exit_code, result.stdout, result.stderr, crash)


def run_process(case: Case, timeout_s: float = 60.0) -> Outcome:
    env = dict(os.environ)
    if not env.get("PYTHONPYCACHEPREFIX"):
        # no bytecode written into the tree; with a prefix (tests/conftest.py) it goes there
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("UNMASK_PROTOCOL_PATH", None)
    try:
        p = subprocess.run(
            [str(BIN / case.prog), *case.args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout_s,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return Outcome(None, "", "")
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    return Outcome(p.returncode, out, err)


def _format_problem(case: Case, out: str) -> str:
    """What is wrong with stdout as a document of the format asked for, or ''."""
    fmt = case.fmt
    try:
        if fmt in ("json", "sarif", "ir"):
            doc = json.loads(out)
            if fmt == "sarif" and doc.get("version") != "2.1.0":
                return "sarif without version 2.1.0"
        elif fmt == "junit":
            ET.fromstring(out)
        elif fmt == "html" and (
            not out.lstrip().lower().startswith("<!doctype html") or "</html>" not in out
        ):
            return "html is not a whole page"
    except (ValueError, ET.ParseError) as exc:
        return f"stdout is not valid {fmt}: {exc}"
    if case.prog == "unmask" and ACTING.search(out):
        return "a raw control character or bidirectional override reached stdout"
    return ""


def problems(case: Case, o: Outcome) -> list[str]:
    if o.code is None:
        return ["did not end within its timeout"]
    found = []
    if o.crash:
        found.append(f"exception escaped: {o.crash}")
    if o.code not in EXITS[case.command]:
        found.append(f"exit {o.code} is not one of {sorted(EXITS[case.command])}")
    if "Traceback" in o.stderr or "Traceback" in o.stdout:
        found.append("traceback in the output")
    if ACTING.search(o.stderr):  # every message goes through the output policy
        found.append("a raw control character or bidirectional override reached stderr")
    for m in _MESSAGE.finditer(o.stderr):  # every message printed keeps docs/style.md
        broken = message_problems(m.group(1))
        if broken:
            found.append(f"the message {m.group(1)!r} {', '.join(broken)}")
    # a file named on `unmaskc`'s command line was chosen by the user, not by a replay
    if case.command != "unmaskc-path" and (CANARY in o.stdout or CANARY in o.stderr):
        found.append("a file outside the replay's folder was printed")
    if case.command == "check":
        if o.code in (0, 1, 3) and not (o.code == 3 and not o.stdout):
            bad = _format_problem(case, o.stdout)
            if bad:
                found.append(bad)
        if o.code in (3, 4) and case.fmt in ("sarif", "junit"):
            # an invalid or undecidable replay still gets a document recording the error
            bad = _format_problem(case, o.stdout) if o.stdout else "no document on stdout"
            if bad:
                found.append(bad)
    # a free domain without members is checked and nothing is written (language.md)
    free = not o.stdout and "no members, so nothing was written" in o.stderr
    if case.prog == "unmaskc" and o.code == 0 and case.fmt == "ir" and not free:
        bad = _format_problem(case, o.stdout)
        if bad:
            found.append(bad)
    if case.command == "validate" and o.code == 0 and o.stdout.count("\n") != 1:
        found.append("validate did not print one line")
    return found
