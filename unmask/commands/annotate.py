"""`unmask annotate`: a model's (and other readers') readings of the open atoms of replays.

Contract: ``unmask annotate REPLAYS... --model PROVIDER/MODEL --out DIR`` reads replays as
`audit` takes them (files, folders, JSON Lines, ``-``), asks each reader of ``--readers``
(default the model; ``--samples K`` asks the model K times, each sample a reader) about each
replay's open atoms (``unmask.annotate.question``) and writes each replay, its open atoms
annotated and unreviewed, to ``DIR/ID.json`` (``unmask.annotate.run``). Calls go through
Inspect AI (``pip install 'unmask[models]'``; without it, one line says so and the exit
status is 2) and are cached on disk, so a second run makes none and an interrupted one
resumes. ``--from ANNOTATIONS --reader NAME`` writes a person's readings in first
(``unmask.annotate.hand``), every line checked against its replay before anything is written
or asked (a bad line: all of them shown, nothing written, exit 4); with no ``--model`` and no
``--readers`` no reader runs and no model library is needed. ``--dry-run`` prints the calls
and tokens a run would send, and makes none (it needs no model library). A progress line
goes to stderr. Error records (an invalid replay, a failed call: provider error, timeout,
rate limit, unreachable, malformed answer, each in our words) go to ``DIR/errors.jsonl`` and
on stderr; the run goes on. Exit 0 every replay written and every call answered; 1 some
replay has an error record or was left for later by ``--max-calls``; 4 some input replay is
invalid, or a line of ``--from`` cannot be written; 2 usage, a model that cannot be made
(a key not set), or a failure every call would repeat (credentials refused, a model the
provider does not know: one message, the run stops, the replays not read left unwritten), or
``DIR`` holds another run's replays (unless ``--replace``) or a replay the run reads
(``commands._options.Folder``); 130 interrupted (the replies received so far stay cached).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import click

from unmask.commands._options import Folder, click_options, echo, say
from unmask.plumbing import exitcodes
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, counted, render, render_all
from unmask.plumbing.safe import printable

MODEL = "model"  # `unmask.annotate.run.MODEL`, here without importing the engine
ERRORS_FILE = "errors.jsonl"
# a call's failure: the replay is written (atoms UNKNOWN), exit 1, not 4 (an invalid input)
CALL_CODES = frozenset(
    {Code.TIMEOUT, Code.PROVIDER, Code.UNREACHABLE, Code.RATE_LIMITED, Code.MALFORMED_REPLY}
)


class _Progress:
    """The progress line on stderr: rewritten in place on a terminal, else once every few
    seconds, and always at the end."""

    def __init__(self, total: int | None) -> None:
        self.total = total
        self.tty = sys.stderr.isatty()
        self.last = time.monotonic()

    def line(self, s) -> str:  # type: ignore[no-untyped-def]
        total = "?" if self.total is None else str(self.total)
        tokens = s.input_tokens + s.output_tokens
        return (
            f"annotate: {s.done}/{total} replays, {s.calls} calls ({s.cached} cached),"
            f" {tokens:,} tokens, {s.failures} failures"
        )

    def __call__(self, s) -> None:  # type: ignore[no-untyped-def]
        now = time.monotonic()
        if self.tty:
            click.echo("\r" + self.line(s), nl=False, err=True)
        elif now - self.last >= 5:
            self.last = now
            say(self.line(s))

    def end(self, s) -> None:  # type: ignore[no-untyped-def]
        if self.tty:
            click.echo("\r", nl=False, err=True)
        say(self.line(s))


@click.command("annotate")
@click.argument("paths", nargs=-1, required=True, metavar="REPLAYS...")
@click.option("--model", "model", metavar="PROVIDER/MODEL", help="the model, as Inspect names it")
@click.option("--out", "out", type=click.Path(file_okay=False), help="the folder to write into")
@click.option(
    "--replace",
    is_flag=True,
    help="replace the replays an earlier run wrote into `--out` (never any other file)",
)
@click.option(
    "--from",
    "hand",
    type=click.Path(dir_okay=False),
    metavar="ANNOTATIONS.jsonl",
    help="a person's readings to write in first, one JSON object a line (with `--reader`)",
)
@click.option("--reader", "reader", metavar="NAME", help="who made the readings of `--from`")
@click.option(
    "--readers",
    "readers",
    default=None,
    help="readers that must agree, comma-separated: `model` and proposers (`unmask propose"
    " list`); default `model`, or none with `--from` and no `--model`",
)
@click.option(
    "--samples",
    type=click.IntRange(1, 20),
    default=1,
    show_default=True,
    help="ask the model this many times; each answer is a reader",
)
@click.option(
    "--max-calls",
    "max_calls",
    type=click.IntRange(min=0),
    default=None,
    help="make at most this many calls, then stop cleanly (rerun to go on)",
)
@click.option(
    "--dry-run",
    "dry_run",
    is_flag=True,
    help="print the calls and tokens a run would send, and make none",
)
@click.option(
    "--max-tokens",
    "max_tokens",
    type=click.IntRange(min=16),
    default=2048,
    show_default=True,
    help="the longest answer a call may get, in tokens",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1, max=3600),
    default=120.0,
    show_default=True,
    help="seconds a call may take, retries included",
)
@click.option(
    "--max-connections",
    "max_connections",
    type=click.IntRange(1, 256),
    default=4,
    show_default=True,
    help="calls in flight at once (Inspect's connection limit)",
)
@click.option(
    "--max-retries",
    "max_retries",
    type=click.IntRange(0, 20),
    default=2,
    show_default=True,
    help="retries of a failed call (Inspect's)",
)
@click.option(
    "--max-question-chars",
    "max_question_chars",
    type=click.IntRange(min=1),
    default=400_000,
    show_default=True,
    help="a replay whose question is longer, in characters, is not asked (its atoms UNKNOWN)",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    default=0.5,
    show_default=True,
    help="a proposer's least confidence, below which it abstains",
)
@click_options
def command(
    paths,
    model,
    out,
    replace,
    hand,
    reader,
    readers,
    samples,
    max_calls,
    dry_run,
    max_tokens,
    timeout,
    max_connections,
    max_retries,
    max_question_chars,
    threshold,
    limits,
) -> None:  # type: ignore[no-untyped-def]
    """Fill replays' open atoms: a model's readings, unreviewed, or a person's (--from)."""
    from unmask.annotate import provider as prov
    from unmask.annotate.cache import Replies
    from unmask.annotate.run import Run, Settings, names, plan, proposers

    if hand and not (reader or "").strip():
        _usage("`--from` needs `--reader`", "name who made the readings, e.g. `--reader ana`")
    if reader and not hand:
        _usage("`--reader` names who made the readings of `--from`", "give `--from FILE`")
    if readers is None:  # a person's readings alone need no model (and call none)
        readers = "" if hand and not model else MODEL
    names_given = tuple(r.strip() for r in readers.split(",") if r.strip())
    if not names_given and not hand:
        _usage("`--readers` names no reader", "name `model` or a proposer")
    if MODEL in names_given and not model:
        _usage(
            "`--model` is missing",
            "name the model, e.g. `--model openai/gpt-4o-mini`; a person's readings need "
            "none: `--from ANNOTATIONS.jsonl --reader NAME`",
        )
    if model and "/" not in model:
        _usage(f"`--model` is PROVIDER/MODEL, found `{model}`", "e.g. `openai/gpt-4o-mini`")
    if not dry_run and not out:
        _usage("`--out` is missing", "name the folder the annotated replays go to")
    if len(set(names_given)) != len(names_given):
        _usage("`--readers` names a reader twice", "use `--samples` to ask the model again")
    settings = Settings(
        model=model if MODEL in names_given else None,
        readers=names_given,
        samples=samples,
        max_tokens=max_tokens,
        max_calls=max_calls,
        threshold=threshold,
        concurrency=max_connections * 2,
        protocol_roots=tuple(limits.protocol_path),
        max_question_chars=max_question_chars,
    )
    try:
        proposers(settings)  # a reader that is not one is a usage error, before any work
    except UnmaskError as exc:
        say(render_all(exc.diagnostics))
        raise SystemExit(exitcodes.USAGE) from None
    if MODEL in names_given and not dry_run and not prov.available():
        say(prov.INSTALL)  # one line, before anything else is said or done
        raise SystemExit(exitcodes.USAGE)
    replies = Replies()
    if not replies.enabled:
        say(
            render(
                Diagnostic(
                    Code.CACHE,
                    "no cache folder, so calls are not kept",
                    help="an interrupted run starts over; set `UNMASK_CACHE_DIR` to keep them",
                    severity="warning",
                )
            )
        )
    inputs, applied = _inputs(paths, limits, hand, reader)
    if dry_run:
        p = plan(inputs(), settings, replies)
        to = f"`{model}`" if settings.model else "a model (no reader is `model`)"
        echo(  # the model's name is the user's: through the output policy
            printable(
                f"dry run: {p['replays']} replays ({p['invalid']} invalid), {p['atoms']} open atoms"
                f" to read; {p['calls']} calls to {to} ({p['cached']} more cached), about"
                f" {p['tokens']:,} tokens sent (characters / 4), at most"
                f" {p['calls'] * max_tokens:,} tokens back"
                + (
                    f"; {p['too_long']} replays not asked (question over `--max-question-chars`)"
                    if p["too_long"]
                    else ""
                )
                + (f"; {_readings(applied, reader)} from `{hand}`" if hand else "")
                + "; no call made"
            )
        )
        return
    provider = None
    if MODEL in names_given:
        try:
            provider = prov.Provider(
                model,
                max_connections=max_connections,
                timeout=timeout,
                max_tokens=max_tokens,
                max_retries=max_retries,
            )
        except UnmaskError as exc:
            say(render_all(exc.diagnostics))
            raise SystemExit(exitcodes.USAGE) from None
    note = f"{_readings(applied, reader)} from `{hand}`, each reviewed" if hand else ""
    folder = Folder(Path(out), "annotate", paths, limits, replace)
    _run(paths, limits, settings, folder, provider, replies, Run, names, inputs, note)


def _usage(message: str, help: str) -> None:
    say(render(Diagnostic(Code.USAGE, message, help=help)))
    raise SystemExit(exitcodes.USAGE)


def _readings(applied, reader: str) -> str:  # type: ignore[no-untyped-def]
    values = ", ".join(f"{applied[v]} {v}" for v in ("TRUE", "FALSE", "UNKNOWN"))
    n = sum(applied.values())
    return printable(f"{n} reading{'s' if n != 1 else ''} by `{reader}` written in ({values})")


def _inputs(paths, limits, hand, reader):  # type: ignore[no-untyped-def]
    """What the run reads: the replays, with a person's readings (``--from``) written in,
    and how many were, by value. Every line is checked against every replay first: a bad
    line writes nothing and calls nothing (exit 4), so a reading the person made is never
    left out unnoticed, nor read by a model in its place."""
    from collections import Counter

    from unmask.annotate.run import items

    if not hand:
        return (lambda: items(paths, limits)), Counter()
    from unmask.annotate.hand import applied, by_replay, check, read_lines
    from unmask.plumbing.files import decode_utf8, read_bytes

    held = list(items(paths, limits)) if "-" in paths else None  # stdin is read once

    def replays():  # type: ignore[no-untyped-def]
        return iter(held) if held is not None else items(paths, limits)

    try:
        data = read_bytes(hand, limits, hand)
    except UnmaskError as exc:  # missing, not a regular file, too large: the command line
        say(render_all(exc.diagnostics))
        raise SystemExit(exitcodes.USAGE) from None
    try:
        # bytes that are not UTF-8 are a bad line of the file (its line and column named),
        # as in every JSON Lines input; a NUL is then a line that is not JSON
        text = decode_utf8(data, hand, hand)
    except UnmaskError as exc:
        say(render_all(exc.diagnostics))
        say(f"1 problem in `{hand}`: nothing written, no call made; fix the lines and run again")
        raise SystemExit(exitcodes.INVALID) from None
    lines, problems = read_lines(hand, text, limits)
    by_id = by_replay(lines)
    found, invalid = check(replays(), by_id, reader, limits)
    problems += found
    if problems:
        problems.sort(key=lambda d: d.span.line if d.span else 0)
        n = len(problems)
        say(render_all(problems + invalid))
        say(
            f"{n} problem{'s' if n != 1 else ''} in `{hand}`: nothing written, no call made;"
            " fix the lines and run again"
        )
        raise SystemExit(exitcodes.INVALID)
    counts = Counter(line.value for line in lines)

    def annotated():  # type: ignore[no-untyped-def]
        for item in replays():
            rid = item.replay.id if item.replay is not None else None
            yield applied(item, by_id.get(rid, []), reader, limits)[0]

    return annotated, counts


def _run(paths, limits, settings, folder, provider, replies, Run, names, inputs, note) -> None:  # type: ignore[no-untyped-def]
    from unmask.replay.inputs import count_tasks

    out = folder.out
    listed = folder.open()  # refused (exit 2) when the folder holds another run's replays
    progress = _Progress(count_tasks(paths, limits))
    run = Run(settings, out, provider, replies, progress, listed.write)

    async def main():  # type: ignore[no-untyped-def]
        asyncio.get_running_loop().set_exception_handler(_quiet_interrupt)
        return await run.run(names(inputs()))

    try:
        summary = asyncio.run(main())
    except KeyboardInterrupt:
        progress.end(run.summary)
        say("interrupted: the replies received so far are cached; run again to go on")
        raise SystemExit(exitcodes.INTERRUPTED) from None
    finally:
        listed.close()
    progress.end(summary)
    _errors(out, summary)
    values = ", ".join(f"{summary.values[v]} {v}" for v in ("TRUE", "FALSE", "UNKNOWN"))
    reasons = ", ".join(f"{n} {code}" for code, n in sorted(summary.reasons.items()))
    if settings.readers:
        say(
            f"{counted(summary.written, 'replay')} written to `{out}`; atoms read: {values}"
            + (f" ({reasons})" if reasons else "")
            + ", every one unreviewed"
        )
    else:
        say(f"{counted(summary.written, 'replay')} written to `{out}`")
    if note:
        say(note)
    if summary.stopped:
        say(f"{summary.stopped} replays left for later: `--max-calls` reached; run again to go on")
    if summary.fatal is not None:  # one message above, not one per replay: exit 2
        say(
            f"stopped: {counted(summary.halted, 'replay')} left unwritten, as every call would"
            " fail alike; fix what the error says and run again to go on"
        )
        raise SystemExit(exitcodes.USAGE)
    invalid = any(d.code not in CALL_CODES for *_, ds in summary.errors for d in ds)
    if invalid:
        raise SystemExit(exitcodes.INVALID)
    if summary.errors or summary.stopped:
        raise SystemExit(exitcodes.ERRORS)


def _quiet_interrupt(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """The event loop's handler of exceptions nobody awaited: a call that Ctrl-C stopped
    (asyncio logged it as a traceback after the one message) is not an error; anything else
    goes to asyncio's own handler."""
    if isinstance(context.get("exception"), (KeyboardInterrupt, asyncio.CancelledError)):
        return
    loop.default_exception_handler(context)


def _errors(out: Path, summary) -> None:  # type: ignore[no-untyped-def]
    """Every error record on stderr and in ``errors.jsonl`` (removed when there is none),
    written as ``audit`` writes one in a results file."""
    from dataclasses import replace

    from unmask.plumbing.outputs import write_bytes
    from unmask.plumbing.structs import encode_line
    from unmask.replay.error_record import error_line

    lines = []
    for _, location, diags in sorted(summary.errors, key=lambda e: e[0]):
        for d in diags:
            say(render(d if d.file or d.span else replace(d, file=location)))
        lines.append(encode_line(error_line(location, diags)))
    target = out / ERRORS_FILE
    if lines:
        write_bytes(str(target), b"".join(lines))
    else:
        target.unlink(missing_ok=True)
