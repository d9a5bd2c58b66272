"""Unmask: audit whether an LLM judge followed its protocol, not only whether it was right."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "check"]


def __getattr__(name: str) -> Any:
    # `unmask.check` is imported on first use so `import unmask` stays cheap (no solver)
    if name == "check":
        from unmask.api import check

        return check
    raise AttributeError(f"module 'unmask' has no attribute {name!r}")
