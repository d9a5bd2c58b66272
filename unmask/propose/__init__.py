"""Proposers: rules and models that fill in annotations, registered by name.

Contract: a proposer declares its ``name``, ``kind`` (``rule`` or ``model``), ``version`` and
``fills``, the roles and tasks it can fill (``Fill("context", "claim-support")``). ``create``
gives an instance by name; an unknown name raises ``UnmaskError`` with a "did you mean" hint.
Every proposal a proposer makes carries ``by`` (``{"kind", "name": "NAME/VERSION", "reviewed":
false}``), quotes that are exact slices of their source, and a confidence in [0, 1]; below the
caller's threshold it abstains, and the atom stays UNKNOWN. The registry holds import paths,
not modules, so a run imports only the proposer it uses. ``register`` refuses to overwrite a
name unless told to replace it.
"""

from __future__ import annotations

import difflib
import importlib
from typing import ClassVar

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen

__all__ = ["By", "Fill", "Proposer", "available", "create", "describe", "register"]


@frozen
class By:
    """Who made an annotation: never a reviewed human, so ``reviewed`` starts false."""

    kind: str  # "rule" | "model"
    name: str  # "NAME/VERSION"
    reviewed: bool = False

    def to_json(self) -> dict:
        return {"kind": self.kind, "name": self.name, "reviewed": self.reviewed}


@frozen
class Fill:
    """One thing a proposer can fill: atoms of ``role`` (judge, context, procedure) for ``task``."""

    role: str
    task: str


# the task `unmask propose claims` asks for
CLAIM_SUPPORT = Fill("context", "claim-support")


class Proposer:
    """What every proposer declares; the work itself is a method named after its task."""

    name: ClassVar[str]
    kind: ClassVar[str]  # "rule" | "model"
    version: ClassVar[int]
    fills: ClassVar[tuple[Fill, ...]]
    summary: ClassVar[str]
    # what a proposal's number is called where it is printed: "confidence" only for a
    # probability the proposer can back with a measurement on the data it is used on
    score: ClassVar[str] = "confidence"

    @property
    def by(self) -> By:
        return By(self.kind, f"{self.name}/{self.version}")


_REGISTRY: dict[str, str | type[Proposer]] = {
    "claims-lexical": "unmask.propose.claims:LexicalClaims",
    "answer-citations": "unmask.propose.passages:AnswerCitations",
    "judge-rules": "unmask.propose.judge:JudgeRules",
    "model-chat": "unmask.propose.model:ModelChat",
}


def register(name: str, target: str | type[Proposer], *, replace: bool = False) -> None:
    """Add a proposer under ``name`` (``"module:Class"`` or a class)."""
    if name in _REGISTRY and not replace:
        raise UnmaskError(
            [
                Diagnostic(
                    Code.DUPLICATE_PROPOSER,
                    f"a proposer named `{name}` is already registered",
                    help="pass replace=True to replace it",
                )
            ]
        )
    _REGISTRY[name] = target


def available(fill: Fill | None = None) -> tuple[str, ...]:
    """Registered names, or only those that declare ``fill`` (this imports each of them)."""
    if fill is None:
        return tuple(_REGISTRY)
    return tuple(n for n in _REGISTRY if fill in _resolve(_REGISTRY[n]).fills)


def _resolve(target: str | type[Proposer]) -> type[Proposer]:
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)
    return target


def create(name: str, fill: Fill | None = None) -> Proposer:
    """The proposer registered as ``name``; with ``fill``, one that declares it."""
    if name not in _REGISTRY:
        close = difflib.get_close_matches(name, list(_REGISTRY), n=1, cutoff=0.5)
        choices = "the proposers are " + ", ".join(f"`{n}`" for n in _REGISTRY)
        raise UnmaskError(
            [
                Diagnostic(
                    Code.UNKNOWN_PROPOSER,
                    f"unknown proposer `{name}`",
                    help=f"did you mean `{close[0]}`? {choices}" if close else choices,
                )
            ]
        )
    cls = _resolve(_REGISTRY[name])
    if fill is not None and fill not in cls.fills:
        able = ", ".join(f"`{n}`" for n in available(fill)) or "none"
        raise UnmaskError(
            [
                Diagnostic(
                    Code.PROPOSER_CANNOT_FILL,
                    f"proposer `{name}` does not fill {fill.role} atoms for `{fill.task}`",
                    help=f"proposers that do: {able}",
                )
            ]
        )
    return cls()


def describe() -> list[dict]:
    """Every registered proposer with what it fills, for `unmask propose list`."""
    out = []
    for name, target in _REGISTRY.items():
        cls = _resolve(target)
        out.append(
            {
                "name": name,
                "kind": cls.kind,
                "version": cls.version,
                "fills": [{"role": f.role, "task": f.task} for f in cls.fills],
                "summary": cls.summary,
            }
        )
    return out
