"""Confirmed and provisional findings: VIOLATED replays counted by what they rest on.

Contract: a result record's ``confirmed`` (``unmask.record``) gives, per dimension (verdict,
procedure, coverage, grounding), None where nothing is VIOLATED, True where some VIOLATED
check rests only on reviewed annotations (a *confirmed* finding) and False where every one
rests on an unreviewed or gold-derived annotation (*provisional*). ``Findings`` counts
VIOLATED replays, dimensions and gold cells by standing; counts are plain sums, so ``merge``
does not depend on order. ``to_json`` is the summary's ``findings``; ``cell_tail`` and
``lines`` are the text summary's words for it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

WORDS = ("confirmed", "provisional")
# the gold cells that hold VIOLATED replays, as the summary names them
CELLS = ("right_for_wrong_reasons", "wrong_and_violated")


class Findings:
    """VIOLATED replays by standing: over the run, per dimension and per gold cell."""

    def __init__(self, dimensions: tuple[str, ...]) -> None:
        self.dimensions = dimensions
        self.counts: Counter = Counter()  # `KEY:confirmed` / `KEY:provisional`

    def add(self, confirmed: tuple[bool | None, ...], cell: str) -> None:
        """One VIOLATED replay: a confirmed finding where any of its dimensions is."""
        word = WORDS[0] if any(c is True for c in confirmed) else WORDS[1]
        self.counts[f"replays:{word}"] += 1
        self.counts[f"{cell}:{word}"] += 1
        for d, c in zip(self.dimensions, confirmed, strict=True):
            if c is not None:
                self.counts[f"{d}:{WORDS[0] if c else WORDS[1]}"] += 1

    def merge(self, other: Findings) -> None:
        self.counts.update(other.counts)

    def to_json(self) -> dict[str, dict[str, int]]:
        keys = ("replays", *self.dimensions, *CELLS)
        return {k: {w: self.counts[f"{k}:{w}"] for w in WORDS} for k in keys}


def cell_tail(found: dict[str, Any], key: str) -> str:
    """``  (1 confirmed, 2 provisional)`` after a gold cell that holds findings."""
    c = found.get(key)
    return f"  ({c['confirmed']} confirmed, {c['provisional']} provisional)" if c else ""


def replays_line(found: dict[str, Any]) -> str:
    r = found["replays"]
    return (
        f"violated replays: {r['confirmed']} confirmed (resting only on reviewed annotations), "
        f"{r['provisional']} provisional"
    )


def ranked(found: dict[str, Any], dimension: str) -> str:
    """``verdict 1 confirmed + 2 provisional``, for the "fails most often" ranking."""
    c = found[dimension]
    return f"{dimension} {c['confirmed']} confirmed + {c['provisional']} provisional"
