"""Unmask: audit whether an LLM judge followed its protocol, not only whether it was right."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["ReplayBuilder", "__version__", "check"]


def __getattr__(name: str) -> Any:
    # `unmask.check` and `unmask.ReplayBuilder` are imported on first use, so that
    # `import unmask` stays cheap (no solver, no compiler)
    if name == "check":
        from unmask.api import check

        return check
    if name == "ReplayBuilder":
        from unmask.replay.builder import ReplayBuilder

        return ReplayBuilder
    raise AttributeError(f"module 'unmask' has no attribute {name!r}")
