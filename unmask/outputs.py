"""Writing the files a command produces: whole or not at all, and a failure as a diagnostic.

Contract:
- ``atomic(path, mode)`` is a context manager giving a file object; the text goes to a
  temporary file in the same folder, which replaces ``path`` (``os.replace``) only when the
  block ends without error, so a full disk or an interrupted run never leaves a truncated
  file. The new file keeps the mode of the file it replaces (else the umask's default), and
  a symbolic link is followed, not replaced, and a file the user may not write is refused.
  A path that exists and is not a regular file (``/dev/null``, ``/dev/stdout``, a FIFO) is
  written in place: it cannot be replaced;
- ``write_text(path, text)`` / ``write_bytes(path, data)`` are the one-call forms;
- every ``OSError`` on the way (a missing or read-only folder, a directory named as the
  file, a full disk, a closed pipe) becomes ``OutputError``, an ``UnmaskError`` carrying one
  ``output`` diagnostic that names the file and the reason; ``cannot_write(name, exc)``
  builds that diagnostic for writers that stream instead (results on stdout).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from unmask.diagnostics import Diagnostic, UnmaskError


class OutputError(UnmaskError):
    """A file the command writes could not be written (exit status 2 in every command)."""


def reason(exc: OSError) -> str:
    """The operating system's reason for ``exc``, lowercase, for a diagnostic."""
    return (exc.strerror or type(exc).__name__).lower()


def cannot_write(name: str, exc: OSError) -> Diagnostic:
    return Diagnostic("output", f"cannot write `{name}`: {reason(exc)}")


def _default_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic(path: str, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """A file object whose content replaces ``path`` when the block ends without error."""
    binary = "b" in mode
    kwargs: dict[str, Any] = {} if binary else {"encoding": encoding, "newline": ""}
    try:
        target = os.path.realpath(path)
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "Is a directory")
        if st is not None and not os.access(target, os.W_OK):
            # renaming over it would succeed, but the user made it read-only on purpose
            raise PermissionError(13, "Permission denied")
        if st is not None and not stat.S_ISREG(st.st_mode):
            # a device or a pipe cannot be replaced: write into it
            with open(target, "wb" if binary else "w", **kwargs) as fh:
                yield fh
            return
        folder = os.path.dirname(target) or "."
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
    except OSError as exc:
        raise OutputError([cannot_write(path, exc)]) from None
    try:
        with os.fdopen(fd, "wb" if binary else "w", **kwargs) as fh:
            yield fh
        os.chmod(tmp, stat.S_IMODE(st.st_mode) if st is not None else _default_mode())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise OutputError([cannot_write(path, exc)]) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: str, text: str) -> None:
    with atomic(path, "w") as fh:
        fh.write(text)


def write_bytes(path: str, data: bytes) -> None:
    with atomic(path, "wb") as fh:
        fh.write(data)
