"""Reading one input file: regular files only, bounded, never a hang.

Contract: ``read_bytes(path, limits)`` returns at most ``limits.max_file_bytes`` bytes of a
regular file, or raises ``UnmaskError`` with one diagnostic: ``io`` for a file that is
missing, unreadable, a directory, a FIFO, a device or a socket, or lies under ``/proc`` or
``/sys`` (whose sizes are not what a read returns); ``limit`` for a file over the bound.
``read_text`` decodes the bytes as UTF-8 (a byte order mark is skipped); ``decode_utf8`` is
the one decoder, so every reader words an encoding error the same way (``encoding``, with
the line and column, never the offending bytes). The kind of a file is checked with
``os.stat`` before it is opened, and it is opened non-blocking and checked again on the open
descriptor, so a FIFO swapped in between cannot block. ``follow=False`` refuses a symbolic
link at the path (``O_NOFOLLOW`` on the open as well); ``open_regular`` and ``read_open`` are
the two halves, for a reader that keeps the descriptor (to lock it); ``open_binary`` gives
an open file to a reader that streams (JSON Lines read line by line). ``inside`` (a side
file: one Unmask finds beside an input rather than one the user named) also requires the
file's folder, its links resolved, to lie inside ``inside``, resolved: a linked folder
leading elsewhere is refused. No message ever quotes a file's content: a file that is
refused here was never meant to be shown, and a name longer than ``MAX_NAME`` characters
is shown shortened (``unmask.plumbing.safe.shorten``). ``near_name``/``near_path`` name the
closest entry beside a file that is not there, for a "did you mean" (a bounded listing).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import BinaryIO

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.safe import shorten
from unmask.plumbing.span import Span

_BOM = b"\xef\xbb\xbf"
# pseudo-filesystems: a file there reports a size that is not its content's
_REFUSED_TREES = ("/proc", "/sys")
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
# a file name longer than this is shown with its middle elided: a path from a file (a
# replay's protocol `path`) can be megabytes, and a message is one line to read
MAX_NAME = 300


# folder entries looked at for a "did you mean" of a missing file (it is a hint)
_NEAR_ENTRIES = 1000


def near_name(folder: str | Path, name: str, suffix: str = "") -> str | None:
    """The name in ``folder`` closest to ``name``, a file that is not there (`claim.proto`
    for `claims.proto`), among those ending in ``suffix``, compared without it (a suffix
    every name shares would make any two look alike); None when none is close, or the
    folder cannot be listed. At most ``_NEAR_ENTRIES`` entries are read."""
    import difflib
    import itertools

    try:
        with os.scandir(folder) as entries:
            names = [
                e.name
                for e in itertools.islice(entries, _NEAR_ENTRIES)
                if e.name.endswith(suffix) and e.name != name and not e.name.startswith(".")
            ]
    except (OSError, ValueError):  # no such folder, one that cannot be listed, a NUL
        return None
    stems = {n.removesuffix(suffix) if suffix else n: n for n in names}
    key = name.removesuffix(suffix) if suffix else name
    close = difflib.get_close_matches(key, sorted(stems), n=1)
    return stems[close[0]] if close else None


def near_path(path: str) -> str | None:
    """``did you mean `DIR/NAME`?`` for a path that does not exist, naming the closest
    name beside it as the path was written; None when there is none."""
    written = Path(path)
    if not written.name:
        return None
    found = near_name(written.parent, written.name)
    if found is None:
        return None
    return f"did you mean `{_shown(str(written.with_name(found)))}`?"


def _io(name: str, message: str, help: str | None = None) -> UnmaskError:
    return UnmaskError([Diagnostic(Code.IO, message, file=_shown(name), help=help)])


def _shown(name: str) -> str:
    return shorten(name, MAX_NAME)


def _kind(mode: int) -> str | None:
    """What a file that is not regular is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _not_regular(name: str, kind: str) -> UnmaskError:
    what = kind if kind.startswith("not") else f"{kind}, not a regular file"
    return _io(name, f"`{_shown(name)}` is {what}", help="give the path of a regular file")


def too_large(name: str, limits: Limits, file: str | None = None) -> Diagnostic:
    """The one wording of the file size limit."""
    return Diagnostic(
        Code.LIMIT,
        f"`{_shown(name)}` is larger than the limit of {limits.max_file_bytes} bytes",
        file=None if file is None else _shown(file),
        help=f"raise the bound with `{limits.option('max_file_bytes')}`",
    )


def _under_refused_tree(path: str | Path) -> str | None:
    real = os.path.realpath(path)
    for tree in _REFUSED_TREES:
        if real == tree or real.startswith(tree + os.sep):
            return tree
    return None


def read_bytes(
    path: str | Path,
    limits: Limits = DEFAULT_LIMITS,
    name: str | None = None,
    *,
    follow: bool = True,
    inside: str | Path | None = None,
) -> bytes:
    """The bytes of one regular file; ``name`` is how messages call it (default ``path``).

    With ``follow=False`` a symbolic link at ``path`` is refused, never followed (a file
    Unmask itself keeps, such as review's state, must be the file it wrote, and a side
    file is never read through a link); ``inside``: see the module."""
    name = str(path) if name is None else name
    fd = open_regular(path, limits, name, follow=follow, inside=inside)
    try:
        return read_open(fd, limits, name)
    finally:
        os.close(fd)


def open_regular(
    path: str | Path,
    limits: Limits = DEFAULT_LIMITS,
    name: str | None = None,
    *,
    follow: bool = True,
    inside: str | Path | None = None,
) -> int:
    """A read-only descriptor of the regular file ``path``, checked as ``read_bytes`` checks
    it (never a pipe, a device, a folder, a file over the size bound; no link when
    ``follow`` is False; in a folder inside ``inside``, when given); the caller closes it."""
    name = str(path) if name is None else name
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        reason = getattr(exc, "strerror", None) or "the path is not valid"
        # a name mistyped on a command line: the closest one beside it, as it was written
        near = near_path(name) if isinstance(exc, FileNotFoundError) and name == str(path) else None
        raise _io(name, f"cannot read `{_shown(name)}`: {reason.lower()}", help=near) from None
    if not follow and stat.S_ISLNK(st.st_mode):
        raise _io(
            name,
            f"`{_shown(name)}` is a symbolic link, which is not followed here",
            help="give the path of the file itself",
        )
    kind = _kind(st.st_mode)
    if kind is not None:
        raise _not_regular(name, kind)
    tree = _under_refused_tree(path)
    if tree is not None:
        raise _io(
            name,
            f"`{_shown(name)}` is under `{tree}`, which Unmask never reads",
            help="copy the file somewhere else first if it is really meant",
        )
    if inside is not None:
        folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
        root = os.path.realpath(inside)
        if folder != root and not folder.startswith(root.rstrip(os.sep) + os.sep):
            raise _io(
                name,
                f"`{_shown(name)}` is in a folder that links elsewhere",
                help="put the file itself there, not a link to another folder",
            )
    if st.st_size > limits.max_file_bytes:
        raise UnmaskError([too_large(name, limits, name)])
    flags = _OPEN_FLAGS if follow else _OPEN_FLAGS | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        reason = exc.strerror or "cannot be opened"
        raise _io(name, f"cannot read `{_shown(name)}`: {reason.lower()}") from None
    try:
        # the path may have been replaced since the check: trust only the open descriptor
        kind = _kind(os.fstat(fd).st_mode)
    except OSError:
        kind = "not a regular file"
    if kind is not None:
        os.close(fd)
        raise _not_regular(name, kind)
    return fd


def open_binary(
    path: str | Path, name: str | None = None, limits: Limits | None = None
) -> BinaryIO:
    """The regular file ``path`` open for reading in binary, checked as ``open_regular``
    checks it, for a reader that streams it and bounds its lines itself: a named pipe or a
    device is one ``io`` error, never a read that blocks. With ``limits``, a file over
    ``max_file_bytes`` is refused before it is opened."""
    bound = limits if limits is not None else Limits(max_file_bytes=sys.maxsize)
    return os.fdopen(open_regular(path, bound, name), "rb")


def read_open(fd: int, limits: Limits = DEFAULT_LIMITS, name: str = "<input>") -> bytes:
    """At most ``limits.max_file_bytes`` bytes read from ``fd`` (from where it stands),
    else one ``limit`` error; a read error is one ``io`` error."""
    chunks: list[bytes] = []
    left = limits.max_file_bytes + 1
    try:
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        reason = exc.strerror or "cannot be read"
        raise _io(name, f"cannot read `{_shown(name)}`: {reason.lower()}") from None
    data = b"".join(chunks)
    if len(data) > limits.max_file_bytes:
        raise UnmaskError([too_large(name, limits, name)])
    return data


def decode_utf8(data: bytes, name: str, file: str | None = None, first_line: int = 1) -> str:
    """``data`` as text (a leading byte order mark skipped), or one ``encoding`` error.

    The error gives the line and column where the bad bytes start, and never the bytes.
    """
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        head = data[: exc.start].decode("utf-8", "replace")
        line = head.count("\n") + first_line
        col = len(head) - (head.rfind("\n") + 1) + 1
        raise UnmaskError(
            [
                Diagnostic(
                    Code.ENCODING,
                    f"`{_shown(name)}` is not valid UTF-8 (byte {exc.start}, line {line})",
                    span=Span(name, line, col, line, col + 1, len(head), len(head) + 1),
                    file=file,
                    help="save the file as UTF-8",
                )
            ]
        ) from None


def read_text(
    path: str | Path,
    limits: Limits = DEFAULT_LIMITS,
    name: str | None = None,
    *,
    follow: bool = True,
    inside: str | Path | None = None,
) -> str:
    """The UTF-8 text of one regular file (see ``read_bytes``); a NUL byte means not text."""
    name = str(path) if name is None else name
    data = read_bytes(path, limits, name, follow=follow, inside=inside)
    text = decode_utf8(data, name, name)
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise UnmaskError(
            [
                Diagnostic(
                    Code.ENCODING,
                    f"`{_shown(name)}` is not a text file (a NUL character on line {line})",
                    file=name,
                    help="give the path of a text file",
                )
            ]
        )
    return text
