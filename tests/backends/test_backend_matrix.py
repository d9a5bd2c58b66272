"""Session-level conformance of every registered backend against brute force.

Each test takes the ``backend_name`` fixture, so it runs once per backend: sat/unsat under
enabled subsets and assumptions, cores are unsatisfiable subsets of the enabled labels,
models hold exactly the wanted atoms and satisfy everything that was asked. Bases include
uses of definitions and the parts of a protocol with declared labels (verdict variables
``$v:LABEL``, exactly one of them, a decision each).
"""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import atom_lists, exprs
from unmask.backends import Part, Sat, Unsat, create
from unmask.ir import Atom, Binary, Card, Const, Expr, Nary, Not, Ref, evaluate


def brute_sat(formulas: list[Expr], atoms: list[str], assume: dict[str, bool]) -> bool:
    for values in itertools.product((False, True), repeat=len(atoms)):
        env = dict(zip(atoms, values, strict=True))
        if any(env[a] != v for a, v in assume.items()):
            continue
        if all(evaluate(f, env) for f in formulas):
            return True
    return False


@st.composite
def bases(draw):
    atoms = draw(atom_lists(1, 6))
    # a definition is used by name and means its body
    refs = [Ref("d", draw(exprs(atoms, max_leaves=4)))] if draw(st.booleans()) else []
    e = exprs(atoms, max_leaves=8, refs=refs)
    facts = draw(st.dictionaries(st.sampled_from(atoms), st.booleans(), max_size=len(atoms)))
    parts = [Part(f"fact:{a}", Atom(a) if v else Not(Atom(a))) for a, v in facts.items()]
    parts += [Part(f"constraint:k{i}", x) for i, x in enumerate(draw(st.lists(e, max_size=3)))]
    if draw(st.booleans()):
        parts.append(Part("decision", draw(e)))
    elif draw(st.booleans()):
        # declared labels: one verdict variable per label, exactly one of them, a decision each
        labels = draw(st.lists(st.sampled_from(("yes", "no", "maybe")), min_size=2, unique=True))
        variables = [Atom(f"$v:{x}") for x in labels]
        atoms = [*atoms, *(v.name for v in variables)]
        parts.append(Part("labels", Card("exactly", 1, tuple(variables))))
        parts += [Part(f"decision:{v.name[3:]}", Binary("iff", v, draw(e))) for v in variables]
    parts = draw(st.permutations(parts))
    return atoms, parts, e


# the fixture is only a backend name: nothing in it needs resetting between examples
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bases(), st.data())
def test_checks_agree_with_brute_force(backend_name, base, data):
    atoms, parts, e = base
    session = create(backend_name).open(parts, atoms)
    labels = [p.label for p in parts]
    for _ in range(3):  # several checks on one session: incremental answers stay right
        pick = st.lists(st.sampled_from(labels), unique=True) if labels else st.just([])
        enabled = data.draw(st.none() | pick)
        query = data.draw(st.none() | e)
        assume = data.draw(st.dictionaries(st.sampled_from(atoms), st.booleans(), max_size=2))
        on = [p for p in parts if enabled is None or p.label in enabled]
        formulas = [p.expr for p in on] + ([query] if query is not None else [])
        result = session.check(query, enabled=enabled, assume=assume, want=atoms)
        expected = brute_sat(formulas, atoms, assume)
        if expected:
            assert isinstance(result, Sat)
            assert set(result.model) == set(atoms)
            env = dict(result.model)
            assert all(evaluate(f, env) for f in formulas)
            assert all(env[a] == v for a, v in assume.items())
        else:
            assert isinstance(result, Unsat)
            assert set(result.core) <= {p.label for p in on}
            core = [p.expr for p in parts if p.label in result.core]
            core += [query] if query is not None else []
            assert not brute_sat(core, atoms, assume)
    session.close()


def test_want_names_exactly_the_atoms_asked_for(backend_name):
    parts = [Part("fact:a", Atom("a")), Part("constraint:k", Nary("or", (Atom("b"), Atom("c"))))]
    with create(backend_name).open(parts, ["a", "b", "c", "free"]) as session:
        result = session.check(want=["free", "a"])
        assert isinstance(result, Sat)
        assert list(result.model) == ["free", "a"]
        assert result.model["a"] is True
        assert session.check(Not(Atom("a")), want=["b"]) == Unsat(("fact:a",))
        assert isinstance(session.check(), Sat) and session.check(want=[]) == Sat({})


def test_enabled_subsets_and_assumptions(backend_name):
    a, b = Atom("a"), Atom("b")
    parts = [
        Part("fact:a", a),
        Part("fact:b", Not(b)),
        Part("constraint:link", Nary("or", (Not(a), b))),
    ]
    with create(backend_name).open(parts, ["a", "b"]) as s:
        full = s.check()
        assert isinstance(full, Unsat)
        assert set(full.core) == {"fact:a", "fact:b", "constraint:link"}
        assert isinstance(s.check(enabled=["fact:a", "fact:b"]), Sat)
        assert isinstance(s.check(enabled=[]), Sat)
        only_link = s.check(enabled=["constraint:link"], assume={"a": True, "b": False})
        assert isinstance(only_link, Unsat)
        assert only_link.core == ("constraint:link",)
        assert s.check(Const(False), enabled=[]) == Unsat(())
        assert s.check(enabled=["fact:a"], assume={"a": False}) == Unsat(("fact:a",))
        model = s.check(enabled=["constraint:link"], assume={"a": True}, want=["b"])
        assert model == Sat({"b": True})
        assert s.calls == 7


def test_calls_are_counted_per_session(backend_name):
    backend = create(backend_name)
    s1 = backend.open([Part("fact:a", Atom("a"))], ["a"])
    s2 = backend.open([Part("fact:a", Not(Atom("a")))], ["a"])
    s1.check()
    s1.check(Atom("a"))
    s2.check()
    assert (s1.calls, s2.calls) == (2, 1)
    assert s1.check(want=["a"]) == Sat({"a": True})
    assert s2.check(want=["a"]) == Sat({"a": False})
    s1.close()
    s2.close()


def test_a_deep_formula_is_decided_without_recursion(backend_name):
    from tests.strategies import deep_expr

    deep = deep_expr(["a", "b"], 6000)
    facts = [Part("fact:a", Atom("a")), Part("fact:b", Not(Atom("b")))]
    session = create(backend_name).open([*facts, Part("decision", deep)], ["a", "b"])
    expected = evaluate(deep, {"a": True, "b": False})
    assert isinstance(session.check(), Sat if expected else Unsat)
    assert isinstance(
        session.check(Not(deep), enabled=["fact:a", "fact:b"]), Unsat if expected else Sat
    )


def test_register_refuses_a_taken_name_unless_told_to_replace():
    import pytest

    from unmask.backends import _REGISTRY, register

    before = dict(_REGISTRY)
    try:
        with pytest.raises(ValueError, match="`z3` is already registered"):
            register("z3", "unmask.backends.pysat_backend:PySatBackend")
        assert _REGISTRY["z3"] == before["z3"]
        register("z3", "unmask.backends.pysat_backend:PySatBackend", replace=True)
        assert create("z3").name == "pysat"
        register("extra", "unmask.backends.truthtable:TruthTableBackend")
        assert create("extra").name == "truthtable"
    finally:
        _REGISTRY.clear()
        _REGISTRY.update(before)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60)
@given(
    n=st.integers(1, 9),
    op=st.sampled_from(["atleast", "atmost", "exactly"]),
    data=st.data(),
)
def test_cardinalities_at_every_bound_agree_with_brute_force(backend_name, n, op, data):
    # every bound from 0 to n+1 over up to 9 arguments, some negated or repeated: the CNF
    # backends' capped totalizer counts the true arguments or the false ones
    atoms = [f"x{i}" for i in range(n)]
    args = data.draw(
        st.lists(
            st.sampled_from(atoms).map(Atom) | st.sampled_from(atoms).map(lambda a: Not(Atom(a))),
            min_size=1,
            max_size=n + 2,
        )
    )
    k = data.draw(st.integers(0, len(args) + 1))
    card = Card(op, k, tuple(args))
    session = create(backend_name).open([Part("card", card)], atoms)
    for negate in (False, True):
        query = Not(card) if negate else None
        assume = data.draw(st.dictionaries(st.sampled_from(atoms), st.booleans(), max_size=3))
        formulas = [card] + ([query] if query is not None else [])
        result = session.check(query, assume=assume, want=atoms)
        assert isinstance(result, Sat) == brute_sat(formulas, atoms, assume)
    session.close()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=25)
@given(data=st.data())
def test_protocols_over_several_domains_agree_with_brute_force(backend_name, data):
    # a protocol over two domains, compiled: its atoms are named `cites(c1, p2)`, with a
    # comma and a space (ten atoms, so that brute force stays quick)
    from unmask.language.compiler import compile_source

    k = data.draw(st.integers(0, 5))
    decision = data.draw(
        st.sampled_from(
            [
                "all(any(cites(c, p) for p in passage) for c in claim)",
                f"atleast({k}, cites(c, p) xor backs(p, c) for c in claim, p in passage)",
                "any(same(a, b) and cites(a, p) for a in claim, b in small, p in passage)",
            ]
        )
    )
    protocol = compile_source(
        "protocol m\ndomain claim = {c1, c2}\ndomain passage = {p1, p2}\ndomain small = {c1}\n"
        "atom cites(claim, passage) : judge\natom backs(passage, claim) : context\n"
        "atom same(claim, small) : judge\n"
        f"decision pass iff {decision}\n"
        "for c in claim, p in passage: constraint k(c, p): cites(c, p) implies backs(p, c)\n"
    )
    atoms = list(protocol.atom_names)
    assert "cites(c1, p2)" in atoms and "same(c2, c1)" in atoms and len(atoms) == 10
    parts = [Part(f"constraint:{c.name}", c.expr) for c in protocol.constraints]
    parts.append(Part("decision", protocol.decision))
    assume = data.draw(st.dictionaries(st.sampled_from(atoms), st.booleans(), max_size=3))
    with create(backend_name).open(parts, atoms) as session:
        for query in (None, Not(protocol.decision)):
            formulas = [p.expr for p in parts] + ([query] if query is not None else [])
            result = session.check(query, assume=assume, want=atoms)
            assert isinstance(result, Sat) == brute_sat(formulas, atoms, assume)
            if isinstance(result, Sat):
                assert all(evaluate(f, dict(result.model)) for f in formulas)
