"""`unmask import ragas` on results RAGAS itself wrote (issue 23), not on files written by hand.

`tests/data/importers/ragas-generated/` holds `EvaluationResult.to_pandas()` as ragas 0.4.3
wrote it offline (`regenerate.py`: a fixed-JSON `BaseRagasLLM`, letter-count embeddings;
faithfulness, answer relevancy, context precision and exact match over three rows, the
third with no faithfulness score), as CSV, JSON (records, pandas' default columns, index) and
JSON Lines. The tests check that the formats give the same replays, that an empty score is
UNKNOWN, that a range is checked only where the metric fixes it, and that bad rows are
skipped with where and why while the rest are imported. The opt-in test at the end
regenerates the files with ragas from the registry (``UNMASK_REGENERATE=1``).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import found_files
from tests.helpers import TEST_DATA
from unmask.cli.main import main
from unmask.importers import dig
from unmask.importers.ragas import pandas_json

RAGAS = TEST_DATA / "importers" / "ragas-generated"
FORMATS = (
    "results.csv",
    "results.json",
    "results-columns.json",
    "results-index.json",
    "results.jsonl",
)

# pandas' other ways of writing the same rows: `to_csv()` with its index, `orient="split"`
# and `"table"` (tests/producers/test_importers_ragas_shapes.py)
MORE_FORMATS = ("results-with-index.csv", "results-split.json", "results-table.json")


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def imported(tmp_path: Path, src: Path, code: int = 0) -> tuple[Path, str]:
    out = tmp_path / src.name.replace(".", "-")
    res = cli("import", "ragas", str(src), "--out", str(out))
    assert res.exit_code == code, res.stderr
    return out, res.stderr


def replay(out: Path, name: str) -> dict:
    return json.loads((out / f"{name}.json").read_text(encoding="utf-8"))


def values(r: dict) -> dict[str, str]:
    return {a["atom"]: a["value"] for a in r["annotations"]}


def check(path: Path) -> dict:
    return json.loads(cli("check", str(path), "--format", "json").stdout)


def requirement_statuses(report: dict) -> dict[str, str]:
    return {r["id"]: r["status"] for r in report["requirements"]}


def test_the_fixtures_are_ragas_own_output() -> None:
    assert (RAGAS / "VERSION").read_text(encoding="utf-8") == "ragas 0.4.3\n"
    with (RAGAS / "results.csv").open(encoding="utf-8", newline="") as f:
        header = next(csv.reader(f))
    assert header == [
        "user_input",
        "retrieved_contexts",
        "response",
        "reference",
        "faithfulness",
        "answer_relevancy",
        "context_precision",
        "exact_match",
    ]


def test_csv_json_and_json_lines_give_identical_replays(tmp_path: Path) -> None:
    outs = [imported(tmp_path, RAGAS / name)[0] for name in FORMATS]
    names = sorted(p.name for p in outs[0].glob("*.json"))
    assert names == ["r0.json", "r1.json", "r2.json"]
    for out in outs[1:]:
        assert sorted(p.name for p in out.glob("*.json")) == names
        for name in names:
            assert (out / name).read_bytes() == (outs[0] / name).read_bytes(), (out, name)


def test_scores_contexts_and_the_verdict_of_each_row(tmp_path: Path) -> None:
    out, _ = imported(tmp_path, RAGAS / "results.csv")
    r0 = replay(out, "r0")
    # the CSV holds 0.99999999995, pandas' JSON 1.0: both read at pandas' 10 places
    assert r0["sources"]["rationale"] == (
        "row 0: RAGAS scores, no reasons\n"
        "[m0] faithfulness: score=1.0\n"
        "[m1] answer_relevancy: score=1.0\n"
        "[m2] context_precision: score=1.0\n"
        "[m3] exact_match: score=1.0"
    )
    assert r0["sources"]["context"] == (
        "[1] Paris is the capital of France.\n[2] France is a country in Western Europe."
    )
    assert r0["sources"]["protocol"] == "What is the capital of France?"
    assert r0["sources"]["reference"] == "The capital of France is Paris."
    assert r0["verdict"] == "scored"
    # answer relevancy (m1) rests on a cosine similarity: its range is not fixed, so it has
    # no requirement (rather than one nothing could decide)
    assert r0["domains"] == {"metric": ["m0", "m1", "m2", "m3"], "ranged": ["m0", "m2", "m3"]}
    assert values(r0) == {
        "scored(m0)": "TRUE",
        "possible(m0)": "TRUE",
        "scored(m1)": "TRUE",
        "scored(m2)": "TRUE",
        "possible(m2)": "TRUE",
        "scored(m3)": "TRUE",
        "possible(m3)": "TRUE",
    }
    # the quoted contexts are in the CSV as Python's spelling of a list, quotes and all
    r2 = replay(out, "r2")
    assert r2["sources"]["context"] == '[1] The "capital" of France is Paris, not Marseille.'
    # no faithfulness score (no statements): UNKNOWN, never FALSE
    assert r2["verdict"] == "incomplete"
    assert "[m0] faithfulness: score=none" in r2["sources"]["rationale"]
    assert "scored(m0)" not in values(r2) and "possible(m0)" not in values(r2)
    reports = {p.stem: check(p) for p in sorted(out.glob("*.json"))}
    assert reports["r0"]["verdict"]["status"] == "ENTAILED"
    assert reports["r1"]["verdict"]["status"] == "ENTAILED"  # faithfulness 0.0 is a score
    assert all(r["overall"] != "VIOLATED" for r in reports.values())
    assert requirement_statuses(reports["r0"]) == {
        "possible_score(m0)": "ENTAILED",
        "possible_score(m2)": "ENTAILED",
        "possible_score(m3)": "ENTAILED",
    }
    assert reports["r0"]["dimensions"]["procedure"] == "OK"
    assert reports["r2"]["verdict"]["status"] == "UNDERDETERMINED"
    assert requirement_statuses(reports["r2"])["possible_score(m0)"] == "UNDERDETERMINED"


def test_what_cannot_be_checked_is_said_once_per_file(tmp_path: Path) -> None:
    src = RAGAS / "results.jsonl"
    _, err = imported(tmp_path, src)
    notes = [line for line in err.splitlines() if ": note: " in line]
    assert notes == [
        f"{src}: note: a RAGAS result holds no reason and no threshold, so for `faithfulness`,"
        " `answer_relevancy`, `context_precision`, `exact_match` neither whether a score passes"
        " nor whether it agrees with what the metric's model found (its statements, verdicts or"
        " questions) can be checked: only that a score is one its metric can give",
        f"{src}: note: `answer_relevancy`: a score that rests on a cosine similarity can fall"
        " below 0, so whether it is one the metric can give was not checked",
    ]


def _records() -> list[dict]:
    return json.loads((RAGAS / "results.json").read_text(encoding="utf-8"))


def _write(tmp_path: Path, rows: list[dict], name: str = "results.json") -> Path:
    src = tmp_path / name
    src.write_text(json.dumps(rows), encoding="utf-8")
    return src


def test_a_score_its_metric_cannot_give_is_refuted(tmp_path: Path) -> None:
    rows = _records()
    rows[0]["faithfulness"] = 1.5
    rows[1]["exact_match"] = 0.5
    out, _ = imported(tmp_path, _write(tmp_path, rows))
    r0, r1 = replay(out, "r0"), replay(out, "r1")
    bad = next(a for a in r0["annotations"] if a["atom"] == "possible(m0)")
    assert bad["value"] == "FALSE"
    assert bad["explanation"] == "`faithfulness` scores from 0 to 1: 1.5 is out of range"
    assert values(r1)["possible(m3)"] == "FALSE"
    for r in ("r0", "r1"):
        report = check(out / f"{r}.json")
        assert report["overall"] == "VIOLATED"
    assert requirement_statuses(check(out / "r1.json"))["possible_score(m3)"] == "REFUTED"


def test_a_metric_unmask_does_not_know_is_not_range_checked_and_said_once(tmp_path) -> None:
    rows = [
        {("my_metric" if k == "faithfulness" else k): v for k, v in r.items()} for r in _records()
    ]
    rows[0]["my_metric"] = 7
    src = _write(tmp_path, rows)
    out, err = imported(tmp_path, src)
    assert "possible(m0)" not in values(replay(out, "r0"))
    assert values(replay(out, "r0"))["scored(m0)"] == "TRUE"
    assert err.count(": note: ") == 3
    assert (
        f"{src}: note: `my_metric`: not a RAGAS metric whose range Unmask knows, so whether a"
        " score is one it can give was not checked" in err
    )


def test_a_mode_metric_column_is_read_by_its_name() -> None:
    from unmask.importers.ragas import kind_of

    assert kind_of("factual_correctness(mode=f1)") == "share"
    assert kind_of("answer_relevancy") == "cosine"
    assert kind_of("exact_match") == "binary"
    assert kind_of("harmfulness") is None  # an AspectCritic is named by its user


def test_bad_csv_rows_are_skipped_with_line_and_field(tmp_path: Path) -> None:
    lines = (RAGAS / "results.csv").read_text(encoding="utf-8").splitlines()
    header, r0, r1, r2 = lines
    src = tmp_path / "results.csv"
    bad_score = r0.replace(",1.0,1.0,0.99999999995,1.0", ",high,1.0,0.99999999995,1.0")
    bad_list = r1.replace("['Paris is the capital of France.']", "__import__('os').getcwd()")
    src.write_text("\n".join([header, bad_score, bad_list, r2, "a,b"]) + "\n", encoding="utf-8")
    out, err = imported(tmp_path, src, code=1)
    assert (
        f"{src}:2: field `faithfulness`: skipped: expected a score (a number) or nothing,"
        " found `high`" in err
    )
    assert f"{src}:3: field `retrieved_contexts`: skipped: expected a list of texts" in err
    assert f"{src}:5: skipped: expected 8 cells, found 2" in err
    assert sorted(p.name for p in out.glob("*.json")) == ["r2.json"]  # the batch went on
    assert err.endswith("with `ragas`; skipped 3\n")


@pytest.mark.parametrize(
    "cell",
    [
        "[().__class__.__bases__[0].__subclasses__()]",  # not a literal: refused, not run
        "[['a', 'b']]",  # nested: not a list of texts
        "['\\x4']",  # an escape Python cannot read
        "[1, 2]",  # a list, but not of texts
        "['unclosed",
    ],
)
def test_a_list_cell_is_only_ever_read_as_a_literal(tmp_path: Path, cell: str) -> None:
    rows = list(csv.reader((RAGAS / "results.csv").open(encoding="utf-8", newline="")))
    rows[1][1] = cell
    src = tmp_path / "results.csv"
    with src.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)
    out, err = imported(tmp_path, src, code=1)
    assert f"{src}:2: field `retrieved_contexts`: skipped: expected a list of texts" in err
    assert sorted(p.name for p in out.glob("*.json")) == ["r1.json", "r2.json"]


def test_a_list_cell_of_400000_escaped_texts_is_read_in_linear_time(tmp_path: Path) -> None:
    # `ast.literal_eval` on the whole cell took 30 s and 1.7 GB for 10 MB; an alarm turns a
    # relapse into a failure rather than a stuck run
    import signal

    def stop(signum, frame):  # type: ignore[no-untyped-def]
        raise TimeoutError("still reading the list cell after 120 s")

    rows = list(csv.reader((RAGAS / "results.csv").open(encoding="utf-8", newline="")))
    rows[1][1] = repr(["a\nb's"] * 400_000)
    src = tmp_path / "results.csv"
    with src.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)
    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(120)
    try:
        out, _ = imported(tmp_path, src)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    context = replay(out, "r0")["sources"]["context"]
    assert context.startswith("[1] a\nb's\n[2] a\nb's\n") and "[400000] a\nb's" in context


def test_a_hostile_cell_is_shown_escaped(tmp_path: Path) -> None:
    rows = list(csv.reader((RAGAS / "results.csv").open(encoding="utf-8", newline="")))
    rows[1][4] = "\x1b[2J\x1b]0;pwned\x07\u202e"
    src = tmp_path / "results.csv"
    with src.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)
    _, err = imported(tmp_path, src, code=1)
    assert "field `faithfulness`: skipped: expected a score" in err
    assert not any(ch in err for ch in ("\x1b", "\x07", "\u202e")), repr(err)


def test_a_long_context_cell_is_read_and_the_csv_limit_restored(tmp_path: Path) -> None:
    limit = csv.field_size_limit()
    rows = list(csv.reader((RAGAS / "results.csv").open(encoding="utf-8", newline="")))
    long = "Paris is the capital of France. " * 8000  # over csv's default field limit
    rows[1][1] = repr([long])
    src = tmp_path / "results.csv"
    with src.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)
    out, _ = imported(tmp_path, src)
    assert replay(out, "r0")["sources"]["context"] == f"[1] {long}"
    assert csv.field_size_limit() == limit


def test_a_cell_over_the_source_limit_is_one_message_exit_4(tmp_path: Path) -> None:
    rows = list(csv.reader((RAGAS / "results.csv").open(encoding="utf-8", newline="")))
    rows[2][1] = repr(["x" * 300_000])  # over csv's own limit and the one given here
    src = tmp_path / "results.csv"
    with src.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)
    res = cli(
        "import", "ragas", str(src), "--out", str(tmp_path / "o"), "--max-source-chars", "200000"
    )  # fmt: skip
    assert res.exit_code == 4, res.stderr
    assert "a cell at line 3 is longer than the limit of 200000 characters" in res.stderr
    assert "--max-source-chars" in res.stderr and not (tmp_path / "o").exists()


def test_bad_json_and_json_lines_rows_are_skipped_with_their_path(tmp_path: Path) -> None:
    rows: list = _records()
    rows[1] = "not a row"
    rows[2]["retrieved_contexts"] = ["ok", 3]
    src = _write(tmp_path, rows)
    out, err = imported(tmp_path, src, code=1)
    assert f"{src}: [1]: skipped: expected an object, found `not a row`" in err
    assert f"{src}: [2]: field `retrieved_contexts`: skipped: expected a list of texts" in err
    assert sorted(p.name for p in out.glob("*.json")) == ["r0.json"]
    lines = (RAGAS / "results.jsonl").read_text(encoding="utf-8").splitlines()
    src = tmp_path / "results.jsonl"
    src.write_text("\n".join([lines[0], "{not json", lines[2]]) + "\n", encoding="utf-8")
    out, err = imported(tmp_path, src, code=1)
    assert f"{src}:2: skipped: not a JSON record" in err
    assert sorted(p.name for p in out.glob("*.json")) == ["r0.json", "r2.json"]


def test_a_bad_row_of_pandas_default_orient_is_named_by_its_index(tmp_path: Path) -> None:
    data = json.loads((RAGAS / "results-columns.json").read_text(encoding="utf-8"))
    data["faithfulness"]["1"] = "high"
    src = tmp_path / "results.json"
    src.write_text(json.dumps(data), encoding="utf-8")
    out, err = imported(tmp_path, src, code=1)
    assert (
        f"{src}: row `1`: field `faithfulness`: skipped: expected a score (a number) or"
        " nothing, found `high`" in err
    )
    assert sorted(p.name for p in out.glob("*.json")) == ["r0.json", "r2.json"]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("r.json", "[]", "expected a `user_input` column"),
        ("r.json", '{"a": 1}', "expected an array of rows or an object of columns"),
        ("r.json", '[{"user_input": "q", "response": "a"}]', "no score columns"),
        ("r.csv", "question,answer,faithfulness\nq,a,1\n", "expected a `user_input` column"),
        ("r.csv", "", "expected a header row"),
        ("r.jsonl", "{not json\n", "invalid json"),
    ],
)
def test_input_that_is_not_a_ragas_result_exits_4(tmp_path, name, content, message) -> None:
    src = tmp_path / name
    src.write_text(content, encoding="utf-8")
    res = cli("import", "ragas", str(src), "--out", str(tmp_path / "o"))
    assert res.exit_code == 4, res.stderr
    assert message in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "o").exists()


def test_scores_are_read_as_pandas_writes_them_to_json() -> None:
    # pairs from the committed fixtures (CSV full precision, JSON as pandas rounded it)
    assert pandas_json(0.99999999995) == 1.0  # correctly rounded it would be 0.9999999999
    assert pandas_json(0.9557896392964647) == 0.9557896393
    assert pandas_json(5e-11) == 1e-10  # pandas rounds a half up after a 0
    assert pandas_json(1e-16) == 1e-16 and pandas_json(0.0) == 0.0
    for x in (0.1, 0.9999999999, 1 / 3, 2 / 3 * (1 / (1 + 1e-10)), 12.5):
        assert pandas_json(pandas_json(x)) == pandas_json(x)


def test_dotted_paths_index_arrays() -> None:
    rec = {"retrieved_contexts": ["a", "b"], "m": {"0": "zero"}}
    assert dig(rec, "retrieved_contexts.1") == "b"
    assert dig(rec, "m.0") == "zero"  # an object's key, not an index
    too_long = "retrieved_contexts." + "1" * 5000  # beyond what `int` converts: missing
    for bad in ("retrieved_contexts.2", "retrieved_contexts.01", "retrieved_contexts.-1", too_long):
        with pytest.raises(KeyError):
            dig(rec, bad)


def test_a_ragas_json_lines_file_reads_through_a_jsonl_mapping_by_index(tmp_path) -> None:
    # `unmask import jsonl`: a quote taken from the first retrieved context by its index
    (tmp_path / "c.proto").write_text(
        'protocol c "PASS iff the context backs the answer."\n'
        'atom backed : context "The first retrieved context backs the answer"\n'
        "decision pass iff backed\n",
        encoding="utf-8",
    )
    mapping = {
        "protocol": "c.proto",
        "sources": {"response": "response", "context": "retrieved_contexts"},
        "verdict": {"field": "exact_match", "map": {"1.0": "PASS", "0.0": "FAIL"}},
        "annotations": [
            {"atom": "backed", "quote": "retrieved_contexts.0",
             "value": {"field": "exact_match", "map": {"1.0": "TRUE", "0.0": "FALSE"}}}
        ],
    }  # fmt: skip
    (tmp_path / "m.json").write_text(json.dumps(mapping), encoding="utf-8")
    out = tmp_path / "o"
    res = cli(
        "import", "jsonl", str(RAGAS / "results.jsonl"), "--mapping", str(tmp_path / "m.json"),
        "--out", str(out),
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    r = json.loads((out / "results-1.json").read_text(encoding="utf-8"))
    (ev,) = r["annotations"][0]["evidence"]
    assert (ev["source"], ev["quote"]) == ("context", "Paris is the capital of France.")


@pytest.mark.skipif(
    os.environ.get("UNMASK_REGENERATE") != "1",
    reason="regenerates with ragas from the registry: set UNMASK_REGENERATE=1 (needs pip)",
)
def test_regenerated_ragas_output_reads_the_same(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    subprocess.run(["sh", str(RAGAS / "regenerate.sh"), str(fresh)], check=True, timeout=1800)
    assert (fresh / "VERSION").read_bytes() == (RAGAS / "VERSION").read_bytes()
    for name in (*FORMATS, *MORE_FORMATS, "multi-turn.json"):
        old, _ = imported(tmp_path / "old", RAGAS / name)
        new, _ = imported(tmp_path / "new", fresh / name)
        for path in found_files(old.glob("*.json")):
            assert path.read_bytes() == (new / path.name).read_bytes()
