"""The one bounded line reader, and the audit, `next` and `propose` inputs that use it."""

from __future__ import annotations

import io

from unmask.plumbing.limits import Limits
from unmask.plumbing.lines import bounded_lines
from unmask.replay.inputs import iter_tasks


def test_lines_are_numbered_and_an_overlong_one_comes_as_none():
    data = b'{"a": 1}\n' + b"x" * 50 + b"\n\n" + b"y" * 10
    assert list(bounded_lines(io.BytesIO(data), 20)) == [
        (1, b'{"a": 1}\n'),
        (2, None),
        (3, b"\n"),
        (4, b"y" * 10),
    ]


def test_the_bound_counts_the_bytes_before_the_newline():
    at_limit = b"x" * 8
    assert list(bounded_lines(io.BytesIO(at_limit + b"\n" + at_limit), 8)) == [
        (1, at_limit + b"\n"),
        (2, at_limit),
    ]
    assert list(bounded_lines(io.BytesIO(at_limit + b"x"), 8)) == [(1, None)]
    assert list(bounded_lines(io.BytesIO(at_limit + b"\r\n"), 8)) == [(1, None)]


def test_a_byte_order_mark_is_dropped_only_before_the_first_line_and_only_when_asked():
    data = b"\xef\xbb\xbf{}\n\xef\xbb\xbf{}\n"
    assert list(bounded_lines(io.BytesIO(data), 64, skip_bom=True)) == [
        (1, b"{}\n"),
        (2, b"\xef\xbb\xbf{}\n"),
    ]
    assert next(bounded_lines(io.BytesIO(data), 64)) == (1, b"\xef\xbb\xbf{}\n")


def test_an_audit_record_one_byte_over_the_limit_at_the_end_is_a_limit_record(tmp_path):
    # the last line, with no newline, used to pass the reader and fail later with the
    # whole-file wording; every overlong record now reads the same
    path = tmp_path / "in.jsonl"
    limits = Limits(max_file_bytes=1000)
    record = b'{"x": "' + b"a" * 992 + b'"}'  # 1001 bytes
    path.write_bytes(b"{}\n" + record)
    tasks = list(iter_tasks([str(path)], limits))
    assert [t.line for t in tasks] == [1, 2]
    assert tasks[0].problem is None and tasks[0].text == b"{}"
    assert tasks[1].problem == (
        "limit",
        "the record is larger than 1000 bytes",
        "raise the bound with `--max-file-bytes`",
    )
