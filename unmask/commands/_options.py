"""Options and output that several `unmask` subcommands share, defined once so they read
the same. ``click_options`` adds one ``--max-*`` option per bound of ``Limits`` and
``--protocol-path``, so a bound has the same option everywhere. ``open_backend`` is the one
place a command turns ``--backend`` (or a name of ``--backends``) into a backend: an unknown
name, or a bad solver option, is one diagnostic with a "did you mean" hint and the list of
names; a backend whose solver library cannot be imported is one diagnostic naming the
missing module; both exit ``exitcodes.USAGE`` (2). ``echo`` writes a command's result on
stdout; a full disk or a closed pipe there is handled once for every command, by the entry
point (``unmask.cli.stdout``).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING

import click

from unmask.backends.base import DEFAULT_BACKEND, DEFAULT_TIMEOUT_MS
from unmask.plumbing import exitcodes
from unmask.plumbing.codes import Code
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.replay.confine import PROTOCOL_PATH_ENV, env_roots, real_roots

if TYPE_CHECKING:
    from unmask.replay.outfolder import Manifest


def backend_option(help: str, default: str = DEFAULT_BACKEND):
    """``--backend``: which solver answers; each command says what changes with it."""
    return click.option("--backend", default=default, show_default=True, help=help)


def format_option(choices: tuple[str, ...]):
    """``--format``, into the parameter ``fmt``; text unless asked otherwise."""
    return click.option(
        "--format", "fmt", type=click.Choice(choices), default="text", show_default=True
    )


def open_backend(name: str, timeout_ms: int):
    """The backend ``name`` names, or exit 2 with one diagnostic saying why there is none."""
    from unmask.backends import create
    from unmask.plumbing.diagnostics import UnmaskError, render_all

    try:
        return create(name, timeout_ms=timeout_ms)
    except UnmaskError as exc:
        diags = exc.diagnostics
    except ImportError as exc:
        diags = (backend_unavailable(name, exc),)
    click.echo(render_all(diags), err=True)
    sys.exit(exitcodes.USAGE)


def backend_unavailable(name: str, exc: ImportError):
    """A backend whose solver library is missing: named, never the import error's text."""
    from unmask.plumbing.diagnostics import Diagnostic
    from unmask.plumbing.jsonload import show

    missing = (exc.name or "").partition(".")[0]
    help_ = (
        f"it needs the module `{show(missing)}`, which is not installed"
        if missing
        else "its solver library is not installed"
    )
    message = f"backend `{show(name)}` cannot be loaded"
    return Diagnostic(Code.BACKEND_UNAVAILABLE, message, help=help_)


def timeout_option(
    help: str = "per solver call; an undecided call is SOLVER_UNKNOWN, never a guess",
):
    return click.option(
        "--timeout-ms",
        type=click.IntRange(min=1),
        default=DEFAULT_TIMEOUT_MS,
        show_default=True,
        help=help,
    )


DEADLINE_HELP = (
    "per replay: past it the report is UNKNOWN with a `deadline` reason, checks "
    "not decided by then are SOLVER_UNKNOWN"
)


def deadline_option(default: int | None = None, help: str = DEADLINE_HELP):
    """``--deadline-ms``: a bound on the whole check of one replay (every solver call and
    the encoding around them), or on a whole analysis (``help`` says which)."""
    return click.option(
        "--deadline-ms",
        type=click.IntRange(min=1),
        default=default,
        show_default=default is not None,
        help=help + ("" if default is not None else " [default: none]"),
    )


def protocol_option():
    """``--protocol FILE`` of `check` and `audit`: re-check against another protocol."""
    return click.option(
        "--protocol",
        "against_path",
        metavar="FILE",
        default=None,
        help="check against this protocol (.proto or IR JSON) instead of each replay's own: "
        "atoms matched by name, annotations of atoms it lacks left out and reported",
    )


def load_protocol(path: str, limits):  # type: ignore[no-untyped-def]
    """The ``ProtocolFile`` of ``--protocol``, or (diagnostics, exit status, text): 2 when
    it cannot be read, 4 when it is not a valid protocol."""
    from unmask.plumbing import exitcodes
    from unmask.plumbing.diagnostics import UnmaskError, render_all
    from unmask.replay.recheck import load_protocol_file

    try:
        return load_protocol_file(path, limits), None
    except UnmaskError as err:
        diags = err.diagnostics
        code = exitcodes.USAGE if all(d.code == Code.IO for d in diags) else exitcodes.INVALID
        return None, (diags, code, render_all(diags, getattr(err, "sources", None)))


def protocol_or_exit(path: str | None, limits):  # type: ignore[no-untyped-def]
    """``--protocol``'s ``ProtocolFile`` (None without one), or its diagnostics on stderr
    and the exit status ``load_protocol`` gives."""
    if path is None:
        return None
    against, failed = load_protocol(path, limits)
    if failed is not None:
        click.echo(failed[2], err=True)
        raise SystemExit(failed[1])
    return against


def calibration_options(f):  # type: ignore[no-untyped-def]
    """``--calibration FILE`` and ``--trust X``: weigh each finding by the measured
    precision of the weakest reading it rests on (docs/calibration.md)."""
    f = click.option(
        "--trust",
        type=click.FloatRange(0.0, 1.0),
        default=0.9,
        show_default=True,
        help="with --calibration: a finding is trusted when the lower bound of every "
        "reading's 95% interval reaches this",
    )(f)
    return click.option(
        "--calibration",
        "calibration_path",
        metavar="FILE",
        default=None,
        help="a calibration file (`unmask calibrate`): show each finding's trust",
    )(f)


def trust_or_exit(path: str | None, threshold: float, limits, needed_by: str | None = None):  # type: ignore[no-untyped-def]
    """The ``unmask.review.calibration.Trust`` of ``--calibration`` and ``--trust`` (None without
    a file), or its one diagnostic on stderr and exit 2 (it cannot be read, or it is missing
    and ``needed_by`` names the option that needs it) or 4 (it is not a calibration file)."""
    from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, render_all

    if path is None:
        if needed_by is None:
            return None
        hint = "without a calibration no finding is trusted: give `--calibration FILE`"
        diag = Diagnostic(Code.USAGE, f"{needed_by} needs `--calibration`", help=hint)
        click.echo(render_all([diag]), err=True)
        raise SystemExit(exitcodes.USAGE)
    from unmask.review.calibration import Trust, read

    try:
        return Trust(read(path, limits), threshold)
    except UnmaskError as err:
        diags = err.diagnostics
        click.echo(render_all(diags), err=True)
        code = exitcodes.USAGE if all(d.code == Code.IO for d in diags) else exitcodes.INVALID
        raise SystemExit(code) from None


def echo(text: str, nl: bool = True) -> None:
    """``click.echo`` to stdout (a write that fails is the entry point's to report)."""
    click.echo(text, nl=nl)


def say(text: str) -> None:
    """A message on stderr, every line through the one output policy
    (``unmask.plumbing.safe.printable``): an input's escape sequences, bells and
    bidirectional overrides are written out, never acted on, piped or not."""
    from unmask.plumbing.safe import lines

    click.echo(lines(text), err=True)


class Folder:
    """The output folder of `annotate` and `propose replay` (``unmask.replay.outfolder``):
    ``open`` refuses (exit 2) a folder the paths are read from, or holding replays another
    run wrote (unless ``replace``), else removes this run's earlier replays and returns the
    manifest to list each replay in before it is written."""

    def __init__(
        self, out: Path, tool: str, paths: Sequence[str], limits: Limits, replace: bool
    ) -> None:
        self.out, self.tool, self.paths = out, tool, paths
        self.limits, self.replace = limits, replace

    def open(self) -> Manifest:
        from unmask.plumbing.diagnostics import Diagnostic, render, render_all
        from unmask.plumbing.safe import printable
        from unmask.replay.outfolder import Manifest, reads_from, survey

        out = self.out
        inside = reads_from(out, self.paths)
        if inside is not None:
            say(
                render(
                    Diagnostic(
                        Code.USAGE,
                        f"`{printable(inside)}` is read from the output folder"
                        f" `{printable(str(out))}`: its replays would be mixed with, or"
                        " replaced by, the ones written",
                        help="write to another folder",
                    )
                )
            )
            raise SystemExit(exitcodes.USAGE)
        plan = survey(out, self.tool, self.paths, self.limits, noun="run")
        refused = plan.refusal(self.replace)
        if refused is not None:
            say(render_all(refused.diagnostics))
            raise SystemExit(exitcodes.USAGE)
        try:
            manifest, removed = Manifest.start(plan)
        except OSError as exc:
            reason = (exc.strerror or "cannot write").lower()
            say(render(Diagnostic(Code.USAGE, f"cannot write `{printable(str(out))}`: {reason}")))
            raise SystemExit(exitcodes.USAGE) from None
        if removed:
            say(printable(f"{out}: note: {plan.removed_note(removed)}"))
        return manifest


def click_options(f):  # type: ignore[no-untyped-def]
    """Add one ``--max-*`` option per bound, and ``--protocol-path``, to a click command;
    it receives ``limits``.

    Shared by every command so that the same bound has the same option everywhere. The
    folders of ``--protocol-path`` (repeatable) come first, then those of the environment
    variable ``UNMASK_PROTOCOL_PATH``; both count.
    """
    names = [fl.name for fl in fields(Limits) if fl.name != "protocol_path"]
    helps = {
        "max_atoms": "most ground atoms in one protocol",
        "max_expr_depth": "deepest nesting of one expression",
        "max_expr_nodes": "most expression nodes in one protocol",
        "max_part_atoms": "most atoms a protocol's parts hold in all (first-match: n^2 / 2)",
        "max_source_chars": "longest source text or .proto file, in characters",
        "max_string_chars": "longest string literal in a .proto file, in characters",
        "max_domain_size": "most members of one domain",
        "max_json_depth": "deepest nesting of a JSON document",
        "max_json_values": "most values (arrays, objects, their items) in a JSON document",
        "max_file_bytes": "largest input file, in bytes",
    }

    @functools.wraps(f)
    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        bounds = {n: kwargs.pop(n) for n in names}
        roots = real_roots([*kwargs.pop("protocol_path"), *env_roots()])
        kwargs["limits"] = Limits(**bounds, protocol_path=roots)
        return f(*args, **kwargs)

    wrapper = click.option(
        DEFAULT_LIMITS.option("protocol_path"),
        "protocol_path",
        multiple=True,
        metavar="DIR",
        type=click.Path(exists=True, file_okay=False),
        help="a folder a replay's protocol `path` may lead into, besides the replay's own "
        f"(repeatable; also the `{PROTOCOL_PATH_ENV}` environment variable)",
    )(wrapper)
    for n in reversed(names):
        wrapper = click.option(
            DEFAULT_LIMITS.option(n),
            n,
            type=click.IntRange(min=1),
            default=getattr(DEFAULT_LIMITS, n),
            show_default=True,
            help=helps.get(n, n.replace("_", " ")),
        )(wrapper)
    return wrapper


def parse_domains(values: tuple[str, ...]) -> dict[str, list[str]]:
    """``claim=a,b`` options to a mapping; ``claim=`` is an empty domain."""
    out: dict[str, list[str]] = {}
    for v in values:
        name, sep, rest = v.partition("=")
        name = name.strip()
        if not sep or not name:
            raise click.BadParameter(
                f"`{v}` is not of the form NAME=a,b (use `NAME=` for no members)",
                param_hint="'--domain'",
            )
        if name in out:
            raise click.BadParameter(f"domain `{name}` is given twice", param_hint="'--domain'")
        out[name] = [m.strip() for m in rest.split(",")] if rest.strip() else []
    return out


def protocol_texts(diags, limits) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """The `.proto` files the diagnostics point into, read again for their excerpts (a
    protocol inline in the replay is no file: its diagnostics go without one)."""
    from unmask.plumbing.diagnostics import UnmaskError
    from unmask.plumbing.files import read_text

    texts: dict[str, str] = {}
    for d in diags:
        if d.span is not None and d.span.file not in texts:
            try:
                texts[d.span.file] = read_text(d.span.file, limits)
            except UnmaskError:
                continue
    return texts
