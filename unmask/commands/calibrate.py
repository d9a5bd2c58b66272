"""`unmask calibrate PATH... --out calibration.json`: each reader's precision, measured.

Contract: each PATH is a replay file, a folder of replays or a JSON Lines file of replays
(as ``audit`` takes them), reviewed with ``unmask review --sample … --apply``. Every
annotation whose ``review`` has a ``sample`` is counted for its reader (the original
``by``'s kind, name and version, and the atom's family): reviewed, and upheld when its
value is the original one (``unmask.batch.reviewing.calibrate``, by
``unmask.review.calibration.tally``). The calibration file is written
whole, canonical (``unmask.review.calibration.Calibration.dumps``), naming ``--data`` (default:
the paths as given) and the protocols (name, digest of the text) of the replays measured.
Exit status: 0 written; 2 usage (no PATH, a PATH that does not exist, an output that
cannot be written); 4 some replay is invalid or a sampled review is malformed: every
problem is said and nothing is written, since a calibration of part of the reviews would
speak for all of them.
"""

from __future__ import annotations

import os
import sys

import click

from unmask.commands._options import click_options
from unmask.plumbing import exitcodes
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, render_all
from unmask.plumbing.diagnostics import counted as noun
from unmask.plumbing.limits import Limits
from unmask.plumbing.safe import printable


def _fail(diags: list[Diagnostic], status: int) -> None:
    click.echo(render_all(diags), err=True)
    sys.exit(status)


@click.command(name="calibrate")
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option(
    "--out", "out", metavar="FILE", required=True, help="where to write the calibration file"
)
@click.option(
    "--data",
    metavar="NAME",
    default=None,
    help="what the reviews were drawn from, as the calibration names it [default: the paths]",
)
@click_options
def command(paths: tuple[str, ...], out: str, data: str | None, limits: Limits) -> None:
    """Measure each reader's precision from sampled reviews, into a calibration file."""
    from unmask.batch.reviewing import calibrate
    from unmask.plumbing.outputs import OutputError, write_text

    if not paths:
        hint = "give the replays reviewed with `unmask review --sample`"
        _fail([Diagnostic(Code.USAGE, "no replay given", help=hint)], exitcodes.USAGE)
    for p in paths:
        if not os.path.exists(p):
            _fail(
                [Diagnostic(Code.USAGE, f"no such file or folder `{printable(p)}`")],
                exitcodes.USAGE,
            )
    measured = calibrate(paths, data, limits)
    problems, by_reader, replays = measured.problems, measured.by_reader, measured.replays
    if problems:
        click.echo(render_all(problems), err=True)
        click.echo("nothing written: every sampled review must be read", err=True)
        sys.exit(exitcodes.INVALID)
    try:
        write_text(out, measured.calibration.dumps())
    except OutputError as exc:
        _fail(list(exc.diagnostics), exitcodes.USAGE)
    reviewed = sum(n for n, _ in by_reader.values())
    click.echo(
        f"{noun(reviewed, 'sampled review')} in {noun(len(by_reader), 'row')} (one per reader"
        f" and atom family), from {noun(replays, 'replay')}, written to `{printable(out)}`"
    )
    if not reviewed:
        click.echo(
            "no annotation has a sampled review: draw one with `unmask review --sample N "
            "--seed S`, review it, and apply it",
            err=True,
        )
    sys.exit(exitcodes.OK)
