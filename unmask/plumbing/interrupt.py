"""Ctrl-C, kept: never lost, never dressed as another error.

Contract:
- ``is_interrupt(exc)`` is True for a ``KeyboardInterrupt`` and for the
  ``ctypes.ArgumentError`` that ctypes raises in its place when the signal lands while it
  converts a C call's arguments (z3's bindings call C through ctypes; the message reads
  `argument N: KeyboardInterrupt: ` and the original is not chained). Every handler that
  catches broad exceptions around checking calls ``reraise_interrupt(exc)`` first, so an
  interruption never becomes an error record, an internal error or a disagreement;
- under ``sticky()`` (both programs' commands run under it) SIGINT is remembered as well
  as raised: a ``KeyboardInterrupt`` raised inside a ``__del__`` (z3's objects have one) is
  swallowed by Python, so ``checkpoint()``, called before every solver call, raises it
  again, and Python's "exception ignored" report of it is not printed (it is no error:
  the command stops with the one line that says it was interrupted). Outside
  ``sticky()``, and in a thread that is not the main one, nothing changes;
- the command then stops with exit status 130 (``unmask.cli.stdout``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

_seen = False


def is_interrupt(exc: BaseException) -> bool:
    if isinstance(exc, KeyboardInterrupt):
        return True
    ctypes = sys.modules.get("ctypes")  # not loaded: no C call went through it
    return (
        ctypes is not None
        and isinstance(exc, ctypes.ArgumentError)
        and ": KeyboardInterrupt:" in str(exc)
    )


def reraise_interrupt(exc: BaseException) -> None:
    """Raise ``KeyboardInterrupt`` when ``exc`` is one in disguise; else return."""
    if is_interrupt(exc):
        raise KeyboardInterrupt from None


def interrupt(signum: int = 0, frame: Any = None) -> None:
    """A signal handler: remember the interruption, and raise it."""
    global _seen
    _seen = True
    raise KeyboardInterrupt


def checkpoint() -> None:
    """Raise ``KeyboardInterrupt`` again if one was seen and may have been swallowed."""
    if _seen:
        raise KeyboardInterrupt


@contextlib.contextmanager
def sticky() -> Iterator[None]:
    """SIGINT handled by ``interrupt`` for the length of the block, when it has Python's
    default handler and this is the main thread; the old handler is put back after."""
    # the C module the standard `signal` wraps: `signal` itself makes three enums of the
    # platform's signal numbers when imported (about 0.5 ms of every command's start-up),
    # and handlers here are only read and put back, never shown
    if TYPE_CHECKING:
        import signal
    else:
        import _signal as signal

    global _seen
    _seen = False
    previous = None
    with contextlib.suppress(ValueError):  # not the main thread: leave it alone
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            previous = signal.signal(signal.SIGINT, interrupt)
    if previous is None:
        yield
        return
    hook = sys.unraisablehook

    def quiet(unraisable: Any) -> None:
        if unraisable.exc_value is None or not is_interrupt(unraisable.exc_value):
            hook(unraisable)

    sys.unraisablehook = quiet
    try:
        yield
    finally:
        _seen = False
        sys.unraisablehook = hook
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGINT, previous)
