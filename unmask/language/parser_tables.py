"""The parser's LALR tables: built from the grammar, shipped as JSON, read without pickle.

Contract: ``build(strict)`` builds lark's parser from the shipped grammar
(``grammar/unmask.lark``); ``tables_json(parser, grammar)`` is the text of
``grammar/unmask.tables.json``, the tables that build makes, with the SHA-256 of the grammar
and lark's version they were built from; ``load(grammar)`` returns the parser those shipped
tables make, or None when they are missing, damaged, or of another grammar or another series
of lark (1.3.x: then the caller builds, some 100 ms). Nothing is read from the user's cache
folder and nothing is unpickled: the tables are JSON, and lark rebuilds its parser from the
same plain values its own ``Lark.save`` would pickle. ``python -m unmask.language.parser_tables``
writes the file again after the grammar changes; ``tests/language/test_grammar.py`` fails while the
shipped file is not the grammar's.
"""

from __future__ import annotations

import hashlib
import json
import sys
from importlib import resources
from typing import Any, TypedDict

import lark
import lark.lexer
from lark import Lark
from lark.grammar import Rule
from lark.lexer import TerminalDef

SCHEMA = "unmask.lark-tables/1"
TABLES = "unmask.tables.json"
GRAMMAR = "unmask.lark"


class _Options(TypedDict):
    """The options the parser is built with (lark's keyword arguments)."""

    parser: str
    lexer: str
    propagate_positions: bool
    maybe_placeholders: bool


OPTIONS: _Options = {
    "parser": "lalr",
    "lexer": "basic",
    "propagate_positions": True,
    "maybe_placeholders": True,
}
# lark's saved options that name where the grammar was read from: objects of lark's own,
# not data, and not needed to parse (the grammar is not read again)
_WHERE = ("import_paths", "source_path")
# lark's switch for the terminal-collision check, as lark found it at import
_HAS_INTEREGULAR = getattr(lark.lexer, "has_interegular", False)
# a JSON object cannot have number keys; lark's tables and memo are keyed by numbers
_INT_KEYS = "int-keys"


def grammar_text() -> str:
    return resources.files("unmask.grammar").joinpath(GRAMMAR).read_text("utf-8")


def build(strict: bool = False) -> Lark:
    """The parser of the shipped grammar. ``strict`` (the tests' and the generator's)
    also proves the grammar has no shift/reduce conflict and no two terminals whose
    patterns overlap, by lark's regex-collision check; otherwise that check is skipped,
    because it is two thirds of the build and proves nothing about the user's input:
    without a conflict or a collision the tables are the same either way."""
    if strict:
        return Lark.open_from_package("unmask.grammar", GRAMMAR, strict=True, **OPTIONS)
    lark.lexer.has_interegular = False  # lark's switch for the check: off for this build
    try:
        return Lark.open_from_package("unmask.grammar", GRAMMAR, **OPTIONS)
    finally:
        # what lark found at import, not what this build found: two threads building at
        # once cannot leave the check off for good
        lark.lexer.has_interegular = _HAS_INTEREGULAR


def _digest(grammar: str) -> str:
    return hashlib.sha256(grammar.encode("utf-8")).hexdigest()


def _encode(value: Any) -> Any:
    if isinstance(value, dict):
        if value and all(type(k) is int for k in value):
            return {_INT_KEYS: [[k, _encode(v)] for k, v in sorted(value.items())]}
        if not all(type(k) is str for k in value) or _INT_KEYS in value:
            raise ValueError("lark's tables have keys this file cannot hold")
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if value is None or type(value) in (str, int, bool, float):
        return value
    raise ValueError(f"lark's tables hold a {type(value).__name__}, which is not data")


def _int_keys(obj: dict[str, Any]) -> Any:
    """``json.loads``' object hook: a number-keyed object back as lark's dict."""
    pairs = obj.get(_INT_KEYS)
    if pairs is not None and len(obj) == 1:
        return {int(k): v for k, v in pairs}
    return obj


def _canonical(table: dict[str, Any]) -> dict[str, Any]:
    """lark's LALR table with its numbers made independent of the build: lark numbers
    states and symbols in the order it iterates sets, which changes from one process to
    the next, so the same grammar gives different files. Symbols are numbered in name
    order, states in the order a walk from the start states meets them (symbols taken in
    name order); the automaton is the same, only its numbering is fixed."""
    names = table["tokens"]
    symbol = {old: new for new, old in enumerate(sorted(names, key=names.__getitem__))}
    states = table["states"]
    order: dict[int, int] = {}
    todo = [table["start_states"][k] for k in sorted(table["start_states"])]
    while todo:
        state = todo.pop(0)
        if state in order:
            continue
        order[state] = len(order)
        for sym in sorted(states[state], key=symbol.__getitem__):
            action, arg = states[state][sym]
            if action == 0:  # a shift (or a goto): arg is the next state
                todo.append(arg)
    if len(order) != len(states):
        raise ValueError("the parse table has states that no walk from a start reaches")
    return {
        "tokens": {symbol[old]: name for old, name in names.items()},
        "states": {
            order[state]: {
                symbol[sym]: (0, order[arg]) if action == 0 else (action, arg)
                for sym, (action, arg) in sorted(actions.items(), key=lambda item: symbol[item[0]])
            }
            for state, actions in sorted(states.items(), key=lambda item: order[item[0]])
        },
        "start_states": {k: order[v] for k, v in table["start_states"].items()},
        "end_states": {k: order[v] for k, v in table["end_states"].items()},
    }


def tables_json(parser: Lark, grammar: str) -> str:
    """The text of the shipped tables file for ``parser``, built from ``grammar``: the
    same text for the same grammar and lark, whichever process builds it."""
    data, memo = parser.memo_serialize([TerminalDef, Rule])
    data["parser"]["parser"] = _canonical(data["parser"]["parser"])
    data["options"] = {k: v for k, v in data["options"].items() if k not in _WHERE}
    obj = {
        "schema": SCHEMA,
        "grammar_sha256": _digest(grammar),
        "lark": lark.__version__,
        "data": _encode(data),
        "memo": _encode(memo),
    }
    # one line per top-level key: a diff of a regenerated file shows which part changed
    lines = [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in obj.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _series(version: object) -> tuple[str, ...] | None:
    """``1.3`` of ``1.3.1``: lark keeps the format of its saved tables within a series."""
    return tuple(version.split(".")[:2]) if isinstance(version, str) else None


def load(grammar: str) -> Lark | None:
    """The parser the shipped tables make, or None when they are not this grammar's and
    this lark's, or cannot be read."""
    try:
        text = resources.files("unmask.grammar").joinpath(TABLES).read_text("utf-8")
        obj = json.loads(text, object_hook=_int_keys)
        if not (
            isinstance(obj, dict)
            and obj.get("schema") == SCHEMA
            and obj.get("grammar_sha256") == _digest(grammar)
            and _series(obj.get("lark")) == _series(lark.__version__)
        ):
            return None
        # the same plain values `Lark.save` pickles, handed to lark as a dict: no pickle
        return Lark.load({"data": obj["data"], "memo": obj["memo"]})
    except Exception:  # missing or damaged: the caller builds the tables instead
        return None


def main() -> int:
    """Write ``grammar/unmask.tables.json`` for the grammar beside it (run after editing
    the grammar, from a checkout installed with ``pip install -e``)."""
    grammar = grammar_text()
    path = resources.files("unmask.grammar").joinpath(TABLES)
    text = tables_json(build(), grammar)
    with open(str(path), "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
