"""Line ranges: JSON Lines files that pool workers read themselves (``inputs.iter_work``).

A range's lines must become exactly the tasks ``iter_tasks`` makes of them (differential,
over generated files with blank, CRLF, overlong and unterminated lines); a pool that reads
ranges writes what ``--jobs 1`` writes (``test_audit`` kills a worker that reads a range).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import assert_same_audit_outputs
from unmask.batch import pool as batch_pool
from unmask.batch import run
from unmask.batch import task as batch_task
from unmask.bench import replay_line
from unmask.plumbing.limits import DEFAULT_LIMITS
from unmask.replay import inputs

SMALL = replace(DEFAULT_LIMITS, max_file_bytes=40)
SETTINGS = batch_task.Settings("sliced", 60_000)

_line = st.one_of(
    st.text(alphabet='{}":ab ,\t', max_size=30),  # fits the 40-byte bound
    st.just(""),
    st.just("   "),
    st.text(alphabet="xy", min_size=41, max_size=120),  # overlong: a `limit` record
)


def _fields(t: inputs.Task) -> tuple:
    return (t.location, t.file, t.line, t.text, t.problem)


def _read(items: list) -> list[tuple]:
    out = []
    for item in items:
        if isinstance(item, inputs.LineRange):
            out.extend(_fields(t) for t in inputs.range_tasks(item, SMALL))
        else:
            out.append(_fields(item))
    return out


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(_line, max_size=25),
    crlf=st.booleans(),
    last_newline=st.booleans(),
    range_bytes=st.integers(1, 90),
)
def test_line_ranges_read_the_tasks_iter_tasks_reads(
    tmp_path_factory, lines, crlf, last_newline, range_bytes
):
    f = tmp_path_factory.mktemp("ranges") / "r.jsonl"
    end = "\r\n" if crlf else "\n"
    body = end.join(lines) + (end if last_newline and lines else "")
    f.write_bytes(body.encode())
    want = [_fields(t) for t in inputs.iter_tasks([str(f)], SMALL)]
    items = list(inputs.iter_work([str(f)], SMALL, range_bytes))
    assert _read(items) == want
    ranges = [s for s in items if isinstance(s, inputs.LineRange)]
    # ranges tile the file: each starts where the one before ended, the last ends at its end
    assert [s.start for s in ranges] == [0, *[s.end for s in ranges[:-1]]][: len(ranges)]
    assert ranges[-1].end == len(body.encode()) if ranges else body == ""
    # and a range cut smaller reads the same lines
    pieces = [p for s in ranges for p in inputs.split_range(s, 3, 1 << 20)]
    assert _read(pieces) == want


def test_a_line_range_longer_than_the_bound_is_not_cut(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_bytes(b"x" * 500 + b"\n{}\n")
    first = next(iter(inputs.iter_work([str(f)], SMALL, 64)))
    assert (first.start, first.end, first.line) == (0, 501, 1)  # one long line, one range
    assert inputs.split_range(first, 4, max_bytes=100) == [first]  # never read whole
    [task] = inputs.range_tasks(first, SMALL)
    assert task.problem is not None and task.problem[0] == "limit"


def test_a_line_range_whose_file_is_gone_is_one_error_record(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text("{}\n{}\n")
    [rg] = inputs.iter_work([str(f)], SMALL, 1 << 10)
    f.unlink()
    [task] = inputs.range_tasks(rg, SMALL)
    assert task.location == f"{f}:1" and task.problem is not None
    assert task.problem[0] == "io" and "from line 1" in task.problem[1]
    assert inputs.split_range(rg, 2, 1 << 20) == [rg]


def _audit(items, jobs: int) -> list[tuple]:
    out: list[tuple] = []
    run.run_audit(
        iter(items), SETTINGS, lambda t, r: out.append((t.location, r.line, r.record)), jobs
    )
    return out


@pytest.mark.parametrize("range_bytes", [1, 5_000, 1 << 18])
def test_a_pool_reading_line_ranges_writes_what_one_process_writes(
    tmp_path: Path, range_bytes
) -> None:
    f = tmp_path / "many.jsonl"
    sizes = [1, 6, 2, 9, 1, 3] * 8  # uneven work, so workers finish out of order
    lines = [replay_line(n, 1, i) for i, n in enumerate(sizes)]
    lines[5] = '{"schema": "unmask.replay/1", "oops"'  # an error record among the reports
    lines.insert(9, "")  # a blank line: no record, but the numbering goes on
    f.write_text("".join(line + "\n" for line in lines))
    one = _audit(inputs.iter_tasks([str(f)]), 1)
    two = _audit(inputs.iter_work([str(f)], DEFAULT_LIMITS, range_bytes), 2)
    assert len(one) == len(sizes)
    assert two == one  # locations, lines and the summary's views
    # ranges and whole-file tasks mixed in one run, in the order given
    single = tmp_path / "one.json"
    single.write_text(replay_line(2, 1, 99))
    mixed = [
        *inputs.iter_work([str(f)], DEFAULT_LIMITS, 5_000),
        inputs.Task(str(single), str(single)),
    ]
    assert [loc for loc, _, _ in _audit(mixed, 2)] == [loc for loc, _, _ in one] + [str(single)]


def test_the_audit_command_reads_line_ranges_only_with_a_pool(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text("{}\n")
    assert all(isinstance(t, inputs.Task) for t in run.inputs_for([str(f)], DEFAULT_LIMITS, 1))
    assert [type(t) for t in run.inputs_for([str(f)], DEFAULT_LIMITS, 2)] == [inputs.LineRange]


def test_a_line_range_reads_its_bytes_and_nothing_after(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_bytes(b"{}\n[]\n")
    first = next(iter(inputs.iter_work([str(f)], SMALL, 3)))
    assert (first.start, first.end) == (0, 3)
    f.write_bytes(b'{"a": 1}\n')  # the file changed under the run: its line is longer now
    [task] = inputs.range_tasks(first, SMALL)
    assert task.text == b'{"a'  # the range's three bytes, not the line that goes on


def test_a_job_refused_by_a_broken_pool_waits_and_is_run(tmp_path: Path, monkeypatch) -> None:
    """A worker can die while jobs are still being handed out: submitting then fails at
    once. The job must wait in its place and run later, not stop the audit."""
    from concurrent.futures.process import BrokenProcessPool

    f = tmp_path / "r.jsonl"
    f.write_text("".join(replay_line(2, 2, i) + "\n" for i in range(30)))
    real = batch_pool.Pool._submit
    calls = []

    def refuse_third(self, pool, job):
        calls.append(job)
        if len(calls) == 3:
            raise BrokenProcessPool("a child process terminated abruptly")
        return real(self, pool, job)

    monkeypatch.setattr(batch_pool.Pool, "_submit", refuse_third)
    got = _audit(inputs.iter_work([str(f)], DEFAULT_LIMITS, 5_000), 2)
    assert [loc for loc, _, _ in got] == [f"{f}:{n}" for n in range(1, 31)]
    assert all(json.loads(line)["schema"] == "unmask.result/2" for _, line, _ in got)
    assert calls.count(calls[2]) == 2  # refused once, then submitted again


def test_audit_jobs_2_writes_every_output_of_jobs_1(tmp_path: Path) -> None:
    """The command end to end: results, HTML pages, JUnit, summary JSON and text."""
    from click.testing import CliRunner

    from unmask.cli.main import main

    src = tmp_path / "r.jsonl"
    lines = [replay_line(2 + i % 3, 2, i) for i in range(40)]
    lines[11] = '{"schema": "unmask.replay/1", "oops"'  # an error record among the reports
    src.write_text("".join(line + "\n" for line in lines))
    runs = {}
    for jobs in ("1", "2"):
        d = tmp_path / f"jobs{jobs}"
        d.mkdir()
        outputs = ["--out", str(d / "r.jsonl"), "--html", str(d / "html")]
        outputs += ["--junit", str(d / "junit.xml"), "--summary-json", str(d / "s.json")]
        result = CliRunner().invoke(main, ["audit", str(src), *outputs, "--jobs", jobs])
        assert result.exit_code == 0, result.output  # no `--fail-on`: a finished audit is 0
        runs[jobs] = (d, result.stderr)
    pages = assert_same_audit_outputs(*runs["1"], *runs["2"], replays=40)
    assert len(pages) == 40  # 39 replays (one line is not one) and the index
