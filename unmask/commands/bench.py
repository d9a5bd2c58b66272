"""`unmask bench`: measure audit throughput against the naive baseline (``unmask.bench``).

Contract: prints every figure as it is measured (per-replay time with its spread over the
repeats, replays per second, solver calls per replay, the ratio to the baseline, growth
with the number of claims, ``--jobs 1`` against ``--jobs 2``, peak memory of few against
many replays) and whether each target holds; ``--json FILE`` writes the same figures.
``--quick`` scales everything down to seconds. Exit 0, or 2 for usage errors; a missed
target is a finding, not a failure.
"""

from __future__ import annotations

import json

import click

from unmask.diagnostics import Diagnostic, UnmaskError, render_all


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        sizes = ()
    if not sizes or any(n < 1 for n in sizes):
        raise click.BadParameter(f"expected claim counts such as `2,20,200`, found `{text}`")
    return sizes


@click.command("bench")
@click.option("--quick", is_flag=True, help="a scaled-down run that takes seconds")
@click.option("--sizes", help="claim counts to measure, e.g. 2,20,200,2000")
@click.option("--runners", help="baseline and backends to compare, e.g. baseline,sliced,z3")
@click.option("--repeats", type=click.IntRange(min=1), help="repeats of each measurement")
@click.option("--budget-s", type=click.FloatRange(min=0.01), help="seconds per measurement")
@click.option("--backend", help="backend for the --jobs and memory figures [default: sliced]")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--no-jobs", is_flag=True, help="skip the --jobs 1 vs --jobs 2 figure")
@click.option("--no-memory", is_flag=True, help="skip the peak-memory figure")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), help="write the figures")
def command(
    quick: bool,
    sizes: str | None,
    runners: str | None,
    repeats: int | None,
    budget_s: float | None,
    backend: str | None,
    seed: int,
    no_jobs: bool,
    no_memory: bool,
    json_out: str | None,
) -> None:
    """Measure audit throughput against a naive fresh-solver-per-query baseline."""
    from unmask.backends import available, create
    from unmask.bench import Plan, run

    kw: dict = {"seed": seed}
    if sizes:
        kw["sizes"] = _sizes(sizes)
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
        try:
            create(name)
        except UnmaskError as exc:
            click.echo(render_all(exc.diagnostics), err=True)
            raise SystemExit(2) from None
    if "runners" not in kw:
        kw["runners"] = ("baseline", *(b for b in available() if b != "baseline"))
    plan = Plan.quick(**kw) if quick else Plan(**kw)
    figures = run(plan, lambda line: click.echo(line))
    if json_out:
        try:
            with open(json_out, "w", encoding="utf-8") as fh:
                json.dump(figures, fh, indent=2)
                fh.write("\n")
        except OSError as exc:
            message = f"cannot write `{json_out}`: {(exc.strerror or 'error').lower()}"
            click.echo(render_all([Diagnostic("usage", message)]), err=True)
            raise SystemExit(2) from None
