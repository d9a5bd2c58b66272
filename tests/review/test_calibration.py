"""Each reader's precision, measured and shown: the Wilson interval, the calibration file
(written canonically, read back as untrusted input), `unmask calibrate` over reviewed
replays, and `--calibration` on `check` (every format), `audit` (summary, index, pages,
JUnit, the `--fail-on` gate), `review` and the API. A reader calibrated at precision 0.5
makes its findings "to review" in every format; one at 0.98 over 100 readings makes them
"trusted"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from unmask.cli.main import main
from unmask.plumbing.diagnostics import UnmaskError
from unmask.review import calibration as cal

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RULE = {"kind": "rule", "name": "outside-knowledge/1", "reviewed": False}
MODEL = {"kind": "model", "name": "ctx-reader", "version": "p1"}
RULE_KEY = ("rule", "outside-knowledge/1", "", "external")
MODEL_KEY = ("model", "ctx-reader", "p1", "c_joined")


def run(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def _case_b() -> dict[str, Any]:
    return json.loads((EXAMPLES / "case_b.json").read_text())


def subject(doc_id: str, external: Any = RULE, c_joined: Any = None) -> dict[str, Any]:
    """Case B: `external` (the context_only finding) and `c_joined` (behind the passing
    grounding check) read by the given readers (None: a reviewed person's)."""
    doc = _case_b()
    doc["id"] = doc_id
    for a in doc["annotations"]:
        if a["atom"] == "external" and external is not None:
            a["by"] = external
        if a["atom"] == "c_joined" and c_joined is not None:
            a["by"] = c_joined
    return doc


def sampled(k: int, upheld: bool, reader: dict, atom: str = "external", **review: Any) -> dict:
    """A replay whose `atom` reading by `reader` was drawn, reviewed and applied as
    `unmask review --sample … --apply` writes it (docs/calibration.md)."""
    doc = _case_b()
    doc["id"] = f"s{k}"
    for a in doc["annotations"]:
        if a["atom"] != atom:
            continue
        original = {"value": a["value"], "by": reader, "evidence": a["evidence"]}
        stratum = {key: reader.get(key, "") for key in ("kind", "name", "version")}
        a["review"] = {
            "decision": "accept" if upheld else "reject",
            "original": original,
            "sample": {"seed": 7, "size": 10, "stratum": stratum, "blind": False},
            **review,
        }
        a["by"] = {"kind": "human", "name": "ana", "reviewed": True}
        if not upheld:
            a["value"] = "FALSE" if a["value"] == "TRUE" else "TRUE"
    return doc


def write_lines(path: Path, docs: list[dict]) -> None:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """b1, b2 (a rule's finding, a model's reading behind a passing check), and two
    calibrations of the rule: 5 of 10 upheld (`low.json`), 98 of 100 (`high.json`)."""
    shutil.copy(EXAMPLES / "factual_claims.proto", tmp_path)
    for name in ("b1", "b2"):
        (tmp_path / f"{name}.json").write_text(json.dumps(subject(name, c_joined=MODEL)))
    write_lines(tmp_path / "low.jsonl", [sampled(k, k < 5, RULE) for k in range(10)])
    write_lines(tmp_path / "high.jsonl", [sampled(k, k < 98, RULE) for k in range(100)])
    monkeypatch.chdir(tmp_path)
    for name in ("low", "high"):
        r = run("calibrate", f"{name}.jsonl", "--out", f"{name}.json", "--data", f"{name} set")
        assert r.exit_code == 0, r.output
    return tmp_path


# --- the interval and the file ----------------------------------------------------------


def test_wilson_interval_matches_the_published_figures() -> None:
    lo, hi = cal.wilson(37, 40)
    assert (round(lo, 3), round(hi, 3)) == (0.801, 0.974)
    lo, hi = cal.wilson(5, 10)
    assert (round(lo, 3), round(hi, 3)) == (0.237, 0.763)
    assert cal.wilson(10, 10)[1] == 1.0 and cal.wilson(0, 10)[0] == 0.0
    # more readings at the same precision narrow the interval from below
    assert cal.wilson(98, 100)[0] > cal.wilson(49, 50)[0]


def test_a_family_member_is_calibrated_by_its_family() -> None:
    assert cal.family("backs(p1, c2)") == "backs"
    assert cal.family("external") == "external"
    by = {"kind": "rule", "name": "r/2", "version": "3"}
    assert cal.reader_of(by, "cites(c1, p2)") == ("rule", "r/2", "3", "cites")
    assert cal.reader_of({"kind": "model"}, "x") == ("model", "", "", "x")


def test_the_file_is_canonical_and_reads_back(work: Path) -> None:
    doc = json.loads(Path("high.json").read_text())
    assert list(doc) == ["schema", "data", "protocols", "readers"]
    assert doc["data"] == "high set"
    (p,) = doc["protocols"]
    assert p["name"] == "factual_claims" and p["digest"].startswith("sha256:")
    assert doc["readers"] == [
        {
            "kind": "rule",
            "name": "outside-knowledge/1",
            "version": "",
            "family": "external",
            "reviewed": 100,
            "upheld": 98,
            "precision": 0.98,
            "interval": [0.93, 0.994],
            "level": 0.95,
        }
    ]
    read = cal.read("high.json")
    assert read.dumps() == Path("high.json").read_text()
    # the same reviews in another order, in two files: the same bytes
    lines = Path("high.jsonl").read_text().splitlines(keepends=True)
    Path("a.jsonl").write_text("".join(reversed(lines[:50])))
    Path("b.jsonl").write_text("".join(lines[50:]))
    r = run("calibrate", "b.jsonl", "a.jsonl", "--out", "again.json", "--data", "high set")
    assert r.exit_code == 0, r.output
    assert Path("again.json").read_bytes() == Path("high.json").read_bytes()


BAD_FILES = [
    ("[1]", "$", "expected a calibration object, found an array"),
    ('{"schema": "x"}', "schema", "not a calibration file"),
    ('{"schema": "unmask.calibration/1", "data": 3}', "data", "found a number"),
    (
        '{"schema": "unmask.calibration/1", "data": "d", "protocols": {}}',
        "protocols",
        "expected an array",
    ),
]


def _with_row(**change: Any) -> str:
    row = cal.Row(RULE_KEY, 10, 9).to_json()
    row.update(change)
    return json.dumps(
        {
            "schema": cal.SCHEMA,
            "data": "d",
            "protocols": [],
            "readers": [row, *change.pop("_more", [])],
        }
    )


BAD_ROWS = [
    (_with_row(precision=0.95), "readers[0].precision", "not what 9 upheld of 10 reviewed give"),
    (_with_row(interval=[0.8, 1.0]), "readers[0].interval", "not what 9 upheld"),
    (_with_row(upheld=11), "readers[0].upheld", "11 upheld of 10 reviewed"),
    (_with_row(reviewed=0), "readers[0].reviewed", "no reviewed reading"),
    (_with_row(reviewed=True), "readers[0].reviewed", "expected a count"),
    (_with_row(family=None), "readers[0].family", "expected a string"),
    (_with_row(level=0.9), "readers[0].level", "the interval's level"),
    # found by tests/fuzz/test_readers_fuzz.py: a count no float holds made the interval's
    # arithmetic raise OverflowError, an internal error; and one past 2^53 is rounded
    (_with_row(reviewed=10**400, upheld=10**400), "readers[0].reviewed", "at most 9,007,"),
    (_with_row(upheld=2**53 + 1, reviewed=2**53 + 1), "readers[0].reviewed", "a larger number"),
]


@pytest.mark.parametrize(("text", "path", "message"), BAD_FILES + BAD_ROWS)
def test_a_bad_calibration_file_is_one_diagnostic_and_exit_4(
    work: Path, text: str, path: str, message: str
) -> None:
    Path("bad.json").write_text(text)
    with pytest.raises(UnmaskError) as err:
        cal.read("bad.json")
    (d,) = err.value.diagnostics
    assert d.code == "calibration" and d.path == path and message in d.message
    assert d.file == "bad.json"
    for command in (("check", "b1.json"), ("audit", "b1.json", "--out", "r.jsonl")):
        r = run(*command, "--calibration", "bad.json")
        assert r.exit_code == 4, r.output
        assert r.output.count("error:") == 1 and "Traceback" not in r.output


def test_a_second_row_for_one_reader_is_refused(work: Path) -> None:
    row = cal.Row(RULE_KEY, 10, 9).to_json()
    Path("dup.json").write_text(
        json.dumps({"schema": cal.SCHEMA, "data": "d", "protocols": [], "readers": [row, row]})
    )
    with pytest.raises(UnmaskError) as err:
        cal.read("dup.json")
    assert err.value.diagnostics[0].path == "readers[1]"


def test_an_unreadable_or_oversized_calibration_file(work: Path) -> None:
    r = run("check", "b1.json", "--calibration", "missing.json")
    assert r.exit_code == 2 and "cannot read" in r.output
    Path("big.json").write_text(" " * 5000 + "{}")
    r = run("check", "b1.json", "--calibration", "big.json", "--max-file-bytes", "1000")
    assert r.exit_code == 4 and "limit" in r.output and "Traceback" not in r.output
    Path("deep.json").write_text("[" * 5000 + "]" * 5000)
    r = run("check", "b1.json", "--calibration", "deep.json")
    assert r.exit_code == 4 and r.output.count("error:") == 1


# --- counting sampled reviews ------------------------------------------------------------


def test_calibrate_counts_only_sampled_decided_reviews(work: Path) -> None:
    queue = sampled(50, True, RULE)  # a review of the ranked queue: no `sample`
    del queue["annotations"][4]["review"]["sample"]
    skipped = sampled(51, True, RULE, decision="skip")
    blind_right = sampled(52, True, MODEL, atom="c_joined", decision="answer")
    blind_wrong = sampled(53, False, MODEL, atom="c_joined", decision="answer")
    docs = [sampled(k, k < 3, RULE) for k in range(4)] + [queue, skipped, blind_right, blind_wrong]
    write_lines(Path("mixed.jsonl"), docs)
    r = run("calibrate", "mixed.jsonl", "--out", "mixed.json")
    assert r.exit_code == 0, r.output
    assert (
        "6 sampled reviews in 2 rows (one per reader and atom family), from 8 replays" in r.output
    )
    got = cal.read("mixed.json")
    assert got.data == "mixed.jsonl"
    assert [(row.reader, row.reviewed, row.upheld) for row in got.rows] == [
        (MODEL_KEY, 2, 1),
        (RULE_KEY, 4, 3),
    ]


def test_a_malformed_sampled_review_writes_nothing(work: Path) -> None:
    bad = sampled(1, True, RULE)
    bad["annotations"][4]["review"]["original"] = "TRUE"
    write_lines(Path("bad.jsonl"), [sampled(0, True, RULE), bad])
    r = run("calibrate", "bad.jsonl", "--out", "bad.json")
    assert r.exit_code == 4, r.output
    assert "annotations[4].review.original" in r.output and "bad.jsonl:2" in r.output
    assert not Path("bad.json").exists()


def test_a_reader_named_with_controls_is_written_under_the_output_policy(work: Path) -> None:
    """Found by tests/fuzz/test_readers_fuzz.py: the calibration file was written by
    `json.dumps` alone, so a reader's name with a lone surrogate ended `calibrate` in an
    internal error, and one with U+202E or U+009B was written raw. Now it is written as
    every JSON document is (``safe.finish``): escapes, and U+FFFD for the surrogate."""
    names = ["a\u202eb\x9b\x1b[2J", "c\ud800"]
    docs = [sampled(k, True, {**RULE, "name": n}) for k, n in enumerate(names)]
    write_lines(Path("odd.jsonl"), docs)
    r = run("calibrate", "odd.jsonl", "--out", "odd.json")
    assert r.exit_code == 0, r.output
    data = Path("odd.json").read_bytes().decode("utf-8")
    assert "\\u202e" in data and "\\u009b" in data and "\\u001b" in data
    assert not any(ch in data for ch in "\u202e\x9b\x1b")
    got = cal.read("odd.json")
    assert sorted(row.reader[1] for row in got.rows) == ["a\u202eb\x9b\x1b[2J", "c\ufffd"]


def test_calibrate_usage(work: Path) -> None:
    assert run("calibrate", "--out", "x.json").exit_code == 2
    assert run("calibrate", "nope", "--out", "x.json").exit_code == 2
    r = run("calibrate", "b1.json", "--out", "x.json")  # nothing sampled: an empty file
    assert r.exit_code == 0 and "no annotation has a sampled review" in r.output
    assert cal.read("x.json").rows == ()


# --- every format -------------------------------------------------------------------------


def _check(fmt: str, calibration: str | None, *more: str) -> str:
    args = ["check", "b1.json", "--format", fmt, *more]
    if calibration:
        args += ["--calibration", calibration]
    r = run(*args)
    assert r.exit_code == 1, r.output  # VIOLATED, whatever the calibration
    return r.output


def _sarif_findings(text: str) -> list[dict]:
    results = json.loads(text)["runs"][0]["results"]
    return [x for x in results if x["properties"].get("outcome") == "VIOLATED"]


@pytest.mark.parametrize(
    ("calibration", "level", "words", "sarif"),
    [
        ("low.json", "to_review", "to review", "warning"),
        ("high.json", "trusted", "trusted", "error"),
    ],
)
def test_a_readers_calibration_decides_its_findings_level_in_every_format(
    work: Path, calibration: str, level: str, words: str, sarif: str
) -> None:
    measure = "precision 0.500" if level == "to_review" else "precision 0.980"
    text = _check("text", calibration)
    assert f"provisional: rests on rule outside-knowledge/1, unreviewed; {words}: " in text
    assert measure in text
    report = json.loads(_check("json", calibration))
    trust = report["requirements"][0]["trust"]
    assert trust["level"] == level and trust["weakest"]["family"] == "external"
    assert report["calibration"]["data"] == calibration.replace(".json", " set")
    for fmt in ("html", "markdown"):
        page = _check(fmt, calibration)
        assert f"{words}: weakest reading rule outside-knowledge/1" in page, fmt
    (finding,) = _sarif_findings(_check("sarif", calibration))
    assert finding["level"] == sarif and finding["properties"]["trust"]["level"] == level
    junit = _check("junit", calibration)
    assert f'message="VIOLATED: {words} finding;' in junit


def test_without_a_calibration_every_format_is_as_it_was(work: Path) -> None:
    for fmt in ("text", "json", "html", "markdown", "sarif", "junit"):
        plain = _check(fmt, None)
        assert "trusted" not in plain and "to review" not in plain and "to_review" not in plain
        assert '"trust"' not in plain and "weighed by" not in plain
    (finding,) = _sarif_findings(_check("sarif", None))
    assert finding["level"] == "warning"  # provisional, as before


def test_a_passing_check_on_unreviewed_readings_shows_its_trust(work: Path) -> None:
    text = _check("text", "high.json")
    assert (
        "holds on unreviewed readings; to review: weakest reading model ctx-reader "
        "(version p1) on `c_joined`, unmeasured"
    ) in text
    report = json.loads(_check("json", "high.json"))
    passing, other = report["grounding"]
    assert passing["trust"] == {
        "level": "to_review",
        "weakest": {**dict(zip(cal.READER_KEYS, MODEL_KEY, strict=True)), "measured": False},
    }
    assert "trust" not in other and "trust" not in report["verdict"]  # reviewed readings only


def test_the_weakest_reading_decides() -> None:
    both = cal.make("d", [], {RULE_KEY: (100, 98), MODEL_KEY: (30, 30)})
    # 30 of 30 is a lower bound of 0.886, below 98 of 100's 0.930: the model is weakest
    standing = cal.Trust(both).standing([RULE_KEY, MODEL_KEY])
    assert standing.weakest == MODEL_KEY and standing.level == "to_review"
    assert standing.row is not None and standing.row.lower == 0.886
    looser = cal.Trust(both, 0.85).standing([RULE_KEY, MODEL_KEY])
    assert looser.level == "trusted" and looser.weakest == MODEL_KEY
    # an unmeasured reading makes any check to review, however good the others
    other = ("rule", "other", "", "x")
    got = cal.Trust(both, 0.5).standing([RULE_KEY, other])
    assert got.level == "to_review" and got.weakest == other and got.row is None
    assert "unmeasured" in got.words()
    assert cal.Trust(both).standing([]).level == "confirmed"


def test_the_trust_threshold_is_an_option(work: Path) -> None:
    text = _check("text", "low.json", "--trust", "0.2")
    assert "trusted: weakest reading rule outside-knowledge/1" in text
    assert run("check", "b1.json", "--calibration", "low.json", "--trust", "1.5").exit_code == 2


def test_a_calibration_of_another_protocol_is_named_and_warned_about(work: Path) -> None:
    doc = json.loads(Path("high.json").read_text())
    doc["protocols"] = [{"name": "factual_claims", "digest": "sha256:" + "0" * 64}]
    Path("other.json").write_text(json.dumps(doc))
    text = _check("text", "other.json")
    assert "warning: the calibration was measured under `factual_claims`, not under" in text
    report = json.loads(_check("json", "other.json"))
    assert report["calibration"]["protocol_differs"] is True
    assert json.loads(_check("json", "high.json"))["calibration"]["protocol_differs"] is False
    sarif = json.loads(_check("sarif", "other.json"))["runs"][0]["properties"]["calibration"]
    assert "measured under" in sarif["warning"]


# --- the audit ----------------------------------------------------------------------------


def _audit(calibration: str | None, *more: str) -> Any:
    args = ["audit", "b1.json", "b2.json", "--out", "r.jsonl", *more]
    if calibration:
        args += ["--calibration", calibration]
    return run(*args)


@pytest.mark.parametrize(
    ("calibration", "level", "words"),
    [("low.json", "to_review", "to review"), ("high.json", "trusted", "trusted")],
)
def test_the_audit_headline_separates_confirmed_trusted_and_to_review(
    work: Path, calibration: str, level: str, words: str
) -> None:
    r = _audit(calibration, "--summary-json", "s.json", "--html", "h", "--junit", "j.xml")
    assert r.exit_code == 0, r.output
    n = {"trusted": 2 if level == "trusted" else 0, "to_review": 2 if level == "to_review" else 0}
    assert (
        f"2 violated (0 confirmed, {n['trusted']} trusted, {n['to_review']} to review)" in r.output
    )
    found = json.loads(Path("s.json").read_text())["findings"]
    assert found["replays"] == {"confirmed": 0, "provisional": 2, **n}
    assert found["procedure"][level] == 2
    index = Path("h/index.html").read_text()
    assert f'<span class="trust">{words}</span>' in index
    assert f"violated, trusted: <strong>{n['trusted']}</strong>" in index
    page = next(p for p in Path("h").glob("b1-*.html"))
    assert f"{words}: weakest reading rule outside-knowledge/1" in page.read_text()
    assert f"VIOLATED: {words} finding;" in Path("j.xml").read_text()


def test_the_gate_fails_on_confirmed_and_trusted_findings_only(work: Path) -> None:
    assert _audit("low.json", "--fail-on", "trusted", "-q").exit_code == 0
    assert _audit("high.json", "--fail-on", "trusted", "-q").exit_code == 1
    assert _audit(None, "--fail-on", "confirmed", "-q").exit_code == 0
    assert _audit(None, "--fail-on", "violated", "-q").exit_code == 1
    r = _audit(None, "--fail-on", "trusted")
    assert r.exit_code == 2 and "`--fail-on trusted` needs `--calibration`" in r.output
    # a reviewed (confirmed) finding trips both
    doc = subject("b1", external=None)
    Path("b1.json").write_text(json.dumps(doc))
    assert _audit(None, "--fail-on", "confirmed", "-q").exit_code == 1
    assert _audit("low.json", "--fail-on", "trusted", "-q").exit_code == 1


def test_a_resumed_or_parallel_audit_weighs_the_same(work: Path) -> None:
    for k in range(3, 7):
        Path(f"b{k}.json").write_text(
            json.dumps(subject(f"b{k}", external=MODEL if k % 2 else RULE))
        )
    paths = [f"b{k}.json" for k in range(1, 7)]
    r = run(
        "audit",
        *paths,
        "--out",
        "full.jsonl",
        "--calibration",
        "high.json",
        "--summary-json",
        "a.json",
    )
    assert r.exit_code == 0, r.output
    whole = json.loads(Path("a.json").read_text())["findings"]
    assert whole["replays"]["trusted"] == 4 and whole["replays"]["to_review"] == 2
    lines = Path("full.jsonl").read_text().splitlines(keepends=True)
    Path("part.jsonl").write_text("".join(lines[:3]))
    r = run(
        "audit", *paths, "--out", "part.jsonl", "--resume",
        "--calibration", "high.json", "--summary-json", "b.json",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert json.loads(Path("b.json").read_text())["findings"] == whole
    r = run(
        "audit", *paths, "--out", "p.jsonl", "--jobs", "2",
        "--calibration", "high.json", "--summary-json", "c.json",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert json.loads(Path("c.json").read_text())["findings"] == whole
    # the result lines themselves never carry a calibration
    assert Path("p.jsonl").read_bytes() == Path("full.jsonl").read_bytes()
    plain = run("audit", *paths, "--out", "plain.jsonl", "-q")
    assert (
        plain.exit_code == 0 and Path("plain.jsonl").read_bytes() == Path("full.jsonl").read_bytes()
    )


def test_an_audit_names_protocols_the_calibration_was_not_measured_under(work: Path) -> None:
    doc = json.loads(Path("high.json").read_text())
    doc["protocols"] = [{"name": "rag_faithfulness", "digest": ""}]
    Path("other.json").write_text(json.dumps(doc))
    r = _audit("other.json", "--summary-json", "s.json")
    assert "warning: the calibration was not measured under protocol `factual_claims`" in r.output
    summary = json.loads(Path("s.json").read_text())
    assert summary["calibration"] == {
        "data": "high set",
        "trust": 0.9,
        "not_measured_under": ["factual_claims"],
    }
    r = _audit(None, "--summary-json", "plain.json")
    assert "calibration" not in json.loads(Path("plain.json").read_text())
    # the same name, another text: a replay just checked names its digest
    doc["protocols"] = [{"name": "factual_claims", "digest": "sha256:" + "0" * 64}]
    Path("other.json").write_text(json.dumps(doc))
    r = _audit("other.json", "--summary-json", "s.json")
    (named,) = json.loads(Path("s.json").read_text())["calibration"]["not_measured_under"]
    assert named.startswith("factual_claims (sha256:") and "0000000" not in named
    assert _audit("high.json", "--summary-json", "s.json").exit_code == 0
    assert json.loads(Path("s.json").read_text())["calibration"]["not_measured_under"] == []


# --- review and the API -------------------------------------------------------------------


def test_review_shows_each_readers_measure(work: Path) -> None:
    r = run("review", "b1.json", "--list", "--calibration", "low.json")
    assert r.exit_code == 0, r.output
    assert "by rule outside-knowledge/1, precision 0.500 (95% 0.237–0.763, 10 reviewed)" in r.output
    r = run("review", "b1.json", "--export", "x.jsonl", "--calibration", "low.json")
    assert r.exit_code == 0, r.output
    line = json.loads(Path("x.jsonl").read_text().splitlines()[0])
    assert line["measure"]["precision"] == 0.5 and line["measure"]["reviewed"] == 10
    asked = CliRunner().invoke(
        main,
        ["review", "b1.json", "--interactive", "--calibration", "low.json", "--reviewer", "ana"],
        input="q\n",
    )
    assert "precision 0.500 (95% 0.237–0.763, 10 reviewed)" in asked.output
    r = run("review", "b1.json", "--export", "y.jsonl")
    assert "measure" not in json.loads(Path("y.jsonl").read_text().splitlines()[0])


def test_the_api_weighs_a_report(work: Path) -> None:
    from unmask.api import check, load, load_calibration, weigh

    replay = load("b1.json")
    report = check(replay)
    got = weigh(report, replay, calibration=load_calibration("high.json"))
    assert set(got) == {"requirement:context_only", "grounding:j_joined~c_joined"}
    assert got["requirement:context_only"].level == "trusted"
    assert got["grounding:j_joined~c_joined"].level == "to_review"
    low = weigh(report, replay, calibration=load_calibration("low.json"), trust=0.2)
    assert low["requirement:context_only"].level == "trusted"


# --- the loop through the command line: sample → review → calibrate → audit -----------------


@pytest.mark.parametrize(
    ("blind", "upheld", "level"), [(True, 40, "trusted"), (False, 20, "to_review")]
)
def test_sample_review_calibrate_audit_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blind: bool, upheld: int, level: str
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(EXAMPLES / "factual_claims.proto", runs)
    for k in range(60):
        (runs / f"b{k:02}.json").write_text(json.dumps(subject(f"b{k:02}")))
    monkeypatch.chdir(tmp_path)
    draw = ["review", "runs", "--sample", "40", "--seed", "11", "--export", "s.jsonl"]
    r = run(*draw, *(["--blind"] if blind else []))
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in Path("s.jsonl").read_text().splitlines()]
    assert len(lines) == 40 and all(x["atom"] == "external" for x in lines)
    for i, x in enumerate(lines):
        keep = i < upheld
        if blind:  # the reviewer reads the sources, not the rule's value
            x.update(decision="answer", value="TRUE" if keep else "FALSE")
        else:
            x.update(decision="accept" if keep else "reject", value="" if keep else "FALSE")
        x["reviewer"] = "ana"
    write_lines(Path("s.jsonl"), lines)
    r = run("review", "--apply", "s.jsonl")
    assert r.exit_code == 0 and "applied 40 decisions" in r.output, r.output
    r = run("calibrate", "runs", "--out", "cal.json", "--data", "runs, sampled")
    assert r.exit_code == 0, r.output
    (row,) = cal.read("cal.json").rows
    assert (row.reader, row.reviewed, row.upheld) == (RULE_KEY, 40, upheld)
    r = run(
        "audit", "runs", "--out", "r.jsonl", "--calibration", "cal.json",
        "--summary-json", "s.json", "--fail-on", "trusted",
    )  # fmt: skip
    found = json.loads(Path("s.json").read_text())["findings"]["replays"]
    # the 40 reviewed: an upheld reading is a confirmed finding, a rejected one no finding;
    # the 20 never drawn rest on the rule alone, weighed by its measure
    assert found["confirmed"] == upheld
    assert found[level] == 20 and found["trusted" if level == "to_review" else "to_review"] == 0
    assert r.exit_code == 1  # confirmed findings trip the gate either way
    drawn = {x["location"] for x in lines}
    left = next(f"runs/b{k:02}.json" for k in range(60) if f"runs/b{k:02}.json" not in drawn)
    r = run("check", left, "--calibration", "cal.json")
    assert f"{cal.WORDS[level]}: weakest reading rule outside-knowledge/1" in r.output


def test_markdown_and_html_show_a_passing_checks_trust(work: Path) -> None:
    for fmt in ("markdown", "html"):
        page = _check(fmt, "high.json")
        assert "holds on unreviewed readings; to review: weakest reading model ctx-reader" in page


def test_which_readings_need_a_measure() -> None:
    assert cal.needs_measure(RULE) and cal.needs_measure(MODEL)
    assert not cal.needs_measure(None)  # a reviewed person's
    assert not cal.needs_measure({"kind": "human", "name": "ana"})
    assert not cal.needs_measure({"kind": "rule", "name": "r", "reviewed": True})
    # a restated gold label is no independent reading, reviewed or not
    assert cal.needs_measure({"kind": "gold"}) and cal.needs_measure(
        {"kind": "gold", "reviewed": True}
    )
    # a reading the checker counted but no explanation names is never measured
    assert cal.readers_of([], counted=True) == (cal.UNNAMED,)
    assert cal.Trust(cal.make("d", [], {})).standing([cal.UNNAMED]).level == "to_review"


@pytest.mark.parametrize(("calibration", "trusted"), [("high.json", 1), ("low.json", 0)])
def test_a_pass_on_unreviewed_readings_is_weighed_in_the_summary(
    work: Path, calibration: str, trusted: int
) -> None:
    """A wrong TRUE (here a FALSE `external`) can hide a break: a SATISFIED replay resting
    on the rule's reading is trusted only as far as the rule is."""
    doc = subject("p1")
    (ext,) = [a for a in doc["annotations"] if a["atom"] == "external"]
    ext["value"] = "FALSE"
    Path("p1.json").write_text(json.dumps(doc))
    r = run("audit", "p1.json", "b1.json", "--out", "r.jsonl", "--summary-json", "s.json",
            "--calibration", calibration)  # fmt: skip
    assert r.exit_code == 0, r.output
    satisfied = json.loads(Path("s.json").read_text())["satisfied"]
    assert satisfied == {
        "replays": 1,
        "unreviewed": 1,
        "trusted": trusted,
        "to_review": 1 - trusted,
    }
    assert f"({trusted} trusted, {1 - trusted} to review)" in r.output
    # read back from the lines, as --resume does, the same
    from unmask.checking.record import ResultRecord

    lines = [json.loads(x) for x in Path("r.jsonl").read_text().splitlines()]
    assert ResultRecord.from_line(lines[0]).passes == (RULE_KEY,)
    plain = run("audit", "p1.json", "--out", "r.jsonl", "--summary-json", "plain.json")
    assert plain.exit_code == 0
    assert "trusted" not in json.loads(Path("plain.json").read_text())["satisfied"]
