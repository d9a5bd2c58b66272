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
from unmask.plumbing.structs import field_names, schema_text
from unmask.replay import format as fmt
from unmask.replay.data import PROVENANCE_KINDS, SOURCES, VALUES, WHOLE
from unmask.replay.load import replay_from_obj

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "docs" / "schemas"
EXAMPLES = ROOT / "examples"
PUBLISHED = {"replay-1.json": fmt.replay_schema}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_the_published_schema_is_what_the_structs_generate(name: str) -> None:
    got = schema_text(PUBLISHED[name]())
    jsonschema.Draft202012Validator.check_schema(json.loads(got))
    assert (SCHEMAS / name).read_text(encoding="utf-8") == got, (
        f"docs/schemas/{name} is out of date: write "
        f"`schema_text({PUBLISHED[name].__module__}.{PUBLISHED[name].__name__}())` to it"
    )


def test_every_published_schema_is_tested() -> None:
    assert sorted(p.name for p in SCHEMAS.glob("*.json")) == sorted(PUBLISHED)


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
