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

The claim proposer's shape: a context family whose description says *support* (and not
*contradict*, *refute* or *not*) and a ``context`` source of passages, one a line after an id
(``unmask.propose.passages``). Over one domain, ``F(m)``: every member names one passage (its
id, or the number it ends in: ``p1`` and ``s1`` name ``[1]`` and ``line 1``), and the whole
``response`` is the claim. Over two, ``F(p, c)`` or ``F(c, p)``: one place's members name
passages and the other's claims, the claim lines of ``response`` (``[c1] …``; a single claim
may be the whole response), which place is which told from the members (``resolve_pairs``),
each claim aligned with the passages on its own. The answer-citation reader fills a context
family that says *cites* from the answer's markers (``[p1]``) the same way. Only TRUE is ever
proposed; anything else abstains, and a place that cannot be told (a domain used twice,
three places) abstains with the reason.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from unmask.plumbing.codes import Code
from unmask.plumbing.frozen import frozen
from unmask.plumbing.names import split_applied
from unmask.propose import CLAIM_SUPPORT, Fill, Proposer
from unmask.propose.claims import Alignment, ClaimSupport, Match
from unmask.propose.material import differs
from unmask.propose.passages import (
    ANSWER_CITATIONS,
    MARKER_CONFIDENCE,
    AnswerCitations,
    passage_of,
    passages,
    without_markers,
)
from unmask.replay.data import EVIDENCE_SOURCES, Evidence, Replay

DEFAULT_THRESHOLD = 0.5
MAX_SPANS = 8  # evidence spans written per atom: the first markers are enough to review
# proposers `unmask propose replay` runs unless told otherwise (a model only when asked)
DEFAULT_PROPOSERS = ("judge-rules", "answer-citations", "claims-lexical")

_SUPPORT_WORD = re.compile(r"\bsupport", re.I)
_CITE_WORD = re.compile(r"\bcit(?:e|es|ed|ing|ation|ations)\b", re.I)
_NOT_SUPPORT = re.compile(r"\b(?:not|no|never|contradict\w*|refut\w*|disprov\w*)\b", re.I)


@frozen
class Candidate:
    """One proposed annotation before the threshold: atom, value, spans, confidence."""

    atom: str
    value: str
    spans: tuple[Evidence, ...]
    confidence: float
    by: dict
    detail: str
    score: str = "confidence"  # what the number is called where it is printed


@dataclass
class Outcome:
    """What a run did: the atoms filled (atom, proposer), and why others abstained."""

    open_atoms: list[str] = field(default_factory=list)
    filled: list[tuple[str, str, float]] = field(default_factory=list)  # atom, by.name, conf
    below: list[tuple[str, str, float]] = field(default_factory=list)
    abstained: list[tuple[str, str]] = field(default_factory=list)  # proposer, reason
    score: dict[str, str] = field(default_factory=dict)  # by.name → what its number is called


@frozen
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


Families = dict[str, list[tuple[str, tuple[str, ...]]]]


def _context_families(replay: Replay, says: Callable[[str], bool]) -> Families:
    out: Families = {}
    for a in replay.protocol.atoms:
        parts = split_applied(a.name)
        if a.role == "context" and parts is not None and says(a.description):
            out.setdefault(parts[0], []).append((a.name, parts[1]))
    return out


def support_families(replay: Replay) -> Families:
    """Context families that state support: family → [(atom, members)], in declaration
    order; ``members`` are the ground atom's, by position (``backs(p1, date)`` →
    ``("p1", "date")``), read back by ``unmask.plumbing.names.split_applied``."""
    return _context_families(
        replay, lambda d: bool(_SUPPORT_WORD.search(d)) and not _NOT_SUPPORT.search(d)
    )


def citation_families(replay: Replay) -> Families:
    """Context families that say the answer cites a passage (and say nothing of support)."""
    return _context_families(
        replay,
        lambda d: (
            bool(_CITE_WORD.search(d))
            and not _SUPPORT_WORD.search(d)
            and not _NOT_SUPPORT.search(d)
        ),
    )


def _naming(values: list[str], ids: list[str]) -> tuple[dict[str, str], bool] | None:
    """Each member to the passage (or claim) it names, all different, and whether each is
    named by its very id; None when some member names none, or two name the same one."""
    named: dict[str, str] = {}
    for v in values:
        found = passage_of(v, ids)
        if found is None:
            return None
        named[v] = found
    if len(set(named.values())) != len(named):
        return None
    return named, all(v in ids for v in values)


@frozen
class Pairs:
    """A family over a claim and a passage, its positions resolved: which position holds the
    passage and which the claim, and what each member there names."""

    passage_at: int
    claim_at: int
    passage_named: dict[str, str]  # member → passage id of `context`
    claim_named: dict[str, str]  # member → claim id of `response` ("" : the whole response)


def resolve_pairs(
    family: str,
    members: list[tuple[str, ...]],
    passage_ids: list[str],
    claim_ids: list[str] | None,
) -> Pairs | str:
    """Which position of a two-place family holds the passage and which the claim, or why
    that cannot be told. A position holds passages when its members each name a different
    passage of `context`; claims, when they each name a different claim line of `response`
    (``claim_ids``), or, when `response` is not in lines, when it has one member alone (the
    whole response is then that claim). Exactly one way must fit (ids named exactly are
    preferred to ids named by number); a domain used twice (``same(claim, claim)``) fits
    both ways or none, and abstains."""
    values = [list(dict.fromkeys(m[i] for m in members)) for i in range(2)]
    fits: list[tuple[Pairs, bool]] = []
    for p, c in ((0, 1), (1, 0)):
        as_passages = _naming(values[p], passage_ids)
        if claim_ids is None:
            as_claims = ({values[c][0]: ""}, False) if len(values[c]) == 1 else None
        else:
            as_claims = _naming(values[c], claim_ids)
        if as_passages is not None and as_claims is not None:
            exact = as_passages[1] and as_claims[1]
            fits.append((Pairs(p, c, as_passages[0], as_claims[0]), exact))
    both = len(fits) == 2
    if both:
        fits = [f for f in fits if f[1]]
    if len(fits) == 1:
        return fits[0][0]
    if both or values[0] == values[1]:
        return f"either place of `{family}` could be the passage, so neither is read"
    return (
        f"`{family}` does not pair a passage of `context` with a claim of `response`"
        " (one claim a line, each after an id such as `[c1]`, or a single claim)"
    )


def _open_families(ctx: Context, found: dict, name: str, says: str) -> dict:
    """The families of ``found`` with an open atom; none is an abstention, said once."""
    wanted = set(ctx.open_atoms)
    families = {f: ms for f, ms in found.items() if any(a in wanted for a, _ in ms)}
    if not families:
        ctx.outcome.abstained.append((name, f"no open atom of a context family that {says}"))
    return families


def _fill_claims(proposer: Proposer, ctx: Context) -> Iterable[Candidate]:
    if not isinstance(proposer, ClaimSupport):  # a registered class that lacks its task
        raise TypeError(f"proposer `{proposer.name}` fills claim support without `claim_support`")
    name = proposer.by.name
    claim = ctx.replay.sources.get("response", "")
    context = ctx.replay.sources.get("context")
    families = _open_families(ctx, support_families(ctx.replay), name, "states support")
    if not families:
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
    out: list[Candidate] = []
    whole: Alignment | None = None
    for family, members in families.items():
        arity = len(members[0][1])
        if arity == 2:
            out.extend(_fill_pairs(proposer, ctx, family, members, lines))
            continue
        if arity != 1:
            ctx.outcome.abstained.append(
                (name, f"`{family}` has {arity} places; a claim and a passage are two")
            )
            continue
        if whole is None:
            texts = [lines[i][1] for i in ids]
            whole = proposer.claim_support(without_markers(claim), texts, 0.0)
        named = _naming([m[0] for _, m in members], ids)
        if named is None:
            ctx.outcome.abstained.append(
                (name, f"the members of `{family}` do not each name a passage of `context`")
            )
            continue
        matched = {ids[m.sentence]: m for m in whole.matches}
        # a line here backs a part of the claim (as WiCE's annotators mark lines), so no
        # line is held to the whole claim; the material test gates `supported` and pairs
        for atom, (member,) in members:
            n = named[0][member]
            if n in matched:
                out.append(_supports(atom, lines[n][0], matched[n], proposer, "matched the claim"))
            # a line the claim's terms do not match: no reading either way (a missing
            # overlap is no evidence against support: paraphrase, dates, titles)
    return out


def _supports(atom: str, offset: int, m: Match, proposer: Proposer, detail: str) -> Candidate:
    span = Evidence("context", offset + m.start, offset + m.end, m.quote)
    by = proposer.by.to_json()
    return Candidate(atom, "TRUE", (span,), m.confidence, by, detail, proposer.score)


def _fill_pairs(
    proposer: Proposer,
    ctx: Context,
    family: str,
    members: list[tuple[str, tuple[str, ...]]],
    lines: dict[str, tuple[int, str]],
) -> list[Candidate]:
    """Support over (claim, passage) pairs: each claim aligned with the passages on its own;
    a passage it matches is proposed TRUE for that pair, any other pair abstains."""
    assert isinstance(proposer, ClaimSupport)  # only `_fill_claims`, which checked it, calls
    name = proposer.by.name
    response = ctx.replay.sources["response"]
    claims = passages(response)
    ids = list(lines)
    pairs = resolve_pairs(
        family, [m for _, m in members], ids, None if claims is None else list(claims)
    )
    if isinstance(pairs, str):
        ctx.outcome.abstained.append((name, pairs))
        return []
    texts = [lines[i][1] for i in ids]
    aligned: dict[str, dict[str, Match | str]] = {}
    wanted = set(ctx.open_atoms)
    out = []
    for atom, ms in members:
        if atom not in wanted:
            continue
        claim_id = pairs.claim_named[ms[pairs.claim_at]]
        if claim_id not in aligned:
            text = response if claims is None else claims[claim_id][1]
            read = _backing(proposer, without_markers(text), texts)
            aligned[claim_id] = {ids[k]: m for k, m in read.items()}
        passage = pairs.passage_named[ms[pairs.passage_at]]
        m = aligned[claim_id].get(passage)
        if m is None:  # no match is no reading: the pair abstains
            continue
        if isinstance(m, str):
            ctx.outcome.abstained.append((name, f"`{atom}`: {m}"))
            continue
        detail = f"matched claim `{ms[pairs.claim_at]}`"
        out.append(_supports(atom, lines[passage][0], m, proposer, detail))
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _sentence_of(text: str, start: int, end: int) -> str:
    """The sentences of ``text`` that the span ``[start, end)`` touches."""
    cuts = [0, *(m.end() for m in _SENTENCE_END.finditer(text)), len(text)]
    a = max(c for c in cuts if c <= start)
    b = min(c for c in cuts if c >= end)
    return text[a:b]


def _backing(proposer: ClaimSupport, claim: str, texts: list[str]) -> dict[int, Match | str]:
    """Passage index → the match of a passage that backs the whole claim, or the reason it
    does not. A passage backs a claim only if the sentence that matched has everything
    material the claim says, fills no slot of it differently and adds no number
    (``unmask.propose.material.differs``): `7 days on the Free plan` shares most words with `90 days
    on the Pro plan` and backs nothing. A passage set aside is blanked and the claim aligned
    again, so a passage the first one outscored is still read."""
    shown = list(texts)
    out: dict[int, Match | str] = {}
    while True:
        found = proposer.claim_support(claim, shown, 0.0)
        again = False
        for m in found.matches:
            if m.sentence in out:
                continue
            sentence = _sentence_of(texts[m.sentence], m.start, m.end)
            why = differs(claim, sentence, name="the passage")
            if why is None:
                out[m.sentence] = m
            else:
                out[m.sentence] = str(why)
                shown[m.sentence] = ""
                again = True
        if not again:
            return out


# --- the answer's own citations ---------------------------------------------------------------


def _fill_citations(proposer: Proposer, ctx: Context) -> Iterable[Candidate]:
    """Which passages the answer cites, from its markers: per claim line of `response` for a
    family over a claim and a passage, anywhere in it for a family over passages. A passage
    no marker names is not proposed (an answer that does not cite it says nothing of it)."""
    if not isinstance(proposer, AnswerCitations):
        return []
    name = proposer.by.name
    families = _open_families(ctx, citation_families(ctx.replay), name, "says cites")
    if not families:
        return []
    wanted = set(ctx.open_atoms)
    response = ctx.replay.sources.get("response", "")
    lines = passages(ctx.replay.sources.get("context") or "")
    if not response.strip() or not lines:
        ctx.outcome.abstained.append(
            (name, "needs the answer in `response` and passages in `context`, one a line")
        )
        return []
    ids = list(lines)
    claims = passages(response)
    # the markers of each claim line (after its id, so `[c1]` is never read as a citation),
    # or of the whole answer: claim id → passage id → spans in `response`
    segments = {k: v for k, v in claims.items()} if claims else {"": (0, response)}
    cited = {
        k: {
            p: [(off + a, off + b) for a, b in spans] for p, spans in proposer.cited(t, ids).items()
        }
        for k, (off, t) in segments.items()
    }
    by = proposer.by.to_json()
    out = []
    for family, members in families.items():
        arity = len(members[0][1])
        spans_of: dict[str, list[tuple[int, int]]] = {}
        if arity == 1:
            named = _naming([m[0] for _, m in members], ids)
            if named is None:
                ctx.outcome.abstained.append(
                    (name, f"the members of `{family}` do not each name a passage of `context`")
                )
                continue
            for atom, (member,) in members:
                p = named[0][member]
                spans_of[atom] = [s for k in cited for s in cited[k].get(p, [])]
        elif arity == 2:
            pairs = resolve_pairs(
                family, [m for _, m in members], ids, None if claims is None else list(claims)
            )
            if isinstance(pairs, str):
                ctx.outcome.abstained.append((name, pairs))
                continue
            for atom, ms in members:
                claim, p = (
                    pairs.claim_named[ms[pairs.claim_at]],
                    pairs.passage_named[ms[pairs.passage_at]],
                )
                spans_of[atom] = cited[claim].get(p, [])
        else:
            ctx.outcome.abstained.append(
                (name, f"`{family}` has {arity} places; a claim and a passage are two")
            )
            continue
        for atom, spans in spans_of.items():
            if spans and atom in wanted:
                ev = tuple(Evidence("response", a, b, response[a:b]) for a, b in spans[:MAX_SPANS])
                detail = "the answer's citation marker"
                out.append(Candidate(atom, "TRUE", ev, MARKER_CONFIDENCE, by, detail))
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
    ANSWER_CITATIONS: _fill_citations,
    Fill("judge", "replay-atom"): _fill_model,
    Fill("context", "replay-atom"): _fill_model,
    Fill("procedure", "replay-atom"): _fill_model,
}


def can_fill(proposer: Proposer) -> bool:
    return any(f in FILLERS for f in proposer.fills)


def replay_filler(name: str, what: str = "proposer") -> Proposer:
    """The proposer registered as ``name``, refused (``UnmaskError``) when it fills no atom of
    a replay; ``what`` is how the message calls it (`proposer`, or `reader` for annotate)."""
    from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
    from unmask.propose import create

    p = create(name)
    if not can_fill(p):
        raise UnmaskError(
            [Diagnostic(Code.PROPOSER_CANNOT_FILL, f"{what} `{name}` fills no replay atoms")]
        )
    return p


def _explanation(c: Candidate) -> str:
    return f"proposed by {c.by['name']} ({c.detail}); {c.score} {c.confidence:g}"


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
        seen: set[Filler] = set()
        for f in proposer.fills:
            filler = FILLERS.get(f)
            if filler is None or filler in seen:
                continue
            seen.add(filler)  # a filler runs once per proposer, however many fills name it
            for c in filler(proposer, ctx):
                if c.atom not in still_open or c.atom in chosen:
                    continue
                outcome.score[c.by["name"]] = c.score
                if c.confidence < threshold:
                    outcome.below.append((c.atom, c.by["name"], c.confidence))
                    continue
                chosen[c.atom] = c
        still_open = [a for a in still_open if a not in chosen]
    out = copy.deepcopy(dict(obj))
    annotations = list(out.get("annotations") or [])
    position = {a.get("atom"): i for i, a in enumerate(annotations) if isinstance(a, dict)}
    for atom in outcome.open_atoms:  # declaration order, so the output is stable
        got = chosen.get(atom)
        if got is None:
            continue
        ann = {
            "atom": atom,
            "value": got.value,
            # spans only: a proposer quotes, it never writes a reading of a whole source
            "evidence": [
                {"source": s.source, "start": s.start, "end": s.end, "quote": s.quote}
                for s in got.spans
            ],
            "explanation": _explanation(got),
            "by": dict(got.by),
        }
        if atom in position:
            annotations[position[atom]] = ann  # an UNKNOWN annotation, replaced in place
        else:
            annotations.append(ann)
        outcome.filled.append((atom, got.by["name"], got.confidence))
    out["annotations"] = annotations
    return out, outcome
