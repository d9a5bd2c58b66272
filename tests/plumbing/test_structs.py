"""unmask/plumbing/structs.py: a typed format's validation error in our words (``problem``:
the JSON path as our readers write it, what was expected and what is there, never a type
name of the implementation); and ``StructReader``, which reads parsed JSON into a format's
structs with every problem worded at its JSON path and what could be read kept."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

import msgspec
import pytest
from msgspec import UNSET, Meta, UnsetType

from unmask.plumbing.jsonreader import JsonReader, join_path
from unmask.plumbing.limits import DEFAULT_LIMITS
from unmask.plumbing.struct_reader import StructReader, problem, what_of
from unmask.plumbing.struct_schema import json_schema
from unmask.plumbing.structs import Format

T = TypeVar("T")


class Inner(msgspec.Struct):
    name: str
    size: int | None


class Outer(msgspec.Struct):
    kind: Literal["a", "b"]
    items: list[Inner]


@pytest.mark.parametrize(
    ("obj", "path", "message"),
    [
        ({"kind": "a", "items": [{"name": "x", "size": "3"}]}, "items[0].size",
         "expected an integer or `null`, found a string"),
        ({"kind": "a", "items": [{"name": 1, "size": 3}]}, "items[0].name",
         "expected a string, found a number"),
        ({"kind": "a", "items": [{"size": 3}]}, "items[0]", "missing `name`"),
        ({"items": []}, "", "missing `kind`"),
        ({"kind": "c\u202e", "items": []}, "kind",
         "`c\u202e` is not one of the values this field takes"),
        ({"kind": "a", "items": {}}, "items", "expected an array, found an object"),
        ([], "", "expected an object, found an array"),
    ],
)  # fmt: skip
def test_a_validation_error_is_a_path_and_our_words(obj, path: str, message: str) -> None:
    with pytest.raises(msgspec.ValidationError) as got:
        msgspec.convert(obj, Outer)
    assert problem(got.value, obj) == (path, message)


# --- StructReader ---------------------------------------------------------------------------


class Part(Format):
    ITEM: ClassVar[str] = "a part"
    KEYS_IN: ClassVar[str] = "a part"

    name: str
    size: int = 0


class Doc(Format, kw_only=True):
    KEYS_IN: ClassVar[str] = "a doc"

    title: Annotated[str, Meta(extra={"expect": "a title (a string)"})]
    parts: list[Part]
    note: str | UnsetType = UNSET
    tags: dict[str, list[str]] | None = None
    raw: Annotated[Any, Meta(extra={"own": True})] = None
    count: Annotated[int, Meta(extra={"missing_help": "count the parts"})]


class Closed(Format):
    CLOSED: ClassVar[bool] = True

    kind: str

    @classmethod
    def unknown_key(cls, r: JsonReader, raw: dict, key: str, path: str) -> None:
        r.err("closed", join_path(path, key), f"unknown key `{key}`")


def read(obj: Any, cls: type = Doc) -> tuple[Any, JsonReader]:
    r = JsonReader("f.json", DEFAULT_LIMITS)
    return StructReader(r).struct(obj, cls, ""), r


def test_input_that_fits_reads_as_msgspec_reads_it() -> None:
    obj = {"title": "t", "parts": [{"name": "a", "size": 2}], "count": 1, "tags": {"x": ["y"]}}
    got, r = read(obj)
    assert not r.diags and not r.warnings
    assert got == msgspec.convert(obj, Doc)


def test_every_problem_is_worded_at_its_path_and_the_rest_is_kept() -> None:
    obj = {
        "title": 3,
        "parts": [{"name": "a"}, 5, {"name": 1, "size": True}],
        "tags": {"x": ["y", 2]},
        "raw": {"anything": [1]},
        "titel": "?",
    }
    got, r = read(obj)
    assert [(d.code, d.path, d.message, d.help) for d in r.diags] == [
        ("type", "title", "expected a title (a string), found a number", None),
        ("type", "parts[1]", "expected a part object, found a number", None),
        ("type", "parts[2].name", "expected a string, found a number", None),
        ("type", "parts[2].size", "expected a whole number, found `true`", None),
        ("type", "tags.x[1]", "expected a string, found a number", None),
        ("missing", "$", "missing `count`", "count the parts"),
    ]
    assert [(w.code, w.path, w.message, w.help) for w in r.warnings] == [
        ("unknown-key", "titel", "unknown key `titel` in a doc is ignored", "did you mean `title`?")
    ]
    # what was wrong is None, what was fine is read, indices are kept
    assert got.title is None and got.count is None
    assert got.parts[0] == Part(name="a") and got.parts[1] is None
    assert got.parts[2].name is None and got.parts[2].size is None
    assert got.tags == {"x": ["y", None]}
    assert got.raw == {"anything": [1]} and got.note is UNSET


@pytest.mark.parametrize("value", [None, [], "x"])
def test_a_struct_that_is_not_an_object(value: Any) -> None:
    got, r = read({"title": "t", "parts": [], "count": 0, "tags": value})
    if value is None:
        assert not r.diags and got.tags is None
    else:
        assert [(d.path, d.message.split(",")[0]) for d in r.diags] == [
            ("tags", "expected an object")
        ]


def test_a_closed_struct_words_its_unknown_keys_itself_and_the_schema_refuses_them() -> None:
    got, r = read({"kind": "k", "extra": 1}, Closed)
    assert [(d.code, d.path) for d in r.diags] == [("closed", "extra")] and got.kind == "k"
    schema = json_schema("closed", Closed)
    assert schema["$defs"]["Closed"]["additionalProperties"] is False
    assert "additionalProperties" not in json_schema("doc", Doc)["$defs"]["Doc"]


@pytest.mark.parametrize(
    ("tp", "words"),
    [
        (Literal["a"], "a string"),
        (Annotated[int, Meta(ge=0)] | None, "a whole number"),
        (bool | UnsetType, "`true` or `false`"),
        (list[Inner] | None, "an array"),
        (Inner | None, "an object"),
        (str | Inner, "a string or an object"),
        (float, "a value"),
        (Any, "a value"),
    ],
)  # fmt: skip
def test_what_a_type_is_called_in_expected(tp: Any, words: str) -> None:
    """One naming for both readers: ``StructReader``'s words, and the protocol IR's, which
    only says something else where no JSON kind names the type."""
    assert what_of(tp) == words
    other = "a value of another kind"
    assert what_of(tp, other) == (other if words == "a value" else words)


class Node(msgspec.Struct, Generic[T]):
    value: T
    next: Node[T] | None = None


class Chain(msgspec.Struct, forbid_unknown_fields=True):
    head: Node[int]
    tail: Inner


def test_the_one_schema_builder_takes_each_formats_differences_as_arguments() -> None:
    plain = json_schema("chain", Chain)
    assert list(plain) == ["$schema", "title", "$ref", "$defs"]
    assert (
        plain["$ref"] == "#/$defs/Chain" and "additionalProperties" not in plain["$defs"]["Chain"]
    )
    assert list(plain["$defs"]) == ["Chain", "Inner", "Node_int_"]  # by name
    kept = json_schema("chain", Chain, open_keys=False, sort=False)
    assert kept["$defs"]["Chain"]["additionalProperties"] is False
    assert list(kept["$defs"]) == ["Chain", "Node_int_", "Inner"]  # in the order met
    named = json_schema("chain", Chain, inline=True, rename=lambda t: t.partition("[")[0])
    assert list(named)[:3] == ["$schema", "title", "type"] and named["title"] == "chain"
    assert set(named["$defs"]) == {"Inner", "Node"} and named["$defs"]["Node"]["title"] == "Node"
    assert named["properties"]["head"] == {"$ref": "#/$defs/Node"}
    assert named["$defs"]["Node"]["properties"]["next"]["anyOf"][0] == {"$ref": "#/$defs/Node"}
