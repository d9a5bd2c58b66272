"""Reports in every format: one module per format, each with ``render(report, replay=None,
**options) -> str``.

Contract: ``FORMATS`` names the modules (``unmask.render.text``, ``json``, ``html``,
``markdown``, ``sarif``, ``junit``); ``render(fmt, report, replay=None, **options)``
imports only the one asked for and passes its text through ``safe.finish`` last, the single
output policy (no character that acts on a terminal or reorders a line reaches a document
raw, a lone surrogate becomes U+FFFD), so whatever a replay holds, the result can be
written and read as it is. Adding a format is adding its module and its name here.
"""

from __future__ import annotations

import importlib
from typing import Any

FORMATS: tuple[str, ...] = ("text", "json", "html", "markdown", "sarif", "junit")


def render(fmt: str, report: Any, replay: Any = None, **options: Any) -> str:
    """The report in format ``fmt`` (one of ``FORMATS``)."""
    from unmask.plumbing.safe import finish

    if fmt not in FORMATS:
        raise ValueError(f"unknown report format `{fmt}`")
    module = importlib.import_module(f"unmask.render.{fmt}")
    return finish(fmt, module.render(report, replay, **options))
