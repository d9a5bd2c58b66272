"""`unmask audit PATH...`: check many replays, one result line each, and summarise the run.

Contract: results go to ``--out`` (JSON Lines, in input order, each line written whole and
flushed as soon as it and every earlier one are done); ``--resume`` keeps the complete lines
already there and audits only the rest. The summary goes to stderr as text (``--quiet``
drops it) and to ``--summary-json``. No output may be one of the inputs. Exit statuses
(docs/audit.md): 0 done, gate not tripped; 1 ``--fail-on`` tripped by a VIOLATED replay
(``confirmed``: a confirmed finding; ``trusted``: a confirmed or trusted one, under
``--calibration``, which weighs the summary, index, pages and JUnit file); 3
``--fail-on unknown`` tripped by an UNKNOWN or invalid replay; 4 no valid replay at all; 2
usage or a file that cannot be written (or a ``--protocol`` file that cannot be read);
130 interrupted. A ``--protocol`` file that is not a valid protocol is exit 4, before
anything runs; a replay whose verdict it does not declare is an error record.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from unmask.backends.base import DEFAULT_BACKEND, DEFAULT_DEADLINE_MS
from unmask.commands._options import (
    backend_option,
    calibration_options,
    click_options,
    deadline_option,
    open_backend,
    protocol_option,
    protocol_or_exit,
    timeout_option,
    trust_or_exit,
)
from unmask.plumbing import exitcodes
from unmask.plumbing.diagnostics import UnmaskError, render_all
from unmask.plumbing.limits import Limits

EXIT_OK = exitcodes.OK
EXIT_VIOLATED = exitcodes.VIOLATED
EXIT_USAGE = exitcodes.USAGE
EXIT_UNKNOWN = exitcodes.UNKNOWN
EXIT_INVALID = exitcodes.INVALID
EXIT_INTERRUPTED = exitcodes.INTERRUPTED

# more worker processes than this only compete for the same cores (and memory)
MAX_JOBS = max(4, 4 * (os.cpu_count() or 1))


def gate_status(summary: Any, fail_on: str | None) -> int:
    # 4 means invalid input, as for `unmask check`: a valid replay the backend could not
    # decide is not one (`check` exits 3 for it), so a run of only those is not exit 4
    if summary.valid_inputs == 0:
        return EXIT_INVALID
    if fail_on is None:
        return EXIT_OK
    if fail_on in ("confirmed", "trusted"):
        # only findings a person or a measured reader stands behind trip this gate
        found = summary.findings.to_json(summary.trust)["replays"]
        settled = found["confirmed"] + (found.get("trusted", 0) if fail_on == "trusted" else 0)
        return EXIT_VIOLATED if settled else EXIT_OK
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
@protocol_option()
@timeout_option()
@deadline_option(DEFAULT_DEADLINE_MS)
@click.option("--resume", is_flag=True, help="keep the lines already in --out, audit the rest")
@click.option("--summary-json", type=click.Path(dir_okay=False), help="write the summary here")
@click.option(
    "--fail-on",
    type=click.Choice(["violated", "unknown", "confirmed", "trusted"]),
    default=None,
    help="exit 1 on a VIOLATED replay; with `unknown` also 3 on an UNKNOWN or invalid one; "
    "`confirmed`: only on a confirmed finding; `trusted` (needs --calibration): only on a "
    "confirmed or trusted one",
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
@calibration_options
@click_options
def command(
    paths: tuple[str, ...],
    out: str,
    jobs: int,
    dask_spec: str | None,
    partition: int | None,
    backend: str,
    against_path: str | None,
    timeout_ms: int,
    deadline_ms: int,
    resume: bool,
    summary_json: str | None,
    fail_on: str | None,
    progress: bool | None,
    quiet: bool,
    html_dir: str | None,
    junit: str | None,
    calibration_path: str | None,
    trust: float,
    limits: Limits,
) -> None:
    """Check many replays (files, directories, JSON Lines, `-`) and summarise the run.

    Results go to --out, the summary to stderr; exit 0 whatever the results unless --fail-on.
    --protocol FILE checks every replay against FILE, a new version of its protocol
    (`unmask compare OLD NEW` first), without rebuilding the replays."""
    from unmask.batch import audit
    from unmask.batch.tuning import batch_heap

    open_backend(backend, timeout_ms)  # an unknown or broken backend: exit 2 here
    against = protocol_or_exit(against_path, limits)
    needs = "`--fail-on trusted`" if fail_on == "trusted" else None
    weigh = trust_or_exit(calibration_path, trust, limits, needed_by=needs)
    show = sys.stderr.isatty() if progress is None else progress
    options = audit.AuditOptions(
        backend=backend,
        timeout_ms=timeout_ms,
        deadline_ms=deadline_ms,
        limits=limits,
        jobs=jobs,
        dask=dask_spec,
        partition=partition,
        out=out,
        resume=resume,
        summary_json=summary_json,
        html=html_dir,
        junit=junit,
        progress=sys.stderr if show else None,
        protocol=against,
        trust=weigh,
    )
    batch_heap()
    try:
        outcome = audit.audit(paths, options)
    except audit.Interrupted as exc:
        click.echo(exc.message, err=True)
        raise SystemExit(EXIT_INTERRUPTED) from None
    except audit.ClusterFailed as exc:
        click.echo(render_all(exc.diagnostics) + "\n" + exc.after, err=True)
        raise SystemExit(EXIT_USAGE) from None
    except UnmaskError as exc:  # a usage error, or a file that cannot be written
        click.echo(render_all(exc.diagnostics), err=True)
        raise SystemExit(EXIT_USAGE) from None
    if not quiet:
        click.echo(outcome.summary.render_text(), err=True)
        for hint in outcome.hints:
            click.echo(f"help: {hint}", err=True)
    raise SystemExit(gate_status(outcome.summary, fail_on))
