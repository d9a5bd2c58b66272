"""Reading typed values out of parsed JSON, with every problem recorded at its JSON path.

Contract: a ``JsonReader`` collects diagnostics instead of raising, so one pass reports every
problem. ``string``, ``name`` and ``array`` return the value of a key when it has the
expected type and record a ``missing``/``type``/``name`` error (or nothing, for an optional
key) otherwise; ``unknown_keys`` records warnings; ``limit`` words every bound the same way.
``show`` makes user input fit for a message and ``join_path`` extends a JSON path. Nothing
here knows what a replay or a protocol is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from typing import Any

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.limits import Limits

_SUGGEST_MAX = 5000  # above this many candidates, "did you mean" is not worth its cost
NAME_HELP = "names are letters, digits and `_`, not starting with a digit"


def show(value: Any, limit: int = 60) -> str:
    """User input fit for a message: printable, bounded, never a lone surrogate."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    out = []
    for ch in text:
        if ch.isprintable() and not 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape", "backslashreplace").decode("ascii"))
    return "".join(out)


def join_path(path: str, key: str) -> str:
    """Extend a JSON path by an object key, quoting keys that are not plain names."""
    # an ASCII identifier is exactly a plain name (``IDENT_RE``), and quicker to test
    if key.isascii() and key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def index_path(path: str, i: int) -> str:
    return f"{path}[{i}]"


def kind(v: Any) -> str:
    """What a JSON value is, in words, for "expected X, found Y"."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "`true`" if v else "`false`"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return "an unsupported value"


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def did_you_mean(name: Any, candidates: Collection[str]) -> str | None:
    if not isinstance(name, str) or len(candidates) > _SUGGEST_MAX:
        return None
    import difflib  # only when a name is wrong: not at every start-up

    close = difflib.get_close_matches(name, list(candidates), n=1)
    return f"did you mean `{close[0]}`?" if close else None


class JsonReader:
    """Collects the errors and warnings of one document, each with its JSON path."""

    def __init__(self, file: str | None, limits: Limits):
        self.file = file
        self.limits = limits
        self.diags: list[Diagnostic] = []
        self.warnings: list[Diagnostic] = []
        self.sources: dict[str, str] = {}  # file name -> text, for excerpts in errors

    def err(
        self,
        code: Code,
        path: str,
        message: str,
        help: str | None = None,
        notes: tuple[str, ...] = (),
    ) -> None:
        self.diags.append(
            Diagnostic(code, message, path=path or "$", file=self.file, help=help, notes=notes)
        )

    def warn(self, code: Code, path: str, message: str, help: str | None = None) -> None:
        self.warnings.append(
            Diagnostic(
                code, message, path=path or "$", file=self.file, help=help, severity="warning"
            )
        )

    def limit(self, path: str, what: str, seen: int, field: str) -> None:
        bound = getattr(self.limits, field)
        self.err(
            Code.LIMIT,
            path,
            f"{what} is {seen}, more than the limit of {bound}",
            help=f"raise the bound with `{self.limits.option(field)}`",
        )

    def expect(self, path: str, what: str, v: Any) -> None:
        self.err(Code.TYPE, path, f"expected {what}, found {kind(v)}")

    def unknown_keys(self, obj: dict, path: str, known: tuple[str, ...], what: str) -> None:
        for k in obj:
            if k not in known:
                self.warn(
                    Code.UNKNOWN_KEY,
                    join_path(path, k),
                    f"unknown key `{show(k)}` in {what} is ignored",
                    help=did_you_mean(k, known),
                )

    def string(self, obj: dict, key: str, path: str, required: bool = True) -> str | None:
        if key not in obj:
            if required:
                self.err(Code.MISSING, path, f"missing `{key}`")
            return None
        v = obj[key]
        if not isinstance(v, str):
            self.expect(join_path(path, key), "a string", v)
            return None
        return v

    def name(self, obj: dict, key: str, path: str, pattern: re.Pattern[str]) -> str | None:
        v = self.string(obj, key, path)
        if v is not None and not pattern.match(v):
            self.err(
                Code.NAME, join_path(path, key), f"`{show(v)}` is not a valid name", help=NAME_HELP
            )
            return None
        return v

    def array(self, obj: dict, key: str, path: str, required: bool = True) -> list | None:
        if key not in obj:
            if required:
                self.err(Code.MISSING, path, f"missing `{key}`")
            return None if required else []
        v = obj[key]
        if not isinstance(v, list):
            self.expect(join_path(path, key), "an array", v)
            return None
        return v

    def objects(
        self, items: list | None, path: str, what: str, known: tuple[str, ...]
    ) -> Iterator[tuple[int, str, dict]]:
        """(index, JSON path, item) of each object in ``items``; any other item is an error.

        ``what`` names one item with its article (``an atom``); unknown keys are warnings.
        """
        for i, item in enumerate(items or ()):
            p = self.object_at(item, path, i, what, known)
            if p is not None:
                yield i, p, item

    def object_at(
        self, item: Any, path: str, i: int, what: str, known: tuple[str, ...]
    ) -> str | None:
        """The JSON path of item ``i`` of the list at ``path`` when it is an object (its
        unknown keys are warnings), else None and an error: one step of ``objects``, for
        readers that try a quicker way first and fall back to this one."""
        p = index_path(path, i)
        if not isinstance(item, dict):
            self.expect(p, f"{what} object", item)
            return None
        self.unknown_keys(item, p, known, what)
        return p

    def failure(self) -> UnmaskError:
        """The error to raise: every diagnostic, with ``sources`` for excerpts."""
        err = UnmaskError(self.diags)
        err.sources = dict(self.sources)  # type: ignore[attr-defined]
        return err
