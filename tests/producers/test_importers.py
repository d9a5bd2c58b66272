"""`unmask import`: real promptfoo and DeepEval output files become replays that validate and
check on every backend; each rule the shipped protocols state is exercised on the real rows
(and on copies of them with one field changed, to reach the rules the real data happens not
to break); every input error is named with its file, line or JSON path and field."""

from __future__ import annotations

import copy
import importlib.resources
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import found_files
from tests.helpers import ROOT, TEST_DATA
from unmask.cli.main import main
from unmask.importers import (
    IMPORTERS,
    Options,
    Skipped,
    get,
    import_file,
    occurrence_at,
    rule_by,
    safe_name,
)
from unmask.plumbing.diagnostics import UnmaskError
from unmask.replay.load import load_replay

DATA = TEST_DATA / "importers"
PROMPTFOO = DATA / "promptfoo-sample-export.json"
DEEPEVAL = DATA / "deepeval-test-run-sample.json"
PROTO = ROOT / "examples" / "factual_claims.proto"


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def imp(tool: str, src: Path, out: Path, *extra: str):
    return cli("import", tool, str(src), "--out", str(out), *extra)


def check(path: Path, backend: str = "z3") -> tuple[int, dict]:
    res = cli("check", str(path), "--backend", backend, "--format", "json")
    return res.exit_code, json.loads(res.stdout)


def replay(out: Path, name: str) -> dict:
    return json.loads((out / f"{name}.json").read_text(encoding="utf-8"))


def ann(r: dict, atom: str) -> dict | None:
    return next((a for a in r["annotations"] if a["atom"] == atom), None)


def write(tmp_path: Path, name: str, data) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


def promptfoo_copy(tmp_path: Path, change) -> Path:
    data = json.loads(PROMPTFOO.read_text(encoding="utf-8"))
    change(data["results"]["results"])
    return write(tmp_path, "results.json", data)


def deepeval_copy(tmp_path: Path, change) -> Path:
    data = json.loads(DEEPEVAL.read_text(encoding="utf-8"))
    change(data)
    return write(tmp_path, "run.json", data)


def statuses(report: dict) -> dict[str, str]:
    out = {"verdict": report["verdict"]["status"], "overall": report["overall"]}
    out.update({r["id"]: r["status"] for r in report["requirements"]})
    out.update({f"~{g['judge']}": g["status"] for g in report["grounding"]})
    return out


def assert_violated_with(path: Path, expect: dict[str, str]) -> None:
    """On z3 and sliced, the replay at ``path`` is VIOLATED (exit 1) with ``expect``'s
    statuses."""
    for backend in ("z3", "sliced"):
        code, report = check(path, backend)
        s = statuses(report)
        assert {k: s[k] for k in expect} == expect
        assert (code, s["overall"]) == (1, "VIOLATED")


# --- the registry -------------------------------------------------------------------------


def test_registry_names_and_did_you_mean():
    assert set(IMPORTERS) >= {"promptfoo", "deepeval", "jsonl"}
    assert get("promptfoo").NAME == "promptfoo"
    with pytest.raises(UnmaskError) as exc:
        get("promptfo")
    d = exc.value.diagnostics[0]
    assert (d.code, d.help) == ("unknown-importer", "did you mean `promptfoo`?")
    with pytest.raises(UnmaskError) as exc:
        get("zzz")
    assert "importers are `promptfoo`" in exc.value.diagnostics[0].help


def test_unknown_importer_and_misplaced_mapping_are_usage_errors(tmp_path):
    res = imp("promptfo", PROMPTFOO, tmp_path / "o")
    assert res.exit_code == 2 and "did you mean `promptfoo`?" in res.stderr
    res = imp("promptfoo", PROMPTFOO, tmp_path / "o", "--mapping", "m.json")
    assert res.exit_code == 2 and "`--mapping` is for the `jsonl` importer" in res.stderr
    res = cli("import", "promptfoo", str(PROMPTFOO))
    assert res.exit_code == 2  # --out is required
    assert not (tmp_path / "o").exists()


def test_rule_derived_annotations_say_so():
    assert rule_by("promptfoo") == {"kind": "rule", "name": "promptfoo/1", "reviewed": False}


def test_safe_names_and_occurrences():
    assert safe_name("../../etc/passwd") == "etc_passwd"
    assert safe_name("...") == "replay"
    assert safe_name("a b/c:d") == "a_b_c_d"
    assert occurrence_at("abab ab", "ab", 5) == 2
    with pytest.raises(ValueError):
        occurrence_at("abab", "ab", 1)


def test_the_protocols_ship_inside_the_package():
    files = importlib.resources.files("unmask.importers") / "protocols"
    assert (files / "promptfoo.proto").is_file() and (files / "deepeval.proto").is_file()
    if sys.version_info >= (3, 11):
        import tomllib

        cfg = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
        st = cfg["tool"]["setuptools"]
        assert "unmask.importers" in st["packages"]
        assert st["package-data"]["unmask.importers"] == ["protocols/*.proto"]


# --- promptfoo: the real export ---------------------------------------------------------------


def test_promptfoo_real_export_becomes_four_replays(tmp_path):
    out = tmp_path / "out"
    res = imp("promptfoo", PROMPTFOO, out)
    assert res.exit_code == 0, res.stderr
    assert res.stderr == (
        f"imported 4 replays from `{PROMPTFOO}` into `{out}` with `promptfoo`; skipped 0\n"
    )
    assert sorted(p.name for p in out.glob("*.json")) == [
        "t0-p0.json",
        "t0-p1.json",
        "t1-p0.json",
        "t1-p1.json",
    ]
    # results[0]: gpt-5-mini on the echo riddle; latency 5794 ms against 3000 failed the row
    r = replay(out, "t0-p1")
    assert r["id"] == "b7df157c-b0cd-4852-a41a-72523ea294e7"
    assert r["verdict"] == "FAIL" and r["domains"] == {"assertion": ["a0", "a1", "a2", "a3"]}
    assert ann(r, "passed(a1)")["value"] == "FALSE"
    assert ann(r, "passed(a1)")["evidence"][0]["quote"] == (
        "[a1] latency: pass=false score=0 threshold=3000"
    )
    assert ann(r, "has_property(a1)")["evidence"][0]["quote"] == "latencyMs=5794"
    assert ann(r, "has_property(a1)")["value"] == "FALSE"
    echo = ann(r, "has_property(a2)")["evidence"][0]
    assert (echo["source"], echo["quote"]) == ("response", "echo")
    assert r["sources"]["response"][echo["start"] : echo["end"]] == "echo"
    assert ann(r, "has_property(a3)") is None  # llm-rubric: nothing independent to say
    assert ann(r, "thresholded")["value"] == "FALSE"
    assert ann(r, "reaches_threshold") is None


def test_promptfoo_real_rows_check_alike_on_z3_and_sliced(tmp_path):
    out = tmp_path / "out"
    assert imp("promptfoo", PROMPTFOO, out).exit_code == 0
    for path in found_files(out.glob("*.json")):
        assert cli("validate", str(path)).exit_code == 0
        code_z3, z3 = check(path, "z3")
        code_sl, sliced = check(path, "sliced")
        assert code_z3 == code_sl
        assert {**z3, "backend": "-"} == {**sliced, "backend": "-"}
        # every row: FAIL follows from the failing latency, each pass agrees with its score,
        # and only the llm-rubric grading has nothing to be grounded against
        s = statuses(z3)
        assert s["verdict"] == "ENTAILED" and s["overall"] == "UNKNOWN" and code_z3 == 3
        assert all(v == "ENTAILED" for k, v in s.items() if k.startswith("score_agrees"))
        rubric = [g for g in z3["grounding"] if g["status"] != "ENTAILED"]
        assert len(rubric) == 1
    # results[1]: gpt-5 cost 0.00208625 over the 0.002 budget; the grader said fail, rightly
    _, z3 = check(out / "t0-p0.json")
    assert statuses(z3)["~passed(a0)"] == "ENTAILED"
    assert ann(replay(out, "t0-p0"), "has_property(a0)")["value"] == "FALSE"


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        # the row claims success although its latency assertion failed
        (lambda rows: rows[0].update(success=True), {"verdict": "REFUTED"}),
        # promptfoo#2998's shape: the grader says pass with a score of 0
        (
            lambda rows: rows[0]["gradingResult"]["componentResults"][3].update(score=0),
            {"score_agrees(a3)": "REFUTED"},
        ),
        # a test threshold: the weighted score 0.75 reaches 0.7, so promptfoo owes a pass
        (
            lambda rows: rows[0]["testCase"].update(threshold=0.7),
            {"verdict": "REFUTED"},
        ),
        # the latency grader says pass although 5794 ms is over the 3000 ms threshold
        (
            lambda rows: rows[0]["gradingResult"]["componentResults"][1].update(
                **{"pass": True, "score": 1}
            ),
            {"~passed(a1)": "REFUTED"},
        ),
        # a `contains` pass the response does not bear out
        (
            lambda rows: rows[0]["response"].update(output="A voice in the hills."),
            {"~passed(a2)": "REFUTED"},
        ),
    ],
)
def test_promptfoo_rules_on_changed_copies_of_a_real_row(tmp_path, change, expect):
    src = promptfoo_copy(tmp_path, change)
    out = tmp_path / "out"
    assert imp("promptfoo", src, out).exit_code == 0
    assert_violated_with(out / "t0-p1.json", expect)


@pytest.mark.parametrize(
    ("change", "where", "reason"),
    [
        (
            lambda rows: rows[0].pop("gradingResult"),
            "results.results[0].gradingResult",
            "no grading",
        ),
        (lambda rows: rows[0].update(success="no"), "results.results[0].success", "`no`"),
        (
            lambda rows: rows[0]["gradingResult"].update(componentResults=[]),
            "results.results[0].gradingResult.componentResults",
            "no assertion results",
        ),
        (
            lambda rows: rows[0]["gradingResult"]["componentResults"][2].pop("pass"),
            "results.results[0].gradingResult.componentResults[2].pass",
            "expected true or false",
        ),
        (
            lambda rows: rows[0]["gradingResult"]["componentResults"][0]["assertion"].update(
                type="guardrails"
            ),
            "results.results[0].gradingResult.componentResults[0].assertion.type",
            "`guardrails` assertions are not imported yet",
        ),
        (
            lambda rows: rows[0]["gradingResult"]["componentResults"].__setitem__(0, 3),
            "results.results[0].gradingResult.componentResults[0]",
            "expected an assertion result",
        ),
        (
            lambda rows: [
                c["assertion"].update(metricOnly=True)
                for c in rows[0]["gradingResult"]["componentResults"]
            ],
            "results.results[0].gradingResult.componentResults",
            "only metric-only assertions",
        ),
        (lambda rows: rows.__setitem__(0, "x"), "results.results[0]", "expected a result"),
    ],
)
def test_promptfoo_bad_rows_are_skipped_with_where_and_why(tmp_path, change, where, reason):
    src = promptfoo_copy(tmp_path, change)
    out = tmp_path / "out"
    res = imp("promptfoo", src, out)
    assert res.exit_code == 1
    lines = res.stderr.splitlines()
    assert lines[0].startswith(f"{src}: {where}: skipped: ") and reason in lines[0]
    assert lines[-1].endswith("with `promptfoo`; skipped 1")
    assert "imported 3 replays" in lines[-1]
    assert len(list(out.glob("*.json"))) == 3


def test_promptfoo_an_assertion_that_is_not_an_object_is_of_unknown_type(tmp_path):
    def change(rows):
        rows[0]["gradingResult"]["componentResults"][2]["assertion"] = "contains"

    out = tmp_path / "out"
    assert imp("promptfoo", promptfoo_copy(tmp_path, change), out).exit_code == 0
    r = replay(out, "t0-p1")
    assert ann(r, "passed(a2)")["evidence"][0]["quote"].startswith("[a2] unknown: pass=true")
    assert ann(r, "has_property(a2)") is None


def test_promptfoo_metric_only_assertions_are_left_out(tmp_path):
    def change(rows):
        rows[0]["gradingResult"]["componentResults"][3]["assertion"]["metricOnly"] = True

    out = tmp_path / "out"
    assert imp("promptfoo", promptfoo_copy(tmp_path, change), out).exit_code == 0
    assert replay(out, "t0-p1")["domains"] == {"assertion": ["a0", "a1", "a2"]}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"results": []}', "not a promptfoo results file"),
        ("[1, 2]", "not a promptfoo results file"),
        ('{"results": {', "error"),
    ],
)
def test_promptfoo_input_that_is_not_the_format_exits_4(tmp_path, content, message):
    src = tmp_path / "x.json"
    src.write_text(content, encoding="utf-8")
    res = imp("promptfoo", src, tmp_path / "out")
    assert res.exit_code == 4 and message in res.stderr and str(src) in res.stderr
    assert not (tmp_path / "out").exists()


def test_missing_input_file_exits_4(tmp_path):
    res = imp("deepeval", tmp_path / "nope.json", tmp_path / "out")
    assert res.exit_code == 4 and "nope.json" in res.stderr


def test_an_out_path_that_is_a_file_exits_4(tmp_path):
    blocker = tmp_path / "out"
    blocker.write_text("", encoding="utf-8")
    assert imp("promptfoo", PROMPTFOO, blocker).exit_code == 2  # not a directory: usage
    res = imp("promptfoo", PROMPTFOO, blocker / "sub")
    assert res.exit_code == 4 and "cannot write" in res.stderr, res.stderr


# --- DeepEval: the real test run --------------------------------------------------------------


def test_deepeval_real_run_becomes_one_replay_and_says_what_it_left_out(tmp_path):
    out = tmp_path / "out"
    res = imp("deepeval", DEEPEVAL, out)
    assert res.exit_code == 1  # the six span-level metric results are not imported
    assert res.stderr.splitlines() == [
        f"{DEEPEVAL}: testCases[0].trace: skipped: 6 metric results on trace spans "
        "(only test-case metrics are imported)",
        f"imported 1 replay from `{DEEPEVAL}` into `{out}` with `deepeval`; skipped 6",
    ]
    r = replay(out, "0000-sample_test_case")
    assert r["id"] == "sample_test_case" and r["verdict"] == "FAIL"
    assert r["sources"]["response"] == "{...}"
    assert r["sources"]["protocol"].startswith("What is CECL forecasting")
    # Faithfulness: 0.45 against 0.7, success false
    assert ann(r, "score_says(m1)")["value"] == "FALSE"
    assert ann(r, "score_says(m1)")["evidence"][0]["quote"] == (
        "[m1] Faithfulness: success=false score=0.45 threshold=0.7 strict=false"
    )
    assert ann(r, "states_score(m0)")["value"] == "FALSE"
    for backend in ("z3", "sliced"):
        code, report = check(out / "0000-sample_test_case.json", backend)
        s = statuses(report)
        assert s["verdict"] == "ENTAILED"
        assert s["success_agrees(m0)"] == s["success_agrees(m1)"] == "ENTAILED"
        assert (code, s["overall"]) == (3, "UNKNOWN")  # the protocol has no grounding pairs


def _metric(data, j, **kw):
    data["testCases"][0]["metricsData"][j].update(**kw)


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        # success although 0.45 is under the 0.7 threshold
        (lambda d: _metric(d, 1, success=True), {"success_agrees(m1)": "REFUTED"}),
        # deepeval PR #2644's shape: the reason states another score than the one reported
        (
            lambda d: _metric(
                d, 1, reason="The score is 1.00 because there are no contradictions."
            ),
            {"reason_agrees(m1)": "REFUTED"},
        ),
        # the test case claims success while Faithfulness failed
        (lambda d: d["testCases"][0].update(success=True), {"verdict": "REFUTED"}),
    ],
)
def test_deepeval_rules_on_changed_copies_of_the_real_run(tmp_path, change, expect):
    out = tmp_path / "out"
    imp("deepeval", deepeval_copy(tmp_path, change), out)
    assert_violated_with(out / "0000-sample_test_case.json", expect)


HALLUCINATION = {"name": "Hallucination", "threshold": 0.5, "reason": "Compared with the context."}


def test_deepeval_the_direction_of_hallucination_is_read_from_the_file(tmp_path):
    # DeepEval 4.x: the share of passing verdicts, success when score >= threshold; the file
    # shows it (every result agrees with >= and not with <=), so a passing one is not refuted
    def change(d):
        d["testCases"][0]["metricsData"][2:] = [
            dict(HALLUCINATION, score=0.9, success=True),
            dict(HALLUCINATION, score=0.2, success=False),
        ]

    out = tmp_path / "out"
    res = imp("deepeval", deepeval_copy(tmp_path, change), out)
    assert ": note: " not in res.stderr
    r = replay(out, "0000-sample_test_case")
    says = ann(r, "score_says(m2)")
    assert says["value"] == "TRUE"
    assert says["explanation"] == "`Hallucination` succeeds when score >= threshold: 0.9 >= 0.5"
    _, report = check(out / "0000-sample_test_case.json")
    assert statuses(report)["success_agrees(m2)"] == "ENTAILED"
    assert statuses(report)["success_agrees(m3)"] == "ENTAILED"


def test_deepeval_a_direction_the_file_does_not_show_is_not_checked_and_said_once(tmp_path):
    def change(d):
        d["testCases"][0]["metricsData"][2:] = [
            dict(HALLUCINATION, score=0.9, success=True),
            dict(HALLUCINATION, score=0.3, success=True),  # agrees with neither
        ]

    out = tmp_path / "out"
    src = deepeval_copy(tmp_path, change)
    res = imp("deepeval", src, out)
    assert [x for x in res.stderr.splitlines() if ": note: " in x] == [
        f"{src}: note: `Hallucination`: whether a higher or a lower score succeeds changed"
        " between DeepEval versions and this file does not show which, so those scores were"
        " not checked"
    ]
    r = replay(out, "0000-sample_test_case")
    assert ann(r, "score_says(m2)") is None and ann(r, "score_says(m3)") is None


def test_deepeval_latest_test_run_wrapped_in_test_run_data_imports(tmp_path):
    data = json.loads(DEEPEVAL.read_text(encoding="utf-8"))
    src = write(tmp_path, ".latest_test_run.json", {"testFile": "t.py", "testRunData": data})
    out = tmp_path / "out"
    res = imp("deepeval", src, out)
    assert res.exit_code == 1, res.stderr  # the span metrics, as for the bare run
    assert f"{src}: testRunData.testCases[0].trace: skipped: 6 metric results" in res.stderr
    assert replay(out, "0000-sample_test_case") == replay_of(tmp_path, DEEPEVAL)


def replay_of(tmp_path: Path, src: Path) -> dict:
    out = tmp_path / "bare"
    imp("deepeval", src, out)
    return replay(out, "0000-sample_test_case")


def test_deepeval_a_reason_stating_the_reported_score_agrees(tmp_path):
    out = tmp_path / "out"
    change = lambda d: _metric(d, 1, reason="The score is 0.45 because two claims lack support.")  # noqa: E731
    imp("deepeval", deepeval_copy(tmp_path, change), out)
    r = replay(out, "0000-sample_test_case")
    assert ann(r, "reason_score(m1)")["value"] == "TRUE"
    assert ann(r, "reason_score(m1)")["evidence"][0]["quote"] == "The score is 0.45"
    _, report = check(out / "0000-sample_test_case.json")
    assert statuses(report)["reason_agrees(m1)"] == "ENTAILED"


def test_deepeval_unknown_metric_names_leave_the_score_rule_open(tmp_path):
    out = tmp_path / "out"
    imp("deepeval", deepeval_copy(tmp_path, lambda d: _metric(d, 0, name="My Metric")), out)
    r = replay(out, "0000-sample_test_case")
    assert ann(r, "score_says(m0)") is None
    assert ann(r, "succeeded(m0)")["value"] == "TRUE"


@pytest.mark.parametrize(
    ("change", "where", "reason"),
    [
        (lambda d: d["testCases"][0].pop("success"), "testCases[0].success", "expected true"),
        (
            lambda d: d["testCases"][0].update(metricsData=[]),
            "testCases[0].metricsData",
            "no metric",
        ),
        (
            lambda d: _metric(d, 0, success=None),
            "testCases[0].metricsData[0].success",
            "found `null`",
        ),
        (lambda d: _metric(d, 1, name=7), "testCases[0].metricsData[1].name", "metric name"),
        (
            lambda d: d["testCases"][0]["metricsData"].__setitem__(0, []),
            "testCases[0].metricsData[0]",
            "expected a metric result",
        ),
        (
            lambda d: d["conversationalTestCases"].append({}),
            "conversationalTestCases[0].success",
            "expected true",
        ),
    ],
)
def test_deepeval_bad_cases_are_skipped_with_where_and_why(tmp_path, change, where, reason):
    src = deepeval_copy(tmp_path, change)
    res = imp("deepeval", src, tmp_path / "out")
    assert res.exit_code == 1
    hit = [ln for ln in res.stderr.splitlines() if ln.startswith(f"{src}: {where}: skipped: ")]
    assert len(hit) == 1 and reason in hit[0]


def test_deepeval_not_a_test_run_exits_4(tmp_path):
    res = imp("deepeval", write(tmp_path, "x.json", {"testCases": {}}), tmp_path / "out")
    assert res.exit_code == 4 and "not a DeepEval test run" in res.stderr


def test_deepeval_a_test_case_that_is_not_an_object(tmp_path):
    src = write(tmp_path, "x.json", {"testCases": [3]})
    res = imp("deepeval", src, tmp_path / "out")
    assert (
        res.exit_code == 1 and f"{src}: testCases[0]: skipped: expected a test case" in res.stderr
    )


# --- the generic JSON Lines importer ----------------------------------------------------------

RECORDS = [
    {
        "qid": "q1",
        "judge": {"explanation": "Alice joined ACME in 2024: supported.", "label": "yes"},
        "evidence": "Alice joined ACME in 2024.",
        "human": "no",
        "joined": True,
        "joined_quote": "Alice joined ACME in 2024: supported",
    },
    {
        "qid": "q2",
        "judge": {"explanation": "Alice is the CTO: not supported.", "label": "no"},
        "evidence": "Alice is an engineer.",
        "human": "no",
        "joined": None,
        "joined_quote": "",
    },
]


def mapping(tmp_path: Path, **override) -> Path:
    m = {
        "protocol": "factual_claims.proto",
        "id": "qid",
        "sources": {"rationale": "judge.explanation", "context": "evidence"},
        "verdict": {"field": "judge.label", "map": {"yes": "PASS", "no": "FAIL"}},
        "gold": {"field": "human", "map": {"yes": "PASS", "no": "FAIL"}},
        "annotations": [
            {
                "atom": "j_joined",
                "value": {"field": "joined", "map": {"true": "TRUE", "null": "UNKNOWN"}},
                "quote": "joined_quote",
            }
        ],
    }
    m.update(override)
    (tmp_path / "factual_claims.proto").write_text(PROTO.read_text(encoding="utf-8"))
    return write(tmp_path, "mapping.json", m)


def jsonl(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "judgments.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_jsonl_records_become_replays_through_the_mapping(tmp_path):
    src = jsonl(tmp_path, [json.dumps(r) for r in RECORDS] + [""])
    out = tmp_path / "out"
    res = imp("jsonl", src, out, "--mapping", str(mapping(tmp_path)))
    assert res.exit_code == 0, res.stderr
    assert sorted(p.name for p in out.glob("*.json")) == ["q1.json", "q2.json"]
    r = replay(out, "q1")
    assert (r["verdict"], r["gold"], r["id"]) == ("PASS", "FAIL", "q1")
    assert r["sources"] == {
        "rationale": RECORDS[0]["judge"]["explanation"],
        "context": RECORDS[0]["evidence"],
    }
    assert ann(r, "j_joined")["evidence"][0] == {
        "source": "rationale",
        "start": 0,
        "end": 36,
        "quote": "Alice joined ACME in 2024: supported",
    }
    assert ann(replay(out, "q2"), "j_joined")["value"] == "UNKNOWN"
    for name in ("q1", "q2"):
        assert load_replay(out / f"{name}.json").protocol.name == "factual_claims"
        code_z3, z3 = check(out / f"{name}.json", "z3")
        code_sl, sliced = check(out / f"{name}.json", "sliced")
        assert code_z3 == code_sl and {**z3, "backend": "-"} == {**sliced, "backend": "-"}
        assert z3["gold"] == "FAIL"


def test_jsonl_passages_with_ids_become_lines_named_by_them(tmp_path):
    rec = {
        **RECORDS[0],
        "evidence": [{"id": "p1", "text": "Alice joined ACME."}, {"id": "p2", "text": "Bob."}],
    }
    out = tmp_path / "out"
    res = imp("jsonl", jsonl(tmp_path, [json.dumps(rec)]), out, "--mapping", str(mapping(tmp_path)))
    assert res.exit_code == 0, res.stderr
    assert replay(out, "q1")["sources"]["context"] == "[p1] Alice joined ACME.\n[p2] Bob."


def test_jsonl_repeated_ids_get_distinct_stable_names(tmp_path):
    src = jsonl(tmp_path, [json.dumps(RECORDS[1]), json.dumps(RECORDS[1])])
    out = tmp_path / "out"
    assert imp("jsonl", src, out, "--mapping", str(mapping(tmp_path))).exit_code == 0
    assert sorted(p.name for p in out.glob("*.json")) == ["q2-2.json", "q2.json"]


def test_jsonl_item_and_default_ids(tmp_path):
    src = jsonl(tmp_path, [json.dumps(RECORDS[1])])
    m = mapping(tmp_path, item="qid")
    raw = json.loads(m.read_text())
    del raw["id"]
    m.write_text(json.dumps(raw))
    summary = import_file("jsonl", src, tmp_path / "out", Options(mapping=m))
    (path,) = summary.written
    r = json.loads(path.read_text())
    assert r["id"] == "judgments-1" and r["item"] == "q2"


@pytest.mark.parametrize(
    ("line", "field", "reason"),
    [
        ("{not json", None, "not a JSON record"),
        ("[1]", None, "expected a JSON object"),
        (json.dumps({**RECORDS[0], "judge": {"label": "yes"}}), "judge.explanation", "missing"),
        (json.dumps({**RECORDS[0], "human": "maybe"}), "human", "not in the gold map"),
        (json.dumps({**RECORDS[0], "evidence": 3}), "evidence", "expected text"),
        (
            json.dumps({**RECORDS[0], "evidence": [{"id": "p 1", "text": "a"}]}),
            "evidence",
            "passages with distinct ids",
        ),
        (json.dumps({**RECORDS[0], "joined": False}), "joined", "not in the value map"),
        (json.dumps({**RECORDS[0], "joined_quote": 5}), "joined_quote", "expected the quoted"),
        (
            json.dumps({**RECORDS[0], "joined_quote": "Alice joined ACME in 2025"}),
            None,
            "the replay would be invalid at `annotations[0].evidence[0].quote`: "
            "`Alice joined ACME in 2025` does not occur in `rationale`",
        ),
    ],
)
def test_jsonl_bad_records_are_skipped_with_file_line_and_field(tmp_path, line, field, reason):
    src = jsonl(tmp_path, [json.dumps(RECORDS[1]), line])
    res = imp("jsonl", src, tmp_path / "out", "--mapping", str(mapping(tmp_path)))
    assert res.exit_code == 1
    where = f"{src}:2" + (f": field `{field}`" if field else "")
    first = res.stderr.splitlines()[0]
    assert first.startswith(f"{where}: skipped: ") and reason in first, first
    assert res.stderr.splitlines()[-1].endswith("skipped 1")


def test_jsonl_verdict_without_a_map_must_be_a_label(tmp_path):
    m = mapping(tmp_path, verdict={"field": "judge.label"})
    res = imp(
        "jsonl", jsonl(tmp_path, [json.dumps(RECORDS[0])]), tmp_path / "out", "--mapping", str(m)
    )
    assert res.exit_code == 1 and "`yes` is not one of `PASS`, `FAIL`" in res.stderr


@pytest.mark.parametrize(
    ("override", "path", "message"),
    [
        ({"protcol": "x"}, "protcol", "unknown key `protcol`"),
        ({"protocol": 3}, "protocol", "expected a field name"),
        ({"protocol": "/etc/passwd"}, "protocol", "`/etc/passwd` is not a `.proto` file"),
        ({"sources": {}}, "sources", "expected an object"),
        ({"sources": {"notes": "x"}}, "sources.notes", "unknown source `notes`"),
        ({"sources": {"rationale": 1}}, "sources.rationale", "expected a field name"),
        ({"verdict": "judge.label"}, "verdict", 'expected `{"field": "…"}`'),
        ({"verdict": {"field": "x", "mapp": {}}}, "verdict.mapp", "unknown key `mapp`"),
        ({"gold": {"field": "x", "map": {"a": 1}}}, "gold.map", "expected an object of raw"),
        ({"domains": {"claim": "a"}}, "domains.claim", "expected an array of member names"),
        ({"domains": ["a"]}, "domains", "expected an object of domain"),
        ({"annotations": {}}, "annotations", "expected an array"),
        ({"annotations": [{"value": {"field": "x"}}]}, "annotations[0]", 'expected `{"atom"'),
        ({"annotations": [{"atom": "a"}]}, "annotations[0]", "missing `value`"),
        (
            {"annotations": [{"atom": "a", "value": {"field": "x"}, "quote": 1}]},
            "annotations[0].quote",
            "expected a field name",
        ),
        ({"id": ""}, "id", "expected a field name"),
    ],
)
def test_jsonl_mapping_errors_name_the_mapping_file_and_key(tmp_path, override, path, message):
    m = mapping(tmp_path, **override)
    res = imp(
        "jsonl", jsonl(tmp_path, [json.dumps(RECORDS[0])]), tmp_path / "out", "--mapping", str(m)
    )
    assert res.exit_code == 4
    assert res.stderr.startswith(f"{m}: {path}: error: ") and message in res.stderr, res.stderr
    assert not (tmp_path / "out").exists()


def test_jsonl_mapping_missing_keys_and_bad_files(tmp_path):
    src = jsonl(tmp_path, [json.dumps(RECORDS[0])])
    m = mapping(tmp_path)
    raw = json.loads(m.read_text())
    for key in ("protocol", "verdict"):
        broken = {k: v for k, v in raw.items() if k != key}
        p = write(tmp_path, f"no-{key}.json", broken)
        res = imp("jsonl", src, tmp_path / "out", "--mapping", str(p))
        assert res.exit_code == 4 and f"missing `{key}`" in res.stderr
    p = write(tmp_path, "list.json", [])
    assert imp("jsonl", src, tmp_path / "out", "--mapping", str(p)).exit_code == 4
    p = write(tmp_path, "noproto.json", {**raw, "protocol": "missing.proto"})
    res = imp("jsonl", src, tmp_path / "out", "--mapping", str(p))
    assert res.exit_code == 4 and "missing.proto" in res.stderr
    res = imp("jsonl", src, tmp_path / "out")
    assert res.exit_code == 4 and "needs a mapping file" in res.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"a": 1}\n\xff\n')
    res = imp("jsonl", bad, tmp_path / "out", "--mapping", str(m))
    assert res.exit_code == 4 and "not valid UTF-8 (byte 9, line 2)" in res.stderr
    res = imp("jsonl", tmp_path / "none.jsonl", tmp_path / "out", "--mapping", str(m))
    assert res.exit_code == 4 and "none.jsonl" in res.stderr


def test_import_file_reports_skips_as_data(tmp_path):
    src = jsonl(tmp_path, ["{bad", json.dumps(RECORDS[0])])
    summary = import_file("jsonl", src, tmp_path / "out", Options(mapping=mapping(tmp_path)))
    assert [p.name for p in summary.written] == ["q1.json"]
    assert summary.n_skipped == 1 and isinstance(summary.skipped[0], Skipped)
    assert summary.skipped[0].where == f"{src}:1"


def test_copied_records_are_not_shared_between_replays(tmp_path):
    # the same real row imported twice gives two equal, independent replays
    data = json.loads(PROMPTFOO.read_text(encoding="utf-8"))
    data["results"]["results"].append(copy.deepcopy(data["results"]["results"][0]))
    out = tmp_path / "out"
    assert imp("promptfoo", write(tmp_path, "r.json", data), out).exit_code == 0
    a, b = replay(out, "t0-p1"), replay(out, "t0-p1-2")
    assert a == b


# --- Inspect: real JSON logs with model_graded_fact scores ------------------------------------

INSPECT_GUIDE = DATA / "inspect-security-guide.json"
INSPECT_TASK = DATA / "inspect-input-task.json"


def inspect_copy(tmp_path: Path, change, src: Path = INSPECT_TASK) -> Path:
    data = json.loads(src.read_text(encoding="utf-8"))
    # this log predates `eval.scorers`: record the scorer's options as Inspect 0.3.285 does
    # (none passed), so that its grade pattern is known to be the default
    data["eval"].setdefault("scorers", [{"name": "model_graded_fact", "options": {}}])
    change(data["samples"][0])
    return write(tmp_path, "log.json", data)


def _grader(sample) -> dict:
    return sample["scores"]["model_graded_fact"]


def test_inspect_real_logs_are_satisfied_on_z3_and_sliced(tmp_path):
    res = imp("inspect", INSPECT_GUIDE, tmp_path / "guide")
    assert res.exit_code == 0, res.stderr
    assert res.stderr.endswith("with `inspect`; skipped 0\n")
    task = imp("inspect", INSPECT_TASK, tmp_path / "task")
    assert task.exit_code == 0
    # that log records no scorer options, so its grade pattern is not known (issue 37)
    assert task.stderr.count("note:") == 1
    assert "`model_graded_fact`: the log does not record the scorer's options" in task.stderr
    # another input into the same folder: its replays replace the earlier import's
    again = imp("inspect", inspect_copy(tmp_path, lambda s: None), tmp_path / "task", "--replace")
    assert again.exit_code == 0, again.stderr
    assert sorted(p.name for p in (tmp_path / "guide").glob("*.json")) == [
        "1-e1-model_graded_fact.json",
        "2-e1-model_graded_fact.json",
        "3-e1-model_graded_fact.json",
    ]
    paths = [
        *sorted((tmp_path / "guide").glob("*.json")),
        tmp_path / "task" / "1-e1-model_graded_fact.json",
    ]
    for path in paths:
        code_z3, z3 = check(path, "z3")
        code_sl, sliced = check(path, "sliced")
        assert (code_z3, z3["overall"]) == (0, "SATISFIED")
        assert code_z3 == code_sl and {**z3, "backend": "-"} == {**sliced, "backend": "-"}


def test_inspect_a_log_without_scorer_options_leaves_the_grade_unknown(tmp_path):
    out = tmp_path / "out"
    assert imp("inspect", INSPECT_TASK, out).exit_code == 0
    r = replay(out, "1-e1-model_graded_fact")
    atoms = {a["atom"] for a in r["annotations"]}
    assert not atoms & {"says_correct", "says_partial", "one_grade"}
    assert "said(q2)" in atoms  # the quotes are still checked
    _, report = check(out / "1-e1-model_graded_fact.json", "z3")
    assert report["verdict"]["status"] == "UNDERDETERMINED"


def test_inspect_real_sample_quotes_and_offsets(tmp_path):
    out = tmp_path / "out"
    assert imp("inspect", inspect_copy(tmp_path, lambda s: None), out).exit_code == 0
    r = replay(out, "1-e1-model_graded_fact")
    assert r["verdict"] == "C" and r["id"] == "1/1/model_graded_fact"
    assert r["sources"]["response"].endswith("better bundle up, fam! ❄️🧣")
    assert r["domains"] == {"quoted": ["q0", "q1", "q2"]}
    said = ann(r, "said(q2)")["evidence"][0]
    assert (said["source"], said["quote"]) == ("response", "better bundle up, fam!")
    assert r["sources"]["response"][said["start"] : said["end"]] == said["quote"]
    grade = ann(r, "says_correct")["evidence"][0]
    assert grade["quote"] == "GRADE: C" and grade["end"] == len(r["sources"]["rationale"]) - 1


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        # the score says I while the explanation ends with GRADE: C
        (lambda s: _grader(s).update(value="I"), {"verdict": "REFUTED"}),
        # the grader changes its mind: an earlier GRADE: I, a final GRADE: C
        (
            lambda s: _grader(s).update(explanation="GRADE: I\n" + _grader(s)["explanation"]),
            {"single_grade": "REFUTED"},
        ),
        # the grader was shown another submission than the response
        (lambda s: _grader(s).update(answer="It is warm."), {"graded_the_response": "REFUTED"}),
        # the grader quotes a phrase that nobody wrote
        (
            lambda s: _grader(s).update(
                explanation='It says "the lakes never freeze". ' + _grader(s)["explanation"]
            ),
            {"~quotes(q0)": "REFUTED"},
        ),
    ],
)
def test_inspect_rules_on_changed_copies_of_a_real_sample(tmp_path, change, expect):
    out = tmp_path / "out"
    assert imp("inspect", inspect_copy(tmp_path, change), out).exit_code == 0
    assert_violated_with(out / "1-e1-model_graded_fact.json", expect)


@pytest.mark.parametrize(
    ("last", "reads"),
    [
        ("GRADE: Correct", "TRUE"),  # spelled out, as Inspect's default scorer reads it
        ("GRADE: Incorrect", "FALSE"),
        ("GRADE: CI", None),  # no grade Inspect reads: not `C` from its first letter
        ("GRADE: C\nGRADE: Cat", None),  # the last token decides, not an earlier grade
    ],
)
def test_inspect_reads_the_last_grade_word_as_inspect_does(tmp_path, last, reads):
    src = inspect_copy(
        tmp_path,
        lambda s: _grader(s).update(
            explanation=_grader(s)["explanation"].rsplit("GRADE", 1)[0] + last
        ),
    )
    out = tmp_path / "out"
    assert imp("inspect", src, out).exit_code == 0
    r = replay(out, "1-e1-model_graded_fact")
    said = [a["value"] for a in r["annotations"] if a["atom"] == "says_correct"]
    assert said == ([] if reads is None else [reads])
    code, report = check(out / "1-e1-model_graded_fact.json", "sliced")
    if reads is None:  # the score says C; what the grader wrote does not say it
        assert report["verdict"]["status"] == "UNDERDETERMINED", report["verdict"]
        assert report["overall"] == "UNKNOWN" and code == 3


@pytest.mark.parametrize(
    ("change", "where", "reason"),
    [
        (lambda s: _grader(s).update(value="X"), ".model_graded_fact.value", "not scored C, P"),
        (lambda s: _grader(s).update(value=None), ".model_graded_fact.value", "not scored C, P"),
        (
            lambda s: _grader(s).update(explanation="Looks right."),
            ".model_graded_fact.explanation",
            "writes no `GRADE: X`",
        ),
        (lambda s: _grader(s).update(explanation=""), ".model_graded_fact.explanation", "no expl"),
        (lambda s: s["scores"].update(match={"value": "C"}), ".match", "not a model-graded scorer"),
        (lambda s: s["scores"].update(model_graded_qa=3), ".model_graded_qa", "expected a score"),
        (lambda s: s.pop("scores"), "", "no scores"),
    ],
)
def test_inspect_bad_scores_are_skipped_with_where_and_why(tmp_path, change, where, reason):
    src = inspect_copy(tmp_path, change)
    res = imp("inspect", src, tmp_path / "out")
    assert res.exit_code == 1
    prefix = f"{src}: samples[0].scores{where}: skipped: "
    hit = [ln for ln in res.stderr.splitlines() if ln.startswith(prefix)]
    assert len(hit) == 1 and reason in hit[0], res.stderr


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("log.eval", "PK", "not an Inspect `.eval` log: not a zip archive"),
        ("log.json", '{"eval": {}}', "not an Inspect log with samples"),
    ],
)
def test_inspect_input_that_is_not_the_format_exits_4(tmp_path, name, content, message):
    src = tmp_path / name
    src.write_text(content, encoding="utf-8")
    res = imp("inspect", src, tmp_path / "out")
    assert res.exit_code == 4 and message in res.stderr


def test_deepeval_a_metric_that_errored_keeps_its_score_rule_open(tmp_path):
    out = tmp_path / "out"
    change = lambda d: _metric(d, 0, score=None, success=False, error="timeout")  # noqa: E731
    imp("deepeval", deepeval_copy(tmp_path, change), out)
    r = replay(out, "0000-sample_test_case")
    assert ann(r, "score_says(m0)") is None
    assert ann(r, "succeeded(m0)")["evidence"][0]["quote"].endswith("error=timeout")


def test_inspect_content_parts_are_joined_as_the_response(tmp_path):
    def change(s):
        text = s["output"]["choices"][0]["message"]["content"]
        s["output"]["choices"][0]["message"]["content"] = [{"type": "text", "text": text}]

    out = tmp_path / "out"
    assert imp("inspect", inspect_copy(tmp_path, change), out).exit_code == 0
    _, report = check(out / "1-e1-model_graded_fact.json")
    assert report["overall"] == "SATISFIED"


def test_inspect_a_response_in_an_unknown_shape_leaves_the_answer_check_open(tmp_path):
    out = tmp_path / "out"
    change = lambda s: s["output"].update(choices=[])  # noqa: E731
    assert imp("inspect", inspect_copy(tmp_path, change), out).exit_code == 0
    r = replay(out, "1-e1-model_graded_fact")
    assert "response" not in r["sources"] and ann(r, "graded_response") is None


def test_jsonl_input_over_the_size_limit_exits_4(tmp_path):
    src = jsonl(tmp_path, [json.dumps(RECORDS[0])] * 20)
    m = mapping(tmp_path)
    assert src.stat().st_size > 2000 > max(m.stat().st_size, PROTO.stat().st_size)
    res = imp("jsonl", src, tmp_path / "out", "--mapping", str(m), "--max-file-bytes", "2000")
    assert res.exit_code == 4
    assert res.stderr.startswith(f"{src}: error: `{src}` is larger than the limit of 2000 bytes")
