"""The suite's own tools: `--cpu-durations` (tests/conftest.py) lists CPU time per test,
from the workers of a parallel run."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT


def _run(*args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return out.stdout


def test_cpu_durations_lists_the_costliest_tests_from_every_worker():
    # two workers: the figures travel from the workers to the main process
    text = _run("-n", "2", "tests/plumbing/test_frozen.py", "--cpu-durations", "2")
    assert "the 2 tests that took the most CPU time" in text, text
    rows = re.findall(r"^ +(\d+\.\d\d)s  (tests/plumbing/test_frozen\.py::\S+)$", text, re.M)
    assert len(rows) == 2, text
    assert float(rows[0][0]) >= float(rows[1][0])
    total = re.search(r"^ +(\d+\.\d\d)s  in all, over (\d+) tests$", text, re.M)
    assert total and int(total.group(2)) >= 2 and float(total.group(1)) > 0, text


def test_without_the_option_nothing_is_listed():
    assert "most CPU time" not in _run("-n", "0", "tests/plumbing/test_frozen.py")
