"""The summary of an audit, folded one result line at a time.

Contract:
- ``view(obj)`` keeps what the summary needs of one result line (a report's JSON or an
  error record), the same for a line just checked and one carried over by ``--resume``;
- ``Summary.add(view)`` folds it in O(distinct requirement ids and grounding groups)
  memory. The dimensions are the report's own (``verdict``, ``procedure``, ``coverage``,
  ``grounding``) with the report's result for each; every check counts under the outcome
  ``unmask.checker.outcome`` gives its status, with a REFUTED coverage check set apart as
  ``not_observable``;
- ``to_json`` (``unmask.summary/1``, fields in docs/audit.md) and ``render_text`` give the
  same figures; ``index_summary`` gives them as the ``summary`` argument of
  ``unmask.render.html.render_index``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, fields
from typing import Any

from unmask.batch.records import ERROR_SCHEMA
from unmask.checker import outcome
from unmask.report import OK, REFUTED, SATISFIED, UNKNOWN, VIOLATED, Dimensions

SUMMARY_SCHEMA = "unmask.summary/1"
DIMENSIONS = tuple(f.name for f in fields(Dimensions))  # verdict, procedure, coverage, grounding
OVERALL_KEYS = (SATISFIED, VIOLATED, UNKNOWN, "INVALID")
_OUTCOME_KEY = {OK: "satisfied", VIOLATED: "violated", UNKNOWN: "unknown", None: "not_specified"}
_DIMENSION_KEY = {OK: "satisfied", VIOLATED: "violated", UNKNOWN: "unknown"}
_FAMILY = re.compile(r"\(([^()]*)\)")

CELLS = {
    ("match", SATISFIED): "right_for_right_reasons",
    ("match", VIOLATED): "right_for_wrong_reasons",
    ("mismatch", SATISFIED): "wrong_but_procedurally_clean",
    ("mismatch", VIOLATED): "wrong_and_violated",
}
CELL_TEXT = {
    "right_for_right_reasons": "right for the right reasons",
    "right_for_wrong_reasons": "right for the wrong reasons",
    "wrong_but_procedurally_clean": "wrong but procedurally clean",
    "wrong_and_violated": "wrong and violated",
    "unknown_or_no_gold": "unknown or no gold",
}


def family_key(name: str) -> str:
    """``supported(joined)`` -> ``supported(*)``; a plain name stays as it is."""
    return _FAMILY.sub(lambda m: "(" + ",".join("*" for _ in m.group(1).split(",")) + ")", name)


def check_key(status: str | None, *, coverage: bool = False) -> str:
    """The summary's name for a check's outcome."""
    if coverage and status == REFUTED:
        return "not_observable"  # the checker's UNKNOWN, told apart: it was not observable
    return _OUTCOME_KEY[outcome(status, coverage=coverage)]


@dataclass(frozen=True, slots=True)
class View:
    """What the summary needs of one result line; ``error`` (the first diagnostic's code)
    is set for an error record and nothing else is."""

    error: str | None = None
    overall: str | None = None
    dimensions: tuple[str | None, ...] = ()  # in DIMENSIONS order
    matches: bool | None = None
    requirements: tuple[tuple[str, str | None, str | None], ...] = ()  # id, status, coverage
    grounding: tuple[tuple[str, str, str | None], ...] = ()  # judge, context, status


def view(obj: dict[str, Any]) -> View:
    if obj.get("schema") == ERROR_SCHEMA:
        codes = [e.get("code", "error") for e in obj.get("errors", ()) if isinstance(e, dict)]
        return View(error=str(codes[0]) if codes else "error")
    dims = obj.get("dimensions") or {}
    return View(
        overall=obj.get("overall"),
        dimensions=tuple(dims.get(d) for d in DIMENSIONS),
        matches=obj.get("verdict_matches_gold"),
        requirements=tuple(
            (str(r.get("id")), r.get("status"), r.get("coverage"))
            for r in obj.get("requirements") or ()
        ),
        grounding=tuple(
            (str(g.get("judge")), str(g.get("context")), g.get("status"))
            for g in obj.get("grounding") or ()
        ),
    )


def _bump(table: dict[str, Counter], key: str, what: str) -> None:
    counter = table.get(key)
    if counter is None:
        counter = table[key] = Counter()
    counter[what] += 1


class Summary:
    """Counts over a run, folded one result at a time."""

    def __init__(self) -> None:
        self.total = 0
        self.overall: Counter = Counter()
        self.errors: Counter = Counter()
        self.dimensions: dict[str, Counter] = {d: Counter() for d in DIMENSIONS}
        self.failed: Counter = Counter()  # replays in which each dimension fails
        self.requirements: dict[str, Counter] = {}
        self.coverage: dict[str, Counter] = {}
        self.grounding: dict[str, Counter] = {}
        self.cross: Counter = Counter()

    def add(self, v: View) -> None:
        self.total += 1
        if v.error is not None:
            self.overall["INVALID"] += 1
            self.errors[v.error] += 1
            return
        self.overall[v.overall] += 1
        for d, result in zip(DIMENSIONS, v.dimensions, strict=True):
            self.dimensions[d][_DIMENSION_KEY.get(result, "not_checked")] += 1
            # coverage is never VIOLATED: it fails where a requirement was not observable
            if result == VIOLATED and d != "coverage":
                self.failed[d] += 1
        not_observable = False
        for rid, status, coverage in v.requirements:
            key = family_key(rid)
            _bump(self.requirements, key, check_key(status))
            cov = check_key(coverage, coverage=True)
            _bump(self.coverage, key, cov)
            not_observable = not_observable or cov == "not_observable"
        if not_observable:
            self.dimensions["coverage"]["not_observable"] += 1
            self.failed["coverage"] += 1
        for judge, context, status in v.grounding:
            key = f"{family_key(judge)} ~ {family_key(context)}"
            _bump(self.grounding, key, check_key(status))
        gold = {True: "match", False: "mismatch", None: "no_gold"}[v.matches]
        self.cross[(gold, v.overall)] += 1

    # -- derived figures --

    @property
    def valid(self) -> int:
        return self.total - self.overall["INVALID"]

    def cells(self) -> dict[str, int]:
        out = dict.fromkeys(CELL_TEXT, 0)
        for (gold, overall), n in self.cross.items():
            out[CELLS.get((gold, overall), "unknown_or_no_gold")] += n
        return out

    def most_failing(self) -> dict[str, Any]:
        ranking = sorted(DIMENSIONS, key=lambda d: (-self.failed[d], DIMENSIONS.index(d)))
        top = self.failed[ranking[0]]
        leaders = [d for d in ranking if self.failed[d] == top] if top else []
        return {
            "dimensions": leaders,
            "replays": top,
            "tie": len(leaders) > 1,
            "ranking": [{"dimension": d, "replays": self.failed[d]} for d in ranking],
        }

    def to_json(self) -> dict[str, Any]:
        def table(t: dict[str, Counter]) -> dict[str, dict[str, int]]:
            return {k: dict(sorted(c.items())) for k, c in sorted(t.items())}

        return {
            "schema": SUMMARY_SCHEMA,
            "replays": self.total,
            "valid": self.valid,
            "invalid": self.overall["INVALID"],
            "overall": {k: self.overall[k] for k in OVERALL_KEYS},
            "errors": dict(sorted(self.errors.items())),
            "dimensions": {d: dict(sorted(self.dimensions[d].items())) for d in DIMENSIONS},
            "requirements": table(self.requirements),
            "coverage": table(self.coverage),
            "grounding": table(self.grounding),
            "gold": {
                "cells": self.cells(),
                "table": {
                    g: {o: self.cross[(g, o)] for o in (SATISFIED, VIOLATED, UNKNOWN)}
                    for g in ("match", "mismatch", "no_gold")
                },
            },
            "most_failing": self.most_failing(),
        }

    def index_summary(self, backend: str) -> dict[str, Any]:
        """The ``summary`` argument of ``unmask.render.html.render_index`` for this run."""
        mf = self.most_failing()
        fails = " and ".join(mf["dimensions"]) if mf["dimensions"] else "none"
        cells = self.cells()
        extra = {
            "backend": backend,
            "invalid inputs": self.overall["INVALID"],
            "fails most often": f"{fails} ({mf['replays']} replays)",
            **{text: cells[key] for key, text in CELL_TEXT.items()},
        }
        return {"title": "unmask audit", "total": self.total, "extra": extra}

    def render_text(self) -> str:
        j = self.to_json()
        o = j["overall"]
        lines = [
            f"audited {j['replays']} replay{'' if j['replays'] == 1 else 's'}: "
            f"{o['SATISFIED']} satisfied, {o['VIOLATED']} violated, "
            f"{o['UNKNOWN']} unknown, {o['INVALID']} invalid",
        ]
        if j["errors"]:
            lines.append(
                "  invalid inputs by first error: "
                + ", ".join(f"{k} {n}" for k, n in j["errors"].items())
            )
        lines.append("dimensions (replays): violated / unknown / satisfied / not checked")
        for d in DIMENSIONS:
            c = j["dimensions"][d]
            extra = (
                f"  ({c.get('not_observable', 0)} with a requirement not observable)"
                if d == "coverage"
                else ""
            )
            lines.append(
                f"  {d:<12} {c.get('violated', 0):>7} {c.get('unknown', 0):>9} "
                f"{c.get('satisfied', 0):>11} {c.get('not_checked', 0):>13}{extra}"
            )
        for title, key in (
            ("requirements (checks)", "requirements"),
            ("coverage (checks)", "coverage"),
            ("grounding (checks)", "grounding"),
        ):
            if j[key]:
                lines.append(f"{title}:")
                for name, c in j[key].items():
                    lines.append(
                        f"  {name}: "
                        + ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in c.items())
                    )
        cells = j["gold"]["cells"]
        lines.append("gold agreement x adherence:")
        for k, text in CELL_TEXT.items():
            lines.append(f"  {text:<30} {cells[k]:>7}")
        mf = j["most_failing"]
        if not mf["dimensions"]:
            lines.append("fails most often: no dimension failed in this run")
        else:
            names = " and ".join(mf["dimensions"])
            tie = " (a tie)" if mf["tie"] else ""
            rank = ", ".join(f"{r['dimension']} {r['replays']}" for r in mf["ranking"])
            lines.append(f"fails most often: {names}{tie}, in {mf['replays']} replays ({rank})")
        return "\n".join(lines)
