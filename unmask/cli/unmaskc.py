"""`unmaskc`: the `.proto` compiler and formatter.

Contract: ``unmaskc FILE.proto`` (also spelled ``unmaskc compile FILE.proto``) writes the
ground protocol IR as JSON (indent 2, trailing newline) on stdout or to ``-o``;
``--domain NAME=a,b`` gives a domain's members; ``--emit smt2|dimacs`` writes the lowering
instead (``--emit judge-schema|judge-prompt``: ``unmask.replay.judgeschema``, no members needed).
Two decisions that can both hold (a labelled verdict without ``first-match``) are a compile
error with a witness (``unmask.analysis.compiled``, which asks a solver). A free domain
without ``--domain`` members is checked without them (overlaps at 0 to 3 invented
members), and then nothing is written: exit 0 and a note on stderr saying so.
``unmaskc fmt FILE...`` prints canonical text, ``--check`` only reports files that
would change, ``--write`` rewrites them. A file is written whole or not at all (a temporary
file in the same folder replaces it). Exit statuses (``unmask.plumbing.exitcodes``): 0 ok; 1 compile
errors, a file that is not canonical (``--check``) or not UTF-8, or an output that cannot
be written; 2 usage (bad options, a missing or unreadable file); 141 a closed pipe on stdout
(``unmask.cli.stdout``, which also reports a stdout that cannot be written, with status 1).
Diagnostics go to stderr, rendered with the source line and a caret.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import click

from unmask import __version__
from unmask.cli.stdout import StdoutGuard
from unmask.commands._options import click_options, parse_domains
from unmask.plumbing import exitcodes
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, render_all
from unmask.plumbing.limits import Limits
from unmask.plumbing.outputs import write_text

# the backend that looks for overlapping decisions (the default of `unmask analyze`)
OVERLAP_BACKEND = "sliced"

# reading problems that mean the command line named the wrong thing
_USAGE_CODES = frozenset({Code.IO})


def _cli_path(d: Diagnostic) -> Diagnostic:
    # members came from `--domain` here, not from a replay's `domains`
    if d.path and d.path.startswith("domains."):
        return replace(d, path="--domain " + d.path.removeprefix("domains."))
    return d


def _fail(err: UnmaskError, sources: dict[str, str]) -> int:
    click.echo(render_all([_cli_path(d) for d in err.diagnostics], sources), err=True)
    if all(d.code in _USAGE_CODES for d in err.diagnostics):
        return exitcodes.USAGE
    return exitcodes.ERRORS


class _DefaultGroup(StdoutGuard):
    """A group whose first argument, when it names no subcommand, is a file to compile."""

    output_status = exitcodes.ERRORS
    internal_status = exitcodes.INTERNAL

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help", "--version"):
            args = ["compile", *args]
        return super().parse_args(ctx, args)


@click.group(
    cls=_DefaultGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    invoke_without_command=False,
)
@click.version_option(__version__, prog_name="unmaskc")
def cli() -> None:
    """Compile a .proto protocol to its ground IR (`unmaskc FILE.proto`), or format it
    (`unmaskc fmt FILE.proto`)."""


def _read(path: str, limits: Limits, sources: dict[str, str]) -> str:
    from unmask.plumbing.files import read_text

    text = read_text(path, limits)
    sources[path] = text
    return text


@cli.command("compile")
@click.argument("file", metavar="FILE.proto")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write here, not stdout")
@click.option(
    "--domain",
    "domain_opts",
    multiple=True,
    metavar="NAME=a,b",
    help="members of a domain (repeatable); NAME= for none",
)
@click.option(
    "--emit",
    type=click.Choice(["ir", "smt2", "dimacs", "judge-schema", "judge-prompt"]),
    default="ir",
    show_default=True,
    help="what to write: the IR as JSON, its lowering, or the judge's output schema or prompt",
)
@click_options
def compile_command(
    file: str, output: str | None, domain_opts: tuple[str, ...], emit: str, limits: Limits
) -> None:
    """Compile FILE.proto to protocol IR JSON."""
    domains = parse_domains(domain_opts)
    sources: dict[str, str] = {}
    try:
        from unmask.analysis.compiled import compile_checked
        from unmask.backends import create
        from unmask.language.parser import parse_source

        text = _read(file, limits, sources)
        tree = parse_source(text, file, limits)  # once: every compile below is of this tree
        # the compiler's checks, then overlapping decisions, which need a solver
        backend = create(OVERLAP_BACKEND)
        compiled = compile_checked(text, file, domains, limits, backend, tree)
        if emit.startswith("judge-"):
            from unmask.replay import judgeschema

            # compiled and checked above, with no members for a free domain among others
            view = judgeschema.view_of_tree(tree, domains)
    except UnmaskError as err:
        sys.exit(_fail(err, sources))
    if compiled.warnings:
        click.echo(render_all([_cli_path(d) for d in compiled.warnings], sources), err=True)
    protocol = compiled.protocol
    if emit.startswith("judge-"):
        fn = (
            judgeschema.emit_judge_schema
            if emit == "judge-schema"
            else judgeschema.emit_judge_prompt
        )
        out = fn(view)
    elif protocol is None:
        # no ground form without members: the protocol is checked, and nothing is written
        click.echo(_free_note(file, compiled, output), err=True)
        return
    elif emit == "ir":
        from unmask.ir.json import dumps, protocol_to_json
        from unmask.plumbing.safe import json_text

        out = json_text(dumps(protocol_to_json(protocol))) + "\n"
    else:
        try:
            from unmask.backends import emit as emitter
        except ImportError:
            raise click.UsageError(
                f"`--emit {emit}` is not available in this installation"
            ) from None
        lower = emitter.emit_smt2 if emit == "smt2" else emitter.emit_dimacs
        out = lower(protocol)
        if not out.endswith("\n"):
            out += "\n"
    if output:
        try:
            write_text(output, out)
        except UnmaskError as err:
            sys.exit(_fail(err, sources))
    else:
        click.echo(out, nl=False)


def _free_note(file: str, compiled, output: str | None) -> str:
    from unmask.plumbing.diagnostics import render

    names = ", ".join(f"`{d}`" for d in compiled.free)
    where = f"`{output}`" if output else "standard output"
    sizes = ", ".join(str(n) for n in compiled.checked_members)
    note = Diagnostic(
        Code.FREE_DOMAIN,
        f"the protocol compiles, but its free domain{'s' if len(compiled.free) > 1 else ''} "
        f"{names} {'have' if len(compiled.free) > 1 else 'has'} no members, so nothing was "
        f"written to {where}",
        file=file,
        severity="note",
        notes=(
            "every check that does not need members was made on the text as written; "
            f"overlapping decisions were looked for at {sizes} members per free domain",
        ),
        help="a replay gives the members in its `domains` and is ground with them when "
        f"checked; pass `--domain {compiled.free[0]}=a,b` to write the ground form for "
        "those members",
    )
    return render(note)


@cli.command("fmt")
@click.argument("files", nargs=-1, required=True, metavar="FILE.proto...")
@click.option("--check", is_flag=True, help="change nothing; exit 1 if a file is not canonical")
@click.option("--write", is_flag=True, help="rewrite files in place")
@click_options
def fmt_command(files: tuple[str, ...], check: bool, write: bool, limits: Limits) -> None:
    """Print the canonical text of each FILE.proto."""
    from unmask.language.formatter import format_source

    if check and write:
        raise click.UsageError("`--check` and `--write` cannot be used together")
    status = exitcodes.OK
    for path in files:
        sources: dict[str, str] = {}
        try:
            text = _read(path, limits, sources)
            formatted = format_source(text, path, limits)
        except UnmaskError as err:
            status = max(status, _fail(err, sources))
            continue
        if check:
            if formatted != text:
                click.echo(f"would reformat {path}", err=True)
                status = max(status, exitcodes.ERRORS)
        elif write:
            if formatted != text:
                try:
                    write_text(path, formatted)
                except UnmaskError as err:
                    status = max(status, _fail(err, sources))
                    continue
                click.echo(f"reformatted {path}", err=True)
        else:
            click.echo(formatted, nl=False)
    sys.exit(status)


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="unmaskc")


if __name__ == "__main__":  # pragma: no cover
    main()
