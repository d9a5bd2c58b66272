"""`unmask audit` on the command line: inputs, exit statuses, summary, progress, resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.bench import replay_line
from unmask.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CASES = ["case_a.json", "case_b.json", "case_c.json", "case_d.json", "case_unknown.json"]


def run(args, input=None):
    return CliRunner().invoke(main, ["audit", *args], input=input)


def lines_of(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def audited(tmp_path: Path, n: int) -> tuple[Path, Path]:
    """``n`` replays in ``in.jsonl``, and their audit run to the end in ``full.jsonl``."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(replay_line(2, 5, i) + "\n" for i in range(n)))
    full = tmp_path / "full.jsonl"
    assert run([str(src), "--out", str(full), "--quiet"]).exit_code == 0
    return src, full


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    d = tmp_path / "cases"
    d.mkdir()
    for name in [*CASES, "factual_claims.proto"]:
        shutil.copy(EXAMPLES / name, d / name)
    return d


def test_directory_to_file_with_summary_json(cases: Path, tmp_path: Path) -> None:
    out, summary = tmp_path / "r.jsonl", tmp_path / "s.json"
    result = run([str(cases), "--out", str(out), "--summary-json", str(summary)])
    assert result.exit_code == 0, result.output
    objs = lines_of(out)
    assert [o["location"] for o in objs] == [str(cases / n) for n in CASES]
    assert [o["overall"] for o in objs] == [
        "SATISFIED",
        "VIOLATED",
        "VIOLATED",
        "VIOLATED",
        "UNKNOWN",
    ]
    s = json.loads(summary.read_text())
    assert s["schema"] == "unmask.summary/1"
    assert s["replays"] == 5 and s["overall"]["VIOLATED"] == 3
    assert s["gold"]["cells"]["wrong_and_violated"] == 2
    assert "fails most often" in result.stderr


def test_stdin_jsonl_to_stdout(tmp_path: Path) -> None:
    text = "".join(replay_line(2, 3, i) + "\n" for i in range(4)) + "{oops\n"
    result = run(["-", "--quiet"], input=text)
    assert result.exit_code == 0
    objs = [json.loads(x) for x in result.stdout.splitlines()]
    assert [o["location"] for o in objs] == [f"<stdin>:{n}" for n in range(1, 6)]
    assert objs[-1]["schema"] == "unmask.error/1"
    assert objs[-1]["errors"][0]["code"] == "json-syntax"
    assert result.stderr == ""  # --quiet, and no progress line when not on a terminal


@pytest.mark.parametrize(
    ("names", "fail_on", "status"),
    [
        (CASES, None, 0),
        (CASES, "violated", 1),
        (CASES, "unknown", 1),  # VIOLATED wins over UNKNOWN
        (["case_a.json", "case_unknown.json"], "violated", 0),
        (["case_a.json", "case_unknown.json"], "unknown", 3),
        (["case_a.json"], "unknown", 0),
    ],
)
def test_fail_on_gates(cases: Path, names, fail_on, status) -> None:
    args = [str(cases / n) for n in names] + ["--quiet"]
    if fail_on:
        args += ["--fail-on", fail_on]
    assert run(args).exit_code == status


def test_invalid_inputs_trip_the_unknown_gate_and_all_invalid_is_4(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n[1]\n")
    assert run([str(bad), "--quiet"]).exit_code == 4
    good = tmp_path / "good.jsonl"
    good.write_text(replay_line(2, 0, 0) + "\n")
    assert run([str(good), str(bad), "--quiet", "--fail-on", "violated"]).exit_code in (0, 1)
    mixed = run([str(good), str(bad), "--quiet", "--fail-on", "unknown"]).exit_code
    assert mixed in (1, 3)  # never 0: two inputs were invalid


def test_usage_errors_are_2(tmp_path: Path) -> None:
    assert run([str(tmp_path / "nope.json")]).exit_code == 2
    assert run([str(EXAMPLES / "case_a.json"), "--backend", "nosuch"]).exit_code == 2
    assert run([str(EXAMPLES / "case_a.json"), "--resume"]).exit_code == 2
    out = tmp_path / "garbage.jsonl"
    out.write_text("hello\n")
    result = run([str(EXAMPLES / "case_a.json"), "--out", str(out), "--resume"])
    assert result.exit_code == 2 and "line 1" in result.stderr


def test_progress_only_when_asked_or_on_a_terminal(cases: Path) -> None:
    quiet = run([str(cases), "--quiet"])
    assert "\r" not in quiet.stderr and "audited" not in quiet.stderr
    shown = run([str(cases), "--quiet", "--progress"])
    assert "\r" in shown.stderr and "audited 5/5" in shown.stderr


def test_resume_after_a_truncated_line_skips_what_is_done(tmp_path: Path) -> None:
    src, full = audited(tmp_path, 6)
    part = tmp_path / "part.jsonl"
    complete = full.read_bytes().splitlines(keepends=True)
    part.write_bytes(b"".join(complete[:2]) + complete[2][:17])  # killed mid-line
    assert run([str(src), "--out", str(part), "--resume", "--quiet"]).exit_code == 0
    assert part.read_bytes() == full.read_bytes()


def test_resume_reads_lines_of_the_first_form_and_keeps_them(tmp_path: Path) -> None:
    # a results file of an earlier run holds each report's JSON as it is (unmask.report/1):
    # resuming into it keeps those lines, adds lines of the new form, and sums them alike
    from unmask.checking.record import report_json

    src, full = audited(tmp_path, 6)
    lines = full.read_bytes().splitlines(keepends=True)
    old = [
        json.dumps(report_json(json.loads(x)), ensure_ascii=False).encode() + b"\n" for x in lines
    ]
    assert all(b'"schema": "unmask.report/1"' in x for x in old)
    part = tmp_path / "part.jsonl"
    part.write_bytes(b"".join(old[:3]))
    fresh, resumed = tmp_path / "fresh.json", tmp_path / "resumed.json"
    assert run([str(src), "--out", str(full), "--summary-json", str(fresh)]).exit_code == 0
    args = [str(src), "--out", str(part), "--resume", "--summary-json", str(resumed)]
    assert run(args).exit_code == 0
    assert part.read_bytes() == b"".join(old[:3] + lines[3:])
    assert json.loads(resumed.read_text()) == json.loads(fresh.read_text())


def _unmask(*args: str, **kw) -> subprocess.Popen:
    code = "from unmask.cli.main import main; main()"
    return subprocess.Popen([sys.executable, "-c", code, *args], **kw)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else ():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_sigkill_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    n = 800
    src.write_text("".join(replay_line(1 + i % 3, 9, i) + "\n" for i in range(n)))
    out = tmp_path / "out.jsonl"
    proc = _unmask("audit", str(src), "--out", str(out), "--jobs", "2", "--quiet")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if out.exists() and out.stat().st_size > 20_000:
            break
        time.sleep(0.005)
    workers = _children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    # the pool's workers do not outlive a killed parent
    gone_by = time.monotonic() + 10
    while time.monotonic() < gone_by and any(_alive(w) for w in workers):
        time.sleep(0.05)
    assert not [w for w in workers if _alive(w)]
    with open(out, "ab") as fh:  # as if the kill had landed in the middle of a write
        fh.write(b'{"schema":"unmask.report/1","locat')
    killed_at = len(out.read_bytes().splitlines())
    assert 1 < killed_at < n
    resumed = _unmask("audit", str(src), "--out", str(out), "--jobs", "2", "--resume", "--quiet")
    assert resumed.wait(timeout=300) == 0
    ref = tmp_path / "ref.jsonl"
    assert run([str(src), "--out", str(ref), "--quiet"]).exit_code == 0
    got, want = out.read_bytes().splitlines(), ref.read_bytes().splitlines()
    assert len(got) == n
    assert Counter(got) == Counter(want)
    assert got == want


def test_sigterm_stops_with_whole_lines(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(replay_line(2, 4, i) + "\n" for i in range(3000)))
    out = tmp_path / "out.jsonl"
    proc = _unmask("audit", str(src), "--out", str(out), "--quiet", stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (out.exists() and out.stat().st_size > 5_000):
        time.sleep(0.005)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert b"--resume" in err and b"Traceback" not in err
    data = out.read_bytes()
    assert data.endswith(b"\n")
    assert all(json.loads(x)["location"] for x in data.splitlines())


def test_html_pages_index_and_junit(cases: Path, tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    from unmask.api import check
    from unmask.render import junit
    from unmask.replay.load import load_replay

    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n")
    html, xml = tmp_path / "html", tmp_path / "j.xml"
    args = [str(cases), str(bad), "--out", str(tmp_path / "r.jsonl"), "--quiet"]
    result = run([*args, "--html", str(html), "--junit", str(xml), "--jobs", "2"])
    assert result.exit_code == 0, result.output
    pages = sorted(p.name for p in html.iterdir())
    assert "index.html" in pages and len(pages) == len(CASES) + 1
    index = (html / "index.html").read_text()
    assert all(f'href="{p}"' in index for p in pages if p != "index.html")
    suite = ET.parse(xml).getroot()
    cases_xml = suite.findall(".//testcase")
    assert [c.get("name") for c in cases_xml] == [
        *(load_replay(cases / n).id for n in CASES),
        f"{bad}:1",
    ]
    one_shot = ET.fromstring(
        junit.render_batch(
            [check(load_replay(cases / n), "sliced") for n in CASES] + [junit.Invalid("x", "y")]
        )
    )
    for attr in ("tests", "failures", "errors"):
        assert suite.get(attr) == one_shot.get(attr)
    assert suite.find("testsuite").get("skipped") == one_shot.find("testsuite").get("skipped")
    assert not (tmp_path / "j.xml.part").exists()


def test_resume_carries_junit_testcases_over(cases: Path, tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    out, xml = tmp_path / "r.jsonl", tmp_path / "j.xml"
    assert run([str(cases), "--out", str(out), "--quiet"]).exit_code == 0
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:3]))
    result = run([str(cases), "--out", str(out), "--resume", "--quiet", "--junit", str(xml)])
    assert result.exit_code == 0
    suite = ET.parse(xml).getroot()
    assert suite.get("tests") == str(len(CASES)) and suite.get("failures") == "3"
    assert len(suite.findall(".//testcase")) == len(CASES)


def test_backend_option_reaches_every_report_and_resume_keeps_the_summary(
    cases: Path, tmp_path: Path
) -> None:
    out, summary = tmp_path / "r.jsonl", tmp_path / "s.json"
    args = [str(cases), "--out", str(out), "--quiet", "--backend", "pysat", "--timeout-ms", "5000"]
    assert run(args).exit_code == 0
    assert {o["backend"] for o in lines_of(out)} == {"pysat"}
    out.write_bytes(b"".join(out.read_bytes().splitlines(keepends=True)[:2]))
    assert run([*args, "--resume", "--summary-json", str(summary)]).exit_code == 0
    s = json.loads(summary.read_text())
    assert s["replays"] == len(CASES) and s["overall"]["VIOLATED"] == 3
    assert [o["location"] for o in lines_of(out)] == [str(cases / n) for n in CASES]


def test_with_jobs_the_results_file_changes_only_when_a_job_is_flushed(
    tmp_path: Path, monkeypatch
) -> None:
    # a job's lines leave in one write: a results file opened with a few KiB of buffer
    # wrote every line or two (a system call each, a quarter of the pool parent's time)
    from unmask.batch import run as runner

    source = tmp_path / "r.jsonl"
    source.write_text("".join(replay_line(2, 3, i) + "\n" for i in range(60)))
    out = tmp_path / "out.jsonl"
    sizes: list[int] = []
    settles = 0
    real = runner.run_audit

    def watched(tasks, settings, emit, jobs=1, settle=None, summary=None):
        def emit_seen(task, result):
            sizes.append(out.stat().st_size)
            emit(task, result)

        def settle_seen():
            nonlocal settles
            settles += 1
            settle()

        return real(tasks, settings, emit_seen, jobs, settle_seen, summary)

    monkeypatch.setattr(runner, "run_audit", watched)
    result = run(["--jobs", "2", "--out", str(out), str(source)])
    assert result.exit_code == 0, result.output
    assert len(sizes) == 60 and len(lines_of(out)) == 60
    assert len(set(sizes)) <= settles < 60


def test_shards_audited_apart_give_the_whole_runs_summary_by_resuming_their_results(
    tmp_path: Path,
) -> None:
    # docs/scale.md: shards on a cluster, then one summary without checking anything again
    lines = [replay_line(2, 5, i) + "\n" for i in range(24)]
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_text("".join(lines[:10]))
    two.write_text("".join(lines[10:]))
    for shard in (one, two):
        assert run(["-q", "--out", str(shard) + ".out", str(shard)]).exit_code in (0, 1)
    whole = tmp_path / "whole.out"
    run(["-q", "--out", str(whole), "--summary-json", str(tmp_path / "w.json"), str(one), str(two)])
    both = tmp_path / "all.jsonl"
    both.write_bytes(Path(str(one) + ".out").read_bytes() + Path(str(two) + ".out").read_bytes())
    args = ["--resume", "--out", str(both), "--summary-json", str(tmp_path / "a.json")]
    result = run([*args, str(one), str(two)])
    assert result.exit_code in (0, 1), result.output
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "w.json").read_bytes()
    assert both.read_bytes() == whole.read_bytes()
    assert "audited 24 replays" in result.output


def test_one_way_grounding_pairs_keep_their_arrow_in_the_summary(tmp_path: Path) -> None:
    """`ground said(p) ~> backed(p)` is one way: the summary (text on stderr, JSON, and a
    resumed run's, read back from the result lines) writes `~>`, never `~`."""
    d = tmp_path / "cases"
    d.mkdir()
    for name in ("claim_parts.proto", "claim_parts_refuted.json", "claim_parts_entailed.json"):
        shutil.copy(EXAMPLES / name, d / name)
    out, summary = tmp_path / "r.jsonl", tmp_path / "s.json"
    result = run([str(d), "--out", str(out), "--summary-json", str(summary)])
    assert result.exit_code == 0, result.output
    assert "  said(*) ~> backed(*): " in result.output
    assert " said(*) ~ backed(*)" not in result.output
    pairs = json.loads(summary.read_text())["grounding"]
    assert "said(*) ~> backed(*)" in pairs and "said(*) ~ backed(*)" not in pairs
    out.write_bytes(out.read_bytes().splitlines(keepends=True)[0])
    resumed = tmp_path / "s2.json"
    args = [str(d), "--out", str(out), "--resume", "--summary-json", str(resumed)]
    assert run(args).exit_code == 0
    assert (
        json.loads(resumed.read_text())["grounding"] == json.loads(summary.read_text())["grounding"]
    )


def test_reauditing_into_an_html_folder_removes_the_earlier_runs_pages_and_nothing_else(
    cases: Path, tmp_path: Path
) -> None:
    """A replay gone since the last run leaves no page behind; a user's file in the folder,
    even one named like a page, a link to a page elsewhere and its target all stay."""
    from unmask.batch.files import PAGE_HEAD

    html = tmp_path / "html"
    assert run([str(cases), "--html", str(html), "--quiet"]).exit_code == 0
    first = {p.name for p in html.iterdir()}
    assert len(first) == len(CASES) + 1
    page_b = next(n for n in first if n.startswith("case-b-"))
    assert (html / page_b).read_bytes().startswith(PAGE_HEAD)
    outside = tmp_path / "kept-elsewhere.html"
    shutil.copy(html / page_b, outside)
    mine = {
        "notes.txt": "my notes",
        "mine-0123456789.html": "<!DOCTYPE html><p>my own page</p>",
    }
    for name, text in mine.items():
        (html / name).write_text(text)
    (html / "link-0123456789.html").symlink_to(outside)
    (html / "dir-0123456789.html").mkdir()
    (cases / "case_b.json").unlink()
    assert run([str(cases), "--html", str(html), "--quiet"]).exit_code == 0
    second = {p.name for p in html.iterdir()}
    assert second == (first - {page_b}) | set(mine) | {
        "link-0123456789.html",
        "dir-0123456789.html",
    }
    assert all((html / n).read_text() == t for n, t in mine.items())
    assert outside.read_bytes().startswith(PAGE_HEAD)
    assert (html / "link-0123456789.html").is_symlink()
    assert f'href="{page_b}"' not in (html / "index.html").read_text()


def test_resuming_into_an_html_folder_keeps_the_pages_of_the_lines_carried_over(
    cases: Path, tmp_path: Path
) -> None:
    html, out = tmp_path / "html", tmp_path / "r.jsonl"
    assert run([str(cases), "--out", str(out), "--html", str(html), "--quiet"]).exit_code == 0
    pages = {p.name for p in html.iterdir()}
    out.write_bytes(b"".join(out.read_bytes().splitlines(keepends=True)[:2]))
    args = [str(cases), "--out", str(out), "--resume", "--html", str(html), "--quiet"]
    assert run(args).exit_code == 0
    assert {p.name for p in html.iterdir()} == pages
    index = (html / "index.html").read_text()
    assert all(f'href="{p}"' in index for p in pages if p != "index.html")


def test_the_page_head_is_how_every_page_begins() -> None:
    from unmask.api import check
    from unmask.batch.files import PAGE_HEAD
    from unmask.render import html
    from unmask.replay.load import load_replay

    replay = load_replay(EXAMPLES / "case_unicode.json")
    assert html.render(check(replay, "sliced"), replay).encode().startswith(PAGE_HEAD)
