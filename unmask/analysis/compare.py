"""`unmask compare`: how a new version of a protocol relates to an old one.

Contract: ``compare(old, new, backend)`` matches atoms, labels and requirement ids by name
(an atom on one side only is free on the other) and decides, under both constraint sets
(K_old ∧ K_new), for each label in both whether NEW's decision is ``equivalent``,
``stricter`` (NEW gives the label only where OLD does), ``looser`` (OLD only where NEW
does) or ``incomparable``; the same for each requirement's ``holds`` and ``addressed``
(``unspecified`` when only one side says when it is addressed). Every relation that is not
``equivalent`` carries one witness per direction: the canonical assignment (atoms in OLD's
declaration order, then NEW's new ones, FALSE first) on which the two sides disagree.
``constraints`` compares K_new with K_old themselves; grounding pairs that changed
direction or one side are related as the checks they ask (``grounding:``), and a
requirement or pair on one side only as a check that holds everywhere on the other.
Added and removed labels, requirements, grounding pairs (by their canonical text and
direction, those related apart) and atoms are listed. A relation the solver could not
decide is ``unknown``, never guessed.
``gate(c, fail_if, label)`` is what ``unmask compare --fail-if`` decided: its exit status
and the lines that say so and why (a witness for each check that fails it).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from unmask import ir
from unmask.analysis.ground import Scope
from unmask.backends.base import Backend, Part, spec
from unmask.checking.explain import Deadline
from unmask.checking.solve import SAT, UNKNOWN, Answer, Space
from unmask.ir import mk_and, mk_const, mk_not
from unmask.ir.text import expr_text
from unmask.plumbing.frozen import frozen

SCHEMA = "unmask.compare/1"
EQUIVALENT = "equivalent"
STRICTER = "stricter"
LOOSER = "looser"
INCOMPARABLE = "incomparable"
UNSPECIFIED = "unspecified"
CONTRADICTORY = "contradictory"  # K_old ∧ K_new has no model
RELATION_UNKNOWN = "unknown"
TRUE = mk_const(True)  # a check that is absent holds on every replay


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
        from unmask.plumbing import exitcodes

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


Pairing = tuple[ir.GroundPair | None, ir.GroundPair | None]


def _either(pair: Pairing) -> ir.GroundPair:
    """A pairing's old pair, or its new one when it has no old one."""
    o, n = pair
    g = o if o is not None else n
    assert g is not None  # ``match_grounding`` never pairs nothing with nothing
    return g


def match_grounding(
    old: tuple[ir.GroundPair, ...], new: tuple[ir.GroundPair, ...]
) -> list[Pairing]:
    """The grounding pairs that differ between versions, each related to its counterpart.

    A pair written alike in both is unchanged. Of the rest, a pair whose two sides are
    the same and whose direction changed (`~>` to `~`) is the same pair made stricter or
    looser, and so is one where only one side changed, when that side is shared by exactly
    one pair on each side (a judge claim grounded against another reading). What is left
    is a pair added (old None) or removed (new None)."""
    sides = lambda g: (expr_text(g.judge), expr_text(g.context))  # noqa: E731
    new_keys = {ground_key(n) for n in new}
    old_keys = {ground_key(o) for o in old}
    left_old = [o for o in old if ground_key(o) not in new_keys]
    left_new = [n for n in new if ground_key(n) not in old_keys]
    pairs: list[Pairing] = []
    for key in (sides, lambda g: sides(g)[0], lambda g: sides(g)[1]):
        olds: dict[Any, list[ir.GroundPair]] = {}
        news: dict[Any, list[ir.GroundPair]] = {}
        for o in left_old:
            olds.setdefault(key(o), []).append(o)
        for n in left_new:
            news.setdefault(key(n), []).append(n)
        matched = [
            (os_[0], news[k][0])
            for k, os_ in olds.items()
            if len(os_) == 1 and len(news.get(k, ())) == 1
        ]
        pairs.extend(matched)
        gone = {id(x) for pair in matched for x in pair}
        left_old = [o for o in left_old if id(o) not in gone]
        left_new = [n for n in left_new if id(n) not in gone]
    pairs.extend((o, None) for o in left_old)
    pairs.extend((None, n) for n in left_new)
    return pairs


def _diff(old: list[str], new: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    o, n = set(old), set(new)
    return tuple(x for x in new if x not in o), tuple(x for x in old if x not in n)


def compare(
    old: ir.Protocol,
    new: ir.Protocol,
    backend: Backend,
    scope: Scope,
    names: tuple[str, str] = ("OLD", "NEW"),
    deadline: Deadline | None = None,
) -> Comparison:
    atoms = list(old.atom_names) + [a for a in new.atom_names if old.atom(a) is None]
    k_old = mk_and(c.expr for c in old.constraints)
    k_new = mk_and(c.expr for c in new.constraints)
    relations: list[Relation] = []
    # the constraint sets themselves, with no base: does NEW allow more worlds?
    free = Space(backend, [], atoms, deadline)
    try:
        relations.append(_relation(free, "constraints", k_old, k_new))
    finally:
        free.close()
    pairs = match_grounding(old.grounding, new.grounding)
    parts = [Part(f"old:{c.name}", c.expr) for c in old.constraints]
    parts += [Part(f"new:{c.name}", c.expr) for c in new.constraints]
    space = Space(backend, parts, atoms, deadline)
    try:
        both = space.sat(None, want_witness=False)
        if both.state == SAT:
            for label in old.labels:
                if label in new.labels:
                    d_old, d_new = old.decision_for(label), new.decision_for(label)
                    relations.append(_relation(space, f"label:{label}", d_old, d_new))
            new_reqs = {r.id: r for r in new.requirements}
            old_ids = {r.id for r in old.requirements}
            for r in old.requirements:
                s = new_reqs.get(r.id)
                if s is None:
                    # a requirement that is gone holds on every replay: NEW is looser
                    # wherever OLD's could fail
                    relations.append(_relation(space, f"holds:{r.id}", r.expr, TRUE))
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
            for s in new.requirements:
                if s.id not in old_ids:  # a new requirement: absent, it held everywhere
                    relations.append(_relation(space, f"holds:{s.id}", TRUE, s.expr))
            for o, n in pairs:
                subject = f"grounding:{ground_key(_either((o, n)))}"
                relation = _relation(
                    space,
                    subject,
                    o.query if o is not None else TRUE,
                    n.query if n is not None else TRUE,
                )
                if o is not None and n is not None:
                    relation = replace(relation, detail=f"now `{ground_key(n)}`")
                relations.append(relation)
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
    for key, was, now in (
        ("labels", list(old.labels), list(new.labels)),
        ("requirements", [r.id for r in old.requirements], [r.id for r in new.requirements]),
        ("atoms", list(old.atom_names), list(new.atom_names)),
    ):
        added[key], removed[key] = _diff(was, now)
    # pairs related across versions (a direction or one side changed) are neither
    added["grounding"] = tuple(ground_key(n) for o, n in pairs if o is None and n is not None)
    removed["grounding"] = tuple(ground_key(o) for o, n in pairs if n is None and o is not None)
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


# what each kind of check is said to do when a witness shows OLD and NEW apart
_CHECK = {
    "holds": ("requirement `{}`", "holds"),
    "addressed": ("requirement `{}`", "is addressed"),
    "grounding": ("grounding pair `{}`", "holds"),
}


def _question(subject: str, first: str, second: str) -> str:
    kind, _, name = subject.partition(":")
    if kind == "label":
        return f"{first} gives `{name}` where {second} does not"
    what, verb = _CHECK[kind]
    return f"{what.format(name)} {verb} under {first} where it does not under {second}"


def gate(c: Comparison, fail_if: str, label: str) -> tuple[int, str]:
    """The exit status of ``--fail-if looser|stricter`` and what it says, one line per
    check that fails it. Stricter: OLD gives ``label`` where NEW does not, or a requirement,
    its coverage or a grounding pair holds under OLD where it does not under NEW (a check
    NEW adds held everywhere before it), so a replay that passed could fail; looser is the
    reverse. Any such witness fails the gate; else an undecided relation makes it exit 3."""
    from unmask.plumbing import exitcodes

    assert c.relation(f"label:{label}") is not None, "the label is declared by both protocols"
    first, second = ("NEW", "OLD") if fail_if == LOOSER else ("OLD", "NEW")
    head = f"gate --fail-if {fail_if}"
    asked = [
        r
        for r in c.relations
        if r.subject == f"label:{label}" or r.subject.partition(":")[0] in _CHECK
    ]
    failed = []
    for r in asked:
        witness = r.looser if fail_if == LOOSER else r.stricter
        if r.relation != RELATION_UNKNOWN and witness is not None:
            detail = f" ({r.detail})" if r.detail else ""
            question = _question(r.subject, first, second) + detail
            failed.append(f"{head}: failed (exit 1): {question}: {_witness(witness)}")
    if failed:
        return exitcodes.VIOLATED, "\n".join(failed)
    for r in asked:
        if r.relation == RELATION_UNKNOWN:
            why = f" ({r.detail})" if r.detail else ""
            return exitcodes.UNKNOWN, (
                f"{head}: undecided (exit 3): the solver could not decide whether "
                f"{_question(r.subject, first, second)}{why}"
            )
    line = f"{head}: passed (exit 0): nowhere {first} gives `{label}` where {second} does not"
    if len(asked) > 1:
        line += f", and no requirement, coverage or grounding check holds under {first} where"
        line += f" it does not under {second}"
    return exitcodes.OK, line
