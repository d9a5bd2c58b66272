"""The lexical aligner on a RAG judge's claims × passages with near misses beside the right
passage: another number, another plan or name, a negation. It proposes `backs(p, c)` TRUE
only where nothing material of the claim is missing from or contradicted by the passage,
and says why it abstains elsewhere (``unmask.propose.material``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main
from unmask.replay.builder import ReplayBuilder

ROOT = Path(__file__).resolve().parents[2]
RAG = ROOT / "examples" / "rag_citations.proto"
# six judgments written for this test, each with two claims, the passage that backs each
# and near misses; `backs` lists the pairs a reader would call backed
CASES = json.loads((ROOT / "tests/data/propose/rag_near_miss.json").read_text(encoding="utf-8"))


def propose(tmp_path: Path, k: int, case: dict) -> tuple[set[str], str]:
    sources = {
        "response": "\n".join(f"[{i}] {t}" for i, t in case["claims"].items()),
        "context": "\n".join(f"[{i}] {t}" for i, t in case["passages"].items()),
        "rationale": "",
    }
    domains = {"claim": list(case["claims"]), "passage": list(case["passages"])}
    src, out = tmp_path / f"r{k}.json", tmp_path / f"o{k}.json"
    ReplayBuilder(RAG, sources=sources, verdict="supported", domains=domains, id=f"r{k}").write(src)
    res = CliRunner().invoke(main, ["propose", "replay", str(src), "-o", str(out)])
    assert res.exit_code == 0, res.output
    anns = json.loads(out.read_text(encoding="utf-8"))["annotations"]
    assert all(a["value"] == "TRUE" for a in anns)  # never FALSE from a difference
    return {a["atom"] for a in anns if a["atom"].startswith("backs(")}, res.output


# five more, written after claims-lexical/2 was frozen and run once: 7 of 10 kept, 0 wrong
# (claims-lexical/1: 8 kept, 3 wrong); pinned here, so no longer held out for what follows
HELD_OUT = json.loads(
    (ROOT / "tests/data/propose/rag_near_miss_heldout.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("cases", [CASES, HELD_OUT], ids=["written-with", "written-after"])
def test_near_misses_are_not_proposed_and_most_right_pairs_are(tmp_path: Path, cases: list):
    right = wrong = kept = 0
    for k, case in enumerate(cases):
        proposed, _ = propose(tmp_path, k, case)
        good = {f"backs({p}, {c})" for p, c in case["backs"]}
        right += len(good)
        kept += len(proposed & good)
        wrong += len(proposed - good)
    assert wrong <= 1
    assert kept * 2 >= right


def test_the_issue_s_case_abstains_with_its_reason(tmp_path: Path):
    # "7 days on the Free plan" shares most words with "90 days on the Pro plan"
    proposed, said = propose(tmp_path, 0, CASES[0])
    assert "backs(p1, c1)" not in proposed and "backs(p2, c1)" in proposed
    alone = {**CASES[0], "passages": {"p1": CASES[0]["passages"]["p1"]}, "backs": []}
    proposed, said = propose(tmp_path, 9, alone)
    assert proposed == set()
    want = "abstained: claims-lexical/2: `backs(p1, c1)`: `90`: a number the passage never has"
    assert want in said
    # the number printed is a match score, not a probability
    assert "match score" in propose(tmp_path, 0, CASES[0])[1]


def test_a_negated_passage_abstains_and_the_right_one_is_still_read(tmp_path: Path):
    # the negated passage outscores the right one; set aside, the right one is read
    proposed, said = propose(tmp_path, 2, CASES[2])
    assert "backs(p1, c1)" not in proposed and "backs(p2, c1)" in proposed
    assert "`backs(p1, c1)`: `not`: only one of the claim and the passage is negated" in said
