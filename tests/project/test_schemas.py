"""The published JSON Schemas (docs/schemas/) are what the format's structs generate, and
say what Unmask reads: every shipped example and benchmark replay fits, the mistakes a
schema can name are refused by both, and unknown keys (a warning in Unmask) are allowed."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, get_args, get_type_hints

import jsonschema
import pytest

from unmask.bench.workload import labelled_line, replay_line
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.struct_schema import schema_text
from unmask.plumbing.structs import field_names
from unmask.replay import format as fmt
from unmask.replay.data import PROVENANCE_KINDS, SOURCES, VALUES, WHOLE
from unmask.replay.load import replay_from_obj
from unmask.review import calibration as cal
from unmask.review import format as review_fmt
from unmask.review.queue import Item, decide
from unmask.review.sample import Reading, read_line, sample_json

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "docs" / "schemas"
EXAMPLES = ROOT / "examples"
PUBLISHED = {
    "replay-1.json": fmt.replay_schema,
    "review-1.json": review_fmt.review_schema,
    "calibration-1.json": review_fmt.calibration_schema,
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_the_published_schema_is_what_the_structs_generate(name: str) -> None:
    got = schema_text(PUBLISHED[name]())
    jsonschema.Draft202012Validator.check_schema(json.loads(got))
    assert (SCHEMAS / name).read_text(encoding="utf-8") == got, (
        f"docs/schemas/{name} is out of date: write "
        f"`schema_text({PUBLISHED[name].__module__}.{PUBLISHED[name].__name__}())` to it"
    )


def test_every_published_schema_is_in_the_one_list_and_up_to_date() -> None:
    # `python -m unmask.checking.formats` writes what this list holds: every file there is
    # in it, and each is what its structs generate today
    from unmask.checking import formats

    listed = formats.schemas()
    assert sorted(p.name for p in SCHEMAS.glob("*.json")) == sorted(listed)
    assert set(PUBLISHED) <= set(listed)
    stale = [n for n, text in listed.items() if (SCHEMAS / n).read_text("utf-8") != text]
    assert stale == [], f"out of date: run `python -m unmask.checking.formats` ({stale})"


def _replay_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((SCHEMAS / "replay-1.json").read_text()))


def _example_replays() -> list[Path]:
    found = [
        p
        for p in sorted(EXAMPLES.glob("*.json"))
        if json.loads(p.read_text(encoding="utf-8")).get("schema") == fmt.REPLAY_SCHEMA
    ]
    assert len(found) >= 10, found  # the loop below tests something
    return found


def test_every_example_and_benchmark_replay_fits_the_schema() -> None:
    v = _replay_validator()
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in _example_replays()]
    docs += [json.loads(replay_line(n, 0, 0)) for n in (2, 20)]
    docs.append(json.loads(labelled_line(3, 0, 0)))
    for doc in docs:
        assert not list(v.iter_errors(doc)), doc.get("id")
        replay_from_obj(doc, base_dir=EXAMPLES)  # and Unmask reads it


def _case_b() -> dict[str, Any]:
    return json.loads((EXAMPLES / "case_b.json").read_text(encoding="utf-8"))


def _set(doc: dict[str, Any], path: tuple, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    at: Any = doc
    for k in path[:-1]:
        at = at[k]
    at[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "code"),
    [
        (("annotations", 0, "value"), "true", "value"),
        (("annotations", 0, "atom"), 5, "type"),
        (("annotations", 0, "by"), {"kind": "rule", "reveiwed": True}, "provenance"),
        (("annotations", 0, "by"), {"kind": "robot"}, "provenance"),
        (("annotations", 0, "evidence", 0, "start"), -1, "span-range"),
        (("annotations", 0, "evidence", 0, "read"), "whole", "evidence-read"),
        (("sources", "notes"), "x", "unknown-source"),
        (("translation",), {"status": "fine"}, "translation"),
        (("item",), "", "item"),
        (("schema",), "unmask.replay/2", "schema"),
        (("protocol",), {"path": "factual_claims.txt"}, "protocol-path"),
    ],
)
def test_what_the_schema_refuses_unmask_refuses(path: tuple, value: Any, code: str) -> None:
    doc = _set(_case_b(), path, value)
    assert list(_replay_validator().iter_errors(doc))
    with pytest.raises(UnmaskError) as err:
        replay_from_obj(doc, base_dir=EXAMPLES)
    assert code in {d.code for d in err.value.diagnostics}


def test_unknown_keys_fit_the_schema_and_are_warnings() -> None:
    doc = _set(_case_b(), ("annotaton",), [])
    doc = _set(doc, ("annotations", 0, "note"), "mine")
    assert not list(_replay_validator().iter_errors(doc))
    r = replay_from_obj(doc, base_dir=EXAMPLES)
    assert [(w.code, w.path, w.help) for w in r.warnings] == [
        ("unknown-key", "annotaton", "did you mean `annotations`?"),
        ("unknown-key", "annotations[0].note", None),
    ]


def _literal(tp: Any) -> tuple[str, ...]:
    while get_args(tp) and not isinstance(get_args(tp)[0], str):
        tp = get_args(tp)[0]
    return tuple(get_args(tp))


def test_the_structs_name_the_values_the_reader_checks() -> None:
    hints = {
        (cls, name): tp
        for cls in (fmt.AnnotationJson, fmt.EvidenceJson, fmt.ProvenanceJson, fmt.TranslationJson)
        for name, tp in get_type_hints(cls, include_extras=True).items()
    }
    assert set(_literal(hints[fmt.AnnotationJson, "value"])) == set(VALUES)
    assert set(_literal(hints[fmt.EvidenceJson, "source"])) == set(SOURCES)
    assert _literal(hints[fmt.EvidenceJson, "read"]) == (WHOLE,)
    assert set(_literal(hints[fmt.ProvenanceJson, "kind"])) == set(PROVENANCE_KINDS)
    assert _literal(hints[fmt.TranslationJson, "status"]) == fmt.TRANSLATION_STATUSES
    assert field_names(fmt.SourcesJson) == SOURCES


# --- the review line and the calibration file ----------------------------------------------


def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((SCHEMAS / name).read_text()))


RULE = {"kind": "rule", "name": "outside-knowledge/1", "reviewed": False}
SPAN = {"source": "rationale", "start": 0, "end": 4, "quote": "I al", "context": "[[I al]]so"}


def _lines() -> list[dict[str, Any]]:
    """A queue's line, and a sampled line shown and blind, as `--export` writes them."""
    item = Item("b1.json", "case-b", "external", "TRUE", RULE, [SPAN], "why", ["verdict"])
    item.digest = "sha256:" + "0" * 64
    reading = Reading(
        "b1.json",
        "case-b",
        "external",
        "outside knowledge",
        "TRUE",
        RULE,
        [SPAN],
        "why",
        {"rationale": "I also"},
    )
    draw = sample_json(7, 40, ("rule", "outside-knowledge/1", ""), False)
    blind = sample_json(7, 40, ("rule", "outside-knowledge/1", ""), True)
    return [item.to_json(), reading.to_json(draw, False), reading.to_json(blind, True)]


def test_review_lines_keep_their_bytes_and_fit_the_schema() -> None:
    queue, shown, blind = _lines()
    assert list(queue) == [
        "schema", "location", "replay", "digest", "atom", "current", "by", "evidence",
        "explanation", "findings", "checks", "passing", "decision", "value", "reviewer",
    ]  # fmt: skip
    assert list(shown) == [
        "schema", "location", "replay", "atom", "description", "current", "by", "evidence",
        "explanation", "sources", "sample", "decision", "value", "reviewer",
    ]  # fmt: skip
    assert "current" not in blind and "explanation" not in blind
    v = _validator("review-1.json")
    for line in (queue, shown, blind):
        assert not list(v.iter_errors(line))
    assert decide({**queue, "decision": "accept", "reviewer": "ana"}, "r.jsonl", 1) is not None
    answered = {**blind, "decision": "answer", "value": "FALSE", "reviewer": "ana"}
    assert read_line(answered, "r.jsonl", 3) is not None


@pytest.mark.parametrize(
    ("key", "value", "path", "message"),
    [
        ("location", 5, "location", "expected `location` as exported, a string"),
        ("by", "rule", "by", "expected `by` as exported, an object"),
        ("evidence", [{"source": "rationale"}], "evidence", "expected `evidence` as exported"),
        ("replay", 1, "replay", "expected `replay` as exported, a string"),
        ("atom", None, "atom", "expected `atom` as exported, a string"),
    ],
)
def test_what_the_review_schema_refuses_apply_refuses(
    key: str, value: Any, path: str, message: str
) -> None:
    line = {**_lines()[0], key: value, "decision": "accept", "reviewer": "ana"}
    assert list(_validator("review-1.json").iter_errors(line))
    with pytest.raises(UnmaskError) as err:
        decide(line, "r.jsonl", 4)
    (d,) = err.value.diagnostics
    assert d.message == f"{path}: {message}"


def test_a_review_line_missing_a_key_names_it() -> None:
    line = _lines()[0]
    del line["atom"]
    with pytest.raises(UnmaskError) as err:
        decide(line, "r.jsonl", 4)
    assert err.value.diagnostics[0].message == "atom: expected `atom` as exported, a string"


def test_a_calibration_file_keeps_its_bytes_and_fits_the_schema() -> None:
    c = cal.make("runs", [("rag", "sha256:" + "1" * 64)], {("rule", "r/1", "", "cites"): (40, 37)})
    text = c.dumps()
    assert text == (
        '{\n  "schema": "unmask.calibration/1",\n  "data": "runs",\n  "protocols": [\n    {\n'
        '      "name": "rag",\n      "digest": "sha256:' + "1" * 64 + '"\n    }\n  ],\n'
        '  "readers": [\n    {\n      "kind": "rule",\n      "name": "r/1",\n'
        '      "version": "",\n      "family": "cites",\n      "reviewed": 40,\n'
        '      "upheld": 37,\n      "precision": 0.925,\n      "interval": [\n'
        '        0.801,\n        0.974\n      ],\n      "level": 0.95\n    }\n  ]\n}\n'
    )
    obj = json.loads(text)
    assert not list(_validator("calibration-1.json").iter_errors(obj))
    assert cal.from_json(obj) == c
    obj["readers"][0]["level"] = 0.9
    assert list(_validator("calibration-1.json").iter_errors(obj))
