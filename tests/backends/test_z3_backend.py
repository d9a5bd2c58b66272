"""The Z3 backend: lowering against the reference evaluator, selectors and cores, atom
assumptions, models, timeouts, separate contexts, deep input."""

from __future__ import annotations

import itertools
import time

import pytest
import z3
from hypothesis import given

from tests.checking.test_checker import pigeonhole
from tests.helpers import LostTimer, Rescue
from tests.strategies import exprs as random_exprs
from unmask.backends import Part, Sat, Unknown, Unsat, create
from unmask.backends.z3_backend import Z3Backend
from unmask.backends.z3_solver import _clear_cancel, lower
from unmask.ir import (
    Atom,
    Binary,
    Card,
    Expr,
    Nary,
    Not,
    evaluate,
    iter_atoms,
    mk_atom,
    mk_not,
)

A = mk_atom
NAMES = ("p", "q", "r")

exprs = random_exprs(NAMES, max_leaves=10)


def test_registry_gives_z3_with_its_settings() -> None:
    b = create("z3", timeout_ms=1234, seed=7)
    assert isinstance(b, Z3Backend)
    assert (b.name, b.timeout_ms, b.seed) == ("z3", 1234, 7)


@given(exprs)
def test_lower_agrees_with_evaluate(e: Expr) -> None:
    ctx = z3.Context()
    vs = {n: z3.Bool(n, ctx) for n in NAMES}
    term = lower(e, ctx, vs.__getitem__)
    for bits in itertools.product([False, True], repeat=len(NAMES)):
        env = dict(zip(NAMES, bits, strict=True))
        subst = [(vs[n], z3.BoolVal(env[n], ctx)) for n in NAMES]
        value = z3.simplify(z3.substitute(term, *subst))
        assert z3.is_true(value) == evaluate(e, env)
        assert z3.is_true(value) or z3.is_false(value)


def test_lower_is_not_recursive_on_deep_input() -> None:
    deep: Expr = Atom("p")
    for i in range(20_000):
        deep = Nary("and" if i % 2 else "or", (Atom(NAMES[i % 3]), Not(deep)))
    session = create("z3").open([Part("deep", deep)], NAMES)
    assert isinstance(session.check(), (Sat, Unsat))


def test_empty_cardinality_is_a_constant() -> None:
    ctx = z3.Context()
    for op, k, expected in [("atleast", 0, True), ("atleast", 1, False), ("atmost", 0, True)]:
        term = lower(Card(op, k, ()), ctx, lambda n: z3.Bool(n, ctx))
        assert z3.is_true(z3.simplify(term)) == expected


def _session():  # type: ignore[no-untyped-def]
    parts = [
        Part("fact:p", A("p")),
        Part("fact:q", mk_not(A("q"))),
        Part("constraint:p_implies_q", Binary("implies", A("p"), A("q"))),
        Part("constraint:r", A("r")),
    ]
    return create("z3").open(parts, NAMES)


def test_enabled_subsets_and_cores_map_back_to_labels() -> None:
    s = _session()
    whole = s.check()
    assert isinstance(whole, Unsat)
    assert set(whole.core) <= {"fact:p", "fact:q", "constraint:p_implies_q"}
    # the core is itself unsat
    assert isinstance(s.check(enabled=whole.core), Unsat)
    assert isinstance(s.check(enabled=["fact:p", "constraint:r"]), Sat)
    assert isinstance(s.check(enabled=[]), Sat)


def test_query_assume_and_want() -> None:
    s = _session()
    enabled = ["fact:p", "constraint:r"]
    r = s.check(A("q"), enabled=enabled, want=["p", "q", "r"])
    assert isinstance(r, Sat)
    assert dict(r.model) == {"p": True, "q": True, "r": True}
    # want names only what was asked for
    r = s.check(A("q"), enabled=enabled, want=["q"])
    assert list(r.model) == ["q"]
    # assumptions pin atoms for one check only, and are not part labels in a core
    r = s.check(A("q"), enabled=enabled, assume={"q": False})
    assert isinstance(r, Unsat) and r.core == ()
    assert isinstance(s.check(A("q"), enabled=enabled), Sat)
    # a query contradicting a part gives that part in the core
    r = s.check(mk_not(A("r")), enabled=enabled)
    assert isinstance(r, Unsat) and r.core == ("constraint:r",)


def test_calls_are_counted_and_queries_reused() -> None:
    s = _session()
    before = s.calls
    query = A("q")
    for _ in range(3):
        assert isinstance(s.check(query, enabled=["fact:p"]), Sat)
    assert s.calls == before + 3
    assert len(s._queries) == 1  # the query was asserted once, behind one selector


def test_sessions_do_not_share_state() -> None:
    b = create("z3")
    yes = b.open([Part("fact:p", A("p"))], NAMES)
    no = b.open([Part("fact:p", mk_not(A("p")))], NAMES)
    assert yes.check(want=["p"]).model == {"p": True}
    assert no.check(want=["p"]).model == {"p": False}
    assert isinstance(yes.check(mk_not(A("p"))), Unsat)


def test_timeout_is_unknown_with_reason() -> None:
    atoms, cons = pigeonhole(12)
    parts = [Part(f"constraint:{c.name}", c.expr) for c in cons]
    s = create("z3", timeout_ms=1).open(parts, [a.name for a in atoms])
    r = s.check()
    assert isinstance(r, Unknown)
    assert r.reason


def test_a_check_whose_own_timer_is_lost_still_stops_at_its_limit() -> None:
    # z3 clears a check's cancel flag after arming its timer: a timer that fires in between
    # is lost (about one 1 ms check in 300 on a loaded machine), and pigeonhole(12) then ran
    # 13 minutes and answered unsat. The watchdog stops it at its limit all the same.
    atoms, cons = pigeonhole(12)
    parts = [Part(f"constraint:{c.name}", c.expr) for c in cons]
    backend = LostTimer(timeout_ms=50)
    s = backend.open(parts, [a.name for a in atoms])
    rescue = Rescue(lambda: backend._ctx.interrupt())  # type: ignore[union-attr]
    try:
        start = time.monotonic()
        r = s.check()
        took = time.monotonic() - start
    finally:
        rescue.stop()
    # without the watchdog: Unknown("interrupted"), from the rescue, after 10 s
    assert r == Unknown("timeout")
    assert took < 5, f"the check ran {took:.1f} s past a 50 ms limit"
    # the session answers on: a part alone is satisfiable, and its model is read
    got = s.check(enabled=["constraint:pigeon0"], want=["p0_0"])
    assert isinstance(got, Sat) and set(got.model) == {"p0_0"}


def test_a_cancel_left_after_a_check_is_cleared() -> None:
    # an interrupt that lands after its check returned leaves the context cancelled, and
    # evaluating in a model then fails with "canceled" until the next check
    ctx = z3.Context()
    s = z3.SolverFor("QF_FD", ctx=ctx)
    a = z3.Bool("a", ctx)
    s.add(a)
    assert s.check() == z3.sat
    ctx.interrupt()
    with pytest.raises(z3.Z3Exception, match="canceled"):
        s.model().eval(a, model_completion=True)
    _clear_cancel(ctx)
    assert z3.is_true(s.model().eval(a, model_completion=True))


def test_atoms_with_any_name_do_not_clash_with_selectors() -> None:
    # names as a JSON protocol could spell them, including what z3 uses for fresh names
    names = ["part0", "part0!0", "query", "query!1", "$pass", "supported(c)"]
    parts = [Part(f"fact:{n}", mk_not(A(n))) for n in names]
    s = create("z3").open(parts, names)
    r = s.check(want=names)
    assert isinstance(r, Sat) and not any(r.model.values())


def test_close_is_idempotent() -> None:
    s = _session()
    s.close()
    s.close()
    with pytest.raises(RuntimeError):
        s.check()


@pytest.mark.parametrize("seed", [0, 1])
def test_same_input_same_model(seed: int) -> None:
    def model() -> dict[str, bool]:
        s = create("z3", seed=seed).open([Part("k", Nary("or", tuple(A(n) for n in NAMES)))], NAMES)
        return dict(s.check(want=list(NAMES)).model)

    assert model() == model()
    assert set(iter_atoms(Nary("or", tuple(A(n) for n in NAMES)))) == set(NAMES)


def test_a_missing_z3_is_said_when_the_backend_is_made(monkeypatch):
    # z3 is imported by the first session, but a run that names the backend without z3
    # installed is told at once, as the import of old told it (`backend ... cannot be loaded`)
    import importlib.util

    from unmask.backends import z3_backend
    from unmask.commands._options import backend_unavailable

    real = importlib.util.find_spec
    monkeypatch.setattr(
        z3_backend.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "z3" else real(name, *a),
    )
    with pytest.raises(ModuleNotFoundError) as caught:
        create("z3")
    assert caught.value.name == "z3"
    diag = backend_unavailable("z3", caught.value)
    assert diag.message == "backend `z3` cannot be loaded"
    assert diag.help == "it needs the module `z3`, which is not installed"


def test_lower_is_still_found_where_the_api_documents_it():
    from unmask.backends import z3_backend

    assert z3_backend.lower is lower
    with pytest.raises(AttributeError):
        z3_backend.no_such_name  # noqa: B018
