"""Reproducible studies on real judge data (one module per study), run as ``unmask study
NAME`` (``unmask.commands.study``) from any folder.

Contract: ``audit(replays, out, jobs, skipped, html)`` is the step every study shares: it
prints each import skip on stderr, audits the replays folder through the library
(``unmask.batch.audit.audit``, what ``unmask audit`` runs) into ``OUT/results.jsonl`` and
``OUT/summary.json`` (and ``OUT/summary.txt``, the summary the command prints; with
``html``, the HTML report in that folder), and returns the parsed result lines. An audit
that checks no replay at all stops the study (``SystemExit`` with the summary); an audit
that cannot start raises what the library raises (an ``UnmaskError``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def audit(
    replays: Path,
    out: Path,
    jobs: int,
    skipped: Iterable[Any] = (),
    html: Path | None = None,
) -> list[dict]:
    """Audit a study's replays; see the contract."""
    from unmask.batch.audit import AuditOptions
    from unmask.batch.audit import audit as run_audit

    for s in skipped:
        print(f"{s.where}: skipped: {s.reason}", file=sys.stderr)
    results = out / "results.jsonl"
    options = AuditOptions(
        jobs=jobs,
        out=str(results),
        summary_json=str(out / "summary.json"),
        html=None if html is None else str(html),
    )
    outcome = run_audit([str(replays)], options)
    text = "\n".join([outcome.summary.render_text(), *outcome.hints]) + "\n"
    (out / "summary.txt").write_text(text, encoding="utf-8")
    if outcome.summary.valid_inputs == 0:
        raise SystemExit(f"the audit checked no replay:\n{text}")
    return [json.loads(x) for x in results.read_text(encoding="utf-8").splitlines() if x]
