"""The user's cache folder: where it is, whether it can be trusted, and sealed files in it.

Contract: ``cache_dir()`` is ``$UNMASK_CACHE_DIR`` (empty: no cache at all), else
``$XDG_CACHE_HOME/unmask``, else the platform's own cache folder for ``unmask`` as
``platformdirs`` knows it (``~/.cache/unmask`` on Linux, ``~/Library/Caches/unmask`` on
macOS, ``%LOCALAPPDATA%/unmask/Cache`` on Windows). ``trusted_dir()`` is that folder,
created private (mode 700) if missing, or None when there is none or it cannot be trusted:
a folder that is a link, not a folder, not owned by the user running Unmask, or writable by
group or others is not used at all, and the first refusal in a process prints one
``warning`` line on stderr (a folder that cannot be created is skipped silently: it only
costs a rebuild). ``read_sealed(path, max_bytes)`` returns the payload of a file that
``write_sealed`` wrote, or None: the file must be a regular file (opened ``O_NOFOLLOW |
O_NONBLOCK``: a link, a pipe or a device is never followed nor waited on) owned by the user
and not writable by others, and must carry a MAC of its name and payload under the folder's
key: keyed BLAKE2b, the MAC mode BLAKE2 defines (RFC 7693), in place of an HMAC. The key is 32
random bytes in ``key`` (mode 600) in the trusted folder, made on first use and made again when
the one there is damaged or readable by others; whoever cannot read it cannot forge an entry.
What is sealed is data (the compiled protocols' JSON), never code: nothing read from the folder
is unpickled. Nothing here raises ``OSError``: a cache that cannot be used only costs a rebuild.
This module imports nothing of Unmask but the atomic writer (``unmask.plumbing.outputs``) and,
to warn, ``unmask.plumbing.diagnostics``, so the compiled-protocol cache
(``unmask.language.cache``) uses it without a circle.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from unmask.plumbing.codes import Code

# Importing hashlib or hmac loads OpenSSL (about 2.5 ms, 4% of a warm `check`'s start-up),
# and nothing here needs it: CPython's own BLAKE2 keyed is a MAC, and its constant-time
# comparison is what `hmac.compare_digest` is. A Python built without them has hashlib's.
if TYPE_CHECKING:  # the same functions, as typeshed knows them
    from hashlib import blake2b
    from hmac import compare_digest
else:
    try:
        from _blake2 import blake2b
        from _operator import _compare_digest as compare_digest
    except ImportError:  # pragma: no cover - a Python built without them
        from hashlib import blake2b
        from hmac import compare_digest

CACHE_ENV = "UNMASK_CACHE_DIR"  # overrides the cache folder; empty turns the cache off
KEY_NAME = "key"
KEY_BYTES = 32
MAGIC = b"unmask-sealed/2 "  # then the hex MAC and a line break, then the payload
_MAC_BYTES = 32
_MAC_HEX = _MAC_BYTES * 2

_warned = False


def cache_dir() -> Path | None:
    """The folder for cached files: ``$UNMASK_CACHE_DIR``, else ``$XDG_CACHE_HOME/unmask``,
    else the platform's cache folder (see the contract); None when caching is off."""
    env = os.environ.get(CACHE_ENV)
    if env is not None:
        return Path(env) if env else None
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    try:
        if os.path.isabs(xdg):
            return Path(xdg) / "unmask"
        if xdg.strip():
            # a relative XDG_CACHE_HOME is invalid (the XDG spec says to ignore it), and
            # platformdirs would take it as it is, relative to wherever Unmask runs
            return Path.home() / ".cache" / "unmask"
        if sys.platform == "linux":  # platformdirs' answer, without importing it (6 ms here)
            return Path.home() / ".cache" / "unmask"
        from platformdirs import user_cache_path

        return user_cache_path("unmask", appauthor=False)
    except (RuntimeError, KeyError):  # no home folder to be found
        return None


def _private(st: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def untrusted(folder: Path) -> str | None:
    """Why ``folder`` (which exists) may not hold the cache, or None when it may."""
    st = os.lstat(folder)
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if st.st_uid != os.geteuid():
        return "is owned by another user"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is writable by other users"
    return None


def warn(message: str) -> None:
    """One warning line on stderr, once per process (every worker of an audit is forked
    from a process that already looked at the folder)."""
    global _warned
    if _warned:
        return
    _warned = True
    from unmask.plumbing.diagnostics import Diagnostic, render

    with contextlib.suppress(OSError, ValueError):  # stderr closed: the cache stays off
        print(render(Diagnostic(Code.CACHE, message, severity="warning")), file=sys.stderr)


def _shown(folder: Path) -> str:
    """The folder's name for a message: printable, never a terminal escape."""
    text = str(folder)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def trusted_dir() -> Path | None:
    """The cache folder if it exists or can be made, and only this user can write it."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        try:
            os.lstat(folder)
        except FileNotFoundError:
            folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):  # a concurrent run made it: checked below
                os.mkdir(folder, 0o700)
        why = untrusted(folder)
    except (OSError, ValueError):  # cannot be made or looked at: no cache, no noise
        return None
    if why is not None:
        warn(f"the cache folder `{_shown(folder)}` {why}, so no cache is used")
        return None
    return folder


def read_private(path: Path, max_bytes: int, secret: bool = False) -> bytes | None:
    """The bytes of the regular file ``path``, owned by this user and writable by nobody
    else (``secret``: nor readable), if it has at most ``max_bytes``; None otherwise.
    Never follows a link and never waits on a pipe."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) and _private(st)) or st.st_size > max_bytes:
            return None
        if secret and st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            return None
        with os.fdopen(fd, "rb") as f:
            fd = -1
            data = f.read(max_bytes + 1)
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    return data if len(data) <= max_bytes else None


def _key(folder: Path, make: bool) -> bytes | None:
    """The folder's MAC key; made (when ``make``) if there is none yet, or if the one
    there is not the user's secret (then every sealed file becomes a miss)."""
    path = folder / KEY_NAME
    key = read_private(path, KEY_BYTES, secret=True)
    if key is not None and len(key) == KEY_BYTES:
        return key
    if not make:
        return None
    import tempfile

    try:
        if os.path.lexists(path):  # damaged, or readable by others: never used again
            os.unlink(path)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".unmask-{os.getpid()}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(os.urandom(KEY_BYTES))
            # a link makes the name only if it is free: two first runs agree on one key
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    except OSError:
        return None
    key = read_private(path, KEY_BYTES, secret=True)
    return key if key is not None and len(key) == KEY_BYTES else None


def _mac(key: bytes, name: str, payload: bytes) -> bytes:
    h = blake2b(key=key, digest_size=_MAC_BYTES, person=b"unmask-seal")
    h.update(name.encode("utf-8", "surrogateescape") + b"\0")
    h.update(payload)
    return h.hexdigest().encode("ascii")


def read_sealed(path: Path, max_bytes: int) -> bytes | None:
    """The payload of the sealed file ``path`` in the trusted folder, or None when it is
    missing, not a private regular file, or its seal is not this folder key's."""
    key = _key(path.parent, make=False)
    if key is None:
        return None
    data = read_private(path, max_bytes + len(MAGIC) + _MAC_HEX + 1)
    head = len(MAGIC) + _MAC_HEX + 1
    if data is None or len(data) < head or not data.startswith(MAGIC):
        return None
    mac, payload = data[len(MAGIC) : head - 1], data[head:]
    if data[head - 1 : head] != b"\n" or not compare_digest(mac, _mac(key, path.name, payload)):
        return None
    return payload


def write_sealed(path: Path, payload: bytes) -> bool:
    """Write ``payload`` sealed into ``path`` (in the trusted folder), replacing whatever
    is at that name; False when it could not be written."""
    from unmask.plumbing.outputs import OutputError, write_bytes

    key = _key(path.parent, make=True)
    if key is None:
        return False
    data = MAGIC + _mac(key, path.name, payload) + b"\n" + payload
    try:
        write_bytes(str(path), data, follow=False, file_mode=0o600)
    except OutputError:
        return False
    return True
