"""The replay's `item` and `judge` reach the report JSON after checking, as `gold` does:
added at the end and only when the replay has them; the checker's input never has them."""

from __future__ import annotations

import dataclasses
import json

from tests.checking.test_checker import case_replay
from unmask.api import check
from unmask.checking.checker import Case
from unmask.checking.report import dumps


def test_item_and_judge_are_added_at_the_end_when_present() -> None:
    replay = dataclasses.replace(case_replay("case-b"), item="wice-17", judge="gpt-4")
    j = check(replay, "z3").to_json()
    assert list(j)[-2:] == ["item", "judge"]
    assert (j["item"], j["judge"]) == ("wice-17", "gpt-4")


def test_only_the_given_one_is_added() -> None:
    replay = dataclasses.replace(case_replay("case-b"), judge="gpt-4")
    j = check(replay, "z3").to_json()
    assert "item" not in j and j["judge"] == "gpt-4"


def test_without_them_the_report_is_unchanged() -> None:
    plain = case_replay("case-b")
    named = dataclasses.replace(plain, item="wice-17", judge="gpt-4")
    a, b = check(plain, "z3"), check(named, "z3")
    assert "item" not in a.to_json() and "judge" not in a.to_json()
    left, right = json.loads(dumps(a)), json.loads(dumps(b))
    del right["item"], right["judge"]
    assert left == right


def test_the_checker_input_has_no_item_judge_or_gold() -> None:
    names = {f.name for f in dataclasses.fields(Case)}
    assert not names & {"gold", "item", "judge"}
