"""Reading untrusted JSON without tracebacks, hangs or unbounded memory.

Contract: ``read_json_file`` and ``parse_json_bytes``/``parse_json_text`` return the parsed
value or raise ``UnmaskError`` with one diagnostic saying what is wrong and where: a file
that is not a readable regular file or is larger than ``max_file_bytes`` (read through
``unmask.plumbing.files``), bytes that are not UTF-8, an empty document, a syntax error
(file:line:col), nesting deeper than ``max_json_depth`` (found by a cheap scan *before*
parsing, because the standard parser recurses), more values than ``max_json_values``
(counted the same way before anything is built: a 64 MB document of ``{},`` is 21 million
objects, 1.5 GB parsed), a ``NaN``/``Infinity`` literal, an integer
literal too long to convert, or a duplicate key in one object (an error: which of the two
values was meant is unknowable, and an audit must not guess). A UTF-8 byte order mark is
skipped. Non-finite and duplicate-key problems carry the JSON path of the offending value.
No message quotes the document's text. ``parse_json_document`` returns the decoded text
beside the value, for a reader that needs both.
"""

from __future__ import annotations

import json
from itertools import accumulate, repeat
from pathlib import Path
from typing import Any

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.files import decode_utf8, read_bytes, too_large
from unmask.plumbing.jsonreader import join_path, show
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.span import Span

__all__ = [
    "join_path",
    "json_depth",
    "json_values",
    "over_values",
    "parse_json_bytes",
    "parse_json_document",
    "parse_json_text",
    "read_json_file",
    "show",
    "too_many_values",
]

# every byte except the four brackets and the double quote: after deleting these, what
# is left is the document's skeleton (strings collapse to pairs of quotes); braces become
# brackets on the way, since only the nesting counts
_NOT_SKELETON = bytes(b for b in range(256) if b not in b'[]{}"')
_BRACKETS = bytes.maketrans(b"{}", b"[]")
# what counts values: an opening bracket (an array or object) and a comma (one more item),
# and the quotes, to take the strings out
_NOT_VALUE_MARKS = bytes(b for b in range(256) if b not in b'[{,"')
_DELTA = {ord("["): 1, ord("]"): -1}
_PASSES = 32  # innermost-pair passes before counting bracket by bracket
_MAX_INT_DIGITS = 4000  # Python refuses to convert longer integer literals


class _NonFinite:
    """Stands in for a ``NaN``/``Infinity`` literal until its path is known."""

    __slots__ = ("literal",)

    def __init__(self, literal: str):
        self.literal = literal


class _HugeInt(_NonFinite):
    __slots__ = ()


class _DupDict(dict):
    """An object in which some key occurred twice (the later value is kept)."""

    __slots__ = ("dups",)
    dups: list[str]


def json_depth(data: bytes) -> int:
    """Deepest nesting of arrays and objects, ignoring brackets inside strings.

    Linear, and in C for any real document: escapes that could hide a quote go first
    (inside strings backslashes only occur in pairs or before one escaped character, so
    pairing left to right is exact), then every byte but brackets and quotes, then the
    strings themselves, then the nesting is measured (``_nesting``).
    """
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    skeleton = data.translate(_BRACKETS, _NOT_SKELETON)
    # dropping two adjacent quotes changes no other byte's inside-a-string parity, so empty
    # skeleton strings (nearly all of them) go in one C-speed pass
    skeleton = skeleton.replace(b'""', b"")
    if b'"' in skeleton:
        skeleton = b"".join(skeleton.split(b'"')[::2])
    return _nesting(skeleton)


def _unquoted(skeleton: bytes) -> bytes:
    """A skeleton of marks and quotes with its strings taken out (see ``json_depth``)."""
    skeleton = skeleton.replace(b'""', b"")
    if b'"' in skeleton:
        skeleton = b"".join(skeleton.split(b'"')[::2])
    return skeleton


def json_values(data: bytes) -> int:
    """How many values a JSON document holds at most: its arrays and objects, and one more
    per comma outside strings (each further item), plus one. An upper bound on what parsing
    builds, counted in C speed before parsing, as ``json_depth`` measures nesting; for JSON
    Lines, add one per line."""
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    return len(_unquoted(data.translate(None, _NOT_VALUE_MARKS))) + 1


def over_values(data: bytes, limits: Limits, opening: int | None = None) -> bool:
    """Whether ``data`` holds more than ``max_json_values`` values: every comma and opening
    bracket counted first (C speed), the strings taken out only when that is over."""
    if opening is None:
        opening = data.count(b"{") + data.count(b"[")
    if data.count(b",") + opening + 1 <= limits.max_json_values:
        return False
    return json_values(data) > limits.max_json_values


def too_many_values(
    file: str | None, limits: Limits, what: str = "the json document holds"
) -> UnmaskError:
    """The one wording of the value bound (``what`` says whose values were counted)."""
    return _error(
        Code.LIMIT,
        f"{what} more than {limits.max_json_values} values (arrays, objects and their"
        " items), the limit",
        file,
        help=f"raise the bound with `{limits.option('max_json_values')}`",
    )


def _nesting(brackets: bytes) -> int:
    """The nesting of a string of ``[`` and ``]`` (the deepest running count of opened
    brackets, at least 0).

    A pass that deletes every adjacent ``[]`` of the string as it was (a pair that a
    deletion brings together waits for the next pass) removes exactly the innermost level
    of a balanced string. So when passes empty the string, their number is its depth, and
    a real document, a few levels deep, costs a few passes over its brackets. An
    unbalanced string, or one nested deeper than ``_PASSES``, is counted bracket by
    bracket.
    """
    rest, passes = brackets, 0
    while rest and passes < _PASSES:
        inner = rest.replace(b"[]", b"")
        if len(inner) == len(rest):
            break  # no innermost pair: unbalanced
        rest, passes = inner, passes + 1
    if not rest:
        return passes
    return max(0, max(accumulate(map(_DELTA.get, brackets, repeat(0))), default=0))


def _span(file: str, text: str, pos: int, first_line: int = 1) -> Span:
    line = text.count("\n", 0, pos) + first_line
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return Span(file, line, col, line, col + 1, pos, pos + 1)


def _error(code: Code, message: str, file: str | None, **kw: Any) -> UnmaskError:
    return UnmaskError([Diagnostic(code, message, file=file, **kw)])


def read_json_file(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> Any:
    """Read and parse one JSON file; the file name in diagnostics is ``str(path)``."""
    name = str(path)
    return parse_json_bytes(read_bytes(path, limits, name), name, limits)


def parse_json_text(
    text: str,
    file: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    first_line: int | None = None,
) -> Any:
    return parse_json_bytes(text.encode("utf-8", "surrogatepass"), file, limits, first_line)


def parse_json_bytes(
    data: bytes,
    file: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    first_line: int | None = None,
) -> Any:
    """Parse one document; ``first_line``: the line of a JSON Lines record (None: a whole
    file), which every diagnostic names (``FILE:LINE: PATH`` for one at a JSON path)."""
    return parse_json_document(data, file, limits, first_line)[0]


def parse_json_document(
    data: bytes,
    file: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    first_line: int | None = None,
) -> tuple[Any, str]:
    """``parse_json_bytes``, and the document's text (its byte order mark left out), for a
    reader that also needs the text: the bytes are decoded once."""
    name = file or "<input>"
    if len(data) > limits.max_file_bytes:
        raise UnmaskError([too_large(name, limits, file)])
    line = 1 if first_line is None else first_line
    text = decode_utf8(data, name, file, line)
    # what is said of a record at a JSON path or as a whole has no span: it names the
    # record's line with its file (`runs.jsonl:3: gold`), as a span would
    at = file if first_line is None or file is None else f"{file}:{first_line}"
    if not text.strip():
        raise _error(Code.JSON_EMPTY, "expected a json object, found an empty file", at)
    # the nesting is at most the number of opening brackets: count them (C speed) before
    # measuring it
    opening = data.count(b"{") + data.count(b"[")
    depth = json_depth(data) if opening > limits.max_json_depth else 0
    if depth > limits.max_json_depth:
        raise _error(
            Code.LIMIT,
            f"json nesting is {depth} levels deep, more than the limit of {limits.max_json_depth}",
            at,
            help=f"raise the bound with `{limits.option('max_json_depth')}`",
        )
    # the values, likewise: every comma and opening bracket counted (C speed), the strings
    # taken out only when that count is over the bound
    if over_values(data, limits, opening):
        raise too_many_values(at, limits)
    return _loads(text, name, file, at, limits, line), text


def _loads(
    text: str, name: str, file: str | None, at: str | None, limits: Limits, first_line: int
) -> Any:
    odd: list[bool] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) == len(items):
            return out
        seen: set[str] = set()
        dups: list[str] = []
        for k, _ in items:
            if k in seen:
                dups.append(k)
            seen.add(k)
        odd.append(True)
        marked = _DupDict(out)
        marked.dups = dups
        return marked

    def constant(literal: str) -> _NonFinite:
        odd.append(True)
        return _NonFinite(literal)

    def integer(literal: str) -> int | _NonFinite:
        if len(literal) > _MAX_INT_DIGITS:
            odd.append(True)
            return _HugeInt(literal)
        return int(literal)

    try:
        value = json.loads(
            text, object_pairs_hook=pairs, parse_constant=constant, parse_int=integer
        )
    except json.JSONDecodeError as exc:
        msg = exc.msg[0].lower() + exc.msg[1:]
        msg = msg.replace("'", "`")
        # an unterminated string runs to the end of the document as well
        at_end = not text[exc.pos :].strip() or exc.msg.startswith("Unterminated string")
        raise UnmaskError(
            [
                Diagnostic(
                    Code.JSON_SYNTAX,
                    f"invalid json: {msg}",
                    span=_span(name, text, exc.pos, first_line),
                    file=file,
                    help="the document ends early; is the file truncated?" if at_end else None,
                )
            ]
        ) from None
    except RecursionError:
        # only reachable when --max-json-depth was raised beyond what the parser can recurse
        raise _error(
            Code.LIMIT,
            "json nesting is too deep to parse",
            at,
            help=f"lower `{limits.option('max_json_depth')}`",
        ) from None
    if odd:
        _report_odd(value, at)
    return value


def _report_odd(root: Any, file: str | None) -> None:
    diags: list[Diagnostic] = []
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            if isinstance(node, _DupDict):
                for k in dict.fromkeys(node.dups):
                    diags.append(
                        Diagnostic(
                            Code.JSON_DUPLICATE_KEY,
                            f"key `{show(k)}` occurs more than once in this object",
                            path=path or "$",
                            file=file,
                            help="keep one of them; Unmask does not guess which was meant",
                        )
                    )
            for k, v in reversed(list(node.items())):
                stack.append((v, join_path(path, k)))
        elif isinstance(node, list):
            for i in range(len(node) - 1, -1, -1):
                stack.append((node[i], f"{path}[{i}]"))
        elif isinstance(node, _HugeInt):
            diags.append(
                Diagnostic(
                    Code.JSON_NUMBER,
                    f"a number with {len(node.literal)} digits is too long",
                    path=path or "$",
                    file=file,
                )
            )
        elif isinstance(node, _NonFinite):
            diags.append(
                Diagnostic(
                    Code.JSON_NUMBER,
                    f"`{node.literal}` is not a json number",
                    path=path or "$",
                    file=file,
                    help="json has no NaN or infinity; write a finite number or null",
                )
            )
    raise UnmaskError(diags)
