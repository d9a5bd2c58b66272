"""`unmask bench`: generated replays, the baseline's correctness, and every promised figure."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.api import check
from unmask.bench import Baseline, Plan, factual_replay, replay_line, to_markdown
from unmask.cli.main import main
from unmask.replay import load_replay_text, replay_from_obj


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
    assert 0 < startup["python"]["cpu_ms"] < startup["unmask_check_proto"]["cpu_ms"]
    # the start-up is stated beside the in-process ratio
    per_process = startup["per_process"]
    assert per_process["claims"] == 2 and per_process["in_process_ratio"] > 0
    assert per_process["unmask_check_ms"] == startup["unmask_check"]["cpu_ms"]
    assert "with a process per replay" in result.output
    floor = figures["floor"]
    assert floor["backend"] == "sliced" and set(floor["ratio"]) == {"2", "20"}
    assert all(v > 0 for v in floor["ratio"].values())
    assert "over the floor" in result.output
    # the figures are measurements; what they should be is stated in docs/performance.md
    assert "targets" not in figures and "targets" not in result.output
    assert to_markdown(figures).count("\n") == len(figures["cells"]) + 1


def test_the_targets_are_stated_in_the_docs() -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / "performance.md").read_text()
    targets = text.split("## Targets", 1)[1].split("\n## ", 1)[0]
    for figure in ("10×", "30×", "15×", "1.7×", "1.5×"):
        assert figure in targets, figure


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
    assert "Invalid value for '" + args[0] + "'" in result.output


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
    from unmask.replay import load_replay

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


@pytest.mark.parametrize("forbidden", [True, False])
def test_startup_is_also_measured_with_bytecode_cached_where_python_may_not_write_it(
    monkeypatch, tmp_path: Path, forbidden: bool
) -> None:
    from unmask.bench import measure

    if forbidden:
        monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    else:
        monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        # the children may write bytecode: not into the checkout, where it would stay
        monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path))
    written: list[int] = []
    real = measure._child_cost

    def counting(args, env=None):
        cost = real(args, env)
        if env is not None:
            assert "PYTHONDONTWRITEBYTECODE" not in env
            written.append(sum(1 for _ in Path(env["PYTHONPYCACHEPREFIX"]).rglob("unmask/*.pyc")))
        return cost

    monkeypatch.setattr(measure, "_child_cost", counting)
    lines: list[str] = []
    out = measure.measure_startup(Plan.quick(repeats=1), lines.append)
    cached = [out[k].get("bytecode_cached") for k in ("unmask_check", "unmask_check_proto")]
    if not forbidden:
        assert cached == [None, None] and not written and "bytecode" not in lines[0]
        return
    assert all(c is not None and c["cpu_ms"] > 0 for c in cached)
    # a run that fills the folder, then one measured run reading it, per command
    assert len(written) == 4 and all(n >= 20 for n in written)
    assert "with the bytecode cached" in lines[0]
