"""Converting protocol IR JSON that does not convert at once: piece by piece, each problem
worded.

Contract: a ``Converter`` stands for a ``ProtocolDoc`` whose JSON failed to convert in one
pass (``unmask.ir.json_reader`` reads either the same way): each key is converted when read,
a list item by item, and a piece that does not convert is ``FAILED`` after one diagnostic at
its JSON path, in the words of every reader (``expected an atom object, found a string``):
never msgspec's. Unknown keys are warnings and dropped, except in an expression, where they
are errors (the structs refuse them). An atom whose role or description is wrong still
declares its name (role ``""``), so its uses are not reported again. An expression too deep
for msgspec's recursive converter is converted node by node, bounded by ``max_expr_depth``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from unmask.ir.format import (
    EXPR_HELP,
    FAILED,
    OPS,
    PROTOCOL_SCHEMA,
    AtomDecl,
    Expr,
    GroundPair,
    ProtocolDoc,
)
from unmask.plumbing.codes import Code
from unmask.plumbing.jsonreader import JsonReader, index_path, join_path, kind, show
from unmask.plumbing.struct_reader import (
    ABSENT,
    Problem,
    item_struct,
    render_path,
    struct_in,
    take_apart,
    type_at,
    value_at,
    what_of,
)
from unmask.plumbing.structs import fields_of

# the words of "expected …" where the type alone would say too little
_EXPECTED: dict[tuple[Any, str | None], str] = {
    (Expr, "atom"): "an atom name (a string)",
    (Expr, "def"): "a definition name (a string)",
    (Expr, "k"): "a whole number",
    (Expr, "args"): "an array of expressions",
    (GroundPair, "judge"): "an atom name or an expression",
    (GroundPair, "context"): "an atom name or an expression",
    (GroundPair, "direction"): "`~` or `~>`",
}


class Converter:
    """A protocol's JSON converted key by key as the reader asks for each."""

    def __init__(self, r: JsonReader, raw: dict, path: str):
        self.r, self.raw, self.path = r, raw, path
        self._done: dict[str, Any] = {}
        if "schema" not in raw:
            r.err(Code.SCHEMA, path, f"missing `schema`, expected `{PROTOCOL_SCHEMA}`")
            self._done["schema"] = PROTOCOL_SCHEMA
        elif raw["schema"] != PROTOCOL_SCHEMA:
            r.err(
                Code.SCHEMA,
                join_path(path, "schema"),
                f"unsupported protocol schema `{show(raw['schema'])}`, expected "
                f"`{PROTOCOL_SCHEMA}`",
            )
            self._done["schema"] = FAILED
            return
        r.unknown_keys(raw, path, tuple(fields_of(ProtocolDoc)), "a protocol")

    def __getattr__(self, key: str) -> Any:
        if key.startswith("_"):
            raise AttributeError(key)
        if key not in self._done:
            self._done[key] = self._key(key)
        return self._done[key]

    def _key(self, key: str) -> Any:
        r, raw = self.r, self.raw
        info = fields_of(ProtocolDoc)[key]
        if key not in raw:
            if info.required:
                r.err(Code.MISSING, self.path, f"missing `{key}`")
                return FAILED
            if info.default_factory is not msgspec.NODEFAULT:
                return info.default_factory()
            return info.default
        value = raw[key]
        p = join_path(self.path, key)
        item = item_struct(info.type)
        if item is None:
            return self.convert(value, info.type, p, ProtocolDoc, (key,))[0]
        if not isinstance(value, list):
            r.expect(p, "an array", value)
            return FAILED
        if key == "atoms" and len(value) > r.limits.max_atoms:
            return [FAILED] * len(value)  # the reader reports the bound
        return [self._item(x, item, index_path(p, i)) for i, x in enumerate(value)]

    def _item(self, x: Any, cls: type[msgspec.Struct], p: str) -> Any:
        what = getattr(cls, "what")  # noqa: B009 (a class variable of each item struct)
        if not isinstance(x, dict):
            self.r.expect(p, f"{what} object", x)
            return FAILED
        known = fields_of(cls)
        if not x.keys() <= known.keys():
            self.r.unknown_keys(x, p, tuple(known), what)
            x = {k: v for k, v in x.items() if k in known}
        got, wrong = self.convert(x, cls, p, cls, ())
        named = cls is AtomDecl and isinstance(x.get("name"), str)
        if got is FAILED and named and wrong is not None and wrong.at[:1] != ("name",):
            return AtomDecl(name=x["name"], role="", description="")  # type: ignore[arg-type]
        return got

    def convert(
        self, value: Any, tp: Any, p: str, owner: Any, at: tuple
    ) -> tuple[Any, Problem | None]:
        """``value`` as ``tp`` (met at ``at`` under ``owner``), or FAILED after a
        diagnostic, with the problem found."""
        try:
            return msgspec.convert(value, tp), None
        except msgspec.ValidationError as exc:
            wrong = take_apart(exc)
            self.report(wrong, value, p, tp)
            return FAILED, wrong
        except RecursionError:  # an expression deeper than msgspec converts
            return self._deep(value, tp, p), None
        except UnicodeError:  # a key with a lone surrogate: msgspec cannot compare it
            odd = self._odd_key(value, tp)
            if odd is None:
                self.r.err(Code.TYPE, p, "expected text, found a lone surrogate")
            else:
                self.report(odd, value, p, tp)
            return FAILED, odd

    @staticmethod
    def _odd_key(value: Any, tp: Any) -> Problem | None:
        """The first key in ``value`` that its struct does not have."""
        work: list[tuple[Any, tuple]] = [(value, ())]
        while work:
            node, at = work.pop()
            if isinstance(node, list):
                work.extend((x, (*at, i)) for i, x in reversed(list(enumerate(node))))
            elif isinstance(node, dict):
                cls = struct_in(type_at(tp, at)[2])
                known = {} if cls is None else fields_of(cls)
                for key in node:
                    if key not in known:
                        return Problem("unknown", at, key)
                work.extend((node[k], (*at, k)) for k in reversed(list(node)))
        return None

    def report(self, wrong: Problem, value: Any, p: str, tp: Any) -> None:
        """One diagnostic for ``wrong``, found converting ``value`` (at ``p``) to ``tp``."""
        r = self.r
        at = wrong.at
        where = render_path(p, at)
        owner, key, expected = type_at(tp, at)
        found = value_at(value, at)
        if wrong.kind == "missing":
            r.err(Code.MISSING, where, f"missing `{wrong.key}`")
        elif wrong.kind == "unknown":  # only an expression refuses a key: the others drop it
            assert wrong.key is not None
            r.err(
                Code.EXPR,
                join_path(where, wrong.key),
                f"unexpected key `{show(wrong.key)}` in an expression",
            )
        elif owner is Expr and key == "op":  # not a string: no operator is meant
            r.err(
                Code.EXPR,
                where,
                f"unknown operator `{show(found)}`",
                help=f"operators are {', '.join(f'`{o}`' for o in OPS)}",
            )
        elif owner is Expr and key == "k" and wrong.kind == "constraint":
            r.err(Code.EXPR, where, f"`k` must be 0 or more, found {found}")
        elif struct_in(expected) is Expr and what_of(expected) == "an object":
            r.err(
                Code.EXPR, where, f"expected an expression object, found {kind(found)}", EXPR_HELP
            )
        else:
            r.expect(where, self._words(owner, key, expected, at), found)

    @staticmethod
    def _words(owner: Any, key: str | None, expected: Any, at: tuple) -> str:
        words = _EXPECTED.get((owner, key))
        if words is not None:
            return words
        if key is None and at and at[-2:-1] == ("labels",):
            return "a label name"
        cls = struct_in(expected)
        if cls is not None and what_of(expected) == "an object":  # a struct, or none
            return f"{getattr(cls, 'what', 'an')} object"
        return what_of(expected, "a value of another kind")

    def _deep(self, value: Any, tp: Any, p: str) -> Any:
        """``value`` converted to ``tp`` with every expression in it converted node by node."""
        cls = struct_in(tp)
        if cls is Expr:
            return self.expr(value, p)
        if cls is None or not isinstance(value, dict):
            return FAILED
        shallow = dict(value)
        for key, info in fields_of(cls).items():
            if struct_in(info.type) is Expr and isinstance(shallow.get(key), dict):
                shallow[key] = self.expr(shallow[key], join_path(p, key))
                if shallow[key] is FAILED:
                    return FAILED
        return self.convert(shallow, tp, p, cls, ())[0]

    def expr(self, raw: Any, p: str) -> Any:
        """One expression converted node by node, with an explicit stack."""
        limit = self.r.limits.max_expr_depth
        out: list[Expr] = []
        work: list[tuple[Any, str, list[Expr], int]] = [(raw, p, out, 1)]
        while work:
            node, q, into, d = work.pop()
            if d > limit:
                self.r.limit(q, "the expression's depth", d, "max_expr_depth")
                return FAILED
            if not isinstance(node, dict):
                self.r.err(
                    Code.EXPR, q, f"expected an expression object, found {kind(node)}", EXPR_HELP
                )
                return FAILED
            args = node.get("args", ABSENT)
            shallow = {k: v for k, v in node.items() if k != "args"}
            e, _ = self.convert(shallow, Expr, q, Expr, ())
            if e is FAILED:
                return FAILED
            into.append(e)
            if args is ABSENT:
                continue
            if not isinstance(args, list):
                self.r.expect(join_path(q, "args"), "an array of expressions", args)
                return FAILED
            e.args = []
            for i in range(len(args) - 1, -1, -1):
                work.append((args[i], f"{q}.args[{i}]", e.args, d + 1))
        return out[0]
