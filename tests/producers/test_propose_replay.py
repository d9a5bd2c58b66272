"""`unmask propose replay`: open atoms filled by registered proposers, never closed ones."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main
from unmask.importers import PROTOCOLS
from unmask.propose.replay import passage_of, passages
from unmask.replay.builder import ReplayBuilder
from unmask.replay.load import load_replay

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "claim_parts_underdetermined.json"

CLAIM = "Irene Hervey was born on July 11, 1909 in Los Angeles and died in 1998."
LINES = {
    1: "Irene Hervey was an American actress.",
    3: "She was born July 11, 1909, in Los Angeles, California.",
    4: "Her first starring role came in 1937.",
    8: "Hervey died on December 20, 1998.",
}
CONTEXT = "\n".join(f"line {n}: {t}" for n, t in LINES.items())
RATIONALE = (
    "<explanation>Sentence 3 confirms the birth date and place. Sentence 8 states that she "
    "died in 1998.</explanation> <answer>supported</answer>"
)
CITES_RULES = {
    "schema": "unmask.judge-rules/1",
    "name": "wice-cites",
    "version": 2,
    "rules": [
        {
            "name": "cites",
            "pattern": r"\bsentences?\s+(\d+)\b[^.]*?\b(?:confirm|state)\w*",
            "flags": "i",
            "atom": "cites",
            "member": "s{}",
            "values": "numbers",
            "confidence": 0.8,
        }
    ],
}


def run(*args: str):
    return CliRunner().invoke(main, ["propose", *args])


def wice_replay(tmp_path: Path, annotate=None) -> Path:
    b = ReplayBuilder(
        PROTOCOLS / "wice.proto",
        sources={"rationale": RATIONALE, "response": CLAIM, "context": CONTEXT},
        verdict="supported",
        domains={"line": [f"s{n}" for n in LINES]},
        id="hervey",
    )
    if annotate:
        annotate(b)
    path = tmp_path / "replay.json"
    b.write(path)
    return path


def proposed(
    tmp_path: Path, protocol: Path | str, sources: dict, verdict: str, member: str
) -> Path:
    """`propose replay` run on a replay of ``protocol`` over the lines ``MEMBER1``...; the
    proposed replay's path."""
    b = ReplayBuilder(
        protocol,
        sources=sources,
        verdict=verdict,
        domains={"line": [f"{member}{n}" for n in LINES]},
    )
    src = tmp_path / "r.json"
    b.write(src)
    out = tmp_path / "out.json"
    assert run("replay", str(src), "-o", str(out)).exit_code == 0
    return out


def annotations(path: Path) -> dict[str, dict]:
    return {a["atom"]: a for a in json.loads(path.read_text(encoding="utf-8"))["annotations"]}


def test_the_claim_proposer_fills_support_over_evidence_lines(tmp_path: Path):
    src = wice_replay(tmp_path)
    out = tmp_path / "out.json"
    res = run("replay", str(src), "-o", str(out))
    assert res.exit_code == 0, res.output
    anns = annotations(out)
    context = json.loads(out.read_text(encoding="utf-8"))["sources"]["context"]
    for n in (3, 8):
        a = anns[f"supports(s{n})"]
        assert a["value"] == "TRUE"
        assert a["by"] == {"kind": "rule", "name": "claims-lexical/2", "reviewed": False}
        (ev,) = a["evidence"]
        assert ev["source"] == "context"
        assert context[ev["start"] : ev["end"]] == ev["quote"]
        assert ev["quote"] in LINES[n]
        conf = float(a["explanation"].rsplit("match score ", 1)[1])
        assert 0.5 <= conf <= 1
    # a line the claim does not speak to is not read as FALSE: it stays open
    assert "supports(s4)" not in anns
    assert "filled `supports(s3)` by claims-lexical/2" in res.output
    load_replay(out)  # validates


def test_below_the_threshold_the_atom_stays_as_it_was(tmp_path: Path):
    src = wice_replay(tmp_path)
    out = tmp_path / "out.json"
    res = run("replay", str(src), "-o", str(out), "--threshold", "1")
    assert res.exit_code == 0, res.output
    assert not any(a.startswith("supports(") for a in annotations(out))
    assert "below threshold: `supports(s3)`" in res.output
    assert "0 of " in res.output


def test_a_true_or_false_annotation_is_never_overwritten(tmp_path: Path):
    def annotate(b: ReplayBuilder) -> None:
        b.annotate("supports(s3)", False, quote="She was born July 11, 1909", source="context")
        b.annotate("supports(s8)", "UNKNOWN", explanation="not read yet")

    src = wice_replay(tmp_path, annotate)
    before = json.loads(src.read_text(encoding="utf-8"))["annotations"]
    out = tmp_path / "out.json"
    assert run("replay", str(src), "-o", str(out)).exit_code == 0
    after = json.loads(out.read_text(encoding="utf-8"))["annotations"]
    assert after[0] == before[0]  # the FALSE one, untouched
    assert after[1]["atom"] == "supports(s8)" and after[1]["value"] == "TRUE"  # in place
    assert after[1]["by"]["reviewed"] is False


def test_judge_rules_from_a_rule_file_fill_judge_atoms(tmp_path: Path):
    src = wice_replay(tmp_path)
    rules = tmp_path / "cites.judge.json"
    rules.write_text(json.dumps(CITES_RULES), encoding="utf-8")
    out = tmp_path / "out.json"
    res = run("replay", str(src), "-o", str(out), "--rules", str(rules))
    assert res.exit_code == 0, res.output
    anns = annotations(out)
    for n in (3, 8):
        a = anns[f"cites(s{n})"]
        assert a["value"] == "TRUE"
        assert a["by"] == {"kind": "rule", "name": "wice-cites/2", "reviewed": False}
        (ev,) = a["evidence"]
        assert RATIONALE[ev["start"] : ev["end"]] == ev["quote"]
        assert f"Sentence {n}" in ev["quote"]
    assert "cites(s1)" not in anns


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_a_rule_file_beside_the_protocol_is_never_read_through_a_link(tmp_path, kind):
    # found beside the protocol, not named: a side file (issue 33)
    shutil.copy(PROTOCOLS / "wice.proto", tmp_path / "mine.proto")
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(CITES_RULES), encoding="utf-8")
    if kind == "link":
        (tmp_path / "mine.judge.json").symlink_to(elsewhere)
    else:
        os.mkfifo(tmp_path / "mine.judge.json")
    obj = json.loads(wice_replay(tmp_path).read_text(encoding="utf-8"))
    obj["protocol"] = {"path": "mine.proto"}
    src = tmp_path / "by_path.json"
    src.write_text(json.dumps(obj), encoding="utf-8")
    res = run("replay", str(src), "--proposer", "judge-rules")
    assert res.exit_code == 2, res.output
    what = "a symbolic link, which is not" if kind == "link" else "a named pipe, not a regular"
    assert f"is {what}" in res.stderr and "Traceback" not in res.output


def test_the_rule_file_beside_the_protocol_is_used(tmp_path: Path):
    shutil.copy(PROTOCOLS / "wice.proto", tmp_path / "mine.proto")
    (tmp_path / "mine.judge.json").write_text(json.dumps(CITES_RULES), encoding="utf-8")
    obj = json.loads(wice_replay(tmp_path).read_text(encoding="utf-8"))
    obj["protocol"] = {"path": "mine.proto"}
    src = tmp_path / "by_path.json"
    src.write_text(json.dumps(obj), encoding="utf-8")
    res = run("replay", str(src), "--proposer", "judge-rules")
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout)
    assert printed["protocol"] == {"path": "mine.proto"}
    assert {a["atom"] for a in printed["annotations"]} >= {"cites(s3)", "cites(s8)"}
    # written to another folder, the protocol goes along with it
    (tmp_path / "elsewhere").mkdir()
    out = tmp_path / "elsewhere" / "out.json"
    assert run("replay", str(src), "-o", str(out)).exit_code == 0
    assert "source" in json.loads(out.read_text(encoding="utf-8"))["protocol"]
    load_replay(out)


def test_the_example_validates_and_check_names_the_unreviewed(tmp_path: Path):
    shutil.copy(EXAMPLE, tmp_path / "ex.json")
    shutil.copy(EXAMPLE.with_name("claim_parts.proto"), tmp_path / "claim_parts.proto")
    out = tmp_path / "out.json"
    res = run("replay", str(tmp_path / "ex.json"), "-o", str(out))
    assert res.exit_code == 0, res.output
    # `backed(part)` ranges over claim parts, not lines: the claim proposer abstains
    assert annotations(out) == annotations(tmp_path / "ex.json")
    assert "0 of 1 open atoms filled" in res.output


def test_check_reports_what_rests_on_proposals(tmp_path: Path):
    out = tmp_path / "out.json"
    assert run("replay", str(wice_replay(tmp_path)), "-o", str(out)).exit_code == 0
    res = CliRunner().invoke(main, ["check", str(out)])
    assert "`supports(s3)`=TRUE (rule claims-lexical/2, unreviewed)" in res.output


def test_a_context_not_in_lines_abstains(tmp_path: Path):
    assert passages("line 1: a\nline 2: b\n") == {"1": (8, "a"), "2": (18, "b")}
    assert passages("line 1: a\nsome prose") is None
    assert passages("line 1: a\nline 1: b") is None
    assert passages("[1] a\nline 2: b") is None  # one form throughout
    b = ReplayBuilder(
        PROTOCOLS / "wice.proto",
        sources={"rationale": RATIONALE, "response": CLAIM, "context": "She was born in 1909."},
        verdict="supported",
        domains={"line": ["s1"]},
    )
    src = tmp_path / "prose.json"
    b.write(src)
    res = run("replay", str(src), "-o", str(tmp_path / "out.json"))
    assert res.exit_code == 0
    assert "`context` is not passages, one a line, each after an id such as `[1]`" in res.output
    assert "supports(s1)" not in annotations(tmp_path / "out.json")


def test_exit_statuses(tmp_path: Path, monkeypatch):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "unmask.replay/1"}', encoding="utf-8")
    assert run("replay", str(bad)).exit_code == 4
    assert run("replay", str(tmp_path / "missing.json")).exit_code == 4
    src = wice_replay(tmp_path)
    res = run("replay", str(src), "--proposer", "claims-lexicl")
    assert res.exit_code == 2 and "did you mean `claims-lexical`" in res.output
    monkeypatch.delenv("UNMASK_MODEL_URL", raising=False)
    res = run("replay", str(src), "--proposer", "model-chat")
    assert res.exit_code == 2 and "`UNMASK_MODEL_URL` is not set" in res.output
    assert run("replay", str(src), "--threshold", "2").exit_code == 2
    assert run("replay", str(src), "-o", str(tmp_path / "no" / "dir" / "x.json")).exit_code == 2


def test_rules_without_the_judge_rules_is_a_usage_error(tmp_path: Path):
    rules = tmp_path / "r.json"
    rules.write_text(json.dumps(CITES_RULES), encoding="utf-8")
    src = wice_replay(tmp_path)
    res = run("replay", str(src), "--rules", str(rules), "--proposer", "claims-lexical")
    assert res.exit_code == 2 and "`--rules` is for the `judge-rules` proposer" in res.output
    bad = tmp_path / "bad.judge.json"
    bad.write_text('{"schema": "unmask.judge-rules/1", "rules": []}', encoding="utf-8")
    assert run("replay", str(src), "--rules", str(bad)).exit_code == 2


def test_a_claim_nothing_speaks_to_leaves_every_line_open(tmp_path: Path):
    # no term of the claim in any line is no reading that a line does not support it (a
    # paraphrase shares no terms either): the proposer abstains, it never writes FALSE
    sources = {
        "rationale": RATIONALE,
        "response": "The Eiffel Tower stands in Paris.",
        "context": CONTEXT,
    }
    out = proposed(tmp_path, PROTOCOLS / "wice.proto", sources, "supported", "s")
    anns = annotations(out)
    for n in LINES:
        assert anns.get(f"supports(s{n})", {}).get("value", "UNKNOWN") == "UNKNOWN"
    assert all(a["value"] != "FALSE" for a in anns.values() if a.get("by", {}).get("kind"))
    load_replay(out)


PROTO = """protocol lines "Check the claim against the evidence lines."

domain line

atom said(line)      : judge   "The judge says line {line} supports the claim"
atom refutes(line)   : context "Line {line} contradicts the claim"
atom backs(line)     : context "Line {line} supports the claim"

decision pass iff any(said(l) for l in line)
for l in line: ground said(l) ~> backs(l)
"""


def test_only_a_family_that_states_support_is_filled(tmp_path: Path):
    sources = {"rationale": "Line 3 says so.", "response": CLAIM, "context": CONTEXT}
    anns = annotations(proposed(tmp_path, PROTO, sources, "PASS", "l"))
    assert anns["backs(l3)"]["value"] == "TRUE"
    assert not any(a.startswith("refutes(") for a in anns)


def test_rules_for_another_protocol_say_so_instead_of_filling_nothing(tmp_path: Path):
    # the built-in rules fill `cited`, `said`, …; this protocol names its atom `cites`
    res = run("replay", str(wice_replay(tmp_path)), "-o", str(tmp_path / "out.json"))
    assert res.exit_code == 0, res.output
    line = next(x for x in res.output.splitlines() if "wice-citations" in x)
    assert line.startswith("abstained: wice-citations/1: the rules fill `cited`, `said`")
    assert line.endswith("the protocol declares none of them")
    # a rule file that fills one of its atoms is not told so
    rules = tmp_path / "cites.judge.json"
    rules.write_text(json.dumps(CITES_RULES), encoding="utf-8")
    res = run("replay", str(wice_replay(tmp_path)), "--rules", str(rules))
    assert "declares none of them" not in res.output


# --- passages in any of the forms importers write ------------------------------------------


@pytest.mark.parametrize(
    ("context", "member"),
    [
        # `unmask import jsonl` / `structured` write a list of passages as `[1] …`
        ("\n".join(f"[{k}] {t}" for k, t in enumerate(LINES.values(), start=1)), "p"),
        # a RAG pipeline's own passage ids, named by the members themselves
        ("\n".join(f"[p{k}] {t}" for k, t in enumerate(LINES.values(), start=1)), "p"),
        ("\n".join(f"Passage {k}: {t}" for k, t in enumerate(LINES.values(), start=1)), "d"),
        ("\n".join(f"p{k}: {t}" for k, t in enumerate(LINES.values(), start=1)), "p"),
    ],
)
def test_the_claim_proposer_reads_passages_in_other_forms(tmp_path: Path, context, member):
    # before, only WiCE's `line N: …` was read and every other form abstained
    b = ReplayBuilder(
        PROTO,
        sources={"rationale": "Passages 2 and 4 say so.", "response": CLAIM, "context": context},
        verdict="PASS",
        domains={"line": [f"{member}{k}" for k in range(1, len(LINES) + 1)]},
    )
    src = tmp_path / "r.json"
    b.write(src)
    out = tmp_path / "out.json"
    res = run("replay", str(src), "-o", str(out), "--proposer", "claims-lexical")
    assert res.exit_code == 0, res.output
    anns = annotations(out)
    text = json.loads(out.read_text(encoding="utf-8"))["sources"]["context"]
    for k, n in ((2, 3), (4, 8)):  # the birth line and the death line
        a = anns[f"backs({member}{k})"]
        assert a["value"] == "TRUE"
        (ev,) = a["evidence"]
        assert text[ev["start"] : ev["end"]] == ev["quote"] and ev["quote"] in LINES[n]
    assert all(a["value"] != "FALSE" for a in anns.values())
    load_replay(out)


def test_a_member_names_a_passage_by_its_id_or_its_number() -> None:
    assert passage_of("p1", ["p1", "p2"]) == "p1"
    assert passage_of("s2", ["1", "2"]) == "2"
    assert passage_of("p02", ["1", "2"]) == "2"
    assert passage_of("p3", ["1", "2"]) is None
    assert passage_of("cto", ["1", "2"]) is None
    assert passage_of("s" + "1" * 5000, ["1", "2"]) is None  # a number no `int` converts
    assert passages("[p1] a\n\n[p2] b") == {"p1": (5, "a"), "p2": (13, "b")}
    assert passages("p1: a\np1: b") is None  # an id twice is not a list of passages


def test_a_folder_or_json_lines_of_replays_is_filled_into_out(tmp_path: Path):
    # `propose replay` takes what `audit` takes; each replay to DIR/ID.json
    one = wice_replay(tmp_path)
    folder = tmp_path / "in"
    folder.mkdir()
    for rid in ("a", "b"):
        obj = json.loads(one.read_text(encoding="utf-8"))
        obj["id"] = rid
        obj["protocol"] = {"source": (PROTOCOLS / "wice.proto").read_text(encoding="utf-8")}
        (folder / f"{rid}.json").write_text(json.dumps(obj), encoding="utf-8")
    (folder / "broken.json").write_text("{", encoding="utf-8")
    single = run("replay", str(one), "-o", str(tmp_path / "single.json"))
    assert single.exit_code == 0
    res = run("replay", str(folder), "--out", str(tmp_path / "out"))
    assert res.exit_code == 4  # the broken one is said, the others written
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        ".unmask-import",
        "a.json",
        "b.json",
    ]
    assert "broken.json" in res.stderr and "2 replays written to" in res.stderr
    # each is filled as the one file alone is
    alone = annotations(tmp_path / "single.json")
    assert {k: v["value"] for k, v in annotations(tmp_path / "out" / "a.json").items()} == {
        k: v["value"] for k, v in alone.items()
    }
    # JSON Lines in, the same
    lines = tmp_path / "in.jsonl"
    lines.write_text(
        "".join(json.dumps(json.loads((folder / f).read_text())) + "\n" for f in ("a.json",)),
        encoding="utf-8",
    )
    assert run("replay", str(lines), "--out", str(tmp_path / "out2")).exit_code == 0
    assert (tmp_path / "out2" / "a.json").is_file()


def test_several_replays_need_out_and_one_file_takes_no_out_with_o(tmp_path: Path):
    one = wice_replay(tmp_path)
    res = run("replay", str(tmp_path))
    assert res.exit_code == 2 and "holds several replays" in res.stderr
    assert "give `--out DIR`" in res.stderr
    res = run("replay", str(one), "-o", str(tmp_path / "x.json"), "--out", str(tmp_path / "d"))
    assert res.exit_code == 2 and "not both" in res.stderr
