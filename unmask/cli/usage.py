"""A command line that cannot be run, as one `usage` diagnostic, for both programs.

Contract: ``usage_diagnostic(exc)`` turns a ``click.UsageError`` (click's own: an unknown
option, a missing argument, a value an option does not take; or one a command raises) into
a ``Diagnostic`` with code ``usage``, in the words of docs/style.md: lowercase, the option
or value the user wrote in backticks, no final period; a close option name is suggested in
``help``, which also names the command's ``--help``; the command's usage line is a note.
``Usage(exc)`` is the same error, shown by ``unmask.plumbing.diagnostics.render`` instead of
click's own ``Error: …`` text; ``unmask.cli.stdout.StdoutGuard`` raises it in place of every
usage error of either program, so the exit status (2) and the stream (stderr) stay click's.
"""

from __future__ import annotations

import re
from typing import IO, Any

import click

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, render_all

# click quotes what the user wrote in single quotes (`'htm' is not one of 'text', …`)
_QUOTED = re.compile(r"'([^'\s]+)'")
_EXTRA = re.compile(r"^Got unexpected extra arguments? \((.*)\)$", re.S)
# commands of one replay, given several: where several are checked
_ONE_REPLAY = {
    "unmask check": "it checks one replay; `unmask audit PATH...` checks several",
    "unmask crosscheck": "it checks one replay; `unmask audit PATH...` checks several",
}


def _ticks(text: str) -> str:
    return _QUOTED.sub(r"`\1`", text)


def _sentence(text: str) -> str:
    """click's English as a message: backticks for quotes, a lowercase start (unless it
    starts with a name in backticks), no final period."""
    text = _ticks(text.strip()).rstrip(".")
    if text[:1].isupper() and text[1:2].islower():
        text = text[0].lower() + text[1:]
    return text


def _name(param: click.Parameter | None) -> str | None:
    """The option as the user would write it (its longest flag), or an argument's metavar."""
    if param is None:
        return None
    if isinstance(param, click.Option) and param.opts:
        return max(param.opts, key=len)
    return param.human_readable_name


def _hint_name(exc: click.BadParameter) -> str | None:
    if exc.param_hint is not None:
        hint = exc.param_hint
        names = [hint] if isinstance(hint, str) else list(hint)
        return " / ".join(n.strip("'\"") for n in names)
    return _name(exc.param)


def usage_diagnostic(exc: click.UsageError) -> Diagnostic:
    """One ``usage`` diagnostic saying what ``exc`` says."""
    ctx = exc.ctx
    path = ctx.command_path if ctx is not None else None
    group = ctx is not None and isinstance(ctx.command, click.Group)
    listed = "commands" if group and not isinstance(exc, click.NoSuchOption) else "options"
    more = f"`{path} --help` lists the {listed}" if path else None
    hint: str | None = None
    if isinstance(exc, click.NoSuchOption):
        message = f"no such option `{exc.option_name}`"
        # the closest one alone (click also offers `--help`, close to many a typo)
        offered = list(exc.possibilities or ())
        close = ([p for p in offered if p != "--help"] or offered)[:1]
        hint = f"did you mean `{close[0]}`?" if close else None
    elif (
        isinstance(command := getattr(exc, "command_name", None), str)
        and ctx is not None
        and isinstance(ctx.command, click.Group)
    ):  # click 8.4's NoSuchCommand, of a subgroup (`unmask propose jugde`)
        import difflib

        message = f"no such command `{command}`"
        close = difflib.get_close_matches(command, ctx.command.list_commands(ctx), n=1)
        hint = f"did you mean `{close[0]}`?" if close else None
    elif isinstance(exc, click.MissingParameter):
        what = exc.param_type or (exc.param.param_type_name if exc.param else "parameter")
        name = _hint_name(exc)
        message = f"missing {what} `{name}`" if name else f"missing {what}"
        extra = (
            exc.param.type.get_missing_message(param=exc.param, ctx=ctx)
            if exc.param is not None
            else None
        )
        hint = _sentence(extra) if extra else None
    elif isinstance(exc, click.BadParameter):
        name = _hint_name(exc)
        said = _sentence(exc.message)
        message = f"invalid value for `{name}`: {said}" if name else f"invalid value: {said}"
    else:
        extra_args = _EXTRA.match(exc.message.strip())
        if extra_args:
            message = f"unexpected argument `{extra_args.group(1)}`"
            more = f"`{path} --help` shows what it takes" if path else None
            hint = _ONE_REPLAY.get(path or "")
        else:
            message = _sentence(exc.message)
    # a question ends with its mark; any other hint, with a semicolon before the next
    helps = [h if h.endswith("?") or h is more else f"{h};" for h in (hint, more) if h]
    notes: tuple[str, ...] = ()
    if ctx is not None:
        notes = (ctx.get_usage().replace("Usage: ", "usage: ", 1),)
    return Diagnostic(Code.USAGE, message, help=" ".join(helps) or None, notes=notes)


class Usage(click.UsageError):
    """A usage error shown as its one diagnostic; its exit status is click's, 2."""

    def __init__(self, exc: click.UsageError) -> None:
        super().__init__(exc.message, exc.ctx)
        self.diagnostic = usage_diagnostic(exc)

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(render_all([self.diagnostic]), file=file, err=file is None)
