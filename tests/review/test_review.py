"""`unmask review`: the unreviewed annotations behind provisional findings, exported, decided
and applied back, end to end through a re-audit, and every bad input refused with one message."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.wice_data import WICE_DIR, needs_wice
from unmask.cli.main import main
from unmask.review.queue import window

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RULE = {"kind": "rule", "name": "outside-knowledge/1", "reviewed": False}


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input)


@pytest.fixture
def replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two copies of case B whose `external` (the context_only finding) is a rule's reading."""
    shutil.copy(EXAMPLES / "factual_claims.proto", tmp_path)
    for name in ("b1", "b2"):
        doc = json.loads((EXAMPLES / "case_b.json").read_text())
        doc["id"] = name
        for a in doc["annotations"]:
            if a["atom"] == "external":
                a["by"] = RULE
        (tmp_path / f"{name}.json").write_text(json.dumps(doc, indent=2))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def audit(out: str) -> dict[str, dict]:
    r = run("audit", "b1.json", "b2.json", "--out", out, "--quiet")
    assert r.exit_code in (0, 1, 3), r.output
    return {(o := json.loads(line))["location"]: o for line in Path(out).read_text().splitlines()}


def requirement(report: dict) -> dict:
    return report["requirements"][0]


def test_export_edit_apply_reaudit_round_trip(replays: Path) -> None:
    before = audit("results.jsonl")
    assert "provisional: rests on rule outside-knowledge/1" in run("check", "b1.json").output
    for loc in ("b1.json", "b2.json"):
        req = requirement(before[loc])
        assert req["result"] == "VIOLATED" and req["unreviewed"] is True  # provisional
    r = run("review", "results.jsonl", "--export", "review.jsonl")
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in Path("review.jsonl").read_text().splitlines()]
    assert [(x["location"], x["atom"], x["findings"]) for x in lines] == [
        ("b1.json", "external", 1),
        ("b2.json", "external", 1),
    ]
    first = lines[0]
    assert first["current"] == "TRUE" and first["by"] == RULE
    assert first["checks"] == ["requirement context_only"]
    assert first["decision"] == first["value"] == first["reviewer"] == ""
    quote = first["evidence"][0]["quote"]
    assert f"[[{quote}]]" in first["evidence"][0]["context"]
    # a reviewer fills in the spreadsheet: accept one, reject the other as FALSE
    lines[0].update(decision="accept", reviewer="ana")
    lines[1].update(decision="reject", value="FALSE", reviewer="ben")
    Path("review.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 0, r.output
    assert "applied 2 decisions, refused 0 lines" in r.output

    after = audit("results2.jsonl")
    accepted = requirement(after["b1.json"])
    assert accepted["result"] == "VIOLATED" and "unreviewed" not in accepted  # confirmed
    assert after["b1.json"]["overall"] == "VIOLATED"
    rejected = requirement(after["b2.json"])
    assert rejected["result"] == "OK"  # the finding is gone: the judge used no outside knowledge
    # the originals are kept beside the reviewed annotation
    for name, who, value in (("b1", "ana", "TRUE"), ("b2", "ben", "FALSE")):
        doc = json.loads(Path(f"{name}.json").read_text())
        ext = next(a for a in doc["annotations"] if a["atom"] == "external")
        assert ext["by"] == {"kind": "human", "name": who, "reviewed": True}
        assert ext["value"] == value
        assert ext["review"]["original"]["value"] == "TRUE"
        assert ext["review"]["original"]["by"] == RULE
    # the text report says so too
    assert "confirmed: rests on human ana" in run("check", "b1.json").output
    # validation takes the `review` field without a warning
    r = run("validate", "b1.json")
    assert r.exit_code == 0 and "warning" not in r.output
    # nothing is left to review
    r = run("review", "results2.jsonl", "--list")
    assert r.exit_code == 0 and "0 unreviewed annotations" in r.output


def test_reject_as_unknown_drops_the_evidence_and_the_finding(replays: Path) -> None:
    run("review", "b1.json", "--export", "review.jsonl")
    line = json.loads(Path("review.jsonl").read_text())
    line.update(decision="reject", value="unknown")  # any case; the reviewer from the option
    Path("review.jsonl").write_text(json.dumps(line) + "\n")
    r = run("review", "--apply", "review.jsonl", "--reviewer", "cy")
    assert r.exit_code == 0, r.output
    doc = json.loads(Path("b1.json").read_text())
    ext = next(a for a in doc["annotations"] if a["atom"] == "external")
    assert ext["value"] == "UNKNOWN" and ext["evidence"] == []
    assert ext["review"]["original"]["evidence"][0]["quote"] == line["evidence"][0]["quote"]
    r = run("check", "b1.json", "--format", "json")
    assert requirement(json.loads(r.output))["result"] == "UNKNOWN"


def test_listing_is_ranked_and_printable(replays: Path) -> None:
    doc = json.loads(Path("b1.json").read_text())
    doc["id"] = "b1\x1b[2J"
    Path("b1.json").write_text(json.dumps(doc))
    r = run("review", ".", "--list")
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.output and "\\x1b" in r.output
    assert r.output.index("`./b1.json`") < r.output.index("`./b2.json`")  # a tie: by location
    assert "2 unreviewed annotations behind provisional findings" in r.output


def test_window_marks_the_quote_and_cuts_the_rest() -> None:
    assert window("abcdefghij", 4, 6, 2) == "…cd[[ef]]gh…"
    assert window("abc", 0, 3, 5) == "[[abc]]"


def test_interactive_accepts_rejects_and_resumes(replays: Path) -> None:
    # the first session accepts b1's annotation and quits before b2's
    r = run("review", "b1.json", "b2.json", "--interactive", "--reviewer", "ana", input="a\nq\n")
    assert r.exit_code == 0, r.output
    assert "accept, reject, skip or quit" in r.output
    b1 = json.loads(Path("b1.json").read_text())
    assert next(a for a in b1["annotations"] if a["atom"] == "external")["by"]["reviewed"]
    state = [json.loads(x) for x in Path("unmask-review.jsonl").read_text().splitlines()]
    assert [(s["location"], s["decision"], s["applied"]) for s in state] == [
        ("b1.json", "accept", True)
    ]
    # resumed: b1 is reviewed now, b2 is asked for, rejected with the correct value
    r = run(
        "review", "b1.json", "b2.json", "--interactive", "--reviewer", "ana", input="r\nFALSE\n"
    )
    assert r.exit_code == 0, r.output
    assert "`b1.json`" not in r.output and "`b2.json`" in r.output
    b2 = json.loads(Path("b2.json").read_text())
    ext = next(a for a in b2["annotations"] if a["atom"] == "external")
    assert ext["value"] == "FALSE" and ext["review"]["decision"] == "reject"


def test_interactive_skip_is_remembered(replays: Path) -> None:
    r = run("review", "b1.json", "--interactive", input="ana\ns\n")
    assert r.exit_code == 0, r.output
    assert "your name" in r.output
    r = run("review", "b1.json", "--interactive", "--reviewer", "ana", input="")
    assert "1 already decided" in r.output and "accept, reject" not in r.output
    assert json.loads(Path("b1.json").read_text())["annotations"][4]["by"] == RULE


def test_interactive_asks_again_for_a_name_of_spaces(replays: Path) -> None:
    # a blank name named nobody, and the first decision ended in a traceback
    r = run("review", "b1.json", "--interactive", "--reviewer", "  ", input="   \nana\na\n")
    assert r.exit_code == 0, r.output
    assert r.output.count("your name") == 2 and "Traceback" not in r.output
    b1 = json.loads(Path("b1.json").read_text())
    by = next(a for a in b1["annotations"] if a["atom"] == "external")["by"]
    assert by["reviewed"] and by["name"] == "ana"


def test_an_unreadable_results_file_is_one_message_not_an_internal_error(
    replays: Path, monkeypatch
) -> None:
    Path("r.jsonl").write_text('{"schema": "unmask.result/2"}\n')

    def unreadable(path, *_, **__):  # type: ignore[no-untyped-def]
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr("unmask.batch.results.bounded_lines", unreadable)
    r = run("review", "r.jsonl", "--list")
    assert "internal error" not in r.output and "Traceback" not in r.output
    # unreadable once it was taken for a results file: one message too
    from unmask.plumbing.lines import bounded_lines

    monkeypatch.setattr("unmask.batch.results.bounded_lines", bounded_lines)
    monkeypatch.setattr("unmask.batch.results.open", unreadable, raising=False)
    monkeypatch.setattr("unmask.batch.results.is_results", lambda path, limits: True)
    r = run("review", "r.jsonl", "--list")
    assert r.exit_code == 4 and "cannot read `r.jsonl`: permission denied" in r.output
    assert "internal error" not in r.output and "Traceback" not in r.output


# --- bad input ----------------------------------------------------------------------------------


def exported(replays: Path) -> list[dict]:
    run("review", "b1.json", "b2.json", "--export", "review.jsonl")
    return [json.loads(x) for x in Path("review.jsonl").read_text().splitlines()]


def write(lines: list) -> None:
    Path("review.jsonl").write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"decision": "maybe"}, "review.jsonl:1:1: error: decision: unknown decision `maybe`"),
        ({"decision": "reject"}, "value: a rejected annotation needs the correct value"),
        ({"decision": "reject", "value": "TRUE"}, "`reject` with the value the annotation has"),
        ({"decision": "accept", "value": "FALSE"}, "`accept` keeps `TRUE`, found `FALSE`"),
        ({"decision": "accept", "reviewer": ""}, "reviewer: a decision needs the reviewer's name"),
        ({"schema": "x"}, "$: not a review line"),
        ({"by": None}, "by: expected `by` as exported"),
    ],
)
def test_a_bad_line_is_refused_and_the_rest_applied(replays: Path, edit: dict, message: str):
    lines = exported(replays)
    lines[0].update({"reviewer": "ana", "decision": "accept"} | edit)
    lines[1].update(decision="accept", reviewer="ana")
    write(lines)
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1, r.output
    assert message in r.output
    assert "Traceback" not in r.output
    assert "applied 1 decision, refused 1 line" in r.output
    assert json.loads(Path("b2.json").read_text())["annotations"][4]["by"]["kind"] == "human"
    assert json.loads(Path("b1.json").read_text())["annotations"][4]["by"] == RULE


def test_not_json_is_refused_with_its_line(replays: Path) -> None:
    lines = exported(replays)
    lines[1].update(decision="accept", reviewer="ana")
    write(["{not json", lines[1]])
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1
    assert "review.jsonl:1:1: error: $: not valid JSON" in r.output
    assert "applied 1 decision," in r.output


def test_a_replay_changed_since_the_export_is_not_overwritten(replays: Path) -> None:
    lines = exported(replays)
    lines[0].update(decision="accept", reviewer="ana")
    write(lines)
    doc = json.loads(Path("b1.json").read_text())
    doc["annotations"][4]["value"] = "UNKNOWN"  # someone changed it meanwhile
    doc["annotations"][4]["evidence"] = []
    Path("b1.json").write_text(json.dumps(doc))
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1
    # the record's digest no longer is the exported one: refused before anything is read
    assert "review.jsonl:1:1: error: the replay at `b1.json` changed since the export" in r.output
    assert json.loads(Path("b1.json").read_text()) == doc
    # a line of an export made before lines carried `digest`: the annotation is compared
    del lines[0]["digest"]
    write(lines)
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1
    assert "review.jsonl:1:1: error: the annotation of `external` in `b1.json` changed" in r.output
    assert json.loads(Path("b1.json").read_text()) == doc


def test_applying_twice_says_already_applied_the_second_time(replays: Path) -> None:
    lines = exported(replays)
    lines[0].update(decision="accept", reviewer="ana")
    write(lines)
    assert run("review", "--apply", "review.jsonl").exit_code == 0
    once = Path("b1.json").read_text()
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 0, r.output
    assert "applied 0 decisions, 1 already applied, refused 0 lines" in r.output
    assert "changed since the export" not in r.output
    assert Path("b1.json").read_text() == once  # the original stays the rule's, not the review's


def test_a_missing_replay_is_refused(replays: Path) -> None:
    lines = exported(replays)
    lines[0].update(decision="accept", reviewer="ana", location="gone.json")
    write(lines[:1])
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1 and "cannot find the replay `gone.json`" in r.output


def test_usage_errors(replays: Path) -> None:
    r = run("review", "--apply", "nothing.jsonl")
    assert r.exit_code == 2 and "cannot read `nothing.jsonl`" in r.output
    r = run("review", ".", "--export", "a.jsonl", "--apply", "b.jsonl")
    assert r.exit_code == 2 and "not both" in r.output
    r = run("review")
    assert r.exit_code == 2 and "no replay or results file given" in r.output
    r = run("review", "nowhere")
    assert r.exit_code == 2 and "no such file or folder `nowhere`" in r.output
    r = run("review", ".", "--export", "no/such/dir/x.jsonl")
    assert r.exit_code == 2 and "cannot write" in r.output


def test_an_invalid_replay_is_reported_and_the_rest_listed(replays: Path) -> None:
    Path("bad.json").write_text("{")
    r = run("review", ".", "--list")
    assert r.exit_code == 4
    assert "bad.json" in r.output and "2 unreviewed annotations" in r.output


def test_a_replay_in_json_lines_is_rewritten_in_its_line(replays: Path) -> None:
    docs = [json.loads(Path(f"{n}.json").read_text()) for n in ("b1", "b2")]
    Path("batch.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    run("review", "batch.jsonl", "--export", "review.jsonl")
    lines = [json.loads(x) for x in Path("review.jsonl").read_text().splitlines()]
    assert [x["location"] for x in lines] == ["batch.jsonl:1", "batch.jsonl:2"]
    lines[1].update(decision="accept", reviewer="ana")
    write(lines)
    assert run("review", "--apply", "review.jsonl").exit_code == 0
    out = Path("batch.jsonl").read_text().splitlines()
    assert json.loads(out[0]) == docs[0]
    assert json.loads(out[1])["annotations"][4]["by"]["name"] == "ana"


def test_the_review_field_is_known_and_must_be_an_object(replays: Path) -> None:
    doc = json.loads(Path("b1.json").read_text())
    doc["annotations"][4]["review"] = {"decision": "accept", "original": {"value": "TRUE"}}
    Path("b1.json").write_text(json.dumps(doc))
    r = run("validate", "b1.json")
    assert r.exit_code == 0 and "unknown key" not in r.output
    doc["annotations"][4]["review"] = 5
    Path("b1.json").write_text(json.dumps(doc))
    r = run("validate", "b1.json")
    assert r.exit_code == 4
    assert "annotations[4].review: error: expected an object, found a number" in r.output


@needs_wice
def test_the_wice_reviews_are_the_studys_count(tmp_path: Path) -> None:
    # the study says how many unreviewed annotations its VIOLATED findings rest on; the
    # review export lists exactly those, one finding each here, ranked and ready to decide
    from unmask.studies import wice as study

    lines = study.run(WICE_DIR, tmp_path / "study", limit=30)
    t = study.tables(lines)
    needed = sum(j["reviews_needed"] for j in t["judges"].values())
    violated = sum(j["overall"].get("VIOLATED", 0) for j in t["judges"].values())
    assert needed >= 1 and violated >= 1
    out = tmp_path / "review.jsonl"
    results = str(tmp_path / "study" / "results.jsonl")
    r = run("review", results, "--export", str(out), "--findings-only")
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == needed
    assert {x["replay"] for x in rows} == {
        x["replay"] for x in lines if x.get("overall") == "VIOLATED"
    }


def test_a_bad_results_line_is_named_and_the_rest_listed(replays: Path) -> None:
    audit("results.jsonl")
    text = Path("results.jsonl").read_text()
    Path("results.jsonl").write_text(text + "{oops\n")
    r = run("review", "results.jsonl", "--list")
    assert r.exit_code == 4
    assert "results.jsonl:3:1: error: not a result line: not valid JSON" in r.output
    assert "Traceback" not in r.output and "2 unreviewed annotations" in r.output


def test_a_decision_given_twice_is_refused_not_guessed(replays: Path) -> None:
    """Found by tests/fuzz/test_readers_fuzz.py: review lines were read by `json.loads`,
    which keeps the last of two values of one key, so `"decision": "reject", "decision":
    "accept"` applied an accept; NaN was read as a number. Both are refused at their path,
    as by every JSON reader (unmask.plumbing.jsonload), and the other lines are applied."""
    lines = exported(replays)
    lines[1].update(decision="accept", reviewer="ana")
    twice = json.dumps({**lines[0], "reviewer": "ana", "decision": "accept"})
    twice = twice.replace('"decision": "accept"', '"decision": "reject", "decision": "accept"')
    nan = json.dumps({**lines[0], "decision": "accept", "reviewer": "ana", "x": 0})
    write([twice, nan.replace('"x": 0', '"x": NaN'), lines[1]])
    before = Path("b1.json").read_bytes()
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1, r.output
    assert (
        "review.jsonl:1:1: error: $: key `decision` occurs more than once in this object"
        in r.stderr
    )
    assert "review.jsonl:2:1: error: x: `NaN` is not a json number" in r.stderr
    assert "applied 1 decision, refused 2 lines" in r.output
    assert Path("b1.json").read_bytes() == before


def test_a_results_line_with_a_key_twice_is_named_not_read(replays: Path) -> None:
    """The same for an audit's results file, read back by `review` and `next`: the line
    with `overall` twice is named with its path, and the other lines are still read."""
    audit("results.jsonl")
    first, second = Path("results.jsonl").read_text().splitlines()
    assert '"overall":"VIOLATED"' in second
    second = second.replace('"overall":"VIOLATED"', '"overall":"SATISFIED","overall":"VIOLATED"')
    Path("results.jsonl").write_text(f"{first}\n{second}\n")
    message = "results.jsonl:2:1: error: $: key `overall` occurs more than once in this object"
    r = run("review", "results.jsonl", "--list")
    assert r.exit_code == 4 and message in r.stderr, r.output
    assert "1 unreviewed annotation" in r.output
    r = run("next", "results.jsonl")
    assert r.exit_code == 4 and message in r.stderr, r.output


def test_interactive_stopped_mid_way_keeps_what_was_decided(replays: Path) -> None:
    # the input ends after the first decision (as Ctrl-C would stop it): 130, b1 applied
    r = run("review", "b1.json", "b2.json", "--interactive", "--reviewer", "ana", input="a\n")
    assert r.exit_code == 130
    assert "resume with the same --state" in r.output
    assert json.loads(Path("b1.json").read_text())["annotations"][4]["by"]["name"] == "ana"
    assert json.loads(Path("b2.json").read_text())["annotations"][4]["by"] == RULE
    assert len(Path("unmask-review.jsonl").read_text().splitlines()) == 1


def test_a_lone_surrogate_survives_the_rewrite(replays: Path) -> None:
    doc = json.loads(Path("b1.json").read_text())
    doc["annotations"][4]["explanation"] = "odd \ud800 text"
    Path("b1.json").write_text(json.dumps(doc))
    lines = exported(replays)
    lines[0].update(decision="accept", reviewer="ana")
    write(lines[:1])
    assert run("review", "--apply", "review.jsonl").exit_code == 0
    again = json.loads(Path("b1.json").read_text())["annotations"][4]
    assert again["review"]["original"]["explanation"] == "odd \ud800 text"


def test_items_rank_by_findings_then_location_and_skip_reviewed_ones() -> None:
    from unmask.review.queue import items

    def part(atom: str, by: dict | None) -> dict:
        ev = [{"source": "rationale", "start": 0, "end": 2, "quote": "ab"}]
        return {"kind": "annotation", "atom": atom, "value": "TRUE", "evidence": ev} | (
            {"by": by} if by else {}
        )

    def check(*parts: dict, result: str = "VIOLATED") -> dict:
        return {"result": result, "explanation": {"minimal": True, "parts": list(parts)}}

    rule = {"kind": "rule"}
    doc = {"sources": {"rationale": "abcdef"}, "annotations": []}
    a = {  # `x` rests under two findings, `y` one; a held check and a reviewed one count not
        "replay": "a",
        "verdict": check(part("y", rule)),
        "requirements": [{"id": "r", **check(part("x", rule))}],
        "grounding": [
            {"judge": "j", "context": "c", **check(part("x", rule), part("h", None))},
            check(part("z", rule), result="OK"),
        ],
    }
    z = {"replay": "z", "verdict": check(part("w", rule | {"reviewed": True}), part("x", rule))}
    got = items([("z.json", z, doc), ("a.json", a, doc)], chars=1, findings_only=True)
    assert [(i.location, i.atom, len(i.checks)) for i in got] == [
        ("a.json", "x", 2),
        ("a.json", "y", 1),
        ("z.json", "x", 1),
    ]
    assert got[0].checks == ["requirement r", "grounding j ~ c"]
    assert got[0].evidence[0]["context"] == "[[ab]]c…"


def test_an_edited_results_file_is_refused_line_by_line_never_a_traceback(
    replays: Path,
) -> None:
    audit("results.jsonl")
    rows = [json.loads(x) for x in Path("results.jsonl").read_text().splitlines()]
    first = rows[0]["requirements"][0]["explanation"]["parts"][0]  # an index: written once
    rows[0]["annotations"][first]["evidence"] = "nonsense"
    rows[1]["requirements"][0]["explanation"]["parts"] = [5, {"kind": "annotation"}]
    Path("results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = run("review", "results.jsonl", "--list")
    # each edited line refused with its JSON path (the result line's schema), the rest
    # still listed, and never a traceback
    assert r.exit_code == 4 and "Traceback" not in r.output
    assert (
        "results.jsonl:1:1: error: annotations[1].evidence: expected an array, found a string"
        in r.output
    )
    assert "results.jsonl:2:1: error: requirements[0].explanation.parts[1]: missing `part`" in (
        r.output
    )
    assert "0 unreviewed annotations" in r.output


def test_a_bad_state_file_is_one_message(replays: Path) -> None:
    Path("unmask-review.jsonl").write_text("[1]\n")
    r = run("review", "b1.json", "--interactive", "--reviewer", "ana", input="a\n")
    assert r.exit_code == 2
    assert "unmask-review.jsonl:1:1: error: not a review line" in r.output
    Path("unmask-review.jsonl").write_bytes(b"\xff\n")
    r = run("review", "b1.json", "--interactive", "--reviewer", "ana", input="a\n")
    assert r.exit_code == 2 and "cannot read the state" in r.output
    assert json.loads(Path("b1.json").read_text())["annotations"][4]["by"] == RULE


def test_review_and_next_read_a_results_file_alike(replays: Path) -> None:
    """One reader (unmask/batch/results.py): a results file is known by its first line's
    `schema` in whatever order its keys come (`next` wanted `schema` then `location` first),
    and a line of no result schema is a bad line in both (`review` passed it over)."""
    audit("results.jsonl")
    rows = [json.loads(x) for x in Path("results.jsonl").read_text().splitlines()]
    rows.append({"location": "b1.json", "schema": "unmask.other/9"})
    Path("results.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    bad = "results.jsonl:3:1: error: not a result line: expected `schema` `unmask.result/2`"
    r = run("review", "results.jsonl", "--list")
    assert r.exit_code == 4 and bad in r.output
    assert "2 unreviewed annotations behind provisional findings" in r.output
    r = run("next", "results.jsonl", "--format", "json")
    assert r.exit_code == 4 and bad in r.stderr
    doc = json.loads(r.stdout)
    assert [x["location"] for x in doc["replays"]] == ["b1.json", "b2.json"]
    assert [x["location"] for x in doc["errors"]] == ["results.jsonl:3"]


def test_the_state_is_appended_one_decision_a_line(replays: Path) -> None:
    # a line separator inside an explanation is no line end of the state (it was read with
    # `splitlines`, and the resumed session refused its own state)
    doc = json.loads(Path("b1.json").read_text())
    doc["annotations"][4]["explanation"] = "one\u2028two"
    Path("b1.json").write_text(json.dumps(doc, indent=2))
    r = run("review", "b1.json", "b2.json", "--interactive", "--reviewer", "ana", input="s\nq\n")
    assert r.exit_code == 0, r.output
    state = Path("unmask-review.jsonl")
    first, inode = state.read_bytes(), os.stat(state).st_ino
    assert "\u2028".encode() in first and first.count(b"\n") == 1
    r = run("review", "b1.json", "b2.json", "--interactive", "--reviewer", "ana", input="a\n")
    assert r.exit_code == 0, r.output
    assert "1 already decided" in r.output
    # appended to, never rewritten: the same file, the first session's line as it was
    assert os.stat(state).st_ino == inode and state.read_bytes().startswith(first)
    lines = [json.loads(x) for x in state.read_bytes().decode().split("\n")[:-1]]
    assert [(x["location"], x["decision"]) for x in lines] == [
        ("b1.json", "skip"),
        ("b2.json", "accept"),
    ]


def test_a_state_line_cut_by_a_kill_is_left_out_and_the_session_goes_on(replays: Path) -> None:
    run("review", "b1.json", "b2.json", "--interactive", "--reviewer", "ana", input="s\nq\n")
    state = Path("unmask-review.jsonl")
    whole = state.read_bytes()
    state.write_bytes(whole + whole[:40])  # a second line cut short, no newline
    r = run("review", "b1.json", "b2.json", "--interactive", "--reviewer", "ana", input="s\n")
    assert r.exit_code == 0, r.output
    assert "the last line of `unmask-review.jsonl` was cut short: left out" in r.output
    assert "1 already decided" in r.output
    lines = state.read_bytes().split(b"\n")
    assert lines[0] + b"\n" == whole and len(lines) == 3 and lines[2] == b""
    # a whole last line without its newline (written by hand) is kept, and not glued to
    state.write_bytes(whole.rstrip(b"\n"))
    r = run("review", "b1.json", "b2.json", "--interactive", "--reviewer", "ana", input="s\n")
    assert r.exit_code == 0 and "1 already decided" in r.output and "cut short" not in r.output
    assert [json.loads(x)["location"] for x in state.read_text().splitlines()] == [
        "b1.json",
        "b2.json",
    ]


def test_a_json_lines_file_of_replays_is_read_once(replays: Path, monkeypatch) -> None:
    """Given directly or named by a results file's locations, each record's replay comes
    from the one pass over the file (each line's re-read of the whole file was quadratic)."""
    import unmask.plumbing.files

    docs = [json.loads(Path(f"{n}.json").read_text()) for n in ("b1", "b2")]
    Path("many.jsonl").write_text(
        "".join(json.dumps(dict(d, id=f"r{i}")) + "\n" for i, d in enumerate(docs * 5))
    )
    r = run("audit", "many.jsonl", "--out", "results.jsonl", "--quiet")
    assert r.exit_code in (0, 1, 3), r.output
    real, reads = unmask.plumbing.files.read_bytes, []

    def counted(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(unmask.plumbing.files, "read_bytes", counted)
    for given in ("many.jsonl", "results.jsonl"):
        reads.clear()
        r = run("review", given, "--list")
        assert r.exit_code == 0 and "10 unreviewed annotations" in r.output, r.output
        assert reads.count("many.jsonl") <= 1, (given, reads)
