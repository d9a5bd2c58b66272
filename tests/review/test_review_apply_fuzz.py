"""A fuzz test of `unmask review --apply`: random records (a lone CR before a record, CRLF
line ends, escapes, numbers no float holds), random decisions, and random changes between
the export and the apply (a record inserted, a record edited, an export line's id or digest
altered). Each decision is either refused with one message naming its line, or applied, and
then only its annotation's object differs: every other byte of the file is as it was."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unmask.cli.main import main
from unmask.plumbing.diagnostics import counted

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RULE = {"kind": "rule", "name": "outside-knowledge/1", "reviewed": False}

_LEAVES = [
    "1e400",
    "-1E+400",
    "1e-400",
    "123456789012345678901234567890",
    "-0.0",
    "null",
    "true",
    "[]",
    "{}",
    '"\\u202e\\u0085\\u009b"',
    '"\\ud800"',
    '"a\\"b\\\\"',
    '"\u00e9\u2028"',
]
WS = st.sampled_from(["", " ", "\r", " \r\t"])


@st.composite
def raw_json(draw, depth: int = 2) -> str:
    """JSON text, as a writer other than Python's may have written it (no raw newline)."""
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(_LEAVES))
    items = draw(st.lists(raw_json(depth - 1), max_size=3))
    sep = "," + draw(WS)
    if draw(st.booleans()):
        return "[" + sep.join(items) + "]"
    return "{" + sep.join(f'"k{i}":{draw(WS)}{v}' for i, v in enumerate(items)) + "}"


def record(name: str, meta: str | None, lead: str) -> tuple[str, str]:
    """A replay's record text and the text of its `external` annotation in it."""
    doc = json.loads((EXAMPLES / "case_b.json").read_text())
    doc["id"] = name
    ext = next(a for a in doc["annotations"] if a["atom"] == "external")
    ext["by"] = RULE
    text = json.dumps(doc)
    if meta is not None:
        text = text[:-1] + f', "meta": {meta}}}'
    return lead + text, json.dumps(ext)


RECORDS = st.lists(
    st.tuples(st.one_of(st.none(), raw_json()), WS, st.sampled_from(["\n", "\r\n"])),
    min_size=1,
    max_size=4,
)
CHOICES = st.sampled_from(["accept", "reject", "unknown", "skip", ""])
TAMPER = st.sampled_from(["none", "none", "insert", "edit", "id", "digest"])


def run(*args: str):
    return CliRunner().invoke(main, list(args))


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    RECORDS,
    st.lists(CHOICES, min_size=4, max_size=4),
    TAMPER,
    st.integers(0, 3),
)
def test_apply_refuses_clearly_or_changes_only_the_asked_annotations(
    specs, choices, tamper, at
) -> None:
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            _one(specs, choices, tamper, at % len(specs))
        finally:
            os.chdir(cwd)


def _one(specs, choices, tamper, at) -> None:
    shutil.copy(EXAMPLES / "factual_claims.proto", ".")
    recs = [(*record(f"r{i}", meta, lead), end) for i, (meta, lead, end) in enumerate(specs)]
    Path("batch.jsonl").write_bytes("".join(t + end for t, _, end in recs).encode())
    r = run("review", "batch.jsonl", "--export", "review.jsonl")
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in Path("review.jsonl").read_text().splitlines()]
    assert sorted(x["replay"] for x in lines) == [f"r{i}" for i in range(len(recs))]
    by_line = {int(x["location"].rpartition(":")[2]): x for x in lines}
    ids = [x["replay"] for x in lines]  # as exported, before a line is altered
    # decide
    expect: dict[str, str | None] = {}  # replay id: the value it gets, None: refused/skipped
    for i, x in enumerate(lines):
        c = choices[i % len(choices)]
        if c == "reject":
            x.update(decision="reject", value="FALSE", reviewer="ana")
        elif c == "unknown":
            x.update(decision="reject", value="UNKNOWN", reviewer="ana")
        elif c:
            x.update(decision=c, reviewer="ana")
        expect[x["replay"]] = {"accept": "TRUE", "reject": "FALSE", "unknown": "UNKNOWN"}.get(c)
    # change something between the export and the apply
    texts = [t for t, _, _ in recs]
    ends = [e for _, _, e in recs]
    doomed: set[str] = set()  # the replays whose decisions must be refused
    line = by_line[at + 1]
    if tamper == "insert":
        texts.insert(at, record("new", None, "")[0])
        ends.insert(at, "\n")
        doomed |= {f"r{i}" for i in range(at, len(recs))}
    elif tamper == "edit":
        texts[at] = texts[at][:-1] + ', "edited": 1}'
        doomed.add(f"r{at}")
    elif tamper == "id":
        line["replay"] = "someone-else"
        doomed.add(f"r{at}")
    elif tamper == "digest":
        line["digest"] = "sha256:" + "0" * 64
        doomed.add(f"r{at}")
    before = "".join(t + e for t, e in zip(texts, ends, strict=True)).encode()
    Path("batch.jsonl").write_bytes(before)
    Path("review.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = run("review", "--apply", "review.jsonl")
    assert "Traceback" not in r.output and "internal error" not in r.output, r.output
    wanted = {k: v for k, v in expect.items() if v is not None}
    refused = {k for k in wanted if k in doomed}
    applied = {k: v for k, v in wanted.items() if k not in doomed}
    said = f"applied {counted(len(applied), 'decision')}, refused {counted(len(refused), 'line')}"
    assert said in r.output, r.output
    assert r.exit_code == (1 if refused else 0), r.output
    # each refusal is one message naming its review line
    errors = re.findall(r"^review\.jsonl:(\d+):1: error: ", r.output, re.M)
    want = sorted(i + 1 for i, rid in enumerate(ids) if rid in refused)
    assert sorted(map(int, errors)) == want, r.output
    # every record: its bytes as they were, but the decided annotation's object
    after = Path("batch.jsonl").read_bytes().split(b"\n")
    old = before.split(b"\n")
    assert len(after) == len(old)
    for o, n in zip(old, after, strict=True):
        if not o.strip():
            assert n == o
            continue
        rid = json.loads(o)["id"]
        if rid not in applied:
            assert n == o
            continue
        ann = record(rid, None, "")[1].encode()
        start = o.index(ann)
        tail = o[start + len(ann) :]
        assert n.startswith(o[:start]) and n.endswith(tail)
        changed = json.loads(n[start : len(n) - len(tail)])
        assert changed["value"] == applied[rid] and changed["by"]["name"] == "ana"
        assert changed["review"]["original"]["by"] == RULE
    if applied:
        assert run("validate", "batch.jsonl").exit_code == 0
