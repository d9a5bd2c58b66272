"""Reports remembered per protocol and fact pattern (``unmask.checking.outcomes``): every report the
memo answers is the one the checker writes, byte for byte, and the memo never keeps what
depends on time."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from unmask.api import check
from unmask.backends import create
from unmask.bench.workload import factual_replay, labelled_replay
from unmask.checking import checker, formats, outcomes
from unmask.checking.checker import Case
from unmask.checking.explain import Deadline
from unmask.checking.formats import encode_line, result_line
from unmask.checking.report import SOLVER_UNKNOWN, dumps
from unmask.render import render
from unmask.replay import load as replay
from unmask.replay.load import replay_from_obj

PROVENANCE = (
    None,
    {"kind": "human"},
    {"kind": "rule", "name": "r/1"},
    {"kind": "rule", "name": "r/1", "reviewed": True},
    {"kind": "model", "reviewed": False},
    {"kind": "gold"},
)


@pytest.fixture(autouse=True)
def _fresh_memos():
    outcomes._MEMO.clear()
    yield
    outcomes._MEMO.clear()


def _mutated(obj: dict, rng: random.Random) -> dict:
    """The same replay with other words in its explanations and other provenance, some
    values flipped and some annotations dropped: the same few patterns, other evidence."""
    obj = json.loads(json.dumps(obj))
    shift = {k: rng.choice(["", "Note. ", "As read: "]) for k in ("rationale", "context")}
    for k, prefix in shift.items():
        obj["sources"][k] = prefix + obj["sources"][k]
    for a in obj["annotations"]:
        for e in a.get("evidence", ()):
            e["start"] += len(shift[e["source"]])
            e["end"] += len(shift[e["source"]])
    kept = []
    by = rng.choice(PROVENANCE) if rng.random() < 0.3 else None
    for a in obj["annotations"]:
        if rng.random() < 0.05:
            continue  # unannotated
        if a.get("evidence") and rng.random() < 0.05:
            a["value"] = "FALSE" if a["value"] == "TRUE" else "TRUE"
        if a.get("evidence"):
            a["explanation"] = rng.choice(["", "read off line 2", f"note {rng.randrange(99)}"])
            if by is not None and rng.random() < 0.5:
                a["by"] = by
        kept.append(a)
    obj["annotations"] = kept
    labels = obj["protocol"].get("labels") or ["FAIL", "PASS"]
    if rng.random() < 0.3:
        obj["verdict"] = rng.choice(labels)
    obj["id"] = f"{obj['id']}-{rng.randrange(10**6)}"
    return obj


def _replays(count: int, seed: int) -> list:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        n = rng.choice((1, 2, 3))
        base = factual_replay(n, 0, i % 7) if rng.random() < 0.6 else labelled_replay(n, 0, i % 7)
        out.append(replay_from_obj(_mutated(base, rng), "r.json"))
    return out


def _uncached(r, backend_name: str = "sliced"):
    solver = create(backend_name)
    report = checker.check_case(Case.from_replay(r), solver, backend_name=backend_name)
    return dataclasses.replace(report, gold=r.gold, item=r.item, judge=r.judge)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_remembered_reports_are_the_checkers_byte_for_byte(seed: int) -> None:
    replays = _replays(400, seed)
    backend = create("sliced")
    for r in replays:
        mine, theirs = check(r, backend), _uncached(r)
        assert mine == theirs
        assert dumps(mine) == dumps(theirs)
        assert render("text", mine, r) == render("text", theirs, r)
    stored = sum(len(m) for _, m in outcomes._MEMO.values())
    # the replays repeat patterns with other evidence: many were answered from memory
    assert stored > 0 and len(replays) - stored >= len(replays) / 4


def test_a_pattern_seen_before_is_not_checked_again(monkeypatch) -> None:
    calls: list[str] = []
    real = outcomes.check_uncached

    def spying(case, *args, **kw):
        calls.append(case.id)
        return real(case, *args, **kw)

    monkeypatch.setattr(outcomes, "check_uncached", spying)
    obj = factual_replay(2, 0, 3)
    first = replay_from_obj(obj, "a.json")
    obj = dict(obj, id="other")
    obj["annotations"] = [dict(a, explanation="said elsewhere") for a in obj["annotations"]]
    second = replay_from_obj(obj, "b.json")
    a, b = check(first, "sliced"), check(second, "sliced")
    assert calls == [first.id]
    assert b.replay == "other" and a.overall == b.overall
    # the explanations cite this replay's annotations, not the remembered one's
    assert '"explanation": "generated for the benchmark"' in dumps(a)
    assert '"explanation": "said elsewhere"' in dumps(b)
    assert "generated for the benchmark" not in dumps(b)
    # another backend's name is another key; without the closed form, never the memo
    check(second, "truthtable")
    check(second, "sliced", closed_form=False)
    assert calls == [first.id, "other", "other"]


def test_what_depends_on_time_is_not_remembered(monkeypatch) -> None:
    r = replay_from_obj(factual_replay(2, 0, 3), "a.json")
    report = _uncached(r)
    assert outcomes._keeps(report)
    gave_up = dataclasses.replace(
        report.verdict, result=dataclasses.replace(report.verdict.result, status=SOLVER_UNKNOWN)
    )
    assert not outcomes._keeps(dataclasses.replace(report, verdict=gave_up))
    k, cut = next((k, g) for k, g in enumerate(report.grounding) if g.result.explanation)
    explanation = dataclasses.replace(cut.result.explanation, minimal=False)
    loose = dataclasses.replace(
        cut, result=dataclasses.replace(cut.result, explanation=explanation)
    )
    grounding = (*report.grounding[:k], loose, *report.grounding[k + 1 :])
    assert not outcomes._keeps(dataclasses.replace(report, grounding=grounding))
    # a report its deadline cut is given, and not kept
    deadline = Deadline(60_000)
    deadline.hit = True
    monkeypatch.setattr(outcomes, "check_uncached", lambda *a, **k: report)
    got = outcomes.check_case(
        Case.from_replay(r), create("sliced"), backend_name="sliced", deadline=deadline
    )
    assert got is report and not any(outcomes._MEMO[id(r.protocol)][1])


def test_large_protocols_are_not_remembered() -> None:
    r = replay_from_obj(factual_replay(6, 0, 0), "a.json")  # 13 atoms
    assert len(r.protocol.atom_names) > outcomes.MAX_ATOMS
    check(r, "sliced")
    assert not outcomes._MEMO


def test_the_memo_is_bounded() -> None:
    replay._EMBEDDED.clear()
    made = [factual_replay(n, 0, 0) for n in range(1, 6)]
    made += [labelled_replay(n, 0, 0) for n in range(1, 6)]
    for obj in made:
        check(replay_from_obj(obj, "a.json"), "sliced")
        assert len(outcomes._MEMO) <= outcomes.PROTOCOLS
    assert len(outcomes._MEMO) == outcomes.PROTOCOLS


def _with_fields(r, rng: random.Random):
    """The replay with a gold label, ``item`` and ``judge`` sometimes (the line's own fields)."""
    labels = r.protocol.labels
    return dataclasses.replace(
        r,
        gold=rng.choice([None, *labels]),
        item=rng.choice([None, "item-1", "i\u202e2"]),
        judge=rng.choice([None, "judge-a"]),
    )


@pytest.mark.parametrize("seed", [0, 7])
def test_a_refilled_line_is_the_line_of_the_report(seed: int) -> None:
    # the audit's line of a report answered from memory is the remembered report's line
    # with its own fields and annotations put in: the same bytes as the report's own line
    rng = random.Random(seed)
    backend = create("sliced")
    lines = 0
    for i, r in enumerate(_replays(400, seed)):
        r = _with_fields(r, rng)
        location = rng.choice(["runs.jsonl:", "d/\u00e9t\u00e9.json:", "x\u001b.jsonl:"]) + str(i)
        report, doc, line = outcomes.check_replay_line(r, backend, location)
        assert report == outcomes.check_replay(r, backend) == _uncached_with(r)
        assert doc == result_line(report, location)
        assert line == encode_line(doc)
    for _, memo in outcomes._MEMO.values():
        lines += sum(1 for known in memo.values() if known.line)
    assert lines > 20  # lines were remembered, and refilled


def _uncached_with(r):
    report = _uncached(r)
    return dataclasses.replace(report, recheck=r.recheck)


def test_a_refilled_line_that_cannot_be_utf8_is_escaped(monkeypatch) -> None:
    # a lone surrogate in an annotation's explanation (JSON allows "\ud800"): the line
    # refilled from memory is escaped as the report's own line is
    obj = factual_replay(2, 0, 3)
    cited = [a for a in obj["annotations"] if a.get("evidence")]
    backend = create("sliced")
    first = replay_from_obj(obj, "a.json")
    outcomes.check_replay_line(first, backend, "a:1")
    for a in cited:
        a["explanation"] = "lone \ud800 half"
    second = replay_from_obj(json.loads(json.dumps(obj)), "b.json")
    fills: list[object] = []
    real = formats.refilled

    def spying(*args):
        got = real(*args)
        fills.append(got)
        return got

    monkeypatch.setattr(formats, "refilled", spying)
    report, doc, line = outcomes.check_replay_line(second, backend, "b:1")
    assert fills == [doc]  # answered from memory, and refilled
    assert line == encode_line(result_line(report, "b:1"))
    assert b"\\ud800" in line and "lone" in json.loads(line)["annotations"][0]["explanation"]


def test_a_line_with_two_annotations_of_one_part_is_not_refilled() -> None:
    r = replay_from_obj(factual_replay(2, 0, 3), "a.json")
    report = _uncached(r)
    _, parts = formats.line_and_parts(report, "a:1")
    assert parts and formats.table_parts(parts)
    assert not formats.table_parts((*parts, parts[0]))
