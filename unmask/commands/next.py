"""`unmask next PATH...`: which open checks remain, and which annotations would settle them.

Contract: each PATH is a replay file, a directory of replays, a JSON Lines file of replays, or
an audit's results file (``unmask audit --out``: JSON Lines of reports, each replay re-read
from its ``location``, relative to ``--root``, default the working directory; error records
are listed as not checked). One replay file gives that replay's open checks, what each depends
on, and its to-do list; anything else gives every replay's and one to-do list grouped by
protocol and atom. ``--format text|json``; ``--backend`` (default sliced) changes nothing but
speed. Exit status: 0 no check is open; 1 some check is open (an annotation could settle it);
3 nothing is open but some check is unsettled for another reason (a timeout, an inconsistent
base, a translation that is not valid, a backend that cannot take the replay, an internal
error); 4 some replay is invalid or could not be re-read (the rest are still reported); 2
usage. ``--protocol FILE`` reads every replay against FILE, as ``unmask check --protocol``
does; a results line checked against another protocol than the one given (or than the
replay's own, without ``--protocol``: the line's ``recheck``) is a bad line, exit 4, never
answered for the wrong protocol. The text form goes through one printable filter, so a
replay's id or location cannot drive the terminal. The replays are read and their next
steps found by ``unmask.batch.todo``; this module prints them and sets the exit status.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from unmask.backends.base import DEFAULT_BACKEND
from unmask.checking.checker import outcome
from unmask.checking.next import INCONSISTENT, SETTLED, BatchTodo, NextReport, Todo
from unmask.commands._options import (
    backend_option,
    click_options,
    deadline_option,
    format_option,
    open_backend,
    protocol_option,
    protocol_or_exit,
    timeout_option,
)
from unmask.plumbing import exitcodes
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, render_all
from unmask.plumbing.limits import Limits
from unmask.plumbing.safe import printable

EXIT_OPEN = exitcodes.PARTIAL
EXIT_USAGE = exitcodes.USAGE
EXIT_UNSETTLED = exitcodes.UNKNOWN
EXIT_INVALID = exitcodes.INVALID
BATCH_SCHEMA = "unmask.checking.next-batch/1"


@click.command(name="next")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@backend_option(
    "z3, pysat[:SOLVER], truthtable, sliced: the answer is the same on each", DEFAULT_BACKEND
)
@format_option(("text", "json"))
@click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True),
    default=".",
    help="the folder the audit ran in: result locations are relative to it",
)
@protocol_option()
@timeout_option()
@deadline_option()
@click_options
def command(
    paths: tuple[str, ...],
    backend: str,
    fmt: str,
    root: str,
    against_path: str | None,
    timeout_ms: int,
    deadline_ms: int | None,
    limits: Limits,
) -> None:
    """Which open checks remain, and which one annotation would settle the most."""
    from unmask.batch.todo import steps
    from unmask.checking.next import merge

    solver = open_backend(backend, timeout_ms)
    against = protocol_or_exit(against_path, limits)
    for p in paths:
        if p != "-" and not os.path.exists(p):
            click.echo(
                render_all([Diagnostic(Code.USAGE, f"no such file or folder `{p}`")]), err=True
            )
            sys.exit(EXIT_USAGE)

    single = len(paths) == 1 and os.path.isfile(paths[0]) and not paths[0].endswith(".jsonl")
    reports = []
    errors: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for step in steps(paths, root, limits, solver, against, deadline_ms):
        location = step.location
        if step.skipped is not None:
            skipped.append({"location": location, "reason": step.skipped})
            continue
        if step.invalid is not None:
            from unmask.replay.load import render_error

            click.echo(render_error(step.invalid), err=True)
            messages = [d.message for d in step.invalid.diagnostics]
            errors.append({"location": location, "errors": messages})
            continue
        if step.failed:
            click.echo(render_all(step.failed), err=True)
            failed.append({"location": location, "errors": [d.message for d in step.failed]})
            continue
        reports.append(dataclasses.replace(step.report, location=None if single else location))

    if single and reports:
        r = reports[0]
        if fmt == "json":
            click.echo(json.dumps(r.to_json(), ensure_ascii=True, indent=2))
        else:
            click.echo(render_text(r), nl=False)
        sys.exit(r.exit_code)
    if single:
        sys.exit(EXIT_UNSETTLED if failed else EXIT_INVALID)
    batch = merge(reports)
    if fmt == "json":
        doc = {
            "schema": BATCH_SCHEMA,
            "backend": reports[0].backend if reports else backend,
            "replays": [r.to_json() for r in reports],
            "not_checked": skipped,
            "errors": errors,
            "failed": failed,
            "todo": [t.to_json(batch=True) for t in batch.todo],
        }
        click.echo(json.dumps(doc, ensure_ascii=True, indent=2))
    else:
        text = render_batch_text(reports, batch)
        for s in skipped:
            text += printable(f"not checked by the audit: `{s['location']}`") + "\n"
        click.echo(text, nl=False)
    if errors:
        sys.exit(EXIT_INVALID)
    if any(r.open for r in reports):
        sys.exit(EXIT_OPEN)
    if failed or any(r.undecided for r in reports):
        sys.exit(EXIT_UNSETTLED)
    sys.exit(0)


# --- text: the reports as a person reads them ---------------------------------------------


def _arrow(status: str, coverage: bool) -> str:
    if status in SETTLED:
        word = outcome(status, coverage=coverage)
        assert word is not None  # only NOT_SPECIFIED has none, and it is not settled
        return f"{status} ({word.lower()})"
    if status == INCONSISTENT:
        return "contradicts the other annotations"
    return status


_SHOWN = 6


def _checks(names: Sequence[str]) -> str:
    shown = ", ".join(f"`{n}`" for n in names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def render_text(report: NextReport) -> str:
    n_open = len(report.open)
    head = (
        f"replay `{report.replay}` (protocol `{report.protocol}`, backend {report.backend}): "
        f"{n_open} of {report.checks} checks open"
    )
    lines = [head]
    for c in report.open:
        what = f"verdict `{report.verdict}`" if c.subject == "verdict" else c.subject
        lines.append(f"  {what} is underdetermined; it depends on:")
        if not c.effects:
            lines.append("    no free atom (nothing to annotate settles it)")
        for e in c.effects:
            lines.append(
                f"    {e.atom} ({e.state}): TRUE → {_arrow(e.if_true, e.coverage)}, "
                f"FALSE → {_arrow(e.if_false, e.coverage)}"
            )
    for u in report.undecided:
        why = u.status or "not solved"
        lines.append(
            f"  {u.subject} is not settled and no annotation settles it: {why}"
            + (f" ({u.detail})" if u.detail else "")
        )
    lines += _todo_lines(report.todo, batch=False)
    return "\n".join(printable(x) for x in lines) + "\n"


def _todo_lines(todo: Sequence[Todo], batch: bool) -> list[str]:
    if not todo:
        return ["nothing to annotate: no single annotation settles an open check"]
    out = ["to do, most open checks settled first:"]
    for i, t in enumerate(todo, 1):
        where = f"{t.protocol} / " if batch else ""
        reps = f" in {t.replays} replay{'s' if t.replays != 1 else ''}" if batch else ""
        out.append(
            f"  {i}. {where}{t.atom}: settles {t.settles} open check"
            f"{'s' if t.settles != 1 else ''}{reps} ({t.either_way} whichever its value)"
        )
        if t.if_true:
            out.append(f"       TRUE settles {_checks(t.if_true)}")
        if t.if_false:
            out.append(f"       FALSE settles {_checks(t.if_false)}")
    return out


def render_batch_text(reports: Sequence[NextReport], batch: BatchTodo) -> str:
    n_open = sum(len(r.open) for r in reports)
    n_checks = sum(r.checks for r in reports)
    noun = "replay" if len(reports) == 1 else "replays"
    lines = [f"{len(reports)} {noun}: {n_open} of {n_checks} checks open"]
    for r in reports:
        if r.open or r.undecided:
            lines.append(
                f"  `{r.replay}` ({r.protocol}): {len(r.open)} open"
                + (f", {len(r.undecided)} not settled by annotation" if r.undecided else "")
            )
    lines += _todo_lines(batch.todo, batch=True)
    return "\n".join(printable(x) for x in lines) + "\n"
