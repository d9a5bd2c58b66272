"""Bounded reading of a zip archive's members, Zstandard ones included (Inspect's `.eval`).

Contract: ``Archive(data, name, limits)`` reads the central directory of the archive held in
``data`` and checks it before anything is decompressed: at most ``MAX_MEMBERS`` members;
each member's declared size within ``--max-file-bytes`` and ``MAX_RATIO`` times its
compressed size; the declared sizes of all members together within ``--max-file-bytes``
(the bound a JSON file of the same content meets). ``read(info)`` decompresses one member
with its output bounded by its declared size, then checks its length and CRC-32: a zip bomb
is refused with one message when it passes the bound, and never fills memory. Members are
stored, deflated, or compressed with Zstandard (method 93, which Python's ``zipfile``
reads only from 3.14): the standard library's ``compression.zstd`` from Python 3.14, the
``zstandard`` package before (the one Inspect itself writes with). Anything else, an
encrypted member included, is refused. Member names are data: matched and shown, never
used as paths. Every refusal is an ``UnmaskError`` naming the archive and the member.
"""

from __future__ import annotations

import io
import struct
import sys
import zipfile
import zlib
from collections.abc import Callable

from unmask.diagnostics import Diagnostic, UnmaskError
from unmask.jsonreader import show
from unmask.limits import Limits

# Inspect writes a few members per sample (the sample, its summary): 100,000 is far more
# samples than one log holds, and bounds the work of listing a crafted archive
MAX_MEMBERS = 100_000
# Inspect's JSON members compress about 5:1 with Zstandard (the logs in
# tests/data/importers/inspect-generated); a member declared beyond this is a bomb
MAX_RATIO = 500
STORED, DEFLATED, ZSTANDARD = 0, 8, 93
_LOCAL = struct.Struct("<4s2B4HL2L2H")  # a local file header, as zipfile reads it
_CHUNK = 1 << 20


def _error(file: str, message: str, code: str = "not-the-format", help: str | None = None):
    return UnmaskError([Diagnostic(code, message, file=file, help=help)])


class Archive:
    """One zip archive in memory, its members checked against the bounds (module doc)."""

    __slots__ = ("_data", "_limits", "file", "members")

    def __init__(self, data: bytes, file: str, limits: Limits) -> None:
        self._data, self.file, self._limits = data, file, limits
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
            raise _error(file, f"cannot read `{file}` as a zip archive") from None
        if len(self.members) > MAX_MEMBERS:
            raise _error(
                file, f"the archive has {len(self.members)} members, more than {MAX_MEMBERS}"
            )
        total = 0
        for info in self.members:
            size, packed = info.file_size, info.compress_size
            if size > limits.max_file_bytes:
                raise self._too_large(info, f"declares {size} bytes")
            if info.compress_type != STORED and size > MAX_RATIO * max(packed, 1):
                raise _error(
                    file,
                    f"archive member `{show(info.filename)}` declares {size} bytes from"
                    f" {packed}, a compression ratio over {MAX_RATIO}:1",
                    code="limit",
                    help="a log written by the tool compresses far less: this looks like a"
                    " zip bomb",
                )
            total += size
        if total > limits.max_file_bytes:
            raise _error(
                file,
                f"the archive's members hold {total} bytes together, more than the limit"
                f" of {limits.max_file_bytes} bytes",
                code="limit",
                help=f"raise the bound with `{limits.option('max_file_bytes')}`",
            )

    def _too_large(self, info: zipfile.ZipInfo, what: str) -> UnmaskError:
        return _error(
            self.file,
            f"archive member `{show(info.filename)}` {what}, more than the limit of"
            f" {self._limits.max_file_bytes} bytes",
            code="limit",
            help=f"raise the bound with `{self._limits.option('max_file_bytes')}`",
        )

    def read(self, info: zipfile.ZipInfo) -> bytes:
        """The member's bytes: at most its declared size is ever produced."""
        where = f"archive member `{show(info.filename)}`"
        if info.flag_bits & 0x1:
            raise _error(self.file, f"{where} is encrypted")
        decompress = _DECOMPRESS.get(info.compress_type)
        if decompress is None:
            raise _error(
                self.file,
                f"{where} is compressed with method {info.compress_type}, which Unmask does"
                " not read",
                help="stored, deflated and Zstandard members are read",
            )
        raw = self._raw(info, where)
        try:
            data = decompress(raw, info.file_size)
        except _TooLarge:
            raise _error(
                self.file,
                f"{where} decompresses to more than the {info.file_size} bytes it declares",
                code="limit",
                help="a log written by the tool declares its sizes: this looks like a zip bomb",
            ) from None
        except Exception:  # the decoder's own error for damaged data
            raise _error(self.file, f"{where} is damaged: it cannot be decompressed") from None
        if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
            raise _error(self.file, f"{where} is damaged: its size or checksum is wrong")
        return data

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


def _stored(raw: bytes, size: int) -> bytes:
    if len(raw) > size:
        raise _TooLarge
    return raw


def _inflate(raw: bytes, size: int) -> bytes:
    d = zlib.decompressobj(-zlib.MAX_WBITS)
    out = d.decompress(raw, size + 1)  # short of the cap, every input byte was used
    if len(out) > size:
        raise _TooLarge
    return out


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
    ZSTANDARD: _unzstd_stdlib if sys.version_info >= (3, 14) else _unzstd_package,
}
