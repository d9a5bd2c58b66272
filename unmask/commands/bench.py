"""`unmask bench`: measure audit throughput against the naive baseline (``unmask.bench``).

Contract: prints every figure as it is measured (per-replay time with its spread over the
repeats, replays per second, solver calls per replay, the ratio to the baseline, growth
with the number of claims, ``--jobs 1`` against ``--jobs 2``, peak memory of few against
many replays); ``--json FILE`` writes the same figures. The targets they are read against
are in ``docs/performance.md``. ``--quick`` scales everything down to seconds. Every
numeric option has a range (``MAX_CLAIMS``, ``MAX_SIZES``, ``MAX_REPEATS``,
``MAX_BUDGET_S``, ``MAX_SEED``; seconds must be finite): outside it, or not a number, is
a usage error. Every target is printed PASS or MISS with its margin (``targets``), and
``--quick`` marks them as quick. Exit 0 whatever the figures are, 2 for usage errors, 3
when a measurement failed (a child process exited otherwise than expected or did not
print its report, or two ways of auditing wrote different results): one diagnostic, and
no figure of that measurement.
"""

from __future__ import annotations

import json
import math

import click

from unmask.bench.workload import WORKLOADS
from unmask.plumbing import exitcodes
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, render_all

# a replay of n claims has 2n + 1 atoms and takes memory and time that grow with n (the
# baseline's more than linearly): ten times the default plan's largest size is the most
MAX_CLAIMS = 20_000
MAX_SIZES = 16
MAX_REPEATS = 100
MAX_BUDGET_S = 86_400.0  # one day per measurement
MAX_SEED = 2**32 - 1


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        sizes = ()
    if not sizes or any(not 1 <= n <= MAX_CLAIMS for n in sizes) or len(sizes) > MAX_SIZES:
        raise click.BadParameter(
            f"expected up to {MAX_SIZES} claim counts from 1 to {MAX_CLAIMS} such as "
            f"`2,20,200`, found `{text[:60]}`"
        )
    return sizes


class _Seconds(click.ParamType):
    """A finite number of seconds within a range (``nan`` and ``inf`` are refused)."""

    name = "seconds"

    def __init__(self, low: float, high: float) -> None:
        self.low, self.high = low, high

    def convert(self, value, param, ctx):  # type: ignore[no-untyped-def]
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not (math.isfinite(number) and self.low <= number <= self.high):
            self.fail(f"expected seconds from {self.low:g} to {self.high:g}, found `{value}`")
        return number


@click.command("bench")
@click.option("--quick", is_flag=True, help="a scaled-down run that takes seconds")
@click.option(
    "--sizes",
    callback=lambda _ctx, _param, value: None if value is None else _sizes(value),
    help=f"claim counts to measure, e.g. 2,20,200,2000 (each at most {MAX_CLAIMS})",
)
@click.option("--runners", help="baseline and backends to compare, e.g. baseline,sliced,z3")
@click.option("--repeats", type=click.IntRange(1, MAX_REPEATS), help="repeats of each measurement")
@click.option("--budget-s", type=_Seconds(0.01, MAX_BUDGET_S), help="seconds per measurement")
@click.option("--backend", help="backend for the --jobs and memory figures [default: sliced]")
@click.option(
    "--workload",
    type=click.Choice(WORKLOADS),
    default="mixed",
    show_default=True,
    help="mixed claims (some false or unknown), or every claim supported",
)
@click.option("--seed", type=click.IntRange(0, MAX_SEED), default=0, show_default=True)
@click.option("--no-jobs", is_flag=True, help="skip the --jobs 1 vs --jobs 2 figure")
@click.option(
    "--jobs-claims",
    type=click.IntRange(1, MAX_CLAIMS),
    default=2,
    show_default=True,
    help="claims per replay of the --jobs figure",
)
@click.option("--no-memory", is_flag=True, help="skip the peak-memory figure")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), help="write the figures")
def command(
    quick: bool,
    sizes: tuple[int, ...] | None,
    runners: str | None,
    repeats: int | None,
    budget_s: float | None,
    backend: str | None,
    workload: str,
    seed: int,
    no_jobs: bool,
    jobs_claims: int,
    no_memory: bool,
    json_out: str | None,
) -> None:
    """Measure audit throughput against a naive fresh-solver-per-query baseline."""
    from unmask.backends import available
    from unmask.backends.base import DEFAULT_TIMEOUT_MS
    from unmask.bench import Plan, run
    from unmask.bench.processes import BenchError
    from unmask.commands._options import open_backend

    kw: dict = {"seed": seed, "workload": workload, "jobs_claims": jobs_claims}
    if sizes:
        kw["sizes"] = sizes
    if runners:
        kw["runners"] = tuple(r.strip() for r in runners.split(",") if r.strip())
    if repeats:
        kw["repeats"] = repeats
    if budget_s:
        kw["budget_s"] = budget_s
    if backend:
        kw["backend"] = backend
    if no_jobs:
        kw["jobs_replays"] = 0
    if no_memory:
        kw["memory_small"] = 0
    for name in [*kw.get("runners", ()), kw.get("backend", "sliced")]:
        if name == "baseline":
            continue
        open_backend(name, DEFAULT_TIMEOUT_MS)
    if "runners" not in kw:
        kw["runners"] = ("baseline", *(b for b in available() if b != "baseline"))
    plan = Plan.quick(**kw) if quick else Plan(**kw)
    from unmask.batch.tuning import batch_heap

    batch_heap()  # as `unmask audit` runs: the figures are the audit's
    try:
        figures = run(plan, lambda line: click.echo(line))
    except BenchError as exc:
        diag = Diagnostic(
            Code.BENCH_FAILED,
            str(exc),
            help="no figure of this run can be trusted; is `unmask` installed for this python?",
        )
        click.echo(render_all([diag]), err=True)
        raise SystemExit(exitcodes.UNKNOWN) from None
    if json_out:
        try:
            with open(json_out, "w", encoding="utf-8") as fh:
                json.dump(figures, fh, indent=2)
                fh.write("\n")
        except OSError as exc:
            message = f"cannot write `{json_out}`: {(exc.strerror or 'error').lower()}"
            click.echo(render_all([Diagnostic(Code.USAGE, message)]), err=True)
            raise SystemExit(2) from None
