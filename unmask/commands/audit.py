"""`unmask audit PATH...`: check many replays, one result line each, and summarise the run.

Contract: results go to ``--out`` (JSON Lines, in input order, each line written whole and
flushed as soon as it and every earlier one are done); ``--resume`` keeps the complete lines
already there and audits only the rest. The summary goes to stderr as text (``--quiet``
drops it) and to ``--summary-json``. No output may be one of the inputs. Exit statuses
(docs/audit.md): 0 done, gate not tripped; 1 ``--fail-on`` tripped by a VIOLATED replay; 3
``--fail-on unknown`` tripped by an UNKNOWN or invalid replay; 4 no valid replay at all; 2
usage or a file that cannot be written; 130 interrupted.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import click

from unmask import exitcodes
from unmask.batch.inputs import STDIN
from unmask.commands._options import (
    DEFAULT_DEADLINE_MS,
    backend_option,
    click_options,
    deadline_option,
    open_backend,
    timeout_option,
)
from unmask.diagnostics import Diagnostic, UnmaskError, render_all
from unmask.limits import Limits
from unmask.outputs import OutputError, cannot_write, reason

if TYPE_CHECKING:
    from unmask.batch.run import Settings

DEFAULT_BACKEND = "sliced"  # chosen by measurement: docs/performance.md
# one replay that would take minutes must not hold up the batch (docs/audit.md)

EXIT_OK = exitcodes.OK
EXIT_VIOLATED = exitcodes.VIOLATED
EXIT_USAGE = exitcodes.USAGE
EXIT_UNKNOWN = exitcodes.UNKNOWN
EXIT_INVALID = exitcodes.INVALID
EXIT_INTERRUPTED = exitcodes.INTERRUPTED

# more worker processes than this only compete for the same cores (and memory)
MAX_JOBS = max(4, 4 * (os.cpu_count() or 1))


def _usage(message: str, help: str | None = None) -> None:
    click.echo(render_all([Diagnostic("usage", message, help=help)]), err=True)
    raise SystemExit(EXIT_USAGE)


class Progress:
    """One self-overwriting status line on a terminal: count, rate, ETA, violations."""

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


def gate_status(summary: Any, fail_on: str | None) -> int:
    # 4 means invalid input, as for `unmask check`: a valid replay the backend could not
    # decide is not one (`check` exits 3 for it), so a run of only those is not exit 4
    if summary.valid_inputs == 0:
        return EXIT_INVALID
    if fail_on is None:
        return EXIT_OK
    if summary.overall["VIOLATED"]:
        return EXIT_VIOLATED
    if fail_on == "unknown" and (summary.overall["UNKNOWN"] or summary.overall["INVALID"]):
        return EXIT_UNKNOWN
    return EXIT_OK


@click.command("audit")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--out",
    "out",
    metavar="FILE",
    default="-",
    show_default=True,
    help="results, one JSON line per replay in input order (`-` for stdout)",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=0, max=MAX_JOBS),
    default=1,
    show_default=True,
    help=f"worker processes, at most {MAX_JOBS} (4 per CPU); 0: one per CPU",
)
@click.option(
    "--dask",
    "dask_spec",
    metavar="ADDRESS",
    default=None,
    help="check on a Dask cluster: a scheduler's address (tcp://HOST:PORT), or `local[:N]` "
    "for N local worker processes (needs the `dask` extra; docs/scale.md)",
)
@click.option(
    "--partition",
    type=click.IntRange(min=1, max=1_000_000),
    default=None,
    help="with --dask: replays per Dask task [default: 256]",
)
@backend_option(
    "sliced, z3, pysat[:SOLVER] or truthtable; reports are the same on each", DEFAULT_BACKEND
)
@timeout_option()
@deadline_option(DEFAULT_DEADLINE_MS)
@click.option("--resume", is_flag=True, help="keep the lines already in --out, audit the rest")
@click.option("--summary-json", type=click.Path(dir_okay=False), help="write the summary here")
@click.option(
    "--fail-on",
    type=click.Choice(["violated", "unknown"]),
    default=None,
    help="exit 1 on a VIOLATED replay; with `unknown` also 3 on an UNKNOWN or invalid one",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="progress line on stderr [default: only when stderr is a terminal]",
)
@click.option("-q", "--quiet", is_flag=True, help="no summary text on stderr")
@click.option(
    "--html",
    "html_dir",
    type=click.Path(file_okay=False),
    help="write one HTML page per replay and an index.html here",
)
@click.option("--junit", type=click.Path(dir_okay=False), help="write a JUnit XML file here")
@click_options
def command(
    paths: tuple[str, ...],
    out: str,
    jobs: int,
    dask_spec: str | None,
    partition: int | None,
    backend: str,
    timeout_ms: int,
    deadline_ms: int,
    resume: bool,
    summary_json: str | None,
    fail_on: str | None,
    progress: bool | None,
    quiet: bool,
    html_dir: str | None,
    junit: str | None,
    limits: Limits,
) -> None:
    """Check many replays (files, directories, JSON Lines, `-`) and summarise the run."""

    for p in paths:
        if p != STDIN and not os.path.exists(p):
            _usage(f"no such file or directory `{p}`")
    if paths.count(STDIN) > 1:
        _usage("`-` (stdin) may be given once")
    if resume and out == "-":
        _usage("`--resume` needs `--out FILE`", help="results on stdout cannot be resumed")
    for option, target in (("--out", out), ("--summary-json", summary_json), ("--junit", junit)):
        if target is not None and target != "-":
            source = input_named(target, paths)
            if source is not None:
                _usage(
                    f"`{option} {target}` would overwrite the input `{source}`",
                    help="write the output to a file that is not read by the audit",
                )
    open_backend(backend, timeout_ms)  # a wrong name is a usage error before anything runs
    if jobs == 0:
        jobs = os.cpu_count() or 1
    if dask_spec is not None and jobs != 1:
        _usage("give `--jobs` or `--dask`, not both", help="`--dask local:N` runs N processes")
    if partition is not None and dask_spec is None:
        _usage("`--partition` needs `--dask`")
    from unmask.batch.run import Settings

    settings = Settings(
        backend, timeout_ms, limits, html_dir is not None, junit is not None, deadline_ms
    )
    outputs = _Outputs(out, resume, summary_json, html_dir, junit, quiet, progress, fail_on)
    try:
        if dask_spec is None:
            _run(paths, jobs, settings, outputs)
        else:
            _run_on_dask(dask_spec, partition, paths, settings, outputs)
    except OutputError as exc:
        click.echo(render_all(exc.diagnostics), err=True)
        raise SystemExit(EXIT_USAGE) from None


def _run_on_dask(
    spec: str, partition: int | None, paths: tuple[str, ...], settings: Settings, outputs: _Outputs
) -> None:
    """``_run`` with its replays checked on a Dask cluster (imported only here)."""
    from unmask.batch import cluster

    out = outputs.out
    try:
        with cluster.open_cluster(spec) as client:
            # the cluster's workers take the place of --jobs (which must be 1 with --dask)
            _run(paths, 1, settings, outputs, dask=(client, partition))
    except cluster.Unavailable as exc:
        _usage(exc.message, help=exc.hint)
    except cluster.ClusterError as exc:
        click.echo(
            render_all(
                [
                    Diagnostic(
                        "cluster",
                        f"the dask cluster failed: {exc.message}",
                        notes=(f"`{exc.detail}`",),
                    )
                ]
            )
            + "\nevery line written is complete"
            + (f"; continue with `--resume --out {out}`" if out != "-" else ""),
            err=True,
        )
        raise SystemExit(EXIT_USAGE) from None


def input_named(target: str, paths: tuple[str, ...]) -> str | None:
    """The input that ``target`` is (or, for a ``*.json`` file, lies below), or None."""
    real = os.path.realpath(target)
    for p in paths:
        if p == STDIN:
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


@dataclass(frozen=True, slots=True)
class _Outputs:
    """Where an audit writes its results, summary, pages and JUnit file, and what it says."""

    out: str
    resume: bool
    summary_json: str | None
    html_dir: str | None
    junit: str | None
    quiet: bool
    progress: bool | None
    fail_on: str | None


def _run(
    paths: tuple[str, ...],
    jobs: int,
    settings: Settings,  # how each replay is checked
    outputs: _Outputs,
    dask: tuple[Any, int | None] | None = None,  # a Dask client, replays per partition
) -> None:
    from unmask.batch import files, inputs, run
    from unmask.batch import resume as resuming
    from unmask.batch.summary import Summary, view
    from unmask.render import html
    from unmask.render import junit as junit_render

    out, resume, html_dir, junit = outputs.out, outputs.resume, outputs.html_dir, outputs.junit
    limits = settings.limits
    if html_dir is not None:
        try:
            os.makedirs(html_dir, exist_ok=True)
        except OSError as exc:
            raise OutputError([cannot_write(html_dir, exc)]) from None
    junit_out = files.JUnitFile(junit) if junit is not None else None

    summary = Summary()
    rows: list[dict[str, Any]] = []  # the HTML index (only with --html)
    broken_proto: set[bool] = set()  # True once a replay met a protocol that contradicts itself

    def carry(obj: dict[str, Any]) -> None:
        summary.add(view(obj))
        if html_dir is not None:
            rows.append(html.line_row(obj, _href(obj)))
        if junit_out is not None:
            junit_out.add(junit_render.case_from_line(obj))

    done = None
    if resume:
        try:
            done = resuming.read_done(out, carry)
        except resuming.ResumeError as exc:
            _usage(
                f"`{out}` is not an audit result file: line {exc.line} {exc.message}",
                help="resume only into the output of an earlier `unmask audit`",
            )
        except OSError as exc:
            _usage(f"cannot read `{out}`: {reason(exc)}")

    progress = outputs.progress
    show_progress = sys.stderr.isatty() if progress is None else progress
    total = None
    if show_progress:
        total = inputs.count_tasks(paths, limits)
    if done:
        tasks = resuming.skip_done(inputs.iter_tasks(paths, limits), done)
    elif dask is None:
        tasks = run.inputs_for(paths, limits, jobs)
    else:
        tasks = inputs.iter_tasks(paths, limits)
    try:
        sink = (
            sys.stdout.buffer
            if out == "-"
            else open(out, "ab" if resume else "wb", buffering=run.RESULTS_BUFFER)  # noqa: SIM115
        )
    except OSError as exc:
        raise OutputError([cannot_write(out, exc)]) from None
    bar = Progress(sys.stderr, total) if show_progress else None
    already = summary.total

    def emit(task: Any, result: Any) -> None:
        try:
            sink.write(result.line)
        except OSError as exc:
            raise _lost(sink, out, exc) from None
        broken_proto.add(b'"proto":"INCONSISTENT"' in result.line)
        if result.row is not None:
            rows.append(result.row)
            if result.page is not None:
                files.write_page(html_dir, result.row, result.page)  # type: ignore[arg-type]
        if junit_out is not None and result.case is not None:
            junit_out.add(result.case)
        if bar is not None:
            bar.update(summary.total, summary.overall["VIOLATED"])

    def settle() -> None:  # whole lines out after every batch, for readers and resume
        try:
            sink.flush()
        except OSError as exc:
            raise _lost(sink, out, exc) from None

    def finish() -> None:
        if junit_out is not None:
            junit_out.finish()
        if html_dir is not None:
            files.write_index(html_dir, summary.index_summary(settings.backend), rows)

    if bar is not None:
        bar.update(already, summary.overall["VIOLATED"], force=True)
    previous = _install_sigterm()
    run.batch_heap()
    try:
        if dask is None:
            run.run_audit(tasks, settings, emit, jobs, settle, summary)
        else:
            from unmask.batch import cluster

            client, partition = dask
            cluster.run_audit(
                tasks, settings, emit, client, partition=partition, settle=settle, summary=summary
            )
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        _close(sink, out)
        with contextlib.suppress(UnmaskError):  # what is done is reported, like the lines
            finish()
        click.echo(
            f"interrupted after {summary.total} results; every line written is complete"
            + (f"; continue with `--resume --out {out}`" if out != "-" else ""),
            err=True,
        )
        raise SystemExit(EXIT_INTERRUPTED) from None
    finally:
        _restore_sigterm(previous)
    if bar is not None:
        bar.update(summary.total, summary.overall["VIOLATED"], force=True)
        bar.close()
    try:
        _close(sink, out, strict=True)
    except OSError as exc:
        raise _lost(sink, out, exc) from None
    finish()
    if outputs.summary_json:
        import json

        from unmask.outputs import write_text
        from unmask.render.safe import finish

        text = finish("json", json.dumps(summary.to_json(), ensure_ascii=False, indent=2)) + "\n"
        write_text(outputs.summary_json, text)
    if not outputs.quiet:
        click.echo(summary.render_text(), err=True)
        if True in broken_proto:
            click.echo("help: `unmask analyze` shows why the protocol contradicts itself", err=True)
    raise SystemExit(gate_status(summary, outputs.fail_on))


def _href(obj: dict[str, Any]) -> str:
    from unmask.batch.run import page_name

    return page_name(str(obj.get("location")), str(obj.get("replay")))


def _lost(sink: Any, out: str, exc: OSError) -> Exception:
    """After a failed write of the results: the error to raise, the file closed quietly.
    Standard output's own error goes on unchanged: it is the entry point's to report, the
    same for every command (``unmask.cli.stdout``)."""
    if out == "-":
        return exc
    with contextlib.suppress(OSError):
        sink.close()
    return OutputError([cannot_write(out, exc)])


def _close(sink: Any, out: str, strict: bool = False) -> None:
    """Flush and close the results; ``strict``: a failure is raised, not ignored."""
    try:
        sink.flush()
        if out != "-":
            sink.close()
    except OSError:
        if strict:
            raise


def _install_sigterm() -> Any:
    """SIGTERM stops the run like Ctrl-C: whole lines only, then a clean exit."""
    import signal

    from unmask.interrupt import interrupt

    try:
        return signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread (embedded use): leave it alone
        return None


def _restore_sigterm(previous: Any) -> None:
    import signal

    if previous is not None:
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGTERM, previous)
