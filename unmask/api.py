"""The library entry points: check a replay and get a ``Report``.

Contract: ``check`` accepts a validated ``Replay`` or a path to a replay file (loaded and
validated by ``unmask.replay``; invalid input raises ``UnmaskError`` with diagnostics);
the solver only sees the gold-free ``Case``; the gold label, and the replay's ``item`` and
``judge``, are added to the report afterwards. Backends are created through the registry
(``unmask.backends.create``). ``deadline_ms`` bounds the whole check of the replay
(loading it is not counted): past it the report is UNKNOWN with a ``deadline`` reason.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from unmask.backends import DEFAULT_SEED, DEFAULT_TIMEOUT_MS, Backend, create
from unmask.backends.base import spec
from unmask.checker import Case, check_case
from unmask.explain import Deadline
from unmask.limits import DEFAULT_LIMITS, Limits
from unmask.outcomes import check_case as remembered
from unmask.replaydata import Replay
from unmask.report import Report, dumps

__all__ = ["Case", "check", "check_case", "dumps", "load"]


def load(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> Replay:
    """Load and validate one replay file (raises ``UnmaskError`` when invalid)."""
    from unmask.replay import load_replay

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
    if deadline_ms is not None and deadline_ms <= 0:
        raise ValueError(f"deadline_ms must be positive, not {deadline_ms}")
    deadline = None if deadline_ms is None else Deadline(deadline_ms)
    report = remembered(
        Case.from_replay(replay),
        solver,
        backend_name=name,
        deadline=deadline,
        closed_form=closed_form,
    )
    # one copy, not two: the replay's own fields, which never reach the solver
    return replace(report, gold=replay.gold, item=replay.item, judge=replay.judge)
