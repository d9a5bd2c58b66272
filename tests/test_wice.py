"""The `wice` importer and the WiCE study, on the real data shipped beside the project.

The data (`shared/data/wice`, beside the clone in CI) is WiCE (Kamoi et al., 2023): judge
outputs of GPT-4 and GPT-3.5 with the human evidence labels; tests that need it skip when it
is absent. The citation rules are also tested on made-up explanations.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.wice_data import WICE_DIR, needs_wice
from unmask.cli.main import main
from unmask.importers import Options, import_file
from unmask.importers.wice import citations, judge_name

ROOT = Path(__file__).resolve().parent.parent
DATA = WICE_DIR
needs_data = needs_wice


def _slice(tmp: Path, judge: str, n: int) -> Path:
    assert DATA is not None
    src = DATA / f"{judge}_claim_test_outputs.jsonl"
    dst = tmp / src.name
    dst.write_text("".join(src.read_text(encoding="utf-8").splitlines(True)[:n]), "utf-8")
    return dst


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("Sentence 5 and 7 confirm the dates.", [5, 7]),
        ("Sentences 10, 11, 19, 20, and 21 confirm it.", [10, 11, 19, 20, 21]),
        ("Lines 3-5 state it.", [3, 4, 5]),
        ("As <sentence_9> says, yes.", [9]),
        ("No line supports it.", []),
    ],
)
def test_citations_read_the_line_numbers(text: str, lines: list[int]) -> None:
    assert [c[0] for c in citations(text)] == lines


def test_a_citation_next_to_a_denial_is_not_taken_as_support() -> None:
    (five,) = citations("Sentence 5 does not mention the award.")
    assert five[0] == 5 and five[3] is True
    (six,) = citations("Sentence 6 states the award.")
    assert six[3] is False


def test_judge_name_comes_from_the_file_name() -> None:
    assert judge_name(Path("x/gpt-4-0613_claim_test_outputs.jsonl")) == "gpt-4-0613"


@needs_data
def test_real_judgments_become_valid_three_label_replays(tmp_path: Path) -> None:
    src = _slice(tmp_path, "gpt-4-0613", 12)
    s = import_file("wice", src, tmp_path / "out", Options(gold=DATA / "gold_claim_test.jsonl"))
    assert len(s.written) == 12 and not s.skipped
    r = json.loads(s.written[0].read_text(encoding="utf-8"))
    assert r["judge"] == "gpt-4-0613" and r["item"] == "test00561-0"
    assert r["gold"] == "partially_supported" and r["verdict"] == "partially_supported"
    anns = {a["atom"]: a for a in r["annotations"]}
    # the judge cites sentences 5 and 7 as confirming; annotators marked 5 and 7 supporting
    assert anns["cites(s5)"]["value"] == "TRUE" and anns["cites(s5)"]["by"]["kind"] == "rule"
    assert anns["supports(s5)"]["value"] == "TRUE"
    assert anns["supports(s5)"]["by"] == {
        "kind": "human",
        "name": "wice-annotators",
        "reviewed": True,
    }
    # line 0 is marked in no chunk of the claim: the annotators did not say it does not
    # support the claim, so it stays UNKNOWN (no annotation), never FALSE
    assert "supports(s0)" not in anns
    assert all(a["value"] != "FALSE" for n, a in anns.items() if n.startswith("supports("))
    assert anns["gap"]["value"] == "TRUE"
    res = CliRunner().invoke(main, ["validate", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    checked = CliRunner().invoke(main, ["check", str(s.written[0]), "--format", "json"])
    report = json.loads(checked.stdout)
    assert report["verdict"]["status"] == "ENTAILED"
    assert report["verdict"]["allowed"] == ["partially_supported"]
    assert {g["direction"] for g in report["grounding"]} == {"~>"}


def _imported(tmp: Path, judge: str, item: str) -> dict:
    """The replay of ``item`` by ``judge``, imported from the whole output file."""
    assert DATA is not None
    src = DATA / f"{judge}_claim_test_outputs.jsonl"
    s = import_file("wice", src, tmp / "out", Options(gold=DATA / "gold_claim_test.jsonl"))
    (path,) = [p for p in s.written if p.stem == f"{judge}-{item}"]
    return json.loads(path.read_text(encoding="utf-8"))


@needs_data
def test_a_line_marked_in_another_chunk_or_as_a_copy_counts_as_marked(tmp_path: Path) -> None:
    r = _imported(tmp_path, "gpt-4-0613", "test03444-1")
    anns = {a["atom"]: a for a in r["annotations"]}
    # line 9 is word for word line 13, which the annotators marked; the judge cites line 9
    assert anns["cites(s9)"]["value"] == "TRUE"
    assert anns["supports(s9)"]["value"] == "TRUE"
    assert anns["supports(s9)"]["evidence"][0]["quote"].startswith("line 9: marked as supporting")
    assert anns["supports(s9)"]["by"]["kind"] == "human"
    # a line marked in no chunk is left open, and the grounding of line 9 holds
    assert "supports(s1)" not in anns
    path = tmp_path / "r.json"
    path.write_text(json.dumps(r), encoding="utf-8")
    checked = CliRunner().invoke(main, ["check", str(path), "--format", "json"])
    report = json.loads(checked.stdout)
    g9 = next(g for g in report["grounding"] if "s9" in g["judge"])
    assert g9["status"] == "ENTAILED"


@needs_data
def test_a_row_without_its_gold_row_is_skipped_with_the_reason(tmp_path: Path) -> None:
    src = _slice(tmp_path, "gpt-3.5-turbo-0613", 3)
    rows = src.read_text(encoding="utf-8").splitlines()
    first = json.loads(rows[0])
    first["prompt"] = first["prompt"].replace("<claim>", "<claim>Not WiCE: ")
    rows[0] = json.dumps(first)
    rows.insert(1, "{not json")
    src.write_text("\n".join(rows) + "\n", encoding="utf-8")
    res = CliRunner().invoke(
        main,
        [
            "import",
            "wice",
            str(src),
            "--gold",
            str(DATA / "gold_claim_test.jsonl"),
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert res.exit_code == 1
    assert f"{src}:1: skipped: `prompt`: no gold row has this claim" in res.stderr
    assert f"{src}:2: skipped: not a JSON record" in res.stderr
    assert "imported 2 replays" in res.stderr and "skipped 2" in res.stderr


def test_wice_needs_gold_and_gold_is_only_for_wice(tmp_path: Path) -> None:
    src = tmp_path / "gpt-4-0613_claim_test_outputs.jsonl"
    src.write_text("{}\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["import", "wice", str(src), "--out", str(tmp_path / "o")])
    assert res.exit_code == 4 and "needs WiCE's gold rows" in res.stderr
    res = CliRunner().invoke(
        main, ["import", "deepeval", str(src), "--gold", str(src), "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 2 and "`--gold` is for the `wice` importer" in res.stderr


@needs_data
def test_the_study_on_a_slice_counts_what_the_results_say(tmp_path: Path) -> None:
    from unmask.studies import wice as study

    lines = study.run(DATA, tmp_path, limit=8)
    t = study.tables(lines)
    assert t["errors"] == 0
    assert set(t["judges"]) == set(study.JUDGES)
    reports = [x for x in lines if x.get("schema") == "unmask.report/1"]
    for judge, j in t["judges"].items():
        mine = [r for r in reports if r["judge"] == judge]
        assert j["replays"] == len(mine) == 8
        assert sum(j["overall"].values()) == 8
        cells = sum(n for row in j["confusion"].values() for c in row.values() for n in c.values())
        assert cells == 8
        assert j["accuracy"] == sum(r["verdict"]["observed"] == r["gold"] for r in mine)
        assert j["right_for_wrong_reasons"] == [
            r["replay"]
            for r in mine
            if r["gold"] == r["verdict"]["observed"] and r["overall"] == "VIOLATED"
        ]
    # both judges judged the same first eight prompts
    assert t["pair"]["items"] == 8
    md = study.markdown(t, lines)
    assert "### gpt-4-0613 (8 judgments" in md
    assert (tmp_path / "report" / "index.html").is_file()


def test_the_study_names_a_missing_data_file_without_a_traceback(tmp_path: Path, capsys) -> None:
    from unmask.studies import wice as study

    assert study.main(["--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")]) == 4
    err = capsys.readouterr().err
    assert "cannot read" in err and "gold_claim_test.jsonl" in err and "Traceback" not in err
