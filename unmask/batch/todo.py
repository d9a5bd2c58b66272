"""What to annotate next, over many replays and audit results: ``unmask next``'s engine.

Contract: ``replays(paths, root, limits, against)`` is (location, replay or the
``UnmaskError`` that says why there is none, note) for every replay the paths name, in
order: a replay file, a folder, a JSON Lines file, or an audit's results file (each line's
replay re-read from its ``location``, relative to ``root``; an error record's replay is
noted "the audit could not check it", not read). Every replay is read against ``against``
(``--protocol``) when it is given; a results line checked against another protocol than
that one (or than the replay's own, without it: the line's ``recheck``) is a bad line
(``bad-results``), never answered for the wrong protocol. ``steps(...)`` is one ``Step`` per
replay: its ``unmask.checking.next.NextReport``, or why there is none (not checked by the
audit, invalid, or not settled by the backend: its diagnostics). Nothing here prints.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from unmask.checking.record import recheck_of, same_protocol
from unmask.ir import Span
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, internal_error
from unmask.plumbing.frozen import frozen
from unmask.plumbing.interrupt import reraise_interrupt
from unmask.plumbing.limits import Limits


@frozen
class Step:
    """One replay of ``steps``: its ``report``, or ``skipped`` (why the audit did not check
    it), ``invalid`` (why it is not a valid replay) or ``failed`` (the diagnostics of a
    backend that could not settle it, or of an internal error)."""

    location: str
    report: Any = None
    skipped: str | None = None
    invalid: UnmaskError | None = None
    failed: tuple[Diagnostic, ...] = ()


def steps(
    paths: tuple[str, ...],
    root: str,
    limits: Limits,
    solver: Any,
    against: Any = None,
    deadline_ms: int | None = None,
) -> Iterator[Step]:
    """The open checks of every replay the paths name, and what would settle them
    (``unmask.checking.next.next_steps``), in input order."""
    from unmask.checking.checker import Case
    from unmask.checking.explain import Deadline
    from unmask.checking.next import next_steps

    for location, replay, note in replays(paths, root, limits, against):
        if note is not None:
            yield Step(location, skipped=note)
            continue
        if isinstance(replay, UnmaskError):
            yield Step(location, invalid=replay)
            continue
        try:
            deadline = None if deadline_ms is None else Deadline(deadline_ms)
            r = next_steps(Case.from_replay(replay), solver, deadline=deadline)
        except UnmaskError as exc:  # a backend that cannot take this replay: nothing proved
            yield Step(location, failed=exc.diagnostics)
            continue
        except Exception as exc:  # a bug must still not end in a traceback
            reraise_interrupt(exc)
            yield Step(location, failed=(internal_error(exc, file=location),))
            continue
        yield Step(location, report=r)


def replays(paths: tuple[str, ...], root: str, limits: Limits, against: Any = None):
    """(location, replay or UnmaskError, note) for every replay the paths name, in order,
    read against ``against`` (``--protocol``) when it is given."""
    from unmask.batch.results import Locations, is_results
    from unmask.replay.inputs import iter_tasks

    locations = Locations(root, limits)
    for path in paths:
        if is_results(path, limits):
            yield from _from_results(path, locations, limits, against)
            continue
        for task in iter_tasks([path], limits):
            yield task.location, _load(task, limits, against), None


def _from_results(path: str, locations: Any, limits: Limits, against: Any = None):
    """``replays`` of an audit's results file: each line's replay re-read from its location,
    against the protocol the line was checked against (a line of another one is an error)."""
    from unmask.batch.results import result_lines

    for line in result_lines(path, limits):
        if line.error is not None:
            yield line.where, line.error, None
            continue
        if not line.checked:
            yield line.location, None, "the audit could not check it"
            continue
        mismatch = _other_protocol((line.obj or {}).get("recheck"), against)
        if mismatch is not None:
            yield _bad_line(path, line.n, *mismatch)
            continue
        try:
            task = locations.task(line.location)
        except UnmaskError as exc:
            yield line.location, exc, None
            continue
        yield line.location, _load(task, limits, against), None


def _other_protocol(recheck: Any, against: Any) -> tuple[str, str] | None:
    """(message, help) when a result line was checked against another protocol than
    ``--protocol`` (or than the replay's own): its open checks would be another's."""
    theirs = recheck_of(recheck)
    if same_protocol(theirs, against):
        return None
    if against is None:
        name = theirs[0] if theirs is not None else None
        return (
            f"this result was checked against `--protocol` (protocol `{name}`), "
            "not the replay's own protocol",
            "give `unmask next` the `--protocol FILE` the audit was run with",
        )
    return (
        f"this result was not checked against `--protocol {against.path}`",
        "give the `--protocol` the audit was run with, or none if it had none",
    )


def _bad_line(path: str, n: int, message: str, help: str | None = None):
    span = Span(path, n, 1, n, 1)
    diag = Diagnostic(Code.BAD_RESULTS, message, span=span, help=help)
    return f"{path}:{n}", UnmaskError([diag]), None


def _load(task, limits: Limits, against: Any = None):
    """The task's validated replay, or the ``UnmaskError`` that says why there is none."""
    from unmask.replay.inputs import load_task

    try:
        return load_task(task, limits, against)
    except UnmaskError as exc:
        return exc
    except RecursionError:
        return UnmaskError(
            [Diagnostic(Code.LIMIT, "the replay is nested too deeply to check", file=task.location)]
        )
