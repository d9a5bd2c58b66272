"""Replay and protocol-IR validation (docs/replay-format.md): one test per rule, asserting
the diagnostic's code and JSON path, plus the adversarial inputs that must end in a clear
error rather than a traceback."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unmask import ir
from unmask.ir.json import protocol_to_json
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.jsonload import json_depth, parse_json_bytes, read_json_file
from unmask.plumbing.jsonload import json_values as count_values
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.replay.data import Replay
from unmask.replay.load import (
    load_replay,
    load_replay_text,
    protocol_from_json,
    render_error,
    replay_from_obj,
)

RATIONALE = "Both claims hold. I used only the context."
CONTEXT = "Alice joined ACME in 2024. She is its CTO."


def atom(n: str) -> dict:
    return {"atom": n}


def ir_protocol() -> dict:
    return {
        "schema": "unmask.protocol/1",
        "name": "mini",
        "text": "PASS iff the claim holds.",
        "atoms": [
            {"name": "j", "role": "judge", "description": "judge says so"},
            {"name": "c", "role": "context", "description": "context says so"},
            {"name": "ext", "role": "procedure", "description": "outside knowledge"},
        ],
        "constraints": [],
        "decision": atom("j"),
        "requirements": [
            {
                "id": "ctx_only",
                "description": "only the context",
                "expr": {"op": "not", "args": [atom("ext")]},
                "addressed": {"const": True},
            }
        ],
        "grounding": [{"judge": "j", "context": "c"}],
    }


def span(text: str, source: str, quote: str) -> dict:
    start = text.index(quote)
    return {"source": source, "start": start, "end": start + len(quote), "quote": quote}


def base() -> dict:
    return {
        "schema": "unmask.replay/1",
        "id": "mini-1",
        "protocol": ir_protocol(),
        "sources": {"response": "Alice is CTO.", "context": CONTEXT, "rationale": RATIONALE},
        "verdict": "PASS",
        "gold": "PASS",
        "annotations": [
            {
                "atom": "j",
                "value": "TRUE",
                "evidence": [span(RATIONALE, "rationale", "Both claims hold.")],
            },
            {
                "atom": "c",
                "value": "TRUE",
                "evidence": [span(CONTEXT, "context", "She is its CTO.")],
            },
        ],
    }


def diags(obj: object, **kw) -> list:
    with pytest.raises(UnmaskError) as exc:
        replay_from_obj(obj, file="r.json", **kw)
    return list(exc.value.diagnostics)


def one(obj: object, **kw):
    ds = diags(obj, **kw)
    assert len(ds) == 1, [(d.code, d.path, d.message) for d in ds]
    return ds[0]


DROP = object()


def one_with(**fields: object):
    """The one diagnostic of ``base()`` with those top-level fields set (``DROP`` removes
    one)."""
    r = base()
    for key, value in fields.items():
        if value is DROP:
            del r[key]
        else:
            r[key] = value
    return one(r)


def proto_diag(mutate) -> object:
    r = base()
    mutate(r["protocol"])
    return one(r)


# --- a valid replay -----------------------------------------------------------------------


def test_valid_replay_builds_the_model():
    r = replay_from_obj(base(), file="r.json")
    assert isinstance(r, Replay)
    assert r.id == "mini-1" and r.verdict == "PASS" and r.gold == "PASS"
    assert r.translation == "valid"
    assert [a.atom for a in r.annotations] == ["j", "c"]
    assert r.annotations[1].index == 1
    assert r.annotations[0].evidence[0].quote == "Both claims hold."
    assert r.unannotated == ("ext",)
    assert r.protocol.requirements[0].expr == ir.Not(ir.Atom("ext"))
    assert r.protocol.requirements[0].addressed == ir.Const(True)
    assert r.warnings == ()


def test_gold_may_be_null_or_absent_and_trace_is_optional():
    r = base()
    r["gold"] = None
    assert replay_from_obj(r).gold is None
    del r["gold"]
    assert replay_from_obj(r).gold is None
    assert "trace" not in replay_from_obj(r).sources


def test_unknown_annotation_is_allowed_without_evidence():
    r = base()
    r["annotations"].append({"atom": "ext", "value": "UNKNOWN"})
    rep = replay_from_obj(r)
    assert rep.annotation("ext").value == "UNKNOWN"
    assert rep.unannotated == ()


def test_protocol_ir_round_trips_through_json():
    p = protocol_from_json(ir_protocol())
    assert protocol_from_json(protocol_to_json(p)) == p


# --- top level ---------------------------------------------------------------------------


def test_top_level_must_be_an_object():
    d = one([base()])
    assert (d.code, d.path, d.file) == ("type", "$", "r.json")
    assert "an array" in d.message


def test_schema_missing():
    d = one_with(schema=DROP)
    assert (d.code, d.path) == ("schema", "$")


def test_schema_other_version():
    d = one_with(schema="unmask.replay/2")
    assert (d.code, d.path) == ("schema", "schema")
    assert "`unmask.replay/2`" in d.message


def test_protocol_ir_given_as_replay_gets_a_hint():
    d = one(ir_protocol())
    assert d.code == "schema" and "protocol IR" in d.help


def test_id_must_be_a_string():
    d = one_with(id=7)
    assert (d.code, d.path) == ("type", "id")


def test_verdict_must_be_pass_or_fail():
    d = one_with(verdict="pass")
    assert (d.code, d.path) == ("verdict", "verdict")
    assert "`PASS`" in d.help


def test_verdict_is_required():
    d = one_with(verdict=DROP)
    assert (d.code, d.path) == ("missing", "$")
    assert "`verdict`" in d.message


def test_gold_must_be_pass_fail_or_null():
    d = one_with(gold="MAYBE")
    assert (d.code, d.path) == ("gold", "gold")


def test_translation_status():
    r = base()
    r["translation"] = {"status": "partial"}
    assert replay_from_obj(r).translation == "partial"
    r["translation"] = {"status": "broken"}
    d = one(r)
    assert (d.code, d.path) == ("translation", "translation.status")


def test_unknown_top_level_key_is_a_warning():
    r = base()
    r["judge_model"] = "x"
    rep = replay_from_obj(r)
    assert [(w.code, w.path, w.severity) for w in rep.warnings] == [
        ("unknown-key", "judge_model", "warning")
    ]


def test_unknown_source_name():
    r = base()
    r["sources"]["notes"] = "x"
    d = one(r)
    assert (d.code, d.path) == ("unknown-source", "sources.notes")


def test_every_error_is_reported():
    r = base()
    r["verdict"] = "YES"
    r["annotations"][0]["value"] = "true"
    r["annotations"][1]["evidence"][0]["end"] = 999
    ds = diags(r)
    assert {(d.code, d.path) for d in ds} == {
        ("verdict", "verdict"),
        ("value", "annotations[0].value"),
        ("span-range", "annotations[1].evidence[0].end"),
    }
    assert all(d.file == "r.json" for d in ds)


def test_jsonl_line_is_part_of_the_file_label():
    r = base()
    r["verdict"] = 1
    d = one(r, line=17)
    assert d.file == "r.json:17"


# --- annotations and evidence ----------------------------------------------------------------


def test_value_must_be_true_false_or_unknown():
    r = base()
    r["annotations"][0]["value"] = "true"
    d = one(r)
    assert (d.code, d.path) == ("value", "annotations[0].value")
    assert "`TRUE`" in d.help


def test_true_or_false_needs_evidence():
    r = base()
    r["annotations"][0]["evidence"] = []
    d = one(r)
    assert (d.code, d.path) == ("evidence-missing", "annotations[0].evidence")
    assert d.help == "quote the text that shows it, or make the value `UNKNOWN`"


def test_a_false_without_evidence_is_told_of_the_whole_reading():
    # "no passage says so" has nothing to quote: the help names the form that says it
    r = base()
    r["annotations"][1].update(value="FALSE", evidence=[])
    d = one(r)
    assert (d.code, d.path) == ("evidence-missing", "annotations[1].evidence")
    assert d.help.endswith('a reviewed reader may write `{"source": "context", "read": "whole"}`')
    r["annotations"][1].update(
        evidence=[{"source": "context", "read": "whole"}], by={"kind": "human", "name": "ana"}
    )
    assert replay_from_obj(r).annotation("c").value == "FALSE"  # written as the help says


def test_annotation_of_unknown_atom():
    r = base()
    r["annotations"][0]["atom"] = "jj"
    d = one(r)
    assert (d.code, d.path) == ("unknown-atom", "annotations[0].atom")
    assert d.help == "did you mean `j`?"


def test_second_annotation_of_an_atom_points_to_the_first():
    r = base()
    r["annotations"].append(copy.deepcopy(r["annotations"][0]))
    d = one(r)
    assert (d.code, d.path) == ("duplicate-annotation", "annotations[2].atom")
    assert any("annotations[0]" in n for n in d.notes)


def test_start_before_zero():
    r = base()
    r["annotations"][0]["evidence"][0].update(start=-1)
    d = one(r)
    assert (d.code, d.path) == ("span-range", "annotations[0].evidence[0].start")


def test_end_past_the_source():
    r = base()
    r["annotations"][0]["evidence"][0].update(end=len(RATIONALE) + 1)
    d = one(r)
    assert (d.code, d.path) == ("span-range", "annotations[0].evidence[0].end")


def test_empty_span_is_rejected():
    r = base()
    r["annotations"][0]["evidence"][0].update(start=3, end=3, quote="")
    d = one(r)
    assert (d.code, d.path) == ("span-range", "annotations[0].evidence[0].end")


def test_span_at_the_very_end_is_fine():
    r = base()
    q = "context."
    r["annotations"][0]["evidence"] = [span(RATIONALE, "rationale", q)]
    assert r["annotations"][0]["evidence"][0]["end"] == len(RATIONALE)
    assert replay_from_obj(r).annotations[0].evidence[0].quote == q


def test_quote_must_equal_the_slice_and_the_hint_finds_it():
    r = base()
    ev = r["annotations"][0]["evidence"][0]
    ev.update(start=ev["start"] + 1, end=ev["end"] + 1)
    d = one(r)
    assert (d.code, d.path) == ("span-quote", "annotations[0].evidence[0].quote")
    assert "set `start` to 0 and `end` to 17" in d.help


def test_an_end_one_short_is_told_its_end():
    r = base()
    r["annotations"][0]["evidence"][0].update(end=16)  # "Both claims hold." is [0, 17)
    d = one(r)
    assert (d.code, d.path) == ("span-quote", "annotations[0].evidence[0].quote")
    assert d.help == "the quote occurs at [0, 17); set `end` to 17"


def test_an_end_past_the_source_is_told_where_the_quote_ends():
    r = base()
    q = "I used only the context."
    r["annotations"][0]["evidence"] = [span(RATIONALE, "rationale", q)]
    r["annotations"][0]["evidence"][0]["end"] += 1
    d = one(r)
    assert (d.code, d.path) == ("span-range", "annotations[0].evidence[0].end")
    assert d.help == f"the quote occurs at [18, 42); set `end` to {len(RATIONALE)}"


def test_a_quote_not_in_the_source_is_shown_the_closest_text():
    r = base()
    r["annotations"][1]["evidence"][0]["quote"] = "She is the CTO."  # [27, 42) is `She is its CTO.`
    d = one(r)
    assert (d.code, d.path) == ("span-quote", "annotations[1].evidence[0].quote")
    assert d.help == "copy the quote from the source exactly: the closest text is `She is its CTO.`"


def test_a_span_without_offsets_is_told_them_in_one_diagnostic():
    # a newcomer writes the quote and leaves the offsets to the tool
    r = base()
    del r["annotations"][1]["evidence"][0]["start"]
    del r["annotations"][1]["evidence"][0]["end"]
    d = one(r)
    assert (d.code, d.path, d.message) == (
        "missing",
        "annotations[1].evidence[0]",
        "missing `start` and `end`",
    )
    assert d.help == 'the quote is at [27, 42) of `context`: write `"start": 27, "end": 42`'


def test_a_span_without_offsets_whose_quote_is_not_there_names_the_closest_text():
    r = base()
    ev = r["annotations"][1]["evidence"][0]
    del ev["start"]
    ev["quote"] = "She is the CTO."
    d = one(r)
    assert (d.code, d.message) == ("missing", "missing `start`")
    assert d.help == "the quote is not in `context`; the closest text is `She is its CTO.`"


def test_a_span_without_its_quote_is_shown_what_it_selects():
    r = base()
    del r["annotations"][1]["evidence"][0]["quote"]
    d = one(r)
    assert (d.code, d.path) == ("missing", "annotations[1].evidence[0]")
    assert d.message == "missing `quote`"
    assert d.help == "the span selects `She is its CTO.`: write it as `quote`"


def test_a_bare_span_is_told_what_a_span_is():
    r = base()
    r["annotations"][1]["evidence"] = [{"source": "context"}]
    d = one(r)
    assert d.message == "missing `quote`, `start` and `end`"
    assert "`unmask.ReplayBuilder` finds them from the quote" in d.help


def test_annotations_missing_says_an_empty_array_will_do():
    d = one_with(annotations=DROP)
    assert (d.code, d.path, d.message) == ("missing", "$", "missing `annotations`")
    assert d.help == 'write `"annotations": []` when nothing is annotated yet'


def test_a_protocol_path_to_compiled_ir_is_told_to_embed_it(tmp_path):
    r = base()
    r["protocol"] = {"path": "claims.json"}
    d = one(r, base_dir=tmp_path)
    assert (d.code, d.path) == ("protocol-path", "protocol.path")
    assert d.help.endswith('embedded instead: write its JSON object as the value of `"protocol"`')


def test_a_folder_checked_as_a_replay_is_pointed_to_audit(tmp_path):
    with pytest.raises(UnmaskError) as exc:
        load_replay(tmp_path)
    (d,) = exc.value.diagnostics
    assert d.code == "io" and d.message.endswith("is a directory, not a regular file")
    assert d.help == f"`unmask audit {tmp_path}` checks every replay in a folder"


def test_a_json_lines_file_checked_as_a_replay_is_pointed_to_audit(tmp_path):
    lines = tmp_path / "runs.jsonl"
    lines.write_text(json.dumps(base()) + "\n" + json.dumps(base()) + "\n", encoding="utf-8")
    with pytest.raises(UnmaskError) as exc:
        load_replay(lines)
    (d,) = exc.value.diagnostics
    assert d.code == "json-syntax" and d.span is not None and d.span.line == 2
    assert d.help == f"`unmask audit {lines}` checks a JSON Lines file of replays, one a line"


def test_a_proto_file_checked_as_a_replay_is_told_what_it_is(tmp_path):
    proto = tmp_path / "claims.proto"
    proto.write_text('protocol p "x"\natom a : judge\ndecision pass iff a\n', encoding="utf-8")
    with pytest.raises(UnmaskError) as exc:
        load_replay(proto)
    (d,) = exc.value.diagnostics
    assert d.code == "json-syntax" and d.span is not None and d.span.line == 1
    assert d.help.startswith("`claims.proto` is a protocol, not a replay")
    assert '`"protocol": {"path": "claims.proto"}`' in d.help
    assert "`unmask analyze claims.proto`" in d.help
    # a JSON file that is not JSON keeps the parser's own help
    bad = tmp_path / "r.json"
    bad.write_text("nope", encoding="utf-8")
    with pytest.raises(UnmaskError) as exc:
        load_replay(bad)
    assert exc.value.diagnostics[0].help is None


def test_offsets_must_be_whole_numbers_not_booleans():
    r = base()
    r["annotations"][0]["evidence"][0]["start"] = False
    r["annotations"][1]["evidence"][0]["end"] = 3.0
    ds = diags(r)
    assert {(d.code, d.path) for d in ds} == {
        ("type", "annotations[0].evidence[0].start"),
        ("type", "annotations[1].evidence[0].end"),
    }


def test_evidence_source_must_exist_in_sources():
    r = base()
    r["annotations"].append(
        {
            "atom": "ext",
            "value": "FALSE",
            "evidence": [{"source": "trace", "start": 0, "end": 1, "quote": "x"}],
        }
    )
    d = one(r)
    assert (d.code, d.path) == ("source-missing", "annotations[2].evidence[0].source")


def test_trace_is_evidence_for_procedure_atoms():
    r = base()
    r["sources"]["trace"] = "step 1: read context"
    r["annotations"].append(
        {
            "atom": "ext",
            "value": "FALSE",
            "evidence": [span("step 1: read context", "trace", "read context")],
        }
    )
    assert replay_from_obj(r).annotation("ext").evidence[0].source == "trace"


@pytest.mark.parametrize(
    ("atom_name", "source", "ok"),
    [
        ("j", "rationale", True),
        ("j", "context", False),
        ("j", "trace", False),
        ("c", "context", True),
        ("c", "response", True),
        ("c", "rationale", False),
        ("ext", "rationale", True),
        ("ext", "trace", True),
        ("ext", "response", False),
    ],
)
def test_evidence_source_must_fit_the_role(atom_name, source, ok):
    r = base()
    text = "Alice is CTO, as I read it."
    r["sources"] = {"response": text, "context": text, "rationale": text, "trace": text}
    r["annotations"] = [
        {"atom": atom_name, "value": "TRUE", "evidence": [span(text, source, "Alice")]}
    ]
    if ok:
        assert replay_from_obj(r).annotations[0].evidence[0].source == source
    else:
        d = one(r)
        assert (d.code, d.path) == ("evidence-role", "annotations[0].evidence[0].source")


def test_protocol_text_is_never_evidence():
    r = base()
    r["sources"]["protocol"] = "PASS iff the claim holds."
    r["annotations"][0]["evidence"] = [span("PASS iff the claim holds.", "protocol", "PASS")]
    d = one(r)
    assert (d.code, d.path) == ("evidence-role", "annotations[0].evidence[0].source")


def test_unknown_evidence_source():
    r = base()
    r["annotations"][0]["evidence"][0]["source"] = "rationle"
    d = one(r)
    assert (d.code, d.path) == ("unknown-source", "annotations[0].evidence[0].source")
    assert d.help == "did you mean `rationale`?"


# --- code points, not UTF-16 units or UTF-8 bytes ----------------------------------------------

UNICODE_RATIONALE = "Zoë 🚀 said: « the context supports it »."
QUOTE = "the context supports it"


def _unicode_replay(start: int, end: int) -> dict:
    r = base()
    r["sources"]["rationale"] = UNICODE_RATIONALE
    r["annotations"][0]["evidence"] = [
        {"source": "rationale", "start": start, "end": end, "quote": QUOTE}
    ]
    return r


def test_code_point_offsets_are_accepted():
    cp = UNICODE_RATIONALE.index(QUOTE)
    rep = replay_from_obj(_unicode_replay(cp, cp + len(QUOTE)))
    assert rep.annotations[0].evidence[0].start == cp


def test_utf8_byte_offsets_get_a_hint():
    b = UNICODE_RATIONALE.encode().index(QUOTE.encode())
    assert b != UNICODE_RATIONALE.index(QUOTE)
    d = one(_unicode_replay(b, b + len(QUOTE)))
    assert (d.code, d.path) == ("span-units", "annotations[0].evidence[0]")
    assert d.help == (
        "these offsets match the quote when counted in UTF-8 bytes; "
        "Unmask counts Unicode code points"
    )
    cp = UNICODE_RATIONALE.index(QUOTE)
    assert any(f"[{cp}, {cp + len(QUOTE)})" in n for n in d.notes)


def test_utf16_unit_offsets_get_a_hint():
    u = UNICODE_RATIONALE.encode("utf-16-le").index(QUOTE.encode("utf-16-le")) // 2
    assert u == UNICODE_RATIONALE.index(QUOTE) + 1  # the rocket is two UTF-16 units
    d = one(_unicode_replay(u, u + len(QUOTE)))
    assert d.code == "span-units"
    assert "UTF-16 code units" in d.help


# --- domains ---------------------------------------------------------------------------------


def test_domains_with_embedded_ir_are_ignored_with_a_warning():
    r = base()
    r["domains"] = {"claim": ["a", "b"]}
    rep = replay_from_obj(r)
    assert [(w.code, w.path) for w in rep.warnings] == [("domains-ignored", "domains")]


def test_domain_members_must_be_unique_names():
    r = base()
    r["domains"] = {"claim": ["a", "a", 3, "9x"]}
    ds = diags(r)
    assert [(d.code, d.path) for d in ds] == [
        ("domain", "domains.claim[1]"),
        ("type", "domains.claim[2]"),
        ("name", "domains.claim[3]"),
    ]


def test_domain_size_limit():
    r = base()
    r["domains"] = {"claim": [f"m{i}" for i in range(5)]}
    d = one(r, limits=Limits(max_domain_size=4))
    assert (d.code, d.path) == ("limit", "domains.claim")
    assert "`--max-domain-size`" in d.help


# --- protocol IR -----------------------------------------------------------------------------


def test_protocol_must_have_a_known_form():
    d = one_with(protocol={"file": "x.proto"})
    assert (d.code, d.path) == ("protocol-form", "protocol")


def test_protocol_ir_schema():
    d = proto_diag(lambda p: p.update(schema="unmask.protocol/9"))
    assert (d.code, d.path) == ("schema", "protocol.schema")


def test_atom_role_must_be_valid():
    d = proto_diag(lambda p: p["atoms"][2].update(role="step"))
    assert (d.code, d.path) == ("role", "protocol.atoms[2].role")


def test_atom_declared_twice():
    d = proto_diag(lambda p: p["atoms"].append({"name": "j", "role": "judge"}))
    assert (d.code, d.path) == ("duplicate-atom", "protocol.atoms[3].name")
    assert any("protocol.atoms[0]" in n for n in d.notes)


def test_atom_name_shape_allows_family_members():
    r = base()
    r["protocol"]["atoms"].append({"name": "supported(c1)", "role": "judge"})
    assert replay_from_obj(r).protocol.atom("supported(c1)") is not None
    d = proto_diag(lambda p: p["atoms"].append({"name": "a b", "role": "judge"}))
    assert (d.code, d.path) == ("name", "protocol.atoms[3].name")


def test_grounding_pair_must_be_judge_then_context():
    d = proto_diag(lambda p: p.update(grounding=[{"judge": "ext", "context": "c"}]))
    assert (d.code, d.path) == ("ground-role", "protocol.grounding[0].judge")
    ds = diags(
        {**base(), "protocol": {**ir_protocol(), "grounding": [{"judge": "c", "context": "j"}]}}
    )
    assert [(x.code, x.path) for x in ds] == [
        ("ground-role", "protocol.grounding[0].judge"),
        ("ground-role", "protocol.grounding[0].context"),
    ]


def test_grounding_names_must_resolve():
    d = proto_diag(lambda p: p.update(grounding=[{"judge": "j", "context": "cc"}]))
    assert (d.code, d.path) == ("unknown-atom", "protocol.grounding[0].context")


def test_decision_is_required():
    d = proto_diag(lambda p: p.pop("decision"))
    assert (d.code, d.path) == ("missing", "protocol")


def test_requirement_ids_are_unique():
    d = proto_diag(lambda p: p["requirements"].append(dict(p["requirements"][0])))
    assert (d.code, d.path) == ("duplicate-name", "protocol.requirements[1].id")


def test_addressed_absent_or_null_means_none():
    for mutate in (lambda q: q.pop("addressed"), lambda q: q.update(addressed=None)):
        r = base()
        mutate(r["protocol"]["requirements"][0])
        assert replay_from_obj(r).protocol.requirements[0].addressed is None


@pytest.mark.parametrize(
    ("expr", "code", "path"),
    [
        ({"op": "nand", "args": [atom("j")]}, "expr", "protocol.decision.op"),
        ({"op": "not", "args": [atom("j"), atom("c")]}, "expr", "protocol.decision.args"),
        ({"op": "implies", "args": [atom("j")]}, "expr", "protocol.decision.args"),
        (
            {"op": "iff", "args": [atom("j"), atom("c"), atom("j")]},
            "expr",
            "protocol.decision.args",
        ),
        ({"op": "atleast", "args": [atom("j")]}, "missing", "protocol.decision"),
        ({"op": "atleast", "k": -1, "args": [atom("j")]}, "expr", "protocol.decision.k"),
        ({"op": "atmost", "k": True, "args": [atom("j")]}, "type", "protocol.decision.k"),
        ({"op": "exactly", "k": 1.0, "args": [atom("j")]}, "type", "protocol.decision.k"),
        ({"op": "and", "k": 1, "args": [atom("j")]}, "expr", "protocol.decision.k"),
        ({"op": "and"}, "missing", "protocol.decision"),
        ({"op": "and", "args": atom("j")}, "type", "protocol.decision.args"),
        ({"atom": "j", "op": "not"}, "expr", "protocol.decision"),
        ({"atom": "j", "negated": True}, "expr", "protocol.decision.negated"),
        ({}, "expr", "protocol.decision"),
        ("j", "expr", "protocol.decision"),
        ({"const": "yes"}, "type", "protocol.decision.const"),
        ({"atom": 3}, "type", "protocol.decision.atom"),
        (
            {"op": "or", "args": [atom("j"), {"atom": "jj"}]},
            "unknown-atom",
            "protocol.decision.args[1].atom",
        ),
    ],
)
def test_expression_errors_carry_their_path(expr, code, path):
    d = proto_diag(lambda p: p.update(decision=expr))
    assert (d.code, d.path) == (code, path)


def test_unknown_atom_in_an_expression_suggests_a_name():
    d = proto_diag(lambda p: p.update(decision={"atom": "ex"}))
    assert d.help == "did you mean `ext`?"


def test_expressions_are_built_with_the_smart_constructors():
    nested = {"op": "and", "args": [atom("j"), {"op": "and", "args": [atom("c"), {"const": True}]}]}
    d = protocol_from_json({**ir_protocol(), "decision": nested}).decision
    assert d == ir.Nary("and", (ir.Atom("j"), ir.Atom("c")))
    card = {"op": "atleast", "k": 2, "args": [atom("j"), atom("c"), atom("ext")]}
    d = protocol_from_json({**ir_protocol(), "decision": card}).decision
    assert ir.evaluate(d, {"j": True, "c": True, "ext": False})
    assert not ir.evaluate(d, {"j": True, "c": False, "ext": False})
    dbl = {"op": "not", "args": [{"op": "not", "args": [atom("j")]}]}
    assert protocol_from_json({**ir_protocol(), "decision": dbl}).decision == ir.Atom("j")


# --- limits ----------------------------------------------------------------------------------


def _deep_expr(n: int) -> dict:
    e: dict = atom("j")
    for _ in range(n):
        e = {"op": "not", "args": [e]}
    return e


def test_expression_depth_limit_names_the_option():
    r = base()
    r["protocol"]["decision"] = _deep_expr(300)
    d = one(r)
    assert d.code == "limit"
    assert d.path.startswith("protocol.decision.args[0]")
    assert d.path.count("args[0]") == DEFAULT_LIMITS.max_expr_depth
    assert "`--max-expr-depth`" in d.help


def test_very_deep_python_expression_does_not_recurse():
    r = base()
    r["protocol"]["decision"] = _deep_expr(20_000)
    p = replay_from_obj(r, limits=Limits(max_expr_depth=100_000)).protocol
    assert p.decision == ir.Atom("j")  # an even number of negations cancels


def test_expression_node_limit():
    r = base()
    r["protocol"]["decision"] = {"op": "or", "args": [atom("j")] * 50}
    d = one(r, limits=Limits(max_expr_nodes=20))
    assert d.code == "limit" and "`--max-expr-nodes`" in d.help


def test_atom_limit():
    d = one(base(), limits=Limits(max_atoms=2))
    assert (d.code, d.path) == ("limit", "protocol.atoms")


def test_source_length_limit():
    r = base()
    r["sources"]["context"] += " " * 20
    d = one(r, limits=Limits(max_source_chars=50))
    assert (d.code, d.path) == ("limit", "sources.context")


def test_huge_string_is_a_limit_error(tmp_path):
    r = base()
    r["sources"]["trace"] = "x" * 50_000_000
    f = tmp_path / "big.json"
    f.write_text(json.dumps(r))
    with pytest.raises(UnmaskError) as exc:
        load_replay(f)
    assert [(d.code, d.path) for d in exc.value.diagnostics] == [("limit", "sources.trace")]


def test_file_size_limit(tmp_path):
    f = tmp_path / "r.json"
    f.write_text(json.dumps(base()))
    with pytest.raises(UnmaskError) as exc:
        load_replay(f, Limits(max_file_bytes=100))
    d = exc.value.diagnostics[0]
    assert d.code == "limit" and d.file == str(f) and "`--max-file-bytes`" in d.help


# --- adversarial JSON --------------------------------------------------------------------------


def _text_error(text: str | bytes) -> object:
    with pytest.raises(UnmaskError) as exc:
        if isinstance(text, bytes):
            parse_json_bytes(text, "r.json")
        else:
            load_replay_text(text, "r.json")
    assert len(exc.value.diagnostics) == 1
    return exc.value.diagnostics[0]


def test_nesting_200000_deep_is_a_limit_error():
    d = _text_error('{"a": ' + "[" * 200_000 + "]" * 200_000 + "}")
    assert d.code == "limit" and "200001" in d.message


def test_depth_scan_ignores_brackets_in_strings():
    assert json_depth(b'{"a": "[[[{{{", "b": ["\\"[", "\\\\"]}') == 2
    assert json_depth(b'["]]]", [["\\\\\\"]"]]]') == 3


def _depth_by_hand(data: bytes) -> int:
    """The oracle: a byte-by-byte scanner that knows strings and escapes."""
    depth = deepest = 0
    inside = escaped = False
    for b in data:
        if inside:
            if escaped:
                escaped = False
            elif b == ord("\\"):
                escaped = True
            elif b == ord('"'):
                inside = False
        elif b == ord('"'):
            inside = True
        elif b in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif b in b"]}":
            depth -= 1
    return deepest


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab:,'),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet='[]{}"\\a', max_size=3), inner, max_size=4)
    ),
    max_leaves=40,
)


@given(_JSON_VALUES, st.booleans())
def test_depth_scan_agrees_with_a_scanner_by_hand(value, spaced):
    data = json.dumps(value, indent=1 if spaced else None).encode()
    assert json_depth(data) == _depth_by_hand(data)


@given(st.text(alphabet="[]{}", max_size=80), st.integers(0, 45))
def test_depth_scan_of_unbalanced_or_deep_brackets(brackets, deeper):
    # the innermost-pair passes stop at 32 levels and never trust an unbalanced string
    data = ("[" * deeper + brackets + "]" * deeper).encode()
    assert json_depth(data) == _depth_by_hand(data)


def test_raising_the_json_depth_beyond_the_parser_is_still_an_error():
    d = _text_error("[" * 100_000 + "]" * 100_000)
    assert d.code == "limit"
    with pytest.raises(UnmaskError) as exc:
        parse_json_bytes(b"[" * 100_000 + b"]" * 100_000, "r.json", Limits(max_json_depth=10**6))
    assert exc.value.diagnostics[0].code == "limit"


def _values_by_hand(value) -> int:
    n, stack = 0, [value]
    while stack:
        v = stack.pop()
        n += 1
        stack.extend(v.values() if isinstance(v, dict) else v if isinstance(v, list) else ())
    return n


@given(_JSON_VALUES, st.booleans())
def test_the_value_count_bounds_what_parsing_builds(value, spaced):
    # commas and opening brackets outside strings, plus one: never fewer than the values
    # parsed, and at most one more per empty array or object
    data = json.dumps(value, indent=1 if spaced else None).encode()
    text = data.decode()
    empties = text.count("[]") + text.count("{}")
    assert _values_by_hand(value) <= count_values(data) <= _values_by_hand(value) + empties + 1


def test_a_document_of_more_values_than_the_bound_is_refused_before_parsing():
    # 21 million `{}` in 64 MB parsed into 1.5 GB; the count refuses it first
    data = b"[" + b",".join([b"{}"] * 1000) + b"]"
    with pytest.raises(UnmaskError) as exc:
        parse_json_bytes(data, "r.json", Limits(max_json_values=1000))
    [d] = exc.value.diagnostics
    assert d.code == "limit" and "more than 1000 values" in d.message
    assert "--max-json-values" in d.help
    # counted: 1,001 arrays and objects, 999 commas, and one
    assert count_values(data) == 2001
    assert len(parse_json_bytes(data, "r.json", Limits(max_json_values=2001))) == 1000
    # commas and brackets inside strings are not values
    quoted = json.dumps(["[{,"] * 300).encode()
    assert count_values(quoted) == 301
    assert len(parse_json_bytes(quoted, "q.json", Limits(max_json_values=301))) == 300


def test_truncated_file():
    text = json.dumps(base())
    d = _text_error(text[: len(text) // 2])
    assert d.code == "json-syntax" and d.span.line == 1
    assert "truncated" in d.help


def test_syntax_error_has_line_and_column():
    d = _text_error('{\n  "id": "x",\n  "verdict" "PASS"\n}')
    assert d.code == "json-syntax"
    assert (d.span.line, d.span.column) == (3, 13)


def test_non_utf8_file():
    d = _text_error(b'{\n"id": "caf\xe9"}')
    assert d.code == "encoding"
    assert (d.span.line, d.span.column) == (2, 11)


def test_empty_file():
    assert _text_error("").code == "json-empty"
    assert _text_error(" \n\t ").code == "json-empty"


def test_byte_order_mark_is_skipped():
    assert parse_json_bytes(b"\xef\xbb\xbf" + b'{"a": 1}') == {"a": 1}


def test_nan_and_infinity_are_rejected_with_their_path():
    r = json.dumps(base()).replace('"gold": "PASS"', '"gold": NaN, "x": [-Infinity]')
    with pytest.raises(UnmaskError) as exc:
        load_replay_text(r, "r.json")
    assert [(d.code, d.path) for d in exc.value.diagnostics] == [
        ("json-number", "gold"),
        ("json-number", "x[0]"),
    ]


def test_a_json_lines_record_names_its_line_with_the_path():
    """Found by tests/fuzz/test_readers_fuzz.py: a key given twice or a NaN in a JSON Lines
    record was said at its JSON path only (`x.jsonl: a: error: …`), without the line, so
    in a file of many records nobody could tell which. Now `x.jsonl:3: a: error: …`."""
    with pytest.raises(UnmaskError) as exc:
        parse_json_bytes(b'{"a": NaN, "b": 1, "b": 2}', "x.jsonl", first_line=3)
    assert [(d.code, d.location()) for d in exc.value.diagnostics] == [
        ("json-duplicate-key", "x.jsonl:3: $"),
        ("json-number", "x.jsonl:3: a"),
    ]
    with pytest.raises(UnmaskError) as exc:  # a syntax error: its line and column, as ever
        parse_json_bytes(b'{"a": }', "x.jsonl", first_line=3)
    assert exc.value.diagnostics[0].location() == "x.jsonl:3:7"
    with pytest.raises(UnmaskError) as exc:  # a whole file: no line
        parse_json_bytes(b'{"a": NaN}', "x.json")
    assert exc.value.diagnostics[0].location() == "x.json: a"


def test_duplicate_keys_are_an_error():
    text = json.dumps(base()).replace('"verdict": "PASS"', '"verdict": "PASS", "verdict": "FAIL"')
    d = _text_error(text)
    assert (d.code, d.path) == ("json-duplicate-key", "$")
    assert "`verdict`" in d.message
    d = _text_error('{"a": {"b c": {"k": 1, "k": 2}}}')
    assert d.path == 'a["b c"]'


def test_integer_literal_too_long():
    d = _text_error('{"a": [' + "9" * 5000 + "]}")
    assert (d.code, d.path) == ("json-number", "a[0]")


def test_unreadable_file(tmp_path):
    with pytest.raises(UnmaskError) as exc:
        read_json_file(tmp_path / "missing.json")
    assert exc.value.diagnostics[0].code == "io"


# --- .proto protocols by path and inline source -------------------------------------------------

PROTO = """protocol mini "PASS iff the claim holds."
atom j : judge "judge says so"
atom c : context "context says so"
atom ext : procedure "outside knowledge"
decision pass iff j
requirement ctx_only "only the context" { holds: not ext  addressed: true }
ground j ~ c
"""


def test_path_is_relative_to_the_replay_file(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "mini.proto").write_text(PROTO)
    r = base()
    r["protocol"] = {"path": "mini.proto"}
    f = tmp_path / "sub" / "r.json"
    f.write_text(json.dumps(r))
    rep = load_replay(f)
    assert rep.protocol == protocol_from_json(ir_protocol())


def test_missing_proto_file(tmp_path):
    r = base()
    r["protocol"] = {"path": "nowhere.proto"}
    d = one(r, base_dir=tmp_path)
    assert (d.code, d.path) == ("protocol-file", "protocol.path")


def test_a_mistyped_proto_path_is_offered_the_file_beside_it(tmp_path):
    (tmp_path / "protos").mkdir()
    (tmp_path / "protos" / "claims.proto").write_text(PROTO)
    (tmp_path / "protos" / "other.proto").write_text(PROTO)
    r = base()
    r["protocol"] = {"path": "protos/claim.proto"}
    d = one(r, base_dir=tmp_path)
    assert (d.code, d.path) == ("protocol-file", "protocol.path")
    assert d.help == "did you mean `protos/claims.proto`? `path` is relative to the replay file"
    # nothing alike (the `.proto` every name shares does not count): the plain help
    r["protocol"] = {"path": "protos/zzzzz.proto"}
    assert one(r, base_dir=tmp_path).help == "`path` is relative to the replay file"
    r["protocol"] = {"path": "nofolder/claims.proto"}
    assert one(r, base_dir=tmp_path).help == "`path` is relative to the replay file"


def test_compile_error_in_a_proto_file_keeps_its_span(tmp_path):
    (tmp_path / "bad.proto").write_text(
        PROTO.replace("decision pass iff j", "decision pass iff jj")
    )
    r = base()
    r["protocol"] = {"path": "bad.proto"}
    f = tmp_path / "r.json"
    f.write_text(json.dumps(r))
    with pytest.raises(UnmaskError) as exc:
        load_replay(f)
    d = exc.value.diagnostics[0]
    assert d.span is not None and d.span.file == str(tmp_path / "bad.proto")
    assert (d.span.line, d.span.column) == (5, 19)
    assert "decision pass iff jj" in render_error(exc.value)  # the excerpt is shown


def test_compile_error_in_inline_source_points_into_the_string():
    r = base()
    r["protocol"] = {"source": PROTO.replace("ground j ~ c", "ground c ~ j")}
    ds = diags(r)
    assert ds and all(d.span is not None for d in ds)
    assert ds[0].span.file == "r.json: protocol.source"
    assert ds[0].span.line == 7


def test_inline_source_compiles():
    r = base()
    r["protocol"] = {"source": PROTO}
    assert replay_from_obj(r).protocol == protocol_from_json(ir_protocol())


def family_proto() -> str:
    """PROTO with its judge atom made a family over a free domain `claim`."""
    return (
        PROTO.replace("atom j : judge", "domain claim\natom s(claim) : judge")
        .replace("decision pass iff j", "decision pass iff all(s(x) for x in claim)")
        .replace("ground j ~ c", "")
    )


def test_family_protocol_takes_domains():
    fam = family_proto()
    r = base()
    r["protocol"] = {"source": fam}
    r["domains"] = {"claim": ["a", "b"]}
    r["annotations"] = [{"atom": "s(b)", "value": "UNKNOWN"}]
    rep = replay_from_obj(r)
    assert rep.protocol.atom("s(a)") is not None
    assert rep.unannotated == ("s(a)", "c", "ext")
    assert rep.domains == {"claim": ("a", "b")}


def test_a_boolean_value_is_told_the_three_strings():
    r = base()
    r["annotations"][0]["value"] = True
    d = one(r)
    assert (d.code, d.path) == ("type", "annotations[0].value")
    assert d.message == 'expected `"TRUE"`, `"FALSE"` or `"UNKNOWN"` (a string), found `true`'


def test_members_written_as_one_string_are_told_the_array_and_only_once():
    fam = family_proto()
    r = base()
    r["protocol"] = {"source": fam}
    r["annotations"] = []
    r["domains"] = {"claim": "joined, cto"}
    d = one(r)  # not also "no members were given for the free domain `claim`"
    assert (d.code, d.path) == ("type", "domains.claim")
    assert d.message == "expected an array of member names, found a string"
    assert d.help == 'write them as a JSON array: `["joined", "cto"]`'


def test_a_family_protocol_without_domains_is_told_the_replays_key():
    fam = family_proto()
    r = base()
    r["protocol"] = {"source": fam}
    r["annotations"] = []
    d = one(r)
    assert (d.code, d.message) == (
        "missing-domain",
        "no members were given for the free domain `claim`",
    )
    assert d.span is not None and d.span.file == "r.json: protocol.source"
    assert d.help == 'add its members to the replay: `"domains": {"claim": ["a", "b"]}`'


def test_protocol_errors_do_not_hide_annotation_errors():
    r = base()
    r["protocol"] = {"source": "protocol broken"}
    r["annotations"][0]["value"] = "YES"
    codes = {d.code for d in diags(r)}
    assert "value" in codes and len(codes) >= 2


# --- garbage never escapes as another exception ---------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4)
    ),
    max_leaves=20,
)
replay_keys = st.sampled_from(
    [
        "schema",
        "id",
        "protocol",
        "sources",
        "verdict",
        "gold",
        "annotations",
        "domains",
        "translation",
    ]
)


def _only_clean_errors(fn) -> None:
    try:
        assert isinstance(fn(), Replay)
    except UnmaskError as exc:
        assert exc.diagnostics
        assert all(d.message and d.code for d in exc.diagnostics)


@given(st.binary(max_size=200))
def test_garbage_bytes(data):
    _only_clean_errors(lambda: replay_from_obj(parse_json_bytes(data, "g.json"), "g.json"))


@given(json_values)
def test_garbage_json_values(value):
    _only_clean_errors(lambda: replay_from_obj(value, "g.json"))


@given(st.data())
def test_mutated_replays(data):
    r = base()
    target = data.draw(st.sampled_from(["top", "protocol", "annotation", "evidence", "decision"]))
    holder = {
        "top": r,
        "protocol": r["protocol"],
        "annotation": r["annotations"][0],
        "evidence": r["annotations"][0]["evidence"][0],
        "decision": r["protocol"]["decision"],
    }[target]
    key = data.draw(st.sampled_from(sorted(holder)) | replay_keys)
    if data.draw(st.booleans()):
        holder.pop(key, None)
    else:
        holder[key] = data.draw(json_values)
    _only_clean_errors(lambda: replay_from_obj(r, "g.json", base_dir=Path("/nonexistent")))


def test_unmaskc_output_embeds_unchanged():
    from unmask.language.compiler import compile_source

    root = Path(__file__).resolve().parents[2] / "examples"
    text = (root / "factual_claims_family.proto").read_text(encoding="utf-8")
    p = compile_source(text, "f.proto", {"claim": ["joined", "cto"]}, DEFAULT_LIMITS)
    assert protocol_from_json(protocol_to_json(p)) == p
    assert (
        protocol_from_json(json.loads(json.dumps(protocol_to_json(p)))).atom("supported(cto)").role
        == "judge"
    )


@given(st.text(max_size=300))
def test_garbage_text(text):
    _only_clean_errors(lambda: load_replay_text(text, "g.json"))


@given(st.integers(-5, 80), st.integers(-5, 80), st.text(max_size=6))
def test_random_spans_over_non_ascii_text(start, end, quote):
    r = _unicode_replay(start, end)
    r["annotations"][0]["evidence"][0]["quote"] = quote or QUOTE
    _only_clean_errors(lambda: replay_from_obj(r, "g.json"))


def test_nul_in_a_protocol_path_is_a_clean_error(tmp_path):
    r = base()
    r["protocol"] = {"path": "a\x00b.proto"}
    d = one(r, base_dir=tmp_path)
    assert (d.code, d.path) == ("protocol-file", "protocol.path")


def test_json_lines_record_errors_keep_the_file_line():
    with pytest.raises(UnmaskError) as exc:
        parse_json_bytes(b'{"a": tru}', "batch.jsonl", first_line=42)
    d = exc.value.diagnostics[0]
    assert (d.span.file, d.span.line, d.span.column) == ("batch.jsonl", 42, 7)


def test_domain_the_protocol_does_not_declare_names_the_replay_file():
    r = base()
    r["protocol"] = {"source": PROTO}
    r["domains"] = {"claim": ["a"]}
    ds = diags(r)
    assert [(d.path, d.file) for d in ds] == [("domains.claim", "r.json")]


def test_a_document_is_decoded_once_for_its_value_and_its_text():
    from unmask.plumbing.jsonload import parse_json_document

    data = b'\xef\xbb\xbf{"a": ["\xc3\xa9", 1]}'
    value, text = parse_json_document(data, "r.json")
    assert value == parse_json_bytes(data, "r.json") == {"a": ["é", 1]}
    assert text == '{"a": ["é", 1]}'  # the byte order mark left out, as the parser did
