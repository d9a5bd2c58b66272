"""`unmask check|audit --protocol FILE`: old replays re-checked against a new protocol version.

Atoms are matched by name: an atom the new version adds is unannotated, an annotation for one
it drops is left out and reported (never silently), a label it does not declare is an error
of that replay alone. Re-checking against the replays' own protocol changes nothing but the
`recheck` record; `--jobs` workers get the protocol, and a resumed run never mixes two.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.backends import create
from unmask.checking import outcomes
from unmask.cli.main import main
from unmask.ir.json import protocol_to_json
from unmask.language.compiler import compile_source
from unmask.replay.builder import ReplayBuilder
from unmask.replay.load import load_replay
from unmask.replay.recheck import load_protocol_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FACTUAL = (EXAMPLES / "factual_claims.proto").read_text(encoding="utf-8")
GRADED = (EXAMPLES / "graded_fact.proto").read_text(encoding="utf-8")
CASES = ("case_a", "case_b", "case_c", "case_d")
# v2 of factual_claims: `external` is gone, `hedged` is new
DROPS_EXTERNAL = FACTUAL.replace(
    'atom external : procedure "The judge consulted outside knowledge"',
    'atom hedged   : procedure "The judge hedged"',
).replace("holds: not external", "holds: not hedged")
ADDS_HEDGED = FACTUAL.replace(
    'atom external : procedure "The judge consulted outside knowledge"',
    'atom external : procedure "The judge consulted outside knowledge"\n'
    'atom hedged   : procedure "The judge hedged"',
)
RENAMES_C = GRADED.replace("verdict C | P | I", "verdict A | P | I").replace(
    "decision C iff", "decision A iff"
)


def cli(*args: str, input: str | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), input=input)


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    d = tmp_path / "cases"
    d.mkdir()
    for name in CASES:
        shutil.copy(EXAMPLES / f"{name}.json", d)
    for name in ("factual_claims.proto", "graded_fact.proto"):
        shutil.copy(EXAMPLES / name, d)
    return d


def _json(result) -> dict:  # type: ignore[no-untyped-def]
    return json.loads(result.stdout)


# --- `unmask check --protocol` -------------------------------------------------------------


def test_the_same_protocol_gives_the_same_report_but_the_recheck_record(cases: Path) -> None:
    for name in CASES:
        replay = str(cases / f"{name}.json")
        own = cli("check", replay, "--format", "json")
        again = cli(
            "check",
            replay,
            "--format",
            "json",
            "--protocol",
            str(EXAMPLES / "factual_claims.proto"),
        )
        assert again.exit_code == own.exit_code
        report = _json(again)
        digest = load_protocol_file(str(EXAMPLES / "factual_claims.proto")).digest
        assert report.pop("recheck") == {
            "protocol": "factual_claims",
            "digest": digest,
            "dropped": [],
        }
        assert report == _json(own)
        assert again.stderr == own.stderr  # no warning either


def test_the_same_protocol_as_ir_json_gives_the_same_report(cases: Path, tmp_path: Path) -> None:
    ir = protocol_to_json(compile_source(FACTUAL, "factual_claims.proto"))
    path = write(tmp_path, "factual_claims.json", json.dumps(ir))
    replay = str(cases / "case_d.json")
    report = _json(cli("check", replay, "--format", "json", "--protocol", str(path)))
    assert report.pop("recheck")["digest"].startswith("sha256:")
    assert report == _json(cli("check", replay, "--format", "json"))


def test_an_atom_the_new_version_adds_is_unannotated(cases: Path, tmp_path: Path) -> None:
    path = write(tmp_path, "v2.proto", ADDS_HEDGED)
    result = cli("check", str(cases / "case_a.json"), "--format", "json", "--protocol", str(path))
    report = _json(result)
    assert report["unannotated"] == ["hedged"]
    assert report["recheck"]["dropped"] == []
    assert "warning" not in result.stderr


def test_an_annotation_for_an_atom_the_new_version_lacks_is_reported(
    cases: Path, tmp_path: Path
) -> None:
    path = write(tmp_path, "v2.proto", DROPS_EXTERNAL)
    replay = str(cases / "case_b.json")  # VIOLATED through `external` under its own protocol
    result = cli("check", replay, "--format", "json", "--protocol", str(path))
    report = _json(result)
    assert report["recheck"]["dropped"] == ["external"]
    assert report["unannotated"] == ["hedged"]
    assert "external" not in json.dumps(report["requirements"])
    assert "annotations[4].atom: warning: atom `external` is not in the protocol" in result.stderr
    assert result.exit_code == 3  # `no_hedge` is open now, and nothing is violated
    text = cli("check", replay, "--protocol", str(path)).stdout
    assert "left out, annotated atoms the protocol lacks: `external`" in text
    assert "re-checked against `--protocol` (sha256:" in text


def test_a_label_the_new_version_does_not_declare_is_an_error(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "graded_fact.proto", tmp_path)
    replay = json.loads((EXAMPLES / "graded_fact_satisfied.json").read_text(encoding="utf-8"))
    replay["verdict"] = replay["gold"] = "C"
    write(tmp_path, "c.json", json.dumps(replay))
    path = write(tmp_path, "v2.proto", RENAMES_C)
    result = cli("check", str(tmp_path / "c.json"), "--protocol", str(path))
    assert result.exit_code == 4
    assert (
        "c.json: verdict: error: the verdict `C` is not a label of protocol `graded_fact`, "
        "the protocol of `--protocol`: expected one of `A`, `P`, `I`" in result.stderr
    )
    assert "gold: error: the gold label `C` is not a label" in result.stderr
    assert "unmask compare OLD NEW" in result.stderr


def test_free_domains_take_the_replays_members(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "graded_fact.proto", tmp_path)
    shutil.copy(EXAMPLES / "graded_fact_refuted.json", tmp_path)
    replay = str(tmp_path / "graded_fact_refuted.json")
    # v2: every fact must also be cited; `has(place)` and `has(year)` stay annotated
    v2 = write(
        tmp_path,
        "v2.proto",
        GRADED.replace(
            'atom grade_last   : procedure "The response ends with the grade line"',
            'atom grade_last   : procedure "The response ends with the grade line"\n'
            'atom cited(fact)  : procedure "The grader cites expert fact {fact}"',
        ),
    )
    report = _json(cli("check", replay, "--format", "json", "--protocol", str(v2)))
    assert report["unannotated"] == ["cited(place)", "cited(year)"]
    assert report["recheck"]["dropped"] == []
    # a version without the family: the domain is ignored and its annotations reported
    flat = GRADED.replace("domain fact\n", "").replace("(fact)", "_any")
    flat = flat.replace("all(has(f) for f in fact)", "has_any").replace(
        "any(has(f) for f in fact)", "has_any"
    )
    flat = flat.replace("for f in fact: ground has(f) ~ in_sub(f)", "ground has_any ~ in_sub_any")
    v3 = write(tmp_path, "v3.proto", flat)
    result = cli("check", replay, "--format", "json", "--protocol", str(v3))
    assert result.exit_code in (0, 1, 3), result.stderr
    assert _json(result)["recheck"]["dropped"] == [
        "has(place)",
        "has(year)",
        "in_sub(place)",
        "in_sub(year)",
    ]
    assert "domains.fact: warning: domain `fact` is ignored" in result.stderr


def test_a_replay_the_builder_embedded_is_rechecked_without_rebuilding(tmp_path: Path) -> None:
    src = EXAMPLES / "factual_claims.proto"
    case = json.loads((EXAMPLES / "case_b.json").read_text(encoding="utf-8"))
    b = ReplayBuilder(src, sources=case["sources"], verdict="FAIL", id="built")
    for a in case["annotations"]:
        e = a["evidence"][0]
        b.annotate(a["atom"], a["value"], quote=e["quote"], source=e["source"])
    built = b.build()
    assert "source" in built["protocol"]  # the old version travels inside the replay
    path = write(tmp_path, "built.json", json.dumps(built))
    v2 = write(tmp_path, "v2.proto", DROPS_EXTERNAL)
    report = _json(cli("check", str(path), "--format", "json", "--protocol", str(v2)))
    assert report["recheck"]["dropped"] == ["external"]
    assert report["unannotated"] == ["hedged"]


def test_a_protocol_file_that_is_not_valid_is_exit_4_and_one_that_is_missing_exit_2(
    cases: Path, tmp_path: Path
) -> None:
    bad = write(tmp_path, "bad.proto", FACTUAL.replace("decision pass iff", "decision pass if"))
    result = cli("check", str(cases / "case_a.json"), "--protocol", str(bad))
    assert result.exit_code == 4
    assert "bad.proto:" in result.stderr and "Traceback" not in result.stderr
    result = cli("check", str(cases / "case_a.json"), "--protocol", str(tmp_path / "no.proto"))
    assert result.exit_code == 2
    assert "no.proto" in result.stderr
    result = cli("audit", str(cases), "--protocol", str(bad), "--quiet")
    assert result.exit_code == 4 and result.stdout == ""


def test_two_protocols_never_share_a_remembered_report(cases: Path, tmp_path: Path) -> None:
    """Same name, same atoms, same fact pattern: only the decision differs."""
    loose = write(
        tmp_path, "loose.proto", FACTUAL.replace("pass iff j_joined and j_cto", "pass iff j_joined")
    )
    backend = create("z3")
    outcomes._MEMO.clear()
    replay = str(cases / "case_b.json")  # FAIL, with j_joined TRUE and j_cto FALSE
    own = outcomes.check_replay(load_replay(replay), backend)
    other = outcomes.check_replay(
        load_replay(replay, protocol=load_protocol_file(str(loose))), backend
    )
    assert own.verdict.result.status == "ENTAILED"
    assert other.verdict.result.status == "REFUTED"
    assert outcomes.check_replay(load_replay(replay), backend).verdict == own.verdict


# --- `unmask audit --protocol` -------------------------------------------------------------


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_audit_reports_left_out_annotations_in_every_line_and_the_summary(
    cases: Path, tmp_path: Path
) -> None:
    v2 = write(tmp_path, "v2.proto", DROPS_EXTERNAL)
    out, summary, html = tmp_path / "r.jsonl", tmp_path / "s.json", tmp_path / "html"
    result = cli(
        "audit",
        str(cases),
        "--protocol",
        str(v2),
        "--out",
        str(out),
        "--summary-json",
        str(summary),
        "--html",
        str(html),
    )
    assert result.exit_code == 0, result.stderr
    index = (html / "index.html").read_text(encoding="utf-8")
    assert "re-checked against" in index and "4 replays: external 4" in index
    lines = _lines(out)
    assert [x["recheck"]["dropped"] for x in lines] == [["external"]] * 4
    s = json.loads(summary.read_text(encoding="utf-8"))
    digest = load_protocol_file(str(v2)).digest
    assert s["recheck"] == {
        "protocols": [{"protocol": "factual_claims", "digest": digest, "replays": 4}],
        "dropped": {"replays": 4, "atoms": {"external": 4}},
    }
    assert (
        f"re-checked against --protocol `factual_claims` ({digest[:19]}), 4 replays"
        in result.stderr
    )
    assert (
        "annotations left out, for atoms the protocol lacks, in 4 replays: `external` 4"
        in result.stderr
    )
    # a run without --protocol says nothing of it
    plain = cli("audit", str(cases), "--out", str(out), "--summary-json", str(summary))
    assert "recheck" not in json.loads(summary.read_text(encoding="utf-8"))
    assert "re-checked" not in plain.stderr


def test_audit_keeps_going_past_a_replay_whose_label_the_new_version_lacks(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "graded_fact.proto", tmp_path)
    good = json.loads((EXAMPLES / "graded_fact_satisfied.json").read_text(encoding="utf-8"))
    bad = dict(good, id="old-label", verdict="C", gold="C")
    src = write(tmp_path, "in.jsonl", json.dumps(bad) + "\n" + json.dumps(good) + "\n")
    v2 = write(tmp_path, "v2.proto", RENAMES_C)
    out = tmp_path / "r.jsonl"
    result = cli("audit", str(src), "--protocol", str(v2), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    first, second = _lines(out)
    assert first["schema"] == "unmask.error/1"
    assert [e["code"] for e in first["errors"]] == ["verdict", "gold"]
    assert first["recheck"]["protocol"] == "graded_fact"
    assert second["schema"] == "unmask.result/2" and second["overall"] == "SATISFIED"
    gated = cli("audit", str(src), "--protocol", str(v2), "--out", str(out), "--fail-on", "unknown")
    assert gated.exit_code == 3
    alone = write(tmp_path, "alone.jsonl", json.dumps(bad) + "\n")
    assert cli("audit", str(alone), "--protocol", str(v2), "--quiet").exit_code == 4


def test_jobs_2_workers_check_against_the_given_protocol(cases: Path, tmp_path: Path) -> None:
    v2 = write(tmp_path, "v2.proto", DROPS_EXTERNAL)
    src = tmp_path / "in.jsonl"
    with src.open("w", encoding="utf-8") as fh:
        for i in range(12):
            obj = json.loads((cases / f"{CASES[i % 4]}.json").read_text(encoding="utf-8"))
            obj["protocol"] = {"source": FACTUAL}  # the old version, embedded
            obj["id"] = f"r{i}"
            fh.write(json.dumps(obj) + "\n")
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    for out, jobs in ((one, "1"), (two, "2")):
        result = cli(
            "audit", str(src), "--protocol", str(v2), "--out", str(out), "--jobs", jobs, "--quiet"
        )
        assert result.exit_code == 0, result.stderr
    assert two.read_bytes() == one.read_bytes()
    assert all(x["recheck"]["dropped"] == ["external"] for x in _lines(two))
    assert all(x["unannotated"] == ["hedged"] for x in _lines(two))


def test_a_resumed_audit_never_mixes_protocols(cases: Path, tmp_path: Path) -> None:
    v2 = write(tmp_path, "v2.proto", DROPS_EXTERNAL)
    v3 = write(tmp_path, "v3.proto", ADDS_HEDGED)
    out = tmp_path / "r.jsonl"
    assert (
        cli("audit", str(cases / "case_a.json"), "--protocol", str(v2), "--out", str(out)).exit_code
        == 0
    )
    before = out.read_bytes()
    for other in ((), ("--protocol", str(v3))):
        result = cli("audit", str(cases), *other, "--out", str(out), "--resume", "--quiet")
        assert result.exit_code == 2
        assert "line 1 was checked against protocol `factual_claims` (sha256:" in result.stderr
        assert "resume with the `--protocol` of the run that wrote the file" in result.stderr
        assert out.read_bytes() == before
    # the same protocol resumes; the whole file is what one run writes
    result = cli(
        "audit", str(cases), "--protocol", str(v2), "--out", str(out), "--resume", "--quiet"
    )
    assert result.exit_code == 0, result.stderr
    whole = tmp_path / "whole.jsonl"
    cli("audit", str(cases), "--protocol", str(v2), "--out", str(whole), "--quiet")
    assert out.read_bytes() == whole.read_bytes()
    # and results of the replays' own protocols do not take a --protocol run
    own = tmp_path / "own.jsonl"
    cli("audit", str(cases / "case_a.json"), "--out", str(own), "--quiet")
    result = cli("audit", str(cases), "--protocol", str(v2), "--out", str(own), "--resume")
    assert result.exit_code == 2
    assert "line 1 was checked against each replay's own protocol" in result.stderr


def test_a_resumed_error_record_keeps_its_protocol(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "graded_fact.proto", tmp_path)
    good = json.loads((EXAMPLES / "graded_fact_satisfied.json").read_text(encoding="utf-8"))
    src = write(tmp_path, "in.jsonl", json.dumps(dict(good, verdict="C", gold="C")) + "\n")
    v2 = write(tmp_path, "v2.proto", RENAMES_C)
    out = tmp_path / "r.jsonl"
    cli("audit", str(src), "--protocol", str(v2), "--out", str(out), "--quiet")
    assert cli("audit", str(src), "--out", str(out), "--resume", "--quiet").exit_code == 2
    assert (
        cli("audit", str(src), "--protocol", str(v2), "--out", str(out), "--resume").exit_code == 4
    )


def test_every_format_says_what_was_checked_against_and_left_out(
    cases: Path, tmp_path: Path
) -> None:
    v2 = str(write(tmp_path, "v2.proto", DROPS_EXTERNAL))
    replay = str(cases / "case_b.json")
    digest = load_protocol_file(v2).digest[:19]
    for fmt in ("text", "markdown", "html"):
        out = cli("check", replay, "--format", fmt, "--protocol", v2).stdout
        assert "re-checked against" in out and digest in out, fmt
        assert "left out, annotated atoms the protocol lacks:" in out, fmt
        own = cli("check", replay, "--format", fmt).stdout
        assert "re-checked" not in own and "left out" not in own
    # against the replay's own protocol, the text report gains that one line and no other
    same = str(EXAMPLES / "factual_claims.proto")
    lines = cli("check", replay, "--protocol", same).stdout.splitlines()
    own = cli("check", replay).stdout.splitlines()
    assert [x for x in lines if "re-checked against" not in x] == own
    assert len(lines) == len(own) + 1


def test_a_result_line_gives_back_the_record_of_its_report(cases: Path, tmp_path: Path) -> None:
    from unmask.batch import task as batch_task
    from unmask.checking.record import ResultRecord
    from unmask.replay import inputs

    v2 = load_protocol_file(str(write(tmp_path, "v2.proto", DROPS_EXTERNAL)))
    settings = batch_task.Settings("z3", 60_000, protocol=v2)
    for task in inputs.iter_tasks([str(cases)]):
        result = batch_task.audit_task(task, settings)
        assert result.record.recheck == ("factual_claims", v2.digest, ("external",))
        assert ResultRecord.from_line(json.loads(result.line)) == result.record


def test_a_replay_that_carries_its_protocol_can_give_it(cases: Path, tmp_path: Path) -> None:
    """As `unmask analyze` takes a replay's embedded IR; `.proto` text inline works too."""
    case = json.loads((cases / "case_b.json").read_text(encoding="utf-8"))
    ir = protocol_to_json(compile_source(DROPS_EXTERNAL, "v2.proto"))
    digests = set()
    for form in ({"source": DROPS_EXTERNAL}, ir):
        carrier = write(tmp_path, "carrier.json", json.dumps(dict(case, protocol=form)))
        result = cli(
            "check", str(cases / "case_a.json"), "--format", "json", "--protocol", str(carrier)
        )
        recheck = _json(result)["recheck"]
        assert recheck["dropped"] == ["external"]
        digests.add(recheck["digest"])
    v2 = write(tmp_path, "v2.proto", DROPS_EXTERNAL)
    assert load_protocol_file(str(v2)).digest in digests  # the same text, the same digest
    result = cli("check", str(cases / "case_a.json"), "--protocol", str(cases / "case_b.json"))
    assert result.exit_code == 4
    assert "protocol.path: error: this replay names its protocol by path" in result.stderr


def test_next_reads_a_rechecked_result_only_against_its_protocol(
    cases: Path, tmp_path: Path
) -> None:
    v2 = write(tmp_path, "v2.proto", DROPS_EXTERNAL)
    out = tmp_path / "r.jsonl"
    cli("audit", str(cases / "case_b.json"), "--protocol", str(v2), "--out", str(out), "--quiet")
    answered = cli("next", str(out), "--protocol", str(v2), "--format", "json")
    assert answered.exit_code == 1, answered.stderr  # `hedged` is open under v2
    assert [t["atom"] for t in _json(answered)["todo"]] == ["hedged"]
    alone = cli("next", str(cases / "case_b.json"), "--protocol", str(v2), "--format", "json")
    assert [t["atom"] for t in _json(alone)["todo"]] == ["hedged"]
    for other in ((), ("--protocol", str(EXAMPLES / "factual_claims.proto"))):
        refused = cli("next", str(out), *other)
        assert refused.exit_code == 4
        assert "this result was" in refused.stderr and "--protocol" in refused.stderr


def test_validate_reads_replays_against_the_given_protocol(cases: Path, tmp_path: Path) -> None:
    v2 = write(tmp_path, "v2.proto", DROPS_EXTERNAL)
    one = cli("validate", str(cases / "case_b.json"), "--protocol", str(v2))
    assert one.exit_code == 0, one.stderr
    assert one.stdout == "case-b: valid (5 atoms, 4 annotations, 1 unannotated, 1 left out)\n"
    assert "warning: atom `external` is not in the protocol" in one.stderr
    shutil.copy(EXAMPLES / "graded_fact.proto", cases)
    shutil.copy(EXAMPLES / "graded_fact_satisfied.json", cases)
    renamed = write(tmp_path, "v3.proto", RENAMES_C)
    many = cli("validate", str(cases), "--protocol", str(renamed))
    assert many.exit_code == 4  # the factual cases' PASS and FAIL are not labels of v3
    assert "graded_fact_satisfied.json: graded-fact-satisfied: valid" in many.stdout
    assert "validated 5 replays: 1 valid, 4 invalid" in many.stdout
    assert cli("validate", str(cases / "case_b.json")).stdout.endswith("unannotated)\n")


@pytest.mark.parametrize(
    ("edit", "against", "same"),
    [
        # the digest decides: the name is read from the very text the digest is of
        (lambda r: dict(r, protocol="renamed"), "v2", True),
        (lambda r: dict(r, digest="sha256:" + "0" * 64), "v2", False),
        # a `recheck` without a digest names no protocol: the replay's own is not it either
        (lambda r: {k: v for k, v in r.items() if k != "digest"}, "v2", False),
        (lambda r: {k: v for k, v in r.items() if k != "digest"}, None, False),
        (lambda r: None, None, True),
        (lambda r: None, "v2", False),
    ],
    ids=["renamed", "other-digest", "no-digest", "no-digest-own", "own-own", "own-v2"],
)
def test_audit_resume_and_next_take_a_result_line_for_the_same_protocol_alike(
    cases: Path, tmp_path: Path, edit, against: str | None, same: bool
) -> None:
    """`unmask.checking.record.same_protocol` is the one answer both commands give."""
    v2 = write(tmp_path, "v2.proto", DROPS_EXTERNAL)
    replay = str(cases / "case_b.json")
    out = tmp_path / "r.jsonl"
    cli("audit", replay, "--protocol", str(v2), "--out", str(out), "--quiet")
    (line,) = _lines(out)
    changed = edit(line["recheck"])
    if changed is None:
        del line["recheck"]
    else:
        line["recheck"] = changed
    text = json.dumps(line) + "\n"
    given = () if against is None else ("--protocol", str(v2))
    out.write_text(text, encoding="utf-8")
    resumed = cli("audit", replay, *given, "--out", str(out), "--resume", "--quiet")
    out.write_text(text, encoding="utf-8")
    answered = cli("next", str(out), *given, "--root", "/")
    if same:
        assert resumed.exit_code != 2, resumed.stderr
        assert answered.exit_code != 4, answered.stderr
    else:
        assert resumed.exit_code == 2 and "line 1 was checked against" in resumed.stderr
        assert answered.exit_code == 4 and "this result was" in answered.stderr


@pytest.mark.parametrize("form", ["ir", "replay"])
def test_an_ir_json_protocol_is_parsed_once_per_run(
    cases: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    from unmask.plumbing import jsonload
    from unmask.replay import recheck

    ir = protocol_to_json(compile_source(DROPS_EXTERNAL, "v2.proto"))
    if form == "replay":  # a replay that embeds it, as `unmask analyze` takes one
        case = json.loads((cases / "case_b.json").read_text(encoding="utf-8"))
        ir = dict(case, protocol=ir)
    path = write(tmp_path, "v2.json", json.dumps(ir))
    monkeypatch.setattr(recheck, "_IR", {})  # nothing remembered from another test
    parsed: list[str | None] = []
    real = jsonload.parse_json_document

    def spy(data, file=None, *args, **kwargs):  # type: ignore[no-untyped-def]
        parsed.append(file)
        return real(data, file, *args, **kwargs)

    monkeypatch.setattr(jsonload, "parse_json_document", spy)
    replay = str(cases / "case_a.json")
    result = cli("check", replay, "--format", "json", "--protocol", str(path))
    assert _json(result)["recheck"]["dropped"] == ["external"]
    assert parsed.count(str(path)) == 1, parsed


def test_junit_and_sarif_say_what_was_checked_against(cases: Path, tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    from tests.render.test_render_junit import valid
    from tests.render.test_render_sarif import validate

    v2 = str(write(tmp_path, "v2.proto", DROPS_EXTERNAL))
    digest = load_protocol_file(v2).digest
    replay = str(cases / "case_b.json")
    want = {"recheck.protocol": "factual_claims", "recheck.digest": digest}

    def suite_props(xml: str) -> dict[str, str]:
        (suite,) = valid(xml).findall("testsuite")
        return {p.get("name"): p.get("value") for p in suite.iter("property")}

    assert suite_props(cli("check", replay, "--format", "junit", "--protocol", v2).stdout) == want
    assert suite_props(cli("check", replay, "--format", "junit").stdout) == {}
    log = json.loads(cli("check", replay, "--format", "sarif", "--protocol", v2).stdout)
    validate(log)
    assert log["runs"][0]["properties"]["recheck"] == {
        "protocol": "factual_claims",
        "digest": digest,
        "dropped": ["external"],
    }
    own = json.loads(cli("check", replay, "--format", "sarif").stdout)
    assert "recheck" not in own["runs"][0]["properties"]
    # an audit's JUnit file, streamed case by case: the suite names it once, and each case
    # the atoms it left out
    junit = tmp_path / "junit.xml"
    args = ["audit", str(cases), "--protocol", v2, "--out", str(tmp_path / "r.jsonl")]
    cli(*args, "--junit", str(junit), "--quiet")
    xml = junit.read_text(encoding="utf-8")
    assert suite_props(xml) == want
    cases_text = [c.find("*").text or "" for c in ET.fromstring(xml).iter("testcase")]
    assert all("left out, annotated atoms the protocol lacks: `external`" in t for t in cases_text)
    # and the same bytes as the whole document built from the results file at once
    from unmask.checking.record import ResultRecord
    from unmask.render import junit as junit_render

    lines = (tmp_path / "r.jsonl").read_text(encoding="utf-8").splitlines()
    records = [ResultRecord.from_line(json.loads(x)) for x in lines]
    assert junit_render.render_batch(records) == xml


@pytest.mark.parametrize("path", ["a/" * 1_000_000 + "p.proto", {"not": "a path"}, "\x1b[2J.proto"])
def test_a_named_protocol_path_is_shown_bounded_and_escaped(cases: Path, tmp_path, path) -> None:
    # issue 33: `--protocol REPLAY.json` echoed the replay's 2 MB protocol path whole
    carrier = write(tmp_path, "carrier.json", json.dumps({"protocol": {"path": path}}))
    result = cli("check", str(cases / "case_a.json"), "--protocol", str(carrier))
    assert result.exit_code == 4
    assert "this replay names its protocol by path: give `" in result.stderr
    assert len(result.stderr) < 1000 and "\x1b" not in result.stderr


NAMES_A_MEMBER = """protocol named "claims named by member"
domain claim
atom supported(claim) : judge "the judge asserts the context supports claim {claim}"
atom backed(claim) : context "the context supports claim {claim}"
atom external : procedure "The judge consulted outside knowledge"
decision pass iff all(supported(c) for c in claim)
ground supported(joined) ~ backed(joined)
"""


@pytest.mark.parametrize("form", ["proto", "replay", "embedded"])
@pytest.mark.parametrize("command", ["check", "validate"])
def test_a_protocol_naming_a_member_of_a_free_domain_rechecks_its_own_replay(
    tmp_path: Path, form: str, command: str
) -> None:
    # it was compiled first with one invented member per free domain, and refused
    # (`joined` is neither a variable nor a member of `claim`), exit 4
    case = json.loads((EXAMPLES / "case_c_family.json").read_text(encoding="utf-8"))
    case["protocol"] = {"source": NAMES_A_MEMBER}
    replay = write(tmp_path, "replay.json", json.dumps(case))
    given = {
        "proto": write(tmp_path, "named.proto", NAMES_A_MEMBER),
        "replay": replay,  # the replay itself, which embeds the text
        "embedded": write(tmp_path, "carrier.json", json.dumps(case)),
    }[form]
    fmt = ("--format", "json") if command == "check" else ()
    own = cli(command, str(replay), *fmt)
    again = cli(command, str(replay), *fmt, "--protocol", str(given))
    assert again.exit_code == own.exit_code, again.stderr
    assert again.stderr == own.stderr
    if command == "validate":
        assert own.exit_code == 0 and "valid (5 atoms" in again.stdout
        return
    assert own.exit_code == 3  # no requirements: UNKNOWN, but every check decided
    report = _json(again)
    assert report.pop("recheck") == {
        "protocol": "named",
        "digest": load_protocol_file(str(given)).digest,
        "dropped": [],
    }
    assert report == _json(own)
    text = cli("check", str(replay), "--protocol", str(given)).stdout.splitlines()
    assert [x for x in text if "re-checked against" not in x] == cli(
        "check", str(replay)
    ).stdout.splitlines()


def test_a_member_a_replay_lacks_is_still_refused_at_that_replay(tmp_path: Path) -> None:
    # the name is checked against each replay's own members, as its own protocol would be
    case = json.loads((EXAMPLES / "case_c_family.json").read_text(encoding="utf-8"))
    case["domains"] = {"claim": ["cto", "other"]}
    case["annotations"] = [a for a in case["annotations"] if "joined" not in a["atom"]]
    replay = write(tmp_path, "replay.json", json.dumps(case))
    given = write(tmp_path, "named.proto", NAMES_A_MEMBER)
    result = cli("check", str(replay), "--protocol", str(given))
    assert result.exit_code == 4
    assert "`joined` is neither a variable nor a member of `claim`" in result.stderr
    # and an unknown member of a fixed domain is still refused once, before any replay
    fixed = write(
        tmp_path, "fixed.proto", NAMES_A_MEMBER.replace("domain claim", "domain claim = {cto}")
    )
    result = cli("check", str(replay), "--protocol", str(fixed))
    assert result.exit_code == 4
    assert "fixed.proto:7:18: error: `joined`" in result.stderr


def test_the_recheck_digest_of_a_replay_is_that_of_the_protocol_it_embeds(
    cases: Path, tmp_path: Path
) -> None:
    # docs/audit.md: the digest is of the protocol's own text (`.proto` source as embedded,
    # IR as canonical JSON), not of the replay file that carries it
    import hashlib

    case = json.loads((cases / "case_b.json").read_text(encoding="utf-8"))
    carrier = write(tmp_path, "carrier.json", json.dumps(dict(case, protocol={"source": FACTUAL})))
    digest = load_protocol_file(str(carrier)).digest
    assert digest == "sha256:" + hashlib.sha256(FACTUAL.encode("utf-8")).hexdigest()
    assert digest != "sha256:" + hashlib.sha256(carrier.read_bytes()).hexdigest()
    assert digest == load_protocol_file(str(EXAMPLES / "factual_claims.proto")).digest
    ir = protocol_to_json(compile_source(FACTUAL, "factual_claims.proto"))
    embeds_ir = write(tmp_path, "ir_carrier.json", json.dumps(dict(case, protocol=ir)))
    canonical = json.dumps(ir, ensure_ascii=False, sort_keys=True)
    assert load_protocol_file(str(embeds_ir)).digest == (
        "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    )
