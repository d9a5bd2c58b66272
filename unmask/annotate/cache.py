"""Every model call's reply kept on disk, so no call is made twice.

Contract: ``Replies()`` is the folder ``annotate/`` inside the user's trusted cache folder
(``unmask.plumbing.cachedir``: private, or not used at all); ``get(key)`` returns the ``Reply``
stored under a call's key (``question.Ask.key``: the model, the messages, the schema, the
sample and the settings) or None, and ``put(key, reply)`` stores one, sealed with the
folder's MAC and written whole (a run killed mid-write leaves the old entry or none).
Entries are JSON, never pickles: a damaged, foreign or unsealed file reads as missing and
costs one call. Only answers are stored: a provider error or a timeout is not, so the next
run asks again. With no usable cache folder (``UNMASK_CACHE_DIR`` empty) ``enabled`` is
false and nothing is kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

from unmask.annotate.question import Reply
from unmask.plumbing.cachedir import read_sealed, trusted_dir, untrusted, write_sealed

SUBFOLDER = "annotate"
MAX_ENTRY_BYTES = 8 * 1024 * 1024
_KEY = re.compile(r"^[0-9a-f]{64}$")


class Replies:
    """The replies kept in ``folder/annotate`` (default: the trusted cache folder)."""

    def __init__(self, folder: Path | None = None) -> None:
        root = trusted_dir() if folder is None else folder
        self.folder: Path | None = None
        if root is None:
            return
        sub = root / SUBFOLDER
        try:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)  # `trusted_dir` made its own
            with contextlib.suppress(FileExistsError):
                os.mkdir(sub, 0o700)
            if untrusted(sub) is None:
                self.folder = sub
        except OSError:  # cannot be made: no cache, as for the folder itself
            self.folder = None

    @property
    def enabled(self) -> bool:
        return self.folder is not None

    def _path(self, key: str) -> Path | None:
        if self.folder is None or not _KEY.match(key):
            return None
        return self.folder / f"{key}.json"

    def get(self, key: str) -> Reply | None:
        path = self._path(key)
        if path is None:
            return None
        data = read_sealed(path, MAX_ENTRY_BYTES)
        if data is None:
            return None
        try:
            return Reply.from_json(json.loads(data.decode("utf-8")))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None

    def put(self, key: str, reply: Reply) -> bool:
        path = self._path(key)
        if path is None:
            return False
        payload = json.dumps(reply.to_json(), ensure_ascii=False, sort_keys=True).encode("utf-8")
        if len(payload) > MAX_ENTRY_BYTES:
            return False
        return write_sealed(path, payload)
