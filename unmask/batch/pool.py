"""The pool: ``jobs`` worker processes that check a run's jobs, results in input order.

Contract: ``Pool(settings, jobs, settle, summary).run(tasks, emit)`` streams the tasks
through ``jobs`` processes with a bounded window of jobs in flight (``tuning``), and hands
every result to ``emit`` in input order as soon as it and all earlier results are done (the
reorder buffer is the window), so memory does not grow with the number of replays. Its
input may hold ``LineRange`` items: a worker reads the range's lines itself. The last jobs
of the input go out smaller (``pool_jobs``), so the workers finish close together. A worker
that dies costs only the replay that killed it (an ``internal-error`` record,
``task.died``); workers ignore Ctrl-C (the parent decides), and never outlive a killed
parent; a pool stopped by an exception is killed (``kill``) so that nothing of it holds
the process at exit.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from unmask.batch.summary import Summary
from unmask.batch.task import Result, Settings, backend, died
from unmask.batch.tuning import CHUNK_BYTES, CHUNK_TASKS, TAIL_PIECES, WINDOW_PER_JOB
from unmask.batch.wire import (
    Emit,
    Job,
    chunks,
    emit_all,
    from_wire,
    run_chunk,
    run_range,
    run_wire,
    task_wire,
)
from unmask.replay.inputs import LineRange, Task, range_tasks, split_range


def _worker_init() -> None:
    # Ctrl-C goes to the whole process group: the parent decides, workers stay quiet
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's clean-stop handler
    _die_with_parent()


def _die_with_parent() -> None:
    """A worker whose parent was killed (SIGKILL: no clean-up ran) must not live on."""
    import threading

    parent = os.getppid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):  # best effort; the watchdog below also works
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
            if os.getppid() != parent:  # the parent died before prctl took effect
                os._exit(1)

    def watch() -> None:
        import time

        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="unmask-parent-watch", daemon=True).start()


def pool_jobs(
    tasks: Iterator[Task | LineRange],
    jobs: int,
    *,
    max_tasks: int = CHUNK_TASKS,
    max_bytes: int = CHUNK_BYTES,
) -> Iterator[Job]:
    """The tasks in pool jobs of at most ``max_tasks`` tasks or about ``max_bytes`` of text.

    Big jobs keep the parent's share small (each job costs it a fixed amount besides its
    replays), but a big last job keeps one worker busy while the others wait. So the last
    ``jobs`` jobs are held back until the input ends, and each goes out in ``TAIL_PIECES``
    smaller ones: the workers finish close together.
    """
    held: deque[Job] = deque()
    for job in chunks(tasks, max_tasks, max_bytes):
        held.append(job)
        if len(held) > jobs:
            yield held.popleft()
    for job in held:
        if isinstance(job, LineRange):
            yield from split_range(job, TAIL_PIECES, max_bytes)
            continue
        size = max(1, -(-len(job) // TAIL_PIECES))
        for i in range(0, len(job), size):
            yield job[i : i + size]


class Pool:
    """``jobs`` worker processes with a bounded window of chunks in flight.

    A worker that dies (a crash inside a solver) breaks the whole executor: the pool is
    restarted, the job in front is re-run one replay per fresh process (the parent reads a
    line range's lines for that) so that only the replay that kills its process becomes an
    error record, and the rest is resubmitted.
    """

    def __init__(
        self,
        settings: Settings,
        jobs: int,
        settle: Callable[[], None] | None = None,
        summary: Summary | None = None,
    ) -> None:
        import multiprocessing

        backend(settings)  # fail here, not in every worker; forked workers inherit it
        from unmask.plumbing.cachedir import trusted_dir

        trusted_dir()  # an untrusted cache folder is warned of here, once, not per worker
        self.settings = settings
        self.jobs = jobs
        self.settle = settle
        self.summary = summary
        fork = sys.platform.startswith("linux")
        self.ctx = multiprocessing.get_context("fork" if fork else "spawn")
        self.window = jobs * WINDOW_PER_JOB
        self.pending: deque[tuple[Job, Any]] = deque()
        self.pool = self._new(jobs)

    def _new(self, workers: int) -> Any:
        from concurrent.futures import ProcessPoolExecutor

        return ProcessPoolExecutor(
            max_workers=workers, mp_context=self.ctx, initializer=_worker_init
        )

    def _submit(self, pool: Any, job: Job, folded: bool = True) -> Any:
        folded = folded and self.summary is not None
        if isinstance(job, LineRange):
            rg = (job.file, job.start, job.end, job.line)
            return pool.submit(run_range, rg, self.settings, folded)
        return pool.submit(run_wire, [task_wire(t) for t in job], self.settings, run_chunk, folded)

    def _try(self, job: Job) -> Any:
        """The job's future, or None when the pool is broken already (a worker died and
        its job is not drained yet): the job then waits for the pool that replaces it."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            return self._submit(self.pool, job)
        except BrokenProcessPool:
            return None

    def run(self, tasks: Iterator[Task | LineRange], emit: Emit) -> None:
        try:
            for job in pool_jobs(tasks, self.jobs):
                self.pending.append((job, self._try(job)))
                while len(self.pending) >= self.window or (
                    self.pending and (self.pending[0][1] is None or self.pending[0][1].done())
                ):
                    self._drain_one(emit)
            while self.pending:
                self._drain_one(emit)
        except BaseException:
            kill(self.pool)
            raise
        self.pool.shutdown(wait=True)

    def _drain_one(self, emit: Emit) -> None:
        from concurrent.futures.process import BrokenProcessPool

        job, fut = self.pending.popleft()
        try:
            out, part = (fut or self._submit(self.pool, job)).result()
            if isinstance(job, LineRange):
                # a line the worker read itself is named, not carried: its text stays there
                f = job.file
                tasks = [Task(f"{f}:{n}", f, n) for n, _ in out]
                results = [from_wire(w) for _, w in out]
            else:
                tasks, results = job, [from_wire(w) for w in out]
        except BrokenProcessPool:
            kill(self.pool)
            tasks = (
                list(range_tasks(job, self.settings.limits)) if isinstance(job, LineRange) else job
            )
            results, part = [self._alone(t) for t in tasks], None
            self.pool = self._new(self.jobs)
            self.pending = deque((j, self._try(j)) for j, _ in self.pending)
        emit_all(tasks, results, part, emit, self.summary)
        if self.settle is not None:
            self.settle()

    def _alone(self, task: Task) -> Result:
        from concurrent.futures.process import BrokenProcessPool

        single = self._new(1)
        try:
            return from_wire(self._submit(single, [task], folded=False).result()[0][0])
        except BrokenProcessPool:
            return died(task, self.settings)
        finally:
            kill(single)


def kill(pool: Any) -> None:
    """Stop a pool now: queued work is dropped and running workers are terminated.

    Nothing of the pool may hold the process at exit (``concurrent.futures`` joins its
    threads then, without a timeout): a worker that outlives SIGTERM (one forked a moment
    ago still carries the parent's handler) is killed; the thread that feeds work to the
    workers is not waited for, since it may be blocked writing a job to workers that will
    never read it; and once the workers are gone, this process's copy of the results
    pipe's write end is closed. A worker terminated while writing a job's results (more
    than a pipe holds) leaves half a message in that pipe: the pool's manager thread,
    woken by the first bytes, waits in ``recv`` for the rest, and as this process still
    held a write end, no end of file ever came and the exit hung on that thread. With the
    last write end closed its ``recv`` fails, it marks the pool broken and returns. Only a
    pool being killed loses it: one that ends well is shut down with every result read.
    That thread is then waited for (it has nothing left to wait on): at exit
    ``concurrent.futures`` wakes it through a pipe the thread closes as it ends, and the
    two at once made a traceback of a closed file instead of the exit's one message."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    call_queue = getattr(pool, "_call_queue", None)
    result_queue = getattr(pool, "_result_queue", None)  # ``shutdown`` drops these
    manager = getattr(pool, "_executor_manager_thread", None)
    if call_queue is not None:
        with contextlib.suppress(Exception):
            call_queue.cancel_join_thread()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        with contextlib.suppress(Exception):  # already gone
            p.terminate()
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            with contextlib.suppress(Exception):
                p.kill()
            p.join(timeout=5)
    if result_queue is not None:
        # only the write end: the manager thread may be reading the other one right now
        with contextlib.suppress(Exception):
            result_queue._writer.close()
    if manager is not None:
        manager.join(timeout=5)
