"""The report as one self-contained HTML page, and the index page of a batch audit.

Contract:
- ``render(report, replay=None) -> str`` (``unmask check --format html``): one page with inline
  CSS and JS and no network reference; the overall result and the four dimensions first,
  then what went wrong with the quotes that force it (and, next to a check, how many
  unreviewed or gold-derived annotations it rests on), then every check, the source texts
  with every evidence span highlighted (``<mark>``, overlapping spans cut into segments in
  Python, by code point) and linked to its annotation, and the annotations themselves.
  Each highlighted piece names at most the innermost ``view.SHOWN`` spans over it, each
  text at most 200 characters, and says how many more there are, so the page grows
  linearly with the replay however deeply its spans nest;
- ``render_index(summary, rows) -> str``: the batch page of ``unmask audit --html DIR``;
  ``summary`` and ``rows`` are plain dicts (keys in ``docs/reports.md``; a missing count is
  computed from ``rows``; ``index_row(record, href)`` builds the row of one result from
  its ``unmask.checking.record.ResultRecord``, fresh or read back); the table sorts and
  filters with a little inline JS and is a plain table without it; the gold × observed
  label table is one table, or one per protocol when the run mixes protocols;
- Jinja2 templates with autoescape on: every piece of user text is escaped; results always
  carry a symbol and a word, never colour alone; same input, same bytes (no time, no
  random ids).

Size: the report page and the batch index share one Jinja2 environment, its filters and
its escaping; splitting them would copy that set-up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
import markupsafe

from unmask.checking.record import ResultRecord
from unmask.checking.report import (
    BASE_NAMES,
    ENTAILED,
    NOT_CHECKED,
    NOT_SPECIFIED,
    OK,
    REFUTED,
    SATISFIED,
    UNDERDETERMINED,
    UNKNOWN,
    VIOLATED,
    CheckResult,
    Explanation,
    Item,
    Report,
    Witnesses,
)
from unmask.ir.text import expr_text
from unmask.plumbing.names import pair_family
from unmask.plumbing.safe import finish
from unmask.render import view as ev

TEMPLATES = Path(__file__).parent / "templates"
OUTCOMES = (SATISFIED, VIOLATED, UNKNOWN)
DIM_OUTCOMES = (OK, VIOLATED, UNKNOWN, NOT_CHECKED)


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["label"] = ev.label
    env.filters["css"] = _css_class
    env.filters["clean"] = lambda s: ev.clean(str(s))
    env.filters["ticks"] = _ticks
    env.filters["whole"] = ev.whole_reading
    env.filters["brief"] = _brief
    return env


_BRIEF = 200


def _brief(text: str) -> str:
    """Text repeated for every span (a title, a tag) is bounded, so a page stays linear in
    the replay; the annotation list shows it in full."""
    text = str(text)
    return text if len(text) <= _BRIEF else text[: _BRIEF - 1] + "…"


def _ticks(text: str) -> markupsafe.Markup:
    """Escape a message, then show its `backticked` names as code."""
    parts = str(markupsafe.escape(ev.clean(text))).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: show the text as it is
        return markupsafe.Markup("`".join(parts))
    out = [p if i % 2 == 0 else f"<code>{p}</code>" for i, p in enumerate(parts)]
    return markupsafe.Markup("".join(out))


def _css_class(result: str | None) -> str:
    return {
        SATISFIED: "ok",
        OK: "ok",
        VIOLATED: "bad",
        UNKNOWN: "unk",
        "TRUE": "true",
        "FALSE": "false",
    }.get(result or "", "none")


# --- one report ----------------------------------------------------------------------------


class _Views:
    """Turns report parts into template data; look-ups are built once per report."""

    def __init__(
        self, report: Report, replay: Any, marks: Sequence[ev.Mark], trust: Any = None
    ) -> None:
        self.report = report
        self.replay = replay
        self.look = ev.Lookup(replay, trust)
        self.index = ev.mark_index(marks)
        self.constraints = (
            {} if replay is None else {c.name: c.expr for c in replay.protocol.constraints}
        )
        self.rules = list(self.look.rules.values())

    def quote(self, q: Any, atom: str) -> dict:
        mark = None if q.whole else self.index.get((atom, q.source, q.start, q.end))
        return {
            "source": q.source,
            "start": q.start,
            "end": q.end,
            "text": ev.clean(q.quote),
            "target": None if mark is None else mark.id,
            "whole": ev.whole_reading(q.source) if q.whole else "",
        }

    def item(self, item: Item) -> dict:
        if item.kind == "annotation":
            atom = item.atom or ""
            return {
                "kind": "annotation",
                "atom": atom,
                "role": self.look.role(atom),
                "description": self.look.description(atom),
                "value": item.value,
                "quotes": [self.quote(q, atom) for q in item.evidence],
                "explanation": item.explanation or "",
                "by": ev.clean(ev.item_provenance(item, self.look)),
            }
        if item.kind == "constraint":
            expr = self.constraints.get(item.name or "")
            text = "" if expr is None else expr_text(expr)
            return {"kind": "constraint", "name": item.name, "expr": text}
        if item.kind == "labels":
            labels = () if self.look.protocol is None else self.look.protocol.labels
            return {"kind": "labels", "expr": " | ".join(labels)}
        return {"kind": "decision", "expr": ev.item_rule(item, self.look) or "pass iff …"}

    def explanation(self, expl: Explanation | None) -> dict | None:
        if expl is None:
            return None
        return {"minimal": expl.minimal, "items": [self.item(i) for i in expl.items]}

    def witnesses(self, ws: Witnesses | None) -> list[dict]:
        if ws is None:
            return []
        out = []
        for side, w in (("could hold with", ws.holds), ("could fail with", ws.fails)):
            atoms = [
                {
                    "atom": a.atom,
                    "description": self.look.description(a.atom),
                    "value": "TRUE" if a.value else "FALSE",
                    "possible": a.origin != "observed",
                }
                for a in w.atoms
            ]
            out.append({"side": side, "verdict": w.verdict, "atoms": atoms})
        return out

    def check(self, c: ev.Check, position: int) -> dict:
        res: CheckResult = c.result
        return {
            "key": c.key,
            "anchor": f"check-{position}",
            "dimension": c.dimension,
            "title": c.title,
            "finding": ev.finding(self.report, c, self.replay, self.look)
            if c.outcome != OK
            else "",
            "status": res.status,
            "outcome": res.outcome,
            "detail": res.detail,
            "explanation": self.explanation(res.explanation),
            "witnesses": self.witnesses(res.witnesses),
            "rests": ev.resting(res, self.look),
            "standing": ev.standing_text(res, self.look),
            # the text of each claim or passage the finding names, beside it
            "members": [
                {"member": m, "domain": d, "text": t}
                for m, d, t in ev.named_members(
                    res, self.look, c.sides if c.dimension == "grounding" else ()
                )
            ]
            if res.status in (REFUTED, UNDERDETERMINED)
            else [],
            "trust": None if (t := ev.trust_of(res, self.look)) is None else t.level,
        }


def _sources_view(replay: Any, marks: Sequence[ev.Mark]) -> list[dict]:
    if replay is None:
        return []
    names = [s for s in ev.SOURCE_ORDER if s in replay.sources]
    names += sorted(s for s in replay.sources if s not in ev.SOURCE_ORDER)
    out = []
    for name in names:
        text = replay.sources[name]
        own = [m for m in marks if m.source == name]
        out.append(
            {
                "name": name,
                "segments": ev.segments(text, own),
                "count": len(own),
                "empty": not text,
            }
        )
    return out


def _annotations_view(replay: Any, marks: Sequence[ev.Mark], look: ev.Lookup) -> list[dict]:
    if replay is None:
        return []
    by_ann: dict[str, list[ev.Mark]] = {}
    for m in marks:
        by_ann.setdefault(m.id.split("-")[1], []).append(m)
    out = []
    for ai, ann in enumerate(replay.annotations):
        out.append(
            {
                "anchor": f"ann-{ai}",
                "atom": ann.atom,
                "role": look.role(ann.atom),
                "description": look.description(ann.atom),
                "value": ann.value,
                "explanation": ann.explanation,
                "marks": by_ann.get(str(ai), []),
                "by": ev.clean(ev.provenance(ann.by)),
                "readings": [
                    {
                        "value": r.value,
                        "by": ev.clean(ev.provenance(r.by)),
                        "explanation": ev.clean(r.explanation),
                        "quotes": r.evidence,
                    }
                    for r in ann.readings
                ],
            }
        )
    return out


def context(report: Report, replay: Any = None, trust: Any = None) -> dict:
    """Everything the report template shows, as plain data (also used by tests); ``trust``
    (a calibration) adds each finding's trust and ``calibration``, the note on it."""
    marks = ev.marks(replay)
    vw = _Views(report, replay, marks, trust)
    views = [vw.check(c, i) for i, c in enumerate(ev.checks(report))]
    findings = [v for v in views if v["outcome"] == VIOLATED]
    findings += [v for v in views if v["outcome"] not in (OK, VIOLATED)]
    why = ev.why(report.overall, report.reasons)
    dims = report.dimensions.to_json()
    dimensions = [
        {
            "key": d,
            "title": ev.DIMENSION_TITLES[d],
            "question": ev.DIMENSION_QUESTIONS[d],
            "result": dims[d],
            "checks": [v for v in views if v["dimension"] == d],
        }
        for d in ev.DIMENSIONS
    ]
    ann_anchor = {}
    if replay is not None:
        ann_anchor = {m.id: f"ann-{m.id.split('-')[1]}" for m in marks}
    conflicts = []
    if report.bases is not None:
        for name in BASE_NAMES:
            expl = report.bases.conflict(name)
            conflicts.append(
                {
                    "name": name,
                    "state": report.bases.state(name),
                    "conflict": vw.explanation(expl),
                }
            )
    bad = any(v["outcome"] == VIOLATED for v in findings)
    unsettled = any(v["outcome"] != VIOLATED for v in findings)
    findings_title = {
        (True, False): "What went wrong",
        (True, True): "What went wrong, and what is not settled",
        (False, True): "What is not settled",
    }.get((bad, unsettled), "")
    return {
        "report": report,
        "findings_title": findings_title,
        "title": ev.clean(report.replay),
        "rules": vw.rules,
        "protocol_text": "" if replay is None else ev.clean(replay.protocol.text),
        "dimensions": dimensions,
        "findings": findings,
        "sources": _sources_view(replay, marks),
        "annotations": _annotations_view(replay, marks, vw.look),
        "ann_anchor": ann_anchor,
        "bases": conflicts,
        "not_specified": ev.not_specified(report),
        # why the result is what it is, and apart what is still not OK but is not why
        "reasons": [ev.clean(r.message) for r in why[0]],
        "also": [ev.clean(r.message) for r in why[1]],
        "also_title": ev.WHY_ALSO.get(report.overall, ""),
        "definitions": _definitions_view(replay),
        "calibration": [ev.clean(x) for x in ev.calibration_note(vw.look, report.protocol) if x],
    }


def _definitions_view(replay: Any) -> list[dict]:
    """Each definition the protocol uses, as written, with what it stands for (shown on
    demand: reports print expressions with definition names kept)."""
    if replay is None:
        return []
    return [
        {
            "name": ev.clean(d.name),
            "expr": ev.clean(expr_text(d.expr)),
            "expanded": ev.clean(expr_text(d.expr, expand=True)),
        }
        for d in replay.protocol.definitions
    ]


def render(report: Report, replay: Any = None, *, trust: Any = None) -> str:
    # spans were cut before; a last pass applies the output policy to the whole page
    ctx = context(report, replay, trust)
    return finish("html", environment().get_template("report.html.j2").render(**ctx))


# --- the batch index -------------------------------------------------------------------------


def _count(rows: Sequence[Mapping], key: str, values: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = dict.fromkeys(values, 0)
    for r in rows:
        v = r.get(key)
        if v in out:
            out[v] += 1
    return out


def _dim_counts(rows: Sequence[Mapping], dim: str) -> dict[str, int]:
    out: dict[str, int] = dict.fromkeys(DIM_OUTCOMES, 0)
    for r in rows:
        v = (r.get("dimensions") or {}).get(dim)
        if v in out:
            out[v] += 1
    return out


def _match_label(value: Any) -> str:
    return {True: "matches gold", False: "differs from gold"}.get(value, "no gold")


CROSS_ROWS = ("matches gold", "differs from gold", "no gold")


def _cross_counts(rows: Sequence[Mapping]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {k: dict.fromkeys(OUTCOMES, 0) for k in CROSS_ROWS}
    for r in rows:
        o = r.get("overall")
        if o in OUTCOMES:
            out[_match_label(r.get("verdict_matches_gold"))][o] += 1
    return out


def _bars(counts: Mapping[str, int], order: Sequence[str]) -> dict:
    total = sum(counts.get(k, 0) for k in order)
    parts = []
    for k in order:
        n = int(counts.get(k, 0))
        pct = 0.0 if total == 0 else 100.0 * n / total
        parts.append({"key": k, "n": n, "pct": f"{pct:.1f}", "label": ev.label(k)})
    return {"total": total, "parts": parts}


def _confusion_from_rows(rows: Sequence[Mapping]) -> dict[str, Any]:
    """The gold × observed table of ``Summary.confusion_json`` from the rows alone."""
    labels: dict[str, None] = {}
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for r in rows:
        verdict, gold, overall = r.get("verdict"), r.get("gold"), r.get("overall")
        if not (isinstance(verdict, str) and isinstance(gold, str) and overall in OUTCOMES):
            continue
        labels.setdefault(verdict)
        labels.setdefault(gold)
        c = counts.setdefault((gold, verdict), dict.fromkeys(("replays", *OUTCOMES), 0))
        c["replays"] += 1
        c[overall] += 1
    empty = dict.fromkeys(("replays", *OUTCOMES), 0)
    return {
        "labels": list(labels),
        "table": {g: {o: counts.get((g, o), empty) for o in labels} for g in labels},
    }


def _confusions(summary: Mapping[str, Any], rows: Sequence[Mapping]) -> list[dict]:
    """Template data of the gold × observed tables: one per protocol when the run mixes
    protocols (their labels are not comparable), else the one table; none without gold."""
    by_protocol = summary.get("confusion_by_protocol")
    if by_protocol is None and not summary.get("confusion"):
        groups: dict[str, list[Mapping]] = {}
        for r in rows:
            if isinstance(r.get("protocol"), str):
                groups.setdefault(r["protocol"], []).append(r)
        by_protocol = {name: _confusion_from_rows(group) for name, group in groups.items()}
    if by_protocol and len(by_protocol) > 1:
        tables = ((name, _confusion(c)) for name, c in by_protocol.items())
        return [{**t, "protocol": ev.clean(str(name))} for name, t in tables if t is not None]
    one = _confusion(summary.get("confusion") or _confusion_from_rows(rows))
    return [] if one is None else [{**one, "protocol": None}]


def _confusion(c: Mapping[str, Any]) -> dict | None:
    """Template data of the gold × observed table; None when no replay has a gold label."""
    labels = [str(x) for x in c.get("labels") or ()]
    table = c.get("table") or {}
    rows, any_cell = [], False
    for g in labels:
        cells = []
        for o in labels:
            x = (table.get(g) or {}).get(o) or {}
            n = int(x.get("replays", 0))
            any_cell = any_cell or n > 0
            cells.append(
                {
                    "n": n,
                    "diagonal": g == o,
                    "unreviewed": int(x.get("unreviewed", 0)),
                    "gold_derived": int(x.get("gold_derived", 0)),
                    **_bars(x, OUTCOMES),
                }
            )
        rows.append({"gold": ev.clean(g), "cells": cells})
    if not any_cell:
        return None
    return {"labels": [ev.clean(x) for x in labels], "rows": rows}


def _provenance(p: Mapping[str, Any]) -> dict | None:
    """Template data of the provenance counts; None when no result rests on such annotations."""
    out: dict[str, Any] = {}
    for flag, title in (("unreviewed", "unreviewed"), ("gold_derived", "gold-derived")):
        c = p.get(flag) or {}
        out[flag] = {
            "title": title,
            "with": int(c.get("with", 0)),
            "without": int(c.get("without", 0)),
            "checks": [(d, int((c.get("checks") or {}).get(d, 0))) for d in ev.DIMENSIONS],
        }
    if not out["unreviewed"]["with"] and not out["gold_derived"]["with"]:
        return None
    grounding = int(((p.get("gold_derived") or {}).get("replays") or {}).get("grounding", 0))
    out["warning"] = (
        f"In {grounding} replay{'' if grounding == 1 else 's'} a gold-derived annotation feeds a "
        "grounding check: that grounding result restates the gold label."
        if grounding
        else ""
    )
    return out


def _judges(j: Mapping[str, Any]) -> list[dict]:
    out = []
    for p in j.get("pairs") or ():
        a, b = (ev.clean(str(x)) for x in p.get("judges", ("", "")))
        items = int(p.get("items", 0))
        agree = int(p.get("verdict_agreement", 0))
        out.append(
            {
                "a": a,
                "b": b,
                "count": items,  # not `items`: a template would read the dict method
                "agree": agree,
                "pct": f"{0.0 if items == 0 else 100.0 * agree / items:.1f}",
                "differ": [int((p.get("differ") or {}).get(d, 0)) for d in ev.DIMENSIONS],
            }
        )
    return out


def index_context(summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> dict:
    total = int(summary.get("total", len(rows)))
    overall = summary.get("overall") or _count(rows, "overall", OUTCOMES)
    dims_in = summary.get("dimensions") or {}
    dims = []
    for d in ev.DIMENSIONS:
        counts = dims_in.get(d) or _dim_counts(rows, d)
        dims.append({"key": d, "title": ev.DIMENSION_TITLES[d], **_bars(counts, DIM_OUTCOMES)})
    cross = summary.get("cross") or _cross_counts(rows)
    cross_rows = [
        {"label": k, **_bars(cross.get(k, {}), OUTCOMES)} for k in CROSS_ROWS if k in cross
    ]
    table = []
    for r in rows:
        dimensions = r.get("dimensions") or {}
        table.append(
            {
                "id": ev.clean(str(r.get("id", ""))),
                "overall": r.get("overall"),
                "dims": [dimensions.get(d) for d in ev.DIMENSIONS],
                "verdict": r.get("verdict"),
                "gold": r.get("gold"),
                "match": r.get("verdict_matches_gold"),
                "href": ev.clean(str(r.get("href") or r.get("link") or "")),
                "failed": _listed(r.get("failed")),
                "open": _listed(r.get("open")),
                "error": ev.clean(str(r["error"])) if r.get("error") else None,
                "why": ev.clean(str(r["why"])) if r.get("why") else None,
                "trust": ev.clean(str(r["trust"])) if r.get("trust") else None,
            }
        )
    extra = [
        (ev.clean(str(k)), ev.clean(str(v)))
        for k, v in (summary.get("extra") or {}).items()
        if isinstance(v, (str, int, float))
    ]
    return {
        "title": ev.clean(str(summary.get("title", "unmask audit"))),
        "total": total,
        "overall": _bars(overall, OUTCOMES),
        "dimensions": dims,
        "dim_keys": [(d, ev.DIMENSION_TITLES[d]) for d in ev.DIMENSIONS],
        "cross": cross_rows,
        "outcomes": OUTCOMES,
        "rows": table,
        "extra": extra,
        "confusions": _confusions(summary, rows),
        "provenance": _provenance(summary.get("provenance") or {}),
        "judges": _judges(summary.get("judges") or {}),
        "check_tables": _check_tables(rows),
        "group_outcomes": GROUP_OUTCOMES,
    }


MAX_LISTED = 6  # checks named per row of the index; the rest are counted


def _listed(names: Any) -> dict[str, Any]:
    """The first ``MAX_LISTED`` of a row's check names, and how many more there are."""
    names = [ev.clean(str(n)) for n in names or ()]
    return {"names": names[:MAX_LISTED], "more": max(0, len(names) - MAX_LISTED)}


def _failing(record: ResultRecord) -> tuple[list[str], list[str]]:
    """The checks of a result that failed (requirement ids, grounding pairs with their
    arrow), and those left open: undecided, or a requirement that was not observable."""
    failed: list[str] = []
    open_: list[str] = []

    def put(name: str, status: str | None) -> None:
        if status == REFUTED:
            failed.append(name)
        elif status not in (None, ENTAILED, NOT_SPECIFIED):
            open_.append(name)

    for rid, status, coverage in record.requirements:
        put(rid, status)
        if coverage == REFUTED:
            open_.append(f"{rid} (not observable)")
    for judge, context, status, direction in record.grounding:
        put(f"{judge} {direction} {context}", status)
    return failed, open_


def index_row(record: ResultRecord, href: str, trust: Any = None) -> dict[str, Any]:
    """The ``rows`` entry of ``render_index`` for one result (``unmask.checking.record``): a checked
    replay, or one that could not be checked, which shows as INVALID without a link and
    with its first error's code; with ``trust`` (a calibration), a VIOLATED replay's level
    (``confirmed``, ``trusted`` or ``to review``) as ``trust``."""
    if record.error is not None:
        return {
            "id": record.location,
            "overall": "INVALID",
            "dimensions": {},
            "href": "",
            "error": record.error,
            "why": ev.first_error(record.errors),
        }
    failed, open_ = _failing(record)
    groups: dict[str, dict[str, str]] = {"requirements": {}, "grounding": {}}
    for rid, status, _ in record.requirements:
        groups["requirements"][rid] = _group_outcome(status)
    for judge, context, status, direction in record.grounding:
        family = pair_family(judge, direction, context)
        was = groups["grounding"].get(family)
        now = _group_outcome(status)
        # a family is violated when one of its pairs is, else open when one is open
        if was is None or GROUP_OUTCOMES.index(now) < GROUP_OUTCOMES.index(was):
            groups["grounding"][family] = now
    if record.dimensions[:1] == (VIOLATED,):
        failed.insert(0, "verdict")
    return {
        "id": record.replay or "",
        "overall": record.overall,
        # a record made by hand may leave its dimensions out: they show as not checked
        "dimensions": dict(zip(ev.DIMENSIONS, record.dimensions, strict=False)),
        "verdict": record.observed,
        "gold": record.gold,
        "verdict_matches_gold": record.matches,
        "protocol": record.protocol,
        "href": href,
        "failed": failed,
        "open": open_,
        "groups": groups,
        **_row_trust(record, trust),
    }


GROUP_OUTCOMES = ("violated", "open", "satisfied")  # worst first
MAX_LINKED = 12  # replays linked per cell of a check table; the rest are counted


def _group_outcome(status: str | None) -> str:
    if status == REFUTED:
        return "violated"
    return "satisfied" if status in (ENTAILED, NOT_SPECIFIED) else "open"


def _check_tables(rows: Sequence[Mapping[str, Any]]) -> list[dict]:
    """Per requirement and per grounding family: which replays satisfied, violated or
    left it open, each a link — the view a person auditing a judge asks for first."""
    out = []
    for kind, title in (("requirements", "requirement"), ("grounding", "grounding")):
        cells: dict[str, dict[str, list[dict]]] = {}
        for r in rows:
            for name, got in ((r.get("groups") or {}).get(kind) or {}).items():
                cell = cells.setdefault(name, {k: [] for k in GROUP_OUTCOMES})
                cell[got].append(
                    {"id": ev.clean(str(r.get("id", ""))), "href": ev.clean(str(r.get("href", "")))}
                )
        rows_out = [
            {
                "name": ev.clean(name),
                "cells": [
                    {
                        "outcome": k,
                        "count": len(v),
                        "links": v[:MAX_LINKED],
                        "more": max(0, len(v) - MAX_LINKED),
                    }
                    for k, v in cell.items()
                ],
            }
            for name, cell in sorted(cells.items())
        ]
        if rows_out:
            out.append({"kind": kind, "title": title, "rows": rows_out})
    return out


def _row_trust(record: ResultRecord, trust: Any) -> dict[str, str]:
    if trust is None or record.overall != VIOLATED:
        return {}
    from unmask.checking.record import level_of
    from unmask.review.calibration import WORDS

    return {"trust": WORDS[level_of(record, trust)]}


def render_index(summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """The batch page. ``rows``: one dict per replay with ``id``, ``overall``,
    ``dimensions`` (dimension -> OK/VIOLATED/UNKNOWN/NOT_CHECKED), ``verdict``, ``gold``,
    ``verdict_matches_gold``, ``protocol`` (its name), ``href`` (relative link to its
    report), and optionally ``failed`` and ``open`` (the names of the checks that failed
    and were left open), ``error`` (why it could not be checked) and ``trust`` (a VIOLATED
    replay's level under a calibration); ``summary``:
    optional ``title``, ``total``, ``overall``, ``dimensions``, ``cross``, ``extra``,
    ``confusion``, ``confusion_by_protocol``, ``provenance``, ``judges``
    (see ``docs/reports.md``)."""
    page = environment().get_template("index.html.j2").render(**index_context(summary, rows))
    return finish("html", page)
