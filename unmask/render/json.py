"""The report as its canonical JSON (``unmask check --format json``).

Contract: ``render(report, replay=None) -> str`` is ``unmask.report.dumps`` with the one
output policy of every format applied (``safe.finish``: a control character or a
bidirectional override is written as a ``\\u`` escape, a lone surrogate from the replay
becomes U+FFFD), so the text is always valid UTF-8 and valid JSON and holds the values.
The replay is not needed: the report carries everything.
"""

from __future__ import annotations

from typing import Any

from unmask.report import Report, dumps
from unmask.safe import finish


def render(report: Report, replay: Any = None) -> str:
    """The JSON report text."""
    return finish("json", dumps(report))
