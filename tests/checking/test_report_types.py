"""The report's words and names are types, not strings parsed back: a ``PartId`` names each
part of a base, statuses are string enums that read and serialise as their names, and an
explanation's items are four variants told apart by ``kind``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.checking.test_checker import A, case_replay, factual_protocol
from tests.conftest import found_files
from unmask.api import check
from unmask.checking.checker import proto_parts
from unmask.checking.report import (
    ENTAILED,
    SATISFIED,
    SOLVER_UNKNOWN,
    AnnotationItem,
    BaseState,
    ConstraintItem,
    DecisionItem,
    Outcome,
    PartId,
    Status,
    dumps,
)
from unmask.ir import Constraint, mk_not

ROOT = Path(__file__).resolve().parents[2]


def test_a_part_id_prints_as_the_report_writes_it() -> None:
    assert str(PartId.fact("j_cto")) == "fact:j_cto"
    assert str(PartId("constraint", "k")) == "constraint:k"
    assert str(PartId("constraint", "k", 2)) == "constraint:k#2"
    assert str(PartId("decision")) == "decision"
    assert str(PartId("decision", "supported")) == "decision:supported"
    assert str(PartId("labels")) == "labels"
    assert PartId.fact("a") == PartId("fact", "a") and hash(PartId.fact("a")) == hash(
        PartId("fact", "a")
    )
    assert len({PartId.fact("a"), PartId("constraint", "a"), PartId("decision", "a")}) == 3


def test_constraints_of_one_name_get_their_own_part_and_keep_their_name() -> None:
    k = (Constraint("k", A("j_cto")), Constraint("k", mk_not(A("j_cto"))))
    p = factual_protocol(k)
    assert [str(x.label) for x in proto_parts(p)] == ["constraint:k", "constraint:k#2", "decision"]
    r = check(case_replay("case-b", p), "z3")
    items = r.bases.proto_conflict.items
    assert [type(i) for i in items] == [ConstraintItem, ConstraintItem]
    assert [(i.name, str(i.part)) for i in items] == [
        ("k", "constraint:k"),
        ("k", "constraint:k#2"),
    ]
    assert r.to_json()["conflicts"]["proto"]["parts"] == [
        {"part": "constraint:k", "kind": "constraint", "name": "k"},
        {"part": "constraint:k#2", "kind": "constraint", "name": "k"},
    ]


def test_explanation_items_are_variants() -> None:
    r = check(case_replay("case-b"), "z3")
    items = r.verdict.result.explanation.items
    assert [type(i) for i in items] == [AnnotationItem, DecisionItem]
    ann, decision = items
    assert (ann.kind, ann.atom, ann.part) == ("annotation", "j_cto", PartId.fact("j_cto"))
    assert (decision.kind, decision.label, decision.part) == ("decision", None, PartId("decision"))
    assert not hasattr(decision, "atom") and not hasattr(ann, "label")


@pytest.mark.parametrize("word", [*Status, *BaseState, *Outcome])
def test_a_status_reads_and_serialises_as_its_name(word) -> None:
    name = word.name
    assert (
        word == name and str(word) == name and f"{word}" == name and f"{word:>20}".strip() == name
    )
    assert json.dumps(word) == json.dumps(name) and json.dumps({word: 1}) == json.dumps({name: 1})
    assert hash(word) == hash(name) and {name: 0}[word] == 0


def test_the_report_holds_the_enums_and_its_bytes_do_not_change() -> None:
    r = check(case_replay("case-a"), "z3")
    assert r.overall is SATISFIED and r.verdict.result.status is ENTAILED
    assert isinstance(r.bases.proto, BaseState) or r.bases.proto == "CONSISTENT"
    assert Status.SOLVER_UNKNOWN == BaseState.SOLVER_UNKNOWN == SOLVER_UNKNOWN
    j = json.loads(dumps(r))
    assert j["overall"] == "SATISFIED" and type(j["overall"]) is str


# taking a part id apart again: `startswith("fact:")`, `label[len("fact:") :]`, `.split("#", 1)`
_PARSING = re.compile(
    r"""(startswith|removeprefix|split|partition)\(\s*["'](fact|constraint|decision)"""
    r"""|len\(["'](fact|constraint|decision):["']\)|split\(["']#["']"""
)


def test_no_part_id_is_parsed_back_from_a_string() -> None:
    # the ids are built from fields and printed; no code takes one apart again
    found = []
    for top in ("unmask", "backends"):
        for path in found_files((ROOT / top).rglob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if _PARSING.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == []


def test_the_pattern_above_catches_the_old_parsing() -> None:
    old = [
        'if label.startswith("fact:"):',
        'atom = label[len("fact:") :]',
        'name = rest.split("#", 1)[0]',
        'if label.startswith("decision:"):',
    ]
    assert all(_PARSING.search(line) for line in old)
    assert not _PARSING.search("Part(PartId.fact(name), mk_atom(name))")
