"""The Z3 backend, as registered: made without importing z3, which its first session imports.

Contract: ``Z3Backend()`` raises ``ModuleNotFoundError`` (``name="z3"``) at once when z3 is
not installed, so a run that names it is told before any work, as when the module imported
z3 itself; ``open`` makes a session (``unmask.backends.z3_solver``, where what a session
guarantees is stated); ``lower`` (IR to Z3 terms) is still found here. Why apart: a check
whose facts settle every question asks no solver (``unmask.checking.closed``), and importing
z3 and making a context cost such a check of the default backend about a quarter of its
instructions (docs/performance.md).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from unmask.backends.base import Backend, Part, PartLabel, Session

if TYPE_CHECKING:
    import z3


class Z3Backend(Backend):
    """Sessions of one backend share its ``z3.Context`` (creating a context costs more
    than checking a small replay) but each has its own solver, so they never see each
    other's assertions. A context is not thread-safe: use one backend per thread."""

    name = "z3"
    _ctx: z3.Context | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if importlib.util.find_spec("z3") is None:
            raise ModuleNotFoundError("No module named 'z3'", name="z3")

    def open(self, parts: Sequence[Part[PartLabel]], atoms: Sequence[str]) -> Session:
        import z3

        from unmask.backends.z3_solver import Z3Session

        if self._ctx is None:
            self._ctx = z3.Context()
        return Z3Session(parts, atoms, self.timeout_ms, self.seed, self._ctx)


def __getattr__(name: str) -> Any:
    # `lower` is documented here (docs/api.md); it lives with the sessions, and is imported
    # (with z3) when asked for
    if name == "lower":
        from unmask.backends.z3_solver import lower

        return lower
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
