"""Reproducible studies on real judge data (one module per study).

Contract: ``audit(replays, out, jobs, skipped)`` is the step every study shares: it prints
each import skip on stderr, audits the replays folder with ``unmask audit`` into
``OUT/results.jsonl`` and ``OUT/summary.json`` (and the audit's own text summary into
``OUT/summary.txt``), and returns the parsed result lines.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def audit(replays: Path, out: Path, jobs: int, skipped: Iterable[Any] = ()) -> list[dict]:
    """Audit a study's replays; see the contract. A failed audit stops the study."""
    from click.testing import CliRunner

    from unmask.cli.main import main

    for s in skipped:
        print(f"{s.where}: skipped: {s.reason}", file=sys.stderr)
    results = out / "results.jsonl"
    args = ["audit", str(replays), "--out", str(results), "--jobs", str(jobs)]
    args += ["--summary-json", str(out / "summary.json")]
    res = CliRunner().invoke(main, args)
    if res.exit_code not in (0, 1, 3):
        raise SystemExit(f"the audit failed ({res.exit_code}): {res.output}")
    (out / "summary.txt").write_text(res.output, encoding="utf-8")
    return [json.loads(x) for x in results.read_text(encoding="utf-8").splitlines() if x]
