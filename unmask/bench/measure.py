"""How ``unmask bench`` measures: per-replay time, solver calls, ``--jobs``, peak memory.

Contract: ``run(plan, say)`` measures, in one process and on the same generated replays
(``workload``), per-replay CPU and wall time with its spread over the repeats, replays per
second and solver calls per replay for every runner (the ``baseline`` and each backend),
the ratio to the baseline, the growth with the number of claims, the start-up cost of a
process that the in-process ratios leave out (a bare Python, one that imports z3 as a
direct user's would, and ``unmask check`` of one small replay with its protocol embedded
and as a ``.proto`` path) stated beside the in-process ratio, the floor (reading,
validating and evaluating each formula once, ``floor``) at every size, ``--jobs 1`` against
``--jobs 2`` throughput auditing one JSON Lines file, and the peak memory (resident set of
a child process) of auditing many small replays against few from one JSON Lines file.
Every figure is printed through ``say`` as it is measured and returned as data (``schema:
unmask.bench/2``); ``to_markdown`` turns the data into tables. What the figures should be
(the targets) is stated in ``docs/performance.md``, not here: this module measures, it
does not judge.

Size: each measured row (baseline, backends, floor, start-up, jobs, memory) is a small
function over the same timing helpers; they are read and changed together.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from unmask.bench.baseline import Baseline
from unmask.bench.floor import evaluate_once
from unmask.bench.workload import PROTOCOL_SOURCE, proto_replay, replay_line


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


@dataclass(frozen=True, slots=True)
class Cell:
    """One runner on one size: per-replay time of each repeat, and solver calls."""

    claims: int
    runner: str
    replays: int
    seconds: tuple[float, ...]  # mean CPU seconds per replay, one per repeat
    calls: float  # solver calls per replay
    note: str = ""
    wall: tuple[float, ...] = ()  # mean wall-clock seconds per replay, one per repeat

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
            "note": self.note or None,
        }


FLOOR = "floor"  # the row of read + validate + evaluate each formula once (``floor``)


def _ms(s: float) -> float | None:
    return None if s != s else round(s * 1000, 3)


def _tasks(n: int, count: int, seed: int, workload: str = "mixed") -> list[Any]:
    from unmask.batch.inputs import Task

    return [
        Task(
            f"bench-{n}.jsonl:{i + 1}",
            "bench.jsonl",
            i + 1,
            replay_line(n, seed, i, workload).encode(),
        )
        for i in range(count)
    ]


def _time_runner(runner: str, tasks: list[Any], timeout_ms: int) -> tuple[float, float, float]:
    """CPU seconds, wall seconds and solver calls per replay for one pass over ``tasks``."""
    from unmask.batch.records import encode_line
    from unmask.batch.run import Settings, load_task
    from unmask.limits import DEFAULT_LIMITS

    settings = Settings(runner, timeout_ms, DEFAULT_LIMITS)
    if runner == FLOOR:
        cpu, wall = time.process_time(), time.perf_counter()
        for t in tasks:
            evaluate_once(load_task(t, DEFAULT_LIMITS))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        return cpu / len(tasks), wall / len(tasks), 0.0
    if runner == "baseline":
        base = Baseline()
        cpu, wall = time.process_time(), time.perf_counter()
        for t in tasks:
            base.check(load_task(t, DEFAULT_LIMITS))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        return cpu / len(tasks), wall / len(tasks), base.calls / len(tasks)
    from unmask.backends import create
    from unmask.checker import check_replay

    counting = _Counting(create(runner, timeout_ms=timeout_ms))
    calls = 0
    cpu, wall = time.process_time(), time.perf_counter()
    for t in tasks:
        # the audit's own path: parse, validate, check, explain, serialise
        report = check_replay(load_task(t, settings.limits), counting)  # type: ignore[arg-type]
        body = report.to_json()
        encode_line({"schema": body.pop("schema"), "location": t.location, **body})
        calls += counting.take_calls()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return cpu / len(tasks), wall / len(tasks), calls / len(tasks)


@dataclass(frozen=True, slots=True)
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

    @classmethod
    def quick(cls, **kw: Any) -> Plan:
        base = {
            "sizes": (2, 20, 200),
            "counts": {2: 10, 20: 3, 200: 1},
            "repeats": 2,
            "budget_s": 3.0,
            "jobs_replays": 60,
            "memory_small": 50,
            "memory_large": 500,
        }
        base.update(kw)
        return cls(**base)


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
    from unmask.diagnostics import UnmaskError

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
            note = "" if use == count else f"{use} of {count} replays (time budget)"
            if repeats != plan.repeats:
                note = (note + "; " if note else "") + "one repeat (time budget)"
            try:
                for _ in range(repeats):
                    t, w, calls = _time_runner(runner, tasks[:use], plan.timeout_ms)
                    times.append(t)
                    walls.append(w)
            except UnmaskError as exc:
                note = "refused: " + exc.diagnostics[0].message
                times = walls = []
            cell = Cell(n, runner, use if times else 0, tuple(times), calls, note, tuple(walls))
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


def _discard(*_: Any) -> None:
    return None


def _child_cost(args: Sequence[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """CPU and wall seconds of one child process, from its start to its exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    code = subprocess.call(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code not in (0, 1):
        raise RuntimeError(f"the measured start-up failed with exit status {code}")
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), wall


def _median_cost(args: Sequence[str], repeats: int, env: dict[str, str] | None = None) -> dict:
    costs = [_child_cost(args, env) for _ in range(repeats)]
    return {
        "cpu_ms": round(statistics.median(c for c, _ in costs) * 1000, 1),
        "wall_ms": round(statistics.median(w for _, w in costs) * 1000, 1),
    }


def measure_startup(plan: Plan, say: Callable[[str], None]) -> dict[str, Any]:
    """What a fresh process costs before its first replay, which the per-replay figures
    (measured inside one warm process) leave out: the baseline's start-up is a Python that
    imports z3 and makes a context; the audit's is ``unmask check`` of one 2-claim replay.

    Where the environment forbids Python to write bytecode (``PYTHONDONTWRITEBYTECODE``),
    every process compiles each module it imports from source, which an installed package
    never does; then ``unmask check`` is measured a second time (``bytecode_cached``) with
    the bytecode written to, and read from, a private folder (``PYTHONPYCACHEPREFIX``)
    after one run that fills it."""
    with tempfile.TemporaryDirectory(prefix="unmask-bench-") as tmp:
        replay = os.path.join(tmp, "replay.json")
        with open(replay, "w", encoding="utf-8") as fh:
            fh.write(replay_line(2, plan.seed, 0))
        from_proto = os.path.join(tmp, "replay-proto.json")
        with open(from_proto, "w", encoding="utf-8") as fh:
            json.dump(proto_replay(2, plan.seed, 0, "factual.proto"), fh)
        with open(os.path.join(tmp, "factual.proto"), "w", encoding="utf-8") as fh:
            fh.write(PROTOCOL_SOURCE)
        commands = {
            "python": [sys.executable, "-c", "pass"],
            "python_z3": [sys.executable, "-c", "import z3; z3.Context()"],
            "unmask_check": [
                sys.executable,
                "-c",
                "from unmask.cli.main import main; main()",
                "check",
                replay,
                "--backend",
                plan.backend,
            ],
            # a hand-written replay: its protocol is a `.proto` file, compiled at start-up
            "unmask_check_proto": [
                sys.executable,
                "-c",
                "from unmask.cli.main import main; main()",
                "check",
                from_proto,
                "--backend",
                plan.backend,
            ],
        }
        out: dict[str, Any] = {"backend": plan.backend}
        for key, args in commands.items():
            out[key] = _median_cost(args, plan.repeats)
        cached = None
        if os.environ.get("PYTHONDONTWRITEBYTECODE"):
            cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            cached["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "bytecode")
            for key in ("unmask_check", "unmask_check_proto"):
                _child_cost(commands[key], cached)  # writes the bytecode
                out[key]["bytecode_cached"] = _median_cost(commands[key], plan.repeats, cached)
    say(
        "start-up of a fresh process (not in the per-replay figures above; CPU ms, median): "
        f"python {out['python']['cpu_ms']:.0f}, python importing z3 (the baseline's) "
        f"{out['python_z3']['cpu_ms']:.0f}, `unmask check` of one 2-claim replay "
        f"({plan.backend}) {out['unmask_check']['cpu_ms']:.0f}, the same replay naming a "
        f"`.proto` file {out['unmask_check_proto']['cpu_ms']:.0f}"
        + (
            "; Python may not write bytecode here, so each of them compiled every module from "
            "source: with the bytecode cached, as an installed package has it, "
            f"{out['unmask_check']['bytecode_cached']['cpu_ms']:.0f} and "
            f"{out['unmask_check_proto']['bytecode_cached']['cpu_ms']:.0f}"
            if cached is not None
            else ""
        )
    )
    return out


def _split_rate(
    items: list[Any], audit: Callable[[list[Any], int, str], None], count: int
) -> float | None:
    """Replays per second of two forked processes each auditing half the input (the
    ``count`` replays of ``items``, the ranges of one JSON Lines file) with ``--jobs 1``'s
    work, results file and summary included, and nothing sent between them: the most two
    processes can give on this machine (None where there is no ``fork``)."""
    if not hasattr(os, "fork"):
        return None
    half = len(items) // 2
    start = time.perf_counter()
    pids = []
    for k, part in enumerate((items[:half], items[half:])):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child's coverage is not collected
            code = 0
            try:
                audit(part, 1, f"half-{k}")
            except BaseException:
                code = 1
            os._exit(code)
        pids.append(pid)
    statuses = [os.waitpid(pid, 0)[1] for pid in pids]  # every child is reaped
    wall = time.perf_counter() - start
    return count / wall if not any(statuses) else None


def measure_jobs(plan: Plan, say: Callable[[str], None]) -> dict[str, Any]:
    """Throughput of ``--jobs 1`` and ``--jobs 2`` auditing one JSON Lines file of
    ``plan.jobs_replays`` replays (``plan.jobs_claims`` claims each) as ``unmask audit
    --out`` does: each reads the file its own way (``run.inputs_for``), writes every
    result line to a file and folds it into the summary; the process's start-up is left
    out (it is the start-up row's). Both results files must be the same, byte for byte.
    Besides, the ceiling two processes give without a pool (``_split_rate``)."""
    from unmask.batch.run import CHUNK_BYTES, RESULTS_BUFFER, Settings, inputs_for, run_audit
    from unmask.batch.summary import Summary

    settings = Settings(plan.backend, plan.timeout_ms)
    rates: dict[int, list[float]] = {1: [], 2: []}
    cpu: dict[int, list[tuple[float, float]]] = {1: [], 2: []}  # (parent, workers) seconds
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    others: dict[int, list[float]] = {1: [], 2: []}  # cores used by other processes meanwhile
    ceiling: list[float] = []  # two forked halves, no pool: what any pool could reach
    with tempfile.TemporaryDirectory(prefix="unmask-bench-") as tmp:
        source = os.path.join(tmp, "replays.jsonl")
        with open(source, "w", encoding="utf-8") as fh:
            for i in range(plan.jobs_replays):
                fh.write(replay_line(plan.jobs_claims, plan.seed, i) + "\n")

        def audit(items: Any, jobs: int, name: str) -> None:
            summary = Summary()
            with open(os.path.join(tmp, name), "wb", buffering=RESULTS_BUFFER) as out:

                def emit(_task: Any, result: Any) -> None:
                    out.write(result.line)

                run_audit(iter(items), settings, emit, jobs, out.flush, summary)

        from unmask.batch.inputs import iter_work

        ranges = list(iter_work([source], settings.limits, CHUNK_BYTES))
        for _ in range(plan.repeats):
            for jobs in (1, 2):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                busy = _machine_busy()
                own, start = time.process_time(), time.perf_counter()
                audit(inputs_for([source], settings.limits, jobs), jobs, f"results-{jobs}")
                wall = time.perf_counter() - start
                rates[jobs].append(plan.jobs_replays / wall)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                workers = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
                mine = time.process_time() - own
                cpu[jobs].append((mine, workers))
                done = _machine_busy()
                if busy is not None and done is not None:
                    others[jobs].append(max(0.0, (done - busy - mine - workers) / wall))
            split = _split_rate(ranges, audit, plan.jobs_replays)
            if split is not None:
                ceiling.append(split / rates[1][-1])

        # a figure is only worth its results: every way of auditing wrote the same lines
        def wrote(*names: str) -> bytes:
            out = b""
            for name in names:
                with open(os.path.join(tmp, name), "rb") as fh:
                    out += fh.read()
            return out

        if wrote("results-2") != wrote("results-1"):
            raise RuntimeError("--jobs 2 wrote other results than --jobs 1")
        if ceiling and wrote("half-0", "half-1") != wrote("results-1"):
            raise RuntimeError("the ceiling's two processes wrote other results than --jobs 1")
    med = {j: statistics.median(r) for j, r in rates.items()}
    # what the cores could give if nothing else ran: the busiest process bounds the wall time
    one = statistics.median(p + w for p, w in cpu[1])
    two = statistics.median(max(p, w / 2) for p, w in cpu[2])
    out = {
        "replays": plan.jobs_replays,
        "claims": plan.jobs_claims,
        "backend": plan.backend,
        "cpus": os.cpu_count(),
        "load_average": None if load is None else round(load, 2),
        "jobs1_per_second": [round(x, 1) for x in rates[1]],
        "jobs2_per_second": [round(x, 1) for x in rates[2]],
        "speedup": round(med[2] / med[1], 3),
        "cpu_seconds": {
            "jobs1": [round(p + w, 3) for p, w in cpu[1]],
            "jobs2_parent": [round(p, 3) for p, _ in cpu[2]],
            "jobs2_workers": [round(w, 3) for _, w in cpu[2]],
        },
        "speedup_on_idle_cores": round(one / two, 3) if two > 0 else None,
        "ceiling": round(statistics.median(ceiling), 3) if ceiling else None,
        "other_processes_cores": {
            f"jobs{j}": [round(x, 2) for x in v] for j, v in others.items() if v
        },
    }
    say(
        f"--jobs 1 vs --jobs 2 auditing a file of {plan.jobs_replays} {plan.jobs_claims}-claim "
        f"replays ({plan.backend}, "
        f"{os.cpu_count()} cpus, load average {out['load_average']}): {med[1]:.0f}/s vs "
        f"{med[2]:.0f}/s, speedup {out['speedup']:.2f}x (repeats: {out['jobs1_per_second']} vs "
        f"{out['jobs2_per_second']}); by CPU time {out['speedup_on_idle_cores']}x "
        f"(parent {out['cpu_seconds']['jobs2_parent']} s, workers "
        f"{out['cpu_seconds']['jobs2_workers']} s, vs {out['cpu_seconds']['jobs1']} s)"
        + (
            f"; ceiling {out['ceiling']}x (two forked processes checking half each, "
            "nothing sent between them)"
            if out["ceiling"] is not None
            else ""
        )
        + (
            f"; other processes kept {out['other_processes_cores']} cores busy meanwhile"
            if out["other_processes_cores"]
            else ""
        )
    )
    return out


def _machine_busy() -> float | None:
    """CPU seconds all processes have spent busy since boot (Linux), else None."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(x) for x in fields[1:]]
    # user nice system idle iowait irq softirq steal ...: busy is all but idle and iowait
    busy = sum(ticks[:8]) - ticks[3] - ticks[4]
    return busy / os.sysconf("SC_CLK_TCK")


# run in the measured child: its own high-water mark, written at exit. /proc's VmHWM
# belongs to the image after exec; getrusage's ru_maxrss would also count the pages of the
# (large) benchmark process the child was forked from
_CHILD = """
import atexit, resource, sys

_report = sys.argv.pop(1)

def _peak():
    kib = None
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    kib = int(line.split()[1])
    except OSError:
        pass
    if kib is None:
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if sys.platform == "darwin":
            kib //= 1024
    with open(_report, "w") as fh:
        fh.write(str(kib))

atexit.register(_peak)
from unmask.cli.main import main
main()
"""


def _peak_rss_kib(args: Sequence[str], report: str) -> tuple[int, float]:
    """Peak resident set (KiB) and wall seconds of one ``unmask`` child process."""
    start = time.perf_counter()
    code = subprocess.call(
        [sys.executable, "-c", _CHILD, report, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if code not in (0, 1, 3):
        raise RuntimeError(f"the measured audit failed with exit status {code}")
    with open(report, encoding="utf-8") as fh:
        return int(fh.read()), time.perf_counter() - start


def measure_memory(plan: Plan, say: Callable[[str], None]) -> dict[str, Any]:
    """Peak memory of ``unmask audit`` over few and many small replays from one file."""
    distinct = [replay_line(2, plan.seed, i) for i in range(min(1000, plan.memory_small))]
    out: dict[str, Any] = {"backend": plan.backend}
    with tempfile.TemporaryDirectory(prefix="unmask-bench-") as tmp:
        for key, count in (("small", plan.memory_small), ("large", plan.memory_large)):
            path = os.path.join(tmp, f"{key}.jsonl")
            with open(path, "w", encoding="utf-8") as fh:
                for i in range(count):
                    fh.write(distinct[i % len(distinct)])
                    fh.write("\n")
            args = [
                "audit",
                path,
                "--out",
                os.devnull,
                "--quiet",
                "--no-progress",
                "--backend",
                plan.backend,
            ]
            rss, wall = _peak_rss_kib(args, os.path.join(tmp, f"{key}.rss"))
            out[key] = {"replays": count, "peak_rss_kib": rss, "seconds": round(wall, 2)}
            os.unlink(path)
    out["ratio"] = round(out["large"]["peak_rss_kib"] / out["small"]["peak_rss_kib"], 3)
    say(
        f"peak memory of `unmask audit` ({plan.backend}): {out['small']['replays']} replays "
        f"{out['small']['peak_rss_kib'] / 1024:.1f} MiB, {out['large']['replays']} replays "
        f"{out['large']['peak_rss_kib'] / 1024:.1f} MiB, ratio {out['ratio']:.2f}"
    )
    return out


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
    startup = measure_startup(plan, say) if plan.startup else {}
    if startup:
        startup["per_process"] = _per_process(plan, cells, startup, say)
    jobs = measure_jobs(plan, say) if plan.jobs_replays else {}
    memory = measure_memory(plan, say) if plan.memory_small and plan.memory_large else {}
    return {
        "schema": "unmask.bench/2",
        "seed": plan.seed,
        "workload": plan.workload,
        "repeats": plan.repeats,
        "cells": [c.to_json() for c in cells],
        "growth": growth,
        "floor": floor,
        "startup": startup,
        "jobs": jobs,
        "memory": memory,
    }


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
