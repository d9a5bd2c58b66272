"""`unmask analyze FILE`: find what is wrong with a protocol before any replay meets it.

Contract: FILE is a `.proto` file or protocol IR JSON. Free domains are grounded at
``--members N`` invented members (default 3) unless ``--domain NAME=a,b`` gives them; the
output states that scope. Formats: text (diagnostics with the source line and a caret),
json, sarif. ``--deadline-ms`` (default 60 s) bounds the whole analysis: a question not
decided by then is an undecided finding. Exit statuses: 0 no error finding, 1 an error
finding, 3 no error finding but a question the solver could not decide (or the deadline
cut), 4 invalid input (diagnostics on stderr), 2 usage (a bad option, an unknown backend, a
file that cannot be read, ``--members`` over ``--max-domain-size``).
"""

from __future__ import annotations

import sys

import click

from unmask.backends.base import DEFAULT_BACKEND, DEFAULT_DEADLINE_MS
from unmask.commands._options import (
    backend_option,
    click_options,
    deadline_option,
    format_option,
    open_backend,
    timeout_option,
)
from unmask.plumbing import exitcodes
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, render_all
from unmask.plumbing.limits import Limits

BACKEND_HELP = "sliced, z3, pysat[:SOLVER], truthtable"
ANALYSIS_DEADLINE_HELP = (
    "the whole analysis: questions not decided by then are reported undecided (exit 3)"
)


def fail(diags, code: int, sources: dict[str, str] | None = None) -> None:
    click.echo(render_all(diags, sources), err=True)
    sys.exit(code)


def load_or_exit(paths, members: int, domain_opts, limits: Limits, on_invalid=None):
    """The loaded protocols, or exit with the problems; ``on_invalid(diags)`` is called
    first when a protocol is invalid (not when a file cannot be read)."""
    from unmask.analysis.ground import load
    from unmask.commands._options import parse_domains

    if members > limits.max_domain_size:
        # before any name is made: `--members 100000000` built them all (7 GB) and crashed
        fail(
            [
                Diagnostic(
                    Code.USAGE,
                    f"`--members {members}` is more than the limit of "
                    f"{limits.max_domain_size} members of one domain",
                    help="give fewer, or raise the limit with "
                    f"`{limits.option('max_domain_size')}`",
                )
            ],
            exitcodes.USAGE,
        )
    domains = parse_domains(domain_opts)
    try:
        return load(paths, members, domains, limits)
    except UnmaskError as err:
        diags = [
            Diagnostic(d.code, d.message, d.span, "--domain " + d.path[8:], d.file, d.help)
            if d.path and d.path.startswith("domains.")
            else d
            for d in err.diagnostics
        ]
        usage = all(d.code == Code.IO for d in diags)
        if on_invalid is not None and not usage:
            on_invalid(diags)
        fail(diags, exitcodes.USAGE if usage else exitcodes.INVALID, getattr(err, "sources", None))


def members_option():
    return click.option(
        "--members",
        type=click.IntRange(min=0),
        default=3,
        show_default=True,
        help="members invented for each free domain (the scope of the analysis)",
    )


def domain_option():
    return click.option(
        "--domain",
        "domain_opts",
        multiple=True,
        metavar="NAME=a,b",
        help="members of a domain (repeatable), instead of invented ones",
    )


@click.command(name="analyze")
@click.argument("file", metavar="FILE")
@members_option()
@domain_option()
@backend_option(BACKEND_HELP, DEFAULT_BACKEND)
@format_option(("text", "json", "sarif"))
@timeout_option()
@deadline_option(DEFAULT_DEADLINE_MS, ANALYSIS_DEADLINE_HELP)
@click_options
def command(
    file: str,
    members: int,
    domain_opts: tuple[str, ...],
    backend: str,
    fmt: str,
    timeout_ms: int,
    deadline_ms: int,
    limits: Limits,
) -> None:
    """Find contradictions, unreachable labels and dead requirements in a protocol
    (FILE: a `.proto` file or protocol IR JSON)."""
    solver = open_backend(backend, timeout_ms)
    from unmask.analysis.render import invalid_sarif, render

    def sarif_of_invalid(diags) -> None:
        # code scanning wants its file even when the protocol is broken
        click.echo(invalid_sarif(diags, file), nl=False)

    on_invalid = sarif_of_invalid if fmt == "sarif" else None
    (loaded,) = load_or_exit((file,), members, domain_opts, limits, on_invalid)
    from unmask.analysis.analyze import analyze
    from unmask.checking.explain import Deadline

    try:
        # started once the protocol is loaded and ground, as a replay's is once it is read
        deadline = Deadline(deadline_ms)
        result = analyze(loaded.protocol, solver, loaded.scope, file, deadline=deadline)
    except UnmaskError as exc:
        # a backend that cannot take this protocol (the truth table over its atom limit)
        fail(exc.diagnostics, exitcodes.USAGE)
    click.echo(render(fmt, result, loaded.sources), nl=False)
    sys.exit(result.exit_code)
