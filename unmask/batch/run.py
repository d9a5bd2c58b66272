"""Running an audit: one task at a time, or through a pool of worker processes.

Contract:
- ``audit_task(task, settings)`` checks one task (``unmask.checking.outcomes.check_replay``) and
  returns a ``Result``: the result line (UTF-8 bytes ending in a newline, see
  ``records``), its ``unmask.checking.record.ResultRecord`` (what the summary, the HTML index and
  the JUnit file read), and when ``settings.html`` asks for it the replay's HTML page
  (from ``unmask.render.html``), rendered here so pool workers render in parallel; the
  caller writes the files. A bad replay never raises;
- ``run_audit`` streams the tasks through one process or a pool of ``jobs`` processes with
  a bounded window of jobs in flight, and hands every result to ``emit`` in input order
  as soon as it and all earlier results are done (the reorder buffer is the window), so
  memory does not grow with the number of replays; a worker that dies costs only the
  replay that killed it (an ``internal-error`` record), and workers never outlive a
  killed parent. Its input may hold ``LineRange`` items (``inputs.iter_work``): in a pool a
  worker reads the range's lines itself, so their text never crosses a pipe, and each is
  emitted with a task that names the line (its ``text`` None). Given a ``Summary``, it
  folds every result emitted into it: in a pool each worker folds its job's results
  (``fold``) and the parent merges the piece once the job's results are out
  (``emit_all``), so the fold, most of a pool parent's work per replay, runs in parallel;
- while ``run_audit`` runs, and while a worker runs a chunk, the garbage collector runs
  less often: its thresholds are at least ``unmask.plumbing.limits.GC_THRESHOLDS`` (``batch_gc``;
  the command line sets the same for a whole run, but a Dask worker or a program calling this module
  has Python's 700, 10, 10). A replay allocates many objects that live until its report
  is written and makes almost no reference cycles, so frequent collections only
  re-examine live objects. The old thresholds are put back afterwards;
- ``batch_heap()`` (glibc only) keeps freed heap memory in the process for the next
  replay instead of handing it back and faulting it in again; it cannot be undone, so the
  batch commands call it for their own process, never ``run_audit``.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import re
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from unmask.batch import inputs
from unmask.batch.inputs import STDIN_LABEL, LineRange, Task, range_tasks, split_range
from unmask.batch.records import encode_line, error_record
from unmask.batch.summary import Summary
from unmask.checking.record import ResultRecord
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, internal_error
from unmask.plumbing.frozen import frozen
from unmask.plumbing.interrupt import reraise_interrupt
from unmask.plumbing.limits import DEFAULT_LIMITS, GC_THRESHOLDS, Limits

# how many tasks one pool job carries, and how many jobs per process may be in flight
CHUNK_TASKS = 256
CHUNK_BYTES = 1 << 20
TAIL_PIECES = 4  # the input's last jobs, cut smaller, per process
# the results file's buffer: a job's lines (about as long as its records) leave in one
# write at its flush, where the default buffer of a few KiB made a system call every line
# or two; that was a quarter of a `--jobs` parent's time
RESULTS_BUFFER = 2 * CHUNK_BYTES
WINDOW_PER_JOB = 4


@frozen
class Settings:
    backend: str
    timeout_ms: int
    limits: Limits = DEFAULT_LIMITS
    html: bool = False  # render each replay's HTML page
    deadline_ms: int | None = None  # per replay (see ``unmask.checking.explain.Deadline``)
    # `--protocol`: an ``unmask.replay.recheck.ProtocolFile`` every replay is checked against
    # instead of its own; plain data, so it reaches pool and Dask workers with the rest
    protocol: Any = None
    # `--calibration`: an ``unmask.review.calibration.Trust`` each page weighs its findings by
    trust: Any = None


@frozen
class Result:
    """One audited task: its result ``line``, its ``record`` (what the summary, the index
    and the JUnit file read of it), and with ``Settings.html`` a checked replay's HTML
    ``page`` (to be written as ``page_name(location, replay id)``)."""

    line: bytes
    record: ResultRecord
    page: str | None = None
    # with ``Settings.trust``: the protocol's (name, digest of its text), for the warning of
    # a calibration measured under another (a result line carries no digest)
    protocol: tuple[str, str] | None = None


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def page_name(location: str, replay_id: str) -> str:
    """The file name of a replay's HTML page: readable, and unique per input location."""
    digest = hashlib.sha256(location.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    stem = _UNSAFE.sub("-", replay_id).strip("-.")[:60] or "replay"
    return f"{stem}-{digest}.html"


_STATE: dict[str, Any] = {}


def _backend(settings: Settings) -> Any:
    made = _STATE.get("backend")
    if made is None or _STATE.get("settings") != settings:
        from unmask.backends import create

        made = create(settings.backend, timeout_ms=settings.timeout_ms)
        _STATE["backend"] = made
        _STATE["settings"] = settings
    return made


def load_task(task: Task, limits: Limits, protocol: Any = None) -> Any:
    """The validated ``Replay`` of a task (raises ``UnmaskError`` when it is not one),
    read against ``protocol`` (a ``ProtocolFile``) when one is given."""
    from unmask.replay.load import replay_from_obj

    obj, text = task_document(task, limits)
    if task.text is None:
        return replay_from_obj(obj, task.file, Path(task.file).parent, limits, protocol=protocol)
    base_dir = Path.cwd() if task.file == STDIN_LABEL else Path(task.file).parent
    return replay_from_obj(
        obj, task.file, base_dir, limits, line=task.line, text=text, protocol=protocol
    )


def task_document(task: Task, limits: Limits) -> tuple[Any, str | None]:
    """The task's JSON document, not yet validated, and the text of a JSON Lines record
    (None for a whole file); raises ``UnmaskError`` when it cannot be read or parsed."""
    from unmask.plumbing.jsonload import parse_json_document, read_json_file

    if task.problem is not None:
        code, message, hint = task.problem
        raise UnmaskError([Diagnostic(code, message, file=task.location, help=hint)])
    if task.text is None:
        return read_json_file(task.file, limits), None
    return parse_json_document(task.text, task.file, limits, first_line=task.line or 1)


def audit_task(task: Task, settings: Settings) -> Result:
    """Check one task; every failure becomes an error record."""
    from unmask.checking.outcomes import check_replay_line

    replay = None
    try:
        replay = load_task(task, settings.limits, settings.protocol)
        report, line = check_replay_line(
            replay, _backend(settings), task.location, deadline_ms=settings.deadline_ms
        )
    except UnmaskError as exc:
        return _failed(task, exc.diagnostics, settings)
    except RecursionError:
        d = Diagnostic("limit", "the replay is nested too deeply to check", file=task.location)
        return _failed(task, [d], settings)
    except Exception as exc:  # one broken replay must not stop the batch
        reraise_interrupt(exc)
        return _failed(task, [internal_error(exc, file=task.location)], settings)
    page = None
    if settings.html:
        from unmask.render import html

        page = html.render(report, replay, trust=settings.trust)
    record = ResultRecord.from_report(report, task.location)
    if settings.trust is None:
        return Result(line, record, page)
    from unmask.review.calibration import digest_text

    text = replay.protocol.text
    return Result(line, record, page, (replay.protocol.name, digest_text(text) if text else ""))


def _failed(task: Task, diags: Iterable[Diagnostic], settings: Settings | None = None) -> Result:
    pf = None if settings is None else settings.protocol
    obj = error_record(task.location, diags, None if pf is None else pf.recheck())
    # made of the line itself: an error record is read back the one way
    return Result(encode_line(obj), ResultRecord.from_line(obj))


def died(task: Task, settings: Settings | None = None) -> Result:
    """The error record of a replay whose checking kills the process running it."""
    what = "the process checking this replay died (a crash in the solver?)"
    return _failed(task, [internal_error(file=task.location, what=what)], settings)


@contextlib.contextmanager
def batch_gc() -> Iterator[None]:
    """Collect garbage less often for the length of a batch run."""
    old = gc.get_threshold()
    if old[0] != 0:  # 0: automatic collection is off, and stays off
        gc.set_threshold(*(max(a, b) for a, b in zip(old, GC_THRESHOLDS, strict=False)))
    try:
        yield
    finally:
        gc.set_threshold(*old)


# glibc's heap thresholds where its own adaptive rule stops raising them (64-bit
# DEFAULT_MMAP_THRESHOLD_MAX, and twice that for trimming)
HEAP_MMAP_THRESHOLD = 32 << 20
HEAP_TRIM_THRESHOLD = 64 << 20


def batch_heap() -> bool:
    """Keep freed heap memory in this process for the next replay (glibc only); True if
    the allocator took the setting.

    glibc gives the top of its heap back to the system once more than a threshold is
    free, and raises that threshold only as it frees large blocks: a 2000-claim replay
    (3 MiB of heap above its start) had its pages returned and faulted in again every
    time, about 1,900 page faults a replay, where a 200-claim replay had none. The
    thresholds start where glibc's rule would end instead. It is a setting of the whole
    process that cannot be undone (glibc has no way back to the adaptive rule), so the
    command line's batch commands set it for themselves and the workers they fork; a
    program that imports Unmask is left as it is.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):  # another C library: not its knobs
            return False
        m_trim_threshold, m_mmap_threshold = -1, -3  # malloc.h
        return bool(libc.mallopt(m_mmap_threshold, HEAP_MMAP_THRESHOLD)) and bool(
            libc.mallopt(m_trim_threshold, HEAP_TRIM_THRESHOLD)
        )
    except (OSError, AttributeError):
        return False


def _run_chunk(tasks: list[Task], settings: Settings) -> list[Result]:
    # in a pool or cluster worker too, whatever process started it
    with batch_gc():
        return [audit_task(t, settings) for t in tasks]


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
    work: Callable[[list[Task], Settings], list[Result]] = _run_chunk,
    folded: bool = False,
) -> tuple[list[tuple], Summary | None]:
    """``work`` (``_run_chunk``) for a pool job or a Dask partition: tasks and results as
    ``task_wire``/``result_wire``, and with ``folded`` the results' summary (``fold``)."""
    results = work([Task(*w) for w in items], settings)
    return [result_wire(r) for r in results], fold(results) if folded else None


def _run_range(rg: tuple, settings: Settings, folded: bool = False) -> tuple[list, Summary | None]:
    """A pool job that reads its own lines: ``(line number, result_wire)`` for each, and
    with ``folded`` their summary."""
    tasks = list(range_tasks(LineRange(*rg), settings.limits))
    results = _run_chunk(tasks, settings)
    wires = [(t.line, result_wire(r)) for t, r in zip(tasks, results, strict=True)]
    return wires, fold(results) if folded else None


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


def _pool_jobs(
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


Emit = Callable[[Task, Result], None]


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
                emit_all((t,), (audit_task(t, settings),), None, emit, summary)
                if settle is not None:
                    settle()
            return
        _Pool(settings, jobs, settle, summary).run(tasks, emit)


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


class _Pool:
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

        _backend(settings)  # fail here, not in every worker; forked workers inherit it
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
            return pool.submit(_run_range, rg, self.settings, folded)
        return pool.submit(run_wire, [task_wire(t) for t in job], self.settings, _run_chunk, folded)

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
            for job in _pool_jobs(tasks, self.jobs):
                self.pending.append((job, self._try(job)))
                while len(self.pending) >= self.window or (
                    self.pending and (self.pending[0][1] is None or self.pending[0][1].done())
                ):
                    self._drain_one(emit)
            while self.pending:
                self._drain_one(emit)
        except BaseException:
            _kill(self.pool)
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
            _kill(self.pool)
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
            _kill(single)


def _kill(pool: Any) -> None:
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
