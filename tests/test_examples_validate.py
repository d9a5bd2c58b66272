"""The shipped examples: every replay validates, every one has expected results in
``tests/data/examples_expected.json``, and those expectations agree with the semantics of a
check computed here by brute force over every completion of the unknown atoms (independent
of any solver)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from unmask import ir
from unmask.model import Replay
from unmask.replay import load_replay

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REPLAYS = sorted(p.name for p in EXAMPLES.glob("*.json"))
EXPECTED = json.loads(
    (EXAMPLES.parent / "tests" / "data" / "examples_expected.json").read_text(encoding="utf-8")
)
V = "\0verdict"  # cannot clash with an atom name


@pytest.mark.parametrize("name", REPLAYS)
def test_example_validates(name):
    r = load_replay(EXAMPLES / name)
    assert isinstance(r, Replay)
    assert r.warnings == ()
    for a in r.annotations:
        for e in a.evidence:
            assert r.sources[e.source][e.start : e.end] == e.quote


def test_every_example_has_expectations():
    assert sorted(k for k in EXPECTED if not k.startswith("_")) == REPLAYS


def test_examples_cover_every_protocol_form():
    forms = set()
    for name in REPLAYS:
        raw = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
        forms |= {k for k in ("schema", "path", "source") if k in raw["protocol"]}
        if "domains" in raw:
            assert load_replay(EXAMPLES / name).protocol.atom("supported(cto)") is not None
    assert forms == {"schema", "path", "source"}


def test_unicode_example_separates_code_points_utf16_and_utf8():
    r = load_replay(EXAMPLES / "case_unicode.json")
    units = set()
    for a in r.annotations:
        for e in a.evidence:
            text = r.sources[e.source]
            prefix = text[: e.start]
            units.add(
                (
                    len(prefix) != len(prefix.encode("utf-16-le")) // 2,
                    len(prefix) != len(prefix.encode("utf-8")),
                )
            )
    assert (True, True) in units


def test_article_cases_differ_as_the_article_says():
    a, b, c, d = (load_replay(EXAMPLES / f"case_{x}.json") for x in "abcd")
    assert a.sources["response"] == "Alice joined ACME in 2024 and is its CTO."
    assert all(r.sources["response"] == a.sources["response"] for r in (b, c, d))
    assert all(r.sources["context"] == "Alice joined ACME in 2024." for r in (b, c, d))
    assert "outside knowledge" in b.annotation("external").evidence[0].quote
    assert [r.gold for r in (a, b, c, d)] == ["PASS", "FAIL", "FAIL", "FAIL"]


# --- the semantics of a check, by brute force ------------------------------------------------


def _classify(base, phi, free):
    models = []
    for bits in itertools.product((False, True), repeat=len(free)):
        env = dict(zip(free, bits, strict=True))
        if base(env):
            models.append(phi(env))
    if not models:
        return "INCONSISTENT_BASE"
    if all(models):
        return "ENTAILED"
    if not any(models):
        return "REFUTED"
    return "UNDERDETERMINED"


def _brute_force(r: Replay) -> dict:
    p = r.protocol
    fixed = {a.atom: a.value == "TRUE" for a in r.annotations if a.value != "UNKNOWN"}
    names = [*p.atom_names, V]

    def evid(env):
        return all(env[k] == v for k, v in fixed.items())

    def proto(env):
        k = all(ir.evaluate(c.expr, env) for c in p.constraints)
        return k and env[V] == ir.evaluate(p.decision, env)

    def full(env):
        return proto(env) and evid(env)

    def consistent(base):
        envs = (
            dict(zip(names, bits, strict=True))
            for bits in itertools.product((False, True), repeat=len(names))
        )
        return "CONSISTENT" if any(base(env) for env in envs) else "INCONSISTENT"

    want = r.verdict == "PASS"
    out = {
        "bases": {"proto": consistent(proto), "evid": consistent(evid), "all": consistent(full)},
        "verdict": {
            "observed": r.verdict,
            "status": _classify(full, lambda env: env[V] == want, names),
        },
        "requirements": [
            {
                "id": q.id,
                "status": _classify(evid, lambda env, q=q: ir.evaluate(q.expr, env), names),
                "coverage": "NOT_SPECIFIED"
                if q.addressed is None
                else _classify(evid, lambda env, q=q: ir.evaluate(q.addressed, env), names),
            }
            for q in p.requirements
        ],
        "grounding": [
            {
                "judge": g.judge.name,
                "context": g.context.name,
                "status": _classify(
                    evid, lambda env, g=g: env[g.judge.name] == env[g.context.name], names
                ),
            }
            for g in p.grounding
        ],
    }
    results = [{"ENTAILED": "OK", "REFUTED": "VIOLATED"}.get(out["verdict"]["status"], "UNKNOWN")]
    for q in out["requirements"]:
        results.append({"ENTAILED": "OK", "REFUTED": "VIOLATED"}.get(q["status"], "UNKNOWN"))
        if q["coverage"] != "NOT_SPECIFIED":
            results.append("OK" if q["coverage"] == "ENTAILED" else "UNKNOWN")
    for g in out["grounding"]:
        results.append({"ENTAILED": "OK", "REFUTED": "VIOLATED"}.get(g["status"], "UNKNOWN"))
    if "VIOLATED" in results:
        overall = "VIOLATED"
    elif all(x == "OK" for x in results) and p.requirements and p.grounding:
        overall = "SATISFIED"
    else:
        overall = "UNKNOWN"
    out["overall"] = overall
    out["unannotated"] = list(r.unannotated)
    out["gold"] = r.gold
    out["verdict_matches_gold"] = None if r.gold is None else r.gold == r.verdict
    out["replay"] = r.id
    return out


@pytest.mark.parametrize("name", REPLAYS)
def test_expected_results_follow_from_the_semantics(name):
    r = load_replay(EXAMPLES / name)
    exp = {k: v for k, v in EXPECTED[name].items()}
    assert _brute_force(r) == exp


def test_expected_statuses_of_the_article_cases():
    # the article's findings, stated independently of the brute force above
    got = {
        n: EXPECTED[n]["overall"]
        for n in ("case_a.json", "case_b.json", "case_c.json", "case_d.json")
    }
    assert got == {
        "case_a.json": "SATISFIED",
        "case_b.json": "VIOLATED",
        "case_c.json": "VIOLATED",
        "case_d.json": "VIOLATED",
    }
    assert EXPECTED["case_c.json"]["grounding"][1]["status"] == "REFUTED"
    assert EXPECTED["case_d.json"]["verdict"]["status"] == "REFUTED"
    assert EXPECTED["case_unknown.json"]["requirements"][0]["coverage"] == "UNDERDETERMINED"
