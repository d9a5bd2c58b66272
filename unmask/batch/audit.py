"""A whole audit from Python: paths and options in, every output written, a summary out.

Contract:
- ``audit(paths, options)`` checks every replay ``paths`` name (``inputs``) with ``run``
  (``options.jobs`` processes) or ``cluster`` (``options.dask``) and writes: the result
  lines to ``out`` (a file, ``-`` for standard output, None for none) in input order,
  each whole and flushed with its batch; with ``resume``, the complete lines already in
  ``out`` are kept (``resume``) and only the rest are audited; the HTML pages and index
  (``html``), the JUnit file (``junit``) and the summary (``summary_json``), each whole
  or not at all; a progress line on ``progress`` (a text stream) when one is given. It
  returns an ``Outcome``: the ``Summary`` of every line in ``out`` (carried over or new)
  and its ``hints``;
- every result, new or carried over, reaches the summary, the index and the JUnit file as
  its ``unmask.checking.record.ResultRecord`` and nothing else, so a resumed run writes the files a
  fresh run writes, byte for byte; a record whose protocol base is inconsistent adds the
  hint that ``unmask analyze`` says why;
- refused before anything is written, as ``AuditError`` (an ``UnmaskError``, its message
  naming options as the command line spells them): a path that does not exist, ``-``
  twice, ``resume`` without an ``out`` file, an output that is an input, ``jobs`` with
  ``dask``, ``partition`` without it, a ``dask`` that cannot be used, a file to resume
  that is not audit results or whose lines were checked against another protocol than
  ``protocol`` (``--protocol``; None: each replay's own). A file that cannot be written
  raises ``OutputError``; a backend that cannot be made, what ``unmask.backends.create``
  raises;
- Ctrl-C, and SIGTERM while it runs (from the main thread; the old handler is put back),
  stop the run with every line written whole and the index and JUnit file written for
  what is done, and raise ``Interrupted`` (a ``KeyboardInterrupt`` with the summary); a
  Dask cluster that fails raises ``ClusterFailed``. Both say how to continue.

The progress line is written by hand, not by ``click.progressbar``: that one hides itself
whenever its stream is not a terminal, where ``--progress`` must show it (a CI log), and
it has no place for the violations so far.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from unmask.backends.base import DEFAULT_BACKEND, DEFAULT_DEADLINE_MS, DEFAULT_TIMEOUT_MS
from unmask.batch import files, run, tuning
from unmask.batch import resume as resuming
from unmask.batch.summary import Summary
from unmask.batch.task import Result, Settings, page_name
from unmask.checking.record import ResultRecord, same_protocol
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.outputs import OutputError, cannot_write, reason, write_text
from unmask.replay import inputs

BROKEN_PROTOCOL_HINT = "`unmask analyze` shows why the protocol contradicts itself"


@frozen
class AuditOptions:
    """Everything ``unmask audit`` takes besides its paths, with its defaults (but no
    results file: ``out`` None writes none)."""

    backend: str = DEFAULT_BACKEND
    timeout_ms: int = DEFAULT_TIMEOUT_MS  # per solver call
    deadline_ms: int | None = DEFAULT_DEADLINE_MS  # per replay
    limits: Limits = DEFAULT_LIMITS
    jobs: int = 1  # worker processes; 0: one per CPU
    dask: str | None = None  # a scheduler's address, or `local[:N]`
    partition: int | None = None  # with dask: replays per Dask task
    out: str | None = None  # the results, JSON Lines; `-`: standard output
    resume: bool = False  # keep the lines already in `out`, audit the rest
    summary_json: str | None = None
    html: str | None = None  # a folder: one page per replay and index.html
    junit: str | None = None
    progress: IO[str] | None = None  # where the progress line goes
    # `--protocol`: an ``unmask.replay.recheck.ProtocolFile`` to check every replay against
    protocol: Any = None
    # `--calibration`: an ``unmask.review.calibration.Trust``; the summary, index, pages and JUnit
    # file weigh findings by it (the result lines never carry it)
    trust: Any = None


@frozen
class Outcome:
    """What an audit found: the summary of every result line, and what to say besides."""

    summary: Summary
    hints: tuple[str, ...] = ()


class AuditError(UnmaskError):
    """The audit cannot start as asked (a usage error: exit 2 on the command line)."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped the run; ``summary`` counts the lines written."""

    def __init__(self, summary: Summary, message: str) -> None:
        super().__init__(message)
        self.summary = summary
        self.message = message


class ClusterFailed(UnmaskError):
    """The Dask cluster failed during the run; ``after`` says how to continue."""

    def __init__(self, diagnostics: Sequence[Diagnostic], after: str) -> None:
        super().__init__(diagnostics)
        self.after = after


def _usage(message: str, help: str | None = None) -> AuditError:
    return AuditError([Diagnostic(Code.USAGE, message, help=help)])


def _mixed(out: str, line: int, theirs: tuple[str, str] | None, pf: Any) -> AuditError:
    """Resuming with another ``--protocol`` than the lines already there were checked
    against: refused, since one file would mix results of two protocols."""

    def what(identity: tuple[str, str] | None) -> str:
        if identity is None:
            return "each replay's own protocol"
        return f"protocol `{identity[0]}` ({identity[1][:19]})"

    now = None if pf is None else (pf.name, pf.digest)
    return _usage(
        f"`{out}` line {line} was checked against {what(theirs)}, but this run checks "
        f"against {what(now)}",
        help="resume with the `--protocol` of the run that wrote the file (or none), "
        "or give another `--out`",
    )


def _complete(out: str | None) -> str:
    """What a stopped run says of its results, and how to continue them."""
    go_on = f"; continue with `--resume --out {out}`" if out not in (None, "-") else ""
    return "every line written is complete" + go_on


def audit(paths: Sequence[str], options: AuditOptions | None = None) -> Outcome:
    """Audit the replays ``paths`` name, as ``unmask audit`` does (see the module)."""
    options = options or AuditOptions()
    paths = tuple(paths)
    jobs = validate(paths, options)
    if options.dask is None:
        return _Run(paths, options, jobs).go(None)
    from unmask.batch import cluster

    try:
        with cluster.open_cluster(options.dask) as client:
            return _Run(paths, options, 1).go(client)
    except cluster.Unavailable as exc:
        raise _usage(exc.message, exc.hint) from None


def validate(paths: tuple[str, ...], options: AuditOptions) -> int:
    """The number of worker processes to run, or ``AuditError`` saying why not to start."""
    for p in paths:
        if p != inputs.STDIN and not os.path.exists(p):
            from unmask.plumbing.files import near_path

            raise _usage(f"no such file or directory `{p}`", help=near_path(p))
    if paths.count(inputs.STDIN) > 1:
        raise _usage("`-` (stdin) may be given once")
    if options.resume and options.out in (None, "-"):
        raise _usage("`--resume` needs `--out FILE`", help="results on stdout cannot be resumed")
    _no_output_is_an_input(paths, options)
    from unmask.backends import create

    create(options.backend, timeout_ms=options.timeout_ms)  # else each replay an error
    if options.jobs < 0:
        raise _usage(f"`--jobs {options.jobs}` is not a number of processes")
    jobs = options.jobs or os.cpu_count() or 1
    if options.dask is not None and jobs != 1:
        raise _usage(
            "give `--jobs` or `--dask`, not both", help="`--dask local:N` runs N processes"
        )
    if options.partition is not None and options.dask is None:
        raise _usage("`--partition` needs `--dask`")
    return jobs


def _no_output_is_an_input(paths: tuple[str, ...], options: AuditOptions) -> None:
    for option, target in (
        ("--out", options.out),
        ("--summary-json", options.summary_json),
        ("--junit", options.junit),
    ):
        if target is not None and target != "-":
            source = input_named(target, paths)
            if source is not None:
                raise _usage(
                    f"`{option} {target}` would overwrite the input `{source}`",
                    help="write the output to a file that is not read by the audit",
                )


def input_named(target: str, paths: tuple[str, ...]) -> str | None:
    """The input that ``target`` is (or, for a ``*.json`` file, lies below), or None."""
    real = os.path.realpath(target)
    for p in paths:
        if p == inputs.STDIN:
            continue
        if os.path.isdir(p):
            tree = os.path.realpath(p).rstrip(os.sep) + os.sep
            if real.endswith(".json") and real.startswith(tree):
                return p
        elif real == os.path.realpath(p):
            return p
        else:
            with contextlib.suppress(OSError):
                if os.path.samefile(target, p):
                    return p
    return None


def page_href(record: ResultRecord) -> str:
    """The file name of a result's HTML page (none for an error record)."""
    if record.error is not None:
        return ""
    return page_name(record.location, record.replay or "")


@dataclass(slots=True)
class _Run:
    """One audit's outputs while it runs: every result goes through ``take``."""

    paths: tuple[str, ...]
    options: AuditOptions
    jobs: int
    summary: Summary = field(default_factory=Summary)
    rows: list[dict[str, Any]] = field(default_factory=list)  # the HTML index
    broken: bool = False  # a protocol that contradicts itself was met
    junit: files.JUnitFile | None = None
    sink: Any = None
    bar: Progress | None = None

    def go(self, client: Any) -> Outcome:
        """Run the audit (on ``client``'s cluster, or locally when None), every output."""
        o = self.options
        self.summary.trust = o.trust
        tasks = self._open(client)
        try:
            with _sigterm_stops():
                self._check_all(tasks, client)
        except KeyboardInterrupt:
            self._stop()
            with contextlib.suppress(UnmaskError):  # what is done is reported, like the lines
                self._finish()
            message = f"interrupted after {self.summary.total} results; {_complete(o.out)}"
            raise Interrupted(self.summary, message) from None
        if self.bar is not None:
            self.bar.update(self.summary.total, self.summary.overall["VIOLATED"], force=True)
            self.bar.close()
        try:
            self._close(strict=True)
        except OSError as exc:
            raise self._lost(exc) from None
        self._finish()
        if o.summary_json:
            import json

            from unmask.plumbing.safe import finish

            body = json.dumps(self.summary.to_json(), ensure_ascii=False, indent=2)
            text = finish("json", body) + "\n"
            write_text(o.summary_json, text)
        return Outcome(self.summary, (BROKEN_PROTOCOL_HINT,) if self.broken else ())

    def _open(self, client: Any) -> Iterator[Any]:
        """Every output opened (the lines to resume carried over), and the tasks left."""
        o = self.options
        if o.html is not None:
            try:
                os.makedirs(o.html, exist_ok=True)
            except OSError as exc:
                raise OutputError([cannot_write(o.html, exc)]) from None
        self.junit = files.JUnitFile(o.junit) if o.junit is not None else None
        done = self._resume()
        total = inputs.count_tasks(self.paths, o.limits) if o.progress is not None else None
        if done:
            tasks: Iterator[Any] = resuming.skip_done(inputs.iter_tasks(self.paths, o.limits), done)
        elif client is None:
            tasks = run.inputs_for(self.paths, o.limits, self.jobs)
        else:
            tasks = inputs.iter_tasks(self.paths, o.limits)
        self.sink = self._open_sink()
        if o.progress is not None:
            self.bar = Progress(o.progress, total)
            self.bar.update(self.summary.total, self.summary.overall["VIOLATED"], force=True)
        return tasks

    def _check_all(self, tasks: Iterator[Any], client: Any) -> None:
        o = self.options
        settings = Settings(
            o.backend,
            o.timeout_ms,
            o.limits,
            html=o.html is not None,
            deadline_ms=o.deadline_ms,
            protocol=o.protocol,
            trust=o.trust,
        )
        if client is None:
            run.run_audit(tasks, settings, self._emit, self.jobs, self._settle, self.summary)
            return
        from unmask.batch import cluster

        try:
            cluster.run_audit(
                tasks,
                settings,
                self._emit,
                client,
                partition=o.partition,
                settle=self._settle,
                summary=self.summary,
            )
        except cluster.ClusterError as exc:
            self._stop()
            diag = Diagnostic(
                Code.CLUSTER, f"the dask cluster failed: {exc.message}", notes=(f"`{exc.detail}`",)
            )
            raise ClusterFailed([diag], _complete(o.out)) from None

    def _resume(self) -> Any:
        """The locations already in ``out`` (their records carried over), or None."""
        out = self.options.out
        if not self.options.resume or out is None:
            return None

        pf = self.options.protocol
        lines = 0

        def carry(obj: dict[str, Any]) -> None:
            nonlocal lines
            lines += 1
            record = ResultRecord.from_line(obj)
            if not same_protocol(record.recheck, pf):
                raise _mixed(out, lines, None if record.recheck is None else record.recheck[:2], pf)
            self.summary.add(record)
            self._take(record)

        try:
            return resuming.read_done(out, carry, self.options.limits)
        except resuming.ResumeError as exc:
            raise _usage(
                f"`{out}` is not an audit result file: line {exc.line} {exc.message}",
                help="resume only into the output of an earlier `unmask audit`",
            ) from None
        except OSError as exc:
            raise _usage(f"cannot read `{out}`: {reason(exc)}") from None
        except AuditError:
            raise  # a line checked against another protocol: said as it is
        except UnmaskError as exc:  # the file is not a regular file (unmask.plumbing.files)
            raise _usage(exc.diagnostics[0].message) from None

    def _open_sink(self) -> Any:
        out = self.options.out
        if out is None:
            return None
        if out == "-":
            return sys.stdout.buffer
        try:
            mode = "ab" if self.options.resume else "wb"
            return open(out, mode, buffering=tuning.RESULTS_BUFFER)
        except OSError as exc:
            raise OutputError([cannot_write(out, exc)]) from None

    def _take(self, record: ResultRecord) -> None:
        """What every result, new or carried over, gives the outputs besides its line."""
        self.broken = self.broken or record.protocol_contradicts_itself
        if self.options.html is not None:
            from unmask.render import html

            self.rows.append(html.index_row(record, page_href(record), self.options.trust))
        if self.junit is not None:
            from unmask.render import junit

            self.junit.add(junit.case(record, trust=self.options.trust))

    def _emit(self, task: Any, result: Result) -> None:
        if self.sink is not None:
            try:
                self.sink.write(result.line)
            except OSError as exc:
                raise self._lost(exc) from None
        self._take(result.record)
        if result.protocol is not None:
            self.summary.digests.add(result.protocol)
        if result.page is not None and self.options.html is not None:
            files.write_page(self.options.html, page_href(result.record), result.page)
        if self.bar is not None:
            self.bar.update(self.summary.total, self.summary.overall["VIOLATED"])

    def _settle(self) -> None:  # whole lines out after every batch, for readers and resume
        if self.sink is not None:
            try:
                self.sink.flush()
            except OSError as exc:
                raise self._lost(exc) from None

    def _finish(self) -> None:
        if self.junit is not None:
            self.junit.finish()
        if self.options.html is not None:
            index = self.summary.index_summary(self.options.backend)
            files.write_index(self.options.html, index, self.rows)
            # an earlier run's pages that this run did not write would sit beside the new
            # index as if they were results of this run
            files.remove_stale_pages(self.options.html, {r["href"] for r in self.rows})

    def _stop(self) -> None:
        """A run cut short: the progress line cleared, the results closed quietly."""
        if self.bar is not None:
            self.bar.close()
        self._close()

    def _lost(self, exc: OSError) -> Exception:
        """After a failed write of the results: the error to raise, the file closed quietly.
        Standard output's own error goes on unchanged: it is the entry point's to report,
        the same for every command (``unmask.cli.stdout``)."""
        if self.options.out == "-":
            return exc
        with contextlib.suppress(OSError):
            self.sink.close()
        return OutputError([cannot_write(str(self.options.out), exc)])

    def _close(self, strict: bool = False) -> None:
        """Flush and close the results; ``strict``: a failure is raised, not ignored."""
        if self.sink is None:
            return
        try:
            self.sink.flush()
            if self.options.out != "-":
                self.sink.close()
        except OSError:
            if strict:
                raise


@contextlib.contextmanager
def _sigterm_stops() -> Iterator[None]:
    """SIGTERM stops the run like Ctrl-C: whole lines only, then a clean exit."""
    import signal

    from unmask.plumbing.interrupt import interrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread (embedded use): leave it alone
        previous = None
    try:
        yield
    finally:
        if previous is not None:
            with contextlib.suppress(ValueError):
                signal.signal(signal.SIGTERM, previous)


class Progress:
    """One self-overwriting status line: count, rate, ETA, violations."""

    def __init__(self, stream: IO[str], total: int | None) -> None:
        self.stream = stream
        self.total = total
        self.start = time.monotonic()
        self.last = 0.0
        self.width = 0

    def update(self, done: int, violated: int, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < 0.1:
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        rate = done / elapsed
        count = f"{done}/{self.total}" if self.total is not None else f"{done}"
        text = f"audited {count}  {rate:.1f}/s  {violated} violated"
        if self.total is not None and rate > 0 and done < self.total:
            eta = int((self.total - done) / rate)
            text += f"  eta {eta // 60}:{eta % 60:02d}"
        pad = max(0, self.width - len(text))
        self.width = len(text)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()

    def close(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
