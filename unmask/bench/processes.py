"""The figures ``unmask bench`` takes from child processes: start-up and peak memory.

Contract: every child is ``python -I`` (``child_python``): neither the current folder (a
folder there named ``unmask`` would be imported instead of the package) nor ``PYTHON*``
variables decide what it imports; how it treats bytecode is given by explicit flags
instead (``-B``, ``-X pycache_prefix=``). ``run_child`` runs one child and returns its CPU
and wall seconds only if it exited with the status expected of it and wrote the standard
output expected of it (``Expect``: for ``unmask check``, the very report the same replay
gives in this process); otherwise it raises ``BenchError`` with one sentence naming the
child, what it did and the first line of its standard error, so no figure is ever made
from a child that failed. ``measure_startup`` and ``measure_memory`` return the figures
as data and print them through ``say``.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from unmask.bench.workload import PROTOCOL_SOURCE, proto_replay, replay_line
from unmask.plumbing.frozen import frozen

# what every `unmask` child runs: the installed package's entry point
MAIN = "from unmask.cli.main import main; main()"


class BenchError(Exception):
    """A measurement that cannot be trusted: its figures are not printed."""


@frozen
class Expect:
    """What a child must do: exit with ``status`` and, unless None, print ``stdout``."""

    status: int
    stdout: str | None = ""


def mirrored_bytecode() -> list[str]:
    """Flags that give an isolated child this process's bytecode settings (``-I`` drops
    ``PYTHONDONTWRITEBYTECODE`` and ``PYTHONPYCACHEPREFIX``, which this process may have
    been started with)."""
    flags = []
    if sys.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE"):
        flags.append("-B")
    prefix = sys.pycache_prefix or os.environ.get("PYTHONPYCACHEPREFIX")
    if prefix:
        flags += ["-X", f"pycache_prefix={prefix}"]
    return flags


def child_python(bytecode: Sequence[str]) -> list[str]:
    """The interpreter line of a child: isolated, with the bytecode flags given."""
    return [sys.executable, "-I", *bytecode]


def _describe(args: Sequence[str]) -> str:
    """A child's command line as a reader would type it: ``unmask check replay.json ...``
    for the entry point, ``python -c ...`` for a script; interpreter flags and folders
    left out."""
    if "-c" not in args:
        return " ".join(os.path.basename(a) for a in args)
    at = list(args).index("-c")
    script, rest = args[at + 1], args[at + 2 :]
    if script == _CHILD:  # its first argument is where it writes its peak memory
        script, rest = MAIN, rest[1:]
    head = "unmask" if script == MAIN else "python -c ..."
    return " ".join([head, *(os.path.basename(a) for a in rest)])


def run_child(
    args: Sequence[str], expect: Expect, env: dict[str, str] | None = None
) -> tuple[float, float]:
    """CPU and wall seconds of one child process, from its start to its exit, once it
    has exited as ``expect`` says (else ``BenchError``)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    stderr = done.stderr.decode("utf-8", "replace").strip().splitlines()
    said = f" (it said `{stderr[-1][:200]}`)" if stderr else ""
    if done.returncode != expect.status:
        raise BenchError(
            f"the measured child `{_describe(args)}` exited with status {done.returncode}, "
            f"not {expect.status}{said}"
        )
    if expect.stdout is not None and done.stdout.decode("utf-8", "replace") != expect.stdout:
        raise BenchError(
            f"the measured child `{_describe(args)}` exited with status {done.returncode} "
            f"but did not print the report expected of it{said}"
        )
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), wall


def _median_cost(
    args: Sequence[str], expect: Expect, repeats: int, env: Callable[[], dict[str, str]]
) -> dict[str, float]:
    costs = [run_child(args, expect, env()) for _ in range(repeats)]
    return {
        "cpu_ms": round(statistics.median(c for c, _ in costs) * 1000, 1),
        "wall_ms": round(statistics.median(w for _, w in costs) * 1000, 1),
    }


def expected_check(path: str, backend: str) -> Expect:
    """What ``unmask check PATH --backend B`` must do: the status and text report this
    process gives for the same replay."""
    from unmask.backends import create
    from unmask.checking.outcomes import check_replay
    from unmask.render import render
    from unmask.replay.load import load_replay

    replay = load_replay(Path(path))
    report = check_replay(replay, create(backend), backend_name=backend)
    text = render("text", report, replay)
    return Expect(report.exit_code, text if text.endswith("\n") else text + "\n")


def _package_dir() -> str:
    """The folder of the ``unmask`` package this process runs (``unmask/bench/..``)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure_startup(plan: Any, say: Callable[[str], None]) -> dict[str, Any]:
    """What a fresh process costs before its first replay, which the per-replay figures
    (measured inside one warm process) leave out: the baseline's start-up is a Python that
    imports z3 and makes a context; the audit's is ``unmask check`` of one 2-claim replay,
    with its protocol embedded and as a ``.proto`` path.

    Every figure is taken with the bytecode cached, as an installed package has it (a
    private ``pycache_prefix`` that one run of each command fills first) and a warm
    compile cache (a private ``UNMASK_CACHE_DIR``, filled by the same run);
    ``unmask check`` is also measured compiling unmask's own modules from source and
    reading every other module's bytecode (``from_source``: ``-B``, and a prefix holding
    all the bytecode but unmask's), as an editable checkout where Python may not write
    bytecode runs it; and the ``.proto`` replay with an empty compile cache
    each time (``cold_cache``, and what it adds, ``cold_cache_extra_ms``)."""
    with tempfile.TemporaryDirectory(prefix="unmask-bench-") as tmp:
        replay = os.path.join(tmp, "replay.json")
        with open(replay, "w", encoding="utf-8") as fh:
            fh.write(replay_line(2, plan.seed, 0))
        from_proto = os.path.join(tmp, "replay-proto.json")
        with open(from_proto, "w", encoding="utf-8") as fh:
            json.dump(proto_replay(2, plan.seed, 0, "factual.proto"), fh)
        with open(os.path.join(tmp, "factual.proto"), "w", encoding="utf-8") as fh:
            fh.write(PROTOCOL_SOURCE)
        cached_dir, source_dir = os.path.join(tmp, "bytecode"), os.path.join(tmp, "source")
        cached = ["-X", f"pycache_prefix={cached_dir}"]
        # `unmask` compiled from source, every other module cached: -B, and a prefix that
        # holds all the bytecode but unmask's
        source = ["-B", "-X", f"pycache_prefix={source_dir}"]
        warm = {**os.environ, "UNMASK_CACHE_DIR": os.path.join(tmp, "cache")}
        colds = iter(range(1 << 30))

        def cold() -> dict[str, str]:  # a new, empty compile cache for every run
            return {**os.environ, "UNMASK_CACHE_DIR": os.path.join(tmp, f"cold-{next(colds)}")}

        commands: dict[str, tuple[list[str], Expect]] = {
            "python": (["-c", "pass"], Expect(0)),
            "python_z3": (["-c", "import z3; z3.Context()"], Expect(0)),
            "unmask_check": (
                ["-c", MAIN, "check", replay, "--backend", plan.backend],
                expected_check(replay, plan.backend),
            ),
            # a hand-written replay: its protocol is a `.proto` file, compiled at start-up
            "unmask_check_proto": (
                ["-c", MAIN, "check", from_proto, "--backend", plan.backend],
                expected_check(from_proto, plan.backend),
            ),
        }
        for args, expect in commands.values():
            run_child(child_python(cached) + args, expect, warm)  # fills both caches
        shutil.copytree(cached_dir, source_dir)
        shutil.rmtree(os.path.join(source_dir, _package_dir().lstrip(os.sep)), ignore_errors=True)
        out: dict[str, Any] = {"backend": plan.backend}
        for key, (args, expect) in commands.items():
            out[key] = _median_cost(child_python(cached) + args, expect, plan.repeats, warm.copy)
            if key.startswith("unmask"):
                out[key]["from_source"] = _median_cost(
                    child_python(source) + args, expect, plan.repeats, warm.copy
                )
        args, expect = commands["unmask_check_proto"]
        proto = out["unmask_check_proto"]
        proto["cold_cache"] = _median_cost(child_python(cached) + args, expect, plan.repeats, cold)
        proto["cold_cache_extra_ms"] = round(proto["cold_cache"]["cpu_ms"] - proto["cpu_ms"], 1)
    say(
        "start-up of a fresh process (not in the per-replay figures above; CPU ms, median, "
        f"bytecode cached): python {out['python']['cpu_ms']:.0f}, python importing z3 (the "
        f"baseline's) {out['python_z3']['cpu_ms']:.0f}, `unmask check` of one 2-claim replay "
        f"({plan.backend}) {out['unmask_check']['cpu_ms']:.0f}, the same replay naming a "
        f"`.proto` file {proto['cpu_ms']:.0f} (compile cache warm; cold "
        f"{proto['cold_cache']['cpu_ms']:.0f}, +{proto['cold_cache_extra_ms']:.0f}); "
        "compiling unmask's modules from source, "
        f"{out['unmask_check']['from_source']['cpu_ms']:.0f} and "
        f"{proto['from_source']['cpu_ms']:.0f}"
    )
    return out


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


def _peak_rss_kib(args: Sequence[str], report: str, summary: str, count: int) -> tuple[int, float]:
    """Peak resident set (KiB) and wall seconds of one ``unmask audit`` child process,
    which must exit 0 having audited ``count`` replays (its summary says so)."""
    start = time.perf_counter()
    command = [*child_python(mirrored_bytecode()), "-c", _CHILD, report, *args]
    run_child([*command, "--summary-json", summary], Expect(0, None))
    wall = time.perf_counter() - start
    try:
        with open(summary, encoding="utf-8") as fh:
            audited = json.load(fh).get("replays")
        with open(report, encoding="utf-8") as fh:
            kib = int(fh.read())
    except (OSError, ValueError, AttributeError):
        audited, kib = None, 0
    if audited != count or kib <= 0:
        raise BenchError(
            f"the measured `unmask audit` of {count} replays exited with status 0 but "
            f"reported {audited} replays audited and a peak of {kib} KiB"
        )
    return kib, wall


def measure_memory(plan: Any, say: Callable[[str], None]) -> dict[str, Any]:
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
            summary = os.path.join(tmp, f"{key}.summary.json")
            rss, wall = _peak_rss_kib(args, os.path.join(tmp, f"{key}.rss"), summary, count)
            out[key] = {"replays": count, "peak_rss_kib": rss, "seconds": round(wall, 2)}
            os.unlink(path)
    out["ratio"] = round(out["large"]["peak_rss_kib"] / out["small"]["peak_rss_kib"], 3)
    say(
        f"peak memory of `unmask audit` ({plan.backend}): {out['small']['replays']} replays "
        f"{out['small']['peak_rss_kib'] / 1024:.1f} MiB, {out['large']['replays']} replays "
        f"{out['large']['peak_rss_kib'] / 1024:.1f} MiB, ratio {out['ratio']:.2f}"
    )
    return out
