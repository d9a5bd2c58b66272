"""What the checker makes once and shares, held to what it would make afresh.

A check remembers per protocol what the protocol alone determines (atom order, fact parts,
verdict queries, a decision's shape, each check's atoms), a grounding pair's answer by the
facts on its atoms (its items are each replay's own), the reasons of grounding checks, and
in the sliced backend the CNF of a session's protocol parts. None of it may change a byte
of a report: these tests compare each with the path that shares nothing.
"""

from __future__ import annotations

import itertools
import json
import random

import pytest

from unmask.backends import create
from unmask.backends.cnf import CnfEncoder
from unmask.bench.workload import factual_replay, labelled_replay
from unmask.checking import closed
from unmask.checking.bases import Case, Census
from unmask.checking.checker import check_case
from unmask.checking.report import AnnotationItem, Quote, dumps
from unmask.ir import Atom, iter_atoms, mk_and, mk_iff, mk_not, mk_or
from unmask.replay.data import Annotation, Evidence
from unmask.replay.load import replay_from_obj


def _shifted(obj: dict, rng: random.Random) -> dict:
    """The same replay with its sources shifted and other explanations: the same facts,
    other evidence spans and words, so a remembered answer must cite this replay's."""
    obj = json.loads(json.dumps(obj))
    shift = {k: rng.choice(["", "So. ", "As read here: "]) for k in ("rationale", "context")}
    for k, prefix in shift.items():
        obj["sources"][k] = prefix + obj["sources"][k]
    for a in obj["annotations"]:
        for e in a.get("evidence", ()):
            e["start"] += len(shift[e["source"]])
            e["end"] += len(shift[e["source"]])
        if a.get("evidence"):
            a["explanation"] = rng.choice(["", "line 2", f"note {rng.randrange(99)}"])
    obj["id"] = f"{obj['id']}-{rng.randrange(10**6)}"
    return obj


@pytest.mark.parametrize("make", [factual_replay, labelled_replay])
def test_remembered_answers_cite_each_replays_own_annotations(make) -> None:
    # 20 claims or parts: 41 atoms, past the report memo, so the pairs' answers are the ones
    # remembered by facts; the same facts again with other evidence each time
    rng = random.Random(7)
    backend = create("sliced")
    for i in range(3):
        base = make(20, 0, i)
        for _ in range(3):
            r = replay_from_obj(_shifted(base, rng), "r.json")
            case = Case.from_replay(r)
            shared = check_case(case, backend, backend_name="sliced")
            # every check sent to the backend: nothing settled on the facts, nothing shared
            afresh = check_case(case, create("sliced"), backend_name="sliced", closed_form=False)
            assert shared == afresh
            assert dumps(shared) == dumps(afresh)
            by_atom = {a.atom: a for a in r.annotations}
            cited = [
                item
                for g in shared.grounding
                if g.result.explanation is not None
                for item in g.result.explanation.items
                if isinstance(item, AnnotationItem)
            ]
            assert cited, "the replays have grounding pairs that cite annotations"
            for item in cited:
                mine = by_atom[item.atom]
                # the replay's own spans, shared, not copied
                assert all(a is b for a, b in zip(item.evidence, mine.evidence, strict=True))
                assert item.explanation == mine.explanation


def test_a_report_quote_is_the_replays_evidence_written_as_before() -> None:
    from unmask.checking.report import _quote, _shapes

    _shapes()  # the structs, imported at the first JSON made of a report
    assert Quote is Evidence
    span = Evidence("context", 3, 9, "quoted")
    whole = Evidence("context", 0, 40, "", "whole")
    assert _quote(span).start == 3 and _quote(span).quote == "quoted"
    assert _quote(whole).read == "whole"
    assert whole.whole and not span.whole


def _case(annotations: list[tuple[str, str]]) -> Case:
    r = replay_from_obj(factual_replay(3, 0, 0), "r.json")
    anns = tuple(Annotation(atom, value) for atom, value in annotations)
    return Case("x", r.protocol, "PASS", anns)


@pytest.mark.parametrize(
    "annotations",
    [
        [],
        [("supported(c1)", "TRUE"), ("backed(c1)", "FALSE"), ("external", "UNKNOWN")],
        [("backed(c3)", "UNKNOWN"), ("supported(c2)", "TRUE"), ("supported(c1)", "FALSE")],
        # an atom annotated twice (only a case made in code): the properties' own reading
        [("supported(c1)", "UNKNOWN"), ("supported(c1)", "TRUE")],
        [("supported(c1)", "TRUE"), ("supported(c1)", "UNKNOWN")],
    ],
)
def test_the_census_reads_the_annotations_as_the_case_does(annotations) -> None:
    case = _case(annotations)
    census = Census(case)
    assert census.facts == case.facts
    assert list(census.facts) == list(case.facts)  # in declaration order: the base's order
    assert census.unannotated == case.unannotated
    assert census.unknown == case.unknown
    assert census.plain


def test_a_decisions_shape_found_once_answers_as_found_each_time() -> None:
    names = [f"x{i}" for i in range(5)]
    order = {n: i for i, n in enumerate(names)}
    atoms = [Atom(n) for n in names]
    decisions = [
        mk_and([atoms[3], mk_not(atoms[1]), atoms[0]]),
        mk_or([atoms[4], atoms[2], mk_not(atoms[0])]),
        mk_not(atoms[2]),
        atoms[1],
    ]
    for d in decisions:
        shape = closed.decision_shape(d, order)
        assert shape is not None
        used = sorted({a for a in names if any(a == x for x, _ in shape.lits)}, key=order.get)
        for values in itertools.product((None, False, True), repeat=len(used)):
            facts = {a: v for a, v in zip(used, values, strict=True) if v is not None}
            assert closed.forced_decision(d, facts, order, shape) == closed.forced_decision(
                d, facts, order
            )
            for value in (False, True):
                assert closed.open_decision(d, facts, order, value, shape) == (
                    closed.open_decision(d, facts, order, value)
                )
    assert closed.decision_shape(mk_iff(atoms[0], atoms[1]), order) is None


def _encode(enc: CnfEncoder, exprs) -> list[int]:
    return [enc.lit(e) for e in exprs]


def test_a_copied_encoder_goes_on_as_the_original_would_and_apart_from_it() -> None:
    a, b, c, d = (Atom(n) for n in "abcd")
    first = [mk_and([a, mk_or([b, c])]), mk_iff(c, d)]
    then = [mk_or([mk_and([a, mk_or([b, c])]), d]), mk_not(mk_iff(c, d)), mk_and([b, d])]
    enc = CnfEncoder(["a", "b", "c", "d"])
    _encode(enc, first)
    copy = enc.copy()
    assert copy.plain_pool
    before = (list(enc.clauses), enc.top, dict(enc.atom_vars))
    lits = _encode(copy, then)
    # the original, untouched by what the copy encoded, then encodes the same way
    assert (enc.clauses, enc.top, dict(enc.atom_vars)) == before
    assert _encode(enc, then) == lits
    assert enc.clauses == copy.clauses
    assert enc.top == copy.top


def test_the_sliced_backend_encodes_a_protocols_parts_once_and_the_same() -> None:
    from unmask.backends import sliced_session as sliced

    sliced._ENCODED.clear()
    a, b, c = (Atom(n) for n in "abc")
    exprs = (mk_or([a, b]), mk_iff(b, mk_and([a, c])))
    order = {"a": 0, "b": 1, "c": 2}
    enc, selectors = sliced._encoded(order, exprs)
    fresh = (list(enc.clauses), list(selectors), enc.top)
    assert len(sliced._ENCODED) == 1
    enc.lit(mk_and([a, b, c]))  # the session goes on: the kept encoding must not
    again, selectors2 = sliced._encoded(order, exprs)
    assert (again.clauses, selectors2, again.top) == fresh
    # other expressions, or another order of atoms: encoded for themselves
    other, _ = sliced._encoded({"b": 0, "a": 1, "c": 2}, exprs)
    assert other.atom_vars["b"] == 1
    assert len(sliced._ENCODED) == 2
    sliced._ENCODED.clear()


@pytest.mark.parametrize("make", [factual_replay, labelled_replay])
def test_a_replays_own_fields_made_into_the_report_are_those_added_after(make) -> None:
    import dataclasses

    from unmask.checking.outcomes import check_replay

    obj = make(20, 0, 1)  # past the report memo: the report is made with them
    obj.update(item="item-7", judge="judge-b")
    r = replay_from_obj(obj, "r.json")
    made = check_replay(r, create("sliced"))
    plain = check_case(Case.from_replay(r), create("sliced"), backend_name="sliced")
    assert plain.gold is None and plain.item is None
    added = dataclasses.replace(plain, gold=r.gold, item=r.item, judge=r.judge)
    assert made == added
    assert dumps(made) == dumps(added)
    assert (made.item, made.judge) == ("item-7", "judge-b")


class _Scripted:
    """A base whose unsat sets are given: a trial is unsat when it holds one of them;
    its core is that set, plus ``extra`` (a label no candidate has) for the first."""

    def __init__(self, unsat: list[frozenset[str]], extra: str | None = None) -> None:
        self.unsat, self.extra, self.calls = unsat, extra, 0

    def check(self, query=None, *, enabled=None, assume=None, want=(), timeout_ms=None):
        from unmask.backends.base import Sat, Unsat

        self.calls += 1
        have = set(enabled or ())
        for k, core in enumerate(self.unsat):
            if core <= have:
                label = () if self.extra is None or k else (self.extra,)
                return Unsat((*sorted(core), *label))
        return Sat({})

    def close(self) -> None:
        pass


@pytest.mark.parametrize("extra", [None, "elsewhere"])
def test_deletion_skips_a_trial_only_on_a_core_within_what_is_left(extra) -> None:
    from unmask.checking.explain import BaseSession, minimise

    candidates = ["a", "b", "c", "d", "e"]
    unsat = [frozenset("bd"), frozenset("ce"), frozenset("abcde")]
    session = _Scripted(unsat, extra)
    base = BaseSession("all", [], session)  # type: ignore[arg-type]
    # the full set is unsat; seen once, its core (b, d) proves a, c, e may go uncalled
    assert base.check(None, enabled=candidates).__class__.__name__ == "Unsat"
    got = minimise(base, None, candidates)
    current = list(candidates)  # plain deletion in order, by brute force
    for label in candidates:
        trial = [x for x in current if x != label]
        if any(core <= set(trial) for core in unsat):
            current = trial
    assert list(got.labels) == current == ["c", "e"] and got.minimal
    # a and d go on the cores (b, d) and (c, e) without a call; b, c and e are asked. A
    # core that names a label outside the candidates proves nothing here: a is asked too
    assert session.calls == (1 + 3 if extra is None else 1 + 4)


def test_justifying_parts_with_one_memo_answers_as_each_alone() -> None:
    from unmask.ir.partial import justify

    r = replay_from_obj(labelled_replay(6, 0, 2), "r.json")
    p = r.protocol
    parts = [p.decision_for(label) for label in p.labels]  # they share all_said, some_said
    atoms = sorted({a for e in parts for a in iter_atoms(e)})
    rng = random.Random(3)
    for _ in range(40):
        pins = {a: (rng.choice([None, False, True]), 1 << k) for k, a in enumerate(atoms)}

        def lookup(name: str, pins=pins):
            v, bit = pins.get(name, (None, 0))
            return (None, 0) if v is None else (v, bit)

        memo: dict = {}
        assert [justify(e, lookup, memo) for e in parts] == [justify(e, lookup) for e in parts]
