"""Reports of a protocol that declares its labels show each decision as written
(`supported iff j`, `not_supported otherwise`) where a binary one shows `pass iff D`, and word
the verdict finding in labels; grounding titles carry their direction. The report here is a
binary one with its verdict and explanation swapped for labelled ones by hand, so the
renderers are tested apart from the checker."""

from __future__ import annotations

import dataclasses

from tests.replay.test_replay_provenance import three_labels
from unmask.api import check
from unmask.checking.report import (
    AnnotationItem,
    CheckResult,
    DecisionItem,
    Explanation,
    GroundingCheck,
    LabelsItem,
    PartId,
)
from unmask.render import html, markdown, text
from unmask.render import view as ev
from unmask.replay.load import replay_from_obj


def labelled():
    replay = replay_from_obj(three_labels())
    binary = replay_from_obj(
        {**three_labels(), "protocol": _binary(), "verdict": "PASS", "gold": None}
    )
    report = check(binary, "z3")
    ann = next(i for i in report.verdict.result.explanation.items if i.kind == "annotation")
    expl = Explanation(
        (
            AnnotationItem(ann.part, ann.atom, ann.value, ann.evidence, ann.explanation),
            LabelsItem(PartId("labels")),
            DecisionItem(PartId("decision", "partially_supported"), "partially_supported"),
        )
    )
    refuted = CheckResult("REFUTED", "VIOLATED", expl)
    verdict = dataclasses.replace(report.verdict, observed="partially_supported", result=refuted)
    return dataclasses.replace(report, verdict=verdict, gold=None), replay


def _binary() -> dict:
    from tests.replay.test_replay import ir_protocol

    return ir_protocol()


def test_rules_as_written() -> None:
    _, replay = labelled()
    assert ev.decision_rules(replay.protocol) == {
        "supported": "supported iff j",
        "partially_supported": "partially_supported iff c",
        "not_supported": "not_supported otherwise",
    }
    binary = replay_from_obj(
        {**three_labels(), "protocol": _binary(), "verdict": "PASS", "gold": None}
    )
    assert ev.decision_rules(binary.protocol) == {None: "pass iff j"}


def test_text_names_the_label_decision() -> None:
    report, replay = labelled()
    out = text.render(report, replay)
    assert "observed partially_supported: REFUTED" in out
    assert "- exactly one verdict label: supported | partially_supported | not_supported" in out
    assert "- decision: partially_supported iff c" in out
    assert "pass iff" not in out


def test_html_and_markdown_list_every_decision() -> None:
    report, replay = labelled()
    page = html.render(report, replay)
    assert (
        "decision rules: <code>supported iff j</code>; <code>partially_supported iff c</code>; "
        "<code>not_supported otherwise</code>"
    ) in page
    assert "the protocol's decision rule: <code>partially_supported iff c</code>" in page
    assert (
        "exactly one verdict label: <code>supported | partially_supported | not_supported</code>"
    ) in page
    assert "The rationale rules out the observed verdict partially_supported" in page
    md = markdown.render(report, replay)
    assert "Decision rules: `supported iff j`; `partially_supported iff c`;" in md
    assert "- exactly one verdict label: `supported | partially_supported | not_supported`" in md


def test_one_way_grounding_title_and_expression_sides() -> None:
    report, replay = labelled()
    g = report.grounding[0]

    refuted = CheckResult("REFUTED", "VIOLATED", Explanation(()))
    one_way = GroundingCheck("j or ext", "c", refuted, direction="~>")
    report = dataclasses.replace(report, grounding=(one_way,))
    (check_,) = [c for c in ev.checks(report) if c.dimension == "grounding"]
    assert check_.title == "grounding j or ext ~> c" and check_.direction == "~>"
    assert ev.finding(report, check_, replay) == (
        "The judge asserts `j or ext`, but the independent observation `c` does not back it."
    )
    assert "`j or ext` ~> `c`: REFUTED" in text.render(report, replay)
    assert g.judge == "j"


def test_sarif_and_junit_render_a_labelled_report() -> None:
    import json

    from unmask.render import junit, sarif

    report, replay = labelled()
    log = json.loads(sarif.render(report, replay))
    assert log["runs"][0]["results"]
    assert "partially_supported" in junit.render(report, replay)


def test_html_lists_definitions_with_their_expansion_on_demand() -> None:
    from pathlib import Path

    from unmask.api import check
    from unmask.ir import Atom, Definition, Nary, Ref
    from unmask.render import html
    from unmask.replay.load import load_replay

    examples = Path(__file__).resolve().parents[2] / "examples"
    replay = load_replay(examples / "claim_parts_refuted.json")
    page = html.render(check(replay, "z3"), replay)
    assert '<a href="#definitions">definitions</a>' in page
    assert "<dt><code>all_said</code></dt>" in page
    # a definition built on another shows its expansion behind a click
    some = Nary("or", (Atom("said(date)"), Atom("said(medal)")))
    nested = Definition("any_or_first", Nary("or", (Ref("some_said", some), Atom("said(date)"))))
    protocol = replay.protocol
    object.__setattr__(protocol, "definitions", (*protocol.definitions, nested))
    page = html.render(check(replay, "z3"), replay)
    assert "<code>some_said or said(date)</code>" in page
    assert (
        "<summary>expanded</summary><code>(said(date) or said(medal)) or said(date)</code>" in page
    )
