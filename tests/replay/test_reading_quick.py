"""The quick readers of a replay agree with the full, rule-by-rule reading.

A replay is first read into the format's structs by ``msgspec.convert``, which takes only a document
whose every type is right and that has no unknown key (else ``StructReader`` reads it, wording every
problem), and an embedded protocol is first converted to its structs in one pass (else key by key
and item by item). These tests read the same documents twice, with the quick readers and with every
one of them switched off, and demand the same outcome: an equal replay with the same warnings, or
the same diagnostics in the same order. The documents are generated replays, the shipped examples
and the benchmark's replays, each also mutated the way the fuzz suite mutates them.
"""

from __future__ import annotations

import contextlib
import copy
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.gen import mutate_obj
from tests.strategies import ATOM_POOL, replays
from unmask.bench.workload import replay_line
from unmask.ir import Atom
from unmask.ir import json_reader as irjson_reader
from unmask.ir.json import protocol_to_json
from unmask.ir.text import _TEXT, _wrap, expr_text
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.replay import load as replay
from unmask.replay.data import SOURCES, Replay
from unmask.replay.format import ReplayJson
from unmask.replay.load import replay_from_obj

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("case_*.json"))
QUICK = ((replay, "_convert"),)


def _refuse(_obj: Any) -> Any:
    raise msgspec.ValidationError("declined")


@contextlib.contextmanager
def full_reading_only() -> Iterator[None]:
    """Every quick reader declines, so everything is read rule by rule (and an embedded
    protocol read before is read again, not taken from ``unmask.replay.load``'s memo)."""
    with contextlib.ExitStack() as stack:
        for module, name in QUICK:
            stack.enter_context(mock.patch.object(module, name, lambda *_a, **_k: None))
        stack.enter_context(mock.patch.object(irjson_reader, "convert_doc", _refuse))
        stack.enter_context(mock.patch.object(replay, "EMBEDDED_SIZE", 0))
        replay._EMBEDDED.clear()
        yield


def outcome(obj: Any, limits: Limits = DEFAULT_LIMITS) -> tuple:
    try:
        r = replay_from_obj(copy.deepcopy(obj), "r.jsonl", None, limits, line=3, text="{}")
    except UnmaskError as exc:
        return ("invalid", exc.diagnostics)
    return ("valid", r, r.warnings, r.json_text, r.json_line)


def assert_same(obj: Any, limits: Limits = DEFAULT_LIMITS) -> tuple:
    quick = outcome(obj, limits)
    with full_reading_only():
        full = outcome(obj, limits)
    assert quick == full
    return quick


def replay_obj(r: Replay) -> dict[str, Any]:
    """The replay JSON of a generated replay, protocol embedded."""
    anns = []
    for a in r.annotations:
        ann: dict[str, Any] = {
            "atom": a.atom,
            "value": a.value,
            "evidence": [
                {"source": e.source, "start": e.start, "end": e.end, "quote": e.quote}
                for e in a.evidence
            ],
            "explanation": a.explanation,
        }
        if a.by is not None:
            ann["by"] = a.by.to_json()
        anns.append(ann)
    return {
        "schema": "unmask.replay/1",
        "id": r.id,
        "protocol": protocol_to_json(r.protocol),
        "translation": {"status": r.translation},
        "sources": dict(r.sources),
        "verdict": r.verdict,
        "gold": r.gold,
        "annotations": anns,
    }


def mutated(obj: Any, seed: int, times: int) -> Any:
    rng = random.Random(seed)
    obj = copy.deepcopy(obj)
    for _ in range(times):
        obj, _ = mutate_obj(rng, obj)
    return obj


@given(replays(extended=True), st.integers(0, 2**32), st.integers(0, 3))
def test_generated_replays_read_the_same_both_ways(r: Replay, seed: int, times: int) -> None:
    obj = replay_obj(r)
    if times == 0:
        assert assert_same(obj)[0] == "valid"
    else:
        assert_same(mutated(obj, seed, times))


def _documents() -> list[tuple[str, Any]]:
    docs = [(p.name, json.loads(p.read_text(encoding="utf-8"))) for p in EXAMPLES]
    docs = [(name, d) for name, d in docs if "schema" in d.get("protocol", {})]
    for n in (2, 5):
        for workload in ("mixed", "supported"):
            docs.append((f"bench-{n}-{workload}", json.loads(replay_line(n, 0, 1, workload))))
    return docs


@pytest.mark.parametrize(("name", "doc"), _documents(), ids=[n for n, _ in _documents()])
def test_shipped_and_benchmark_replays_read_the_same_both_ways(name: str, doc: Any) -> None:
    assert assert_same(doc)[0] == "valid"
    for seed in range(60):
        assert_same(mutated(doc, seed, 1 + seed % 3))


class By:
    """A change of an offset relative to its value."""

    def __init__(self, delta: int) -> None:
        self.delta = delta


SPAN_CHANGES: list[tuple[str, Any]] = [
    *(("source", s) for s in (*SOURCES, "nope", None, 3)),
    *(("start", v) for v in (By(-1), By(1), -1, 0, True, 1.0, "0", None, 10**9)),
    *(("end", v) for v in (By(-1), By(1), 0, 1, False, None)),
    *(("quote", v) for v in ("", "x", None, 1)),
]


@pytest.mark.parametrize(("name", "doc"), _documents(), ids=[n for n, _ in _documents()])
def test_every_span_field_change_reads_the_same_both_ways(name: str, doc: Any) -> None:
    """Each field of a span, set to every source, off-by-one offsets and wrong types: the
    rules a random mutation rarely reaches (a source that does not fit the atom's role)."""
    spans = [e for a in doc["annotations"] for e in a.get("evidence", ())][:4]
    assert spans
    for i in range(len(spans)):
        for key, value in SPAN_CHANGES:
            changed = copy.deepcopy(doc)
            span = [e for a in changed["annotations"] for e in a.get("evidence", ())][i]
            span[key] = span[key] + value.delta if isinstance(value, By) else value
            assert_same(changed)
            text = changed["sources"].get(value) if key == "source" else None
            if isinstance(text, str) and text:
                # a span that is right for that source: only the role rule can object
                span.update(start=0, end=min(5, len(text)), quote=text[:5])
                assert_same(changed)


@pytest.mark.parametrize(("name", "doc"), _documents(), ids=[n for n, _ in _documents()])
def test_every_grounding_and_atom_field_change_reads_the_same_both_ways(
    name: str, doc: Any
) -> None:
    protocol = doc["protocol"]
    names = [a["name"] for a in protocol["atoms"]]
    sides = [*names[:3], names[-1], "nope", None, 1, {"atom": names[0]}, {"const": True}]
    pair_changes = [
        *(("judge", v) for v in sides),
        *(("context", v) for v in sides),
        *(("direction", v) for v in ("~", "~>", "~~", "", None, 1)),
    ]
    for i in range(min(2, len(protocol["grounding"]))):
        for key, value in pair_changes:
            changed = copy.deepcopy(doc)
            changed["protocol"]["grounding"][i][key] = value
            assert_same(changed)
    atom_changes = [
        *(("name", v) for v in (names[-1], "1x", "a b", "", None, 2)),
        *(("role", v) for v in ("judge", "context", "procedure", "Judge", None)),
        *(("description", v) for v in ("", None, 0)),
        ("extra", 1),
    ]
    for i in range(min(3, len(names))):
        for key, value in atom_changes:
            changed = copy.deepcopy(doc)
            changed["protocol"]["atoms"][i][key] = value
            assert_same(changed)


def test_limits_still_apply_on_the_quick_way() -> None:
    """An operator of plain atoms over the node or depth bound is read the long way, so
    the bound's error names the same node."""
    doc = json.loads(replay_line(6, 0, 0, "supported"))
    for limits in (
        Limits(max_expr_nodes=4),
        Limits(max_expr_nodes=7),
        Limits(max_expr_depth=1),
        Limits(max_atoms=3),
    ):
        got = assert_same(doc, limits)
        assert got[0] == "invalid"
        assert {d.code for d in got[1]} == {"limit"}


def test_the_benchmark_replay_takes_the_quick_way() -> None:
    """A plainly valid replay is read entirely by the quick readers (else they buy nothing)."""
    doc = json.loads(replay_line(20, 0, 0, "mixed"))
    taken: dict[str, list[bool]] = {name: [] for _, name in QUICK}
    real = {name: getattr(module, name) for module, name in QUICK}

    def spy(name: str):  # type: ignore[no-untyped-def]
        def call(*args: Any) -> Any:
            got = real[name](*args)
            taken[name].append(got is not None)
            return got

        return call

    with contextlib.ExitStack() as stack:
        for module, name in QUICK:
            stack.enter_context(mock.patch.object(module, name, spy(name)))
        r = replay_from_obj(doc)
    assert len(r.annotations) == len(doc["annotations"])
    for name, calls in taken.items():
        assert calls, name
        assert all(calls), name


RATIONALE = "I checked it."


def _ann(**changes: Any) -> dict[str, Any]:
    a: dict[str, Any] = {
        "atom": "j",
        "value": "TRUE",
        "evidence": [{"source": "rationale", "start": 2, "end": 9, "quote": "checked"}],
        "explanation": "",
    }
    a.update(changes)
    return {k: v for k, v in a.items() if v is not _DROP}


_DROP = object()
_SPAN = {"source": "rationale", "start": 2, "end": 9, "quote": "checked"}


@pytest.mark.parametrize(
    "changes",
    [
        {"extra": 1},
        {"value": "true"},
        {"value": None},
        {"atom": 1},
        {"explanation": None},
        {"evidence": _DROP, "atom": _DROP},
        {"evidence": {}},
        {"evidence": [{**_SPAN, "start": True}]},
        {"evidence": [{**_SPAN, "start": 2.0}]},
        {"evidence": [{**_SPAN, "source": "nowhere"}]},
        {"evidence": [{**_SPAN, "note": ""}]},
        {"evidence": [{**_SPAN, "read": "all"}]},
        {"by": {"kind": "human", "reveiwed": True}},
        {"by": {"kind": "robot"}},
        {"by": {"kind": "human", "name": ""}},
        {"review": []},
        {"readings": [{"value": "TRUE"}]},
    ],
)
def test_the_structs_decline_anything_not_plainly_well_typed(changes: dict) -> None:
    """What ``msgspec.convert`` declines is read the long way, which words it."""
    doc = json.loads(replay_line(2, 0, 0, "mixed"))
    assert replay._convert(doc, ReplayJson) is not None
    doc["annotations"][0] = _ann(**changes)
    assert replay._convert(doc, ReplayJson) is None


@pytest.mark.parametrize("name", ATOM_POOL)
def test_expr_text_prints_an_atom_as_the_fold_does(name: str) -> None:
    assert expr_text(Atom(name)) == _wrap(_TEXT(Atom(name)), 0) == name
