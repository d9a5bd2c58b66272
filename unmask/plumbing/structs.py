"""A typed format's validation error as our words: the JSON path and what is wrong there.

Contract: ``problem(exc, obj)`` turns a ``msgspec.ValidationError`` raised converting the
parsed JSON ``obj`` into (path, message): the path as ``unmask.plumbing.jsonreader``
writes it (``requirements[0].id``; ``""`` for the whole value) and a lowercase message
in the words of docs/style.md (what was expected, what is there, user values in
backticks), never a type name of the implementation.

For a reader that words each problem as its own hand-written checks did (the protocol IR,
``unmask.ir.json_convert``): ``take_apart`` gives the error's parts (what went wrong, and the
keys and indexes to it), ``value_at`` the offending value in the input, ``type_at`` the
struct and field it was meant for, ``fields_of`` a struct's keys in the order written.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Sequence
from typing import Any

import msgspec

from unmask.plumbing.jsonreader import index_path, join_path, kind
from unmask.plumbing.safe import shorten

# how msgspec says it: "<what> - at `$.a.b[0]`" (no suffix: the whole value)
_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_EXPECTED = re.compile(r"^Expected `(?P<want>[^`]*)`")
_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]*)`")
_INVALID = re.compile(r"^Invalid (?:enum )?value (?P<value>.*)$", re.S)

# msgspec's names of JSON types, as our messages name them
_WORDS = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "`true` or `false`",
    "null": "`null`",
    "object": "an object",
    "array": "an array",
}


def _want(spec: str) -> str:
    words = [_WORDS.get(w.strip(), f"`{w.strip()}`") for w in spec.split("|")]
    return " or ".join(dict.fromkeys(words))


def _at(obj: Any, path: str) -> Any:
    """The value at ``path`` (msgspec's form, without ``$``) in ``obj``, or None."""
    for key, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path):
        try:
            obj = obj[key] if key else obj[int(index)]
        except (KeyError, IndexError, TypeError):
            return None
    return obj


def problem(exc: Exception, obj: Any) -> tuple[str, str]:
    """(JSON path, message) of a validation error converting ``obj``."""
    m = _AT.match(str(exc))
    what, raw = (m.group("what"), m.group("path") or "") if m else (str(exc), "")
    path = raw[1:] if raw.startswith(".") else raw
    if (got := _MISSING.match(what)) is not None:
        return path, f"missing `{got.group('field')}`"
    if (got := _EXPECTED.match(what)) is not None:
        return path, f"expected {_want(got.group('want'))}, found {kind(_at(obj, raw))}"
    if _INVALID.match(what) is not None:
        value = _at(obj, raw)
        shown = shorten(str(value), 80)
        return path, f"`{shown}` is not one of the values this field takes"
    return path, what[:1].lower() + what[1:]


# --- a problem taken apart, for readers that word it themselves --------------------------

# msgspec words an error `<what> - at `$.a[0].b``; the path is left off at the top
_WHERE = re.compile(r"(.*?)(?: - at `\$(.*)`)?", re.S)
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")
_FIELD_ERROR = re.compile(r"Object (missing required|contains unknown) field `(.*)`", re.S)
_ENUM = re.compile(r"Invalid enum value ", re.S)
_TYPE = re.compile(r"Expected `[^`]*`, got `[^`]*`", re.S)

Step = typing.Union[str, int]  # noqa: UP007 (a runtime alias, read by Python 3.10 too)


class Problem(typing.NamedTuple):
    """One conversion error: ``kind`` is ``type`` (a value of another JSON type),
    ``missing`` or ``unknown`` (a key: ``key``), ``enum`` (a value outside a set) or
    ``constraint`` (a bound such as ``>= 0``); ``at`` the keys and indexes to it."""

    kind: str
    at: tuple[Step, ...]
    key: str | None = None


def take_apart(exc: msgspec.ValidationError) -> Problem:
    m = _WHERE.fullmatch(str(exc))
    assert m is not None  # the pattern matches any text
    what, where = m.group(1), m.group(2) or ""
    at: list[Step] = []
    pos = 0
    while pos < len(where):
        step = _STEP.match(where, pos)
        if step is None:  # a step no struct of ours makes: stop at the last one known
            break
        at.append(step.group(1) if step.group(1) is not None else int(step.group(2)))
        pos = step.end()
    field = _FIELD_ERROR.fullmatch(what)
    if field is not None:
        kind = "missing" if field.group(1) == "missing required" else "unknown"
        return Problem(kind, tuple(at), field.group(2))
    if _ENUM.match(what):
        return Problem("enum", tuple(at))
    return Problem("type" if _TYPE.match(what) else "constraint", tuple(at))


def render_path(path: str, at: Sequence[Step]) -> str:
    for step in at:
        path = index_path(path, step) if isinstance(step, int) else join_path(path, step)
    return path


_ABSENT = object()


def value_at(obj: Any, at: Sequence[Step]) -> Any:
    """The value at ``at`` in the input, or ``ABSENT``."""
    for step in at:
        if isinstance(step, int):
            if not (isinstance(obj, list) and step < len(obj)):
                return _ABSENT
        elif not (isinstance(obj, dict) and step in obj):
            return _ABSENT
        obj = obj[step]
    return obj


ABSENT = _ABSENT


def _members(tp: Any) -> tuple[Any, ...]:
    """The types a type stands for: the members of a union, a type under its metadata."""
    if typing.get_origin(tp) is typing.Annotated:
        return _members(typing.get_args(tp)[0])
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return tuple(m for arg in typing.get_args(tp) for m in _members(arg))
    return (tp,)


def struct_in(tp: Any) -> type[msgspec.Struct] | None:
    """The struct a (possibly optional) type stands for, if any."""
    for m in _members(tp):
        if isinstance(m, type) and issubclass(m, msgspec.Struct):
            return m
    return None


def type_at(tp: Any, at: Sequence[Step]) -> tuple[type[msgspec.Struct] | None, str | None, Any]:
    """(the struct that holds the last key of ``at``, that key, the type expected there),
    following ``at`` from the type ``tp``; the struct and key are None at an index."""
    owner: type[msgspec.Struct] | None = None
    key: str | None = None
    for step in at:
        if isinstance(step, int):
            lists = [m for m in _members(tp) if typing.get_origin(m) is list]
            if not lists:
                return None, None, Any
            tp, owner, key = typing.get_args(lists[0])[0], None, None
            continue
        cls = struct_in(tp)
        info = None if cls is None else fields_of(cls).get(step)
        if cls is None or info is None:
            return None, None, Any
        tp, owner, key = info.type, cls, step
    return owner, key, tp


def fields_of(cls: type[msgspec.Struct]) -> dict[str, msgspec.structs.FieldInfo]:
    """A struct's fields by the key each is written as, in the order they are written."""
    got = _FIELDS.get(cls)
    if got is None:
        got = _FIELDS[cls] = {f.encode_name: f for f in msgspec.structs.fields(cls)}
    return got


_FIELDS: dict[type, dict[str, msgspec.structs.FieldInfo]] = {}


def item_struct(tp: Any) -> type[msgspec.Struct] | None:
    """The struct of the items when ``tp`` is (possibly optionally) a list of structs."""
    for m in _members(tp):
        if typing.get_origin(m) is list:
            return struct_in(typing.get_args(m)[0])
    return None


def json_type(tp: Any) -> str | None:
    """``str``, ``bool``, ``int``, ``list`` or ``struct``: what a type takes in JSON, for
    the words of "expected …"; None for anything else."""
    for m in _members(tp):
        if typing.get_origin(m) is list:
            return "list"
        if isinstance(m, type) and issubclass(m, msgspec.Struct):
            return "struct"
        if typing.get_origin(m) is typing.Literal:
            return "str"
        if m in (str, bool, int):
            return m.__name__
    return None
