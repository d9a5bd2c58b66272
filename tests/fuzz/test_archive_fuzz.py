"""Fuzzing zip archive members (issue 33): random members, methods, lies and damage.

Each case is an archive of one to three members, each stored, deflated, bzip2, LZMA or
Zstandard, holding either JSON Lines items or a bomb (megabytes of one byte that compress
to a few hundred), then damaged at random: a declared size that lies (smaller, larger, or
a bomb's 24 MB declared as 1,000 bytes, within every size and ratio bound), a wrong
checksum, bytes of the compressed data overwritten, the data cut short, the archive cut
short, the encrypted flag set, or a later "version needed". The oracle, on
``archive.Archive`` directly and through `unmask import realmistake --gold` and `unmask
import inspect`: every member read gives exactly its declared bytes or one diagnostic
(``not-the-format`` or ``limit``), the commands end with a documented exit status (0, 1 or
4, one error line) and no traceback, all under an alarm, and Python's memory (traced,
decompressors included) never peaks past a few times the declared size bound, however much
a member holds.

Cases per test: ``MAX_EXAMPLES`` (derandomized: CI runs the same cases every time).
"""

from __future__ import annotations

import bz2
import functools
import json
import lzma
import shutil
import signal
import struct
import tempfile
import tracemalloc
import zlib
from pathlib import Path

import zstandard
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from unmask.cli.main import main
from unmask.importers.archive import Archive
from unmask.importers.realmistake import PASSWORD
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.limits import Limits

MAX_EXAMPLES = 40
SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
BOUND = 1 << 20  # --max-file-bytes for these cases: every member declares at most this
BOMB = 24 << 20  # what a bomb member holds: 24 times the bound
PEAK = 6 * BOUND  # the member, a copy, the decompressor's buffers
METHODS = (0, 8, 12, 14, 93)
DAMAGE = (
    "none",
    "declare-less",
    "declare-tiny",
    "declare-more",
    "crc",
    "flip",
    "truncate",
    "encrypted-flag",
    "version",
    "cut-archive",
)
ITEMS = b"".join(
    json.dumps({"metadata": {"id": f"i{k}"}, "input": "x", "llm_response": "y"}).encode() + b"\n"
    for k in range(30)
)


@functools.cache
def _packed(method: int, data: bytes) -> bytes:
    """``data`` compressed as a zip member of ``method`` holds it (cached: bombs are slow)."""
    if method == 0:
        return data
    if method == 8:
        c = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        return c.compress(data) + c.flush()
    if method == 12:
        return bz2.compress(data)
    if method == 14:
        lzma1 = {"id": lzma.FILTER_LZMA1, "dict_size": 1 << 20, "lc": 3, "lp": 0, "pb": 2}
        raw = lzma.compress(data, format=lzma.FORMAT_RAW, filters=[lzma1])
        # the properties: (pb * 5 + lp) * 9 + lc, then the dictionary size (APPNOTE 5.8.8)
        props = struct.pack("<BL", (2 * 5 + 0) * 9 + 3, 1 << 20)
        return struct.pack("<BBH", 9, 4, len(props)) + props + raw
    return zstandard.ZstdCompressor().compress(data)


def _archive(members: list[tuple[str, int, bytes, str]]) -> bytes:
    """An archive written by hand (Python cannot write Zstandard members), each member
    ``(name, method, content, damage)``."""
    body, central = bytearray(), bytearray()
    for name, method, data, damage in members:
        packed = bytearray(_packed(method, data))
        size, crc, flags, version = len(data), zlib.crc32(data), 0x800, 20
        if damage == "declare-less":
            size = max(1, size // 3)
        elif damage == "declare-tiny":
            size = 1000  # within every size and ratio bound, whatever the member holds
        elif damage == "declare-more":
            size = size * 2 + 7
        elif damage == "crc":
            crc ^= 0x5A5A
        elif damage == "flip" and packed:
            at = len(packed) // 2
            packed[at : at + 4] = b"\xff\x00\xff\x00"[: len(packed) - at]
        elif damage == "truncate":
            packed = packed[: len(packed) * 2 // 3]
        elif damage == "encrypted-flag":
            flags |= 1
        elif damage == "version":
            version = 99
        n = name.encode()
        fields = (version, flags, method, 0, 0x21, crc, len(packed), size, len(n))
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, *fields, 0, 0, 0, 0, 0, len(body))
        central += n
        body += struct.pack("<4s5H3L2H", b"PK\x03\x04", *fields, 0) + n + packed
    count = len(members)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, len(central), len(body), 0)
    data = bytes(body + central + end)
    if any(d == "cut-archive" for *_, d in members):
        data = data[: len(data) * 3 // 4]
    return data


def _stop(*_: object) -> None:
    raise TimeoutError("still running after 60 s: an archive member not bounded?")


member = st.tuples(
    st.sampled_from(
        ["data/math_word_problem_generation/gpt.jsonl", "samples/s_epoch_1.json", "header.json"]
    ),
    st.sampled_from(METHODS),
    st.sampled_from(["items", "bomb"]),
    st.sampled_from(DAMAGE),
)


_ITEM_FILE = "data/math_word_problem_generation/gpt.jsonl"


@SETTINGS
@given(members=st.lists(member, min_size=1, max_size=3))
# a bomb that lies within every bound, in each compressed method: always among the cases
@example(members=[(_ITEM_FILE, 8, "bomb", "declare-tiny")])
@example(members=[(_ITEM_FILE, 12, "bomb", "declare-tiny")])
@example(members=[(_ITEM_FILE, 14, "bomb", "declare-tiny")])
@example(members=[(_ITEM_FILE, 93, "bomb", "declare-tiny")])
def test_archive_members_are_bounded_and_damage_is_one_message(members) -> None:
    spec = [(n, m, b"\n" * BOMB if what == "bomb" else ITEMS, d) for n, m, what, d in members]
    data = _archive(spec)
    limits = Limits(max_file_bytes=BOUND)
    old = signal.signal(signal.SIGALRM, _stop)
    signal.alarm(60)
    tracemalloc.start()
    try:
        try:
            archive = Archive(data, "a.zip", limits, password=PASSWORD)
        except UnmaskError as exc:
            [d] = exc.diagnostics
            assert d.code in ("not-the-format", "limit")
            return
        for info in archive.members:
            try:
                got = archive.read(info)
            except UnmaskError as exc:
                [d] = exc.diagnostics
                assert d.code in ("not-the-format", "limit"), d
                assert d.message.startswith("archive member `"), d.message
                continue
            assert len(got) == info.file_size and zlib.crc32(got) == info.CRC
        _, peak = tracemalloc.get_traced_memory()
        assert peak < PEAK + 2 * len(data), peak
    finally:
        tracemalloc.stop()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@settings(SETTINGS, max_examples=MAX_EXAMPLES // 2)
@given(members=st.lists(member, min_size=1, max_size=3), tool=st.sampled_from(["rm", "inspect"]))
@example(members=[(_ITEM_FILE, 12, "bomb", "declare-tiny")], tool="rm")
@example(members=[("samples/s_epoch_1.json", 14, "bomb", "declare-tiny")], tool="inspect")
def test_the_importers_end_with_a_documented_status_on_every_archive(members, tool) -> None:
    spec = [(n, m, b"\n" * BOMB if what == "bomb" else ITEMS, d) for n, m, what, d in members]
    tmp = Path(tempfile.mkdtemp(prefix="unmask-zip-"))
    old = signal.signal(signal.SIGALRM, _stop)
    signal.alarm(60)
    try:
        archive = tmp / ("data.zip" if tool == "rm" else "log.eval")
        archive.write_bytes(_archive(spec))
        if tool == "rm":
            judgments = tmp / "j.jsonl"
            judgments.write_text('{"item_id": "i1"}\n', encoding="utf-8")
            args = ["import", "realmistake", str(judgments), "--gold", str(archive)]
        else:
            args = ["import", "inspect", str(archive)]
        bound = ["--max-file-bytes", str(BOUND * 4)]
        res = CliRunner().invoke(main, [*args, "--out", str(tmp / "out"), *bound])
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
        assert "Traceback" not in res.output and "internal error" not in res.output
        assert res.exit_code in (0, 1, 4), res.output
        if res.exit_code == 4:
            problems = [x for x in res.stderr.splitlines() if ": error: " in x]
            assert len(problems) == 1, res.stderr
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        shutil.rmtree(tmp, ignore_errors=True)
