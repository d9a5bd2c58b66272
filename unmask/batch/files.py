"""The files an audit writes besides its result lines: HTML pages, the index, JUnit.

Contract: every file is written whole or not at all (``unmask.outputs``), and a file that
cannot be written raises ``OutputError``. ``JUnitFile`` keeps the test cases' XML in an
anonymous temporary file beside the target while the run goes on, so memory does not grow
with the run, and writes the suite around them at the end.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from unmask.outputs import OutputError, atomic, cannot_write, write_text
from unmask.render import html, junit


def write_page(html_dir: str, name: str, page: str) -> None:
    write_text(os.path.join(html_dir, name), page)


def write_index(html_dir: str, summary: Mapping[str, Any], rows: Sequence[Mapping]) -> None:
    write_text(os.path.join(html_dir, "index.html"), html.render_index(summary, rows))


class JUnitFile:
    def __init__(self, path: str, name: str = "unmask audit") -> None:
        self.path = path
        self.suite = junit.Suite(name)
        folder = os.path.dirname(os.path.realpath(path)) or "."
        try:
            if os.path.isdir(path):
                raise IsADirectoryError(21, "Is a directory")
            if not os.path.isdir(folder):
                raise FileNotFoundError(2, "No such file or directory")
            try:  # beside the target, where the suite will be written
                self.body = tempfile.TemporaryFile("w+", encoding="utf-8", dir=folder)  # noqa: SIM115
            except OSError:  # a folder of devices (`/dev/stdout`): the system's temporary one
                self.body = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise OutputError([cannot_write(path, exc)]) from None

    def add(self, case: junit.Case) -> None:
        try:
            self.body.write(case.xml())
            self.suite.add(case)
        except OSError as exc:
            raise OutputError([cannot_write(self.path, exc)]) from None

    def finish(self) -> None:
        try:
            self.body.seek(0)
        except OSError as exc:
            raise OutputError([cannot_write(self.path, exc)]) from None
        with atomic(self.path, "w") as out:
            self.suite.write(out, self.body)
        self.body.close()

    def close(self) -> None:
        self.body.close()
