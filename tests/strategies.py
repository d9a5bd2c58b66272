"""Random expressions, protocols and replays for property tests (hypothesis and seeded).

Contract: every value generated is valid input: expressions use only the given atom names
and well-formed operators (raw nodes, so unfolded constants, empty and one-argument n-ary
operators and trivial cardinality bounds all occur; pass them through ``smart`` for the
folded form the compiler builds); protocols follow the language's rules (grounding pairs are
judge ~ context, the verdict variable is not an atom); replays carry annotations whose
evidence spans are in range, fit the atom's role and quote the source exactly. Other test
modules may import these strategies.

With ``extended=True`` protocols also declare labels (two to four, with and without an
``otherwise``), use definitions (``Ref`` nodes, each defined before use, some built on
earlier ones), and ground in either direction with expression sides (the judge side over
judge atoms and their definitions, the context side over context atoms and theirs); their
replays observe one of the labels, and some annotations say who made them (``by``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import strategies as st

from unmask.ir import (
    BINARY_LABELS,
    BINARY_OPS,
    CARD_OPS,
    NARY_OPS,
    ROLES,
    Atom,
    AtomDecl,
    Binary,
    Card,
    Const,
    Constraint,
    Decision,
    Definition,
    Expr,
    GroundPair,
    Nary,
    Not,
    Protocol,
    Ref,
    Requirement,
)
from unmask.replay.data import (
    EVIDENCE_SOURCES,
    PROVENANCE_KINDS,
    Annotation,
    Evidence,
    Provenance,
    Replay,
)

# plain names first; family-member spellings test quoting in emitters and reports
ATOM_POOL = (
    "a",
    "b",
    "c",
    "d",
    "e",
    "f",
    "g",
    "h",
    "supported(c1)",
    "backed(c1)",
    "x_9",
    "ite",
)

SOURCES = {
    "rationale": "There are two claims. The first is supported; I checked outside knowledge.",
    "context": "Alice joined ACME in 2024. Café résumé naïve 🙂 text.",
    "response": "Alice joined ACME in 2024 and is its CTO.",
    "trace": "step 1: read context; step 2: search web; step 3: answer",
    "protocol": "PASS if and only if every claim is supported.",
    "reference": "Annotator: Alice joined in 2024; the CTO claim is not in the context.",
}

# label sets of a protocol with a `verdict` statement are drawn from this pool
LABEL_POOL = ("supported", "partially_supported", "not_supported", "C", "P", "I")


def smart(e: Expr) -> Expr:
    """``e`` rebuilt through the smart constructors (iteratively: e may be deep)."""
    from unmask.ir.partial import smart as rebuild

    return rebuild(e)


# --- hypothesis strategies -------------------------------------------------------------------


def exprs(
    atoms: Sequence[str], max_leaves: int = 14, refs: Sequence[Ref] = ()
) -> st.SearchStrategy[Expr]:
    """Random raw expressions over ``atoms`` (and uses of the definitions ``refs``) with
    every operator."""
    leaves = st.one_of(
        st.sampled_from(list(atoms)).map(Atom),
        st.sampled_from(list(atoms)).map(Atom),
        st.booleans().map(Const),
        *([st.sampled_from(list(refs))] if refs else []),
    )

    def extend(inner: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        card = st.lists(inner, max_size=5).flatmap(
            lambda args: st.builds(
                lambda op, k: Card(op, k, tuple(args)),
                st.sampled_from(CARD_OPS),
                st.integers(0, len(args) + 1),
            )
        )
        return st.one_of(
            inner.map(Not),
            st.builds(
                lambda op, args: Nary(op, tuple(args)),
                st.sampled_from(NARY_OPS),
                st.lists(inner, max_size=4),
            ),
            st.builds(Binary, st.sampled_from(BINARY_OPS), inner, inner),
            card,
        )

    return st.recursive(leaves, extend, max_leaves=max_leaves)


def atom_lists(min_size: int = 1, max_size: int = 8) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(ATOM_POOL), min_size=min_size, max_size=max_size, unique=True)


@st.composite
def protocols(
    draw: st.DrawFn, max_atoms: int = 10, fold: bool | None = None, extended: bool = False
) -> Protocol:
    names = draw(atom_lists(1, min(max_atoms, len(ATOM_POOL))))
    roles = [draw(st.sampled_from(ROLES)) for _ in names]
    folded = draw(st.booleans()) if fold is None else fold
    judges, contexts = _by_role(names, roles)
    # the seeded generator's definitions, from a drawn seed (shrinks to fewer of them)
    rng = random.Random(draw(st.integers(0, 2**32 - 1))) if extended else None
    defs, refs, j_refs, c_refs = _definitions(rng, names, judges, contexts)
    e = exprs(names, max_leaves=10, refs=refs).map(smart if folded else (lambda x: x))

    constraints = [Constraint(f"k{i}", x) for i, x in enumerate(draw(st.lists(e, max_size=2)))]
    if draw(st.integers(0, 9)) == 0:  # sometimes a plainly contradictory protocol
        a = Atom(names[0])
        constraints += [Constraint("pin", a), Constraint("unpin", Not(a))]
    requirements = [
        Requirement(f"r{i}", f"requirement {i}", q, draw(st.none() | e))
        for i, q in enumerate(draw(st.lists(e, max_size=3)))
    ]
    pairs = [(j, c) for j in judges for c in contexts]
    grounding = [
        GroundPair(j, c)
        for j, c in (
            draw(st.lists(st.sampled_from(pairs), unique=True, max_size=3)) if pairs else []
        )
    ]
    labels, decisions = BINARY_LABELS, ()
    decision: Expr | None = None
    if extended and draw(st.booleans()):
        labels = tuple(
            draw(st.lists(st.sampled_from(LABEL_POOL), min_size=2, max_size=4, unique=True))
        )
        otherwise = draw(st.none() | st.integers(0, len(labels) - 1))
        decisions = tuple(
            Decision(label, None if i == otherwise else draw(e)) for i, label in enumerate(labels)
        )
    else:
        decision = draw(e)
    if extended and grounding:
        side_j = exprs(judges, max_leaves=4, refs=j_refs)
        side_c = exprs(contexts, max_leaves=4, refs=c_refs)
        grounding = [
            GroundPair(
                draw(st.just(g.judge) | side_j),
                draw(st.just(g.context) | side_c),
                direction=draw(st.sampled_from(("~", "~>"))),
            )
            for g in grounding
        ]
    return Protocol(
        name="random",
        text="a random protocol",
        atoms=tuple(AtomDecl(n, r, f"atom {n}") for n, r in zip(names, roles, strict=True)),
        constraints=tuple(constraints),
        decision=decision,
        requirements=tuple(requirements),
        grounding=tuple(grounding),
        labels=labels,
        decisions=decisions,
        definitions=tuple(defs),
    )


@st.composite
def evidence_for(draw: st.DrawFn, role: str) -> Evidence:
    source = draw(st.sampled_from(EVIDENCE_SOURCES[role]))
    text = SOURCES[source]
    start = draw(st.integers(0, len(text) - 1))
    end = draw(st.integers(start + 1, len(text)))
    return Evidence(source, start, end, text[start:end])


provenances = st.none() | st.builds(
    Provenance,
    st.sampled_from(PROVENANCE_KINDS),
    st.sampled_from(("", "rule/1")),
    st.none() | st.booleans(),
)


@st.composite
def replays(
    draw: st.DrawFn, protocol: Protocol | None = None, max_atoms: int = 10, extended: bool = False
) -> Replay:
    p = (
        protocol
        if protocol is not None
        else draw(protocols(max_atoms=max_atoms, extended=extended))
    )
    annotations = []
    for decl in p.atoms:
        value = draw(st.sampled_from(("TRUE", "FALSE", "UNKNOWN", None)))
        if value is None:
            continue  # unannotated
        lo = 0 if value == "UNKNOWN" else 1
        ev = draw(st.lists(evidence_for(decl.role), min_size=lo, max_size=2))
        by = draw(provenances) if extended else None
        annotations.append(Annotation(decl.name, value, tuple(ev), f"why {decl.name}", by=by))
    annotations = draw(st.permutations(annotations))
    return Replay(
        id="random-case",
        protocol=p,
        verdict=draw(st.sampled_from(p.labels)),
        annotations=tuple(
            Annotation(a.atom, a.value, a.evidence, a.explanation, i, a.by)
            for i, a in enumerate(annotations)
        ),
        sources=dict(SOURCES),
        # mostly valid; otherwise the result is UNKNOWN before any solver runs
        translation=draw(st.sampled_from(("valid",) * 8 + ("partial", "invalid"))),
        gold=draw(st.sampled_from((None, *p.labels))),
    )


# --- seeded generators (fast, for exhaustive sweeps) -----------------------------------------


def random_expr(
    rng: random.Random, atoms: Sequence[str], depth: int = 4, refs: Sequence[Ref] = ()
) -> Expr:
    """A raw random expression of nesting at most ``depth``; leaves are atoms, constants
    and (when given) uses of the definitions ``refs``."""
    if depth <= 0 or rng.random() < 0.25:
        if rng.random() < 0.08:
            return Const(rng.random() < 0.5)
        if refs and rng.random() < 0.3:
            return rng.choice(refs)
        return Atom(rng.choice(atoms))
    kind = rng.randrange(4)
    if kind == 0:
        return Not(random_expr(rng, atoms, depth - 1, refs))
    if kind == 1:
        n = rng.choice((0, 1, 2, 2, 3, 3, 4))
        args = tuple(random_expr(rng, atoms, depth - 1, refs) for _ in range(n))
        return Nary(rng.choice(NARY_OPS), args)
    if kind == 2:
        return Binary(
            rng.choice(BINARY_OPS),
            random_expr(rng, atoms, depth - 1, refs),
            random_expr(rng, atoms, depth - 1, refs),
        )
    n = rng.randrange(0, 5)
    args = tuple(random_expr(rng, atoms, depth - 1, refs) for _ in range(n))
    return Card(rng.choice(CARD_OPS), rng.randrange(0, n + 2), args)


def _by_role(names: list[str], roles: list[str]) -> tuple[list[str], list[str]]:
    """The judge atoms and the context atoms among ``names``, in order."""
    judges = [n for n, r in zip(names, roles, strict=True) if r == "judge"]
    contexts = [n for n, r in zip(names, roles, strict=True) if r == "context"]
    return judges, contexts


def _definitions(
    rng: random.Random | None, names: list[str], judges: list[str], contexts: list[str]
) -> tuple[list[Definition], list[Ref], list[Ref], list[Ref]]:
    """``_random_definitions`` drawn from ``rng``; none at all without one."""
    if rng is None:
        return [], [], [], []
    return _random_definitions(rng, names, judges, contexts)


def _random_definitions(
    rng: random.Random, names: list[str], judges: list[str], contexts: list[str]
) -> tuple[list[Definition], list[Ref], list[Ref], list[Ref]]:
    """Definitions in dependency order, and the uses of them allowed in general
    expressions, on a grounding's judge side and on its context side."""
    defs: list[Definition] = []
    general: list[Ref] = []
    sides: dict[str, list[Ref]] = {"j": [], "c": []}

    def define(name: str, body: Expr, pool: list[Ref]) -> None:
        defs.append(Definition(name, body))
        ref = Ref(name, body)
        pool.append(ref)

    for i in range(rng.randrange(3)):
        # a later definition may build on an earlier one
        define(f"d{i}", random_expr(rng, names, rng.randrange(1, 4), general), general)
    for tag, atoms in (("j", judges), ("c", contexts)):
        if atoms and rng.random() < 0.6:
            body = random_expr(rng, atoms, rng.randrange(1, 3), sides[tag])
            define(f"{tag}_def", body, sides[tag])
    # a side definition is usable anywhere: its atoms are the protocol's
    return defs, general + sides["j"] + sides["c"], sides["j"], sides["c"]


def _random_side(rng: random.Random, atoms: list[str], refs: list[Ref]) -> Expr:
    r = rng.random()
    if r < 0.5:
        return Atom(rng.choice(atoms))
    if r < 0.7 and refs:
        return rng.choice(refs)
    return random_expr(rng, atoms, rng.randrange(1, 3), refs)


def _random_labels(rng: random.Random, ex) -> tuple[tuple[str, ...], tuple[Decision, ...]]:  # type: ignore[no-untyped-def]
    labels = tuple(rng.sample(LABEL_POOL, rng.randrange(2, 5)))
    otherwise = rng.randrange(len(labels)) if rng.random() < 0.5 else None
    return labels, tuple(
        Decision(label, None if i == otherwise else ex()) for i, label in enumerate(labels)
    )


def random_protocol(rng: random.Random, n_atoms: int, *, extended: bool = False) -> Protocol:
    names = list(ATOM_POOL[:n_atoms])
    roles = [rng.choice(ROLES) for _ in names]
    fold = rng.random() < 0.5
    judges, contexts = _by_role(names, roles)
    pairs = [(j, c) for j in judges for c in contexts]
    rng.shuffle(pairs)
    defs, refs, j_refs, c_refs = _definitions(rng if extended else None, names, judges, contexts)

    def ex() -> Expr:
        e = random_expr(rng, names, rng.randrange(1, 5), refs)
        return smart(e) if fold else e

    constraints = tuple(Constraint(f"k{i}", ex()) for i in range(rng.randrange(3)))
    labels, decisions = BINARY_LABELS, ()
    decision: Expr | None = None
    if extended and rng.random() < 0.7:
        labels, decisions = _random_labels(rng, ex)
    else:
        decision = ex()
    requirements = tuple(
        Requirement(f"r{i}", "", ex(), ex() if rng.random() < 0.5 else None)
        for i in range(rng.randrange(3))
    )
    grounding = [GroundPair(j, c) for j, c in pairs[: rng.randrange(4 if extended else 3)]]
    if extended and judges and contexts:
        grounding = [
            GroundPair(
                _random_side(rng, judges, j_refs) if rng.random() < 0.5 else g.judge,
                _random_side(rng, contexts, c_refs) if rng.random() < 0.5 else g.context,
                direction=rng.choice(("~", "~>")),
            )
            for g in grounding
        ]
    return Protocol(
        name="random",
        text="a random protocol",
        atoms=tuple(AtomDecl(n, r) for n, r in zip(names, roles, strict=True)),
        constraints=constraints,
        decision=decision,
        requirements=requirements,
        grounding=tuple(grounding),
        labels=labels,
        decisions=decisions,
        definitions=tuple(defs),
    )


def random_provenance(rng: random.Random) -> Provenance | None:
    if rng.random() < 0.5:
        return None
    return Provenance(
        rng.choice(PROVENANCE_KINDS), rng.choice(("", "rule/1")), rng.choice((None, True, False))
    )


def random_replay(rng: random.Random, protocol: Protocol, *, extended: bool = False) -> Replay:
    annotations = []
    for decl in protocol.atoms:
        value = rng.choice(("TRUE", "FALSE", "UNKNOWN", None))
        if value is None:
            continue
        source = rng.choice(EVIDENCE_SOURCES[decl.role])
        text = SOURCES[source]
        start = rng.randrange(len(text))
        end = rng.randrange(start + 1, len(text) + 1)
        ev = (Evidence(source, start, end, text[start:end]),)
        by = random_provenance(rng) if extended else None
        annotations.append(Annotation(decl.name, value, ev, "", len(annotations), by))
    return Replay(
        id="seeded-case",
        protocol=protocol,
        verdict=rng.choice(protocol.labels),
        annotations=tuple(annotations),
        sources=dict(SOURCES),
        gold=rng.choice((None, *protocol.labels)),
    )


def deep_expr(atoms: Sequence[str], depth: int) -> Expr:
    """A chain of alternating operators ``depth`` levels deep (built without recursion)."""
    e: Expr = Atom(atoms[0])
    for i in range(depth):
        a = Atom(atoms[i % len(atoms)])
        op = i % 5
        if op == 0:
            e = Not(e)
        elif op == 1:
            e = Nary("and", (e, a)) if i % 2 else Nary("or", (a, e))
        elif op == 2:
            e = Nary("xor", (a, e))
        elif op == 3:
            e = Binary("iff" if i % 2 else "implies", e, a)
        else:
            e = Card("atleast", 1, (e, a, Not(a)))
    return e
