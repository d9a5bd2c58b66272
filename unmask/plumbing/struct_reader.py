"""Reading parsed JSON that does not convert into a format's structs, every problem worded.

Contract: ``StructReader.struct`` reads input that ``msgspec.convert`` refused, recording
every structural problem into a ``JsonReader`` in the project's words (``missing `key```,
``expected a string, found a number`` at the value's JSON path, ``unknown key `x` in a
replay is ignored`` with "did you mean"), and returns what it could read: a struct whose
missing or ill-typed field is ``None`` (reported; the format's own checks skip it), lists
whose ill-typed items are ``None`` (indices kept for JSON paths), ``UNSET`` for an optional
field left out. Unknown keys are warnings unless the struct's ``unknown_key`` says otherwise.
``Annotated[T, Meta(extra=...)]`` may carry ``expect`` (what "expected X" says),
``missing_help`` (the hint when it is missing) and ``own`` (the format's reader words this
field itself: it is passed on as parsed). A string ``Literal`` is read as a string: which
strings are allowed is the format's check, with its own message. ``KEYS_IN``, ``ITEM`` and
``EXPECT`` name a struct in messages.

``problem(exc, obj)`` turns a ``msgspec.ValidationError`` raised converting the parsed JSON
``obj`` into (path, message): the path as ``unmask.plumbing.jsonreader`` writes it
(``requirements[0].id``; ``""`` for the whole value) and a lowercase message in the words of
docs/style.md (what was expected, what is there, user values in backticks), never a type
name of the implementation: for a format read whole and refused at its first problem.

For a reader that words each problem as its own hand-written checks did (the protocol IR,
``unmask.ir.json_convert``): ``take_apart`` gives the error's parts (what went wrong, and the
keys and indexes to it), ``value_at`` the offending value in the input, ``type_at`` the
struct and field it was meant for; ``what_of`` names a type in "expected …" for both
readers. Only input that does not convert, or a schema being built
(``unmask.plumbing.struct_schema``, which shares ``unwrap`` and ``field_specs``), imports
this module.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Sequence
from typing import Any, Literal, Union, get_args, get_origin

import msgspec
from msgspec import UNSET, Struct, UnsetType

from unmask.plumbing.codes import Code
from unmask.plumbing.jsonreader import JsonReader, index_path, is_int, join_path, kind
from unmask.plumbing.safe import shorten
from unmask.plumbing.structs import Format, fields_of

__all__ = [
    "ABSENT",
    "Problem",
    "StructReader",
    "field_specs",
    "item_struct",
    "problem",
    "render_path",
    "struct_in",
    "take_apart",
    "type_at",
    "unwrap",
    "value_at",
    "what_of",
]


class _Field:
    __slots__ = ("extra", "key", "name", "required", "tp")

    def __init__(self, f: msgspec.structs.FieldInfo):
        self.name = f.name
        self.key = f.encode_name
        self.tp, self.extra = unwrap(f.type)
        if _is_union(self.tp):  # `Annotated[T, Meta(...)] | UnsetType`: the extra of T
            for a in get_args(self.tp):
                self.extra = {**unwrap(a)[1], **self.extra}
        self.required = f.required


_FIELDS: dict[type, tuple[_Field, ...]] = {}


def field_specs(cls: type[Struct]) -> tuple[_Field, ...]:
    got = _FIELDS.get(cls)
    if got is None:
        got = _FIELDS[cls] = tuple(_Field(f) for f in msgspec.structs.fields(cls))
    return got


def unwrap(tp: Any) -> tuple[Any, dict]:
    """The type inside ``Annotated`` and the ``extra`` of its ``Meta``s."""
    extra: dict = {}
    if get_origin(tp) is typing.Annotated:
        args = get_args(tp)
        tp = args[0]
        for m in args[1:]:
            if isinstance(m, msgspec.Meta) and m.extra:
                extra.update(m.extra)
    return tp, extra


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def what_of(tp: Any, other: str = "a value") -> str:
    """What a value of ``tp`` is called in "expected X", by both readers of this module's
    structs (``StructReader``; the protocol IR's, which says ``other`` where no JSON kind
    names the type): a union is its kinds but ``null`` and ``UNSET`` joined by "or"."""
    tp, _ = unwrap(tp)
    if _is_union(tp):
        kinds = [what_of(a, other) for a in get_args(tp) if a not in (type(None), UnsetType)]
        return kinds[0] if len(kinds) == 1 else " or ".join(kinds)
    origin = get_origin(tp) or tp
    if origin is str or origin is Literal:
        return "a string"
    if origin is bool:
        return "`true` or `false`"
    if origin is int:
        return "a whole number"
    if origin is list:
        return "an array"
    if origin is dict or (isinstance(origin, type) and issubclass(origin, Struct)):
        return "an object"
    return other


class StructReader:
    """Reads parsed JSON into the structs of a format, every problem into ``r``."""

    def __init__(self, r: JsonReader):
        self.r = r

    def read(self, v: Any, tp: Any, path: str, expect: str | None = None) -> Any:
        """``v`` read as a ``tp``, or None after recording why not."""
        tp, extra = unwrap(tp)
        expect = str(extra.get("expect") or expect or "") or None
        if _is_union(tp):
            args = [a for a in get_args(tp) if a is not UnsetType]
            if v is None and type(None) in args:
                return None
            args = [a for a in args if a is not type(None)]
            if len(args) == 1:
                return self.read(v, args[0], path, expect)
            self.r.expect(path, expect or what_of(tp), v)  # no format here has such a union
            return None
        origin = get_origin(tp) or tp
        if tp is Any:
            return v
        if isinstance(origin, type) and issubclass(origin, Struct):
            if not isinstance(v, dict):
                self.r.expect(path, expect or str(getattr(origin, "EXPECT", "an object")), v)
                return None
            return self.struct(v, origin, path)
        ok = (
            isinstance(v, str)
            if origin is str or origin is Literal
            else isinstance(v, bool)
            if origin is bool
            else is_int(v)
            if origin is int
            else isinstance(v, list)
            if origin is list
            else isinstance(v, dict)
            if origin is dict
            else True
        )
        if not ok:
            self.r.expect(path, expect or what_of(tp), v)
            return None
        if origin is list:
            (item,) = get_args(tp) or (Any,)
            if item is Any:
                return v
            return [self.item(x, item, index_path(path, i)) for i, x in enumerate(v)]
        if origin is dict:
            _, value = get_args(tp) or (str, Any)
            if value is Any:
                return v
            return {k: self.read(x, value, join_path(path, k)) for k, x in v.items()}
        return v

    def item(self, v: Any, tp: Any, path: str) -> Any:
        """Item ``v`` of a list: a struct item that is not an object is ``expected an
        annotation object``."""
        inner, _ = unwrap(tp)
        if isinstance(inner, type) and issubclass(inner, Format) and not isinstance(v, dict):
            self.r.expect(path, f"{inner.ITEM} object", v)
            return None
        return self.read(v, tp, path)

    def struct(self, raw: dict, cls: type[Struct], path: str) -> Any:
        """``raw`` read as a ``cls``: None for its missing or ill-typed fields."""
        fields = field_specs(cls)
        if issubclass(cls, Format):
            known = fields_of(cls)  # by key: membership without a tuple per struct
            for k in raw:
                if k not in known:
                    cls.unknown_key(self.r, raw, k, path)
        values: dict[str, Any] = {}
        for f in fields:
            if f.key not in raw:
                if f.required and not f.extra.get("own"):
                    self.r.err(
                        Code.MISSING, path, f"missing `{f.key}`", help=f.extra.get("missing_help")
                    )
                    values[f.name] = None
                elif f.required:
                    values[f.name] = UNSET
                continue
            v = raw[f.key]
            if f.extra.get("own"):
                values[f.name] = v
            else:
                values[f.name] = self.read(v, f.tp, join_path(path, f.key), f.extra.get("expect"))
        return cls(**values)


# --- a validation error in our words ---------------------------------------------------------

# how msgspec says it: "<what> - at `$.a.b[0]`" (no suffix: the whole value). The patterns
# of this part and the next are strings, compiled (and kept by `re`) at the first error:
# only input that does not convert reads them, and compiling them all costs every command
# that reads a replay about 0.5 ms
_AT = r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$"
_EXPECTED = r"^Expected `(?P<want>[^`]*)`"
_MISSING = r"^Object missing required field `(?P<field>[^`]*)`"
_INVALID = r"^Invalid (?:enum )?value (?P<value>.*)$"

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
    m = re.match(_AT, str(exc), re.S)
    what, raw = (m.group("what"), m.group("path") or "") if m else (str(exc), "")
    path = raw[1:] if raw.startswith(".") else raw
    if (got := re.match(_MISSING, what)) is not None:
        return path, f"missing `{got.group('field')}`"
    if (got := re.match(_EXPECTED, what)) is not None:
        return path, f"expected {_want(got.group('want'))}, found {kind(_at(obj, raw))}"
    if re.match(_INVALID, what, re.S) is not None:
        value = _at(obj, raw)
        shown = shorten(str(value), 80)
        return path, f"`{shown}` is not one of the values this field takes"
    return path, what[:1].lower() + what[1:]


# --- a problem taken apart, for readers that word it themselves --------------------------

# msgspec words an error `<what> - at `$.a[0].b``; the path is left off at the top
_WHERE = r"(.*?)(?: - at `\$(.*)`)?"
_STEP = r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]"
_FIELD_ERROR = r"Object (missing required|contains unknown) field `(.*)`"
_ENUM = r"Invalid enum value "
_TYPE = r"Expected `[^`]*`, got `[^`]*`"

Step = typing.Union[str, int]  # noqa: UP007 (a runtime alias, read by Python 3.10 too)


class Problem(typing.NamedTuple):
    """One conversion error: ``kind`` is ``type`` (a value of another JSON type),
    ``missing`` or ``unknown`` (a key: ``key``), ``enum`` (a value outside a set) or
    ``constraint`` (a bound such as ``>= 0``); ``at`` the keys and indexes to it."""

    kind: str
    at: tuple[Step, ...]
    key: str | None = None


def take_apart(exc: msgspec.ValidationError) -> Problem:
    m = re.fullmatch(_WHERE, str(exc), re.S)
    assert m is not None  # the pattern matches any text
    what, where = m.group(1), m.group(2) or ""
    at: list[Step] = []
    pos = 0
    steps = re.compile(_STEP)
    while pos < len(where):
        step = steps.match(where, pos)
        if step is None:  # a step no struct of ours makes: stop at the last one known
            break
        at.append(step.group(1) if step.group(1) is not None else int(step.group(2)))
        pos = step.end()
    field = re.fullmatch(_FIELD_ERROR, what, re.S)
    if field is not None:
        kind = "missing" if field.group(1) == "missing required" else "unknown"
        return Problem(kind, tuple(at), field.group(2))
    if re.match(_ENUM, what):
        return Problem("enum", tuple(at))
    return Problem("type" if re.match(_TYPE, what, re.S) else "constraint", tuple(at))


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


def item_struct(tp: Any) -> type[msgspec.Struct] | None:
    """The struct of the items when ``tp`` is (possibly optionally) a list of structs."""
    for m in _members(tp):
        if typing.get_origin(m) is list:
            return struct_in(typing.get_args(m)[0])
    return None
