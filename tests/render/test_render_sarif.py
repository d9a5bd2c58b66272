"""SARIF report: valid against the official SARIF 2.1.0 schema (vendored, see
tests/data/README.md), one result per violated or unknown check with the documented rule
and level, and regions that really point at the annotation and at the quote in the file."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jsonschema
from click.testing import CliRunner
from hypothesis import given, settings

from tests.render_cases import EXAMPLES, example, hostile_replay
from tests.strategies import replays
from unmask.api import check, load
from unmask.checking.report import INCONSISTENT, SOLVER_UNKNOWN, UNKNOWN, VIOLATED
from unmask.cli.main import main
from unmask.render import sarif
from unmask.render import view as ev

SCHEMA = Path(__file__).resolve().parents[1] / "data" / "sarif-schema-2.1.0.json"


@functools.cache
def validator() -> jsonschema.Draft4Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def validate(log: dict) -> None:
    errors = sorted(validator().iter_errors(log), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]


def at(text: str, line: int, col: int) -> int:
    """The code-point offset of a 1-based line and column."""
    lines = text.split("\n")
    return sum(len(s) + 1 for s in lines[: line - 1]) + col - 1


def test_every_example_is_valid_sarif():
    paths = sorted(EXAMPLES.glob("case_*.json"))
    assert len(paths) >= 5, "the examples moved: this test would check nothing"
    for path in paths:
        replay = load(path)
        log = sarif.to_json(check(replay, "z3"), replay)
        validate(log)
        assert log["version"] == "2.1.0"


def test_the_schema_rejects_a_broken_log():
    # the validator is not vacuous: a result without a message is refused
    report, replay = example("case_c.json")
    log = sarif.to_json(report, replay)
    del log["runs"][0]["results"][0]["message"]
    assert list(validator().iter_errors(log))


def test_case_c_one_error_on_the_grounding_rule_at_the_judges_annotation():
    report, replay = example("case_c.json")
    log = sarif.to_json(report, replay)
    run = log["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    (res,) = run["results"]
    assert res["ruleId"] == "unmask/grounding"
    assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == "unmask/grounding"
    assert res["level"] == "error"
    assert res["properties"]["status"] == "REFUTED"
    (loc,) = res["locations"]
    phys = loc["physicalLocation"]
    assert phys["artifactLocation"]["uri"] == str(EXAMPLES / "case_c.json").replace("\\", "/")
    names = [ll["fullyQualifiedName"] for ll in loc["logicalLocations"]]
    assert names == ["$.annotations[1]", "$.grounding[1]"]
    text = (EXAMPLES / "case_c.json").read_text(encoding="utf-8")
    start = at(text, phys["region"]["startLine"], phys["region"]["startColumn"])
    # the region starts at the annotation object, and that object is j_cto's
    obj, _ = json.JSONDecoder().raw_decode(text, start)
    assert obj["atom"] == "j_cto"
    related = [
        r["logicalLocations"][0]["fullyQualifiedName"]
        for r in res["relatedLocations"]
        if "logicalLocations" in r
    ]
    assert related == [
        "$.sources.rationale[106:191]",
        "$.annotations[3]",
        "$.sources.context[0:26]",
    ]
    assert [r["id"] for r in res["relatedLocations"]] == [0, 1, 2, 3]
    proto = res["relatedLocations"][3]["physicalLocation"]
    assert proto["artifactLocation"]["uri"].endswith("factual_claims.proto")
    assert proto["region"]["startLine"] == replay.protocol.grounding[1].span.line


def quote_regions(log: dict) -> list[tuple[dict, str]]:
    out = []
    for res in log["runs"][0]["results"]:
        for loc in res.get("relatedLocations", []):
            name = loc.get("logicalLocations", [{}])[0].get("fullyQualifiedName", "")
            if name.startswith("$.sources."):
                out.append((loc, name))
    return out


def check_quote_regions(path: Path) -> int:
    replay = load(path)
    log = sarif.to_json(check(replay, "z3"), replay)
    validate(log)
    text = path.read_text(encoding="utf-8")
    n = 0
    for loc, name in quote_regions(log):
        region = loc["physicalLocation"]["region"]
        a = at(text, region["startLine"], region["startColumn"])
        b = at(text, region["startLine"], region["endColumn"])
        source, span = name.removeprefix("$.sources.").split("[")
        lo, hi = (int(x) for x in span.rstrip("]").split(":"))
        # the raw file text of the region, read as JSON string content, is the quote
        assert json.loads('"' + text[a:b] + '"') == replay.sources[source][lo:hi]
        n += 1
    return n


def test_quote_regions_point_at_the_quote_inside_the_source_string():
    assert check_quote_regions(EXAMPLES / "case_c.json") == 2


def test_quote_regions_count_code_points_through_escapes(tmp_path: Path):
    # the same hostile replay written with \\u escapes (non-BMP as surrogate pairs)
    src = hostile_replay(tmp_path)
    obj = json.loads(src.read_text(encoding="utf-8"))
    ascii_path = tmp_path / "ascii.json"
    ascii_path.write_text(json.dumps(obj, ensure_ascii=True, indent=1), encoding="utf-8")
    assert "\\ud83d\\ude42" in ascii_path.read_text(encoding="utf-8")
    assert check_quote_regions(ascii_path) == 2
    assert check_quote_regions(src) == 2


def test_unknown_checks_are_warnings_and_the_protocol_file_is_related():
    report, replay = example("case_unknown.json")
    log = sarif.to_json(report, replay)
    validate(log)
    got = [(r["ruleId"], r["level"], r["properties"]["status"]) for r in log["runs"][0]["results"]]
    assert got == [
        ("unmask/requirement", "warning", "UNDERDETERMINED"),
        ("unmask/coverage", "warning", "UNDERDETERMINED"),
    ]
    uris = [a["location"]["uri"] for a in log["runs"][0]["artifacts"]]
    assert uris[0].endswith("case_unknown.json")


def test_translation_not_valid_is_one_warning(tmp_path: Path):
    src = hostile_replay(tmp_path)
    obj = json.loads(src.read_text(encoding="utf-8"))
    obj["translation"] = {"status": "partial"}
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    replay = load(path)
    log = sarif.to_json(check(replay, "z3"), replay)
    validate(log)
    results = log["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [("unmask/translation", "warning")]
    region = results[0]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 1, "startColumn": path.read_text().index('{"status"') + 1}


@settings(max_examples=40)
@given(replays(max_atoms=6))
def test_random_replays_give_valid_logs_with_one_result_per_finding(replay):
    report = check(replay, "z3")
    log = sarif.to_json(report, replay)
    validate(log)
    results = log["runs"][0]["results"]
    expected = [
        (
            c.rule,
            "error"
            if c.outcome == VIOLATED
            else ("note" if c.dimension == "coverage" and c.status == "REFUTED" else "warning"),
        )
        for c in ev.checks(report)
        # with the translation not valid nothing was checked: one translation result instead
        if c.outcome in (VIOLATED, UNKNOWN) and c.status is not None
    ]
    translation = [("unmask/translation", "warning")] if report.translation != "valid" else []
    bases = [
        ("unmask/base", "warning")
        for n in ("proto", "evid", "all")
        if report.bases is not None and report.bases.state(n) in (INCONSISTENT, SOLVER_UNKNOWN)
    ]
    replay_level = [
        ("unmask/replay", "note")
        for r in report.reasons
        if r.code in ("no-requirements", "no-grounding")
    ]
    assert [
        (r["ruleId"], r["level"]) for r in results
    ] == translation + bases + expected + replay_level
    assert len({r["partialFingerprints"]["unmaskCheck/v1"] for r in results}) == len(results)


def test_deterministic_and_backends_differ_only_by_name():
    replay = load(EXAMPLES / "case_unknown.json")
    a = sarif.to_json(check(replay, "z3"), replay)
    b = sarif.to_json(check(replay, "truthtable"), replay)
    assert sarif.render(check(replay, "z3"), replay) == sarif.render(check(replay, "z3"), replay)
    assert a["runs"][0]["properties"].pop("backend") == "z3"
    assert b["runs"][0]["properties"].pop("backend") == "truthtable"
    assert a == b


def test_check_command_writes_sarif():
    res = CliRunner().invoke(main, ["check", str(EXAMPLES / "case_b.json"), "--format", "sarif"])
    assert res.exit_code == 1
    log = json.loads(res.stdout)
    validate(log)
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["unmask/requirement"]


def test_a_json_lines_record_gets_regions_without_reading_the_file_again(tmp_path):
    # the loader keeps the record's text: regions point into the .jsonl at the record's line
    from unmask.plumbing.limits import DEFAULT_LIMITS
    from unmask.replay.inputs import iter_tasks, load_task

    raw = json.loads((EXAMPLES / "case_c.json").read_text(encoding="utf-8"))
    (tmp_path / "factual_claims.proto").write_text(
        (EXAMPLES / "factual_claims.proto").read_text(encoding="utf-8"), encoding="utf-8"
    )
    lines = tmp_path / "batch.jsonl"
    record = json.dumps(raw, ensure_ascii=False)
    lines.write_text("\n\n" + record + "\n", encoding="utf-8")  # the record is on line 3
    (task,) = iter_tasks([str(lines)])
    replay = load_task(task, DEFAULT_LIMITS)
    lines.unlink()  # nothing may be read again
    log = sarif.to_json(check(replay, "z3"), replay)
    (res,) = log["runs"][0]["results"]
    phys = res["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"]["uri"] == str(lines)
    region = phys["region"]
    assert region["startLine"] == 3
    start = region["startColumn"] - 1
    obj, _ = json.JSONDecoder().raw_decode(record, start)
    assert obj["atom"] == "j_cto"
