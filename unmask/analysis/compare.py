"""`unmask compare`: how a new version of a protocol relates to an old one.

Contract: ``compare(old, new, backend)`` matches atoms, labels and requirement ids by name
(an atom on one side only is free on the other) and decides, under both constraint sets
(K_old ∧ K_new), for each label in both whether NEW's decision is ``equivalent``,
``stricter`` (NEW gives the label only where OLD does), ``looser`` (OLD only where NEW
does) or ``incomparable``; the same for each requirement's ``holds`` and ``addressed``
(``unspecified`` when only one side says when it is addressed). Every relation that is not
``equivalent`` carries one witness per direction: the canonical assignment (atoms in OLD's
declaration order, then NEW's new ones, FALSE first) on which the two sides disagree.
``constraints`` compares K_new with K_old themselves. Added and removed labels,
requirements, grounding pairs (by their canonical text and direction) and atoms are
listed. A relation the solver could not decide is ``unknown``, never guessed.
``gate(c, fail_if, label)`` is what ``unmask compare --fail-if`` decided: its exit status
and the one line that says so and why (the witness when it fails).
"""

from __future__ import annotations

from typing import Any

from unmask import ir
from unmask.analysis.ground import Scope
from unmask.backends.base import Backend, Part, spec
from unmask.frozen import frozen
from unmask.ir import mk_and, mk_not
from unmask.irtext import expr_text
from unmask.solve import SAT, UNKNOWN, Answer, Space

SCHEMA = "unmask.compare/1"
EQUIVALENT = "equivalent"
STRICTER = "stricter"
LOOSER = "looser"
INCOMPARABLE = "incomparable"
UNSPECIFIED = "unspecified"
CONTRADICTORY = "contradictory"  # K_old ∧ K_new has no model
RELATION_UNKNOWN = "unknown"


@frozen
class Relation:
    """``subject`` is ``label:L``, ``holds:ID``, ``addressed:ID`` or ``constraints``;
    ``looser`` is a witness where NEW holds and OLD does not, ``stricter`` the reverse."""

    subject: str
    relation: str
    looser: tuple[tuple[str, bool], ...] | None = None
    stricter: tuple[tuple[str, bool], ...] | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"subject": self.subject, "relation": self.relation}
        if self.looser is not None:
            out["new_only"] = {a: v for a, v in self.looser}
        if self.stricter is not None:
            out["old_only"] = {a: v for a, v in self.stricter}
        if self.detail:
            out["detail"] = self.detail
        return out


@frozen
class Comparison:
    old: str
    new: str
    backend: str
    scope: Scope
    relations: tuple[Relation, ...]
    added: dict[str, tuple[str, ...]]
    removed: dict[str, tuple[str, ...]]

    def relation(self, subject: str) -> Relation | None:
        return next((r for r in self.relations if r.subject == subject), None)

    @property
    def changed(self) -> bool:
        """Something was added or removed: a label, requirement, grounding pair or atom."""
        return any(self.added.values()) or any(self.removed.values())

    @property
    def different(self) -> bool:
        """Known to differ: a relation decided other than ``equivalent``, or a change."""
        known = any(r.relation not in (EQUIVALENT, RELATION_UNKNOWN) for r in self.relations)
        return known or self.changed

    @property
    def undecided(self) -> bool:
        return any(r.relation == RELATION_UNKNOWN for r in self.relations)

    @property
    def outcome(self) -> str:
        """``equivalent`` (every relation equivalent, nothing added or removed),
        ``different``, or ``unknown`` (nothing known to differ, a relation undecided): what
        the text's last line, the JSON's ``equivalent`` and the exit status all say."""
        if self.different:
            return "different"
        return RELATION_UNKNOWN if self.undecided else EQUIVALENT

    @property
    def exit_code(self) -> int:
        """1 when something is known to differ, else 3 when a relation is undecided, else 0."""
        from unmask import exitcodes

        return {
            "different": exitcodes.VIOLATED,
            RELATION_UNKNOWN: exitcodes.UNKNOWN,
            EQUIVALENT: exitcodes.OK,
        }[self.outcome]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "old": self.old,
            "new": self.new,
            "backend": self.backend,
            "scope": self.scope.to_json(),
            "equivalent": self.outcome == EQUIVALENT,
            "outcome": self.outcome,
            "relations": [r.to_json() for r in self.relations],
            "added": {k: list(v) for k, v in self.added.items()},
            "removed": {k: list(v) for k, v in self.removed.items()},
        }


def _relation(space: Space, subject: str, old: ir.Expr, new: ir.Expr) -> Relation:
    looser = space.sat(mk_and([new, mk_not(old)]))
    stricter = space.sat(mk_and([old, mk_not(new)]))
    return _classify(subject, looser, stricter)


def _classify(subject: str, looser: Answer, stricter: Answer) -> Relation:
    unknown = [a.reason for a in (looser, stricter) if a.state == UNKNOWN]
    if unknown:
        return Relation(subject, RELATION_UNKNOWN, detail=unknown[0])
    gains, loses = looser.state == SAT, stricter.state == SAT
    name = (
        INCOMPARABLE if gains and loses else LOOSER if gains else STRICTER if loses else EQUIVALENT
    )
    return Relation(subject, name, looser.witness, stricter.witness)


def ground_key(g: ir.GroundPair) -> str:
    return f"{expr_text(g.judge)} {g.direction} {expr_text(g.context)}"


def _diff(old: list[str], new: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    o, n = set(old), set(new)
    return tuple(x for x in new if x not in o), tuple(x for x in old if x not in n)


def compare(
    old: ir.Protocol,
    new: ir.Protocol,
    backend: Backend,
    scope: Scope,
    names: tuple[str, str] = ("OLD", "NEW"),
) -> Comparison:
    atoms = list(old.atom_names) + [a for a in new.atom_names if old.atom(a) is None]
    k_old = mk_and(c.expr for c in old.constraints)
    k_new = mk_and(c.expr for c in new.constraints)
    relations: list[Relation] = []
    # the constraint sets themselves, with no base: does NEW allow more worlds?
    free = Space(backend, [], atoms)
    try:
        relations.append(_relation(free, "constraints", k_old, k_new))
    finally:
        free.close()
    parts = [Part(f"old:{c.name}", c.expr) for c in old.constraints]
    parts += [Part(f"new:{c.name}", c.expr) for c in new.constraints]
    space = Space(backend, parts, atoms)
    try:
        both = space.sat(None, want_witness=False)
        if both.state == SAT:
            for label in old.labels:
                if label in new.labels:
                    d_old, d_new = old.decision_for(label), new.decision_for(label)
                    relations.append(_relation(space, f"label:{label}", d_old, d_new))
            new_reqs = {r.id: r for r in new.requirements}
            for r in old.requirements:
                s = new_reqs.get(r.id)
                if s is None:
                    continue
                relations.append(_relation(space, f"holds:{r.id}", r.expr, s.expr))
                if r.addressed is None and s.addressed is None:
                    relations.append(Relation(f"addressed:{r.id}", EQUIVALENT))
                elif r.addressed is None or s.addressed is None:
                    relations.append(Relation(f"addressed:{r.id}", UNSPECIFIED))
                else:
                    relations.append(
                        _relation(space, f"addressed:{r.id}", r.addressed, s.addressed)
                    )
        else:
            relations.append(
                Relation(
                    "constraints:both",
                    RELATION_UNKNOWN if both.state == UNKNOWN else CONTRADICTORY,
                    detail=both.reason
                    or "the two constraint sets together allow no assignment: "
                    "nothing else can be compared",
                )
            )
    finally:
        space.close()
    added: dict[str, tuple[str, ...]] = {}
    removed: dict[str, tuple[str, ...]] = {}
    for key, o, n in (
        ("labels", list(old.labels), list(new.labels)),
        ("requirements", [r.id for r in old.requirements], [r.id for r in new.requirements]),
        (
            "grounding",
            [ground_key(g) for g in old.grounding],
            [ground_key(g) for g in new.grounding],
        ),
        ("atoms", list(old.atom_names), list(new.atom_names)),
    ):
        added[key], removed[key] = _diff(o, n)
    return Comparison(
        names[0],
        names[1],
        spec(backend),
        scope,
        tuple(relations),
        added,
        removed,
    )


def _witness(w: tuple[tuple[str, bool], ...] | None) -> str:
    if not w:
        return "any assignment"
    return ", ".join(f"{a} = {'TRUE' if v else 'FALSE'}" for a, v in w)


_WHAT = {"label": "gives", "holds": "holds", "addressed": "addresses it", "constraints": "allows"}


def text(c: Comparison) -> str:
    lines = [f"compare {c.old} -> {c.new}, backend {c.backend}", c.scope.text(), ""]
    for r in c.relations:
        lines.append(f"{r.subject}: {r.relation}")
        what = _WHAT.get(r.subject.split(":", 1)[0], "holds")
        if what == "gives":
            what = f"gives `{r.subject.split(':', 1)[1]}`"
        if r.looser is not None:
            lines.append(f"  NEW {what} where OLD does not: {_witness(r.looser)}")
        if r.stricter is not None:
            lines.append(f"  OLD {what} where NEW does not: {_witness(r.stricter)}")
        if r.detail:
            lines.append(f"  ({r.detail})")
    for key in ("labels", "requirements", "grounding", "atoms"):
        for x in c.added[key]:
            lines.append(f"added {key[:-1] if key != 'grounding' else 'grounding pair'}: `{x}`")
        for x in c.removed[key]:
            lines.append(f"removed {key[:-1] if key != 'grounding' else 'grounding pair'}: `{x}`")
    lines.append("")
    lines.append(
        "unknown: nothing known to differ, but a relation is undecided"
        if c.outcome == RELATION_UNKNOWN
        else c.outcome
    )
    return "\n".join(lines) + "\n"


def gate(c: Comparison, fail_if: str, label: str) -> tuple[int, str]:
    """The exit status of ``--fail-if looser|stricter`` for ``label``, and its line: does
    NEW give the label where OLD does not (looser), or OLD where NEW does not (stricter)?"""
    from unmask import exitcodes

    rel = c.relation(f"label:{label}")
    assert rel is not None, "the label is declared by both protocols"
    first, second = ("NEW", "OLD") if fail_if == LOOSER else ("OLD", "NEW")
    question = f"{first} gives `{label}` where {second} does not"
    head = f"gate --fail-if {fail_if}"
    if rel.relation == RELATION_UNKNOWN:
        why = f" ({rel.detail})" if rel.detail else ""
        return exitcodes.UNKNOWN, (
            f"{head}: undecided (exit 3): the solver could not decide whether {question}{why}"
        )
    witness = rel.looser if fail_if == LOOSER else rel.stricter
    if witness is None:
        return exitcodes.OK, f"{head}: passed (exit 0): nowhere {question}"
    return exitcodes.VIOLATED, f"{head}: failed (exit 1): {question}: {_witness(witness)}"
