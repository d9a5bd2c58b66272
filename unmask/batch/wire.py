"""A job of a batch run: the tasks cut into jobs, what crosses to a worker and back, and a
job's results emitted in order.

Contract:
- ``chunks`` cuts the tasks, in order, into lists of at most a number of tasks or about a
  number of bytes of text; a ``LineRange`` (``inputs.iter_work``) goes alone;
- a pool job or a Dask partition crosses as plain tuples, never as objects:
  ``task_wire`` and ``result_wire`` make them, ``from_wire`` reads a result back, and
  ``run_wire`` is the work on the far side (``run_chunk``: each task checked by
  ``task.audit_task``, with the garbage collector tuned, ``tuning.batch_gc``); ``run_range``
  is a pool job that reads its own lines, so their text never crosses a pipe. With
  ``folded`` a worker also returns its results' summary (``fold``);
- ``emit_all`` hands a job's results to ``emit`` in order and folds them into the run's
  summary: the worker's piece merged once all are out, else one by one, so the summary
  counts exactly the results emitted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from unmask.batch import task
from unmask.batch.summary import Summary
from unmask.batch.task import Result, Settings
from unmask.batch.tuning import batch_gc
from unmask.replay.inputs import LineRange, Task, range_tasks

Job = list[Task] | LineRange  # what one pool job checks


def chunks(tasks: Iterator[Task | LineRange], max_tasks: int, max_bytes: int) -> Iterator[Job]:
    """The tasks in order, in lists of at most ``max_tasks`` tasks or about ``max_bytes``
    of text (the last task of a list may pass it); a ``LineRange`` goes alone."""
    chunk: list[Task] = []
    size = 0
    for t in tasks:
        if isinstance(t, LineRange):
            if chunk:
                yield chunk
                chunk, size = [], 0
            yield t
            continue
        chunk.append(t)
        size += len(t.text or b"")
        if len(chunk) >= max_tasks or size >= max_bytes:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def run_chunk(tasks: list[Task], settings: Settings) -> list[Result]:
    # in a pool or cluster worker too, whatever process started it
    with batch_gc():
        return [task.audit_task(t, settings) for t in tasks]


# A pool job (and a Dask partition) crosses as plain tuples: pickling a slotted dataclass
# goes through ``copyreg`` for every object, and at a quarter of a millisecond a replay
# that was a tenth of the pool parent's time and a twentieth of the workers'
def task_wire(t: Task) -> tuple:
    return (t.location, t.file, t.line, t.text, t.problem)


def result_wire(r: Result) -> tuple:
    return (r.line, r.record, r.page, r.protocol)  # a record is a named tuple already


def from_wire(w: tuple) -> Result:
    return Result(*w)


def fold(results: Iterable[Result]) -> Summary:
    """The summary of ``results`` alone, which the run merges in its place (a worker's
    share of the parent's work: on a cluster the client is what limits the run)."""
    part = Summary()
    for r in results:
        part.add(r.record)
    return part


def run_wire(
    items: list[tuple],
    settings: Settings,
    work: Callable[[list[Task], Settings], list[Result]] = run_chunk,
    folded: bool = False,
) -> tuple[list[tuple], Summary | None]:
    """``work`` (``run_chunk``) for a pool job or a Dask partition: tasks and results as
    ``task_wire``/``result_wire``, and with ``folded`` the results' summary (``fold``)."""
    results = work([Task(*w) for w in items], settings)
    return [result_wire(r) for r in results], fold(results) if folded else None


def run_range(rg: tuple, settings: Settings, folded: bool = False) -> tuple[list, Summary | None]:
    """A pool job that reads its own lines: ``(line number, result_wire)`` for each, and
    with ``folded`` their summary."""
    tasks = list(range_tasks(LineRange(*rg), settings.limits))
    results = run_chunk(tasks, settings)
    wires = [(t.line, result_wire(r)) for t, r in zip(tasks, results, strict=True)]
    return wires, fold(results) if folded else None


Emit = Callable[[Task, Result], None]


def emit_all(
    tasks: Sequence[Task],
    results: Sequence[Result],
    part: Summary | None,
    emit: Emit,
    summary: Summary | None,
) -> None:
    """Emit a job's results in order, and fold them into ``summary``: by merging ``part``
    (their summary, made by the worker) once all are out, or one by one when there is no
    part or the emitting stopped early (an interruption, a write that failed), so that the
    summary counts exactly the results emitted."""
    done = 0
    try:
        for t, r in zip(tasks, results, strict=True):
            emit(t, r)
            done += 1
    finally:
        if summary is not None:
            if part is not None and done == len(results):
                summary.merge(part)
            else:
                for r in results[:done]:
                    summary.add(r.record)
