"""`unmask compare OLD NEW`: is the new version of a protocol stricter, looser or the same?

Contract: OLD and NEW are `.proto` files or protocol IR JSON, grounded at one shared scope
(``--members``/``--domain``, as `unmask analyze`). Formats: text, json. Exit statuses: 0
equivalent, 1 different, 3 a relation the solver could not decide (and nothing else
different; also a relation ``--deadline-ms``, default 60 s, left undecided), 4 invalid
input, 2 usage. With ``--fail-if looser`` the status answers only
"does NEW give the label ``--label`` (default `PASS`, else OLD's first label) on some
assignment where OLD does not?": 1 yes, 0 no, 3 undecided; ``--fail-if stricter`` the
reverse. The gate's decision is printed on stderr, one line (``gate --fail-if looser:
failed (exit 1): NEW gives `PASS` where OLD does not: a = TRUE, …``), whatever the format.
"""

from __future__ import annotations

import json
import sys

import click

from unmask.backends.base import DEFAULT_DEADLINE_MS
from unmask.commands._options import (
    backend_option,
    click_options,
    deadline_option,
    format_option,
    open_backend,
    timeout_option,
)
from unmask.commands.analyze import (
    ANALYSIS_DEADLINE_HELP,
    BACKEND_HELP,
    DEFAULT_BACKEND,
    domain_option,
    fail,
    load_or_exit,
    members_option,
)
from unmask.plumbing import exitcodes
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic
from unmask.plumbing.limits import Limits


@click.command(name="compare")
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
@members_option()
@domain_option()
@backend_option(BACKEND_HELP, DEFAULT_BACKEND)
@format_option(("text", "json"))
@click.option(
    "--fail-if",
    "fail_if",
    type=click.Choice(("looser", "stricter")),
    help="exit 1 only when a replay could pass under NEW what it failed under OLD (looser: "
    "--label, a requirement, its coverage or a grounding pair), or the reverse (stricter)",
)
@click.option("--label", help="the label --fail-if asks about (default PASS, else the first)")
@timeout_option()
@deadline_option(DEFAULT_DEADLINE_MS, ANALYSIS_DEADLINE_HELP.replace("questions", "relations"))
@click_options
def command(
    old: str,
    new: str,
    members: int,
    domain_opts: tuple[str, ...],
    backend: str,
    fmt: str,
    fail_if: str | None,
    label: str | None,
    timeout_ms: int,
    deadline_ms: int,
    limits: Limits,
) -> None:
    """Compare two versions of a protocol, label by label and requirement by requirement."""
    solver = open_backend(backend, timeout_ms)
    loaded_old, loaded_new = load_or_exit((old, new), members, domain_opts, limits)
    p_old, p_new = loaded_old.protocol, loaded_new.protocol
    if fail_if is not None:
        if label is None:
            label = "PASS" if "PASS" in p_old.labels else p_old.labels[0]
        if label not in p_old.labels or label not in p_new.labels:
            fail(
                [
                    Diagnostic(
                        Code.USAGE,
                        f"label `{label}` is not declared by both protocols",
                        help=f"OLD declares {', '.join(p_old.labels)}; "
                        f"NEW declares {', '.join(p_new.labels)}",
                    )
                ],
                exitcodes.USAGE,
            )
    elif label is not None:
        fail([Diagnostic(Code.USAGE, "`--label` needs `--fail-if`")], exitcodes.USAGE)
    from unmask.analysis.compare import compare, gate, text

    scope = loaded_new.scope if loaded_new.scope.domains else loaded_old.scope
    from unmask.checking.explain import Deadline

    result = compare(p_old, p_new, solver, scope, (old, new), Deadline(deadline_ms))
    from unmask.plumbing.safe import finish, lines

    if fmt == "json":
        click.echo(finish("json", json.dumps(result.to_json(), ensure_ascii=False, indent=2)))
    else:
        click.echo(lines(text(result)), nl=False)
    if fail_if is not None:
        assert label is not None
        status, line = gate(result, fail_if, label)
        click.echo(lines(line + "\n"), nl=False, err=True)
        sys.exit(status)
    sys.exit(result.exit_code)
