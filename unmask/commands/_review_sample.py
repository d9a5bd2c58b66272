"""`unmask review --sample N --seed S [--blind]`: the options a sample takes, and the draw.

Contract: ``problem(...)`` is the one usage diagnostic for a ``--sample`` the options do not
allow (N of 0 or less, no ``--seed``, ``--seed``/``--blind`` without ``--sample``, or with
``--apply``, ``--findings-only`` or ``--interactive``), or None. ``run_sample(...)`` draws
the sample (``unmask.batch.reviewing.sample``: every unreviewed reading of every replay the
paths name, stratified by reader, equal allocation), writes it to ``--export`` as review
lines or lists it, each string through one printable filter, and returns the exit status:
0, 4 when some replay could not be read (the rest drawn from), 2 when the export cannot be
written. More than there are draws them all, with a warning.
"""

from __future__ import annotations

from typing import Any

import click

from unmask.plumbing import exitcodes
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, render_all
from unmask.plumbing.limits import Limits
from unmask.plumbing.safe import printable


def problem(
    n: int | None, seed: int | None, apply: str | None, interactive: bool | None, findings: bool
) -> Diagnostic | None:
    """What is wrong with the options of a sample, or None."""
    if n is None:
        return _usage("`--seed` and `--blind` go with `--sample N`", "give `--sample N`")
    if n <= 0:
        return _usage(f"`--sample` takes a number of readings, found `{n}`", "give 1 or more")
    if seed is None:
        return _usage(
            "a sample needs `--seed S`",
            "give any whole number: the same seed draws the same sample again",
        )
    if apply:
        return _usage(
            "give `--sample` to draw, or `--apply` to apply, not both",
            "a sampled line carries its draw: `--apply` alone writes it back",
        )
    if findings:
        return _usage(
            "a sample draws from every unreviewed reading, not from the findings' only",
            "leave out `--findings-only`: a queue ranked by impact biases an estimate",
        )
    if interactive:
        return _usage("a sample is reviewed from its export", "give `--export FILE`")
    return None


def _usage(message: str, help: str) -> Diagnostic:
    return Diagnostic(Code.USAGE, message, help=help)


def run_sample(
    paths: tuple[str, ...],
    n: int,
    seed: int,
    blind: bool,
    export: str | None,
    root: str,
    chars: int,
    limits: Limits,
) -> int:
    """Draw the sample of every unreviewed reading in the paths
    (``unmask.batch.reviewing.sample``); list or export it."""
    from unmask.batch.reviewing import sample
    from unmask.replay.load import render_error
    from unmask.review.queue import dumps

    drawn = sample(paths, n, seed, blind, root, chars, limits)
    for exc in drawn.errors:
        click.echo(render_error(exc), err=True)
    status = exitcodes.INVALID if drawn.errors else exitcodes.OK
    size, lines = drawn.size, drawn.lines
    if n > size:
        more = Diagnostic(
            Code.SAMPLE_SIZE,
            f"`--sample {n}` asks for more than the {size} unreviewed readings there "
            "are: all of them are drawn"
            if size
            else "no unreviewed reading to draw from",
            severity="warning",
            help=None if size else "every TRUE or FALSE annotation is reviewed already",
        )
        click.echo(render_all([more]), err=True)
    if export:
        from unmask.plumbing.outputs import OutputError, write_bytes

        text = "".join(dumps(x) + "\n" for x in lines)
        try:
            # a new file renamed onto the name: a link there is replaced, never followed
            write_bytes(export, text.encode(), follow=False)
        except OutputError as exc:
            click.echo(render_all(list(exc.diagnostics)), err=True)
            return exitcodes.USAGE
        click.echo(
            f"{len(lines)} of {size} unreviewed readings drawn to "
            f"`{printable(export)}`" + (" (blind)" if blind else "")
        )
        return status
    for rank, x in enumerate(lines, 1):
        click.echo(_show(x, rank))
    click.echo(f"{len(lines)} of {size} unreviewed readings drawn")
    return status


def _show(x: dict[str, Any], rank: int) -> str:
    """One sampled reading as text; a blind one without its value."""
    s = x["sample"]["stratum"]
    who = " ".join(v for v in (s["kind"], s["name"], s["version"]) if v)
    value = f" = {x['current']}" if "current" in x else ""
    lines = [
        f"{rank}. `{x['location']}` (replay `{x['replay']}`): {x['atom']}{value}, by {who}",
        f"   atom: {x['description']}",
    ]
    if x.get("explanation"):
        lines.append(f"   why: {x['explanation']}")
    for e in x["evidence"]:
        lines.append(f"   quote ({e['source']} {e['start']}-{e['end']}): {e['quote']}")
        lines.append(f"   in: {e['context']}")
    return "\n".join(printable(v) for v in lines)
