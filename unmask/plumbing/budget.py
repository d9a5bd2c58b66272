"""A caller's deadline, watched inside work that is not a solver call (encoding, analysis).

Contract: ``watching(passed)`` runs a block under a deadline: ``passed()`` answers whether
it has passed, and ``tick(n)`` (called by long loops: the IR's fold, the CNF encoder, the
truth table, the sliced backend's slicing, an analysis between its questions) asks it every
``EVERY`` units of work and raises ``OutOfTime`` once it says yes. Outside ``watching``
``tick`` only counts, so code that runs with no deadline is unchanged. ``OutOfTime`` is
never a result: whoever set the watch turns it into its own UNKNOWN (a ``deadline``
reason), and work it cut short is thrown away, never read. A leaf: it imports nothing of
the project, so every floor may watch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

EVERY = 2048  # units of work (fold nodes, clauses) between two looks at the clock


class OutOfTime(Exception):  # not an error: the deadline a caller set has passed
    """The deadline of the enclosing ``watching`` passed in the middle of some work."""


class _Watch:
    __slots__ = ("count", "passed")

    def __init__(self, passed: Callable[[], bool]) -> None:
        self.passed = passed
        self.count = 0


_WATCH: ContextVar[_Watch | None] = ContextVar("unmask_budget", default=None)


@contextlib.contextmanager
def watching(passed: Callable[[], bool] | None) -> Iterator[None]:
    """Run the block under ``passed`` (None: no deadline; an enclosing watch stays)."""
    if passed is None:
        yield
        return
    token = _WATCH.set(_Watch(passed))
    try:
        yield
    finally:
        _WATCH.reset(token)


def tick(n: int = 1) -> None:
    """Count ``n`` units of work; every ``EVERY`` of them, raise ``OutOfTime`` if past."""
    watch = _WATCH.get()
    if watch is None:
        return
    watch.count += n
    if watch.count >= EVERY:
        watch.count = 0
        if watch.passed():
            raise OutOfTime


def check_now() -> None:
    """Raise ``OutOfTime`` if the deadline has passed (between two coarse steps)."""
    watch = _WATCH.get()
    if watch is not None and watch.passed():
        raise OutOfTime
