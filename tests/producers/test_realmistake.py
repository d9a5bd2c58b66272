"""The `realmistake` importer and the ReaLMistake study.

The upstream items must not be published in plain text, so the tests make their own items
(in an archive of their own) for the rules, and read the real archive, beside the clone in
CI, only at run time for the study on a slice.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main
from unmask.importers.realmistake import conclusions, is_fixed
from unmask.importers.realmistake_findings import reported_error
from unmask.studies import realmistake as study

ROOT = Path(__file__).resolve().parents[2]
DATA = next(
    (
        p
        for p in (
            ROOT.parent / "shared" / "data" / "realmistake",
            ROOT.parent.parent / "shared" / "data" / "realmistake",
        )
        if (p / "data.zip").is_file() and (p / "judgments").is_dir()
    ),
    None,
)
needs_data = pytest.mark.skipif(DATA is None, reason="the ReaLMistake data is not beside the clone")

INPUT = (
    "Write a math problem. The problem must start with the sentence "
    '"A baker sells 40 loaves every day." Use only integers.'
)
RESPONSE = "A baker sells 40 loaves every day. How many loaves in 7 days? Answer: 280."
ITEM = {
    "input": INPUT,
    "llm_response": RESPONSE,
    "error_label": "no_error",
    "human_explanation": "EXPERT-NOTE-NEVER-IN-A-REPLAY",
    "error_categories": [],
    "metadata": {"id": "math_item1_gpt"},
}
FIXED_ERROR = "Therefore, the model response contains an error."
FIXED_NONE = "Therefore, the model response contains no error."
EXPLANATION = (
    "The response follows the instructions: it starts with the required sentence, and it uses "
    "only integers in the question and in the answer. "
)


def _archive(tmp: Path, items: list[dict] | None = None) -> Path:
    path = tmp / "data.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("data/README.md", "items")
        z.writestr(
            "data/math_word_problem_generation/gpt.jsonl",
            "".join(json.dumps(i) + "\n" for i in items or [ITEM]),
        )
    return path


def _judgments(tmp: Path, *rows: tuple[str, str | None]) -> Path:
    path = tmp / "judgments.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "item_id": "math_item1_gpt",
                    "judge_model": f"judge{k}",
                    "judge_prompt": "cot_instruction_prompt",
                    "judge_rationale": text,
                    "judge_verdict": verdict,
                }
            )
            + "\n"
            for k, (text, verdict) in enumerate(rows)
        ),
        encoding="utf-8",
    )
    return path


def _import(tmp: Path, *rows: tuple[str, str | None]) -> tuple[list[dict], object]:
    out = tmp / "out"
    res = CliRunner().invoke(
        main,
        [
            "import",
            "realmistake",
            str(_judgments(tmp, *rows)),
            "--gold",
            str(_archive(tmp)),
            "--out",
            str(out),
        ],
    )
    replays = sorted(out.glob("*.json")) if out.exists() else []
    return [json.loads(p.read_text(encoding="utf-8")) for p in replays], res


def _values(replay: dict) -> dict[str, str]:
    return {a["atom"]: a["value"] for a in replay["annotations"]}


def _check(tmp: Path, name: str) -> dict:
    res = CliRunner().invoke(main, ["check", str(tmp / "out" / name), "--format", "json"])
    assert res.exit_code in (0, 1, 3), res.output
    return json.loads(res.output)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (f"Fine. {FIXED_NONE}", [("no", True)]),
        ("So the model response contains an error because of X.", [("an", False)]),
        ("The model response contains an error.\n\nExplanation: x", [("an", False)]),
        (f'I must end with "{FIXED_ERROR}" or "{FIXED_NONE}" so here goes.', []),
        (f"**{FIXED_ERROR}**", [("an", True)]),
    ],
)
def test_conclusions_and_the_fixed_sentences(text: str, found: list) -> None:
    assert [(m.group(1).lower(), is_fixed(text, m)) for m in conclusions(text)] == found


def test_the_rules_read_the_conclusion_the_order_and_the_ending(tmp_path: Path) -> None:
    replays, res = _import(
        tmp_path,
        (EXPLANATION + FIXED_NONE, "no_error"),  # by the book
        (EXPLANATION + FIXED_ERROR, "no_error"),  # the parse contradicts the rationale
        (FIXED_ERROR + " " + EXPLANATION * 2, "error"),  # answer first, words after
        (EXPLANATION * 2, None),  # no conclusion at all
    )
    assert res.exit_code == 0, res.output
    clean, misparsed, first, none = replays
    v = _values(clean)
    assert v["concludes_no_error"] == "TRUE" and v["concludes_error"] == "FALSE"
    assert v["states_fixed"] == v["ends_fixed"] == v["explained_first"] == "TRUE"
    assert _check(tmp_path, "judge0-math_item1_gpt-cot_instruction_prompt.json")["overall"] != (
        "VIOLATED"
    )
    report = _check(tmp_path, "judge1-math_item1_gpt-cot_instruction_prompt.json")
    assert report["dimensions"]["verdict"] == "VIOLATED"
    assert misparsed["verdict"] == "no_error"
    v = _values(first)
    assert v["explained_first"] == "FALSE" and v["ends_fixed"] == "FALSE"
    assert none["verdict"] == "none"
    v = _values(none)
    assert v["states_fixed"] == "FALSE"
    assert "concludes_error" not in v and "explained_first" not in v  # nothing to read: UNKNOWN
    for replay in replays:
        assert replay["gold"] == "no_error"
        assert "EXPERT-NOTE" not in json.dumps(replay)  # the expert's words reach no replay


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        # explicit reports: an enumerated check concluding a failure, "violates", "this is …"
        ("1. The model response does not follow the instruction to use integers. It uses 2.5.",
         "The model response does not follow the instruction to use integers."),
        ("**Format:** The response fails to meet the required format.",
         "Format:** The response fails to meet the required format."),
        ("The answer is 7. However, the model response violates the requirement to start with X.",
         "However, the model response violates the requirement to start with X."),
        ("The solution uses a fraction. This requirement is not met.",
         "This requirement is not met."),
        ("It rounds 2.5 to 3. This is an error.", "This is an error."),
        # negated or affirmative uses
        ("The model response does not violate any requirement.", None),
        ("The model response follows every instruction and does not include fractions.", None),
        ("The response also breaks down the evidence line by line.", None),
        # hedges and conditions
        ("The model response may not follow the instruction to use integers.", None),
        ("The model response seems to violate the requirement on units.", None),
        ("If the problem were ambiguous, the model response would not satisfy the rule.", None),
        ("The model response does not fully follow the format.", None),
        ("Does the model response follow the instruction? It does not follow it.", None),
        # statements about the model input, or with an unclear subject
        ("The model input does not follow a standard format.", None),
        ("The question violates the date assumption, so it is unanswerable.", None),
        ("It does not follow the instruction to use integers.", None),
        # a report taken back by the next sentence, and a heading
        ("The response does not meet the rule on steps. However, this is a minor issue.", None),
        ("The response does not meet the rule on steps. This is not an error.", None),
        ("**2. The model response does not follow all instructions:**\n- none", None),
        # taken back anywhere later, two paragraphs on included (realmistake-rules/3)
        ("The model response does not follow the instructions, as it gives no answer. It is "
         "short.\n\nIt names the flaw.\n\nIt gives no answer, which is in line with the "
         "instructions in the model input.", None),
        ("The model response does not meet the rule on steps.\n\nOn closer look: this is not "
         "an error.", None),
        # ... but a later sentence about another criterion, about one requirement, a negated
        # one or a heading is not
        ("a. The model response does not follow the instruction to assume the show is short. "
         "It says it is long.\n\nb. The model response gives the right episode of the 19th "
         "season, which is in line with the requirements of the model input.",
         "The model response does not follow the instruction to assume the show is short."),
        ("The model response does not meet the rule on steps. It has 3 lines.\n\nThe model "
         "response meets the length requirement.",
         "The model response does not meet the rule on steps."),
        ("The model response does not meet the rule on steps. It has 3 lines.\n\nIt does not "
         "follow the instructions either.",
         "The model response does not meet the rule on steps."),
        ("The model response does not meet the rule on steps. It has 3 lines.\n\n3. Check "
         "whether the model response follows all instructions:",
         "The model response does not meet the rule on steps."),
        # the conclusion is read elsewhere, never as a report
        (FIXED_ERROR, None),
    ],
)  # fmt: skip
def test_a_reported_error_is_read_from_explicit_words_only(text: str, sentence: str | None):
    span = reported_error(text, [m.span() for m in conclusions(text)])
    assert (None if span is None else text[span[0] : span[1]]) == sentence


def test_a_no_error_conclusion_after_a_reported_error_breaks_follows_findings(tmp_path: Path):
    report = "The model response does not follow the instruction to use only integers. "
    replays, res = _import(
        tmp_path,
        (EXPLANATION + report + FIXED_NONE, "no_error"),  # finds an error, says none
        (EXPLANATION + report + FIXED_ERROR, "error"),  # finds one, says so
        (EXPLANATION + FIXED_NONE, "no_error"),  # reports nothing: UNKNOWN, not FALSE
    )
    assert res.exit_code == 0, res.output
    said_none, said_error, clean = replays
    assert _values(said_none)["reports_error"] == _values(said_error)["reports_error"] == "TRUE"
    assert "reports_error" not in _values(clean)

    def follows(name: str) -> str:
        report = _check(tmp_path, name)
        return next(q["result"] for q in report["requirements"] if q["id"] == "follows_findings")

    assert follows("judge0-math_item1_gpt-cot_instruction_prompt.json") == "VIOLATED"
    assert follows("judge1-math_item1_gpt-cot_instruction_prompt.json") == "OK"
    assert follows("judge2-math_item1_gpt-cot_instruction_prompt.json") == "UNKNOWN"


def test_a_quotation_of_the_task_is_checked_against_the_task(tmp_path: Path) -> None:
    replays, _ = _import(
        tmp_path,
        (
            'The model input requires that the problem starts with "A baker sells 40 loaves '
            'every day" and it does. ' + FIXED_NONE,
            "no_error",
        ),
        (
            'The model input requires that the problem starts with "A baker sells 50 loaves '
            'every day" and it does not. ' + FIXED_ERROR,
            "error",
        ),
    )
    good, bad = (_values(r) for r in replays)
    assert good["quotes_task(q1)"] == "TRUE" and good["in_task(q1)"] == "TRUE"
    assert bad["quotes_task(q1)"] == "TRUE" and bad["in_task(q1)"] == "FALSE"
    report = _check(tmp_path, "judge1-math_item1_gpt-cot_instruction_prompt.json")
    assert report["dimensions"]["grounding"] == "VIOLATED"


def test_without_the_archive_or_with_another_file_it_is_one_message_and_exit_4(tmp_path):
    judgments = _judgments(tmp_path, (EXPLANATION + FIXED_NONE, "no_error"))
    res = CliRunner().invoke(
        main, ["import", "realmistake", str(judgments), "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 4 and "--gold data.zip" in res.output
    not_zip = tmp_path / "x.zip"
    not_zip.write_text("plain", encoding="utf-8")
    res = CliRunner().invoke(
        main,
        [
            "import",
            "realmistake",
            str(judgments),
            "--gold",
            str(not_zip),
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert res.exit_code == 4 and "as a zip archive" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "o").exists()


def test_an_archive_member_that_inflates_too_far_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "data.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("data/math/bomb.jsonl", " " * 2_000_000)
    judgments = _judgments(tmp_path, (EXPLANATION + FIXED_NONE, "no_error"))
    res = CliRunner().invoke(
        main,
        [
            "import",
            "realmistake",
            str(judgments),
            "--gold",
            str(path),
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert res.exit_code == 4 and "a compression ratio over 50:1" in res.output


def test_a_judgment_without_its_item_is_skipped_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text(
        json.dumps(
            {
                "item_id": "elsewhere",
                "judge_model": "j",
                "judge_rationale": EXPLANATION + FIXED_NONE,
                "judge_verdict": "no_error",
            }
        )
        + "\n[1]\n",
        encoding="utf-8",
    )
    res = CliRunner().invoke(
        main,
        [
            "import",
            "realmistake",
            str(path),
            "--gold",
            str(_archive(tmp_path)),
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert res.exit_code == 1
    assert "j.jsonl:1: skipped: `item_id`: no item of the archive has this id" in res.output
    assert "j.jsonl:2: skipped: not a judgment" in res.output


@needs_data
def test_the_study_on_a_slice_counts_what_the_results_say(tmp_path: Path) -> None:
    assert DATA is not None
    res = CliRunner().invoke(
        study.main, ["--data", str(DATA), "--out", str(tmp_path), "--limit", "60"]
    )
    assert res.exit_code == 0, res.output
    t = json.loads((tmp_path / "study.json").read_text(encoding="utf-8"))
    lines = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert t["judgments"] == len(lines) == 60
    for judge, j in t["judges"].items():
        rs = [r for r in lines if r["judge"] == judge]
        assert j["judgments"] == len(rs)
        assert j["accuracy"] == round(sum(r["verdict_matches_gold"] for r in rs) / len(rs), 3)
        assert j["right_for_wrong_reasons"] == sum(
            r["verdict_matches_gold"] and r["overall"] == "VIOLATED" for r in rs
        )
        assert j["unparsed"] == sum(r["verdict"]["observed"] == "none" for r in rs)
        for q in study.REQUIREMENTS:
            assert j["requirement_violated"][q] == sum(
                x["id"] == q and x["result"] == "VIOLATED" for r in rs for x in r["requirements"]
            )
    assert t["misparsed"]["count"] == sum(r["dimensions"]["verdict"] == "VIOLATED" for r in lines)
    assert "| judge |" in res.output


def test_the_study_names_missing_data_without_a_traceback(tmp_path: Path) -> None:
    res = CliRunner().invoke(study.main, ["--data", str(tmp_path), "--out", str(tmp_path / "o")])
    assert res.exit_code == 4
    assert "is not there" in res.output and "Traceback" not in res.output


def test_a_quotation_that_gathers_listed_options_is_no_misquote() -> None:
    from unmask.importers.quoting import misquote

    source = (
        "* Your response should end with one of the following sentences:\n"
        '  * "Therefore, the claim is supported." - Select this option if all is supported.\n'
        '  * "Therefore, the claim is not supported." - Select this option otherwise.'
    )
    quote = (
        "Your response should end with one of the following sentences: 'Therefore, the "
        "claim is supported.', 'Therefore, the claim is not supported.'"
    )
    assert misquote(source, quote) is None
    assert misquote(source, "Therefore, the claim is never supported in 2020.") is not None


LABELS = ROOT / "tests" / "data" / "realmistake_rule_labels.jsonl"
# the follows_findings finding the blind reader judged not to break: its report is taken
# back two paragraphs later ("… which is in line with the instructions in the model input")
TAKEN_BACK = (
    "Llama-2-13b-chat-hf/answerability_classification_5a74547755429979e2882900_"
    "meta-llama/Llama-2-70b-chat-hf/cot_instruction_prompt"
)


def _labels() -> list[dict]:
    return [json.loads(x) for x in LABELS.read_text(encoding="utf-8").splitlines() if x]


def test_the_reported_error_rule_ships_on_a_measured_precision() -> None:
    # the hand labels (replay ids, a label and a reason, no item text) of a seeded random
    # sample of the rule's firings: it ships only at a precision of 0.9 or more
    sample = [x for x in _labels() if x["sample"] == "fires-random-2424"]
    assert len({x["replay"] for x in sample}) == len(sample) >= 40
    genuine = sum(x["label"] == "genuine" for x in sample)
    assert genuine / len(sample) >= 0.9
    findings = [x for x in _labels() if x["sample"] == "follows_findings-all"]
    assert sum(x["finding"] == "genuine" for x in findings) / len(findings) >= 0.9


@needs_data
def test_the_labelled_sample_is_the_seeded_sample_of_the_rules_firings() -> None:
    import random

    from unmask.importers.realmistake import _span

    assert DATA is not None
    fires, no_error, now = [], [], set()
    path = DATA / "judgments" / "judgments_cot_instruction.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        text = row["judge_rationale"]
        found = conclusions(text)
        rid = f"{row['judge_model']}/{row['item_id']}/{row['judge_prompt']}"
        if reported_error(text, [_span(m) for m in found]) is not None:
            now.add(rid)
        # the labels sample realmistake-rules/2, which looked for a take-back next only
        if reported_error(text, [_span(m) for m in found], anywhere=False) is None:
            continue
        fires.append(rid)
        if found and found[-1].group(1).lower() == "no":
            no_error.append(rid)
    # rules/3 only takes firings away: each one it keeps is one the labels' rules made
    assert now <= set(fires) and len(now) < len(fires)
    # the take-back case (a report taken back two paragraphs later) is no longer read
    assert TAKEN_BACK in fires and TAKEN_BACK not in now
    labels = _labels()
    assert [x["replay"] for x in labels if x["sample"] == "fires-random-2424"] == [
        *random.Random(2424).sample(sorted(fires), 40)
    ]
    assert sorted(x["replay"] for x in labels if x["sample"] == "follows_findings-all") == sorted(
        no_error
    )
