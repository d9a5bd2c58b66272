"""The truth-table backend refuses a component that cannot fit before simplifying it.

Its simplification puts each definition (``v iff D``) into every formula holding ``v``,
one at a time, re-folding them each round: on n first-match labels that was n^3 (250
labels: minutes) before the refusal it always ended in. ``_screen`` replays the
eliminations on atom sets when no substitution can fold anything, and leaves out the
components that end too big: the refusal then costs no substitution at all, and every
answer (a model, a core, the refusal and its count) is the one the full simplification
gives; the differential test below holds the two side by side on random bases.
"""

from __future__ import annotations

import random
from unittest import mock

import pytest

from tests.checking.test_first_match_scale import first_match_source
from tests.strategies import random_expr, smart
from unmask.backends import Part, create
from unmask.backends import truthtable as tt
from unmask.checking.bases import proto_parts, verdict_atoms
from unmask.ir import (
    Atom,
    Binary,
    Card,
    Const,
    Expr,
    Nary,
    Not,
    Ref,
    children,
    mk_binary,
    mk_card,
    mk_nary,
    mk_not,
)
from unmask.language.compiler import compile_source
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import UnmaskError


def _outcome(parts, atoms, query=None, assume=None):  # type: ignore[no-untyped-def]
    with create("truthtable").open(parts, atoms) as s:
        try:
            return "answer", s.check(query, assume=assume, want=atoms)
        except UnmaskError as err:
            return "refused", [(d.code, d.message, d.help) for d in err.diagnostics]


def _unscreened(rest):  # type: ignore[no-untyped-def]
    return [], rest


class _Counted:
    """Counts the substitutions the simplification makes."""

    def __init__(self) -> None:
        self.calls = 0
        self.real = tt.substitute

    def __call__(self, e: Expr, values):  # type: ignore[no-untyped-def]
        self.calls += 1
        return self.real(e, values)


def _first_match(n: int):  # type: ignore[no-untyped-def]
    p = compile_source(first_match_source(n, grounded=False), "fm.proto")
    return proto_parts(p), [*p.atom_names, *verdict_atoms(p)]


@pytest.mark.parametrize("n", [30, 120])
def test_first_match_labels_are_refused_without_a_substitution(n: int) -> None:
    parts, atoms = _first_match(n)
    counted = _Counted()
    with mock.patch.object(tt, "substitute", counted):
        kind, got = _outcome(parts, atoms)
    assert kind == "refused"
    ((code, message, help_),) = got
    assert code == Code.TRUTHTABLE_LIMIT
    assert message == (
        f"this check needs {n} interdependent unknown atoms, but the truth-table backend "
        f"enumerates at most {tt.MAX_ATOMS}"
    )
    assert help_ == "use `--backend z3` or `--backend pysat` for this replay"
    assert counted.calls == 0
    # the full simplification gives the same refusal after one substitution per label,
    # each re-folding every decision put in before it
    full = _Counted()
    with mock.patch.object(tt, "substitute", full), mock.patch.object(tt, "_screen", _unscreened):
        assert _outcome(parts, atoms) == (kind, got)
    assert full.calls > n


def test_a_small_unsat_component_still_wins_over_one_left_out() -> None:
    parts, atoms = _first_match(40)
    clash = [Part("fact:z", Atom("z")), Part("constraint:no-z", Not(Atom("z")))]
    kind, got = _outcome([*parts, *clash], [*atoms, "z"])
    assert kind == "answer" and set(got.core) == {"fact:z", "constraint:no-z"}
    small = [Part("constraint:z-or-y", Binary("implies", Atom("z"), Atom("y")))]
    kind, got = _outcome([*parts, *small], [*atoms, "z", "y"])
    assert kind == "refused" and "needs 40 interdependent" in got[0][1]


def _random_base(rng: random.Random):  # type: ignore[no-untyped-def]
    atoms = [f"a{i}" for i in range(rng.randrange(4, 10))]
    defined = [f"v{i}" for i in range(rng.randrange(0, 9))]
    pool = atoms + defined
    raw = rng.random() < 0.2  # some bases keep raw formulas: nothing is left out then
    # uses of definitions, which a substitution writes out as their bodies
    refs = [Ref(f"d{i}", smart(random_expr(rng, atoms, depth=2))) for i in range(2)]
    refs = [r for r in refs if not isinstance(r.body, Const)] if rng.random() < 0.7 else []

    def formula() -> Expr:
        e = random_expr(rng, pool, depth=3, refs=refs)
        return e if raw else _keep_refs(e)

    parts: list[Part] = []
    for i, v in enumerate(defined):
        body = formula()
        side: Expr = Atom(v) if rng.random() < 0.8 else Not(Atom(v))
        pair = (side, body) if rng.random() < 0.7 else (body, side)
        parts.append(Part(f"decision:{i}", Binary("iff", *pair)))
    for i in range(rng.randrange(0, 6)):
        parts.append(Part(f"constraint:{i}", formula()))
    if defined and rng.random() < 0.5:
        parts.append(Part("labels", mk_card("exactly", 1, [Atom(v) for v in defined])))
    for a in rng.sample(pool, rng.randrange(0, 2)):
        parts.append(Part(f"fact:{a}", Atom(a) if rng.random() < 0.5 else Not(Atom(a))))
    rng.shuffle(parts)
    query = formula() if rng.random() < 0.5 else None
    assume = {a: rng.random() < 0.5 for a in rng.sample(pool, rng.randrange(0, 2))}
    return parts, pool, query, assume


def _keep_refs(e: Expr) -> Expr:
    """``e`` rebuilt through the smart constructors, its uses of definitions kept."""
    if isinstance(e, Ref):
        return e
    if isinstance(e, Not):
        return mk_not(_keep_refs(e.arg))
    if isinstance(e, Nary):
        return mk_nary(e.op, [_keep_refs(a) for a in e.args])
    if isinstance(e, Binary):
        return mk_binary(e.op, _keep_refs(e.left), _keep_refs(e.right))
    if isinstance(e, Card):
        return mk_card(e.op, e.k, [_keep_refs(a) for a in e.args])
    return e


def _has_ref(e: Expr) -> bool:
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, Ref):
            return True
        stack.extend(children(node))
    return False


def test_every_answer_is_the_full_simplifications() -> None:
    rng = random.Random(20261206)
    screened = differ = 0
    real = tt._screen

    with_refs = 0

    def spy(rest):  # type: ignore[no-untyped-def]
        nonlocal screened, with_refs
        got = real(rest)
        screened += bool(got[0])
        with_refs += bool(got[0]) and any(_has_ref(e) for _, e, _ in rest)
        return got

    for _ in range(1200):
        parts, atoms, query, assume = _random_base(rng)
        limit = rng.choice((2, 3, 4))
        with mock.patch.object(tt, "MAX_ATOMS", limit):
            with mock.patch.object(tt, "_screen", spy):
                got = _outcome(parts, atoms, query, assume)
            with mock.patch.object(tt, "_screen", _unscreened):
                want = _outcome(parts, atoms, query, assume)
        assert got == want, (parts, query, assume, limit)
        differ += got[0] == "refused"
    # not vacuous: many bases had a component left out, and many were refused
    assert screened > 40 and with_refs > 12 and differ > 130
