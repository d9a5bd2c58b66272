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
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from unmask.checking.record import report_json
from unmask.commands._options import (
    backend_option,
    calibration_options,
    click_options,
    open_backend,
    timeout_option,
    trust_or_exit,
)
from unmask.plumbing import exitcodes
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, counted, internal_error, render_all
from unmask.plumbing.limits import Limits
from unmask.plumbing.safe import printable

EXIT_REFUSED = exitcodes.PARTIAL
EXIT_USAGE = exitcodes.USAGE
EXIT_INVALID = exitcodes.INVALID


def _fail(diags: list[Diagnostic], status: int) -> None:
    click.echo(render_all(diags), err=True)
    sys.exit(status)


def _document(task: Any, limits: Limits, digests: dict[str, str]) -> Any:
    """The task's replay document, its record's digest kept in ``digests`` (the export
    carries it, and ``--apply`` refuses a record that no longer has it)."""
    from unmask.batch.task import task_document
    from unmask.plumbing.files import read_bytes
    from unmask.plumbing.jsonload import parse_json_bytes
    from unmask.review.queue import record_digest

    if task.problem is None and task.text is None:  # a whole file: its bytes, read once
        data = read_bytes(task.file, limits)
        doc = parse_json_bytes(data, task.file, limits)
    else:
        doc, _ = task_document(task, limits)
        data = task.text
    digests[task.location] = record_digest(data)
    return doc


def _from_results(path: str, locations: Any, limits: Limits, errors: list, digests: dict):
    """(location, report, replay document) of each report line of an audit's results file;
    the report is used as the audit wrote it, once its shape is what review reads."""
    from unmask.batch.results import result_lines

    for line in result_lines(path, limits):
        if line.error is not None:
            errors.append(line.error)
            continue
        if not line.checked:
            continue  # the audit could not check it: nothing rests on anything
        try:
            report = report_json(line.report())  # annotations in place, whichever form
            doc = _document(locations.task(line.location), limits, digests)
            yield line.location, report, doc
        except UnmaskError as exc:
            errors.append(exc)


def _gather(
    paths: tuple[str, ...], root: str, limits: Limits, solver: Any, errors: list, digests: dict
):
    """(location, report JSON, replay document) of every replay the paths name; each file
    is read once, however many replays it holds."""
    from unmask.api import check
    from unmask.batch.inputs import iter_tasks
    from unmask.batch.results import Locations, is_results
    from unmask.batch.task import load_task
    from unmask.plumbing.interrupt import reraise_interrupt

    out = []
    locations = Locations(root, limits)
    for path in paths:
        if is_results(path, limits):
            out += _from_results(path, locations, limits, errors, digests)
            continue
        for task in iter_tasks([path], limits):
            try:
                replay = load_task(task, limits)
                doc = _document(task, limits, digests)
                report = check(replay, solver).to_json()
            except UnmaskError as exc:
                errors.append(exc)
                continue
            except Exception as exc:  # a bug must still not end in a traceback
                reraise_interrupt(exc)
                errors.append(UnmaskError([internal_error(exc, file=task.location)]))
                continue
            out.append((task.location, report, doc))
    return out


def _measure(item: Any, trust: Any) -> Any:
    """The calibration's row for an item's reader, None when unmeasured."""
    from unmask.review.calibration import reader_of

    return trust.calibration.row(reader_of(item.by, item.atom))


def _show(item: Any, rank: int, trust: Any = None) -> str:
    who = item.by.get("kind", "") + (f" {item.by['name']}" if item.by.get("name") else "")
    if trust is not None:  # `--calibration`: how often this reader is right, as measured
        row = _measure(item, trust)
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


def _line(item: Any, trust: Any) -> dict[str, Any]:
    """An item's review line; with a calibration, ``measure``: its reader's row, or
    ``{"measured": false}``."""
    obj = item.to_json()
    if trust is not None:
        row = _measure(item, trust)
        obj["measure"] = {"measured": False} if row is None else row.figures()
    return obj


# --- applying ---------------------------------------------------------------------------------


def _apply(decisions: list, review_file: str, root: str, limits: Limits):
    """Write every accept/reject decision into its replay, one transaction per file
    (``unmask.review.apply``): (how many were applied, how many its replay holds already,
    the refusals as diagnostics, one or more a refused line, each record's new digest by
    location)."""
    from unmask.plumbing.span import Span
    from unmask.review.apply import apply_decisions

    done = apply_decisions(decisions, root, limits)
    refused = []
    for d, exc in done.refused:
        span = Span(review_file, d.line, 1, d.line, 1)
        for diag in exc.diagnostics:
            where = diag.location()
            notes = (*diag.notes, *((f"at {where}",) if where else ()))
            refused.append(Diagnostic(diag.code, diag.message, span, help=diag.help, notes=notes))
    return done.applied, len(done.already), refused, done.digests


def _read_review(review_file: str, limits: Limits, reviewer: str | None):
    """(decisions, diagnostics of bad lines) of a review file: a regular file, read once
    under the size bound (a pipe or a device is one line, never waited on)."""
    import io

    from unmask.plumbing.files import read_bytes
    from unmask.plumbing.lines import bounded_lines
    from unmask.plumbing.span import Span
    from unmask.review.sample import read_line as decide

    decisions, bad = [], []
    try:
        data = read_bytes(review_file, limits, printable(review_file))
    except UnmaskError as exc:
        _fail(list(exc.diagnostics), EXIT_USAGE)
    with io.BytesIO(data) as fh:
        for n, raw in bounded_lines(fh, limits.max_file_bytes, skip_bom=True):
            span = Span(review_file, n, 1, n, 1)
            if raw is None:
                bad.append(Diagnostic("review-line", "line longer than the file limit", span=span))
                continue
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw.decode("utf-8"))
            except (ValueError, RecursionError):
                bad.append(
                    Diagnostic(
                        "review-line",
                        "$: not valid JSON",
                        span=span,
                        help="each line is one JSON object, as exported",
                    )
                )
                continue
            try:
                d = decide(obj, review_file, n, reviewer)
            except UnmaskError as exc:
                bad.extend(exc.diagnostics)
                continue
            if d is not None:
                decisions.append(d)
    return decisions, bad


# --- interactive ------------------------------------------------------------------------------


def _state_key(obj: dict[str, Any]) -> str:
    return json.dumps([obj["location"], obj["atom"], obj["current"], obj["by"]], sort_keys=True)


def _load_state(path: str) -> dict[str, dict[str, Any]]:
    """The decisions an earlier session kept in ``path`` (none when it does not exist).

    Lines end at ``\\n`` alone (a quote may hold U+2028, which ``dumps`` keeps as it is). A
    last line without its newline that is not a review line was cut by a session killed
    while appending it: it is cut off, said once, and its decision, applied already, is
    asked again only if its replay still has the annotation."""
    from unmask.plumbing.files import read_bytes
    from unmask.plumbing.span import Span

    if not os.path.lexists(path):
        return {}
    out = {}
    try:
        # never through a link (the state is the session's own file), never a pipe
        text = read_bytes(path, name=printable(path), follow=False).decode("utf-8")
    except UnmaskError as exc:
        _fail(list(exc.diagnostics), EXIT_USAGE)
    except UnicodeDecodeError:
        why = "not UTF-8"
        _fail(
            [Diagnostic("usage", f"cannot read the state `{printable(path)}`: {why}")], EXIT_USAGE
        )
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            out[_state_key(obj)] = obj
        except (ValueError, KeyError, TypeError, RecursionError):
            if n == len(lines):  # no newline after it: torn by a kill mid-append
                _cut(path, len(text[: len(text) - len(line)].encode()))
                break
            span = Span(path, n, 1, n, 1)
            hint = "give another --state file, or remove this one"
            _fail([Diagnostic("review-line", "not a review line", span, help=hint)], EXIT_USAGE)
    else:
        if text and not text.endswith("\n"):  # a whole last line, written by hand
            _append(path, b"\n")
    return out


def _cut(path: str, end: int) -> None:
    from unmask.plumbing.outputs import cut_to

    click.echo(f"the last line of `{printable(path)}` was cut short: left out", err=True)
    cut_to(path, end)


def _append(path: str, data: bytes) -> None:
    """Append to the state and make it durable before the next question: one decision a
    line, so no decision is rewritten, and a kill loses at most the line being written;
    never through a link, never into a pipe or a device
    (``unmask.plumbing.outputs.append_bytes``)."""
    from unmask.plumbing.outputs import append_bytes

    append_bytes(path, data)


def _interactive(
    items: list, state_file: str, reviewer: str | None, root: str, limits: Limits, trust: Any
):
    """Ask, apply and record each decision (``trust``: a calibration, each reader's measure
    shown); the refusals."""
    from unmask.plumbing.outputs import OutputError

    refused: list[Diagnostic] = []
    try:
        state = _load_state(state_file)
        todo = [i for i in items if _state_key(i.to_json()) not in state]
        if len(todo) < len(items):
            click.echo(f"{len(items) - len(todo)} already decided in `{printable(state_file)}`")
        reviewer = (reviewer or "").strip()
        while todo and not reviewer:  # a name of spaces names nobody: ask again
            reviewer = click.prompt("your name (the reviewer)").strip()
        _ask(todo, state, state_file, reviewer, root, limits, refused, trust)
    except click.Abort:
        # Ctrl-C or the end of input: every decision so far is applied and in the state
        click.echo(f"\nstopped; resume with the same --state `{printable(state_file)}`", err=True)
        sys.exit(exitcodes.INTERRUPTED)
    except (OutputError, UnmaskError) as exc:
        _fail(list(exc.diagnostics), EXIT_USAGE)
    return refused


def _ask(
    todo: list,
    state: dict,
    state_file: str,
    reviewer: Any,
    root: str,
    limits: Limits,
    refused: list,
    trust: Any = None,
) -> None:
    """Ask for each item in turn; apply and record each decision as soon as it is made."""
    from unmask.review.queue import decide, dumps

    for rank, item in enumerate(todo, 1):
        click.echo(_show(item, rank, trust))
        choice = click.prompt(
            "accept, reject, skip or quit", type=click.Choice(["a", "r", "s", "q"]), default="s"
        )
        if choice == "q":
            break
        obj = item.to_json()
        obj["decision"] = {"a": "accept", "r": "reject", "s": "skip"}[choice]
        obj["reviewer"] = reviewer
        if choice == "r":
            values = [v for v in ("TRUE", "FALSE", "UNKNOWN") if v != item.value]
            obj["value"] = click.prompt("the correct value", type=click.Choice(values))
        d = decide(obj, state_file, len(state) + 1, reviewer)
        assert d is not None
        applied, _, problems, digests = _apply([d], state_file, root, limits)
        refused += problems
        for later in todo[rank:]:  # the record changed: its later items read the new one
            if later.location in digests:
                later.digest = digests[later.location]
        obj["applied"] = applied == 1
        state[_state_key(obj)] = obj
        _append(state_file, (dumps(obj) + "\n").encode())


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
    from unmask.review.queue import items as review_items

    if export and apply:
        _fail([Diagnostic("usage", "give `--export` or `--apply`, not both")], EXIT_USAGE)
    sampling = sample is not None or seed is not None or blind
    if sampling:
        from unmask.commands._review_sample import problem

        bad = problem(sample, seed, apply, interactive, findings_only)
        if bad is not None:
            _fail([bad], EXIT_USAGE)
    if apply:
        decisions, bad = _read_review(apply, limits, reviewer)
        done, already, problems, _ = _apply(decisions, apply, root, limits)
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
                    "usage",
                    "no replay or results file given",
                    help="give one or more `PATH`: replays, folders or a results file",
                )
            ],
            EXIT_USAGE,
        )
    for p in paths:
        if not os.path.exists(p):
            _fail([Diagnostic("usage", f"no such file or folder `{printable(p)}`")], EXIT_USAGE)
    if sampling:
        from unmask.commands._review_sample import run_sample

        assert sample is not None and seed is not None
        sys.exit(run_sample(paths, sample, seed, blind, export, root, context_chars, limits))
    solver = open_backend(backend, timeout_ms)
    weigh = trust_or_exit(calibration_path, trust, limits)
    errors: list[UnmaskError] = []
    digests: dict[str, str] = {}
    docs = _gather(paths, root, limits, solver, errors, digests)
    found = review_items(docs, context_chars, findings_only, digests)
    for exc in errors:
        from unmask.replay.load import render_error

        click.echo(render_error(exc), err=True)
    status = EXIT_INVALID if errors else exitcodes.OK
    if export:
        from unmask.plumbing.outputs import OutputError, write_bytes
        from unmask.review.queue import dumps

        text = "".join(dumps(_line(i, weigh)) + "\n" for i in found)
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
