"""Proposers over families of several domains: `backs(passage, claim)` filled pair by pair,
named as the compiler names them, never FALSE, and abstaining where the places are unclear."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main
from unmask.plumbing.names import applied, split_applied
from unmask.replay.builder import ReplayBuilder
from unmask.replay.load import load_replay

ROOT = Path(__file__).resolve().parents[2]
RAG = ROOT / "examples" / "rag_citations.proto"
EXAMPLE = json.loads((ROOT / "examples" / "rag_citations.json").read_text(encoding="utf-8"))
CONTEXT = EXAMPLE["sources"]["context"]  # [p1] … opened … 1932. / [p2] … spans Sydney Harbour …
CLAIMS = "[date] The Sydney Harbour Bridge opened in 1932.\n[place] It spans Sydney Harbour."
P1 = "The Sydney Harbour Bridge opened to traffic in 1932."
P2 = "The bridge spans Sydney Harbour and is a symbol of Sydney."


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def write(tmp_path: Path, protocol: Path | str, response: str, domains: dict, **kw) -> Path:
    sources = {**EXAMPLE["sources"], "response": response, **kw.pop("sources", {})}
    b = ReplayBuilder(
        protocol,
        sources=sources,
        verdict=kw.pop("verdict", "supported"),
        domains=domains,
        id="pairs",
    )
    src = tmp_path / "r.json"
    b.write(src)
    return src


def propose(
    tmp_path: Path, src: Path, proposer: str = "claims-lexical"
) -> tuple[dict[str, dict], str]:
    out = tmp_path / "out.json"
    res = run("propose", "replay", str(src), "-o", str(out), "--proposer", proposer)
    assert res.exit_code == 0, res.output
    anns = {a["atom"]: a for a in json.loads(out.read_text(encoding="utf-8"))["annotations"]}
    return anns, res.output


DOMAINS = {"claim": ["date", "place"], "passage": ["p1", "p2"]}


def test_support_over_a_claim_and_a_passage_is_filled_pair_by_pair(tmp_path: Path):
    # before, a family over two domains was never filled: its names did not read as a family
    src = write(tmp_path, RAG, CLAIMS, DOMAINS)
    anns, said = propose(tmp_path, src)
    backs = {k: v for k, v in anns.items() if k.startswith("backs")}
    assert sorted(backs) == ["backs(p1, date)", "backs(p2, place)"]  # the compiler's names
    quotes = {k: [(e["source"], e["quote"]) for e in v["evidence"]] for k, v in backs.items()}
    assert quotes == {
        "backs(p1, date)": [("context", "Sydney Harbour Bridge opened to traffic in 1932")],
        "backs(p2, place)": [("context", "spans Sydney Harbour and is a symbol of Sydney")],
    }
    for atom, a in backs.items():
        assert a["value"] == "TRUE"
        assert a["by"] == {"kind": "rule", "name": "claims-lexical/2", "reviewed": False}
        (ev,) = a["evidence"]
        assert CONTEXT[ev["start"] : ev["end"]] == ev["quote"]
        claim = split_applied(atom)[1][1]
        want = f"proposed by claims-lexical/2 (matched claim `{claim}`); match score 1"
        assert a["explanation"] == want
    # the passage a claim does not match is no reading either way: never FALSE, still open
    assert "backs(p2, date)" not in anns and "backs(p1, place)" not in anns
    assert "2 of 9 open atoms filled, unreviewed" in said
    res = run("validate", str(tmp_path / "out.json"))
    assert res.exit_code == 0, res.output
    assert "valid" in res.output


def test_the_places_are_read_from_the_members_not_the_order(tmp_path: Path):
    proto = tmp_path / "swapped.proto"
    proto.write_text(
        RAG.read_text(encoding="utf-8")
        .replace("backs(passage, claim) : context", "backs(claim, passage) : context")
        .replace("backs(p, c)", "backs(c, p)"),
        encoding="utf-8",
    )
    anns, _ = propose(tmp_path, write(tmp_path, proto, CLAIMS, DOMAINS))
    assert sorted(a for a in anns if a.startswith("backs")) == [
        "backs(date, p1)",
        "backs(place, p2)",
    ]
    load_replay(tmp_path / "out.json")


def test_a_single_claim_is_the_whole_response(tmp_path: Path):
    domains = {"claim": ["date"], "passage": ["p1", "p2"]}
    anns, _ = propose(tmp_path, write(tmp_path, RAG, "The bridge opened in 1932.", domains))
    assert [a for a in anns if a.startswith("backs")] == ["backs(p1, date)"]


def test_two_claims_in_prose_abstain(tmp_path: Path):
    prose = "The Sydney Harbour Bridge opened in 1932 and spans Sydney Harbour."
    anns, said = propose(tmp_path, write(tmp_path, RAG, prose, DOMAINS))
    assert not any(a.startswith("backs") for a in anns)
    assert "`backs` does not pair a passage of `context` with a claim of `response`" in said


SAME = """protocol same "Say which claims restate which."
domain claim
atom restates(claim, claim) : context "Claim {1} supports claim {2}"
atom ok : judge "The judge says so"
verdict yes | no
decision yes iff ok
decision no otherwise
"""


def test_a_domain_used_twice_abstains(tmp_path: Path):
    proto = tmp_path / "same.proto"
    proto.write_text(SAME, encoding="utf-8")
    # claims named like the passages: either place could be the passage, so neither is read
    src = write(
        tmp_path,
        proto,
        "[p1] The bridge opened in 1932.\n[p2] It spans Sydney Harbour.",
        {"claim": ["p1", "p2"]},
        verdict="yes",
    )
    anns, said = propose(tmp_path, src)
    assert not any(a.startswith("restates") for a in anns)
    assert "either place of `restates` could be the passage, so neither is read" in said


def test_three_places_abstain(tmp_path: Path):
    proto = tmp_path / "three.proto"
    proto.write_text(
        SAME.replace(
            'atom restates(claim, claim) : context "Claim {1} supports claim {2}"',
            "domain passage\natom backs(passage, claim, passage) : context"
            ' "Passage {1} supports claim {claim} with {3}"',
        ),
        encoding="utf-8",
    )
    domains = {"claim": ["date"], "passage": ["p1", "p2"]}
    src = write(tmp_path, proto, "The bridge opened in 1932.", domains, verdict="yes")
    anns, said = propose(tmp_path, src)
    assert not any(a.startswith("backs") for a in anns)
    assert "`backs` has 3 places; a claim and a passage are two" in said


def test_positions_resolve_by_what_members_name() -> None:
    from unmask.propose.replay import Pairs, resolve_pairs

    pairs = [("p1", "date"), ("p1", "place"), ("p2", "date"), ("p2", "place")]
    got = resolve_pairs("backs", pairs, ["p1", "p2"], ["date", "place"])
    assert got == Pairs(0, 1, {"p1": "p1", "p2": "p2"}, {"date": "date", "place": "place"})
    flipped = resolve_pairs("f", [(c, p) for p, c in pairs], ["p1", "p2"], ["date", "place"])
    assert isinstance(flipped, Pairs) and (flipped.passage_at, flipped.claim_at) == (1, 0)
    # ids named exactly win over ids named by their number
    exact = resolve_pairs("f", [("c1", "p1")], ["p1"], ["c1"])
    assert isinstance(exact, Pairs) and exact.passage_at == 1
    # by number alone both ways fit: abstain
    assert isinstance(resolve_pairs("f", [("c1", "p1")], ["1"], ["1"]), str)
    same = [("c1", "c2"), ("c2", "c1"), ("c1", "c1"), ("c2", "c2")]
    assert "either place" in resolve_pairs("same", same, ["c1", "c2"], ["c1", "c2"])


@pytest.mark.parametrize("name", ["cites(c1, p2)", "f(a)", "g(a, b, c)"])
def test_ground_names_round_trip(name: str) -> None:
    family, members = split_applied(name)
    assert applied(family, members) == name


@pytest.mark.parametrize("name", ["x", "cites(c1,p2)", "cites(c1,  p2)", "f()", "f(1)"])
def test_other_spellings_are_not_ground_names(name: str) -> None:
    assert split_applied(name) is None


# --- judge rules over several domains -------------------------------------------------------

DATA = ROOT / "tests" / "data" / "propose"
RAG_RULES = DATA / "rag_citations.judge.json"
RATIONALE = (
    "Claim date cites passage 2. Claim place cites passages 1 and 2. Every claim cites a"
    " passage, so the answer is supported. Claim `extra` does not cite passage 1."
)


def test_a_rule_with_two_groups_names_the_pair_as_the_compiler_does() -> None:
    from unmask.propose.judge import JudgeRules, load_rules

    got = JudgeRules(load_rules(RAG_RULES)).propose(RATIONALE)
    assert [(p.atom, p.value) for p in got] == [
        ("cites(date, p2)", "TRUE"),
        ("cites(place, p1)", "TRUE"),
        ("cites(place, p2)", "TRUE"),
    ]
    assert [s.quote for s in got[0].spans] == ["Claim date cites passage 2."]
    assert [s.quote for s in got[1].spans] == ["Claim place cites passages 1 and 2."]
    # the negated sentence fills nothing: not FALSE, no annotation at all
    assert not any("extra" in p.atom for p in got)


def test_judge_rules_and_the_claim_proposer_fill_a_replay_over_two_domains(tmp_path: Path):
    rationale = "Claim date cites passage 1. Claim place cites passage 2. I used only the passages."
    src = write(tmp_path, RAG, CLAIMS, DOMAINS, sources={"rationale": rationale})
    out = tmp_path / "out.json"
    res = run("propose", "replay", str(src), "-o", str(out), "--rules", str(RAG_RULES))
    assert res.exit_code == 0, res.output
    obj = json.loads(out.read_text(encoding="utf-8"))
    anns = {a["atom"]: a for a in obj["annotations"]}
    assert {a: (v["value"], v["by"]["name"]) for a, v in anns.items()} == {
        "cites(date, p1)": ("TRUE", "rag-citations/1"),
        "cites(place, p2)": ("TRUE", "rag-citations/1"),
        "backs(p1, date)": ("TRUE", "claims-lexical/2"),
        "backs(p2, place)": ("TRUE", "claims-lexical/2"),
    }
    for a in anns.values():
        assert a["by"]["kind"] == "rule" and a["by"]["reviewed"] is False
        for e in a["evidence"]:
            assert obj["sources"][e["source"]][e["start"] : e["end"]] == e["quote"]
    assert anns["cites(date, p1)"]["evidence"][0]["quote"] == "Claim date cites passage 1."
    res = run("validate", str(out))
    assert res.exit_code == 0 and "valid" in res.output, res.output
    # each proposed citation is backed by a proposed reading, and rests on both, unreviewed
    res = run("check", str(out))
    assert "`cites(date, p1)` ~> `backs(p1, date)`: ENTAILED (rests on 1 unreviewed" in res.output
    assert "VIOLATED" not in res.output, res.output


def test_propose_judge_reads_a_rationale_nested_in_a_judge_output(tmp_path: Path):
    # a line shaped as `unmaskc --emit judge-schema` says: the rationale beside the nested
    # statements of a family over two domains (`atoms.cites.date.p2`)
    line = {
        "id": "r1",
        "output": {
            "rationale": RATIONALE,
            "verdict": "supported",
            "atoms": {"cites": {"date": {"p2": {"value": "TRUE", "quotes": ["cites passage 2"]}}}},
        },
    }
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps(line) + "\n", encoding="utf-8")
    res = run(
        "propose", "judge", str(inp), "--rules", str(RAG_RULES), "--field", "output.rationale"
    )
    assert res.exit_code == 0, res.output
    (row,) = [json.loads(x) for x in res.output.splitlines() if x.startswith("{")]
    assert [a["atom"] for a in row["annotations"]] == [
        "cites(date, p2)",
        "cites(place, p1)",
        "cites(place, p2)",
    ]
    assert all(
        a["by"] == {"kind": "rule", "name": "rag-citations/1", "reviewed": False}
        for a in row["annotations"]
    )
    # pointing at the output itself names where its rationale is (before: only "an object")
    res = run("propose", "judge", str(inp), "--rules", str(RAG_RULES), "--field", "output")
    assert res.exit_code == 4
    assert "field `output` must be a string, found an object whose rationale is" in res.output
    assert "`output.rationale`" in res.output


def test_a_number_list_in_one_place_and_a_name_in_the_other_are_bounded() -> None:
    from unmask.propose.judge import MAX_RANGE, parse_rules

    rules = {
        "schema": "unmask.judge-rules/1",
        "rules": [
            {
                "name": "pairs",
                "pattern": r"(\d+(?:-\d+)?) with (\d+(?:-\d+)?)",
                "atom": "same",
                "member": ["c{1}", "c{2}"],
                "values": "numbers",
                "confidence": 1,
            }
        ],
    }
    rule = parse_rules(rules).rules[0]
    assert rule.members("1-2", "3") == ["same(c1, c3)", "same(c2, c3)"]
    assert rule.members("2", "2") == ["same(c2, c2)"]  # a domain used twice, by position
    assert rule.members(f"1-{MAX_RANGE}", "1-2") == []  # past the bound: nothing proposed


# --- the answer's own citation markers ------------------------------------------------------

ANSWER = """protocol rag_answer "Check that every citation in the answer backs its claim."
domain claim
domain passage
atom cites(claim, passage) : context "Claim {claim} of the answer cites passage {passage}"
atom cited(passage) : context "The answer cites passage {passage}"
atom backs(passage, claim) : context "Passage {passage} supports claim {claim}"
atom ok : judge "The judge says every citation backs its claim"
verdict good | bad
decision good iff ok
decision bad otherwise
"""
CITED = (
    "[date] The Sydney Harbour Bridge opened in 1932 [p1].\n"
    "[place] It spans Sydney Harbour [p1, p2]."
)


def test_the_answer_s_markers_say_which_passage_each_claim_cites(tmp_path: Path):
    proto = tmp_path / "rag_answer.proto"
    proto.write_text(ANSWER, encoding="utf-8")
    src = write(tmp_path, proto, CITED, DOMAINS, verdict="good")
    out = tmp_path / "out.json"
    res = run("propose", "replay", str(src), "-o", str(out))
    assert res.exit_code == 0, res.output
    obj = json.loads(out.read_text(encoding="utf-8"))
    anns = {a["atom"]: a for a in obj["annotations"]}
    quotes = {
        k: [e["quote"] for e in a["evidence"]] for k, a in anns.items() if k.startswith("cite")
    }
    assert quotes == {
        "cites(date, p1)": ["[p1]"],
        "cites(place, p1)": ["[p1, p2]"],
        "cites(place, p2)": ["[p1, p2]"],
        "cited(p1)": ["[p1]", "[p1, p2]"],
        "cited(p2)": ["[p1, p2]"],
    }
    for k in quotes:
        a = anns[k]
        assert a["value"] == "TRUE"
        assert a["by"] == {"kind": "rule", "name": "answer-citations/1", "reviewed": False}
        assert all(e["source"] == "response" for e in a["evidence"])
        assert all(CITED[e["start"] : e["end"]] == e["quote"] for e in a["evidence"])
    # a passage a claim does not cite stays open: not citing is not a statement
    assert "cites(date, p2)" not in anns
    # the markers are no terms of the claims: support is read as without them
    assert anns["backs(p1, date)"]["value"] == "TRUE"
    assert anns["backs(p2, place)"]["value"] == "TRUE"
    assert run("validate", str(out)).exit_code == 0


def test_a_claim_line_s_own_id_is_no_citation(tmp_path: Path):
    # claims numbered like the passages: `[1]` before a claim is its id, not a marker
    proto = tmp_path / "rag_answer.proto"
    proto.write_text(ANSWER, encoding="utf-8")
    src = write(
        tmp_path,
        proto,
        "[1] The bridge opened in 1932 [2].\n[2] It spans Sydney Harbour.",
        {"claim": ["c1", "c2"], "passage": ["p1", "p2"]},
        verdict="good",
        sources={"context": f"[1] {P1}\n[2] {P2}"},
    )
    anns, said = propose(tmp_path, src, "answer-citations")
    assert sorted(anns) == ["cited(p2)"]
    # `c1` and `p1` both name claim 1 and passage 1 by number: neither place is read
    assert "either place of `cites` could be the passage, so neither is read" in said


def test_a_structured_judge_over_two_domains_then_the_proposers(tmp_path: Path):
    # the judge states its citations nested as `unmaskc --emit judge-schema` says
    # (`atoms.cites.date.p1`); the pipeline gives the claims and passages with its own ids;
    # the claim proposer then reads which passage backs which claim
    rationale = "The date is in passage p1. The place is in passage p2."
    statement = {"value": "TRUE", "quotes": []}
    record = {
        "judge": "judge-x",
        "id": "bridge",
        "sources": {
            "response": [
                {"id": "date", "text": "The Sydney Harbour Bridge opened in 1932."},
                {"id": "place", "text": "It spans Sydney Harbour."},
            ],
            "context": [{"id": "p1", "text": P1}, {"id": "p2", "text": P2}],
        },
        "domains": DOMAINS,
        "output": {
            "rationale": rationale,
            "verdict": "supported",
            "atoms": {
                "cites": {
                    "date": {"p1": {**statement, "quotes": ["The date is in passage p1."]}},
                    "place": {"p2": {**statement, "quotes": ["The place is in passage p2."]}},
                },
                "external": {"value": "FALSE", "quotes": ["The date is in passage p1."]},
            },
        },
    }
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text(json.dumps(record) + "\n", encoding="utf-8")
    res = run(
        "import", "structured", str(judgments), "--protocol", str(RAG), "--out", str(tmp_path / "r")
    )
    assert res.exit_code == 0, res.output
    (replay,) = sorted((tmp_path / "r").glob("*.json"))
    anns, _ = propose(tmp_path, replay)
    assert {a: v["value"] for a, v in anns.items() if a.startswith(("cites", "backs"))} == {
        "cites(date, p1)": "TRUE",  # the judge's own, imported
        "cites(place, p2)": "TRUE",
        "backs(p1, date)": "TRUE",  # proposed
        "backs(p2, place)": "TRUE",
    }
    assert anns["backs(p1, date)"]["by"]["name"] == "claims-lexical/2"
    res = run("check", str(tmp_path / "out.json"))
    assert "`cites(place, p2)` ~> `backs(p2, place)`: ENTAILED" in res.output, res.output


def test_markers_name_passages_by_id_or_number_and_are_bounded() -> None:
    import time

    from unmask.propose.passages import MAX_MARKERS, markers, without_markers

    text = "Opened in 1932 [p1, 2]; spans the harbour [1] [sic] [p9]."
    assert markers(text, ["p1", "p2"]) == {"p1": [(15, 22), (42, 45)], "p2": [(15, 22)]}
    assert markers("[1, p1]", ["p1"]) == {"p1": [(0, 7)]}  # one marker, named twice
    blank = without_markers(text)  # every bracketed marker, same length, so spans still fit
    assert blank.split() == ["Opened", "in", "1932", ";", "spans", "the", "harbour", "."]
    assert len(blank) == len(text)
    ids = [f"p{k}" for k in range(200)]
    start = time.monotonic()
    assert markers("[p1]" * (MAX_MARKERS + 1), ids) == {}  # past the bound: nothing read
    assert len(markers("[p1]" * MAX_MARKERS, ids)["p1"]) == MAX_MARKERS
    assert markers("[" + "a, " * 100_000, ids) == {}
    assert time.monotonic() - start < 2  # each list of spans grows at its end, not by search
