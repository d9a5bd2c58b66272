"""Solver backends, registered by name and imported only when used.

Contract: ``create("z3")``, ``create("pysat:glucose4", timeout_ms=...)`` give a
``Backend``; an unknown name raises ``UnmaskError`` with a "did you mean" hint.
``register`` adds a backend under a new name (``"module:Class"`` or a class) and refuses a
name already taken unless told ``replace=True``. The registry
holds import paths, not modules, so a CLI run pays the import time (z3 ~30 ms) only for
the backend it uses; the PySAT-based backends import PySAT only when they first make a
solver, which the sliced backend rarely needs for a small replay.
"""

from __future__ import annotations

import importlib

from unmask.backends.base import (
    DEFAULT_SEED,
    DEFAULT_TIMEOUT_MS,
    Backend,
    Part,
    Result,
    Sat,
    Session,
    Unknown,
    Unsat,
)
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError

__all__ = [
    "DEFAULT_SEED",
    "DEFAULT_TIMEOUT_MS",
    "Backend",
    "Part",
    "Result",
    "Sat",
    "Session",
    "Unknown",
    "Unsat",
    "available",
    "create",
    "register",
]

_REGISTRY: dict[str, str | type[Backend]] = {
    "z3": "unmask.backends.z3_backend:Z3Backend",
    "pysat": "unmask.backends.pysat_backend:PySatBackend",
    "truthtable": "unmask.backends.truthtable:TruthTableBackend",
    "sliced": "unmask.backends.sliced:SlicedBackend",
}


def register(name: str, target: str | type[Backend], *, replace: bool = False) -> None:
    if name in _REGISTRY and not replace:
        raise ValueError(f"a backend named `{name}` is already registered (pass replace=True)")
    _REGISTRY[name] = target


def available() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def _resolve(target: str | type[Backend]) -> type[Backend]:
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)
    return target


def _takes_option(name: str) -> bool:
    try:
        return _resolve(_REGISTRY[name]).takes_option
    except ImportError:  # its solver library is missing: it takes nothing here
        return False


def create(
    spec: str,
    *,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    seed: int = DEFAULT_SEED,
) -> Backend:
    name, _, option = spec.partition(":")
    if name not in _REGISTRY:
        import difflib  # only for a name that is wrong: not at every start-up

        close = difflib.get_close_matches(name, list(_REGISTRY), n=1, cutoff=0.5)
        choices = "the backends are " + ", ".join(f"`{n}`" for n in _REGISTRY)
        hint = f"did you mean `{close[0]}`? {choices}" if close else choices
        raise UnmaskError(
            [Diagnostic(code=Code.UNKNOWN_BACKEND, message=f"unknown backend `{name}`", help=hint)]
        )
    cls = _resolve(_REGISTRY[name])
    if option and not cls.takes_option:
        # `z3:x` ran as plain z3 and printed `backend z3:x`, as if `x` had meant something
        takers = ", ".join(f"`{n}:SOLVER`" for n in _REGISTRY if _takes_option(n))
        raise UnmaskError(
            [
                Diagnostic(
                    code=Code.UNKNOWN_BACKEND,
                    message=f"backend `{name}` takes no option, `{option}` was given",
                    help=f"write `{name}` alone; a solver is chosen after the colon in {takers}",
                )
            ]
        )
    return cls(timeout_ms=timeout_ms, seed=seed, option=option or None)
