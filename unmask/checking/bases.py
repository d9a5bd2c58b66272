"""The three bases of a check (docs/semantics.md) and what the solver may see of a replay.

Contract:
- the solver sees only a ``Case``, built from a validated ``Replay``; ``Case`` has no gold
  field, so the gold label cannot reach any base (``unmask.api`` adds it to the report);
- F, B_proto, B_evid = F and B_all = B_proto ∧ F are lists of parts, each named by a
  ``PartId`` (``unmask.checking.report``), in a canonical order: ``fact:ATOM``, then
  ``constraint:NAME``, then for a binary protocol ``decision`` (V ⇔ D), for one that
  declares its labels ``labels`` (exactly one verdict variable holds) and
  ``decision:LABEL`` (V_L ⇔ D_L) per label (``base_parts``);
- what a protocol alone determines (its parts, their table, B_proto's state, the text of
  its grounding pairs, the checks on the facts it has settled) is made once per process
  for the last ``DERIVED_SIZE`` protocols, keyed by the protocol object (``unmask.replay.load``
  hands every replay of a batch the same one); its parts at their first use, their atoms
  over one memo (each distinct node once: linear in first-match labels), under the
  deadline of the check that uses them, and only whole;
- the verdict variables are ``$pass`` (binary) or ``$v:LABEL``: no identifier or family
  member can contain ``$``, so they never clash with a protocol atom.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from unmask.backends.base import Part, parts_of
from unmask.checking.closed import MAX_TABLE, Settled, Shape, TableBase, decision_shape, settle
from unmask.checking.report import PartId
from unmask.ir import (
    LABEL_PREFIX,
    VERDICT_ATOM,
    Expr,
    Protocol,
    iter_atoms,
    mk_atom,
    mk_card,
    mk_iff,
    mk_not,
)
from unmask.ir.text import expr_text
from unmask.plumbing.frozen import frozen
from unmask.replay.data import Annotation, Replay


def verdict_atoms(protocol: Protocol) -> list[str]:
    """The verdict variables, in label declaration order."""
    if not protocol.declared_labels:
        return [VERDICT_ATOM]
    return [f"{LABEL_PREFIX}{label}" for label in protocol.labels]


@frozen
class Case:
    """What the solver may see of a replay: deliberately no gold label."""

    id: str
    protocol: Protocol
    verdict: str
    annotations: tuple[Annotation, ...]
    translation: str = "valid"

    @classmethod
    def from_replay(cls, replay: Replay) -> Case:
        return cls(
            id=replay.id,
            protocol=replay.protocol,
            verdict=replay.verdict,
            annotations=tuple(replay.annotations),
            translation=replay.translation,
        )

    @property
    def facts(self) -> dict[str, bool]:
        """Pinned atoms (non-UNKNOWN annotations) in atom declaration order."""
        given = {a.atom: a.value for a in self.annotations}
        return {
            n: given[n] == "TRUE"
            for n in self.protocol.atom_names
            if given.get(n, "UNKNOWN") != "UNKNOWN"
        }

    @property
    def unannotated(self) -> tuple[str, ...]:
        seen = {a.atom for a in self.annotations}
        return tuple(n for n in self.protocol.atom_names if n not in seen)

    @property
    def unknown(self) -> tuple[str, ...]:
        marked = {a.atom for a in self.annotations if a.value == "UNKNOWN"}
        return tuple(n for n in self.protocol.atom_names if n in marked)


class Census:
    """What the checker reads of a case's annotations, in one pass: each annotation by its
    atom, the facts (``Case.facts``), the atoms left unannotated and those annotated
    UNKNOWN (``Case.unannotated``, ``Case.unknown``), and whether no annotation says who
    made it (``plain``)."""

    __slots__ = ("by_atom", "facts", "plain", "unannotated", "unknown")

    def __init__(self, case: Case) -> None:
        annotations = case.annotations
        self.by_atom = by_atom = {a.atom: a for a in annotations}
        self.plain = all(a.by is None for a in annotations)
        if len(by_atom) != len(annotations):
            # an atom annotated twice (a case made in code, never a validated replay):
            # the properties' own reading of it
            self.facts, self.unannotated, self.unknown = (
                case.facts,
                case.unannotated,
                case.unknown,
            )
            return
        facts: dict[str, bool] = {}
        unannotated: list[str] = []
        unknown: list[str] = []
        for name in case.protocol.atom_names:
            a = by_atom.get(name)
            if a is None:
                unannotated.append(name)
            elif a.value == "UNKNOWN":
                unknown.append(name)
            else:
                facts[name] = a.value == "TRUE"
        self.facts = facts
        self.unannotated = tuple(unannotated)
        self.unknown = tuple(unknown)


# --- bases ----------------------------------------------------------------------------------


def fact_parts(case: Case, facts: Mapping[str, bool] | None = None) -> list[Part]:
    """F: one part per fact (``facts``: the case's, when the caller has them already),
    each made once per protocol, atom and value (it depends on nothing else)."""
    made = _derived(case.protocol).fact_part
    return [made(name, value) for name, value in (case.facts if facts is None else facts).items()]


# a binary protocol's decision part, V ⇔ D
DECISION = PartId("decision")


def proto_parts(p: Protocol) -> list[Part]:
    """B_proto's parts, their atoms found over one memo (``parts_of``): under first-match
    every decision holds the chain of the earlier ones, so a walk per part was n^2 / 2."""
    parts: list[tuple[PartId, Expr]] = []
    seen: dict[str, int] = {}
    for c in p.constraints:
        # defensive: part ids must be unique for selectors, so a repeated name is numbered
        seen[c.name] = n = seen.get(c.name, 0) + 1
        parts.append((PartId("constraint", c.name, n), c.expr))
    if not p.declared_labels:
        assert p.decision is not None
        parts.append((DECISION, mk_iff(mk_atom(VERDICT_ATOM), p.decision)))
        return parts_of(parts)
    variables = [mk_atom(v) for v in verdict_atoms(p)]
    parts.append((PartId("labels"), mk_card("exactly", 1, variables)))
    for label, v in zip(p.labels, variables, strict=True):
        parts.append((PartId("decision", label), mk_iff(v, p.decision_for(label))))
    return parts_of(parts)


def base_parts(case: Case, facts: Mapping[str, bool] | None = None) -> dict[str, list[Part]]:
    """The three bases, each in canonical part order (``facts`` as for ``fact_parts``)."""
    evid, proto = fact_parts(case, facts), list(_derived(case.protocol).parts)
    return {"proto": proto, "evid": evid, "all": evid + proto}


class _Derived:
    """What a protocol alone determines, made once for all the replays that share it (a
    batch embeds one protocol in every replay; ``unmask.replay.load`` reads it once): its
    base parts, the table of those parts over every atom, the checks on the facts
    already settled (``unmask.checking.closed``), by the facts on the check's atoms, and the
    checker's results of those checks for replays without provenance."""

    __slots__ = (
        "_checks",
        "_fact_ids",
        "_fact_parts",
        "_lock",
        "_pair_atoms",
        "_pair_texts",
        "_pairs",
        "_parts",
        "_queries",
        "_shape",
        "_template",
        "_width",
        "atoms",
        "order",
        "proto_base",
        "protocol",
        "results",
        "room",
        "run_atoms",
        "settled",
        "verdict_exprs",
    )

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol  # kept alive: the cache is keyed by its identity
        # B_proto's parts and how many atoms they hold, made at their first use (``parts``)
        self._parts: tuple[Part, ...] | None = None
        self._width = 0
        self._lock = threading.Lock()
        # the protocol's atoms by declaration order, and every atom a base has (those and
        # the verdict's), in that order
        self.order = {n: i for i, n in enumerate(protocol.atom_names)}
        self.run_atoms = (*protocol.atom_names, *verdict_atoms(protocol))
        self._fact_ids: dict[str, PartId] = {}
        # a check's atoms by the ids of its query and witness expressions (the entry
        # holds them, so the ids stay theirs)
        self._checks: dict[tuple[int, ...], tuple[tuple[Expr, ...], list[str], frozenset[str]]]
        self._checks = {}
        self._fact_parts: dict[tuple[str, bool], Part] = {}
        self._pairs: tuple[tuple[Expr, str, str, str], ...] | None = None
        self._pair_atoms: tuple[tuple[str, ...] | None, ...] | None = None
        self._queries: dict[str, Expr] = {}  # φ_v by observed label
        self._shape: Shape | bool | None = False  # the decision's (False: not found yet)
        self.verdict_exprs = tuple(verdict_exprs(protocol))
        self._template: TableBase | bool | None = False
        # B_proto's state and, if inconsistent, its minimal conflict, once a solver proved
        # them (``unmask.checking.checker``; a state the clock cut short is not kept)
        self.proto_base: tuple[str, tuple[PartId, ...] | None] | None = None
        self._pair_texts: tuple[tuple[str, str], ...] | None = None
        self.settled: dict[tuple[int, tuple[bool | None, ...]], tuple[Expr, Settled | None]] = {}
        # a query's atoms in declaration order (None: one is not the protocol's), by its id
        self.atoms: dict[int, tuple[Expr, tuple[str, ...] | None]] = {}
        # the checker's results on the facts, by query, facts and coverage, for replays
        # whose annotations all lack ``by`` (``unmask.checking.checker``: what they may share)
        self.results: dict[tuple[Any, ...], tuple[Expr, Any]] = {}
        # room for a few fact patterns of every check a replay makes on the facts, so a
        # protocol with thousands of them does not clear the memo every replay
        checks = 2 * len(protocol.requirements) + len(protocol.grounding)
        self.room = min(SETTLED_MAX, max(SETTLED_SIZE, SETTLED_PER_CHECK * checks))

    @property
    def parts(self) -> tuple[Part, ...]:
        """B_proto's parts (``proto_parts``), made once, at their first use: under
        first-match with thousands of labels that is real work, which the checker does
        under the deadline of the check that needs them (``unmask.checking.checker``). A
        deadline that cuts it leaves nothing behind; the next use starts again."""
        got = self._parts
        if got is None:
            with self._lock:  # one thread makes them; another waits, then reads them
                got = self._parts
                if got is None:
                    got = tuple(proto_parts(self.protocol))
                    self._width = len(set().union(*(p.atoms for p in got)))
                    self._parts = got
        return got

    @property
    def proto_width(self) -> int:
        """How many atoms the protocol's parts hold: a base holds at least those."""
        if self._parts is None:
            _ = self.parts  # made now, with their width
        return self._width

    def settle(self, phi: Expr, atoms: list[str], facts: dict[str, bool]) -> Settled | None:
        """``unmask.checking.closed.settle``, remembered: it depends only on ``phi`` and the facts
        on its atoms (``atoms`` follow from ``phi`` and this protocol's order)."""
        # keyed by ``id(phi)``: the entry holds ``phi``, so no other query can take its id
        # while the entry lives
        key = (id(phi), tuple(facts.get(a) for a in atoms))
        got = self.settled.get(key)
        if got is not None:
            return got[1]
        found = settle(phi, atoms, facts)
        with _LOCK:
            if len(self.settled) >= self.room:
                self.settled.clear()
            self.settled[key] = (phi, found)
        return found

    def query_atoms(self, phi: Expr, order: Mapping[str, int]) -> tuple[str, ...] | None:
        """``phi``'s atoms in declaration order (``order``, this protocol's), or None when
        one is not this protocol's; remembered by the query's identity."""
        got = self.atoms.get(id(phi))
        if got is not None:
            return got[1]
        atoms = list(dict.fromkeys(iter_atoms(phi)))
        found = None
        if all(a in order for a in atoms):
            found = tuple(sorted(atoms, key=order.__getitem__))
        with _LOCK:
            if len(self.atoms) >= self.room:
                self.atoms.clear()
            self.atoms[id(phi)] = (phi, found)
        return found

    def result(self, key: tuple[Any, ...]) -> Any:
        got = self.results.get(key)
        return None if got is None else got[1]

    def keep_result(self, phi: Expr, key: tuple[Any, ...], result: Any) -> None:
        with _LOCK:
            if len(self.results) >= self.room:
                self.results.clear()
            self.results[key] = (phi, result)  # holds ``phi``: its id stays its own

    def pair_texts(self) -> tuple[tuple[str, str], ...]:
        """Each grounding pair's sides as a report shows them (``expr_text``), written once:
        a wide side (``any(backed(p) for p in part)``) is a fold per replay otherwise."""
        if self._pair_texts is None:
            self._pair_texts = tuple(
                (expr_text(g.judge), expr_text(g.context)) for g in self.protocol.grounding
            )
        return self._pair_texts

    def pairs(self) -> tuple[tuple[Expr, str, str, str], ...]:
        """Each grounding pair as its check asks it: the query, each side's text
        (``pair_texts``) and the direction."""
        if self._pairs is None:
            self._pairs = tuple(
                (g.query, judge, context, g.direction)
                for g, (judge, context) in zip(
                    self.protocol.grounding, self.pair_texts(), strict=True
                )
            )
        return self._pairs

    def check_atoms(
        self, phi: Expr, witness_exprs: Sequence[Expr]
    ) -> tuple[list[str], frozenset[str]]:
        """A check's atoms: those of the protocol in declaration order (what a witness
        completes), and every one (what its component is reached from); made once per
        query and witness expressions. The list is the caller's to read, not to change."""
        exprs = (phi, *witness_exprs)
        key = tuple(map(id, exprs))
        got = self._checks.get(key)
        if got is not None:
            return got[1], got[2]
        every = frozenset(a for e in exprs for a in iter_atoms(e))
        order = self.order
        mine = sorted((a for a in every if a in order), key=order.__getitem__)
        with _LOCK:
            if len(self._checks) >= self.room:
                self._checks.clear()
            self._checks[key] = (exprs, mine, every)
        return mine, every

    def verdict_query(self, verdict: str) -> Expr:
        """``verdict_query(verdict, protocol)``, one object per label."""
        got = self._queries.get(verdict)
        if got is None:
            got = verdict_query(verdict, self.protocol)
            if verdict in self.protocol.labels:
                self._queries[verdict] = got
        return got

    def decision_shape(self) -> Shape | None:
        """A binary protocol's decision as ``unmask.checking.closed.decision_shape`` reads
        it (None: another shape, or no such decision)."""
        if self._shape is False:
            d = self.protocol.decision
            self._shape = None if d is None else decision_shape(d, self.order)
        return self._shape  # type: ignore[return-value]

    def pair_atoms(self) -> tuple[tuple[str, ...] | None, ...]:
        """Each grounding pair's query's atoms (``query_atoms``), in ``pairs`` order."""
        if self._pair_atoms is None:
            self._pair_atoms = tuple(
                self.query_atoms(query, self.order) for query, *_ in self.pairs()
            )
        return self._pair_atoms

    def fact_id(self, atom: str) -> PartId:
        """``PartId.fact(atom)``, made once per atom of the protocol."""
        got = self._fact_ids.get(atom)
        if got is None:
            got = PartId.fact(atom)
            if atom in self.order:  # an atom outside the protocol is not kept
                self._fact_ids[atom] = got
        return got

    def fact_part(self, atom: str, value: bool) -> Part:
        """The part of the fact ``atom`` (``value`` TRUE) or ``not atom``, made once."""
        got = self._fact_parts.get((atom, value))
        if got is None:
            a = mk_atom(atom)
            got = Part(self.fact_id(atom), a if value else mk_not(a))
            if atom in self.order and len(self.order) <= FACT_PARTS_ATOMS:
                self._fact_parts[atom, value] = got
        return got

    def template(self, names: Sequence[str]) -> TableBase | None:
        """The parts tabulated over ``names`` (the protocol's atoms and the verdict's),
        or None when that is more than ``MAX_TABLE`` atoms."""
        if self._template is False:
            fits = len(names) <= MAX_TABLE and all(a in names for p in self.parts for a in p.atoms)
            self._template = TableBase(self.parts, names) if fits else None
        return self._template  # type: ignore[return-value]


_DERIVED: dict[int, _Derived] = {}
DERIVED_SIZE = 8  # protocols whose derived parts are kept per process
SETTLED_SIZE = 4096  # checks on the facts remembered per protocol, at least
SETTLED_PER_CHECK = 16  # ... or this many per check the protocol makes on the facts
SETTLED_MAX = 1 << 16  # ... but never more (about 20 MB)
FACT_PARTS_ATOMS = 4096  # a protocol's fact parts are kept when it has at most this many atoms


_LOCK = threading.Lock()  # a Dask worker may check replays in several threads


def _derived(protocol: Protocol) -> _Derived:
    # keyed by ``id``: the entry holds the protocol, so its id is not reused while it lives
    got = _DERIVED.get(id(protocol))
    if got is None:
        made = _Derived(protocol)
        with _LOCK:
            while len(_DERIVED) >= DERIVED_SIZE:
                del _DERIVED[next(iter(_DERIVED))]  # the oldest
            got = _DERIVED[id(protocol)] = made
    return got


def verdict_query(verdict: str, protocol: Protocol | None = None) -> Expr:
    """φ_v: the observed label holds (``protocol`` None or binary: V, or ¬V for FAIL)."""
    if protocol is not None and protocol.declared_labels:
        return mk_atom(f"{LABEL_PREFIX}{verdict}")
    v = mk_atom(VERDICT_ATOM)
    return v if verdict == "PASS" else mk_not(v)


def verdict_exprs(protocol: Protocol) -> list[Expr]:
    """What a verdict witness completes: the decision, or every label's decision."""
    if not protocol.declared_labels:
        assert protocol.decision is not None
        return [protocol.decision]
    return [protocol.decision_for(label) for label in protocol.labels]
