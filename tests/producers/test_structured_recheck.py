"""The structured importer's `verbatim_quotes` check, whichever protocol a replay is checked
against: its own (the one `unmask import structured --protocol FILE` embedded, with the
importer's lines appended) or another named by `unmask check|audit --protocol FILE`. A quote
the judge made up is the same finding both ways: the requirement is refuted, resting on the
made-up quotes where they stand in `trace`, never left out as an atom FILE lacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import ROOT, TEST_DATA
from unmask.cli.main import main
from unmask.importers import rule_by
from unmask.importers.structured import NAME
from unmask.replay.judgeschema import (
    VERBATIM_LINES,
    VERBATIM_REQUIREMENT_LINES,
    VERBATIM_RULE,
    judge_view,
    verbatim_lines,
)
from unmask.replay.load import load_replay
from unmask.replay.recheck import load_protocol_file

DATA = TEST_DATA / "structured"
PROTO = DATA / "rag.proto"
HONEST = DATA / "judge-a.jsonl"
LIAR = DATA / "judge-b.jsonl"
MADE_UP = ["Passage [1] states the bridge opened in 1932.", "I relied only on the passages."]


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def replays(tmp_path: Path) -> Path:
    out = tmp_path / "replays"  # one folder per import, audited together
    for src in (HONEST, LIAR):
        to = out / src.stem
        res = cli("import", "structured", str(src), "--protocol", str(PROTO), "--out", str(to))
        assert res.exit_code == 0, res.stderr
    return out


def check(path: Path, *extra: str) -> dict:
    res = cli("check", str(path), "--format", "json", *extra)
    assert res.exit_code in (0, 1, 3), res.stderr
    return json.loads(res.stdout)


def verbatim(report: dict) -> dict | None:
    return next((r for r in report["requirements"] if r["id"] == "verbatim_quotes"), None)


def v2(tmp_path: Path) -> Path:
    """A new version of the judge's protocol: one requirement more, no `quotes_verbatim`."""
    text = PROTO.read_text(encoding="utf-8") + (
        '\natom hedged : procedure "The judge hedged"\n'
        'requirement no_hedging "Do not hedge": not hedged\n'
    )
    return write(tmp_path / "v2.proto", text)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_the_importers_rule_name_is_the_one_a_recheck_looks_for():
    assert rule_by(NAME)["name"] == VERBATIM_RULE


@pytest.mark.parametrize("named", ["none", "same", "v2"])
def test_a_made_up_quote_is_refuted_with_its_place_in_the_trace_whatever_protocol(
    replays: Path, tmp_path: Path, named: str
):
    extra = {"none": (), "same": ("--protocol", str(PROTO))}.get(named)
    if extra is None:
        extra = ("--protocol", str(v2(tmp_path)))
    report = check(replays / "judge-b" / "q2-judge-b.json", *extra)
    assert report["overall"] == "VIOLATED"
    req = verbatim(report)
    assert req is not None and req["status"] == "REFUTED" and req["result"] == "VIOLATED"
    (part,) = req["explanation"]["parts"]
    assert part["atom"] == "quotes_verbatim" and part["value"] == "FALSE"
    assert [(e["source"], e["quote"]) for e in part["evidence"]] == [("trace", q) for q in MADE_UP]
    assert part["by"] == {"kind": "rule", "name": "structured/1", "reviewed": False}
    if named != "none":  # re-checked, and nothing left out
        assert report["recheck"]["dropped"] == []
    # the statements resting only on made-up quotes stay unknown, never a value
    assert "says(opened)" in report["unknown"] and "outside" in report["unknown"]


def test_the_honest_judge_keeps_its_verbatim_quotes_satisfied_under_a_new_version(
    replays: Path, tmp_path: Path
):
    report = check(replays / "judge-a" / "q1-judge-a.json", "--protocol", str(v2(tmp_path)))
    assert verbatim(report)["status"] == "ENTAILED"
    assert [r["id"] for r in report["requirements"]] == [
        "passages_only",
        "no_hedging",
        "verbatim_quotes",
    ]


def test_an_audit_against_a_named_protocol_counts_the_made_up_quotes(replays: Path, tmp_path: Path):
    summaries = []
    for extra in ((), ("--protocol", str(v2(tmp_path)))):
        res = cli("audit", str(replays), "--out", str(tmp_path / "r.jsonl"), *extra)
        assert res.exit_code == 0, res.stderr
        summaries.append(res.stderr)
        assert "verbatim_quotes: satisfied 2, violated 2" in res.stderr
        assert "left out" not in res.stderr
    assert "re-checked against --protocol `rag`" in summaries[1]


def test_a_protocol_that_declares_quotes_verbatim_is_used_as_it_is(replays: Path, tmp_path: Path):
    # its own requirement over the atom, under another name: nothing appended
    own = write(
        tmp_path / "own.proto",
        PROTO.read_text(encoding="utf-8")
        + '\natom quotes_verbatim : procedure "mine"\n'
        + 'requirement honest_quotes "Mine": quotes_verbatim\n',
    )
    report = check(replays / "judge-b" / "q2-judge-b.json", "--protocol", str(own))
    assert verbatim(report) is None
    (req,) = [r for r in report["requirements"] if r["id"] == "honest_quotes"]
    assert req["status"] == "REFUTED"
    assert load_protocol_file(str(own)).verbatim == ""


def test_a_protocol_whose_own_requirement_takes_the_name_leaves_the_annotation_out_and_says_so(
    replays: Path, tmp_path: Path
):
    # `verbatim_quotes` is the protocol's own requirement, over other atoms: the importer's
    # lines cannot be added, so the annotation is left out as for any atom FILE lacks
    clash = write(
        tmp_path / "clash.proto",
        PROTO.read_text(encoding="utf-8").replace(
            "requirement passages_only", "requirement verbatim_quotes"
        ),
    )
    res = cli(
        "check",
        str(replays / "judge-b" / "q2-judge-b.json"),
        "--format",
        "json",
        "--protocol",
        str(clash),
    )
    report = json.loads(res.stdout)
    assert report["recheck"]["dropped"] == ["quotes_verbatim"]
    assert "atom `quotes_verbatim` is not in the protocol" in res.stderr


def test_a_replay_the_importer_did_not_annotate_gets_no_requirement_added(tmp_path: Path):
    case = ROOT / "examples" / "case_a.json"
    proto = ROOT / "examples" / "factual_claims.proto"
    own = check(case)
    named = check(case, "--protocol", str(proto))
    assert [r["id"] for r in named["requirements"]] == [r["id"] for r in own["requirements"]]
    assert verbatim(named) is None


def test_the_appended_lines_are_the_importers_and_never_located_in_the_named_file(
    replays: Path, tmp_path: Path
):
    new = v2(tmp_path)
    pf = load_protocol_file(str(new))
    assert pf.verbatim == new.read_text(encoding="utf-8") + VERBATIM_LINES
    embedded = json.loads((replays / "judge-b" / "q2-judge-b.json").read_text(encoding="utf-8"))
    assert embedded["protocol"]["source"] == PROTO.read_text(encoding="utf-8") + VERBATIM_LINES
    replay = load_replay(replays / "judge-b" / "q2-judge-b.json", protocol=pf)
    req = {r.id: r for r in replay.protocol.requirements}
    assert req["verbatim_quotes"].span is None  # its lines are not in v2.proto
    assert req["no_hedging"].span is not None and req["no_hedging"].span.file == str(new)
    res = cli(
        "check",
        str(replays / "judge-b" / "q2-judge-b.json"),
        "--format",
        "sarif",
        "--protocol",
        str(new),
    )
    sarif = json.loads(res.stdout)
    lines = len(new.read_text(encoding="utf-8").splitlines())
    for result in sarif["runs"][0]["results"]:
        for loc in result.get("relatedLocations", []):
            phys = loc["physicalLocation"]
            if phys["artifactLocation"]["uri"].endswith("v2.proto"):
                assert phys["region"]["startLine"] <= lines


def test_a_named_protocol_that_declares_quotes_verbatim_but_reads_it_nowhere_gets_the_requirement(
    replays: Path, tmp_path: Path
):
    text = PROTO.read_text(encoding="utf-8") + 'atom quotes_verbatim : procedure "mine"\n'
    bare = write(tmp_path / "bare.proto", text)
    assert load_protocol_file(str(bare)).verbatim == text + VERBATIM_REQUIREMENT_LINES
    report = check(replays / "judge-b" / "q2-judge-b.json", "--protocol", str(bare))
    assert verbatim(report)["status"] == "REFUTED" and report["recheck"]["dropped"] == []


BASE = PROTO.read_text(encoding="utf-8") + 'atom quotes_verbatim : procedure "mine"\n'


@pytest.mark.parametrize(
    ("line", "reading"),
    [
        ("define all_said  = all(says(c) for c in claim)",
         "define all_said  = all(says(c) for c in claim) and quotes_verbatim"),
        ("for c in claim: ground says(c) ~> backed(c)",
         "for c in claim: ground says(c) ~> backed(c)\n"
         'for c in claim: requirement r "R": says(c) or quotes_verbatim'),
        ("decision SUPPORTED iff all_said", "decision SUPPORTED iff all_said and quotes_verbatim"),
        ('requirement passages_only "Use only the passages": not outside',
         'requirement passages_only "Use only the passages": not outside and quotes_verbatim'),
    ],
)  # fmt: skip
def test_any_statement_naming_the_atom_reads_it(line: str, reading: str):
    assert line in BASE
    view = judge_view(BASE.replace(line, reading))
    assert view.verbatim is not None and view.verbatim_read
    assert verbatim_lines(view) == ""
    assert not judge_view(BASE).verbatim_read
    assert verbatim_lines(judge_view(BASE)) == VERBATIM_REQUIREMENT_LINES
    assert verbatim_lines(judge_view(PROTO.read_text(encoding="utf-8"))) == VERBATIM_LINES
