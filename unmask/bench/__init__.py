"""`unmask bench`: throughput of the whole audit against a naive baseline, side by side.

The package has one module per job: ``workload`` generates the replays, ``baseline`` is
the fresh-solver-per-query implementation every backend is compared with, ``floor`` the
least any audit can do, ``measure`` times them in process and runs the whole plan,
``processes`` the figures taken from child processes (start-up, peak memory), ``jobs`` the
``--jobs`` figure, and ``targets`` reads every figure against its target, PASS or MISS.
The targets are explained in ``docs/performance.md``.
"""

from __future__ import annotations

from unmask.bench.baseline import Baseline
from unmask.bench.measure import Cell, Plan, run, to_markdown
from unmask.bench.workload import factual_protocol, factual_replay, replay_line

__all__ = [
    "Baseline",
    "Cell",
    "Plan",
    "factual_protocol",
    "factual_replay",
    "replay_line",
    "run",
    "to_markdown",
]
