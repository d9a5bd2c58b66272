"""How ``unmask bench`` measures in process, and the whole run.

Contract: ``run(plan, say)`` measures, in one process and on the same generated replays
(``workload``), per-replay CPU and wall time with its spread over the repeats, replays per
second and solver calls per replay for every runner (the ``baseline`` and each backend),
the ratio to the baseline, the growth with the number of claims, the floor (reading,
validating and evaluating each formula once, ``floor``) at every size and on the
three-label protocol at ``plan.labelled_parts`` parts; then the start-up of a fresh
process and the peak memory (``processes``), stated beside the in-process ratio, and
``--jobs 1`` against ``--jobs 2`` (``jobs``); last, every target read against the figures
of this run (``targets``). Every figure is printed through ``say`` as it is measured and
returned as data (``schema: unmask.bench/3``); ``to_markdown`` turns the cells into a
table. A measurement that cannot be trusted raises ``processes.BenchError``.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import field, replace
from typing import Any

from unmask.bench.baseline import Baseline
from unmask.bench.floor import evaluate_once
from unmask.bench.jobs import measure_jobs
from unmask.bench.processes import measure_memory, measure_startup
from unmask.bench.targets import evaluate, say_targets
from unmask.bench.workload import labelled_line, replay_line
from unmask.plumbing.frozen import frozen


class _Counting:
    """Wraps a backend to count the solver calls of every session it opens."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.name = backend.name
        self.option = backend.option
        self.sessions: list[Any] = []

    def open(self, parts: Any, atoms: Any) -> Any:
        s = self.backend.open(parts, atoms)
        self.sessions.append(s)
        return s

    def take_calls(self) -> int:
        n = sum(s.calls for s in self.sessions)
        self.sessions.clear()
        return n


@frozen
class Cell:
    """One runner on one size: per-replay time of each repeat, and solver calls."""

    claims: int
    runner: str
    replays: int
    seconds: tuple[float, ...]  # mean CPU seconds per replay, one per repeat
    calls: float  # solver calls per replay
    note: str = ""
    wall: tuple[float, ...] = ()  # mean wall-clock seconds per replay, one per repeat
    line_bytes: float | None = None  # mean bytes of the result line the audit writes (checkers)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else float("nan")

    def to_json(self) -> dict[str, Any]:
        return {
            "claims": self.claims,
            "runner": self.runner,
            "replays": self.replays,
            "ms_per_replay": {
                "median": _ms(self.median),
                "min": _ms(min(self.seconds, default=float("nan"))),
                "max": _ms(max(self.seconds, default=float("nan"))),
                "repeats": len(self.seconds),
            },
            "wall_ms_per_replay": _ms(statistics.median(self.wall)) if self.wall else None,
            "replays_per_second": round(1 / self.median, 2) if self.seconds else None,
            "sat_calls_per_replay": round(self.calls, 2),
            "line_bytes_per_replay": None if self.line_bytes is None else round(self.line_bytes),
            "note": self.note or None,
        }


FLOOR = "floor"  # the row of read + validate + evaluate each formula once (``floor``)
LABELLED = "labelled"  # the three-label protocol over parts (``workload.labelled_replay``)


def _ms(s: float) -> float | None:
    return None if s != s else round(s * 1000, 3)


def _tasks(n: int, count: int, seed: int, workload: str = "mixed") -> list[Any]:
    """``count`` replays of ``n`` claims (``labelled``: of ``n`` parts) as batch tasks."""
    from unmask.replay.inputs import Task

    def line(i: int) -> str:
        if workload == LABELLED:
            return labelled_line(n, seed, i)
        return replay_line(n, seed, i, workload)

    return [
        Task(f"bench-{n}.jsonl:{i + 1}", "bench.jsonl", i + 1, line(i).encode())
        for i in range(count)
    ]


def _time_runner(
    runner: str, tasks: list[Any], timeout_ms: int
) -> tuple[float, float, float, float | None]:
    """CPU seconds, wall seconds, solver calls and result-line bytes (None for the floor
    and the baseline, which write no line) per replay for one pass over ``tasks``."""
    from unmask.batch.task import Settings
    from unmask.plumbing.limits import DEFAULT_LIMITS
    from unmask.replay.inputs import load_task

    settings = Settings(runner, timeout_ms, DEFAULT_LIMITS)
    if runner == FLOOR:
        cpu, wall = time.process_time(), time.perf_counter()
        for t in tasks:
            evaluate_once(load_task(t, DEFAULT_LIMITS))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        return cpu / len(tasks), wall / len(tasks), 0.0, None
    if runner == "baseline":
        base = Baseline()
        cpu, wall = time.process_time(), time.perf_counter()
        for t in tasks:
            base.check(load_task(t, DEFAULT_LIMITS))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        return cpu / len(tasks), wall / len(tasks), base.calls / len(tasks), None
    from unmask.backends import create
    from unmask.checking.outcomes import check_replay_line

    counting = _Counting(create(runner, timeout_ms=timeout_ms))
    calls = size = 0
    cpu, wall = time.process_time(), time.perf_counter()
    for t in tasks:
        # the audit's own path (``batch.task.audit_task``): parse, validate, check, explain,
        # serialise the result line
        replay = load_task(t, settings.limits)
        size += len(check_replay_line(replay, counting, t.location)[2])  # type: ignore[arg-type]
        calls += counting.take_calls()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    n = len(tasks)
    return cpu / n, wall / n, calls / n, size / n


@frozen
class Plan:
    """What to measure; ``quick()`` is the seconds-long version for tests."""

    sizes: tuple[int, ...] = (2, 20, 200, 2000)
    counts: dict[int, int] = field(default_factory=lambda: {2: 200, 20: 50, 200: 10, 2000: 2})
    runners: tuple[str, ...] = ("baseline", "sliced", "pysat", "truthtable", "z3")
    repeats: int = 3
    budget_s: float = 60.0  # per cell; cells estimated to need more get fewer replays or none
    jobs_replays: int = 10_000  # 2-claim replays: about 3 s for --jobs 1
    jobs_claims: int = 2  # claims per replay of the --jobs figure: the smallest, the worst case
    memory_small: int = 1_000
    memory_large: int = 100_000
    backend: str = "sliced"  # for the jobs and memory figures
    seed: int = 0
    workload: str = "mixed"  # of the per-size cells (``workload.WORKLOADS``)
    timeout_ms: int = 60_000
    startup: bool = True  # measure the start-up of a fresh process
    floor: bool = True  # add the floor row (read + validate + evaluate once) at every size
    labelled_parts: int = 20  # the three-label protocol's figure: parts per replay
    labelled_replays: int = 50  # and replays (0: not measured)
    marked_quick: bool = False  # scaled down (``quick``): the targets are marked as quick

    @classmethod
    def quick(cls, **kw: Any) -> Plan:
        base = cls(
            sizes=(2, 20, 200),
            counts={2: 10, 20: 3, 200: 1},
            repeats=2,
            budget_s=3.0,
            jobs_replays=60,
            memory_small=50,
            memory_large=500,
            labelled_replays=5,
            marked_quick=True,
        )
        return replace(base, **kw)


def _estimate(done: dict[int, Cell], n: int) -> float | None:
    """Seconds per replay at ``n`` claims from the largest smaller size, assuming n**1.5
    (between the near-linear fast runners and the baseline's growth)."""
    smaller = [m for m in done if m < n and done[m].seconds]
    if not smaller:
        return None
    m = max(smaller)
    return max(done[m].wall) * (n / m) ** 1.5


def _runners(plan: Plan) -> tuple[str, ...]:
    if plan.floor and FLOOR not in plan.runners:
        return (*plan.runners, FLOOR)
    return plan.runners


def measure_cells(plan: Plan, say: Callable[[str], None]) -> list[Cell]:
    from unmask.plumbing.diagnostics import UnmaskError

    cells: list[Cell] = []
    runners = _runners(plan)
    by_runner: dict[str, dict[int, Cell]] = {r: {} for r in runners}
    for n in plan.sizes:
        count = plan.counts.get(n, 1)
        tasks = _tasks(n, count, plan.seed, plan.workload)
        for runner in runners:
            est = _estimate(by_runner[runner], n)
            use = count
            # the baseline, the default backend and the floor always run: the ratios need them
            must = runner in ("baseline", plan.backend, FLOOR)
            if est is not None:
                if est > plan.budget_s and not must:
                    cell = Cell(n, runner, 0, (), 0.0, f"skipped: about {est:.0f} s per replay")
                    cells.append(cell)
                    say(_row(cell, None))
                    continue
                use = max(1, min(count, int(plan.budget_s / (est * plan.repeats))))
            repeats = plan.repeats
            if must and est is not None and est * repeats > plan.budget_s:
                repeats = 1
            times: list[float] = []
            walls: list[float] = []
            calls = 0.0
            size: float | None = None
            note = "" if use == count else f"{use} of {count} replays (time budget)"
            if repeats != plan.repeats:
                note = (note + "; " if note else "") + "one repeat (time budget)"
            try:
                for _ in range(repeats):
                    t, w, calls, size = _time_runner(runner, tasks[:use], plan.timeout_ms)
                    times.append(t)
                    walls.append(w)
            except UnmaskError as exc:
                note = "refused: " + exc.diagnostics[0].message
                times = walls = []
            cell = Cell(
                n, runner, use if times else 0, tuple(times), calls, note, tuple(walls), size
            )
            by_runner[runner][n] = cell
            cells.append(cell)
            base = by_runner["baseline"].get(n) if "baseline" in by_runner else None
            say(_row(cell, base))
    return cells


def _row(cell: Cell, base: Cell | None) -> str:
    if not cell.seconds:
        return f"{cell.claims:>6} {cell.runner:<11} {cell.note}"
    spread = f"{_ms(min(cell.seconds)):.2f}..{_ms(max(cell.seconds)):.2f}"
    ratio = ""
    if base is not None and base.seconds and cell.runner != "baseline":
        ratio = f"{base.median / cell.median:8.1f}x"
    elif cell.runner == "baseline":
        ratio = f"{1.0:8.1f}x"
    wall = statistics.median(cell.wall) * 1000
    text = (
        f"{cell.claims:>6} {cell.runner:<11} {cell.replays:>7} {_ms(cell.median):>12.3f} "
        f"{spread:>20} {wall:>10.3f} {1 / cell.median:>10.1f} {cell.calls:>10.1f} {ratio}"
    )
    return text + (f"  ({cell.note})" if cell.note else "")


HEADER = (
    f"{'claims':>6} {'runner':<11} {'replays':>7} {'cpu ms/rep':>12} {'spread (min..max)':>20} "
    f"{'wall ms':>10} {'replays/s':>10} {'sat calls':>10} {'vs base':>9}"
)


def run(plan: Plan, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Measure everything in ``plan``, printing as it goes; returns every figure."""
    say(
        f"unmask bench: {plan.workload} replays, seed {plan.seed}, {plan.repeats} repeats, "
        f"python {sys.version.split()[0]}"
    )
    say(HEADER)
    cells = measure_cells(plan, say)
    growth = {}
    for runner in _runners(plan):
        mine = {c.claims: c.median for c in cells if c.runner == runner and c.seconds}
        pairs = [
            (a, b)
            for a, b in zip(plan.sizes, plan.sizes[1:], strict=False)
            if a in mine and b in mine
        ]
        growth[runner] = {f"{b}/{a}": round(mine[b] / mine[a], 2) for a, b in pairs}
        if pairs:
            say(
                f"growth of time per replay, {runner}: "
                + ", ".join(f"{k} claims {v}x" for k, v in growth[runner].items())
            )
    floor = _over_floor(plan, cells, say)
    line_bytes = {
        str(c.claims): round(c.line_bytes)
        for c in cells
        if c.runner == plan.backend and c.line_bytes is not None
    }
    if line_bytes:
        say(
            "the audit's result line, bytes per replay: "
            + ", ".join(f"{n} claims {b:,}" for n, b in line_bytes.items())
        )
    startup = measure_startup(plan, say) if plan.startup else {}
    if startup:
        startup["per_process"] = _per_process(plan, cells, startup, say)
    labelled = _labelled(plan, say) if plan.labelled_replays else {}
    jobs = measure_jobs(plan, say) if plan.jobs_replays else {}
    memory = measure_memory(plan, say) if plan.memory_small and plan.memory_large else {}
    figures = {
        "schema": "unmask.bench/3",
        "seed": plan.seed,
        "workload": plan.workload,
        "repeats": plan.repeats,
        "quick": plan.marked_quick,
        "cells": [c.to_json() for c in cells],
        "growth": growth,
        "floor": floor,
        "line_bytes": line_bytes,
        "labelled": labelled,
        "startup": startup,
        "jobs": jobs,
        "memory": memory,
    }
    targets = evaluate(figures, plan.backend)
    say_targets(targets, plan.marked_quick, say)
    figures["targets"] = [t.to_json() for t in targets]
    return figures


def _labelled(plan: Plan, say: Callable[[str], None]) -> dict[str, Any]:
    """The default backend over the floor on the three-label protocol, where every label's
    decision spans every part (the ratio a binary protocol's figures do not show)."""
    n = plan.labelled_parts
    tasks = _tasks(n, plan.labelled_replays, plan.seed, LABELLED)
    ms: dict[str, float] = {}
    # one untimed pass of each runner first: it pays what a process does once (the
    # protocol read, what the protocol alone determines, a module first imported), which
    # the first runner paid alone and the floor, timed after it, never did; with 5
    # replays and 2 passes that one-time work was half the figure
    for runner in (plan.backend, FLOOR):
        _time_runner(runner, tasks, plan.timeout_ms)
    for runner in (plan.backend, FLOOR):
        times = [_time_runner(runner, tasks, plan.timeout_ms)[0] for _ in range(plan.repeats)]
        ms[runner] = statistics.median(times) * 1000
    out = {
        "parts": n,
        "replays": len(tasks),
        "backend": plan.backend,
        "backend_ms": round(ms[plan.backend], 3),
        "floor_ms": round(ms[FLOOR], 3),
        "ratio": round(ms[plan.backend] / ms[FLOOR], 2),
    }
    say(
        f"three-label protocol at {n} parts ({len(tasks)} replays): {plan.backend} "
        f"{out['backend_ms']:.3f} ms, floor {out['floor_ms']:.3f} ms per replay (CPU, "
        f"median): {out['ratio']}x the floor"
    )
    return out


def _medians(cells: list[Cell], runner: str) -> dict[int, float]:
    return {c.claims: c.median for c in cells if c.runner == runner and c.seconds}


def _over_floor(plan: Plan, cells: list[Cell], say: Callable[[str], None]) -> dict[str, Any]:
    """The default backend's time per replay over the floor's, at every size."""
    floor, mine = _medians(cells, FLOOR), _medians(cells, plan.backend)
    ratios = {str(n): round(mine[n] / floor[n], 2) for n in plan.sizes if n in floor and n in mine}
    if ratios:
        say(
            f"{plan.backend} over the floor (read + validate + evaluate once): "
            + ", ".join(f"{v}x at {k} claims" for k, v in ratios.items())
        )
    return {"backend": plan.backend, "ratio": ratios}


def _per_process(
    plan: Plan, cells: list[Cell], startup: dict[str, Any], say: Callable[[str], None]
) -> dict[str, Any]:
    """The smallest size's ratio when every replay is a fresh process: the start-up counts
    then, and it is stated beside the in-process ratio."""
    base, mine = _medians(cells, "baseline"), _medians(cells, plan.backend)
    sizes = [n for n in plan.sizes if n in base and n in mine]
    if not sizes:
        return {}
    n = sizes[0]
    direct = startup["python_z3"]["cpu_ms"] + base[n] * 1000
    check = startup["unmask_check"]["cpu_ms"]
    out = {
        "claims": n,
        "in_process_ratio": round(base[n] / mine[n], 2),
        "baseline_ms": round(direct, 1),
        "unmask_check_ms": check,
        "ratio": round(direct / check, 2) if check else None,
    }
    say(
        f"at {n} claims: {out['in_process_ratio']}x the baseline in one process; with a "
        f"process per replay the baseline costs about {direct:.0f} ms (start-up + replay) "
        f"and `unmask check` {check:.0f} ms: {out['ratio']}x the baseline's throughput"
    )
    return out


def to_markdown(figures: dict[str, Any]) -> str:
    """The figures of ``run`` as Markdown tables (for docs/performance.md)."""
    cells = figures["cells"]
    base = {c["claims"]: c for c in cells if c["runner"] == "baseline"}
    out = [
        "| claims | runner | replays | CPU ms/replay, median (min..max) | wall ms | "
        "replays/s | solver calls/replay | × baseline |",
        "|---:|---|---:|---|---:|---:|---:|---:|",
    ]
    for c in cells:
        ms = c["ms_per_replay"]
        if ms["median"] is None:
            out.append(f"| {c['claims']} | {c['runner']} | – | {c['note']} | | | | |")
            continue
        b = base.get(c["claims"])
        ratio = ""
        if b and b["ms_per_replay"]["median"]:
            ratio = f"{b['ms_per_replay']['median'] / ms['median']:.1f}×"
        note = f" ({c['note']})" if c["note"] else ""
        out.append(
            f"| {c['claims']} | {c['runner']} | {c['replays']}{note} | {ms['median']:.3f} "
            f"({ms['min']:.3f}..{ms['max']:.3f}) | {c['wall_ms_per_replay']:.3f} | "
            f"{c['replays_per_second']:.1f} | {c['sat_calls_per_replay']:.1f} | {ratio} |"
        )
    return "\n".join(out)
