"""The report as text for a person (``unmask check --format text``).

Contract: ``render(report, replay=None, *, color=False) -> str``. The overall result
comes first, then the four dimensions with their checks; every violation shows the quotes
that prove it; every underdetermined check shows one witness per side, with completed
values marked as possibilities, not observations; a check that rests on annotations a rule,
a model or the gold label made says so ("rests on 2 unreviewed annotations"), and each
quoted annotation names who made it when the replay says; an atom whose readers did not
agree lists each reader's value, quotes and reason. Every line goes through
``safe.printable``, so control characters from a replay are shown as escapes, never acted
on by a terminal; colour is ANSI via ``click.style``, added after that, and only when
``color`` is set (the command line sets it for terminals only). With ``trust`` (a
calibration), each finding, and each passing check resting on unreviewed readings, says
its trust under the check. The report ends with why its result is what it is (``why
VIOLATED:``: the reasons that decided it, ``words.why``), then, apart, the reasons that are
not OK but did not decide it (``also open (not why VIOLATED):``). Deterministic.
"""

from __future__ import annotations

from typing import Any

import click

from unmask.checking.report import (
    BASE_NAMES,
    ENTAILED,
    NOT_SPECIFIED,
    OK,
    REFUTED,
    SATISFIED,
    UNDERDETERMINED,
    VIOLATED,
    CheckResult,
    Explanation,
    Item,
    Reason,
    Report,
    Witnesses,
)
from unmask.ir.text import expr_text
from unmask.plumbing.safe import printable
from unmask.render.words import DIMENSION_TITLES as titles
from unmask.render.words import (
    WHY_ALSO,
    Lookup,
    calibration_note,
    item_provenance,
    item_rule,
    members_text,
    named_members,
    provenance,
    resting,
    standing_text,
    whole_reading,
    why,
)

_COLOURS: dict[str, str] = {SATISFIED: "green", OK: "green", VIOLATED: "red"}
_QUOTE_MAX = 160


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _QUOTE_MAX else text[: _QUOTE_MAX - 1] + "…"


class _Out:
    def __init__(self, color: bool) -> None:
        self.lines: list[str] = []
        self.color = color
        self.constraints: dict[str, str] = {}
        self.look: Any = None  # the view's Lookup of the replay: who made each annotation

    def add(self, indent: int, text: str) -> None:
        self.lines.append("  " * indent + printable(text))

    def result(self, indent: int, head: str, value: str | None, tail: str = "") -> None:
        """``head: VALUE tail`` with the value coloured (after the user text is escaped)."""
        value = printable("-" if value is None else value)
        colour = _COLOURS.get(value, "yellow")
        word = click.style(value, fg=colour, bold=True) if self.color else value
        self.lines.append(f"{'  ' * indent}{printable(head)}: {word}{printable(tail)}")


def _item(out: _Out, indent: int, item: Item) -> None:
    if item.kind == "annotation":
        by = _by(out, item)
        out.add(indent, f"- annotation `{item.atom}` = {item.value}" + (f" ({by})" if by else ""))
        for q in item.evidence:
            if q.whole:
                out.add(indent + 2, whole_reading(q.source))
            else:
                out.add(indent + 2, f'{q.source}[{q.start}:{q.end}] "{_short(q.quote)}"')
        if item.explanation:
            out.add(indent + 2, f"note: {_short(item.explanation)}")
    elif item.kind == "constraint":
        body = out.constraints.get(item.name or "")
        out.add(indent, f"- constraint `{item.name}`" + (f": {body}" if body else ""))
    elif item.kind == "labels":
        out.add(indent, f"- {item_rule(item, out.look)}")
    else:
        out.add(indent, f"- decision: {item_rule(item, out.look) or 'pass iff …'}")


def _explanation(out: _Out, indent: int, title: str, expl: Explanation | None) -> None:
    if expl is None:
        return
    if not expl.items:
        out.add(indent, f"{title} nothing: it is decided by its own form")
        return
    suffix = "" if expl.minimal else " (not minimised: the solver timed out)"
    out.add(indent, f"{title}{suffix}")
    for it in expl.items:
        _item(out, indent + 1, it)


def _witnesses(out: _Out, indent: int, ws: Witnesses | None) -> None:
    if ws is None:
        return
    for title, w in (("could hold with", ws.holds), ("could fail with", ws.fails)):
        values = [
            f"{a.atom}={'TRUE' if a.value else 'FALSE'}"
            + (" (observed)" if a.origin == "observed" else " (possible)")
            for a in w.atoms
        ]
        if w.verdict is not None:
            values.append(f"verdict {w.verdict}")
        out.add(indent, f"{title}: {', '.join(values) if values else '(nothing)'}")


def _by(out: _Out, item: Item) -> str:
    return item_provenance(item, out.look)


def _check(
    out: _Out, indent: int, head: str, res: CheckResult, sides: tuple[str, ...] = ()
) -> None:
    tail = f" ({res.detail})" if res.detail else ""
    rests = resting(res, out.look)
    if rests:
        tail += f" ({rests})"
    out.result(indent, head, res.status, tail)
    if found := standing_text(res, out.look):
        out.add(indent + 1, found)
    if res.status in (REFUTED, UNDERDETERMINED) and (named := named_members(res, out.look, sides)):
        out.add(indent + 1, members_text(named))
    if res.status == REFUTED:
        _explanation(out, indent + 1, "refuted by", res.explanation)
    elif res.status == ENTAILED and res.explanation is not None:
        # what an OK check rests on, in one line; the quotes are kept for violations
        names = [
            f"`{i.atom}`={i.value}" + (f" ({by})" if (by := _by(out, i)) else "")
            if i.kind == "annotation"
            else (i.name if i.kind == "constraint" else i.kind)
            for i in res.explanation.items
        ]
        out.add(
            indent + 1, f"rests on: {', '.join(names) if names else 'nothing (it always holds)'}"
        )
    elif res.status == UNDERDETERMINED:
        _witnesses(out, indent + 1, res.witnesses)


def _disagreements(out: _Out, report: Report) -> None:
    """Each atom whose readers did not agree: every reader's value, quotes and reason."""
    for a in report.disagreements:
        out.add(0, f"readers disagree on `{a.atom}`, so it is {a.value}:")
        for r in a.readings:
            why = f": {_short(r.explanation)}" if r.explanation else ""
            out.add(1, f"- {r.value} by {provenance(r.by)}{why}")
            for q in r.evidence:
                out.add(3, f'"{_short(q.quote)}" ({q.source} [{q.start}, {q.end}))')


def render(report: Report, replay: Any = None, *, color: bool = False, trust: Any = None) -> str:
    """The text report; ``color`` adds ANSI colour to the result words; ``trust`` (an
    ``unmask.review.calibration.Trust``) adds each finding's trust."""
    out = _Out(color)
    out.look = Lookup(replay if getattr(replay, "protocol", None) is not None else None, trust)
    if replay is not None and getattr(replay, "protocol", None) is not None:
        out.constraints = {c.name: expr_text(c.expr) for c in replay.protocol.constraints}
    out.result(0, report.replay, report.overall)
    out.add(1, f"protocol `{report.protocol}`, backend {report.backend}")
    if report.recheck is not None:
        rc = report.recheck
        out.add(1, f"re-checked against `--protocol` ({rc.digest[:19]}), not the replay's own")
        if rc.dropped:
            names = ", ".join(f"`{a}`" for a in rc.dropped)
            out.add(1, f"left out, annotated atoms the protocol lacks: {names}")
    note, warning = calibration_note(out.look, report.protocol)
    if note:
        out.add(1, note)
    if warning:
        out.add(1, f"warning: {warning}")
    if report.gold is not None:
        match = "yes" if report.verdict_matches_gold else "no"
        out.add(1, f"gold {report.gold}; observed verdict matches gold: {match}")
    if report.translation != "valid":
        out.add(1, f"translation `{report.translation}`: nothing was solved")
    if report.bases is not None:
        b = report.bases
        out.add(1, f"bases: proto {b.proto}, evid {b.evid}, all {b.all}")
        for name in BASE_NAMES:
            conflict = b.conflict(name)
            if conflict is not None:
                _explanation(out, 2, f"base `{name}` conflict:", conflict)
    dims = report.dimensions
    out.add(0, "")
    out.result(0, titles["verdict"], dims.verdict)
    _check(out, 1, f"observed {report.verdict.observed}", report.verdict.result)
    out.result(0, titles["procedure"], dims.procedure)
    for r in report.requirements:
        _check(out, 1, f"requirement `{r.id}` ({_short(r.description)})", r.holds)
    out.result(0, titles["coverage"], dims.coverage)
    for r in report.requirements:
        if r.coverage.status == NOT_SPECIFIED:
            out.add(1, f"`{r.id}`: not specified")
        else:
            _check(out, 1, f"`{r.id}` addressed", r.coverage)
    out.result(0, titles["grounding"], dims.grounding)
    for g in report.grounding:
        direction = getattr(g, "direction", "~")
        _check(out, 1, f"`{g.judge}` {direction} `{g.context}`", g.result, (g.judge, g.context))
    if report.unannotated or report.unknown:
        out.add(0, "")
    if report.unannotated:
        out.add(0, f"unannotated (unknown, never read as false): {', '.join(report.unannotated)}")
    if report.unknown:
        out.add(0, f"annotated UNKNOWN: {', '.join(report.unknown)}")
    _disagreements(out, report)
    if report.reasons and report.overall != SATISFIED:
        deciding, also = why(report.overall, report.reasons)
        out.add(0, "")
        out.add(0, f"why {report.overall}:")
        _reasons(out, deciding)
        if also:  # still not OK, but not why: listed apart, so no reader hunts a break in them
            out.add(0, f"{WHY_ALSO[report.overall]} (not why {report.overall}):")
            _reasons(out, also)
    return "\n".join(out.lines) + "\n"


def _reasons(out: _Out, reasons: tuple[Reason, ...]) -> None:
    for reason in reasons:
        out.add(1, f"- {reason.message}")
        if reason.subject == "base:proto" and reason.code == "inconsistent-base":
            out.add(2, "help: `unmask analyze` shows why the protocol contradicts itself")
