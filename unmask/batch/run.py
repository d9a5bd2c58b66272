"""Running an audit: every task checked, in this process or a pool, results in input order.

Contract: ``run_audit(tasks, settings, emit, jobs, settle, summary)`` checks every task
(``task.audit_task``) and every line of every ``LineRange`` (``inputs.iter_work``), and hands
each result to ``emit`` in input order: with one process one at a time, with ``jobs`` more
through the pool (``pool``), as soon as it and every earlier one is done. ``settle()`` runs
after each batch of results (every one with one process, each job's with a pool): a caller
flushes its output there. Given a ``Summary``, every result emitted is folded into it; in
a pool each worker folds its job's results and the parent merges the piece once the job's
results are out (``wire.emit_all``), so the fold, most of a pool parent's work per replay,
runs in parallel. While it runs the garbage collector runs less often
(``tuning.batch_gc``). ``inputs_for`` is what it reads for paths with that many processes;
``expand`` reads line ranges in place. Its modules, by concern: ``task`` (checking one
task), ``wire`` (a job and what crosses to a worker), ``pool`` (the worker processes),
``tuning`` (sizes, the collector and the heap); ``cluster`` runs the same on Dask.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from unmask.batch import task
from unmask.batch.pool import Pool
from unmask.batch.summary import Summary
from unmask.batch.task import Settings
from unmask.batch.tuning import CHUNK_BYTES, batch_gc
from unmask.batch.wire import Emit, emit_all
from unmask.plumbing.limits import Limits
from unmask.replay import inputs
from unmask.replay.inputs import LineRange, Task, range_tasks


def run_audit(
    tasks: Iterator[Task | LineRange],
    settings: Settings,
    emit: Emit,
    jobs: int = 1,
    settle: Callable[[], None] | None = None,
    summary: Summary | None = None,
) -> None:
    """Audit every task (and every line of every range) and ``emit(task, result)`` each, in
    input order; ``settle()`` after each batch of results: every one with one process,
    each job's with a pool (a caller flushes its output there, not once a line). With
    ``summary``, every result emitted is folded into it (``emit_all``): a pool's workers
    fold their jobs' results and the pieces are merged here, in input order."""
    with batch_gc():
        if jobs <= 1:
            for t in expand(tasks, settings.limits):
                emit_all((t,), (task.audit_task(t, settings),), None, emit, summary)
                if settle is not None:
                    settle()
            return
        Pool(settings, jobs, settle, summary).run(tasks, emit)


def inputs_for(paths: Iterable[str], limits: Limits, jobs: int) -> Iterator[Task | LineRange]:
    """What ``run_audit`` with ``jobs`` processes reads for ``paths``: with a pool, each
    JSON Lines file in ranges of ``CHUNK_BYTES`` that the workers read themselves (the
    parent only looks for line ends); else one task per replay."""
    if jobs > 1:
        return inputs.iter_work(paths, limits, CHUNK_BYTES)
    return inputs.iter_tasks(paths, limits)


def expand(items: Iterable[Task | LineRange], limits: Limits) -> Iterator[Task]:
    """The tasks, each line range read in its place (by this process)."""
    for item in items:
        if isinstance(item, LineRange):
            yield from range_tasks(item, limits)
        else:
            yield item
