"""Aggregation (docs/semantics.md): what each check contributes, the overall result, the
four dimensions, and every reason a result is not SATISFIED.

Contract: ``assemble`` turns the bases' states and the checks' results into a ``Report``
following the documented table and overrides: a VIOLATED check makes the report
VIOLATED; a base that is not CONSISTENT, a SOLVER_UNKNOWN check, a cut deadline, a
translation that is not valid, or a protocol without requirements or grounding make it
UNKNOWN; each of these is named in ``Report.reasons``. ``unsolved`` is the report of a
replay whose translation is not valid: nothing solved, every check UNKNOWN. Nothing here
calls a solver.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from unmask.checking.bases import Case
from unmask.checking.explain import DEADLINE
from unmask.checking.report import (
    CONSISTENT,
    ENTAILED,
    INCONSISTENT,
    INCONSISTENT_BASE,
    NOT_CHECKED,
    NOT_SPECIFIED,
    OK,
    REFUTED,
    SATISFIED,
    SOLVER_UNKNOWN,
    UNDERDETERMINED,
    UNKNOWN,
    VIOLATED,
    Bases,
    CheckResult,
    Dimensions,
    GroundingCheck,
    Reason,
    Report,
    RequirementCheck,
    VerdictCheck,
)
from unmask.ir import Protocol
from unmask.ir.text import expr_text


def outcome(status: str | None, *, coverage: bool = False) -> str | None:
    """A check's contribution (the aggregation table); None for NOT_SPECIFIED."""
    if status == NOT_SPECIFIED:
        return None
    if status == ENTAILED:
        return OK
    if status == REFUTED:
        return UNKNOWN if coverage else VIOLATED
    return UNKNOWN


def aggregate(outcomes: Sequence[str]) -> str:
    if VIOLATED in outcomes:
        return VIOLATED
    if all(o == OK for o in outcomes):
        return SATISFIED
    return UNKNOWN


def _dimension(outcomes: Sequence[str | None]) -> str:
    present = [o for o in outcomes if o is not None]
    if not present:
        return NOT_CHECKED
    agg = aggregate(present)
    return OK if agg == SATISFIED else agg


def unsolved(case: Case, backend_name: str, own: Mapping[str, Any] | None = None) -> Report:
    """Translation not valid: nothing is solved, every check is UNKNOWN with status null."""
    p = case.protocol
    blank = CheckResult(None, UNKNOWN)
    requirements = tuple(
        RequirementCheck(
            r.id,
            r.description,
            blank,
            CheckResult(NOT_SPECIFIED, None) if r.addressed is None else blank,
        )
        for r in p.requirements
    )
    grounding = tuple(
        GroundingCheck(expr_text(g.judge), expr_text(g.context), blank, g.direction)
        for g in p.grounding
    )
    verdict = VerdictCheck(case.verdict, blank)
    return assemble(case, backend_name, None, verdict, requirements, grounding, {}, own=own)


_BASE_MEANING = {
    "proto": "the protocol contradicts itself",
    "evid": "the annotations contradict each other",
    "all": "the annotations contradict the protocol",
}
# keyed by str, as ``CheckResult.status`` is typed (a ``Status`` is a str)
_STATUS_REASON: dict[str, tuple[str, str]] = {
    REFUTED: ("violated", "is refuted"),
    UNDERDETERMINED: ("underdetermined", "is underdetermined: the evidence allows both"),
    SOLVER_UNKNOWN: ("solver-unknown", "could not be decided by the solver"),
    INCONSISTENT_BASE: ("inconsistent-base", "was not classified: its base is inconsistent"),
}


def _check_reason(
    subject: str, what: str, result: CheckResult, base: str, *, coverage: bool = False
) -> Reason | None:
    if result.outcome in (None, OK):
        return None
    if result.status is None:
        return None  # the translation reason covers it
    if coverage and result.status == REFUTED:
        return Reason(
            "not-observable", subject, f"{what} is refuted: the requirement was not observable"
        )
    code, text = _STATUS_REASON[result.status]
    message = f"{what} {text}"
    if result.status == SOLVER_UNKNOWN and result.detail == DEADLINE:
        message = f"{what} was not decided before the deadline"
    elif result.status == SOLVER_UNKNOWN and result.detail:
        message += f" ({result.detail})"
    if result.status == INCONSISTENT_BASE:
        message += f" (base `{base}`)"
    return Reason(code, subject, message)


def _labels_text(labels: Sequence[str]) -> str:
    shown = [f"`{x}`" for x in labels]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" and {shown[-1]}"


def _verdict_reason(protocol: Protocol, verdict: VerdictCheck) -> Reason | None:
    what = f"the observed verdict `{verdict.observed}`"
    reason = _check_reason("verdict", what, verdict.result, "all")
    allowed = verdict.allowed
    if reason is None or not protocol.declared_labels:
        return reason
    # with more than two labels, "the other one" is not enough: name what is still open
    status = verdict.result.status
    if status == REFUTED and allowed:
        message = f"{what} is refuted: the evidence allows only {_labels_text(allowed)}"
    elif status == UNDERDETERMINED:
        allows = "it and another label" if allowed is None else _labels_text(allowed)
        message = f"{what} is underdetermined: the evidence allows {allows}"
    else:
        return reason
    return Reason(reason.code, reason.subject, message)


# a grounding check's reason depends on its pair and its result's status, outcome and
# detail alone: the replays of a protocol share it (a reason is frozen data)
_GROUNDING_REASONS: dict[tuple[str | None, ...], Reason | None] = {}
GROUNDING_REASONS = 8192  # entries, at most; then it starts again
_NONE = object()


def assemble(
    case: Case,
    backend_name: str,
    bases: Bases | None,
    verdict: VerdictCheck,
    requirements: tuple[RequirementCheck, ...],
    grounding: tuple[GroundingCheck, ...],
    base_detail: dict[str, str],
    *,
    deadline_ms: int | None = None,
    unannotated: tuple[str, ...] | None = None,
    unknown: tuple[str, ...] | None = None,
    own: Mapping[str, Any] | None = None,
) -> Report:
    """``deadline_ms`` is set when that deadline cut the report short; ``unannotated``
    and ``unknown`` are the case's (``Case.unannotated``, ``Case.unknown``), when the
    caller has them already; ``own``, the replay's own fields (``check_case``)."""
    reasons: list[Reason] = []
    if deadline_ms is not None:
        reasons.append(
            Reason(
                "deadline",
                "replay",
                f"the check ran past its deadline of {deadline_ms} ms: what was not decided "
                "by then is unknown, and the report is incomplete",
            )
        )
    if case.translation != "valid":
        reasons.append(
            Reason(
                "translation",
                "translation",
                f"the translation is `{case.translation}`, so nothing was solved",
            )
        )
    if bases is not None:
        for name in ("proto", "evid", "all"):
            state = bases.state(name)
            if state == INCONSISTENT:
                reasons.append(
                    Reason(
                        "inconsistent-base",
                        f"base:{name}",
                        f"base `{name}` is inconsistent: {_BASE_MEANING[name]}",
                    )
                )
            elif state == SOLVER_UNKNOWN:
                detail = base_detail.get(name)
                if detail == DEADLINE:
                    tail = " before the deadline"
                else:
                    tail = f" ({detail})" if detail else ""
                reasons.append(
                    Reason(
                        "solver-unknown",
                        f"base:{name}",
                        f"the solver could not decide whether base `{name}` is consistent" + tail,
                    )
                )
    checks: list[Reason | None] = [_verdict_reason(case.protocol, verdict)]
    for r in requirements:
        checks.append(
            _check_reason(f"requirement:{r.id}", f"requirement `{r.id}`", r.holds, "evid")
        )
        checks.append(
            _check_reason(
                f"coverage:{r.id}", f"coverage of `{r.id}`", r.coverage, "evid", coverage=True
            )
        )
    for g in grounding:
        result = g.result
        if result.outcome is OK:
            continue  # no reason (``_check_reason``)
        key = (g.judge, g.context, g.direction, result.status, result.outcome, result.detail)
        reason = _GROUNDING_REASONS.get(key, _NONE)
        if reason is _NONE:
            pair = g.pair
            reason = _check_reason(f"grounding:{pair}", f"grounding `{pair}`", result, "evid")
            if len(_GROUNDING_REASONS) >= GROUNDING_REASONS:
                _GROUNDING_REASONS.clear()
            _GROUNDING_REASONS[key] = reason
        checks.append(reason)  # type: ignore[arg-type]
    reasons.extend(r for r in checks if r is not None)
    if not requirements:
        reasons.append(
            Reason("no-requirements", "replay", "the protocol has no requirements to check")
        )
    if not grounding:
        reasons.append(Reason("no-grounding", "replay", "the protocol has no grounding pairs"))

    verdict_out = verdict.result.outcome
    req_outs = [r.holds.outcome for r in requirements]
    cov_outs = [r.coverage.outcome for r in requirements]
    ground_outs = [g.result.outcome for g in grounding]
    every = [o for o in [verdict_out, *req_outs, *cov_outs, *ground_outs] if o is not None]
    overall = aggregate(every)
    if overall == SATISFIED and (not requirements or not grounding):
        overall = UNKNOWN
    statuses = [verdict.result.status]
    for r in requirements:
        statuses += [r.holds.status, r.coverage.status]
    statuses += [g.result.status for g in grounding]
    if (
        deadline_ms is not None
        or case.translation != "valid"
        or bases is None
        or any(bases.state(n) != CONSISTENT for n in ("proto", "evid", "all"))
        or SOLVER_UNKNOWN in statuses
    ):
        overall = UNKNOWN
    dims = Dimensions(
        verdict=_dimension([verdict_out]),
        procedure=_dimension(req_outs),
        coverage=_dimension(cov_outs),
        grounding=_dimension(ground_outs),
    )
    return Report(
        replay=case.id,
        protocol=case.protocol.name,
        backend=backend_name,
        translation=case.translation,
        overall=overall,
        bases=bases,
        verdict=verdict,
        requirements=requirements,
        grounding=grounding,
        unannotated=case.unannotated if unannotated is None else unannotated,
        unknown=case.unknown if unknown is None else unknown,
        dimensions=dims,
        reasons=tuple(reasons),
        **({} if own is None else own),
    )
