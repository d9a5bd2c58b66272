"""`unmask check REPLAY.json`: check one replay and report the four dimensions.

Contract: exit 0 SATISFIED, 1 VIOLATED, 3 UNKNOWN (also past ``--deadline-ms``, default
60 s, with a ``deadline`` reason: one deadline for the protocol's overlap questions and the
check together), 4 invalid input (the validator's
diagnostics on stderr; with ``--protocol FILE`` also a FILE that is not a valid protocol,
or a verdict or gold label it does not declare; a protocol whose decisions can both hold,
with ``unmaskc``'s ``overlapping-decisions`` diagnostics), 2 usage (an unknown backend or
format, a bad option, a ``--protocol`` file that cannot be read). A backend
that cannot decide this replay (the truth-table backend over its atom limit) is exit 3
with one diagnostic naming the limit and another backend; an internal error is reported
on stderr, never as a traceback, with exit 3 (nothing was proved); stdout that cannot be
written (a full disk, a closed pipe) is one diagnostic and exit 2. Every format ``F`` in
``FORMATS`` is rendered by ``unmask.render.render(F, report, replay)``, which applies the one output
policy of every format; the text report is coloured when stdout is a terminal. When the
replay is invalid or cannot be checked, ``sarif`` and ``junit`` still write a valid
document on stdout that records the error (``unmask.render.invalid``); the other formats
write nothing there. ``--calibration FILE`` (``--trust X``) adds each finding's trust to
every format; the exit status does not change with it; a calibration file that cannot be
read is exit 2, one that is not a calibration file exit 4.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from unmask.backends.base import DEFAULT_DEADLINE_MS
from unmask.commands._options import (
    calibration_options,
    click_options,
    deadline_option,
    echo,
    load_protocol,
    open_backend,
    protocol_option,
    protocol_texts,
    timeout_option,
    trust_or_exit,
)
from unmask.plumbing import exitcodes
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, internal_error, render_all
from unmask.plumbing.interrupt import reraise_interrupt
from unmask.plumbing.limits import Limits
from unmask.render import FORMATS


def _fail(
    diags: tuple[Diagnostic, ...], code: int, fmt: str = "", name: str = "", text: str = ""
) -> None:
    """Diagnostics on stderr; for a CI format, the document recording them on stdout."""
    text = text or render_all(diags)
    click.echo(text, err=True)
    if name:
        from unmask.render import invalid

        doc = invalid.render(fmt, name, diags, code, text)
        if doc is not None:
            echo(doc, nl=False)
    sys.exit(code)


@click.command(name="check")
@click.argument("replay_path", metavar="REPLAY.json")
@click.option(
    "--backend",
    default="z3",
    show_default=True,
    help="z3, pysat[:SOLVER], truthtable or sliced[:SOLVER]; reports are the same on each",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@protocol_option()
@timeout_option()
@deadline_option(DEFAULT_DEADLINE_MS)
@calibration_options
@click_options
def command(
    replay_path: str,
    backend: str,
    fmt: str,
    against_path: str | None,
    timeout_ms: int,
    deadline_ms: int | None,
    calibration_path: str | None,
    trust: float,
    limits: Limits,
) -> None:
    """Check one replay: verdict entailment, procedure, coverage, grounding.

    Exit status: 0 SATISFIED, 1 VIOLATED, 3 UNKNOWN, 4 an invalid replay, 2 usage.

    With --protocol FILE the replay is checked against FILE (another version of its
    protocol) instead of the protocol it embeds or names."""
    solver = open_backend(backend, timeout_ms)
    weigh = trust_or_exit(calibration_path, trust, limits)
    from unmask.backends.base import spec
    from unmask.checking.explain import Deadline
    from unmask.checking.outcomes import check_replay, refuse_overlaps
    from unmask.replay.load import load_replay, render_error

    against = None
    if against_path is not None:
        against, failed = load_protocol(against_path, limits)
        if failed is not None:
            diags, code, text = failed
            _fail(diags, code, fmt, replay_path, text)
    try:
        # Path("") is the current folder: an empty argument is read, and named, as given
        path = Path(replay_path) if replay_path else replay_path
        replay = load_replay(path, limits, protocol=against)
    except UnmaskError as exc:
        _fail(exc.diagnostics, exitcodes.INVALID, fmt, replay_path, render_error(exc))
    # one deadline for the overlap questions (n^2/2 of them for n labels) and the check, so
    # `--deadline-ms` bounds the two together, not each
    deadline = None if deadline_ms is None else Deadline(deadline_ms)
    try:
        # decisions that can both hold: the protocol is refused as unmaskc refuses it
        refuse_overlaps(replay, solver, deadline)
    except UnmaskError as exc:
        text = render_all(exc.diagnostics, protocol_texts(exc.diagnostics, limits))
        _fail(exc.diagnostics, exitcodes.INVALID, fmt, replay_path, text)
    if replay.warnings:
        click.echo(render_all(replay.warnings), err=True)
    try:
        report = check_replay(replay, solver, backend_name=spec(solver), deadline=deadline)
    except UnmaskError as exc:
        # the backend cannot decide this replay (the truth table over its atom limit):
        # nothing was proved, and the command line was not wrong
        _fail(exc.diagnostics, exitcodes.UNKNOWN, fmt, replay_path)
    except Exception as exc:  # a bug must still not end in a traceback
        reraise_interrupt(exc)
        _fail((internal_error(exc),), exitcodes.INTERNAL, fmt, replay_path)
    from unmask.render import render

    # click.echo drops the ANSI codes again when stdout is not a terminal
    options: dict = {"color": True} if fmt == "text" else {}
    if weigh is not None:  # without a calibration every format is exactly as it was
        options["trust"] = weigh
    text = render(fmt, report, replay, **options)
    echo(text, nl=not text.endswith("\n"))
    sys.exit(report.exit_code)
