"""Bounded reading of a zip archive's members (Inspect's `.eval`, ReaLMistake's `data.zip`).

Contract: ``Archive(data, name, limits)`` reads the central directory of the archive held in
``data`` and checks it before anything is decompressed: at most ``max_members`` members
(their directory records counted before any entry is built);
each member's declared size within ``--max-file-bytes`` and ``max_ratio`` times its
compressed size; the declared sizes of all members together within ``--max-file-bytes``
(the bound a JSON file of the same content meets). ``read(info)`` decompresses one member
*while* bounding it: the compressed bytes are fed in steps and every step's output is
capped, so decompression stops one byte past the declared size whatever the data says
(Python's ``zipfile`` decompresses a bzip2 or LZMA block whole before any check: a 1.6 KB
archive reached 4.2 GB); then its length and CRC-32 are checked. Members are stored,
deflated, bzip2, LZMA or Zstandard (method 93, which Python's ``zipfile`` reads only from
3.14: the standard library's ``compression.zstd`` from Python 3.14, the ``zstandard``
package before, the one Inspect writes with); a member sealed with the traditional zip
cipher is read when the archive is given its ``password`` (ReaLMistake's), and refused
otherwise. Anything else, and damaged, truncated or wrongly sealed data, is one
``UnmaskError`` naming the archive and the member, never a traceback. Member names are
data: matched and shown, never used as paths.
"""

from __future__ import annotations

import bz2
import io
import lzma
import struct
import sys
import zipfile
import zlib
from collections.abc import Callable
from typing import Any

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.jsonreader import show
from unmask.plumbing.limits import Limits
from unmask.plumbing.safe import shorten

# Inspect writes a few members per sample (the sample, its summary): 100,000 is far more
# samples than one log holds, and bounds the work of listing a crafted archive
MAX_MEMBERS = 100_000
# Inspect's JSON members compress about 5:1 with Zstandard (the logs in
# tests/data/importers/inspect-generated); a member declared beyond this is a bomb
MAX_RATIO = 500
STORED, DEFLATED, BZIP2, LZMA, ZSTANDARD = 0, 8, 12, 14, 93
_LOCAL = struct.Struct("<4s2B4HL2L2H")  # a local file header, as zipfile reads it
_CHUNK = 1 << 20
_STEP = 1 << 16  # compressed bytes fed to a decompressor at a time


def _error(file: str, message: str, code: Code = Code.NOT_THE_FORMAT, help: str | None = None):
    return UnmaskError([Diagnostic(code, message, file=file, help=help)])


class Archive:
    """One zip archive in memory, its members checked against the bounds (module doc)."""

    __slots__ = ("_data", "_limits", "_password", "file", "members")

    def __init__(
        self,
        data: bytes,
        file: str,
        limits: Limits,
        *,
        max_members: int | None = None,
        max_ratio: int | None = None,
        password: bytes | None = None,
    ) -> None:
        self._data, self.file, self._limits = data, file, limits
        self._password = password
        max_members = MAX_MEMBERS if max_members is None else max_members
        max_ratio = MAX_RATIO if max_ratio is None else max_ratio
        # zipfile builds an entry per central directory record before anyone can count them
        # (a 64 MB directory is 1.4 million entries): every record starts with this
        # signature, so its count bounds theirs, counted in C speed before any is built
        records = data.count(b"PK\x01\x02")
        if records > max_members:
            raise _error(file, f"the archive has {records} members, more than {max_members}")
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                self.members = z.infolist()
        except (
            zipfile.BadZipFile,
            zipfile.LargeZipFile,
            OSError,
            ValueError,
            EOFError,
            NotImplementedError,  # a damaged "version needed to extract"
            struct.error,
        ):
            raise _error(file, f"cannot read `{shorten(file)}` as a zip archive") from None
        if len(self.members) > max_members:
            raise _error(
                file, f"the archive has {len(self.members)} members, more than {max_members}"
            )
        total = 0
        for info in self.members:
            size, packed = info.file_size, info.compress_size
            if size > limits.max_file_bytes:
                raise self._too_large(info, f"declares {size} bytes")
            if info.compress_type != STORED and size > max_ratio * max(packed, 1):
                raise _error(
                    file,
                    f"archive member `{show(info.filename)}` declares {size} bytes from"
                    f" {packed}, a compression ratio over {max_ratio}:1",
                    code=Code.LIMIT,
                    help="a log written by the tool compresses far less: this looks like a"
                    " zip bomb",
                )
            total += size
        if total > limits.max_file_bytes:
            raise _error(
                file,
                f"the archive's members hold {total} bytes together, more than the limit"
                f" of {limits.max_file_bytes} bytes",
                code=Code.LIMIT,
                help=f"raise the bound with `{limits.option('max_file_bytes')}`",
            )

    def _too_large(self, info: zipfile.ZipInfo, what: str) -> UnmaskError:
        return _error(
            self.file,
            f"archive member `{show(info.filename)}` {what}, more than the limit of"
            f" {self._limits.max_file_bytes} bytes",
            code=Code.LIMIT,
            help=f"raise the bound with `{self._limits.option('max_file_bytes')}`",
        )

    def read(self, info: zipfile.ZipInfo) -> bytes:
        """The member's bytes: at most its declared size, plus one, is ever produced."""
        where = f"archive member `{show(info.filename)}`"
        decompress = _DECOMPRESS.get(info.compress_type)
        if decompress is None:
            raise _error(
                self.file,
                f"{where} is compressed with method {info.compress_type}, which Unmask does"
                " not read",
                help="stored, deflate, bzip2, LZMA and Zstandard members are read",
            )
        raw = self._raw(info, where)
        if info.flag_bits & 0x1:
            if self._password is None:
                raise _error(self.file, f"{where} is encrypted")
            raw = self._decrypt(info, raw, where)
        try:
            data = decompress(raw, info.file_size)
        except _TooLarge:
            raise _error(
                self.file,
                f"{where} decompresses to more than the {info.file_size} bytes it declares",
                code=Code.LIMIT,
                help="an archive written by the tool declares its sizes: this looks like a"
                " zip bomb",
            ) from None
        except Exception:  # the decoder's own error for damaged data, whichever it raises
            raise _error(self.file, f"{where} is damaged: it cannot be decompressed") from None
        if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
            raise _error(self.file, f"{where} is damaged: its size or checksum is wrong")
        return data

    def _decrypt(self, info: zipfile.ZipInfo, raw: bytes, where: str) -> bytes:
        """The member's compressed bytes, unsealed with the archive's password (the
        traditional zip cipher: its 12-byte header ends in a check byte)."""
        if len(raw) < 12:
            raise _error(self.file, f"{where} is damaged: it ends before its declared size")
        assert self._password is not None
        plain = _ZipCrypto(self._password)(raw)
        # the check byte: the high byte of the CRC, or of the time when sizes follow the data
        h, m, sec = info.date_time[3:]
        dos_time = (h << 11) | (m << 5) | (sec // 2)
        check = dos_time >> 8 if info.flag_bits & 0x8 else info.CRC >> 24
        if plain[11] != check:
            raise _error(
                self.file,
                f"{where} cannot be decrypted with the dataset's password",
                help="give the dataset's own archive",
            )
        return plain[12:]

    def _raw(self, info: zipfile.ZipInfo, where: str) -> bytes:
        """The member's compressed bytes, after its local header."""
        at = info.header_offset
        head = self._data[at : at + _LOCAL.size]
        if len(head) != _LOCAL.size or head[:4] != b"PK\x03\x04":
            raise _error(self.file, f"{where} is damaged: no local header where it should be")
        name_len, extra_len = _LOCAL.unpack(head)[10:12]
        start = at + _LOCAL.size + name_len + extra_len
        raw = self._data[start : start + info.compress_size]
        if len(raw) != info.compress_size:
            raise _error(self.file, f"{where} is damaged: it ends before its declared size")
        return raw


class _TooLarge(Exception):
    pass


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC = _crc_table()


class _ZipCrypto:
    """The traditional zip cipher (PKWARE's APPNOTE, 6.1), to decrypt a whole member."""

    def __init__(self, password: bytes) -> None:
        self.k0, self.k1, self.k2 = 305419896, 591751049, 878082192
        for b in password:
            self._update(b)

    def _update(self, b: int) -> None:
        self.k0 = (self.k0 >> 8) ^ _CRC[(self.k0 ^ b) & 0xFF]
        self.k1 = ((self.k1 + (self.k0 & 0xFF)) * 134775813 + 1) & 0xFFFFFFFF
        self.k2 = (self.k2 >> 8) ^ _CRC[(self.k2 ^ (self.k1 >> 24)) & 0xFF]

    def __call__(self, data: bytes) -> bytes:
        out = bytearray(len(data))
        k0, k1, k2, crc = self.k0, self.k1, self.k2, _CRC
        for i, c in enumerate(data):
            t = k2 | 2
            p = c ^ (((t * (t ^ 1)) >> 8) & 0xFF)
            out[i] = p
            k0 = (k0 >> 8) ^ crc[(k0 ^ p) & 0xFF]
            k1 = ((k1 + (k0 & 0xFF)) * 134775813 + 1) & 0xFFFFFFFF
            k2 = (k2 >> 8) ^ crc[(k2 ^ (k1 >> 24)) & 0xFF]
        self.k0, self.k1, self.k2 = k0, k1, k2
        return bytes(out)


def _stored(raw: bytes, size: int) -> bytes:
    if len(raw) > size:
        raise _TooLarge
    return raw


def _bounded(d: Any, raw: bytes, size: int) -> bytes:
    """``raw`` through the decompressor object ``d`` (zlib's, bz2's or lzma's), fed
    ``_STEP`` bytes at a time, no call giving more than the declared size left plus one:
    past the declared size it stops (``_TooLarge``), so no step fills memory."""
    out = bytearray()
    zlib_like = hasattr(d, "unconsumed_tail")
    for at in range(0, len(raw), _STEP):
        feed = raw[at : at + _STEP]
        while True:
            if getattr(d, "eof", False):
                return bytes(out)
            out += d.decompress(feed, size + 1 - len(out))
            if len(out) > size:
                raise _TooLarge
            if zlib_like:
                feed = d.unconsumed_tail
                if not feed:
                    break
            else:
                feed = b""
                if d.needs_input or d.eof:
                    break
    if not zlib_like and not d.eof and len(out) < size:
        # bzip2 ends with an end-of-stream marker; LZMA in a zip may not (it then ends at
        # its declared size): input that runs out short of both is a truncated member
        out += d.decompress(b"", size + 1 - len(out))
        if len(out) > size:
            raise _TooLarge
        if isinstance(d, bz2.BZ2Decompressor):
            raise EOFError("the stream ends early")
    return bytes(out)


def _inflate(raw: bytes, size: int) -> bytes:
    return _bounded(zlib.decompressobj(-zlib.MAX_WBITS), raw, size)


def _bunzip2(raw: bytes, size: int) -> bytes:
    return _bounded(bz2.BZ2Decompressor(), raw, size)


def _unlzma(raw: bytes, size: int) -> bytes:
    """A zip LZMA member: a 4-byte header (version, properties' length), the 5 properties
    bytes of LZMA1 (``lc``, ``lp``, ``pb`` in one byte, the dictionary size), then the
    raw stream (APPNOTE 5.8.8)."""
    if len(raw) < 9:
        raise ValueError("no LZMA header")
    (props_len,) = struct.unpack("<H", raw[2:4])
    if props_len != 5:
        raise ValueError("LZMA properties of another length")
    d = raw[4]
    if d >= 9 * 5 * 5:
        raise ValueError("LZMA properties out of range")
    (dict_size,) = struct.unpack("<L", raw[5:9])
    # the decoder allocates its whole dictionary up front, and a crafted header asks for
    # 4 GB: no match reaches further back than the output's start, so a dictionary the
    # size of the output decodes every valid stream
    dict_size = min(dict_size, max(size + 1, 4096))
    flt = {
        "id": lzma.FILTER_LZMA1,
        "lc": d % 9,
        "lp": (d // 9) % 5,
        "pb": d // 45,
        "dict_size": dict_size,
    }
    return _bounded(lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[flt]), raw[9:], size)


def _unzstd_stdlib(raw: bytes, size: int) -> bytes:
    """Python 3.14's ``compression.zstd``: one decompressor per frame (Inspect writes large
    members as several frames), each call's output bounded."""
    from compression.zstd import ZstdDecompressor  # type: ignore[import-not-found]

    out = bytearray()
    rest = raw
    while rest:
        d, feed = ZstdDecompressor(), rest
        while not d.eof:
            out += d.decompress(feed, max_length=size + 1 - len(out))
            feed = b""
            if len(out) > size:
                raise _TooLarge
            if d.needs_input and not d.eof:
                raise ValueError("truncated frame")
        rest = d.unused_data
    return bytes(out)


def _unzstd_package(raw: bytes, size: int) -> bytes:
    """The ``zstandard`` package: a stream reader across frames, read in bounded chunks."""
    import zstandard

    out = bytearray()
    reader = zstandard.ZstdDecompressor().stream_reader(
        io.BytesIO(raw), read_across_frames=True, closefd=False
    )
    with reader:
        while True:
            chunk = reader.read(min(_CHUNK, size + 1 - len(out)))
            if not chunk:
                break
            out += chunk
            if len(out) > size:
                raise _TooLarge
    return bytes(out)


_DECOMPRESS: dict[int, Callable[[bytes, int], bytes]] = {
    STORED: _stored,
    DEFLATED: _inflate,
    BZIP2: _bunzip2,
    LZMA: _unlzma,
    ZSTANDARD: _unzstd_stdlib if sys.version_info >= (3, 14) else _unzstd_package,
}
