"""Who made the annotations, next to each finding in text, HTML and Markdown: "rests on 2
unreviewed annotations" and each quoted annotation's provenance. Case C with `by` added:
the refuted grounding `j_cto ~ c_cto` rests on a model's and a rule's annotations, neither
reviewed; the entailed `j_joined ~ c_joined` rests on an annotation read off the gold label."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import found_files
from tests.render_cases import EXAMPLES, example
from unmask.api import check, load
from unmask.render import html, markdown, text
from unmask.render import view as ev
from unmask.replay.data import Provenance

BY = {
    "j_cto": {"kind": "model", "name": "gpt-4o-annotator"},
    "c_cto": {"kind": "rule", "name": "wice-citations/1"},
    "c_joined": {"kind": "gold"},
    "j_joined": {"kind": "human", "name": "ana", "reviewed": True},
}


@pytest.fixture
def case(tmp_path: Path):
    for proto in found_files(EXAMPLES.glob("*.proto")):
        shutil.copy(proto, tmp_path / proto.name)
    obj = json.loads((EXAMPLES / "case_c.json").read_text(encoding="utf-8"))
    for ann in obj["annotations"]:
        if ann["atom"] in BY:
            ann["by"] = BY[ann["atom"]]
    path = tmp_path / "case_c_by.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    replay = load(path)
    return check(replay, "z3"), replay


def grounding(report, judge):
    return next(g for g in report.grounding if g.judge == judge)


def test_provenance_words() -> None:
    assert ev.provenance(None) == ""
    assert (
        ev.provenance(Provenance("rule", "wice-citations/1")) == "rule wice-citations/1, unreviewed"
    )
    assert ev.provenance({"kind": "model", "reviewed": True}) == "model"
    assert ev.provenance({"kind": "human", "reviewed": False}) == "human, unreviewed"
    assert ev.provenance(Provenance("gold")) == "gold, derived from the gold label"


def test_counts_of_a_check(case) -> None:
    report, replay = case
    look = ev.Lookup(replay)
    assert ev.rests_on(grounding(report, "j_cto").result, look) == (2, 0)
    assert ev.resting(grounding(report, "j_cto").result, look) == (
        "rests on 2 unreviewed annotations"
    )
    assert ev.resting(grounding(report, "j_joined").result, look) == (
        "rests on 1 gold-derived annotation"
    )


@pytest.mark.parametrize(
    ("renderer", "lines"),
    [
        (
            text,
            [
                "`j_cto` ~ `c_cto`: REFUTED (rests on 2 unreviewed annotations)",
                "`j_joined` ~ `c_joined`: ENTAILED (rests on 1 gold-derived annotation)",
                "- annotation `c_cto` = FALSE (rule wice-citations/1, unreviewed)",
                "- annotation `j_cto` = TRUE (model gpt-4o-annotator, unreviewed)",
                "`c_joined`=TRUE (gold, derived from the gold label)",
            ],
        ),
        (
            markdown,
            [
                "⚠ *rests on 2 unreviewed annotations*",
                "*by rule wice-citations/1, unreviewed*",
                "`c_cto` (by rule wice-citations/1, unreviewed) |",
            ],
        ),
    ],
    ids=["text", "markdown"],
)
def test_text_and_markdown_say_it_next_to_the_finding(case, renderer, lines) -> None:
    report, replay = case
    out = renderer.render(report, replay)
    for line in lines:
        assert line in out


def test_html_says_it_next_to_the_finding(case) -> None:
    report, replay = case
    page = html.render(report, replay)
    finding = page.split('data-check="grounding:j_cto~c_cto"', 1)[1].split("</article>", 1)[0]
    assert '<p class="note rests">⚠ rests on 2 unreviewed annotations</p>' in finding
    assert '<span class="role by">by rule wice-citations/1, unreviewed</span>' in finding
    annotations = page.split('id="annotations"', 1)[1]
    assert "by human ana</span>" in annotations
    assert "by gold, derived from the gold label</span>" in annotations


def test_without_by_nothing_is_added() -> None:
    report, replay = example("case_c.json")
    out = text.render(report, replay) + html.render(report, replay)
    assert "rests on 2" not in out and "unreviewed" not in out and 'class="role by"' not in out


def test_a_finding_on_unreviewed_annotations_is_provisional_everywhere(case) -> None:
    # the refuted grounding rests on a model's and a rule's readings: provisional, saying
    # which kinds; a finding with no `by` behind it would be confirmed (the golden cases)
    from unmask.render import sarif

    report, replay = case
    look = ev.Lookup(replay)
    res = grounding(report, "j_cto").result
    assert ev.standing(res) == "provisional"
    assert ev.standing_text(res, look) == (
        "provisional: rests on model gpt-4o-annotator, unreviewed; "
        "rule wice-citations/1, unreviewed"
    )
    assert ev.standing(grounding(report, "j_joined").result) == ""  # no finding
    assert ev.standing_text(res, look) in text.render(report, replay)
    assert ev.standing_text(res, look) in markdown.render(report, replay)
    assert ev.standing_text(res, look) in html.render(report, replay)
    log = json.loads(sarif.render(report, replay))
    (found,) = [
        r for r in log["runs"][0]["results"] if r["properties"].get("check", "").endswith("c_cto")
    ]
    assert found["level"] == "warning" and found["properties"]["standing"] == "provisional"
    assert found["properties"]["restsOn"] == [
        "model gpt-4o-annotator, unreviewed",
        "rule wice-citations/1, unreviewed",
    ]
