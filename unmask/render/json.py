"""The report as its canonical JSON (``unmask check --format json``).

Contract: ``render(report, replay=None) -> str`` is ``unmask.checking.report.dumps`` with the one
output policy of every format applied (``safe.finish``: a control character or a
bidirectional override is written as a ``\\u`` escape, a lone surrogate from the replay
becomes U+FFFD), so the text is always valid UTF-8 and valid JSON and holds the values.
The replay is not needed: the report carries everything. With ``trust`` (an
``unmask.review.calibration.Trust``), each finding and each passing check resting on unreviewed
readings gets ``trust`` (``coverage_trust`` for a coverage check) after its own fields, and
the report ends with ``calibration`` (docs/report-format.md); the report itself never
holds them, so without a calibration the text is exactly ``dumps``.
"""

from __future__ import annotations

import json
from typing import Any

from unmask.checking.report import Report, dumps
from unmask.plumbing.safe import finish


def render(report: Report, replay: Any = None, *, trust: Any = None) -> str:
    """The JSON report text."""
    if trust is None:
        return finish("json", dumps(report))
    return finish(
        "json", json.dumps(weighed(report, replay, trust), ensure_ascii=False, indent=2) + "\n"
    )


def weighed(report: Report, replay: Any, trust: Any) -> dict[str, Any]:
    """The report's JSON with each check's trust and the calibration it was weighed by."""
    from unmask.render.words import Lookup, calibration_note, trust_of

    look = Lookup(replay if getattr(replay, "protocol", None) is not None else None, trust)
    out = report.to_json()

    def put(obj: dict[str, Any], key: str, result: Any) -> None:
        standing = trust_of(result, look)
        if standing is not None:
            obj[key] = standing.to_json()

    put(out["verdict"], "trust", report.verdict.result)
    for obj, r in zip(out["requirements"], report.requirements, strict=True):
        put(obj, "trust", r.holds)
        put(obj, "coverage_trust", r.coverage)
    for obj, g in zip(out["grounding"], report.grounding, strict=True):
        put(obj, "trust", g.result)
    _, warning = calibration_note(look, report.protocol)
    out["calibration"] = {**trust.header_json(), "protocol_differs": bool(warning)}
    if warning:
        out["calibration"]["warning"] = warning
    return out
