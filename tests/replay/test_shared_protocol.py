"""Replays that share one protocol: it is read once, what it alone determines is made once,
and every report is the one a fresh process would write.

A batch embeds the same protocol IR in every replay. ``unmask.replay.load`` keeps the last few
embedded protocols it read cleanly, keyed by their exact JSON and the limits; the checker
keeps each protocol's base parts, its table and the checks settled on the facts. These
tests hold the remembered path to the path that remembers nothing.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
from unittest import mock

import pytest

from tests.conftest import found_files
from unmask.api import check
from unmask.bench.workload import replay_line
from unmask.checking import bases, checker
from unmask.checking.closed import settle
from unmask.ir import Atom, Binary, GroundPair, Nary, Not, mk_iff, mk_implies
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.jsonload import parse_json_bytes
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.replay import load as replay
from unmask.replay.load import replay_from_obj


def _obj(n: int = 2, index: int = 0, workload: str = "mixed") -> dict:
    return json.loads(replay_line(n, 0, index, workload))


def _read(obj: dict, limits: Limits = DEFAULT_LIMITS):
    return replay_from_obj(copy.deepcopy(obj), "r.jsonl", None, limits, line=1)


@pytest.fixture(autouse=True)
def _fresh_memos():
    replay._EMBEDDED.clear()
    bases._DERIVED.clear()
    yield
    replay._EMBEDDED.clear()
    bases._DERIVED.clear()


# --- reading -------------------------------------------------------------------------------


def test_the_same_embedded_protocol_is_read_once():
    a, b = _read(_obj(index=0)), _read(_obj(index=1))
    assert a.protocol is b.protocol
    assert len(replay._EMBEDDED) == 1


def test_other_limits_read_the_protocol_again():
    a = _read(_obj())
    b = _read(_obj(), dataclasses.replace(DEFAULT_LIMITS, max_expr_nodes=10_000))
    assert a.protocol == b.protocol and a.protocol is not b.protocol


def test_a_protocol_within_limits_once_is_refused_under_tighter_limits():
    _read(_obj())  # remembered under the default limits
    with pytest.raises(UnmaskError) as exc:
        _read(_obj(), dataclasses.replace(DEFAULT_LIMITS, max_atoms=2))
    assert [d.code for d in exc.value.diagnostics] == ["limit"]


def _with_k(k: object) -> dict:
    """A replay whose protocol has a requirement `atleast(k, ...)` (k as given in JSON)."""
    obj = _obj()
    req = obj["protocol"]["requirements"][0]
    args = [{"atom": "external"}, {"atom": "backed(c0)"}, {"atom": "backed(c1)"}]
    req["expr"] = {"op": "atleast", "k": k, "args": args}
    return obj


@pytest.mark.parametrize("odd", [True, 1.0])
def test_json_values_equal_in_python_are_not_the_same_protocol(odd):
    # `True == 1 == 1.0` in Python; in JSON only `1` is a whole number
    good = _read(_with_k(1))  # read and remembered
    assert good.protocol is _read(_with_k(1)).protocol
    with pytest.raises(UnmaskError) as exc:
        _read(_with_k(odd))
    assert exc.value.diagnostics[0].path == "protocol.requirements[0].expr.k"


def test_a_protocol_read_with_a_warning_warns_every_time():
    obj = _obj()
    obj["protocol"]["colour"] = "blue"  # an unknown key: a warning, not an error
    first, second = _read(obj), _read(obj)
    assert [w.code for w in first.warnings] == [w.code for w in second.warnings]
    assert any("colour" in w.message for w in second.warnings)
    assert not replay._EMBEDDED


def test_a_protocol_with_a_duplicate_key_is_reported_not_remembered():
    text = replay_line(2, 0, 0).replace('"protocol":{', '"protocol":{"name":"x",', 1)
    for _ in range(2):
        with pytest.raises(UnmaskError) as exc:
            replay_from_obj(parse_json_bytes(text.encode()), "r.jsonl", None, line=1)
        assert "name" in exc.value.diagnostics[0].message
    assert not replay._EMBEDDED


def test_the_memo_is_bounded():
    for n in range(1, replay.EMBEDDED_SIZE + 4):
        _read(_obj(n))
    assert len(replay._EMBEDDED) == replay.EMBEDDED_SIZE
    # the oldest went first: the newest is still there
    newest = _read(_obj(replay.EMBEDDED_SIZE + 3))
    assert any(p is newest.protocol for p in replay._EMBEDDED.values())


# --- checking --------------------------------------------------------------------------------


def _reports(objs: list[dict], *, remember: bool, closed_form: bool = True) -> list[str]:
    out = []
    for obj in objs:
        if not remember:
            replay._EMBEDDED.clear()
            bases._DERIVED.clear()
        report = check(_read(obj), "sliced", closed_form=closed_form)
        out.append(json.dumps(report.to_json(), sort_keys=True))
    return out


@pytest.mark.parametrize(
    ("n", "workload"), [(2, "mixed"), (5, "mixed"), (12, "mixed"), (3, "supported")]
)
def test_reports_of_replays_sharing_a_protocol_are_those_of_fresh_reads(n, workload):
    objs = [_obj(n, i, workload) for i in range(60)]
    shared = _reports(objs, remember=True)
    assert len({id(p) for p in (_read(o).protocol for o in objs)}) == 1
    assert shared == _reports(objs, remember=False)
    assert shared == _reports(objs, remember=False, closed_form=False)


@pytest.mark.parametrize("seed", [0, 1])
def test_remembered_results_on_the_facts_are_those_of_fresh_checks(seed):
    # the checker keeps each result on the facts of a replay without provenance, by query
    # and facts: replays of one protocol with values flipped and provenance on some get
    # the report a fresh process writes (7 and 20 claims: too many atoms for the memo of
    # whole reports, so every replay is checked)
    rng = random.Random(seed)
    objs = []
    for i in range(40):
        obj = _obj(rng.choice((7, 20)), i)
        by = rng.choice([None, None, {"kind": "model", "reviewed": False}, {"kind": "gold"}])
        for a in obj["annotations"]:
            if a.get("evidence") and rng.random() < 0.2:
                a["value"] = "FALSE" if a["value"] == "TRUE" else "TRUE"
            if by is not None and a.get("evidence") and rng.random() < 0.5:
                a["by"] = by
        objs.append(obj)
    shared = _reports(objs, remember=True)
    kept = [r for d in bases._DERIVED.values() for _, r in d.results.values()]
    # both kinds were remembered: results citing annotations, and whole open ones
    assert any(isinstance(r, tuple) for r in kept)
    assert any(isinstance(r, checker.CheckResult) for r in kept)
    assert shared == _reports(objs, remember=False)
    assert shared == _reports(objs, remember=False, closed_form=False)


def test_labelled_protocols_sharing_a_protocol_match_fresh_reads(tmp_path):
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "examples"
    objs = []
    for path in found_files(examples.glob("case_*.json"), at_least=5):
        obj = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(obj.get("protocol"), dict) and "schema" in obj["protocol"]:
            objs.extend([obj, obj])  # the second is checked with everything remembered
    assert objs, "the examples embed protocol IR"
    assert _reports(objs, remember=True) == _reports(objs, remember=False)


def _labelled(n: int, index: int, constraint: dict | None = None) -> dict:
    from unmask.bench.workload import labelled_replay

    obj = labelled_replay(n, 5, index)
    if constraint is not None:
        obj["protocol"]["constraints"] = [constraint]
    return obj


@pytest.mark.parametrize("n", [12, 20])
def test_b_proto_is_proved_once_for_every_replay_of_a_labelled_protocol(n):
    # B_proto has more atoms than a table takes: a solver proves it consistent for the
    # first replay, and the rest are told without a session
    objs = [_labelled(n, i) for i in range(12)]
    shared = _reports(objs, remember=True)
    derived = bases._derived(_read(objs[0]).protocol)
    assert derived.proto_base == ("CONSISTENT", None)
    assert shared == _reports(objs, remember=False)
    assert shared == _reports(objs, remember=False, closed_form=False)


def test_an_inconsistent_b_proto_is_remembered_with_its_conflict():
    # `cited` and not `cited`, beside the labels: every replay's B_proto has this conflict
    never = {"op": "and", "args": [{"atom": "cited"}, {"op": "not", "args": [{"atom": "cited"}]}]}
    objs = [_labelled(16, i, {"name": "never", "expr": never}) for i in range(4)]
    shared = _reports(objs, remember=True)
    state, conflict = bases._derived(_read(objs[0]).protocol).proto_base
    assert state == "INCONSISTENT" and [str(x) for x in conflict] == ["constraint:never"]
    conflicts = [json.loads(r)["conflicts"]["proto"] for r in shared]
    assert all(c["parts"][0]["part"] == "constraint:never" for c in conflicts)
    assert shared == _reports(objs, remember=False)
    assert shared == _reports(objs, remember=False, closed_form=False)


def test_b_proto_is_not_remembered_when_the_clock_decided_it(monkeypatch):
    from unmask.backends.base import Unknown
    from unmask.backends.sliced_session import SlicedSession

    real = SlicedSession.check

    def undecided(self, query=None, **kw):  # type: ignore[no-untyped-def]
        if query is None and kw.get("enabled") is None and not kw.get("assume"):
            return Unknown("timeout after 1 ms")
        return real(self, query, **kw)

    monkeypatch.setattr(SlicedSession, "check", undecided)
    _reports([_labelled(20, 0)], remember=True)
    assert bases._derived(_read(_labelled(20, 0)).protocol).proto_base is None


def _random_expr(rng: random.Random, names: list[str], depth: int = 3):
    if depth == 0 or rng.random() < 0.3:
        a = Atom(rng.choice(names))
        return Not(a) if rng.random() < 0.3 else a
    if rng.random() < 0.5:
        op = rng.choice(["implies", "iff"])
        return Binary(op, _random_expr(rng, names, depth - 1), _random_expr(rng, names, depth - 1))
    op = rng.choice(["and", "or"])
    return Nary(op, tuple(_random_expr(rng, names, depth - 1) for _ in range(rng.randint(2, 3))))


def test_remembered_checks_on_the_facts_are_never_another_querys():
    # fresh queries die after each call: without the entry holding its query, CPython
    # would hand the next query the same id and the memo would answer for the old one
    rng = random.Random(7)
    names = ["a", "b", "c", "d"]
    derived = bases._derived(checker.Case("x", _read(_obj()).protocol, "PASS", ()).protocol)
    for _ in range(600):
        phi = _random_expr(rng, names)
        atoms = sorted({a for a in names if a in repr(phi)}, key=names.index)
        facts = {a: rng.random() < 0.5 for a in names if rng.random() < 0.5}
        assert derived.settle(phi, atoms, facts) == settle(phi, atoms, facts)


def test_remembered_checks_are_bounded():
    derived = bases._derived(_read(_obj()).protocol)
    derived.room = 4
    for i in range(12):
        phi = mk_iff(Atom("a"), Atom("b"))  # a new query each time: a new entry
        derived.settle(phi, ["a", "b"], {"a": i % 2 == 0} if i % 3 else {})
        assert len(derived.settled) <= 4


def test_the_room_for_remembered_checks_grows_with_the_protocol():
    small = bases._derived(_read(_obj(2)).protocol)
    large = bases._derived(_read(_obj(2000)).protocol)
    assert small.room == bases.SETTLED_SIZE
    # 2000 grounding pairs and one requirement with its coverage: 16 entries each
    assert large.room == bases.SETTLED_PER_CHECK * 2002 <= bases.SETTLED_MAX


def test_derived_parts_are_bounded_and_keyed_by_the_protocol_itself():
    protocols = [_read(_obj(n)).protocol for n in range(1, bases.DERIVED_SIZE + 3)]
    for p in protocols:
        assert bases._derived(p).protocol is p
    assert len(bases._DERIVED) == bases.DERIVED_SIZE
    # an equal protocol read again (another object) gets its own entry, not a stale one
    again = dataclasses.replace(protocols[-1])
    assert bases._derived(again).protocol is again


# --- the grounding query -------------------------------------------------------------------


def test_a_grounding_pair_builds_its_query_once():
    g = GroundPair("j", "c")
    assert g.query is g.query and g.query == mk_iff(Atom("j"), Atom("c"))
    one_way = dataclasses.replace(g, direction="~>")
    assert one_way.query == mk_implies(Atom("j"), Atom("c"))
    assert g == GroundPair("j", "c") and hash(g) == hash(GroundPair("j", "c"))
    assert g != one_way


# --- nesting ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        (b"[[[1]]]", True),  # depth 3: at the limit
        (b"[[[[1]]]]", False),  # depth 4
        (b"[[1],[2],[3],[4],{}]", True),  # six opening brackets, depth 2
        (b'["[[[[[[", {"a": "{{{{"}]', True),  # brackets inside strings do not nest
    ],
)
def test_nesting_is_measured_whenever_the_brackets_could_exceed_the_limit(text, ok):
    limits = dataclasses.replace(DEFAULT_LIMITS, max_json_depth=3)
    if ok:
        parse_json_bytes(text, "x.json", limits)
    else:
        with pytest.raises(UnmaskError) as exc:
            parse_json_bytes(text, "x.json", limits)
        assert exc.value.diagnostics[0].code == "limit"
        assert "4 levels" in exc.value.diagnostics[0].message


def test_threads_sharing_the_memos_write_the_reports_one_thread_writes():
    # `dask worker --nthreads 4` checks replays of one protocol in four threads at once
    from concurrent.futures import ThreadPoolExecutor

    objs = [_obj(3, i) for i in range(120)]
    alone = _reports(objs, remember=False)
    replay._EMBEDDED.clear()
    bases._DERIVED.clear()
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda o: _reports([o], remember=True)[0], objs))
    assert together == alone


def test_large_protocols_are_kept_within_a_byte_budget():
    with (
        mock.patch.object(replay, "EMBEDDED_BUDGET_BYTES", 3000),
        mock.patch.object(replay, "EMBEDDED_MAX_BYTES", 2500),
    ):
        for n in (1, 2, 3, 40):  # the last is larger than one entry may be
            _read(_obj(n))
        sizes = [len(k[1]) for k in replay._EMBEDDED]
        assert sizes and sum(sizes) <= 3000 and all(s <= 2500 for s in sizes)


def test_grounding_pairs_are_written_once_per_protocol():
    from unmask.ir.text import expr_text

    protocol = _read(_labelled(12, 0)).protocol
    derived = bases._derived(protocol)
    texts = derived.pair_texts()
    assert texts is derived.pair_texts()
    assert texts == tuple((expr_text(g.judge), expr_text(g.context)) for g in protocol.grounding)
    assert texts[-1] == ("some_said", " or ".join(f"backed(p{i})" for i in range(12)))
