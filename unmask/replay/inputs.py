"""What an audit reads, and every command that reads replays as it does: the tasks named by
its paths, lazily and in a deterministic order, and each task's replay.

Contract:
- ``iter_tasks(paths)`` yields one ``Task`` per replay: a replay file; a directory (every
  ``*.json`` below it, names sorted at each level); a JSON Lines file (``*.jsonl``, one
  replay per non-blank line); ``-`` for JSON Lines on stdin. Each task has a ``location``:
  the file, or ``file:line`` for a JSON Lines record;
- a task that cannot be read carries its ``problem`` (code, message, help) and becomes an
  error record: a directory or JSON Lines file that cannot be read, a JSON Lines path that
  is not a regular file (a FIFO would block the run), a record over the size limit, and a
  symbolic link below a directory that points outside that directory's tree (not followed:
  a walk never leaves the tree it was given);
- ``count_tasks(paths)`` says how many tasks ``iter_tasks`` will yield (None for stdin);
- ``iter_work(paths, limits, range_bytes)`` is ``iter_tasks`` for a pool: a regular JSON
  Lines file comes as ``LineRange`` items of about ``range_bytes`` bytes each, cut at line
  ends, which a worker turns into the very tasks ``iter_tasks`` yields for those lines
  (``range_tasks``), so the parent neither splits nor sends the records; ``split_range``
  cuts one smaller;
- ``load_task`` and ``task_document`` read a task's replay (validated) or its JSON document
  (not yet validated), for the audit and for every command that reads replays as it does.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.lines import bounded_lines
from unmask.plumbing.outputs import reason

STDIN = "-"
STDIN_LABEL = "<stdin>"


@frozen
class Task:
    """One replay to audit: a whole file (``text`` None: read it) or one JSON Lines record."""

    location: str
    file: str
    line: int | None = None
    text: bytes | None = None
    problem: tuple[Code, str, str | None] | None = None  # (code, message, help): not readable


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _walk(root: str) -> Iterator[Task]:
    """A task for every ``*.json`` file below ``root``, entry names sorted at each level.

    A symbolic link is followed only when its target (resolved) lies inside ``root``'s tree;
    a directory that is its own ancestor (a link loop) is not entered again. No recursion:
    a deep tree cannot exhaust the stack.
    """
    tree = os.path.realpath(root)

    def level(path: str, above: frozenset) -> tuple[Iterator[Any], frozenset] | Task | None:
        try:
            st = os.stat(path)
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            return Task(
                path,
                path,
                problem=(Code.IO, f"cannot read the directory `{path}`: {reason(exc)}", None),
            )
        key = (st.st_dev, st.st_ino)
        if key in above:
            return None
        return iter(entries), above | {key}

    stack: list[tuple[Iterator[Any], frozenset]] = []
    first = level(root, frozenset())
    if isinstance(first, Task):
        yield first
    elif first is not None:
        stack.append(first)
    while stack:
        entries, here = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        try:
            is_dir = entry.is_dir()
            is_json = not is_dir and entry.name.endswith(".json") and entry.is_file()
            linked = (is_dir or is_json) and entry.is_symlink()
        except OSError:
            continue
        if linked and not _inside(os.path.realpath(entry.path), tree):
            message = f"`{entry.path}` is a link to outside `{root}`: not followed"
            hint = "an audit of a directory reads only that directory's tree"
            yield Task(entry.path, entry.path, problem=(Code.OUTSIDE_TREE, message, hint))
        elif is_dir:
            sub = level(entry.path, here)
            if isinstance(sub, Task):
                yield sub
            elif sub is not None:
                stack.append(sub)
        elif is_json:
            yield Task(entry.path, entry.path)


@frozen
class LineRange:
    """Lines of a JSON Lines file for a pool worker to read itself: the bytes ``[start,
    end)``, which begin at a line's start, whose first line is number ``line``, and which
    end at a line's end (or the file's)."""

    file: str
    start: int
    end: int
    line: int


def _lines(stream: Any, file: str, max_bytes: int, first: int = 1) -> Iterator[Task]:
    """The records of a JSON Lines stream whose first line is number ``first``; a line
    longer than ``max_bytes`` is never held in memory whole: it is skipped and becomes a
    ``limit`` error record."""
    for number, raw in bounded_lines(stream, max_bytes):
        number += first - 1
        if raw is None:
            problem = (
                Code.LIMIT,
                f"the record is larger than {max_bytes} bytes",
                "raise the bound with `--max-file-bytes`",
            )
            yield Task(f"{file}:{number}", file, number, None, problem)
            continue
        if not raw.strip():
            continue
        yield Task(f"{file}:{number}", file, number, raw.rstrip(b"\r\n"))


def is_jsonl(path: str) -> bool:
    return path == STDIN or path.endswith(".jsonl")


def _open_jsonl(path: str) -> Any:
    """The open JSON Lines file, or the ``Task`` that records why it cannot be read."""
    try:
        # never open a FIFO or a device: opening one can block the whole run
        if not stat.S_ISREG(os.stat(path).st_mode):
            message = f"cannot read `{path}`: not a regular file"
            return Task(path, path, problem=(Code.IO, message, "give JSON Lines on stdin as `-`"))
        return open(path, "rb")
    except OSError as exc:
        return Task(path, path, problem=(Code.IO, f"cannot read `{path}`: {reason(exc)}", None))


def iter_tasks(paths: Iterable[str], limits: Limits = DEFAULT_LIMITS) -> Iterator[Task]:
    return _items(paths, limits, lambda fh, p: _lines(fh, p, limits.max_file_bytes))


def iter_work(
    paths: Iterable[str], limits: Limits = DEFAULT_LIMITS, range_bytes: int = 1 << 20
) -> Iterator[Task | LineRange]:
    return _items(paths, limits, lambda fh, p: _ranges(fh, p, range_bytes))


def _items(
    paths: Iterable[str], limits: Limits, jsonl: Callable[[Any, str], Iterator[Any]]
) -> Iterator[Any]:
    for p in paths:
        if p == STDIN:
            yield from _lines(sys.stdin.buffer, STDIN_LABEL, limits.max_file_bytes)
        elif os.path.isdir(p):
            yield from _walk(str(Path(p)))
        elif is_jsonl(p):
            fh = _open_jsonl(p)
            if isinstance(fh, Task):
                yield fh
                continue
            with fh:
                yield from jsonl(fh, p)
        else:
            yield Task(p, p)


def _ranges(fh: Any, file: str, size: int) -> Iterator[LineRange]:
    """``file`` in ranges of at most ``size`` bytes, or one line where a line is longer;
    only newline positions are looked at, one block at a time."""
    start, line = 0, 1
    while True:
        fh.seek(start)
        block = fh.read(size)
        if not block:
            return
        cut = block.rfind(b"\n") + 1
        if cut:
            end, lines = start + cut, block.count(b"\n", 0, cut)
        elif len(block) < size:  # the file's last line, with no newline after it
            end, lines = start + len(block), 0
        else:  # one line longer than a block: its end is further on
            end, lines = _line_end(fh, start + size, size)
        yield LineRange(file, start, end, line)
        start, line = end, line + lines


def _line_end(fh: Any, pos: int, size: int) -> tuple[int, int]:
    """Where the line going on at ``pos`` ends, and 1 if a newline ends it (0 at EOF)."""
    fh.seek(pos)
    while True:
        block = fh.read(size)
        if not block:
            return pos, 0
        nl = block.find(b"\n")
        if nl >= 0:
            return pos + nl + 1, 1
        pos += len(block)


class _Slice:
    """``readline`` over the next ``left`` bytes of a binary stream, and nothing after."""

    def __init__(self, stream: Any, left: int) -> None:
        self.stream = stream
        self.left = left

    def readline(self, limit: int) -> bytes:
        if self.left <= 0:
            return b""
        raw = self.stream.readline(min(limit, self.left))
        self.left -= len(raw)
        return raw


def range_tasks(rg: LineRange, limits: Limits = DEFAULT_LIMITS) -> Iterator[Task]:
    """The tasks of the lines of ``rg``: those ``iter_tasks`` yields for them."""
    try:
        fh = open(rg.file, "rb")  # noqa: SIM115 - closed below, after the last line
    except OSError as exc:
        message = f"cannot read `{rg.file}` from line {rg.line}: {reason(exc)}"
        yield Task(f"{rg.file}:{rg.line}", rg.file, rg.line, problem=(Code.IO, message, None))
        return
    with fh:
        fh.seek(rg.start)
        part = _Slice(fh, rg.end - rg.start)
        yield from _lines(part, rg.file, limits.max_file_bytes, rg.line)


def split_range(rg: LineRange, pieces: int, max_bytes: int) -> list[LineRange]:
    """``rg`` cut at line ends into about ``pieces`` ranges of equal size: fewer where it
    has fewer lines, and itself where it is longer than ``max_bytes`` (one long line; it
    is not read) or cannot be read."""
    if rg.end - rg.start > max_bytes:
        return [rg]
    try:
        with open(rg.file, "rb") as fh:
            fh.seek(rg.start)
            data = fh.read(rg.end - rg.start)
    except OSError:
        return [rg]
    out: list[LineRange] = []
    start, line = 0, rg.line
    step = max(1, len(data) // max(1, pieces))
    while start < len(data):
        nl = data.find(b"\n", min(len(data), start + step) - 1)
        end = len(data) if nl < 0 else nl + 1
        out.append(LineRange(rg.file, rg.start + start, rg.start + end, line))
        line += data.count(b"\n", start, end)
        start = end
    return out or [rg]


def count_tasks(paths: Iterable[str], limits: Limits = DEFAULT_LIMITS) -> int | None:
    """How many tasks ``iter_tasks`` will yield (None when reading stdin)."""
    paths = list(paths)
    if STDIN in paths:
        return None
    return sum(1 for _ in iter_tasks(paths, limits))


def load_task(task: Task, limits: Limits, protocol: Any = None) -> Any:
    """The validated ``Replay`` of a task (raises ``UnmaskError`` when it is not one),
    read against ``protocol`` (a ``ProtocolFile``) when one is given."""
    from unmask.replay.load import replay_from_obj

    obj, text = task_document(task, limits)
    if task.text is None:
        return replay_from_obj(obj, task.file, Path(task.file).parent, limits, protocol=protocol)
    base_dir = Path.cwd() if task.file == STDIN_LABEL else Path(task.file).parent
    return replay_from_obj(
        obj, task.file, base_dir, limits, line=task.line, text=text, protocol=protocol
    )


def task_document(task: Task, limits: Limits) -> tuple[Any, str | None]:
    """The task's JSON document, not yet validated, and the text of a JSON Lines record
    (None for a whole file); raises ``UnmaskError`` when it cannot be read or parsed."""
    from unmask.plumbing.jsonload import parse_json_document

    if task.problem is not None:
        code, message, hint = task.problem
        raise UnmaskError([Diagnostic(code, message, file=task.location, help=hint)])
    if task.text is None:
        from unmask.replay.replayfile import read_replay_json

        return read_replay_json(task.file, limits), None
    return parse_json_document(task.text, task.file, limits, first_line=task.line)
