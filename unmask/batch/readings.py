"""Every replay the paths of `unmask review --sample` name, with its document, unchecked.

Contract: ``replays(paths, root, limits, errors)`` yields ``(location, document, Replay)``
for every valid replay named by the paths, in input order: a replay file, a folder, a JSON
Lines file of replays, or an audit's results file (each line's replay re-read from its
``location``, relative to ``root``, as ``unmask review`` and ``unmask next`` read it;
``unmask.batch.results``). Nothing is solved: a sample draws from all the readings there
are, not from those some check rests on. A replay that cannot be read is appended to
``errors`` as its ``UnmaskError`` and passed over; so is a bad line of a results file. An
error record's replay (one the audit could not check) is read too when it is valid: its
readings are readings all the same; when it is not, the audit has said so already.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.limits import Limits


def replays(
    paths: tuple[str, ...], root: str, limits: Limits, errors: list[UnmaskError]
) -> Iterator[tuple[str, Any, Any]]:
    from unmask.batch.results import Locations, is_results, result_lines
    from unmask.replay.inputs import iter_tasks

    locations = Locations(root, limits)
    for path in paths:
        if not is_results(path, limits):
            for task in iter_tasks([path], limits):
                got = _read(task, limits, errors)
                if got is not None:
                    yield (task.location, *got)
            continue
        for line in result_lines(path, limits):
            if line.error is not None:
                errors.append(line.error)
                continue
            try:
                task = locations.task(line.location)
            except UnmaskError as exc:
                if line.checked:
                    errors.append(exc)
                continue
            got = _read(task, limits, errors if line.checked else [])
            if got is not None:
                yield (line.location, *got)


def _read(task: Any, limits: Limits, errors: list[UnmaskError]) -> tuple[Any, Any] | None:
    """(document, Replay) of a task, or None with its error kept."""
    from unmask.replay.inputs import load_task, task_document

    try:
        replay = load_task(task, limits)
        doc, _ = task_document(task, limits)
    except UnmaskError as exc:
        errors.append(exc)
        return None
    return doc, replay


__all__ = ["replays"]
