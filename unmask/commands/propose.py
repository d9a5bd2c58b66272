"""`unmask propose`: fill in annotations with a registered proposer, marked unreviewed.

Contract: ``unmask propose claims INPUT.jsonl`` reads one JSON object a line (``claim``, a
string; ``evidence``, a list of strings; ``id``, optional string, number or null; other keys
ignored; blank lines skipped; ``-`` reads stdin) and writes one JSON line per non-blank input
line, in input order: ``{"id", "supporting", "label", "confidence", "evidence", "by"}``, with
``supporting`` 0-based sentence indices, ``label`` one of supported / partially_supported /
not_supported, ``evidence`` the quoted span of each supporting sentence with its own
confidence, and ``by`` the proposer. A proposal below ``--threshold`` abstains: the sentence is
left out, the label is null. A bad line is reported on stderr as FILE:LINE with the field, gets
an output line ``{"id", "line", "error"}`` so output lines stay aligned with input lines, and
does not stop the rest (a line over 16 MiB is skipped unread). Exit 0 when every line was
proposed for, 4 when any line was invalid or the input could not be read, 2 for usage errors.
Output is a function of the input alone: same input, same bytes.
``unmask propose judge INPUT.jsonl`` reads one JSON object a line with the rationale (field
``rationale``, or the one ``--field`` names: a key, else a dotted path through objects and
lists such as ``result.reason`` or ``contexts.0``) and an optional ``id``, and writes one line per
input line: ``{"id", "annotations"}``, each annotation a replay annotation of a judge atom
(``atom``, ``value``, ``evidence`` spans into the rationale, ``explanation``) with its
``confidence`` and ``by``; the rules come from ``--rules FILE``, from the rule file next to
``--protocol`` (``NAME.judge.json``), or the built-in WiCE rules. Same errors and exit statuses
as ``claims``; a rule file that cannot be used is a usage error (2).
``unmask propose replay REPLAY.json`` fills the replay's open atoms (unannotated or UNKNOWN;
never a TRUE or FALSE one) with the proposers named by ``--proposer`` (default: the judge
rules, the answer's citation markers, then the claim proposer), each proposal unreviewed
with ``by``, exact quotes and its confidence at the end of ``explanation``; below
``--threshold`` the atom stays as it was. The result is validated by the replay loader, then
written to ``-o`` (a protocol named by path is embedded when that is another folder) or
stdout; what was filled, and why proposers abstained, goes to stderr. Exit 0 written, 4 the
replay is invalid or unreadable, 2 usage. With ``--out DIR`` every replay the paths name
goes to ``DIR/ID.json``; ``DIR`` holding another run's replays (unless ``--replace``) or a
replay the run reads is refused, exit 2 (``commands._options.Folder``).
``unmask propose list`` prints every registered proposer and what it fills.
This module reads the input, writes the output and sets the exit status; a line read and
answered is ``unmask.propose.lines``, a replay filled ``unmask.propose.replays``.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import click

from unmask.commands._options import Folder, click_options, say
from unmask.ir import Span
from unmask.plumbing import exitcodes
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, render_all
from unmask.plumbing.limits import Limits
from unmask.plumbing.lines import bounded_lines
from unmask.plumbing.safe import printable
from unmask.propose import lines
from unmask.propose.claims import DEFAULT_THRESHOLD

EXIT_INVALID = exitcodes.INVALID
EXIT_USAGE = exitcodes.USAGE


def _lines(path: str, name: str) -> Iterator[tuple[int, bytes | None]]:
    """The input's numbered lines, each read at most ``lines.MAX_LINE_BYTES`` at a time
    (memory stays bounded; a longer line is None); one that cannot be read ends the command with
    exit 4."""
    from unmask.plumbing.files import open_binary

    try:
        if path == "-":
            yield from bounded_lines(sys.stdin.buffer, lines.MAX_LINE_BYTES, skip_bom=True)
            return
        # a regular file only: a named pipe or a device is one line, never a read that blocks
        fh = open_binary(path, name)
    except UnmaskError as exc:
        say(render_all(exc.diagnostics))
        raise SystemExit(EXIT_INVALID) from None
    try:
        with fh:
            yield from bounded_lines(fh, lines.MAX_LINE_BYTES, skip_bom=True)
    except OSError as exc:
        message = f"cannot read `{name}`: {(exc.strerror or 'error').lower()}"
        say(render_all([Diagnostic(Code.UNREADABLE_INPUT, message)]))
        raise SystemExit(EXIT_INVALID) from None


@contextlib.contextmanager
def _output(output: str | None) -> Iterator[IO[str]]:
    """Where the lines go: stdout, or the ``-o`` file (one that cannot be written: exit 2).
    Standard output's failures are the entry point's to report, as for every command
    (``unmask.cli.stdout``); reading errors never reach here (``_lines``)."""
    if output is None:
        yield sys.stdout
        return
    try:
        with open(output, "w", encoding="utf-8") as out:
            yield out
    except OSError as exc:
        message = f"cannot write `{output}`: {(exc.strerror or 'error').lower()}"
        say(render_all([Diagnostic(Code.USAGE, message)]))
        raise SystemExit(EXIT_USAGE) from None


def _dumps(obj: dict) -> str:
    # ASCII escapes: a lone surrogate in the input cannot make the output unwritable
    return json.dumps(obj, ensure_ascii=True)


_output_option = click.option(
    "-o", "--output", type=click.Path(dir_okay=False), help="write here instead of stdout"
)


def _threshold_option(default: float, abstains: str):
    """``--threshold``; ``abstains`` ends the help: what an abstaining proposal leaves."""
    return click.option(
        "--threshold",
        type=click.FloatRange(0.0, 1.0),
        default=default,
        show_default=True,
        help="proposals with a lower confidence abstain" + abstains,
    )


@click.group("propose")
def command() -> None:
    """Propose unreviewed annotations with a registered proposer."""


@command.command("claims")
@click.argument("input_path", metavar="INPUT.jsonl", type=click.Path(dir_okay=False))
@_threshold_option(DEFAULT_THRESHOLD, " (no sentence, null label)")
@click.option(
    "--proposer",
    "proposer_name",
    default="claims-lexical",
    show_default=True,
    help="a registered proposer that fills claim support (see `unmask propose list`)",
)
@_output_option
def claims(input_path: str, threshold: float, proposer_name: str, output: str | None) -> None:
    """Which evidence sentences support each claim, and a label."""
    try:
        proposer = lines.claim_proposer(proposer_name)
    except UnmaskError as exc:
        say(render_all(exc.diagnostics))
        raise SystemExit(EXIT_USAGE) from None

    def respond(raw: bytes | None) -> dict:
        return lines.claim_record(proposer, raw, threshold)

    _each_line(input_path, output, respond)


def _each_line(
    input_path: str, output: str | None, respond: Callable[[bytes | None], dict]
) -> None:
    """One output line per non-blank input line: ``respond``'s record, or the error of a bad
    line (also on stderr); then exit 4 when any line was bad."""
    name = "<stdin>" if input_path == "-" else input_path
    bad = total = 0
    with _output(output) as out:
        for n, record, error in lines.answers(_lines(input_path, name), respond):
            total += 1
            if error is not None:
                bad += 1
                span = Span(name, n, 1, n, 1)
                say(render_all([Diagnostic(Code.BAD_INPUT, error, span=span)]))
            out.write(_dumps(record) + "\n")
    if bad:
        line = "line" if total == 1 else "lines"
        say(f"{bad} of {total} {line} invalid; the rest were proposed for")
        raise SystemExit(EXIT_INVALID)


@command.command("list")
def list_proposers() -> None:
    """Every registered proposer and what it fills."""
    from unmask.propose import describe

    for p in describe():
        fills = ", ".join(f"{f['role']} {f['task']}" for f in p["fills"])
        click.echo(f"{p['name']} ({p['kind']}/{p['version']}): {fills}: {p['summary']}")


@command.command("judge")
@click.argument("input_path", metavar="INPUT.jsonl", type=click.Path(dir_okay=False))
@click.option("--rules", "rules_path", type=click.Path(dir_okay=False), help="a rule file")
@click.option(
    "--protocol",
    "protocol_path",
    type=click.Path(dir_okay=False),
    help="use the rule file kept next to this protocol (NAME.judge.json)",
)
@click.option(
    "--field",
    default="rationale",
    show_default=True,
    help="the input field that holds the rationale (WiCE outputs: `response`); a dotted "
    "path reaches into objects and arrays (`result.reason`, `contexts.0`)",
)
@_threshold_option(0.5, ": the atom stays UNKNOWN")
@click.option(
    "--max-chars",
    type=click.IntRange(min=1),
    default=100_000,
    show_default=True,
    help="longest rationale read, in characters; a longer one is that line's error",
)
@_output_option
def judge(
    input_path: str,
    rules_path: str | None,
    protocol_path: str | None,
    field: str,
    threshold: float,
    max_chars: int,
    output: str | None,
) -> None:
    """What each rationale cites and asserts, as unreviewed judge annotations."""
    try:
        proposer = lines.judge_proposer(rules_path, protocol_path, max_chars)
    except UnmaskError as exc:
        say(render_all(exc.diagnostics))
        raise SystemExit(EXIT_USAGE) from None

    def respond(raw: bytes | None) -> dict:
        return lines.judge_record(proposer, raw, field, threshold)

    _each_line(input_path, output, respond)


@command.command("replay")
@click.argument("paths", metavar="REPLAY...", nargs=-1, required=True)
@click.option(
    "--proposer",
    "proposer_names",
    multiple=True,
    help="a registered proposer, repeatable, run in the order given"
    " (default: `judge-rules`, `answer-citations`, then `claims-lexical`)",
)
@click.option(
    "--rules",
    "rules_path",
    type=click.Path(dir_okay=False),
    help="the judge rule file (default: NAME.judge.json beside the protocol, else the built-in"
    " WiCE rules)",
)
@_threshold_option(0.5, ": the atom stays as it was")
@_output_option
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    help="write each replay to DIR/ID.json: for several replay files, a folder or JSON Lines,"
    " as `unmask audit` takes them",
)
@click.option(
    "--replace",
    is_flag=True,
    help="replace the replays an earlier run wrote into `--out` (never any other file)",
)
@click_options
def replay(
    paths: tuple[str, ...],
    proposer_names: tuple[str, ...],
    rules_path: str | None,
    threshold: float,
    output: str | None,
    out_dir: str | None,
    replace: bool,
    limits: Limits,
) -> None:
    """Fill the open atoms (unannotated or UNKNOWN) of replays with unreviewed proposals."""
    if out_dir is not None and output is not None:
        _usage("give `-o FILE` for one replay or `--out DIR` for several, not both")
    if out_dir is None:
        many = len(paths) > 1 or Path(paths[0]).is_dir() or paths[0].endswith(".jsonl")
        if many and paths[0] != "-":
            _usage(
                f"`{printable(paths[0])}` holds several replays"
                if len(paths) == 1
                else f"{len(paths)} inputs hold several replays",
                "give `--out DIR`: each replay is written to DIR/ID.json",
            )
        _replay_one(paths[0], proposer_names, rules_path, threshold, output, limits)
        return
    folder = Folder(Path(out_dir), "propose", paths, limits, replace)
    _replay_many(paths, proposer_names, rules_path, threshold, folder, limits)


def _usage(message: str, help: str | None = None) -> None:
    say(render_all([Diagnostic(Code.USAGE, message, help=help)]))
    raise SystemExit(EXIT_USAGE)


def _replay_one(
    replay_path: str,
    proposer_names: tuple[str, ...],
    rules_path: str | None,
    threshold: float,
    output: str | None,
    limits: Limits,
) -> None:
    """One replay file, written to stdout or ``-o``."""
    from unmask.propose.replay import DEFAULT_PROPOSERS
    from unmask.propose.replays import filled, proposers_for, read_replay
    from unmask.replay.builder import write_json

    try:
        obj, loaded, base = read_replay(replay_path, limits)
    except UnmaskError as exc:
        say(render_all(exc.diagnostics))
        raise SystemExit(EXIT_INVALID) from None
    try:
        proposers = proposers_for(proposer_names or DEFAULT_PROPOSERS, obj, base, rules_path)
    except UnmaskError as exc:
        say(render_all(exc.diagnostics))
        raise SystemExit(EXIT_USAGE) from None
    try:
        new, outcome = filled(obj, loaded, base, proposers, threshold, replay_path, output, limits)
    except UnmaskError as exc:  # a proposer wrote something the loader refuses: a bug, say so
        say(render_all(exc.diagnostics))
        raise SystemExit(EXIT_INVALID) from None
    if output is None:
        click.echo(json.dumps(new, ensure_ascii=False, indent=2))
    else:
        try:
            write_json(output, new)
        except (OSError, UnmaskError) as exc:
            reason = str(getattr(exc, "strerror", "") or exc).lower()
            say(render_all([Diagnostic(Code.USAGE, f"cannot write `{output}`: {reason}")]))
            raise SystemExit(EXIT_USAGE) from None
    _report(outcome)


def _report(outcome: Any, where: str = "") -> None:
    """What was filled, left below the threshold and abstained from, on stderr."""
    at = f"{printable(where)}: " if where else ""
    for atom, by, conf in outcome.filled:
        what = outcome.score.get(by, "confidence")
        say(f"{at}filled `{atom}` by {by} ({what} {conf:g})")
    for atom, by, conf in outcome.below:
        what = outcome.score.get(by, "confidence")
        say(f"{at}below threshold: `{atom}` by {by} ({what} {conf:g})")
    for by, reason in outcome.abstained:
        say(f"{at}abstained: {by}: {reason}")
    say(f"{at}{len(outcome.filled)} of {len(outcome.open_atoms)} open atoms filled, unreviewed")


def _replay_many(
    paths: tuple[str, ...],
    proposer_names: tuple[str, ...],
    rules_path: str | None,
    threshold: float,
    folder: Folder,
    limits: Limits,
) -> None:
    """Every replay the paths name (files, folders, JSON Lines, as `audit` takes them),
    each written to ``out/ID.json``; an invalid one is said and passed over (exit 4)."""
    from unmask.annotate.run import items, names
    from unmask.propose.replay import DEFAULT_PROPOSERS
    from unmask.propose.replays import Unusable, fill_each, fillers

    out = folder.out
    asked = proposer_names or DEFAULT_PROPOSERS
    try:  # before the folder is touched: a re-run would otherwise remove its own replays first
        fillers(asked, rules_path)
    except Unusable as exc:
        say(render_all(exc.diagnostics))
        raise SystemExit(EXIT_USAGE) from None
    listed = folder.open()  # refused (exit 2) when the folder holds another run's replays
    status, written, filled, open_ = 0, 0, 0, 0
    found = names(items(paths, limits))
    each = fill_each(found, asked, rules_path, threshold, out, limits, listed.write)
    try:
        for done in each:
            if done.diagnostics:
                say(render_all(list(done.diagnostics)))
                status = EXIT_INVALID
                continue
            written += 1
            filled += len(done.outcome.filled)
            open_ += len(done.outcome.open_atoms)
            _report(done.outcome, done.item.location)
    except Unusable as exc:  # the proposers, the same for every replay: stop at the first
        say(render_all(exc.diagnostics))
        raise SystemExit(EXIT_USAGE) from None
    finally:
        listed.close()
    say(
        f"{written} replays written to `{printable(str(out))}`; {filled} of {open_} open atoms"
        " filled, unreviewed"
    )
    raise SystemExit(status)
