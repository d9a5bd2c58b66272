"""The `factcc-explanations` importer and the FactCC study.

The rules are tested on made-up explanations; the study runs on a slice of the real data
(`shared/data/factcc_explanations`, beside the clone in CI) and every figure it prints is
recounted here from the results and the grades.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main
from unmask.importers import Options, import_file
from unmask.importers.factcc import NAMINGS, changed_words
from unmask.importers.quoting import locate, material, quotations
from unmask.studies import factcc as study

ROOT = Path(__file__).resolve().parents[2]
DATA = next(
    (
        p
        for p in (
            ROOT.parent / "shared" / "data" / "factcc_explanations",
            ROOT.parent.parent / "shared" / "data" / "factcc_explanations",
        )
        if (p / study.FILE).is_file()
    ),
    None,
)
needs_data = pytest.mark.skipif(DATA is None, reason="the FactCC data is not beside the clone")

DOC = (
    "That was twice the UK average rise of 7% and the biggest rise since November 2007. "
    "The ONS index suggests the price of a typical house is Â£152,000. "
    "Prices rose by 8% between the end of 2013 and the end of 2014."
)
SUMMARY = "That wasn't twice the UK average rise of 7% and the biggest rise since November 2007."


def _item(*explanations: str) -> dict:
    return {
        "id": "32300952",
        "doc": DOC,
        "summary": SUMMARY,
        "samples": [
            {
                "reason_idx": k,
                "prediction": 0,
                "model": "judge",
                "prompt": "fewshot-gwe-prompt1",
                "annotation": "partially_correct",
                "explanation": e,
            }
            for k, e in enumerate(explanations)
        ],
    }


def _import(tmp: Path, *explanations: str) -> list[dict]:
    src = tmp / "in.json"
    src.write_text(json.dumps([_item(*explanations)]), encoding="utf-8")
    summary = import_file("factcc-explanations", src, tmp / "out", Options())
    assert not summary.skipped
    return [json.loads(p.read_text(encoding="utf-8")) for p in summary.written]


def _values(replay: dict) -> dict[str, str]:
    return {a["atom"]: a["value"] for a in replay["annotations"]}


def test_quote_marks_pair_in_order_so_the_text_between_two_quotations_is_no_quotation():
    text = (
        'The document refers to Brown as "he" and "him", indicating Brown is male, and '
        'it says "the biggest rise since November 2007".'
    )
    spans = [text[q.start : q.end] for q in quotations(text, NAMINGS)]
    assert spans == ["the biggest rise since November 2007"]


@pytest.mark.parametrize(
    ("text", "says_doc"),
    [
        ('The document states that "the biggest rise since November 2007".', True),
        ('According to the article, prices "rose by 8% between the end".', True),
        ('Evidence: "the biggest rise since November 2007"', True),
        ('He told reporters that "the biggest rise since November 2007".', None),
    ],
)
def test_a_quotation_is_the_documents_words_only_where_the_words_before_it_say_so(
    text: str, says_doc: bool | None
) -> None:
    (q,) = quotations(text, NAMINGS)
    assert q.attributed is says_doc


@pytest.mark.parametrize(
    "text",
    [
        'The summary states "That wasn\'t twice the UK average rise of 7%".',
        'The summary contradicts the document by stating "it was not twice the rise".',
    ],
)
def test_a_quotation_given_to_the_summary_is_not_a_member(text: str) -> None:
    assert quotations(text, NAMINGS) == []


def test_locate_folds_case_punctuation_mojibake_and_reads_across_an_ellipsis():
    assert locate(DOC, "the price of a typical house is £152,000") is not None
    assert locate(DOC, "THAT WAS TWICE the UK average ... since November 2007") is not None
    assert locate(DOC, "That wasn't twice the UK average") is None
    # whole words only: `rise` is not the start of `rises`
    assert locate("Prices rises fast.", "prices rise fast") is None


@pytest.mark.parametrize(
    ("quote", "is_material"),
    [
        ("That was twice the UK average rise of 9%", True),  # a number the document lacks
        ("That was not twice the UK average rise of 7%", True),  # a negation it lacks
        ("Prices fell sharply between the end of 2013 and the end of 2014", True),
        ("Prices rose by 8% between 2013 and the end of 2014", False),  # words dropped
        ("House prices rose by 8% between the end of 2013 and the end of 2014", False),
    ],
)
def test_only_a_material_difference_makes_a_misquote(quote: str, is_material: bool) -> None:
    sentence = "Prices rose by 8% between the end of 2013 and the end of 2014."
    near = sentence if "rose" in quote or "fell" in quote else DOC.split(". ")[0]
    assert material(DOC, near, quote) is is_material


def test_the_changed_words_are_those_the_closest_document_sentence_lacks():
    assert changed_words(DOC, SUMMARY) == {"wasn't"}
    assert changed_words(DOC, "Completely unrelated words about football clubs.") == set()


def test_replays_read_the_answer_the_reasons_and_the_quotations(tmp_path: Path) -> None:
    bare, reasoned, misquote = _import(
        tmp_path,
        "No, the summary is not factually correct.",
        'No. The document states that "That was twice the UK average rise of 7%", so the '
        "summary wasn't right to deny it.",
        'No. The document states that "That was twice the UK average rise of 9%".',
    )
    b = _values(bare)
    assert b["answers_no"] == "TRUE" and b["reasoned"] == "FALSE"
    assert bare["domains"]["quote"] == []
    r = _values(reasoned)
    assert r["reasoned"] == "TRUE" and r["names_change"] == "TRUE"
    assert r["quotes_doc(q1)"] == "TRUE" and r["in_doc(q1)"] == "TRUE"
    m = _values(misquote)
    assert m["quotes_doc(q1)"] == "TRUE" and m["in_doc(q1)"] == "FALSE"
    for replay in (bare, reasoned, misquote):
        assert replay["verdict"] == "inconsistent" and replay["gold"] == "inconsistent"
        assert "partially_correct" not in json.dumps(replay)  # the grade is in no replay


def test_absence_is_never_false(tmp_path: Path) -> None:
    """Naming no changed word, attributing a quotation to no one, or a near-verbatim quote
    leaves the atom UNKNOWN: nothing here is FALSE because something was not found."""
    (replay,) = _import(
        tmp_path,
        'No. Prices moved, and an analyst said "house prices rose by 8% between the end of '
        '2013 and the end of 2014" in the report.',
    )
    v = _values(replay)
    assert "names_change" not in v
    assert "quotes_doc(q1)" not in v
    assert "in_doc(q1)" not in v  # near-verbatim: a word added, nothing material


def test_a_misquote_is_a_grounding_finding_showing_both_quotes(tmp_path: Path) -> None:
    _import(
        tmp_path,
        'No. The document states that "That was twice the UK average rise of 9%".',
    )
    res = CliRunner().invoke(main, ["check", str(tmp_path / "out"), "--format", "json"])
    [path] = list((tmp_path / "out").glob("*.json"))
    res = CliRunner().invoke(main, ["check", str(path), "--format", "json"])
    assert res.exit_code == 1, res.output
    report = json.loads(res.output)
    assert report["dimensions"]["grounding"] == "VIOLATED"
    (pair,) = report["grounding"]
    quotes = [p["evidence"][0]["quote"] for p in pair["explanation"]["parts"]]
    assert any("rise of 9%" in q for q in quotes)
    assert any(q.startswith("That was twice the UK average rise of 7%") for q in quotes)


def test_input_that_is_not_the_format_is_one_message_and_exit_4(tmp_path: Path) -> None:
    src = tmp_path / "in.json"
    src.write_text('{"doc": "x"}', encoding="utf-8")
    res = CliRunner().invoke(
        main, ["import", "factcc-explanations", str(src), "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 4
    assert "expected an array of items" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "o").exists()


def test_a_bad_sample_is_skipped_with_its_path_and_the_rest_imported(tmp_path: Path) -> None:
    item = _item("No, wrong: the document says it was twice the average.")
    item["samples"].append({"model": "j", "prompt": "p", "prediction": 0})
    src = tmp_path / "in.json"
    src.write_text(json.dumps([item, 7]), encoding="utf-8")
    res = CliRunner().invoke(
        main, ["import", "factcc-explanations", str(src), "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 1, res.output
    assert "[0].samples[1]: skipped: `explanation` is not a text" in res.output
    assert "[1]: skipped: not a FactCC item" in res.output
    assert len(list((tmp_path / "o").glob("*.json"))) == 1


@needs_data
def test_the_study_on_a_slice_counts_what_the_results_say(tmp_path: Path) -> None:
    assert DATA is not None
    res = CliRunner().invoke(
        study.main, ["--data", str(DATA), "--out", str(tmp_path), "--limit", "4"]
    )
    assert res.exit_code == 0, res.output
    t = json.loads((tmp_path / "study.json").read_text(encoding="utf-8"))
    lines = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    data = json.loads((DATA / study.FILE).read_text(encoding="utf-8"))[:4]
    grade = {
        f"{s['model']}/{i['id']}-{s['reason_idx']}": s["annotation"]
        for i in data
        for s in i["samples"]
    }
    assert t["judgments"] == len(lines) == len(grade)
    flagged = Counter(grade[r["replay"]] for r in lines if r["overall"] == "VIOLATED")
    assert t["flagged"] == sum(flagged.values())
    assert t["flagged_not_correct"] == t["flagged"] - flagged["correct"]
    assert t["grades"] == {g: list(grade.values()).count(g) for g in study.GRADES}
    for g in study.GRADES:
        assert t["overall_by_grade"][g]["VIOLATED"] == flagged[g]
    assert sorted(t["flagged_graded_correct"]) == sorted(
        r["replay"] for r in lines if r["overall"] == "VIOLATED" and grade[r["replay"]] == "correct"
    )
    by_model = Counter(
        (r["judge"], grade[r["replay"]]) for r in lines if r["overall"] == "VIOLATED"
    )
    for (model, g), n in by_model.items():
        assert t["by_model"][model][g]["flagged"] == n
    # a bare answer is flagged, and only by the procedure dimension
    assert t["violated_by_dimension"]["procedure"].get("no_explanation", 0) > 0
    assert "| human grade |" in res.output
    # run again on a shorter slice into the same folder: the first run's replays are
    # replaced, never audited again beside the new ones
    again = CliRunner().invoke(
        study.main, ["--data", str(DATA), "--out", str(tmp_path), "--limit", "2"]
    )
    assert again.exit_code == 0, again.output
    two = json.loads((DATA / study.FILE).read_text(encoding="utf-8"))[:2]
    n = sum(len(i["samples"]) for i in two)
    assert json.loads((tmp_path / "study.json").read_text(encoding="utf-8"))["judgments"] == n
    assert len(list((tmp_path / "replays").glob("*.json"))) == n < len(grade)


def test_the_study_names_a_missing_data_file_without_a_traceback(tmp_path: Path) -> None:
    res = CliRunner().invoke(study.main, ["--data", str(tmp_path), "--out", str(tmp_path / "o")])
    assert res.exit_code == 4
    assert "Traceback" not in res.output and study.FILE in res.output


def test_a_changed_number_is_named_only_by_the_number_whole(tmp_path: Path) -> None:
    doc = "England beat Spain 3-0 in a friendly at Wembley on Tuesday. Kane scored twice."
    summary = "England beat Spain 2 goals to nil in a friendly at Wembley on Tuesday."
    assert "2" in changed_words(doc, summary)
    item = {**_item(), "doc": doc, "summary": summary}
    for k, text in enumerate(
        [
            "Yes. England won a 2-0 friendly win at Wembley, as the summary says.",
            "No. The document gives the score as 3-0, not 2.",
        ]
    ):
        item["samples"].append({**_item("x")["samples"][0], "reason_idx": k, "explanation": text})
    src = tmp_path / "in.json"
    src.write_text(json.dumps([item]), encoding="utf-8")
    written = import_file("factcc-explanations", src, tmp_path / "out", Options()).written
    inside, whole = (json.loads(p.read_text(encoding="utf-8")) for p in sorted(written))
    # the `2` of `2-0` is not the summary's changed `2`: not named (UNKNOWN, never FALSE)
    assert "names_change" not in _values(inside)
    assert _values(whole)["names_change"] == "TRUE"
    (a,) = [a for a in whole["annotations"] if a["atom"] == "names_change"]
    assert a["evidence"][0]["quote"] == "2" and a["by"]["name"] == "factcc-rules/2"
