"""`unmask bench`: throughput of the whole audit against a naive baseline, side by side.

Contract:
- ``factual_replay(n, seed, i)`` is a deterministic factual-claims replay with ``n`` claims
  (ground protocol IR embedded; about 20% of the atoms UNKNOWN, half of those annotated
  UNKNOWN and half left unannotated); same arguments, same replay;
- the BASELINE lives here, not among the backends: it loads and validates a replay like
  the audit does and then classifies every check of SPEC section 4 with a fresh z3
  ``Solver`` per satisfiability query, the base re-added each time, as a straightforward
  implementation would; it computes statuses only (no witnesses, no explanations), so it
  does less work than a real audit and the ratios are conservative;
- ``run`` measures, in one process and on the same replays, per-replay time, replays per
  second and solver calls per replay for every backend and the baseline, the ratio to the
  baseline, ``--jobs 1`` against ``--jobs 2`` throughput and the peak memory (resident set
  of a child process) of auditing many small replays against few from one JSON Lines file;
  every figure is printed and also returned as data; ``quick`` scales everything down.
"""

from __future__ import annotations

import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

PROTOCOL_TEXT = (
    "Identify every factual claim. Check each one against only the supplied context. "
    "Do not use outside knowledge. PASS if and only if every claim is supported."
)
UNKNOWN_SHARE = 0.2


def _atom(name: str) -> dict[str, str]:
    return {"atom": name}


def factual_protocol(claims: list[str]) -> dict[str, Any]:
    """The ground factual-claims protocol IR for these claim names."""
    atoms: list[dict[str, str]] = []
    for c in claims:
        atoms.append(
            {
                "name": f"supported({c})",
                "role": "judge",
                "description": f"The judge asserts the context supports claim {c}",
            }
        )
    for c in claims:
        atoms.append(
            {
                "name": f"backed({c})",
                "role": "context",
                "description": f"The context supports claim {c}",
            }
        )
    atoms.append(
        {"name": "external", "role": "procedure", "description": "The judge used outside knowledge"}
    )
    return {
        "schema": "unmask.protocol/1",
        "name": "factual_claims",
        "text": PROTOCOL_TEXT,
        "atoms": atoms,
        "constraints": [],
        "decision": {"op": "and", "args": [_atom(f"supported({c})") for c in claims]},
        "requirements": [
            {
                "id": "context_only",
                "description": "Use only supplied context",
                "expr": {"op": "not", "args": [_atom("external")]},
                "addressed": {"const": True},
            }
        ],
        "grounding": [{"judge": f"supported({c})", "context": f"backed({c})"} for c in claims],
    }


class _Text:
    """Builds a source text and hands out exact spans of the sentences added to it."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0

    def add(self, sentence: str) -> tuple[int, int, str]:
        if self.parts:
            self.parts.append(" ")
            self.length += 1
        start = self.length
        self.parts.append(sentence)
        self.length += len(sentence)
        return start, self.length, sentence

    def text(self) -> str:
        return "".join(self.parts)


def _value(rng: random.Random, p_true: float) -> str:
    if rng.random() < UNKNOWN_SHARE:
        return "UNKNOWN"
    return "TRUE" if rng.random() < p_true else "FALSE"


def factual_replay(n: int, seed: int = 0, index: int = 0) -> dict[str, Any]:
    """A deterministic factual-claims replay with ``n`` claims (see the module contract)."""
    rng = random.Random(f"unmask-bench:{seed}:{n}:{index}")
    claims = [f"c{i}" for i in range(n)]
    rationale, context, response = _Text(), _Text(), _Text()
    annotations: list[dict[str, Any]] = []

    def annotate(atom: str, value: str, source: str, span: tuple[int, int, str]) -> None:
        if value == "UNKNOWN":
            if rng.random() < 0.5:
                return  # left unannotated: UNKNOWN as well
            annotations.append({"atom": atom, "value": "UNKNOWN"})
            return
        start, end, quote = span
        annotations.append(
            {
                "atom": atom,
                "value": value,
                "evidence": [{"source": source, "start": start, "end": end, "quote": quote}],
                "explanation": "generated for the benchmark",
            }
        )

    judged: dict[str, str] = {}
    for c in claims:
        response.add(f"Claim {c} is stated here.")
        value = _value(rng, 0.9)
        judged[c] = value
        said = "supports" if value != "FALSE" else "does not support"
        annotate(f"supported({c})", value, "rationale", rationale.add(f"The context {said} {c}."))
    for c in claims:
        value = _value(rng, 0.85)
        said = "states" if value != "FALSE" else "is silent on"
        annotate(f"backed({c})", value, "context", context.add(f"The record {said} {c}."))
    ext = _value(rng, 0.1)
    annotate("external", ext, "rationale", rationale.add("I relied only on the context."))
    rest = "PASS" if all(v != "FALSE" for v in judged.values()) else "FAIL"
    verdict = rest if rng.random() < 0.9 else ("FAIL" if rest == "PASS" else "PASS")
    gold = rng.choice(["PASS", "FAIL", rest, rest, None])
    return {
        "schema": "unmask.replay/1",
        "id": f"bench-{n}-{seed}-{index}",
        "protocol": factual_protocol(claims),
        "sources": {
            "protocol": PROTOCOL_TEXT,
            "response": response.text(),
            "context": context.text(),
            "rationale": rationale.text(),
        },
        "verdict": verdict,
        "gold": gold,
        "annotations": annotations,
    }


def replay_line(n: int, seed: int = 0, index: int = 0) -> str:
    """One replay as a JSON Lines record (no newline)."""
    return json.dumps(factual_replay(n, seed, index), ensure_ascii=False, separators=(",", ":"))


# --- the baseline ---------------------------------------------------------------------------


class Baseline:
    """SPEC section 4 done the straightforward way: a fresh z3 ``Solver`` per query.

    Each base is lowered once per replay and re-added to a new solver for every query;
    base consistency is decided once per base, then two queries per check. Statuses only.
    """

    name = "baseline"

    def __init__(self) -> None:
        import z3

        self.z3 = z3
        self.calls = 0

    def _sat(self, terms: list[Any], extra: Any | None) -> bool:
        z3 = self.z3
        solver = z3.Solver(ctx=self.ctx)
        for t in terms:
            solver.add(t)
        if extra is not None:
            solver.add(extra)
        self.calls += 1
        answer = solver.check()
        if answer == z3.unknown:
            raise RuntimeError("the baseline's solver gave up")
        return answer == z3.sat

    def check(self, replay: Any) -> dict[str, Any]:
        """Statuses of every check of ``replay`` (a validated ``Replay``)."""
        from unmask.backends.z3_backend import lower
        from unmask.checker import Case, base_parts, verdict_query
        from unmask.ir import mk_atom, mk_iff, mk_not

        z3 = self.z3
        self.ctx = z3.Context()
        names: dict[str, Any] = {}

        def var(name: str) -> Any:
            if name not in names:
                names[name] = z3.Bool(name, self.ctx)
            return names[name]

        def term(e: Any) -> Any:
            return lower(e, self.ctx, var)

        case = Case.from_replay(replay)
        if case.translation != "valid":
            return {"overall": "UNKNOWN"}
        bases = {k: [term(p.expr) for p in parts] for k, parts in base_parts(case).items()}
        consistent = {k: self._sat(terms, None) for k, terms in bases.items()}

        def classify(base: str, phi: Any) -> str:
            if not consistent[base]:
                return "INCONSISTENT_BASE"
            f = self._sat(bases[base], term(mk_not(phi)))
            t = self._sat(bases[base], term(phi))
            if not f:
                return "ENTAILED"
            if not t:
                return "REFUTED"
            return "UNDERDETERMINED"

        p = case.protocol
        return {
            "verdict": classify("all", verdict_query(case.verdict)),
            "requirements": [
                (
                    classify("evid", r.expr),
                    None if r.addressed is None else classify("evid", r.addressed),
                )
                for r in p.requirements
            ],
            "grounding": [
                classify("evid", mk_iff(mk_atom(g.judge), mk_atom(g.context))) for g in p.grounding
            ],
        }


# --- measuring ------------------------------------------------------------------------------


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


def _ms(s: float) -> float | None:
    return None if s != s else round(s * 1000, 3)


def _tasks(n: int, count: int, seed: int) -> list[Any]:
    from unmask.batch.inputs import Task

    return [
        Task(f"bench-{n}.jsonl:{i + 1}", "bench.jsonl", i + 1, replay_line(n, seed, i).encode())
        for i in range(count)
    ]


def _time_runner(runner: str, tasks: list[Any], timeout_ms: int) -> tuple[float, float, float]:
    """CPU seconds, wall seconds and solver calls per replay for one pass over ``tasks``."""
    from unmask.batch.records import encode_line
    from unmask.batch.run import Settings, load_task
    from unmask.limits import DEFAULT_LIMITS

    settings = Settings(runner, timeout_ms, DEFAULT_LIMITS)
    if runner == "baseline":
        base = Baseline()
        cpu, wall = time.process_time(), time.perf_counter()
        for t in tasks:
            base.check(load_task(t, DEFAULT_LIMITS))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        return cpu / len(tasks), wall / len(tasks), base.calls / len(tasks)
    from unmask.api import check
    from unmask.backends import create

    counting = _Counting(create(runner, timeout_ms=timeout_ms))
    calls = 0
    cpu, wall = time.process_time(), time.perf_counter()
    for t in tasks:
        # the audit's own path: parse, validate, check, explain, serialise
        report = check(load_task(t, settings.limits), counting)  # type: ignore[arg-type]
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
    jobs_replays: int = 2000
    memory_small: int = 1_000
    memory_large: int = 100_000
    backend: str = "sliced"  # for the jobs and memory figures
    seed: int = 0
    timeout_ms: int = 60_000

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


def measure_cells(plan: Plan, say: Callable[[str], None]) -> list[Cell]:
    from unmask.diagnostics import UnmaskError

    cells: list[Cell] = []
    by_runner: dict[str, dict[int, Cell]] = {r: {} for r in plan.runners}
    for n in plan.sizes:
        count = plan.counts.get(n, 1)
        tasks = _tasks(n, count, plan.seed)
        for runner in plan.runners:
            est = _estimate(by_runner[runner], n)
            use = count
            # the baseline and the default backend always run: the ratios need both
            must = runner in ("baseline", plan.backend)
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


def measure_jobs(plan: Plan, say: Callable[[str], None]) -> dict[str, Any]:
    """Throughput of ``--jobs 1`` and ``--jobs 2`` on the same small replays."""
    from unmask.batch.run import Settings, run_audit

    tasks = _tasks(2, plan.jobs_replays, plan.seed)
    settings = Settings(plan.backend, plan.timeout_ms)
    rates: dict[int, list[float]] = {1: [], 2: []}
    cpu: dict[int, list[tuple[float, float]]] = {1: [], 2: []}  # (parent, workers) seconds
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    others: dict[int, list[float]] = {1: [], 2: []}  # cores used by other processes meanwhile
    for _ in range(plan.repeats):
        for jobs in (1, 2):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            busy = _machine_busy()
            own, start = time.process_time(), time.perf_counter()
            run_audit(iter(tasks), settings, _discard, jobs)
            wall = time.perf_counter() - start
            rates[jobs].append(len(tasks) / wall)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            workers = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
            mine = time.process_time() - own
            cpu[jobs].append((mine, workers))
            done = _machine_busy()
            if busy is not None and done is not None:
                others[jobs].append(max(0.0, (done - busy - mine - workers) / wall))
    med = {j: statistics.median(r) for j, r in rates.items()}
    # what the cores could give if nothing else ran: the busiest process bounds the wall time
    one = statistics.median(p + w for p, w in cpu[1])
    two = statistics.median(max(p, w / 2) for p, w in cpu[2])
    out = {
        "replays": len(tasks),
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
        "other_processes_cores": {
            f"jobs{j}": [round(x, 2) for x in v] for j, v in others.items() if v
        },
    }
    say(
        f"--jobs 1 vs --jobs 2 on {len(tasks)} 2-claim replays ({plan.backend}, "
        f"{os.cpu_count()} cpus, load average {out['load_average']}): {med[1]:.0f}/s vs "
        f"{med[2]:.0f}/s, speedup {out['speedup']:.2f}x (repeats: {out['jobs1_per_second']} vs "
        f"{out['jobs2_per_second']}); by CPU time {out['speedup_on_idle_cores']}x "
        f"(parent {out['cpu_seconds']['jobs2_parent']} s, workers "
        f"{out['cpu_seconds']['jobs2_workers']} s, vs {out['cpu_seconds']['jobs1']} s)"
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


def targets(cells: list[Cell], jobs: dict[str, Any], memory: dict[str, Any], default: str):
    """Each target of the issue: the figure measured and whether it holds."""
    med = {(c.claims, c.runner): c.median for c in cells if c.seconds}
    out: list[dict[str, Any]] = []

    def ratio_target(n: int, need: float) -> None:
        b, r = med.get((n, "baseline")), med.get((n, default))
        value = None if b is None or r is None else b / r
        out.append(
            {
                "target": f"{n} claims: {default} >= {need:g}x the baseline's throughput",
                "value": None if value is None else round(value, 2),
                "holds": None if value is None else value >= need,
            }
        )

    ratio_target(2, 10)
    ratio_target(200, 30)
    ratio_target(2000, 30)
    a, b = med.get((200, default)), med.get((2000, default))
    growth = None if a is None or b is None else b / a
    out.append(
        {
            "target": f"{default}: time per replay at 2000 claims <= 15x that at 200",
            "value": None if growth is None else round(growth, 2),
            "holds": None if growth is None else growth <= 15,
        }
    )
    if jobs:
        out.append(
            {
                "target": "--jobs 2 >= 1.7x --jobs 1 on small replays",
                "value": jobs["speedup"],
                "holds": jobs["speedup"] >= 1.7,
            }
        )
    if memory:
        out.append(
            {
                "target": "peak memory for many small replays <= 1.5x that for few",
                "value": memory["ratio"],
                "holds": memory["ratio"] <= 1.5,
            }
        )
    return out


def run(plan: Plan, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Measure everything in ``plan``, printing as it goes; returns every figure."""
    say(f"unmask bench: seed {plan.seed}, {plan.repeats} repeats, python {sys.version.split()[0]}")
    say(HEADER)
    cells = measure_cells(plan, say)
    growth = {}
    for runner in plan.runners:
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
    jobs = measure_jobs(plan, say) if plan.jobs_replays else {}
    memory = measure_memory(plan, say) if plan.memory_small and plan.memory_large else {}
    result = {
        "schema": "unmask.bench/1",
        "seed": plan.seed,
        "repeats": plan.repeats,
        "cells": [c.to_json() for c in cells],
        "growth": growth,
        "jobs": jobs,
        "memory": memory,
        "targets": targets(cells, jobs, memory, plan.backend),
    }
    say("targets:")
    for t in result["targets"]:
        verdict = {True: "holds", False: "MISSED", None: "not measured"}[t["holds"]]
        say(f"  {t['target']}: {t['value']} -> {verdict}")
    return result


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
    out += ["", "| target | measured | holds |", "|---|---:|---|"]
    for t in figures["targets"]:
        holds = {True: "yes", False: "**no**", None: "not measured"}[t["holds"]]
        out.append(f"| {t['target']} | {t['value']} | {holds} |")
    return "\n".join(out)
