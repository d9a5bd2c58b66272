"""The checks the facts alone settle, decided without a backend call (``unmask.closed``).

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

import random

import pytest
from hypothesis import given, settings

from tests.strategies import random_protocol, random_replay, replays
from unmask import closed
from unmask.api import check
from unmask.backends import available, create
from unmask.checker import Case, check_case
from unmask.closed import FactChecks
from unmask.explain import Deadline
from unmask.ir import (
    AtomDecl,
    GroundPair,
    Protocol,
    Requirement,
    mk_atom,
    mk_card,
    mk_iff,
    mk_not,
)
from unmask.ir import mk_and as _and
from unmask.ir import mk_or as _or
from unmask.replaydata import Annotation, Replay
from unmask.report import dumps

BACKENDS = available()


def mk_and(*xs):
    return _and(list(xs))


def mk_or(*xs):
    return _or(list(xs))


def both_ways(replay: Replay, backend: str) -> tuple[str, str]:
    return (
        dumps(check(replay, backend)),
        dumps(check(replay, backend, closed_form=False)),
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
        self.opened.append(",".join(p.label for p in parts))
        s = self.inner.open(parts, atoms)
        self.sessions.append(s)
        return s

    @property
    def calls(self) -> int:
        return sum(s.calls for s in self.sessions)


def _grounded(n: int, unknown: int) -> Replay:
    """``n`` pairs `said_i ~ seen_i`, all observed TRUE, plus a requirement over
    ``unknown`` unannotated atoms."""
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
        annotations=tuple(Annotation(x, "TRUE", (), "", i) for i, x in enumerate(names)),
        sources={},
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pairs", [5, 8])
def test_closed_form_makes_no_call_where_it_decides(backend: str, pairs: int) -> None:
    replay = _grounded(pairs, 0)
    counting = _Counting(backend)
    fast = check_case(Case.from_replay(replay), counting)  # type: ignore[arg-type]
    fast_calls, opened = counting.calls, list(counting.opened)
    counting = _Counting(backend)
    slow = check_case(Case.from_replay(replay), counting, closed_form=False)  # type: ignore[arg-type]
    assert dumps(fast) == dumps(slow)
    assert len(counting.opened) == 3 and counting.calls > 0
    assert all(g.result.status == "ENTAILED" for g in fast.grounding)
    if 2 * pairs + 1 <= closed.MAX_TABLE:
        # every base is small enough to tabulate: no session at all
        assert opened == [] and fast_calls == 0
    else:
        # only B_all goes to the backend: the facts' base is settled in closed form, and
        # B_proto (V iff D, nothing else) is satisfiable whatever D is
        assert len(opened) == 1 and opened[0].split(",")[-1] == "decision"
        assert opened[0].split(",")[0].startswith("fact:")
        assert 0 < fast_calls < counting.calls


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
    assert FactChecks(facts).settle(big, names) is None
    free = [f"y{i}" for i in range(closed.MAX_FREE + 1)]
    assert FactChecks({}).settle(_or([mk_atom(x) for x in free]), free) is None
    assert FactChecks({}).settle(_or([mk_atom(x) for x in free[:-1]]), free[:-1]) is not None


@pytest.mark.parametrize("pairs", [2, 8])
def test_the_closed_form_makes_no_call_so_no_deadline_cuts_it(pairs: int) -> None:
    replay = _grounded(pairs, 0)
    clock = iter([0.0] + [10.0] * 1000).__next__  # the deadline passes at once
    report = check_case(
        Case.from_replay(replay), create("sliced"), deadline=Deadline(1, clock=clock)
    )
    plain = check_case(Case.from_replay(replay), create("sliced"))
    assert {g.result.status for g in report.grounding} == {"ENTAILED"}
    if 2 * pairs + 1 <= closed.MAX_TABLE:
        # every base tabulated: no call was needed, so none was refused
        assert dumps(report) == dumps(plain)
    else:
        # B_proto and B_all need calls: refused, and the report says the deadline cut it
        assert report.overall == "UNKNOWN" and report.reasons[0].code == "deadline"
        assert report.bases.all == "SOLVER_UNKNOWN" and report.bases.evid == "CONSISTENT"
