"""Confirmed and provisional findings: VIOLATED replays counted by what they rest on.

Contract: a result record's ``confirmed`` (``unmask.checking.record``) gives, per dimension
(verdict,
procedure, coverage, grounding), None where nothing is VIOLATED, True where some VIOLATED
check rests only on reviewed annotations (a *confirmed* finding) and False where every one
rests on an unreviewed or gold-derived annotation (*provisional*). ``Findings`` counts
VIOLATED replays, dimensions and gold cells by standing; counts are plain sums, so ``merge``
does not depend on order. It also counts each VIOLATED replay's pattern of findings (the
record's ``findings``: per finding, the readers it rests on), a calibration-free fold, so
that ``to_json(trust)`` with a calibration (``unmask.review.calibration.Trust``) splits the
provisional ones into *trusted* and *to review* wherever the fold ran (a pool worker, a
Dask partition, a resumed line). ``to_json`` is the summary's ``findings``; ``cell_tail``
and ``lines`` are the text summary's words for it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

WORDS = ("confirmed", "provisional")
LEVELS = ("confirmed", "trusted", "to_review")  # with a calibration
# the gold cells that hold VIOLATED replays, as the summary names them
CELLS = ("right_for_wrong_reasons", "wrong_and_violated")
_RANK = {level: i for i, level in enumerate(LEVELS)}


class Findings:
    """VIOLATED replays by standing: over the run, per dimension and per gold cell."""

    def __init__(self, dimensions: tuple[str, ...]) -> None:
        self.dimensions = dimensions
        self.counts: Counter = Counter()  # `KEY:confirmed` / `KEY:provisional`
        self.patterns: Counter = Counter()  # (cell, the record's `findings`) -> replays

    def add(self, confirmed: tuple[bool | None, ...], cell: str, findings: tuple = ()) -> None:
        """One VIOLATED replay: a confirmed finding where any of its dimensions is."""
        word = WORDS[0] if any(c is True for c in confirmed) else WORDS[1]
        self.counts[f"replays:{word}"] += 1
        self.counts[f"{cell}:{word}"] += 1
        for d, c in zip(self.dimensions, confirmed, strict=True):
            if c is not None:
                self.counts[f"{d}:{WORDS[0] if c else WORDS[1]}"] += 1
        self.patterns[(cell, findings)] += 1

    def merge(self, other: Findings) -> None:
        self.counts.update(other.counts)
        self.patterns.update(other.patterns)

    def levels(self, trust: Any) -> Counter:
        """``KEY:LEVEL`` counts under a calibration: a replay's level is its best finding's
        (some confirmed finding makes it confirmed, as without a calibration), and so is a
        dimension's."""
        out: Counter = Counter()
        for (cell, findings), n in self.patterns.items():
            best: dict[str, str] = {}
            for dimension, readers in findings:
                level = trust.standing(readers).level
                if dimension not in best or _RANK[level] < _RANK[best[dimension]]:
                    best[dimension] = level
            overall = min(best.values(), key=_RANK.__getitem__, default="to_review")
            out[f"replays:{overall}"] += n
            out[f"{cell}:{overall}"] += n
            for dimension, level in best.items():
                out[f"{dimension}:{level}"] += n
        return out

    def to_json(self, trust: Any = None) -> dict[str, dict[str, int]]:
        keys = ("replays", *self.dimensions, *CELLS)
        out = {k: {w: self.counts[f"{k}:{w}"] for w in WORDS} for k in keys}
        if trust is not None:
            levels = self.levels(trust)
            for k in keys:
                out[k].update({w: levels[f"{k}:{w}"] for w in LEVELS[1:]})
        return out


def cell_tail(found: dict[str, Any], key: str) -> str:
    """``  (1 confirmed, 2 provisional)`` after a gold cell that holds findings."""
    c = found.get(key)
    if not c:
        return ""
    if "trusted" in c:
        return f"  ({c['confirmed']} confirmed, {c['trusted']} trusted, {c['to_review']} to review)"
    return f"  ({c['confirmed']} confirmed, {c['provisional']} provisional)"


def replays_line(found: dict[str, Any], trust: Any = None) -> str:
    r = found["replays"]
    if trust is not None and "trusted" in r:
        return (
            f"violated replays: {r['confirmed']} confirmed (resting only on reviewed "
            f"annotations), {r['trusted']} trusted (every unreviewed reading measured, lower "
            f"bound ≥ {trust.threshold:g}), {r['to_review']} to review"
        )
    return (
        f"violated replays: {r['confirmed']} confirmed (resting only on reviewed annotations), "
        f"{r['provisional']} provisional"
    )


def ranked(found: dict[str, Any], dimension: str) -> str:
    """``verdict 1 confirmed + 2 provisional``, for the "fails most often" ranking."""
    c = found[dimension]
    if "trusted" in c:
        return (
            f"{dimension} {c['confirmed']} confirmed + {c['trusted']} trusted + "
            f"{c['to_review']} to review"
        )
    return f"{dimension} {c['confirmed']} confirmed + {c['provisional']} provisional"
