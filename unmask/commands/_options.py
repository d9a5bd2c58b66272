"""Options and output that several `unmask` subcommands share, defined once so they read
the same. ``echo`` writes a command's result on stdout; a full disk or a closed pipe there is
handled once for every command, by the entry point (``unmask.cli.stdout``).
"""

from __future__ import annotations

import click

from unmask.backends.base import DEFAULT_TIMEOUT_MS


def timeout_option(
    help: str = "per solver call; an undecided call is SOLVER_UNKNOWN, never a guess",
):
    return click.option(
        "--timeout-ms",
        type=click.IntRange(min=1),
        default=DEFAULT_TIMEOUT_MS,
        show_default=True,
        help=help,
    )


def deadline_option(default: int | None = None):
    """``--deadline-ms``: a bound on the whole check of one replay (every solver call)."""
    return click.option(
        "--deadline-ms",
        type=click.IntRange(min=1),
        default=default,
        show_default=default is not None,
        help="per replay: past it the report is UNKNOWN with a `deadline` reason, checks "
        "not decided by then are SOLVER_UNKNOWN"
        + ("" if default is not None else " [default: none]"),
    )


def echo(text: str, nl: bool = True) -> None:
    """``click.echo`` to stdout (a write that fails is the entry point's to report)."""
    click.echo(text, nl=nl)
