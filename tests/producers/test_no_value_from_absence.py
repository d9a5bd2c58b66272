"""No value from absence: removing something from a producer's input never makes an atom FALSE.

For every importer, on its test inputs, and for the proposers that fill replays: remove one
field (a key of an object) or one mark (an entry of a list of plain values, such as WiCE's
`oracle_idx`) and import again. An atom may lose its value (become UNKNOWN) or keep it; it
may never become FALSE where it was TRUE or UNKNOWN, since "not there" is not "no"
(docs/semantics.md, "No value from absence"). The one exception is a format's own documented
default for a field it leaves out, listed in `FORMAT_DEFAULTS` with the reason.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from unmask.importers import Imported, Options, get

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "importers"
MAX_CUTS = 60  # perturbations per input, spread evenly over all of them (plus every `ALWAYS` key)

# (importer, atom family, the last two keys of the path removed) → why its absence means
# FALSE: the format's own default for that one key where it is (removing anything else, or the
# same key elsewhere, must still never give FALSE)
FORMAT_DEFAULTS = {
    ("promptfoo", "thresholded", ("testCase", "threshold")): (
        "promptfoo writes the threshold a test case ran with into it (its own, else"
        " `defaultTest`'s) and runs one without unthresholded (promptfoo-0.121.20-threshold/)"
    ),
}
# keys every run cuts, whatever the spread: the fields the importers read marks from
ALWAYS = frozenset({"oracle_idx", "target", "input", "threshold", "testCase", "answer", "reason"})

Doc = Any
Write = Callable[[Path, Doc], Options]  # writes the (perturbed) input, returns the options


def _json(name: str) -> Doc:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _jsonl(name: str) -> Doc:
    return [json.loads(x) for x in (DATA / name).read_text(encoding="utf-8").splitlines() if x]


def _plain(tmp: Path, doc: Doc, name: str) -> tuple[Path, Options]:
    p = tmp / name
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p, Options()


def _wice(tmp: Path, doc: Doc) -> tuple[Path, Options]:
    outputs, gold = doc
    src = tmp / "wice-sample_claim_test_outputs.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in outputs), encoding="utf-8")
    g = tmp / "gold.jsonl"
    g.write_text("".join(json.dumps(r) + "\n" for r in gold), encoding="utf-8")
    return src, Options(gold=g)


_FACTS = """protocol facts "PASS iff the claim is supported."
atom says : judge "The judge says the claim is supported"
atom backed : context "The context supports the claim"
decision pass iff says
ground says ~ backed
"""


def _jsonl_importer(tmp: Path, doc: Doc) -> tuple[Path, Options]:
    (tmp / "facts.proto").write_text(_FACTS, encoding="utf-8")
    mapping = {
        "protocol": "facts.proto",
        "id": "id",
        "sources": {"rationale": "why", "context": "evidence"},
        "verdict": {"field": "label", "map": {"yes": "PASS", "no": "FAIL"}},
        "annotations": [
            {"atom": "says", "value": {"field": "says", "map": {"yes": "TRUE"}}, "quote": "q"}
        ],
    }
    (tmp / "mapping.json").write_text(json.dumps(mapping), encoding="utf-8")
    src = tmp / "records.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in doc), encoding="utf-8")
    return src, Options(mapping=tmp / "mapping.json")


_RECORDS = [
    {"id": "r1", "why": "Supported, it says so.", "evidence": "It says so.", "label": "yes",
     "says": "yes", "q": "Supported"},
]  # fmt: skip


_FACTCC_DOC = (
    "That was twice the UK average rise of 7% and the biggest rise since November 2007. "
    "Prices rose by 8% between the end of 2013 and the end of 2014."
)
_FACTCC = [
    {
        "id": "1",
        "doc": _FACTCC_DOC,
        "summary": "That wasn't twice the UK average rise of 7%.",
        "samples": [
            {"reason_idx": 0, "prediction": 0, "model": "m", "prompt": "p", "annotation": "x",
             "explanation": "No, the summary is not factually correct."},
            {"reason_idx": 1, "prediction": 0, "model": "m", "prompt": "p", "annotation": "x",
             "explanation": 'No. The document states that "That was twice the UK average rise '
             'of 9%", so the summary wasn\'t right.'},
        ],
    }
]  # fmt: skip


def _realmistake(tmp: Path, doc: Doc) -> tuple[Path, Options]:
    import zipfile

    judgments, items = doc
    src = tmp / "judgments.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in judgments), encoding="utf-8")
    archive = tmp / "data.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("data/task/model.jsonl", "".join(json.dumps(i) + "\n" for i in items))
    return src, Options(gold=archive)


_RM_ITEMS = [
    {"input": 'Start the problem with "A baker sells 40 loaves every day."',
     "metadata": {"id": "i1"},
     "llm_response": "A baker sells 40 loaves every day. Answer: 280.", "error_label": "no_error"},
]  # fmt: skip
_RM_JUDGMENTS = [
    {"item_id": "i1", "judge_model": "j", "judge_prompt": "p", "judge_verdict": "no_error",
     "judge_rationale": 'The model input requires that the problem starts with "A baker sells '
     '40 loaves every day" and it does, with the numbers it asks for and nothing more. '
     "Therefore, the model response contains no error."},
    {"item_id": "i1", "judge_model": "k", "judge_prompt": "p", "judge_verdict": None,
     "judge_rationale": "The response is fine and follows every instruction it was given."},
    {"item_id": "i1", "judge_model": "m", "judge_prompt": "p", "judge_verdict": "no_error",
     "judge_rationale": "1. The model response does not follow the instruction to use only "
     "integers. Therefore, the model response contains no error."},
]  # fmt: skip


def _structured(tmp: Path, doc: Doc) -> tuple[Path, Options]:
    src = tmp / "outputs.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in doc), encoding="utf-8")
    return src, Options(protocol=ROOT / "tests" / "data" / "structured" / "rag.proto")


def _inspect_eval(tmp: Path, doc: Doc) -> tuple[Path, Options]:
    """An Inspect log written as a `.eval` archive: a header and one member per sample."""
    import zipfile

    src = tmp / "log.eval"
    with zipfile.ZipFile(src, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps({k: v for k, v in doc.items() if k != "samples"}))
        for i, sample in enumerate(doc.get("samples", [])):
            z.writestr(f"samples/{i}_epoch_1.json", json.dumps(sample))
    return src, Options()


def _ragas(name: str) -> Callable[[Path, Doc], tuple[Path, Options]]:
    """RAGAS's `to_json` output: one document, or one row a line for `.jsonl`."""

    def write(tmp: Path, doc: Doc) -> tuple[Path, Options]:
        if not name.endswith(".jsonl"):
            return _plain(tmp, doc, name)
        p = tmp / name
        p.write_text("".join(json.dumps(r) + "\n" for r in doc), encoding="utf-8")
        return p, Options()

    return write


def _lines(name: str) -> Callable[[Path, Doc], tuple[Path, Options]]:
    """One row a line (`promptfoo eval -o results.jsonl`)."""

    def write(tmp: Path, doc: Doc) -> tuple[Path, Options]:
        p = tmp / name
        p.write_text("".join(json.dumps(r) + "\n" for r in doc), encoding="utf-8")
        return p, Options()

    return write


def _with_threshold(doc: Doc) -> Doc:
    doc = copy.deepcopy(doc)
    doc["results"]["results"][0]["testCase"]["threshold"] = 0.7
    return doc


# importer, input name, the input, how to write it
CASES: list[tuple[str, str, Callable[[], Doc], Callable[[Path, Doc], tuple[Path, Options]]]] = [
    (
        "promptfoo",
        "sample-export",
        lambda: _json("promptfoo-sample-export.json"),
        lambda t, d: _plain(t, d, "results.json"),
    ),
    (
        "promptfoo",
        "sample-export-with-threshold",
        lambda: _with_threshold(_json("promptfoo-sample-export.json")),
        lambda t, d: _plain(t, d, "results.json"),
    ),
    (
        "promptfoo",
        "generated-default-threshold",
        lambda: _json("promptfoo-0.121.20-threshold/default-threshold.json"),
        lambda t, d: _plain(t, d, "results.json"),
    ),
    (
        "promptfoo",
        "generated-default-threshold-lines",
        lambda: _jsonl("promptfoo-0.121.20-threshold/default-threshold.jsonl"),
        _lines("results.jsonl"),
    ),
    (
        "promptfoo",
        "generated-no-threshold",
        lambda: _json("promptfoo-0.121.20-threshold/no-threshold.json"),
        lambda t, d: _plain(t, d, "results.json"),
    ),
    (
        "deepeval",
        "test-run-sample",
        lambda: _json("deepeval-test-run-sample.json"),
        lambda t, d: _plain(t, d, "run.json"),
    ),
    (
        "inspect",
        "security-guide",
        lambda: _json("inspect-security-guide.json"),
        lambda t, d: _plain(t, d, "log.json"),
    ),
    (
        "inspect",
        "input-task",
        lambda: _json("inspect-input-task.json"),
        lambda t, d: _plain(t, d, "log.json"),
    ),
    (
        "inspect",
        "generated-partial-credit",
        lambda: _json("inspect-generated/partial.json"),
        lambda t, d: _plain(t, d, "log.json"),
    ),
    (
        "inspect",
        "generated-partial-credit-eval",
        lambda: _json("inspect-generated/partial.json"),
        _inspect_eval,
    ),
    (
        "deepeval",
        "generated-latest-test-run",
        lambda: _json("deepeval-generated/latest_test_run.json"),
        lambda t, d: _plain(t, d, "run.json"),
    ),
    ("jsonl", "records", lambda: copy.deepcopy(_RECORDS), _jsonl_importer),
    (
        "ragas",
        "ragas-records",
        lambda: _json("ragas-generated/results.json"),
        _ragas("results.json"),
    ),
    (
        "ragas",
        "ragas-columns",
        lambda: _json("ragas-generated/results-columns.json"),
        _ragas("r.json"),
    ),
    ("ragas", "ragas-lines", lambda: _jsonl("ragas-generated/results.jsonl"), _ragas("r.jsonl")),
    (
        "wice",
        "sample",
        lambda: (
            _jsonl("wice-sample_claim_test_outputs.jsonl"),
            _jsonl("wice-gold-sample.jsonl"),
        ),
        _wice,
    ),
    (
        "factcc-explanations",
        "factcc",
        lambda: copy.deepcopy(_FACTCC),
        lambda t, d: _plain(t, d, "factcc.json"),
    ),
    (
        "realmistake",
        "realmistake",
        lambda: (copy.deepcopy(_RM_JUDGMENTS), copy.deepcopy(_RM_ITEMS)),
        _realmistake,
    ),
    (
        "structured",
        "structured",
        lambda: _jsonl("../structured/judge-b.jsonl"),
        _structured,
    ),
]


def cuts(doc: Doc, path: tuple = ()) -> Iterator[tuple]:
    """Every key of every object, and every entry of every list of plain values."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield (*path, k)
            yield from cuts(v, (*path, k))
    elif isinstance(doc, (list, tuple)):
        plain = all(not isinstance(v, (dict, list)) for v in doc)
        for i, v in enumerate(doc):
            if plain and not isinstance(doc, tuple):
                yield (*path, i)
            yield from cuts(v, (*path, i))


def without(doc: Doc, path: tuple) -> Doc:
    out = copy.deepcopy(doc)
    parent = out
    for p in path[:-1]:
        parent = parent[p]
    del parent[path[-1]]
    return out


def values(importer: str, src: Path, options: Options) -> dict[str, dict[str, str]]:
    """Replay id → atom → value (an atom with no annotation is absent: UNKNOWN)."""
    out = {}
    for rec in get(importer).read(src, options):
        if isinstance(rec, Imported):
            out[rec.replay["id"]] = {a["atom"]: a["value"] for a in rec.replay["annotations"]}
    return out


def flips(before: dict, after: dict, importer: str, cut: tuple = ()) -> list[str]:
    bad = []
    for rid, atoms in after.items():
        for atom, value in atoms.items():
            was = before.get(rid, {}).get(atom, "UNKNOWN") if rid in before else None
            if was is None or value != "FALSE" or was == "FALSE":
                continue
            if (importer, atom.split("(", 1)[0], tuple(cut[-2:])) in FORMAT_DEFAULTS:
                continue
            bad.append(f"{rid}: `{atom}` {was} → FALSE")
    return bad


@pytest.mark.parametrize(("importer", "name", "load", "write"), CASES, ids=[c[1] for c in CASES])
def test_removing_a_field_or_a_mark_never_makes_an_atom_false(
    tmp_path: Path, importer: str, name: str, load, write
) -> None:
    doc = load()
    before = values(importer, *write(tmp_path, doc))
    assert before, "the test input imports to nothing"
    every = list(cuts(doc))
    step = max(1, len(every) // MAX_CUTS)
    bad = []
    chosen = set(every[::step]) | {p for p in every if any(k in ALWAYS for k in p[-2:])}
    for path in sorted(chosen, key=every.index):
        try:
            after = values(importer, *write(tmp_path, without(doc, path)))
        except Exception as exc:  # the input is no longer of the format: nothing imported
            if type(exc).__name__ != "UnmaskError":
                raise
            continue
        found = flips(before, after, importer, path)
        bad += [f"without {'.'.join(map(str, path))}: {f}" for f in found]
    assert not bad, "\n".join(bad[:20])


def test_every_importer_is_covered() -> None:
    from unmask.importers import IMPORTERS

    assert {c[0] for c in CASES} == set(IMPORTERS)


@pytest.mark.parametrize(("importer", "name", "load", "write"), CASES, ids=[c[1] for c in CASES])
def test_no_importer_writes_a_reading_of_a_whole_source(
    tmp_path: Path, importer: str, name: str, load, write
) -> None:
    # `{"source": S, "read": "whole"}` is a FALSE from absence; only a reviewed reader's
    # annotation may rest on it (docs/replay-format.md), never a producer's
    src, options = write(tmp_path, load())
    imported = [r for r in get(importer).read(src, options) if isinstance(r, Imported)]
    assert imported
    for rec in imported:
        for a in rec.replay["annotations"]:
            assert all("read" not in e for e in a.get("evidence", [])), (rec.replay["id"], a)


def test_the_wice_marks_that_matter_are_among_the_cuts() -> None:
    # the WiCE input's cuts include every entry of every `oracle_idx`, one at a time
    outputs, gold = next(c for c in CASES if c[0] == "wice")[2]()
    paths = set(cuts((outputs, gold)))
    marked = sum(len(g["meta"].get("oracle_idx") or ()) for g in gold)
    assert sum(1 for p in paths if "oracle_idx" in p and isinstance(p[-1], int)) == marked > 0


# --- proposers ---------------------------------------------------------------------------------

LINES = {
    1: "Alice joined ACME in 2024 as an engineer.",
    2: "ACME makes anvils in Ohio.",
    3: "In 2026 Alice was named ACME's chief technology officer.",
}
WICE_PROTO = ROOT / "unmask" / "importers" / "protocols" / "wice.proto"


def _proposed(lines: dict[int, str], rationale: str) -> dict[str, str]:
    from unmask.propose import create
    from unmask.propose.replay import fill
    from unmask.replay.builder import ReplayBuilder
    from unmask.replay.load import replay_from_obj

    context = "\n".join(f"line {n}: {t}" for n, t in lines.items())
    obj = ReplayBuilder(
        WICE_PROTO,
        sources={
            "rationale": rationale,
            "response": "Alice joined ACME in 2024 and is its CTO.",
            "context": context,
        },
        verdict="supported",
        domains={"line": [f"s{n}" for n in lines]},
    ).build()
    replay = replay_from_obj(obj, None, None)
    out, _ = fill(obj, replay, [create("judge-rules"), create("claims-lexical")], 0.0)
    return {a["atom"]: a["value"] for a in out["annotations"]}


RATIONALE = (
    "<explanation>Sentence 1 states that Alice joined ACME in 2024. Sentence 3 says she is "
    "its CTO.</explanation> <answer>supported</answer>"
)


@pytest.mark.parametrize("cut", ["none", *LINES])
def test_proposers_never_read_false_from_a_missing_line(cut) -> None:
    # a line taken out of the evidence (or a claim no line matches) leaves the others open
    lines = {n: t for n, t in LINES.items() if n != cut}
    got = _proposed(lines, RATIONALE)
    assert "FALSE" not in got.values(), got


def test_proposers_never_read_false_from_a_rationale_that_cites_nothing() -> None:
    got = _proposed(LINES, "<explanation>I cannot tell.</explanation> <answer>supported</answer>")
    assert "FALSE" not in got.values(), got
    # evidence that shares no term with the claim: still no reading that it does not support
    got = _proposed({2: "Bob bakes bread in Lyon."}, RATIONALE)
    assert "FALSE" not in got.values(), got


# --- proposers over a claim and a passage ---------------------------------------------------

PAIRS_PROTO = """protocol pairs "Cite, for each claim, the passages that support it."
domain claim
domain passage
atom refs(claim, passage) : context "Claim {claim} of the answer cites passage {passage}"
atom backs(passage, claim) : context "Passage {passage} supports claim {claim}"
atom cites(claim, passage) : judge "The judge cites passage {passage} for claim {claim}"
verdict good | bad
decision good iff all(any(cites(c, p) for p in passage) for c in claim)
decision bad otherwise
"""
PASSAGES = {"p1": "Alice joined ACME in 2024 as an engineer.", "p2": "ACME makes anvils in Ohio."}
CLAIMS = {"joined": "Alice joined ACME in 2024 [p1].", "made": "ACME makes anvils [p2]."}


@pytest.mark.parametrize("cut", ["none", "p1", "p2", "[p1]", "[p2]", "joined"])
def test_proposers_over_two_domains_never_read_false_from_what_is_missing(tmp_path, cut) -> None:
    from unmask.propose import create
    from unmask.propose.judge import JudgeRules, load_rules
    from unmask.propose.replay import fill
    from unmask.replay.builder import ReplayBuilder
    from unmask.replay.load import replay_from_obj

    proto = tmp_path / "pairs.proto"
    proto.write_text(PAIRS_PROTO, encoding="utf-8")
    passages = {k: t for k, t in PASSAGES.items() if k != cut}
    claims = {k: t.replace(cut, "") for k, t in CLAIMS.items() if k != cut}
    obj = ReplayBuilder(
        proto,
        sources={
            "rationale": "Claim joined cites passage 1. Claim made cites passage 2.",
            "response": "\n".join(f"[{k}] {t}" for k, t in claims.items()),
            "context": "\n".join(f"[{k}] {t}" for k, t in passages.items()),
        },
        verdict="good",
        domains={"claim": list(claims), "passage": list(PASSAGES)},
    ).build()
    rules = JudgeRules(load_rules(ROOT / "tests" / "data" / "propose" / "rag_citations.judge.json"))
    proposers = [rules, create("answer-citations"), create("claims-lexical")]
    out, outcome = fill(obj, replay_from_obj(obj, None, None), proposers, 0.0)
    got = {a["atom"]: a["value"] for a in out["annotations"]}
    assert "FALSE" not in got.values(), got
    if cut == "none":  # every proposer proposed something, so the cuts above are meaningful
        assert {n for _, n, _ in outcome.filled} == {
            "rag-citations/1",
            "answer-citations/1",
            "claims-lexical/2",
        }
