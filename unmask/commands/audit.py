"""`unmask audit PATH...`: check many replays, one result line each, and summarise the run.

Contract: results go to ``--out`` (JSON Lines, in input order, each line written whole and
flushed as soon as it and every earlier one are done); ``--resume`` keeps the complete lines
already there and audits only the rest. The summary goes to stderr as text (``--quiet``
drops it) and to ``--summary-json``. Exit statuses (docs/audit.md): 0 done, gate not
tripped; 1 ``--fail-on`` tripped by a VIOLATED replay; 3 ``--fail-on unknown`` tripped by an
UNKNOWN or invalid replay; 4 no valid replay at all; 2 usage; 130 interrupted.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import IO, Any

import click

from unmask.commands._options import timeout_option
from unmask.diagnostics import Diagnostic, UnmaskError, render_all
from unmask.limits import Limits, click_options

DEFAULT_BACKEND = "sliced"  # chosen by measurement: docs/performance.md

EXIT_OK = 0
EXIT_VIOLATED = 1
EXIT_USAGE = 2
EXIT_UNKNOWN = 3
EXIT_INVALID = 4
EXIT_INTERRUPTED = 130


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
    if summary.valid == 0:
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
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="worker processes (0: one per CPU)",
)
@click.option(
    "--backend",
    default=DEFAULT_BACKEND,
    show_default=True,
    help="sliced, z3, pysat[:SOLVER] or truthtable; reports are the same on each",
)
@timeout_option()
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
    backend: str,
    timeout_ms: int,
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
    from unmask import audit
    from unmask.backends import create

    for p in paths:
        if p != audit.STDIN and not os.path.exists(p):
            _usage(f"no such file or directory `{p}`")
    if paths.count(audit.STDIN) > 1:
        _usage("`-` (stdin) may be given once")
    if resume and out == "-":
        _usage("`--resume` needs `--out FILE`", help="results on stdout cannot be resumed")
    try:
        create(backend, timeout_ms=timeout_ms)
    except UnmaskError as exc:
        click.echo(render_all(exc.diagnostics), err=True)
        raise SystemExit(EXIT_USAGE) from None
    except ImportError as exc:
        _usage(f"backend `{backend}` cannot be loaded: {exc}")
    if jobs == 0:
        jobs = os.cpu_count() or 1

    if html_dir is not None:
        try:
            os.makedirs(html_dir, exist_ok=True)
        except OSError as exc:
            _usage(f"cannot create `{html_dir}`: {(exc.strerror or 'error').lower()}")
    junit_out = None
    if junit is not None:
        try:
            junit_out = audit.JUnitWriter(junit)
        except OSError as exc:
            _usage(f"cannot write `{junit}`: {(exc.strerror or 'error').lower()}")

    summary = audit.Summary()
    rows: list[dict[str, Any]] = []  # the HTML index (only with --html)

    def carry(obj: dict[str, Any]) -> None:
        summary.add(audit.view(obj))
        if html_dir is not None:
            rows.append(audit.index_row(obj))
        if junit_out is not None:
            junit_out.add(audit.resumed_testcase(obj))

    done = None
    if resume:
        try:
            done = audit.read_done(out, carry)
        except audit.ResumeError as exc:
            _usage(
                f"`{out}` line {exc.line} {exc.message}; it is not an audit result file",
                help="resume only into the output of an earlier `unmask audit`",
            )
        except OSError as exc:
            _usage(f"cannot read `{out}`: {(exc.strerror or 'error').lower()}")

    show_progress = sys.stderr.isatty() if progress is None else progress
    total = None
    if show_progress:
        total = audit.count_tasks(paths, limits)
    tasks = audit.iter_tasks(paths, limits)
    if done:
        tasks = audit.skip_done(tasks, done)
    settings = audit.Settings(backend, timeout_ms, limits, html_dir, junit is not None)

    try:
        sink = sys.stdout.buffer if out == "-" else open(out, "ab" if resume else "wb")  # noqa: SIM115
    except OSError as exc:
        _usage(f"cannot write `{out}`: {(exc.strerror or 'error').lower()}")
    bar = Progress(sys.stderr, total) if show_progress else None
    already = summary.total

    def emit(task: Any, line: bytes, v: dict[str, Any], extra: dict[str, Any]) -> None:
        sink.write(line)
        sink.flush()
        summary.add(v)
        if "row" in extra:
            rows.append(extra["row"])
        if junit_out is not None and "junit" in extra:
            junit_out.add(extra["junit"])
        if bar is not None:
            bar.update(summary.total, summary.overall["VIOLATED"])

    if bar is not None:
        bar.update(already, summary.overall["VIOLATED"], force=True)
    previous = _install_sigterm()
    try:
        audit.run_audit(tasks, settings, emit, jobs)
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        _close(sink, out)
        with contextlib.suppress(OSError):  # what is done is reported, like the lines
            if junit_out is not None:
                junit_out.finish()
            if html_dir is not None:
                _write_index(html_dir, summary, rows, backend)
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
    _close(sink, out)

    try:
        if junit_out is not None:
            junit_out.finish()
        if html_dir is not None:
            _write_index(html_dir, summary, rows, backend)
    except OSError as exc:
        _usage(f"cannot write the report files: {(exc.strerror or 'error').lower()}")
    if summary_json:
        import json

        try:
            with open(summary_json, "w", encoding="utf-8") as fh:
                json.dump(summary.to_json(), fh, ensure_ascii=False, indent=2)
                fh.write("\n")
        except OSError as exc:
            _usage(f"cannot write `{summary_json}`: {(exc.strerror or 'error').lower()}")
    if not quiet:
        click.echo(summary.render_text(), err=True)
    raise SystemExit(gate_status(summary, fail_on))


def _write_index(html_dir: str, summary: Any, rows: list, backend: str) -> None:
    from unmask import audit
    from unmask.render import html

    mf = summary.most_failing()
    fails = " and ".join(mf["dimensions"]) if mf["dimensions"] else "none"
    cells = summary.cells()
    extra = {
        "backend": backend,
        "invalid inputs": summary.overall["INVALID"],
        "fails most often": f"{fails} ({mf['replays']} replays)",
        **{text: cells[key] for key, text in audit.CELL_TEXT.items()},
    }
    page = html.render_index(
        {"title": "unmask audit", "total": summary.total, "extra": extra}, rows
    )
    with open(os.path.join(html_dir, "index.html"), "w", encoding="utf-8") as fh:
        fh.write(page)


def _close(sink: Any, out: str) -> None:
    with contextlib.suppress(OSError):
        sink.flush()
    if out != "-":
        sink.close()


def _install_sigterm() -> Any:
    """SIGTERM stops the run like Ctrl-C: whole lines only, then a clean exit."""
    import signal

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        return signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread (embedded use): leave it alone
        return None


def _restore_sigterm(previous: Any) -> None:
    import signal

    if previous is not None:
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGTERM, previous)
