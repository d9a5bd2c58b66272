"""`unmask validate REPLAY.json`: validation alone, no solver.

Contract: exit 0 and one summary line on stdout for a valid replay (warnings, if any, on
stderr); exit 4 with every diagnostic on stderr for invalid input, including a file that
is missing, unreadable, a directory or not a regular file; exit 2 for usage errors (click's
own) and for stdout that cannot be written.
"""

from __future__ import annotations

import click

from unmask.commands._options import echo
from unmask.diagnostics import UnmaskError, render_all
from unmask.jsonload import show
from unmask.limits import Limits, click_options

EXIT_INVALID = 4


@click.command("validate")
# a plain string: the reader refuses what is not a readable regular file (exit 4, not usage)
@click.argument("replay", metavar="REPLAY.json")
@click_options
def command(replay: str, limits: Limits) -> None:
    """Validate a replay without solving."""
    from unmask.replay import load_replay, render_error

    try:
        r = load_replay(replay, limits)
    except UnmaskError as exc:
        click.echo(render_error(exc), err=True)
        raise SystemExit(EXIT_INVALID) from None
    if r.warnings:
        click.echo(render_all(r.warnings), err=True)
    n_atoms = len(r.protocol.atoms)
    echo(
        f"{show(r.id, 200)}: valid ({n_atoms} atoms, {len(r.annotations)} annotations, "
        f"{len(r.unannotated)} unannotated)"
    )
