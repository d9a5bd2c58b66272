"""The propose engine from Python, without the command line: input lines read and answered
(``unmask.propose.lines``) and replays filled (``unmask.propose.replays``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.producers.test_propose_replay import CITES_RULES, wice_replay
from unmask.annotate.run import Item
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.limits import DEFAULT_LIMITS
from unmask.propose import lines
from unmask.propose.replay import DEFAULT_PROPOSERS
from unmask.propose.replays import Unusable, fill_each, filled, proposers_for, read_replay

CLAIM = {"id": "c1", "claim": "Cats purr.", "evidence": ["Dogs bark.", "Cats purr."]}


def _numbered(*texts: str) -> list[tuple[int, bytes | None]]:
    return [(n, None if t is None else t.encode()) for n, t in enumerate(texts, 1)]


def test_claim_lines_are_answered_in_order_and_a_bad_one_is_its_own_record() -> None:
    proposer = lines.claim_proposer("claims-lexical")
    given = _numbered(
        json.dumps(CLAIM), "   ", '{"claim": 3, "evidence": []}', "[1]", '{"claim": "x"', None
    )
    got = list(lines.answers(given, lambda raw: lines.claim_record(proposer, raw, 0.5)))
    assert [(n, e) for n, _, e in got] == [
        (1, None),
        (3, "field `claim` must be a string, found a number"),
        (4, "expected a JSON object, found a list"),
        (5, "not valid JSON: expecting `,` delimiter"),
        (6, f"line longer than {lines.MAX_LINE_BYTES} bytes"),
    ]
    first = got[0][1]
    assert (first["id"], first["supporting"], first["label"]) == ("c1", [1], "supported")
    e = first["evidence"][0]
    assert e["sentence"] == 1 and CLAIM["evidence"][1][e["start"] : e["end"]] == e["quote"]
    assert e["quote"] == "Cats purr"  # the words, without the full stop
    assert first["by"] == {"kind": "rule", "name": "claims-lexical/2", "reviewed": False}
    assert got[1][1] == {
        "id": None,
        "line": 3,
        "error": "field `claim` must be a string, found a number",
    }


def test_a_rationale_is_found_by_its_dotted_path_or_said_missing_step_by_step() -> None:
    row = json.dumps({"id": 7, "result": {"reasons": ["a", "Sentence 2 confirms it."]}})
    assert lines.parse_rationale(row.encode(), "result.reasons.1") == (7, "Sentence 2 confirms it.")
    with pytest.raises(lines.BadLine) as caught:
        lines.parse_rationale(row.encode(), "result.reasons.5")
    assert caught.value.row_id == 7 and caught.value.message == (
        "missing field `result.reasons.5`: `result.reasons` holds 2 items, with no item `5`"
        " (items count from 0)"
    )


def test_judge_lines_are_annotated_by_the_rules_and_a_rationale_too_long_is_its_error(
    tmp_path: Path,
) -> None:
    rules = tmp_path / "cites.judge.json"
    rules.write_text(json.dumps(CITES_RULES))
    proposer = lines.judge_proposer(str(rules), None, 60)
    text = "Sentence 3 confirms the birth date."
    record = lines.judge_record(
        proposer, json.dumps({"rationale": text}).encode(), "rationale", 0.5
    )
    (a,) = record["annotations"]
    assert (a["atom"], a["value"]) == ("cites(s3)", "TRUE")
    assert text[a["evidence"][0]["start"] : a["evidence"][0]["end"]] == a["evidence"][0]["quote"]
    long = json.dumps({"id": "x", "rationale": text * 3}).encode()
    ((_, out, error),) = lines.answers(
        [(1, long)], lambda raw: lines.judge_record(proposer, raw, "rationale", 0.5)
    )
    assert error is not None and "60" in error and out["id"] == "x"
    with pytest.raises(UnmaskError) as usage:
        lines.judge_proposer(str(rules), "p.proto", 60)
    assert usage.value.diagnostics[0].message == "give `--rules` or `--protocol`, not both"


def test_a_replay_is_filled_validated_and_its_outcome_returned(tmp_path: Path) -> None:
    path = str(wice_replay(tmp_path))
    obj, loaded, base = read_replay(path, DEFAULT_LIMITS)
    proposers = proposers_for(DEFAULT_PROPOSERS, obj, base, None)
    assert [p.name for p in proposers] == list(DEFAULT_PROPOSERS)
    new, outcome = filled(obj, loaded, base, proposers, 0.5, path, None, DEFAULT_LIMITS)
    assert {atom for atom, _, _ in outcome.filled} >= {"supports(s3)", "supports(s8)"}
    values = {a["atom"]: a["value"] for a in new["annotations"]}
    assert values["supports(s3)"] == "TRUE" and "supports(s4)" not in values  # never FALSE
    assert "annotations" not in obj or obj["annotations"] != new["annotations"]
    with pytest.raises(Unusable):
        proposers_for(("claims-lexical",), obj, base, "rules.json")  # --rules, no judge-rules


def test_fill_each_writes_every_replay_and_passes_over_an_invalid_one(tmp_path: Path) -> None:
    path = str(wice_replay(tmp_path))
    obj, loaded, base = read_replay(path, DEFAULT_LIMITS)
    problem = Diagnostic("invalid-json", "not valid JSON", file="broken.json")
    bad = Item("broken.json", errors=(problem,))
    good = Item("replay.json", obj, loaded, base, name="hervey")
    out = tmp_path / "out"
    out.mkdir()
    got = list(fill_each([bad, good], ("claims-lexical",), None, 0.5, out, DEFAULT_LIMITS))
    assert got[0].diagnostics == (problem,) and got[0].target is None
    assert got[1].diagnostics == () and got[1].target == out / "hervey.json"
    written = json.loads((out / "hervey.json").read_text())
    assert {a["atom"] for a in written["annotations"]} == {a for a, _, _ in got[1].outcome.filled}
    # a proposer that cannot fill a replay stops the whole run: the same for every replay
    with pytest.raises(Unusable):
        list(fill_each([good], ("no-such-proposer",), None, 0.5, out, DEFAULT_LIMITS))
