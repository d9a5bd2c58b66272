"""The library entry points: check a replay and get a ``Report``.

Contract: ``check`` accepts a validated ``Replay`` or a path to a replay file (loaded and
validated by ``unmask.replay.load``; invalid input raises ``UnmaskError`` with diagnostics) and
checks it with ``unmask.checking.outcomes.check_replay``: the solver only sees the gold-free
``Case``; the gold label, and the replay's ``item`` and ``judge``, are added to the report
afterwards. Backends are created through the registry
(``unmask.backends.create``). ``deadline_ms`` bounds the whole check of the replay
(loading it is not counted): past it the report is UNKNOWN with a ``deadline`` reason.
``load_calibration`` reads a calibration file (``unmask calibrate``; invalid raises
``UnmaskError``) and ``weigh`` gives, per check of a report that is a finding or a passing
check resting on unreviewed readings, its ``Standing`` under it (confirmed, trusted or to
review, with the weakest reading's measure); ``unmask.render.render(fmt, report, replay,
trust=Trust(calibration, threshold))`` shows it in any format. The report never changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from unmask.backends import DEFAULT_SEED, DEFAULT_TIMEOUT_MS, Backend, create
from unmask.backends.base import spec
from unmask.checking.checker import Case, check_case
from unmask.checking.outcomes import check_replay
from unmask.checking.report import Report, dumps
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.replay.data import Replay

__all__ = ["Case", "check", "check_case", "dumps", "load", "load_calibration", "weigh"]


def load(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> Replay:
    """Load and validate one replay file (raises ``UnmaskError`` when invalid)."""
    from unmask.replay.load import load_replay

    return load_replay(Path(path), limits)


def check(
    replay: Replay | str | Path,
    backend: str | Backend = "z3",
    *,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    seed: int = DEFAULT_SEED,
    limits: Limits = DEFAULT_LIMITS,
    deadline_ms: int | None = None,
    closed_form: bool = True,
) -> Report:
    """Check one replay on one backend (``"z3"``, ``"pysat:glucose4"``, … or an instance).

    ``closed_form`` False sends every check to the backend, even those the facts alone
    settle without a call (the report is the same either way: crosschecks use it to test
    the backends themselves)."""
    if not isinstance(replay, Replay):
        replay = load(replay, limits)
    if isinstance(backend, str):
        name = backend
        solver = create(backend, timeout_ms=timeout_ms, seed=seed)
    else:
        solver = backend
        name = spec(solver)
    return check_replay(
        replay, solver, backend_name=name, deadline_ms=deadline_ms, closed_form=closed_form
    )


def load_calibration(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> Any:
    """Read a calibration file (``unmask.review.calibration.Calibration``; raises ``UnmaskError``
    with one diagnostic when it is not one)."""
    from unmask.review.calibration import read

    return read(str(path), limits)


def weigh(
    report: Report, replay: Replay | None = None, *, calibration: Any, trust: float = 0.9
) -> dict[str, Any]:
    """Each check's ``unmask.review.calibration.Standing`` under ``calibration`` and the lower
    bound ``trust``, by the check's key (``verdict``, ``requirement:ID``, ``coverage:ID``,
    ``grounding:JUDGE~CONTEXT``): every finding, and every passing check that rests on
    unreviewed readings; other checks are left out."""
    from unmask.render.view import Lookup, checks, trust_of
    from unmask.review.calibration import Trust

    look = Lookup(replay, Trust(calibration, trust))
    out = {}
    for c in checks(report):
        standing = trust_of(c.result, look)
        if standing is not None:
            out[c.key] = standing
    return out
