"""The gold × observed label table of an audit, with adherence in each cell.

Contract: ``Confusion.add(record, flags)`` folds one ``ResultRecord`` (labels in the order
first seen: observed, gold, or allowed by a report; a cell counts replays, their overall
results, and those resting on unreviewed or gold-derived annotations); ``merge`` folds in
the table of the results that come next, as one fold of both would be; ``to_json`` is the
summary's ``confusion`` (docs/audit.md), and ``confusion_text`` / ``confusions_text`` its
lines in the text summary. The summary (``unmask.batch.summary``) keeps one over the run
and one per protocol; the fold, its JSON and its text are side by side here, so a figure
added to one is seen missing from the others.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from unmask.checking.record import ResultRecord
from unmask.checking.report import SATISFIED, UNKNOWN, VIOLATED
from unmask.plumbing.jsonload import show


class Confusion:
    """Gold × observed label, with adherence and provenance in each cell; labels in the
    order first seen (observed, gold, or allowed by a report)."""

    def __init__(self) -> None:
        self.labels: dict[str, None] = {}
        self.cells: dict[tuple[str, str], Counter] = {}  # (gold, observed) -> counts

    def add(self, v: ResultRecord, flags: dict[str, bool]) -> None:
        labels = self.labels
        for label in (*v.labels, v.observed, v.gold):
            if label is not None and label not in labels:
                labels[label] = None
        if v.gold is not None and v.observed is not None:
            cell = self.cells.get((v.gold, v.observed))
            if cell is None:
                cell = self.cells[(v.gold, v.observed)] = Counter()
            cell["replays"] += 1
            cell[v.overall] += 1
            for flag, on in flags.items():
                if on:
                    cell[flag] += 1

    def merge(self, other: Confusion) -> None:
        """Add ``other``'s counts, its labels after this one's (each once)."""
        for label in other.labels:
            self.labels.setdefault(label)
        for key, counts in other.cells.items():
            self.cells.setdefault(key, Counter()).update(counts)

    def to_json(self) -> dict[str, Any]:
        labels = list(self.labels)
        table: dict[str, dict[str, dict[str, int]]] = {}
        for g in labels:
            row: dict[str, dict[str, int]] = {}
            for o in labels:
                c = self.cells.get((g, o), Counter())
                row[o] = {
                    "replays": c["replays"],
                    **{k: c[k] for k in (SATISFIED, VIOLATED, UNKNOWN)},
                    "unreviewed": c["unreviewed"],
                    "gold_derived": c["gold_derived"],
                }
            table[g] = row
        return {"labels": labels, "table": table}


def confusions_text(merged: dict[str, Any], by_protocol: dict[str, Any]) -> list[str]:
    """The gold × observed tables: one for a run of one protocol, else one per protocol
    that has a replay with a gold label, each under its name."""
    if len(by_protocol) <= 1:
        return confusion_text(merged)
    lines = []
    for name, c in by_protocol.items():
        table = _table_lines(c, "    ")
        if table:
            # a name read back by `--resume` is any string: shown as diagnostics show input
            shown = name if name.isprintable() else show(name, limit=len(name))
            lines += [f"  protocol `{shown}`:", *table]
    if not lines:
        return []
    title = (
        "gold x observed label, per protocol (replays, and satisfied/violated/unknown among them):"
    )
    return [title, *lines]


def confusion_text(c: dict[str, Any]) -> list[str]:
    """The gold × observed table, each cell ``replays (satisfied/violated/unknown)``."""
    table = _table_lines(c, "  ")
    if not table:
        return []
    return ["gold x observed label (replays, and satisfied/violated/unknown among them):", *table]


def _table_lines(c: dict[str, Any], indent: str) -> list[str]:
    labels, table = c["labels"], c["table"]
    cells = [table[g][o] for g in labels for o in labels]
    if not any(x["replays"] for x in cells):
        return []

    def cell(x: dict[str, int]) -> str:
        n = x["replays"]
        return f"{n} ({x[SATISFIED]}/{x[VIOLATED]}/{x[UNKNOWN]})" if n else "0"

    corner = "gold \\ observed"
    first = max(len(corner), *(len(g) for g in labels))
    widths = [max(len(o), *(len(cell(table[g][o])) for g in labels)) for o in labels]
    lines = [
        indent
        + corner.ljust(first)
        + "".join(f"  {o:>{w}}" for o, w in zip(labels, widths, strict=True)),
    ]
    for g in labels:
        row = "".join(f"  {cell(table[g][o]):>{w}}" for o, w in zip(labels, widths, strict=True))
        lines.append(f"{indent}{g:<{first}}{row}")
    unreviewed = sum(x["unreviewed"] for x in cells)
    gold_derived = sum(x["gold_derived"] for x in cells)
    if unreviewed or gold_derived:
        lines.append(
            f"{indent}of these, {unreviewed} rest on unreviewed annotations and "
            f"{gold_derived} on gold-derived ones"
        )
    return lines
