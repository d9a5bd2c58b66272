"""The summary of an audit, folded one result at a time.

Contract:
- ``Summary.add(record)`` folds one result's ``unmask.checking.record.ResultRecord`` (the same for a
  replay just checked and a line carried over by ``--resume``) in O(distinct requirement
  ids, grounding groups and labels) memory, plus one small entry per (item, judge) for
  replays that name both. The dimensions
  are the report's own (``verdict``, ``procedure``, ``coverage``, ``grounding``) with the
  report's result for each; every check counts under the outcome ``unmask.checking.checker.outcome``
  gives its status, with a REFUTED coverage check set apart as ``not_observable``;
- besides, it counts the gold × observed labels with adherence in each cell
  (``unmask.batch.confusion``), over the run and per protocol (by the name each report
  carries: labels of two protocols are not comparable), the results whose checks rest on
  unreviewed or gold-derived annotations (the report's ``unreviewed`` / ``gold_derived``
  fields), and, for replays of one ``item`` by several judges, per pair of judges how often
  verdicts and dimensions differ;
- ``merge(other)`` folds in the summary of the results that come next, with the figures of
  one fold of both (a pool worker or a Dask partition folds its own results; a summary
  pickles without its memos);
- with ``trust`` set (``--calibration``, an ``unmask.review.calibration.Trust``: on the run's
  summary only), ``findings`` splits provisional findings into trusted and to review, the
  headline and ``index_summary`` say so, and ``calibration`` names the data and the
  protocols it was not measured under (``digests``: those of the replays just checked);
- ``to_json`` (``unmask.summary/1``, fields in docs/audit.md) and ``render_text`` give the
  same figures; ``index_summary`` gives them as the ``summary`` argument of
  ``unmask.render.html.render_index``.

Size: one fold and the two renderings of its figures (JSON and text) kept side by side, so
a figure added to one is seen missing from the other; the gold × observed table, a fold of
its own, keeps its JSON and text beside it in ``unmask.batch.confusion``.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import fields
from typing import Any

from unmask.batch.confusion import Confusion, confusions_text
from unmask.batch.findings import Findings, cell_tail, ranked, replays_line
from unmask.checking.checker import outcome
from unmask.checking.record import ResultRecord
from unmask.checking.report import OK, REFUTED, SATISFIED, UNKNOWN, VIOLATED, Dimensions
from unmask.plumbing.diagnostics import counted
from unmask.plumbing.names import family_of, pair_family
from unmask.plumbing.safe import printable

SUMMARY_SCHEMA = "unmask.summary/1"
DIMENSIONS = tuple(f.name for f in fields(Dimensions))  # verdict, procedure, coverage, grounding
OVERALL_KEYS = (SATISFIED, VIOLATED, UNKNOWN, "INVALID")
# error records of a valid replay that was not decided: the backend refused it (the truth
# table over its atom limit) or its check failed unexpectedly. Nothing is known about it, as
# for `unmask check`'s exit 3; it is not invalid input, so it never makes a run exit 4
UNCHECKED_CODES = frozenset({"truthtable-limit", "internal-error"})
# keyed by str or None, as ``outcome`` and a record's dimensions are typed (an ``Outcome``
# is a str; a record read back from its JSON line holds the plain words)
_OUTCOME_KEY: dict[str | None, str] = {
    OK: "satisfied",
    VIOLATED: "violated",
    UNKNOWN: "unknown",
    None: "not_specified",
}
_DIMENSION_KEY: dict[str | None, str] = {OK: "satisfied", VIOLATED: "violated", UNKNOWN: "unknown"}
KEYS_MEMO = 4096  # distinct requirement (and grounding) tuples, and names, kept
_MEMOS = ("_by_requirements", "_by_grounding", "_by_result")  # a summary's caches
_NO_FLAGS = {"unreviewed": False, "gold_derived": False}  # never changed
_GOLD = {True: "match", False: "mismatch", None: "no_gold"}  # a report's verdict_matches_gold

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


@functools.lru_cache(maxsize=KEYS_MEMO)  # ids come back replay after replay
def family_key(name: str) -> str:
    """``supported(joined)`` -> ``supported(*)`` (``unmask.plumbing.names.family_of``,
    remembered)."""
    return family_of(name)


def check_key(status: str | None, *, coverage: bool = False) -> str:
    """The summary's name for a check's outcome."""
    if coverage and status == REFUTED:
        return "not_observable"  # the checker's UNKNOWN, told apart: it was not observable
    return _OUTCOME_KEY[outcome(status, coverage=coverage)]


def _table(tables: dict[Any, Counter], key: Any) -> Counter:
    counter = tables.get(key)
    if counter is None:
        counter = tables[key] = Counter()
    return counter


def _remember(memo: dict[tuple, Any], key: tuple, value: Any) -> Any:
    if len(memo) >= KEYS_MEMO:
        memo.clear()  # a batch of many protocols: start again rather than grow
    memo[key] = value
    return value


class Summary:
    """Counts over a run, folded one result at a time."""

    def __init__(self) -> None:
        self.total = 0
        self.overall: Counter = Counter()
        self.errors: Counter = Counter()
        self.unchecked = 0  # error records of valid replays not decided (UNCHECKED_CODES)
        self.dimensions: dict[str, Counter] = {d: Counter() for d in DIMENSIONS}
        self.failed: Counter = Counter()  # replays in which each dimension fails
        self.findings = Findings(DIMENSIONS)  # VIOLATED replays: confirmed or provisional
        # `--calibration`: an ``unmask.review.calibration.Trust`` the figures are weighed by; set on
        # the run's summary only (the folds of workers carry none, and need none)
        self.trust: Any = None
        self.digests: set[tuple[str, str]] = set()  # (protocol, digest) of results just checked
        # SATISFIED replays resting on unreviewed readings, per pattern of their readers
        # (``ResultRecord.passes``): weighed by ``trust`` at the end, as findings are
        self.passes: Counter = Counter()
        self.requirements: dict[str, Counter] = {}
        self.coverage: dict[str, Counter] = {}
        self.grounding: dict[str, Counter] = {}
        self.cross: Counter = Counter()
        self.confusion = Confusion()  # over the run, whatever the protocol
        self.by_protocol: dict[str, Confusion] = {}  # protocol name -> its own, first seen
        self.with_flag: dict[str, Counter] = {"unreviewed": Counter(), "gold_derived": Counter()}
        self.judges: dict[str, int] = {}  # judge -> first-seen position
        self.seen: dict[str, dict[str, tuple]] = {}  # item -> judge -> (verdict, dimensions)
        self.pairs: dict[tuple[str, str], Counter] = {}
        self.repeated = 0  # a second result for one (item, judge): left out of the pairs
        # `--protocol`: results per (protocol, digest); replays per family of atoms left out
        self.rechecked: Counter = Counter()
        self.dropped: Counter = Counter()
        # a record's requirement / grounding tuple -> the (counter, key) pairs it adds one to
        self._by_requirements: dict[tuple, tuple[list[tuple[Counter, str]], bool]] = {}
        self._by_grounding: dict[tuple, list[tuple[Counter, str]]] = {}
        self._by_result: dict[tuple, list[tuple[Counter, Any]]] = {}

    def add(self, v: ResultRecord) -> None:
        self.total += 1
        if v.recheck is not None:
            self._recheck(v.recheck)
        if v.error is not None:
            self.overall["INVALID"] += 1
            self.errors[v.error] += 1
            self.unchecked += v.error in UNCHECKED_CODES
            return
        for counter, what in self._result_bumps(v.overall, v.dimensions, v.matches):
            counter[what] += 1
        if v.overall == VIOLATED:
            cell = CELLS.get((_GOLD[v.matches], VIOLATED), "unknown_or_no_gold")
            self.findings.add(v.confirmed, cell, v.findings)
        bumps, not_observable = self._requirement_bumps(v.requirements)
        for counter, what in bumps:
            counter[what] += 1
        if not_observable:  # not observed is not violated: counted apart, never as failing
            self.dimensions["coverage"]["not_observable"] += 1
        for counter, what in self._grounding_bumps(v.grounding):
            counter[what] += 1
        flags = _NO_FLAGS
        if any(v.unreviewed) or any(v.gold_derived):  # else every count is 0: left out
            flags = {"unreviewed": any(v.unreviewed), "gold_derived": any(v.gold_derived)}
            for flag, counts in (("unreviewed", v.unreviewed), ("gold_derived", v.gold_derived)):
                if flags[flag]:
                    c = self.with_flag[flag]
                    c["results"] += 1
                    # a wrong TRUE can hide a break: a pass that rests on a reading nobody
                    # checked is counted beside the findings (`satisfied.unreviewed`)
                    c["satisfied"] += v.overall == SATISFIED
                    if flag == "unreviewed" and v.overall == SATISFIED:
                        self.passes[v.passes] += 1
                    for d, n in zip(DIMENSIONS, counts, strict=True):
                        c[d] += n
                        c[f"results:{d}"] += n > 0
        self.confusion.add(v, flags)
        self._protocol(v.protocol or "").add(v, flags)
        if v.item is not None and v.judge is not None:
            self._pair(v.item, v.judge, (v.observed, v.dimensions))

    def _recheck(self, recheck: tuple[str, str, tuple[str, ...]]) -> None:
        name, digest, dropped = recheck
        self.rechecked[(name, digest)] += 1
        if dropped:
            self.dropped[""] += 1  # the replays with any, apart from the families
            for family in dict.fromkeys(family_key(a) for a in dropped):
                self.dropped[family] += 1

    def recheck_json(self) -> dict[str, Any] | None:
        """Which ``--protocol`` the results were checked against, and the annotations it
        left out (replays per atom family); None for a run of the replays' own."""
        if not self.rechecked:
            return None
        atoms = {k: n for k, n in sorted(self.dropped.items()) if k}
        return {
            "protocols": [
                {"protocol": name, "digest": digest, "replays": n}
                for (name, digest), n in self.rechecked.items()
            ],
            "dropped": {"replays": self.dropped[""], "atoms": atoms},
        }

    def merge(self, other: Summary) -> None:
        """Fold in ``other``, the summary of the results that come right after this one's:
        the figures are those of one summary that folded both in that order. (A pool
        worker or a Dask partition folds its own results; the run merges them in input
        order.) Judges compared on one item are compared again here, across the two."""
        self.total += other.total
        self.unchecked += other.unchecked
        for mine, theirs in (
            (self.overall, other.overall),
            (self.errors, other.errors),
            (self.failed, other.failed),
            (self.cross, other.cross),
            (self.rechecked, other.rechecked),
            (self.dropped, other.dropped),
            (self.passes, other.passes),
            *((self.dimensions[d], other.dimensions[d]) for d in DIMENSIONS),
            *((self.with_flag[f], c) for f, c in other.with_flag.items()),
        ):
            mine.update(theirs)
        for tables, their_tables in (
            (self.requirements, other.requirements),
            (self.coverage, other.coverage),
            (self.grounding, other.grounding),
        ):
            for key, counts in their_tables.items():
                _table(tables, key).update(counts)
        self.confusion.merge(other.confusion)
        self.findings.merge(other.findings)
        for name, confusion in other.by_protocol.items():
            self._protocol(name).merge(confusion)
        # an item's judges in the order the other saw them first: their pairs are counted
        # again against the judges of that item seen here before
        for judge in other.judges:
            self.judges.setdefault(judge, len(self.judges))
        for item, by_judge in other.seen.items():
            for judge, result in by_judge.items():
                self._pair(item, judge, result)
        self.repeated += other.repeated

    def _protocol(self, name: str) -> Confusion:
        """The protocol's own gold × observed table, made when its name is first seen."""
        mine = self.by_protocol.get(name)
        if mine is None:
            mine = self.by_protocol[name] = Confusion()
        return mine

    def __getstate__(self) -> dict[str, Any]:
        # the memos are the sender's: their entries point at its counters, not at copies
        state = dict(self.__dict__)
        for memo in _MEMOS:
            state[memo] = {}
        return state

    # The replays of a batch mostly share a protocol, so the same requirement and grounding
    # tuples come back again and again: which counters they add to is worked out once (the
    # names' families are regular-expression work; this fold is most of the parent's time
    # in a `--jobs` run). The counters live as long as the summary, so an entry stays true.
    def _result_bumps(
        self, overall: str | None, dimensions: tuple[str | None, ...], matches: bool | None
    ) -> list[tuple[Counter, Any]]:
        key = (overall, dimensions, matches)
        known = self._by_result.get(key)
        if known is None:
            bumps: list[tuple[Counter, Any]] = [(self.overall, overall)]
            for d, result in zip(DIMENSIONS, dimensions, strict=True):
                bumps.append((self.dimensions[d], _DIMENSION_KEY.get(result, "not_checked")))
                # coverage is never VIOLATED: it fails where a requirement was not observable
                if result == VIOLATED and d != "coverage":
                    bumps.append((self.failed, d))
            bumps.append((self.cross, (_GOLD[matches], overall)))
            known = _remember(self._by_result, key, bumps)
        return known

    def _requirement_bumps(
        self, requirements: tuple[tuple[str, str | None, str | None], ...]
    ) -> tuple[list[tuple[Counter, str]], bool]:
        known = self._by_requirements.get(requirements)
        if known is None:
            bumps, not_observable = [], False
            for rid, status, coverage in requirements:
                family = family_key(rid)
                cov = check_key(coverage, coverage=True)
                bumps.append((_table(self.requirements, family), check_key(status)))
                bumps.append((_table(self.coverage, family), cov))
                not_observable = not_observable or cov == "not_observable"
            known = _remember(self._by_requirements, requirements, (bumps, not_observable))
        return known

    def _grounding_bumps(
        self, grounding: tuple[tuple[str, str, str | None, str], ...]
    ) -> list[tuple[Counter, str]]:
        known = self._by_grounding.get(grounding)
        if known is None:
            known = _remember(
                self._by_grounding,
                grounding,
                [
                    (
                        _table(
                            self.grounding,
                            pair_family(judge, direction, context),
                        ),
                        check_key(status),
                    )
                    for judge, context, status, direction in grounding
                ],
            )
        return known

    def _pair(self, item: str, judge: str, mine: tuple) -> None:
        """Compare this judge's result on ``item`` with every other judge's so far."""
        self.judges.setdefault(judge, len(self.judges))
        by_judge = self.seen.setdefault(item, {})
        if judge in by_judge:
            self.repeated += 1
            return
        for other, theirs in by_judge.items():
            a, b = sorted((other, judge), key=self.judges.__getitem__)
            c = self.pairs.setdefault((a, b), Counter())
            c["items"] += 1
            c["verdict_agreement"] += theirs[0] == mine[0]
            for d, x, y in zip(DIMENSIONS, theirs[1], mine[1], strict=True):
                c[d] += x != y
        by_judge[judge] = mine

    # -- derived figures --

    @property
    def valid(self) -> int:
        """Replays checked: lines that are reports, not error records."""
        return self.total - self.overall["INVALID"]

    @property
    def valid_inputs(self) -> int:
        """Inputs that are valid replays: the checked ones and the ones not decided."""
        return self.valid + self.unchecked

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
            # UNKNOWN is no failure: the dimensions left open, in their own words, apart
            "open": [
                {"dimension": d, "replays": self.dimensions[d]["unknown"]}
                for d in sorted(DIMENSIONS, key=lambda d: -self.dimensions[d]["unknown"])
            ],
        }

    def confusion_json(self) -> dict[str, Any]:
        """Gold × observed label over the run, every protocol's labels in one table."""
        return self.confusion.to_json()

    def confusion_by_protocol_json(self) -> dict[str, Any]:
        """Gold × observed label per protocol name, in the order the protocols were seen."""
        return {name: c.to_json() for name, c in self.by_protocol.items()}

    def satisfied_json(self) -> dict[str, int]:
        """SATISFIED replays, and how many of them rest on an unreviewed annotation; with a
        calibration, those split into ``trusted`` (every reading measured and trusted) and
        ``to_review``."""
        out = {
            "replays": self.overall[SATISFIED],
            "unreviewed": self.with_flag["unreviewed"]["satisfied"],
        }
        if self.trust is not None:
            trusted = sum(
                n for readers, n in self.passes.items()
                if self.trust.standing(readers).level == "trusted"
            )  # fmt: skip
            out.update(trusted=trusted, to_review=out["unreviewed"] - trusted)
        return out

    def provenance_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for flag, c in self.with_flag.items():
            out[flag] = {
                "with": c["results"],
                "without": self.valid - c["results"],
                "replays": {d: c[f"results:{d}"] for d in DIMENSIONS},
                "checks": {d: c[d] for d in DIMENSIONS},
            }
        return out

    def judges_json(self) -> dict[str, Any]:
        pairs = sorted(self.pairs, key=lambda p: (self.judges[p[0]], self.judges[p[1]]))
        return {
            "items": sum(1 for js in self.seen.values() if len(js) > 1),
            "repeated": self.repeated,
            "pairs": [
                {
                    "judges": [a, b],
                    "items": self.pairs[(a, b)]["items"],
                    "verdict_agreement": self.pairs[(a, b)]["verdict_agreement"],
                    "differ": {d: self.pairs[(a, b)][d] for d in DIMENSIONS},
                }
                for a, b in pairs
            ],
        }

    def to_json(self) -> dict[str, Any]:
        def table(t: dict[str, Counter]) -> dict[str, dict[str, int]]:
            return {k: dict(sorted(c.items())) for k, c in sorted(t.items())}

        return {
            "schema": SUMMARY_SCHEMA,
            "replays": self.total,
            "valid": self.valid,
            "invalid": self.overall["INVALID"],
            "unchecked": self.unchecked,
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
            "findings": self.findings.to_json(self.trust),
            "satisfied": self.satisfied_json(),
            "confusion": self.confusion_json(),
            "confusion_by_protocol": self.confusion_by_protocol_json(),
            "provenance": self.provenance_json(),
            "judges": self.judges_json(),
            # only for a run with `--protocol`: a run without is unchanged
            **({"recheck": self.recheck_json()} if self.rechecked else {}),
            # only for a run with `--calibration`: a run without is unchanged
            **({"calibration": self.calibration_json()} if self.trust is not None else {}),
        }

    def calibration_json(self) -> dict[str, Any]:
        """The calibration the findings were weighed by, and the protocols of this run it
        was not measured under (by name, and by digest for the replays just checked)."""
        cal = self.trust.calibration
        names = {n for n, _ in cal.protocols}
        other = {p for p in self.by_protocol if p and p not in names}
        # a replay just checked names its protocol's digest too: same name, other text
        other |= {
            f"{n} ({d[:19]})"
            for n, d in self.digests
            if n in names and not cal.measured_under(n, d)
        }
        return {**self.trust.header_json(), "not_measured_under": sorted(other)}

    def index_summary(self, backend: str) -> dict[str, Any]:
        """The ``summary`` argument of ``unmask.render.html.render_index`` for this run."""
        mf = self.most_failing()
        fails = " and ".join(mf["dimensions"]) if mf["dimensions"] else "none"
        cells = self.cells()
        extra = {
            "backend": backend,
            "invalid inputs": self.overall["INVALID"],
            "fails most often": f"{fails} ({counted(mf['replays'], 'replay')})",
            "left undecided": ", ".join(f"{r['dimension']} {r['replays']}" for r in mf["open"]),
            "violated, confirmed": self.findings.counts["replays:confirmed"],
            "violated, provisional": self.findings.counts["replays:provisional"],
            "satisfied, on unreviewed annotations": self.satisfied_json()["unreviewed"],
            **self._trust_extra(),
            **{text: cells[key] for key, text in CELL_TEXT.items()},
            **recheck_extra(self.recheck_json()),
        }
        return {
            "title": "unmask audit",
            "total": self.total,
            "extra": extra,
            "confusion": self.confusion_json(),
            "confusion_by_protocol": self.confusion_by_protocol_json(),
            "provenance": self.provenance_json(),
            "judges": self.judges_json(),
        }

    def _levels_tail(self, j: dict[str, Any]) -> str:
        """`` (1 confirmed, 2 trusted, 3 to review)`` after the violated count, with a
        calibration: the headline separates what can be acted on from what needs review."""
        r = j["findings"]["replays"]
        if self.trust is None or not j["overall"]["VIOLATED"]:
            return ""
        return f" ({r['confirmed']} confirmed, {r['trusted']} trusted, {r['to_review']} to review)"

    def _trust_extra(self) -> dict[str, Any]:
        if self.trust is None:
            return {}
        r = self.findings.to_json(self.trust)["replays"]
        c = self.calibration_json()
        return {
            "violated, trusted": r["trusted"],
            "violated, to review": r["to_review"],
            "calibration": f"measured on {c['data']}, trusted from {c['trust']:g}",
            **(
                {"calibration warning": _not_measured(c["not_measured_under"])}
                if c["not_measured_under"]
                else {}
            ),
        }

    def render_text(self) -> str:
        j = self.to_json()
        o = j["overall"]
        lines = [
            f"audited {j['replays']} replay{'' if j['replays'] == 1 else 's'}: "
            f"{o['SATISFIED']} satisfied, {o['VIOLATED']} violated{self._levels_tail(j)}, "
            f"{o['UNKNOWN']} unknown, {o['INVALID']} invalid"
            + (
                f" ({j['unchecked']} of them valid but not decided by the backend)"
                if j["unchecked"]
                else ""
            ),
        ]
        if j["errors"]:
            lines.append(
                "  invalid inputs by first error: "
                + ", ".join(f"{k} {n}" for k, n in j["errors"].items())
            )
        lines += recheck_text(j.get("recheck"))
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
        found = j["findings"]
        lines.append("gold agreement x adherence:")
        for k, text in CELL_TEXT.items():
            lines.append(f"  {text:<30} {cells[k]:>7}{cell_tail(found, k)}")
        lines.append(replays_line(found, self.trust))
        if self.trust is not None:
            c = j["calibration"]
            data = printable(c["data"])
            lines.append(f"calibration: measured on `{data}`, trusted from {c['trust']:g}")
            if c["not_measured_under"]:
                lines.append(f"warning: {_not_measured(c['not_measured_under'])}")
        if j["provenance"]["unreviewed"]["with"]:  # a run whose readings are all people's: none
            lines.append(satisfied_line(j["satisfied"]))
        lines += confusions_text(j["confusion"], j["confusion_by_protocol"])
        lines += provenance_text(j["provenance"])
        lines += judges_text(j["judges"])
        mf = j["most_failing"]
        opened = ", ".join(f"{r['dimension']} {r['replays']}" for r in mf["open"])
        lines.append(f"left undecided (unknown, not failed), in replays: {opened}")
        if not mf["dimensions"]:
            lines.append("fails most often: no dimension failed in this run")
        else:
            names = " and ".join(mf["dimensions"])
            tie = " (a tie)" if mf["tie"] else ""
            rank = ", ".join(ranked(found, r["dimension"]) for r in mf["ranking"])
            lines.append(
                f"fails most often: {names}{tie}, in {counted(mf['replays'], 'replay')} ({rank})"
            )
        return "\n".join(lines)


def _not_measured(names: list[str]) -> str:
    listed = ", ".join(f"`{n}`" for n in names)
    return f"the calibration was not measured under protocol {listed}: its figures may not hold"


def satisfied_line(s: dict[str, int]) -> str:
    """The passes beside the findings: how many rest on a reading nobody checked (with a
    calibration, how many of those are trusted)."""
    weighed = f" ({s['trusted']} trusted, {s['to_review']} to review)" if "trusted" in s else ""
    return (
        f"satisfied replays: {s['replays']}, {s['unreviewed']} of them resting on unreviewed "
        f"annotations{weighed}"
    )


def provenance_text(p: dict[str, Any]) -> list[str]:
    """Counts of results resting on unreviewed / gold-derived annotations, and the warning."""
    un, gd = p["unreviewed"], p["gold_derived"]
    if not un["with"] and not gd["with"]:
        return []
    lines = [
        f"replays resting on unreviewed annotations: {un['with']} ({un['without']} do not); "
        f"on gold-derived annotations: {gd['with']} ({gd['without']} do not)"
    ]
    for title, c in (("unreviewed", un), ("gold-derived", gd)):
        if c["with"]:
            lines.append(
                f"  checks resting on {title} annotations: "
                + ", ".join(f"{d} {c['checks'][d]}" for d in DIMENSIONS)
            )
    n = gd["replays"]["grounding"]
    if n:
        lines.append(
            f"warning: in {counted(n, 'replay')} a gold-derived annotation feeds a grounding "
            "check: that grounding result restates the gold label"
        )
    return lines


def judges_text(j: dict[str, Any]) -> list[str]:
    """One line per pair of judges over the items both judged."""
    if not j["pairs"]:
        return []
    lines = [f"judges compared on the items both judged ({counted(j['items'], 'item')}):"]
    for p in j["pairs"]:
        a, b = p["judges"]
        differ = ", ".join(f"{d} {p['differ'][d]}" for d in DIMENSIONS)
        lines.append(
            f"  {a} / {b}: {counted(p['items'], 'item')}, same verdict "
            f"{p['verdict_agreement']}; results differ on {differ}"
        )
    if j["repeated"]:
        lines.append(
            f"  {counted(j['repeated'], 'repeated result')} for one item and judge left out"
        )
    return lines


def _protocols_text(recheck: dict[str, Any]) -> str:
    return ", ".join(
        f"`{p['protocol']}` ({p['digest'][:19]}), {p['replays']} "
        f"replay{'' if p['replays'] == 1 else 's'}"
        for p in recheck["protocols"]
    )


def recheck_text(recheck: dict[str, Any] | None) -> list[str]:
    """The summary's lines on ``--protocol``: nothing for a run of the replays' own."""
    if recheck is None:
        return []
    lines = [f"re-checked against --protocol {_protocols_text(recheck)}"]
    dropped = recheck["dropped"]
    if dropped["replays"]:
        atoms = ", ".join(f"`{a}` {n}" for a, n in dropped["atoms"].items())
        lines.append(
            f"  annotations left out, for atoms the protocol lacks, in {dropped['replays']} "
            f"replay{'' if dropped['replays'] == 1 else 's'}: {atoms}"
        )
    return lines


def recheck_extra(recheck: dict[str, Any] | None) -> dict[str, Any]:
    """The HTML index's lines on ``--protocol`` (see ``recheck_text``)."""
    if recheck is None:
        return {}
    dropped = recheck["dropped"]
    atoms = ", ".join(f"{a} {n}" for a, n in dropped["atoms"].items())
    return {
        "re-checked against": _protocols_text(recheck).replace("`", ""),
        "annotations left out": counted(dropped["replays"], "replay")
        + (f": {atoms}" if atoms else ""),
    }
