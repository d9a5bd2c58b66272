"""The Tseitin encoder: exact projected model counts against brute force, sharing, depth."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pysat.solvers import Solver

from tests.strategies import atom_lists, deep_expr, exprs
from unmask.backends.cnf import CARD_ENCODINGS, CnfEncoder
from unmask.ir import Atom, Binary, Card, Const, Expr, Nary, Not, Span, evaluate
from unmask.ir.partial import truth_mask


def brute_models(expr: Expr, atoms: list[str]) -> set[tuple[bool, ...]]:
    out = set()
    for values in itertools.product((False, True), repeat=len(atoms)):
        if evaluate(expr, dict(zip(atoms, values, strict=True))):
            out.add(values)
    return out


def cnf_models(enc: CnfEncoder, atoms: list[str], assumptions: list[int]) -> set[tuple[bool, ...]]:
    """All models projected on the atom variables (blocking clauses on atoms only)."""
    found = set()
    vs = [enc.atom_var(a) for a in atoms]
    with Solver(name="minisat22", bootstrap_with=enc.clauses) as s:
        while s.solve(assumptions=assumptions):
            model = set(s.get_model())
            values = tuple(v in model for v in vs)
            assert values not in found
            found.add(values)
            s.add_clause([-v if v in model else v for v in vs])
    return found


@given(atom_lists(1, 8), st.data())
def test_projected_models_match_brute_force_both_polarities(atoms, data):
    expr = data.draw(exprs(atoms))
    enc = CnfEncoder(atoms)
    x = enc.lit(expr)
    want = brute_models(expr, atoms)
    assert cnf_models(enc, atoms, [x]) == want
    every = set(itertools.product((False, True), repeat=len(atoms)))
    # full equivalence: assuming the literal false gives exactly the non-models
    assert cnf_models(enc, atoms, [-x]) == every - want


@pytest.mark.parametrize("encoding", sorted(CARD_ENCODINGS))
@given(atoms=atom_lists(2, 6), data=st.data())
def test_every_card_encoding_is_exact(encoding, atoms, data):
    args = data.draw(st.lists(st.sampled_from(atoms).map(Atom) | exprs(atoms, 3), max_size=6))
    op = data.draw(st.sampled_from(["atleast", "atmost", "exactly"]))
    k = data.draw(st.integers(0, len(args) + 1))
    expr = Card(op, k, tuple(args))
    enc = CnfEncoder(atoms, card_encoding=CARD_ENCODINGS[encoding])
    x = enc.lit(expr)
    want = brute_models(expr, atoms)
    assert cnf_models(enc, atoms, [x]) == want
    every = set(itertools.product((False, True), repeat=len(atoms)))
    assert cnf_models(enc, atoms, [-x]) == every - want


def test_duplicate_and_complementary_card_arguments():
    a, b = Atom("a"), Atom("b")
    cases = [
        Card("atleast", 2, (a, a, b)),
        Card("exactly", 1, (a, Not(a), b)),
        Card("atmost", 1, (a, a, Not(b), Not(b))),
        Card("exactly", 2, (a, Not(a), a, b)),
    ]
    for expr in cases:
        enc = CnfEncoder(["a", "b"])
        assert cnf_models(enc, ["a", "b"], [enc.lit(expr)]) == brute_models(expr, ["a", "b"])


def test_atoms_get_the_first_variables_in_declaration_order():
    enc = CnfEncoder(["z", "a", "m"])
    assert dict(enc.atom_vars) == {"z": 1, "a": 2, "m": 3}
    x = enc.lit(Nary("and", (Atom("m"), Nary("or", (Atom("a"), Atom("z"))))))
    assert abs(x) > 3
    aux = {abs(lit) for c in enc.clauses for lit in c} - {1, 2, 3}
    assert aux and min(aux) > 3
    # an atom first seen in an expression gets the next free variable, after the aux ones
    late = enc.lit(Atom("late"))
    assert late == enc.top and late > max(aux)


def test_one_variable_per_distinct_subformula_ignoring_spans_and_order():
    span = Span("f.proto", 3, 4, 3, 9)
    shared = Nary("and", (Atom("a"), Atom("b")))
    twin = Nary("and", (Atom("b"), Atom("a", span)), span)
    enc = CnfEncoder(["a", "b", "c"])
    x = enc.lit(Nary("or", (shared, Atom("c"))))
    before = (enc.top, len(enc.clauses))
    assert enc.lit(twin) == enc.lit(shared)
    # the same disjunction written again, with other node objects, costs nothing
    y = enc.lit(Nary("or", (Atom("c"), twin)))
    assert y == x
    assert (enc.top, len(enc.clauses)) == before
    # not is free: it negates the literal of its argument
    assert enc.lit(Not(shared)) == -enc.lit(shared)
    # iff is the negated xor and shares its variable
    assert enc.lit(Binary("iff", Atom("a"), Atom("c"))) == -enc.lit(
        Nary("xor", (Atom("c"), Atom("a")))
    )


def test_constants_and_trivial_operators():
    enc = CnfEncoder(["a"])
    t = enc.lit(Const(True))
    assert enc.lit(Const(False)) == -t
    assert enc.lit(Nary("and", ())) == t
    assert enc.lit(Nary("or", ())) == -t
    assert enc.lit(Nary("xor", ())) == -t
    assert enc.lit(Nary("and", (Atom("a"),))) == 1
    assert enc.lit(Card("atleast", 0, ())) == t
    assert enc.lit(Card("atleast", 1, ())) == -t
    assert enc.lit(Nary("xor", (Atom("a"), Atom("a")))) == -t
    assert enc.lit(Nary("and", (Atom("a"), Not(Atom("a"))))) == -t


@pytest.mark.parametrize("depth", [250, 3000])
def test_deep_expressions_encode_without_recursion(depth):
    atoms = ["a", "b", "c"]
    expr = deep_expr(atoms, depth)
    enc = CnfEncoder(atoms)
    x = enc.lit(expr)
    # the bit-parallel evaluator is iterative too; compare every assignment's answer
    mask = truth_mask(expr, {n: i for i, n in enumerate(atoms)}, len(atoms))
    with Solver(name="minisat22", bootstrap_with=enc.clauses) as s:
        for t in range(8):
            pins = [enc.atom_var(n) * (1 if (t >> i) & 1 else -1) for i, n in enumerate(atoms)]
            assert s.solve(assumptions=[*pins, x]) == bool((mask >> t) & 1)


@given(atoms=atom_lists(3, 7), data=st.data())
def test_the_reified_encoding_past_its_totalizer_budget_is_exact(atoms, data):
    # past TOTALIZER_BUDGET the arguments are summed in binary (adders, then a comparison)
    import unmask.backends.cnf as cnf

    args = data.draw(st.lists(st.sampled_from(atoms).map(Atom), min_size=3, max_size=7))
    op = data.draw(st.sampled_from(["atleast", "atmost", "exactly"]))
    k = data.draw(st.integers(0, len(args) + 1))
    expr = Card(op, k, tuple(args))
    saved = cnf.TOTALIZER_BUDGET
    cnf.TOTALIZER_BUDGET = 0
    try:
        enc = CnfEncoder(atoms)
        x = enc.lit(expr)
    finally:
        cnf.TOTALIZER_BUDGET = saved
    want = brute_models(expr, atoms)
    assert cnf_models(enc, atoms, [x]) == want
    every = set(itertools.product((False, True), repeat=len(atoms)))
    assert cnf_models(enc, atoms, [-x]) == every - want


def test_the_binary_sum_is_exact_for_every_bound_up_to_nine_arguments() -> None:

    for n in range(1, 10):
        atoms = [f"a{i}" for i in range(n)]
        every = set(itertools.product((False, True), repeat=n))
        for k in range(n + 2):
            enc = CnfEncoder(atoms)
            x = enc._sum_atleast(tuple(enc.atom_var(a) for a in atoms), k)
            want = {t for t in every if sum(t) >= k}
            assert cnf_models(enc, atoms, [x]) == want, (n, k)
            assert cnf_models(enc, atoms, [-x]) == every - want, (n, k)


def test_a_cardinality_over_20000_arguments_is_encoded_in_linear_size() -> None:
    # a bound far from both ends: the network took 62 s and 3.7 GB here, the sum is O(n)
    n = 20_000
    atoms = [f"a{i}" for i in range(n)]
    for op, k in (("atleast", n // 2), ("exactly", n // 2), ("atmost", n // 3)):
        enc = CnfEncoder(atoms)
        enc.lit(Card(op, k, tuple(Atom(a) for a in atoms)))
        assert len(enc.clauses) < 40 * n, (op, len(enc.clauses))
        assert enc.top < 12 * n
