"""How every format words a check: the dimensions' titles, the protocol's rules as written,
who made an annotation, and what a finding rests on.

Contract: ``Lookup`` holds a replay's atom declarations, annotations and requirements by
name, built once per replay; ``decision_rules`` and ``item_rule`` give a decision as
written; ``provenance(by)`` words who made an annotation (``rule wice-citations/1,
unreviewed``); ``resting`` and ``standing_text`` say what a check rests on and whether a
finding is confirmed or provisional; ``named_members`` finds the text (a passage, a claim)
of each domain member a check names. With a calibration (``Lookup(replay, trust)``, an
``unmask.review.calibration.Trust``), ``trust_of`` gives the standing of every finding and of every
passing check that rests on unreviewed readings (the weakest reading's measured precision,
or "unmeasured"), ``standing_text`` says it, and ``calibration_note`` says which data the
calibration was measured on and whether the replay's protocol is one it was measured
under; without one nothing changes. ``why(overall, reasons)`` splits a report's reasons
into those that decided its result and the others (by each reason's ``code``), which text,
HTML and Markdown list apart. ``unmask.render.view`` re-exports all of it for the
formats; the text format, which needs only this, imports it alone (start-up).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from unmask.checking.report import OK, UNKNOWN, VIOLATED, CheckResult, Reason
from unmask.ir.text import expr_text
from unmask.plumbing.names import IDENT_PATTERN, split_applied

if TYPE_CHECKING:
    from unmask.review.calibration import Reader, Standing, Trust

DIMENSION_TITLES = {
    "verdict": "verdict entailment",
    "procedure": "procedural compliance",
    "coverage": "coverage",
    "grounding": "grounding",
}
DIMENSION_QUESTIONS = {
    "verdict": "does the stated rationale force the observed verdict?",
    "procedure": "was each requirement met?",
    "coverage": "was each requirement observable in the first place?",
    "grounding": "do the judge's claims match independent observations of the context?",
}


# what the reasons that did not decide the overall result are, by that result (``why``)
WHY_ALSO: dict[str, str] = {VIOLATED: "also open", UNKNOWN: "also refuted"}


def why(overall: str, reasons: tuple[Reason, ...]) -> tuple[tuple[Reason, ...], tuple[Reason, ...]]:
    """The reasons that make ``overall`` what it is, and the others, each in report order.

    A report is VIOLATED by its ``violated`` reasons alone (docs/semantics.md, the
    aggregation): an underdetermined check, a refuted coverage or a dimension never checked
    would only make it UNKNOWN, so a reader must not look for a break in them. A report
    that is UNKNOWN in spite of a refuted check is UNKNOWN by its other reasons (an override
    wins over VIOLATED), so the refuted check is not why. The split reads each reason's
    ``code``, never its message. Should nothing be left to say why (never so for a report
    ``assemble`` made), every reason says it: none is dropped, and none is hidden.
    """
    if overall not in WHY_ALSO:
        return reasons, ()
    refuted = overall == VIOLATED  # which side of the split ``violated`` reasons are on
    deciding = tuple(r for r in reasons if (r.code == "violated") is refuted)
    if not deciding:
        return reasons, ()
    return deciding, tuple(r for r in reasons if (r.code == "violated") is not refuted)


def whole_reading(source: str) -> str:
    """How every format words a reading of a whole source (``"read": "whole"``)."""
    return f"the whole `{source}`, read: nothing in it says so"


class Lookup:
    """Atom declarations and annotations by name, built once per replay (the replay's own
    look-ups scan a list, which is quadratic over a large report)."""

    def __init__(self, replay: Any, trust: Trust | None = None) -> None:
        self.trust = trust  # a calibration to weigh readings by; None: no trust said
        self.replay = replay
        self.decls = {} if replay is None else {a.name: a for a in replay.protocol.atoms}
        self.anns = {} if replay is None else {a.atom: a for a in replay.annotations}
        self.reqs = {} if replay is None else {r.id: r for r in replay.protocol.requirements}
        self.protocol = None if replay is None else replay.protocol
        self.rules = decision_rules(self.protocol)
        self._replay = replay
        self._members: dict[str, tuple[str, str]] | None = None

    def member_text(self, member: str) -> tuple[str, str] | None:
        """(domain, text) of a domain member that a source gives on a line of its own,
        ``[NAME] text`` (passages and claims given as a list with ids), else None."""
        if self._members is None:
            self._members = _member_texts(self._replay)
        return self._members.get(member)

    def rule(self, label: str | None) -> str:
        """The decision for ``label`` as written (a binary protocol's one rule for None)."""
        if not self.rules:
            return ""
        return self.rules.get(label) or next(iter(self.rules.values()))

    def role(self, atom: str) -> str:
        d = self.decls.get(atom)
        return "" if d is None else d.role

    def description(self, atom: str) -> str:
        d = self.decls.get(atom)
        return "" if d is None else d.description

    def value(self, atom: str) -> str:
        """TRUE, FALSE or UNKNOWN (an unannotated atom is UNKNOWN)."""
        a = self.anns.get(atom)
        return UNKNOWN if a is None else a.value


_MEMBER_LINE = re.compile(rf"^\[({IDENT_PATTERN})\] (.+)$", re.M)
_GROUND = re.compile(rf"{IDENT_PATTERN}\({IDENT_PATTERN}(?:, {IDENT_PATTERN})*\)")


def _member_texts(replay: Any) -> dict[str, tuple[str, str]]:
    domains = getattr(replay, "domains", None) or {}
    home = {m: d for d in sorted(domains) for m in domains[d]}
    out: dict[str, tuple[str, str]] = {}
    if not home:
        return out
    for text in getattr(replay, "sources", {}).values():
        for m in _MEMBER_LINE.finditer(text):
            name = m.group(1)
            if name in home and name not in out:
                out[name] = (home[name], m.group(2).strip())
    return out


def named_members(
    result: CheckResult, look: Lookup, sides: tuple[str, ...] = ()
) -> tuple[tuple[str, str, str], ...]:
    """(member, domain, text) of each domain member a check names — in the atoms of its
    sides (a grounding pair's) and of what its explanation or witnesses rest on — whose
    text a source gives, so a finding that names `c2` can show what `c2` says."""
    atoms = [g for side in sides for g in _GROUND.findall(side)]
    if result.explanation is not None:
        atoms += [i.atom for i in result.explanation.items if i.kind == "annotation"]
    seen: dict[str, tuple[str, str, str]] = {}
    for atom in atoms:
        parts = split_applied(atom)
        for m in parts[1] if parts else ():
            found = look.member_text(m)
            if found is not None and m not in seen:
                seen[m] = (m, *found)
    return tuple(seen.values())


def members_text(named: tuple[tuple[str, str, str], ...]) -> str:
    """``where: `p2` (passage) “…”; …`` — the one wording of named members in plain text."""
    return "where: " + "; ".join(f"`{m}` ({d}) “{_clip(t)}”" for m, d, t in named)


def _clip(text: str, most: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= most else text[: most - 1] + "…"


def decision_rules(protocol: Any) -> dict[str | None, str]:
    """Each decision as written, by label: ``pass iff D`` (under None) for a protocol
    without a ``verdict`` statement; ``L iff D_L`` or ``L otherwise`` for each declared one
    (under ``first-match``, a decision names the labels tried before it)."""
    if protocol is None:
        return {}
    if not protocol.declared_labels:
        d = protocol.decision
        return {} if d is None else {None: f"pass iff {expr_text(d)}"}
    out: dict[str | None, str] = {}
    earlier: list[str] = []  # under `first-match`, the labels tried before this one
    for d in protocol.decisions:
        if d.expr is None:
            out[d.label] = f"{d.label} otherwise"
            continue
        rule = f"{d.label} iff {expr_text(d.expr)}"
        if getattr(protocol, "first_match", False) and earlier:
            rule += f" (first match: after {', '.join(earlier)})"
        out[d.label] = rule
        earlier.append(d.label)
    return out


def item_rule(item: Any, look: Lookup) -> str:
    """What a ``decision`` or ``labels`` part of an explanation says, as written."""
    if item.kind == "labels":
        labels = () if look.protocol is None else look.protocol.labels
        return "exactly one verdict label" + (f": {' | '.join(labels)}" if labels else "")
    return look.rule(getattr(item, "label", None))


def _by_fields(by: Any) -> tuple[str, str | None, bool] | None:
    """(kind, name, reviewed) of an annotation's ``by``, given as data or as its JSON."""
    if by is None:
        return None
    if isinstance(by, dict):
        kind = str(by.get("kind", ""))
        reviewed = by.get("reviewed")
        name = by.get("name")
    else:
        kind, name, reviewed = by.kind, by.name, by.reviewed
    if not isinstance(reviewed, bool):
        reviewed = kind in ("human", "gold")
    return kind, str(name) if name else None, reviewed


def provenance(by: Any) -> str:
    """``rule wice-citations/1, unreviewed``; empty for an annotation without ``by``."""
    fields = _by_fields(by)
    if fields is None:
        return ""
    kind, name, reviewed = fields
    words = [kind if name is None else f"{kind} {name}"]
    if not reviewed:
        words.append("unreviewed")
    if kind == "gold":
        words.append("derived from the gold label")
    return ", ".join(words)


def _item_by(item: Any, look: Lookup) -> Any:
    """An explanation item's ``by``; from the replay when the item does not carry it."""
    by = getattr(item, "by", None)
    if by is None and item.kind == "annotation":
        ann = look.anns.get(item.atom or "")
        by = None if ann is None else ann.by
    return by


def item_provenance(item: Any, look: Lookup) -> str:
    return provenance(_item_by(item, look)) if item.kind == "annotation" else ""


def rests_on(result: CheckResult, look: Lookup) -> tuple[int, int]:
    """(unreviewed, gold-derived) annotations a check rests on, as the checker counted them
    (those of its explanation or, undetermined, those pinned in its witnesses)."""
    return result.unreviewed, result.gold_derived


def resting(result: CheckResult, look: Lookup) -> str:
    """``rests on 2 unreviewed annotations`` (and the gold-derived ones); empty if none."""
    unreviewed, gold = rests_on(result, look)
    parts = []
    if unreviewed:
        parts.append(f"{unreviewed} unreviewed annotation{'' if unreviewed == 1 else 's'}")
    if gold:
        parts.append(f"{gold} gold-derived annotation{'' if gold == 1 else 's'}")
    return "rests on " + " and ".join(parts) if parts else ""


def standing(result: CheckResult) -> str:
    """A finding's standing: ``confirmed`` when a VIOLATED check rests only on reviewed
    annotations, ``provisional`` when it rests on an unreviewed or gold-derived one; empty
    for a check that is no finding."""
    if result.outcome != VIOLATED:
        return ""
    return "provisional" if result.unreviewed or result.gold_derived else "confirmed"


def rests_kinds(result: CheckResult, look: Lookup) -> tuple[str, ...]:
    """Who made the annotations a check's explanation rests on, each kind once, in order:
    ``reviewed human`` for an annotation without ``by``, else its provenance words."""
    expl = result.explanation
    out: dict[str, None] = {}
    for item in expl.items if expl is not None else ():
        if item.kind == "annotation":
            out[item_provenance(item, look) or "reviewed human"] = None
    return tuple(out)


def standing_text(result: CheckResult, look: Lookup) -> str:
    """``provisional: rests on rule wice-rules/2, unreviewed``; empty for no finding. With a
    calibration, the trust of the check follows (``; trusted: weakest reading …``), and a
    passing check resting on unreviewed readings says it passes on them."""
    word = standing(result)
    kinds = rests_kinds(result, look)
    trust = trust_of(result, look)
    if not word:
        if trust is None:
            return ""
        return f"holds on unreviewed readings; {trust.words()}"
    out = f"{word}: rests on {'; '.join(kinds)}" if kinds else word
    return out if trust is None or trust.level == "confirmed" else f"{out}; {trust.words()}"


def readers(result: CheckResult, look: Lookup) -> tuple[Reader, ...]:
    """The readers of the readings a check's explanation rests on that need a measure
    (unreviewed or gold-derived), each once, sorted (``unmask.review.calibration.readers_of``)."""
    from unmask.review.calibration import readers_of

    expl = result.explanation
    items = expl.items if expl is not None else ()
    parts = [(_item_by(i, look), i.atom) for i in items if i.kind == "annotation"]
    return readers_of(parts, bool(result.unreviewed or result.gold_derived))


def trust_of(result: CheckResult, look: Lookup) -> Standing | None:
    """A check's standing under the lookup's calibration: for every finding, and for every
    passing check that rests on unreviewed readings; None otherwise or without one."""
    if look.trust is None:
        return None
    if result.outcome == VIOLATED or (
        result.outcome == OK and (result.unreviewed or result.gold_derived)
    ):
        return look.trust.standing(readers(result, look))
    return None


def calibration_note(look: Lookup, protocol: str) -> tuple[str, str]:
    """(``weighed with the calibration measured on `DATA`, trusted at 0.9``, a warning
    when the replay's protocol is not one the calibration was measured under, else "")."""
    if look.trust is None:
        return "", ""
    from unmask.review.calibration import digest_text

    cal = look.trust.calibration
    note = (
        f"readings weighed by the calibration measured on `{cal.data}`, "
        f"trusted from a lower bound of {look.trust.threshold:g}"
    )
    p = getattr(look.replay, "protocol", None)
    digest = "" if p is None or not getattr(p, "text", "") else digest_text(p.text)
    if cal.measured_under(protocol, digest):
        return note, ""
    names = ", ".join(f"`{n}`" for n, _ in cal.protocols) or "no protocol"
    return note, (
        f"the calibration was measured under {names}, not under this replay's protocol "
        f"`{protocol}`"
        + (f" ({digest[:19]})" if digest else "")
        + ": its figures may not hold here"
    )


def first_error(errors: Sequence[Any]) -> str | None:
    """What a row of an input that could not be checked says of why: its first
    diagnostic, at its JSON path when it has one, bounded (the record keeps them all)."""
    if not errors:
        return None
    d = errors[0]
    said = f"{d.path}: {d.message}" if d.path else d.message
    return said if len(said) <= 200 else said[:199] + "…"
