"""`unmask audit --dask`: the same results as a local run, resume, a dying worker, bad addresses.

One two-process local cluster serves the module (a cluster start costs seconds); the
equality test starts its own through `--dask local:2`, as a user would.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("distributed")

from tests.helpers import assert_same_audit_outputs
from unmask.batch import cluster, run, summary, wire
from unmask.batch import task as batch_task
from unmask.bench import replay_line
from unmask.checking.record import ResultRecord
from unmask.cli.main import main
from unmask.replay import inputs

CRASH_LINE = 7


def crash_on_line_7(tasks: list, settings: batch_task.Settings) -> list:
    """Checks a partition like a worker does, but dies (as a solver crash would) on line 7,
    after noting the death beside the input so the test can count the attempts."""
    for t in tasks:
        if t.line == CRASH_LINE:
            with open(Path(t.file).parent / "deaths", "a") as fh:
                fh.write(f"{os.getpid()}\n")
            os._exit(3)
    return wire.run_chunk(tasks, settings)


def note_sizes(tasks: list, settings: batch_task.Settings) -> list:
    """Checks a partition like a worker does, after noting its size beside the input."""
    with open(Path(tasks[0].file).parent / "sizes", "a") as fh:
        fh.write(f"{tasks[0].line} {len(tasks)}\n")
    return wire.run_chunk(tasks, settings)


def _children() -> list:
    import psutil

    # multiprocessing's resource tracker lives as long as this process, by design
    return [
        p
        for p in psutil.Process().children(recursive=True)
        if p.is_running() and "resource_tracker" not in " ".join(p.cmdline())
    ]


@pytest.fixture(scope="module")
def client():
    before = {p.pid for p in _children()}
    with cluster.open_cluster("local:2") as c:
        yield c
    deadline = time.monotonic() + 10
    while {p.pid for p in _children()} - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not {p.pid for p in _children()} - before, "a dask process outlived its cluster"


@pytest.fixture
def replays(tmp_path: Path) -> Path:
    f = tmp_path / "r.jsonl"
    lines = [replay_line(2, 2, i) for i in range(40)]
    lines[11] = '{"schema": "unmask.replay/1", "oops"'  # an error record among the reports
    f.write_text("".join(line + "\n" for line in lines))
    return f


def audit(*args: str) -> object:
    return CliRunner().invoke(main, ["audit", *args])


def test_results_html_junit_and_summary_equal_a_local_run(replays, tmp_path) -> None:
    before = {p.pid for p in _children()}
    runs = {}
    # three replays per partition: many partitions, so their order is tested
    dask = ["--dask", "local:2", "--partition", "3"]
    for name, extra in (("local", ["--jobs", "1"]), ("dask", dask)):
        d = tmp_path / name
        d.mkdir()
        result = audit(
            str(replays),
            "--out",
            str(d / "r.jsonl"),
            "--html",
            str(d / "html"),
            "--junit",
            str(d / "junit.xml"),
            "--summary-json",
            str(d / "s.json"),
            *extra,
        )
        assert result.exit_code == 0, result.output
        runs[name] = (d, result.stderr)
    pages = assert_same_audit_outputs(*runs["local"], *runs["dask"], replays=40)
    assert len(pages) == 40  # 39 replays (one line is not one) and the index
    deadline = time.monotonic() + 10
    while {p.pid for p in _children()} - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not {p.pid for p in _children()} - before, "a worker outlived `--dask local:2`"


def test_resume_after_a_partial_results_file(client, replays, tmp_path) -> None:
    full, part = tmp_path / "full.jsonl", tmp_path / "part.jsonl"
    assert audit(str(replays), "--out", str(full), "-q").exit_code == 0
    complete = full.read_bytes().splitlines(keepends=True)
    part.write_bytes(b"".join(complete[:9]) + complete[9][:25])  # killed mid-line
    address = client.scheduler.address
    result = audit(str(replays), "--out", str(part), "--resume", "--dask", address, "-q")
    assert result.exit_code == 0, result.output
    assert part.read_bytes() == full.read_bytes()


def test_a_replay_that_kills_workers_is_retried_then_an_error_record(client, replays) -> None:
    settings = batch_task.Settings("sliced", 60_000)
    got: list[bytes] = []
    folded = summary.Summary()
    cluster.run_audit(
        inputs.iter_tasks([str(replays)]),
        settings,
        lambda t, r: got.append(r.line),
        client,
        partition=8,
        work=crash_on_line_7,
        summary=folded,
    )
    want: list[bytes] = []
    run.run_audit(inputs.iter_tasks([str(replays)]), settings, lambda t, r: want.append(r.line))
    objs = [json.loads(line) for line in got]
    assert [o["location"] for o in objs] == [f"{replays}:{n}" for n in range(1, 41)]
    bad = objs[CRASH_LINE - 1]
    assert bad["schema"] == "unmask.error/1" and bad["errors"][0]["code"] == "internal-error"
    assert "died" in bad["errors"][0]["message"]
    # every other line is the local run's; the partition ran twice, then the replay alone twice
    assert got[: CRASH_LINE - 1] + got[CRASH_LINE:] == want[: CRASH_LINE - 1] + want[CRASH_LINE:]
    assert len((replays.parent / "deaths").read_text().split()) == 4
    # partitions folded by their workers; the one re-run a replay at a time, by the client
    by_hand = summary.Summary()
    for obj in objs:
        by_hand.add(ResultRecord.from_line(obj))
    assert folded.to_json() == by_hand.to_json() and folded.errors["internal-error"] == 1


def test_partitions_are_the_size_asked_for(client, replays) -> None:
    got: list[bytes] = []
    tasks = inputs.iter_tasks([str(replays)])
    settings = batch_task.Settings("sliced", 60_000)
    cluster.run_audit(
        tasks, settings, lambda t, r: got.append(r.line), client, partition=6, work=note_sizes
    )
    sizes = sorted(
        tuple(map(int, x.split())) for x in (replays.parent / "sizes").read_text().splitlines()
    )
    assert sizes == [(first, 6) for first in range(1, 37, 6)] + [(37, 4)]
    assert len(got) == 40


def test_line_ranges_are_read_by_the_client(client, replays) -> None:
    settings = batch_task.Settings("sliced", 60_000)
    got: list[tuple] = []
    items = inputs.iter_work([str(replays)], settings.limits, 20_000)
    cluster.run_audit(items, settings, lambda t, r: got.append((t.location, r.line)), client)
    want: list[tuple] = []
    run.run_audit(
        inputs.iter_tasks([str(replays)]), settings, lambda t, r: want.append((t.location, r.line))
    )
    assert got == want and len(got) == 40


def test_the_window_follows_the_workers_that_join(monkeypatch) -> None:
    class Cluster:  # answers only what the window asks
        def __init__(self) -> None:
            self.nthreads_now = {"a": 1}

        def nthreads(self) -> dict:
            return dict(self.nthreads_now)

    c = Cluster()
    runner = cluster._Runner(c, batch_task.Settings("sliced", 60_000), wire.run_chunk)
    assert runner._resize() == cluster.WINDOW_PER_WORKER
    c.nthreads_now = {w: 1 for w in "abcde"}
    assert runner._resize() == cluster.WINDOW_PER_WORKER  # not asked again at once
    monkeypatch.setattr(cluster, "RESIZE_S", 0.0)
    assert runner._resize() == 5 * cluster.WINDOW_PER_WORKER
    fixed = cluster._Runner(c, batch_task.Settings("sliced", 60_000), wire.run_chunk, window=3)
    assert fixed._resize() == 3


def test_an_unreachable_scheduler_is_exit_2_within_the_timeout(replays, monkeypatch) -> None:
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 1.0)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    result = audit(str(replays), "--dask", f"tcp://127.0.0.1:{port}")
    assert result.exit_code == 2
    assert time.monotonic() - start < 8
    assert "cannot reach the dask scheduler" in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize("spec", ["local:0", "local:x", " "])
def test_a_malformed_spec_is_exit_2(replays, spec) -> None:
    result = audit(str(replays), "--dask", spec)
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_without_the_extra_dask_is_a_usage_error(replays, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails as if not installed
    result = audit(str(replays), "--dask", "local:2")
    assert result.exit_code == 2
    assert "pip install 'unmask[dask]'" in result.stderr


def test_jobs_and_dask_together_are_refused(replays) -> None:
    result = audit(str(replays), "--dask", "local:2", "--jobs", "2")
    assert result.exit_code == 2 and "not both" in result.stderr
    result = audit(str(replays), "--partition", "8")
    assert result.exit_code == 2 and "needs `--dask`" in result.stderr


def test_an_audit_without_dask_does_not_import_it(replays) -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from unmask.cli.main import main\n"
        f"r = CliRunner().invoke(main, ['audit', {str(replays)!r}, '-q', '--jobs', '2'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_workers_check_against_the_protocol_of_the_run(client, replays, tmp_path) -> None:
    """`--protocol` reaches the workers: v2 of the replays' protocol, without `external`."""
    ir = json.loads(replay_line(2, 2, 0))["protocol"]
    ir["atoms"] = [a for a in ir["atoms"] if a["name"] != "external"]
    ir["requirements"] = []
    v2 = tmp_path / "v2.json"
    v2.write_text(json.dumps(ir))
    outs = {}
    for name, extra in (("local", ["--jobs", "1"]), ("dask", ["--dask", client.scheduler.address])):
        outs[name] = tmp_path / f"{name}.jsonl"
        result = audit(str(replays), "--protocol", str(v2), "--out", str(outs[name]), *extra)
        assert result.exit_code == 0, result.output
    assert outs["dask"].read_bytes() == outs["local"].read_bytes()
    lines = [json.loads(x) for x in outs["dask"].read_text().splitlines()]
    assert lines[11]["schema"] == "unmask.error/1" and "recheck" in lines[11]
    source = replays.read_text().splitlines()
    for i, x in enumerate(lines):
        if i != 11:
            annotated = [a["atom"] for a in json.loads(source[i])["annotations"]]
            assert x["recheck"]["dropped"] == (["external"] if "external" in annotated else [])
    assert sum(bool(x.get("recheck", {}).get("dropped")) for x in lines) > 20
