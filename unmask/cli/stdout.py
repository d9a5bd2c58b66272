"""Standard output that cannot be written: one policy for every command of both programs.

Contract: ``StdoutGuard`` is the click group that `unmask` and `unmaskc` are built on.
Around parsing (``--help``, ``--version``) and around running any subcommand it flushes
standard output before the exit status is returned, so a write that fails, fails while it
can still be reported, not in the interpreter's last flush. Then:

- a closed pipe (the reader went away, as in `unmask audit ... | head -1`): the command
  stops quietly, nothing on stderr, exit status 141 (``exitcodes.BROKEN_PIPE``: 128 +
  SIGPIPE, what a shell reports for a command whose pipe was closed);
- any other failed write to standard output (a full disk or `/dev/full`, an I/O error, a
  command started with stdout closed, `>&-`, whose first write fails as a closed descriptor
  does): one ``output`` diagnostic, ``cannot write to standard output: no space left on
  device``, and the group's ``output_status`` (2 for `unmask`, 1 for `unmaskc`).

A command interrupted by Ctrl-C says `interrupted` on stderr and exits 130
(``exitcodes.INTERRUPTED``), in both programs. An exception no command expected (a bug)
ends either program with the one ``internal-error`` diagnostic
(``unmask.plumbing.diagnostics.internal_error``) and ``exitcodes.INTERNAL``, never a traceback
(``internal_status``).

Run as a program (the group called with no arguments), the process ends with the command's
status without the interpreter's teardown, once ``atexit`` has run and both streams are
flushed (``unmask.cli.finish``, which says when it exits normally instead).

Commands write with ``click.echo`` or ``sys.stdout`` and catch nothing about standard output
themselves. Files a command names are written through ``unmask.plumbing.outputs`` or caught where
they are written, so an error that reaches this guard with no file name is the stream's.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterator
from typing import Any, ClassVar

import click

from unmask.plumbing import exitcodes
from unmask.plumbing.codes import Code
from unmask.plumbing.interrupt import is_interrupt, sticky

# what a write to a stream can fail with; any other error is not the stream's and goes on
_WRITE_ERRORS = frozenset(
    getattr(errno, name)
    for name in ("ENOSPC", "EDQUOT", "EFBIG", "EIO", "EPIPE", "EBADF")
    if hasattr(errno, name)
)


def _silence(fd: int) -> None:
    """Point ``fd`` at nothing, so the interpreter's last flush cannot fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)


def _stream_fd(stream: Any) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # replaced (tests), closed or absent
        return None


class _Closed(io.TextIOBase):
    """Standard output for a process started without one, where Python leaves ``None`` and
    writes would vanish or crash: each write fails as a closed descriptor does."""

    encoding = "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if not data:
            return 0
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    @property
    def buffer(self) -> _Closed:  # bytes are refused the same way
        return self


@contextlib.contextmanager
def guarded(status: int) -> Iterator[None]:
    """Run a command's body under the policy above; ``status`` for a write that failed."""
    if sys.stdout is None:
        sys.stdout = _Closed()
    try:
        try:
            yield
        finally:
            sys.stdout.flush()
    except OSError as exc:
        if exc.errno not in _WRITE_ERRORS or exc.filename is not None:
            raise
        if exc.errno == errno.EPIPE:
            # either stream may be the closed one; nothing more is written to either
            for stream in (sys.stdout, sys.stderr):
                fd = _stream_fd(stream)
                if fd is not None:
                    _silence(fd)
            raise SystemExit(exitcodes.BROKEN_PIPE) from None
        from unmask.plumbing.diagnostics import Diagnostic, render_all
        from unmask.plumbing.outputs import reason

        fd = _stream_fd(sys.stdout)
        if fd is not None:
            _silence(fd)
        diag = Diagnostic(Code.OUTPUT, f"cannot write to standard output: {reason(exc)}")
        with contextlib.suppress(OSError):
            click.echo(render_all([diag]), err=True)
        raise SystemExit(status) from None


_CLICKS = (click.ClickException, click.exceptions.Exit, click.Abort)
# click's "no subcommand given: here is the help" (click 8.2 on), kept as click shows it
_HELP_ERRORS: tuple[type[Exception], ...] = tuple(
    e for e in (getattr(click.exceptions, "NoArgsIsHelpError", None),) if e is not None
)


def _usage(exc: click.UsageError) -> click.UsageError:
    """A usage error of either program, shown as its one diagnostic (``unmask.cli.usage``)."""
    from unmask.cli.usage import Usage

    # a group run without its subcommand shows its help, as click does (exit 2)
    if isinstance(exc, (Usage, *_HELP_ERRORS)):
        return exc
    return Usage(exc)


class StdoutGuard(click.Group):
    """A group whose parsing and commands run ``guarded``, with ``output_status``."""

    output_status: ClassVar[int] = exitcodes.USAGE
    internal_status: ClassVar[int | None] = None  # None: an unexpected exception goes on

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # the programs' entry points call this with no arguments: their run ends without
        # the interpreter's teardown (``unmask.cli.finish``); a caller that passes any gets
        # click's ``main``, which raises ``SystemExit`` as it always did
        if args or kwargs:
            return self.main(*args, **kwargs)
        try:
            return self.main()
        except SystemExit as exc:
            from unmask.cli.finish import finish

            finish(exc)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            with guarded(self.output_status):
                return super().make_context(*args, **kwargs)
        except click.UsageError as exc:
            raise _usage(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with sticky(), guarded(self.output_status):
                return super().invoke(ctx)
        except click.UsageError as exc:
            if exc.ctx is None and ctx.invoked_subcommand:
                # click's parser raises some (`--out` without its value) with no context:
                # the subcommand's, for its usage line and its --help
                sub = self.get_command(ctx, ctx.invoked_subcommand)
                if sub is not None:
                    exc.ctx = click.Context(sub, info_name=ctx.invoked_subcommand, parent=ctx)
            raise _usage(exc) from None
        except (KeyboardInterrupt, Exception) as exc:
            # click would print `Aborted!` and exit 1, which reads as a finding; every
            # command documents 130 for an interrupted run (`unmask audit` says more first)
            if not is_interrupt(exc):
                self._internal(exc)
                raise
            # an object whose construction the signal cut short fails again in its
            # `__del__` at exit: noise after the one line that matters
            sys.unraisablehook = lambda _unraisable: None
            with contextlib.suppress(OSError):
                click.echo("interrupted", err=True)
            raise SystemExit(exitcodes.INTERRUPTED) from None

    def _internal(self, exc: BaseException) -> None:
        """A bug in a command: its one message and ``internal_status``, no traceback."""
        if self.internal_status is None or not isinstance(exc, Exception):
            return
        if isinstance(exc, _CLICKS):  # click's own ends: a usage error, an exit, an abort
            return
        from unmask.plumbing.diagnostics import internal_error, render_all

        with contextlib.suppress(OSError):
            click.echo(render_all([internal_error(exc)]), err=True)
        raise SystemExit(self.internal_status) from None
