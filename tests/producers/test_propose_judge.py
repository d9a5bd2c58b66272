"""Judge-side rules: citations, support, the answer tag and quotes read from a rationale by a
rule file; exact spans and provenance; abstention; rule-file errors; `unmask propose judge`;
and the figures in docs/proposers.md recomputed from the committed hand labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import ROOT, TEST_DATA
from tests.wice_data import WICE_DIR
from unmask.cli.main import main
from unmask.plumbing.diagnostics import UnmaskError
from unmask.propose import available, create
from unmask.propose.judge import (
    JUDGE_RATIONALE,
    WICE_RULES,
    JudgeRules,
    load_rules,
    parse_rules,
    rules_for,
)
from unmask.propose.measure_judge import check_sources, load_labels, measure, render
from unmask.propose.measure_judge import main as measure_main

DATA = TEST_DATA / "propose"
LABELS = DATA / "judge_citations_50.jsonl"
HELDOUT = DATA / "judge_citations_heldout_30.jsonl"
WICE = WICE_DIR

RULES = JudgeRules()


def atoms(text: str, threshold: float = 0.5) -> dict[str, float]:
    return {p.atom: p.confidence for p in RULES.propose(text, threshold)}


# --- what the rules read --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cited"),
    [
        ("Sentence 5 and 7 confirm the dates.", [5, 7]),
        ("Sentences 5 and 7 confirm the dates.", [5, 7]),
        ("Sentence 10, 11, 19, 20, and 21 confirm it.", [10, 11, 19, 20, 21]),
        ("As <sentence_5> states, it holds.", [5]),
        ("lines 3-5 show it.", [3, 4, 5]),
        ("Lines 3 to 5 show it.", [3, 4, 5]),
        ("It died at 65 (sentence 15).", [15]),
        ("This is in line with the claim in 2004.", []),
        ("lines 1-99999999 show it.", []),  # a range that wide is not expanded
    ],
)
def test_citations(text: str, cited: list[int]) -> None:
    got = [a for a in atoms(text) if a.startswith("cited(")]
    assert got == [f"cited(s{n})" for n in cited]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Sentence 5 confirms X.", ["said(s5)"]),
        ("Sentence 5 does not mention X.", []),
        ("Sentence 5 doesn't support the claim.", []),
        ("There is nothing in sentence 5 that supports X.", []),
        ("Neither sentence 5 nor sentence 6 confirms X.", []),
        ("Sentence 5 confirms X, but sentence 7 does not mention Y.", ["said(s5)"]),
        ("The evidence does not say X. However, sentence 22 does mention Y.", ["said(s22)"]),
        ("The evidence confirms that he died at 65 (sentence 15).", ["said(s15)"]),
        ("Sentence 5 contradicts the claim.", []),
    ],
)
def test_support_is_not_read_from_a_negation(text: str, said: list[str]) -> None:
    assert [a for a in atoms(text) if a.startswith("said(")] == said


def test_a_contradiction_fills_its_own_family() -> None:
    assert "contradicted(s5)" in atoms("Sentence 5 contradicts the claim.")


def test_a_hedge_lowers_the_confidence_below_the_threshold() -> None:
    text = "Sentence 9 mentions a soldier. However, it cannot be confirmed it is the same event."
    assert "said(s9)" not in atoms(text)
    assert atoms(text, threshold=0.3)["said(s9)"] == 0.3
    assert "cited(s9)" in atoms(text)


def test_answer_tag_and_quotes() -> None:
    text = (
        '<explanation>Sentence 8 states "Wait So Long" was played; Haskins\' scandals.'
        "</explanation>\n<answer>Supported</answer>"
    )
    got = RULES.propose(text)
    by_atom = {p.atom: p for p in got}
    assert "answered(supported)" in by_atom
    quotes = by_atom["quotes"]
    assert [s.quote for s in quotes.spans] == [
        'Sentence 8 states "Wait So Long" was played; Haskins\' scandals.'
    ]
    hits = [h.captured for h in RULES.matches(text) if h.atom == "quotes"]
    assert hits == ["Wait So Long"]  # the apostrophe is not a quote
    assert "answered(maybe)" not in atoms("<answer>maybe</answer>")  # not in the map


def test_every_proposal_quotes_its_source_exactly_and_is_unreviewed() -> None:
    for row in load_labels(LABELS) + load_labels(HELDOUT):
        text = row["response"]
        for ann in RULES.annotations(text, threshold=0.0):
            assert ann["by"] == {"kind": "rule", "name": "wice-citations/1", "reviewed": False}
            assert 0.0 <= ann["confidence"] <= 1.0
            assert ann["value"] == "TRUE"
            assert ann["evidence"]
            for e in ann["evidence"]:
                assert e["source"] == "rationale"
                assert 0 <= e["start"] < e["end"] <= len(text)
                assert text[e["start"] : e["end"]] == e["quote"]


def test_a_tag_citation_quotes_its_whole_sentence() -> None:
    text = "<explanation>As <sentence_5> states, it holds.</explanation>"
    (p,) = [p for p in RULES.propose(text) if p.atom == "said(s5)"]
    assert [s.quote for s in p.spans] == ["As <sentence_5> states, it holds."]


def test_spans_are_code_points_not_bytes() -> None:
    text = "Ryūdai 🙂 note. Sentence 4 confirms it."
    (p,) = [p for p in RULES.propose(text) if p.atom == "said(s4)"]
    (s,) = p.spans
    assert text[s.start : s.end] == "Sentence 4 confirms it."
    assert s.start == text.index("Sentence")


def test_rules_that_disagree_abstain() -> None:
    rules = parse_rules(
        {
            "schema": "unmask.judge-rules/1",
            "rules": [
                {"name": "yes", "pattern": r"(ok)", "atom": "fine", "confidence": 0.9},
                {
                    "name": "no",
                    "pattern": r"(ok) not",
                    "atom": "fine",
                    "value": "FALSE",
                    "confidence": 0.9,
                },
            ],
        }
    )
    assert JudgeRules(rules).propose("ok not") == []
    assert [p.atom for p in JudgeRules(rules).propose("ok")] == ["fine"]


def test_a_rule_file_for_another_citation_style(tmp_path: Path) -> None:
    proto = tmp_path / "mine.proto"
    proto.write_text('protocol mine ""\n', encoding="utf-8")
    rules = {
        "schema": "unmask.judge-rules/1",
        "rules": [
            {
                "name": "bracket",
                "pattern": r"\[(\d+(?:-\d+)?)\]",
                "atom": "uses",
                "member": "e{}",
                "values": "numbers",
                "confidence": 0.8,
            },
            {
                "name": "grade",
                "pattern": r"GRADE: ([CPI])",
                "atom": "graded",
                "member": "{}",
                "map": {"C": "correct", "P": "partial", "I": "incorrect"},
                "confidence": 1,
            },
        ],
    }
    rules_for(proto).write_text(json.dumps(rules), encoding="utf-8")
    assert rules_for(proto).name == "mine.judge.json"
    proposer = JudgeRules(load_rules(rules_for(proto)))
    got = proposer.propose("As [2-3] show. GRADE: P")
    assert [p.atom for p in got] == ["uses(e2)", "uses(e3)", "graded(partial)"]
    assert proposer.by.name == "judge-rules/1"  # the default name of a rule file
    rules["name"], rules["version"] = "mine-grades", 3
    assert JudgeRules(parse_rules(rules)).by.name == "mine-grades/3"


def rule_file(*changes: dict) -> dict:
    """A rule file of one good rule per change, each with those fields changed."""
    good = {"name": "x", "pattern": "(a)", "atom": "b", "confidence": 1}
    return {"schema": "unmask.judge-rules/1", "rules": [{**good, **c} for c in changes]}


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ([], "a rule file must be a JSON object"),
        ({"rules": []}, '`"schema": "unmask.judge-rules/1"`'),
        ({"schema": "unmask.judge-rules/1", "rules": []}, "`rules` must be a list"),
        (rule_file({"pattern": "a"}), "rule `x`: `pattern` must have one capture group, or one"),
        (rule_file({"pattern": "(a)(b)"}), "has 2 capture groups, so `member` must place each"),
        (rule_file({"pattern": "(a)" * 5, "member": "{1}"}), "one per value it reads (at most 4)"),
        (
            rule_file({"pattern": "(a)(b)", "member": ["{1}", "p"]}),
            "`member` must be a string containing `{}`, or a list of such strings",
        ),
        (
            rule_file({"pattern": "(a)(b)", "member": ["{1}", "{1}"]}),
            "`member` must use each capture group once at least: `{1}`, `{2}`",
        ),
        (
            rule_file({"pattern": "(a)(b)", "member": ["{}", "{2}"]}),
            "with several capture groups `member` names each as `{1}`",
        ),
        (
            rule_file({"pattern": "(a)(b)", "member": ["{1}", "{2}"], "values": ["text"]}),
            "`values` as a list must have one entry per capture group",
        ),
        (rule_file({"pattern": "(a"}), "rule `x`: `pattern` is not a valid regular expression"),
        (rule_file({"confidence": 2}), "`confidence` must be a number from 0 to 1"),
        (rule_file({"atom": "b(c)"}), "`atom` must be an atom or family name"),
        (rule_file({"member": "m"}), "`member` must be a string containing `{}`"),
        (rule_file({}, {}), "two rules are named `x`"),
    ],
)
def test_a_bad_rule_file_says_what_is_wrong(obj, message: str) -> None:
    with pytest.raises(UnmaskError) as err:
        parse_rules(obj)
    assert message in err.value.diagnostics[0].message


def test_the_rule_the_bad_files_change_is_good_unchanged() -> None:
    # so each bad file above is refused for the one field it changes
    assert [r.name for r in parse_rules(rule_file({})).rules] == ["x"]


def test_the_shipped_example_rule_file_is_the_built_in_one() -> None:
    shipped = json.loads((DATA / "wice.judge.json").read_text(encoding="utf-8"))
    assert shipped == WICE_RULES
    assert load_rules(DATA / "wice.judge.json") == parse_rules(WICE_RULES)


def test_registered_as_a_rule_proposer() -> None:
    assert "judge-rules" in available(JUDGE_RATIONALE)
    p = create("judge-rules", JUDGE_RATIONALE)
    assert p.by.to_json() == {"kind": "rule", "name": "wice-citations/1", "reviewed": False}


# --- the command ----------------------------------------------------------------------------


def test_the_judge_command(tmp_path: Path) -> None:
    rows = [
        {"id": "a", "response": "Sentence 5 and 7 confirm it.\n<answer>supported</answer>"},
        {"id": 2, "response": 5},
        "not an object",
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["propose", "judge", str(path), "--field", "response"])
    assert r.exit_code == 4
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(lines) == 3
    assert [a["atom"] for a in lines[0]["annotations"]] == [
        "cited(s5)",
        "cited(s7)",
        "said(s5)",
        "said(s7)",
        "answered(supported)",
    ]
    assert lines[1] == {
        "id": 2,
        "line": 2,
        "error": "field `response` must be a string, found a number",
    }
    assert "2 of 3 lines invalid" in r.stderr
    again = CliRunner().invoke(main, ["propose", "judge", str(path), "--field", "response"])
    assert again.stdout == r.stdout  # deterministic


def test_the_judge_command_refuses_a_bad_rule_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.judge.json"
    bad.write_text("{", encoding="utf-8")
    path = tmp_path / "in.jsonl"
    path.write_text('{"rationale": "x"}\n', encoding="utf-8")
    r = CliRunner().invoke(main, ["propose", "judge", str(path), "--rules", str(bad)])
    assert r.exit_code == 2
    assert "is not valid JSON" in r.stderr
    r = CliRunner().invoke(main, ["propose", "judge", str(path), "--rules", str(tmp_path / "no")])
    assert r.exit_code == 2 and "cannot read rule file" in r.stderr


# --- the figures in docs/proposers.md -------------------------------------------------------


@pytest.mark.parametrize("labels", [LABELS, HELDOUT])
def test_the_documented_figures_are_recomputed_from_the_committed_labels(labels: Path) -> None:
    rows = load_labels(labels)
    figures = measure(rows, RULES, 0.5)
    table = render(figures)
    docs = (ROOT / "docs" / "proposers.md").read_text(encoding="utf-8")
    assert table in docs, "docs/proposers.md is out of date: regenerate the judge-rule tables"


def test_the_labels_are_what_the_doc_says() -> None:
    rows = load_labels(LABELS)
    assert len(rows) == 50
    assert sorted({r["judge"] for r in rows}) == ["gpt-3.5-turbo-0613", "gpt-4-0613"]
    assert sum(r["judge"] == "gpt-4-0613" for r in rows) == 25
    for r in rows:
        assert set(r["support"]) | set(r["mention"]) | set(r["contradict"]) == set(r["cited"])
        assert f"<answer>{r['answer']}</answer>" in r["response"]
        for q in r["quotes"]:
            assert q in r["response"]
    held = load_labels(HELDOUT)
    assert not {(r["judge"], r["row"]) for r in held} & {(r["judge"], r["row"]) for r in rows}


def test_measure_counts_by_hand() -> None:
    rows = [
        {
            "judge": "j",
            "row": 0,
            "response": "Sentence 1 confirms it. Sentence 2 mentions a thing.\n"
            "<answer>supported</answer>",
            "cited": [1, 2],
            "support": [1],
            "mention": [2],
            "contradict": [],
            "answer": "supported",
            "quotes": [],
        }
    ]
    f = measure(rows, RULES, 0.5)
    assert f["rules"]["said"] | {} == {
        "true_positives": 1,
        "proposed": 2,
        "labelled": 1,
        "precision": 50.0,
        "recall": 100.0,
        "atom": "said",
        "measured_against": "support",
    }
    assert f["mentions_called_support"] == {"labelled_mentions": 1, "proposed_as_said": 1}


@pytest.mark.skipif(WICE is None, reason="WiCE data not found beside the repository")
def test_the_labels_quote_the_wice_outputs_exactly() -> None:
    assert check_sources(load_labels(LABELS) + load_labels(HELDOUT), WICE) == []
    result = CliRunner().invoke(measure_main, ["--labels", str(LABELS), "--wice", str(WICE)])
    assert result.exit_code == 0, result.stderr
    assert "| `said` |" in result.stdout


def test_the_measure_command_prints_and_writes_one_table_per_label_set(tmp_path) -> None:
    out = tmp_path / "figures.json"
    args = ["--labels", str(LABELS), "--labels", str(HELDOUT), "--json", str(out)]
    result = CliRunner().invoke(measure_main, args)
    assert result.exit_code == 0, result.stderr
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert list(figures) == [str(LABELS), str(HELDOUT)]
    assert result.stdout.startswith(f"{LABELS}:\n") and f"\n{HELDOUT}:\n" in result.stdout
    assert figures[str(LABELS)] == measure(load_labels(LABELS), JudgeRules(), 0.5)


def test_the_measure_command_refuses_labels_that_do_not_match_their_source(tmp_path) -> None:
    # WiCE outputs whose responses are not the ones labelled
    for name in {row["file"] for row in load_labels(LABELS)}:
        rows = [json.dumps({"response": f"another response {i}"}) for i in range(200)]
        (tmp_path / name).write_text("\n".join(rows) + "\n", encoding="utf-8")
    result = CliRunner().invoke(measure_main, ["--labels", str(LABELS), "--wice", str(tmp_path)])
    assert result.exit_code == 1
    assert "labels do not match the source" in result.stderr


def test_the_measure_command_without_labels_is_a_usage_error() -> None:
    result = CliRunner().invoke(measure_main, ["--threshold", "0.5"])
    assert result.exit_code == 2 and "--labels" in result.stderr


def test_the_judge_field_may_be_a_dotted_path(tmp_path: Path) -> None:
    """`--field result.reason` reaches into an object, `contexts.1` into a list; a key with
    a dot in it is still read as a key; a path that resolves to nothing says where it stops."""
    text = "Sentence 5 confirms it.\n<answer>supported</answer>"
    rows = [
        {"id": "a", "result": {"reason": text}},
        {"id": "b", "result": {"why": text}},
        {"id": "c", "result": "flat"},
        {"id": "d", "result.reason": text},
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["propose", "judge", str(path), "--field", "result.reason"])
    assert r.exit_code == 4
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [a["atom"] for a in lines[0]["annotations"]][:1] == ["cited(s5)"]
    assert lines[1]["error"] == "missing field `result.reason`: no `reason` in `result`"
    assert lines[2]["error"] == (
        "missing field `result.reason`: `result` is a string, not an object or an array"
    )
    assert lines[3]["annotations"] == lines[0]["annotations"]
    listed = tmp_path / "list.jsonl"
    listed.write_text(json.dumps({"contexts": ["x", text]}) + "\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["propose", "judge", str(listed), "--field", "contexts.1"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["annotations"] == lines[0]["annotations"]
    r = CliRunner().invoke(main, ["propose", "judge", str(listed), "--field", "contexts.2"])
    assert json.loads(r.stdout)["error"] == (
        "missing field `contexts.2`: `contexts` holds 2 items, with no item `2` "
        "(items count from 0)"
    )
    r = CliRunner().invoke(main, ["propose", "judge", str(listed), "--field", "nope.x"])
    assert json.loads(r.stdout)["error"] == "missing field `nope.x`: no `nope`"
