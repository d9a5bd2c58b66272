"""Fill a replay's open atoms with registered proposers, every proposal marked unreviewed.

Contract: ``fill(obj, replay, proposers, threshold)`` takes a validated replay (its
JSON object and its loaded form) and returns ``(new_obj, Outcome)``. Only *open* atoms are
filled: atoms with no annotation or an UNKNOWN one; a TRUE or FALSE annotation is never
touched. Each proposer fills through the table ``FILLERS``, keyed by what it declares it
fills: judge rules read the rationale (``Fill("judge", "rationale")``), the claim proposer
reads a context family over evidence lines (``Fill("context", "claim-support")``), a model
answers one atom at a time (``"replay-atom"``). Proposers run in the order given; the first
that proposes an open atom at or above ``threshold`` fills it. Every annotation written has
``by`` (kind, ``NAME/VERSION``, ``reviewed: false``), evidence spans that are exact
code-point slices of a source the atom's role allows, and an ``explanation`` that ends in
``confidence C``. The caller validates the result with the replay loader before writing it.

The claim proposer's shape: a context family ``F(m)`` whose description says *support*
(and not *contradict*, *refute* or *not*), a ``context`` source of passages, each non-blank
line one passage with an id in one of the forms ``PASSAGE_FORMS`` (``line 3: …`` as the WiCE
importer writes it, ``[1] …`` as the ``jsonl`` and ``structured`` importers write a list of
texts, ``[p1] …``, ``passage 2: …``, ``p2: …``; one form throughout, no id twice), every
member naming one passage (its id, or the number it ends in: ``p1`` and ``s1`` name ``[1]``
and ``line 1``), and a non-empty ``response`` source holding the claim. Anything else abstains.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from unmask.propose import CLAIM_SUPPORT, Fill, Proposer
from unmask.replaydata import EVIDENCE_SOURCES, Evidence, Replay

DEFAULT_THRESHOLD = 0.5
# proposers `unmask propose replay` runs unless told otherwise (a model only when asked)
DEFAULT_PROPOSERS = ("judge-rules", "claims-lexical")

_FAMILY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(([A-Za-z_][A-Za-z0-9_]*)\)")
# a passage's id, then its text; the first form every non-blank line of a source fits is used
PASSAGE_FORMS = (
    re.compile(r"line (\d+): "),
    re.compile(r"\[([A-Za-z0-9_.-]+)\] ?"),
    re.compile(r"(?i:passage|document|doc|source|chunk|context) ([A-Za-z0-9_.-]+): "),
    re.compile(r"([A-Za-z_]*\d+)[:.)] "),
)
_TRAILING_NUMBER = re.compile(r"[A-Za-z_]*?(\d+)")
_SUPPORT_WORD = re.compile(r"\bsupport", re.I)
_NOT_SUPPORT = re.compile(r"\b(?:not|no|never|contradict\w*|refut\w*|disprov\w*)\b", re.I)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One proposed annotation before the threshold: atom, value, spans, confidence."""

    atom: str
    value: str
    spans: tuple[Evidence, ...]
    confidence: float
    by: dict
    detail: str


@dataclass
class Outcome:
    """What a run did: the atoms filled (atom, proposer), and why others abstained."""

    open_atoms: list[str] = field(default_factory=list)
    filled: list[tuple[str, str, float]] = field(default_factory=list)  # atom, by.name, conf
    below: list[tuple[str, str, float]] = field(default_factory=list)
    abstained: list[tuple[str, str]] = field(default_factory=list)  # proposer, reason


@dataclass(frozen=True, slots=True)
class Context:
    """What a filler may read: the replay, the atoms still open, and the options."""

    replay: Replay
    open_atoms: tuple[str, ...]
    threshold: float
    outcome: Outcome


def open_atoms(replay: Replay) -> list[str]:
    """Declared atoms with no annotation or an UNKNOWN one, in declaration order."""
    closed = {a.atom for a in replay.annotations if a.value in ("TRUE", "FALSE")}
    return [a.name for a in replay.protocol.atoms if a.name not in closed]


# --- judge rules -------------------------------------------------------------------------------


def _fill_judge(proposer: Proposer, ctx: Context) -> Iterable[Candidate]:
    from unmask.propose.judge import JudgeRules, TooLarge

    if not isinstance(proposer, JudgeRules):
        return []
    source = proposer.source
    text = ctx.replay.sources.get(source)
    if text is None:
        ctx.outcome.abstained.append((proposer.by.name, f"the replay has no `{source}` source"))
        return []
    roles = {a.name: a.role for a in ctx.replay.protocol.atoms}
    filled = dict.fromkeys(r.atom for r in proposer.ruleset.rules)
    declared = {n.split("(", 1)[0] for n in roles}
    if not any(a in declared for a in filled):
        # say so: the rules fill atoms of another protocol (a rule file for the wrong one)
        names = ", ".join(f"`{a}`" for a in filled)
        ctx.outcome.abstained.append(
            (proposer.by.name, f"the rules fill {names}; the protocol declares none of them")
        )
        return []
    by = proposer.by.to_json()
    out = []
    try:
        proposals = proposer.propose(text, ctx.threshold)
    except TooLarge as exc:
        ctx.outcome.abstained.append((proposer.by.name, str(exc)))
        return []
    for p in proposals:
        role = roles.get(p.atom)
        if role is None or source not in EVIDENCE_SOURCES[role]:
            continue  # the protocol has no such atom, or this source cannot back it
        spans = tuple(Evidence(source, s.start, s.end, s.quote) for s in p.spans)
        rules = ", ".join(f"`{r}`" for r in p.rules)
        out.append(Candidate(p.atom, p.value, spans, p.confidence, by, f"rule {rules}"))
    return out


# --- claim support over evidence lines ---------------------------------------------------------


def passages(text: str) -> dict[str, tuple[int, str]] | None:
    """The passages of a context source, one a non-blank line, in order: id → (offset of the
    text, text), in the first of ``PASSAGE_FORMS`` that every non-blank line fits with no id
    twice; None when none fits (prose is not passages)."""
    for form in PASSAGE_FORMS:
        out: dict[str, tuple[int, str]] = {}
        pos = 0
        for raw in text.split("\n"):
            line = raw.rstrip("\r")
            if line.strip():
                m = form.match(line)
                if m is None or m.group(1) in out:
                    break
                out[m.group(1)] = (pos + m.end(), line[m.end() :])
            pos += len(raw) + 1
        else:
            if out:
                return out
    return None


def passage_of(member: str, ids: Iterable[str]) -> str | None:
    """The passage a family member names: the one whose id it is, else the one whose id is
    the number the member ends in, ignoring leading zeros (``s5``, ``p5`` → ``5``, ``line 5``)."""
    ids = list(ids)
    if member in ids:
        return member
    m = _TRAILING_NUMBER.fullmatch(member)
    if m is None:
        return None
    # compared as digits, leading zeros aside: a member's number is the file's text, and
    # `int` of thousands of digits fails outright
    n = m.group(1).lstrip("0") or "0"
    by_number = [
        i
        for i in ids
        if (k := _TRAILING_NUMBER.fullmatch(i)) and (k.group(1).lstrip("0") or "0") == n
    ]
    return by_number[0] if len(by_number) == 1 else None


def support_families(replay: Replay) -> dict[str, list[tuple[str, str]]]:
    """Context families that state support: family → [(atom, member)], in declaration order."""
    out: dict[str, list[tuple[str, str]]] = {}
    for a in replay.protocol.atoms:
        m = _FAMILY.fullmatch(a.name)
        if a.role != "context" or m is None:
            continue
        d = a.description
        if not _SUPPORT_WORD.search(d) or _NOT_SUPPORT.search(d):
            continue
        out.setdefault(m.group(1), []).append((a.name, m.group(2)))
    return out


def _fill_claims(proposer: Proposer, ctx: Context) -> Iterable[Candidate]:
    name = proposer.by.name
    claim = ctx.replay.sources.get("response", "")
    context = ctx.replay.sources.get("context")
    wanted = set(ctx.open_atoms)
    families = {
        f: ms for f, ms in support_families(ctx.replay).items() if any(a in wanted for a, _ in ms)
    }
    if not families:
        ctx.outcome.abstained.append((name, "no open atom of a context family that states support"))
        return []
    if not claim.strip() or context is None:
        ctx.outcome.abstained.append((name, "needs the claim in `response` and `context`"))
        return []
    lines = passages(context)
    if not lines:
        ctx.outcome.abstained.append(
            (name, "`context` is not passages, one a line, each after an id such as `[1]`")
        )
        return []
    ids = list(lines)  # in the order the source gives them
    alignment = proposer.claim_support(claim, [lines[i][1] for i in ids], 0.0)
    by = proposer.by.to_json()
    out: list[Candidate] = []
    for family, members in families.items():
        line_of: dict[str, str] = {}
        for atom, member in members:
            found = passage_of(member, ids)
            if found is None:
                break
            line_of[atom] = found
        if len(line_of) != len(members) or len(set(line_of.values())) != len(members):
            ctx.outcome.abstained.append(
                (name, f"the members of `{family}` do not each name a passage of `context`")
            )
            continue
        matched = {ids[m.sentence]: m for m in alignment.matches}
        for atom, n in line_of.items():
            offset, _ = lines[n]
            if n in matched:
                m = matched[n]
                span = Evidence("context", offset + m.start, offset + m.end, m.quote)
                out.append(Candidate(atom, "TRUE", (span,), m.confidence, by, "matched the claim"))
            # a line the claim's terms do not match: no reading either way (a missing
            # overlap is no evidence against support: paraphrase, dates, titles)
    return out


# --- a model, one atom at a time ---------------------------------------------------------------


def _fill_model(proposer: Proposer, ctx: Context) -> Iterable[Candidate]:
    from unmask.propose.model import Abstain, ModelChat

    if not isinstance(proposer, ModelChat):
        return []
    decls = {a.name: a for a in ctx.replay.protocol.atoms}
    by = proposer.by.to_json()
    out = []
    for atom in ctx.open_atoms:
        decl = decls[atom]
        allowed = {
            s: ctx.replay.sources[s] for s in EVIDENCE_SOURCES[decl.role] if s in ctx.replay.sources
        }
        answer = proposer.ask(atom, decl.description, allowed)
        if isinstance(answer, Abstain):
            ctx.outcome.abstained.append((by["name"], f"`{atom}`: {answer.reason}"))
            continue
        span = Evidence(answer.source, answer.start, answer.end, answer.quote)
        detail = f"model `{proposer.model}`" + (f": {answer.reason}" if answer.reason else "")
        out.append(Candidate(atom, answer.value, (span,), answer.confidence, by, detail))
    return out


Filler = Callable[[Proposer, Context], Iterable[Candidate]]
FILLERS: dict[Fill, Filler] = {
    Fill("judge", "rationale"): _fill_judge,
    CLAIM_SUPPORT: _fill_claims,
    Fill("judge", "replay-atom"): _fill_model,
    Fill("context", "replay-atom"): _fill_model,
    Fill("procedure", "replay-atom"): _fill_model,
}


def can_fill(proposer: Proposer) -> bool:
    return any(f in FILLERS for f in proposer.fills)


def _explanation(c: Candidate) -> str:
    return f"proposed by {c.by['name']} ({c.detail}); confidence {c.confidence:g}"


def fill(
    obj: Mapping[str, Any],
    replay: Replay,
    proposers: Iterable[Proposer],
    threshold: float = DEFAULT_THRESHOLD,
) -> tuple[dict[str, Any], Outcome]:
    """The replay object with open atoms filled, and what happened (not yet re-validated)."""
    outcome = Outcome(open_atoms=open_atoms(replay))
    still_open = list(outcome.open_atoms)
    chosen: dict[str, Candidate] = {}
    for proposer in proposers:
        ctx = Context(replay, tuple(still_open), threshold, outcome)
        seen: set[str] = set()
        for f in proposer.fills:
            filler = FILLERS.get(f)
            if filler is None or filler in seen:
                continue
            seen.add(filler)  # a filler runs once per proposer, however many fills name it
            for c in filler(proposer, ctx):
                if c.atom not in still_open or c.atom in chosen:
                    continue
                if c.confidence < threshold:
                    outcome.below.append((c.atom, c.by["name"], c.confidence))
                    continue
                chosen[c.atom] = c
        still_open = [a for a in still_open if a not in chosen]
    out = copy.deepcopy(dict(obj))
    annotations = list(out.get("annotations") or [])
    position = {a.get("atom"): i for i, a in enumerate(annotations) if isinstance(a, dict)}
    for atom in outcome.open_atoms:  # declaration order, so the output is stable
        c = chosen.get(atom)
        if c is None:
            continue
        ann = {
            "atom": atom,
            "value": c.value,
            # spans only: a proposer quotes, it never writes a reading of a whole source
            "evidence": [
                {"source": s.source, "start": s.start, "end": s.end, "quote": s.quote}
                for s in c.spans
            ],
            "explanation": _explanation(c),
            "by": dict(c.by),
        }
        if atom in position:
            annotations[position[atom]] = ann  # an UNKNOWN annotation, replaced in place
        else:
            annotations.append(ann)
        outcome.filled.append((atom, c.by["name"], c.confidence))
    out["annotations"] = annotations
    return out, outcome
