"""`unmask crosscheck REPLAY.json`: run several backends and compare their whole reports.

Contract: each backend in ``--backends`` (default: every registered one) checks the replay
through ``unmask.api.check``, deciding every check itself (``closed_form=False``); the first
of them then checks it once more the way ``unmask check`` does, settling without a call the
checks the facts alone decide (compared under the name ``closed form``). The reports are
compared as JSON (``Report.to_json``) without the ``backend`` field. Exit 0 when all of them
are the same, 1 at the first difference (printed with its JSON path, both values and both
names), 3 when fewer than two backends could run (nothing compared), 4 for an invalid replay
(a file that is missing, unreadable, a directory or not a regular file included; a protocol
whose decisions can both hold, with ``unmask check``'s diagnostic), 2 for
usage errors and for stdout that cannot be written.
A backend that refuses the replay with a diagnostic (the truth-table backend over its atom
limit) is reported as skipped and is not a disagreement; a backend that fails otherwise is.
"""

from __future__ import annotations

import json
from typing import Any

import click

from unmask.backends import available
from unmask.commands._options import (
    click_options,
    deadline_option,
    echo,
    open_backend,
    timeout_option,
)
from unmask.plumbing import exitcodes
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, internal_error, render_all
from unmask.plumbing.interrupt import reraise_interrupt
from unmask.plumbing.limits import Limits
from unmask.plumbing.safe import json_text, printable


def first_difference(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first place (JSON path, value in a, value in b) where a and b differ, or None.

    Objects are walked in a's key order, then keys only b has; arrays index by index.
    """
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            sub = f"{path}.{key}" if path else key
            if key not in a or key not in b:
                return sub, a.get(key, _MISSING), b.get(key, _MISSING)
            found = first_difference(a[key], b[key], sub)
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):  # noqa: B905 - lengths compared below
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        if len(a) != len(b):
            return f"{path}.length", len(a), len(b)
        return None
    if a != b or type(a) is not type(b):
        return path or "$", a, b
    return None


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


_MISSING = _Missing()


def _show(value: Any) -> str:
    if value is _MISSING:
        return "(absent)"
    text = json_text(json.dumps(value, ensure_ascii=False, sort_keys=False))
    return text if len(text) <= 300 else text[:297] + "..."


def _fail(diags: tuple[Diagnostic, ...], code: int) -> None:
    click.echo(render_all(diags), err=True)
    raise SystemExit(code)


def _usage(message: str) -> None:
    _fail((Diagnostic(code=Code.USAGE, message=message),), exitcodes.USAGE)


@click.command("crosscheck")
# a plain string: the reader refuses what is not a readable regular file (exit 4, not usage)
@click.argument("replay", metavar="REPLAY.json")
@click.option(
    "--backends",
    default=",".join(available()),
    show_default=True,
    help="comma-separated backends to compare, e.g. z3,pysat:glucose4,truthtable",
)
@timeout_option("per solver call; a timeout shows up as a difference (SOLVER_UNKNOWN)")
@deadline_option()
@click_options
def command(
    replay: str, backends: str, timeout_ms: int, deadline_ms: int | None, limits: Limits
) -> None:
    """Run several backends on one replay and compare their reports."""
    names = [n.strip() for n in backends.split(",") if n.strip()]
    if len(names) < 2:
        _usage("`--backends` needs at least two backends to compare")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        _usage(f"backend `{dup}` is listed twice in `--backends`")
    solvers = [(name, open_backend(name, timeout_ms)) for name in names]

    from unmask.api import check
    from unmask.checking.outcomes import refuse_overlaps
    from unmask.commands._options import protocol_texts
    from unmask.replay.load import load_replay, render_error

    try:
        case = load_replay(replay, limits)
    except UnmaskError as exc:
        click.echo(render_error(exc), err=True)
        raise SystemExit(exitcodes.INVALID) from None
    try:
        # decisions that can both hold: no backend may check it, as `unmask check` says
        refuse_overlaps(case, solvers[0][1])
    except UnmaskError as exc:
        click.echo(render_all(exc.diagnostics, protocol_texts(exc.diagnostics, limits)), err=True)
        raise SystemExit(exitcodes.INVALID) from None

    from unmask.plumbing.jsonload import show

    rid = show(case.id, 200)
    reports: list[tuple[str, dict[str, Any]]] = []
    for name, solver in solvers:
        try:
            # the backend decides every check itself, even those the facts alone settle
            report = check(case, solver, deadline_ms=deadline_ms, closed_form=False).to_json()
        except UnmaskError as exc:
            notes = "; ".join(
                d.message + (f" ({d.help})" if d.help else "") for d in exc.diagnostics
            )
            click.echo(printable(f"{name}: skipped: {notes}"), err=True)
            continue
        except Exception as exc:  # a crash in one backend is a disagreement, not a traceback
            reraise_interrupt(exc)
            echo(f"{rid}: backend `{name}` failed")
            click.echo(render_all([internal_error(exc)]), err=True)
            raise SystemExit(exitcodes.VIOLATED) from None
        report.pop("backend", None)
        reports.append((name, report))

    ran = [n for n, _ in reports]
    if len(reports) < 2:
        only = f"only `{ran[0]}` ran" if ran else "no backend ran"
        echo(f"{rid}: {only}; nothing to compare")
        raise SystemExit(exitcodes.UNKNOWN)
    ref_name, ref = reports[0]
    # and the report `unmask check` writes, where checks the facts settle make no call
    usual = check(case, dict(solvers)[ref_name], deadline_ms=deadline_ms).to_json()
    usual.pop("backend", None)
    reports.append(("closed form", usual))
    for name, other in reports[1:]:
        found = first_difference(ref, other)
        if found:
            path, mine, theirs = found
            echo(f"{rid}: backends disagree at `{path}`")
            echo(f"  {ref_name}: {_show(mine)}")
            echo(f"  {name}: {_show(theirs)}")
            raise SystemExit(exitcodes.VIOLATED)
    overall = ref.get("overall")
    echo(f"{rid}: {', '.join(ran)} agree (overall {overall})")
    raise SystemExit(exitcodes.OK)
