"""Exit statuses of `unmask` and `unmaskc`, in one place.

Contract: every command ends with one of these values; each value means the same kind of
outcome everywhere, and a command's page in ``docs/`` says which it uses.
"""

from __future__ import annotations

OK = 0
"""Satisfied, valid, agreeing backends; `unmaskc`: compiled, formatted or canonical."""

VIOLATED = 1
"""A requirement is violated, or backends disagree (`crosscheck`)."""

ERRORS = 1
"""`unmaskc`: compile errors, a file that is not canonical (``fmt --check``) or not UTF-8,
or an output file that cannot be written."""

PARTIAL = 1
"""Done in part: some records were skipped (`import`), some checks are still open (`next`)."""

USAGE = 2
"""The command line is wrong: a bad option or argument, a file that cannot be read; or
(`unmask`) an output, standard output included, that cannot be written."""

UNKNOWN = 3
"""No definite answer: a solver gave up, the backend cannot decide the replay, `crosscheck`
had nothing to compare, or (`audit --fail-on unknown`) a replay was unknown, not decided or
invalid."""

INTERNAL = UNKNOWN
"""An internal error (a bug): one ``internal-error`` diagnostic
(``unmask.plumbing.diagnostics.internal_error``), never a traceback; nothing was proved, so it is
the status of no definite answer."""

INVALID = 4
"""The replay is not valid input (`audit`: no input was a valid replay; one the backend
could not decide is valid, and is 3 as in `check`)."""

INTERRUPTED = 130
"""Stopped by Ctrl-C (128 + SIGINT)."""

BROKEN_PIPE = 141
"""Standard output is a pipe whose reader went away (`| head`): stopped quietly, as a
shell reports a command the pipe closed on (128 + SIGPIPE); ``unmask.cli.stdout``."""
