"""The PySAT backend: solver selection, incremental queries, cores, timeouts, determinism."""

from __future__ import annotations

import pytest
from pysat.examples.genhard import PHP

from unmask.backends import Part, Sat, Unknown, Unsat, create
from unmask.backends.pysat_backend import (
    BUDGETED,
    DEFAULT_SOLVER,
    INTERRUPTIBLE,
    SUPPORTED,
    PySatBackend,
)
from unmask.ir import Atom, Binary, Card, Nary, Not
from unmask.plumbing.diagnostics import UnmaskError

A, B, C = Atom("a"), Atom("b"), Atom("c")
PARTS = [
    Part("fact:a", A),
    Part("constraint:one", Card("exactly", 1, (A, B, C))),
    Part("decision", Binary("iff", Atom("$pass"), Nary("or", (B, C)))),
]


@pytest.mark.parametrize("solver", SUPPORTED)
def test_every_usable_solver_answers_the_same(solver):
    backend = create(f"pysat:{solver}")
    assert isinstance(backend, PySatBackend) and backend.solver_name == solver
    with backend.open(PARTS, ["a", "b", "c", "$pass"]) as s:
        assert s.check(want=["a", "b", "c", "$pass"]) == Sat(
            {"a": True, "b": False, "c": False, "$pass": False}
        )
        assert s.check(Atom("$pass")) == Unsat(("fact:a", "constraint:one", "decision"))
        assert s.check(Atom("$pass"), enabled=["constraint:one", "decision"]) == Sat({})


def test_aliases_and_default():
    assert create("pysat").solver_name == DEFAULT_SOLVER
    assert create("pysat:g4").solver_name == "glucose4"
    assert create("pysat:MiniSat22").solver_name == "minisat22"


def test_unknown_solver_is_a_diagnostic_with_a_suggestion():
    with pytest.raises(UnmaskError) as err:
        create("pysat:glucos4")
    (d,) = err.value.diagnostics
    assert d.code == "unknown-solver"
    # one sentence: the usable solvers follow the suggestion, in help
    assert d.message == "unknown pysat solver `glucos4`"
    assert d.help.startswith("did you mean `pysat:glucose4`? the usable solvers are ")
    assert "`cadical195`" in d.help


@pytest.mark.parametrize("name", ["kissat", "lingeling"])
def test_solvers_without_assumption_cores_or_limits_are_refused(name):
    with pytest.raises(UnmaskError) as err:
        create(f"pysat:{name}")
    (d,) = err.value.diagnostics
    assert d.code == "unknown-solver"
    assert "cannot answer under assumptions" in d.message
    assert DEFAULT_SOLVER in (d.help or "")


@pytest.mark.parametrize("solver", sorted({DEFAULT_SOLVER, INTERRUPTIBLE[1], BUDGETED[1]}))
def test_timeout_is_unknown_and_the_session_recovers(solver):
    # pigeonhole 11 into 10 is hard for resolution: no solver finishes it in 150 ms
    php = PHP(10)
    atoms = [f"p{v}" for v in range(1, php.nv + 1)]
    lit = {v: Atom(f"p{v}") for v in range(1, php.nv + 1)}
    clauses = [Nary("or", tuple(lit[x] if x > 0 else Not(lit[-x]) for x in c)) for c in php.clauses]
    parts = [Part(f"constraint:c{i}", c) for i, c in enumerate(clauses)]
    with create(f"pysat:{solver}", timeout_ms=150).open(parts, atoms) as s:
        assert s.check() == Unknown("timeout after 150 ms")
        assert isinstance(s.check(enabled=[p.label for p in parts[:20]]), Sat)
        assert s.calls == 2


def test_query_clauses_are_added_once_per_distinct_query():
    with create("pysat").open(PARTS, ["a", "b", "c", "$pass"]) as s:
        query = Nary("and", (B, Not(C)))
        s.check(query)
        size = len(s.enc.clauses)
        s.check(Nary("and", (Not(C), B)))  # the same query, other node objects and order
        s.check(Not(query))  # negation costs no clause either
        assert len(s.enc.clauses) == size


def test_models_are_deterministic_across_sessions():
    parts = [Part("constraint:k", Card("atleast", 2, (A, B, C, Atom("d"))))]
    want = ["a", "b", "c", "d"]
    runs = []
    for _ in range(3):
        with create("pysat").open(parts, want) as s:
            runs.append((s.check(want=want), s.check(Not(A), want=want)))
    assert runs[0] == runs[1] == runs[2]


def test_core_maps_back_to_labels_only():
    parts = [
        Part("fact:a", A),
        Part("fact:b", B),
        Part("constraint:not_both", Not(Nary("and", (A, B)))),
        Part("constraint:unrelated", Nary("or", (C, Atom("d")))),
    ]
    with create("pysat").open(parts, ["a", "b", "c", "d"]) as s:
        result = s.check(assume={"c": False})
        assert isinstance(result, Unsat)
        assert set(result.core) == {"fact:a", "fact:b", "constraint:not_both"}
