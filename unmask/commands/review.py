"""`unmask review PATH...`: read the unreviewed annotations findings and passes rest on.

Contract: each PATH is a replay file, a folder of replays, a JSON Lines file of replays, or an
audit's results file (``unmask audit --out``: each line's report is used as it is, its replay
re-read from ``location`` relative to ``--root``). The unreviewed annotations in the
explanations of VIOLATED and OK checks (``--findings-only``: VIOLATED ones) are listed, most
checks settled first (``unmask.review.queue``), each with its quotes and the source around them,
through one printable filter. ``--sample N --seed S [--blind]`` lists or exports instead a
random draw of every unreviewed reading, stratified by reader (``unmask.review.sample``).
``--export FILE`` writes them as review lines (each with its record's digest); ``--apply
FILE`` writes the filled-in decisions back into the replays, one locked transaction per file
(``unmask.review.apply``); ``--interactive`` (the default on a terminal) asks for each,
appends every decision to ``--state`` (never through a link, never emptying it) and applies
it at once, so a stopped session resumes where it was left.
Exit status: 0 done; 1 (``PARTIAL``) some review line was refused (bad, or its replay changed
since the export; the rest applied); 2 usage (a bad ``--sample`` among them), an unreadable
review or state file (a pipe, a device, a state file that is a link) or an output that
cannot be written; 4 some replay is invalid or could not be re-read (the rest are listed);
130 an interactive session stopped by Ctrl-C or the end of its input (what was decided is
applied and kept).
``--calibration FILE`` shows each listed reading's reader's measured precision (or
"unmeasured"), and exports it as ``measure``; a calibration file that cannot be read is
exit 2, one that is not a calibration file exit 4.
This module parses the options, prints and asks; the engine is ``unmask.batch.reviewing``
(the queue, the sample), ``unmask.review.lines`` (export, ``--apply``) and
``unmask.review.session`` (``--interactive``).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from unmask.commands._options import (
    backend_option,
    calibration_options,
    click_options,
    open_backend,
    timeout_option,
    trust_or_exit,
)
from unmask.plumbing import exitcodes
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, counted, render_all
from unmask.plumbing.limits import Limits
from unmask.plumbing.safe import printable

EXIT_REFUSED = exitcodes.PARTIAL
EXIT_USAGE = exitcodes.USAGE
EXIT_INVALID = exitcodes.INVALID


def _fail(diags: list[Diagnostic], status: int) -> None:
    click.echo(render_all(diags), err=True)
    sys.exit(status)


def _show(item: Any, rank: int, trust: Any = None) -> str:
    who = item.by.get("kind", "") + (f" {item.by['name']}" if item.by.get("name") else "")
    if trust is not None:  # `--calibration`: how often this reader is right, as measured
        from unmask.review.lines import measure

        row = measure(item, trust)
        who += ", unmeasured" if row is None else f", {row.words()}"
    lines = [
        f"{rank}. `{item.location}` (replay `{item.replay}`): {item.atom} = {item.value}, "
        f"by {who}, unreviewed; {item.rests()}"
    ]
    if item.explanation:
        lines.append(f"   why: {item.explanation}")
    for e in item.evidence:
        lines.append(f"   quote ({e['source']} {e['start']}-{e['end']}): {e['quote']}")
        lines.append(f"   in: {e['context']}")
    return "\n".join(printable(x) for x in lines)


def _count(found: list, findings_only: bool) -> str:
    """The listing's last line: those behind findings, then those behind passes only."""
    behind = sum(1 for i in found if i.checks)
    line = f"{behind} unreviewed annotations behind provisional findings"
    if findings_only:
        return line
    return f"{line}, {len(found) - behind} more behind passing checks only"


# --- interactive ------------------------------------------------------------------------------


def _interactive(
    items: list, state_file: str, reviewer: str | None, root: str, limits: Limits, trust: Any
):
    """Ask, apply and record each decision (``unmask.review.session``; ``trust``: a
    calibration, each reader's measure shown); the refusals."""
    from unmask.plumbing.outputs import OutputError
    from unmask.review.session import Session

    refused: list[Diagnostic] = []
    try:
        session = Session(state_file, root, limits)
        if session.note is not None:
            click.echo(session.note, err=True)
        todo = session.todo(items)
        if len(todo) < len(items):
            click.echo(f"{len(items) - len(todo)} already decided in `{printable(state_file)}`")
        reviewer = (reviewer or "").strip()
        while todo and not reviewer:  # a name of spaces names nobody: ask again
            reviewer = click.prompt("your name (the reviewer)").strip()
        session.reviewer = reviewer
        _ask(todo, session, refused, trust)
    except click.Abort:
        # Ctrl-C or the end of input: every decision so far is applied and in the state
        click.echo(f"\nstopped; resume with the same --state `{printable(state_file)}`", err=True)
        sys.exit(exitcodes.INTERRUPTED)
    except (OutputError, UnmaskError) as exc:
        _fail(list(exc.diagnostics), EXIT_USAGE)
    return refused


def _ask(todo: list, session: Any, refused: list, trust: Any = None) -> None:
    """Ask for each item in turn; the session applies and records each decision as soon
    as it is made."""
    for rank, item in enumerate(todo, 1):
        click.echo(_show(item, rank, trust))
        choice = click.prompt(
            "accept, reject, skip or quit", type=click.Choice(["a", "r", "s", "q"]), default="s"
        )
        if choice == "q":
            break
        value = None
        if choice == "r":
            values = [v for v in ("TRUE", "FALSE", "UNKNOWN") if v != item.value]
            value = click.prompt("the correct value", type=click.Choice(values))
        decision = {"a": "accept", "r": "reject", "s": "skip"}[choice]
        refused += session.decide(item, decision, value, todo[rank:])


@click.command(name="review")
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option(
    "--export", "export", metavar="FILE", help="write the annotations to review, one JSON line each"
)
@click.option(
    "--apply",
    "apply",
    metavar="FILE",
    help="write the decisions of a filled review file into the replays",
)
@click.option(
    "--interactive/--list",
    default=None,
    help="ask for each annotation (the default on a terminal) or only list them",
)
@click.option(
    "--state",
    "state_file",
    metavar="FILE",
    default="unmask-review.jsonl",
    show_default=True,
    help="where --interactive keeps its decisions, to resume",
)
@click.option(
    "--reviewer",
    metavar="NAME",
    help="who reviews: the `by.name` of every decision that does not give one",
)
@click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True),
    default=".",
    help="the folder locations are relative to (where the audit or export ran)",
)
@click.option(
    "--context",
    "context_chars",
    type=click.IntRange(min=0),
    default=160,
    show_default=True,
    help="characters of source shown on each side of a quote",
)
@click.option(
    "--findings-only",
    is_flag=True,
    help="only what VIOLATED checks rest on (by default passing checks' readings too)",
)
@click.option(
    "--sample",
    "sample",
    type=int,
    metavar="N",
    help="draw N unreviewed readings at random, stratified by reader, to measure readers",
)
@click.option("--seed", type=int, metavar="S", help="the draw's seed: same seed, same sample")
@click.option("--blind", is_flag=True, help="a sample that hides the proposed value")
@backend_option("z3, pysat[:SOLVER], truthtable, sliced: the answer is the same on each")
@timeout_option()
@calibration_options
@click_options
def command(
    paths: tuple[str, ...],
    export: str | None,
    apply: str | None,
    interactive: bool | None,
    state_file: str,
    reviewer: str | None,
    root: str,
    context_chars: int,
    findings_only: bool,
    sample: int | None,
    seed: int | None,
    blind: bool,
    backend: str,
    timeout_ms: int,
    calibration_path: str | None,
    trust: float,
    limits: Limits,
) -> None:
    """List, export, apply or decide the unreviewed annotations checks rest on, or a sample."""
    from unmask.batch.reviewing import queue

    if export and apply:
        _fail([Diagnostic(Code.USAGE, "give `--export` or `--apply`, not both")], EXIT_USAGE)
    sampling = sample is not None or seed is not None or blind
    if sampling:
        from unmask.commands._review_sample import problem

        bad = problem(sample, seed, apply, interactive, findings_only)
        if bad is not None:
            _fail([bad], EXIT_USAGE)
    if apply:
        from unmask.review.lines import apply_review, read_review

        try:
            decisions, bad = read_review(apply, limits, reviewer)
        except UnmaskError as exc:
            _fail(list(exc.diagnostics), EXIT_USAGE)
        done, already, problems, _ = apply_review(decisions, apply, root, limits)
        refused = bad + problems
        lines = len({d.span.line for d in refused if d.span is not None})
        if refused:
            click.echo(render_all(refused), err=True)
        held = f", {already} already applied" if already else ""  # by an earlier run: skipped
        click.echo(f"applied {counted(done, 'decision')}{held}, refused {counted(lines, 'line')}")
        sys.exit(EXIT_REFUSED if refused else exitcodes.OK)
    if not paths:
        _fail(
            [
                Diagnostic(
                    Code.USAGE,
                    "no replay or results file given",
                    help="give one or more `PATH`: replays, folders or a results file",
                )
            ],
            EXIT_USAGE,
        )
    for p in paths:
        if not os.path.exists(p):
            _fail([Diagnostic(Code.USAGE, f"no such file or folder `{printable(p)}`")], EXIT_USAGE)
    if sampling:
        from unmask.commands._review_sample import run_sample

        assert sample is not None and seed is not None
        sys.exit(run_sample(paths, sample, seed, blind, export, root, context_chars, limits))
    solver = open_backend(backend, timeout_ms)
    weigh = trust_or_exit(calibration_path, trust, limits)
    listed = queue(paths, root, limits, solver, context_chars, findings_only)
    found, errors = listed.items, listed.errors
    for error in errors:
        from unmask.replay.load import render_error

        click.echo(render_error(error), err=True)
    status = EXIT_INVALID if errors else exitcodes.OK
    if export:
        from unmask.plumbing.outputs import OutputError, write_bytes
        from unmask.review.lines import export_line
        from unmask.review.queue import dumps

        text = "".join(dumps(export_line(i, weigh)) + "\n" for i in found)
        try:
            # a new file renamed onto the name: a link there is replaced, never followed
            write_bytes(export, text.encode(), follow=False)
        except OutputError as exc:
            _fail(list(exc.diagnostics), EXIT_USAGE)
        click.echo(f"{len(found)} annotations to review written to `{printable(export)}`")
        sys.exit(status)
    if interactive is None:
        interactive = sys.stdin.isatty() and sys.stdout.isatty()
    if not interactive:
        for rank, item in enumerate(found, 1):
            click.echo(_show(item, rank, weigh))
        click.echo(_count(found, findings_only))
        sys.exit(status)
    refused = _interactive(found, state_file, reviewer, root, limits, weigh)
    if refused:
        click.echo(render_all(refused), err=True)
        sys.exit(EXIT_REFUSED)
    sys.exit(status)
