"""The suite's own tools: `--cpu-durations` (tests/conftest.py) lists CPU time per test,
from the workers of a parallel run."""

from __future__ import annotations

import re
import subprocess
import sys

from tests import conftest
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


class _Options:
    """A configuration without ``--cpu-durations``."""

    def getoption(self, name: str, default: object = None) -> object:
        return None if name == "cpu_durations" else default


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_sep(self, sep: str, title: str) -> None:
        self.lines.append(title)

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def test_without_the_option_nothing_is_listed():
    # in this process, the two hooks the run above goes through (a second pytest process
    # cost three seconds): nothing is measured, and nothing is written even with figures
    class Item:
        def __init__(self) -> None:
            self.config = _Options()
            self.user_properties: list[tuple[str, float]] = []

    item = Item()
    steps = conftest._timed(item)  # type: ignore[arg-type]
    next(steps)
    assert next(steps, "done") == "done"
    assert item.user_properties == []
    writer = _Writer()
    conftest._CPU["tests/x.py::test_y"] = 1.0
    try:
        conftest.pytest_terminal_summary(writer, _Options())  # type: ignore[arg-type]
    finally:
        del conftest._CPU["tests/x.py::test_y"]
    assert writer.lines == []
    # and with the option, the same figures are written: the writer is the one used
    with_option = type("WithOption", (), {"getoption": lambda self, name, default=None: 1})()
    conftest._CPU["tests/x.py::test_y"] = 1.0
    try:
        conftest.pytest_terminal_summary(writer, with_option)  # type: ignore[arg-type]
    finally:
        del conftest._CPU["tests/x.py::test_y"]
    assert any("most CPU time" in line for line in writer.lines), writer.lines
