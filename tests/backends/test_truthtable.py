"""The truth-table backend: bit-parallel evaluation, components, pinning and its limit."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import atom_lists, deep_expr, exprs
from unmask.backends import Part, Sat, Unsat, create
from unmask.backends.truthtable import MAX_ATOMS
from unmask.ir import Atom, Binary, Card, Const, Nary, Not, evaluate
from unmask.ir.partial import card_mask, column, truth_mask
from unmask.plumbing.diagnostics import UnmaskError


def test_columns_are_the_alternating_patterns():
    assert column(3, 0) == 0b10101010
    assert column(3, 1) == 0b11001100
    assert column(3, 2) == 0b11110000
    assert column(1, 0) == 0b10


@given(atom_lists(1, 8), st.data())
def test_truth_mask_bit_t_is_the_value_under_assignment_t(atoms, data):
    expr = data.draw(exprs(atoms))
    index = {n: i for i, n in enumerate(atoms)}
    mask = truth_mask(expr, index, len(atoms))
    for t in range(1 << len(atoms)):
        env = {n: bool((t >> i) & 1) for n, i in index.items()}
        assert bool((mask >> t) & 1) == evaluate(expr, env)


@given(st.integers(0, 9), st.integers(0, 11), st.sampled_from(["atleast", "atmost", "exactly"]))
def test_card_mask_counts_exactly(n, k, op):
    full = (1 << (1 << n)) - 1
    mask = card_mask(op, k, [column(n, i) for i in range(n)], full)
    for t in range(1 << n):
        count = bin(t).count("1")
        expect = {"atleast": count >= k, "atmost": count <= k, "exactly": count == k}[op]
        assert bool((mask >> t) & 1) == expect


def chain(names):
    return Nary("and", tuple(Nary("or", (Atom(a), Atom(b))) for a, b in itertools.pairwise(names)))


def test_one_component_over_the_limit_is_a_diagnostic():
    names = [f"x{i}" for i in range(MAX_ATOMS + 3)]
    with create("truthtable").open([Part("constraint:k", chain(names))], names) as s:
        try:
            s.check()
        except UnmaskError as err:
            (d,) = err.diagnostics
            assert d.code == "truthtable-limit"
            assert str(MAX_ATOMS) in d.message and str(MAX_ATOMS + 3) in d.message
            assert "`--backend z3`" in (d.help or "") and "pysat" in (d.help or "")
        else:
            raise AssertionError("expected the truth-table limit")


def test_many_small_components_and_pinned_atoms_stay_under_the_limit():
    names = [f"x{i}" for i in range(400)]
    # 100 independent components of 4 atoms each
    parts = [Part(f"constraint:k{i}", chain(names[4 * i : 4 * i + 4])) for i in range(100)]
    # one long conjunction whose atoms are all but 5 pinned by unit facts
    parts.append(Part("decision", Binary("iff", Atom("v"), Nary("and", tuple(map(Atom, names))))))
    parts += [Part(f"fact:{n}", Atom(n)) for n in names[5:]]
    with create("truthtable").open(parts, [*names, "v"]) as s:
        result = s.check(Atom("v"), want=["v", "x0", "x399"])
        assert result == Sat({"v": True, "x0": True, "x399": True})
        refuted = s.check(Atom("v"), assume={"x1": False})
        assert isinstance(refuted, Unsat)
        assert "decision" in refuted.core
        # the core is valid: the decision plus the facts that pinned its atoms
        assert set(refuted.core) <= {"decision", *(f"fact:{n}" for n in names)}


def test_an_unsat_small_component_wins_over_an_oversized_one():
    big = [f"x{i}" for i in range(MAX_ATOMS + 1)]
    parts = [
        Part("constraint:big", chain(big)),
        Part("constraint:small", Nary("and", (Atom("p"), Not(Atom("p"))))),
    ]
    with create("truthtable").open(parts, [*big, "p"]) as s:
        assert s.check() == Unsat(("constraint:small",))


def test_conflicting_unit_facts_and_assumptions():
    parts = [
        Part("fact:a", Atom("a")),
        Part("constraint:na", Not(Atom("a"))),
        Part("fact:b", Atom("b")),
    ]
    with create("truthtable").open(parts, ["a", "b"]) as s:
        assert s.check() == Unsat(("fact:a", "constraint:na"))
        assert s.check(enabled=["fact:b"], assume={"b": False}) == Unsat(("fact:b",))
        assert s.check(Card("atleast", 2, (Atom("a"), Atom("b"))), enabled=["fact:b"]) == Sat({})
        assert s.check(want=["b", "a"], enabled=["fact:b"]) == Sat({"b": True, "a": False})


def test_definitions_are_eliminated_and_their_atoms_computed_in_models():
    names = [f"j{i}" for i in range(200)]
    decision = Part("decision", Binary("iff", Atom("v"), Nary("and", tuple(map(Atom, names)))))
    facts = [Part(f"fact:{n}", Atom(n)) for n in names[:199]]
    with create("truthtable").open([*facts, decision], [*names, "v"]) as s:
        # B_proto alone: 201 atoms, but v is defined by the decision: consistent
        assert s.check(enabled=["decision"], want=["v", "j0"]) == Sat({"v": False, "j0": False})
        # the query v puts the definition into the query, which splits into units
        assert s.check(Atom("v"), want=["v", "j199"]) == Sat({"v": True, "j199": True})
        assert s.check(Not(Atom("v")), want=["v", "j199"]) == Sat({"v": False, "j199": False})
        refuted = s.check(Atom("v"), assume={"j199": False})
        # valid, not minimal: the facts substituted into the decision come along
        assert isinstance(refuted, Unsat) and "decision" in refuted.core
        core = s.check(
            Not(Atom("v")),
            enabled=[p.label for p in facts[:3]] + ["decision"],
            assume={n: True for n in names[3:]},
        )
        assert isinstance(core, Unsat)
        assert set(core.core) == {"fact:j0", "fact:j1", "fact:j2", "decision"}


def test_deep_formulas_definitions_and_closed_terms_need_no_recursion():
    deep = deep_expr(["a", "b", "c"], 3000)
    closed = Const(True)
    for _ in range(3000):
        closed = Not(Nary("and", (closed,)))  # not folded: raw IR
    parts = [
        Part("decision", Binary("iff", Atom("v"), deep)),
        Part("constraint:closed", closed),
    ]
    mask = truth_mask(deep, {"a": 0, "b": 1, "c": 2}, 3)
    with create("truthtable").open(parts, ["a", "b", "c", "v"]) as s:
        result = s.check(want=["a", "b", "c", "v"])
        assert isinstance(result, Sat)
        t = sum(result.model[n] << i for i, n in enumerate("abc"))
        assert result.model["v"] == bool((mask >> t) & 1)
        assert isinstance(s.check(Atom("v")), Sat if mask else Unsat)
