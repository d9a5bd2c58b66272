"""The tuning of a batch run: how big a job is, how many are in flight, and the process's
garbage collector and heap while it runs.

Contract:
- ``CHUNK_TASKS`` and ``CHUNK_BYTES`` bound one pool job (``wire.chunks``), ``TAIL_PIECES``
  cuts the input's last jobs smaller, ``WINDOW_PER_JOB`` jobs per process are in flight, and
  ``RESULTS_BUFFER`` is the results file's buffer: one job's lines leave in one write;
- while a run runs, and while a worker runs a chunk, the garbage collector runs less often:
  its thresholds are at least ``unmask.plumbing.limits.GC_THRESHOLDS`` (``batch_gc``; the
  command line sets the same for a whole run, but a Dask worker or a program calling
  ``run.run_audit`` has Python's 700, 10, 10). A replay allocates many objects that live
  until its report is written and makes almost no reference cycles, so frequent collections
  only re-examine live objects. The old thresholds are put back afterwards;
- ``batch_heap()`` (glibc only) keeps freed heap memory in the process for the next replay
  instead of handing it back and faulting it in again; it cannot be undone, so the batch
  commands call it for their own process, never ``run.run_audit``.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator

from unmask.plumbing.limits import GC_THRESHOLDS

# how many tasks one pool job carries, and how many jobs per process may be in flight
CHUNK_TASKS = 256
CHUNK_BYTES = 1 << 20
TAIL_PIECES = 4  # the input's last jobs, cut smaller, per process
# the results file's buffer: a job's lines (about as long as its records) leave in one
# write at its flush, where the default buffer of a few KiB made a system call every line
# or two; that was a quarter of a `--jobs` parent's time
RESULTS_BUFFER = 2 * CHUNK_BYTES
WINDOW_PER_JOB = 4


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
