"""Inspect's `.eval` logs read as what they are, zip archives, with every bound holding.

The logs in `tests/data/importers/inspect-generated/` are inspect-ai's own output (see the
`regenerate.py` there): each run written as `.eval` (Zstandard members, method 93) and
converted to JSON, and both must give the same replays byte for byte. The crafted archives
below are built member by member (`_zip`), since Python before 3.14 cannot write Zstandard
members: a member that decompresses past its declared size (a zip bomb), one declared past
the ratio bound, too many members, a damaged or encrypted member, a method Unmask does not
read, and names that try to be paths. Each is one message and exit status 4, never a
traceback, and nothing is written outside the output folder.
"""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from pathlib import Path

import pytest
import zstandard
from click.testing import CliRunner

from tests.helpers import TEST_DATA
from unmask.cli.main import main

INSPECT = TEST_DATA / "importers" / "inspect-generated"


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def imported(src: Path, out: Path, *more: str) -> Path:
    res = cli("import", "inspect", str(src), "--out", str(out), *more)
    assert res.exit_code == 0, res.stderr
    return out


def _zip(
    path: Path,
    members: list[tuple[str, bytes]],
    method: int = 93,
    declared: dict[str, int] | None = None,
    flags: int = 0,
    crc: dict[str, int] | None = None,
) -> Path:
    """A zip archive of ``members`` compressed with ``method`` (93 Zstandard, 8 deflate, 0
    stored), written by hand; ``declared`` overrides a member's declared size, ``crc`` its
    checksum."""
    declared, crc = declared or {}, crc or {}
    body, central = bytearray(), bytearray()
    for name, data in members:
        if method == 93:
            packed = zstandard.ZstdCompressor().compress(data)
        elif method == 8:
            c = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
            packed = c.compress(data) + c.flush()
        else:
            packed = data
        n = name.encode("utf-8")
        size, check = declared.get(name, len(data)), crc.get(name, zlib.crc32(data))
        fields = (20, flags | 0x800, method, 0, 0x21, check, len(packed), size, len(n))
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, *fields, 0, 0, 0, 0, 0, len(body))
        central += n
        body += struct.pack("<4s5H3L2H", b"PK\x03\x04", *fields, 0) + n + packed
    end = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(body), 0
    )
    path.write_bytes(bytes(body + central + end))
    return path


def _members(src: Path) -> list[tuple[str, bytes]]:
    """The members of a real `.eval` log, decompressed (Zstandard, through the package)."""
    out = []
    with zipfile.ZipFile(src) as z:
        for info in z.infolist():
            with z.open(info) if info.compress_type != 93 else _zstd(src, info) as f:
                out.append((info.filename, f.read()))
    return out


def _zstd(src: Path, info: zipfile.ZipInfo):  # type: ignore[no-untyped-def]
    import io

    raw = src.read_bytes()
    at = info.header_offset
    n, m = struct.unpack("<2H", raw[at + 26 : at + 30])
    start = at + 30 + n + m
    return io.BytesIO(
        zstandard.ZstdDecompressor().decompress(
            raw[start : start + info.compress_size], max_output_size=info.file_size
        )
    )


# --- the tool's own output --------------------------------------------------------------------


def test_the_fixtures_are_inspects_own_eval_logs_with_zstandard_members() -> None:
    assert (INSPECT / "VERSION").read_text(encoding="utf-8") == "inspect-ai 0.3.285\n"
    for name in ("moon.eval", "partial.eval"):
        with zipfile.ZipFile(INSPECT / name) as z:
            # Python before 3.14 cannot decompress these: this is what the reader is for
            assert {i.compress_type for i in z.infolist()} == {93}
            assert "header.json" in z.namelist()
        header = json.loads(dict(_members(INSPECT / name))["header.json"])
        assert header["eval"]["packages"]["inspect_ai"] == "0.3.285"


@pytest.mark.parametrize("log", ["moon", "partial"])
def test_eval_and_json_logs_of_one_run_give_identical_replays(tmp_path: Path, log: str) -> None:
    a = imported(INSPECT / f"{log}.eval", tmp_path / "eval")
    b = imported(INSPECT / f"{log}.json", tmp_path / "json")
    names = sorted(p.name for p in a.glob("*.json"))
    assert names == sorted(p.name for p in b.glob("*.json")) and names
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes()


def test_partial_credit_is_imported_under_its_three_labels(tmp_path: Path) -> None:
    out = imported(INSPECT / "partial.eval", tmp_path / "out")
    assert sorted(p.name for p in out.glob("*.json")) == [
        "a-full-e1-model_graded_fact.json",
        "b-partial-e1-model_graded_fact.json",
        "c-wrong-e1-model_graded_fact.json",
    ]
    verdicts = {}
    for path in sorted(out.glob("*.json")):
        r = json.loads(path.read_text(encoding="utf-8"))
        verdicts[r["id"]] = r["verdict"]
        res = cli("check", str(path), "--format", "json")
        report = json.loads(res.stdout)
        assert report["overall"] == "SATISFIED", path.name
        assert report["verdict"]["status"] == "ENTAILED"
    assert verdicts == {
        "a-full/1/model_graded_fact": "C",
        "b-partial/1/model_graded_fact": "P",
        "c-wrong/1/model_graded_fact": "I",
    }
    r = json.loads((out / "b-partial-e1-model_graded_fact.json").read_text(encoding="utf-8"))
    says = {a["atom"]: (a["value"], a["evidence"][0]["quote"]) for a in r["annotations"]}
    assert says["says_partial"] == ("TRUE", "GRADE: P")
    assert says["says_correct"] == ("FALSE", "GRADE: P")
    assert r["protocol"]["source"].count("verdict C | P | I") == 1


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_a_partial_score_whose_explanation_ends_otherwise_is_refuted(tmp_path, fmt) -> None:
    # the score says P, the explanation's last grade is C: the verdict is not entailed
    def change(sample: dict) -> None:
        sc = sample["scores"]["model_graded_fact"]
        if sc["value"] == "P":
            sc["explanation"] = sc["explanation"].replace("GRADE: P", "GRADE: C")

    if fmt == "json":
        doc = json.loads((INSPECT / "partial.json").read_text(encoding="utf-8"))
        for s in doc["samples"]:
            change(s)
        src = tmp_path / "partial.json"
        src.write_text(json.dumps(doc), encoding="utf-8")
    else:
        members = []
        for name, data in _members(INSPECT / "partial.eval"):
            if name.startswith("samples/"):
                s = json.loads(data)
                change(s)
                data = json.dumps(s).encode()
            members.append((name, data))
        src = _zip(tmp_path / "partial.eval", members)
    out = imported(src, tmp_path / "out")
    res = cli("check", str(out / "b-partial-e1-model_graded_fact.json"), "--format", "json")
    report = json.loads(res.stdout)
    assert report["overall"] == "VIOLATED" and report["verdict"]["status"] == "REFUTED"


def test_a_deflated_eval_log_reads_the_same(tmp_path: Path) -> None:
    # older Inspect versions wrote `.eval` members deflated
    src = _zip(tmp_path / "moon.eval", _members(INSPECT / "moon.eval"), method=8)
    a = imported(src, tmp_path / "a")
    b = imported(INSPECT / "moon.json", tmp_path / "b")
    (name,) = [p.name for p in a.glob("*.json")]
    assert (a / name).read_bytes() == (b / name).read_bytes()


def test_a_sample_logged_twice_is_read_once_the_last_as_inspect_does(tmp_path: Path) -> None:
    members = _members(INSPECT / "moon.eval")
    (name, data) = next((n, d) for n, d in members if n.startswith("samples/"))
    first = json.loads(data)
    first["scores"]["model_graded_fact"]["explanation"] = "Superseded. GRADE: I"
    src = _zip(tmp_path / "moon.eval", [(name, json.dumps(first).encode()), *members])
    out = imported(src, tmp_path / "out")
    (path,) = out.glob("*.json")
    r = json.loads(path.read_text(encoding="utf-8"))
    assert r["sources"]["rationale"].endswith("as required. GRADE: C")


# --- crafted archives: bounded, one message, exit 4 -------------------------------------------


def _sample(tmp_path: Path) -> bytes:
    return dict(_members(INSPECT / "moon.eval"))["samples/moon_epoch_1.json"]


def refused(src: Path, tmp_path: Path, *more: str) -> str:
    out = tmp_path / "out"
    res = cli("import", "inspect", str(src), "--out", str(out), *more)
    assert res.exit_code == 4, res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.splitlines()) <= 2, res.stderr
    assert not out.exists()
    return res.stderr


def test_a_zip_bomb_stops_at_its_declared_size(tmp_path: Path) -> None:
    # 64 MiB of spaces in ~2 KB, declaring 5000 bytes (a ratio the bound lets through)
    bomb = b'{"samples": "' + b" " * (64 << 20) + b'"}'
    name = "samples/x_epoch_1.json"
    src = _zip(tmp_path / "bomb.eval", [(name, bomb)], declared={name: 5000})
    assert src.stat().st_size < 10_000
    err = refused(src, tmp_path)
    assert "archive member `samples/x_epoch_1.json` decompresses to more than the 5000 bytes" in err
    assert "zip bomb" in err


def test_a_member_declared_past_the_ratio_bound_is_refused_unread(tmp_path: Path) -> None:
    bomb = b" " * (8 << 20)
    src = _zip(tmp_path / "bomb.eval", [("samples/x_epoch_1.json", bomb)])
    err = refused(src, tmp_path)
    assert "a compression ratio over 500:1" in err
    assert "archive member `samples/x_epoch_1.json` declares 8388608 bytes from" in err


def test_members_over_the_file_size_limit_are_refused(tmp_path: Path) -> None:
    sample = _sample(tmp_path)
    src = _zip(tmp_path / "log.eval", [(f"samples/{i}_epoch_1.json", sample) for i in range(3)])
    err = refused(src, tmp_path, "--max-file-bytes", str(2 * len(sample) + len(sample) // 2))
    assert "the archive's members hold" in err and "--max-file-bytes" in err
    err = refused(src, tmp_path, "--max-file-bytes", str(len(sample) - 1))
    assert f"declares {len(sample)} bytes, more than the limit" in err


def test_too_many_members_are_refused(tmp_path: Path, monkeypatch) -> None:
    from unmask.importers import archive

    monkeypatch.setattr(archive, "MAX_MEMBERS", 3)
    src = _zip(tmp_path / "log.eval", [(f"m{i}", b"{}") for i in range(4)])
    assert "the archive has 4 members, more than 3" in refused(src, tmp_path)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"crc": {"samples/x_epoch_1.json": 1}}, "is damaged: its size or checksum is wrong"),
        ({"flags": 1}, "is encrypted"),
        ({"method": 98}, "is compressed with method 98, which Unmask does not read"),
    ],
)
def test_a_damaged_encrypted_or_unknown_member_is_one_message(tmp_path, kw, message) -> None:
    src = _zip(tmp_path / "log.eval", [("samples/x_epoch_1.json", _sample(tmp_path))], **kw)
    assert f"archive member `samples/x_epoch_1.json` {message}" in refused(src, tmp_path)


def test_a_truncated_zstandard_member_is_damaged(tmp_path: Path) -> None:
    src = _zip(tmp_path / "log.eval", [("samples/x_epoch_1.json", _sample(tmp_path))])
    data = bytearray(src.read_bytes())
    # cut the frame's last bytes inside the member (the sizes in the headers stay)
    at = data.index(b"PK\x01\x02")
    data[at - 8 : at] = b"\0" * 8
    src.write_bytes(bytes(data))
    assert "is damaged" in refused(src, tmp_path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"PK\x03\x04 not really", "cannot read"),
        (b"not a zip", "not an Inspect `.eval` log: not a zip archive"),
    ],
)
def test_an_eval_that_is_not_an_archive_is_one_message(tmp_path, content, message) -> None:
    src = tmp_path / "log.eval"
    src.write_bytes(content)
    assert message in refused(src, tmp_path)


def test_an_archive_that_is_not_an_inspect_log_is_refused(tmp_path: Path) -> None:
    src = _zip(tmp_path / "other.eval", [("readme.txt", b"hello")])
    assert "no `header.json` and no `samples/` member" in refused(src, tmp_path)


def test_member_names_are_never_paths_and_are_shown_escaped(tmp_path: Path) -> None:
    sample = json.loads(_sample(tmp_path))
    sample["scores"]["model_graded_fact"]["explanation"] = ""  # skipped: nothing to check
    names = ["samples/../../../escaped.json", "samples/\x1b[2J\u202e.json", "/samples/abs.json"]
    src = _zip(tmp_path / "log.eval", [(n, json.dumps(sample).encode()) for n in names])
    out = tmp_path / "deep" / "out"
    res = cli("import", "inspect", str(src), "--out", str(out))
    assert res.exit_code == 1, res.stderr
    assert "\x1b" not in res.stderr and "\u202e" not in res.stderr
    assert (
        "member `samples/\\x1b[2J\\u202e.json`.scores.model_graded_fact.explanation: skipped:"
        in (res.stderr)
    )
    assert "member `samples/../../../escaped.json`.scores" in res.stderr
    # the leading `/` is no sample of Inspect's, and nothing was written anywhere but `out`
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == ["deep/out/.unmask-import", "log.eval"]  # the manifest, no replay


def test_an_archive_needing_a_later_zip_version_is_one_message(tmp_path: Path) -> None:
    # zipfile raises NotImplementedError for a "version needed to extract" past 6.3 (found by
    # fuzzing Inspect's own log): it is an archive Unmask cannot read, not a traceback
    data = bytearray((INSPECT / "moon.eval").read_bytes())
    at = data.index(b"PK\x01\x02")
    data[at + 6 : at + 8] = struct.pack("<H", 103)
    src = tmp_path / "log.eval"
    src.write_bytes(bytes(data))
    assert f"cannot read `{src}` as a zip archive" in refused(src, tmp_path)
