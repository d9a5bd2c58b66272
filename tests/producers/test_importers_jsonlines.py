"""The one JSON Lines reader every importer uses (unmask/importers/jsonlines.py): blank lines
passed over, CRLF and a last line without its newline read, bad UTF-8 and a line that is
not JSON named by its line, and the three ways of taking a bad line."""

from __future__ import annotations

from pathlib import Path

import pytest

from unmask.importers.jsonlines import BadLine, jsonl_lines, jsonl_records
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.limits import DEFAULT_LIMITS


def _write(tmp_path: Path, data: bytes) -> Path:
    p = tmp_path / "in.jsonl"
    p.write_bytes(data)
    return p


def test_blank_lines_crlf_and_a_last_line_without_newline(tmp_path: Path) -> None:
    p = _write(tmp_path, b'\xef\xbb\xbf{"a": 1}\r\n\r\n  \n{"b": "x\xe2\x80\xa8y"}\r\n[3]')
    got = list(jsonl_records(p, DEFAULT_LIMITS))
    # U+2028 inside a string is no line end; line numbers count the blank lines
    assert got == [(1, {"a": 1}), (4, {"b": "x\u2028y"}), (5, [3])]


def test_a_line_that_is_not_json_names_its_line(tmp_path: Path) -> None:
    p = _write(tmp_path, b'{"a": 1}\n\n{"a": \n[1]\n')
    got = list(jsonl_records(p, DEFAULT_LIMITS))
    assert [n for n, _ in got] == [1, 3, 4]
    bad = got[1][1]
    assert isinstance(bad, BadLine) and bad.reason.startswith("not a JSON record: ")
    assert bad.error is not None and bad.error.diagnostics[0].span.line == 3
    with pytest.raises(UnmaskError) as exc:
        list(jsonl_records(p, DEFAULT_LIMITS, bad="raise"))
    d = exc.value.diagnostics[0]
    assert (d.span.file, d.span.line) == (str(p), 3)


def test_first_raises_only_on_the_first_record(tmp_path: Path) -> None:
    p = _write(tmp_path, b"\n not json\n{}\n")
    with pytest.raises(UnmaskError) as exc:
        list(jsonl_records(p, DEFAULT_LIMITS, bad="first"))
    assert exc.value.diagnostics[0].span.line == 2
    p = _write(tmp_path, b"{}\nnot json\n")
    got = list(jsonl_records(p, DEFAULT_LIMITS, bad="first"))
    assert got[0] == (1, {}) and isinstance(got[1][1], BadLine) and got[1][0] == 2


def test_objects_makes_other_values_bad_lines(tmp_path: Path) -> None:
    p = _write(tmp_path, b'{"a": 1}\n[1, 2]\n"s"\n')
    got = list(jsonl_records(p, DEFAULT_LIMITS, objects=True))
    assert got[0] == (1, {"a": 1})
    assert got[1] == (2, BadLine("expected a JSON object, found `[1, 2]`"))
    assert got[2][1].reason == "expected a JSON object, found `s`"


def test_bad_utf8_names_its_line(tmp_path: Path) -> None:
    p = _write(tmp_path, b'{"a": 1}\n{"a": "\xff"}\n')
    with pytest.raises(UnmaskError) as exc:
        list(jsonl_records(p, DEFAULT_LIMITS))
    d = exc.value.diagnostics[0]
    assert d.code == "encoding" and d.span.line == 2 and "\\xff" not in d.message


def test_bytes_of_an_archive_member_name_the_member(tmp_path: Path) -> None:
    with pytest.raises(UnmaskError) as exc:
        list(
            jsonl_lines(
                b"{}\n{\n", "data.zip:m.jsonl", DEFAULT_LIMITS, name="data.zip", bad="raise"
            )
        )
    d = exc.value.diagnostics[0]
    assert (d.file or d.span.file, d.span.line) == ("data.zip:m.jsonl", 2)


def test_a_file_over_the_size_limit_is_refused_before_reading(tmp_path: Path) -> None:
    import dataclasses

    p = _write(tmp_path, b"{}\n" * 100)
    small = dataclasses.replace(DEFAULT_LIMITS, max_file_bytes=10)
    with pytest.raises(UnmaskError) as exc:
        jsonl_records(p, small)
    assert exc.value.diagnostics[0].code == "limit"
