"""`unmask validate PATH...`: validation alone, no solver.

Contract: PATH is a replay file, a folder (walked as `unmask audit` walks it: `*.json` and
`*.jsonl`, never leaving the folder), a JSON Lines file (one replay per line) or `-`
(JSON Lines on stdin). Each valid replay gets one line on stdout (`ID: valid (…)`); each
invalid one every diagnostic on stderr, under its location; warnings go to stderr and do
not fail. With more than one replay, a last line on stdout counts them. Exit 0 when every
replay is valid; 4 when any is invalid, when a path is missing, unreadable or not a
regular file, or when the paths hold no replay at all; 2 for usage errors (click's own)
and for stdout that cannot be written. ``--protocol FILE`` validates against FILE instead
of each replay's own protocol (as ``unmask check --protocol``): a valid line then counts
the annotations left out for atoms FILE lacks; a FILE that cannot be read is exit 2, one
that is not a valid protocol exit 4.
"""

from __future__ import annotations

import os

import click

from unmask.commands._options import click_options, echo, protocol_option, protocol_or_exit
from unmask.plumbing import exitcodes
from unmask.plumbing.diagnostics import UnmaskError, counted, render_all
from unmask.plumbing.jsonload import show
from unmask.plumbing.limits import Limits


def _line(r) -> str:  # type: ignore[no-untyped-def]
    n_atoms = len(r.protocol.atoms)
    left_out = "" if r.recheck is None else f", {len(r.recheck.dropped)} left out"
    return (
        f"{show(r.id, 200)}: valid ({counted(n_atoms, 'atom')}, "
        f"{counted(len(r.annotations), 'annotation')}, "
        f"{len(r.unannotated)} unannotated{left_out})"
    )


def _single(path: str) -> bool:
    from unmask.replay.inputs import STDIN, is_jsonl

    return path != STDIN and not os.path.isdir(path) and not is_jsonl(path)


@click.command("validate")
# plain strings: the reader refuses what is not a readable regular file (exit 4, not usage)
@click.argument("paths", metavar="PATH...", nargs=-1, required=True)
@protocol_option()
@click_options
def command(paths: tuple[str, ...], against_path: str | None, limits: Limits) -> None:
    """Validate replays (files, folders, JSON Lines) without solving."""
    from unmask.replay.load import load_replay, render_error

    against = protocol_or_exit(against_path, limits)
    if len(paths) == 1 and _single(paths[0]):
        try:
            r = load_replay(paths[0], limits, protocol=against)
        except UnmaskError as exc:
            click.echo(render_error(exc), err=True)
            raise SystemExit(exitcodes.INVALID) from None
        if r.warnings:
            click.echo(render_all(r.warnings), err=True)
        echo(_line(r))
        return
    from unmask.replay.inputs import iter_tasks, load_task

    valid = invalid = 0
    for task in iter_tasks(paths, limits):
        try:
            r = load_task(task, limits, against)
        except UnmaskError as exc:
            invalid += 1
            click.echo(f"{show(task.location, 300)}: invalid", err=True)
            click.echo(render_error(exc), err=True)
            continue
        valid += 1
        if r.warnings:
            click.echo(render_all(r.warnings), err=True)
        echo(f"{show(task.location, 300)}: {_line(r)}")
    total = valid + invalid
    if total == 0:
        click.echo(
            "error: no replay found in " + ", ".join(f"`{show(p)}`" for p in paths), err=True
        )
        raise SystemExit(exitcodes.INVALID)
    echo(f"validated {total} replay{'s' if total != 1 else ''}: {valid} valid, {invalid} invalid")
    if invalid:
        raise SystemExit(exitcodes.INVALID)
