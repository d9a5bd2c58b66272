"""How a run of either program ends: its status, without tearing the interpreter down.

Contract: ``finish(exc)`` ends the process with the status of ``exc`` (the ``SystemExit`` a
click program always ends with) once everything a normal exit does that anyone could see
is done: the ``atexit`` callbacks run (temporary folders removed, a coverage or profiling
hook's data saved, worker processes stopped), in the order Python runs them, and both
standard streams are flushed. What is skipped is only the interpreter's own teardown:
freeing every object and module one by one, about a tenth of a short `unmask check` (36M
of 352M instructions, docs/performance.md). It is a normal exit instead, by re-raising
``exc``, wherever the teardown could matter:

- a thread that is not a daemon is still running (a normal exit waits for it);
- Python runs in development mode (``-X dev``: teardown reports unclosed files), or a
  tracer or profiler is installed (``python -m cProfile`` prints after the program ends);
- the status is not a number from 0 to 255 (Python prints a text and exits 1, and
  truncates a larger number its own way);
- flushing a stream fails (the normal exit reports it as it always did).

Why this is safe for files: every file the package writes is written inside a ``with``
block, or flushed after each record (``unmask.replay.outfolder``), and closed before the
command returns (ruff's SIM115 holds ``open`` to that in the suite), so no buffer is left
for the teardown to flush. Only ``StdoutGuard.__call__`` (the programs' entry points, run
with no arguments) calls this: click's ``main(args)``, which tests and library callers use,
raises ``SystemExit`` as before.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def _teardown_matters() -> bool:
    if sys.flags.dev_mode or sys.gettrace() is not None or sys.getprofile() is not None:
        return True
    threading = sys.modules.get("threading")
    if threading is None:
        return False
    main = threading.main_thread()
    return any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate())


def finish(exc: SystemExit) -> NoReturn:
    """End the process with ``exc``'s status, skipping only the interpreter's teardown."""
    status = exc.code
    if status is None:
        status = 0
    if not isinstance(status, int) or not 0 <= status <= 255 or _teardown_matters():
        raise exc
    import atexit

    atexit._run_exitfuncs()  # what a normal exit runs before its teardown, and clears
    try:
        # the original streams too, where a command or a library wrapped or replaced them
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        raise exc from None
    os._exit(status)
