"""Random expressions, protocols and replays for property tests (hypothesis and seeded).

Contract: every value generated is valid input: expressions use only the given atom names
and well-formed operators (raw nodes, so unfolded constants, empty and one-argument n-ary
operators and trivial cardinality bounds all occur; pass them through ``smart`` for the
folded form the compiler builds); protocols follow the language's rules (grounding pairs are
judge ~ context, the verdict variable is not an atom); replays carry annotations whose
evidence spans are in range, fit the atom's role and quote the source exactly. Other test
modules may import these strategies.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import strategies as st

from unmask.ir import (
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
    Expr,
    GroundPair,
    Nary,
    Not,
    Protocol,
    Requirement,
)
from unmask.model import EVIDENCE_SOURCES, Annotation, Evidence, Replay

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


def smart(e: Expr) -> Expr:
    """``e`` rebuilt through the smart constructors (iteratively: e may be deep)."""
    from unmask.ireval import smart as rebuild

    return rebuild(e)


# --- hypothesis strategies -------------------------------------------------------------------


def exprs(atoms: Sequence[str], max_leaves: int = 14) -> st.SearchStrategy[Expr]:
    """Random raw expressions over ``atoms`` with every operator."""
    leaves = st.one_of(
        st.sampled_from(list(atoms)).map(Atom),
        st.sampled_from(list(atoms)).map(Atom),
        st.booleans().map(Const),
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
def protocols(draw: st.DrawFn, max_atoms: int = 10, fold: bool | None = None) -> Protocol:
    names = draw(atom_lists(1, min(max_atoms, len(ATOM_POOL))))
    roles = [draw(st.sampled_from(ROLES)) for _ in names]
    folded = draw(st.booleans()) if fold is None else fold
    e = exprs(names, max_leaves=10).map(smart if folded else (lambda x: x))

    constraints = [Constraint(f"k{i}", x) for i, x in enumerate(draw(st.lists(e, max_size=2)))]
    if draw(st.integers(0, 9)) == 0:  # sometimes a plainly contradictory protocol
        a = Atom(names[0])
        constraints += [Constraint("pin", a), Constraint("unpin", Not(a))]
    requirements = [
        Requirement(f"r{i}", f"requirement {i}", q, draw(st.none() | e))
        for i, q in enumerate(draw(st.lists(e, max_size=3)))
    ]
    judges = [n for n, r in zip(names, roles, strict=True) if r == "judge"]
    contexts = [n for n, r in zip(names, roles, strict=True) if r == "context"]
    pairs = [(j, c) for j in judges for c in contexts]
    grounding = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=3)) if pairs else []
    return Protocol(
        name="random",
        text="a random protocol",
        atoms=tuple(AtomDecl(n, r, f"atom {n}") for n, r in zip(names, roles, strict=True)),
        constraints=tuple(constraints),
        decision=draw(e),
        requirements=tuple(requirements),
        grounding=tuple(GroundPair(j, c) for j, c in grounding),
    )


@st.composite
def evidence_for(draw: st.DrawFn, role: str) -> Evidence:
    source = draw(st.sampled_from(EVIDENCE_SOURCES[role]))
    text = SOURCES[source]
    start = draw(st.integers(0, len(text) - 1))
    end = draw(st.integers(start + 1, len(text)))
    return Evidence(source, start, end, text[start:end])


@st.composite
def replays(draw: st.DrawFn, protocol: Protocol | None = None, max_atoms: int = 10) -> Replay:
    p = protocol if protocol is not None else draw(protocols(max_atoms=max_atoms))
    annotations = []
    for decl in p.atoms:
        value = draw(st.sampled_from(("TRUE", "FALSE", "UNKNOWN", None)))
        if value is None:
            continue  # unannotated
        lo = 0 if value == "UNKNOWN" else 1
        ev = draw(st.lists(evidence_for(decl.role), min_size=lo, max_size=2))
        annotations.append(Annotation(decl.name, value, tuple(ev), f"why {decl.name}"))
    annotations = draw(st.permutations(annotations))
    return Replay(
        id="random-case",
        protocol=p,
        verdict=draw(st.sampled_from(("PASS", "FAIL"))),
        annotations=tuple(
            Annotation(a.atom, a.value, a.evidence, a.explanation, i)
            for i, a in enumerate(annotations)
        ),
        sources=dict(SOURCES),
        # mostly valid; otherwise the result is UNKNOWN before any solver runs
        translation=draw(st.sampled_from(("valid",) * 8 + ("partial", "invalid"))),
        gold=draw(st.sampled_from((None, "PASS", "FAIL"))),
    )


# --- seeded generators (fast, for exhaustive sweeps) -----------------------------------------


def random_expr(rng: random.Random, atoms: Sequence[str], depth: int = 4) -> Expr:
    """A raw random expression of nesting at most ``depth``."""
    if depth <= 0 or rng.random() < 0.25:
        if rng.random() < 0.08:
            return Const(rng.random() < 0.5)
        return Atom(rng.choice(atoms))
    kind = rng.randrange(4)
    if kind == 0:
        return Not(random_expr(rng, atoms, depth - 1))
    if kind == 1:
        n = rng.choice((0, 1, 2, 2, 3, 3, 4))
        args = tuple(random_expr(rng, atoms, depth - 1) for _ in range(n))
        return Nary(rng.choice(NARY_OPS), args)
    if kind == 2:
        return Binary(
            rng.choice(BINARY_OPS),
            random_expr(rng, atoms, depth - 1),
            random_expr(rng, atoms, depth - 1),
        )
    n = rng.randrange(0, 5)
    args = tuple(random_expr(rng, atoms, depth - 1) for _ in range(n))
    return Card(rng.choice(CARD_OPS), rng.randrange(0, n + 2), args)


def random_protocol(rng: random.Random, n_atoms: int) -> Protocol:
    names = list(ATOM_POOL[:n_atoms])
    roles = [rng.choice(ROLES) for _ in names]
    fold = rng.random() < 0.5

    def ex() -> Expr:
        e = random_expr(rng, names, rng.randrange(1, 5))
        return smart(e) if fold else e

    judges = [n for n, r in zip(names, roles, strict=True) if r == "judge"]
    contexts = [n for n, r in zip(names, roles, strict=True) if r == "context"]
    pairs = [(j, c) for j in judges for c in contexts]
    rng.shuffle(pairs)
    return Protocol(
        name="random",
        text="a random protocol",
        atoms=tuple(AtomDecl(n, r) for n, r in zip(names, roles, strict=True)),
        constraints=tuple(Constraint(f"k{i}", ex()) for i in range(rng.randrange(3))),
        decision=ex(),
        requirements=tuple(
            Requirement(f"r{i}", "", ex(), ex() if rng.random() < 0.5 else None)
            for i in range(rng.randrange(3))
        ),
        grounding=tuple(GroundPair(j, c) for j, c in pairs[: rng.randrange(3)]),
    )


def random_replay(rng: random.Random, protocol: Protocol) -> Replay:
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
        annotations.append(Annotation(decl.name, value, ev, "", len(annotations)))
    return Replay(
        id="seeded-case",
        protocol=protocol,
        verdict=rng.choice(("PASS", "FAIL")),
        annotations=tuple(annotations),
        sources=dict(SOURCES),
        gold=rng.choice((None, "PASS", "FAIL")),
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
