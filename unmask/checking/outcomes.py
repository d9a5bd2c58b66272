"""Reports remembered per protocol and fact pattern: small replays repeat a few patterns.

Contract: ``check_case(case, backend, ...)`` returns what ``unmask.checking.checker.check_case``
returns for the same arguments, equal field for field. A report depends on its case only
through the protocol, the verdict, the translation, the backend's name and, for each atom,
whether it is annotated, its value and whether that annotation is unreviewed or derived
from the gold label; beyond those, only the case's id and the annotations the
explanations cite (their evidence, explanation and provenance) reach it. So the first
report of a pattern is remembered, and a later case with the same pattern gets it with its
own id and its own annotations in the explanations, without a check. Remembered: the last
``PROTOCOLS`` protocols of at most ``MAX_ATOMS`` atoms, ``PATTERNS`` reports each (then
the memo of that protocol starts again). A case checked without the closed form (which
asks the backend everything, to test it) is neither answered from memory nor
remembered. Never remembered: a report cut by its deadline, or one that rests on a
solver that gave up or ran out of time (SOLVER_UNKNOWN anywhere, an explanation not
minimal, a witness not canonical), since those depend on time, not on the pattern. So a
remembered report is what a solver proved for the pattern; a hit is answered at once,
and no deadline cuts it. ``check_replay`` first refuses a protocol whose decisions can
overlap (``refuse_overlaps``: ``UnmaskError``, the diagnostics ``unmaskc`` gives), so every
way of checking a replay (``unmask check``, an audit, the API) refuses it alike.

``check_replay_line(replay, backend, location)`` gives the report, its result line's
struct (``unmask.checking.formats.ResultLine``) and the line ``unmask audit`` writes for it
(refusing the same), ``encode_line(result_line(report, location))`` byte for byte: a
remembered report keeps its own line, and a hit's line is that line with the replay's
own fields and the annotations it cites put in (``formats.refilled``).
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from unmask.backends.base import Backend, spec
from unmask.checking.checker import Case
from unmask.checking.checker import check_case as check_uncached
from unmask.checking.explain import Deadline
from unmask.checking.report import (
    SOLVER_UNKNOWN,
    AnnotationItem,
    Bases,
    CheckResult,
    Explanation,
    GroundingCheck,
    Item,
    PartId,
    Report,
    RequirementCheck,
    VerdictCheck,
    annotation_item,
)
from unmask.plumbing.diagnostics import UnmaskError
from unmask.replay.data import Replay

if TYPE_CHECKING:  # the formats are imported by the audit's path only (start-up)
    from unmask.checking.formats import ResultLine

MAX_ATOMS = 12  # a protocol's atoms, at most, for its reports to be remembered
PROTOCOLS = 8  # protocols remembered per process
PATTERNS = 4096  # reports remembered per protocol (a 2-claim protocol has 1,024 patterns)

_LOCK = threading.Lock()  # a Dask worker may check replays in several threads


class _Known:
    """A remembered report, and the result line its refilled reports' lines are made of,
    with the parts of its annotations (made at the first line asked; False when two
    annotations share a part, and a line cannot be refilled)."""

    __slots__ = ("line", "report")

    def __init__(self, report: Report) -> None:
        self.report = report
        self.line: tuple[ResultLine, tuple[PartId, ...]] | bool | None = None


# id(protocol) -> (the protocol, kept alive so its id is not reused; its reports by key)
_MEMO: dict[int, tuple[Any, dict[tuple[Any, ...], _Known]]] = {}


def _pattern(case: Case) -> tuple[Any, ...]:
    """What of the annotations a report depends on, atom by atom in declaration order."""
    given = {a.atom: a for a in case.annotations}
    out: list[Any] = []
    for name in case.protocol.atom_names:
        a = given.get(name)
        if a is None:
            out.append(None)
        elif a.by is None:
            out.append(a.value)
        else:
            out.append((a.value, a.unreviewed, a.gold_derived))
    return tuple(out)


def _keeps(report: Report) -> bool:
    """Whether ``report`` is the pattern's and not the clock's (see the contract)."""
    results = [report.verdict.result]
    for req in report.requirements:
        results += (req.holds, req.coverage)
    results += [g.result for g in report.grounding]
    for r in results:
        if r.status == SOLVER_UNKNOWN:
            return False
        if r.explanation is not None and not r.explanation.minimal:
            return False
        w = r.witnesses
        if w is not None and not (w.holds.canonical and w.fails.canonical):
            return False
    bases = report.bases
    if bases is None:
        return True
    if SOLVER_UNKNOWN in (bases.proto, bases.evid, bases.all):
        return False
    conflicts = (bases.proto_conflict, bases.evid_conflict, bases.all_conflict)
    return all(c is None or c.minimal for c in conflicts)


class _Refill:
    """The explanations of a remembered report, citing this case's annotations."""

    __slots__ = ("by_atom", "items")

    def __init__(self, case: Case) -> None:
        self.by_atom = {a.atom: a for a in case.annotations}
        self.items: dict[PartId, AnnotationItem] = {}  # `item` keeps annotations only

    def item(self, old: Item) -> Item:
        if not isinstance(old, AnnotationItem):
            return old
        got = self.items.get(old.part)
        if got is None:
            got = self.items[old.part] = annotation_item(old.part, self.by_atom[old.atom])
        return got

    def explanation(self, e: Explanation | None) -> Explanation | None:
        if e is None:
            return None
        if not any(i.kind == "annotation" for i in e.items):
            return e  # it cites no annotation: the same for every case
        return Explanation(tuple(self.item(i) for i in e.items), e.minimal)

    def result(self, r: CheckResult) -> CheckResult:
        e = r.explanation
        if e is None:
            return r
        mine = self.explanation(e)
        if mine is e:
            return r
        return CheckResult(
            r.status,
            r.outcome,
            mine,
            r.witnesses,
            r.detail,
            r.unreviewed,
            r.gold_derived,
        )


def _refill(report: Report, case: Case, f: _Refill, replay: Replay | None = None) -> Report:
    """``report`` for ``case``; with ``replay``, with its own fields too (as ``check_replay``
    adds them: one report made, not two)."""
    bases = report.bases
    if bases is not None and (bases.proto_conflict or bases.evid_conflict or bases.all_conflict):
        bases = Bases(
            bases.proto,
            bases.evid,
            bases.all,
            f.explanation(bases.proto_conflict),
            f.explanation(bases.evid_conflict),
            f.explanation(bases.all_conflict),
        )
    v = report.verdict
    return Report(
        replay=case.id,
        protocol=report.protocol,
        backend=report.backend,
        translation=report.translation,
        overall=report.overall,
        bases=bases,
        verdict=VerdictCheck(v.observed, f.result(v.result), v.allowed),
        requirements=tuple(
            RequirementCheck(r.id, r.description, f.result(r.holds), f.result(r.coverage))
            for r in report.requirements
        ),
        grounding=tuple(
            GroundingCheck(g.judge, g.context, f.result(g.result), g.direction)
            for g in report.grounding
        ),
        unannotated=report.unannotated,
        unknown=report.unknown,
        dimensions=report.dimensions,
        reasons=report.reasons,
        **({} if replay is None else _own(replay)),
    )


def _own(replay: Replay) -> dict[str, Any]:
    """The replay's own fields, which never reach the solver."""
    return {
        "gold": replay.gold,
        "item": replay.item,
        "judge": replay.judge,
        "recheck": replay.recheck,
        "disagreements": tuple(a for a in replay.annotations if a.readings),
    }


def _memo(protocol: Any) -> dict[tuple[Any, ...], _Known]:
    # keyed by ``id``: the entry holds the protocol, so its id is not reused while it lives
    got = _MEMO.get(id(protocol))
    if got is None:
        with _LOCK:
            while len(_MEMO) >= PROTOCOLS:
                del _MEMO[next(iter(_MEMO))]  # the oldest
            got = _MEMO[id(protocol)] = (protocol, {})
    return got[1]


def _check(
    case: Case,
    backend: Any,
    backend_name: str | None,
    deadline: Deadline | None,
    closed_form: bool,
    replay: Replay | None = None,
) -> tuple[Report, _Known | None, _Refill | None]:
    """The report, and on a hit what it was refilled from, and how. The report has
    ``replay``'s own fields when it is a hit or is not for the memo (a remembered
    report keeps none: each of its hits gets its own)."""
    protocol = case.protocol
    if not _remembers(protocol, closed_form):
        # never remembered: the replay's own fields go in as the report is made
        report = check_uncached(
            case,
            backend,
            backend_name=backend_name,
            deadline=deadline,
            closed_form=closed_form,
            own=None if replay is None else _own(replay),
        )
        return report, None, None
    memo = _memo(protocol)
    # the backend's name as the report prints it: two backends never share a memo entry
    name = backend_name or spec(backend)
    key = (name, case.verdict, case.translation, _pattern(case))
    known = memo.get(key)
    if known is not None:
        f = _Refill(case)
        return _refill(known.report, case, f, replay), known, f
    report = check_uncached(case, backend, backend_name=backend_name, deadline=deadline)
    if (deadline is None or not deadline.hit) and _keeps(report):
        kept = _Known(report)
        with _LOCK:
            if len(memo) >= PATTERNS:
                memo.clear()
            memo[key] = kept
        return report, kept, None  # remembered: its line can make the template
    return report, None, None


def check_case(
    case: Case,
    backend: Any,
    *,
    backend_name: str,
    deadline: Deadline | None = None,
    closed_form: bool = True,
) -> Report:
    """``unmask.checking.checker.check_case``, remembered by pattern (see the contract)."""
    return _check(case, backend, backend_name, deadline, closed_form)[0]


def _checked(
    replay: Replay,
    backend: Backend,
    backend_name: str | None,
    deadline_ms: int | None,
    closed_form: bool,
    deadline: Deadline | None = None,
) -> tuple[Report, _Known | None, _Refill | None]:
    if deadline_ms is not None and deadline_ms <= 0:
        raise ValueError(f"deadline_ms must be positive, not {deadline_ms}")
    if deadline is None and deadline_ms is not None:
        deadline = Deadline(deadline_ms)
    # one deadline for both: a protocol of many labels asks n^2/2 overlap questions
    refuse_overlaps(replay, backend, deadline)
    report, known, refill = _check(
        Case.from_replay(replay), backend, backend_name, deadline, closed_form, replay
    )
    if refill is None and not _remembers(replay.protocol, closed_form):
        return report, known, refill  # made with them
    if refill is None:  # a hit has them already
        report = replace(report, **_own(replay))
    return report, known, refill


def _remembers(protocol: Any, closed_form: bool) -> bool:
    """Whether ``_check`` remembers the reports of ``protocol``'s replays."""
    return closed_form and len(protocol.atom_names) <= MAX_ATOMS


def check_replay(
    replay: Replay,
    backend: Backend,
    *,
    backend_name: str | None = None,
    deadline_ms: int | None = None,
    closed_form: bool = True,
    deadline: Deadline | None = None,
) -> Report:
    """Check a validated replay: ``check_case`` of its gold-free ``Case``, then the replay's
    own fields (gold label, ``item``, ``judge``, ``recheck``) added to the report. A
    protocol with overlapping decisions is refused first (``refuse_overlaps``).
    ``deadline_ms`` bounds that and the check, the making of the protocol's parts included
    (None: none; not positive: ``ValueError``); loading the replay is not counted.
    ``deadline``, a deadline already started (``unmask check`` asks the overlap questions
    first, under the same one), is used instead of starting one.
    ``unmask.api.check``, the batch engine and the bench all check through this, so all of
    them are answered from memory."""
    return _checked(replay, backend, backend_name, deadline_ms, closed_form, deadline)[0]


def refuse_overlaps(replay: Replay, backend: Backend, deadline: Deadline | None = None) -> None:
    """``UnmaskError`` with ``unmaskc``'s ``overlapping-decisions`` errors when two decisions
    of the replay's protocol can both hold (``unmask.checking.overlap.refused``, asked once per
    protocol): such a protocol is not one a replay can be checked against. A decision of
    IR (no span) is located in the replay's ``protocol``, or in ``--protocol``'s file.
    ``deadline`` bounds the questions; a pair it leaves undecided refuses nothing."""
    p = replay.protocol
    if not (p.declared_labels and not p.first_match):
        return  # ``overlap.can_overlap`` is false: nothing to ask, nothing to import
    from unmask.checking.overlap import refused

    errors = refused(replay.protocol, backend, deadline)
    if not errors:
        return
    if replay.recheck is None:
        errors = tuple(
            d if d.span is not None else replace(d, path=f"protocol.{d.path}", file=replay.file)
            for d in errors
        )
    raise UnmaskError(errors)


def check_replay_line(
    replay: Replay,
    backend: Backend,
    location: str,
    *,
    backend_name: str | None = None,
    deadline_ms: int | None = None,
    closed_form: bool = True,
) -> tuple[Report, ResultLine, bytes]:
    """``check_replay``, the report's result line (``formats.result_line(report,
    location)``) and its bytes as ``unmask audit`` writes them. A report answered from
    memory gets the remembered report's line with its own fields and annotations put in:
    only those are built anew."""
    from unmask.checking.formats import encode_line, line_and_parts, refilled, table_parts

    report, known, refill = _checked(replay, backend, backend_name, deadline_ms, closed_form)
    if known is None:
        line = line_and_parts(report, location)[0]
        return report, line, encode_line(line)
    kept = known.line
    if kept is None:  # just remembered, or remembered by ``check_replay``: made now
        source = known.report if refill is not None else report
        made = line_and_parts(source, location)
        kept = known.line = made if table_parts(made[1]) else False
        if refill is None:
            return report, made[0], encode_line(made[0])
    if kept and refill is not None:
        line = refilled(kept[0], kept[1], report, location, refill.items)  # type: ignore[index]
    else:
        line = line_and_parts(report, location)[0]
    return report, line, encode_line(line)
