"""The one small interface every solver backend implements.

Contract:
- a backend is opened once per *base* (a list of labelled conjuncts, ``Part``) and answers
  many checks on it incrementally (``Session.check``): never a fresh solver per query;
- a check conjoins the enabled parts, an optional query formula and optional atom
  assumptions, and answers ``Sat(model)``, ``Unsat(core)`` or ``Unknown(reason)``;
  ``Unknown`` (a timeout, a resource limit) is never read as sat or unsat;
- ``Sat.model`` holds exactly the atoms asked for in ``want`` (reading whole models is
  costly on large bases); ``Unsat.core`` is a subset of the enabled part labels that is
  unsatisfiable together with the query and the assumptions (not necessarily minimal);
- each backend owns its solver state (its own ``z3.Context`` or variable pool), a fixed
  seed and a per-check timeout, so sessions never interfere; a check may lower that
  timeout for itself (``timeout_ms``: what is left of the caller's deadline).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import field
from typing import Generic, TypeVar

from unmask.ir import Expr, Memo, atom_order, children
from unmask.plumbing.budget import tick
from unmask.plumbing.frozen import frozen

DEFAULT_TIMEOUT_MS = 60_000
# the backend a command uses when none is named, chosen by measurement (docs/performance.md)
DEFAULT_BACKEND = "sliced"
# per replay, for `check` and `audit`: no input, however wide, keeps a command past it
# (a cardinality over thousands of arguments on z3 took minutes); docs/security.md
DEFAULT_DEADLINE_MS = 60_000
DEFAULT_SEED = 0

# A part's label: the checker's ``PartId`` (unmask.checking.report), plain strings elsewhere
# (overlap.py). A backend only hashes and compares labels, and answers an unsat core with
# some of the labels it was given; ``Part`` keeps the caller's label type.
PartLabel = Hashable
L = TypeVar("L", bound=Hashable)
# a ``Part[PartId]`` is a ``Part[PartLabel]``: its label is read, never replaced
L_co = TypeVar("L_co", bound=Hashable, covariant=True)


@frozen
class Part(Generic[L_co]):
    """A named conjunct of a base: ``fact:ATOM``, ``constraint:NAME``, ``decision``, or for
    declared labels ``labels`` and ``decision:LABEL``."""

    label: L_co
    expr: Expr
    # its atoms in first-occurrence order, found once: the bases of a replay share their
    # parts, so every session and every component search reads this one index. Always
    # found from ``expr`` here (so ``replace`` cannot leave them stale); inside
    # ``parts_of`` over one memo for all the parts made, whose decisions share most nodes
    atoms: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        shared = _SHARED.get()
        found = atom_order(self.expr) if shared is None else atom_order(self.expr, *shared)
        object.__setattr__(self, "atoms", found)


# the memo the parts made by ``parts_of`` share, and how often each node is still to be
# read (None elsewhere: each part on its own)
_SHARED: ContextVar[tuple[Memo, dict[int, int]] | None] = ContextVar(
    "unmask_part_atoms", default=None
)


def parts_of(labelled: Iterable[tuple[L, Expr]]) -> list[Part[L]]:
    """A ``Part`` per ``(label, expr)``, their atoms found over one memo: each distinct
    node of all the expressions is visited once, however many parts share it, and its
    atoms are kept only until its last parent has read them."""
    made = list(labelled)
    token = _SHARED.set(({}, _uses([e for _, e in made])))
    try:
        return [Part(label, e) for label, e in made]
    finally:
        _SHARED.reset(token)  # the memo goes: it holds every node it met


def _uses(exprs: Sequence[Expr]) -> dict[int, int]:
    """How often each node's atoms will be read: once per distinct parent (a fold steps
    each node once) and once per expression asked."""
    uses: dict[int, int] = {}
    seen: set[int] = set()
    for e in exprs:
        uses[id(e)] = uses.get(id(e), 0) + 1
        stack = [e]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            kids = children(node)
            tick(len(kids) + 1)  # a caller's deadline cuts this walk too
            for c in kids:
                uses[id(c)] = uses.get(id(c), 0) + 1
                stack.append(c)
    return uses


@frozen
class Sat:
    model: Mapping[str, bool] = field(default_factory=dict)


@frozen
class Unsat:
    core: tuple[PartLabel, ...] = ()


@frozen
class Unknown:
    reason: str


Result = Sat | Unsat | Unknown


def spec(backend: Backend) -> str:
    """The name a backend is asked for by, and reported under: ``z3``, ``pysat:glucose4``."""
    return backend.name if not backend.option else f"{backend.name}:{backend.option}"


class Session(ABC):
    """A base opened on one backend; ``calls`` counts the solver calls made."""

    calls: int = 0

    @abstractmethod
    def check(
        self,
        query: Expr | None = None,
        *,
        enabled: Collection[PartLabel] | None = None,
        assume: Mapping[str, bool] | None = None,
        want: Sequence[str] = (),
        timeout_ms: int | None = None,
    ) -> Result:
        """Is (enabled parts) ∧ query ∧ assume satisfiable?

        ``enabled`` None means every part. ``assume`` pins atoms for this check only.
        ``timeout_ms`` limits this check alone (None: the backend's own timeout).
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release solver resources (idempotent)."""

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Backend(ABC):
    """A solver backend; ``option`` is the part after the colon in ``pysat:glucose4``."""

    name: str = ""
    # whether ``name:OPTION`` means something (a solver's name); ``create`` refuses it if not
    takes_option: bool = False

    def __init__(
        self,
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        seed: int = DEFAULT_SEED,
        option: str | None = None,
    ) -> None:
        self.timeout_ms = timeout_ms
        self.seed = seed
        self.option = option

    @abstractmethod
    def open(self, parts: Sequence[Part[PartLabel]], atoms: Sequence[str]) -> Session:
        """Open a session on the conjunction of ``parts``.

        ``atoms`` lists every atom that queries, assumptions or ``want`` may name, in
        declaration order (atoms absent from every part are free).
        """
