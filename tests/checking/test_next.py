"""`unmask next`: open checks, what they depend on, what one annotation would settle.

- an exhaustive oracle re-derives every open check, its cone of free atoms, the status each
  value of each atom would give (truth tables over every assignment, no solver) and the
  ranked to-do list, on seeded random protocols and replays;
- every backend gives the same answer (the backend matrix fixture), on hypothesis replays;
- the command: single replays, directories, an audit's results file re-read from its
  locations, both formats, and every exit status.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings

from tests.checking.test_checker import make_replay
from tests.checking.test_differential import Table, V
from tests.strategies import random_protocol, random_replay, replays
from unmask.api import load
from unmask.backends import available, create
from unmask.checking.checker import Case
from unmask.checking.next import merge, next_steps, rank_todo
from unmask.cli.main import main
from unmask.ir import (
    AtomDecl,
    Binary,
    Constraint,
    GroundPair,
    Nary,
    Not,
    Protocol,
    Requirement,
    iter_atoms,
    mk_atom,
)
from unmask.replay.data import Replay

A = mk_atom
BACKENDS = available()


def run_next(replay: Replay, backend: str = "sliced") -> dict:
    return next_steps(Case.from_replay(replay), create(backend)).to_json()


# --- the oracle -----------------------------------------------------------------------------


def oracle(replay: Replay) -> dict:
    """Open checks, cones and per-value statuses by truth tables; the ranked to-do list."""
    p = replay.protocol
    table = Table([*p.atom_names, V])
    facts = {a.atom: a.value == "TRUE" for a in replay.annotations if a.value != "UNKNOWN"}
    unknown = {a.atom for a in replay.annotations if a.value == "UNKNOWN"}
    fact_parts = [A(n) if v else Not(A(n)) for n, v in facts.items()]
    proto_parts = [c.expr for c in p.constraints] + [Binary("iff", A(V), p.decision)]
    bases = {"evid": fact_parts, "all": fact_parts + proto_parts}
    masks = {}
    for name, parts in bases.items():
        m = table.full
        for e in parts:
            m &= table.mask(e)
        masks[name] = m
    phi_v = A(V) if replay.verdict == "PASS" else Not(A(V))
    checks = [("verdict", "all", phi_v)]
    for r in p.requirements:
        checks.append((f"requirement:{r.id}", "evid", r.expr))
        if r.addressed is not None:
            checks.append((f"coverage:{r.id}", "evid", r.addressed))
    for g in p.grounding:
        checks.append((f"grounding:{g.judge.name}~{g.context.name}", "evid", g.query))
    if replay.translation != "valid":
        return {"open": [], "undecided": [c[0] for c in checks], "todo": []}
    order = list(p.atom_names)
    opened, undecided = [], []
    for subject, base_name, phi in checks:
        base = masks[base_name]
        if not base:
            undecided.append(subject)
            continue
        phi_m = table.mask(phi)
        if table.classify(base, phi_m) != "UNDERDETERMINED":
            continue
        # the cone: φ's atoms, grown through every base part that shares an atom with it
        cone = set(iter_atoms(phi))
        grown = True
        while grown:
            grown = False
            for e in bases[base_name]:
                atoms = set(iter_atoms(e))
                if atoms & cone and not atoms <= cone:
                    cone |= atoms
                    grown = True
        effects = []
        for a in order:
            if a in facts:
                continue
            side = {}
            for v in (True, False):
                pinned = base & (table.mask(A(a)) if v else table.full ^ table.mask(A(a)))
                side[v] = table.classify(pinned, phi_m) if pinned else "INCONSISTENT"
            if a not in cone:
                # outside the cone an atom cannot settle the check: each value leaves it open
                # or contradicts a part of the base that has nothing to do with it
                assert set(side.values()) <= {"UNDERDETERMINED", "INCONSISTENT"}, (subject, a)
                continue
            effects.append(
                {
                    "atom": a,
                    "state": "UNKNOWN" if a in unknown else "unannotated",
                    "if_true": side[True],
                    "if_false": side[False],
                }
            )
        opened.append({"check": subject, "depends_on": effects})
    todo: dict[str, tuple[list[str], list[str]]] = {}
    for c in opened:
        for e in c["depends_on"]:
            t, f = todo.setdefault(e["atom"], ([], []))
            if e["if_true"] in ("ENTAILED", "REFUTED"):
                t.append(c["check"])
            if e["if_false"] in ("ENTAILED", "REFUTED"):
                f.append(c["check"])
    ranked = sorted(
        ((a, t, f) for a, (t, f) in todo.items() if t or f),
        key=lambda x: (-len(set(x[1]) | set(x[2])), -len(set(x[1]) & set(x[2])), order.index(x[0])),
    )
    return {
        "open": opened,
        "undecided": undecided,
        "todo": [{"atom": a, "if_true": t, "if_false": f} for a, t, f in ranked],
    }


def simplified(got: dict) -> dict:
    return {
        "open": [
            {
                "check": c["check"],
                "depends_on": [
                    {
                        "atom": e["atom"],
                        "state": e["state"],
                        "if_true": e["if_true"]["status"],
                        "if_false": e["if_false"]["status"],
                    }
                    for e in c["depends_on"]
                ],
            }
            for c in got["open"]
        ],
        "undecided": [u["check"] for u in got["undecided"]],
        "todo": [
            {"atom": t["atom"], "if_true": t["if_true"], "if_false": t["if_false"]}
            for t in got["todo"]
        ],
    }


def test_every_answer_matches_the_exhaustive_oracle():
    rng = random.Random(20261130)
    seen_open = seen_settle = 0
    for i in range(600):
        protocol = random_protocol(rng, rng.randrange(1, 6))
        replay = random_replay(rng, protocol)
        backend = BACKENDS[i % len(BACKENDS)]
        got = run_next(replay, backend)
        assert simplified(got) == oracle(replay), (i, backend)
        seen_open += len(got["open"])
        seen_settle += len(got["todo"])
    # the sweep is not vacuous: it met open checks and atoms that settle them
    assert seen_open > 200 and seen_settle > 100


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(replays(max_atoms=8))
def test_every_backend_gives_the_same_answer(backend_name, replay):
    got = run_next(replay, backend_name)
    assert got.pop("backend") == backend_name
    want = run_next(replay, "truthtable")
    want.pop("backend")
    assert got == want
    assert simplified(got) == oracle(replay)


# --- the semantics on small cases -----------------------------------------------------------


def protocol(decision, requirements=(), grounding=(), constraints=()) -> Protocol:
    names = ("a", "b", "c", "j", "k")
    roles = ("judge", "judge", "judge", "judge", "context")
    return Protocol(
        name="p",
        text="",
        atoms=tuple(AtomDecl(n, r) for n, r in zip(names, roles, strict=True)),
        constraints=tuple(constraints),
        decision=decision,
        requirements=tuple(requirements),
        grounding=tuple(grounding),
    )


def test_a_conjunction_is_settled_only_by_a_false_conjunct(backend_name):
    p = protocol(Nary("and", (A("a"), A("b"), A("c"))))
    got = run_next(make_replay(p, "PASS", {"a": "TRUE"}), backend_name)
    (verdict,) = got["open"]
    assert verdict["check"] == "verdict"
    effects = {e["atom"]: e for e in verdict["depends_on"]}
    assert list(effects) == ["b", "c"]  # a is pinned; j and k are outside the decision
    assert effects["b"]["if_false"] == {"status": "REFUTED", "settles": True, "outcome": "VIOLATED"}
    assert effects["b"]["if_true"] == {"status": "UNDERDETERMINED", "settles": False}
    # ties are broken by declaration order
    assert [t["atom"] for t in got["todo"]] == ["b", "c"]
    assert got["todo"][0] == {
        "atom": "b",
        "settles": 1,
        "settles_either_way": 0,
        "if_true": [],
        "if_false": ["verdict"],
    }


def test_the_atom_that_settles_most_checks_comes_first(backend_name):
    p = protocol(
        A("c"),
        requirements=[
            Requirement("r1", "", A("b"), None),
            Requirement("r2", "", Nary("or", (A("b"), A("a"))), A("b")),
        ],
        grounding=[GroundPair("j", "k")],
    )
    got = run_next(make_replay(p, "PASS", {"j": "TRUE"}), backend_name)
    assert [c["check"] for c in got["open"]] == [
        "verdict",
        "requirement:r1",
        "requirement:r2",
        "coverage:r2",
        "grounding:j~k",
    ]
    order = [(t["atom"], t["settles"], t["settles_either_way"]) for t in got["todo"]]
    # b settles r1 and r2's coverage either way, and r2 when TRUE
    assert order == [("b", 3, 2), ("c", 1, 1), ("k", 1, 1), ("a", 1, 0)]


def test_a_value_the_protocol_rules_out_is_inconsistent_not_settling(backend_name):
    # constraint: a implies b; with a unknown, b unknown: b FALSE forces a FALSE
    p = protocol(A("a"), constraints=[Constraint("k", Binary("implies", A("a"), A("b")))])
    got = run_next(make_replay(p, "PASS", {"b": "FALSE"}), backend_name)
    # b is FALSE, so a must be FALSE: the verdict PASS is refuted, nothing is open
    assert got["open"] == []
    got = run_next(make_replay(p, "PASS", {"a": "TRUE"}), backend_name)
    assert got["open"] == []  # a TRUE settles PASS
    p2 = protocol(
        Nary("and", (A("a"), A("c"))),
        constraints=[Constraint("k", Binary("implies", A("a"), A("b")))],
    )
    got = run_next(make_replay(p2, "PASS", {"b": "FALSE", "c": "TRUE"}), backend_name)
    assert got["open"] == []
    got = run_next(make_replay(p2, "FAIL", {"c": "TRUE"}), backend_name)
    effects = {e["atom"]: e for e in got["open"][0]["depends_on"]}
    assert effects["b"]["if_false"]["status"] == "ENTAILED"  # forces a FALSE, so FAIL
    assert effects["b"]["if_true"]["status"] == "UNDERDETERMINED"


def test_an_inconsistent_base_is_undecided_not_open(backend_name):
    p = protocol(A("a"), constraints=[Constraint("x", A("a")), Constraint("y", Not(A("a")))])
    got = run_next(make_replay(p, "PASS", {}), backend_name)
    assert got["open"] == []
    assert got["undecided"] == [
        {"check": "verdict", "status": "INCONSISTENT_BASE", "detail": "base `all`"}
    ]


# --- batches --------------------------------------------------------------------------------


def test_a_batch_groups_by_protocol_and_atom():
    p = protocol(
        Nary("and", (A("a"), A("b"))), requirements=[Requirement("r", "", Not(A("c")), None)]
    )
    reports = []
    for i, values in enumerate(({"a": "TRUE"}, {}, {"b": "TRUE", "c": "FALSE"})):
        r = next_steps(Case.from_replay(make_replay(p, "PASS", values)), create("sliced"))
        reports.append(dataclass_replace(r, location=f"r{i}.json"))
    batch = merge(reports)
    got = [(t.protocol, t.atom, t.settles, t.replays) for t in batch.todo]
    # c settles r in two replays; b settles the verdict in two (r0, r1), a in two (r1, r2)
    assert got == [("p", "c", 2, 2), ("p", "a", 2, 2), ("p", "b", 2, 2)]
    assert batch.todo[0].if_true == ("r0.json: requirement:r", "r1.json: requirement:r")
    assert rank_todo(reports[0].todo, reports[0].order) == list(reports[0].todo)


def dataclass_replace(obj, **kw):
    import dataclasses

    return dataclasses.replace(obj, **kw)


# --- the command ----------------------------------------------------------------------------


def cli(*args: str):
    return CliRunner().invoke(main, ["next", *args])


def test_the_command_on_the_examples(examples_dir: Path):
    r = cli(str(examples_dir / "case_a.json"))
    assert r.exit_code == 0, r.output
    assert "0 of 5 checks open" in r.output
    r = cli(str(examples_dir / "case_unknown.json"), "--format", "json")
    assert r.exit_code == 1
    doc = json.loads(r.output)
    assert doc["schema"] == "unmask.next/1" and doc["backend"] == "sliced"
    assert [t["atom"] for t in doc["todo"]] == ["external", "disclosed"]
    text = cli(str(examples_dir / "case_unknown.json")).output
    assert "external (UNKNOWN): TRUE → REFUTED (violated), FALSE → ENTAILED (ok)" in text
    assert "disclosed (unannotated): TRUE → ENTAILED (ok), FALSE → REFUTED (unknown)" in text


def test_the_command_gives_the_same_json_on_every_backend(examples_dir: Path, backend_name):
    path = str(examples_dir / "case_unknown.json")
    got = json.loads(cli(path, "--format", "json", "--backend", backend_name).output)
    want = json.loads(cli(path, "--format", "json").output)
    assert got.pop("backend") == backend_name
    want.pop("backend")
    assert got == want


def test_exit_statuses(tmp_path: Path, examples_dir: Path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    assert cli(str(bad)).exit_code == 4
    assert cli(str(examples_dir / "case_a.json"), "--backend", "nope").exit_code == 2
    assert cli(str(tmp_path / "missing.json")).exit_code == 2
    partial = json.loads((examples_dir / "case_unknown.json").read_text(encoding="utf-8"))
    partial["translation"] = {"status": "partial"}
    partial["protocol"] = {"path": str(examples_dir / "factual_claims.proto")}
    shutil.copy(examples_dir / "factual_claims.proto", tmp_path / "factual_claims.proto")
    partial["protocol"] = {"path": "factual_claims.proto"}
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(partial), encoding="utf-8")
    r = cli(str(path))
    assert r.exit_code == 3, r.output  # nothing open, nothing settled: not by annotation
    assert "not settled and no annotation settles it" in r.output


def test_an_audit_results_file_is_re_read_from_its_locations(
    tmp_path: Path, examples_dir: Path, monkeypatch
):
    for name in ("case_a.json", "case_unknown.json", "factual_claims.proto"):
        shutil.copy(examples_dir / name, tmp_path / name)
    src = json.loads((examples_dir / "case_unknown.json").read_text(encoding="utf-8"))
    (tmp_path / "case_unknown2.json").write_text(json.dumps(src), encoding="utf-8")
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "results.jsonl"
    CliRunner().invoke(main, ["audit", ".", "--out", str(out), "--quiet"])
    assert out.read_text(encoding="utf-8").count("\n") == 4
    r = cli(str(out), "--format", "json")
    assert r.exit_code == 1, r.output  # something is open
    doc = json.loads(r.stdout)
    assert doc["schema"] == "unmask.checking.next-batch/1"
    locations = [x["location"] for x in doc["replays"]]
    assert [Path(x).name for x in locations] == [
        "case_a.json",
        "case_unknown.json",
        "case_unknown2.json",
    ]
    assert [x["reason"] for x in doc["not_checked"]] == ["the audit could not check it"]
    top = doc["todo"][0]
    assert (top["protocol"], top["atom"], top["replays"], top["settles"]) == (
        "factual_claims_disclosed",
        "external",
        2,
        2,
    )
    # a location that is gone: reported, the rest still listed, exit 4
    (tmp_path / "case_unknown2.json").unlink()
    r = cli(str(out))
    assert r.exit_code == 4
    assert "cannot re-read" in r.stderr
    assert "to do, most open checks settled first:" in r.stdout
    # from another folder, --root names where the audit ran
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    r = cli(str(out), "--root", str(tmp_path))
    assert r.exit_code == 4 and "external" in r.stdout


def test_a_directory_is_a_batch(tmp_path: Path, examples_dir: Path):
    for name in ("case_unknown.json", "factual_claims.proto"):
        shutil.copy(examples_dir / name, tmp_path / name)
    r = cli(str(tmp_path))
    assert r.exit_code == 1
    assert r.output.startswith("1 replay: 2 of 5 checks open\n")


def test_load_is_the_api_loader(examples_dir: Path):
    # the command reads replays as `unmask check` does
    replay = load(examples_dir / "case_unknown.json")
    assert run_next(replay)["replay"] == "case-unknown"


def test_the_text_form_cannot_drive_the_terminal():
    from unmask.commands.next import render_text

    p = protocol(Nary("and", (A("a"), A("b"))))
    replay = make_replay(p, "PASS", {"a": "TRUE"}, id="x\x1b[2Jy")
    text = render_text(next_steps(Case.from_replay(replay), create("sliced")))
    assert "\x1b" not in text
    assert text.startswith("replay `x")


def test_json_lines_locations_are_re_read_line_by_line(
    tmp_path: Path, examples_dir: Path, monkeypatch
):
    replay = json.loads((examples_dir / "case_unknown.json").read_text(encoding="utf-8"))
    assert "schema" in replay["protocol"]  # inline: a JSON Lines record needs no file beside it
    lines = [json.dumps(replay), "", json.dumps(dict(replay, id="again"))]
    (tmp_path / "replays.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    CliRunner().invoke(main, ["audit", "replays.jsonl", "--out", "results.jsonl", "--quiet"])
    r = cli("results.jsonl", "--format", "json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    assert [x["location"] for x in doc["replays"]] == ["replays.jsonl:1", "replays.jsonl:3"]
    assert [x["replay"] for x in doc["replays"]] == ["case-unknown", "again"]
    top = doc["todo"][0]
    assert top["replays"] == 2
    assert top["if_true"] == [
        "replays.jsonl:1: requirement:context_only",
        "replays.jsonl:3: requirement:context_only",
    ]
    # the same file given directly is a batch of replays, not of results
    r = cli("replays.jsonl", "--format", "json")
    assert json.loads(r.stdout)["todo"][0]["replays"] == 2


def test_a_results_file_with_bad_lines(tmp_path: Path, examples_dir: Path, monkeypatch):
    shutil.copy(examples_dir / "case_unknown.json", tmp_path / "case_unknown.json")
    monkeypatch.chdir(tmp_path)
    good = {"schema": "unmask.report/1", "location": "case_unknown.json"}
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({"schema": "unmask.report/1", "location": 5}),
        json.dumps({"schema": "unmask.error/1", "location": "gone.json", "errors": []}),
        json.dumps({"schema": "unmask.report/1", "location": "<stdin>:3"}),
    ]
    (tmp_path / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = cli("results.jsonl", "--format", "json")
    assert r.exit_code == 4
    doc = json.loads(r.stdout)
    assert [x["location"] for x in doc["replays"]] == ["case_unknown.json"]
    assert [x["location"] for x in doc["not_checked"]] == ["gone.json"]
    assert [x["location"] for x in doc["errors"]] == [
        "results.jsonl:2",
        "results.jsonl:3",
        "<stdin>:3",
    ]
    assert "results.jsonl:2:1: error: not a result line: not valid JSON" in r.stderr
    assert "the audit read it from stdin" in r.stderr
    assert "Traceback" not in r.output


def test_a_results_line_of_too_many_values_is_refused_before_parsing(
    tmp_path: Path, examples_dir: Path, monkeypatch
):
    # issue 33: every JSON input is counted before it is built, a results line too
    shutil.copy(examples_dir / "case_unknown.json", tmp_path / "case_unknown.json")
    monkeypatch.chdir(tmp_path)
    good = {"schema": "unmask.report/1", "location": "case_unknown.json"}
    big = dict(good, pad=[{}] * 200)
    lines = [json.dumps(good), json.dumps(big)]
    (tmp_path / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = cli("results.jsonl", "--format", "json", "--max-json-values", "300")
    assert r.exit_code == 4
    assert "results.jsonl:2:1: error: a line of more than 300 JSON values" in r.stderr
    assert [x["location"] for x in json.loads(r.stdout)["replays"]] == ["case_unknown.json"]
    assert cli("results.jsonl", "--format", "json", "--max-json-values", "500").exit_code != 4


def test_a_backend_that_cannot_take_the_replay_is_not_an_invalid_input(tmp_path: Path):
    from unmask.ir.json import protocol_to_json

    names = [f"x{i}" for i in range(30)]
    p = Protocol(
        name="wide",
        text="",
        atoms=tuple(AtomDecl(n, "judge") for n in names),
        constraints=(),
        decision=Nary("and", tuple(A(n) for n in names)),
        requirements=(),
        grounding=(),
    )
    doc = {
        "schema": "unmask.replay/1",
        "id": "wide",
        "protocol": protocol_to_json(p),
        "sources": {"rationale": "r"},
        "verdict": "PASS",
        "annotations": [],
    }
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    r = cli(str(path), "--backend", "truthtable")
    assert r.exit_code == 3, r.output
    assert "Traceback" not in r.output
    assert cli(str(path)).exit_code == 1  # the default backend takes it: the verdict is open


def test_labelled_protocol_asks_for_the_observed_label() -> None:
    # claim_parts: `supported` iff every part is said supported; said(medal) is unannotated
    path = Path(__file__).resolve().parents[2] / "examples" / "claim_parts_underdetermined.json"
    outs = []
    for backend in available():
        args = ["next", str(path), "--format", "json", "--backend", backend]
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 1, res.output
        outs.append({k: v for k, v in json.loads(res.stdout).items() if k != "backend"})
    assert all(o == outs[0] for o in outs)  # the same answer on every backend
    out = outs[0]
    verdict = next(c for c in out["open"] if c["check"] == "verdict")
    (dep,) = verdict["depends_on"]
    assert dep["atom"] == "said(medal)"
    assert (dep["if_true"]["status"], dep["if_false"]["status"]) == ("ENTAILED", "REFUTED")
    assert [c["check"] for c in out["open"]] == ["verdict", "grounding:said(medal)~>backed(medal)"]
