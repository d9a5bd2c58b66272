"""The `wice` importer and the WiCE study, on the real data shipped beside the project.

The data (`shared/data/wice`, beside the clone in CI) is WiCE (Kamoi et al., 2023): judge
outputs of GPT-4 and GPT-3.5 with the human evidence labels; tests that need it skip when it
is absent. The citation rules are also tested on made-up explanations.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.wice_data import WICE_DIR, needs_wice
from unmask.cli.main import main
from unmask.importers import Options, import_file, wice
from unmask.importers.wice import citations, judge_name

ROOT = Path(__file__).resolve().parents[2]
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


@pytest.fixture(scope="module")
def gpt4(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The replays of gpt-4-0613's whole output file by name, imported once for the tests
    that read them (3.5 s of CPU an import); none of them writes there."""
    assert DATA is not None
    src = DATA / "gpt-4-0613_claim_test_outputs.jsonl"
    out = tmp_path_factory.mktemp("wice-gpt-4")
    s = import_file("wice", src, out, Options(gold=DATA / "gold_claim_test.jsonl"))
    return {p.stem: p for p in s.written}


def _imported(replays: dict[str, Path], judge: str, item: str) -> dict:
    """The replay of ``item`` by ``judge``, imported from the whole output file."""
    return json.loads(replays[f"{judge}-{item}"].read_text(encoding="utf-8"))


@needs_data
def test_a_line_marked_in_another_chunk_or_as_a_copy_counts_as_marked(
    tmp_path: Path, gpt4: dict[str, Path]
) -> None:
    r = _imported(gpt4, "gpt-4-0613", "test03444-1")
    anns = {a["atom"]: a for a in r["annotations"]}
    # line 9 is word for word line 13, which the annotators marked; the judge cites line 9
    # for what names `Khalsa Aid` and `Ravi Singh`, neither of them in the claim, and says
    # none of the claim's parts in full: not read as support for a part of it (UNKNOWN)
    assert "cites(s9)" not in anns
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
def test_a_cited_line_nobody_marked_is_read_by_the_aligner_or_left_open(
    gpt4: dict[str, Path],
) -> None:
    r = _imported(gpt4, "gpt-4-0613", "test01979-2")
    anns = {a["atom"]: a for a in r["annotations"]}
    # line 10 is cited and marked in no chunk: the aligner reads it as support (0.97 >= 0.9)
    assert anns["cites(s10)"]["value"] == "TRUE"
    s10 = anns["supports(s10)"]
    assert s10["value"] == "TRUE" and s10["by"] == wice.LEXICAL
    (ev,) = s10["evidence"]
    assert ev["source"] == "context" and "Roy Lee Hilton died" in ev["quote"]
    assert r["sources"]["context"][ev["start"] : ev["end"]] == ev["quote"]
    # below the threshold the aligner abstains: nothing at all is written for the line
    assert wice.lexical_support(r["sources"]["response"], [(1, "Cats purr.")], [(1, "x")]) == []
    assert all(a["value"] == "TRUE" for n, a in anns.items() if n.startswith("supports("))


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


def _output(claim: str, lines: dict[int, str], explanation: str, answer: str) -> str:
    """One judge output of the form WiCE publishes: a prompt ending in the task's <input>."""
    shown = "".join(f"<sentence_{i}>{t}</sentence_{i}>" for i, t in lines.items())
    prompt = (
        "Your task is to evaluate if a claim is supported.\n\nWe provide several examples.\n"
        f"Here is your task:\n<input><claim>{claim}</claim><evidence>{shown}</evidence></input>"
    )
    response = f"<output><explanation>{explanation}</explanation><answer>{answer}</answer></output>"
    return json.dumps({"prompt": prompt, "response": response}) + "\n"


def test_wice_outputs_without_gold_are_audited_with_nothing_marked(tmp_path: Path) -> None:
    # judge outputs of the WiCE form with no human labels (WiCE's subclaim outputs, say):
    # nothing marked, no gold label, the item named by the prompt, not by a line number
    claim = "The tower, built in 1889, is in Paris."
    lines = {3: "The tower is in Paris.", 5: "It is tall."}
    first = _output(claim, lines, "Sentence 3 says the tower is in Paris. The year is not "
                    "mentioned.", "not_supported")  # fmt: skip
    other = _output("The bridge is red.", {1: "A bridge."}, "No line supports it.", "not_supported")
    for judge, text in (("judge-a", first + other), ("judge-b", other + first + first)):
        (tmp_path / f"{judge}_subclaim_test_outputs.jsonl").write_text(text, encoding="utf-8")
        res = CliRunner().invoke(
            main,
            ["import", "wice", str(tmp_path / f"{judge}_subclaim_test_outputs.jsonl"),
             "--out", str(tmp_path / "out" / judge)],
        )  # fmt: skip
        assert res.exit_code == 0, res.stderr
    a = sorted(p.stem for p in (tmp_path / "out" / "judge-a").glob("*.json"))
    b = sorted(p.stem for p in (tmp_path / "out" / "judge-b").glob("*.json"))
    assert a and b, "no replay imported: nothing to compare"
    # one prompt, one item for every judge; a repeat in one file is told apart
    assert [x.removeprefix("judge-a-") for x in a] == [
        x.removeprefix("judge-b-") for x in b if not x.endswith("-2")
    ]
    assert all(x.startswith("judge-a-claim-") for x in a) and len(b) == 3
    paths = [tmp_path / "out" / "judge-a" / f"{x}.json" for x in a]
    (path,) = [p for p in paths if claim in p.read_text(encoding="utf-8")]
    replay = json.loads(path.read_text(encoding="utf-8"))
    assert "gold" not in replay or replay["gold"] is None
    assert "reference" not in replay["sources"]
    # no annotator ever marked a line, so no `supports` rests on them
    supports = [a for a in replay["annotations"] if a["atom"].startswith("supports(")]
    assert all(a["by"]["name"] != "wice-annotators" for a in supports)
    # the explanation cites line 3 for a part and states a gap: partial, not `not_supported`
    res = CliRunner().invoke(main, ["check", str(path)])
    assert res.exit_code == 1 and "allows only `partially_supported`" in res.stdout


def test_gold_is_only_for_wice_and_realmistake(tmp_path: Path) -> None:
    src = tmp_path / "gpt-4-0613_claim_test_outputs.jsonl"
    src.write_text("{}\n", encoding="utf-8")
    res = CliRunner().invoke(
        main, ["import", "deepeval", str(src), "--gold", str(src), "--out", str(tmp_path / "o")]
    )
    assert (
        res.exit_code == 2
        and "`--gold` is for the `wice` and `realmistake` importers" in res.stderr
    )


@needs_data
def test_the_study_on_a_slice_counts_what_the_results_say(tmp_path: Path) -> None:
    from unmask.studies import wice as study

    lines = study.run(DATA, tmp_path, limit=8)
    t = study.tables(lines)
    assert t["errors"] == 0
    assert set(t["judges"]) == set(study.JUDGES)
    from unmask.checking.record import CHECKED_SCHEMAS, report_json

    reports = [report_json(x) for x in lines if x.get("schema") in CHECKED_SCHEMAS]
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
    # one vocabulary: the study's cells are the audit summary's, named and counted alike
    from collections import Counter

    audit = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    totals: Counter = Counter()
    for j in t["judges"].values():
        totals.update(j["cells"])
        assert j["fails_most_often"]["violated"] == j["violated_by_dimension"]
        assert j["violated_confirmed"] + j["violated_provisional"] == j["overall"]["VIOLATED"]
    assert dict(totals) == audit["gold"]["cells"]
    confirmed = sum(j["violated_confirmed"] for j in t["judges"].values())
    assert audit["findings"]["replays"]["confirmed"] == confirmed
    # both judges judged the same first eight prompts
    assert t["pair"]["items"] == 8
    md = study.markdown(t, lines)
    assert "### gpt-4-0613 (8 judgments" in md
    assert "| wrong but procedurally clean |" in md and "procedure clean" not in md
    assert "left undecided (UNKNOWN, not failed)" in md
    assert (tmp_path / "report" / "index.html").is_file()


def test_the_study_names_a_missing_data_file_without_a_traceback(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from unmask.studies import wice as study

    args = ["--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(study.main, args)
    assert result.exit_code == 4
    err = result.stderr
    assert "cannot read" in err and "gold_claim_test.jsonl" in err and "Traceback" not in err


def test_the_study_options_are_checked_before_anything_runs(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from unmask.studies import wice as study

    base = ["--data", str(tmp_path), "--out", str(tmp_path / "o")]
    for args in (base[2:], [*base, "--limit", "0"], [*base, "--jobs", "two"]):
        result = CliRunner().invoke(study.main, args)
        assert result.exit_code == 2 and "Traceback" not in result.stderr, args
    assert not (tmp_path / "o").exists()


# --- the explanation rules, on the cases issue 22 names (texts copied from WiCE's outputs) ----

from unmask.importers import wice_rules as rules  # noqa: E402


@pytest.mark.parametrize(
    "text",
    [
        # test02359-0, test01062-2 (gpt-4-0613): support stated in words
        "The evidence only mentions that F. Scott Hess had installations at the Koplin Del Rio "
        "Gallery in 2011 and 2014. There is no mention of the other galleries.",
        "The evidence does not mention who was responsible for preparing the ground. It only "
        "mentions that the Menzies government sponsored the National Service Act 1951.",
    ],
)
def test_support_stated_in_words_is_read(text: str) -> None:
    assert rules.support_said(text) is not None
    assert rules.gap(text) is not None and not rules.citations(text)


@needs_data
def test_the_named_partial_answers_in_words_are_no_longer_refuted(gpt4: dict[str, Path]) -> None:
    # issue 22: GPT-4 states support in words and answers partially_supported; with no line
    # number the old protocol allowed only not_supported and reported the answer refuted
    for item, allowed in (
        ("test02359-0", ["partially_supported"]),
        ("test01062-2", ["partially_supported"]),
        # "only mentions the oldest player" names a topic: no reading, so no verdict forced
        ("test04247-0", ["partially_supported", "not_supported"]),
    ):
        path = gpt4[f"gpt-4-0613-{item}"]
        res = CliRunner().invoke(main, ["check", str(path), "--format", "json"])
        report = json.loads(res.stdout)
        verdict = report["verdict"]
        assert verdict["status"] != "REFUTED" and verdict["allowed"] == allowed, item
        # cites no line: "cite only shown lines" applies only where a line is cited, so it
        # holds, and the two answers the explanation forces are SATISFIED (it was open while
        # the protocol put the condition in `addressed`)
        if item != "test04247-0":
            (cite,) = [r for r in report["requirements"] if r["id"] == "cite_shown"]
            assert cite["status"] == "ENTAILED", item
            assert report["overall"] == "SATISFIED", item


@pytest.mark.parametrize(
    "text",
    [
        "The evidence does not confirm that the strike took place.",
        "Sentence 5 states that he was born in 1909. The evidence only mentions his birth.",
    ],
)
def test_support_in_words_needs_no_negation_and_no_line(text: str) -> None:
    # denied support is no support; a sentence naming a line is a citation, read as such
    first = text.split(". ")[0] + "."
    assert rules.support_said(first) is None


@pytest.mark.parametrize(
    "text",
    [
        # test00115-0 (gpt-3.5-turbo-0613): lines mentioned as background, then dismissed
        "Sentence 18 states that Oklahoma has had the highest cuts to general education "
        "funding. Sentence 26 mentions that teachers are desperate for a solution. However, "
        "there is no direct evidence that a teacher's strike was held in Oklahoma in early "
        "April. Therefore, the claim is not supported by the evidence.",
        # test03895-0 (gpt-3.5-turbo-0613): the line is about someone else
        "Sentence 67 mentions that Ray Owens, lead singer with Juicy Lucy, died from cancer a "
        "couple of weeks ago. However, there is no mention of the death of the person "
        "mentioned in the claim.",
    ],
)
def test_a_line_mentioned_then_dismissed_is_no_citation(tmp_path: Path, text: str) -> None:
    from unmask.studies.wice import read_explanation

    assert rules.dismissal(text) is not None
    got = read_explanation(f"<explanation>{text}</explanation><answer>not_supported</answer>")
    assert got["cites"] == [] and got["dismissed"] and not got["support_said"]


def test_a_partial_answer_is_not_a_dismissal() -> None:
    text = "Sentence 5 confirms the date. However, the claim is not fully supported."
    assert rules.dismissal(text) is None


def test_gap_ignores_negations_a_cited_line_reports() -> None:
    # test02679-2 (gpt-4-0613): the negation is what line 21 says, not a gap
    text = (
        "Sentence 21 states that the Church of Scientology did not mention that its "
        "definition of drug use included an occasional alcoholic drink or prescription "
        "medicine, and exposure to chemical toxins. This supports the claim."
    )
    assert rules.gap(text) is None
    ((line, _, _, denied),) = rules.citations(text)
    assert line == 21 and not denied
    # ... but the evidence as the subject is the judge's own reading, reported or not
    assert rules.gap("Sentence 5 states that he won, but the evidence does not mention when.")


@pytest.mark.parametrize(
    "text",
    [
        "The name of the ship is not named in the evidence.",
        "Sentence 4 contradicted the claim's date.",
        "The year is contradicted by sentence 9.",
        "Sentence 3 confirms the title. His age is not mentioned.",
    ],
)
def test_gap_phrases(text: str) -> None:
    assert rules.gap(text) is not None


@needs_data
def test_the_rule_precision_in_the_study_is_recounted_from_the_labels() -> None:
    from unmask.studies import wice as study

    recs = [json.loads(x) for x in study.LABELS_FILE.read_text(encoding="utf-8").splitlines()]
    assert len(recs) == 40
    # every labelled response is still the one at its row of the WiCE file
    for r in recs:
        lines = (DATA / r["file"]).read_text(encoding="utf-8").splitlines()
        row = json.loads(lines[r["row"]])
        assert row["response"] == r["response"]
        # and the claim, which wice-rules/3 reads a citation against, is the prompt's last
        last = row["prompt"][row["prompt"].rfind("<input>") :]
        assert f"<claim>{r['claim']}</claim>" in last
    table = study.precision_markdown(study.rule_precision(recs), len(recs))
    doc = (ROOT / "docs" / "study-wice.md").read_text(encoding="utf-8")
    assert table in doc


@pytest.mark.parametrize(
    ("text", "cited"),
    [
        # a hedge: the line may be about someone else
        ("Sentence 37 mentions that the drama stars three actresses, one of whom could be the "
         "woman in the claim.", []),
        # a line named for its topic alone: no `that`, no word of support after
        ("Sentence 38 mentions \"A Basic Record Library\" of 1950s and 1960s recordings.", []),
        # ... but a topic with support said after it is a citation
        ("Sentence 24 mentions a four-day strike, which supports the claim.", [24]),
        ("Sentence 69 mentions that she hosts a daily program.", [69]),
    ],
)  # fmt: skip
def test_hedged_and_topic_only_lines_are_not_cited_as_support(text: str, cited: list) -> None:
    assert [n for n, _, _, denied in rules.citations(text) if not denied] == cited


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # "only mentions" a topic is a contrast, not support (a proposition needs `that`)
        ("The evidence does not provide any information about the galleries. It only mentions "
         "the galleries where his exhibitions took place.", False),
        ("The evidence only discusses Madhavan's performance in a film.", False),
        ("The evidence does not provide any information about his birthplace. It only confirms "
         "that he died at the age of 65.", True),
    ],
)  # fmt: skip
def test_only_a_proposition_is_support_stated_in_words(text: str, said: bool) -> None:
    assert (rules.support_said(text) is not None) is said


@pytest.mark.parametrize(
    ("text", "dismissed"),
    [
        ("Sentence 20 states the claim. Therefore, the evidence does not support the claim.", True),
        ("Sentence 20 states it. The evidence does not support the claim that it was 1990.", False),
        ("Sentence 16 states the league grew. However, the specific team mentioned in the claim "
         "is not named in the evidence provided.", True),
        ("Sentences 45 and 46 say GPs lack training. However, the evidence does not mention "
         "anything about accreditation or deaths.", True),
    ],
)  # fmt: skip
def test_whole_claim_dismissals(text: str, dismissed: bool) -> None:
    assert (rules.dismissal(text) is not None) is dismissed


def test_a_gap_after_a_contrast_in_a_reported_sentence_is_the_judges_own() -> None:
    text = (
        "Sentence 6 and 22 mention that Ford was arrested for stealing tires, but there is no "
        "evidence to support the claim that he was arrested a second time."
    )
    assert rules.gap(text) is not None
    assert rules.gap("Sentence 20 states that he won, but it did not mention the year.") is None


def test_a_gold_file_whose_rows_together_hold_too_many_values_is_refused(tmp_path) -> None:
    # the gold rows are all kept in the index: 5 lines of 3 values, counted as 16 together
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"a": [1]}\n' * 5, encoding="utf-8")
    src = tmp_path / "judge_claim_test_outputs.jsonl"
    src.write_text("", encoding="utf-8")
    args = ["import", "wice", str(src), "--gold", str(gold), "--out", str(tmp_path / "o")]
    res = CliRunner().invoke(main, [*args, "--max-json-values", "14"])
    assert res.exit_code == 4, res.output
    assert "the file's lines hold more than 14 values" in res.stderr
    assert not (tmp_path / "o").exists()
    res = CliRunner().invoke(main, [*args, "--max-json-values", "20"])
    assert "values" not in res.stderr  # past the count: read (and refused as no WiCE rows)


# --- a line cited for another fact than the claim's (wice-rules/3) ------------------------

AMBER = "Amber Chia won the Beauty International Model Search 2004 title."


def test_a_line_reported_for_another_fact_is_not_read_as_support() -> None:
    text = (
        "Sentence 8 mentions that Amber Chia won the 2004 Guess Watches Timeless Beauty "
        "Contest. However, there is no mention of the Beauty International Model Search 2004."
    )
    # without the claim the rule reads the citation as support, as wice-rules/2 did
    ((line, _, _, denied),) = rules.citations(text)
    assert line == 8 and not denied
    # with it, the line is cited for a contest the claim never names: UNKNOWN, with why
    ((line, _, _, denied),) = rules.citations(text, AMBER)
    assert line == 8 and denied
    why = rules.part_of_claim(rules.cited_for(text.split(". ")[0]), AMBER)
    assert why is not None and why.kind == "name" and "Guess" in why.words
    # the same in words, naming no line: no support said either
    said = "The evidence mentions that Amber Chia won the 2004 Guess Watches Timeless Beauty"
    said += " Contest, but it does not mention her winning the title."
    assert rules.support_said(said) is not None and rules.support_said(said, AMBER) is None


def test_a_line_reported_for_a_part_of_the_claim_is_still_support() -> None:
    claim = "Amber Chia won the Beauty International Model Search 2004 title in Kuala Lumpur."
    text = (
        "Sentence 8 mentions that Amber Chia won the Beauty International Model Search 2004. "
        "However, there is no mention of Kuala Lumpur."
    )
    ((line, _, _, denied),) = rules.citations(text, claim)
    assert line == 8 and not denied
    # a line says more than the part it is cited for: the part said in full is enough
    claim = "He was appointed as the Minister for Housing and Works for the second time."
    text = "Sentence 43 states that Akram Khan Durrani is the Housing Minister."
    ((line, _, _, denied),) = rules.citations(text, claim)
    assert line == 43 and not denied
    # two things reported of one line: one that is a part of the claim is enough
    claim = "Adams died aged 65 in Tamworth."
    text = (
        "It only confirms that he was a former captain at Widnes and that he died at the age of 65."
    )
    assert rules.support_said(text, claim) is not None


def test_the_sentence_a_line_is_cited_in_is_not_cut_at_an_initial() -> None:
    claim = "He was held without a sack in the first two weeks."
    text = "Sentence 24 mentions that J.J. Watt ended his sack drought with three sacks in a game."
    ((_, _, _, denied),) = rules.citations(text, claim)
    assert denied  # `three`, `Watt`: the whole sentence is read, not "J"


# --- the claim's words are the claim's, not the judge's (wice-rules/4) ---------------------

EMCEE = (
    'The same year, he had a supporting role as a drag queen emcee in the film "A Star Is Born".'
)


def test_a_claim_part_missing_its_own_support_word_is_not_said_in_full() -> None:
    # `supporting` is the judge's word in "Sentence 5 supports …" but the claim's fact in "a
    # supporting role": /3 left it out of the claim too, so `queen` alone was missing (one word,
    # a paraphrase by the test) and `drag` matched inside the show's name: read as support
    text = (
        'Sentence 10 states that the emcee role in the film "A Star Is Born" was played by '
        'D.J. "Shangela" Pierce, a favorite from "RuPaul\'s Drag Race". The claim does not '
        "specify who the actor is, so it cannot be confirmed or denied."
    )
    ((line, _, _, denied),) = rules.citations(text, EMCEE)
    assert line == 10 and denied  # UNKNOWN: left to a reviewer
    why = rules.part_of_claim(rules.cited_for(text.split('Race".')[0]), EMCEE)
    assert why is not None and why.kind == "name" and "RuPaul" in str(why)
    # the same in words, naming no line
    said = 'The evidence mentions that the emcee role in the film "A Star Is Born" was played'
    said += ' by "RuPaul\'s Drag Race" favorite Shangela Pierce.'
    assert rules.support_said(said) is not None and rules.support_said(said, EMCEE) is None


def test_a_claim_part_with_the_judges_words_said_in_full_is_still_support() -> None:
    # the part's `supporting` is counted now, and the line says it: support, as before
    claim = "He had a supporting role in the film Weekend."
    text = (
        "Sentence 4 states that Pierce, a drag performer from Texas, had a supporting role in "
        "the film Weekend, which was shot in Nottingham."
    )
    ((line, _, _, denied),) = rules.citations(text, claim)
    assert line == 4 and not denied
    # and a one-word paraphrase of a part with none of the judge's words is still one
    claim = "He was appointed as the Minister for Housing and Works for the second time."
    text = "Sentence 43 states that Akram Khan Durrani is the Housing Minister."
    ((_, _, _, denied),) = rules.citations(text, claim)
    assert not denied


@needs_data
def test_the_blind_readers_findings_that_the_rules_still_report(tmp_path: Path) -> None:
    # round 3 of docs/study-wice-review.md read wice-rules/2's 21 VIOLATED findings blind;
    # the importer's rules now report 15 of them: 12 of the 17 the reader found genuine, 2 of
    # its 3 unclear and the 1 it found not genuine (docs/study-wice.md, docs/proposers.md)
    reviews = ROOT / "tests" / "data" / "reviews" / "wice-independent.jsonl"
    rows = [json.loads(x) for x in reviews.read_text(encoding="utf-8").splitlines()]
    reader = {r["replay"]: r["reviewer"] for r in rows if r["unmask"] == "VIOLATED"}
    assert DATA is not None
    gold = DATA / "gold_claim_test.jsonl"
    ids = {rid.split("/")[1].rsplit("-", 1)[0] for rid in reader}
    claims = set()
    for x in gold.read_text(encoding="utf-8").splitlines():
        row = json.loads(x)
        if row["meta"]["id"] in ids:
            claims.add(row["claim"])
    from unmask.studies import wice as study

    for judge in study.JUDGES:
        src = DATA / f"{judge}_claim_test_outputs.jsonl"
        keep = []
        for x in src.read_text(encoding="utf-8").splitlines(keepends=True):
            prompt = json.loads(x)["prompt"]
            last = prompt[prompt.rfind("<claim>") + len("<claim>") : prompt.rfind("</claim>")]
            if last in claims:
                keep.append(x)
        (tmp_path / src.name).write_text("".join(keep), encoding="utf-8")
        import_file("wice", tmp_path / src.name, tmp_path / "r" / judge, Options(gold=gold))
    out = tmp_path / "results.jsonl"
    res = CliRunner().invoke(main, ["audit", str(tmp_path / "r"), "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    status = {
        r["replay"]: r["overall"]
        for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())
        if "overall" in r
    }
    assert set(reader) <= set(status)
    still = {rid for rid in reader if status[rid] == "VIOLATED"}
    assert Counter(reader[rid] for rid in still) == {"yes": 12, "unclear": 2, "no": 1}
    assert sorted(rid for rid in reader if reader[rid] == "yes" and rid not in still) == [
        "gpt-3.5-turbo-0613/test01146-0",
        "gpt-3.5-turbo-0613/test02877-0",
        "gpt-4-0613/test01062-0",
        "gpt-4-0613/test03132-0",
        "gpt-4-0613/test03132-2",
    ]
    # none of the 21 became a finding of another kind, and none is refuted the other way
    assert {status[rid] for rid in reader} <= {"VIOLATED", "UNKNOWN"}
