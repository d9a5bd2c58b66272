"""Options that several `unmask` subcommands share, defined once so they read the same."""

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
