"""Formats defined once, as typed structures (msgspec ``Struct``s): what every run needs.

Contract: a format is defined once, as ``Format`` structs, and ``msgspec.convert`` reads
input that fits them exactly (unknown keys fail it, so that the slow reading warns about
them). ``field_names`` and ``fields_of`` are a struct's keys in the order written;
``encode_line`` writes a struct as one JSON Lines record (compact UTF-8, under the output
policy), whichever layer's format it is. Nothing here knows what a replay is.

Input that does not convert is read by ``unmask.plumbing.struct_reader`` (every problem in
the project's words, at its JSON path), and the published JSON Schemas are built by
``unmask.plumbing.struct_schema``. They are apart because a run whose input converts needs
neither: a `unmask check` does not import them (compiled from source, as an editable checkout
without bytecode runs it, they were about 5 ms of its start-up; docs/performance.md).
"""

from __future__ import annotations

from typing import ClassVar

import msgspec
from msgspec import UNSET, Struct, UnsetType

from unmask.plumbing.codes import Code
from unmask.plumbing.jsonreader import JsonReader, did_you_mean, join_path, show
from unmask.plumbing.safe import json_bytes

__all__ = ["UNSET", "Format", "Struct", "UnsetType", "encode_line", "field_names", "fields_of"]


# gc=False: a struct read from JSON holds strings, numbers, lists and dicts of them, never
# itself, so it can be in no reference cycle; untracked, the thousands a large replay makes
# cost the collector nothing
class Format(Struct, forbid_unknown_fields=True, kw_only=True, gc=False):
    """Base of a format's structs: unknown keys fail ``msgspec.convert`` (so that the slow
    reading warns about them) and are allowed by the published schema
    (``unmask.plumbing.struct_schema``)."""

    KEYS_IN: ClassVar[str] = "an object"  # "unknown key `x` in {KEYS_IN} is ignored"
    ITEM: ClassVar[str] = "an"  # a list item: "expected {ITEM} object, found …"
    EXPECT: ClassVar[str] = "an object"  # "expected {EXPECT}, found …" elsewhere
    CLOSED: ClassVar[bool] = False  # unknown keys are errors (``unknown_key``), in the schema too

    @classmethod
    def unknown_key(cls, r: JsonReader, raw: dict, key: str, path: str) -> None:
        """Record unknown ``key`` of ``raw`` (at ``path``). The default: a warning with
        "did you mean"; a struct whose unknown keys are errors says so here."""
        r.warn(
            Code.UNKNOWN_KEY,
            join_path(path, key),
            f"unknown key `{show(key)}` in {cls.KEYS_IN} is ignored",
            help=did_you_mean(key, field_names(cls)),
        )


def field_names(cls: type[Struct]) -> tuple[str, ...]:
    """The JSON keys of ``cls``, in its order (the keys of ``fields_of``)."""
    return tuple(fields_of(cls))


def fields_of(cls: type[msgspec.Struct]) -> dict[str, msgspec.structs.FieldInfo]:
    """A struct's fields by the key each is written as, in the order they are written."""
    got = _BY_KEY.get(cls)
    if got is None:
        got = _BY_KEY[cls] = {f.encode_name: f for f in msgspec.structs.fields(cls)}
    return got


# not ``_FIELDS`` (``StructReader``'s own cache, of another shape, in
# ``unmask.plumbing.struct_reader``); ``field_names`` reads this one too
_BY_KEY: dict[type, dict[str, msgspec.structs.FieldInfo]] = {}


# --- a struct as one line of JSON ------------------------------------------------------------

_ENCODER = msgspec.json.Encoder()


def encode_line(line: Struct) -> bytes:
    """One compact UTF-8 line ending in a newline, under the output policy: the bytes
    ``json.dumps`` (compact, ``ensure_ascii=False``) writes of the same values; a lone
    surrogate from the input is escaped, so the line stays valid UTF-8. The one writer of
    a JSON Lines record (a result line, an error record wherever it is written)."""
    try:
        data = _ENCODER.encode(line)
    except UnicodeEncodeError:  # a lone surrogate from the input: escape, stay valid UTF-8
        import json

        text = json.dumps(msgspec.to_builtins(line), separators=(",", ":"))
        return text.encode("ascii") + b"\n"
    return json_bytes(data) + b"\n"
