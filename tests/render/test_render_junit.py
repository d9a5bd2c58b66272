"""JUnit XML report: valid against the Jenkins/Surefire JUnit schema (vendored, see
tests/data/README.md), one test case per replay, failure = VIOLATED, skipped = UNKNOWN,
error = could not be checked, counts that add up, and text XML cannot carry kept readable."""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET
from pathlib import Path

import xmlschema
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from tests.render_cases import EXAMPLES, SCRIPT, example, hostile_replay
from unmask.api import check, load
from unmask.checking.record import ResultRecord
from unmask.cli.main import main
from unmask.render import junit
from unmask.render import text as text_render

XSD = Path(__file__).resolve().parents[1] / "data" / "junit-10.xsd"


@functools.cache
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(XSD))


def valid(xml: str) -> ET.Element:
    errors = list(schema().iter_errors(xml))
    assert not errors, [str(e)[:300] for e in errors[:3]]
    return ET.fromstring(xml.encode("utf-8"))


def test_the_schema_is_not_vacuous():
    # a testcase without its required name is refused
    bad = (
        '<testsuites><testsuite name="x" tests="1" failures="0" errors="0">'
        "<testcase/></testsuite></testsuites>"
    )
    assert list(schema().iter_errors(bad))


def test_single_report_is_one_failing_testcase():
    report, replay = example("case_c.json")
    root = valid(junit.render(report, replay))
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("1", "1", "0")
    (case,) = suite.findall("testcase")
    assert case.get("name") == "case-c"
    assert case.get("classname") == "unmask.factual_claims"
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "VIOLATED"
    assert "grounding `j_cto~c_cto` is refuted" in failure.get("message")
    assert failure.text.startswith("case-c: VIOLATED\n")


def test_batch_maps_satisfied_violated_unknown_and_invalid():
    items = [example(n) for n in ("case_a.json", "case_b.json", "case_unknown.json")]
    items.append(junit.Invalid("broken.json", "broken.json: $: error: missing `verdict`"))
    root = valid(junit.render_batch(items, name="nightly"))
    suite = root.find("testsuite")
    assert suite.get("name") == root.get("name") == "nightly"
    counts = {k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")}
    assert counts == {"tests": "4", "failures": "1", "errors": "1", "skipped": "1"}
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "1", "1")
    outcome = {}
    for case in suite.findall("testcase"):
        kids = [c.tag for c in case]
        outcome[case.get("name")] = kids
    assert outcome == {
        "case-a": ["system-out"],
        "case-b": ["failure"],
        "case-unknown": ["skipped"],
        "broken.json": ["error"],
    }
    skipped = suite.find("testcase[@name='case-unknown']/skipped")
    assert skipped.get("type") == "UNKNOWN"
    assert "underdetermined" in skipped.get("message")


def test_reports_without_replays_are_accepted():
    report, _ = example("case_b.json")
    root = valid(junit.render_batch([report]))
    assert root.find("testsuite/testcase/failure") is not None


def test_hostile_text_survives_as_text(tmp_path: Path):
    replay = load(hostile_replay(tmp_path))
    xml = junit.render(check(replay, "z3"), replay)
    root = valid(xml)
    case = root.find("testsuite/testcase")
    assert case.get("name") == 'case <b>c</b> & "x" `y` ]]>'
    body = case.find("failure").text
    # markup and `]]>` from the replay are plain text in the body
    assert body.startswith('case <b>c</b> & "x" `y` ]]>: VIOLATED')
    assert '"><img src=x onerror=alert(1)>' in body
    assert "<img" not in xml and "<b>" not in xml


@given(st.text(max_size=30) | st.sampled_from(["\x01]]>", SCRIPT + "\x00\ud800\ufffe"]))
def test_any_text_round_trips_through_xml_safe(raw: str):
    safe = junit.xml_safe(raw)
    item = junit.Invalid(raw, raw)
    root = valid(junit.render_batch([item], name=raw))
    case = root.find("testsuite/testcase")
    assert case.get("name") == safe
    # element text keeps \r only as a character reference; parsers normalise it in text
    assert (case.find("error").text or "") == safe.replace("\r\n", "\n").replace("\r", "\n")
    assert all(c in "\t\n\r" or ord(c) >= 0x20 for c in safe)
    assert not any(0xD800 <= ord(c) < 0xE000 or c in "\ufffe\uffff" for c in safe)


def test_same_bytes_every_run_and_no_time():
    report, replay = example("case_unknown.json")
    xml = junit.render(report, replay)
    assert xml == junit.render(report, replay)
    root = ET.fromstring(xml.encode("utf-8"))
    assert all(el.get("time") is None and el.get("timestamp") is None for el in root.iter())


def test_check_command_writes_junit():
    res = CliRunner().invoke(main, ["check", str(EXAMPLES / "case_a.json"), "--format", "junit"])
    assert res.exit_code == 0
    root = valid(res.stdout)
    assert root.find("testsuite").get("failures") == "0"


def test_streamed_suite_is_the_batch_document_byte_for_byte():
    import io

    items = [example(n) for n in ("case_a.json", "case_c.json", "case_unknown.json")]
    items.append(junit.Invalid("broken\x01.json", "missing `verdict` <failure "))
    suite, body = junit.Suite("nightly"), io.StringIO()
    for item in items:
        c = junit.case(item)
        suite.add(c)
        body.write(c.xml())
    body.seek(0)
    out = io.StringIO()
    suite.write(out, body)
    assert out.getvalue() == junit.render_batch(items, name="nightly")
    assert suite.counts == {"tests": 4, "failures": 1, "errors": 1, "skipped": 1}
    valid(out.getvalue())


def test_a_case_from_a_result_line_is_the_case_from_its_report():
    import json

    for name in ("case_a.json", "case_c.json", "case_unknown.json"):
        report, replay = example(name)
        fresh = junit.case(ResultRecord.from_report(report, name))
        line = json.loads(json.dumps({"location": name, **report.to_json()}))
        assert junit.case(ResultRecord.from_line(line)) == fresh  # the text too
        assert fresh.text.startswith(f"{name}: {report.overall}\ndimensions: verdict ")
        # `unmask check` gives the same case with its text report
        checked = junit.case((report, replay))
        assert checked.text == text_render.render(report, replay, color=False)
        assert (checked.name, checked.classname, checked.kind, checked.type, checked.message) == (
            fresh.name,
            fresh.classname,
            fresh.kind,
            fresh.type,
            fresh.message,
        )
    record = {
        "schema": "unmask.error/1",
        "location": "x.json",
        "errors": [{"code": "missing", "message": "m", "path": "$", "help": "h"}],
    }
    case = junit.case(ResultRecord.from_line(record))
    assert case == junit.case(junit.Invalid("x.json", "$: error: m\n  = help: h"))
