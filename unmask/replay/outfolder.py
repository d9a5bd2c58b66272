"""The output folder of a command that writes replays: whose replays it holds, so that
two runs never mix (`unmask import`, `unmask annotate`, `unmask propose replay`).

Contract: ``survey(out, tool, input, limits, noun=)`` looks at ``out`` before a run
writes there (``input`` the one file an import reads, or the paths `annotate` and
`propose` read; ``noun`` names the run in messages, `import` or `run`): its replays are
the entries directly inside named ``*.json`` that are regular files or links (what
``unmask audit out`` would read as replays). One is a run's *own* when the folder's
manifest (``MANIFEST``, JSON Lines: a header naming the tool and the input, by its name and
the SHA-256 of its resolved paths, so no folder name of the user's is written there; then
one ``{"file", "sha256"}`` line per replay written) lists it with the SHA-256 of the bytes
it holds now: written by that run, unchanged since. ``Survey.refusal(replace)`` is the
``other-replays`` error when the run would mix: any replay that is not its own (never
removed, whatever the options), or an earlier run's of another tool or input unless
``replace``. A re-run (same tool, same input; one reading stdin never is) replaces its own
replays without ``replace``. ``Manifest.start`` removes the own replays (only after the
input was found readable), then replaces the manifest; ``Manifest.write`` lists each replay
before it writes it, so the replays of a run killed midway are still its own. The
manifest is never read or written through a link; one that cannot be read proves nothing
(every replay is then another's).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.safe import shorten

MANIFEST = ".unmask-import"  # not `*.json`: an audit of the folder never reads it
SCHEMA = "unmask.import-manifest/1"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@frozen
class Earlier:
    """What the manifest says of the import that wrote it."""

    tool: str
    input: str  # the input file's name, to show
    input_id: str  # the SHA-256 of its resolved path, to tell a re-run
    files: tuple[tuple[str, str], ...]  # (name, sha256), in the order written


@frozen
class Survey:
    out: str
    tool: str
    input: str  # the input file's name
    input_id: str  # the SHA-256 of its resolved path
    earlier: Earlier | None
    own: tuple[str, ...]  # replays the manifest's import wrote, unchanged since
    others: tuple[str, ...]  # every other replay: not listed, or changed since
    changed: int  # how many of ``others`` are listed but hold other bytes now
    noun: str = "import"  # what this run is called in messages: `import`, else `run`

    @property
    def rerun(self) -> bool:
        e = self.earlier
        same = e is not None and e.tool == self.tool and e.input_id == self.input_id
        return same and bool(self.input_id)  # stdin (no id) is never the same input

    def _of(self) -> str:
        """`` (`TOOL` of `INPUT`)``, the earlier import (own replays come with one)."""
        e = self.earlier
        return "" if e is None else f" (`{shorten(e.tool, 40)}` of `{shorten(e.input)}`)"

    def removed_note(self, n: int) -> str:
        return (
            f"replaced {n} replay{'s' if n != 1 else ''} an earlier {self.noun}{self._of()}"
            " wrote here"
        )

    def _into(self) -> str:
        return (
            "import into an empty folder" if self.noun == "import" else "write to an empty folder"
        )

    def refusal(self, replace: bool) -> UnmaskError | None:
        """Why this import may not write into the folder, or None."""
        if self.others:
            n, listed = len(self.others), len(self.others) - self.changed
            files = f"{n} `*.json` file{'s' if n != 1 else ''}"
            imp = self.noun == "import"
            writer = "`unmask import`" if imp else "`unmask import`, `annotate` or `propose`"
            one = "an import" if imp else "a run"
            if not self.changed:
                what = f"{files} that no {writer} wrote there"
            elif not listed:
                what = f"{files} changed since {one} wrote {'them' if n != 1 else 'it'}"
            else:
                what = (
                    f"{files} that are no {self.noun}'s own ({listed} no {self.noun} wrote there,"
                    f" {self.changed} changed since one did)"
                )
            return _refuse(
                f"the output folder `{shorten(self.out)}` holds {what}, e.g. "
                f"`{shorten(self.others[0], 100)}`: an audit of the folder would read "
                f"{'them' if n != 1 else 'it'} with this {self.noun}'s replays",
                f"{self._into()}, or move them out first; `--replace` replaces "
                f"only the replays an earlier {self.noun} wrote there, unchanged since",
            )
        if self.own and not self.rerun and not replace:
            n = len(self.own)
            return _refuse(
                f"the output folder `{shorten(self.out)}` holds {n} replay"
                f"{'s' if n != 1 else ''} of an earlier {self.noun}{self._of()}, e.g. "
                f"`{shorten(self.own[0], 100)}`: an audit of the folder would mix "
                f"{'them' if n != 1 else 'it'} with this {self.noun}'s",
                f"{self._into()}, or pass `--replace` to replace them",
            )
        return None


def _refuse(message: str, help: str) -> UnmaskError:
    return UnmaskError([Diagnostic(Code.OTHER_REPLAYS, message, help=help)])


def survey(
    out: Path,
    tool: str,
    input: Path | Sequence[str],
    limits: Limits = DEFAULT_LIMITS,
    *,
    noun: str = "import",
) -> Survey:
    """What ``out`` holds (see the module); a folder that is not there holds nothing."""
    paths = [str(input)] if isinstance(input, Path) else list(input)
    where = [os.path.realpath(p) for p in paths if p != "-"]
    shown = "stdin" if paths[0] == "-" else os.path.basename(where[0])
    if len(paths) > 1:
        shown += f" and {len(paths) - 1} more"
    input_id = "" if "-" in paths else digest(os.fsencode("\0".join(where)))
    names: list[str] = []
    # not there, or not a folder: nothing held (mkdir says why it cannot be written, later)
    with contextlib.suppress(OSError), os.scandir(out) as it:
        for e in it:
            with contextlib.suppress(OSError):
                if e.name.endswith(".json") and (e.is_symlink() or e.is_file()):
                    names.append(e.name)
    names.sort()
    earlier = _read(out / MANIFEST, limits) if names else None
    listed = dict(earlier.files) if earlier else {}
    own, others, changed = [], [], 0
    for name in names:
        want = listed.get(name)
        held = None if want is None else _held(out / name, limits)
        if want is not None and held == want:
            own.append(name)
        else:
            others.append(name)
            changed += want is not None
    return Survey(
        str(out), tool, shown, input_id, earlier, tuple(own), tuple(others), changed, noun
    )


def _held(path: Path, limits: Limits) -> str | None:
    """The SHA-256 of the regular file ``path`` (never through a link), or None."""
    from unmask.plumbing.files import read_bytes

    try:
        return digest(read_bytes(path, limits, follow=False))
    except (UnmaskError, OSError):
        return None


def _read(path: Path, limits: Limits) -> Earlier | None:
    """The manifest, or None when it is not there or not one; a line cut short by a killed
    import, or that is not a listing, lists nothing."""
    from unmask.plumbing.files import read_bytes

    try:
        lines = read_bytes(path, limits, follow=False).decode("utf-8").splitlines()
        head = json.loads(lines[0]) if lines else None
    except (UnmaskError, OSError, UnicodeDecodeError, ValueError):
        return None
    if not (
        isinstance(head, dict)
        and head.get("schema") == SCHEMA
        and isinstance(head.get("tool"), str)
        and isinstance(head.get("input"), str)
        and isinstance(head.get("input_sha256"), str)
    ):
        return None
    files: dict[str, str] = {}
    for line in lines[1:]:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if (
            isinstance(rec, dict)
            and isinstance(rec.get("file"), str)
            and isinstance(rec.get("sha256"), str)
        ):
            files[rec["file"]] = rec["sha256"]
    return Earlier(head["tool"], head["input"], head["input_sha256"], tuple(files.items()))


class Manifest:
    """The manifest of the run under way: ``start`` it, ``write`` each replay, ``close``."""

    def __init__(self, out: str, fh: IO[bytes]) -> None:
        self.out = out
        self._fh = fh

    @classmethod
    def start(cls, plan: Survey) -> tuple[Manifest, int]:
        """Make the folder if it is missing (and clear the temporary files a run killed
        while writing left), remove ``plan``'s own replays, then put a new manifest in
        place; and how many replays were removed. Removing first: a kill in between leaves
        the old manifest, which lists only replays that are gone, never a replay no
        manifest lists. ``OSError`` when the folder cannot be written."""
        from unmask.plumbing.outputs import remove_stale_temps

        out = plan.out
        os.makedirs(out, exist_ok=True)
        remove_stale_temps(Path(out))
        removed = 0
        for name in plan.own:
            path = os.path.join(out, name)
            with contextlib.suppress(FileNotFoundError):
                st = os.lstat(path)
                if stat.S_ISREG(st.st_mode):  # surveyed as a regular file, still one
                    os.unlink(path)
                    removed += 1
        head = {
            "schema": SCHEMA,
            "tool": plan.tool,
            "input": plan.input,
            "input_sha256": plan.input_id,
        }
        return cls(out, _new_manifest(out, _line(head))), removed

    def write(self, name: str, data: bytes) -> str | None:
        """Write the replay ``name`` into the folder, listed first (a kill leaves no replay
        unlisted); what ``write_in_folder`` says when the name is taken, else None."""
        from unmask.plumbing.outputs import write_in_folder

        self._fh.write(_line({"file": name, "sha256": digest(data)}))
        self._fh.flush()  # in the kernel's hands: a killed process's lines are kept
        return write_in_folder(self.out, name, data)

    def close(self) -> None:
        self._fh.close()


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


def _new_manifest(out: str, head: bytes) -> IO[bytes]:
    """A new file (``O_EXCL | O_NOFOLLOW``) holding ``head``, renamed onto ``MANIFEST``
    (the name itself is replaced, never followed), kept open to append to."""
    import secrets

    from unmask.plumbing.outputs import TEMP_PREFIX, TEMP_SUFFIX

    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    tmp = os.path.join(out, f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}{TEMP_SUFFIX}")
    fd = os.open(tmp, flags, 0o666)
    fh = os.fdopen(fd, "wb")
    try:
        fh.write(head)
        fh.flush()
        os.replace(tmp, os.path.join(out, MANIFEST))
    except BaseException:
        fh.close()
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return fh


def reads_from(out: Path, paths: Sequence[str]) -> str | None:
    """The first of ``paths`` that is ``out`` or lies inside it, or None: a run that reads
    there would remove (``Manifest.start``) or mix with the replays it is about to read."""
    where = os.path.realpath(out)
    for p in paths:
        if p != "-":
            real = os.path.realpath(p)
            if real == where or real.startswith(where.rstrip(os.sep) + os.sep):
                return p
    return None
