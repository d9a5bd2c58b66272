"""A typed format's validation error in our words: the JSON path as our readers write it,
what was expected and what is there, never a type name of the implementation."""

from __future__ import annotations

from typing import Literal

import msgspec
import pytest

from unmask.plumbing.structs import problem


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
