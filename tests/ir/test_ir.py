"""The IR's one traversal: tables keyed by node kind over an iterative fold.

A table that lacks a kind fails when it is built, every walk survives expressions far
deeper than Python's stack, and the compiler's IR output prints at any depth it allows.
"""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from tests.strategies import deep_expr
from unmask.backends.emit import emit_dimacs, emit_smt2
from unmask.checking.closed import _mask
from unmask.cli.unmaskc import cli
from unmask.ir import (
    KINDS,
    PRECEDENCE,
    Atom,
    AtomDecl,
    Binary,
    Card,
    Const,
    MissingEntry,
    Nary,
    Not,
    Protocol,
    Table,
    evaluate,
    fold,
    iter_atoms,
    small_shape,
)
from unmask.ir.json import dumps, expr_to_json
from unmask.ir.partial import closed_value, smart, substitute, truth_mask
from unmask.ir.text import expr_text

DEEP = 6000  # far past Python's default recursion limit


def _chain(depth: int):
    e = Atom("a")
    for _ in range(depth):
        e = Binary("iff", Atom("b"), e)
    return e


def test_a_table_missing_a_kind_fails_when_built():
    entries = {kind: (lambda _, e, v: 0) for kind in KINDS if kind != "xor"}
    with pytest.raises(MissingEntry, match="the demo table has no entry for `xor`"):
        Table("demo", entries)


def test_a_class_entry_covers_its_kinds_and_unknown_keys_are_refused():
    inner = lambda c, e, v: 1 + sum(v)  # noqa: E731
    leaf = lambda c, e, v: 1  # noqa: E731
    table = Table(
        "count", {"const": leaf, "atom": leaf, Not: inner, Nary: inner, Binary: inner, Card: inner}
    )
    assert table(Nary("xor", (Atom("a"), Not(Const(True))))) == 4
    with pytest.raises(MissingEntry, match="unknown kinds"):
        Table("bad", {**{k: (lambda *_: 0) for k in KINDS}, "nand": lambda *_: 0})


_SMALL = [
    (Atom("a"), ("atom", "a", "a")),
    (Not(Atom("a")), ("not", "a", "a")),
    (Binary("implies", Atom("a"), Atom("b")), ("implies", "a", "b")),
    (Binary("iff", Atom("b"), Atom("a")), ("iff", "b", "a")),
    (Binary("iff", Atom("a"), Atom("a")), ("iff", "a", "a")),
    (Not(Not(Atom("a"))), None),
    (Not(Binary("iff", Atom("a"), Atom("b"))), None),
    (Binary("implies", Atom("a"), Not(Atom("b"))), None),
    (Nary("and", (Atom("a"), Atom("b"))), None),
    (Const(True), None),
]


@pytest.mark.parametrize(("e", "shape"), _SMALL, ids=lambda x: str(x)[:30])
def test_the_quick_shapes_agree_with_the_fold(e, shape):
    """The one quick path (``small_shape``) that ``iter_atoms``, ``closed_value`` and the
    closed-form masks share gives what the general walk gives, on each shape and beside it."""
    assert small_shape(e) == shape
    walked = list(dict.fromkeys(_all_atoms(e)))
    names = sorted(walked)
    assert list(iter_atoms(e)) == walked
    for bits in range(1 << len(names)):
        env = {n: bool(bits >> i & 1) for i, n in enumerate(names)}
        assert closed_value(e, env) == evaluate(e, env)
        assert closed_value(Not(e), env) == evaluate(Not(e), env)
    index = {n: len(names) - 1 - j for j, n in enumerate(names)}
    assert _mask(e, names, {}) == (truth_mask(e, index, len(names)), (1 << (1 << len(names))) - 1)
    if names:
        assert closed_value(e, {}) is None


def _all_atoms(e):
    if isinstance(e, Atom):
        yield e.name
    for c in (getattr(e, "arg", None), getattr(e, "left", None), getattr(e, "right", None)):
        if c is not None:
            yield from _all_atoms(c)
    for c in getattr(e, "args", ()) or ():
        yield from _all_atoms(c)


def test_fold_visits_shared_nodes_once():
    shared = Nary("and", (Atom("a"), Atom("b")))
    seen: list[str] = []

    def step(e, values):
        seen.append(e.kind)
        return 0

    fold(Nary("or", (shared, Not(shared))), step)
    assert seen.count("and") == 1


def test_precedence_is_the_one_the_text_printer_uses():
    assert PRECEDENCE["iff"] < PRECEDENCE["implies"] < PRECEDENCE["or"] < PRECEDENCE["and"]
    e = Binary(
        "implies", Nary("or", (Atom("a"), Atom("b"))), Binary("implies", Atom("c"), Atom("d"))
    )
    assert expr_text(e) == "a or b implies c implies d"
    left = Binary("implies", Binary("implies", Atom("a"), Atom("b")), Atom("c"))
    assert expr_text(left) == "(a implies b) implies c"
    assert expr_text(Not(Nary("and", (Atom("a"), Card("atmost", 1, (Atom("b"),)))))) == (
        "not (a and atmost(1, b))"
    )


def test_every_walk_is_iterative():
    assert sys.getrecursionlimit() < DEEP
    e = deep_expr(["a", "b", "c"], DEEP)
    env = {"a": True, "b": False, "c": True}
    value = evaluate(e, env)
    assert closed_value(e, env) == value
    assert closed_value(e, {"a": True}) is None
    assert evaluate(substitute(e, env), {}) == value
    assert evaluate(smart(e), env) == value
    assert json.loads(json.dumps(expr_to_json(Atom("a")))) == {"atom": "a"}
    text = dumps(expr_to_json(e))
    assert text.count('"op"') >= DEEP
    assert expr_text(e).startswith("(an expression nested")


def test_deep_protocol_emits_and_compiles(tmp_path):
    decision = _chain(DEEP)
    p = Protocol(
        "deep", "", (AtomDecl("a", "judge"), AtomDecl("b", "context")), (), decision, (), ()
    )
    assert emit_smt2(p).count("(= b") == DEEP
    assert emit_dimacs(p).startswith("c unmask")
    # the reported case: a 1,200-deep iff chain under --max-expr-depth 2000
    body = "a"
    for _ in range(1200):
        body = f"(b iff {body})"
    src = tmp_path / "deep.proto"
    src.write_text(
        f'protocol deep "deep"\natom a : judge "a"\natom b : context "b"\n'
        f"decision pass iff {body}\nground a ~ b\n"
    )
    r = CliRunner().invoke(cli, ["--max-expr-depth", "2000", str(src)])
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("{\n") and r.stdout.count('"op": "iff"') == 1200


@pytest.mark.parametrize(
    "value",
    [{}, [], {"a": [1, {"b": None, "c": 'é"\n'}], "d": {}, "e": [], "f": True}, [[[]]], "x"],
)
def test_dumps_writes_what_the_standard_encoder_writes(value):
    assert dumps(value) == json.dumps(value, indent=2, ensure_ascii=False)
