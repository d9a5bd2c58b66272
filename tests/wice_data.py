"""Where the WiCE data is, for the tests that read it (skipped when it is not there).

CI keeps `shared/` beside the clone; a worktree kept in a folder of worktrees has it one up.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WICE_DIR: Path | None = next(
    (
        p
        for p in (
            ROOT.parent / "shared" / "data" / "wice",
            ROOT.parent.parent / "shared" / "data" / "wice",
        )
        if (p / "gold_claim_test.jsonl").is_file()
        and (p / "gpt-4-0613_claim_test_outputs.jsonl").is_file()
    ),
    None,
)
needs_wice = pytest.mark.skipif(WICE_DIR is None, reason="the WiCE data is not beside the clone")
