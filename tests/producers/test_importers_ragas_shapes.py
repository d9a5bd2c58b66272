"""`unmask import ragas` on the other shapes people save RAGAS results in (issue 37).

All written by ragas 0.4.3 itself (`tests/data/importers/ragas-generated/regenerate.py`):
pandas' default `to_csv()` (the row index as an unnamed first column, which must not become a
metric), `to_json(orient="split")` and `orient="table"` (the same replays as `results.csv`),
multi-turn samples (read from JSON, refused row by row from CSV with what to write instead),
and the `@experiment` output of RAGAS 0.4, refused in one line that names it.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.producers.test_importers_ragas import MORE_FORMATS, RAGAS, cli, imported, replay, values


@pytest.mark.parametrize("name", MORE_FORMATS)
def test_pandas_other_shapes_give_the_replays_of_results_csv(tmp_path: Path, name) -> None:
    base, _ = imported(tmp_path, RAGAS / "results.csv")
    out, err = imported(tmp_path, RAGAS / name)
    names = sorted(p.name for p in base.glob("*.json"))
    assert sorted(p.name for p in out.glob("*.json")) == names == ["r0.json", "r1.json", "r2.json"]
    for n in names:
        assert (out / n).read_bytes() == (base / n).read_bytes(), n
    assert "``" not in err  # no metric named by the empty index header


def test_the_index_column_of_to_csv_is_not_a_metric(tmp_path: Path) -> None:
    header = (RAGAS / "results-with-index.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header.startswith(",user_input,")  # as pandas writes it
    out, _ = imported(tmp_path, RAGAS / "results-with-index.csv")
    r2 = replay(out, "r2")
    assert r2["domains"]["metric"] == ["m0", "m1", "m2", "m3"]
    assert r2["sources"]["rationale"].splitlines()[1] == "[m0] faithfulness: score=none"
    # read back by `read_csv` and written again, the index is `Unnamed: 0`
    src = tmp_path / "again.csv"
    text = (RAGAS / "results-with-index.csv").read_text(encoding="utf-8")
    src.write_text("Unnamed: 0" + text, encoding="utf-8")
    again, _ = imported(tmp_path, src)
    assert (again / "r2.json").read_bytes() == (out / "r2.json").read_bytes()


def test_a_multi_turn_sample_is_read_from_json(tmp_path: Path) -> None:
    out, err = imported(tmp_path, RAGAS / "multi-turn.json")
    assert sorted(p.name for p in out.glob("*.json")) == ["r0.json", "r1.json"]
    r1 = replay(out, "r1")
    assert r1["sources"]["protocol"] == (
        "[human] What is the weather in Lyon?\n"
        '[ai] Let me look. (tool calls: weather({"city": "Paris"}))\n'
        "[tool] 18 degrees, sunny\n"
        "[ai] It is 18 degrees and sunny."
    )
    assert r1["sources"]["response"] == "It is 18 degrees and sunny."
    # `reference_tool_calls` is the sample's field, not a metric; the accuracy is a share
    assert r1["domains"] == {"metric": ["m0"], "ranged": ["m0"]}
    assert r1["sources"]["rationale"].endswith("[m0] tool_call_accuracy: score=0.0")
    assert values(r1) == {"scored(m0)": "TRUE", "possible(m0)": "TRUE"}
    assert "skipped:" not in err


def test_a_multi_turn_csv_gives_the_replays_of_its_json(tmp_path: Path) -> None:
    # pandas writes the messages in Python's spelling: parsed, never run
    csv_out, err = imported(tmp_path, RAGAS / "multi-turn.csv")
    json_out, _ = imported(tmp_path, RAGAS / "multi-turn.json")
    assert "skipped:" not in err
    for p in sorted(json_out.glob("*.json")):
        assert (csv_out / p.name).read_bytes() == p.read_bytes(), p.name


@pytest.mark.parametrize(
    "cell",
    [
        "[{'content': 'hi', 'type': 'human'}",  # not closed
        "[{'content': __import__('os').getcwd()}]",  # a call is not a literal
        "[{'content': 'hi' 'type': 'human'}]",  # no comma
        "[{" * 100 + "}]" * 100,  # nested deeper than any message
        "[{'content': 'hi'}] trailing",
    ],
)
def test_a_multi_turn_cell_that_is_not_messages_is_skipped(tmp_path: Path, cell: str) -> None:
    rows = list(csv.reader((RAGAS / "multi-turn.csv").open(encoding="utf-8", newline="")))
    rows[1][0] = cell
    src = tmp_path / "mt.csv"
    with src.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)
    out, err = imported(tmp_path, src, code=1)
    assert f"{src}:2: field `user_input`: skipped: expected Python's spelling of a list" in err
    assert sorted(p.name for p in out.glob("*.json")) == ["r1.json"]


def test_a_large_multi_turn_cell_is_read_in_linear_time(tmp_path: Path) -> None:
    import time

    rows = list(csv.reader((RAGAS / "multi-turn.csv").open(encoding="utf-8", newline="")))
    msg = "{'content': 'It is \\'sunny\\' today.', 'type': 'ai', 'tool_calls': []}"
    rows[1][0] = "[" + ", ".join([msg] * 40_000) + "]"  # about 3 MB
    src = tmp_path / "mt.csv"
    with src.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)
    began = time.monotonic()
    out, _ = imported(tmp_path, src)
    assert time.monotonic() - began < 20
    r0 = replay(out, "r0")
    assert r0["sources"]["response"] == "It is 'sunny' today."


def test_a_bad_message_of_a_multi_turn_sample_is_skipped_with_where(tmp_path: Path) -> None:
    rows = json.loads((RAGAS / "multi-turn.json").read_text(encoding="utf-8"))
    rows[1]["user_input"][2] = {"type": "tool"}
    src = tmp_path / "mt.json"
    src.write_text(json.dumps(rows), encoding="utf-8")
    out, err = imported(tmp_path, src, code=1)
    assert f"{src}: [1]: field `user_input`: skipped: message 2: expected `content` text" in err
    assert sorted(p.name for p in out.glob("*.json")) == ["r0.json"]


def test_an_experiment_result_is_refused_naming_it(tmp_path: Path) -> None:
    res = cli("import", "ragas", str(RAGAS / "experiment.csv"), "--out", str(tmp_path / "o"))
    assert res.exit_code == 4
    assert res.stderr.count("error:") == 1
    assert "a RAGAS `@experiment` result is not imported" in res.stderr
    assert "`unmask import jsonl`" in res.stderr and "invalid json" not in res.stderr
    assert not (tmp_path / "o").exists()


def test_split_rows_of_the_wrong_width_are_skipped_with_their_path(tmp_path: Path) -> None:
    doc = json.loads((RAGAS / "results-split.json").read_text(encoding="utf-8"))
    doc["data"][1] = doc["data"][1][:3]
    src = tmp_path / "s.json"
    src.write_text(json.dumps(doc), encoding="utf-8")
    out, err = imported(tmp_path, src, code=1)
    assert f"{src}: data[1]: skipped: expected an array of 8 cells" in err
    assert sorted(p.name for p in out.glob("*.json")) == ["r0.json", "r2.json"]
