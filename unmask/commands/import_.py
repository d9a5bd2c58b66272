"""`unmask import TOOL INPUT --out DIR`: turn another tool's judge output into replays.

Contract: TOOL names an importer (``unmask.importers.IMPORTERS``); one replay file per
judged record is written into DIR (created if missing), and one summary line goes to
stderr, preceded by one line per skipped record saying where and why. DIR must hold no
replay but those an earlier import wrote there, unchanged, of the same input (a re-run), or
of any input with ``--replace``: those are replaced, and anything else refuses the import
(``unmask.replay.outfolder``). Exit 0 when every record became a replay, 1 when some
were skipped (the rest are written), 4 when the input or the mapping is not readable as the
format (nothing is written), 2 for usage errors (an unknown importer, a missing option, a
DIR holding other replays: nothing is written or removed). The module is named ``import_``
because ``import`` is a Python keyword; the command line calls it ``import``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from unmask.commands._options import click_options, say
from unmask.plumbing import exitcodes
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import UnmaskError, render_all
from unmask.plumbing.limits import Limits
from unmask.plumbing.safe import shorten

EXIT_OK = exitcodes.OK
EXIT_SKIPPED = exitcodes.PARTIAL
EXIT_USAGE = exitcodes.USAGE
EXIT_INVALID = exitcodes.INVALID


@click.command("import")
@click.argument("tool", metavar="TOOL")
@click.argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False),
    help="directory for the replays (created if missing)",
)
@click.option(
    "--mapping",
    type=click.Path(dir_okay=False),
    default=None,
    help="mapping file for the `jsonl` importer",
)
@click.option(
    "--gold",
    type=click.Path(dir_okay=False),
    default=None,
    help="the dataset's items and gold labels: WiCE's gold_claim_test.jsonl for `wice` "
    "(optional: without it no line is marked and there is no gold label), ReaLMistake's "
    "data.zip for `realmistake`",
)
@click.option(
    "--protocol",
    # not click's check: a folder is a protocol that cannot be read (4), as a missing file
    type=click.Path(),
    default=None,
    help="the judge's protocol for the `structured` importer",
)
@click.option(
    "--replace",
    is_flag=True,
    help="replace the replays an earlier import of another input wrote into DIR (only "
    "those, unchanged since; any other replay there still refuses the import)",
)
@click_options
def command(
    tool: str,
    input_path: str,
    out: str,
    mapping: str | None,
    gold: str | None,
    protocol: str | None,
    replace: bool,
    limits: Limits,
) -> None:
    """Convert judge output (promptfoo, deepeval, inspect, ragas, wice, jsonl, …) into replays."""
    from unmask.importers import Options, get, import_file

    try:
        get(tool)
    except UnmaskError as exc:
        say(render_all(exc.diagnostics))
        sys.exit(EXIT_USAGE)
    if tool != "jsonl" and mapping is not None:
        say(f"error: `--mapping` is for the `jsonl` importer, not `{tool}`")
        sys.exit(EXIT_USAGE)
    if tool not in ("wice", "realmistake") and gold is not None:
        say(f"error: `--gold` is for the `wice` and `realmistake` importers, not `{tool}`")
        sys.exit(EXIT_USAGE)
    if (tool == "structured") != (protocol is not None):
        say(
            "error: `--protocol` is for the `structured` importer, which needs it"
            + ("" if tool == "structured" else f", not `{tool}`")
        )
        sys.exit(EXIT_USAGE)
    options = Options(
        limits=limits,
        mapping=Path(mapping) if mapping else None,
        gold=Path(gold) if gold else None,
        protocol=Path(protocol) if protocol else None,
    )
    try:
        summary = import_file(tool, Path(input_path), Path(out), options, replace=replace)
    except UnmaskError as exc:
        say(render_all(exc.diagnostics))
        # a folder holding other replays is the command line's to fix: nothing was read
        other = all(d.code == Code.OTHER_REPLAYS for d in exc.diagnostics)
        sys.exit(EXIT_USAGE if other else EXIT_INVALID)
    for s in summary.skipped:
        say(f"{s.where}: skipped: {s.reason}")
    for note in summary.notes:
        say(f"{note.where}: note: {note.message}")
    n, k = len(summary.written), summary.n_skipped
    say(
        f"imported {n} replay{'s' if n != 1 else ''} from `{shorten(input_path)}` into"
        f" `{shorten(out)}` with `{tool}`; skipped {k}"
    )
    sys.exit(EXIT_SKIPPED if k else EXIT_OK)
