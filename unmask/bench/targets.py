"""The targets ``unmask bench`` reads its own figures against, each PASS or MISS.

Contract: ``evaluate(figures, backend)`` takes the figures of one run (the data
``measure.run`` returns, before its ``targets`` key) and returns one ``Target`` per target
of ``TARGETS`` that the run measured, in that order, each with the figure it read, the
bound, PASS or MISS and the margin; a target whose figure the run did not measure is
``NOT MEASURED``, never PASS. Every ratio is between figures of the same run. It reads
nothing but ``figures``, so it is tested with made-up ones. ``say_targets`` prints them,
marked as quick for a scaled-down run (``--quick``: sizes, replays and repeats too few to
hold anyone to). The targets themselves are explained in ``docs/performance.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from unmask.plumbing.frozen import frozen

# the bounds (docs/performance.md, "Targets")
GROWTH_OVER_FLOOR = 1.1  # growth 200 -> 2000 claims, over the floor's growth
JOBS_OF_CEILING = 0.9  # --jobs 2 throughput, over two forked halves with no pool
FLOOR_RATIO = 1.5  # the default backend over the floor, at every size
LABELLED_FLOOR_RATIO = 3.0  # the same on the three-label protocol at 20 parts
PROTO_FROM_SOURCE_MS = 150.0  # `unmask check`, `.proto` path, warm compile cache
PROTO_CACHED_MS = 110.0  # the same with the bytecode cached
COLD_CACHE_EXTRA_MS = 150.0  # what an empty compile cache adds: half of about 300 ms
GROWTH_SIZES = (200, 2000)


@frozen
class Target:
    """One target: ``measured`` against ``bound`` (``at_most``: ≤, else ≥)."""

    name: str
    measured: float | None
    bound: float
    at_most: bool
    unit: str = "x"  # "x" (a ratio) or " ms"
    note: str = ""

    @property
    def status(self) -> str:
        if self.measured is None:
            return "NOT MEASURED"
        ok = self.measured <= self.bound if self.at_most else self.measured >= self.bound
        return "PASS" if ok else "MISS"

    @property
    def margin(self) -> float | None:
        """How far inside the bound the figure is (negative: how far outside), as a share
        of the bound."""
        if self.measured is None:
            return None
        room = self.bound - self.measured if self.at_most else self.measured - self.bound
        return room / self.bound

    def line(self) -> str:
        sign = "≤" if self.at_most else "≥"
        if self.measured is None:
            text = f"{self.status:<4} {self.name}: not measured in this run (target {sign} "
            return text + f"{self.bound:g}{self.unit})"
        margin = self.margin or 0.0
        side = f"{margin:.0%} to spare" if margin >= 0 else f"{-margin:.0%} short"
        if self.at_most and margin < 0:
            side = f"{-margin:.0%} over"
        return (
            f"{self.status:<4} {self.name}: {self.measured:g}{self.unit}, target {sign} "
            f"{self.bound:g}{self.unit} ({side})" + (f"; {self.note}" if self.note else "")
        )

    def to_json(self) -> dict[str, Any]:
        margin = self.margin
        return {
            "target": self.name,
            "measured": self.measured,
            "bound": self.bound,
            "at_most": self.at_most,
            "unit": self.unit.strip(),
            "status": self.status,
            "margin": None if margin is None else round(margin, 4),
            "note": self.note or None,
        }


def _get(figures: dict[str, Any], *keys: str) -> Any:
    value: Any = figures
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _growth(figures: dict[str, Any], backend: str) -> Target:
    mine = _get(figures, "growth", backend) or {}
    floor = _get(figures, "growth", "floor") or {}
    wanted = f"{GROWTH_SIZES[1]}/{GROWTH_SIZES[0]}"
    both = [k for k in mine if floor.get(k)]
    key = wanted if wanted in both else (both[-1] if both else None)
    name = f"growth {GROWTH_SIZES[0]} → {GROWTH_SIZES[1]} claims over the floor's growth"
    if key is None:
        return Target(name, None, GROWTH_OVER_FLOOR, True)
    note = ""
    if key != wanted:
        small, large = key.split("/")[1], key.split("/")[0]
        name = f"growth {small} → {large} claims over the floor's growth"
        note = f"the target is {GROWTH_SIZES[0]} → {GROWTH_SIZES[1]}, not measured here"
    note = (note + "; " if note else "") + f"{backend} {mine[key]}x, floor {floor[key]}x"
    return Target(name, round(mine[key] / floor[key], 3), GROWTH_OVER_FLOOR, True, note=note)


def evaluate(figures: dict[str, Any], backend: str) -> list[Target]:
    """Every target, read from the figures of one run (see the module's contract)."""
    out = [_growth(figures, backend)]
    ceiling = _get(figures, "jobs", "of_ceiling")
    out.append(Target("--jobs 2 over the ceiling", ceiling, JOBS_OF_CEILING, False))
    ratios = _get(figures, "floor", "ratio") or {}
    if not ratios:
        out.append(Target("over the floor", None, FLOOR_RATIO, True))
    for size, ratio in ratios.items():
        out.append(Target(f"over the floor at {size} claims", ratio, FLOOR_RATIO, True))
    parts = _get(figures, "labelled", "parts") or 20
    out.append(
        Target(
            f"three-label protocol at {parts} parts over the floor",
            _get(figures, "labelled", "ratio"),
            LABELLED_FLOOR_RATIO,
            True,
        )
    )
    proto = ("startup", "unmask_check_proto")
    out.append(
        Target(
            "`unmask check`, `.proto` path, warm cache, from source",
            _get(figures, *proto, "from_source", "cpu_ms"),
            PROTO_FROM_SOURCE_MS,
            True,
            " ms",
        )
    )
    out.append(
        Target(
            "`unmask check`, `.proto` path, warm cache, bytecode cached",
            _get(figures, *proto, "cpu_ms"),
            PROTO_CACHED_MS,
            True,
            " ms",
        )
    )
    out.append(
        Target(
            "what a cold compile cache adds to it",
            _get(figures, *proto, "cold_cache_extra_ms"),
            COLD_CACHE_EXTRA_MS,
            True,
            " ms",
        )
    )
    return out


def say_targets(targets: list[Target], quick: bool, say: Callable[[str], None]) -> None:
    """One line per target, after a heading that says whether the run was quick."""
    counts = {s: sum(t.status == s for t in targets) for s in ("PASS", "MISS", "NOT MEASURED")}
    head = "targets, from the figures of this run"
    if quick:
        head += " (quick: a scaled-down run, too small to hold the code to)"
    say(f"{head}: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    for t in targets:
        say(("  quick " if quick else "  ") + t.line())
