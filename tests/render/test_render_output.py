"""What ``unmask check`` writes on stdout, through a real process: any replay prints in every
format (lone surrogates, terminal escapes), an invalid replay still gives a valid SARIF or
JUnit document, and an HTML page grows linearly with deeply nested evidence spans."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from functools import lru_cache
from pathlib import Path

import jsonschema
import pytest
import xmlschema

from tests.conftest import found_files
from tests.render_cases import EXAMPLES
from unmask.api import check, load
from unmask.render import FORMATS, render
from unmask.render import text as text_render

DATA = Path(__file__).resolve().parents[1] / "data"
PROTO = EXAMPLES / "factual_claims.proto"


def unmask(*args: str) -> subprocess.CompletedProcess:
    """``unmask ARGS`` in a child process, stdout and stderr as bytes (a pipe, not a tty)."""
    code = "from unmask.cli.main import main; main()"
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, env=env, timeout=120
    )


def protocol_ir() -> dict:
    res = subprocess.run(
        [sys.executable, "-c", "from unmask.cli.unmaskc import main; main()", str(PROTO)],
        capture_output=True,
        check=True,
    )
    return json.loads(res.stdout)


def case_c(tmp_path: Path, name: str, edit) -> Path:
    """Case C with the protocol embedded, changed by ``edit(obj)``, written with ``\\u``
    escapes (so lone surrogates stay what JSON allows)."""
    obj = json.loads((EXAMPLES / "case_c.json").read_text(encoding="utf-8"))
    obj["protocol"] = protocol_ir()
    edit(obj)
    path = tmp_path / name
    path.write_text(json.dumps(obj, ensure_ascii=True), encoding="utf-8")
    return path


# --- lone surrogates ---------------------------------------------------------------------


def _surrogates(obj: dict) -> None:
    obj["id"] = "case \ud800 c"
    for atom in obj["protocol"]["atoms"]:
        atom["description"] += " \udfff"
    for ann in obj["annotations"]:
        ann["explanation"] = "note \ud800 here"
    # a quoted span that holds a lone surrogate itself: insert one inside the first quote
    old = obj["sources"]["rationale"]
    at = obj["annotations"][0]["evidence"][0]["start"] + 1
    new = obj["sources"]["rationale"] = old[:at] + "\udc00" + old[at:]
    for ann in obj["annotations"]:
        for ev in ann["evidence"]:
            if ev["source"] != "rationale" or ev["end"] <= at:
                continue
            if ev["start"] >= at:
                ev["start"] += 1
            ev["end"] += 1
            ev["quote"] = new[ev["start"] : ev["end"]]


@pytest.mark.parametrize("fmt", FORMATS)
def test_lone_surrogates_anywhere_print_in_every_format(tmp_path: Path, fmt: str) -> None:
    path = case_c(tmp_path, "surrogates.json", _surrogates)
    res = unmask("check", str(path), "--format", fmt)
    assert b"Traceback" not in res.stderr, res.stderr.decode(errors="replace")[-600:]
    assert res.returncode == 1, res.stderr.decode(errors="replace")  # case C is VIOLATED
    out = res.stdout.decode("utf-8")  # strict: the output is valid UTF-8
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in out)
    if fmt == "json":
        report = json.loads(out)
        assert report["replay"] == "case \ufffd c"
        notes = [
            p["explanation"]
            for g in report["grounding"]
            if g["explanation"]
            for p in g["explanation"]["parts"]
        ]
        assert "note \ufffd here" in notes
    if fmt == "text":
        # shown as diagnostics show it: an escape a reader can see
        assert out.startswith("case \\ud800 c: VIOLATED")
        assert "note: note \\ud800 here" in out


def test_the_one_output_policy_replaces_lone_surrogates_for_every_format() -> None:
    replay = load(EXAMPLES / "case_c.json")
    report = check(replay, "z3")
    bad = report.__class__(**{**_fields(report), "replay": "x \ud800"})
    for fmt in FORMATS:
        out = render(fmt, bad, replay)
        out.encode("utf-8")  # never raises
        assert "\ufffd" in out or "\\ud800" in out, fmt


def _fields(report) -> dict:
    return {f: getattr(report, f) for f in report.__slots__}


# --- terminal escapes --------------------------------------------------------------------

ESCAPES = "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b[8mhidden\x1b[0m\x9b31m\u202eevil\r"


def _escapes(obj: dict) -> None:
    obj["id"] = "case-c\x1b[2K"
    for atom in obj["protocol"]["atoms"]:
        atom["description"] = "desc " + ESCAPES
    for ann in obj["annotations"]:
        ann["explanation"] = "SATISFIED " + ESCAPES


def test_the_text_report_escapes_what_a_terminal_would_act_on(tmp_path: Path) -> None:
    path = case_c(tmp_path, "escapes.json", _escapes)
    res = unmask("check", str(path), "--format", "text")
    assert res.returncode == 1
    out = res.stdout.decode("utf-8")
    for ch in "\x1b\x07\x9b\u202e\r":
        assert ch not in out, repr(ch)
    assert out.startswith("case-c\\x1b[2K: VIOLATED\n")
    assert "\\x1b[2J\\x1b[H\\x1b]0;pwned\\x07\\x1b[8mhidden" in out
    assert "\\x9b31m\\u202eevil" in out


def test_colour_is_added_after_the_user_text_is_escaped(tmp_path: Path) -> None:
    replay = load(case_c(tmp_path, "escapes.json", _escapes))
    out = text_render.render(check(replay, "z3"), replay, color=True)
    # every escape character left is the start of a colour (SGR) sequence of click.style
    pieces = out.split("\x1b")[1:]
    assert pieces and all(
        p[:1] == "[" and p[1 : p.index("m")].replace(";", "").isdigit() for p in pieces
    )
    assert "\\x1b]0;pwned" in out


# --- an invalid replay in SARIF and JUnit -------------------------------------------------


def _invalid(obj: dict) -> None:
    obj["annotations"][0]["evidence"][0]["quote"] = "not what the rationale says"
    obj["verdict"] = "MAYBE"


@lru_cache(maxsize=1)
def sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema)


def test_sarif_records_an_invalid_replay(tmp_path: Path) -> None:
    path = case_c(tmp_path, "bad.json", _invalid)
    res = unmask("check", str(path), "--format", "sarif")
    assert res.returncode == 4
    assert b"error" in res.stderr
    log = json.loads(res.stdout)
    sarif_validator().validate(log)
    (run,) = log["runs"]
    assert run["results"] == []
    (inv,) = run["invocations"]
    assert inv["executionSuccessful"] is False and inv["exitCode"] == 4
    notes = inv["toolExecutionNotifications"]
    assert len(notes) >= 2 and all(n["level"] == "error" for n in notes)
    paths = {
        loc["logicalLocations"][0]["fullyQualifiedName"]
        for n in notes
        for loc in n.get("locations", ())
        if "logicalLocations" in loc
    }
    assert any("verdict" in p for p in paths) and any("quote" in p for p in paths)
    assert run["artifacts"] == [
        {"location": {"uri": path.as_posix().lstrip("/") if False else path.as_posix()}}
    ]


def test_sarif_and_junit_record_a_replay_that_cannot_be_read(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.json")
    log = json.loads(unmask("check", missing, "--format", "sarif").stdout)
    sarif_validator().validate(log)
    assert log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    res = unmask("check", missing, "--format", "junit")
    assert res.returncode == 4
    xmlschema.XMLSchema(str(DATA / "junit-10.xsd")).validate(res.stdout.decode())


def test_junit_records_an_invalid_replay_as_an_errored_testcase(tmp_path: Path) -> None:
    path = case_c(tmp_path, "bad.json", _invalid)
    res = unmask("check", str(path), "--format", "junit")
    assert res.returncode == 4
    text = res.stdout.decode("utf-8")
    xmlschema.XMLSchema(str(DATA / "junit-10.xsd")).validate(text)
    root = ET.fromstring(text)
    assert root.attrib["errors"] == "1" and root.attrib["tests"] == "1"
    (case,) = root.iter("testcase")
    assert case.attrib["name"] == str(path)
    err = case.find("error")
    assert err is not None and err.attrib["type"] == "invalid"
    # the element text is what stderr says
    assert err.text.strip() == res.stderr.decode("utf-8").strip()


@pytest.mark.parametrize("fmt", ["text", "json", "html", "markdown"])
def test_other_formats_write_nothing_for_an_invalid_replay(tmp_path: Path, fmt: str) -> None:
    res = unmask("check", str(case_c(tmp_path, "bad.json", _invalid)), "--format", fmt)
    assert res.returncode == 4 and res.stdout == b"" and res.stderr


# --- nested evidence spans: the HTML page stays linear -----------------------------------


def nested_replay(tmp_path: Path, n: int) -> Path:
    """Case C whose context holds ``n`` nested evidence spans of one annotation with a
    long note (each span's quote is the one inside it plus a character on each side)."""
    for proto in found_files(EXAMPLES.glob("*.proto")):
        shutil.copy(proto, tmp_path / proto.name)
    obj = json.loads((EXAMPLES / "case_c.json").read_text(encoding="utf-8"))
    text = "ab" * n
    obj["sources"]["context"] = text
    for ann in obj["annotations"]:
        if ann["atom"] == "c_joined":
            ann["evidence"] = [
                {"source": "context", "start": i, "end": 2 * n - i, "quote": text[i : 2 * n - i]}
                for i in range(n)
            ]
            ann["explanation"] = "a long annotator's note " * 20
        else:
            for ev in ann["evidence"]:
                if ev["source"] == "context":
                    ev.update(start=0, end=1, quote=text[:1])
    path = tmp_path / f"nested-{n}.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def test_html_for_nested_spans_grows_linearly_with_the_replay(tmp_path: Path) -> None:
    sizes = {}
    for n in (60, 240):
        path = nested_replay(tmp_path, n)
        res = unmask("check", str(path), "--format", "html")
        assert res.returncode == 1, res.stderr
        sizes[n] = (path.stat().st_size, len(res.stdout))
        page = res.stdout.decode("utf-8")
        assert page.count('<mark class="ev') >= 2 * n - 1
        assert f"and {n - 3} more spans (see the annotations)" in page
    (in1, out1), (in2, out2) = sizes[60], sizes[240]
    # what the bigger replay adds to the page is bounded by a fixed multiple of what it
    # adds to the input (about 8.5 here; it was 534 when every <mark> repeated every note
    # over it, and grows with the note's length and n)
    assert out2 - out1 <= 12 * (in2 - in1), sizes
    assert out2 <= 12 * in2 + 100_000, sizes  # the styles and scripts of any page


# --- one shape for every format ------------------------------------------------------------


def test_every_format_takes_the_same_arguments() -> None:
    replay = load(EXAMPLES / "case_a.json")
    report = check(replay, "z3")
    for fmt in FORMATS:
        module = importlib.import_module(f"unmask.render.{fmt}")
        params = list(inspect.signature(module.render).parameters.values())
        assert [p.name for p in params[:2]] == ["report", "replay"], fmt
        assert params[1].default is None, fmt
        assert all(p.kind == p.KEYWORD_ONLY for p in params[2:]), fmt
        assert module.render(report) and module.render(report, replay), fmt


def test_formats_share_one_rules_table_and_one_dimension_order() -> None:
    from unmask.checking.report import DIMENSIONS
    from unmask.render import html, sarif, view

    replay = load(EXAMPLES / "case_c.json")
    report = check(replay, "z3")
    log = sarif.to_json(report, replay)
    driver = log["runs"][0]["tool"]["driver"]
    assert [r["id"] for r in driver["rules"]] == [r.id for r in view.RULES.values()]
    results = log["runs"][0]["results"]
    assert results, "case C has violations: a SARIF result each"
    for res in results:
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
    assert {c.rule for c in view.checks(report)} <= {r.id for r in view.RULES.values()}
    assert [d["key"] for d in html.context(report, replay)["dimensions"]] == list(DIMENSIONS)
    assert tuple(report.dimensions.to_json()) == DIMENSIONS


def test_formats_never_import_the_package_face() -> None:
    root = Path(__file__).resolve().parents[2] / "unmask" / "render"
    paths = sorted(root.glob("*.py"))
    assert len(paths) >= 8, "the formats moved: this test would check nothing"
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.module != "unmask", path.name
                assert not (node.module or "").startswith(("unmask.cli", "unmask.commands"))
            if isinstance(node, ast.Import):
                assert all(a.name != "unmask" for a in node.names), path.name


def test_the_sarif_version_is_the_installed_distributions() -> None:
    from importlib import metadata

    from unmask.render import sarif

    replay = load(EXAMPLES / "case_a.json")
    driver = sarif.to_json(check(replay, "z3"), replay)["runs"][0]["tool"]["driver"]
    assert driver["version"] == driver["semanticVersion"] == metadata.version("unmask")


def test_the_text_report_reads_in_the_docs_as_the_command_prints_it() -> None:
    # docs/reports.md, "Reading the text report": case C's report, shown whole
    import re

    doc = (EXAMPLES.parent / "docs" / "reports.md").read_text(encoding="utf-8")
    section = doc.split("## Reading the text report", 1)[1]
    shown = re.search(r"```\n(.*?)```", section, re.S).group(1)
    report = check(load(EXAMPLES / "case_c.json"), "z3")
    replay = load(EXAMPLES / "case_c.json")
    assert shown == text_render.render(report, replay)
    # every word the walk-through explains is in the report it walks through
    for word in ("bases: proto", "rests on:", "refuted by", "confirmed: rests on", "why VIOLATED"):
        assert word in shown and word.split(":")[0] in section.split("```", 2)[2]
