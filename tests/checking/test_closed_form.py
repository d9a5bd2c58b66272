"""The checks the facts alone settle, decided without a backend call (``unmask.checking.closed``).

- on random replays (hypothesis, binary and extended) and on 1,500 seeded ones, the report
  with the closed form is byte for byte the report of every backend deciding every check
  itself: status, explanation, witnesses, provenance;
- hand-made checks where constant folding alone would be wrong (a tautology or a
  contradiction over unobserved atoms) and where deletion must keep or drop a fact;
- the shortcut really makes no call, and where it would enumerate too much it hands the
  check to the backend;
- a passed deadline takes no shortcut (the report is cut short as without one).
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import check_any
from tests.strategies import random_protocol, random_replay, replays
from unmask.api import check
from unmask.backends import available, create
from unmask.checking import closed
from unmask.checking.checker import Case, check_case
from unmask.checking.explain import Deadline
from unmask.checking.report import dumps
from unmask.ir import (
    AtomDecl,
    GroundPair,
    Protocol,
    Requirement,
    iter_atoms,
    mk_atom,
    mk_card,
    mk_iff,
    mk_implies,
    mk_not,
)
from unmask.ir import mk_and as _and
from unmask.ir import mk_or as _or
from unmask.replay.data import Annotation, Replay

BACKENDS = available()


def mk_and(*xs):
    return _and(list(xs))


def mk_or(*xs):
    return _or(list(xs))


def both_ways(replay: Replay, backend: str) -> tuple[str, str]:
    # random decisions may overlap, which `check` refuses: the checker is compared
    return (
        dumps(check_any(replay, backend)),
        dumps(check_any(replay, backend, closed_form=False)),
    )


@settings(max_examples=60, deadline=None)
@given(replays(max_atoms=10))
def test_closed_form_writes_the_backends_report(replay: Replay) -> None:
    for name in BACKENDS:
        fast, slow = both_ways(replay, name)
        assert fast == slow, name


@settings(max_examples=60, deadline=None)
@given(replays(max_atoms=10, extended=True))
def test_closed_form_writes_the_backends_report_with_labels(replay: Replay) -> None:
    for name in BACKENDS:
        fast, slow = both_ways(replay, name)
        assert fast == slow, name


@pytest.mark.parametrize("extended", [False, True])
def test_seeded_replays_agree_with_the_solver_path(extended: bool) -> None:
    rng = random.Random(20261130 + extended)
    for i in range(750):
        protocol = random_protocol(rng, rng.randrange(1, 14), extended=extended)
        replay = random_replay(rng, protocol, extended=extended)
        fast, slow = both_ways(replay, "sliced")
        assert fast == slow, f"seeded case {i}"


# --- hand-made checks -------------------------------------------------------------------


def _replay(requirement, facts: dict[str, str], names=("a", "b", "c", "d")) -> Replay:
    protocol = Protocol(
        name="hand",
        text="",
        atoms=tuple(AtomDecl(n, "context") for n in names),
        constraints=(),
        decision=mk_atom(names[0]),
        requirements=(Requirement("r", "", requirement, None),),
        grounding=(),
    )
    return Replay(
        id="hand",
        protocol=protocol,
        verdict="PASS",
        annotations=tuple(
            Annotation(atom, value, (), "", i) for i, (atom, value) in enumerate(facts.items())
        ),
        sources={},
    )


def _requirement(replay: Replay, backend: str = "sliced", closed_form: bool = True):
    return check(replay, backend, closed_form=closed_form).requirements[0].holds


a, b, c, d = (mk_atom(x) for x in "abcd")


@pytest.mark.parametrize(
    ("expr", "facts", "status", "kept"),
    [
        # a tautology over an unobserved atom: entailed by no fact at all
        (mk_or(b, mk_not(b)), {"a": "TRUE"}, "ENTAILED", ()),
        # folding would leave `b or not b`; the fact on `a` is not needed either
        (
            mk_or(mk_and(a, b), mk_and(a, mk_not(b)), c),
            {"a": "TRUE", "c": "FALSE"},
            "ENTAILED",
            ("a",),
        ),
        # a contradiction over unobserved atoms: refuted with no fact
        (mk_and(b, mk_not(b), a), {"a": "TRUE"}, "REFUTED", ()),
        # deletion keeps the first fact that suffices, in declaration order
        (mk_or(a, b), {"a": "TRUE", "b": "TRUE"}, "ENTAILED", ("b",)),
        (mk_and(a, b), {"a": "FALSE", "b": "FALSE"}, "REFUTED", ("b",)),
        # exactly one of three: two TRUE facts refute it, both needed
        (mk_card("exactly", 1, [a, b, c]), {"a": "TRUE", "b": "TRUE"}, "REFUTED", ("a", "b")),
        (mk_iff(a, b), {"a": "TRUE", "b": "TRUE"}, "ENTAILED", ("a", "b")),
    ],
)
def test_hand_made_checks(expr, facts, status, kept) -> None:
    replay = _replay(expr, facts)
    got = _requirement(replay)
    assert got.status == status
    assert tuple(i.atom for i in got.explanation.items) == kept
    assert got.explanation.minimal
    for name in BACKENDS:
        assert got == _requirement(replay, name, closed_form=False), name


def test_underdetermined_witnesses_are_the_least_completion_on_each_side() -> None:
    # a TRUE; (a and b) or (c and not d): least model holding b=F c=T d=F; failing all F
    replay = _replay(mk_or(mk_and(a, b), mk_and(c, mk_not(d))), {"a": "TRUE"})
    got = _requirement(replay)
    assert got.status == "UNDERDETERMINED"
    holds = [(w.atom, w.value, w.origin) for w in got.witnesses.holds.atoms]
    fails = [(w.atom, w.value, w.origin) for w in got.witnesses.fails.atoms]
    assert holds == [
        ("a", True, "observed"),
        ("b", False, "completed"),
        ("c", True, "completed"),
        ("d", False, "completed"),
    ]
    assert fails == [
        ("a", True, "observed"),
        ("b", False, "completed"),
        ("c", False, "completed"),
        ("d", False, "completed"),
    ]
    assert got.witnesses.holds.canonical and got.witnesses.holds.verdict is None
    for name in BACKENDS:
        assert got == _requirement(replay, name, closed_form=False), name


# --- no call, and the hand-over ------------------------------------------------------------


class _Counting:
    def __init__(self, name: str) -> None:
        self.inner = create(name)
        self.name, self.option, self.timeout_ms = name, None, self.inner.timeout_ms
        self.opened: list[str] = []
        self.sessions: list = []

    def open(self, parts, atoms):
        self.opened.append(",".join(str(p.label) for p in parts))
        s = self.inner.open(parts, atoms)
        self.sessions.append(s)
        return s

    @property
    def calls(self) -> int:
        return sum(s.calls for s in self.sessions)


def _grounded(n: int, unknown: int, open_said: int = 0) -> Replay:
    """``n`` pairs `said_i ~ seen_i`, all observed TRUE but the first ``open_said`` of the
    `said` atoms, with the decision ``all`` of them, plus a requirement over ``unknown``
    unannotated atoms."""
    names = [f"said{i}" for i in range(n)] + [f"seen{i}" for i in range(n)]
    free = [f"u{i}" for i in range(unknown)]
    protocol = Protocol(
        name="grounded",
        text="",
        atoms=tuple(AtomDecl(x, "judge" if x.startswith("said") else "context") for x in names)
        + tuple(AtomDecl(x, "context") for x in free),
        constraints=(),
        decision=_and([mk_atom(x) for x in names]),
        requirements=(
            Requirement(
                "r", "", _or([mk_atom(x) for x in free]) if free else mk_atom(names[0]), None
            ),
        ),
        grounding=tuple(GroundPair(mk_atom(f"said{i}"), mk_atom(f"seen{i}")) for i in range(n)),
    )
    return Replay(
        id="grounded",
        protocol=protocol,
        verdict="PASS",
        annotations=tuple(
            Annotation(x, "TRUE", (), "", i) for i, x in enumerate(names[open_said:])
        ),
        sources={},
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("pairs", "open_said"),
    [
        (5, 0),  # every base small enough to tabulate: no session at all
        (8, 0),  # B_all too wide to tabulate, but its `all(...)` decision is forced
        (8, 1),  # not forced: left open, its witnesses the least completions of each side
        (8, 3),
    ],
)
def test_closed_form_makes_no_call_where_it_decides(
    backend: str, pairs: int, open_said: int
) -> None:
    replay = _grounded(pairs, 0, open_said)
    counting = _Counting(backend)
    fast = check_case(Case.from_replay(replay), counting)  # type: ignore[arg-type]
    fast_calls, opened = counting.calls, list(counting.opened)
    counting = _Counting(backend)
    slow = check_case(Case.from_replay(replay), counting, closed_form=False)  # type: ignore[arg-type]
    assert dumps(fast) == dumps(slow)
    assert len(counting.opened) == 3 and counting.calls > 0
    assert sum(g.result.status == "ENTAILED" for g in fast.grounding) == pairs - open_said
    assert opened == [] and fast_calls == 0
    if open_said:
        assert fast.verdict.result.status == "UNDERDETERMINED"


def test_too_many_unobserved_atoms_go_to_the_backend() -> None:
    replay = _grounded(1, closed.MAX_FREE + 1)
    counting = _Counting("sliced")
    got = check_case(Case.from_replay(replay), counting)  # type: ignore[arg-type]
    assert got.requirements[0].holds.status == "UNDERDETERMINED"
    assert any(o.split(",")[0].startswith("fact:") and "decision" not in o for o in counting.opened)
    assert dumps(got) == dumps(check(replay, "z3", closed_form=False)).replace('"z3"', '"sliced"')


def test_settle_refuses_past_its_limits() -> None:
    facts = {f"x{i}": True for i in range(100)}
    names = list(facts)
    big = _or([mk_atom(x) for x in names])
    # entailed, but deletion would evaluate it 100 times over 100 atoms
    assert closed.settle(big, names, facts) is None
    free = [f"y{i}" for i in range(closed.MAX_FREE + 1)]
    assert closed.settle(_or([mk_atom(x) for x in free]), free, {}) is None
    assert closed.settle(_or([mk_atom(x) for x in free[:-1]]), free[:-1], {}) is not None


@pytest.mark.parametrize(("pairs", "open_said"), [(2, 0), (8, 0), (8, 1)])
def test_the_closed_form_makes_no_call_so_no_deadline_cuts_it(pairs: int, open_said: int) -> None:
    replay = _grounded(pairs, 0, open_said)
    clock = iter([0.0] + [10.0] * 1000).__next__  # the deadline passes at once
    report = check_case(
        Case.from_replay(replay), create("sliced"), deadline=Deadline(1, clock=clock)
    )
    plain = check_case(Case.from_replay(replay), create("sliced"))
    assert {g.result.status for g in report.grounding[open_said:]} == {"ENTAILED"}
    # every base tabulated, or the decision forced or left open in closed form: no call
    # was needed, none refused
    assert dumps(report) == dumps(plain)
    assert all(r.code != "deadline" for r in report.reasons)


def test_a_check_that_needs_a_call_is_cut_by_the_deadline() -> None:
    # the decision repeats an atom (`said0 and not said0 ...`): not the closed form's shape
    replay = _grounded(8, 0, 1)
    decision = _and([*replay.protocol.decision.args, mk_not(mk_atom("said0"))])
    replay = dataclasses.replace(
        replay, protocol=dataclasses.replace(replay.protocol, decision=decision)
    )
    clock = iter([0.0] + [10.0] * 1000).__next__  # the deadline passes at once
    report = check_case(
        Case.from_replay(replay), create("sliced"), deadline=Deadline(1, clock=clock)
    )
    # B_all needs calls: refused, and the report says the deadline cut it
    assert report.overall == "UNKNOWN" and report.reasons[0].code == "deadline"
    assert report.bases.evid == "CONSISTENT"
    assert report.verdict.result.status == "SOLVER_UNKNOWN"


def _wide_decision(rng: random.Random, n: int) -> Replay:
    """A binary protocol whose decision is an ``and``/``or`` of ``n`` literals, in an order
    other than the declaration order, too wide to tabulate; random facts and verdict."""
    names = [f"x{i}" for i in range(n)]
    shuffled = rng.sample(names, n)
    lits = [mk_atom(x) if rng.random() < 0.7 else mk_not(mk_atom(x)) for x in shuffled]
    if rng.random() < 0.1:
        lits.append(mk_not(lits[0]) if lits[0].__class__.__name__ == "Atom" else lits[0].arg)
    is_and = rng.random() < 0.5
    decision = (_and if is_and else _or)(lits)
    protocol = Protocol(
        name="wide",
        text="",
        atoms=tuple(AtomDecl(x, "context") for x in names),
        constraints=(),
        decision=decision,
        requirements=(Requirement("r", "", mk_atom(names[0]), None),),
        grounding=(),
    )
    values = {x: rng.choice(("TRUE",) * 4 + ("FALSE", "UNKNOWN", None)) for x in names}
    if rng.random() < 0.3:
        # every literal observed and none settling the connective (all supported), but
        # perhaps one flipped
        for lit in lits:
            positive = lit.__class__.__name__ == "Atom"
            name = lit.name if positive else lit.arg.name
            values[name] = "TRUE" if positive == is_and else "FALSE"
        if rng.random() < 0.5:
            x = rng.choice(names)
            values[x] = "FALSE" if values[x] == "TRUE" else "TRUE"
    annotations = []
    for x in names:
        if values[x] is not None:
            annotations.append(Annotation(x, values[x], (), "", len(annotations)))
    return Replay(
        id="wide",
        protocol=protocol,
        verdict=rng.choice(("PASS", "FAIL")),
        annotations=tuple(annotations),
        sources={},
    )


@pytest.mark.parametrize("backend", ["sliced", "z3"])
def test_a_forced_wide_decision_gives_the_backends_verdict(backend: str) -> None:
    rng = random.Random(4242)
    forced = 0
    for i in range(150):
        replay = _wide_decision(rng, rng.randrange(closed.MAX_TABLE, 40))
        fast, slow = both_ways(replay, backend)
        assert fast == slow, f"case {i}"
        forced += check(replay, backend).verdict.result.status != "UNDERDETERMINED"
    assert forced > 30  # the shortcut was really taken, not only the general path


def _left_open(replay: Replay, rng: random.Random) -> Replay:
    """The replay with no fact that settles its decision: each literal's atom observed so
    that the literal does not settle the connective, or left unobserved (UNKNOWN, or not
    annotated), at least one of them."""
    d = replay.protocol.decision
    settles = d.op == "or"
    values = {}
    for lit in d.args:
        positive = lit.__class__.__name__ == "Atom"
        name = lit.name if positive else lit.arg.name
        values[name] = "TRUE" if positive != settles else "FALSE"
        if rng.random() < 0.3:
            values[name] = rng.choice(("UNKNOWN", None))
    values[rng.choice(list(values))] = None
    annotations = [
        Annotation(x, v, (), "", k) for k, (x, v) in enumerate(values.items()) if v is not None
    ]
    return dataclasses.replace(replay, annotations=tuple(annotations))


@pytest.mark.parametrize("backend", ["sliced", "z3"])
def test_an_open_wide_decision_gives_the_backends_witnesses(backend: str) -> None:
    # the facts leave the decision open: UNDERDETERMINED, each witness the least
    # completion of its side, in closed form and without a call
    rng = random.Random(77)
    left_open = 0
    for i in range(120):
        replay = _left_open(_wide_decision(rng, rng.randrange(closed.MAX_TABLE, 40)), rng)
        fast, slow = both_ways(replay, backend)
        assert fast == slow, f"case {i}"
        order = {a: k for k, a in enumerate(replay.protocol.atom_names)}
        facts = Case.from_replay(replay).facts
        if closed.open_decision(replay.protocol.decision, facts, order, True) is not None:
            counting = _Counting(backend)
            got = check_case(Case.from_replay(replay), counting)  # type: ignore[arg-type]
            assert got.verdict.result.status == "UNDERDETERMINED"
            assert counting.calls == 0 and counting.opened == []
            left_open += 1
    assert left_open > 80  # the repeated-atom decisions go to the backend


def test_open_decision_completes_each_side_least_first() -> None:
    x = [mk_atom(f"x{i}") for i in range(4)]
    order = {f"x{i}": i for i in range(4)}
    d = _and([x[3], mk_not(x[1]), x[0]])
    # TRUE: every literal true; FALSE: the first free atom whose FALSE falsifies a literal
    assert closed.open_decision(d, {"x0": True}, order, True) == (
        ("x0", True),
        ("x1", False),
        ("x3", True),
    )
    assert closed.open_decision(d, {"x0": True}, order, False) == (
        ("x0", True),
        ("x1", False),
        ("x3", False),
    )
    # only `not x1` free: x1 FALSE makes it true, so FALSE needs x1 TRUE
    assert closed.open_decision(d, {"x0": True, "x3": True}, order, False) == (
        ("x0", True),
        ("x1", True),
        ("x3", True),
    )
    # forced, or another shape: None
    assert closed.open_decision(d, {"x0": False}, order, True) is None
    assert closed.open_decision(_and([x[0], mk_not(x[0])]), {}, order, True) is None


def test_forced_decision_keeps_the_last_deciding_fact_in_declaration_order() -> None:
    x = [mk_atom(f"x{i}") for i in range(4)]
    order = {f"x{i}": i for i in range(4)}
    # written x3, x1, x0: FALSE facts on x1 and x3 each settle the `and`; x3 comes last
    got = closed.forced_decision(_and([x[3], x[1], x[0]]), {"x1": False, "x3": False}, order)
    assert got == (False, ("x3",))
    # `or` of negations: a FALSE fact makes `not x` TRUE and settles it
    assert closed.forced_decision(_or([mk_not(x[2]), x[0]]), {"x2": False}, order) == (
        True,
        ("x2",),
    )
    # nothing settles it, and every literal observed: all of them, in declaration order
    assert closed.forced_decision(_and([x[2], x[0]]), {"x0": True, "x2": True}, order) == (
        True,
        ("x0", "x2"),
    )
    # one literal open: not forced; a repeated atom: left to the general path
    assert closed.forced_decision(_and([x[2], x[0]]), {"x0": True}, order) is None
    assert closed.forced_decision(_and([x[0], mk_not(x[0])]), {}, order) is None


# --- deletion over many atoms -----------------------------------------------------------------


def _reference_settle(phi, atoms, facts):
    """``settle`` as it was before deletion skipped trials: every trial a table over the
    unobserved atoms and the facts dropped so far, however many (slow, so small cases)."""
    free = [a for a in atoms if a not in facts]
    observed = [a for a in atoms if a in facts]
    mask, full = closed._mask(phi, free, {a: facts[a] for a in observed})
    if mask not in (0, full):
        return "UNDERDETERMINED", None
    status = "ENTAILED" if mask == full else "REFUTED"
    kept = dict.fromkeys(observed)
    dropped: list[str] = []
    for a in observed:
        trial = {b: facts[b] for b in kept if b != a}
        m, f = closed._mask(phi, [*free, *dropped, a], trial)
        if m == (f if status == "ENTAILED" else 0):
            del kept[a]
            dropped.append(a)
    return status, tuple(kept)


def _wide_query(rng: random.Random, names: list[str]):
    """A query over many atoms: wide and/or/cardinalities of literals, joined the way a
    requirement or a grounding pair joins them, or a random formula over them."""
    from tests.strategies import random_expr

    def wide():
        k = rng.randrange(2, len(names) + 1)
        lits = [
            mk_atom(x) if rng.random() < 0.8 else mk_not(mk_atom(x)) for x in rng.sample(names, k)
        ]
        if rng.random() < 0.2:
            return mk_card(rng.choice(("atleast", "atmost", "exactly")), rng.randrange(k + 1), lits)
        return (_and if rng.random() < 0.5 else _or)(lits)

    shape = rng.randrange(3)
    if shape == 0:
        return (mk_iff if rng.random() < 0.5 else mk_implies)(wide(), wide())
    if shape == 1:
        return mk_implies(wide(), mk_atom(rng.choice(names)))
    return _and([wide(), random_expr(rng, names, 3)]) if rng.random() < 0.5 else wide()


def test_deletion_over_many_atoms_keeps_what_every_trial_tabled_keeps() -> None:
    """The trials deletion skips, and those decided with the facts put in or by an
    assignment, keep the facts that tabling every trial keeps; past its limits it still
    refuses, never guesses."""
    rng = random.Random(27)
    beyond = decided = 0
    for i in range(160):
        names = [f"x{k}" for k in range(rng.randrange(13, 19))]
        phi = _wide_query(rng, names)
        atoms = sorted(set(iter_atoms(phi)), key=names.index)
        facts = {a: rng.random() < 0.6 for a in atoms if rng.random() < 0.85}
        if sum(a not in facts for a in atoms) > closed.MAX_FREE:
            continue
        got = closed.settle(phi, atoms, facts)
        status, kept = _reference_settle(phi, atoms, facts)
        if got is None:
            continue
        decided += 1
        beyond += len(atoms) > closed.MAX_FREE
        assert got.status == status, f"case {i}"
        if kept is not None:
            assert got.kept == kept, f"case {i}"
    assert decided > 60 and beyond > 30  # the new paths were taken, not skipped


@given(st.data())
def test_an_achieved_assignment_is_a_model(data) -> None:
    from tests.strategies import atom_lists, exprs
    from unmask.ir import evaluate
    from unmask.ir.partial import achieve

    names = data.draw(atom_lists(1, 6))
    e = data.draw(exprs(names, max_leaves=12))
    fixed = data.draw(st.dictionaries(st.sampled_from(names), st.booleans()))
    want = data.draw(st.booleans())
    env = achieve(e, want, fixed)
    if env is not None:
        assert all(env[a] == v for a, v in fixed.items())
        assert evaluate(e, env) == want


def test_achieve_finds_what_a_wide_requirement_needs() -> None:
    from unmask.ir.partial import achieve

    said = [mk_atom(f"said(p{i})") for i in range(30)]
    phi = mk_implies(_or(said), mk_atom("cited"))
    env = achieve(phi, False, {"said(p0)": False})
    assert env is not None and env["cited"] is False and any(env[x.name] for x in said)
    # nothing can make it FALSE with `cited` TRUE: the search says so, and proves nothing
    assert achieve(phi, False, {"cited": True}) is None


def _mutated_labelled(rng: random.Random, n: int, i: int) -> Replay:
    """A bench replay of the three-label protocol over ``n`` parts, with some annotations
    flipped, made UNKNOWN or dropped, and any verdict."""
    import json

    from unmask.bench.workload import LABELS, labelled_replay
    from unmask.replay.load import load_replay_text

    obj = labelled_replay(n, rng.randrange(1000), i)
    kept = []
    for ann in obj["annotations"]:
        r = rng.random()
        if r < 0.1:
            continue
        if r < 0.2:
            ann = {"atom": ann["atom"], "value": "UNKNOWN"}
        elif r < 0.35 and ann["value"] != "UNKNOWN":
            ann["value"] = "FALSE" if ann["value"] == "TRUE" else "TRUE"
        kept.append(ann)
    obj["annotations"] = kept
    obj["verdict"] = rng.choice(LABELS)
    return load_replay_text(json.dumps(obj), "labelled.json")


def test_seeded_labelled_replays_agree_with_a_solver_that_takes_no_shortcut() -> None:
    """The three-label protocol the bench measures, at sizes past every table: the default
    path (closed forms, remembered B_proto, the sliced backend's cores) writes what PySAT
    writes with every check asked of it."""
    rng = random.Random(2027)
    for k in range(40):
        n = rng.choice((6, 13, 20, 24))
        replay = _mutated_labelled(rng, n, k)
        fast = dumps(check(replay, "sliced"))
        slow = dumps(check(replay, "pysat", closed_form=False)).replace('"pysat"', '"sliced"')
        assert fast == slow, f"seeded case {k} ({n} parts)"
