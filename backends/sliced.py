"""The sliced backend, as registered: made without its sessions' code, which its first
session imports.

Contract: ``create("sliced")``, ``create("sliced:glucose4")`` (another PySAT solver, named
and checked when the backend is made); ``open`` makes a session of
``unmask.backends.sliced_session``, where what a check sees and answers is stated. Why
apart: a check whose facts settle every question (``unmask.checking.closed``) opens no
session, and the sessions' code is the largest module such a check would otherwise compile
(docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from unmask.backends.base import Backend, Part, PartLabel, Session


class SlicedBackend(Backend):
    name = "sliced"
    takes_option = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # None: the default solver. PySAT's wrapper is imported only when a solver is named
        # or made (most checks are answered without one)
        self.solver_name: str | None = None
        if self.option is not None:
            from unmask.backends.pysat_core import resolve_solver

            self.solver_name = resolve_solver(self.option)

    def open(self, parts: Sequence[Part[PartLabel]], atoms: Sequence[str]) -> Session:
        from unmask.backends.sliced_session import SlicedSession

        return SlicedSession(parts, atoms, self.timeout_ms, self.solver_name)
