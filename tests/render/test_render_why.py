"""The "why" section of text, Markdown and HTML says why the result is what it is.

Under "why VIOLATED:" only the refuted checks that made the report VIOLATED; a check that
is only underdetermined (which alone would make it UNKNOWN) is listed apart, under "also
open (not why VIOLATED):", so nothing is lost and no reader hunts a break that is not
there. An UNKNOWN report keeps every reason under "why UNKNOWN:", but a refuted check that
an override outweighed is listed apart. JUnit's message and an audit's case text say the
same; the JSON report's ``reasons`` stay every reason (docs/report-format.md), and every
backend gives the same bytes.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from tests.render.test_render_html import parse
from tests.render_cases import EXAMPLES
from unmask.api import check, load
from unmask.checking.record import ResultRecord
from unmask.checking.report import UNKNOWN, VIOLATED, Reason
from unmask.render import html, junit, render
from unmask.render.words import why

PAST_DEADLINE = Reason("deadline", "replay", "the check ran past its deadline of 5 ms")
REFUTED = [
    "the observed verdict `PASS` is refuted",
    "requirement `context_only` is refuted",
]
OPEN = "grounding `j_cto~c_cto` is underdetermined: the evidence allows both"


def open_case_d(folder: Path) -> Path:
    """Case D without the annotation of `c_cto`: the verdict and `context_only` are refuted,
    and the grounding pair `j_cto ~ c_cto` is left underdetermined."""
    shutil.copy(EXAMPLES / "factual_claims.proto", folder / "factual_claims.proto")
    obj = json.loads((EXAMPLES / "case_d.json").read_text(encoding="utf-8"))
    obj["id"] = "case-d-open"
    obj["annotations"] = [a for a in obj["annotations"] if a["atom"] != "c_cto"]
    path = folder / "open.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def section(text: str, head: str) -> list[str]:
    """The lines listed under ``head`` (a line of its own) up to the next heading or end."""
    lines = text.splitlines()
    assert head in lines, f"no `{head}` in the report"
    out = []
    for line in lines[lines.index(head) + 1 :]:
        if not line.startswith("  "):
            break
        out.append(line.strip())
    return out


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    return load(open_case_d(tmp_path_factory.mktemp("why")))


def test_text_lists_under_why_violated_only_what_violated_it(replay, backend_name) -> None:
    report = check(replay, backend_name)
    assert report.overall == VIOLATED
    text = render("text", report, replay)
    assert section(text, "why VIOLATED:") == [f"- {m}" for m in REFUTED]
    assert section(text, "also open (not why VIOLATED):") == [f"- {OPEN}"]
    assert text.endswith(f"also open (not why VIOLATED):\n  - {OPEN}\n")
    # every backend, the same bytes but for the backend's name, in every format
    z3 = check(replay, "z3")
    for fmt in ("text", "markdown", "html", "json"):
        mine = render(fmt, report, replay).replace(f"backend {backend_name}", "backend z3")
        mine = mine.replace(f'"backend": "{backend_name}"', '"backend": "z3"')
        assert mine == render(fmt, z3, replay), fmt


def test_the_json_reasons_stay_every_reason_in_order(replay, backend_name) -> None:
    reasons = json.loads(render("json", check(replay, backend_name), replay))["reasons"]
    assert [(r["code"], r["message"]) for r in reasons] == [
        ("violated", REFUTED[0]),
        ("violated", REFUTED[1]),
        ("underdetermined", OPEN),
    ]


def test_markdown_and_html_list_the_open_check_apart(replay) -> None:
    report = check(replay, "z3")
    ctx = html.context(report, replay)
    assert (ctx["reasons"], ctx["also"]) == (REFUTED, [OPEN])
    md = render("markdown", report, replay)
    why_md = md.index("### Why the result is VIOLATED")
    also_md = md.index("#### Also open (not why the result is VIOLATED)")
    assert why_md < md.index(REFUTED[1]) < also_md
    assert also_md < md.index(f"- {OPEN}") < md.index("### All checks")
    assert f"- {OPEN}" not in md[why_md:also_md]
    page = render("html", report, replay)
    why_html = page[page.index('<section id="why"') : page.index('<section id="checks"')]
    parse(page).by_id("why-also-h")  # its id is the page's only one
    head = '<h3 id="why-also-h">Also open (not why the result is VIOLATED)</h3>'
    before, after = why_html.split(head)
    assert "context_only" in before and "j_cto~c_cto" not in before
    assert "j_cto~c_cto" in after and "is refuted" not in after


def test_junit_says_the_deciding_reasons_first_and_the_open_one_as_such(replay) -> None:
    report = check(replay, "z3")
    also = f"also open (not why VIOLATED): {OPEN}"
    message = f"VIOLATED: {REFUTED[0]}; {REFUTED[1]}; {also}"
    fresh = junit.case(ResultRecord.from_report(report, "open.json"))
    assert (fresh.kind, fresh.message) == ("failure", message)
    assert fresh.text.splitlines()[2:] == [
        *(f"- {m}" for m in REFUTED),
        "also open (not why VIOLATED):",
        f"- {OPEN}",
    ]
    # a line carried over by `--resume` gives the very case
    line = json.loads(json.dumps({"location": "open.json", **report.to_json()}))
    assert junit.case(ResultRecord.from_line(line)) == fresh
    checked = junit.case((report, replay))  # `unmask check --format junit`
    assert checked.message == message and checked.text == render("text", report, replay)


def test_a_report_with_only_open_checks_is_as_before() -> None:
    replay = load(EXAMPLES / "case_unknown.json")
    report = check(replay, "z3")
    assert report.overall == UNKNOWN and {r.code for r in report.reasons} == {"underdetermined"}
    text = render("text", report, replay)
    assert section(text, "why UNKNOWN:") == [f"- {r.message}" for r in report.reasons]
    assert not any(line.startswith("also ") for line in text.splitlines())
    assert html.context(report, replay)["also"] == []
    assert "Also " not in render("markdown", report, replay)
    case = junit.case(ResultRecord.from_report(report))
    assert case.message == "UNKNOWN: " + "; ".join(r.message for r in report.reasons)


def test_a_refuted_check_an_override_outweighs_is_not_why_unknown(replay) -> None:
    # a deadline (or a base not consistent) makes the report UNKNOWN even over VIOLATED
    violated = check(replay, "z3")
    report = replace(violated, overall=UNKNOWN, reasons=(PAST_DEADLINE, *violated.reasons))
    text = render("text", report, replay)
    assert section(text, "why UNKNOWN:") == [f"- {PAST_DEADLINE.message}", f"- {OPEN}"]
    assert section(text, "also refuted (not why UNKNOWN):") == [f"- {m}" for m in REFUTED]


def test_the_split_reads_codes_and_never_drops_a_reason() -> None:
    # messages that say the opposite of their codes: the code decides
    a = Reason("violated", "requirement:a", "requirement `a` is underdetermined")
    b = Reason("underdetermined", "requirement:b", "requirement `b` is refuted")
    gap = Reason("no-grounding", "replay", "the protocol has no grounding pairs")
    assert why(VIOLATED, (b, a, gap)) == ((a,), (b, gap))
    assert why(UNKNOWN, (b, a, gap)) == ((b, gap), (a,))
    # nothing would be left to say why: every reason says it
    assert why(VIOLATED, (b, gap)) == ((b, gap), ())
    assert why(UNKNOWN, (a,)) == ((a,), ())
    assert why("SATISFIED", ()) == ((), ())
