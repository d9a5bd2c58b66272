"""The published JSON Schema of a format, derived from its structs: the one builder.

Contract: ``json_schema(title, top, *named, ...)`` is the JSON Schema of the format whose
document is ``top``, each format's differences from the others as its arguments (every
schema in docs/schemas/ is built here); ``schema_text`` is a schema as the file that
publishes it. Only the commands that write schemas import this module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

import msgspec
from msgspec import Struct

from unmask.plumbing.struct_reader import field_specs, unwrap


def json_schema(
    title: str,
    top: type[Struct],
    *named: type[Struct],
    open_keys: bool = True,
    sort: bool = True,
    inline: bool = False,
    rename: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """The published JSON Schema of the format whose document is ``top`` (the one builder
    of every schema in docs/schemas/); ``named`` are structs its ``extra_json_schema``
    refers to by ``#/$defs/NAME`` though no field has their type. What differs between
    formats, each as it was first published, is an argument:
    ``open_keys``: unknown keys are allowed in every struct but a ``CLOSED`` one (Unmask
    reads them with a warning; ``Format`` forbids them only so that reading them takes the
    way that warns); False: as each struct declares them.
    ``sort``: the definitions by name; False: in the order msgspec meets them.
    ``inline``: the document is ``top``'s definition itself, not a ``$ref`` to it.
    ``rename``: each definition's name (and title) from its title; None: msgspec's names."""
    (main, *_), defs = msgspec.json.schema_components((top, *named), ref_template=_REF)
    if open_keys:
        for name, d in defs.items():
            cls = _named(top, name) or next((t for t in named if t.__name__ == name), None)
            if not (cls is not None and getattr(cls, "CLOSED", False)):
                d.pop("additionalProperties", None)
    if rename is not None:
        names = {k: rename(v.get("title", k)) for k, v in defs.items()}
        main = _refs_renamed(main, names)
        defs = {names[k]: {**_refs_renamed(v, names), "title": names[k]} for k, v in defs.items()}
    if inline:
        main = defs.pop(main["$ref"].removeprefix(_DEFS))
    if sort:
        defs = dict(sorted(defs.items()))
    head = {k: v for k, v in main.items() if k != "title"}  # a definition's title comes first
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        **head,
        "$defs": defs,
    }


_DEFS = "#/$defs/"  # where a schema's definitions are, as a `$ref` names them
_REF = _DEFS + "{name}"


def _refs_renamed(obj: Any, names: dict[str, str]) -> Any:
    """``obj`` with every ``$ref`` to a definition of ``names`` pointing at its new name."""
    if isinstance(obj, list):
        return [_refs_renamed(x, names) for x in obj]
    if not isinstance(obj, dict):
        return obj
    out = {k: _refs_renamed(v, names) for k, v in obj.items()}
    ref = obj.get("$ref")
    if isinstance(ref, str) and ref.startswith(_DEFS) and ref[len(_DEFS) :] in names:
        out["$ref"] = _DEFS + names[ref[len(_DEFS) :]]
    return out


def _named(top: type[Struct], name: str, seen: set | None = None) -> type[Struct] | None:
    """The struct called ``name`` that ``top`` reaches through its fields."""
    seen = set() if seen is None else seen
    if top in seen:
        return None
    seen.add(top)
    if top.__name__ == name:
        return top
    for f in field_specs(top):
        for t in _structs_in(f.tp):
            got = _named(t, name, seen)
            if got is not None:
                return got
    return None


def _structs_in(tp: Any) -> list[type[Struct]]:
    tp, _ = unwrap(tp)
    if isinstance(tp, type) and issubclass(tp, Struct):
        return [tp]
    return [s for a in get_args(tp) for s in _structs_in(a)]


def schema_text(schema: dict[str, Any]) -> str:
    """A schema as the file that publishes it: indented JSON and a final newline."""
    import json

    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
