"""The sliced backend down each of its paths: every one must be exact on its own.

The registry puts ``sliced`` into the backend matrix and the differential tests already; at
protocol sizes those mostly take the enumeration and truth-table shortcuts, so here the
thresholds are moved so that the incremental-solver path, or the enumeration path, answers
everything.
"""

from __future__ import annotations

import contextlib
import json

from hypothesis import given
from hypothesis import strategies as st

import unmask.backends.sliced_session as sliced
from tests.backends.test_backend_matrix import bases, brute_sat
from tests.strategies import replays
from unmask.api import check
from unmask.backends import Sat, Unsat, create
from unmask.bench import replay_line
from unmask.checking.report import dumps
from unmask.ir.partial import closed_value
from unmask.replay.load import load_replay_text

KNOBS = ("TT_MAX_ATOMS", "QUERY_ENUM_MAX", "ENUM_MAX_ATOMS", "ENUM_BUDGET")


@contextlib.contextmanager
def knobs(**values):
    saved = {k: getattr(sliced, k) for k in KNOBS}
    for k, v in values.items():
        setattr(sliced, k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(sliced, k, v)


def solver_only():
    return knobs(TT_MAX_ATOMS=-1, QUERY_ENUM_MAX=-1, ENUM_MAX_ATOMS=-1)


def enumeration_only():
    # every slice of a random base (at most 6 atoms) is enumerated, never tabled
    return knobs(QUERY_ENUM_MAX=-1, ENUM_MAX_ATOMS=8, ENUM_BUDGET=10**9)


def _without_backend(report) -> dict:
    obj = json.loads(dumps(report))
    obj.pop("backend")
    return obj


@given(bases(), st.data(), st.sampled_from([solver_only, enumeration_only]))
def test_solver_and_enumeration_paths_agree_with_brute_force(base, data, path):
    atoms, parts, e = base
    labels = [p.label for p in parts]
    with path():
        session = create("sliced").open(parts, atoms)
        for _ in range(3):
            pick = st.lists(st.sampled_from(labels), unique=True) if labels else st.just([])
            enabled = data.draw(st.none() | pick)
            query = data.draw(st.none() | e)
            assume = data.draw(st.dictionaries(st.sampled_from(atoms), st.booleans(), max_size=2))
            on = [p for p in parts if enabled is None or p.label in enabled]
            formulas = [p.expr for p in on] + ([query] if query is not None else [])
            result = session.check(query, enabled=enabled, assume=assume, want=atoms)
            if brute_sat(formulas, atoms, assume):
                assert isinstance(result, Sat)
                env = dict(result.model)
                assert all(env[a] == v for a, v in assume.items())
                assert all(closed_value(f, env) for f in formulas)
            else:
                assert isinstance(result, Unsat)
                assert set(result.core) <= {p.label for p in on}
                core = [p.expr for p in parts if p.label in result.core]
                assert not brute_sat(core + ([query] if query else []), atoms, assume)
        session.close()


@given(replays())
def test_solver_path_reports_equal_pysat(replay):
    with solver_only():
        mine = _without_backend(check(replay, "sliced", closed_form=False))
    assert mine == _without_backend(check(replay, "pysat", closed_form=False))


def test_large_generated_replays_equal_pysat_on_both_paths():
    for n, i in [(30, 0), (60, 1), (120, 2)]:
        replay = load_replay_text(replay_line(n, 21, i), "x.json")
        want = _without_backend(check(replay, "pysat", closed_form=False))
        assert _without_backend(check(replay, "sliced", closed_form=False)) == want
        with solver_only():
            assert _without_backend(check(replay, "sliced", closed_form=False)) == want


def test_inconsistent_base_is_answered_on_every_part():
    from unmask.backends import Part
    from unmask.ir import Atom, Nary, Not

    a, b, c = Atom("a"), Atom("b"), Atom("c")
    parts = [
        Part("fact:a", a),
        Part("fact:c", c),
        Part("constraint:k", Nary("or", (Not(a), b))),
        Part("constraint:n", Not(b)),
    ]
    s = create("sliced").open(parts, ["a", "b", "c"])
    assert isinstance(s.check(), Unsat)
    # a query about `c` alone is still unsat: the base is, whatever the slice
    r = s.check(c, want=["c"])
    assert isinstance(r, Unsat) and "fact:c" not in r.core
    assert isinstance(s.check(c, enabled=["fact:c", "fact:a", "constraint:k"]), Sat)


def _all_supported(n: int):
    """A factual-claims replay with ``n`` claims, every one supported by judge and context."""
    from unmask.bench.workload import PROTOCOL_TEXT, factual_protocol

    texts: dict[str, list[str]] = {"rationale": [], "context": [], "response": []}
    annotations = []

    def annotate(atom: str, value: str, source: str, sentence: str) -> None:
        start = sum(len(t) + 1 for t in texts[source])
        texts[source].append(sentence)
        quote = {"source": source, "start": start, "end": start + len(sentence), "quote": sentence}
        annotations.append({"atom": atom, "value": value, "evidence": [quote]})

    claims = [f"c{i}" for i in range(n)]
    for c in claims:
        texts["response"].append(f"Claim {c}.")
        annotate(f"supported({c})", "TRUE", "rationale", f"The context supports {c}.")
        annotate(f"backed({c})", "TRUE", "context", f"The record states {c}.")
    annotate("external", "FALSE", "rationale", "Only the context was used.")
    replay = {
        "schema": "unmask.replay/1",
        "id": f"all-{n}",
        "protocol": factual_protocol(claims),
        "sources": {"protocol": PROTOCOL_TEXT, **{k: " ".join(v) for k, v in texts.items()}},
        "verdict": "PASS",
        "gold": "PASS",
        "annotations": annotations,
    }
    return load_replay_text(json.dumps(replay), "all.json")


def test_every_claim_supported_costs_about_linear_folding(monkeypatch):
    """Deletion over a decision with n supported claims used to re-fold the whole n-ary
    decision per check (n² nodes); now each check re-folds only above the one changed atom."""
    import unmask.ir.nodes as ir  # `fold` as the nodes module itself calls it

    steps = [0]
    fold = ir.fold

    def counting(expr, step, memo=None):
        def counted(e, values):
            steps[0] += 1
            return step(e, values)

        return fold(expr, counted, memo)

    monkeypatch.setattr(ir, "fold", counting)

    def work(n: int) -> int:
        steps[0] = 0
        # the backend's own work: the closed form would decide this without a call
        report = check(_all_supported(n), "sliced", closed_form=False)
        assert report.overall == "SATISFIED"
        return steps[0]

    small, large = work(100), work(400)
    assert large < 5 * small  # 4x the claims: linear with a log factor, not 16x


def test_an_undecided_base_is_not_asked_again_before_an_easy_check():
    # the base is asked first so later checks may slice; once it came back undecided,
    # asking again spent each later check's whole limit on it (60 s for a one-part check)
    from tests.checking.test_checker import pigeonhole
    from unmask.backends import Part, Unknown

    atoms, constraints = pigeonhole(12)
    parts = [Part(f"constraint:{c.name}", c.expr) for c in constraints]
    session = create("sliced", timeout_ms=600_000).open(parts, [a.name for a in atoms])
    asked: list[object] = []
    real = session._everything

    def spy(query, en, assume, want):  # type: ignore[no-untyped-def]
        asked.append(en)
        return real(query, en, assume, want)

    session._everything = spy  # type: ignore[method-assign]
    try:
        assert isinstance(session.check(timeout_ms=1), Unknown)
        easy = session.check(enabled=[parts[0].label], timeout_ms=60_000)
        assert isinstance(easy, Sat)
        assert asked == [None, {parts[0].label}]  # the whole base once, then the one part
    finally:
        session.close()


@given(st.data())
def test_the_pins_a_formula_rests_on_leave_it_the_same_function(data):
    """``justify``: with only the pins it names fixed, the formula is the same function of
    the unpinned atoms as with every pin fixed, and a settled value is its value."""
    import itertools

    from tests.strategies import atom_lists, exprs
    from unmask.ir import evaluate
    from unmask.ir.partial import justify

    atoms = data.draw(atom_lists(1, 6))
    e = data.draw(exprs(atoms, max_leaves=12))
    pins = data.draw(st.dictionaries(st.sampled_from(atoms), st.booleans()))
    number = {a: k for k, a in enumerate(atoms)}
    value, rests = justify(e, lambda n: (pins[n], 1 << number[n]) if n in pins else (None, 0))
    kept = {a: v for a, v in pins.items() if rests >> number[a] & 1}
    assert set(kept) == {a for a in atoms if rests >> number[a] & 1}  # only pinned atoms
    for values in itertools.product((False, True), repeat=len(atoms)):
        env = {**dict(zip(atoms, values, strict=True)), **kept}
        got = evaluate(e, env)
        assert got == evaluate(e, {**env, **pins})
        if value is not None:
            assert got == value


def test_a_core_names_the_facts_that_settle_a_wide_decision_not_all_of_them():
    """Some parts called supported and some not force `partially_supported`; the core of
    that proof names one fact of each kind (the latest), so deletion over the twenty facts
    skips the trials the core does not touch instead of making a call for each."""
    from unmask.backends import Part
    from unmask.ir import Atom, Binary, Card, Nary, Not

    said = [Atom(f"said(p{i})") for i in range(20)]
    v = [Atom(f"$v:{x}") for x in ("s", "p", "n")]
    all_said, some_said = Nary("and", tuple(said)), Nary("or", tuple(said))
    partly = Nary("and", (some_said, Not(all_said)))
    parts = [Part(f"fact:{a.name}", a if i % 3 else Not(a)) for i, a in enumerate(said)]
    parts += [
        Part("labels", Card("exactly", 1, tuple(v))),
        Part("decision:s", Binary("iff", v[0], all_said)),
        Part("decision:p", Binary("iff", v[1], partly)),
        Part("decision:n", Binary("iff", v[2], Not(Nary("or", (all_said, partly))))),
    ]
    session = create("sliced").open(parts, [a.name for a in [*said, *v]])
    assert isinstance(session.check(), Sat)
    got = session.check(Not(v[1]), enabled=[p.label for p in parts])
    assert isinstance(got, Unsat)
    facts = sorted(x for x in got.core if x.startswith("fact:"))
    assert facts == ["fact:said(p18)", "fact:said(p19)"]  # p18 is FALSE, p19 TRUE
    # the core alone refutes the query: asked of z3 (a truth table over its 23 atoms, 8
    # million rows, took minutes)
    core = [p for p in parts if p.label in got.core]
    z3 = create("z3").open(core, [a.name for a in [*said, *v]])
    assert isinstance(z3.check(Not(v[1]), enabled=[p.label for p in core]), Unsat)


def test_part_shapes_shared_by_replays_give_the_reports_fresh_ones_give():
    """The nesting and parents of a protocol's parts are made once for all its replays; a
    whole-base check folds the views the slices use. Reports equal those made with nothing
    kept between replays, and PySAT's."""
    import random

    import unmask.backends.refold as refold
    from unmask.bench.workload import labelled_line
    from unmask.checking import bases

    rng = random.Random(41)
    lines = [labelled_line(rng.choice((13, 20)), rng.randrange(100), i) for i in range(12)]
    kept = [dumps(check(load_replay_text(x, "r.json"), "sliced")) for x in lines]
    assert refold._SHAPES  # the shapes were kept
    fresh = []
    for x in lines:
        refold._SHAPES.clear()
        bases._DERIVED.clear()
        fresh.append(dumps(check(load_replay_text(x, "r.json"), "sliced")))
    assert kept == fresh
    for x, mine in zip(lines, kept, strict=True):
        theirs = dumps(check(load_replay_text(x, "r.json"), "pysat", closed_form=False))
        assert mine == theirs.replace('"pysat"', '"sliced"')


def test_a_shape_is_never_another_formulas():
    # a formula that died leaves its id free: the entry holds its formula, so the next
    # formula given that id is not handed the old shape
    import unmask.backends.refold as refold
    from unmask.ir import Atom, Nary

    for i in range(200):
        e = Nary("and", (Atom(f"x{i}"), Atom(f"y{i}")))
        view = refold.Refold(e, (f"x{i}", f"y{i}"), {f"x{i}": (True, 0)}, ["fact:x"])
        assert view.residual({f"x{i}": True}, set()) == Atom(f"y{i}")
