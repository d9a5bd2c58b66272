"""`unmask`: the checking command line.

Contract: each subcommand lives in ``unmask.commands.<name>`` as a click command named
``command`` and is imported only when invoked, so ``unmask --help`` stays fast. Exit
statuses are those of ``unmask.plumbing.exitcodes``: 0 satisfied/valid/agree, 1 violated/disagree,
2 usage, 3 unknown, 4 invalid input, 130 interrupted, 141 a closed pipe on stdout; standard
output that cannot be written is handled once, here, by ``unmask.cli.stdout``. A run raises
the garbage collector's thresholds (``unmask.plumbing.limits.GC_THRESHOLDS``), measured to save time
on large replays.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util

import click

from unmask import __version__
from unmask.cli.stdout import StdoutGuard
from unmask.plumbing import exitcodes
from unmask.plumbing.limits import GC_THRESHOLDS

# name -> one-line help, shown without importing the command's module
COMMANDS: dict[str, str] = {
    "check": "Check one replay and report the four dimensions.",
    "validate": "Validate a replay without solving.",
    "crosscheck": "Run every backend on a replay and compare their reports.",
    "audit": "Check many replays and summarise the run.",
    "bench": "Measure audit throughput against a naive baseline.",
    "import": "Turn another tool's judge output into replays.",
    "propose": "Propose unreviewed annotations with a registered proposer.",
    "annotate": "Fill replays' open atoms: a model's readings, unreviewed, or a person's (--from).",
    "next": "Say which annotations would settle the open checks.",
    "review": "Review the unreviewed annotations findings and passes rest on.",
    "calibrate": "Measure each reader's precision from sampled reviews.",
    "analyze": "Find what is wrong with a protocol before any replay meets it.",
    "compare": "Compare two versions of a protocol label by label.",
    "study": "Run a study of real judge data (wice, factcc, realmistake).",
}
# a command whose name is a Python keyword lives in a module with a trailing underscore
MODULES: dict[str, str] = {"import": "import_"}


class LazyGroup(StdoutGuard):
    internal_status = exitcodes.INTERNAL

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [n for n in COMMANDS if self._available(n)]

    @staticmethod
    def _available(name: str) -> bool:
        return importlib.util.find_spec(f"unmask.commands.{MODULES.get(name, name)}") is not None

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS or not self._available(name):
            return None
        return importlib.import_module(f"unmask.commands.{MODULES.get(name, name)}").command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(n, COMMANDS[n]) for n in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def resolve_command(self, ctx, args):  # type: ignore[no-untyped-def]
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            import difflib

            close = difflib.get_close_matches(args[0], list(COMMANDS), n=1) if args else []
            if close:
                raise click.UsageError(
                    f"no such command `{args[0]}` (did you mean `{close[0]}`?)", ctx
                ) from exc
            raise


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="unmask")
def main() -> None:
    """Audit whether an LLM judge followed its protocol."""
    gc.set_threshold(*GC_THRESHOLDS)
