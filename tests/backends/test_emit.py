"""SMT-LIB and DIMACS emission: both read back by other tools mean exactly B_proto."""

from __future__ import annotations

import itertools

import z3
from hypothesis import given
from pysat.formula import CNF

from tests.helpers import dimacs_models, dimacs_vars, smt2_models
from tests.strategies import protocols
from unmask.backends.emit import VERDICT, emit_dimacs, emit_smt2, smt2_symbols
from unmask.ir import Atom, AtomDecl, Card, Constraint, Nary, Not, Protocol, evaluate

V = "$pass"


def proto_models(p: Protocol) -> set[tuple[bool, ...]]:
    """Models of B_proto = K and (V <=> D) over the atoms then V, by brute force."""
    names = [*p.atom_names, V]
    out = set()
    for values in itertools.product((False, True), repeat=len(names)):
        env = dict(zip(names, values, strict=True))
        if all(evaluate(c.expr, env) for c in p.constraints) and env[V] == evaluate(
            p.decision, env
        ):
            out.add(values)
    return out


@given(protocols(max_atoms=5))
def test_dimacs_read_back_and_solved_by_another_solver_has_the_models_of_b_proto(p):
    text = emit_dimacs(p)
    cnf = CNF(from_string=text)
    header = next(line for line in text.splitlines() if line.startswith("p cnf"))
    assert header == f"p cnf {cnf.nv} {len(cnf.clauses)}"
    table = dimacs_vars(text, lambda _name: V)
    names = [*p.atom_names, V]
    # atoms get 1..n in declaration order, the verdict n+1
    assert [table[n] for n in names] == list(range(1, len(names) + 1))
    assert dimacs_models(text, table, names) == proto_models(p)


@given(protocols(max_atoms=4))
def test_smt2_read_back_by_z3_has_the_models_of_b_proto(p):
    symbols = smt2_symbols(p)
    names = [*p.atom_names, V]
    assert smt2_models(emit_smt2(p), [symbols[n] for n in names]) == proto_models(p)


def test_smt2_layout_names_and_quoting():
    p = Protocol(
        name="demo",
        text="",
        atoms=(
            AtomDecl("supported(c1)", "judge", "says\nso"),
            AtomDecl("ite", "context"),
            AtomDecl("ite_", "context"),
        ),
        constraints=(Constraint("k", Card("atmost", 1, (Atom("ite"), Atom("ite_")))),),
        decision=Nary("and", (Atom("supported(c1)"), Not(Atom("ite")))),
        requirements=(),
        grounding=(),
    )
    text = emit_smt2(p)
    lines = text.splitlines()
    assert "(set-logic QF_LIA)" in lines  # a cardinality needs integer sums
    decls = [ln for ln in lines if ln.startswith("(declare-const")]
    assert [d.split()[1] for d in decls] == ["|supported(c1)|", "ite__", "ite_", VERDICT]
    assert decls[0].endswith("; judge says so")  # descriptions stay on one line
    assert "(atom `ite`)" in decls[1]
    assert "(assert (! (<= (+ (ite ite__ 1 0) (ite ite_ 1 0)) 1) :named constraint_k))" in lines
    assert lines[-1] == "(check-sat)"
    assert emit_smt2(p) == text  # byte-stable


def test_dimacs_names_constraint_and_decision_literals():
    p = Protocol(
        name="demo",
        text="",
        atoms=(AtomDecl("a", "judge"), AtomDecl("b", "context")),
        constraints=(Constraint("k", Nary("or", (Atom("a"), Atom("b")))),),
        decision=Atom("a"),
        requirements=(),
        grounding=(),
    )
    lines = emit_dimacs(p).splitlines()
    assert "c var 1 atom a judge" in lines and "c var 3 verdict pass" in lines
    k = int(next(ln for ln in lines if ln.startswith("c constraint k literal")).split()[-1])
    d = int(next(ln for ln in lines if ln.startswith("c decision literal")).split()[-1])
    body = [ln for ln in lines if not ln.startswith(("c", "p"))]
    assert f"{k} 0" in body and f"{d} 0" in body


def test_assertion_names_never_clash_with_atoms():
    p = Protocol(
        name="clash",
        text="",
        atoms=(AtomDecl("decision", "judge"), AtomDecl("constraint_k", "context")),
        constraints=(Constraint("k", Atom("constraint_k")),),
        decision=Atom("decision"),
        requirements=(),
        grounding=(),
    )
    text = emit_smt2(p)
    assert "(assert (! constraint_k :named constraint_k_))" in text.splitlines()
    assert "(assert (! (= pass decision) :named decision_))" in text.splitlines()
    s = z3.Solver()
    s.from_string(text)  # z3 rejects a script that names an assertion like a constant
    assert s.check() == z3.sat
    assert proto_models(p) == {(False, True, False), (True, True, True)}


def test_a_control_character_in_a_description_does_not_cut_the_script_short():
    # z3 reads a script as a C string: a NUL in a comment used to end it there
    p = Protocol(
        name="nul\x00name",
        text="",
        atoms=(AtomDecl("a", "judge", "x\x00y\x1b"),),
        constraints=(),
        decision=Atom("a"),
        requirements=(),
        grounding=(),
    )
    text = emit_smt2(p)
    assert "\x00" not in text and "\x1b" not in text
    assert "; judge x\\u0000y\\u001b" in text
    s = z3.Solver()
    s.from_string(text)
    assert len(s.assertions()) == 1
    assert "\x00" not in emit_dimacs(p)
