"""`unmask study NAME`: run one of the studies of real judge data (``unmask.studies``).

Contract: ``NAME`` is a module of ``unmask.studies`` listed in ``STUDIES`` (``wice``,
``factcc``, ``realmistake``); the rest of the line is that study's own options
(``--data DIR --out DIR``, ``--limit N``, ``--jobs N``; ``unmask study NAME --help`` lists
them), and its exit statuses are the study's: 0 written, 4 a data file that cannot be
read, 2 usage (an unknown study, with the closest name). The study is imported only when
named, and runs from the installed package whatever the current folder holds (a checkout
named ``unmask/`` beside it is never imported in its place).
"""

from __future__ import annotations

import difflib
import importlib

import click

# name -> one-line help, shown without importing the study
STUDIES: dict[str, str] = {
    "wice": "Two judges' claim verifications on WiCE (docs/study-wice.md).",
    "factcc": "Explanations humans graded, on FactCC (docs/study-factcc.md).",
    "realmistake": "Twelve error detectors on ReaLMistake (docs/study-realmistake.md).",
}


class _Studies(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(STUDIES)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in STUDIES:
            return None
        return importlib.import_module(f"unmask.studies.{name}").main

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Studies"):
            formatter.write_dl(list(STUDIES.items()))

    def resolve_command(self, ctx, args):  # type: ignore[no-untyped-def]
        if args and args[0] not in STUDIES and not args[0].startswith("-"):
            from unmask.plumbing.safe import printable

            close = difflib.get_close_matches(args[0], list(STUDIES), n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            # click adds "Try 'unmask study --help'", which lists the studies
            raise click.UsageError(f"no such study `{printable(args[0])}`{hint}", ctx)
        return super().resolve_command(ctx, args)


command = _Studies(
    name="study",
    help="Run a study of real judge data: `unmask study NAME --data DIR --out DIR`.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
