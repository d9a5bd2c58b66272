"""Files Unmask reads that the user did not name, and inputs that are not regular files
(issue 33): a prompt beside a FactCC input is a regular file, never read through a link
nor from a linked folder, and bounded; a named pipe or a device given as `propose`'s input
or as `--gold` is one line, never a hang. Every case runs under a wall-clock alarm."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.files import open_binary, read_bytes, read_text
from unmask.plumbing.limits import Limits

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")

SECRET = "CANARY-CREDENTIAL-7f3a"
DOC = "The cat sat on the mat in the sun. It was a warm day."
EXPLANATION = 'No. The summary is not consistent: the document says "The cat sat on the mat".'


@pytest.fixture(autouse=True)
def _alarm() -> Iterator[None]:
    """A case that blocks on a pipe fails here instead of hanging the suite."""

    def stop(*_: object) -> None:
        raise TimeoutError("blocked: a named pipe or a device was read")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(20)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def factcc_input(folder: Path, prompt: str = "p1") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    item = {
        "id": "7",
        "doc": DOC,
        "summary": "The dog sat on the mat.",
        "samples": [
            {"model": "m", "prompt": prompt, "explanation": EXPLANATION, "prediction": 0},
            {"model": "m", "prompt": "p2", "explanation": EXPLANATION, "prediction": 0},
        ],
    }
    src = folder / "in.json"
    src.write_text(json.dumps([item]), encoding="utf-8")
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "p2.txt").write_text("Judge the summary.\n\nExamples…", "utf-8")
    return src


def import_factcc(src: Path, out: Path):
    return cli("import", "factcc-explanations", str(src), "--out", str(out))


def written_text(out: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in sorted(out.glob("*.json")))


def test_a_regular_prompt_file_is_read_and_a_missing_one_is_no_source(tmp_path: Path) -> None:
    src = factcc_input(tmp_path / "in")
    res = import_factcc(src, tmp_path / "out")
    assert res.exit_code == 0, res.stderr
    replays = [json.loads(p.read_text("utf-8")) for p in sorted((tmp_path / "out").glob("*.json"))]
    protocols = sorted(r["sources"].get("protocol", "-") for r in replays)
    assert protocols == ["-", "Judge the summary."]  # p1 is missing: no instructions


@pytest.mark.parametrize("kind", ["link", "fifo", "dev-zero", "linked-folder", "folder", "big"])
def test_a_prompt_that_is_not_a_regular_file_here_skips_its_judgments(tmp_path, kind) -> None:
    src = factcc_input(tmp_path / "in")
    prompt = tmp_path / "in" / "prompts" / "p1.txt"
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET, encoding="utf-8")
    if kind == "link":
        prompt.symlink_to(secret)
    elif kind == "fifo":
        os.mkfifo(prompt)
    elif kind == "dev-zero":
        prompt.symlink_to("/dev/zero")
    elif kind == "linked-folder":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "p1.txt").write_text(SECRET, encoding="utf-8")
        (elsewhere / "p2.txt").write_text("Judge the summary.", encoding="utf-8")
        for f in (tmp_path / "in" / "prompts").iterdir():
            f.unlink()
        (tmp_path / "in" / "prompts").rmdir()
        (tmp_path / "in" / "prompts").symlink_to(elsewhere, target_is_directory=True)
    elif kind == "folder":
        prompt.mkdir()
    else:
        prompt.write_bytes(b"x" * (1 << 20) + b"more")
    res = import_factcc(src, tmp_path / "out")
    assert res.exit_code == 1, res.stderr
    skipped = [line for line in res.stderr.splitlines() if "skipped:" in line]
    expected = 2 if kind == "linked-folder" else 1  # a linked folder: p2 as well
    assert len(skipped) == expected, res.stderr
    assert "[0].samples[0]: skipped: the prompt file: `" in skipped[0]
    what = {
        "link": "is a symbolic link, which is not followed here",
        "fifo": "is a named pipe, not a regular file",
        "dev-zero": "is a symbolic link, which is not followed here",
        "linked-folder": "is in a folder that links elsewhere",
        "folder": "is a directory, not a regular file",
        "big": "is larger than the limit of 1048576 bytes",
    }[kind]
    assert what in skipped[0]
    assert SECRET not in res.stderr and SECRET not in written_text(tmp_path / "out")
    assert "Traceback" not in res.output


def test_read_bytes_of_a_side_file_refuses_links_and_folders_leading_out(tmp_path) -> None:
    (tmp_path / "real.txt").write_text("ok", encoding="utf-8")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    assert read_text(tmp_path / "real.txt", follow=False, inside=tmp_path) == "ok"
    assert read_text(tmp_path / "link.txt") == "ok"  # a file the user names: followed
    with pytest.raises(UnmaskError) as info:
        read_bytes(tmp_path / "link.txt", follow=False)
    assert info.value.diagnostics[0].code == "io"
    base, elsewhere = tmp_path / "base", tmp_path / "elsewhere"
    base.mkdir()
    elsewhere.mkdir()
    (elsewhere / "real.txt").write_text("secret", encoding="utf-8")
    (base / "inner").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UnmaskError) as info:
        read_bytes(base / "inner" / "real.txt", follow=False, inside=base)
    assert "links elsewhere" in info.value.diagnostics[0].message


def test_open_binary_refuses_a_pipe_and_a_device_without_blocking(tmp_path) -> None:
    os.mkfifo(tmp_path / "pipe")
    for path, what in ((tmp_path / "pipe", "a named pipe"), (Path("/dev/zero"), "a device")):
        with pytest.raises(UnmaskError) as info:
            open_binary(path)
        assert f"is {what}, not a regular file" in info.value.diagnostics[0].message
    (tmp_path / "big").write_bytes(b"x" * 100)
    with pytest.raises(UnmaskError):
        open_binary(tmp_path / "big", limits=Limits(max_file_bytes=10))
    with open_binary(tmp_path / "big") as fh:
        assert fh.read() == b"x" * 100


@pytest.mark.parametrize("command", ["claims", "judge"])
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_propose_input_that_is_a_pipe_or_device_is_one_line_exit_4(tmp_path, command, kind):
    path = tmp_path / "in.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    res = cli("propose", command, str(path))
    assert res.exit_code == 4, res.output
    assert "not a regular file" in res.stderr and "Traceback" not in res.output
    assert res.stdout == ""


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_realmistake_gold_that_is_a_pipe_or_device_is_one_line_exit_4(tmp_path, kind) -> None:
    gold = tmp_path / "data.zip"
    if kind == "fifo":
        os.mkfifo(gold)
    else:
        gold = Path("/dev/zero")
    judgments = tmp_path / "j.jsonl"
    judgments.write_text('{"item_id": "a"}\n', encoding="utf-8")
    res = cli("import", "realmistake", str(judgments), "--gold", str(gold), "--out", "o")
    assert res.exit_code == 4, res.output
    assert "not a regular file" in res.stderr and "Traceback" not in res.output
    assert not (tmp_path / "o").exists()


def test_a_long_path_in_a_message_is_shortened(tmp_path: Path) -> None:
    name = "d" * 250 + "/" + "e" * 250 + "/x.jsonl"
    res = cli("propose", "claims", str(tmp_path / name))
    assert res.exit_code == 4
    [first, *_] = res.stderr.splitlines()
    assert (
        len(first) < 1000 and "…" in first and first.endswith("x.jsonl`: no such file or directory")
    )
