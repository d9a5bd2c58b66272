"""An interactive review session's engine: its state file, and each decision applied and kept.

Contract: ``load_state(path)`` reads the decisions an earlier session kept (none when the
file does not exist), never through a link, never from a pipe; a last line cut by a kill is
cut off and said (the note it returns). ``append(path, data)`` adds one line, durable
before the next question. ``Session(state_file, root, limits, reviewer)`` holds a session:
``todo(items)`` is the items not decided yet; ``decide(item, choice, value, later)``
applies one decision (``accept``, ``reject`` with the correct ``value``, or ``skip``) to
its replay at once (``unmask.review.lines.apply_review``), gives the items after it whose
record it changed the record's new digest, appends it to the state, and returns the
refusals. Asking is the caller's: nothing here reads a terminal.
"""

from __future__ import annotations

import json
import os
from typing import Any

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.limits import Limits
from unmask.plumbing.safe import printable


def state_key(obj: dict[str, Any]) -> str:
    return json.dumps([obj["location"], obj["atom"], obj["current"], obj["by"]], sort_keys=True)


def load_state(path: str) -> tuple[dict[str, dict[str, Any]], str | None]:
    """The decisions an earlier session kept in ``path`` (none when it does not exist).

    Lines end at ``\\n`` alone (a quote may hold U+2028, which ``dumps`` keeps as it is). A
    last line without its newline that is not a review line was cut by a session killed
    while appending it: it is cut off, and its decision, applied already, is asked again
    only if its replay still has the annotation; the second of the pair says so, once (None
    when nothing was cut). A state that cannot be read, or holds a line that is not a
    review line, raises ``UnmaskError``."""
    from unmask.plumbing.files import read_bytes
    from unmask.plumbing.span import Span

    if not os.path.lexists(path):
        return {}, None
    out = {}
    note = None
    try:
        # never through a link (the state is the session's own file), never a pipe
        text = read_bytes(path, name=printable(path), follow=False).decode("utf-8")
    except UnicodeDecodeError:
        why = "not UTF-8"
        raise UnmaskError(
            [Diagnostic(Code.USAGE, f"cannot read the state `{printable(path)}`: {why}")]
        ) from None
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            out[state_key(obj)] = obj
        except (ValueError, KeyError, TypeError, RecursionError):
            if n == len(lines):  # no newline after it: torn by a kill mid-append
                note = _cut(path, len(text[: len(text) - len(line)].encode()))
                break
            span = Span(path, n, 1, n, 1)
            hint = "give another --state file, or remove this one"
            raise UnmaskError(
                [Diagnostic(Code.REVIEW_LINE, "not a review line", span, help=hint)]
            ) from None
    else:
        if text and not text.endswith("\n"):  # a whole last line, written by hand
            append(path, b"\n")
    return out, note


def _cut(path: str, end: int) -> str:
    from unmask.plumbing.outputs import cut_to

    cut_to(path, end)
    return f"the last line of `{printable(path)}` was cut short: left out"


def append(path: str, data: bytes) -> None:
    """Append to the state and make it durable before the next question: one decision a
    line, so no decision is rewritten, and a kill loses at most the line being written;
    never through a link, never into a pipe or a device
    (``unmask.plumbing.outputs.append_bytes``)."""
    from unmask.plumbing.outputs import append_bytes

    append_bytes(path, data)


class Session:
    """A session's state, loaded once, and every decision applied and recorded as made."""

    def __init__(self, state_file: str, root: str, limits: Limits, reviewer: str = "") -> None:
        self.state_file = state_file
        self.reviewer = reviewer  # who decides: the caller may ask for it after loading
        self.root = root
        self.limits = limits
        self.state, self.note = load_state(state_file)

    def todo(self, items: list) -> list:
        """The items no earlier session decided."""
        return [i for i in items if state_key(i.to_json()) not in self.state]

    def decide(self, item: Any, choice: str, value: str | None = None, later: Any = ()) -> list:
        """Apply and record one decision (``accept``, ``reject``, ``skip``; a rejection's
        correct ``value``); the items of ``later`` whose record it changed read the new
        one. Returns the refusals, as diagnostics."""
        from unmask.review.lines import apply_review
        from unmask.review.queue import decide, dumps

        obj = item.to_json()
        obj["decision"] = choice
        obj["reviewer"] = self.reviewer
        if choice == "reject":
            obj["value"] = value
        d = decide(obj, self.state_file, len(self.state) + 1, self.reviewer)
        assert d is not None
        applied, _, problems, digests = apply_review([d], self.state_file, self.root, self.limits)
        for other in later:  # the record changed: its later items read the new one
            if other.location in digests:
                other.digest = digests[other.location]
        obj["applied"] = applied == 1
        self.state[state_key(obj)] = obj
        append(self.state_file, (dumps(obj) + "\n").encode())
        return problems
