"""The files an audit writes besides its result lines: HTML pages, the index, JUnit.

Contract: every file is written whole or not at all (``unmask.plumbing.outputs``), and a file that
cannot be written raises ``OutputError``. Pages and the index are new files directly inside
the folder asked for: a link at their name is replaced, never followed.
``remove_stale_pages(html_dir, keep)`` removes, after a run, the pages an earlier run wrote
into the same folder that this run did not (a replay since removed or renamed), and only
those: a regular file of this user directly in the folder, named as
``unmask.batch.task.page_name`` names pages, whose first bytes are Unmask's page head
(``PAGE_HEAD``); a link is never followed, anything else is left alone. ``JUnitFile`` keeps
the test cases' XML in an anonymous temporary file beside the target while the run goes on,
so memory does not grow with the run, and writes the suite around them at the end.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from unmask.plumbing.outputs import (
    OutputError,
    atomic,
    cannot_write,
    remove_stale_temps,
    write_bytes,
)
from unmask.render import html, junit

# what ``unmask.batch.task.page_name`` makes: a cleaned id of up to 60 characters, a hash
PAGE_NAME = re.compile(r"[A-Za-z0-9._-]{1,60}-[0-9a-f]{10}\.html")
# how every page ``unmask.render.html.render`` writes begins (tests/batch/test_audit_cli.py holds
# it to the template): a file that does not begin so is not Unmask's, whatever its name
PAGE_HEAD = (
    b'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    b'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
    b'<meta name="generator" content="unmask">\n'
)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def write_page(html_dir: str, name: str, page: str) -> None:
    _write_inside(html_dir, name, page)


def write_index(html_dir: str, summary: Mapping[str, Any], rows: Sequence[Mapping]) -> None:
    _write_inside(html_dir, "index.html", html.render_index(summary, rows))


def _write_inside(html_dir: str, name: str, text: str) -> None:
    """A page written as a new file directly inside the folder: a link found at its name
    (``index.html -> ~/.bashrc``) is replaced, never followed, so nothing outside the
    folder asked for is ever written."""
    write_bytes(os.path.join(html_dir, name), text.encode("utf-8"), follow=False)


def _is_page(path: str) -> bool:
    """A regular file of this user (never through a link) that begins as a page does."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)  # a link or a device: an error or refused
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return False
        return os.read(fd, len(PAGE_HEAD)) == PAGE_HEAD
    finally:
        os.close(fd)


def remove_stale_pages(html_dir: str, keep: set[str]) -> list[str]:
    """Remove the pages of an earlier run that are not in ``keep`` (this run's page names),
    and the temporary files of a killed run; returns the names of the pages removed."""
    remove_stale_temps(html_dir)
    removed = []
    with contextlib.suppress(OSError):
        for e in sorted(os.scandir(html_dir), key=lambda e: e.name):
            if e.name in keep or not PAGE_NAME.fullmatch(e.name):
                continue
            with contextlib.suppress(OSError):
                # a link, a folder, a pipe or a device is not even opened
                if stat.S_ISREG(e.stat(follow_symlinks=False).st_mode) and _is_page(e.path):
                    os.unlink(e.path)  # the name goes; a hard link's other names keep it
                    removed.append(e.name)
    return removed


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
