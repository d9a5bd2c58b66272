"""Importers on output the tools themselves wrote (issue 23), not on files written by hand.

`tests/data/importers/promptfoo-0.121.20/` holds what `promptfoo eval -o results.json -o
results.jsonl` (promptfoo 0.121.20, the version in `VERSION`) wrote for the config beside it,
run offline with file:// providers as the model and the grader; `regenerate.sh` there writes
them again. The tests import them and check that no finding is false: passing latency, cost
and Levenshtein assertions and a passing assert-set are not VIOLATED, while the grader of
promptfoo issue 2998 (score 0.75 over a 0.5 threshold, but `pass: false`) still is. The
opt-in test at the end regenerates the files with promptfoo (``UNMASK_REGENERATE=1`` and
npm on PATH) and checks the fresh output reads the same. `promptfoo-0.121.20-threshold/` shows
where promptfoo writes a threshold (a `defaultTest` one into each test case without its own) and
what a run without one writes; `thresholded` is read from there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import found_files
from tests.helpers import TEST_DATA
from unmask.cli.main import main

PROMPTFOO = TEST_DATA / "importers" / "promptfoo-0.121.20"


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def check(path: Path) -> dict:
    res = cli("check", str(path), "--format", "json")
    return json.loads(res.stdout)


def requirement_statuses(report: dict) -> dict[str, str]:
    return {r["id"]: r["status"] for r in report["requirements"]}


def imported(tmp_path: Path, name: str) -> Path:
    out = tmp_path / name.replace(".", "-")
    res = cli("import", "promptfoo", str(PROMPTFOO / name), "--out", str(out))
    assert res.exit_code == 0, res.stderr
    assert res.stderr.endswith("with `promptfoo`; skipped 0\n")
    return out


def test_the_fixtures_are_promptfoos_own_output() -> None:
    data = json.loads((PROMPTFOO / "results.json").read_text(encoding="utf-8"))
    assert data["metadata"]["promptfooVersion"] == "0.121.20"
    assert (PROMPTFOO / "VERSION").read_text(encoding="utf-8").strip() == "promptfoo 0.121.20"


def test_latency_cost_and_levenshtein_that_passed_are_not_refuted(tmp_path: Path) -> None:
    out = imported(tmp_path, "results.json")
    r = json.loads((out / "t0-p0.json").read_text(encoding="utf-8"))
    rationale = r["sources"]["rationale"]
    assert "[a0] latency: pass=true score=1 threshold=60000" in rationale
    assert "[a1] cost: pass=true score=1 threshold=0.01" in rationale
    assert "[a2] levenshtein: pass=true score=1 threshold=5" in rationale
    report = check(out / "t0-p0.json")
    assert report["overall"] != "VIOLATED"
    assert set(requirement_statuses(report).values()) == {"ENTAILED"}
    says = {a["atom"]: a for a in r["annotations"] if a["atom"].startswith("score_says")}
    # the score of a latency assertion is pass ? 1 : 0; its threshold limits milliseconds
    assert says["score_says(a0)"]["value"] == "TRUE"
    assert says["score_says(a0)"]["explanation"] == "`latency` scores 1 for a pass"


def test_an_assert_set_that_passed_by_its_threshold_is_not_violated(tmp_path: Path) -> None:
    out = imported(tmp_path, "results.json")
    r = json.loads((out / "t1-p0.json").read_text(encoding="utf-8"))
    # the set is the one member; its children, listed flat beside it, are not members
    assert r["domains"] == {"assertion": ["a0"]}
    assert "[a0] assert-set: pass=true score=0.5 threshold=0.5" in r["sources"]["rationale"]
    report = check(out / "t1-p0.json")
    assert report["overall"] != "VIOLATED"
    assert report["verdict"]["status"] == "ENTAILED"
    assert requirement_statuses(report) == {"score_agrees(a0)": "ENTAILED"}


def test_the_rubric_of_promptfoo_issue_2998_is_still_violated(tmp_path: Path) -> None:
    out = imported(tmp_path, "results.json")
    report = check(out / "t2-p0.json")
    assert report["overall"] == "VIOLATED"
    assert requirement_statuses(report) == {"score_agrees(a0)": "REFUTED"}
    r = json.loads((out / "t2-p0.json").read_text(encoding="utf-8"))
    says = next(a for a in r["annotations"] if a["atom"] == "score_says(a0)")
    assert says["explanation"] == "`llm-rubric` passes only at score ≥ threshold: 0.75 ≥ 0.5"


def test_json_lines_output_gives_the_same_replays(tmp_path: Path) -> None:
    a = imported(tmp_path, "results.json")
    b = imported(tmp_path, "results.jsonl")
    names = sorted(p.name for p in a.glob("*.json"))
    assert (
        names
        == sorted(p.name for p in b.glob("*.json"))
        == [
            "t0-p0.json",
            "t1-p0.json",
            "t2-p0.json",
            "t3-p0.json",
        ]
    )
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes()


def test_a_json_lines_line_that_is_not_json_is_skipped_with_its_line(tmp_path: Path) -> None:
    lines = (PROMPTFOO / "results.jsonl").read_text(encoding="utf-8").splitlines()
    lines.insert(1, "{not json")
    src = tmp_path / "results.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = cli("import", "promptfoo", str(src), "--out", str(tmp_path / "o"))
    assert res.exit_code == 1
    assert f"{src}:2: skipped: not a JSON record" in res.stderr
    assert "imported 4 replays" in res.stderr


def test_an_unknown_assertion_type_is_not_checked_and_said_once(tmp_path: Path) -> None:
    data = json.loads((PROMPTFOO / "results.json").read_text(encoding="utf-8"))
    for row in data["results"]["results"]:
        for c in row["gradingResult"]["componentResults"]:
            if c.get("assertion", {}).get("type") == "llm-rubric":
                c["assertion"]["type"] = "x-new-type"
    src = tmp_path / "results.json"
    src.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "o"
    res = cli("import", "promptfoo", str(src), "--out", str(out))
    assert res.exit_code == 0, res.stderr
    notes = [line for line in res.stderr.splitlines() if ": note: " in line]
    assert notes == [
        f"{src}: note: assertion type `x-new-type`: how the score and threshold say pass is"
        " not known to Unmask, so those scores were not checked"
    ]
    r = json.loads((out / "t2-p0.json").read_text(encoding="utf-8"))
    assert "score_says(a0)" not in {a["atom"] for a in r["annotations"]}
    assert check(out / "t2-p0.json")["overall"] != "VIOLATED"


@pytest.mark.skipif(
    os.environ.get("UNMASK_REGENERATE") != "1" or shutil.which("npm") is None,
    reason="regenerates with promptfoo from the registry: set UNMASK_REGENERATE=1 (needs npm)",
)
def test_regenerated_promptfoo_output_reads_the_same(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    subprocess.run(["sh", str(PROMPTFOO / "regenerate.sh"), str(fresh)], check=True, timeout=900)
    assert (fresh / "VERSION").read_text(encoding="utf-8") == (PROMPTFOO / "VERSION").read_text(
        encoding="utf-8"
    )
    for name in ("results.json", "results.jsonl"):
        old, new = tmp_path / f"old-{name}", tmp_path / f"new-{name}"
        for src, out in ((PROMPTFOO / name, old), (fresh / name, new)):
            res = cli("import", "promptfoo", str(src), "--out", str(out))
            assert res.exit_code == 0, res.stderr
        for path in found_files(old.glob("*.json")):
            assert check(path)["overall"] == check(new / path.name)["overall"]


# --- promptfoo: where a threshold is written, and what no threshold looks like -------------

THRESHOLD = TEST_DATA / "importers" / "promptfoo-0.121.20-threshold"


def rows_of(name: str) -> list[dict]:
    return json.loads((THRESHOLD / name).read_text(encoding="utf-8"))["results"]["results"]


def atoms(out: Path, stem: str) -> dict[str, str]:
    r = json.loads((out / f"{stem}.json").read_text(encoding="utf-8"))
    return {a["atom"]: a["value"] for a in r["annotations"]}


def imported_threshold(tmp_path: Path, src: Path) -> Path:
    out = tmp_path / src.name.replace(".", "-")
    res = cli("import", "promptfoo", str(src), "--out", str(out))
    assert res.exit_code == 0, res.stderr
    assert res.stderr.endswith("with `promptfoo`; skipped 0\n")
    return out


def test_promptfoo_writes_a_default_test_threshold_into_each_test_case() -> None:
    # what the importer rests on: the threshold a test case ran with is in its `testCase`,
    # its own or else `defaultTest`'s, and a run with none writes none and is unthresholded
    data = json.loads((THRESHOLD / "default-threshold.json").read_text(encoding="utf-8"))
    assert data["metadata"]["promptfooVersion"] == "0.121.20"
    assert (THRESHOLD / "VERSION").read_text(encoding="utf-8").strip() == "promptfoo 0.121.20"
    assert data["config"]["defaultTest"]["threshold"] == 0.5
    assert "threshold" not in data["config"]["tests"][0]
    own, overridden = rows_of("default-threshold.json")
    assert own["testCase"]["threshold"] == 0.5 and overridden["testCase"]["threshold"] == 0.9
    # the same two assertions (one passes, one fails: score 0.5) under each threshold
    assert [(r["score"], r["success"]) for r in (own, overridden)] == [(0.5, True), (0.5, False)]
    assert own["gradingResult"]["reason"] == "Aggregate score 0.50 ≥ 0.5 threshold"
    assert overridden["gradingResult"]["reason"] == "Aggregate score 0.50 < 0.9 threshold"
    (none,) = rows_of("no-threshold.json")
    nothing = json.loads((THRESHOLD / "no-threshold.json").read_text(encoding="utf-8"))
    assert "threshold" not in none["testCase"]
    assert "threshold" not in nothing["config"]["defaultTest"]
    assert (none["score"], none["success"]) == (0.5, False)
    assert none["gradingResult"]["reason"] == 'Expected output to contain "Lyon"'


@pytest.mark.parametrize("form", ["json", "jsonl"])
def test_thresholded_is_read_from_the_test_case_promptfoo_wrote(tmp_path: Path, form) -> None:
    out = imported_threshold(tmp_path, THRESHOLD / f"default-threshold.{form}")
    own, overridden = atoms(out, "t0-p0"), atoms(out, "t1-p0")
    assert (own["thresholded"], own["reaches_threshold"]) == ("TRUE", "TRUE")
    assert (overridden["thresholded"], overridden["reaches_threshold"]) == ("TRUE", "FALSE")
    none = atoms(imported_threshold(tmp_path, THRESHOLD / f"no-threshold.{form}"), "t0-p0")
    assert none["thresholded"] == "FALSE" and "reaches_threshold" not in none
    for path in [
        *found_files(out.glob("*.json")),
        tmp_path / f"no-threshold-{form}" / "t0-p0.json",
    ]:
        report = check(path)
        assert report["overall"] == "SATISFIED", path.name
        assert report["verdict"]["status"] == "ENTAILED", path.name


def test_a_test_case_without_the_default_threshold_its_file_sets_is_unknown(
    tmp_path: Path,
) -> None:
    # not as promptfoo writes it (it copies `defaultTest`'s threshold into the test case):
    # which threshold the test ran with is not known, so `thresholded` is not FALSE
    data = json.loads((THRESHOLD / "default-threshold.json").read_text(encoding="utf-8"))
    for row in data["results"]["results"]:
        del row["testCase"]["threshold"]
    src = tmp_path / "results.json"
    src.write_text(json.dumps(data), encoding="utf-8")
    out = imported_threshold(tmp_path, src)
    for stem in ("t0-p0", "t1-p0"):
        got = atoms(out, stem)
        assert "thresholded" not in got and "reaches_threshold" not in got, stem
        assert check(out / f"{stem}.json")["overall"] != "VIOLATED", stem


@pytest.mark.skipif(
    os.environ.get("UNMASK_REGENERATE") != "1" or shutil.which("npm") is None,
    reason="regenerates with promptfoo from the registry: set UNMASK_REGENERATE=1 (needs npm)",
)
def test_regenerated_promptfoo_threshold_output_reads_the_same(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    subprocess.run(["sh", str(THRESHOLD / "regenerate.sh"), str(fresh)], check=True, timeout=900)
    assert (fresh / "VERSION").read_bytes() == (THRESHOLD / "VERSION").read_bytes()
    for name in ("default-threshold", "no-threshold"):
        for form in ("json", "jsonl"):
            old = imported_threshold(tmp_path / "old", THRESHOLD / f"{name}.{form}")
            new = imported_threshold(tmp_path / "new", fresh / f"{name}.{form}")
            for path in found_files(old.glob("*.json")):
                assert atoms(old, path.stem) == atoms(new, path.stem), (name, form)


# --- `unmask import jsonl`: a three-label judge with per-record passages and parts --------------

RAG = TEST_DATA / "importers" / "rag-judge"


def test_a_three_label_judge_with_per_record_passages_imports_and_audits(tmp_path: Path) -> None:
    # the worked example of docs/importers.md: SUPPORTED / PARTIAL / UNSUPPORTED mapped to the
    # protocol's own labels, each record with its own passages and its own claim parts
    out = tmp_path / "out"
    res = cli(
        "import",
        "jsonl",
        str(RAG / "judgments.jsonl"),
        "--mapping",
        str(RAG / "mapping.json"),
        "--out",
        str(out),
    )
    assert res.exit_code == 0, res.stderr
    r1 = json.loads((out / "r1.json").read_text(encoding="utf-8"))
    assert r1["verdict"] == "partially_supported"
    assert r1["domains"] == {"part": ["joined", "cto"]}
    assert r1["sources"]["context"] == (
        "[1] Alice joined ACME in 2024.\n[2] Bob has been ACME's CTO since 2019."
    )
    r2 = json.loads((out / "r2.json").read_text(encoding="utf-8"))
    assert r2["domains"] == {"part": ["opened"]} and r2["verdict"] == "supported"
    assert {a["atom"]: a["value"] for a in r1["annotations"]} == {
        "said(joined)": "TRUE",
        "said(cto)": "FALSE",
        "backed(joined)": "TRUE",
        "backed(cto)": "FALSE",
        "cited": "TRUE",
    }
    overall = {p.stem: check(p)["overall"] for p in sorted(out.glob("*.json"))}
    # r3 calls a claim supported whose parts the passages contradict
    assert overall == {"r1": "SATISFIED", "r2": "SATISFIED", "r3": "VIOLATED"}


def test_a_label_the_protocol_does_not_declare_is_skipped_naming_the_labels(tmp_path) -> None:
    rows = (RAG / "judgments.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(rows[0])
    first["verdict"] = "MAYBE"
    src = tmp_path / "j.jsonl"
    src.write_text("\n".join([json.dumps(first), *rows[1:]]) + "\n", encoding="utf-8")
    mapping = json.loads((RAG / "mapping.json").read_text(encoding="utf-8"))
    del mapping["verdict"]["map"]  # without a map, the field must hold the protocol's label
    (tmp_path / "claim_parts.proto").write_bytes((RAG / "claim_parts.proto").read_bytes())
    m = tmp_path / "mapping.json"
    m.write_text(json.dumps(mapping), encoding="utf-8")
    res = cli("import", "jsonl", str(src), "--mapping", str(m), "--out", str(tmp_path / "o"))
    assert res.exit_code == 1
    assert (
        f"{src}:1: field `verdict`: skipped: `MAYBE` is not one of `supported`,"
        " `partially_supported`, `not_supported`" in res.stderr
    )
    assert f"{src}:2: field `verdict`: skipped: `SUPPORTED` is not one of" in res.stderr


# --- Inspect: a claim about the submission is checked against the submission -----------------

INSPECT = TEST_DATA / "importers" / "inspect-generated"


def test_inspect_a_quote_of_the_target_does_not_back_a_claim_about_the_submission(
    tmp_path: Path,
) -> None:
    # written by inspect-ai itself (mockllm, `regenerate.py`): the answer names Buzz Aldrin,
    # the grader writes `The submission names "Neil Armstrong" as required. GRADE: C`
    assert (INSPECT / "VERSION").read_text(encoding="utf-8").startswith("inspect-ai 0.3.")
    out = tmp_path / "out"
    res = cli("import", "inspect", str(INSPECT / "moon.json"), "--out", str(out))
    assert res.exit_code == 0, res.stderr
    (path,) = out.glob("*.json")
    r = json.loads(path.read_text(encoding="utf-8"))
    said = next(a for a in r["annotations"] if a["atom"] == "said(q0)")
    assert said["value"] == "FALSE" and said["evidence"][0]["source"] == "response"
    assert said["explanation"].startswith("the explanation attributes the phrase to the submission")
    report = check(path)
    assert report["overall"] == "VIOLATED"
    assert [g["status"] for g in report["grounding"]] == ["REFUTED"]


def test_inspect_a_quote_of_the_expert_answer_is_still_found_in_the_target() -> None:
    from unmask.importers.inspect import _phrases

    texts = [("response", "Buzz Aldrin."), ("context", "Who?\n\nNeil Armstrong")]
    expert = 'The expert answer states: "Neil Armstrong". The submission differs.'
    ((_, _, found),) = _phrases(expert, texts, True)
    assert found == ("context", "Neil Armstrong")
    about = 'The submission names "Neil Armstrong" as required.'
    ((_, _, found),) = _phrases(about, texts, True)
    assert found is None


# --- DeepEval 4.x: a run DeepEval itself wrote ---------------------------------------------

DEEPEVAL = TEST_DATA / "importers" / "deepeval-generated"


def test_deepeval_4_latest_test_run_imports_with_no_false_finding(tmp_path: Path) -> None:
    # `.deepeval/.latest_test_run.json` as deepeval 4.3.1 wrote it (`regenerate.py`, a
    # fixed-JSON judge): Hallucination scores the share of agreeing verdicts, 1.0 passing
    assert (DEEPEVAL / "VERSION").read_text(encoding="utf-8") == "deepeval 4.3.1\n"
    out = tmp_path / "out"
    res = cli("import", "deepeval", str(DEEPEVAL / "latest_test_run.json"), "--out", str(out))
    assert res.exit_code == 0, res.stderr
    notes = [line for line in res.stderr.splitlines() if ": note: " in line]
    assert notes == [f"{DEEPEVAL / 'latest_test_run.json'}: note: {GEVAL_NOTE}"]
    agrees = check(out / "0000-agrees.json")
    assert agrees["overall"] != "VIOLATED"
    assert requirement_statuses(agrees)["success_agrees(m0)"] == "ENTAILED"
    # the second case's reason says "The score is 1.00" of a Hallucination score of 0.0
    contradicts = check(out / "0001-contradicts.json")
    assert contradicts["overall"] == "VIOLATED"
    s = requirement_statuses(contradicts)
    assert (s["success_agrees(m0)"], s["reason_agrees(m0)"]) == ("ENTAILED", "REFUTED")


GEVAL_NOTE = (
    "`Correctness [GEval]`: DeepEval does not ask this metric's reason to state the score"
    " (G-Eval's template says not to; a custom metric's is not known), so whether a reason"
    " states the reported score was not checked there"
)


def test_deepeval_a_geval_reason_is_not_asked_for_a_score_it_never_states(tmp_path) -> None:
    # G-Eval's template says "Do not quote the score": its reason can never address whether
    # it states the reported score, so no requirement asks it (it made every replay UNKNOWN)
    out = tmp_path / "out"
    res = cli("import", "deepeval", str(DEEPEVAL / "latest_test_run.json"), "--out", str(out))
    assert res.exit_code == 0, res.stderr
    assert res.stderr.count(": note: ") == 1  # once per file, for both test cases
    for name in ("0000-agrees.json", "0001-contradicts.json"):
        r = json.loads((out / name).read_text(encoding="utf-8"))
        assert r["sources"]["rationale"].splitlines()[5].startswith("[m2] Correctness [GEval]:")
        assert r["domains"] == {"metric": ["m0", "m1", "m2"], "score_reason": ["m0", "m1"]}
        assert not [a for a in r["annotations"] if a["atom"].endswith("(m2)") and "score_says"
                    not in a["atom"] and "succeeded" not in a["atom"]]  # fmt: skip
        report = check(out / name)
        assert "reason_agrees(m2)" not in requirement_statuses(report)
        coverage = {r["id"]: r["coverage"] for r in report["requirements"]}
        assert "REFUTED" not in coverage.values(), coverage
        assert "not-observable" not in [x["code"] for x in report["reasons"]]
    agrees = check(out / "0000-agrees.json")
    assert requirement_statuses(agrees)["success_agrees(m2)"] == "ENTAILED"
    # what keeps it UNKNOWN is the protocol's lack of grounding pairs, nothing else
    assert agrees["overall"] == "UNKNOWN"
    assert [x["code"] for x in agrees["reasons"]] == ["no-grounding"]


def test_deepeval_a_metric_without_a_reason_is_not_asked_for_a_score(tmp_path) -> None:
    data = json.loads((DEEPEVAL / "latest_test_run.json").read_text(encoding="utf-8"))
    data["testRunData"]["testCases"][0]["metricsData"][1]["reason"] = None
    src = tmp_path / "run.json"
    src.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "out"
    assert cli("import", "deepeval", str(src), "--out", str(out)).exit_code == 0
    r = json.loads((out / "0000-agrees.json").read_text(encoding="utf-8"))
    assert r["domains"]["score_reason"] == ["m0"]
    report = check(out / "0000-agrees.json")
    coverage = {r["id"]: r["coverage"] for r in report["requirements"]}
    assert coverage == {
        "success_agrees(m0)": "NOT_SPECIFIED",
        "success_agrees(m1)": "NOT_SPECIFIED",
        "success_agrees(m2)": "NOT_SPECIFIED",
        "reason_agrees(m0)": "ENTAILED",
    }


# --- opt-in: regenerate the Inspect and DeepEval fixtures with the tools themselves ---------


def _replays(tool: str, src: Path, out: Path) -> dict[str, bytes]:
    res = cli("import", tool, str(src), "--out", str(out))
    assert res.exit_code == 0, res.stderr
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.json"))}


@pytest.mark.skipif(
    os.environ.get("UNMASK_REGENERATE") != "1",
    reason="regenerates with inspect-ai and deepeval from the package index: set"
    " UNMASK_REGENERATE=1",
)
@pytest.mark.parametrize("tool", ["inspect", "deepeval"])
def test_regenerated_inspect_and_deepeval_output_gives_the_same_replays(tmp_path, tool) -> None:
    here = TEST_DATA / "importers" / f"{tool}-generated"
    fresh = tmp_path / "fresh"
    subprocess.run(["sh", str(here / "regenerate.sh"), str(fresh)], check=True, timeout=1800)
    version = "VERSION"
    assert (fresh / version).read_text(encoding="utf-8") == (here / version).read_text(
        encoding="utf-8"
    )
    names = ["moon.eval", "moon.json", "partial.eval", "partial.json", "settings.eval"]
    more = [
        "latest_test_run.json",
        "evaluation_result.json",
        "conversational_test_run.json",
        "conversational_result.json",
    ]
    for name in names if tool == "inspect" else more:
        old = _replays(tool, here / name, tmp_path / f"old-{name}")
        new = _replays(tool, fresh / name, tmp_path / f"new-{name}")
        assert old == new, name
