"""Every zip member bounded *while* it is decompressed, and every damaged one one line, exit 4
(issue 33). Python's ``zipfile`` decompresses a bzip2 or LZMA block whole before any size
check (a 1.6 KB ReaLMistake `--gold` archive reached 4.2 GB), and let a damaged member or an
archive of "version 9.9" out as an internal error; `unmask.importers.archive` reads every
member in bounded steps, ReaLMistake's sealed members included, and counts an archive's
JSON values before any is parsed."""

from __future__ import annotations

import bz2
import io
import json
import lzma
import struct
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main
from unmask.importers.archive import Archive
from unmask.importers.realmistake import PASSWORD
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.limits import Limits

MEMBER = "data/math_word_problem_generation/gpt.jsonl"
ITEM = {
    "input": "Write a problem.",
    "llm_response": "A baker sells 40 loaves. Answer: 280.",
    "error_label": "no_error",
    "metadata": {"id": "math_item1_gpt"},
}
ROW = {
    "item_id": "math_item1_gpt",
    "judge_model": "j",
    "judge_prompt": "p",
    "judge_rationale": "It is fine. Therefore, the model response contains no error.",
    "judge_verdict": "no_error",
}


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def zip_bytes(members: list[tuple[str, bytes]], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for name, data in members:
            z.writestr(name, data)
    return buf.getvalue()


def declare(data: bytes, size: int) -> bytes:
    """The archive with its (first) member's uncompressed size replaced by ``size`` in both
    headers, as a crafted archive lies."""
    out = bytearray(data)
    struct.pack_into("<L", out, out.index(b"PK\x03\x04") + 22, size)
    struct.pack_into("<L", out, out.index(b"PK\x01\x02") + 24, size)
    return bytes(out)


def _crc_step(register: int, b: int) -> int:
    """One byte into the raw CRC-32 register, by zlib (not a copy of the table the archive
    reader uses): zlib takes and gives the register inverted."""
    return zlib.crc32(bytes([b]), register ^ 0xFFFFFFFF) ^ 0xFFFFFFFF


def seal(data: bytes, password: bytes) -> bytes:
    """The archive with each member sealed by the traditional zip cipher (APPNOTE 6.1), as
    the upstream `data.zip` is; written here because ``zipfile`` only reads such members."""
    out = bytearray()
    z = zipfile.ZipFile(io.BytesIO(data))
    central = bytearray()
    for info in z.infolist():
        at = info.header_offset
        n, m = struct.unpack("<2H", data[at + 26 : at + 30])
        raw = data[at + 30 + n + m : at + 30 + n + m + info.compress_size]
        keys = [305419896, 591751049, 878082192]

        def update(b: int, k: list[int] = keys) -> None:
            k[0] = _crc_step(k[0], b)
            k[1] = ((k[1] + (k[0] & 0xFF)) * 134775813 + 1) & 0xFFFFFFFF
            k[2] = _crc_step(k[2], k[1] >> 24)

        for b in password:
            update(b)
        header = bytes(range(11)) + bytes([info.CRC >> 24])
        sealed = bytearray()
        for p in header + raw:
            t = keys[2] | 2
            sealed.append(p ^ (((t * (t ^ 1)) >> 8) & 0xFF))
            update(p)
        local = bytearray(data[at : at + 30 + n + m])
        struct.pack_into("<H", local, 6, info.flag_bits | 1)
        struct.pack_into("<L", local, 18, len(sealed))
        offset = len(out)
        out += local + sealed
        entry = bytearray(_central_entry(data, info))
        struct.pack_into("<H", entry, 8, info.flag_bits | 1)
        struct.pack_into("<L", entry, 20, len(sealed))
        struct.pack_into("<L", entry, 42, offset)
        central += entry
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(z.infolist()), len(z.infolist()),
                      len(central), len(out), 0)  # fmt: skip
    archive = bytes(out + central + end)
    # the oracle: the standard library's own reader opens each member with the password
    opened = zipfile.ZipFile(io.BytesIO(archive))
    for info in z.infolist():
        assert opened.read(info.filename, pwd=password) == z.read(info.filename)
    return archive


def _central_entry(data: bytes, info: zipfile.ZipInfo) -> bytes:
    i = data.index(b"PK\x01\x02")
    while True:
        n, m, k = struct.unpack("<3H", data[i + 28 : i + 34])
        if data[i + 46 : i + 46 + n].decode() == info.filename:
            return data[i : i + 46 + n + m + k]
        i = data.index(b"PK\x01\x02", i + 46)


def gold(tmp: Path, data: bytes) -> Path:
    path = tmp / "data.zip"
    path.write_bytes(data)
    return path


def import_realmistake(tmp: Path, archive: bytes):
    judgments = tmp / "j.jsonl"
    judgments.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    out = tmp / "out"
    res = cli("import", "realmistake", str(judgments), "--gold", str(gold(tmp, archive)),
              "--out", str(out))  # fmt: skip
    return res, out


def items(n: int = 1) -> bytes:
    return b"".join(json.dumps(ITEM).encode() + b"\n" for _ in range(n))


def test_a_sealed_deflated_archive_like_the_upstream_one_is_read(tmp_path: Path) -> None:
    archive = seal(zip_bytes([("data/README.md", b"items"), (MEMBER, items())]), PASSWORD)
    assert zipfile.ZipFile(io.BytesIO(archive)).infolist()[1].flag_bits & 1
    res, out = import_realmistake(tmp_path, archive)
    assert res.exit_code == 0, res.stderr
    [replay] = [json.loads(p.read_text("utf-8")) for p in out.glob("*.json")]
    assert replay["sources"]["context"] == ITEM["input"] and replay["gold"] == "no_error"


def test_a_member_sealed_with_another_password_is_one_line(tmp_path: Path) -> None:
    archive = seal(zip_bytes([(MEMBER, items())]), b"not-the-password")
    res, out = import_realmistake(tmp_path, archive)
    assert res.exit_code == 4, res.output
    assert f"archive member `{MEMBER}` cannot be decrypted with the dataset's password" in (
        res.stderr
    )
    assert not out.exists()


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA, zipfile.ZIP_DEFLATED])
def test_each_method_reads_the_same_items(tmp_path: Path, method: int) -> None:
    res, out = import_realmistake(tmp_path, zip_bytes([(MEMBER, items())], method))
    assert res.exit_code == 0, res.stderr
    assert len(list(out.glob("*.json"))) == 1


@pytest.mark.parametrize(
    ("method", "size"), [(zipfile.ZIP_BZIP2, 20 << 20), (zipfile.ZIP_LZMA, 8 << 20)]
)
def test_a_bomb_that_lies_about_its_size_stops_at_it_within_bounded_memory(
    tmp_path: Path, method: int, size: int
) -> None:
    # the member declares 1,000 bytes (within every ratio bound) and holds `size`
    archive = declare(zip_bytes([(MEMBER, b"\n" * size)], method), 1000)
    a = Archive(archive, "data.zip", Limits(), max_ratio=50, password=PASSWORD)
    tracemalloc.start()
    try:
        with pytest.raises(UnmaskError) as info:
            a.read(a.members[0])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    [d] = info.value.diagnostics
    assert d.code == "limit" and "decompresses to more than the 1000 bytes it declares" in (
        d.message
    )
    assert peak < 4 << 20, peak  # zipfile's read held the whole member: `size` bytes
    res, _ = import_realmistake(tmp_path, archive)
    assert res.exit_code == 4 and "decompresses to more than the 1000 bytes" in res.stderr


def _damage(archive: bytes, at: int, junk: bytes) -> bytes:
    out = bytearray(archive)
    start = out.index(b"PK\x03\x04") + 30 + len(MEMBER) + at
    out[start : start + len(junk)] = junk
    return bytes(out)


@pytest.mark.parametrize(
    ("name", "archive", "message"),
    [
        (
            "bad deflate data",
            _damage(zip_bytes([(MEMBER, items(40))]), 0, b"\xff" * 8),
            f"archive member `{MEMBER}` is damaged",
        ),
        (
            "bad LZMA data",
            _damage(zip_bytes([(MEMBER, items(40))], zipfile.ZIP_LZMA), 9, b"\xff" * 11),
            f"archive member `{MEMBER}` is damaged",
        ),
        (
            "bad LZMA properties",
            _damage(zip_bytes([(MEMBER, items(40))], zipfile.ZIP_LZMA), 4, b"\xff"),
            f"archive member `{MEMBER}` is damaged",
        ),
        (
            "bad bzip2 data",
            _damage(zip_bytes([(MEMBER, items(40))], zipfile.ZIP_BZIP2), 10, b"\x00" * 8),
            f"archive member `{MEMBER}` is damaged",
        ),
        (
            "a truncated bzip2 stream",
            zip_bytes([(MEMBER, items(40))], zipfile.ZIP_BZIP2),
            None,
        ),
        (
            "version 9.9",
            b"",
            "as a zip archive",
        ),
        (
            "a truncated archive",
            zip_bytes([(MEMBER, items(40))])[:-30],
            "as a zip archive",
        ),
        (
            "an unsupported method",
            None,
            "is compressed with method 98, which Unmask does not read",
        ),
    ],
)
def test_a_damaged_member_is_one_line_exit_4(tmp_path, name, archive, message) -> None:
    if name == "version 9.9":
        data = bytearray(zip_bytes([(MEMBER, items())], zipfile.ZIP_LZMA))
        struct.pack_into("<H", data, data.index(b"PK\x01\x02") + 6, 99)
        archive = bytes(data)
    elif name == "an unsupported method":
        data = bytearray(zip_bytes([(MEMBER, items())]))
        struct.pack_into("<H", data, data.index(b"PK\x01\x02") + 10, 98)
        archive = bytes(data)
    elif name == "a truncated bzip2 stream":
        # the sizes in the headers stay; the stream's last bytes are zeros
        data = bytearray(archive)
        at = data.index(b"PK\x01\x02")
        data[at - 12 : at] = b"\0" * 12
        archive, message = bytes(data), f"archive member `{MEMBER}` is damaged"
    res, out = import_realmistake(tmp_path, archive)
    assert res.exit_code == 4, (name, res.output)
    assert message in res.stderr, (name, res.stderr)
    lines = [x for x in res.stderr.splitlines() if not x.startswith("  = ")]
    assert len(lines) == 1 and "internal" not in res.stderr and "Traceback" not in res.output
    assert not out.exists()


def test_an_archives_values_are_bounded_together_before_parsing(tmp_path: Path) -> None:
    # two members of 60 small objects each: 121 values apiece, 242 together
    one = b"[" + b",".join([b"{}"] * 60) + b"]"
    archive = zip_bytes([(f"samples/s{i}_epoch_1.json", one) for i in range(2)])
    src = tmp_path / "log.eval"
    src.write_bytes(archive)
    res = cli("import", "inspect", str(src), "--out", str(tmp_path / "o"),
              "--max-json-values", "200")  # fmt: skip
    assert res.exit_code == 4, res.output
    assert "the archive's samples hold more than 200 values" in res.stderr
    assert "--max-json-values" in res.stderr
    res = cli("import", "inspect", str(src), "--out", str(tmp_path / "o"),
              "--max-json-values", "300")  # fmt: skip
    assert "more than 300 values" not in res.stderr  # each is a sample of no scores
    assert res.exit_code in (0, 1, 4) and "Traceback" not in res.output


def test_the_deflate_reader_gives_every_byte_of_a_large_member() -> None:
    data = bytes(range(256)) * 40_000  # 10 MB, little to compress: many steps
    c = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS)
    packed = c.compress(data) + c.flush()
    from unmask.importers.archive import _bunzip2, _inflate, _unlzma

    assert _inflate(packed, len(data)) == data
    assert _bunzip2(bz2.compress(data[:1_000_000]), 1_000_000) == data[:1_000_000]
    archive = zip_bytes([("x", data[:500_000])], zipfile.ZIP_LZMA)
    a = Archive(archive, "x.zip", Limits(), max_ratio=10**6)
    assert a.read(a.members[0]) == data[:500_000]
    info = a.members[0]
    at = info.header_offset + 30 + len("x")
    raw = archive[at : at + info.compress_size]
    assert _unlzma(raw, 500_000) == data[:500_000]
    with pytest.raises(lzma.LZMAError):
        _unlzma(raw[:9] + b"\xff" * 64, 500_000)


def test_an_lzma_header_asking_for_a_4_gb_dictionary_reads_in_bounded_memory() -> None:
    data = bytearray(zip_bytes([(MEMBER, items(40))], zipfile.ZIP_LZMA))
    at = data.index(b"PK\x03\x04") + 30 + len(MEMBER)
    data[at + 5 : at + 9] = b"\xff\xff\xff\xff"  # the dictionary size in the properties
    a = Archive(bytes(data), "data.zip", Limits())
    tracemalloc.start()
    try:
        assert a.read(a.members[0]) == items(40)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak


def test_directory_records_are_counted_before_zipfile_builds_an_entry_each() -> None:
    # 200,000 records of 46 bytes: zipfile built 200,000 entries (about 160 MB at 1.2
    # million) before the member count was checked
    n = 200_000
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    record = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", *[20, 20] + [0] * 14)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 46 * n, len(local), 0)
    data = local + record * n + end
    tracemalloc.start()
    try:
        with pytest.raises(UnmaskError) as info:
            Archive(data, "log.eval", Limits())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "the archive has 200000 members, more than 100000" in info.value.diagnostics[0].message
    assert peak < 1 << 20, peak
