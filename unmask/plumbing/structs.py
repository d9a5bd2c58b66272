"""A typed format's validation error as our words: the JSON path and what is wrong there.

Contract: ``problem(exc, obj)`` turns a ``msgspec.ValidationError`` raised converting the
parsed JSON ``obj`` into (path, message): the path as ``unmask.plumbing.jsonreader``
writes it (``requirements[0].id``; ``""`` for the whole value) and a lowercase message
in the words of docs/style.md (what was expected, what is there, user values in
backticks), never a type name of the implementation.
"""

from __future__ import annotations

import re
from typing import Any

from unmask.plumbing.jsonreader import kind
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
