"""Ctrl-C that arrives dressed as another error.

Contract: ``is_interrupt(exc)`` is True for a ``KeyboardInterrupt`` and for the
``ctypes.ArgumentError`` that ctypes raises in its place when the signal lands while it
converts a C call's arguments (z3's bindings call C through ctypes; the message reads
`argument N: KeyboardInterrupt: ` and the original is not chained). Every handler that
catches broad exceptions around checking calls ``reraise_interrupt(exc)`` first, so an
interruption never becomes an error record, an internal error or a disagreement: it stops
the command with exit status 130 (``unmask.cli.stdout``).
"""

from __future__ import annotations

import sys


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
