"""Hostile versions of a real input file, drawn from one seeded ``random.Random``.

Contract: ``mutate_json(rng, text)`` and ``mutate_lines(rng, text)`` return ``(data, note)``:
the bytes of one hostile version of a JSON document or of a JSON Lines file (one line
mutated, or the file's framing), and what was done, for a failure message. The same seed
gives the same bytes. Structure-aware mutations parse the seed and change one value at a
JSON path (a wrong type, a hostile string, a huge or non-finite number, deep nesting, a
deleted or duplicated key); raw ones damage the text a parser sees (a byte order mark,
CRLF, a cut, invalid UTF-8, a NUL, bytes appended). ``cut(data, i)`` is the file cut after
``i`` bytes, for sweeps over every position of a small file.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Callable
from typing import Any

# strings that act on a terminal or a reader: escapes, bells, a one-byte CSI, bidirectional
# overrides and isolates, NUL, lone surrogates, a line break that fakes a second message
HOSTILE_STRINGS = [
    "",
    "\x1b[2J\x1b]0;owned\x07",
    "\x1b[31mVIOLATED\x1b[0m",
    "\x07",
    "\x9b31m",
    "a\u202egnp.exe",
    "\u2066x\u2069",
    "\x00",
    "nul\x00inside",
    "\ud800",
    "x\udfffy",
    "line\nerror: forged",
    "\r\x1b[Kgone",
    "x" * 100_000,
    "😀\u0301",
    "\ufeff",
    "TRUE",
    "FALSE",
    "UNKNOWN",
]
HUGE_NUMBERS = ["1e999", "-1e999", "1" + "0" * 400, "-" + "9" * 5000, "1e-999", "-0", "0.5"]
NON_FINITE = ["NaN", "Infinity", "-Infinity"]
DEPTH = 100_000


def json_paths(obj: Any, first: int | None = None) -> list[tuple]:
    """Every path to a value inside ``obj`` (the root excluded), in the order a stack walk
    meets them; ``first``: each list's first items only (the fuzz suites share this walk)."""
    out: list[tuple] = []
    stack: list[tuple[Any, tuple]] = [(obj, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            items: Any = node.items()
        elif isinstance(node, list):
            items = list(enumerate(node))[:first]
        else:
            continue
        for k, v in items:
            out.append((*path, k))
            stack.append((v, (*path, k)))
    return out


def json_get(obj: Any, path: tuple) -> Any:
    for k in path:
        obj = obj[k]
    return obj


def _odd(rng: random.Random, old: Any) -> Any:
    """A value of another type than ``old`` or a hostile one of its own."""
    pick = rng.randrange(8)
    if pick == 0:
        return rng.choice(HOSTILE_STRINGS)
    if pick == 1:
        return rng.choice([None, True, 0, -1, 2**53 + 1, 2**64, -(2**63) - 1, 10**400, 1e308])
    if pick == 2:
        return rng.choice([[], {}, [old], {"value": old}, [[[]]]])
    if pick == 3:
        return str(old)
    if pick == 4 and isinstance(old, str):
        i = rng.randrange(len(old) + 1)
        return old[:i] + rng.choice(HOSTILE_STRINGS[1:13]) + old[i:]
    if pick == 5 and isinstance(old, (int, float)) and not isinstance(old, bool):
        return rng.choice([old + 1, old - 1, -old, old * 10**12, float(old)])
    if pick == 6 and isinstance(old, list) and old:
        return old * rng.choice([2, 50])
    return rng.choice([None, "", 0, [], {}, rng.choice(HOSTILE_STRINGS)])


def _placeholder(obj: Any, path: tuple, token: str) -> Any:
    """``obj`` with the value at ``path`` replaced by a string that stands for raw JSON."""
    parent = json_get(obj, path[:-1])
    parent[path[-1]] = token
    return obj


RAW = "@@RAW-4b1d@@"


def _structural(
    rng: random.Random, obj: Any, focus: Callable[[tuple], bool] | None = None
) -> tuple[str, str]:
    """One change at one JSON path (one ``focus`` accepts, if given), written back as JSON."""
    obj = copy.deepcopy(obj)
    # lists cut to six items; sorted, as a dict walk's order is the document's
    paths = sorted(json_paths(obj, first=6), key=repr)
    if focus is not None:
        paths = [p for p in paths if focus(p)] or paths
    if not paths:
        return json.dumps(_odd(rng, obj)), "root retyped"
    path = rng.choice(paths)
    parent, key = json_get(obj, path[:-1]), path[-1]
    op = rng.choice(["retype", "retype", "retype", "drop", "dupkey", "raw-number", "deep"])
    raw = ""
    if op == "retype":
        parent[key] = _odd(rng, parent[key])
    elif op == "drop":
        del parent[key]
    elif op == "raw-number":
        raw = rng.choice([*HUGE_NUMBERS, *NON_FINITE])
        _placeholder(obj, path, RAW)
    elif op == "deep":
        depth = rng.choice([64, 1000, DEPTH])
        raw = rng.choice(["[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth])
        _placeholder(obj, path, RAW)
    ascii_only = rng.random() < 0.5
    text = json.dumps(obj, ensure_ascii=ascii_only)
    if raw:
        text = text.replace(json.dumps(RAW), raw, 1)
    if op == "dupkey":
        # a second value for the same key, written before the first: `{"k": 1, "k": "x"}`
        first = json.dumps(key, ensure_ascii=ascii_only) + ": "
        at = text.find(first) if isinstance(parent, dict) else -1
        if at < 0:
            return text, "unchanged"
        text = f"{text[:at]}{first}{json.dumps(_odd(rng, parent[key]))}, {text[at:]}"
    if raw:
        op = f"{op} {raw[:12]}"
    return text, f"{op} at {list(path)}"


def cut(data: bytes, i: int) -> bytes:
    return data[:i]


def _raw(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    op = rng.choice(["bom", "crlf", "cut", "cut", "utf8", "nul", "append", "cr", "latin1"])
    if op == "bom":
        return b"\xef\xbb\xbf" + data, op
    if op == "crlf":
        return data.replace(b"\n", b"\r\n"), op
    if op == "cr":
        return data.replace(b"\n", b"\r"), op
    if op == "cut":
        i = rng.randrange(len(data) + 1)
        return data[:i], f"cut at {i}"
    i = rng.randrange(len(data) + 1)
    if op == "utf8":
        bad = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80"])
        return data[:i] + bad + data[i:], f"invalid utf-8 at {i}"
    if op == "nul":
        return data[:i] + b"\x00" + data[i:], f"nul at {i}"
    if op == "latin1":
        return data.decode("utf-8", "surrogatepass").encode("latin-1", "replace"), op
    return data + rng.choice([b"\n{}", b"x", b"\x00", b"]", b"\n\n", b"\x1b[2J"]), op


def mutate_json(
    rng: random.Random, text: str, focus: Callable[[tuple], bool] | None = None
) -> tuple[bytes, str]:
    """One hostile version of the JSON document ``text``; ``focus``: which paths to change."""
    if rng.random() < 0.7:
        out, note = _structural(rng, json.loads(text), focus)
        data = out.encode("utf-8", "surrogatepass")
        if rng.random() < 0.15:
            data, more = _raw(rng, data)
            note = f"{note}; {more}"
        return data, note
    return _raw(rng, text.encode("utf-8"))


_LINE_END = re.compile(rb"\n")


def mutate_lines(rng: random.Random, text: str) -> tuple[bytes, str]:
    """One hostile version of the JSON Lines file ``text``: one line changed, or framing."""
    lines = text.splitlines()
    r = rng.random()
    if r < 0.65:
        i = rng.randrange(len(lines))
        if rng.random() < 0.8:
            new, note = mutate_json(rng, lines[i])
        else:
            new = rng.choice([b"", b"  ", b"\r", b"[]", b"null", b"1", b'"x"', b"{}", b"{"])
            note = f"replaced by {new!r}"
        # a line mutated into one holding a raw line break stays one record's damage
        new = _LINE_END.sub(b" ", new) if b"\n" in new and rng.random() < 0.5 else new
        data = b"\n".join(
            [*(s.encode() for s in lines[:i]), new, *(s.encode() for s in lines[i + 1 :])]
        )
        return data + b"\n", f"line {i + 1}: {note}"
    if r < 0.8:
        i = rng.randrange(len(lines))
        dup = [*lines[: i + 1], lines[i], *lines[i + 1 :]]
        return ("\n".join(dup) + "\n").encode(), f"line {i + 1} twice"
    return _raw(rng, text.encode("utf-8"))


_QUOTED = re.compile(r'"[^"\n]*"')
_NAME = re.compile(r"\b(j_joined|j_cto|c_joined|c_cto|external|context_only|pass)\b")
_EXPR = re.compile(r"(?<=iff )[^\n]+|(?<=holds: )[^\n]+")


def deep_proto(text: str, form: str, depth: int, rng: random.Random | None = None) -> str:
    """``text`` with one expression (the decision's, without ``rng``) nested ``depth``
    deep: in brackets (``parens``), under ``not``s, or in brackets never closed (``open``)."""
    spans = [m.span() for m in _EXPR.finditer(text)]
    a, b = rng.choice(spans) if rng is not None else spans[0]
    inner = text[a:b]
    if form == "parens":
        new = "(" * depth + inner + ")" * depth
    elif form == "not":
        new = "not " * depth + inner
    else:
        new = "(" * depth + inner
    return text[:a] + new + text[b:]


def mutate_proto(rng: random.Random, text: str) -> tuple[bytes, str]:
    """One hostile version of the ``.proto`` text ``text``."""
    op = rng.choice(["quote", "quote", "name", "deep", "long", "raw", "raw"])
    if op == "quote":  # a hostile string inside a quoted description, raw
        spans = [m.span() for m in _QUOTED.finditer(text)]
        a, b = rng.choice(spans)
        i = rng.randrange(a + 1, b)
        bad = rng.choice(HOSTILE_STRINGS[1:15])
        return (text[:i] + bad + text[i:]).encode("utf-8", "surrogatepass"), f"quote {bad[:12]!r}"
    if op == "name":  # a name given a control, an override or a lone surrogate
        names = [m.span() for m in _NAME.finditer(text)]
        a, b = rng.choice(names)
        bad = rng.choice(["\x1b[2J", "\x07", "\x9b", "\u202e", "\ud800", "\x00", "é", "x" * 10**5])
        out = text[:b] + bad + text[b:]
        return out.encode("utf-8", "surrogatepass"), f"name {text[a:b]} + {bad[:12]!r}"
    if op == "deep":  # nested brackets or `not`s in an expression (10^5: a test of its own)
        form = rng.choice(["parens", "not", "open"])
        depth = rng.choice([100, 199, 201, 1000, 3000])
        return deep_proto(text, form, depth, rng).encode(), f"deep {form} {depth}"
    if op == "long":  # a description of a million characters
        spans = [m.span() for m in _QUOTED.finditer(text)]
        a, b = rng.choice(spans)
        return (text[: a + 1] + "y" * 10**6 + text[b - 1 :]).encode(), "long string"
    return _raw(rng, text.encode("utf-8"))
