"""Judges that annotate themselves: ``unmaskc --emit judge-schema|judge-prompt`` and
``unmask import structured`` (issue 25). The data under tests/data/structured/ was written
by hand for the example; no model produced it."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.test_importers_fuzz import HOW, OPS, SETTINGS, _import, _mutated
from tests.helpers import ROOT, TEST_DATA
from unmask.cli.main import main
from unmask.cli.unmaskc import cli as unmaskc
from unmask.replay.judgeschema import ShapeError, judge_schema, judge_view, read_output

DATA = TEST_DATA / "structured"
PROTO = DATA / "rag.proto"
HONEST = DATA / "judge-a.jsonl"
LIAR = DATA / "judge-b.jsonl"


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def compile_(*args: str):
    return CliRunner().invoke(unmaskc, list(args))


def imp(src: Path, out: Path, *extra: str):
    return cli("import", "structured", str(src), "--out", str(out), *extra)


def check(path: Path) -> dict:
    res = cli("check", str(path), "--format", "json")
    return json.loads(res.stdout)


def records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]


def write_lines(tmp_path: Path, recs: list) -> Path:
    p = tmp_path / "outputs.jsonl"
    p.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in recs),
        encoding="utf-8",
    )
    return p


def ann(replay: dict, atom: str) -> dict | None:
    return next((a for a in replay["annotations"] if a["atom"] == atom), None)


def schema_of(path: Path) -> dict:
    res = compile_(str(path), "--emit", "judge-schema")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


# --- the schema and the prompt --------------------------------------------------------------


@pytest.mark.parametrize(
    "proto",
    [PROTO, ROOT / "examples" / "claim_parts.proto", ROOT / "examples" / "factual_claims.proto"],
)
def test_the_schema_is_a_valid_draft_2020_12_schema(proto: Path):
    schema = schema_of(proto)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_verdict_is_the_protocols_labels_or_pass_and_fail():
    assert schema_of(PROTO)["properties"]["verdict"]["enum"] == [
        "SUPPORTED",
        "PARTIAL",
        "UNSUPPORTED",
    ]
    binary = schema_of(ROOT / "examples" / "factual_claims.proto")
    assert binary["properties"]["verdict"]["enum"] == ["PASS", "FAIL"]
    # judge and procedure atoms, never context ones
    assert list(binary["properties"]["atoms"]["properties"]) == ["j_joined", "j_cto", "external"]


def test_the_emitted_files_are_current_and_byte_stable():
    for emit, name in (("judge-schema", "judge-schema.json"), ("judge-prompt", "judge-prompt.txt")):
        first = compile_(str(PROTO), "--emit", emit).stdout
        assert first == compile_(str(PROTO), "--emit", emit).stdout
        assert first == (DATA / name).read_text(encoding="utf-8")


def test_a_family_is_keyed_by_member_so_one_schema_serves_any_members(tmp_path: Path):
    # `claim` is a free domain, and no `--domain` is given
    says = schema_of(PROTO)["properties"]["atoms"]["properties"]["says"]
    assert says["propertyNames"] == {"pattern": "^([A-Za-z_][A-Za-z0-9_]*|\\*)$"}
    # members given narrow the keys to them (and `*`, the statement that the list is whole)
    res = compile_(str(PROTO), "--emit", "judge-schema", "--domain", "claim=a,b")
    narrowed = json.loads(res.stdout)["properties"]["atoms"]["properties"]["says"]
    assert narrowed["propertyNames"] == {"enum": ["a", "b", "*"]}


def test_the_prompt_gives_each_atoms_description_and_the_rules():
    text = compile_(str(PROTO), "--emit", "judge-prompt").stdout
    assert "- says[claim]: The judge states the passages support claim {claim}" in text
    assert "- outside: The judge used knowledge that is not in the passages" in text
    assert "backed" not in text  # a context atom is not the judge's to state
    assert "copied from the rationale exactly" in text
    assert '"UNKNOWN", with "quotes": [], when your rationale does not address' in text
    assert '"SUPPORTED", "PARTIAL", "UNSUPPORTED"' in text


def test_a_protocol_that_does_not_compile_is_refused_by_the_emit(tmp_path: Path):
    bad = tmp_path / "bad.proto"
    bad.write_text('protocol p ""\natom a : judge\ndecision pass iff b\n', encoding="utf-8")
    res = compile_(str(bad), "--emit", "judge-schema")
    assert res.exit_code == 1 and "unknown-name" not in res.stdout
    assert "`b`" in res.stderr


# --- sample outputs against the schema -------------------------------------------------------

OUTPUTS = [r["output"] for r in records(HONEST) + records(LIAR)]


def test_the_recorded_outputs_follow_the_schema():
    validator = jsonschema.Draft202012Validator(schema_of(PROTO))
    for out in OUTPUTS:
        validator.validate(out)


def _drop(key):
    def f(o):
        del o[key]

    return f


BAD_OUTPUTS = {
    "missing verdict": (_drop("verdict"), "output"),
    "not a label": (lambda o: o.update(verdict="supported"), "output.verdict"),
    "unknown atom": (lambda o: o["atoms"].update(backed={"value": "TRUE", "quotes": ["x"]}),
                     "output.atoms.backed"),
    "extra key": (lambda o: o.update(score=1), "output.score"),
    "true without quote": (lambda o: o["atoms"]["outside"].update(quotes=[]),
                           "output.atoms.outside.quotes"),
    "unknown with quote": (lambda o: o["atoms"]["outside"].update(value="UNKNOWN"),
                           "output.atoms.outside.quotes"),
    "bad value": (lambda o: o["atoms"]["outside"].update(value=False),
                  "output.atoms.outside.value"),
    "empty quote": (lambda o: o["atoms"]["outside"].update(quotes=[""]),
                    "output.atoms.outside.quotes[0]"),
    "member not a name": (lambda o: o["atoms"]["says"].update({"1st": {"value": "UNKNOWN",
                          "quotes": []}}), 'output.atoms.says["1st"]'),
    "empty rationale": (lambda o: o.update(rationale=""), "output.rationale"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD_OUTPUTS))
def test_the_schema_and_the_importers_reading_refuse_the_same_outputs(case: str):
    change, path = BAD_OUTPUTS[case]
    out = copy.deepcopy(OUTPUTS[0])
    change(out)
    assert not jsonschema.Draft202012Validator(schema_of(PROTO)).is_valid(out)
    view = judge_view(PROTO.read_text(encoding="utf-8"), str(PROTO))
    with pytest.raises(ShapeError) as exc:
        read_output(out, view, {"claim": ["joined", "cto"]})
    assert exc.value.path == path


def test_the_schema_function_and_the_reader_agree_on_the_good_outputs():
    view = judge_view(PROTO.read_text(encoding="utf-8"), str(PROTO))
    assert judge_schema(view) == schema_of(PROTO)
    read = read_output(OUTPUTS[0], view, {"claim": ["joined", "cto"]})
    assert [s.atom for s in read.statements] == ["says(joined)", "says(cto)", "outside"]


# --- the import, end to end -------------------------------------------------------------------


def test_the_honest_judge_round_trips_into_replays_it_annotated_itself(tmp_path: Path):
    out = tmp_path / "replays"
    res = imp(HONEST, out, "--protocol", str(PROTO))
    assert res.exit_code == 0, res.stderr
    assert "imported 2 replays" in res.stderr and "skipped 0" in res.stderr
    r = json.loads((out / "q1-judge-a.json").read_text(encoding="utf-8"))
    assert r["judge"] == "judge-a" and r["item"] == "q1" and r["verdict"] == "PARTIAL"
    assert r["domains"] == {"claim": ["joined", "cto"]}
    assert r["sources"]["context"].startswith("[1] Alice joined ACME in 2024.\n[2] Bob")
    model = {"kind": "model", "name": "judge-a", "reviewed": False}
    for atom, value in (("says(joined)", "TRUE"), ("says(cto)", "FALSE"), ("outside", "FALSE")):
        a = ann(r, atom)
        assert a["value"] == value and a["by"] == model
        (ev,) = a["evidence"]
        assert ev["source"] == "rationale"
        assert r["sources"]["rationale"][ev["start"] : ev["end"]] == ev["quote"]
    assert ann(r, "backed(joined)") is None  # context atoms need an independent reading
    assert ann(r, "quotes_verbatim")["value"] == "TRUE"
    report = check(out / "q1-judge-a.json")
    assert report["verdict"]["status"] == "ENTAILED"
    assert {q["id"]: q["status"] for q in report["requirements"]} == {
        "passages_only": "ENTAILED",
        "verbatim_quotes": "ENTAILED",
    }
    # the embedded protocol is the user's text, with the importer's lines after it
    source = r["protocol"]["source"]
    assert source.startswith(PROTO.read_text(encoding="utf-8"))
    assert "requirement verbatim_quotes" in source


def test_the_liars_false_quotes_are_a_finding_and_give_no_value(tmp_path: Path):
    out = tmp_path / "replays"
    res = imp(LIAR, out, "--protocol", str(PROTO))
    assert res.exit_code == 0, res.stderr  # a false quote is not an import error
    r = json.loads((out / "q2-judge-b.json").read_text(encoding="utf-8"))
    # the statements rest on quotes the rationale does not hold: no value from them
    for atom in ("says(opened)", "outside"):
        a = ann(r, atom)
        assert a["value"] == "UNKNOWN" and a["by"]["kind"] == "rule"
        assert "none of its quotes is in the rationale" in a["explanation"]
    v = ann(r, "quotes_verbatim")
    assert v["value"] == "FALSE"
    assert [e["quote"] for e in v["evidence"]] == [
        "Passage [1] states the bridge opened in 1932.",
        "I relied only on the passages.",
    ]
    assert {e["source"] for e in v["evidence"]} == {"trace"}
    report = check(out / "q2-judge-b.json")
    assert report["overall"] == "VIOLATED"
    req = {q["id"]: q for q in report["requirements"]}
    assert req["verbatim_quotes"]["status"] == "REFUTED"
    # a quote that is there still counts: q1's `says(cto)` is quoted truly
    r1 = json.loads((out / "q1-judge-b.json").read_text(encoding="utf-8"))
    assert ann(r1, "says(cto)")["value"] == "TRUE"
    assert ann(r1, "says(joined)")["value"] == "UNKNOWN"
    # the audit shows the liar's finding and not the honest judge's (imported beside it:
    # one folder holds one import's replays)
    assert imp(HONEST, tmp_path / "honest", "--protocol", str(PROTO)).exit_code == 0
    res = cli("audit", str(out), str(tmp_path / "honest"), "--out", str(tmp_path / "results.jsonl"))
    assert "verbatim_quotes: satisfied 2, violated 2" in res.stderr
    results = records(tmp_path / "results.jsonl")
    violated = sorted(x["replay"] for x in results if x["overall"] == "VIOLATED")
    assert violated == ["q1-judge-b", "q2-judge-b"]


def test_an_atom_the_judge_did_not_state_stays_unannotated(tmp_path: Path):
    rec = records(HONEST)[1]
    del rec["output"]["atoms"]["outside"]
    rec["output"]["atoms"]["says"]["opened"] = {"value": "UNKNOWN", "quotes": []}
    out = tmp_path / "o"
    assert imp(write_lines(tmp_path, [rec]), out, "--protocol", str(PROTO)).exit_code == 0
    r = json.loads((out / "q2-judge-a.json").read_text(encoding="utf-8"))
    assert ann(r, "outside") is None  # never FALSE from absence
    assert ann(r, "says(opened)")["value"] == "UNKNOWN"
    v = ann(r, "quotes_verbatim")  # nothing quoted, nothing misquoted
    assert v["value"] == "TRUE" and v["evidence"][0]["quote"] == "quotes: 0"


def test_an_output_given_as_json_text_is_read(tmp_path: Path):
    rec = records(HONEST)[0]
    rec["output"] = json.dumps(rec["output"])
    out = tmp_path / "o"
    assert imp(write_lines(tmp_path, [rec]), out, "--protocol", str(PROTO)).exit_code == 0
    assert (out / "q1-judge-a.json").exists()


def _mutate(change):
    rec = records(HONEST)[0]
    change(rec)
    return rec


SKIPS = {
    "missing field": (lambda r: r["output"].pop("verdict"), "field `output`", "missing `verdict`"),
    "unknown atom": (
        lambda r: r["output"]["atoms"].update(backed={"value": "TRUE", "quotes": ["x"]}),
        "field `output.atoms.backed`",
        "`backed` is not a judge or procedure atom",
    ),
    "non-verdict label": (
        lambda r: r["output"].update(verdict="MOSTLY"),
        "field `output.verdict`",
        "expected one of `SUPPORTED`, `PARTIAL`, `UNSUPPORTED`, found `MOSTLY`",
    ),
    "member not in the record": (
        lambda r: r["output"]["atoms"]["says"].update(ceo={"value": "UNKNOWN", "quotes": []}),
        "field `output.atoms.says.ceo`",
        "`ceo` is not a member of domain `claim`",
    ),
    "no members": (lambda r: r.pop("domains"), "field `domains`", "domain `claim`"),
    "no judge": (
        lambda r: r.pop("judge"),
        "field `judge`",
        "missing `judge`, the name of the judge that wrote the output",
    ),
    "no output": (lambda r: r.pop("output"), "field `output`", "missing `output`"),
    "unknown key": (lambda r: r.update(jduge="x"), "field `jduge`", "did you mean `judge`?"),
    "rationale as a source": (
        lambda r: r["sources"].update(rationale="x"),
        "field `sources.rationale`",
        "not a source a record gives",
    ),
    "gold not a label": (lambda r: r.update(gold="yes"), "field `gold`", "found `yes`"),
    "a passage id twice": (
        lambda r: r["sources"].update(context=[{"id": "p1", "text": "a"}] * 2),
        "field `sources.context`",
        'expected text, an array of texts or of `{"id", "text"}` passages with distinct ids',
    ),
}


@pytest.mark.parametrize("case", sorted(SKIPS))
def test_a_line_that_does_not_follow_the_schema_is_skipped_with_where_and_why(
    tmp_path: Path, case: str
):
    change, where, reason = SKIPS[case]
    good = records(HONEST)[1]
    src = write_lines(tmp_path, [good, _mutate(change), "not json"])
    out = tmp_path / "o"
    res = imp(src, out, "--protocol", str(PROTO))
    assert res.exit_code == 1, res.stderr
    lines = res.stderr.splitlines()
    assert any(f"outputs.jsonl:2: {where}: skipped: " in x and reason in x for x in lines), lines
    assert any("outputs.jsonl:3: skipped: not a JSON record" in x for x in lines), lines
    assert "imported 1 replay " in res.stderr and "skipped 2" in res.stderr
    assert [p.name for p in out.glob("*.json")] == ["q2-judge-a.json"]


def test_protocol_option_misuse_is_a_usage_error(tmp_path: Path):
    res = imp(HONEST, tmp_path / "o")
    assert res.exit_code == 2 and "`--protocol` is for the `structured` importer" in res.stderr
    res = cli("import", "jsonl", str(HONEST), "--out", str(tmp_path / "o"), "--protocol", "x.proto")
    assert res.exit_code == 2 and "not `jsonl`" in res.stderr
    assert not (tmp_path / "o").exists()


def test_an_unreadable_or_broken_protocol_exits_4_and_writes_nothing(tmp_path: Path):
    bad = tmp_path / "bad.proto"
    bad.write_text('protocol p ""\natom a : judge\ndecision pass iff b\n', encoding="utf-8")
    own = tmp_path / "own.proto"
    own.write_text(
        'protocol p ""\natom quotes_verbatim : judge\ndecision pass iff quotes_verbatim\n',
        encoding="utf-8",
    )
    for proto, says in (
        (tmp_path / "missing.proto", "missing.proto"),
        (tmp_path, str(tmp_path)),
        (bad, "`b`"),
        (own, "`quotes_verbatim` must be a single procedure atom"),
    ):
        res = imp(HONEST, tmp_path / "o", "--protocol", str(proto))
        assert res.exit_code == 4, (proto, res.stderr)
        assert says in res.stderr and "Traceback" not in res.stderr
        assert not (tmp_path / "o").exists()


def test_a_protocol_that_declares_and_reads_quotes_verbatim_keeps_its_own(tmp_path: Path):
    own = tmp_path / "own.proto"
    text = (
        PROTO.read_text(encoding="utf-8").replace(
            "atom outside", 'atom quotes_verbatim : procedure "mine"\natom outside'
        )
        + 'requirement honest "Mine": quotes_verbatim\n'
    )
    own.write_text(text, encoding="utf-8")
    assert "quotes_verbatim" not in json.dumps(schema_of(own)["properties"]["atoms"])
    out = tmp_path / "o"
    assert imp(LIAR, out, "--protocol", str(own)).exit_code == 0
    r = json.loads((out / "q2-judge-b.json").read_text(encoding="utf-8"))
    assert r["protocol"]["source"] == text  # nothing appended
    assert ann(r, "quotes_verbatim")["value"] == "FALSE"
    req = {q["id"]: q for q in check(out / "q2-judge-b.json")["requirements"]}
    assert req["honest"]["status"] == "REFUTED" and "verbatim_quotes" not in req


def test_a_protocol_that_declares_quotes_verbatim_but_reads_it_nowhere_gets_the_requirement(
    tmp_path: Path,
):
    # the atom alone would carry the finding to no check: the importer's requirement is added
    own = tmp_path / "own.proto"
    text = PROTO.read_text(encoding="utf-8").replace(
        "atom outside", 'atom quotes_verbatim : procedure "mine"\natom outside'
    )
    own.write_text(text, encoding="utf-8")
    out = tmp_path / "o"
    assert imp(LIAR, out, "--protocol", str(own)).exit_code == 0
    r = json.loads((out / "q2-judge-b.json").read_text(encoding="utf-8"))
    assert r["protocol"]["source"] == text + (
        "\n# added by `unmask import structured`: every quote the judge gave is in its rationale"
        '\nrequirement verbatim_quotes "Quote the rationale exactly": quotes_verbatim\n'
    )
    req = {q["id"]: q for q in check(out / "q2-judge-b.json")["requirements"]}
    assert req["verbatim_quotes"]["status"] == "REFUTED"


def test_a_statement_keeps_the_quotes_that_are_there_and_the_first_occurrence(tmp_path: Path):
    rec = records(HONEST)[0]
    out_ = rec["output"]
    out_["rationale"] += " Passage [1] says Alice joined ACME in 2024."
    out_["atoms"]["says"]["joined"]["quotes"].append("Passage [3] says so.")
    out = tmp_path / "o"
    assert imp(write_lines(tmp_path, [rec]), out, "--protocol", str(PROTO)).exit_code == 0
    r = json.loads((out / "q1-judge-a.json").read_text(encoding="utf-8"))
    a = ann(r, "says(joined)")
    assert a["value"] == "TRUE" and a["by"]["kind"] == "model"
    assert [(e["quote"], e["start"]) for e in a["evidence"]] == [
        ("Passage [1] says Alice joined ACME in 2024.", 0)
    ]
    v = ann(r, "quotes_verbatim")
    assert v["value"] == "FALSE" and [e["quote"] for e in v["evidence"]] == ["Passage [3] says so."]


def test_a_key_with_a_line_break_cannot_forge_a_line_of_the_summary(tmp_path: Path):
    rec = records(HONEST)[0]
    rec["output"]["atoms"]["x\nimported 9 replays"] = {"value": "UNKNOWN", "quotes": []}
    res = imp(write_lines(tmp_path, [rec]), tmp_path / "o", "--protocol", str(PROTO))
    assert res.exit_code == 1
    (skip,) = [x for x in res.stderr.splitlines() if "skipped:" in x]
    assert 'field `output.atoms["x\\nimported 9 replays"]`' in skip
    assert not any(x.startswith("imported 9") for x in res.stderr.splitlines())


def test_a_requirement_named_like_the_appended_one_is_refused_once(tmp_path: Path):
    clash = tmp_path / "clash.proto"
    clash.write_text(
        PROTO.read_text(encoding="utf-8") + 'requirement verbatim_quotes "mine": not outside\n',
        encoding="utf-8",
    )
    res = imp(HONEST, tmp_path / "o", "--protocol", str(clash))
    assert res.exit_code == 4 and "verbatim_quotes" in res.stderr
    assert "skipped" not in res.stderr and not (tmp_path / "o").exists()


def test_too_many_quotes_to_look_up_is_one_skip(tmp_path: Path, monkeypatch):
    from unmask.importers import structured

    monkeypatch.setattr(structured, "MAX_LOOKUP", 100)
    res = imp(HONEST, tmp_path / "o", "--protocol", str(PROTO))
    assert res.exit_code == 1
    assert res.stderr.count("too many quotes to look up: more than 100 characters") == 2


# hostile input: the fuzz harness of the other importers (documented exits, no traceback,
# nothing raw on stderr, every replay written valid), on mutated lines of both judges
SEEDS = records(HONEST) + records(LIAR)


@SETTINGS
@given(rows=st.lists(st.tuples(OPS, HOW, st.integers(min_value=0)), min_size=1, max_size=3))
def test_fuzz_import_structured(rows) -> None:
    lines = [
        _mutated(SEEDS[cut % len(SEEDS)], ops, how, cut).replace(b"\n", b" ")
        for ops, how, cut in rows
    ]
    _import("structured", b"\n".join(lines) + b"\n", "outputs.jsonl", "--protocol", str(PROTO))


def test_the_prompt_speaks_of_families_only_for_a_protocol_with_them():
    binary = compile_(str(ROOT / "examples" / "factual_claims.proto"), "--emit", "judge-prompt")
    assert binary.exit_code == 0 and "NAME[DOMAIN]" not in binary.stdout
    assert "- external: The judge consulted outside knowledge" in binary.stdout
    assert "NAME[DOMAIN]" in compile_(str(PROTO), "--emit", "judge-prompt").stdout


def test_text_that_would_act_on_a_terminal_is_escaped_in_both_emits(tmp_path: Path):
    p = tmp_path / "p.proto"
    p.write_text(
        'protocol p ""\natom a : judge "says \\u202e so \\u001b[2J"\ndecision pass iff a\n',
        encoding="utf-8",
    )
    for emit in ("judge-schema", "judge-prompt"):
        res = compile_(str(p), "--emit", emit)
        assert res.exit_code == 0, res.stderr
        assert "\u202e" not in res.stdout and "\x1b" not in res.stdout
        assert "\\u202e" in res.stdout


def test_passages_with_their_own_ids_keep_them(tmp_path: Path):
    # a retriever's ids (`doc3.2`) name the passages in the replay, so a quote, a reader and
    # the claim proposer can name the passage, not only its position
    rec = records(HONEST)[0]
    rec["sources"]["context"] = [
        {"id": "doc3.2", "text": "Alice joined ACME in 2024."},
        {"id": "doc7.1", "text": "Bob is the CTO."},
    ]
    out = tmp_path / "o"
    assert imp(write_lines(tmp_path, [rec]), out, "--protocol", str(PROTO)).exit_code == 0
    (path,) = out.glob("*.json")
    replay = json.loads(path.read_text(encoding="utf-8"))
    assert (
        replay["sources"]["context"]
        == "[doc3.2] Alice joined ACME in 2024.\n[doc7.1] Bob is the CTO."
    )


def test_citations_listed_with_a_completeness_statement_leave_no_pair_open(tmp_path: Path):
    # the judge lists only the citations it made, and says for each claim that the list is
    # whole: every `cites` pair is settled, the ones left out FALSE by that sentence
    rationale = (
        "For the date I cite passage p1. I cite no other passage for the date. "
        "For the place I cite passage p2. I cite no other passage for the place."
    )

    def stmt(quote: str, value: str = "TRUE") -> dict:
        return {"value": value, "quotes": [quote]}

    output = {
        "rationale": rationale,
        "verdict": "supported",
        "atoms": {
            "cites": {
                "date": {
                    "p1": stmt("For the date I cite passage p1."),
                    "*": stmt("I cite no other passage for the date.", "FALSE"),
                },
                "place": {
                    "p2": stmt("For the place I cite passage p2."),
                    "*": stmt("I cite no other passage for the place.", "FALSE"),
                },
            }
        },
    }
    rec = {
        "judge": "j",
        "id": "whole",
        "output": output,
        "domains": {"claim": ["date", "place"], "passage": ["p1", "p2", "p3"]},
        "sources": {"context": ["[p1] 1932.", "[p2] Sydney.", "[p3] Steel."]},
    }
    out = tmp_path / "out"
    proto = ROOT / "examples" / "rag_citations.proto"
    res = imp(write_lines(tmp_path, [rec]), out, "--protocol", str(proto))
    assert res.exit_code == 0, res.output
    replay = json.loads((out / "whole.json").read_text(encoding="utf-8"))
    false = ann(replay, "cites(date, p3)")
    assert false is not None and false["value"] == "FALSE"
    assert [e["quote"] for e in false["evidence"]] == ["I cite no other passage for the date."]
    cites = [a for a in replay["annotations"] if a["atom"].startswith("cites(")]
    assert len(cites) == 6 and all(a["value"] in ("TRUE", "FALSE") for a in cites)
    report = check(out / "whole.json")
    assert report["verdict"]["status"] == "ENTAILED"
    # no pair is left open for want of a citation the judge did not make: the four it did
    # not make hold; the two it made wait only for a reading of the passages (`backs`)
    status = {g["judge"]: g["status"] for g in report["grounding"]}
    assert status == {
        "cites(date, p1)": "UNDERDETERMINED",
        "cites(date, p2)": "ENTAILED",
        "cites(date, p3)": "ENTAILED",
        "cites(place, p1)": "ENTAILED",
        "cites(place, p2)": "UNDERDETERMINED",
        "cites(place, p3)": "ENTAILED",
    }


def test_an_output_in_a_json_fence_is_read_as_its_content_and_a_note_says_so(tmp_path: Path):
    rec = records(HONEST)[0]
    plain = json.dumps(rec["output"])
    fenced = {**rec, "id": "fenced", "output": f"```json\n{plain}\n```\n"}
    bare = {**rec, "id": "bare", "output": f"```\n{plain}\n```"}
    chatty = {**rec, "id": "chatty", "output": f"Here you are:\n```json\n{plain}\n```"}
    res = imp(
        write_lines(tmp_path, [fenced, bare, chatty]), tmp_path / "out", "--protocol", str(PROTO)
    )
    assert res.exit_code == 1  # one line skipped
    assert "2 output(s) came as text in a ```json fenced block (line 1, 2)" in res.stderr
    assert "only when it is the whole text" in res.stderr
    got = json.loads((tmp_path / "out" / "fenced.json").read_text(encoding="utf-8"))
    # the same replay as from the object itself, but for its id
    imp(
        write_lines(tmp_path, [{**rec, "id": "fenced"}]), tmp_path / "ref", "--protocol", str(PROTO)
    )
    ref = json.loads((tmp_path / "ref" / "fenced.json").read_text(encoding="utf-8"))
    assert got == ref
    assert not (tmp_path / "out" / "chatty.json").exists()
