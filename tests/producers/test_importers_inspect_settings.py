"""`unmask import inspect` reads the settings an Inspect log records (issue 37).

`tests/data/importers/inspect-generated/settings.{eval,json}` is one run of inspect-ai 0.3.285
(`regenerate.py`, mockllm graders, offline) scoring one sample four ways: a custom grading
template whose rubric the grader quotes (the full grading prompt is in the score's
metadata), a second `model_graded_qa` (`model_graded_qa1`) with its own `grade_pattern`, a
panel of three graders, and a custom scorer. Each test fails without the reading it names.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tests.conftest import found_files
from tests.helpers import TEST_DATA
from unmask.cli.main import main

INSPECT = TEST_DATA / "importers" / "inspect-generated"


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def imported(tmp_path: Path, src: Path, code: int = 1) -> tuple[Path, str]:
    out = tmp_path / src.name.replace(".", "-")
    res = cli("import", "inspect", str(src), "--out", str(out))
    assert res.exit_code == code, res.stderr
    return out, res.stderr


def replay(out: Path, scorer: str) -> dict:
    return json.loads((out / f"moon-e1-{scorer}.json").read_text(encoding="utf-8"))


def values(r: dict) -> dict[str, str]:
    return {a["atom"]: a["value"] for a in r["annotations"]}


def check(path: Path) -> dict:
    return json.loads(cli("check", str(path), "--format", "json").stdout)


def copy(tmp_path: Path, change) -> Path:
    data = json.loads((INSPECT / "settings.json").read_text(encoding="utf-8"))
    change(data)
    src = tmp_path / "settings.json"
    src.write_text(json.dumps(data), encoding="utf-8")
    return src


def _scores(data: dict) -> dict:
    return data["samples"][0]["scores"]


def test_the_fixture_is_inspect_own_output() -> None:
    assert (INSPECT / "VERSION").read_text(encoding="utf-8") == "inspect-ai 0.3.285\n"
    data = json.loads((INSPECT / "settings.json").read_text(encoding="utf-8"))
    assert list(_scores(data)) == [
        "model_graded_qa",
        "model_graded_qa1",
        "model_graded_fact",
        "keyword",
    ]


def test_eval_and_json_give_the_same_replays(tmp_path: Path) -> None:
    a, _ = imported(tmp_path, INSPECT / "settings.eval")
    b, _ = imported(tmp_path, INSPECT / "settings.json")
    names = sorted(p.name for p in a.glob("*.json"))
    assert names == [
        "moon-e1-model_graded_fact.json",
        "moon-e1-model_graded_qa.json",
        "moon-e1-model_graded_qa1.json",
    ]
    for n in names:
        assert (a / n).read_bytes() == (b / n).read_bytes(), n


def test_a_quote_of_the_custom_templates_rubric_is_found_in_the_grading_prompt(tmp_path):
    out, _ = imported(tmp_path, INSPECT / "settings.eval")
    r = replay(out, "model_graded_qa")
    assert "Rubric: the answer" in r["sources"]["context"]
    assert values(r)["said(q0)"] == "TRUE"
    report = check(out / "moon-e1-model_graded_qa.json")
    assert report["overall"] == "SATISFIED"  # not a quote the grader made up


def test_a_custom_template_without_its_prompt_leaves_the_quote_open(tmp_path: Path) -> None:
    def drop(data: dict) -> None:
        del _scores(data)["model_graded_qa"]["metadata"]["grading"]

    out, _ = imported(tmp_path, copy(tmp_path, drop))
    assert "said(q0)" not in values(replay(out, "model_graded_qa"))  # never FALSE


def test_a_second_scorer_is_read_by_its_own_grade_pattern(tmp_path: Path) -> None:
    out, err = imported(tmp_path, INSPECT / "settings.json")
    r = replay(out, "model_graded_qa1")
    assert r["verdict"] == "C"
    # its explanation writes `GRADE: I` before `VERDICT: C`: read by `GRADE:` it would be I
    says = next(a for a in r["annotations"] if a["atom"] == "says_correct")
    assert says["value"] == "TRUE"
    (ev,) = says["evidence"]
    assert r["sources"]["rationale"][ev["start"] - len("VERDICT: ") : ev["end"]] == "VERDICT: C"
    assert "one_grade" not in values(r)
    assert check(out / "moon-e1-model_graded_qa1.json")["verdict"]["status"] == "ENTAILED"
    assert "model_graded_qa1" not in err


def test_a_score_its_own_pattern_finds_no_grade_in_is_skipped(tmp_path: Path) -> None:
    def change(data: dict) -> None:
        _scores(data)["model_graded_qa1"]["explanation"] = "GRADE: C, and no verdict"

    out, err = imported(tmp_path, copy(tmp_path, change))
    assert "scores.model_graded_qa1.explanation: skipped: the scorer's grade pattern" in err
    assert not (out / "moon-e1-model_graded_qa1.json").exists()


def _pattern(pattern: str):
    def change(data: dict) -> None:
        data["eval"]["scorers"][1]["options"]["grade_pattern"] = pattern

    return change


def test_a_grade_pattern_that_cannot_be_applied_leaves_the_grade_open(tmp_path, monkeypatch):
    import unmask.importers.patterns as patterns

    monkeypatch.setattr(patterns, "SECONDS", 1.0)
    for pattern, why in (
        ("VERDICT: (C|I", "is not a pattern Python reads"),
        ("VERDICT: C", "has no group 1 to read the grade from"),
        (r"(\w+\s?)+\.$", "took more than 1 s"),  # slow on a long line with no full stop
    ):

        def change(data: dict, pattern: str = pattern) -> None:
            _pattern(pattern)(data)
            _scores(data)["model_graded_qa1"]["explanation"] = "VERDICT: C " + "word " * 60 + "!"

        out, err = imported(tmp_path / why[:8], copy(tmp_path, change))
        r = replay(out, "model_graded_qa1")
        assert "says_correct" not in values(r), pattern
        assert f"grades with its own pattern `{pattern}`, which {why}" in err


def test_a_panel_is_read_by_its_votes(tmp_path: Path) -> None:
    out, _ = imported(tmp_path, INSPECT / "settings.json")
    r = replay(out, "model_graded_fact")
    assert r["sources"]["rationale"] == "panel of 3 graders: votes C, C, I"
    assert values(r) == {"says_correct": "TRUE", "says_partial": "FALSE", "graded_response": "TRUE"}
    assert check(out / "moon-e1-model_graded_fact.json")["verdict"]["status"] == "ENTAILED"


def test_a_panel_that_ties_or_reduces_otherwise_leaves_the_grade_open(tmp_path: Path) -> None:
    def tie(data: dict) -> None:
        # one vote in three is no majority, a failed member counted (Inspect's `majority`)
        _scores(data)["model_graded_fact"]["metadata"]["panel"]["votes"] = ["C", None, "I"]

    out, err = imported(tmp_path, copy(tmp_path, tie))
    assert "says_correct" not in values(replay(out, "model_graded_fact"))
    assert "`model_graded_fact`: no grade has more than half of the panel's votes" in err

    def reducer(data: dict) -> None:
        data["eval"]["scorers"][2]["options"]["reducer"] = "max"

    out, err = imported(tmp_path / "r", copy(tmp_path, reducer))
    assert "says_correct" not in values(replay(out, "model_graded_fact"))
    assert "`model_graded_fact`: reduces its panel's votes with `max`" in err


def test_a_custom_scorer_is_said_once_per_file(tmp_path: Path) -> None:
    _, err = imported(tmp_path, INSPECT / "settings.eval")
    assert "scores.keyword: skipped: scorer `keyword` is not a model-graded scorer" in err
    assert err.count("`keyword`: a custom scorer grades by its own code") == 1


def test_custom_instructions_read_the_grade_by_inspects_letter_pattern(tmp_path: Path) -> None:
    # custom `instructions` and no `grade_pattern`: Inspect reads `GRADE: ([CPI])`, so a
    # later token that is no grade is passed over for the last one that is
    def change(data: dict) -> None:
        del data["eval"]["scorers"][1]["options"]["grade_pattern"]
        _scores(data)["model_graded_qa1"]["explanation"] = "GRADE: Correct. Then GRADE: none"

    out, err = imported(tmp_path, copy(tmp_path, change))
    r = replay(out, "model_graded_qa1")
    assert values(r)["says_correct"] == "TRUE"
    (ev,) = next(a for a in r["annotations"] if a["atom"] == "says_correct")["evidence"]
    assert ev["quote"] == "GRADE: C" and ev["start"] == 0
    assert "model_graded_qa1" not in err  # no note: the rule is known


def _archive(tmp_path: Path, with_spec: str | None) -> Path:
    """settings.json as a deflated `.eval` (as older Inspect wrote them), its eval spec in
    the member ``with_spec`` (or nowhere)."""
    import zipfile

    data = json.loads((INSPECT / "settings.json").read_text(encoding="utf-8"))
    src = tmp_path / f"log-{with_spec is not None}.eval"
    with zipfile.ZipFile(src, "w", zipfile.ZIP_DEFLATED) as z:
        if with_spec is not None:
            z.writestr(with_spec, json.dumps({"version": 2, "eval": data["eval"]}))
        z.writestr("samples/moon_epoch_1.json", json.dumps(data["samples"][0]))
    return src


def test_a_log_being_written_keeps_its_spec_in_the_journal(tmp_path: Path) -> None:
    base, _ = imported(tmp_path, INSPECT / "settings.json")
    out, err = imported(tmp_path, _archive(tmp_path, "_journal/start.json"))
    for p in found_files(base.glob("*.json")):
        assert (out / p.name).read_bytes() == p.read_bytes(), p.name
    assert "does not record the scorer's options" not in err


def test_a_broken_header_falls_back_to_the_journal(tmp_path: Path) -> None:
    import zipfile

    src = _archive(tmp_path, "_journal/start.json")
    with zipfile.ZipFile(src, "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", "{not json")
    base, _ = imported(tmp_path, INSPECT / "settings.json")
    out, err = imported(tmp_path, src)
    assert sorted(p.name for p in out.glob("*.json")) == [
        p.name for p in found_files(base.glob("*.json"))
    ]
    assert "does not record the scorer's options" not in err


def test_an_archive_without_its_spec_leaves_every_grade_open(tmp_path: Path) -> None:
    out, err = imported(tmp_path, _archive(tmp_path, None))
    assert err.count("does not record the scorer's options") == 1
    for p in found_files(out.glob("*.json")):
        r = json.loads(p.read_text(encoding="utf-8"))
        assert "says_correct" not in values(r), p.name


def test_score_keys_map_to_the_scorers_the_log_records() -> None:
    from unmask.importers.inspect import scorer_specs

    spec = {
        "scorers": [
            {"name": "inspect_ai/model_graded_qa", "options": {"template": "T"}},
            {"name": "model_graded_qa", "options": {"grade_pattern": "X: (C)"}},
            {"name": "keyword"},
            {"name": "model_graded_qa", "options": None},
        ]
    }
    assert scorer_specs(spec) == {
        "model_graded_qa": ("model_graded_qa", {"template": "T"}),
        "model_graded_qa1": ("model_graded_qa", {"grade_pattern": "X: (C)"}),
        "keyword": ("keyword", {}),
        "model_graded_qa2": ("model_graded_qa", {}),
    }
    assert scorer_specs({}) is None and scorer_specs(None) is None

    # a scorer of the user's named `model_graded_qa1` takes that key first, as in Inspect
    taken = {"scorers": [{"name": "model_graded_qa1"}, {"name": "model_graded_qa"}] * 2}
    assert list(scorer_specs(taken) or {}) == [
        "model_graded_qa1",
        "model_graded_qa",
        "model_graded_qa11",
        "model_graded_qa2",
    ]
