"""The RAG quickstart runs as written: docs/quickstart-rag.md's commands, on examples/rag/.

The test takes the commands of the doc's first `sh` block, runs them with the installed
`unmask` and `unmaskc` in a copy of `examples/rag/`, and holds: the output is the
committed one (`audit.txt`, `check-r4.txt`), the schema has the judge's statements, the three
misbehaving judges are the three violated replays, for the reasons the doc gives, at most 20
annotations are written by hand (every other one is the judge's own, or the importer's), and
where the quickstart's judgments are the records of the hand-annotated example
(tests/data/importers/rag-judge/), the audit finds the same.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import found_files
from tests.helpers import TEST_DATA

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "quickstart-rag.md"
EXAMPLE = ROOT / "examples" / "rag"
REFERENCE = TEST_DATA / "importers" / "rag-judge"
BIN = Path(sys.executable).parent
MAX_HAND = 20


def commands() -> list[str]:
    block = re.search(r"```sh\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block is not None, "the quickstart lost its command block"
    lines = [x.strip() for x in block.group(1).splitlines() if x.strip()]
    assert lines[0] == "cp -r examples/rag my-rag && cd my-rag"  # the fixture does this
    return lines[1:]


def run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    out = None
    if ">" in argv:  # `unmaskc … > FILE`, the one redirection the doc uses
        k = argv.index(">")
        argv, out = argv[:k], cwd / argv[k + 1]
    argv[0] = str(BIN / argv[0])
    env = {**os.environ, "PYTHONHASHSEED": "0", "NO_COLOR": "1"}
    res = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    if out is not None:
        out.write_text(res.stdout, encoding="utf-8")
    return res


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("quickstart") / "my-rag"
    shutil.copytree(EXAMPLE, work)
    outputs = {}
    for command in commands():
        res = run(command, work)
        # `check` exits 1 on a VIOLATED replay, as documented
        assert res.returncode in (0, 1), (command, res.stderr)
        outputs[command.split()[1]] = res
    return {"dir": work, "out": outputs}


def results(path: Path) -> dict[str, dict]:
    from unmask.checking.record import report_json  # each annotation back in the parts it is in

    lines = path.read_text(encoding="utf-8").splitlines()
    return {r["replay"]: report_json(r) for r in map(json.loads, lines)}


def violated(report: dict) -> set[str]:
    return {r["subject"] for r in report["reasons"] if r["code"] == "violated"}


def test_the_commands_give_the_committed_outputs(quickstart) -> None:
    work, out = quickstart["dir"], quickstart["out"]
    assert out["audit"].returncode == 0 and out["check"].returncode == 1
    assert out["audit"].stderr == (EXAMPLE / "audit.txt").read_text(encoding="utf-8")
    assert out["check"].stdout == (EXAMPLE / "check-r4.txt").read_text(encoding="utf-8")
    schema = json.loads((work / "judge-schema.json").read_text(encoding="utf-8"))
    assert set(schema["properties"]["atoms"]["properties"]) == {
        "said",
        "checked",
        "cited",
        "outside",
    }
    assert "imported 10 replays" in out["import"].stderr
    assert "16 readings by `ana` written in (8 TRUE, 8 FALSE, 0 UNKNOWN)" in out["annotate"].stderr
    assert "0 calls" in out["annotate"].stderr  # a person's readings alone call no model


def test_the_audit_fails_only_when_asked_to_as_the_doc_says(quickstart) -> None:
    # the doc's second `sh` block: the same audit, with the gate a CI step needs
    blocks = re.findall(r"```sh\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    gate = blocks[1].strip()
    assert gate == "unmask audit annotated --out results.jsonl --fail-on violated"
    res = run(gate, quickstart["dir"])
    assert res.returncode == 1, res.stderr  # three replays are VIOLATED
    # the summary is the one the doc shows, on stderr; the results go to --out
    assert res.stderr == (EXAMPLE / "audit.txt").read_text(encoding="utf-8")
    assert res.stdout == ""
    assert quickstart["out"]["audit"].returncode == 0  # the same run without the gate


def test_the_three_misbehaving_judges_are_the_three_violations(quickstart) -> None:
    got = results(quickstart["dir"] / "results.jsonl")
    overall = {k: r["overall"] for k, r in got.items()}
    assert {k for k, v in overall.items() if v != "SATISFIED"} == {"r3", "r4", "r5"}
    assert set(overall.values()) == {"SATISFIED", "VIOLATED"}
    # calls unsupported claims supported, and cites nothing
    assert violated(got["r3"]) == {
        "requirement:cite_support",
        "grounding:said(opened)~>backed(opened)",
        "grounding:said(wood)~>backed(wood)",
        "grounding:some_said~backed(opened) or backed(wood)",
    }
    # outside knowledge: refuted by the reader's whole reading of the passages
    assert violated(got["r4"]) == {
        "requirement:passages_only",
        "grounding:said(height)~>backed(height)",
    }
    pair = next(g for g in got["r4"]["grounding"] if g["judge"] == "said(height)")
    backed = next(p for p in pair["explanation"]["parts"] if p["atom"] == "backed(height)")
    assert backed["evidence"] == [{"source": "context", "read": "whole"}]
    # makes up its quotes
    assert violated(got["r5"]) == {"requirement:verbatim_quotes"}
    assert got["r5"]["verdict"]["status"] == "UNDERDETERMINED"


def test_at_most_twenty_annotations_are_written_by_hand(quickstart) -> None:
    lines = (EXAMPLE / "annotations.jsonl").read_text(encoding="utf-8").splitlines()
    hand = [json.loads(x) for x in lines if x.strip()]
    assert len(hand) <= MAX_HAND
    kinds: dict[str, int] = {}
    for path in found_files((quickstart["dir"] / "annotated").glob("*.json")):
        for a in json.loads(path.read_text(encoding="utf-8"))["annotations"]:
            kind = a["by"]["kind"]
            kinds[kind] = kinds.get(kind, 0) + 1
            if kind == "human":
                assert a["by"] == {"kind": "human", "name": "ana", "reviewed": True}
    # every hand annotation is in, and every other annotation is the judge's or the importer's
    assert kinds.pop("human") == len(hand)
    # 45 statements of the judges kept (one replaced by a reader's), and the importer's
    # `quotes_verbatim` for each replay plus the two statements of r5 that lost their quotes
    assert kinds == {"model": 45, "rule": 12}


def test_the_quickstart_finds_what_the_hand_annotated_run_finds(quickstart, tmp_path) -> None:
    # r1-r3 are the hand-annotated example's records (every atom annotated by hand there)
    ref = tmp_path / "ref"
    res = subprocess.run(
        [
            str(BIN / "unmask"),
            "import",
            "jsonl",
            str(REFERENCE / "judgments.jsonl"),
            "--mapping",
            str(REFERENCE / "mapping.json"),
            "--out",
            str(ref),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    audit = subprocess.run(
        [str(BIN / "unmask"), "audit", str(ref), "--out", str(tmp_path / "ref.jsonl")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert audit.returncode == 0, audit.stderr
    reference = results(tmp_path / "ref.jsonl")
    ours = results(quickstart["dir"] / "results.jsonl")
    assert set(reference) == {"r1", "r2", "r3"}
    for rid, theirs in reference.items():
        assert ours[rid]["overall"] == theirs["overall"], rid
        assert violated(ours[rid]) == violated(theirs), rid
    assert violated(reference["r3"])  # the comparison compares something


def test_a_bad_hand_annotation_is_named_and_nothing_is_written(quickstart, tmp_path) -> None:
    replays = quickstart["dir"] / "replays"
    before = {p.name: p.read_bytes() for p in replays.iterdir()}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"replay": "r9", "atom": "backed(creator)", "value": "TRUE", "read": "context"}\n'
        '{"replay": "r9", "atom": "backed(released)", "value": "TRUE", "quote": "in 1992"}\n'
        "not json\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    res = run(f"unmask annotate {replays} --from {bad} --reader ana --out {out}", tmp_path)
    assert res.returncode == 4
    assert f"{bad}:1:1: error: a reading of a whole source backs only a FALSE" in res.stderr
    assert f"{bad}:2:1: error: the quote is in none of `context` or `response`" in res.stderr
    assert f"{bad}:3:1: error: not JSON" in res.stderr
    assert "3 problems in" in res.stderr and "nothing written, no call made" in res.stderr
    assert not out.exists()
    assert {p.name: p.read_bytes() for p in replays.iterdir()} == before


def test_the_protocol_the_doc_shows_is_the_one_it_runs() -> None:
    doc = DOC.read_text(encoding="utf-8")
    shown = re.search(r"```\n(domain claim\n.*?)```", doc, re.S)
    assert shown is not None
    proto = (EXAMPLE / "rag.proto").read_text(encoding="utf-8").splitlines()
    for line in shown.group(1).splitlines():
        assert not line or line in proto, line


def test_citations_the_judge_says_are_complete_leave_no_cites_pair_open(tmp_path):
    # docs/quickstart-rag.md, "Which passage for which claim": the judges list only the
    # citations they made, and say (with `*`) that the list is whole
    work = tmp_path / "my-rag"
    shutil.copytree(EXAMPLE, work)
    block = DOC.read_text(encoding="utf-8").split("## Which passage for which claim")[1]
    steps = re.search(r"```\n(unmask import.*?)```", block, re.S)
    assert steps is not None, "the section lost its commands"
    imp, check = [x for x in steps.group(1).splitlines() if x.strip()]
    assert run(imp, work).returncode == 0
    replays = sorted((work / "cited").glob("*.json"))
    assert [p.stem for p in replays] == ["c1", "c2"]
    for path in replays:
        replay = json.loads(path.read_text(encoding="utf-8"))
        doms = replay["domains"]
        cites = {
            a["atom"]: a["value"] for a in replay["annotations"] if a["atom"].startswith("cites(")
        }
        # every pair is stated, by a quote: none left to absence
        assert len(cites) == len(doms["claim"]) * len(doms["passage"])
        assert set(cites.values()) <= {"TRUE", "FALSE"}
        res = run(f"unmask check {path.relative_to(work)} --format json", work)
        report = json.loads(res.stdout)
        # what stays open is exactly the citations made, waiting for a reading of `backs`
        open_pairs = {g["judge"] for g in report["grounding"] if g["status"] == "UNDERDETERMINED"}
        assert open_pairs == {a for a, v in cites.items() if v == "TRUE"}
    assert run(check, work).returncode == 3  # c2: UNKNOWN until `backs(p3, opened)` is read


def test_the_message_the_doc_shows_is_the_one_the_command_prints(quickstart, tmp_path) -> None:
    # step 3 shows what a line that does not name its source gets: drop line 14's `source`
    doc = DOC.read_text(encoding="utf-8").split("## 3. Read the passages")[1]
    shown = re.search(r"```\n(annotations\.jsonl:14:.*?)```", doc, re.S)
    assert shown is not None, "step 3 lost its example message"
    work = tmp_path / "w"
    work.mkdir()
    lines = (EXAMPLE / "annotations.jsonl").read_text(encoding="utf-8").splitlines()
    assert '"source": "context", ' in lines[13]
    lines[13] = lines[13].replace('"source": "context", ', "")
    (work / "annotations.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    replays = quickstart["dir"] / "replays"
    res = run(f"unmask annotate {replays} --from annotations.jsonl --reader ana --out x", work)
    assert res.returncode == 4
    assert res.stderr == shown.group(1)
    assert not (work / "x").exists()
