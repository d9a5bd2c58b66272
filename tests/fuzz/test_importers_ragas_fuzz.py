"""Fuzzing `unmask import ragas` as `test_importers_fuzz.py` fuzzes the other importers.

RAGAS's own results (`tests/data/importers/ragas-generated/`, ragas 0.4.3) with
hypothesis-drawn mutations, as JSON records, as pandas' default columns and as JSON Lines;
and the CSV with cells replaced by hostile text (escapes, bidirectional overrides, quote
marks, Python that is no literal, unbalanced brackets). Every case must end under the same
alarm with a documented exit status (0, 1, 4), no traceback and no escaped exception, no
raw control on stderr, and every replay written valid. ``MAX_EXAMPLES`` cases per test.
"""

from __future__ import annotations

import csv
import io
import json

from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.test_importers_fuzz import DATA, HOW, OPS, SETTINGS, TEXT, _import, _mutated

RAGAS = DATA / "ragas-generated"
RECORDS = json.loads((RAGAS / "results.json").read_text(encoding="utf-8"))
COLUMNS = json.loads((RAGAS / "results-columns.json").read_text(encoding="utf-8"))
CSV_ROWS = list(csv.reader(io.StringIO((RAGAS / "results.csv").read_text("utf-8"), newline="")))
CELL = st.one_of(
    TEXT,
    st.sampled_from(
        [
            "",
            "nan",
            "1e999",
            "-0.5",
            "[",
            "['a', 'b'",
            "[('a',)]",
            "__import__('os').system('true')",
            "[().__class__]",
            "['\\x1b[2J']",
            "[" * 400 + "]" * 400,
        ]
    ),
)


@SETTINGS
@given(ops=OPS, how=HOW, cut=st.integers(min_value=0))
def test_fuzz_import_ragas_records(ops, how, cut) -> None:
    _import("ragas", _mutated(RECORDS, ops, how, cut), "results.json")


@SETTINGS
@given(ops=OPS, how=HOW, cut=st.integers(min_value=0))
def test_fuzz_import_ragas_columns(ops, how, cut) -> None:
    _import("ragas", _mutated(COLUMNS, ops, how, cut), "results.json")


@SETTINGS
@given(rows=st.lists(st.tuples(OPS, HOW, st.integers(min_value=0)), min_size=1, max_size=3))
def test_fuzz_import_ragas_jsonl(rows) -> None:
    lines = [
        _mutated(RECORDS[cut % len(RECORDS)], ops, how, cut).replace(b"\n", b" ")
        for ops, how, cut in rows
    ]
    _import("ragas", b"\n".join(lines) + b"\n", "results.jsonl")


@SETTINGS
@given(
    changes=st.lists(
        st.tuples(st.integers(min_value=0), st.integers(min_value=0), CELL), min_size=1, max_size=4
    ),
    cut=st.one_of(st.none(), st.integers(min_value=0)),
)
def test_fuzz_import_ragas_csv(changes, cut) -> None:
    rows = [list(r) for r in CSV_ROWS]
    for r, c, cell in changes:
        row = rows[r % len(rows)]
        row[c % len(row)] = cell
    buf = io.StringIO(newline="")
    csv.writer(buf).writerows(rows)
    data = buf.getvalue().encode("utf-8", "surrogatepass")
    _import("ragas", data if cut is None else data[: cut % (len(data) + 1)], "results.csv")
