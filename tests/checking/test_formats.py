"""The published JSON Schemas of the report, the result line and the error record: the
committed files are what the structs generate, and every line and report Unmask writes
validates against its schema (and one it would refuse does not)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from unmask.api import check
from unmask.batch import task as batch_task
from unmask.bench.workload import replay_line
from unmask.checking import formats
from unmask.plumbing.diagnostics import Diagnostic
from unmask.replay import inputs
from unmask.replay.load import load_replay

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "docs" / "schemas"
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
SETTINGS = batch_task.Settings("sliced", 60_000)


def _schema(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text(encoding="utf-8"))


def test_the_committed_schemas_are_what_the_structs_generate() -> None:
    generated = formats.schemas()
    assert {"error-1.json", "report-1.json", "result-2.json"} <= set(generated)
    for name, text in generated.items():
        assert (SCHEMAS / name).read_text(encoding="utf-8") == text, (
            f"docs/schemas/{name} is stale: run `python -m unmask.checking.formats`"
        )
        jsonschema.Draft202012Validator.check_schema(json.loads(text))


def test_the_report_schema_has_one_name() -> None:
    from unmask.checking import report, shapes

    assert report.SCHEMA == shapes.REPORT_SCHEMA == "unmask.report/1"


def test_the_module_writes_the_schemas(tmp_path: Path) -> None:
    assert formats.main([str(tmp_path)]) == 0
    assert {p.name: p.read_text(encoding="utf-8") for p in tmp_path.iterdir()} == formats.schemas()


def test_every_line_and_report_validates_against_its_schema() -> None:
    assert len(EXAMPLES) >= 10
    line_schema = jsonschema.Draft202012Validator(_schema("result-2.json"))
    report_schema = jsonschema.Draft202012Validator(_schema("report-1.json"))
    tasks = [inputs.Task(str(p), str(p)) for p in EXAMPLES]
    tasks += [
        inputs.Task(f"g.jsonl:{i}", "g.jsonl", i, replay_line(5, 2, i, w).encode())
        for i, w in enumerate(("mixed", "supported", "mixed"), start=1)
    ]
    for task in tasks:
        result = batch_task.audit_task(task, SETTINGS)
        line = json.loads(result.line)
        line_schema.validate(line)
        assert type(formats.read_line(line)) is formats.ResultLine
    for path in EXAMPLES:
        report = check(load_replay(path), "sliced")
        report_schema.validate(json.loads(formats.dumps(report)))
        # an old results file's line: the report's JSON with its location
        report_schema.validate({"location": "x", **report.to_json()})


def test_an_error_record_validates_and_a_misshapen_line_does_not() -> None:
    schema = jsonschema.Draft202012Validator(_schema("error-1.json"))
    d = Diagnostic("missing", "missing `verdict`", path="verdict", file="r.json", help="add it")
    line = json.loads(formats.encode_line(formats.error_line("r.json", [d])))
    schema.validate(line)
    with pytest.raises(jsonschema.ValidationError):
        schema.validate({**line, "errors": [{"code": 1, "message": "m"}]})
    good = json.loads(
        batch_task.audit_task(inputs.Task(str(EXAMPLES[0]), str(EXAMPLES[0])), SETTINGS).line
    )
    lines = jsonschema.Draft202012Validator(_schema("result-2.json"))
    for bad in ({"overall": "PASSED"}, {"annotations": [{"atom": "a"}]}, {"location": 3}):
        with pytest.raises(jsonschema.ValidationError):
            lines.validate({**good, **bad})
        with pytest.raises(formats.LineError):  # the reader refuses what the schema refuses
            formats.read_line({**good, **bad})


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"overall": "\udfff"}, "overall"),
        ({"schema": "\ud800"}, "schema"),
        ({"verdict": {"observed": "PASS", "status": "\ud800ENTAILED"}}, "verdict.status"),
    ],
)
def test_a_lone_surrogate_in_a_word_is_a_line_error_at_its_path(change, path) -> None:
    """Found by tests/fuzz/test_readers_fuzz.py: a lone surrogate (which JSON may escape)
    where a word of a fixed set is expected made msgspec raise ``UnicodeEncodeError``, so
    `unmask audit --resume` and `unmask review results.jsonl` ended in an internal error."""
    good = json.loads(
        batch_task.audit_task(inputs.Task(str(EXAMPLES[0]), str(EXAMPLES[0])), SETTINGS).line
    )
    with pytest.raises(formats.LineError) as caught:
        formats.read_line({**good, **change})
    assert caught.value.path == path
    # free text keeps its lone surrogates: they are read back as written
    line = formats.read_line({**good, "replay": "r\ud800"})
    assert line.replay == "r\ud800"  # type: ignore[union-attr]
