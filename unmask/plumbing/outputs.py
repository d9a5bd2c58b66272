"""Writing the files a command produces: whole or not at all, and a failure as a diagnostic.

Contract:
- ``atomic(path, mode)`` is a context manager giving a file object; the text goes to a
  temporary file in the same folder, which replaces ``path`` (``os.replace``) only when the
  block ends without error, so a full disk or an interrupted run never leaves a truncated
  file. The new file keeps the mode of the file it replaces (else the umask's default), and
  a symbolic link is followed, not replaced, and a file the user may not write is refused.
  A path that exists and is not a regular file (``/dev/null``, ``/dev/stdout``, a FIFO) is
  written in place: it cannot be replaced. With ``follow=False`` the name itself is
  replaced whatever it is (a link, a pipe: never followed, never written into), as files
  written into a folder the user does not control must be; ``file_mode`` sets the new
  file's permissions (the cache's 0600). The temporary file is created ``O_EXCL`` and
  ``O_NOFOLLOW`` and named ``.unmask-PID-RANDOM.tmp``: ``remove_stale_temps(folder)``
  removes those a killed process (``kill -9``) left, and only those;
- ``write_text(path, text)`` / ``write_bytes(path, data)`` are the one-call forms;
- ``write_in_folder(folder, name, data)`` writes a regular file directly inside a folder
  whose content others may have made (``unmask import --out DIR``): never through a link,
  and a name taken by anything but a regular file is left alone (the reason is returned);
- ``append_bytes(path, data)`` appends to a file a command keeps (review's state) and makes
  it durable; ``cut_to(path, size)`` cuts one short: both open the name itself, never
  through a link, and refuse a pipe, a device or a folder there before writing anything;
- every ``OSError`` on the way (a missing or read-only folder, a directory named as the
  file, a full disk, a closed pipe) becomes ``OutputError``, an ``UnmaskError`` carrying one
  ``output`` diagnostic that names the file and the reason; ``cannot_write(name, exc)``
  builds that diagnostic for writers that stream instead (results on stdout).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.safe import shorten


class OutputError(UnmaskError):
    """A file the command writes could not be written (exit status 2 in every command)."""


def reason(exc: OSError) -> str:
    """The operating system's reason for ``exc``, lowercase, for a diagnostic."""
    return (exc.strerror or type(exc).__name__).lower()


def cannot_write(name: str, exc: OSError) -> Diagnostic:
    """The one wording of an output that could not be written; a folder that is not there
    (`--out results/run1.jsonl` before `results/` was made) is named in the help."""
    hint = None
    folder = os.path.dirname(name)
    if isinstance(exc, FileNotFoundError) and folder and not os.path.isdir(folder):
        hint = f"the folder `{shorten(folder)}` does not exist: make it first, or write elsewhere"
    return Diagnostic(Code.OUTPUT, f"cannot write `{shorten(name)}`: {reason(exc)}", help=hint)


def _default_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


TEMP_PREFIX = ".unmask-"
TEMP_SUFFIX = ".tmp"
_TEMP_NAME = re.compile(r"\.unmask-([0-9]{1,10})-[A-Za-z0-9_]{1,16}\.tmp")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's process, or not a process id at all
        return pid > 0
    return True


def remove_stale_temps(folder: str | os.PathLike[str]) -> int:
    """Remove the temporary files ``atomic`` left in ``folder`` when its process was killed
    (their process is gone): regular files of this user named ``.unmask-PID-RANDOM.tmp``,
    nothing else. Returns how many were removed; an unreadable folder removes none."""
    removed = 0
    with contextlib.suppress(OSError):
        for e in os.scandir(folder):
            m = _TEMP_NAME.fullmatch(e.name)
            if m is None or _alive(int(m.group(1))):
                continue
            with contextlib.suppress(OSError):
                st = e.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
                    os.unlink(e.path)
                    removed += 1
    return removed


@contextlib.contextmanager
def atomic(
    path: str,
    mode: str = "w",
    encoding: str | None = "utf-8",
    *,
    follow: bool = True,
    file_mode: int | None = None,
) -> Iterator[IO[Any]]:
    """A file object whose content replaces ``path`` when the block ends without error."""
    binary = "b" in mode
    kwargs: dict[str, Any] = {} if binary else {"encoding": encoding, "newline": ""}
    try:
        target = os.path.realpath(path) if follow else os.path.abspath(path)
        try:
            st = os.stat(target) if follow else os.lstat(target)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "Is a directory")
        if follow and st is not None and not os.access(target, os.W_OK):
            # renaming over it would succeed, but the user made it read-only on purpose
            raise PermissionError(13, "Permission denied")
        if follow and st is not None and not stat.S_ISREG(st.st_mode):
            # a device or a pipe cannot be replaced: write into it
            with open(target, "wb" if binary else "w", **kwargs) as fh:
                yield fh
            return
        if not (st is not None and stat.S_ISREG(st.st_mode)):
            st = None  # nothing, or a link or a pipe about to be replaced: no mode to keep
        folder = os.path.dirname(target) or "."
        # mkstemp opens O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600
        prefix = f"{TEMP_PREFIX}{os.getpid()}-"
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=TEMP_SUFFIX)
    except OSError as exc:
        raise OutputError([cannot_write(path, exc)]) from None
    try:
        with os.fdopen(fd, "wb" if binary else "w", **kwargs) as fh:
            yield fh
        if file_mode is not None:
            new_mode = file_mode
        else:
            new_mode = stat.S_IMODE(st.st_mode) if st is not None else _default_mode()
        if new_mode != 0o600:  # what mkstemp made
            os.chmod(tmp, new_mode)
        os.replace(tmp, target)  # replaces the name: a link there is never followed
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


def write_bytes(
    path: str, data: bytes, *, follow: bool = True, file_mode: int | None = None
) -> None:
    with atomic(path, "wb", follow=follow, file_mode=file_mode) as fh:
        fh.write(data)


def write_in_folder(folder: str | os.PathLike[str], name: str, data: bytes) -> str | None:
    """Write ``data`` as the regular file ``name`` directly inside ``folder``; None when it
    was written, else why not: the name is taken by a link, a folder, a pipe or a device,
    which is never followed, written into nor replaced."""
    if not name or name in (".", "..") or "/" in name or (os.altsep and os.altsep in name):
        raise ValueError("not a plain file name")
    path = os.path.join(folder, name)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError([cannot_write(path, exc)]) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        return f"`{name}` in the output folder is {_kind(st.st_mode)}, not a regular file"
    # a new temporary file (O_EXCL, O_NOFOLLOW) renamed onto the name: a link swapped in
    # meanwhile is replaced, never followed, and a hard link's other names keep their text
    write_bytes(path, data, follow=False)
    return None


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_APPEND_FLAGS = (
    os.O_WRONLY
    | os.O_APPEND
    | os.O_CREAT
    | _NOFOLLOW
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def _not_regular(path: str, mode: int) -> OutputError:
    return OutputError(
        [
            Diagnostic(
                Code.OUTPUT,
                f"cannot write `{path}`: it is {_kind(mode)}, not a regular file",
                help="give the path of a regular file, or of none yet",
            )
        ]
    )


def _open_own(path: str, flags: int) -> int:
    """A descriptor of the regular file ``path`` opened with ``flags`` and never through a
    link: a link, a pipe or a device there is refused before anything is written."""
    try:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise _not_regular(path, st.st_mode)
        fd = os.open(path, flags, 0o666)  # O_NOFOLLOW: a link swapped in meanwhile fails
    except OSError as exc:
        raise OutputError([cannot_write(path, exc)]) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # O_NONBLOCK: a pipe swapped in cannot block the open
        os.close(fd)
        raise _not_regular(path, mode)
    return fd


def append_bytes(path: str, data: bytes) -> None:
    """Append ``data`` to the regular file ``path`` (made if missing) and make it durable
    before returning; the file is never truncated, a link there never followed."""
    fd = _open_own(path, _APPEND_FLAGS)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError as exc:
        raise OutputError([cannot_write(path, exc)]) from None
    finally:
        os.close(fd)


def cut_to(path: str, size: int) -> None:
    """Cut the regular file ``path`` to its first ``size`` bytes (a torn last line); never
    through a link."""
    fd = _open_own(path, (_APPEND_FLAGS & ~(os.O_APPEND | os.O_CREAT)))
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError as exc:
        raise OutputError([cannot_write(path, exc)]) from None
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"
