"""The ``--jobs`` figure of ``unmask bench``: one JSON Lines file audited by ``--jobs 1``,
``--jobs 2`` and the ceiling (two forked processes, each auditing half the file with
``--jobs 1``'s work and nothing sent between them).

Contract: ``measure_jobs(plan, say)`` returns the figures (throughput of each way, their
CPU time, the machine's other load, the ceiling's throughput, and ``--jobs 2`` over the
ceiling) and prints them through ``say``. Every way must write the same results file,
byte for byte, and every forked half must exit 0, or it raises ``BenchError``: a figure is
only worth its results.
"""

from __future__ import annotations

import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from unmask.bench.processes import BenchError
from unmask.bench.workload import replay_line


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
    if any(statuses):
        raise BenchError("a forked half of the --jobs ceiling failed: it has no figure")
    return count / wall


def measure_jobs(plan: Any, say: Callable[[str], None]) -> dict[str, Any]:
    """Throughput of ``--jobs 1`` and ``--jobs 2`` auditing one JSON Lines file of
    ``plan.jobs_replays`` replays (``plan.jobs_claims`` claims each) as ``unmask audit
    --out`` does: each reads the file its own way (``run.inputs_for``), writes every
    result line to a file and folds it into the summary; the process's start-up is left
    out (it is the start-up row's). Both results files must be the same, byte for byte.
    Besides, the ceiling two processes give without a pool (``_split_rate``)."""
    from unmask.batch.run import inputs_for, run_audit
    from unmask.batch.summary import Summary
    from unmask.batch.task import Settings
    from unmask.batch.tuning import CHUNK_BYTES, RESULTS_BUFFER

    settings = Settings(plan.backend, plan.timeout_ms)
    rates: dict[int, list[float]] = {1: [], 2: []}
    cpu: dict[int, list[tuple[float, float]]] = {1: [], 2: []}  # (parent, workers) seconds
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    others: dict[int, list[float]] = {1: [], 2: []}  # cores used by other processes meanwhile
    ceiling: list[float] = []  # two forked halves, no pool: what any pool could reach
    ceiling_rates: list[float] = []
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

        from unmask.replay.inputs import iter_work

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
                ceiling_rates.append(split)

        # a figure is only worth its results: every way of auditing wrote the same lines
        def wrote(*names: str) -> bytes:
            out = b""
            for name in names:
                with open(os.path.join(tmp, name), "rb") as fh:
                    out += fh.read()
            return out

        if wrote("results-2") != wrote("results-1"):
            raise BenchError("--jobs 2 wrote other results than --jobs 1")
        if ceiling and wrote("half-0", "half-1") != wrote("results-1"):
            raise BenchError("the ceiling's two processes wrote other results than --jobs 1")
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
        "ceiling_per_second": [round(x, 1) for x in ceiling_rates],
        # --jobs 2 against the ceiling, both by median throughput in this run
        "of_ceiling": (
            round(med[2] / statistics.median(ceiling_rates), 3) if ceiling_rates else None
        ),
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
