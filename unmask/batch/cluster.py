"""Running an audit on a Dask cluster: the batch variant behind ``unmask audit --dask``.

Contract:
- ``open_cluster(spec)`` connects to a running scheduler (``tcp://HOST:PORT``) or starts a
  ``LocalCluster`` of N single-threaded worker processes (``local`` or ``local:N``), within
  ``CONNECT_TIMEOUT`` seconds; ``Unavailable`` says why not (dask not installed, a bad
  spec, an address that does not answer, a scheduler without workers). Dask is imported
  here only, so commands that do not ask for it do not pay for it;
- ``run_audit(tasks, settings, emit, client)`` cuts the tasks into partitions
  (``wire.chunks``, larger bounds) and submits each as one Dask task: the tasks go out
  (a JSON Lines record's bytes, or a file's path; a ``LineRange`` given is read here, on
  the client, since the workers may not see its file) with the ``Settings``, and their
  results come back, each list as ``wire``'s tuples pickled in one blob
  (``_partition``); never a solver object. A worker process keeps its backend and parser
  between partitions. Results reach ``emit`` in input order, with at most ``window``
  partitions in flight (completion is followed with ``as_completed``, the reorder buffer
  is the window), so the lines are those of a local run, byte for byte;
- a worker that dies costs its partition, which the scheduler runs again; a partition
  that kills workers twice (``allowed-failures`` 1, set on a local cluster) is re-run one
  replay at a time, and a replay that kills workers twice becomes the local pool's error
  record (``task.died``). Any other failure of the cluster raises ``ClusterError``.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from unmask.batch import run, wire
from unmask.batch.summary import Summary
from unmask.batch.task import Result, Settings, died
from unmask.batch.wire import Emit
from unmask.replay.inputs import LineRange, Task

LOCAL = "local"
# the most worker processes `local:N` starts: each is a Python process of tens of megabytes,
# and a number past this is a typo, not a machine (docs/security.md)
MAX_LOCAL_WORKERS = 256
CONNECT_TIMEOUT = 10.0  # seconds to reach a scheduler, and for it to have a worker
PARTITION_TASKS = 256  # replays per Dask task: its overhead is a few milliseconds
PARTITION_BYTES = 4 << 20
WINDOW_PER_WORKER = 4  # partitions in flight per worker thread
RESIZE_S = 5.0  # how often the window follows the number of workers
INSTALL_HINT = "install the extra: `pip install 'unmask[dask]'`"

Work = Callable[[list[Task], Settings], list[Result]]


class Unavailable(Exception):
    """``--dask`` cannot be used: a message and a hint, for a usage error."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class ClusterError(Exception):
    """The cluster failed during the run (not a replay: a lost scheduler, a broken worker):
    ``message`` says what failed in words, ``detail`` quotes the exception, for a report."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


def parse_spec(spec: str) -> tuple[str, int | None]:
    """``("local", N)`` for ``local[:N]``, else ``(address, None)``."""
    if spec == LOCAL or spec.startswith(LOCAL + ":"):
        count = spec[len(LOCAL) + 1 :]
        if not count:
            return LOCAL, os.cpu_count() or 1
        # ASCII digits only (`str.isdigit` also takes `²`, which `int` refuses), and few
        # enough that `int` never reads a number of thousands of digits
        ascii_digits = count.isascii() and count.isdigit() and len(count) <= 6
        if not ascii_digits or not 1 <= int(count) <= MAX_LOCAL_WORKERS:
            raise Unavailable(
                f"`--dask {spec}`: the number of local workers must be an integer from 1 "
                f"to {MAX_LOCAL_WORKERS}",
                "write `local` (one worker per CPU) or `local:N`",
            )
        return LOCAL, int(count)
    if not spec or any(c.isspace() for c in spec):
        raise Unavailable(f"`--dask {spec}` is not a scheduler address", "e.g. tcp://HOST:8786")
    return spec, None


@contextlib.contextmanager
def open_cluster(spec: str, timeout: float | None = None) -> Iterator[Any]:
    """A connected ``distributed.Client``; a local cluster is closed on the way out."""
    timeout = CONNECT_TIMEOUT if timeout is None else timeout
    where, workers = parse_spec(spec)
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise Unavailable(
            "`--dask` needs dask and distributed, which are not installed", INSTALL_HINT
        ) from None
    _quiet()
    if workers is not None:
        # a partition is retried once after its worker dies (the default allows three
        # deaths per task); one task per worker at a time, so a crash suspects only its own
        with dask.config.set(
            {
                "distributed.scheduler.allowed-failures": 1,
                "distributed.scheduler.worker-saturation": 1.0,
            }
        ):
            try:
                cluster = LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    scheduler_port=0,
                    silence_logs=50,  # CRITICAL: a dying worker is the run's business
                )
            except Exception as exc:  # e.g. a worker process that cannot start
                raise Unavailable(
                    f"cannot start a local dask cluster: {_reason(exc)}",
                    "run `unmask audit` as a program or from a script's main block",
                ) from None
        try:
            with Client(cluster, timeout=timeout) as client:
                yield client
        finally:
            cluster.close()
        return
    try:
        client = Client(where, timeout=timeout)
    except Exception as exc:  # a refused or malformed address: whatever dask raises, say so
        raise Unavailable(
            f"cannot reach the dask scheduler at `{where}`: {_reason(exc)}",
            "start one with `dask scheduler` and give its address, or use `--dask local`",
        ) from None
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError):
            raise Unavailable(
                f"the dask scheduler at `{where}` has no workers",
                f"start some with `dask worker {where}`",
            ) from None
        yield client
    finally:
        client.close()


def _quiet() -> None:
    import logging

    for name in ("distributed", "distributed.client", "distributed.scheduler"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _reason(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    text = (lines[0] if lines else type(exc).__name__).rstrip(".")
    return text[:1].lower() + text[1:]


def _partition(tasks: bytes, settings: Settings, work: Work, folded: bool) -> bytes:
    """One partition on a worker: its tasks in, its results out (with ``folded``, and
    their summary), each list ``wire``'s tuples pickled in one piece. Dask's own
    serialisation walks lists and tuples element by element (a partition of tuples cost
    the client more than one of objects), and pickles a slotted dataclass through
    ``copyreg`` object by object; one blob each way is neither."""
    out = wire.run_wire(pickle.loads(tasks), settings, work, folded)
    return pickle.dumps(out, pickle.HIGHEST_PROTOCOL)


def threads(client: Any) -> int:
    return max(1, sum(client.nthreads().values()))


def run_audit(
    tasks: Iterator[Task | LineRange],
    settings: Settings,
    emit: Emit,
    client: Any,
    *,
    partition: int | None = None,
    window: int | None = None,
    work: Work = wire.run_chunk,
    settle: Callable[[], None] | None = None,
    summary: Summary | None = None,
) -> None:
    """Audit every task on ``client``'s workers and ``emit`` each, in input order, and
    ``settle()`` after each partition's results; with ``summary``, each partition's
    results are folded by its worker and merged here (see ``run.run_audit``).

    ``window``: partitions in flight; by default ``WINDOW_PER_WORKER`` per worker thread,
    counted again every ``RESIZE_S`` seconds, so workers that join (or leave) during the
    run are used (or not waited for)."""
    # a line range is read here: the cluster's workers may not see the client's files
    records = run.expand(tasks, settings.limits)
    _Runner(client, settings, work, window, settle, summary).run(
        _lists(wire.chunks(records, partition or PARTITION_TASKS, PARTITION_BYTES)), emit
    )


def _lists(jobs: Iterator[wire.Job]) -> Iterator[list[Task]]:
    """The jobs ``chunks`` makes of tasks alone: lists (a ``LineRange`` goes alone only
    where one is given, and ``run.expand`` read each in its place)."""
    for job in jobs:
        assert isinstance(job, list)
        yield job


class _Runner:
    """Partitions in flight, in input order; each is fetched as soon as it finishes (so a
    worker that dies later loses nothing finished) and emitted when all before it are."""

    def __init__(
        self,
        client: Any,
        settings: Settings,
        work: Work,
        window: int | None = None,
        settle: Callable[[], None] | None = None,
        summary: Summary | None = None,
    ) -> None:
        from distributed import as_completed

        self.client = client
        self.settings = settings
        self.work = work
        self.settle = settle
        self.summary = summary
        self.fixed = window
        self.sized = 0.0
        self.window = window or 1
        self.tag = uuid.uuid4().hex[:12]
        self.count = 0
        # [partition, its future (None once fetched), (its results, their summary) (None
        # until then)]
        self.pending: deque[list[Any]] = deque()
        self.by_key: dict[str, list[Any]] = {}
        self.done = as_completed()

    def _submit(self, chunk: list[Task], folded: bool = True) -> Any:
        self.count += 1
        return self.client.submit(
            _partition,
            pickle.dumps([wire.task_wire(t) for t in chunk], pickle.HIGHEST_PROTOCOL),
            self.settings,
            self.work,
            folded and self.summary is not None,
            key=f"unmask-partition-{self.tag}-{self.count}",
            pure=False,
            retries=1,  # an exception (not a replay's: those are records) is tried again
        )

    def run(self, chunks: Iterator[list[Task]], emit: Emit) -> None:
        try:
            self._run(chunks, emit)
        finally:
            futures = [entry[1] for entry in self.pending if entry[1] is not None]
            self.pending.clear()
            self.by_key.clear()
            if futures:
                with contextlib.suppress(Exception):  # the client may be gone already
                    self.client.cancel(futures)

    def _resize(self) -> int:
        if self.fixed is None and time.monotonic() - self.sized >= RESIZE_S:
            self.window = WINDOW_PER_WORKER * threads(self.client)
            self.sized = time.monotonic()
        return self.window

    def _run(self, chunks: Iterator[list[Task]], emit: Emit) -> None:
        more = True
        while True:
            while more and len(self.pending) < self._resize():
                chunk = next(chunks, None)
                if chunk is None:
                    more = False
                    break
                future = self._submit(chunk)
                entry = [chunk, future, None]
                self.pending.append(entry)
                self.by_key[future.key] = entry
                self.done.add(future)
            if not self.pending:
                return
            front = self.pending[0]
            if front[2] is None:
                if self.done.is_empty():  # cannot be, but never wait on nothing
                    self._fetch(front)
                for future in self.done.next_batch(block=True):
                    found = self.by_key.get(future.key)
                    if found is not None and found[1] is future:
                        self._fetch(found)
            while self.pending and self.pending[0][2] is not None:
                chunk, _, (results, part) = self.pending.popleft()
                wire.emit_all(chunk, results, part, emit, self.summary)
                if self.settle is not None:
                    self.settle()

    def _fetch(self, entry: list[Any]) -> None:
        chunk, future, _ = entry
        entry[2] = self._results(chunk, future)
        entry[1] = None  # released: the cluster forgets the partition's results
        self.by_key.pop(future.key, None)

    def _results(self, chunk: list[Task], future: Any) -> tuple[list[Result], Any]:
        """A partition's results and, when its worker folded them, their summary."""
        from distributed import KilledWorker

        try:
            wires, part = pickle.loads(future.result())
            return [wire.from_wire(w) for w in wires], part
        except KilledWorker:
            pass
        except Exception as exc:
            detail = f"{type(exc).__name__}: {exc}"
            raise ClusterError("the results of a partition could not be fetched", detail) from None
        if len(chunk) == 1:
            return [died(chunk[0], self.settings)], None
        # one replay at a time, so that a crash cannot be blamed on its neighbours
        out: list[Result] = []
        for task in chunk:
            single = self._submit([task], folded=False)
            try:
                out.extend(wire.from_wire(w) for w in pickle.loads(single.result())[0])
            except KilledWorker:
                out.append(died(task, self.settings))
            except Exception as exc:
                detail = f"{type(exc).__name__}: {exc}"
                raise ClusterError("the results of a replay could not be fetched", detail) from None
        return out, None
