"""Checking one task of an audit: its replay read, checked and turned into a ``Result``.

Contract:
- ``Settings`` is everything a worker needs to check a task (plain data, so it reaches pool
  and Dask workers as it is); ``Result`` is one checked task: its result line (UTF-8 bytes
  ending in a newline, see ``records``), its ``unmask.checking.record.ResultRecord`` (what
  the summary, the HTML index and the JUnit file read), and when ``Settings.html`` asks for
  it the replay's HTML page (``unmask.render.html``), rendered here so pool workers render
  in parallel; the caller writes the files;
- ``audit_task(task, settings)`` checks one task (``unmask.checking.outcomes``) and never
  raises for a bad replay: every failure is an error record; ``died(task)`` is the error
  record of a replay whose checking killed its process;
- ``backend(settings)`` is the process's backend for these settings, made once and kept
  (a forked worker inherits it); ``page_name`` names a replay's HTML page.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any

from unmask.checking.formats import encode_line, error_line
from unmask.checking.record import ResultRecord
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, internal_error
from unmask.plumbing.frozen import frozen
from unmask.plumbing.interrupt import reraise_interrupt
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.replay.inputs import Task, load_task


@frozen
class Settings:
    backend: str
    timeout_ms: int
    limits: Limits = DEFAULT_LIMITS
    html: bool = False  # render each replay's HTML page
    deadline_ms: int | None = None  # per replay (see ``unmask.checking.explain.Deadline``)
    # `--protocol`: an ``unmask.replay.recheck.ProtocolFile`` every replay is checked against
    # instead of its own; plain data, so it reaches pool and Dask workers with the rest
    protocol: Any = None
    # `--calibration`: an ``unmask.review.calibration.Trust`` each page weighs its findings by
    trust: Any = None


@frozen
class Result:
    """One audited task: its result ``line``, its ``record`` (what the summary, the index
    and the JUnit file read of it), and with ``Settings.html`` a checked replay's HTML
    ``page`` (to be written as ``page_name(location, replay id)``)."""

    line: bytes
    record: ResultRecord
    page: str | None = None
    # with ``Settings.trust``: the protocol's (name, digest of its text), for the warning of
    # a calibration measured under another (a result line carries no digest)
    protocol: tuple[str, str] | None = None


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def page_name(location: str, replay_id: str) -> str:
    """The file name of a replay's HTML page: readable, and unique per input location."""
    digest = hashlib.sha256(location.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    stem = _UNSAFE.sub("-", replay_id).strip("-.")[:60] or "replay"
    return f"{stem}-{digest}.html"


_STATE: dict[str, Any] = {}


def backend(settings: Settings) -> Any:
    made = _STATE.get("backend")
    if made is None or _STATE.get("settings") != settings:
        from unmask.backends import create

        made = create(settings.backend, timeout_ms=settings.timeout_ms)
        _STATE["backend"] = made
        _STATE["settings"] = settings
    return made


def audit_task(task: Task, settings: Settings) -> Result:
    """Check one task; every failure becomes an error record."""
    from unmask.checking.outcomes import check_replay_line

    replay = None
    try:
        replay = load_task(task, settings.limits, settings.protocol)
        report, doc, line = check_replay_line(
            replay, backend(settings), task.location, deadline_ms=settings.deadline_ms
        )
    except UnmaskError as exc:
        return _failed(task, exc.diagnostics, settings)
    except RecursionError:
        d = Diagnostic(Code.LIMIT, "the replay is nested too deeply to check", file=task.location)
        return _failed(task, [d], settings)
    except Exception as exc:  # one broken replay must not stop the batch
        reraise_interrupt(exc)
        return _failed(task, [internal_error(exc, file=task.location)], settings)
    page = None
    if settings.html:
        from unmask.render import html

        page = html.render(report, replay, trust=settings.trust)
    record = ResultRecord.of(doc)  # the record of the line written, as when read back
    if settings.trust is None:
        return Result(line, record, page)
    from unmask.review.calibration import digest_text

    text = replay.protocol.text
    return Result(line, record, page, (replay.protocol.name, digest_text(text) if text else ""))


def _failed(task: Task, diags: Iterable[Diagnostic], settings: Settings | None = None) -> Result:
    pf = None if settings is None else settings.protocol
    line = error_line(task.location, list(diags), None if pf is None else pf.recheck())
    return Result(encode_line(line), ResultRecord.of(line))


def died(task: Task, settings: Settings | None = None) -> Result:
    """The error record of a replay whose checking kills the process running it."""
    what = "the process checking this replay died (a crash in the solver?)"
    return _failed(task, [internal_error(file=task.location, what=what)], settings)
