"""Replay validation of who made an annotation (`by`), the `reference` source, `item` and
`judge`, and verdict labels: one test per rule, asserting each error's code and JSON path."""

from __future__ import annotations

import pytest

from tests.replay.test_replay import CONTEXT, base, diags, one, one_with, span
from unmask.replay.data import Annotation, Provenance
from unmask.replay.load import replay_from_obj

REFERENCE = "Annotator notes: Alice is the CTO of ACME since March."


# --- by ---------------------------------------------------------------------------------------


def with_by(by: object) -> dict:
    r = base()
    r["annotations"][0]["by"] = by
    return r


def test_absent_by_is_a_reviewed_human_annotation():
    a = replay_from_obj(base()).annotations[0]
    assert a.by is None
    assert not a.unreviewed and not a.gold_derived


@pytest.mark.parametrize(
    ("by", "reviewed", "gold"),
    [
        ({"kind": "human"}, True, False),
        ({"kind": "gold"}, True, True),
        ({"kind": "rule"}, False, False),
        ({"kind": "model"}, False, False),
        ({"kind": "human", "reviewed": False}, False, False),
        ({"kind": "rule", "reviewed": True}, True, False),
        ({"kind": "model", "name": "gpt-judge-annotator", "reviewed": True}, True, False),
        ({"kind": "gold", "reviewed": False}, False, True),
        ({"kind": "model", "name": "openai/gpt-x", "version": "sha256:ab12"}, False, False),
    ],
)
def test_by_kinds_and_review_defaults(by, reviewed, gold):
    a = replay_from_obj(with_by(by)).annotations[0]
    assert a.by == Provenance(
        by["kind"], by.get("name", ""), by.get("reviewed"), by.get("version", "")
    )
    assert a.by.to_json() == by
    assert a.by.reviewed is reviewed and a.by.gold_derived is gold
    assert a.unreviewed is (not reviewed) and a.gold_derived is gold


def test_provenance_defaults_and_json():
    assert Provenance("rule").reviewed is False
    assert Provenance("human").reviewed is True
    assert Provenance("gold", "wice-label").to_json() == {"kind": "gold", "name": "wice-label"}
    assert Provenance("rule", reviewed_flag=True).to_json() == {"kind": "rule", "reviewed": True}
    assert Annotation("x", "TRUE").by is None


@pytest.mark.parametrize(
    ("by", "code", "path"),
    [
        ("human", "type", "annotations[0].by"),
        (None, "type", "annotations[0].by"),
        ([{"kind": "human"}], "type", "annotations[0].by"),
        ({}, "missing", "annotations[0].by"),
        ({"name": "x"}, "missing", "annotations[0].by"),
        ({"kind": "robot"}, "provenance", "annotations[0].by.kind"),
        ({"kind": 3}, "type", "annotations[0].by.kind"),
        ({"kind": "rule", "name": 5}, "type", "annotations[0].by.name"),
        ({"kind": "rule", "name": ""}, "provenance", "annotations[0].by.name"),
        ({"kind": "rule", "version": ""}, "provenance", "annotations[0].by.version"),
        ({"kind": "rule", "version": 2}, "type", "annotations[0].by.version"),
        ({"kind": "rule", "reviewed": "no"}, "type", "annotations[0].by.reviewed"),
        ({"kind": "rule", "reviewed": None}, "type", "annotations[0].by.reviewed"),
        ({"kind": "rule", "reviewed": 0}, "type", "annotations[0].by.reviewed"),
        ({"kind": "rule", "reveiwed": True}, "provenance", "annotations[0].by.reveiwed"),
        ({"kind": "rule", "who knows": 1}, "provenance", 'annotations[0].by["who knows"]'),
    ],
)
def test_invalid_by_is_an_error_at_its_path(by, code, path):
    d = one(with_by(by))
    assert (d.code, d.path, d.severity) == (code, path, "error")


def test_misspelt_by_key_suggests_the_right_one():
    d = one(with_by({"kind": "rule", "reveiwed": True}))
    assert "`reveiwed`" in d.message and "`reviewed`" in (d.help or "")


def test_kind_in_capitals_gets_a_hint():
    d = one(with_by({"kind": "Rule"}))
    assert d.help == "write `rule` in lower case"


def test_every_by_error_is_reported():
    ds = diags(with_by({"kind": "robot", "extra": 1, "reviewed": "yes"}))
    assert sorted((d.code, d.path) for d in ds) == [
        ("provenance", "annotations[0].by.extra"),
        ("provenance", "annotations[0].by.kind"),
        ("type", "annotations[0].by.reviewed"),
    ]


# --- the reference source ----------------------------------------------------------------------


def with_reference(atom_index: int) -> dict:
    r = base()
    r["sources"]["reference"] = REFERENCE
    r["annotations"][atom_index]["evidence"] = [span(REFERENCE, "reference", "Alice is the CTO")]
    return r


def test_reference_is_evidence_for_context_atoms():
    rep = replay_from_obj(with_reference(1))
    assert rep.sources["reference"] == REFERENCE
    assert rep.annotation("c").evidence[0].source == "reference"


def test_reference_is_not_evidence_for_judge_atoms():
    d = one(with_reference(0))
    assert (d.code, d.path) == ("evidence-role", "annotations[0].evidence[0].source")
    assert "`reference`" in d.message
    assert "`context` atoms only" in (d.help or "")


def test_reference_is_not_evidence_for_procedure_atoms():
    r = base()
    r["sources"]["reference"] = REFERENCE
    r["annotations"].append(
        {"atom": "ext", "value": "FALSE", "evidence": [span(REFERENCE, "reference", "Alice")]}
    )
    d = one(r)
    assert (d.code, d.path) == ("evidence-role", "annotations[2].evidence[0].source")


def test_reference_must_be_text():
    r = base()
    r["sources"]["reference"] = ["notes"]
    d = one(r)
    assert (d.code, d.path) == ("type", "sources.reference")


def test_quoting_a_missing_reference():
    r = base()
    r["annotations"][1]["evidence"] = [span(CONTEXT, "context", "Alice")]
    r["annotations"][1]["evidence"][0]["source"] = "reference"
    d = one(r)
    assert (d.code, d.path) == ("source-missing", "annotations[1].evidence[0].source")


# --- item and judge ----------------------------------------------------------------------------


def test_item_and_judge_are_optional_and_kept():
    rep = replay_from_obj(base())
    assert rep.item is None and rep.judge is None
    r = base()
    r["item"], r["judge"] = "wice-dev-17", "gpt-4"
    rep = replay_from_obj(r)
    assert (rep.item, rep.judge) == ("wice-dev-17", "gpt-4")
    assert rep.warnings == ()


@pytest.mark.parametrize("key", ["item", "judge"])
@pytest.mark.parametrize(("value", "code"), [(7, "type"), (None, "type"), ("", None)])
def test_item_and_judge_must_be_non_empty_strings(key, value, code):
    r = base()
    r[key] = value
    d = one(r)
    assert (d.code, d.path) == (code or key, key)


# --- verdict labels ---------------------------------------------------------------------------


def test_binary_verdict_message_is_unchanged():
    d = one_with(verdict="MAYBE")
    assert d.message == "the verdict must be `PASS` or `FAIL`, found `MAYBE`"
    assert d.help == "write `PASS` or `FAIL`"


def test_gold_in_lower_case_gets_the_capitals_hint():
    d = one_with(gold="fail")
    assert (d.code, d.path) == ("gold", "gold")
    assert d.help == "write `FAIL` in capitals"


def test_a_verdict_that_is_not_a_string():
    d = one_with(verdict=True)
    assert (d.code, d.path) == ("verdict", "verdict")
    assert "found `true`" in d.message


def test_unreadable_protocol_does_not_add_a_verdict_error():
    r = base()
    r["verdict"] = "supported"
    del r["protocol"]["decision"]
    assert [d.code for d in diags(r)] == ["missing"]


WICE = ("supported", "partially_supported", "not_supported")


def three_labels() -> dict:
    r = base()
    p = r["protocol"]
    del p["decision"]
    p["labels"] = list(WICE)
    p["decisions"] = [
        {"label": "supported", "expr": {"atom": "j"}},
        {"label": "partially_supported", "expr": {"atom": "c"}},
        {"label": "not_supported", "otherwise": True},
    ]
    r["verdict"], r["gold"] = "partially_supported", "not_supported"
    return r


def test_declared_labels_are_the_verdicts() -> None:
    rep = replay_from_obj(three_labels())
    assert rep.protocol.labels == WICE
    assert (rep.verdict, rep.gold) == ("partially_supported", "not_supported")


@pytest.mark.parametrize("key", ["verdict", "gold"])
@pytest.mark.parametrize(
    ("value", "hint"),
    [
        ("PASS", "write one of `supported`, `partially_supported`, `not_supported`"),
        ("Supported", "write `supported`"),
        ("partialy_supported", "did you mean `partially_supported`?"),
        (1, "write one of `supported`, `partially_supported`, `not_supported`"),
    ],
)
def test_a_label_the_protocol_does_not_declare(key, value, hint) -> None:
    r = three_labels()
    r[key] = value
    d = one(r)
    assert (d.code, d.path) == (key, key)
    assert "expected one of `supported`, `partially_supported`, `not_supported`" in d.message
    assert d.help.startswith(hint)


def test_binary_labels_are_not_accepted_by_a_labelled_protocol_and_vice_versa() -> None:
    r = base()
    r["verdict"] = "supported"
    assert one(r).message == "the verdict must be `PASS` or `FAIL`, found `supported`"


def test_an_undeclared_label_exits_4_listing_the_labels(tmp_path) -> None:
    import json

    from click.testing import CliRunner

    from unmask.cli.main import main

    r = three_labels()
    r["verdict"] = "mostly_supported"
    path = tmp_path / "wice.json"
    path.write_text(json.dumps(r))
    for command in ("check", "validate"):
        result = CliRunner().invoke(main, [command, str(path)])
        assert result.exit_code == 4, result.output
        assert (
            "wice.json: verdict: error: the verdict must be a label of the protocol: expected "
            "one of `supported`, `partially_supported`, `not_supported`, found `mostly_supported`"
        ) in result.stderr


# --- readings: what several readers read when they did not agree ------------------------------


def with_readings(readings: object) -> dict:
    r = base()
    ann = r["annotations"][0]
    ann["value"] = "UNKNOWN"
    ann["evidence"] = []
    ann["by"] = {"kind": "model", "name": "m/x", "version": "sha256:0"}
    ann["readings"] = readings
    return r


def reading(value: str, quote: str | None = None, **by: object) -> dict:
    from tests.replay.test_replay import RATIONALE

    out: dict = {"by": {"kind": "model", "name": "m/x", **by}, "value": value}
    out["evidence"] = [span(RATIONALE, "rationale", quote)] if quote else []
    return out


def test_readings_are_read_with_their_reader_value_and_spans():
    r = with_readings([reading("TRUE", "Both claims hold."), reading("FALSE", "I used only")])
    a = replay_from_obj(r).annotations[0]
    assert [x.value for x in a.readings] == ["TRUE", "FALSE"]
    assert a.readings[0].by == Provenance("model", "m/x")
    assert a.readings[1].evidence[0].quote == "I used only"
    # without readings, nothing changes
    assert replay_from_obj(base()).annotations[0].readings == ()


@pytest.mark.parametrize(
    ("readings", "code", "path"),
    [
        ("TRUE", "type", "annotations[0].readings"),
        (["x"], "type", "annotations[0].readings[0]"),
        ([{"value": "UNKNOWN"}], "missing", "annotations[0].readings[0]"),
        ([reading("MAYBE")], "value", "annotations[0].readings[0].value"),
        ([reading("TRUE")], "evidence-missing", "annotations[0].readings[0].evidence"),
        (
            [{**reading("UNKNOWN"), "by": {"kind": "robot"}}],
            "provenance",
            "annotations[0].readings[0].by.kind",
        ),
        (
            [
                {
                    **reading("TRUE"),
                    "evidence": [{"source": "rationale", "start": 0, "end": 4, "quote": "Nope"}],
                }
            ],
            "span-quote",
            "annotations[0].readings[0].evidence[0].quote",
        ),
        (
            [
                {
                    **reading("TRUE"),
                    "evidence": [{"source": "context", "start": 0, "end": 5, "quote": CONTEXT[:5]}],
                }
            ],
            "evidence-role",
            "annotations[0].readings[0].evidence[0].source",
        ),
        (
            [{**reading("FALSE"), "evidence": [{"source": "rationale", "read": "whole"}]}],
            "evidence-read",
            "annotations[0].readings[0].evidence[0].read",
        ),
    ],
)
def test_invalid_readings_are_errors_at_their_path(readings, code, path):
    d = one(with_readings(readings))
    assert (d.code, d.path) == (code, path)


def test_an_unknown_key_in_a_reading_is_a_warning():
    r = with_readings([{**reading("UNKNOWN"), "confidence": 0.4}])
    replay = replay_from_obj(r)
    assert [(w.code, w.path) for w in replay.warnings] == [
        ("unknown-key", "annotations[0].readings[0].confidence")
    ]


def test_disagreements_reach_the_report_and_the_result_line(tmp_path):
    import json

    from click.testing import CliRunner

    from unmask.checking.record import report_json
    from unmask.cli.main import main

    r = with_readings([reading("TRUE", "Both claims hold."), reading("FALSE", "I used only")])
    path = tmp_path / "r.json"
    path.write_text(json.dumps(r))
    check = ["check", str(path), "--format", "json", "--backend", "sliced"]
    report = json.loads(CliRunner().invoke(main, check).output)
    [d] = report["disagreements"]
    assert d["atom"] == "j" and d["value"] == "UNKNOWN"
    assert [(x["value"], x["by"]["name"]) for x in d["readings"]] == [
        ("TRUE", "m/x"),
        ("FALSE", "m/x"),
    ]
    assert d["readings"][0]["evidence"][0]["quote"] == "Both claims hold."
    res = CliRunner().invoke(main, ["audit", str(path), "--out", str(tmp_path / "res.jsonl")])
    line = json.loads((tmp_path / "res.jsonl").read_text().splitlines()[0])
    assert line["disagreements"] == report["disagreements"], res.output
    back = report_json(line)
    back.pop("location")
    assert back == report
    md = CliRunner().invoke(main, ["check", str(path), "--format", "markdown"]).output
    assert "**Readers disagree on `j`**, so it is **? UNKNOWN**:" in md
    assert "- **✗ FALSE** by model m/x, unreviewed; rationale \\[18:29\\] `I used only`" in md
    # a replay without readings: no such field, as before
    path.write_text(json.dumps(base()))
    plain = json.loads(CliRunner().invoke(main, ["check", str(path), "--format", "json"]).output)
    assert "disagreements" not in plain
