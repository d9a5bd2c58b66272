"""Fuzzing the importers and the proposers (issue 28): random and mutated inputs.

Each importer (promptfoo, deepeval, inspect, wice, jsonl) gets a real or realistic input with
hypothesis-drawn mutations (a value replaced by another JSON value, a key removed, a string
of escapes and bidirectional overrides put in, the file cut short, or bytes that are no JSON
at all); ``propose claims`` and ``propose judge`` get random lines. Every case must end under
an alarm with a documented exit status (import: 0, 1, 4; propose: 0, 4), no traceback and no
escaped exception, no raw ESC, BEL or bidirectional control on stderr, and every replay it
wrote valid by ``unmask validate``; every proposer output line is JSON, one per input line.

Cases per test: ``MAX_EXAMPLES`` below (hypothesis' ``max_examples``; derandomized, so CI
runs the same cases every time). Eight tests, about 25 s together on a loaded machine.
"""

from __future__ import annotations

import copy
import json
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import ROOT, TEST_DATA
from unmask.cli.main import main

MAX_EXAMPLES = 12  # per importer, per proposer
SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
DATA = TEST_DATA / "importers"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u2066")
# what a hostile input writes: escapes, controls, bidi overrides, quotes and tags the
# importers look for, digits, and lone surrogates
ALPHABET = st.sampled_from(
    [
        "\x1b",
        "\x1b[2J",
        "\x1b]0;t\x07",
        "\x07",
        "\x9b",
        "\u202e",
        "\u2066",
        "\ud800",
        '"',
        "“",
        "”",
        "'",
        ".",
        "\n",
        " ",
        "GRADE: C",
        "GRADE: P",
        "<claim>",
        "</claim>",
        "<sentence_1>",
        "</sentence_1>",
        "<answer>",
        "</answer>",
        "<explanation>",
        "Sentence 1 confirms",
        "not",
        "The score is 0.5",
        "1e400",
        "9" * 30,
        "a",
        "PASS",
        "supported",
    ]
)
TEXT = st.lists(ALPHABET, max_size=12).map("".join)
LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
VALUE = st.recursive(
    LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)


def _paths(doc: Any, at: tuple = ()) -> list[tuple]:
    out = [at]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(_paths(v, (*at, k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:6]):  # the first few items of a long list are enough
            out.extend(_paths(v, (*at, i)))
    return out


def _apply(doc: Any, op: tuple[str, int, Any]) -> Any:
    kind, pick, value = op
    paths = _paths(doc)
    path = paths[pick % len(paths)]
    if not path:
        return value if kind == "set" else doc
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    last = path[-1]
    if kind == "set":
        parent[last] = value
    elif kind == "drop" and isinstance(parent, dict):
        del parent[last]
    elif kind == "text" and isinstance(parent[last], str):
        parent[last] = parent[last] + value if isinstance(value, str) else parent[last]
    return doc


OPS = st.lists(
    st.tuples(
        st.sampled_from(["set", "drop", "text", "text"]),
        st.integers(min_value=0, max_value=10_000),
        st.one_of(VALUE, TEXT),
    ),
    min_size=1,
    max_size=4,
)


def _mutated(seed: Any, draw_ops, how: str, cut: int) -> bytes:
    """The seed document after the drawn mutations, written as JSON; or cut short."""
    doc = copy.deepcopy(seed)
    for op in draw_ops:
        doc = _apply(doc, op)
    data = json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if how == "cut":
        return data[: cut % (len(data) + 1)]
    return data


HOW = st.sampled_from(["json", "json", "json", "cut"])


class _Hang(BaseException):
    pass


def _run(args: list[str], timeout_s: float = 60.0):
    def stop(signum, frame):  # type: ignore[no-untyped-def]
        raise _Hang

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        return CliRunner().invoke(main, args)
    except _Hang:
        pytest.fail(f"no exit within {timeout_s} s: {args}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _judge(res, exits: set[int]) -> None:
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"exception escaped: {res.exception!r}") from res.exception
    assert res.exit_code in exits, (res.exit_code, res.stderr[-2000:])
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout
    for ch in RAW:
        assert ch not in res.stderr, f"raw {ch!r} on stderr: {res.stderr[-500:]!r}"


def _import(tool: str, data: bytes, name: str, *extra: str) -> None:
    folder = Path(tempfile.mkdtemp(prefix="fuzz-import-"))
    try:
        src = folder / name
        src.write_bytes(data)
        out = folder / "out"
        res = _run(["import", tool, str(src), "--out", str(out), *extra])
        _judge(res, {0, 1, 4})
        written = sorted(out.glob("*.json")) if out.is_dir() else []
        if res.exit_code == 4:
            assert not written, "an input refused with exit 4 left replays behind"
        if written:
            checked = _run(["validate", str(out)])
            assert checked.exit_code == 0, checked.stdout + checked.stderr
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _seed(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


PROMPTFOO = _seed("promptfoo-sample-export.json")
DEEPEVAL = _seed("deepeval-test-run-sample.json")
INSPECT = _seed("inspect-input-task.json")
INSPECT["samples"] = INSPECT["samples"][:1]


@SETTINGS
@given(ops=OPS, how=HOW, cut=st.integers(min_value=0))
def test_fuzz_import_promptfoo(ops, how, cut) -> None:
    _import("promptfoo", _mutated(PROMPTFOO, ops, how, cut), "results.json")


PROMPTFOO_ROWS = [
    json.loads(line)
    for line in (DATA / "promptfoo-0.121.20" / "results.jsonl").read_text("utf-8").splitlines()
]


@SETTINGS
@given(rows=st.lists(st.tuples(OPS, HOW, st.integers(min_value=0)), min_size=1, max_size=3))
def test_fuzz_import_promptfoo_jsonl(rows) -> None:
    # promptfoo 0.121.20's own `-o results.jsonl` rows (assert-sets among them), mutated
    lines = [
        _mutated(PROMPTFOO_ROWS[cut % len(PROMPTFOO_ROWS)], ops, how, cut).replace(b"\n", b" ")
        for ops, how, cut in rows
    ]
    _import("promptfoo", b"\n".join(lines) + b"\n", "results.jsonl")


@SETTINGS
@given(ops=OPS, how=HOW, cut=st.integers(min_value=0))
def test_fuzz_import_deepeval(ops, how, cut) -> None:
    _import("deepeval", _mutated(DEEPEVAL, ops, how, cut), "run.json")


@SETTINGS
@given(ops=OPS, how=HOW, cut=st.integers(min_value=0))
def test_fuzz_import_inspect(ops, how, cut) -> None:
    _import("inspect", _mutated(INSPECT, ops, how, cut), "log.json")


WICE_GOLD = {
    "claim": "c",
    "meta": {"id": "t1", "chunk_idx": [1, 2], "oracle_idx": [1]},
    "label": "supported",
}
WICE_ROW = {
    "prompt": "We provide x\n\n<input><claim>c</claim><sentence_1>a</sentence_1>"
    "<sentence_2>b</sentence_2></input>",
    "response": "<explanation>Sentence 1 confirms it. Sentence 2 does not mention it."
    "</explanation><answer>supported</answer>",
}


@SETTINGS
@given(rows=st.lists(st.tuples(OPS, HOW, st.integers(min_value=0)), min_size=1, max_size=3))
def test_fuzz_import_wice(rows, tmp_path_factory) -> None:
    folder = tmp_path_factory.mktemp("wice")
    lines = [_mutated(WICE_ROW, ops, how, cut) for ops, how, cut in rows]
    gold = folder / "gold.jsonl"
    # the gold rows are mutated too, one case in three (a bad one must be exit 4)
    gold_ops, how, cut = rows[0]
    bad_gold = cut % 3 == 0
    gold_line = _mutated(WICE_GOLD, gold_ops, how, cut) if bad_gold else json.dumps(WICE_GOLD)
    gold.write_bytes(gold_line if isinstance(gold_line, bytes) else gold_line.encode())
    data = b"\n".join(lines) + b"\n"
    _import("wice", data, "judge_claim_test_outputs.jsonl", "--gold", str(gold))


JSONL_RECORD = {
    "qid": "q1",
    "judge": {"explanation": "Alice joined ACME in 2024: supported.", "label": "yes"},
    "evidence": "Alice joined ACME in 2024.",
    "human": "no",
    "joined": True,
    "joined_quote": "Alice joined ACME in 2024: supported",
}
JSONL_MAPPING = {
    "protocol": "factual_claims.proto",
    "id": "qid",
    "sources": {"rationale": "judge.explanation", "context": "evidence"},
    "verdict": {"field": "judge.label", "map": {"yes": "PASS", "no": "FAIL"}},
    "gold": {"field": "human", "map": {"yes": "PASS", "no": "FAIL"}},
    "annotations": [
        {
            "atom": "j_joined",
            "value": {"field": "joined", "map": {"true": "TRUE", "null": "UNKNOWN"}},
            "quote": "joined_quote",
        }
    ],
}


@SETTINGS
@given(
    rows=st.lists(st.tuples(OPS, HOW, st.integers(min_value=0)), min_size=1, max_size=3),
    mutate_mapping=st.booleans(),
)
def test_fuzz_import_jsonl(rows, mutate_mapping, tmp_path_factory) -> None:
    folder = tmp_path_factory.mktemp("jsonl")
    proto = ROOT / "examples" / "factual_claims.proto"
    (folder / "factual_claims.proto").write_text(proto.read_text(encoding="utf-8"))
    m = copy.deepcopy(JSONL_MAPPING)
    if mutate_mapping:
        m = json.loads(_mutated(m, rows[0][0], "json", 0).decode("utf-8", "surrogatepass"))
    mapping = folder / "mapping.json"
    mapping.write_text(json.dumps(m), encoding="utf-8")
    lines = [_mutated(JSONL_RECORD, ops, how, cut) for ops, how, cut in rows]
    _import("jsonl", b"\n".join(lines) + b"\n", "judgments.jsonl", "--mapping", str(mapping))


def _propose(sub: str, lines: list[bytes], *extra: str) -> None:
    folder = Path(tempfile.mkdtemp(prefix="fuzz-propose-"))
    try:
        src = folder / "in.jsonl"
        src.write_bytes(b"\n".join(lines) + b"\n")
        out = folder / "out.jsonl"
        res = _run(["propose", sub, str(src), "-o", str(out), *extra])
        _judge(res, {0, 4})
        records = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
        # one output line per non-blank input line, in order
        assert len(records) == sum(1 for x in lines for y in x.split(b"\n") if y.strip())
    finally:
        shutil.rmtree(folder, ignore_errors=True)


CLAIMS_ROW = {"id": "c1", "claim": "Alice joined ACME in 2024.", "evidence": ["Alice joined."]}
JUDGE_ROW = {"id": "j1", "rationale": WICE_ROW["response"]}


@SETTINGS
@given(rows=st.lists(st.tuples(OPS, HOW, st.integers(min_value=0)), min_size=1, max_size=4))
def test_fuzz_propose_claims(rows) -> None:
    lines = [_mutated(CLAIMS_ROW, ops, how, cut).replace(b"\n", b" ") for ops, how, cut in rows]
    _propose("claims", lines)


@SETTINGS
@given(rows=st.lists(st.tuples(OPS, HOW, st.integers(min_value=0)), min_size=1, max_size=4))
def test_fuzz_propose_judge(rows) -> None:
    lines = [_mutated(JUDGE_ROW, ops, how, cut).replace(b"\n", b" ") for ops, how, cut in rows]
    _propose("judge", lines)


EVAL_LOG = (DATA / "inspect-generated" / "moon.eval").read_bytes()


@SETTINGS
@given(
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), max_size=4),
    cut=st.integers(min_value=0),
)
def test_fuzz_import_inspect_eval(flips, cut) -> None:
    # inspect-ai 0.3.285's own `.eval` log (a zip of Zstandard members), bytes overwritten
    # and the archive cut short: a documented exit status, never a traceback
    data = bytearray(EVAL_LOG)
    for at, byte in flips:
        data[at % len(data)] = byte
    if cut % 3 == 0:
        data = data[: cut % len(data)]
    _import("inspect", bytes(data), "log.eval")
