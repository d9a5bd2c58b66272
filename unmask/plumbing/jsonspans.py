"""Where each member of a JSON object and each element of an array lies in the text.

Contract: the text is a JSON document already parsed (``unmask.plumbing.jsonload``) and found valid.
``members(text, i)`` takes the index of an object's ``{`` and returns ``(key, start, end)``
for every member, in text order, ``text[start:end]`` being the member's value exactly as
written; ``elements(text, i)`` does the same for an array's ``[``, ``(start, end)`` each.
``value_end(text, i)`` is the index just after the value that starts at ``i``. Values are
skipped with the standard library's own scanner (numbers and constants are not converted),
so the spans are those the parser read; text that is not valid JSON raises ``ValueError``.
A writer that changes one value splices its new text between the spans and keeps every
other byte as it was (``unmask.review.apply``).
"""

from __future__ import annotations

import json
import json.decoder
from collections.abc import Callable

# the standard library's reader of a JSON string, which its decoders use: in
# ``json.decoder`` at run time but left out of the type stubs, hence typed here
scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]

_WS = " \t\n\r"


def _nothing(_: object) -> None:
    return None


# numbers, constants and objects are skipped, not built: a `1e400` or an integer of 5,000
# digits (which `int` refuses) is spanned like any other value
_SKIPPER = json.JSONDecoder(
    parse_float=_nothing, parse_int=_nothing, parse_constant=_nothing, object_pairs_hook=_nothing
)


def skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in _WS:
        i += 1
    return i


def value_end(text: str, i: int) -> int:
    """The index just after the JSON value starting at ``i``."""
    try:
        return _SKIPPER.raw_decode(text, i)[1]
    except RecursionError:  # only past the depth bound the parser checked first
        raise ValueError("nested too deeply") from None


def _expect(text: str, i: int, ch: str) -> int:
    if i >= len(text) or text[i] != ch:
        raise ValueError(f"expected {ch!r} at {i}")
    return i + 1


def members(text: str, i: int) -> list[tuple[str, int, int]]:
    """``(key, start, end)`` of each member of the object whose ``{`` is at ``i``."""
    i = skip_ws(text, _expect(text, i, "{"))
    out: list[tuple[str, int, int]] = []
    if i < len(text) and text[i] == "}":
        return out
    while True:
        key, i = scanstring(text, _expect(text, i, '"'))
        i = skip_ws(text, _expect(text, skip_ws(text, i), ":"))
        end = value_end(text, i)
        out.append((key, i, end))
        i = skip_ws(text, end)
        if i < len(text) and text[i] == "}":
            return out
        i = skip_ws(text, _expect(text, i, ","))


def elements(text: str, i: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each element of the array whose ``[`` is at ``i``."""
    i = skip_ws(text, _expect(text, i, "["))
    out: list[tuple[int, int]] = []
    if i < len(text) and text[i] == "]":
        return out
    while True:
        end = value_end(text, i)
        out.append((i, end))
        i = skip_ws(text, end)
        if i < len(text) and text[i] == "]":
            return out
        i = skip_ws(text, _expect(text, i, ","))


__all__ = ["elements", "members", "skip_ws", "value_end"]
