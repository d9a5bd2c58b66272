"""The batch engine and the summary (unmask.batch): inputs, result lines, order, resume."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import full_line
from unmask.api import check
from unmask.batch import pool as batch_pool
from unmask.batch import resume, run, summary, tuning, wire
from unmask.batch import task as batch_task
from unmask.bench import replay_line
from unmask.checking.record import ResultRecord, report_json
from unmask.replay import inputs
from unmask.replay.load import load_replay

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CASES = ["case_a.json", "case_b.json", "case_c.json", "case_d.json", "case_unknown.json"]
SETTINGS = batch_task.Settings("sliced", 60_000)


def _collect(tasks, jobs=1, settings=SETTINGS):
    out = []
    run.run_audit(iter(tasks), settings, lambda t, r: out.append((t, r.line, r.record)), jobs)
    return out


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    d = tmp_path / "cases"
    (d / "sub").mkdir(parents=True)
    for name in CASES:
        shutil.copy(EXAMPLES / name, d / name)
    shutil.copy(EXAMPLES / "factual_claims.proto", d / "factual_claims.proto")
    shutil.copy(EXAMPLES / "factual_claims_family.proto", d / "sub" / "factual_claims_family.proto")
    shutil.copy(EXAMPLES / "case_c_family.json", d / "sub" / "a_family.json")
    (d / "notes.txt").write_text("not a replay")
    (d / "more.jsonl").write_text("{}\n")  # only *.json files are taken from a directory
    return d


def test_directory_is_walked_recursively_in_sorted_order(cases: Path) -> None:
    got = [t.location for t in inputs.iter_tasks([str(cases)])]
    want = [str(cases / n) for n in CASES]
    want.append(str(cases / "sub" / "a_family.json"))
    assert got == sorted(want)
    assert inputs.count_tasks([str(cases)]) == len(want)


def test_jsonl_records_are_numbered_by_line_and_blank_lines_skipped(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text(replay_line(2, 0, 0) + "\n\n   \n" + replay_line(2, 0, 1) + "\n")
    tasks = list(inputs.iter_tasks([str(f)]))
    assert [t.location for t in tasks] == [f"{f}:1", f"{f}:4"]
    assert [t.line for t in tasks] == [1, 4]
    assert inputs.count_tasks([str(f)]) == 2


def test_report_line_is_the_report_with_its_location(cases: Path) -> None:
    path = cases / "case_b.json"
    [(_task, line, v)] = _collect(inputs.iter_tasks([str(path)]))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    obj = json.loads(line)
    assert list(obj)[:2] == ["schema", "location"] and obj["schema"] == "unmask.result/2"
    back = report_json(obj)  # the report's JSON, each annotation back in its parts
    assert back.pop("location") == str(path)
    assert back == check(load_replay(path), "sliced").to_json()
    assert v.overall == "VIOLATED"


def test_a_proto_file_named_as_an_input_is_an_error_record_saying_what_it_is(
    cases: Path,
) -> None:
    # `unmask audit claims.proto`: the protocol where replays were meant
    [(_task, line, _v)] = _collect(inputs.iter_tasks([str(cases / "factual_claims.proto")]))
    obj = json.loads(line)
    assert obj["schema"] == "unmask.error/1"
    [err] = obj["errors"]
    assert err["code"] == "json-syntax"
    assert err["help"].startswith("`factual_claims.proto` is a protocol, not a replay")


def test_bad_lines_become_error_records_and_the_batch_goes_on(tmp_path: Path) -> None:
    f = tmp_path / "mixed.jsonl"
    f.write_text(
        "\n".join(
            [
                replay_line(2, 0, 0),
                '{"schema": "unmask.replay/1", "id": ',  # invalid json
                '{"schema": "unmask.replay/1"}',  # valid json, invalid replay
                replay_line(2, 0, 1),
            ]
        )
        + "\n"
    )
    results = _collect(inputs.iter_tasks([str(f)]))
    objs = [json.loads(line) for _, line, _ in results]
    assert [o["location"] for o in objs] == [f"{f}:{n}" for n in (1, 2, 3, 4)]
    assert [o["schema"] for o in objs] == [
        "unmask.result/2",
        "unmask.error/1",
        "unmask.error/1",
        "unmask.result/2",
    ]
    syntax = objs[1]["errors"][0]
    assert syntax["code"] == "json-syntax"
    assert syntax["span"]["line"] == 2 and syntax["span"]["file"] == str(f)
    codes = {(e["code"], e["path"]) for e in objs[2]["errors"]}
    assert ("missing", "$") in codes
    assert all(e["file"] == f"{f}:3" for e in objs[2]["errors"])


def test_unreadable_replay_file_is_an_error_record(tmp_path: Path) -> None:
    missing = tmp_path / "gone.json"
    [(_, line, v)] = _collect([inputs.Task(str(missing), str(missing))])
    obj = json.loads(line)
    assert obj["schema"] == "unmask.error/1" and obj["errors"][0]["code"] == "io"
    assert v.error == "io" and v == ResultRecord.from_line(obj)


def test_jobs_2_keeps_input_order(tmp_path: Path) -> None:
    f = tmp_path / "many.jsonl"
    sizes = [1, 6, 2, 9, 1, 3] * 12  # uneven work, so workers finish out of order
    f.write_text("".join(replay_line(n, 1, i) + "\n" for i, n in enumerate(sizes)))
    one = [(line, v) for _, line, v in _collect(inputs.iter_tasks([str(f)]), jobs=1)]
    two = [(line, v) for _, line, v in _collect(inputs.iter_tasks([str(f)]), jobs=2)]
    assert len(one) == len(sizes)
    assert two == one  # the lines, and the summary's views that crossed the pipe


@pytest.mark.parametrize("which", [0, 3, "invalid"])
def test_a_pool_job_carries_results_across_the_pipe_unchanged(which) -> None:
    import pickle

    task = inputs.Task("x:1", "x", 1, b"{}") if which == "invalid" else _line_task(which)
    settings = batch_task.Settings("sliced", 60_000, html=True)
    direct = wire.run_chunk([task], settings)
    wired, part = pickle.loads(
        pickle.dumps(wire.run_wire([wire.task_wire(task)], settings, folded=True))
    )
    got = [wire.from_wire(w) for w in wired]
    assert [(r.line, r.record, r.page) for r in got] == [(r.line, r.record, r.page) for r in direct]
    assert part.to_json() == wire.fold(direct).to_json() and part.total == 1


def test_read_done_cuts_a_truncated_last_line_and_counts_locations(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    lines = [
        json.dumps({"schema": "unmask.error/1", "location": loc, "errors": []}) + "\n"
        for loc in ("a.json", "b.json", "a.json")
    ]
    out.write_text("".join(lines) + '{"schema": "unmask.rep')
    seen = []
    done = resume.read_done(str(out), seen.append)
    assert done == Counter({"a.json": 2, "b.json": 1})
    assert out.read_text() == "".join(lines)
    assert len(seen) == 3


def test_read_done_refuses_a_file_that_is_not_audit_output(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    good = '{"schema": "unmask.error/1", "location": "a.json", "errors": []}'
    out.write_text(good + "\nnot json\n")
    with pytest.raises(resume.ResumeError) as info:
        resume.read_done(str(out))
    assert info.value.line == 2
    out.write_text('{"schema": "x"}\n')
    with pytest.raises(resume.ResumeError) as info:
        resume.read_done(str(out))
    assert info.value.line == 1


def test_skip_done_is_a_multiset() -> None:
    tasks = [inputs.Task(loc, loc) for loc in ("a", "b", "a", "c", "a")]
    kept = [t.location for t in resume.skip_done(tasks, Counter({"a": 2, "c": 1}))]
    assert kept == ["b", "a"]


def _summary_of(paths) -> summary.Summary:
    s = summary.Summary()
    for _, _, v in _collect(inputs.iter_tasks(paths)):
        s.add(v)
    return s


def test_summary_of_the_articles_cases(cases: Path) -> None:
    s = _summary_of([str(cases / n) for n in CASES])
    j = s.to_json()
    assert j["overall"] == {"SATISFIED": 1, "VIOLATED": 3, "UNKNOWN": 1, "INVALID": 0}
    # A: right for the right reasons; B: right for the wrong reasons; C, D: wrong and violated
    assert j["gold"]["cells"] == {
        "right_for_right_reasons": 1,
        "right_for_wrong_reasons": 1,
        "wrong_but_procedurally_clean": 0,
        "wrong_and_violated": 2,
        "unknown_or_no_gold": 1,
    }
    assert j["gold"]["table"]["match"] == {"SATISFIED": 1, "VIOLATED": 1, "UNKNOWN": 1}
    assert j["gold"]["table"]["mismatch"] == {"SATISFIED": 0, "VIOLATED": 2, "UNKNOWN": 0}
    # each dimension counted once per replay
    for d in summary.DIMENSIONS:
        counts = j["dimensions"][d]
        assert sum(v for k, v in counts.items() if k != "not_observable") == 5


def test_summary_cells_follow_each_replays_report(cases: Path) -> None:
    for name, cell in [
        ("case_a.json", "right_for_right_reasons"),
        ("case_b.json", "right_for_wrong_reasons"),
        ("case_c.json", "wrong_and_violated"),
        ("case_d.json", "wrong_and_violated"),
    ]:
        cells = _summary_of([str(cases / name)]).cells()
        assert cells[cell] == 1 and sum(cells.values()) == 1, name


def test_most_failing_dimension_counts_replays_and_states_ties(cases: Path) -> None:
    s = _summary_of([str(cases / n) for n in CASES])
    mf = s.most_failing()
    expected = Counter()
    for n in CASES:
        dims = check(load_replay(cases / n), "sliced").dimensions
        expected["verdict"] += dims.verdict == "VIOLATED"
        expected["procedure"] += dims.procedure == "VIOLATED"
        expected["grounding"] += dims.grounding == "VIOLATED"
    top = max(expected.values())
    assert mf["replays"] == top
    assert mf["dimensions"] == [
        d for d in summary.DIMENSIONS if d != "coverage" and expected[d] == top
    ]
    assert mf["tie"] == (len(mf["dimensions"]) > 1)
    assert [r["replays"] for r in mf["ranking"]] == sorted(
        (r["replays"] for r in mf["ranking"]), reverse=True
    )


def test_no_failure_and_not_observable_coverage() -> None:
    s = summary.Summary()
    assert s.most_failing()["dimensions"] == []
    v = ResultRecord(
        overall="UNKNOWN",
        dimensions=("OK", "OK", "UNKNOWN", "OK"),
        matches=None,
        requirements=(("cited(c1)", "ENTAILED", "REFUTED"), ("cited(c2)", "ENTAILED", None)),
    )
    s.add(v)
    j = s.to_json()
    assert j["coverage"] == {"cited(*)": {"not_observable": 1, "unknown": 1}}
    assert j["requirements"] == {"cited(*)": {"satisfied": 2}}
    assert j["dimensions"]["coverage"]["not_observable"] == 1
    # a requirement not observed is no violation: nothing failed, coverage is left open
    assert s.most_failing()["dimensions"] == []
    assert s.most_failing()["open"][0] == {"dimension": "coverage", "replays": 1}
    text = s.render_text()
    assert "fails most often: no dimension failed" in text
    assert "left undecided (unknown, not failed), in replays: coverage 1," in text
    assert j["gold"]["cells"]["unknown_or_no_gold"] == 1


def test_family_members_are_grouped() -> None:
    assert summary.family_key("supported(joined)") == "supported(*)"
    assert summary.family_key("pair(a, b)") == "pair(*,*)"
    assert summary.family_key("j_cto") == "j_cto"


def test_summary_memory_depends_on_distinct_ids_not_on_replays() -> None:
    s = summary.Summary()
    for i in range(2000):
        s.add(
            ResultRecord(
                overall="VIOLATED",
                dimensions=("VIOLATED",) * len(summary.DIMENSIONS),
                matches=i % 2 == 0,
                requirements=(("context_only", "REFUTED", "ENTAILED"),),
                grounding=((f"supported(c{i})", f"backed(c{i})", "REFUTED", "~"),),
            )
        )
    assert list(s.grounding) == ["supported(*) ~ backed(*)"]
    assert s.grounding["supported(*) ~ backed(*)"]["violated"] == 2000
    assert len(s.cross) == 2 and s.total == 2000


def _views(n: int) -> list:
    statuses = ("ENTAILED", "REFUTED", "UNKNOWN", None)
    return [
        ResultRecord(
            overall=("VIOLATED", "SATISFIED", "UNKNOWN")[i % 3],
            dimensions=(("OK", "VIOLATED", "OK", "OK"), ("VIOLATED", "OK", "UNKNOWN", None))[i % 2],
            matches=(True, False, None)[i % 5 % 3],
            unreviewed=(0, i % 4, 0, 0),
            gold_derived=(i % 3, 0, 0, 1),
            observed="PASS",
            gold=("PASS", "FAIL")[i % 2],
            requirements=tuple(
                (f"cited(c{k})", statuses[(i + k) % 4], statuses[(i * k) % 4]) for k in range(3)
            ),
            grounding=((f"supported(c{i % 3})", "backed(x, y)", statuses[i % 4], "~"),),
        )
        for i in range(n)
    ]


def test_the_summary_keys_memo_changes_no_figure(monkeypatch) -> None:
    """The same ids with other statuses are other keys, and a memo that is cleared when
    full (here after every second tuple) gives the figures of one that never is."""
    views = _views(50)
    whole = summary.Summary()
    for v in views:
        whole.add(v)
    monkeypatch.setattr(summary, "KEYS_MEMO", 2)
    small = summary.Summary()
    for v in views:
        small.add(v)
    assert max(map(len, (small._by_requirements, small._by_grounding, small._by_result))) <= 2
    assert small.to_json() == whole.to_json()
    # against a fold by hand: the dimensions, failures and gold cells
    for d_index, d in enumerate(summary.DIMENSIONS):
        if d == "coverage":
            continue  # it also counts the not observable requirements
        want_d = Counter(
            summary._DIMENSION_KEY.get(v.dimensions[d_index], "not_checked") for v in views
        )
        assert whole.dimensions[d] == want_d
    assert whole.failed["verdict"] == sum(v.dimensions[0] == "VIOLATED" for v in views)
    assert sum(whole.cross.values()) == len(views)
    assert whole.with_flag["unreviewed"]["results"] == sum(any(v.unreviewed) for v in views)
    assert whole.with_flag["gold_derived"]["procedure"] == 0
    # against a fold by hand: each requirement counted under its own status
    want = Counter(summary.check_key(s) for v in views for _, s, _ in v.requirements)
    assert sum(whole.requirements["cited(*)"].values()) == 150
    assert whole.requirements["cited(*)"] == want
    assert list(whole.grounding) == ["supported(*) ~ backed(*,*)"]


@pytest.mark.parametrize("count", [0, 1, 7, 40, 300, 1001])
@pytest.mark.parametrize("jobs", [2, 3])
def test_pool_jobs_keep_every_task_in_order_and_end_small(count: int, jobs: int) -> None:
    tasks = [inputs.Task(f"f:{i}", "f", i, b"x" * (1 + i % 13)) for i in range(count)]
    chunks = list(batch_pool.pool_jobs(iter(tasks), jobs, max_tasks=50, max_bytes=300))
    assert [t for c in chunks for t in c] == tasks
    assert all(c for c in chunks)
    for c in chunks:
        assert len(c) <= 50 and sum(len(t.text) for t in c[:-1]) < 300
    # the input's last full jobs are cut smaller: at least TAIL_PIECES small ones at the end
    full = [len(c) == 50 or sum(len(t.text) for t in c) >= 300 for c in chunks]
    if count >= 300:
        tail = chunks[max(i for i, f in enumerate(full) if f) + 1 :]
        assert len(tail) >= tuning.TAIL_PIECES
        assert all(len(c) <= -(-50 // tuning.TAIL_PIECES) for c in tail)


def test_error_records_are_counted_by_first_code() -> None:
    s = summary.Summary()
    s.add(
        ResultRecord.from_line(
            full_line({"schema": "unmask.error/1", "location": "x", "errors": [{"code": "io"}]})
        )
    )
    assert s.to_json()["errors"] == {"io": 1}
    assert s.valid == 0 and s.overall["INVALID"] == 1


def test_an_overlong_jsonl_record_is_skipped_without_reading_it_whole(tmp_path: Path) -> None:
    from dataclasses import replace

    from unmask.plumbing.limits import DEFAULT_LIMITS

    limits = replace(DEFAULT_LIMITS, max_file_bytes=5000)
    f = tmp_path / "big.jsonl"
    f.write_text(
        replay_line(1, 0, 0) + "\n" + '{"pad": "' + "x" * 20_000 + '"}\n' + replay_line(1, 0, 1)
    )
    tasks = list(inputs.iter_tasks([str(f)], limits))
    assert [t.line for t in tasks] == [1, 2, 3]
    assert tasks[1].text is None and tasks[1].problem[0] == "limit"
    assert inputs.count_tasks([str(f)], limits) == 3
    settings = batch_task.Settings("sliced", 60_000, limits)
    objs = [json.loads(line) for _, line, _ in _collect(tasks, settings=settings)]
    assert [o["schema"] for o in objs] == ["unmask.result/2", "unmask.error/1", "unmask.result/2"]
    err = objs[1]["errors"][0]
    assert err["code"] == "limit" and err["file"] == f"{f}:2"


@pytest.mark.parametrize("reader", ["tasks", "line ranges"])
def test_a_replay_that_kills_its_worker_becomes_an_error_record(
    tmp_path, monkeypatch, reader
) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text("".join(replay_line(2, 2, i) + "\n" for i in range(40)))
    real = batch_task.audit_task

    def crashing(task, settings):
        if task.line == 7:
            os._exit(3)  # as a segfault in a solver would: no exception, no clean-up
        return real(task, settings)

    # forked workers inherit the patched module
    monkeypatch.setattr(batch_task, "audit_task", crashing)
    # read by the parent and sent, or read by the worker that dies
    items = inputs.iter_tasks([str(f)]) if reader == "tasks" else inputs.iter_work([str(f)])
    got = [json.loads(line) for _, line, _ in _collect(items, jobs=2)]
    assert [o["location"] for o in got] == [f"{f}:{n}" for n in range(1, 41)]
    bad = [o for o in got if o["schema"] == "unmask.error/1"]
    assert [o["location"] for o in bad] == [f"{f}:7"]
    assert bad[0]["errors"][0]["code"] == "internal-error"
    # the summary folded by the workers, and by the parent for the job it re-ran alone
    items = inputs.iter_tasks([str(f)]) if reader == "tasks" else inputs.iter_work([str(f)])
    folded = summary.Summary()
    run.run_audit(items, SETTINGS, lambda t, r: None, 2, None, folded)
    assert folded.to_json() == wire.fold(_results(got)).to_json()
    assert folded.total == 40 and folded.errors["internal-error"] == 1


def _results(objs: list[dict]) -> list[batch_task.Result]:
    return [batch_task.Result(b"", ResultRecord.from_line(o)) for o in objs]


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("reader", ["tasks", "line ranges"])
def test_the_summary_folds_every_result_emitted_in_order(tmp_path, jobs, reader) -> None:
    f = tmp_path / "r.jsonl"
    lines = [replay_line(2, 4, i) for i in range(70)]
    lines[9] = "{not json"  # an error record among them
    f.write_text("".join(line + "\n" for line in lines))
    items = inputs.iter_tasks([str(f)]) if reader == "tasks" else inputs.iter_work([str(f)])
    folded = summary.Summary()
    seen: list[int] = []
    emitted: list[dict] = []

    def emit(task, result):
        seen.append(folded.total)  # a result is folded once it is out, not before
        emitted.append(json.loads(result.line))

    run.run_audit(items, SETTINGS, emit, jobs, None, folded)
    assert folded.to_json() == wire.fold(_results(emitted)).to_json()
    assert folded.total == 70 and folded.errors["json-syntax"] == 1
    assert all(total <= i for i, total in enumerate(seen))


def test_a_job_stopped_while_emitting_folds_only_what_was_emitted() -> None:
    results = [batch_task.audit_task(_line_task(i), SETTINGS) for i in range(5)]
    tasks = [_line_task(i) for i in range(5)]
    part = wire.fold(results)
    folded = summary.Summary()
    count = 0

    def emit(task, result):
        nonlocal count
        if count == 3:
            raise KeyboardInterrupt
        count += 1

    with pytest.raises(KeyboardInterrupt):
        wire.emit_all(tasks, results, part, emit, folded)
    assert folded.to_json() == wire.fold(results[:3]).to_json() and folded.total == 3
    whole = summary.Summary()
    wire.emit_all(tasks, results, part, lambda t, r: None, whole)
    assert whole.to_json() == part.to_json()


def test_a_symlink_loop_is_not_followed_forever(cases: Path) -> None:
    (cases / "sub" / "loop").symlink_to(cases, target_is_directory=True)
    got = [t.location for t in inputs.iter_tasks([str(cases)])]
    assert len(got) == len(CASES) + 1 and len(set(got)) == len(got)


def test_summary_dimensions_are_the_reports_own(cases: Path) -> None:
    report = check(load_replay(cases / "case_b.json"), "sliced")
    assert tuple(report.dimensions.to_json()) == summary.DIMENSIONS
    s = _summary_of([str(cases / "case_b.json")])
    j = s.to_json()
    assert list(j["dimensions"]) == ["verdict", "procedure", "coverage", "grounding"]
    assert j["dimensions"]["procedure"] == {"violated": 1}
    assert j["most_failing"]["dimensions"] == ["procedure"]
    text = s.render_text()
    assert "\n  procedure " in text and "\n  requirement " not in text
    assert "fails most often: procedure" in text
    # one replay is one replay, in the text and in the HTML index's header
    assert "fails most often: procedure, in 1 replay (" in text
    assert s.index_summary("sliced")["extra"]["fails most often"] == "procedure (1 replay)"


def test_each_check_counts_under_the_checkers_outcome() -> None:
    from unmask.checking.checker import outcome

    statuses = (
        "ENTAILED",
        "REFUTED",
        "UNDERDETERMINED",
        "SOLVER_UNKNOWN",
        "INCONSISTENT_BASE",
        "NOT_SPECIFIED",
        None,
    )
    names = {"OK": "satisfied", "VIOLATED": "violated", "UNKNOWN": "unknown", None: "not_specified"}
    for status in statuses:
        assert summary.check_key(status) == names[outcome(status)]
        want = "not_observable" if status == "REFUTED" else names[outcome(status, coverage=True)]
        assert summary.check_key(status, coverage=True) == want


def test_index_rows_of_a_report_and_of_its_result_line_agree(cases: Path) -> None:
    from unmask.render import html

    for name in CASES:
        report = check(load_replay(cases / name), "sliced")
        line = json.loads(json.dumps({"location": name, **report.to_json()}))
        fresh = html.index_row(ResultRecord.from_report(report, name), "x.html")
        assert html.index_row(ResultRecord.from_line(line), "x.html") == fresh
        assert fresh["id"] == report.replay and fresh["overall"] == report.overall
    record = {"schema": "unmask.error/1", "location": "bad.json", "errors": []}
    row = html.index_row(ResultRecord.from_line(record), "ignored")
    assert row["overall"] == "INVALID" and row["href"] == ""


def _line_task(i: int = 0) -> inputs.Task:
    return inputs.Task(f"runs.jsonl:{i + 1}", "runs.jsonl", i + 1, replay_line(2, 0, i).encode())


def test_an_audit_collects_garbage_less_often_and_puts_the_thresholds_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Python's thresholds inside a program or a Dask worker; the audit's while it runs."""
    import gc

    old = gc.get_threshold()
    seen = []
    try:
        gc.set_threshold(700, 10, 10)
        run.run_audit(iter([_line_task()]), SETTINGS, lambda t, r: seen.append(gc.get_threshold()))
        assert seen == [tuning.GC_THRESHOLDS]
        assert gc.get_threshold() == (700, 10, 10)
        # a worker's chunk, however its process was started
        with monkeypatch.context() as m:
            m.setattr(batch_task, "audit_task", lambda t, s: seen.append(gc.get_threshold()))
            wire.run_chunk([_line_task()], SETTINGS)
        assert seen[-1] == tuning.GC_THRESHOLDS
        assert gc.get_threshold() == (700, 10, 10)
        # higher thresholds are kept, and a collector switched off stays off
        gc.set_threshold(100_000, 5, 50)
        with tuning.batch_gc():
            assert gc.get_threshold() == (100_000, 20, 50)
        gc.set_threshold(0, 10, 10)
        with tuning.batch_gc():
            assert gc.get_threshold()[0] == 0
        # an error in the middle still puts them back
        gc.set_threshold(700, 10, 10)
        with pytest.raises(KeyboardInterrupt), tuning.batch_gc():
            raise KeyboardInterrupt
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*old)


_HEAP_ROUNDS = """
import resource, sys
from unmask.batch.tuning import batch_heap
took = batch_heap() if sys.argv[1] == "on" else None
def replay_sized():
    # a 2000-claim replay's share of the C heap: many small blocks and a few documents
    blocks = [bytes(2000) for _ in range(4000)] + [b"x" * 1_300_000 for _ in range(3)]
    del blocks
replay_sized()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
replay_sized()
print(took, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="a glibc setting")
def test_a_batch_process_keeps_its_freed_heap_for_the_next_replay() -> None:
    def faults(mode: str) -> tuple[str, int]:
        out = subprocess.run(
            [sys.executable, "-c", _HEAP_ROUNDS, mode], capture_output=True, text=True, check=True
        ).stdout.split()
        return out[0], int(out[1])

    took, kept = faults("on")
    _, returned = faults("off")
    assert took == "True"
    # without it glibc hands the 12 MB back and the second round faults its pages in again
    assert returned > 1000 and kept < 100


def test_the_batch_commands_keep_their_heap(tmp_path: Path, monkeypatch) -> None:
    from click.testing import CliRunner

    from unmask.cli.main import main

    calls: list[str] = []
    monkeypatch.setattr(tuning, "batch_heap", lambda: calls.append("heap") or True)
    f = tmp_path / "r.jsonl"
    f.write_text(replay_line(2, 0, 0) + "\n")
    result = CliRunner().invoke(main, ["audit", "-q", "--out", str(tmp_path / "o"), str(f)])
    assert result.exit_code == 0, result.output
    assert calls == ["heap"]
    args = ["bench", "--quick", "--sizes", "2", "--runners", "sliced", "--repeats", "1"]
    result = CliRunner().invoke(main, [*args, "--no-jobs", "--no-memory"])
    assert result.exit_code == 0, result.output
    assert calls == ["heap", "heap"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_settle_follows_every_batch_of_results(tmp_path: Path, jobs: int) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text("".join(replay_line(2, 1, i) + "\n" for i in range(30)))
    events: list[str] = []
    run.run_audit(
        run.inputs_for([str(f)], SETTINGS.limits, jobs),
        SETTINGS,
        lambda t, r: events.append("result"),
        jobs,
        lambda: events.append("settle"),
    )
    assert events.count("result") == 30 and events[-1] == "settle"
    if jobs == 1:
        assert events == ["result", "settle"] * 30  # one process: after every line
    else:
        assert 1 < events.count("settle") < 30  # a pool: after each job's results
        assert "settle,settle" not in ",".join(events)  # never after an empty batch


def test_violated_findings_are_confirmed_or_provisional_by_what_they_rest_on() -> None:
    # a finding resting only on reviewed annotations is confirmed; one resting on a rule's
    # unreviewed reading is provisional, and the summary counts them apart
    def result(verdict: dict, grounding: list, matches: bool) -> dict:
        return full_line({
            "schema": "unmask.report/1",
            "overall": "VIOLATED",
            "dimensions": {"verdict": verdict["result"], "procedure": "OK", "coverage": "OK",
                           "grounding": "VIOLATED" if grounding else "OK"},
            "verdict_matches_gold": matches,
            "verdict": {"observed": "PASS", **verdict},
            "requirements": [],
            "grounding": grounding,
        })  # fmt: skip

    s = summary.Summary()
    s.add(ResultRecord.from_line(result({"result": "VIOLATED", "unreviewed": True}, [], True)))
    s.add(ResultRecord.from_line(result({"result": "VIOLATED"}, [], True)))
    s.add(
        ResultRecord.from_line(
            result(
                {"result": "OK"},
                [{"judge": "a", "context": "b", "result": "VIOLATED", "gold_derived": True}],
                False,
            )
        )
    )
    f = s.to_json()["findings"]
    assert f["replays"] == {"confirmed": 1, "provisional": 2}
    assert f["verdict"] == {"confirmed": 1, "provisional": 1}
    assert f["grounding"] == {"confirmed": 0, "provisional": 1}
    assert f["right_for_wrong_reasons"] == {"confirmed": 1, "provisional": 1}
    assert f["wrong_and_violated"] == {"confirmed": 0, "provisional": 1}
    text = s.render_text()
    assert "right for the wrong reasons          2  (1 confirmed, 1 provisional)" in text
    assert (
        "violated replays: 1 confirmed (resting only on reviewed annotations), 2 provisional"
        in text
    )
    assert "verdict 1 confirmed + 1 provisional" in text


def _ignore_sigterm() -> None:
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _nap(seconds: float) -> float:
    import time

    time.sleep(seconds)
    return seconds


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and signals")
def test_stopping_a_pool_kills_a_worker_that_outlives_sigterm() -> None:
    # a worker forked a moment before the stop still carries the parent's SIGTERM handler;
    # nothing of the pool may outlive the stop, or hold the process at exit
    import multiprocessing
    import time
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(
        max_workers=1, mp_context=multiprocessing.get_context("fork"), initializer=_ignore_sigterm
    )
    pool.submit(_nap, 60)
    time.sleep(0.5)
    procs = list(pool._processes.values())
    assert procs and all(p.is_alive() for p in procs)
    start = time.monotonic()
    batch_pool.kill(pool)
    # the pool's own thread may reap a worker at the same moment, and a process another
    # thread is reaping reads as alive for that moment: give the reaping a few seconds
    while any(p.is_alive() for p in procs) and time.monotonic() - start < 20:
        time.sleep(0.1)
    assert not any(p.is_alive() for p in procs)
    assert all(p.exitcode is not None for p in procs)


# A worker that writes a message's first bytes to the results pipe and is then stopped, as
# one terminated in the middle of sending a job's results (more than a pipe holds) is
_HALF_SENT = """
import os, struct, sys, threading, time, multiprocessing
from concurrent.futures import ProcessPoolExecutor
from unmask.batch import pool as batch_pool

def half_send(marker):
    os.write(PIPE.fileno(), struct.pack("!i", 1 << 20) + b"x" * 100)
    open(marker, "w").close()
    time.sleep(60)

pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
PIPE = pool._result_queue._writer  # the worker forked at the submit inherits it
marker = sys.argv[1]
pool.submit(half_send, marker)
while not os.path.exists(marker):
    time.sleep(0.01)
time.sleep(0.3)  # the manager thread reads the first bytes and waits for the rest
batch_pool.kill(pool)
# the manager thread has ended: exit does not race it (nor wait on it)
print("stopped", [t.name for t in threading.enumerate() if not t.daemon], flush=True)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork")
def test_a_worker_stopped_halfway_through_its_results_does_not_hold_the_exit(
    tmp_path: Path,
) -> None:
    # the pool's manager thread, woken by the first bytes, waited for the rest of the
    # message for ever: the parent held a write end of the pipe too, so no end of file
    # came, and the exit joined that thread (1 run in 10 of `--jobs 2` to a full disk)
    marker = tmp_path / "sent"
    try:
        p = subprocess.run(
            [sys.executable, "-c", _HALF_SENT, str(marker)],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the process hung at exit after its pool was killed")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "stopped ['MainThread']\n"
    assert p.stderr == ""
