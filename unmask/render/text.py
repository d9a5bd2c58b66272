"""The report as text for a person (``unmask check --format text``).

Contract: ``render(report, replay=None, *, color=False) -> str``. The overall result
comes first, then the four dimensions with their checks; every violation shows the quotes
that prove it; every underdetermined check shows one witness per side, with completed
values marked as possibilities, not observations. Every line goes through
``safe.printable``, so control characters from a replay are shown as escapes, never acted
on by a terminal; colour is ANSI via ``click.style``, added after that, and only when
``color`` is set (the command line sets it for terminals only). Deterministic.
"""

from __future__ import annotations

from typing import Any

import click

from unmask.irtext import expr_text
from unmask.render.safe import printable
from unmask.report import (
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
    Report,
    Witnesses,
)

_COLOURS = {SATISFIED: "green", OK: "green", VIOLATED: "red"}
_QUOTE_MAX = 160


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _QUOTE_MAX else text[: _QUOTE_MAX - 1] + "…"


class _Out:
    def __init__(self, color: bool) -> None:
        self.lines: list[str] = []
        self.color = color
        self.constraints: dict[str, str] = {}

    def add(self, indent: int, text: str) -> None:
        self.lines.append("  " * indent + printable(text))

    def result(self, indent: int, head: str, value: str | None, tail: str = "") -> None:
        """``head: VALUE tail`` with the value coloured (after the user text is escaped)."""
        value = printable("-" if value is None else value)
        colour = _COLOURS.get(value, "yellow")
        word = click.style(value, fg=colour, bold=True) if self.color else value
        self.lines.append(f"{'  ' * indent}{printable(head)}: {word}{printable(tail)}")


def _item(out: _Out, indent: int, item: Item, decision: str) -> None:
    if item.kind == "annotation":
        out.add(indent, f"- annotation `{item.atom}` = {item.value}")
        for q in item.evidence:
            out.add(indent + 2, f'{q.source}[{q.start}:{q.end}] "{_short(q.quote)}"')
        if item.explanation:
            out.add(indent + 2, f"note: {_short(item.explanation)}")
    elif item.kind == "constraint":
        body = out.constraints.get(item.name or "")
        out.add(indent, f"- constraint `{item.name}`" + (f": {body}" if body else ""))
    else:
        out.add(indent, f"- decision: pass iff {decision}")


def _explanation(
    out: _Out, indent: int, title: str, expl: Explanation | None, decision: str
) -> None:
    if expl is None:
        return
    if not expl.items:
        out.add(indent, f"{title} nothing: it is decided by its own form")
        return
    suffix = "" if expl.minimal else " (not minimised: the solver timed out)"
    out.add(indent, f"{title}{suffix}")
    for it in expl.items:
        _item(out, indent + 1, it, decision)


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


def _check(out: _Out, indent: int, head: str, res: CheckResult, decision: str) -> None:
    tail = f" ({res.detail})" if res.detail else ""
    out.result(indent, head, res.status, tail)
    if res.status == REFUTED:
        _explanation(out, indent + 1, "refuted by", res.explanation, decision)
    elif res.status == ENTAILED and res.explanation is not None:
        # what an OK check rests on, in one line; the quotes are kept for violations
        names = [
            f"`{i.atom}`={i.value}" if i.kind == "annotation" else (i.name or i.kind)
            for i in res.explanation.items
        ]
        out.add(
            indent + 1, f"rests on: {', '.join(names) if names else 'nothing (it always holds)'}"
        )
    elif res.status == UNDERDETERMINED:
        _witnesses(out, indent + 1, res.witnesses)


def render(report: Report, replay: Any = None, *, color: bool = False) -> str:
    """The text report; ``color`` adds ANSI colour to the result words."""
    # the view imports this module (for expr_text): import it when rendering, not before
    from unmask.render.view import DIMENSION_TITLES as titles

    out = _Out(color)
    decision = "…"
    if replay is not None and getattr(replay, "protocol", None) is not None:
        decision = expr_text(replay.protocol.decision)
        out.constraints = {c.name: expr_text(c.expr) for c in replay.protocol.constraints}
    out.result(0, report.replay, report.overall)
    out.add(1, f"protocol `{report.protocol}`, backend {report.backend}")
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
                _explanation(out, 2, f"base `{name}` conflict:", conflict, decision)
    dims = report.dimensions
    out.add(0, "")
    out.result(0, titles["verdict"], dims.verdict)
    _check(out, 1, f"observed {report.verdict.observed}", report.verdict.result, decision)
    out.result(0, titles["procedure"], dims.procedure)
    for r in report.requirements:
        _check(out, 1, f"requirement `{r.id}` ({_short(r.description)})", r.holds, decision)
    out.result(0, titles["coverage"], dims.coverage)
    for r in report.requirements:
        if r.coverage.status == NOT_SPECIFIED:
            out.add(1, f"`{r.id}`: not specified")
        else:
            _check(out, 1, f"`{r.id}` addressed", r.coverage, decision)
    out.result(0, titles["grounding"], dims.grounding)
    for g in report.grounding:
        _check(out, 1, f"`{g.judge}` ~ `{g.context}`", g.result, decision)
    if report.unannotated or report.unknown:
        out.add(0, "")
    if report.unannotated:
        out.add(0, f"unannotated (unknown, never read as false): {', '.join(report.unannotated)}")
    if report.unknown:
        out.add(0, f"annotated UNKNOWN: {', '.join(report.unknown)}")
    if report.reasons and report.overall != SATISFIED:
        out.add(0, "")
        out.add(0, f"why {report.overall}:")
        for reason in report.reasons:
            out.add(1, f"- {reason.message}")
            if reason.subject == "base:proto" and reason.code == "inconsistent-base":
                out.add(2, "help: `unmask analyze` shows why the protocol contradicts itself")
    return "\n".join(out.lines) + "\n"
