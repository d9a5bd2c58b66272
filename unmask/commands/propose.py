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
replay is invalid or unreadable, 2 usage.
``unmask propose list`` prints every registered proposer and what it fills.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import click

from unmask.commands._options import click_options, say
from unmask.ir import Span
from unmask.plumbing import exitcodes
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, render_all
from unmask.plumbing.limits import Limits
from unmask.plumbing.lines import bounded_lines
from unmask.plumbing.safe import printable
from unmask.propose import Proposer
from unmask.propose.claims import DEFAULT_THRESHOLD, ClaimSupport

EXIT_INVALID = exitcodes.INVALID
EXIT_USAGE = exitcodes.USAGE
MAX_LINE_BYTES = 16 * 1024 * 1024
MAX_SENTENCES = 10_000


class _BadLine(Exception):
    def __init__(self, message: str, row_id: object = None):
        super().__init__(message)
        self.message = message
        self.row_id = row_id


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _no_constant(name: str) -> float:
    raise ValueError(f"`{name}` is not a number JSON allows")


def _object(raw: bytes | None) -> tuple[dict, object]:
    """One input line as a JSON object and its optional ``id``, or ``_BadLine`` saying why
    (None: a line skipped unread past the limit)."""
    if raw is None:
        raise _BadLine(f"line longer than {MAX_LINE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _BadLine(f"not UTF-8 (byte {exc.start + 1})") from None
    try:
        row = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise _BadLine(f"not valid JSON: {msg[:1].lower()}{msg[1:]}") from None
    if not isinstance(row, dict):
        raise _BadLine(f"expected a JSON object, found {_kind(row)}")
    row_id = row.get("id")
    if row_id is not None and (isinstance(row_id, bool) or not isinstance(row_id, (str, int))):
        raise _BadLine(f"field `id` must be a string or an integer, found {_kind(row_id)}")
    return row, row_id


def _parse(raw: bytes | None) -> tuple[object, str, list[str]]:
    """The line's id, claim and evidence, or ``_BadLine`` naming the field at fault."""
    row, row_id = _object(raw)
    if "claim" not in row:
        raise _BadLine("missing field `claim`", row_id)
    claim = row["claim"]
    if not isinstance(claim, str):
        raise _BadLine(f"field `claim` must be a string, found {_kind(claim)}", row_id)
    if "evidence" not in row:
        raise _BadLine("missing field `evidence`", row_id)
    evidence = row["evidence"]
    if not isinstance(evidence, list):
        raise _BadLine(
            f"field `evidence` must be an array of sentences, found {_kind(evidence)}", row_id
        )
    if len(evidence) > MAX_SENTENCES:
        raise _BadLine(f"field `evidence` has more than {MAX_SENTENCES} sentences", row_id)
    for k, sentence in enumerate(evidence):
        if not isinstance(sentence, str):
            raise _BadLine(
                f"field `evidence[{k}]` must be a string, found {_kind(sentence)}", row_id
            )
    return row_id, claim, evidence


def _lines(path: str, name: str) -> Iterator[tuple[int, bytes | None]]:
    """The input's numbered lines, each read at most ``MAX_LINE_BYTES`` at a time (memory
    stays bounded; a longer line is None); one that cannot be read ends the command with
    exit 4."""
    from unmask.plumbing.files import open_binary

    try:
        if path == "-":
            yield from bounded_lines(sys.stdin.buffer, MAX_LINE_BYTES, skip_bom=True)
            return
        # a regular file only: a named pipe or a device is one line, never a read that blocks
        fh = open_binary(path, name)
    except UnmaskError as exc:
        say(render_all(exc.diagnostics))
        raise SystemExit(EXIT_INVALID) from None
    try:
        with fh:
            yield from bounded_lines(fh, MAX_LINE_BYTES, skip_bom=True)
    except OSError as exc:
        message = f"cannot read `{name}`: {(exc.strerror or 'error').lower()}"
        say(render_all([Diagnostic("unreadable-input", message)]))
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
        say(render_all([Diagnostic("usage", message)]))
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
    from unmask.propose import CLAIM_SUPPORT, create

    try:
        proposer = create(proposer_name, CLAIM_SUPPORT)
    except UnmaskError as exc:
        say(render_all(exc.diagnostics))
        raise SystemExit(EXIT_USAGE) from None
    if not isinstance(proposer, ClaimSupport):  # a registered class that lacks its task
        raise TypeError(f"proposer `{proposer.name}` fills claim support without `claim_support`")
    by = proposer.by.to_json()

    def respond(raw: bytes | None) -> dict:
        row_id, claim, evidence = _parse(raw)
        a = proposer.claim_support(claim, evidence, threshold)
        return {
            "id": row_id,
            "supporting": list(a.supporting),
            "label": a.label,
            "confidence": a.confidence,
            "evidence": [
                {
                    "sentence": m.sentence,
                    "start": m.start,
                    "end": m.end,
                    "quote": m.quote,
                    "confidence": m.confidence,
                }
                for m in a.matches
            ],
            "by": by,
        }

    _each_line(input_path, output, respond)


def _each_line(
    input_path: str, output: str | None, respond: Callable[[bytes | None], dict]
) -> None:
    """One output line per non-blank input line: ``respond``'s record, or the error of a bad
    line (also on stderr); then exit 4 when any line was bad."""
    name = "<stdin>" if input_path == "-" else input_path
    bad = total = 0
    with _output(output) as out:
        for n, raw in _lines(input_path, name):
            if raw is not None and not raw.strip():
                continue
            total += 1
            try:
                try:
                    record = respond(raw)
                except (MemoryError, RecursionError):
                    # one line too large to hold is that line's error; the lines before it
                    # are written and the rest are still read
                    raise _BadLine("too large to propose for: out of memory") from None
            except _BadLine as exc:
                bad += 1
                span = Span(name, n, 1, n, 1)
                say(render_all([Diagnostic("bad-input", exc.message, span=span)]))
                out.write(_dumps({"id": exc.row_id, "line": n, "error": exc.message}) + "\n")
                continue
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
    from unmask.propose.judge import JudgeRules, TooLarge, load_rules, rules_for

    try:
        if rules_path and protocol_path:
            raise UnmaskError([Diagnostic("usage", "give `--rules` or `--protocol`, not both")])
        path = rules_path or (str(rules_for(protocol_path)) if protocol_path else None)
        proposer = JudgeRules(load_rules(path) if path else None, max_chars)
    except UnmaskError as exc:
        say(render_all(exc.diagnostics))
        raise SystemExit(EXIT_USAGE) from None

    def respond(raw: bytes | None) -> dict:
        row_id, text = _parse_rationale(raw, field)
        try:
            return {"id": row_id, "annotations": proposer.annotations(text, threshold)}
        except TooLarge as exc:
            raise _BadLine(str(exc), row_id) from None

    _each_line(input_path, output, respond)


def _parse_rationale(raw: bytes | None, field: str) -> tuple[object, str]:
    """The line's id and rationale, or ``_BadLine`` naming the field at fault."""
    row, row_id = _object(raw)
    value = _at(row, field, row_id)
    if isinstance(value, dict) and isinstance(value.get("rationale"), str):
        # a judge output in the judge schema's shape: its rationale is one step further
        raise _BadLine(
            f"field `{field}` must be a string, found an object whose rationale is"
            f" `{field}.rationale`",
            row_id,
        )
    if not isinstance(value, str):
        raise _BadLine(f"field `{field}` must be a string, found {_kind(value)}", row_id)
    return row_id, value


def _at(row: dict, field: str, row_id: object) -> object:
    """The value ``field`` names in ``row``: a key of the line, else a dotted path through
    objects and lists (``result.reason``, ``contexts.0``); ``_BadLine`` says which step
    found nothing."""
    if field in row:
        return row[field]
    steps = field.split(".")
    if len(steps) == 1 or "" in steps:
        raise _BadLine(f"missing field `{field}`", row_id)
    value: object = row
    for n, step in enumerate(steps):
        where = ".".join(steps[:n])
        if isinstance(value, dict):
            if step not in value:
                at = f" in `{where}`" if where else ""
                raise _BadLine(f"missing field `{field}`: no `{step}`{at}", row_id)
            value = value[step]
        elif isinstance(value, list):
            if not (step.isascii() and step.isdigit() and int(step) < len(value)):
                raise _BadLine(
                    f"missing field `{field}`: `{where}` holds {len(value)} items, "
                    f"with no item `{step}` (items count from 0)",
                    row_id,
                )
            value = value[int(step)]
        else:
            raise _BadLine(
                f"missing field `{field}`: `{where}` is {_kind(value)}, not an object or an array",
                row_id,
            )
    return value


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
@click_options
def replay(
    paths: tuple[str, ...],
    proposer_names: tuple[str, ...],
    rules_path: str | None,
    threshold: float,
    output: str | None,
    out_dir: str | None,
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
    _replay_many(paths, proposer_names, rules_path, threshold, Path(out_dir), limits)


def _usage(message: str, help: str | None = None) -> None:
    say(render_all([Diagnostic("usage", message, help=help)]))
    raise SystemExit(EXIT_USAGE)


def _proposers(
    names: tuple[str, ...], obj: dict, base: Path, rules_path: str | None
) -> list[Proposer]:
    """The proposers asked for, in order; ``UnmaskError`` (a usage problem) when one cannot
    fill a replay or ``--rules`` is given without ``judge-rules``."""
    from unmask.propose.replay import replay_filler

    if rules_path and "judge-rules" not in names:
        raise UnmaskError(
            [Diagnostic("usage", "`--rules` is for the `judge-rules` proposer, not asked for")]
        )
    proposers = []
    for name in names:
        if name == "judge-rules":
            proposers.append(_judge_rules(obj, base, rules_path))
            continue
        proposers.append(replay_filler(name))
    return proposers


def _replay_one(
    replay_path: str,
    proposer_names: tuple[str, ...],
    rules_path: str | None,
    threshold: float,
    output: str | None,
    limits: Limits,
) -> None:
    """One replay file, written to stdout or ``-o``."""
    from unmask.plumbing.jsonload import read_json_file
    from unmask.propose.replay import DEFAULT_PROPOSERS, fill
    from unmask.replay.builder import write_json
    from unmask.replay.confine import embed_protocol
    from unmask.replay.load import replay_from_obj

    try:
        obj = read_json_file(replay_path, limits)
        base = Path(replay_path).resolve().parent
        loaded = replay_from_obj(obj, replay_path, base, limits)
    except UnmaskError as exc:
        say(render_all(exc.diagnostics))
        raise SystemExit(EXIT_INVALID) from None
    try:
        proposers = _proposers(proposer_names or DEFAULT_PROPOSERS, obj, base, rules_path)
    except UnmaskError as exc:
        say(render_all(exc.diagnostics))
        raise SystemExit(EXIT_USAGE) from None
    new, outcome = fill(obj, loaded, proposers, threshold)
    if output is not None:
        embed_protocol(new, base, Path(output).resolve().parent)
    try:
        out_base = base if output is None else Path(output).resolve().parent
        replay_from_obj(new, output or replay_path, out_base, limits)
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
            say(render_all([Diagnostic("usage", f"cannot write `{output}`: {reason}")]))
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
    out: Path,
    limits: Limits,
) -> None:
    """Every replay the paths name (files, folders, JSON Lines, as `audit` takes them),
    each written to ``out/ID.json``; an invalid one is said and passed over (exit 4)."""
    from unmask.annotate.run import names
    from unmask.commands.annotate import items
    from unmask.plumbing.outputs import write_in_folder
    from unmask.propose.replay import DEFAULT_PROPOSERS, fill
    from unmask.replay.builder import json_bytes
    from unmask.replay.confine import Refused, embed_protocol
    from unmask.replay.load import replay_from_obj

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _usage(f"cannot make `{printable(str(out))}`: {(exc.strerror or 'error').lower()}")
    status, written, filled, open_ = 0, 0, 0, 0
    for item in names(items(paths, limits)):
        if item.errors:
            say(render_all(list(item.errors)))
            status = EXIT_INVALID
            continue
        assert item.obj is not None and item.replay is not None and item.base is not None
        try:
            proposers = _proposers(
                proposer_names or DEFAULT_PROPOSERS, item.obj, item.base, rules_path
            )
        except UnmaskError as exc:  # the same for every replay: stop at the first
            say(render_all(exc.diagnostics))
            raise SystemExit(EXIT_USAGE) from None
        new, outcome = fill(item.obj, item.replay, proposers, threshold)
        target = out / f"{item.name}.json"
        try:
            embed_protocol(new, item.base, out)
            replay_from_obj(new, str(target), out, limits)
        except Refused as exc:
            say(render_all([Diagnostic(exc.code, str(exc), path="protocol.path", help=exc.help)]))
            status = EXIT_INVALID
            continue
        except UnmaskError as exc:
            say(render_all(exc.diagnostics))
            status = EXIT_INVALID
            continue
        taken = write_in_folder(out, target.name, json_bytes(new))
        if taken is not None:
            say(render_all([Diagnostic("io", taken)]))
            status = EXIT_INVALID
            continue
        written += 1
        filled += len(outcome.filled)
        open_ += len(outcome.open_atoms)
        _report(outcome, item.location)
    say(
        f"{written} replays written to `{printable(str(out))}`; {filled} of {open_} open atoms"
        " filled, unreviewed"
    )
    raise SystemExit(status)


def _judge_rules(obj: dict, base: Path, rules_path: str | None) -> Proposer:
    """The judge rules: ``--rules``, the rule file beside a protocol path, or the built-in."""
    from unmask.propose.judge import JudgeRules, load_rules, rules_for
    from unmask.replay.confine import Refused, locate_protocol

    if rules_path:
        return JudgeRules(load_rules(rules_path))
    protocol = obj.get("protocol")
    if isinstance(protocol, dict) and isinstance(protocol.get("path"), str):
        try:
            real, _ = locate_protocol(protocol["path"], base)
        except Refused:
            real = None
        # found beside the protocol, not named: never read through a link
        if real is not None and os.path.lexists(rules_for(real)):
            return JudgeRules(load_rules(rules_for(real), beside=True))
    return JudgeRules()
