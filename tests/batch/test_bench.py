"""`unmask bench`: generated replays, the baseline's correctness, and every promised figure."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.api import check
from unmask.batch import task as batch_task
from unmask.bench import Baseline, Plan, factual_replay, replay_line, to_markdown
from unmask.bench.measure import _tasks
from unmask.cli.main import main
from unmask.replay.load import load_replay_text, replay_from_obj


def test_generated_replays_are_valid_deterministic_and_about_20_percent_unknown() -> None:
    assert replay_line(20, 3, 7) == replay_line(20, 3, 7)
    assert replay_line(20, 3, 7) != replay_line(20, 3, 8)
    unknown = total = 0
    for i in range(40):
        obj = factual_replay(20, 0, i)
        replay = replay_from_obj(obj)
        assert len(replay.protocol.atoms) == 2 * 20 + 1
        assert len(replay.protocol.grounding) == 20
        values = {a.atom: a.value for a in replay.annotations}
        total += len(replay.protocol.atoms)
        unknown += sum(values.get(n, "UNKNOWN") == "UNKNOWN" for n in replay.protocol.atom_names)
    assert 0.15 < unknown / total < 0.25


def test_the_supported_workload_is_the_ordinary_good_case() -> None:
    for n in (1, 7):
        line = replay_line(n, 0, 0, "supported")
        assert line == replay_line(n, 0, 0, "supported") != replay_line(n, 0, 0)
        report = check(load_replay_text(line, "x.json"), "sliced")
        assert report.overall == "SATISFIED"
        assert all(g.result.status == "ENTAILED" for g in report.grounding)
    result = CliRunner().invoke(main, ["bench", "--quick", "--workload", "nosuch"])
    assert result.exit_code == 2


def test_baseline_statuses_equal_the_checkers() -> None:
    for n in (1, 2, 5):
        for i in range(15):
            replay = load_replay_text(replay_line(n, 11, i), "x.json")
            report = check(replay, "sliced")
            base = Baseline().check(replay)
            assert base["verdict"] == report.verdict.result.status
            assert base["requirements"] == [
                (
                    r.holds.status,
                    None if r.coverage.status == "NOT_SPECIFIED" else r.coverage.status,
                )
                for r in report.requirements
            ]
            assert base["grounding"] == [g.result.status for g in report.grounding]


def test_the_baseline_reuses_one_z3_context_as_a_direct_user_would() -> None:
    base = Baseline()
    ctx = base.ctx
    for i in range(3):
        base.check(load_replay_text(replay_line(2, 0, i), "x.json"))
        assert base.ctx is ctx


def test_quick_bench_prints_and_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    args = ["bench", "--quick", "--sizes", "2,20", "--runners", "baseline,sliced,truthtable"]
    result = CliRunner().invoke(main, [*args, "--repeats", "2", "--json", str(out)])
    assert result.exit_code == 0, result.output
    figures = json.loads(out.read_text())
    cells = {(c["claims"], c["runner"]): c for c in figures["cells"]}
    runners = ("baseline", "sliced", "truthtable", "floor")
    assert set(cells) == {(n, r) for n in (2, 20) for r in runners}
    for (n, runner), c in cells.items():
        ms = c["ms_per_replay"]
        assert c["replays"] >= 1
        assert 0 < ms["min"] <= ms["median"] <= ms["max"]
        assert ms["repeats"] in (1, 2)
        assert c["replays_per_second"] > 0 and c["wall_ms_per_replay"] > 0
        if runner == "floor":
            assert c["sat_calls_per_replay"] == 0
        elif runner == "baseline":
            assert c["sat_calls_per_replay"] > 0
        else:
            # the closed form decides most checks, all of them on these replays, without a
            # call: far fewer than the baseline's, which makes one per satisfiability query
            assert c["sat_calls_per_replay"] < cells[(n, "baseline")]["sat_calls_per_replay"]
        # the printed table has a row for every cell
        assert any(line.split()[:2] == [str(n), runner] for line in result.output.splitlines())
    assert set(figures["growth"]["sliced"]) == {"20/2"}
    # the audit's own line, measured as it writes it: the mean bytes of the cell's lines
    for n in (2, 20):
        c = cells[(n, "sliced")]
        tasks = _tasks(n, c["replays"], 0)
        lines = [
            batch_task.audit_task(t, batch_task.Settings("sliced", 60_000)).line for t in tasks
        ]
        assert figures["line_bytes"][str(n)] == round(sum(map(len, lines)) / len(lines))
        assert c["line_bytes_per_replay"] == figures["line_bytes"][str(n)]
        assert cells[(n, "baseline")]["line_bytes_per_replay"] is None
    assert "the audit's result line, bytes per replay: 2 claims " in result.output
    jobs = figures["jobs"]
    assert len(jobs["jobs1_per_second"]) == len(jobs["jobs2_per_second"]) == 2
    assert jobs["speedup"] > 0 and jobs["speedup_on_idle_cores"] > 0
    assert set(jobs["cpu_seconds"]) == {"jobs1", "jobs2_parent", "jobs2_workers"}
    assert "other_processes_cores" in jobs
    if hasattr(os, "fork"):  # the ceiling: two forked halves, no pool
        assert jobs["ceiling"] > 0 and "ceiling" in result.output
    assert jobs["claims"] == 2  # the default: the smallest replays, the worst case
    memory = figures["memory"]
    assert memory["small"]["peak_rss_kib"] > 0 and memory["large"]["peak_rss_kib"] > 0
    assert memory["large"]["replays"] > memory["small"]["replays"]
    assert memory["ratio"] > 0
    assert "vs --jobs 2" in result.output and "peak memory" in result.output
    startup = figures["startup"]
    assert 0 < startup["python"]["cpu_ms"] < startup["unmask_check"]["cpu_ms"]
    assert startup["python_z3"]["wall_ms"] > 0
    assert "start-up of a fresh process" in result.output
    proto = startup["unmask_check_proto"]
    assert 0 < startup["python"]["cpu_ms"] < proto["cpu_ms"]
    for check_ in (startup["unmask_check"], proto):
        assert check_["from_source"]["cpu_ms"] > 0
    assert proto["cold_cache"]["cpu_ms"] > 0
    assert proto["cold_cache_extra_ms"] == round(proto["cold_cache"]["cpu_ms"] - proto["cpu_ms"], 1)
    # the start-up is stated beside the in-process ratio
    per_process = startup["per_process"]
    assert per_process["claims"] == 2 and per_process["in_process_ratio"] > 0
    assert per_process["unmask_check_ms"] == startup["unmask_check"]["cpu_ms"]
    assert "with a process per replay" in result.output
    floor = figures["floor"]
    assert floor["backend"] == "sliced" and set(floor["ratio"]) == {"2", "20"}
    assert all(v > 0 for v in floor["ratio"].values())
    assert "over the floor" in result.output
    labelled = figures["labelled"]
    assert labelled["parts"] == 20 and labelled["replays"] == 5
    assert labelled["ratio"] == pytest.approx(labelled["backend_ms"] / labelled["floor_ms"], 0.01)
    assert "three-label protocol at 20 parts" in result.output
    # the targets: read from this run's figures, each printed with its status, marked quick
    from unmask.bench.targets import evaluate

    assert figures["quick"] is True
    measured = {k: v for k, v in figures.items() if k != "targets"}
    assert figures["targets"] == [t.to_json() for t in evaluate(measured, "sliced")]
    assert {t["status"] for t in figures["targets"]} <= {"PASS", "MISS"}
    lines = result.output.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("targets, from"))
    assert "(quick:" in lines[head]
    printed = lines[head + 1 : head + 1 + len(figures["targets"])]
    assert [line.split()[:2] for line in printed] == [
        ["quick", t["status"]] for t in figures["targets"]
    ]
    assert to_markdown(figures).count("\n") == len(figures["cells"]) + 1


def test_the_targets_are_stated_in_the_docs() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "performance.md").read_text()
    targets = text.split("## Targets", 1)[1].split("\n### ", 1)[0]
    from unmask.bench import targets as bounds

    for bound in (
        f"≤ {bounds.GROWTH_OVER_FLOOR:g}×",
        f"≥ {bounds.JOBS_OF_CEILING:g}×",
        f"≤ {bounds.FLOOR_RATIO:g}×",
        f"≤ {bounds.LABELLED_FLOOR_RATIO:g}×",
        f"≤ {bounds.PROTO_FROM_SOURCE_MS:g} ms CPU",
        f"≤ {bounds.PROTO_CACHED_MS:g} ms CPU",
        f"≤ {bounds.COLD_CACHE_EXTRA_MS:g} ms CPU",
    ):
        assert bound in targets, bound


def test_bench_usage_errors() -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["bench", "--sizes", "two"]).exit_code == 2
    assert runner.invoke(main, ["bench", "--quick", "--runners", "nosuch"]).exit_code == 2


@pytest.mark.parametrize(
    "args",
    [
        ["--budget-s", "nan"],
        ["--budget-s", "inf"],
        ["--budget-s", "-inf"],
        ["--budget-s", "0"],
        ["--budget-s", "1e9"],
        ["--sizes", "100000000"],
        ["--sizes", "2,0"],
        ["--sizes", ",".join(["2"] * 17)],
        ["--repeats", "0"],
        ["--repeats", "1000000"],
        ["--seed", "-1"],
        ["--seed", str(2**64)],
        ["--jobs-claims", "0"],
        ["--jobs-claims", "100000000"],
    ],
)
def test_every_numeric_option_has_a_range(args: list[str]) -> None:
    # refused before anything is generated or measured: a usage error, never a traceback
    result = CliRunner().invoke(main, ["bench", "--quick", *args])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"error: invalid value for `{args[0]}`: " in result.output


def test_the_floor_evaluates_every_formula_once() -> None:
    from unmask import ir
    from unmask.bench.floor import evaluate_once, formulas

    replay = load_replay_text(replay_line(5, 0, 1))
    p = replay.protocol
    fs = formulas(p)
    # the decision per label, one requirement with its `addressed`, one pair per claim
    assert len(fs) == len(p.labels) + 2 + 5 == evaluate_once(replay)
    evaluated: list[ir.Expr] = []
    real = ir.evaluate
    try:
        ir.evaluate = lambda e, env: evaluated.append(e) or real(e, env)  # type: ignore[assignment]
        evaluate_once(replay)
    finally:
        ir.evaluate = real  # type: ignore[assignment]
    assert evaluated == fs


def test_the_proto_path_replay_checks_like_the_embedded_one(tmp_path: Path) -> None:
    from unmask.bench.workload import PROTOCOL_SOURCE, proto_replay
    from unmask.replay.load import load_replay

    (tmp_path / "factual.proto").write_text(PROTOCOL_SOURCE, encoding="utf-8")
    for n, i in ((2, 0), (7, 3)):
        path = tmp_path / f"r{n}.json"
        path.write_text(json.dumps(proto_replay(n, 0, i)), encoding="utf-8")
        from_file = load_replay(path)
        embedded = load_replay_text(replay_line(n, 0, i))
        assert [a.name for a in from_file.protocol.atoms] == [
            a.name for a in embedded.protocol.atoms
        ]
        ours, theirs = check(from_file).to_json(), check(embedded).to_json()
        for key in ("overall", "bases", "dimensions", "unannotated"):
            assert ours[key] == theirs[key], key


def test_the_jobs_figure_takes_replays_of_the_size_asked_for(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    args = ["bench", "--quick", "--sizes", "2", "--runners", "sliced", "--repeats", "1"]
    result = CliRunner().invoke(
        main, [*args, "--no-memory", "--jobs-claims", "7", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["jobs"]["claims"] == 7
    assert "7-claim replays" in result.output


def test_startup_is_measured_from_source_and_with_bytecode_cached(monkeypatch) -> None:
    from unmask.bench import processes

    seen: list[tuple[list[str], dict[str, str] | None]] = []
    real = processes.run_child

    def spying(args, expect, env=None):
        cost = real(args, expect, env)
        seen.append((list(args), env))
        return cost

    def unmask_pyc(flags: list[str]) -> int:
        prefix = next(f.split("=", 1)[1] for f in flags if f.startswith("pycache_prefix="))
        return sum(1 for _ in Path(prefix).rglob("unmask/cli/*.pyc"))

    counts: dict[str, list[int]] = {"cached": [], "source": []}

    def counting(args, expect, env=None):
        cost = spying(args, expect, env)
        flags = list(args[1 : args.index("-c")])
        assert flags[0] == "-I"  # isolated: the current folder imports nothing
        counts["source" if "-B" in flags else "cached"].append(unmask_pyc(flags))
        return cost

    monkeypatch.setattr(processes, "run_child", counting)
    lines: list[str] = []
    out = processes.measure_startup(Plan.quick(repeats=1), lines.append)
    for key in ("unmask_check", "unmask_check_proto"):
        assert out[key]["cpu_ms"] > 0 and out[key]["from_source"]["cpu_ms"] > 0
    # with the bytecode cached, unmask's own modules are read from the prefix; from
    # source, the prefix holds every module's bytecode but unmask's
    assert counts["source"] and set(counts["source"]) == {0}
    assert counts["cached"] and counts["cached"][-1] > 0
    # a cold compile cache is a new folder each time; the warm one is the same folder
    cold = {
        env["UNMASK_CACHE_DIR"] for args, env in seen if env and "cold-" in env["UNMASK_CACHE_DIR"]
    }
    assert len(cold) == 1  # one repeat
    assert "compiling unmask's modules from source" in lines[0]
    assert "cold" in lines[0]


def _fake_unmask(folder: Path) -> None:
    package = folder / "unmask"
    package.mkdir()
    (package / "__init__.py").write_text('raise ImportError("not the package")\n')


def test_a_bench_run_from_a_folder_holding_another_unmask_measures_the_package(
    monkeypatch, tmp_path: Path
) -> None:
    import subprocess
    import sys

    from unmask.bench import processes

    _fake_unmask(tmp_path)
    monkeypatch.chdir(tmp_path)
    # the folder does hijack a child that is not isolated: what the bench used to run
    hijacked = subprocess.run(
        [sys.executable, "-c", processes.MAIN, "--help"], capture_output=True, check=False
    )
    assert hijacked.returncode == 1 and b"not the package" in hijacked.stderr
    plan = Plan.quick(repeats=1)
    out = processes.measure_startup(plan, lambda _line: None)
    # the children ran the package: `unmask check` costs far more than a bare python (a
    # hijacked child died at its first import, costing about as much)
    assert out["unmask_check"]["cpu_ms"] > 2 * out["python"]["cpu_ms"]
    assert out["unmask_check_proto"]["cpu_ms"] > 2 * out["python"]["cpu_ms"]
    memory = processes.measure_memory(plan, lambda _line: None)
    assert memory["small"]["peak_rss_kib"] > 15 * 1024  # a hijacked child: about 11 MiB


def test_a_child_that_does_not_exit_as_expected_fails_the_bench(
    monkeypatch, tmp_path: Path
) -> None:
    import sys

    from unmask.bench import processes
    from unmask.bench.processes import BenchError, Expect, run_child

    python = [sys.executable, "-I", "-c"]
    assert run_child([*python, "print('x')"], Expect(0, "x\n"))[0] >= 0
    with pytest.raises(BenchError, match="exited with status 1, not 0"):
        run_child([*python, "import sys; sys.exit(1)"], Expect(0))
    with pytest.raises(BenchError, match="did not print the report expected of it"):
        run_child([*python, "import sys; sys.exit(1)"], Expect(1, "report\n"))
    # the bench's own `unmask check` child, exiting 1 (the replay is VIOLATED) with no
    # report, as a hijacked child did: the bench stops with one message and exit 3
    assert replay_line(2, 0, 0) and check(load_replay_text(replay_line(2, 0, 0))).exit_code == 1
    monkeypatch.setattr(processes, "MAIN", "import sys; sys.exit(1)")
    args = ["bench", "--quick", "--sizes", "2", "--runners", "sliced", "--repeats", "1"]
    result = CliRunner().invoke(main, [*args, "--no-jobs", "--no-memory"])
    assert result.exit_code == 3, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "did not print the report expected of it" in result.output
    assert "targets, from" not in result.output
    assert "Traceback" not in result.output


def test_a_failed_half_of_the_jobs_ceiling_fails_the_bench() -> None:
    import os

    from unmask.bench.jobs import _split_rate
    from unmask.bench.processes import BenchError

    if not hasattr(os, "fork"):
        pytest.skip("no fork here")

    def failing(_part, _jobs, name):
        if name == "half-1":
            raise OSError("disk full")

    with pytest.raises(BenchError, match="forked half"):
        _split_rate([1, 2, 3, 4], failing, 4)
    assert _split_rate([1, 2, 3, 4], lambda *_: None, 4) > 0


def _made_up(**over: object) -> dict:
    figures = {
        "growth": {
            "sliced": {"20/2": 4.0, "200/20": 7.0, "2000/200": 11.0},
            "floor": {"20/2": 5.0, "200/20": 8.0, "2000/200": 10.5},
        },
        "jobs": {"of_ceiling": 0.95},
        "floor": {"ratio": {"2": 2.0, "2000": 1.4}},
        "labelled": {"parts": 20, "ratio": 2.5},
        "startup": {
            "unmask_check_proto": {
                "cpu_ms": 120.0,
                "from_source": {"cpu_ms": 140.0},
                "cold_cache_extra_ms": 300.0,
            }
        },
    }
    figures.update(over)
    return figures


def test_the_targets_are_computed_from_the_figures_given() -> None:
    from unmask.bench.targets import evaluate

    got = {t.name: t for t in evaluate(_made_up(), "sliced")}
    growth = got["growth 200 → 2000 claims over the floor's growth"]
    assert growth.measured == round(11.0 / 10.5, 3) and growth.status == "PASS"
    assert growth.margin == pytest.approx((1.1 - 11.0 / 10.5) / 1.1, abs=1e-3)
    jobs = got["--jobs 2 over the ceiling"]
    assert jobs.status == "PASS" and jobs.margin == pytest.approx(0.05 / 0.9)
    at2, at2000 = got["over the floor at 2 claims"], got["over the floor at 2000 claims"]
    assert (at2.status, at2000.status) == ("MISS", "PASS")
    assert at2.margin == pytest.approx(-0.5 / 1.5)
    assert "2x, target ≤ 1.5x (33% over)" in at2.line()
    assert got["three-label protocol at 20 parts over the floor"].status == "PASS"
    source = got["`unmask check`, `.proto` path, warm cache, from source"]
    cached = got["`unmask check`, `.proto` path, warm cache, bytecode cached"]
    assert (source.measured, source.status) == (140.0, "PASS")
    assert (cached.measured, cached.status) == (120.0, "MISS")
    assert "120 ms, target ≤ 110 ms (9% over)" in cached.line()
    cold = got["what a cold compile cache adds to it"]
    assert (cold.measured, cold.status) == (300.0, "MISS")


def test_a_target_at_its_bound_passes_and_one_not_measured_never_does() -> None:
    from unmask.bench.targets import evaluate

    figures = _made_up(jobs={"of_ceiling": 0.9}, labelled={}, startup={})
    got = {t.name: t for t in evaluate(figures, "sliced")}
    assert got["--jobs 2 over the ceiling"].status == "PASS"
    slow = {t.name: t for t in evaluate(_made_up(jobs={"of_ceiling": 0.85}), "sliced")}
    assert slow["--jobs 2 over the ceiling"].status == "MISS"
    assert "(6% short)" in slow["--jobs 2 over the ceiling"].line()
    missing = [t for t in got.values() if t.measured is None]
    assert len(missing) == 4 and {t.status for t in missing} == {"NOT MEASURED"}
    assert all("not measured" in t.line() for t in missing)


def test_a_quick_run_reads_growth_between_the_sizes_it_measured() -> None:
    from unmask.bench.targets import evaluate, say_targets

    growth = {"sliced": {"20/2": 4.0, "200/20": 9.0}, "floor": {"20/2": 5.0, "200/20": 7.5}}
    targets = evaluate(_made_up(growth=growth), "sliced")
    assert targets[0].name == "growth 20 → 200 claims over the floor's growth"
    assert targets[0].measured == 1.2 and targets[0].status == "MISS"
    assert "the target is 200 → 2000" in targets[0].line()
    lines: list[str] = []
    say_targets(targets, True, lines.append)
    assert "(quick:" in lines[0] and all(line.startswith("  quick ") for line in lines[1:])
    assert len(lines) == len(targets) + 1


def test_the_three_label_figure_is_timed_after_a_pass_of_each_runner(monkeypatch) -> None:
    """What a process does once (the protocol read, B_proto proved, a module imported) is
    paid in an untimed pass of each runner, not by whichever is timed first."""
    from unmask.bench import measure

    calls: list[str] = []
    monkeypatch.setattr(measure, "_tasks", lambda *a: ["task"])

    def timed(runner, tasks, timeout_ms):  # type: ignore[no-untyped-def]
        calls.append(runner)
        return (0.002 if runner == "sliced" else 0.001), 0.0, 0.0, None

    monkeypatch.setattr(measure, "_time_runner", timed)
    out = measure._labelled(measure.Plan.quick(), lambda _: None)
    assert calls == ["sliced", "floor", "sliced", "sliced", "floor", "floor"]
    assert out["ratio"] == 2.0
