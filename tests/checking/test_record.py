"""The one shape of a result: a report's ``ResultRecord`` is the record its own result line
gives back, for every shipped example, generated replays, a protocol that contradicts
itself, a lone surrogate and error records; what the batch outputs read comes from it."""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
from pathlib import Path

import msgspec
import pytest

from tests.strategies import random_protocol, random_replay
from unmask.api import check
from unmask.backends import create
from unmask.batch import task as batch_task
from unmask.batch.records import line_problem
from unmask.bench.workload import replay_line
from unmask.checking import formats
from unmask.checking import report as report_mod
from unmask.checking.formats import LineError, encode_line, error_line, result_line
from unmask.checking.outcomes import check_replay_line
from unmask.checking.record import ERROR_SCHEMA, RESULT_SCHEMA, ResultRecord, report_json
from unmask.ir import Span
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, render_all
from unmask.plumbing.safe import json_text
from unmask.replay import inputs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
SETTINGS = batch_task.Settings("sliced", 60_000)


def _read_back(result: batch_task.Result) -> ResultRecord:
    return ResultRecord.from_line(json.loads(result.line))


def _contradictory(tmp_path: Path) -> Path:
    proto = (ROOT / "examples" / "factual_claims.proto").read_text(encoding="utf-8")
    proto += "constraint yes: j_cto\nconstraint no: not j_cto\n"
    (tmp_path / "factual_claims.proto").write_text(proto, encoding="utf-8")
    replay = tmp_path / "case_b.json"
    shutil.copy(ROOT / "examples" / "case_b.json", replay)
    return replay


def test_every_example_reads_back_as_the_record_of_its_report() -> None:
    assert len(EXAMPLES) >= 10
    seen = set()
    for path in EXAMPLES:
        result = batch_task.audit_task(inputs.Task(str(path), str(path)), SETTINGS)
        record = result.record
        assert record.error is None and record.location == str(path)
        assert _read_back(result) == record, path.name
        seen.add(record.overall)
        seen |= {"labels"} if record.labels else set()
        seen |= {"flags"} if any(record.unreviewed) or any(record.gold_derived) else set()
        seen |= {"reasons"} if record.reasons else set()
    # the examples reach every field the outputs read (else the equality says little)
    assert {"SATISFIED", "VIOLATED", "UNKNOWN", "labels", "flags", "reasons"} <= seen


@pytest.mark.parametrize("workload", ["mixed", "supported"])
def test_generated_replays_read_back_as_their_records(workload: str) -> None:
    for i in range(30):
        text = replay_line(3, 7, i, workload).encode()
        result = batch_task.audit_task(
            inputs.Task(f"g.jsonl:{i + 1}", "g.jsonl", i + 1, text), SETTINGS
        )
        assert result.record.requirements and result.record.grounding
        assert _read_back(result) == result.record


def test_a_record_of_a_report_names_its_replay_judge_and_reasons() -> None:
    from unmask.api import check

    report = check(ROOT / "examples" / "case_c.json", "sliced")
    record = ResultRecord.from_report(report, "here")
    assert (record.replay, record.protocol, record.overall) == (
        "case-c",
        "factual_claims",
        "VIOLATED",
    )
    assert record.reasons == tuple(r.message for r in report.reasons)
    assert record.bases == ("CONSISTENT", "CONSISTENT", "CONSISTENT")
    assert record.dimensions == ("OK", "OK", "OK", "VIOLATED")
    assert not record.protocol_contradicts_itself


def test_a_protocol_that_contradicts_itself_is_read_from_the_bases(tmp_path: Path) -> None:
    path = _contradictory(tmp_path)
    result = batch_task.audit_task(inputs.Task(str(path), str(path)), SETTINGS)
    assert result.record.bases[0] == "INCONSISTENT"
    assert result.record.protocol_contradicts_itself
    assert _read_back(result).protocol_contradicts_itself


def test_a_lone_surrogate_reads_back_the_same() -> None:
    obj = json.loads((ROOT / "examples" / "case_b.json").read_text(encoding="utf-8"))
    obj["id"] = "case-\ud800"
    text = json.dumps(obj).encode()  # the surrogate stays escaped in the input
    beside = str(ROOT / "examples" / "s.jsonl")  # its protocol path resolves from there
    result = batch_task.audit_task(inputs.Task("s.jsonl:1", beside, 1, text), SETTINGS)
    assert result.record.replay == "case-\ud800"
    assert result.line.isascii()  # the line escaped it to stay valid UTF-8
    assert _read_back(result) == result.record


def test_an_error_record_keeps_its_diagnostics() -> None:
    bad = b'{"schema": "unmask.replay/1",\n "id": }'
    result = batch_task.audit_task(inputs.Task("b.jsonl:4", "b.jsonl", 4, bad), SETTINGS)
    record = result.record
    assert record.error == "json-syntax" and record.location == "b.jsonl:4"
    assert record.errors and record.errors[0].span is not None
    assert record.errors[0].span.line == 5  # the record's own line in its file, and on
    assert _read_back(result) == record
    assert record.replay is None and record.overall is None and record.dimensions == ()


def test_diagnostics_survive_their_json() -> None:
    d = Diagnostic(
        "missing",
        "missing `verdict`",
        span=Span("r.json", 2, 3, 2, 9),
        path="$.verdict",
        file="r.json",
        help="add it",
        notes=("one", "two"),
    )
    line = json.loads(encode_line(error_line("r.json", [d])))
    assert line["schema"] == ERROR_SCHEMA
    (back,) = ResultRecord.from_line(line).errors
    assert back == d and render_all([back]) == render_all([d])
    bare = Diagnostic("io", "gone")  # the optional fields are left out, and read as absent
    assert json.loads(encode_line(error_line("r", [bare])))["errors"] == [
        {"code": "io", "message": "gone", "severity": "error"}
    ]
    assert ResultRecord.from_line(
        {**line, "errors": [{"code": "io", "message": "gone"}]}
    ).errors == (bare,)


@pytest.mark.parametrize(
    ("edit", "path", "message"),
    [
        ({"errors": [{"code": "c", "message": "m", "span": {"file": "f", "line": "2"}}]},
         "errors[0].span.line", "expected an integer, found a string"),
        ({"errors": [{"code": "c", "message": "m", "notes": 3}]},
         "errors[0].notes", "expected an array, found a number"),
        ({"errors": [{"message": "m"}]}, "errors[0]", "missing `code`"),
        ({"location": None}, "location", "expected a string, found null"),
        ({"schema": "unmask.error/9"}, "schema",
         "expected one of `unmask.result/2`, `unmask.report/1` or `unmask.error/1`, "
         "found a string"),
        ({"schema": None}, "schema",
         "expected one of `unmask.result/2`, `unmask.report/1` or `unmask.error/1`, found null"),
    ],
)  # fmt: skip
def test_a_malformed_line_is_refused_with_its_json_path(edit, path: str, message: str) -> None:
    line = {**json.loads(encode_line(error_line("x", [Diagnostic("c", "m")]))), **edit}
    with pytest.raises(LineError) as got:
        ResultRecord.from_line(line)
    assert (got.value.path, got.value.message) == (path, message)
    assert line_problem(line) == f"has `{path}`: {message}"  # what `audit --resume` says


def test_a_report_without_location_is_no_line_and_a_missing_field_is_named() -> None:
    report = check(ROOT / "examples" / "case_b.json", "sliced")
    assert line_problem({"location": "x", **report.to_json()}) is None  # the first form
    assert line_problem(report.to_json()) == "is missing `location`"
    line = json.loads(encode_line(result_line(report, "x")))
    del line["dimensions"]
    assert line_problem(line) == "is missing `dimensions`"
    line = json.loads(encode_line(result_line(report, "x")))
    line["requirements"][0]["status"] = "PROVEN"
    assert line_problem(line) == (
        "has `requirements[0].status`: `PROVEN` is not one of the values this field takes"
    )


# --- the line's form: each annotation once, nothing lost ---------------------------------


def _report_and_line(location: str, text: bytes | None = None, file: str | None = None):
    """The report of a replay and its result line, parsed."""
    task = inputs.Task(location, file or location, 1 if text else None, text)
    replay = inputs.load_task(task, SETTINGS.limits)
    from unmask.checking.outcomes import check_replay

    report = check_replay(replay, batch_task.backend(SETTINGS))
    return report, json.loads(batch_task.audit_task(task, SETTINGS).line)


def _as_report_line(report, location: str) -> str:
    """The line of the first form (``unmask.report/1``): the report's JSON as it is."""
    body = report.to_json()
    return json.dumps({"schema": body.pop("schema"), "location": location, **body})


def _cases():
    for path in EXAMPLES:
        yield str(path), None, None
    for workload in ("mixed", "supported"):
        for i in range(6):
            yield f"g.jsonl:{i + 1}", replay_line(4, 3, i, workload).encode(), "g.jsonl"


def test_a_line_gives_back_its_report_json_key_for_key_and_in_order() -> None:
    shared = 0
    for location, text, file in _cases():
        report, line = _report_and_line(location, text, file)
        assert line["schema"] == RESULT_SCHEMA and list(line)[:2] == ["schema", "location"]
        assert json.dumps(report_json(line)) == _as_report_line(report, location), location
        # every entry is referred to, and no annotation is written twice
        atoms = [e["atom"] for e in line["annotations"]]
        assert len(atoms) == len(set(atoms))
        text_of_line = json.dumps(line)
        assert '"kind": "annotation"' not in text_of_line
        whole = json.dumps(report.to_json())
        shared += whole.count('"kind": "annotation"') > len(atoms)
    assert shared  # some case has an annotation that several checks rest on


def test_a_line_of_the_first_form_reads_as_it_is_and_as_the_same_record() -> None:
    for location, text, file in list(_cases())[:6]:
        report, line = _report_and_line(location, text, file)
        old = json.loads(_as_report_line(report, location))
        assert report_json(old) == old
        assert ResultRecord.from_line(old) == ResultRecord.from_line(line)
        assert ResultRecord.from_line(line) == ResultRecord.from_report(report, location)


def test_an_index_that_names_no_annotation_is_left_for_the_reader_to_pass_over() -> None:
    _, line = _report_and_line(str(ROOT / "examples" / "case_b.json"))
    assert line["annotations"], "the example cites an annotation"
    line["verdict"]["explanation"]["parts"] = [0, 5, -1]
    got = report_json(line)
    a = {"part": f"fact:{line['annotations'][0]['atom']}", "kind": "annotation"}
    a.update(line["annotations"][0])
    assert got["verdict"]["explanation"]["parts"] == [a, 5, -1]
    assert "annotations" not in got and got["schema"] == "unmask.report/1"
    assert ResultRecord.from_line(line).replay == "case-b"  # read, the indices passed over
    for bad, path in (
        ({**line, "annotations": "no"}, "annotations"),
        ({**line, "grounding": None}, "grounding"),
    ):
        with pytest.raises(LineError) as err:
            report_json(bad)
        assert err.value.path == path


def _json_dumps(line) -> bytes:
    """The line as ``json.dumps`` writes its values (compact, not ASCII) under the output
    policy: what the audit wrote before its lines were typed structures."""
    values = msgspec.to_builtins(line)
    try:
        text = json_text(json.dumps(values, ensure_ascii=False, separators=(",", ":")))
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(values, separators=(",", ":")).encode() + b"\n"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_line_written_from_the_report_is_what_json_dumps_writes(seed: int) -> None:
    # msgspec writes the line: the bytes `json.dumps` writes of the same values, on
    # random protocols (constraints, labels, contradictions), provenance of every
    # kind, the replay's own fields and locations with acting or non-ASCII characters
    rng = random.Random(seed)
    written = 0
    for _ in range(120):
        p = random_protocol(rng, rng.randrange(2, 9), extended=rng.random() < 0.5)
        r = random_replay(rng, p, extended=True)
        r = dataclasses.replace(
            r,
            gold=rng.choice([None, *p.labels]),
            item=rng.choice([None, "item-\u00e9"]),
            judge=rng.choice([None, "j\u202e"]),
        )
        location = rng.choice(["runs.jsonl:3", "d/\u00e9t\u00e9.json", "x\u001b[31m.jsonl:9"])
        for backend in ("sliced", "truthtable"):
            try:
                report = check(r, backend)
            except UnmaskError:
                break  # decisions that can overlap: refused, no report to write
            line = result_line(report, location)
            assert encode_line(line) == _json_dumps(line)
            assert (
                formats.dumps(report)
                == json.dumps(report.to_json(), ensure_ascii=False, indent=2) + "\n"
            )
            written += 1
    assert written > 150


def test_every_example_and_bench_line_is_what_json_dumps_writes() -> None:
    replays = [inputs.load_task(t, SETTINGS.limits) for t in _bench_tasks()]
    for path in EXAMPLES:
        replays.append(
            inputs.load_task(inputs.Task("e:1", str(path), 1, path.read_bytes()), SETTINGS.limits)
        )
    for r in replays:
        report = check(r, "sliced")
        line = result_line(report, "e:1")
        assert encode_line(line) == _json_dumps(line)


def _bench_tasks() -> list:
    return [
        inputs.Task(f"b:{i}", "b.jsonl", i + 1, replay_line(n, 0, i, w).encode())
        for n in (1, 2, 20, 200)
        for w in ("mixed", "supported")
        for i in range(3)
    ]


def test_a_line_with_a_lone_surrogate_takes_the_careful_path() -> None:
    obj = json.loads((ROOT / "examples" / "case_b.json").read_text(encoding="utf-8"))
    obj["id"] = "case-\ud800"
    beside = str(ROOT / "examples" / "s.jsonl")
    r = inputs.load_task(inputs.Task("s:1", beside, 1, json.dumps(obj).encode()), SETTINGS.limits)
    report = check(r, "sliced")
    report, doc, line = check_replay_line(r, create("sliced"), "s:1")
    assert line == encode_line(result_line(report, "s:1")) == _json_dumps(doc)
    assert b"\\ud800" in line and line.isascii()


def test_the_structs_the_writer_keeps_are_bounded_and_never_stale(monkeypatch) -> None:
    # results that cite no annotation, and parts that are not annotations, are kept as
    # structs by identity, each entry holding its object: with room for 4, fresh reports
    # (whose results die after each) still get their own lines
    monkeypatch.setattr(report_mod, "KEPT", 4)
    report_mod._FIELDS.clear()
    report_mod._PARTS.clear()
    rng = random.Random(5)
    for _ in range(40):
        r = random_replay(rng, random_protocol(rng, rng.randrange(2, 6)))
        try:
            report = check(r, "sliced")
        except UnmaskError:
            continue  # decisions that can overlap: refused
        line = result_line(report, "r:1")
        assert encode_line(line) == _json_dumps(line)
        assert report_json(json.loads(encode_line(line))) == {
            "schema": "unmask.report/1", "location": "r:1", **report.to_json()
        }  # fmt: skip
        assert len(report_mod._FIELDS) <= 4 and len(report_mod._PARTS) <= 4
