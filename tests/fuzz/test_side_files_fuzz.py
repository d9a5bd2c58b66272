"""Fuzzing the files Unmask reads beside an input, and inputs of every file kind (issue 33).

A FactCC input's ``prompts/`` folder gets, per prompt name, a random kind of file: a regular
prompt, an empty one, binary bytes, a NUL, one past the 1 MiB bound, a link to a secret, a
link to ``/dev/zero``, a named pipe, a folder, nothing, or the whole folder a link out of the
input's folder. `propose claims`, `propose judge` and `import realmistake --gold` get an
input of a random kind. The oracle: each run ends under an alarm (a read that blocks or
grows without end fails here) with a documented exit status, no traceback, one line per
skipped judgment naming the prompt file, exactly the judgments whose prompt is a readable
regular file (or missing) written, and the secret's text nowhere in any output.

Cases per test: ``MAX_EXAMPLES`` (derandomized: CI runs the same cases every time).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unmask.cli.main import main

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")

MAX_EXAMPLES = 25
SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
SECRET = "CANARY-SIDE-FILE-91c2"
KINDS = (
    "regular",
    "empty",
    "binary",
    "nul",
    "big",
    "link-secret",
    "link-dev-zero",
    "fifo",
    "folder",
    "missing",
)
READABLE = {"regular", "empty", "missing"}  # a judgment naming these is imported
NAMES = ("p0", "p1", "p2")
# the run's memory may not grow past this over what it held before (a prompt read
# through a link to /dev/zero grew until an internal error)
GROWTH = 256 << 20
EXPLANATION = 'No. The summary is not consistent: the document says "The cat sat on the mat".'


class _Stop(Exception):
    pass


def _alarm(seconds: int):  # type: ignore[no-untyped-def]
    def stop(*_: object) -> None:
        raise _Stop(f"still running after {seconds} s: a read that blocks?")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    return old


def _disarm(old) -> None:  # type: ignore[no-untyped-def]
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _make(path: Path, kind: str, secret: Path) -> None:
    if kind == "regular":
        path.write_text(f"Judge {path.stem}.\n\nExamples.", encoding="utf-8")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "binary":
        path.write_bytes(b"\xff\xfe\x00\x81 not text")
    elif kind == "nul":
        path.write_text("a\x00b", encoding="utf-8")
    elif kind == "big":
        path.write_bytes(b"x" * ((1 << 20) + 1))
    elif kind == "link-secret":
        path.symlink_to(secret)
    elif kind == "link-dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()


def _rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@SETTINGS
@given(
    kinds=st.tuples(*[st.sampled_from(KINDS)] * len(NAMES)),
    prompts=st.lists(st.sampled_from(NAMES), min_size=1, max_size=6),
    linked_folder=st.booleans(),
)
def test_prompt_files_of_every_kind(kinds, prompts, linked_folder) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="unmask-side-"))
    try:
        secret = tmp / "secret.txt"
        secret.write_text(SECRET, encoding="utf-8")
        case = tmp / "case"
        case.mkdir()
        folder = tmp / "elsewhere" if linked_folder else case / "prompts"
        folder.mkdir()
        if linked_folder:
            (case / "prompts").symlink_to(folder, target_is_directory=True)
        for name, kind in zip(NAMES, kinds, strict=True):
            _make(folder / f"{name}.txt", kind, secret)
        samples = [
            {"model": "m", "prompt": p, "explanation": EXPLANATION, "prediction": 0}
            for p in prompts
        ]
        item = {
            "id": "1",
            "doc": "The cat sat on the mat.",
            "summary": "A dog.",
            "samples": samples,
        }
        src = case / "in.json"
        src.write_text(json.dumps([item]), encoding="utf-8")
        out = tmp / "out"
        before = _rss()
        old = _alarm(30)
        try:
            res = CliRunner().invoke(
                main, ["import", "factcc-explanations", str(src), "--out", str(out)]
            )
        finally:
            _disarm(old)
        assert _rss() - before < GROWTH
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
        assert "Traceback" not in res.output
        kind_of = dict(zip(NAMES, kinds, strict=True))
        good = [
            p
            for p in prompts
            if kind_of[p] in READABLE and not (linked_folder and kind_of[p] != "missing")
        ]
        assert res.exit_code == (0 if len(good) == len(prompts) else 1), res.output
        skips = [line for line in res.stderr.splitlines() if ": skipped: " in line]
        assert len(skips) == len(prompts) - len(good), res.stderr
        assert all("skipped: the prompt file: `" in line for line in skips)
        written = sorted(out.glob("*.json")) if out.exists() else []
        assert len(written) == len(good)
        for p in written:
            text = p.read_text(encoding="utf-8")
            assert SECRET not in text and "\x00" not in text
        assert SECRET not in res.output
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


INPUT_KINDS = ("fifo", "dev-zero", "link-fifo", "folder", "regular", "empty", "binary")


def _input(tmp: Path, kind: str) -> Path:
    path = tmp / "input.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "link-fifo":
        os.mkfifo(tmp / "pipe")
        path.symlink_to(tmp / "pipe")
    elif kind == "folder":
        path.mkdir()
    elif kind == "regular":
        path.write_text(json.dumps({"id": "a", "claim": "x", "evidence": ["y"]}) + "\n", "utf-8")
    elif kind == "empty":
        path.write_bytes(b"")
    else:
        path.write_bytes(b"\xff\x00\x81" * 100)
    return path


@SETTINGS
@given(
    kind=st.sampled_from(INPUT_KINDS),
    command=st.sampled_from(("propose claims", "propose judge", "realmistake --gold")),
)
def test_inputs_of_every_kind(kind: str, command: str) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="unmask-input-"))
    try:
        path = _input(tmp, kind)
        if command == "realmistake --gold":
            judgments = tmp / "j.jsonl"
            judgments.write_text('{"item_id": "a"}\n', encoding="utf-8")
            args = ["import", "realmistake", str(judgments), "--gold", str(path)]
            args += ["--out", str(tmp / "out")]
            documented = {2, 4}
        else:
            args = [*command.split(), str(path)]
            documented = {0, 2, 4}
        old = _alarm(30)
        try:
            res = CliRunner().invoke(main, args)
        finally:
            _disarm(old)
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
        assert "Traceback" not in res.output
        assert res.exit_code in documented, (kind, command, res.output)
        if kind == "folder":
            # click's own check of the argument: a usage error, as the commands' pages say
            assert res.exit_code == 2 and "is a directory" in res.stderr
        elif kind in ("fifo", "dev-zero", "link-fifo", "folder"):
            assert res.exit_code == 4 and "not a regular file" in res.stderr, res.stderr
            assert res.stdout == ""
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
