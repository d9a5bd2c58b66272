"""`unmask import deepeval` on the other outputs DeepEval users save (issue 37).

All written by deepeval 4.3.1 itself, offline (`tests/data/importers/deepeval-generated/
regenerate.py`, a fixed-JSON judge): the `EvaluationResult` that `evaluate()` returns, saved
with `model_dump_json` (snake-case fields, a DAG metric among its metrics); a run of a
conversational test case; and DeepEval's cache, which is refused in one line naming it.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tests.helpers import TEST_DATA
from unmask.cli.main import main

DEEPEVAL = TEST_DATA / "importers" / "deepeval-generated"


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def imported(tmp_path: Path, src: Path, code: int = 0) -> tuple[Path, str]:
    out = tmp_path / src.name.replace(".", "-")
    res = cli("import", "deepeval", str(src), "--out", str(out))
    assert res.exit_code == code, res.stderr
    return out, res.stderr


def values(r: dict) -> dict[str, str]:
    return {a["atom"]: a["value"] for a in r["annotations"]}


def test_the_fixtures_are_deepeval_own_output() -> None:
    assert (DEEPEVAL / "VERSION").read_text(encoding="utf-8") == "deepeval 4.3.1\n"
    doc = json.loads((DEEPEVAL / "evaluation_result.json").read_text(encoding="utf-8"))
    assert [md["name"] for md in doc["test_results"][0]["metrics_data"]] == [
        "Names Paris [DAG]",
        "Answer Relevancy",
    ]


def test_an_evaluation_result_saved_as_json_is_read(tmp_path: Path) -> None:
    out, _ = imported(tmp_path, DEEPEVAL / "evaluation_result.json")
    assert sorted(p.name for p in out.glob("*.json")) == ["0000-agrees.json"]
    r = json.loads((out / "0000-agrees.json").read_text(encoding="utf-8"))
    assert r["verdict"] == "PASS"
    assert r["sources"]["response"] == "The capital of France is Paris."
    assert r["sources"]["context"] == "Paris is the capital of France."
    # snake-case fields read as the run file's: the threshold, the score, the reason
    assert (
        "[m1] Answer Relevancy: success=true score=1.0 threshold=0.5" in r["sources"]["rationale"]
    )
    assert values(r)["score_says(m1)"] == "TRUE"
    assert values(r)["reason_score(m1)"] == "TRUE"


def test_a_dag_metric_is_said_once_per_file_not_to_be_checked(tmp_path: Path) -> None:
    out, err = imported(tmp_path, DEEPEVAL / "evaluation_result.json")
    assert err.count("`Names Paris [DAG]`: a DAG metric's score is what the judgements") == 1
    r = json.loads((out / "0000-agrees.json").read_text(encoding="utf-8"))
    assert "score_says(m0)" not in values(r)


def test_a_conversational_test_case_is_read(tmp_path: Path) -> None:
    out, err = imported(tmp_path, DEEPEVAL / "conversational_test_run.json")
    assert sorted(p.name for p in out.glob("*.json")) == ["conversation-0000-weather.json"]
    r = json.loads((out / "conversation-0000-weather.json").read_text(encoding="utf-8"))
    assert r["sources"]["protocol"] == (
        "[user] What is the weather in Paris?\n[assistant] It is 18 degrees and sunny in Paris."
    )
    assert r["sources"]["response"] == "It is 18 degrees and sunny in Paris."
    # Conversational G-Eval succeeds at score >= threshold, DeepEval's base rule
    assert values(r) == {"succeeded(m0)": "TRUE", "score_says(m0)": "TRUE"}
    assert "skipped:" not in err


def test_a_conversational_case_whose_success_contradicts_its_score_is_refuted(tmp_path) -> None:
    doc = json.loads((DEEPEVAL / "conversational_test_run.json").read_text(encoding="utf-8"))
    doc["testRunData"]["conversationalTestCases"][0]["metricsData"][0]["score"] = 0.2
    src = tmp_path / "run.json"
    src.write_text(json.dumps(doc), encoding="utf-8")
    out, _ = imported(tmp_path, src)
    r = json.loads((out / "conversation-0000-weather.json").read_text(encoding="utf-8"))
    assert values(r)["score_says(m0)"] == "FALSE"


def test_the_cache_is_refused_naming_it_and_what_to_import(tmp_path: Path) -> None:
    res = cli("import", "deepeval", str(DEEPEVAL / "deepeval-cache.json"), "--out", str(tmp_path))
    assert res.exit_code == 4
    assert res.stderr.count("error:") == 1
    assert "a DeepEval cache (`.deepeval-cache.json`) is not imported" in res.stderr
    assert "`.deepeval/.latest_test_run.json`" in res.stderr


def test_a_metric_without_a_reason_is_said_once_per_file(tmp_path: Path) -> None:
    doc = json.loads((DEEPEVAL / "evaluation_result.json").read_text(encoding="utf-8"))
    doc["test_results"][0]["metrics_data"][1]["reason"] = None  # include_reason=False
    src = tmp_path / "result.json"
    src.write_text(json.dumps(doc), encoding="utf-8")
    out, err = imported(tmp_path, src)
    assert err.count("`Answer Relevancy`: no reason recorded") == 1
    r = json.loads((out / "0000-agrees.json").read_text(encoding="utf-8"))
    assert "m1" not in r["domains"]["score_reason"]
    assert "states_score(m1)" not in values(r)


def test_a_saved_result_of_a_conversational_run_gives_the_run_files_replay(tmp_path) -> None:
    run, _ = imported(tmp_path, DEEPEVAL / "conversational_test_run.json")
    result, _ = imported(tmp_path, DEEPEVAL / "conversational_result.json")
    name = "conversation-0000-weather.json"
    assert sorted(p.name for p in result.glob("*.json")) == [name]
    assert (result / name).read_bytes() == (run / name).read_bytes()


def test_a_custom_metric_is_said_once_per_file_not_to_be_checked(tmp_path: Path) -> None:
    doc = json.loads((DEEPEVAL / "evaluation_result.json").read_text(encoding="utf-8"))
    doc["test_results"][0]["metrics_data"][1]["name"] = "Brevity"  # a BaseMetric of the user's
    src = tmp_path / "result.json"
    src.write_text(json.dumps(doc), encoding="utf-8")
    out, err = imported(tmp_path, src)
    assert err.count("`Brevity`: not a DeepEval metric whose rule Unmask knows") == 1
    r = json.loads((out / "0000-agrees.json").read_text(encoding="utf-8"))
    assert "score_says(m1)" not in values(r)
    # the fixture's own metrics are all known: no such note
    _, plain = imported(tmp_path / "plain", DEEPEVAL / "evaluation_result.json")
    assert "whose rule Unmask knows" not in plain
