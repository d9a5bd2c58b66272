"""`unmask check REPLAY.json`: check one replay and report the four dimensions.

Contract: exit 0 SATISFIED, 1 VIOLATED, 3 UNKNOWN, 4 invalid input (the validator's
diagnostics on stderr), 2 usage (an unknown backend or format, a bad option, a backend
that cannot take this replay); an internal error is reported on stderr, never as a
traceback, with exit 3 (nothing was proved). ``json`` is
``unmask.report.dumps``; every other format ``F`` in ``FORMATS`` is rendered by the module
``unmask.render.F`` through its ``render(report, replay) -> str``, so adding a format is
adding that module and its name here.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from unmask.commands._options import timeout_option
from unmask.diagnostics import Diagnostic, UnmaskError, render_all
from unmask.limits import Limits, click_options

FORMATS: tuple[str, ...] = ("text", "json", "html", "markdown", "sarif", "junit")

EXIT_USAGE = 2
EXIT_UNKNOWN = 3
EXIT_INVALID = 4


def _fail(diags: tuple[Diagnostic, ...], code: int) -> None:
    click.echo(render_all(diags), err=True)
    sys.exit(code)


@click.command(name="check")
@click.argument("replay_path", metavar="REPLAY.json")
@click.option("--backend", default="z3", show_default=True, help="z3, pysat[:SOLVER], truthtable")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@timeout_option()
@click_options
def command(replay_path: str, backend: str, fmt: str, timeout_ms: int, limits: Limits) -> None:
    """Check one replay: verdict entailment, procedure, coverage, grounding."""
    from unmask.backends import create

    try:
        solver = create(backend, timeout_ms=timeout_ms)
    except UnmaskError as exc:
        _fail(exc.diagnostics, EXIT_USAGE)
    except ImportError as exc:
        _fail(
            (
                Diagnostic(
                    code="backend-unavailable",
                    message=f"backend `{backend}` cannot be loaded: {exc}",
                ),
            ),
            EXIT_USAGE,
        )
    from unmask.api import check
    from unmask.replay import load_replay, render_error

    try:
        replay = load_replay(Path(replay_path), limits)
    except UnmaskError as exc:
        click.echo(render_error(exc), err=True)
        sys.exit(EXIT_INVALID)
    if replay.warnings:
        click.echo(render_all(replay.warnings), err=True)
    try:
        report = check(replay, solver)
    except UnmaskError as exc:
        # a backend that cannot take this replay (the truth table over its atom limit)
        _fail(exc.diagnostics, EXIT_USAGE)
    except Exception as exc:  # a bug must still not end in a traceback
        message = f"internal error while checking: {exc}" if str(exc) else "internal error"
        help_ = "nothing was proved; please report this with the replay"
        _fail((Diagnostic(code="internal-error", message=message, help=help_),), EXIT_UNKNOWN)
    if fmt == "json":
        from unmask.report import dumps

        click.echo(dumps(report), nl=False)
    else:
        module = importlib.import_module(f"unmask.render.{fmt}")
        if fmt == "text":
            # click.echo drops the ANSI codes again when stdout is not a terminal
            text = module.render(report, replay, color=True)
        else:
            text = module.render(report, replay)
        click.echo(text, nl=not text.endswith("\n"))
    sys.exit(report.exit_code)
